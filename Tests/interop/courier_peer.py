#!/usr/bin/env python3
"""Two independent peers for Starling's courier-drop tests, written from
docs/PROTOCOL.md ("Courier drops (0x04)") with `noiseprotocol` (Noise X),
hmac, hashlib and pynacl:

    courier_peer.py NODE_PORT BOB_PORT CAROL_PORT

"pybob" (UDP 127.0.0.1:BOB_PORT) announces itself to the node at NODE_PORT,
reads its announce, and sends it a courier drop: "drop from python" sealed
one-way to the node's Noise key (prologue "bitchat-courier-v1"), in an
envelope tagged for today, in a signed 0x04 packet directed to the node. It
asks for prekey bundles by sync type bit 9, checks the node's bundle (0x24:
its Noise key, signed by its announced Ed25519 key) and sends a second drop,
"prekey drop from python", sealed to the node's first one-time prekey
(prologue "bitchat-prekey-v1" ‖ its ID, envelope TLV 05). Then pybob goes
quiet (away). "pycarol" (CAROL_PORT) answers every newcomer's
announce and waits (90 s at most) for a 0x04 deposit directed to her: the
packet must be signed by the node's announced key, its envelope tagged for
pybob today, and the seal must open with pybob's static key, from the node's
Noise key, to a private message "drop from starling" (the test sends it with
`starling send --to pybob` while pybob is away). Prints one line per check and
pybob's fingerprint; exits 0 when all hold.
"""
import hashlib
import hmac
import os
import socket
import struct
import sys
import time
import uuid

from nacl.public import PrivateKey
from nacl.signing import SigningKey, VerifyKey
from noise.connection import Keypair, NoiseConnection

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bitchat_peer import ANNOUNCE, HAS_RECIPIENT, HAS_SIGNATURE, board_tlvs, decode, encode, now_ms, pad, signed, tlv16, tlv8  # noqa: E402

COURIER, PREKEYS, REQUEST_SYNC = 0x04, 0x24, 0x21


def tag(noise_public: bytes, day: int) -> bytes:
    return hmac.new(noise_public, b"bitchat-courier-tag-v1" + struct.pack(">I", day), hashlib.sha256).digest()[:16]


def today() -> int:
    return int(time.time()) // 86_400


class Peer:
    def __init__(self, name: str, port: int):
        self.name = name
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", port))
        self.sock.settimeout(0.3)
        self.noise, self.signing = PrivateKey.generate(), SigningKey.generate()
        self.noise_pub = bytes(self.noise.public_key)
        self.fingerprint = hashlib.sha256(self.noise_pub).digest()
        self.id = self.fingerprint[:8]
        self.announced_to = set()
        # Capabilities: meshDiagnostics (6), privateMedia (8), little-endian.
        self.body = (bytes([0x01, len(name)]) + name.encode() + bytes([0x02, 32]) + self.noise_pub + bytes([0x03, 32])
                     + bytes(self.signing.verify_key) + bytes([0x05, 2, 0x40, 0x01]))

    def announce(self, to):
        self.announced_to.add(to)
        self.sock.sendto(signed(self.signing, ANNOUNCE, 7, now_ms(), self.id, self.body), to)

    def pump(self, seconds, until):
        """Packets until `until` returns something (a newcomer's announce is answered with ours)."""
        end = time.time() + seconds
        while time.time() < end:
            try:
                data, addr = self.sock.recvfrom(65535)
            except socket.timeout:
                continue
            p = decode(data)
            if p is None:
                continue
            p["raw"], p["addr"] = data, addr
            if p["type"] == ANNOUNCE and p["sender"] != self.id and addr not in self.announced_to:
                self.announce(addr)
            found = until(p)
            if found is not None:
                return found
        return None


def signature_holds(p, key: bytes) -> bool:
    """The packet's Ed25519 signature (after the payload) over its signing preimage (TTL 0, padded)."""
    if not p["flags"] & HAS_SIGNATURE or p["flags"] & 0x04:
        return False
    start = 22 + (8 if p["flags"] & HAS_RECIPIENT else 0) + len(p["payload"])
    sig = p["raw"][start:start + 64]
    preimage = pad(encode(p["type"], 0, p["ts"], p["sender"], p["payload"], p["recipient"]))
    try:
        VerifyKey(key).verify(preimage, sig)
        return True
    except Exception:
        return False


