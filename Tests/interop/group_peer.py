#!/usr/bin/env python3
"""An independent group creator for Starling's tests, written from
docs/PROTOCOL.md ("Groups", "Noise sessions") with `noiseprotocol` (the XX
handshake), `cryptography` (ChaCha20-Poly1305, Ed25519 checks) and pynacl:

    group_peer.py NODE_PORT MY_PORT

It announces itself on UDP 127.0.0.1:MY_PORT to the node at NODE_PORT,
completes a Noise XX handshake with it in 0x10 packets, makes a group "py crew"
of itself (creator) and the node, signs its state and sends the invite (Noise
0x06 in a 0x11 frame), then a group message (0x25, "group from python") sealed
for the group. Then it waits (60 s at most) for a group message from the node's
key: it must open with the group's key, carry the node's signature and say
"group from starling" (the test sends it with `starling send --to-group`).
A new peer's announce is answered with ours, so that a one-shot sender finds
someone. Prints one line per check; exits 0 when all hold.
"""
import hashlib
import os
import socket
import struct
import sys
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from nacl.public import PrivateKey
from nacl.signing import SigningKey

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bitchat_peer import ANNOUNCE, decode, encode, noise_handshake, now_ms, signed, tlv16, tlv8  # noqa: E402

ENCRYPTED, GROUP_MESSAGE = 0x11, 0x25
INVITE = 0x06


