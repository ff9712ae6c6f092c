#!/usr/bin/env python3
"""An independent Stately state packet, built with the `cryptography` package.

Prints the hex of the packet for: name, state, timestamp, sender (16 hex digits),
nonce (24 hex digits), ttl, and an optional group passphrase (scrypt N=2^15, r=8, p=1,
salt "stately group v1"); without one, the broadcast key HKDF-SHA256("StateBeacon2024",
salt empty, info "stately broadcast key v1"). With --open HEX it opens a packet and
prints its JSON instead.
"""
import argparse
import json
import struct
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

PADDED = 192


def key(passphrase):
    if passphrase:
        return Scrypt(salt=b"stately group v1", length=32, n=1 << 15, r=8, p=1).derive(passphrase.encode())
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"stately broadcast key v1").derive(b"StateBeacon2024")


def build(a):
    body = json.dumps({"name": a.name, "state": a.state, "timestamp": a.timestamp},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    pad = PADDED - len(body)
    assert 1 <= pad <= 255
    plaintext = body + bytes([pad]) * pad
    nonce = bytes.fromhex(a.nonce)
    box = nonce + AESGCM(key(a.group)).encrypt(nonce, plaintext, None)
    header = struct.pack(">BBBQH", 1, 0x0A, a.ttl, a.timestamp, len(box))
    return header + bytes.fromhex(a.sender) + box


def open_packet(hex_packet, group):
    p = bytes.fromhex(hex_packet)
    version, kind, ttl, timestamp, length = struct.unpack(">BBBQH", p[:13])
    assert version == 1 and kind == 0x0A and len(p) == 21 + length
    box = p[21:]
    plaintext = AESGCM(key(group)).decrypt(box[:12], box[12:], None)
    pad = plaintext[-1]
    assert plaintext[-pad:] == bytes([pad]) * pad
    report = json.loads(plaintext[:-pad])
    assert report["timestamp"] == timestamp
    return json.dumps(report, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="alice")
    ap.add_argument("--state", default="working")
    ap.add_argument("--timestamp", type=int, default=1767225600000)
    ap.add_argument("--sender", default="0123456789abcdef")
    ap.add_argument("--nonce", default="000102030405060708090a0b")
    ap.add_argument("--ttl", type=int, default=3)
    ap.add_argument("--group")
    ap.add_argument("--open")
    a = ap.parse_args()
    if a.open:
        print(open_packet(a.open, a.group))
    else:
        print(build(a).hex())


if __name__ == "__main__":
    sys.exit(main())
