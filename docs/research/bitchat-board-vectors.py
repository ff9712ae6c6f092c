import hashlib, struct
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives import serialization

seed = bytes(range(32))
sk = Ed25519PrivateKey.from_private_bytes(seed)
pk = sk.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

def u64(v): return struct.pack(">Q", v)
def lp(b): return struct.pack(">H", len(b)) + b
def ctx(s): b=s.encode(); return bytes([len(b)]) + b
def tlv(t, v): return bytes([t]) + struct.pack(">H", len(v)) + v

def post_signing(postID, geohash, content, key, nick, created, expires, flags):
    return ctx("bitchat-board-v1") + postID + lp(geohash.encode()) + lp(content.encode()) + key + lp(nick.encode()) + u64(created) + u64(expires) + bytes([flags])

def post_payload(postID, geohash, content, key, nick, created, expires, flags, sig):
    return (tlv(1, b"\x01") + tlv(2, postID) + tlv(3, geohash.encode()) + tlv(4, content.encode()) + tlv(5, key)
            + tlv(6, nick.encode()) + tlv(7, u64(created)) + tlv(8, u64(expires)) + tlv(9, bytes([flags])) + tlv(0x0A, sig))

def tomb_signing(postID, deletedAt):
    return ctx("bitchat-board-del-v1") + postID + u64(deletedAt)

def tomb_payload(postID, key, deletedAt, sig):
    return tlv(1, b"\x02") + tlv(2, postID) + tlv(5, key) + tlv(0x0B, u64(deletedAt)) + tlv(0x0A, sig)

def packet_id(ptype, sender, ts, payload):
    return hashlib.sha256(bytes([ptype]) + sender + u64(ts) + payload).digest()[:16]

def should_compress(d):
    if len(d) < 100: return False
    return len(set(d)) / min(len(d), 256) < 0.9

def hx(b): return b.hex()
def chunk(b, n=32):
    h = b.hex(); return "\n".join(h[i:i+2*n] for i in range(0, len(h), 2*n))

print("seed", hx(seed)); print("pub ", hx(pk))
postID = bytes(range(1, 17))
created = 1_700_000_000_000; expires = created + 86_400_000
for name, gh, content, nick, flags in [("A geohash post", "u33dc1", "notice", "alice", 0), ("B mesh-local urgent post", "", "water at gate 2", "alice", 1)]:
    sb = post_signing(postID, gh, content, pk, nick, created, expires, flags)
    sig = sk.sign(sb)
    Ed25519PublicKey.from_public_bytes(pk).verify(sig, sb)
    pl = post_payload(postID, gh, content, pk, nick, created, expires, flags, sig)
    print("\n==", name, f"geohash={gh!r} content={content!r} nick={nick!r} created={created} expires={expires} flags={flags}")
    print("signingBytes (%d):\n%s" % (len(sb), chunk(sb)))
    print("signature:\n%s" % chunk(sig))
    print("payload (%d):\n%s" % (len(pl), chunk(pl)))
    sender = hashlib.sha256(pk).digest()[:8]
    print("android transportSenderID = SHA256(pub)[:8] =", hx(sender))
    print("PacketIdUtil id (type 0x23, sender above, ts=created, payload) =", hx(packet_id(0x23, sender, created, pl)))
    print("outer-layer shouldCompress (iOS heuristic) =", should_compress(pl), "unique", len(set(pl)))
deletedAt = 1_700_000_100_000
sb = tomb_signing(postID, deletedAt); sig = sk.sign(sb)
pl = tomb_payload(postID, pk, deletedAt, sig)
print("\n== C tombstone deletedAt", deletedAt)
print("signingBytes (%d):\n%s" % (len(sb), chunk(sb)))
print("signature:\n%s" % chunk(sig))
print("payload (%d):\n%s" % (len(pl), chunk(pl)))
sender = hashlib.sha256(pk).digest()[:8]
print("PacketIdUtil id (ts=deletedAt) =", hx(packet_id(0x23, sender, deletedAt, pl)))
print("outer-layer shouldCompress =", should_compress(pl), "unique", len(set(pl)))
# Outer v1 packet for example A if uncompressed, unsigned, broadcast, ttl 7
