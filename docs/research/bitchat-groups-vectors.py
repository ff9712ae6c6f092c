"""Byte-exact vectors for bitchat private groups (iOS GroupProtocol.swift @ 9b84b361).

Run: /work/main/.venv/bin/python docs/research/bitchat-groups-vectors.py
Needs: cryptography (Ed25519, X25519, ChaCha20-Poly1305).

Everything here is built from fixed inputs, so the output is deterministic:
- Ed25519 signatures are deterministic (RFC 8032), which the `cryptography`
  package follows. iOS CryptoKit signatures are NOT deterministic (they are
  randomised), so iOS will produce different signature bytes for the same
  input; they still verify under the same public key. A decoder must
  therefore be tested by *verifying* these signatures, and an encoder by
  comparing everything except the 64 signature bytes (or by signing with a
  deterministic RFC 8032 signer, as here).
- The AEAD nonce is random on iOS (CryptoKit `ChaChaPoly.seal` with no nonce)
  and on the Android branch (SecureRandom). Here it is fixed.
The script asserts the round trip (decrypt + verify) at the end.
"""
import hashlib
import struct

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

RAW = serialization.Encoding.Raw
RAWPUB = serialization.PublicFormat.Raw


def tlv(t, v):
    """GroupTLV.put: type u8 | length u16 BE | value (GroupProtocol.swift:77-84)."""
    assert len(v) <= 0xFFFF
    return bytes([t]) + struct.pack(">H", len(v)) + v


def u32(v):
    return struct.pack(">I", v)


def u64(v):
    return struct.pack(">Q", v)


def sha256(b):
    return hashlib.sha256(b).digest()


def chunk(b, n=32):
    h = b.hex()
    return "\n".join(h[i:i + 2 * n] for i in range(0, len(h), 2 * n))


class Identity:
    """Ed25519 signing key + X25519 Noise static key; fingerprint = SHA256(noise pub)."""

    def __init__(self, sign_seed, noise_priv, nickname):
        self.sk = Ed25519PrivateKey.from_private_bytes(sign_seed)
        self.signing_key = self.sk.public_key().public_bytes(RAW, RAWPUB)
        noise = X25519PrivateKey.from_private_bytes(noise_priv)
        self.noise_pub = noise.public_key().public_bytes(RAW, RAWPUB)
        self.fingerprint = sha256(self.noise_pub)  # 32 raw bytes; hex lowercase in app
        self.peer_id = self.fingerprint[:8]  # short mesh peer ID = first 16 hex chars
        self.nickname = nickname

    def sign(self, data):
        return self.sk.sign(data)


def roster_blob(members):
    """GroupRosterCoding.encode (GroupProtocol.swift:136-153)."""
    assert len(members) <= 16
    out = bytes([len(members)])
    for m in members:
        nick = m.nickname.encode()
        assert len(nick) <= 64  # iOS trims whole Characters to <= 64 bytes
        out += m.fingerprint + m.signing_key + bytes([len(nick)]) + nick
    return out


def state_signing_content(group_id, epoch, key, roster, name):
    """GroupStatePayload.signingContent (GroupProtocol.swift:223-231)."""
    return (b"bitchat-group-v1" + group_id + u32(epoch) + sha256(key)
            + sha256(roster) + sha256(name.encode()))


def state_payload(group_id, name, key, epoch, roster, creator_fp, sig):
    """GroupStatePayload.encode (GroupProtocol.swift:254-271): TLVs 01..07 in order."""
    return (tlv(0x01, group_id) + tlv(0x02, name.encode()) + tlv(0x03, key)
            + tlv(0x04, u32(epoch)) + tlv(0x05, roster) + tlv(0x06, creator_fp)
            + tlv(0x07, sig))


def msg_signing_content(group_id, epoch, message_id, ts_ms, content):
    """GroupCrypto.messageSigningContent (GroupProtocol.swift:429-437)."""
    return (b"bitchat-group-msg-v1" + group_id + u32(epoch) + message_id.encode()
            + u64(ts_ms) + content.encode())


