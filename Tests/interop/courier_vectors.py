#!/usr/bin/env python3
"""docs/PROTOCOL.md, "Courier drops (0x04)", rebuilt with Python's
`noiseprotocol` (Noise_X_25519_ChaChaPoly_SHA256), hmac and hashlib from the
iOS app's rules (bitchat CourierEnvelope.swift, NoiseEncryptionService.swift):
the drop sealed to bob's static key in its envelope, and the seal to his
one-time prekey 7. Prints one JSON object; CourierInteropTests compares it
with the document and with what Starling seals and opens."""
import hashlib
import hmac
import json
import struct
import warnings

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from noise.connection import Keypair, NoiseConnection

warnings.simplefilter("ignore")  # a fixed ephemeral key: for vectors only


def pub(b):
    return X25519PrivateKey.from_private_bytes(bytes([b] * 32)).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def seal(payload, to, prologue):
    n = NoiseConnection.from_name(b"Noise_X_25519_ChaChaPoly_SHA256")
    n.set_as_initiator()
    n.set_prologue(prologue)
    n.set_keypair_from_private_bytes(Keypair.STATIC, bytes([1] * 32))
    n.set_keypair_from_public_bytes(Keypair.REMOTE_STATIC, to)
    n.set_keypair_from_private_bytes(Keypair.EPHEMERAL, bytes([3] * 32))
    n.start_handshake()
    return n.write_message(payload)


def tlv(t, v):
    return bytes([t]) + struct.pack(">H", len(v)) + v


payload = bytes.fromhex("0100056d73672d31010568656c6c6f")
day = 1_750_000_000 // 86_400
tag = hmac.new(pub(2), b"bitchat-courier-tag-v1" + struct.pack(">I", day), hashlib.sha256).digest()[:16]
drop = tlv(1, tag) + tlv(2, struct.pack(">Q", 1_750_000_000_000 + 86_400_000)) + tlv(3, seal(payload, pub(2), b"bitchat-courier-v1"))
print(json.dumps({
    "courier-drop": drop.hex(),
    "courier-seal-prekey": seal(payload, pub(4), b"bitchat-prekey-v1" + struct.pack(">I", 7)).hex(),
}))
