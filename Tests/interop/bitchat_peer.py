#!/usr/bin/env python3
"""An independent bitchat peer for Starling's tests, written from
docs/PROTOCOL.md with pynacl (Ed25519, X25519) and hashlib: it talks to a real
`starling listen` over UDP on 127.0.0.1 and checks the 2026 additions.

    bitchat_peer.py PORT

It announces itself with the capabilities (0x05) and bridge geohash (0x06)
TLVs, sends a signed public message, reads the node's announce (which must
say meshDiagnostics), pings the node (the pong must echo the ping), and sends
three REQUEST_SYNCs with the 2026 options, in both numberings: the answers must
keep to the types and the time asked for. Then the board (0x23): it posts a
signed board post (an unsigned outer packet, as Android sends them), and asks
for the board by REQUEST_SYNC type bit 8: the answers must carry its own post
and one a Starling node made (content "from starling"), each verified here
with its own decoder. Prints one line per check; exits 0 when all hold. Every
wait is bounded (20 s).
"""
import hashlib
import os
import socket
import struct
import sys
import time
import zlib

from nacl.public import PrivateKey
from nacl.signing import SigningKey

ANNOUNCE, MESSAGE, REQUEST_SYNC, BOARD, PING, PONG = 0x01, 0x02, 0x21, 0x23, 0x26, 0x27
HAS_RECIPIENT, HAS_SIGNATURE, IS_COMPRESSED, IS_RSR = 0x01, 0x02, 0x04, 0x10


def now_ms() -> int:
    return int(time.time() * 1000)


def encode(ptype, ttl, ts, sender, payload, recipient=None, signature=None, flags=0):
    if recipient is not None:
        flags |= HAS_RECIPIENT
    if signature is not None:
        flags |= HAS_SIGNATURE
    out = struct.pack(">BBBQBH", 1, ptype, ttl, ts, flags, len(payload)) + sender
    if recipient is not None:
        out += recipient
    out += payload
    if signature is not None:
        out += signature
    return out


def noise_handshake(sock, node, me: bytes, node_id: bytes, noise_private: bytes, receive):
    """The Noise XX handshake with the node (docs/PROTOCOL.md, "Noise sessions"), we the
    initiator: 32, 96 and 64 bytes in 0x10 packets. `receive(predicate, seconds)` reads
    packets until one matches (None after the time). Returns (the node's static key as
    the handshake proved it, frame) where frame(plaintext) is one transport message as a
    0x11 packet carries it (counter u32 BE ‖ ChaCha20-Poly1305), or (None, None)."""
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
    from noise.connection import Keypair, NoiseConnection
    hs = NoiseConnection.from_name(b"Noise_XX_25519_ChaChaPoly_SHA256")
    hs.set_as_initiator()
    hs.set_keypair_from_private_bytes(Keypair.STATIC, noise_private)
    hs.start_handshake()
    sock.sendto(encode(0x10, 7, now_ms(), me, hs.write_message(), recipient=node_id), node)
    m2 = receive(lambda p: p if p["type"] == 0x10 and p["recipient"] == me else None, 20)
    if m2 is None or len(m2["payload"]) != 96:
        return None, None
    hs.read_message(m2["payload"])
    remote_static = hs.noise_protocol.handshake_state.rs.public_bytes  # its s, read from message 2
    sock.sendto(encode(0x10, 7, now_ms(), me, hs.write_message(), recipient=node_id), node)
    if not hs.handshake_finished:
        return None, None
    send_key, counter = hs.noise_protocol.cipher_state_encrypt.k, [0]

    def frame(plaintext: bytes) -> bytes:
        nonce = bytes(4) + counter[0].to_bytes(8, "little")
        out = counter[0].to_bytes(4, "big") + ChaCha20Poly1305(send_key).encrypt(nonce, plaintext, None)
        counter[0] += 1
        return out
    return remote_static, frame


def pad(data: bytes) -> bytes:
    # PKCS#7-style to the smallest of 256/512/1024/2048 that is >= length + 16, when 1-255 bytes are needed.
    for size in (256, 512, 1024, 2048):
        if size >= len(data) + 16:
            n = size - len(data)
            return data + bytes([n]) * n if 1 <= n <= 255 else data
    return data


def signed(key: SigningKey, ptype, ttl, ts, sender, payload, recipient=None):
    # The preimage: TTL 0, no signature, isRSR cleared, padded (docs/PROTOCOL.md, "Signing preimage").
    preimage = pad(encode(ptype, 0, ts, sender, payload, recipient))
    return encode(ptype, ttl, ts, sender, payload, recipient, key.sign(preimage).signature)


