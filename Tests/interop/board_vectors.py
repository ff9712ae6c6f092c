#!/usr/bin/env python3
"""docs/PROTOCOL.md, "Board" (message type 0x23), rebuilt with Python's
`cryptography` from the iOS app's rules (bitchat BoardPackets.swift): the
signed bytes, the RFC 8032 signatures and the TLV payloads of the three
documented examples. Prints one JSON object; BoardInteropTests compares it
with the document and with what Starling builds and verifies."""
import json
import struct

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

sk = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
pk = sk.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def u64(v):
    return struct.pack(">Q", v)


def lp(b):
    return struct.pack(">H", len(b)) + b


def tlv(t, v):
    return bytes([t]) + struct.pack(">H", len(v)) + v


def context(s):
    return bytes([len(s)]) + s.encode()


post_id = bytes(range(1, 17))
created, expires, deleted = 1_700_000_000_000, 1_700_000_000_000 + 86_400_000, 1_700_000_100_000
out = {"publicKey": pk.hex()}
for name, geohash, content, nick, flags in [("board-post", "u33dc1", "notice", "alice", 0),
                                             ("board-post-urgent", "", "water at gate 2", "alice", 1)]:
    signed = (context("bitchat-board-v1") + post_id + lp(geohash.encode()) + lp(content.encode()) + pk + lp(nick.encode())
              + u64(created) + u64(expires) + bytes([flags]))
    sig = sk.sign(signed)
    out[name] = (tlv(1, b"\x01") + tlv(2, post_id) + tlv(3, geohash.encode()) + tlv(4, content.encode()) + tlv(5, pk)
                 + tlv(6, nick.encode()) + tlv(7, u64(created)) + tlv(8, u64(expires)) + tlv(9, bytes([flags])) + tlv(0x0A, sig)).hex()
signed = context("bitchat-board-del-v1") + post_id + u64(deleted)
out["board-tombstone"] = (tlv(1, b"\x02") + tlv(2, post_id) + tlv(5, pk) + tlv(0x0B, u64(deleted)) + tlv(0x0A, sk.sign(signed))).hex()
print(json.dumps(out))