def main() -> int:
    node = ("127.0.0.1", int(sys.argv[1]))
    bob, carol = Peer("pybob", int(sys.argv[2])), Peer("pycarol", int(sys.argv[3]))
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(("ok: " if ok else "FAILED: ") + what, flush=True)
        if not ok:
            failures += 1
        return ok

    print("pybob: " + bob.fingerprint.hex(), flush=True)
    bob.announce(node)
    a = bob.pump(20, lambda p: p if p["type"] == ANNOUNCE and p["sender"] != bob.id else None)
    if not check(a is not None, "the node announced itself"):
        return 1
    t = tlv8(a["payload"])
    node_id, node_noise, node_signing = a["sender"], t[0x02], t[0x03]

    # pybob -> node: a private message sealed one-way to the node's Noise key.
    message_id = str(uuid.uuid4()).upper()
    payload = bytes([0x01]) + bytes([0x00, len(message_id)]) + message_id.encode() + bytes([0x01, 16]) + b"drop from python"
    n = NoiseConnection.from_name(b"Noise_X_25519_ChaChaPoly_SHA256")
    n.set_as_initiator()
    n.set_prologue(b"bitchat-courier-v1")
    n.set_keypair_from_private_bytes(Keypair.STATIC, bytes(bob.noise))
    n.set_keypair_from_public_bytes(Keypair.REMOTE_STATIC, node_noise)
    n.start_handshake()
    seal = n.write_message(payload)
    envelope = tlv16(1, tag(node_noise, today())) + tlv16(2, struct.pack(">Q", now_ms() + 86_400_000)) + tlv16(3, seal)
    time.sleep(0.5)  # our announce first
    bob.sock.sendto(signed(bob.signing, COURIER, 7, now_ms(), bob.id, envelope, recipient=node_id), node)
    print("ok: pybob sent the node a courier drop (0x04)", flush=True)

    # The node's prekey bundle (0x24), asked for by sync type bit 9 (types 00 02): signed by its
    # announced key over its own Noise key; then a drop sealed to its first one-time prekey.
    def request_prekeys():
        payload = tlv16(0x01, bytes([7])) + tlv16(0x02, struct.pack(">I", 0)) + tlv16(0x03, b"") + tlv16(0x04, bytes([0x00, 0x02]))
        bob.sock.sendto(signed(bob.signing, REQUEST_SYNC, 0, now_ms(), bob.id, payload), node)
        return bob.pump(5, lambda p: p if p["type"] == PREKEYS and p["sender"] == node_id else None)

    b = None
    for _ in range(6):  # the node's bundle is made at its first housekeeping: asked again until it is
        b = request_prekeys()
        if b is not None:
            break
    if not check(b is not None, "the node answered a sync for prekeys (bit 9) with its bundle (0x24)"):
        return 1
    bt = board_tlvs(b["payload"]) or {}
    raw_keys, generated = bt.get(2, b""), bt.get(3, b"")
    prekeys = [(struct.unpack(">I", raw_keys[i:i + 4])[0], raw_keys[i + 4:i + 36]) for i in range(0, len(raw_keys) - 35, 36)]
    preimage = (bytes([24]) + b"bitchat-prekey-bundle-v1" + bt.get(1, b"") + bytes([len(prekeys)]) + raw_keys + generated)
    try:
        VerifyKey(node_signing).verify(preimage, bt.get(4, b""))
        holds = True
    except Exception:  # noqa: BLE001
        holds = False
    check(bt.get(1) == node_noise and len(prekeys) > 0 and holds,
          f"the bundle is the node's Noise key's, {len(prekeys)} prekeys, signed by its announced key")
    prekey_id, prekey = prekeys[0]
    message_id = str(uuid.uuid4()).upper()
    payload = bytes([0x01]) + bytes([0x00, len(message_id)]) + message_id.encode() + bytes([0x01, 23]) + b"prekey drop from python"
    n = NoiseConnection.from_name(b"Noise_X_25519_ChaChaPoly_SHA256")
    n.set_as_initiator()
    n.set_prologue(b"bitchat-prekey-v1" + struct.pack(">I", prekey_id))
    n.set_keypair_from_private_bytes(Keypair.STATIC, bytes(bob.noise))
    n.set_keypair_from_public_bytes(Keypair.REMOTE_STATIC, prekey)
    n.start_handshake()
    envelope = (tlv16(1, tag(node_noise, today())) + tlv16(2, struct.pack(">Q", now_ms() + 86_400_000)) + tlv16(3, n.write_message(payload))
                + tlv16(5, struct.pack(">I", prekey_id)))
    bob.sock.sendto(signed(bob.signing, COURIER, 7, now_ms(), bob.id, envelope, recipient=node_id), node)
    print(f"ok: pybob sent the node a drop sealed to its prekey {prekey_id}", flush=True)

    # pybob is away now; pycarol waits for a deposit for him.
    def deposit(p):
        if p["type"] != COURIER or p["recipient"] != carol.id:
            return None
        return p

    d = carol.pump(90, deposit)
    if not check(d is not None, "a drop was deposited with pycarol (0x04 directed to her)"):
        return 1
    check(signature_holds(d, node_signing), "the deposit is signed by the node's announced key")
    env = board_tlvs(d["payload"])
    check(env is not None and env.get(1) in (tag(bob.noise_pub, today() + k) for k in (-1, 0, 1)),
          "its envelope is tagged for pybob (today's tag)")
    expiry = struct.unpack(">Q", env[2])[0] if env and len(env.get(2, b"")) == 8 else 0
    check(now_ms() < expiry <= now_ms() + 86_400_000 + 60_000, "it expires within 24 h")
    # The courier cannot read it (the control, pybob's key, opens it below).
    c = NoiseConnection.from_name(b"Noise_X_25519_ChaChaPoly_SHA256")
    c.set_as_responder()
    c.set_prologue(b"bitchat-courier-v1")
    c.set_keypair_from_private_bytes(Keypair.STATIC, bytes(carol.noise))
    c.start_handshake()
    try:
        c.read_message(env[3])
        check(False, "pycarol, the courier, cannot open it")
    except Exception:  # noqa: BLE001
        check(True, "pycarol, the courier, cannot open it")
    r = NoiseConnection.from_name(b"Noise_X_25519_ChaChaPoly_SHA256")
    r.set_as_responder()
    r.set_prologue(b"bitchat-courier-v1")
    r.set_keypair_from_private_bytes(Keypair.STATIC, bytes(bob.noise))
    r.start_handshake()
    state = r.noise_protocol.handshake_state  # kept: the library drops it once the one message is read
    try:
        opened = r.read_message(env[3])
    except Exception as e:  # noqa: BLE001
        check(False, f"the seal opens with pybob's key ({e})")
        return 1
    sender = state.rs.public_bytes
    check(sender == node_noise, "sealed by the node's Noise key")
    fields = tlv8(opened[1:]) if opened[:1] == b"\x01" else {}
    check(fields.get(0x01) == b"drop from starling", f"a private message 'drop from starling': {opened!r}")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
