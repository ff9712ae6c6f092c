#!/usr/bin/env python3
"""An independent Noise peer for Starling's tests, built on the `noiseprotocol`
package: Noise_XX_25519_ChaChaPoly_SHA256 over a TCP socket on 127.0.0.1.

    noise_peer.py initiator|responder [MESSAGES]

Listens on an ephemeral loopback port and prints it. Frames on the socket are
u16 big-endian length + bytes. After the handshake it sends, in the clear, its
handshake hash and its static public key (so the test can compare), then echoes
MESSAGES transport messages as b"echo:" + plaintext, then sends three messages
of its own. Every wait is bounded by a 20-second timeout.
"""
import os
import socket
import struct
import sys

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from noise.connection import Keypair, NoiseConnection


def main() -> int:
    role = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(20)
    print(server.getsockname()[1], flush=True)
    conn, _ = server.accept()
    conn.settimeout(20)

    def read_exact(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = conn.recv(n - len(buf))
            if not chunk:
                raise EOFError("peer closed")
            buf += chunk
        return buf

    def send(b: bytes) -> None:
        conn.sendall(struct.pack(">H", len(b)) + b)

    def recv() -> bytes:
        (n,) = struct.unpack(">H", read_exact(2))
        return read_exact(n)

    private = os.urandom(32)
    public = X25519PrivateKey.from_private_bytes(private).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    noise = NoiseConnection.from_name(b"Noise_XX_25519_ChaChaPoly_SHA256")
    noise.set_keypair_from_private_bytes(Keypair.STATIC, private)
    if role == "initiator":
        noise.set_as_initiator()
    else:
        noise.set_as_responder()
    noise.start_handshake()
    if role == "initiator":
        send(noise.write_message())
        noise.read_message(recv())
        send(noise.write_message())
    else:
        noise.read_message(recv())
        send(noise.write_message())
        noise.read_message(recv())
    assert noise.handshake_finished
    send(noise.get_handshake_hash())
    send(public)
    for _ in range(count):
        plaintext = noise.decrypt(recv())
        send(noise.encrypt(b"echo:" + plaintext))
    for i in range(3):
        send(noise.encrypt(f"from python {i}".encode()))
    conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