def main() -> int:
    node = ("127.0.0.1", int(sys.argv[1]))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", int(sys.argv[2])))
    sock.settimeout(0.3)
    noise_key, signing = PrivateKey.generate(), SigningKey.generate()
    noise_pub = bytes(noise_key.public_key)
    fingerprint = hashlib.sha256(noise_pub).digest()
    me = fingerprint[:8]
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(("ok: " if ok else "FAILED: ") + what, flush=True)
        if not ok:
            failures += 1
        return ok

    # Capabilities: groups (3), meshDiagnostics (6), privateMedia (8), little-endian.
    announce_body = (bytes([0x01, 6]) + b"python" + bytes([0x02, 32]) + noise_pub + bytes([0x03, 32]) + bytes(signing.verify_key)
                     + bytes([0x05, 2, 0x48, 0x01]))

    def announce(to):
        sock.sendto(signed(signing, ANNOUNCE, 7, now_ms(), me, announce_body), to)

    announced_to = set()
    inbox = []

    def pump(seconds, until):
        end = time.time() + seconds
        while time.time() < end:
            try:
                data, addr = sock.recvfrom(65535)
            except socket.timeout:
                continue
            p = decode(data)
            if p is None:
                continue
            p["addr"] = addr
            if p["type"] == ANNOUNCE and p["sender"] != me and addr not in announced_to:
                announced_to.add(addr)
                announce(addr)  # a newcomer (a one-shot sender) learns of us
            inbox.append(p)
            found = until(p)
            if found is not None:
                return found
        return None

    announce(node)
    announced_to.add(node)
    a = pump(20, lambda p: p if p["type"] == ANNOUNCE and p["sender"] != me else None)
    if not check(a is not None, "the node announced itself"):
        return 1
    node_id, t = a["sender"], tlv8(a["payload"])
    node_noise, node_signing, node_nick = t[0x02], t[0x03], t[0x01].decode()
    check(int.from_bytes(t.get(0x05, b""), "little") & (1 << 3) != 0, "the node's capabilities include groups (bit 3)")

    # The Noise XX handshake, we the initiator: 32, 96 and 64 bytes in 0x10 packets.
    remote_static, frame = noise_handshake(sock, node, me, node_id, bytes(noise_key), lambda until, seconds: pump(seconds, until))
    if not check(frame is not None, "the node answered the handshake (96 bytes)"):
        return 1
    check(remote_static == node_noise, "the handshake finished with the node's announced Noise key")

    # The group: us (creator) and the node, epoch 1, a random key; its state signed by us.
    group_id, key, name, epoch = os.urandom(16), os.urandom(32), "py crew", 1
    members = [(fingerprint, bytes(signing.verify_key), "python"),
               (hashlib.sha256(node_noise).digest(), node_signing, node_nick)]
    roster = bytes([len(members)]) + b"".join(f + k + bytes([len(n.encode())]) + n.encode() for f, k, n in members)
    content = (b"bitchat-group-v1" + group_id + struct.pack(">I", epoch) + hashlib.sha256(key).digest()
               + hashlib.sha256(roster).digest() + hashlib.sha256(name.encode()).digest())
    state = (tlv16(1, group_id) + tlv16(2, name.encode()) + tlv16(3, key) + tlv16(4, struct.pack(">I", epoch)) + tlv16(5, roster)
             + tlv16(6, fingerprint) + tlv16(7, signing.sign(content).signature))
    time.sleep(0.3)
    sock.sendto(encode(ENCRYPTED, 7, now_ms(), me, frame(bytes([INVITE]) + state), recipient=node_id), node)
    print("ok: invited the node to 'py crew' (Noise 0x06)", flush=True)

    # A group message from us: signed inside, sealed for the group, in an unsigned 0x25 packet.
    time.sleep(1.0)
    message_id, at, text = "0F7C1E2A-3B4D-4E5F-8A9B-0C1D2E3F4A5B", now_ms(), "group from python"
    msg_signed = b"bitchat-group-msg-v1" + group_id + struct.pack(">I", epoch) + message_id.encode() + struct.pack(">Q", at) + text.encode()
    inner = (tlv16(1, message_id.encode()) + tlv16(2, bytes(signing.verify_key)) + tlv16(3, b"python") + tlv16(4, struct.pack(">Q", at))
             + tlv16(5, text.encode()) + tlv16(6, signing.sign(msg_signed).signature))
    nonce = os.urandom(12)
    sealed = ChaCha20Poly1305(key).encrypt(nonce, inner, group_id + struct.pack(">I", epoch))
    envelope = tlv16(1, group_id) + tlv16(2, struct.pack(">I", epoch)) + tlv16(3, nonce) + tlv16(4, sealed)
    sock.sendto(encode(GROUP_MESSAGE, 7, now_ms(), me, envelope), node)
    print("ok: sent a group message (0x25)", flush=True)

    # The node's message to the group, whichever address it comes from: opened and verified here.
    def opened(p):
        if p["type"] != GROUP_MESSAGE or p["sender"] == me:
            return None
        fields, i = {}, 0
        body = p["payload"]
        while i + 3 <= len(body):
            tt, n = body[i], struct.unpack(">H", body[i + 1:i + 3])[0]
            fields[tt] = body[i + 3:i + 3 + n]
            i += 3 + n
        if fields.get(1) != group_id:
            return None
        plain = ChaCha20Poly1305(key).decrypt(fields[3], fields[4], group_id + fields[2])
        tl, i = {}, 0
        while i + 3 <= len(plain):
            tt, n = plain[i], struct.unpack(">H", plain[i + 1:i + 3])[0]
            tl[tt] = plain[i + 3:i + 3 + n]
            i += 3 + n
        signed_bytes = (b"bitchat-group-msg-v1" + group_id + fields[2] + tl[1] + tl[4] + tl[5])
        try:
            Ed25519PublicKey.from_public_bytes(tl[2]).verify(tl[6], signed_bytes)
        except InvalidSignature:
            return {"text": tl[5].decode(), "verified": False, "key": tl[2]}
        return {"text": tl[5].decode(), "verified": True, "key": tl[2]}

    got = pump(60, opened)
    check(got is not None and got["text"] == "group from starling", f"the node's group message opened with the group's key: {got}")
    check(got is not None and got["verified"] and got["key"] == node_signing,
          "it is signed by the node's announced key, a member of the roster")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