def inner_tlv(message_id, sender_key, nickname, ts_ms, content, sig):
    """Inner plaintext TLVs 01..06 (GroupProtocol.swift:470-476)."""
    return (tlv(0x01, message_id.encode()) + tlv(0x02, sender_key)
            + tlv(0x03, nickname.encode()) + tlv(0x04, u64(ts_ms))
            + tlv(0x05, content.encode()) + tlv(0x06, sig))


def envelope(group_id, epoch, nonce, ct_and_tag):
    """GroupMessageEnvelope.encode (GroupProtocol.swift:360-367)."""
    return tlv(0x01, group_id) + tlv(0x02, u32(epoch)) + tlv(0x03, nonce) + tlv(0x04, ct_and_tag)


def outer_packet_v1(ptype, ttl, ts_ms, sender8, payload):
    """Unpadded, unsigned, uncompressed v1 BitchatPacket (BinaryProtocol.swift:181-213)."""
    flags = 0x00
    return (bytes([1, ptype, ttl]) + u64(ts_ms) + bytes([flags])
            + struct.pack(">H", len(payload)) + sender8 + payload)


def packet_id(ptype, sender8, ts_ms, payload):
    """PacketIdUtil.computeId: SHA256(type | senderID | ts BE | payload)[:16]."""
    return sha256(bytes([ptype]) + sender8 + u64(ts_ms) + payload)[:16]


def should_compress(d):
    if len(d) < 100:
        return False
    return len(set(d)) / min(len(d), 256) < 0.9


# ---------------------------------------------------------------- fixed inputs
creator = Identity(bytes(range(32)), bytes([0x11] * 32), "alice")
member = Identity(bytes(range(32, 64)), bytes([0x22] * 32), "bob")
GROUP_ID = bytes(range(16))            # same as GroupProtocolTests.groupID
NAME = "trail crew"                    # same as GroupProtocolTests
KEY_E1 = bytes([0x42] * 32)            # same as GroupProtocolTests.key
KEY_E2 = bytes([0x43] * 32)            # "rotated" key for the removal example
MSG_ID = "6F9619FF-8B86-4011-B42D-00C04FC964FF"  # iOS sends UUID().uuidString (upper case)
TS = 1_750_000_000_000                 # ms, same as messageRoundTrip test
CONTENT = "summit at noon"
NONCE = bytes(range(0xA0, 0xAC))       # 12 bytes, fixed here (random in the apps)
TTL = 7

print("== identities")
for who in (creator, member):
    print(f"{who.nickname}: ed25519 pub {who.signing_key.hex()}")
    print(f"{' ' * len(who.nickname)}  noise pub   {who.noise_pub.hex()}")
    print(f"{' ' * len(who.nickname)}  fingerprint {who.fingerprint.hex()}  peerID {who.peer_id.hex()}")

# ------------------------------------------------ vector 1: invite state, epoch 2
# iOS: create = epoch 1 with [creator]; every invite rotates (epoch+1, new key).
# Here we just fix epoch 2 and KEY_E1 for the two-member roster.
members = [creator, member]
roster = roster_blob(members)
sc = state_signing_content(GROUP_ID, 2, KEY_E1, roster, NAME)
sig = creator.sign(sc)
Ed25519PublicKey.from_public_bytes(creator.signing_key).verify(sig, sc)
state = state_payload(GROUP_ID, NAME, KEY_E1, 2, roster, creator.fingerprint, sig)
noise_plain = bytes([0x06]) + state
print("\n== V1 group state (invite) epoch=2 roster=[alice(creator), bob] key=42*32")
print(f"roster blob ({len(roster)}):\n{chunk(roster)}")
print(f"signing content ({len(sc)}):\n{chunk(sc)}")
print(f"creator signature (RFC8032 deterministic):\n{chunk(sig)}")
print(f"state payload ({len(state)}):\n{chunk(state)}")
print(f"Noise plaintext = 0x06 || state ({len(noise_plain)} bytes); 0x07 || state for key update")

