#!/usr/bin/env python3
"""docs/PROTOCOL.md, "Bulk transfer", rebuilt from the description alone with
Python's `cryptography`: the HELLO's tag, a sealed chunk and an ACK for the
documented offer. Prints one JSON object; BulkInteropTests compares it with
the document and with what Starling builds."""
import json
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

K = bytes([7]) * 32
nonce = bytes([1]) * 32
tid = bytes(range(16))


def key(info):
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=nonce, info=info).derive(K)


to_receiver, to_sender = key(b"starling bulk v1 sender"), key(b"starling bulk v1 receiver")


def n(counter):
    return bytes(4) + counter.to_bytes(8, "big")


hello_ad = bytes([1]) + tid + nonce + (0).to_bytes(4, "big")
print(json.dumps({
    "helloTag": ChaCha20Poly1305(to_sender).encrypt(n(1 << 63), b"", hello_ad).hex(),
    "chunk": ChaCha20Poly1305(to_receiver).encrypt(n(0), b"hi", tid + bytes([2]) + (0).to_bytes(4, "big")).hex(),
    "ackTag": ChaCha20Poly1305(to_sender).encrypt(n(0), b"", tid + bytes([3]) + (0).to_bytes(4, "big")).hex(),
}))
