"""Independent implementations for Starling's own primitives: BLAKE3 (the
`blake3` package, the official Rust implementation) and XChaCha20-Poly1305
(libsodium through `pynacl`).

Reads JSON requests, one per line, on stdin; writes one JSON answer per line:
  {"op": "blake3", "data": HEX, "len": N}                      -> {"out": HEX}
  {"op": "blake3_keyed", "key": HEX, "data": HEX, "len": N}    -> {"out": HEX}
  {"op": "blake3_derive", "context": STR, "data": HEX, "len": N} -> {"out": HEX}
  {"op": "xchacha_seal", "key": HEX, "nonce": HEX, "aad": HEX, "data": HEX} -> {"out": HEX}
"""
import json
import sys

import blake3
from nacl import bindings

for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    data = bytes.fromhex(req.get("data", ""))
    if op == "blake3":
        out = blake3.blake3(data).digest(length=req["len"])
    elif op == "blake3_keyed":
        out = blake3.blake3(data, key=bytes.fromhex(req["key"])).digest(length=req["len"])
    elif op == "blake3_derive":
        out = blake3.blake3(data, derive_key_context=req["context"]).digest(length=req["len"])
    elif op == "xchacha_seal":
        out = bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(
            data, bytes.fromhex(req["aad"]), bytes.fromhex(req["nonce"]), bytes.fromhex(req["key"]))
    else:
        raise SystemExit(f"unknown op {op}")
    print(json.dumps({"out": out.hex()}), flush=True)