def decode(b: bytes):
    version, ptype, ttl, ts, flags = struct.unpack(">BBBQB", b[:12])
    if version != 1:
        return None
    (length,) = struct.unpack(">H", b[12:14])
    sender, i = b[14:22], 22
    recipient = None
    if flags & HAS_RECIPIENT:
        recipient, i = b[i:i + 8], i + 8
    payload = b[i:i + length]
    if flags & IS_COMPRESSED:
        # v1: u16 original size, then raw DEFLATE (docs/PROTOCOL.md, "Compression").
        (size,) = struct.unpack(">H", payload[:2])
        payload = zlib.decompress(payload[2:], -15)
        if len(payload) != size:
            return None
    return {"type": ptype, "ttl": ttl, "ts": ts, "flags": flags, "sender": sender, "recipient": recipient, "payload": payload}


def tlv8(body: bytes):
    out, i = {}, 0
    while i + 2 <= len(body):
        t, n = body[i], body[i + 1]
        out[t] = body[i + 2:i + 2 + n]
        i += 2 + n
    return out


def tlv16(t: int, value: bytes) -> bytes:
    return struct.pack(">BH", t, len(value)) + value


def board_tlvs(body: bytes):
    """The board payload's TLVs (u8 type, u16 length), the last copy of each counting."""
    out, i = {}, 0
    while i + 3 <= len(body):
        t, n = body[i], struct.unpack(">H", body[i + 1:i + 3])[0]
        if i + 3 + n > len(body):
            return None
        out[t] = body[i + 3:i + 3 + n]
        i += 3 + n
    return out


def board_post(post_id: bytes, content: str, key: SigningKey, nickname: str, created: int, expires: int, flags: int) -> bytes:
    """A signed post as docs/PROTOCOL.md "Board (0x23)" states it."""
    author = bytes(key.verify_key)
    signed_bytes = (bytes([16]) + b"bitchat-board-v1" + post_id + struct.pack(">H", 0) + struct.pack(">H", len(content.encode()))
                    + content.encode() + author + struct.pack(">H", len(nickname.encode())) + nickname.encode()
                    + struct.pack(">QQ", created, expires) + bytes([flags]))
    sig = key.sign(signed_bytes).signature
    return (tlv16(0x01, b"\x01") + tlv16(0x02, post_id) + tlv16(0x03, b"") + tlv16(0x04, content.encode()) + tlv16(0x05, author)
            + tlv16(0x06, nickname.encode()) + tlv16(0x07, struct.pack(">Q", created)) + tlv16(0x08, struct.pack(">Q", expires))
            + tlv16(0x09, bytes([flags])) + tlv16(0x0A, sig))


def verify_board_post(payload: bytes):
    """The post's content when its signature holds under the key it carries, else None."""
    from nacl.signing import VerifyKey
    t = board_tlvs(payload)
    if t is None or t.get(0x01) != b"\x01":
        return None
    g, c, nick = t.get(0x03, b""), t.get(0x04, b""), t.get(0x06, b"")
    signed_bytes = (bytes([16]) + b"bitchat-board-v1" + t[0x02] + struct.pack(">H", len(g)) + g + struct.pack(">H", len(c)) + c
                    + t[0x05] + struct.pack(">H", len(nick)) + nick + t[0x07] + t[0x08] + t[0x09])
    try:
        VerifyKey(t[0x05]).verify(signed_bytes, t[0x0A])
    except Exception:
        return None
    return c.decode()


