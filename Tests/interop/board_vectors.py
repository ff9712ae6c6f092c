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
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

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
                                             ("board-post-urgent", "", "water at gate 2", "alice", 1),
                                             # the same with flag bit 1 (its author lets it cross): docs/PROTOCOL.md's bridge-board carries it
                                             ("board-post-crossing", "", "water at gate 2", "alice", 3)]:
    signed = (context("bitchat-board-v1") + post_id + lp(geohash.encode()) + lp(content.encode()) + pk + lp(nick.encode())
              + u64(created) + u64(expires) + bytes([flags]))
    sig = sk.sign(signed)
    out[name] = (tlv(1, b"\x01") + tlv(2, post_id) + tlv(3, geohash.encode()) + tlv(4, content.encode()) + tlv(5, pk)
                 + tlv(6, nick.encode()) + tlv(7, u64(created)) + tlv(8, u64(expires)) + tlv(9, bytes([flags])) + tlv(0x0A, sig)).hex()
signed = context("bitchat-board-del-v1") + post_id + u64(deleted)
out["board-tombstone"] = (tlv(1, b"\x02") + tlv(2, post_id) + tlv(5, pk) + tlv(0x0B, u64(deleted)) + tlv(0x0A, sk.sign(signed))).hex()


# docs/PROTOCOL.md, "Prekey bundles (0x24)": the owner's Noise key is X25519 of 02×32, its
# prekeys 7 and 8 are X25519 of 04×32 and 05×32, signed by the same Ed25519 key (iOS PrekeyBundle.swift).
def x25519(byte):
    return X25519PrivateKey.from_private_bytes(bytes([byte]) * 32).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


noise, generated = x25519(2), 1_700_000_000_000
prekeys = struct.pack(">I", 7) + x25519(4) + struct.pack(">I", 8) + x25519(5)
signed = context("bitchat-prekey-bundle-v1") + noise + bytes([2]) + prekeys + u64(generated)
out["prekey-bundle"] = (tlv(1, noise) + tlv(2, prekeys) + tlv(3, u64(generated)) + tlv(4, sk.sign(signed))).hex()
print(json.dumps(out))
