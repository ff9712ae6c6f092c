"""nostr-sdk (PyPI, rust-nostr's bindings) as the independent peer for
Starling's standard gift wraps (NIP-59 / NIP-17 / NIP-44 v2).

Reads JSON lines on stdin, writes one JSON line per request:
  {"op": "open", "secret": HEX, "wrap": EVENT_JSON}          -> {"sender": HEX, "content": STR, "kind": INT}
  {"op": "wrap", "secret": HEX, "to": HEX, "content": STR}    -> {"wrap": EVENT_JSON}
"""
import json
import sys

import nostr_sdk as n

for line in sys.stdin:
    req = json.loads(line)
    keys = n.Keys.parse(req["secret"])
    if req["op"] == "open":
        gift = n.UnwrappedGift.from_gift_wrap(keys, n.Event.from_json(req["wrap"]))
        rumor = gift.rumor()
        print(json.dumps({"sender": gift.sender().to_hex(), "content": rumor.content(), "kind": rumor.kind().as_u16()}))
    elif req["op"] == "wrap":
        event = n.nip17_make_private_msg(keys, n.PublicKey.parse(req["to"]), req["content"])
        print(json.dumps({"wrap": event.as_json()}))
    sys.stdout.flush()
