#!/usr/bin/env python3
"""docs/PROTOCOL.md, "Groups (0x25, Noise 0x06 / 0x07)", rebuilt with Python's
`cryptography` from the iOS app's rules (bitchat GroupProtocol.swift, read for
docs/research/bitchat-groups.md): the creator-signed state of an invite, a
member's group message sealed with ChaCha20-Poly1305 in its outer packet, and
the removal notice. Prints one JSON object; GroupInteropTests compares it with
the document and with what Starling builds, opens and verifies."""
import hashlib
import json
import struct

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

RAW, RAWPUB = serialization.Encoding.Raw, serialization.PublicFormat.Raw


def tlv(t, v):
    return bytes([t]) + struct.pack(">H", len(v)) + v


def sha256(b):
    return hashlib.sha256(b).digest()


class Person:
    def __init__(self, seed, noise, nickname):
        self.sk = Ed25519PrivateKey.from_private_bytes(seed)
        self.signing_key = self.sk.public_key().public_bytes(RAW, RAWPUB)
        self.fingerprint = sha256(X25519PrivateKey.from_private_bytes(noise).public_key().public_bytes(RAW, RAWPUB))
        self.nickname = nickname


def roster(members):
    out = bytes([len(members)])
    for m in members:
        out += m.fingerprint + m.signing_key + bytes([len(m.nickname.encode())]) + m.nickname.encode()
    return out


def state(group_id, name, key, epoch, members, creator):
    r = roster(members)
    signed = b"bitchat-group-v1" + group_id + struct.pack(">I", epoch) + sha256(key) + sha256(r) + sha256(name.encode())
    sig = creator.sk.sign(signed)
    return (tlv(1, group_id) + tlv(2, name.encode()) + tlv(3, key) + tlv(4, struct.pack(">I", epoch)) + tlv(5, r)
            + tlv(6, creator.fingerprint) + tlv(7, sig))


alice = Person(bytes(range(32)), bytes([0x11] * 32), "alice")
bob = Person(bytes(range(32, 64)), bytes([0x22] * 32), "bob")
group_id, name, key = bytes(range(16)), "trail crew", bytes([0x42] * 32)
message_id, at, content, nonce = "6F9619FF-8B86-4011-B42D-00C04FC964FF", 1_750_000_000_000, "summit at noon", bytes(range(0xA0, 0xAC))

signed = b"bitchat-group-msg-v1" + group_id + struct.pack(">I", 2) + message_id.encode() + struct.pack(">Q", at) + content.encode()
inner = (tlv(1, message_id.encode()) + tlv(2, bob.signing_key) + tlv(3, bob.nickname.encode()) + tlv(4, struct.pack(">Q", at))
         + tlv(5, content.encode()) + tlv(6, bob.sk.sign(signed)))
sealed = ChaCha20Poly1305(key).encrypt(nonce, inner, group_id + struct.pack(">I", 2))
envelope = tlv(1, group_id) + tlv(2, struct.pack(">I", 2)) + tlv(3, nonce) + tlv(4, sealed)
# The outer packet: version 1, type 0x25, TTL 7, the timestamp, flags 0 (unsigned, no recipient), length, bob's peer ID.
frame = bytes([1, 0x25, 7]) + struct.pack(">Q", at) + bytes([0]) + struct.pack(">H", len(envelope)) + bob.fingerprint[:8] + envelope

print(json.dumps({
    "group-state": state(group_id, name, key, 2, [alice, bob], alice).hex(),
    "group-message": frame.hex(),
    "group-removal": state(group_id, name, bytes(32), 3, [alice], alice).hex(),
}))