def main() -> int:
    port = int(sys.argv[1])
    node = ("127.0.0.1", port)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.5)
    noise = PrivateKey.generate()
    signing = SigningKey.generate()
    noise_pub = bytes(noise.public_key)
    me = hashlib.sha256(noise_pub).digest()[:8]
    failures = 0

    def check(ok: bool, what: str):
        nonlocal failures
        print(("ok: " if ok else "FAILED: ") + what, flush=True)
        if not ok:
            failures += 1

    received = []

    def pump(seconds: float, until=None):
        end = time.time() + seconds
        while time.time() < end:
            try:
                data, _ = sock.recvfrom(65535)
            except socket.timeout:
                continue
            p = decode(data)
            if p is not None:
                received.append(p)
            if until is not None and until():
                return True
        return until() if until is not None else True

    # 1. Announce, with capabilities (bits 6 and 8: 0x0140, little-endian, trimmed) and a bridge geohash.
    body = (bytes([0x01, 6]) + b"python" + bytes([0x02, 32]) + noise_pub + bytes([0x03, 32]) + bytes(signing.verify_key)
            + bytes([0x05, 2, 0x40, 0x01]) + bytes([0x06, 6]) + b"u4pruy")
    sock.sendto(signed(signing, ANNOUNCE, 7, now_ms(), me, body), node)

    # 2. The node's announce: its capabilities say it answers pings.
    def node_announce():
        return next((p for p in received if p["type"] == ANNOUNCE and p["sender"] != me), None)
    pump(20, lambda: node_announce() is not None)
    a = node_announce()
    check(a is not None, "the node announced itself on the new link")
    if a is None:
        return 1
    node_id = a["sender"]
    tlvs = tlv8(a["payload"])
    caps = int.from_bytes(tlvs.get(0x05, b""), "little")
    check(caps & (1 << 6) != 0 and caps & (1 << 8) != 0,
          f"the node's capabilities (0x{caps:x}) include meshDiagnostics (bit 6) and privateMedia (bit 8)")
    check(tlvs.get(0x05, b"")[-1:] != b"\x00", "its capability bytes carry no trailing zero byte")
    check(hashlib.sha256(tlvs.get(0x02, b"")).digest()[:8] == node_id, "its sender ID is SHA-256 of its Noise key, first 8 bytes")

    # 3. A signed public message (the test reads it in the node's output).
    sent_at = now_ms()
    sock.sendto(signed(signing, MESSAGE, 7, sent_at, me, b"from python"), node)

    # 4. A ping; the pong echoes its payload.
    nonce = os.urandom(8)
    sock.sendto(encode(PING, 7, now_ms(), me, nonce + bytes([7]), recipient=node_id), node)
    got = pump(20, lambda: any(p["type"] == PONG and p["payload"][:8] == nonce for p in received))
    pong = next((p for p in received if p["type"] == PONG and p["payload"][:8] == nonce), None)
    check(got and pong["recipient"] == me and pong["payload"] == nonce + bytes([7]), "the ping was answered by a pong with its payload")

    # 5. REQUEST_SYNC with an empty filter (P 7, M 0: nothing is had) and the 2026 options.
    def request(options: bytes):
        payload = tlv16(0x01, bytes([7])) + tlv16(0x02, struct.pack(">I", 0)) + tlv16(0x03, b"") + options
        received.clear()
        sock.sendto(signed(signing, REQUEST_SYNC, 0, now_ms(), me, payload), node)
        pump(3)
        return [p for p in received if p["flags"] & IS_RSR]

    time.sleep(0.5)  # the message is in the node's store
    messages_only = request(tlv16(0x04, bytes([0x02])))
    check(len(messages_only) > 0 and all(p["type"] == MESSAGE for p in messages_only)
          and any(p["payload"] == b"from python" for p in messages_only),
          f"types = message (iOS 0x04): {len(messages_only)} answers, all public messages, ours among them")
    check(all(p["ttl"] == 0 for p in messages_only), "answers carry TTL 0 and isRSR")
    later = request(tlv16(0x04, bytes([0x02])) + tlv16(0x05, struct.pack(">Q", sent_at + 60_000)))
    check(not any(p["type"] == MESSAGE for p in later), f"since a minute ahead (0x05): no messages ({len(later)} answers)")
    announces = request(tlv16(0x05, bytes([0x01])))  # Android's earlier numbering: 0x05 is a one-byte type filter
    check(len(announces) > 0 and all(p["type"] == ANNOUNCE for p in announces),
          f"types = announce in Android's earlier numbering (0x05, one byte): {len(announces)} answers, all announces")

    # 6. A board post of ours, in an unsigned outer packet (as Android sends them); the test reads it in the node's output.
    created = now_ms()
    ours = board_post(os.urandom(16), "board from python", signing, "python", created, created + 86_400_000, 0)
    sock.sendto(encode(BOARD, 7, created, me, ours), node)
    time.sleep(0.5)
    # 7. The board by its own sync type (bit 8: 00 01): our post and the one a Starling node made, both verified here.
    board = request(tlv16(0x04, bytes([0x00, 0x01])))
    contents = sorted(filter(None, (verify_board_post(p["payload"]) for p in board if p["type"] == BOARD)))
    check(len(board) > 0 and all(p["type"] == BOARD for p in board),
          f"types = board (0x04 00 01): {len(board)} answers, all board posts")
    check(contents == ["board from python", "from starling"], f"each answer's signature holds under its author key: {contents}")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