# ------------------------------------------------ vector 2: group message, epoch 2
msc = msg_signing_content(GROUP_ID, 2, MSG_ID, TS, CONTENT)
msig = member.sign(msc)
inner = inner_tlv(MSG_ID, member.signing_key, member.nickname, TS, CONTENT, msig)
aad = GROUP_ID + u32(2)
ct = ChaCha20Poly1305(KEY_E1).encrypt(NONCE, inner, aad)  # ciphertext || 16-byte tag
env = envelope(GROUP_ID, 2, NONCE, ct)
pkt = outer_packet_v1(0x25, TTL, TS, member.peer_id, env)
print("\n== V2 group message (0x25) from bob, epoch=2, key=42*32")
print(f"message signing content ({len(msc)}):\n{chunk(msc)}")
print(f"sender signature:\n{chunk(msig)}")
print(f"inner plaintext ({len(inner)}):\n{chunk(inner)}")
print(f"AAD ({len(aad)}): {aad.hex()}")
print(f"nonce: {NONCE.hex()}")
print(f"ciphertext||tag ({len(ct)}):\n{chunk(ct)}")
print(f"envelope = 0x25 payload ({len(env)}):\n{chunk(env)}")
print(f"outer v1 frame, unsigned, ttl={TTL}, ts={TS}, sender={member.peer_id.hex()} ({len(pkt)}):\n{chunk(pkt)}")
print(f"packetID: {packet_id(0x25, member.peer_id, TS, env).hex()}")
print(f"iOS shouldCompress(envelope) = {should_compress(env)} (then zlib must also shrink it)")

# ------------------------------------------------ vector 3: removal notice to bob
# Creator removes bob: rotate to epoch 3 with roster [alice]; remaining members get
# 0x07 with the real new key, bob gets 0x07 with an all-zero "throwaway" key.
roster3 = roster_blob([creator])
sc3 = state_signing_content(GROUP_ID, 3, bytes(32), roster3, NAME)
sig3 = creator.sign(sc3)
state3 = state_payload(GROUP_ID, NAME, bytes(32), 3, roster3, creator.fingerprint, sig3)
print("\n== V3 removal notice to bob: epoch=3 roster=[alice] key=00*32 (Noise type 0x07)")
print(f"state payload ({len(state3)}):\n{chunk(state3)}")

# ------------------------------------------------ self-checks (decode side)
def parse_tlv(data):
    out, i = [], 0
    while i < len(data):
        assert len(data) - i >= 3
        t, n = data[i], int.from_bytes(data[i + 1:i + 3], "big")
        assert len(data) - i - 3 >= n
        out.append((t, data[i + 3:i + 3 + n]))
        i += 3 + n
    return out

f = dict(parse_tlv(env))
pt = ChaCha20Poly1305(KEY_E1).decrypt(f[3], f[4], f[1] + f[2])
g = dict(parse_tlv(pt))
Ed25519PublicKey.from_public_bytes(g[2]).verify(
    g[6], msg_signing_content(f[1], int.from_bytes(f[2], "big"), g[1].decode(),
                              int.from_bytes(g[4], "big"), g[5].decode()))
# relabelled epoch must fail the AEAD (GroupProtocolTests.epochIsBoundIntoTheCiphertext)
try:
    ChaCha20Poly1305(KEY_E1).decrypt(f[3], f[4], f[1] + u32(3))
    raise SystemExit("epoch relabel unexpectedly decrypted")
except Exception as e:  # InvalidTag
    if isinstance(e, SystemExit):
        raise
s = dict(parse_tlv(state))
Ed25519PublicKey.from_public_bytes(creator.signing_key).verify(
    s[7], state_signing_content(s[1], int.from_bytes(s[4], "big"), s[3], s[5], s[2].decode()))
print("\nself-checks OK (decrypt, sender signature, epoch binding, creator signature)")
