"""nostr-sdk (PyPI, rust-nostr's bindings) as the independent peer for
Starling's standard gift wraps (NIP-59 / NIP-17 / NIP-44 v2).

Reads JSON lines on stdin, writes one JSON line per request:
  {"op": "open", "secret": HEX, "wrap": EVENT_JSON}          -> {"sender": HEX, "content": STR, "kind": INT}
  {"op": "wrap", "secret": HEX, "to": HEX, "content": STR}    -> {"wrap": EVENT_JSON}
  {"op": "inbox", "secret": HEX, "db": PATH}                   -> {"messages": [{"sender", "content", "kind"}]}
     (every gift wrap a nostr-relay stored in its SQLite database that these keys open)
  {"op": "publish", "secret": HEX, "to": HEX, "content": STR, "relay": WS_URL}
                                                               -> {"id": WRAP_ID, "accepted": BOOL}
     (a standard NIP-17 message, as Amethyst or 0xchat send one, published to the relay on loopback)
"""
import json
import sqlite3
import sys

import nostr_sdk as n

for line in sys.stdin:
    req = json.loads(line)
    keys = n.Keys.parse(req["secret"])
    if req["op"] == "open":
        gift = n.UnwrappedGift.from_gift_wrap(keys, n.Event.from_json(req["wrap"]))
        rumor = gift.rumor()
        print(json.dumps({"sender": gift.sender().to_hex(), "content": rumor.content(), "kind": rumor.kind().as_u16()}))
    elif req["op"] == "inbox":
        opened = []
        rows = sqlite3.connect(req["db"]).execute(
            "select id, pubkey, created_at, kind, tags, content, sig from events where kind = 1059").fetchall()
        for (eid, pubkey, created_at, kind, tags, content, sig) in rows:
            event = {"id": eid.hex(), "pubkey": pubkey.hex(), "created_at": created_at, "kind": kind,
                     "tags": json.loads(tags) if isinstance(tags, str) else tags, "content": content, "sig": sig.hex()}
            try:
                gift = n.UnwrappedGift.from_gift_wrap(keys, n.Event.from_json(json.dumps(event)))
            except Exception:
                continue  # for someone else
            rumor = gift.rumor()
            opened.append({"sender": gift.sender().to_hex(), "content": rumor.content(), "kind": rumor.kind().as_u16()})
        print(json.dumps({"messages": opened}))
    elif req["op"] == "publish":
        from websockets.sync.client import connect
        event = n.nip17_make_private_msg(keys, n.PublicKey.parse(req["to"]), req["content"])
        with connect(req["relay"], open_timeout=10, close_timeout=2) as ws:
            ws.send(json.dumps(["EVENT", json.loads(event.as_json())]))
            answer = json.loads(ws.recv(timeout=10))
        print(json.dumps({"id": event.id().to_hex(), "accepted": bool(answer[0] == "OK" and answer[2])}))
    elif req["op"] == "wrap":
        event = n.nip17_make_private_msg(keys, n.PublicKey.parse(req["to"]), req["content"])
        print(json.dumps({"wrap": event.as_json()}))
    sys.stdout.flush()
