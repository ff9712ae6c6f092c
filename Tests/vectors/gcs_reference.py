#!/usr/bin/env python3
"""An independent GCS filter implementation, written from docs/PROTOCOL.md
("GCS filter"), used to produce the golden filters in the Swift tests.

Run: python3 Tests/vectors/gcs_reference.py            prints the vectors as JSON
     python3 Tests/vectors/gcs_reference.py --check F  fails unless F holds exactly them
"""
import hashlib, json, math, sys


def packet_id(i: int) -> bytes:
    return hashlib.sha256(f"starling-gcs-{i}".encode()).digest()[:16]


def h64(pid: bytes) -> int:
    return int.from_bytes(hashlib.sha256(pid).digest()[:8], "big") & 0x7FFF_FFFF_FFFF_FFFF


def build(ids, budget=400, fpr=0.01):
    f = min(max(fpr, 0.000001), 0.25)
    p = max(1, math.ceil(math.log2(1 / f)))
    cap = max(1, budget * 8 // (p + 2))
    hashes = [h64(x) for x in ids[:cap]]
    n = len(hashes)
    while True:
        m = max(1, n) << p
        vals = sorted({(h % m) or 1 for h in hashes[:n]})
        bits = []
        prev = 0
        for v in vals:
            x = v - prev - 1
            prev = v
            bits += [1] * (x >> p) + [0]
            bits += [(x >> (p - 1 - k)) & 1 for k in range(p)]
        while len(bits) % 8:
            bits.append(0)
        data = bytes(int("".join(map(str, bits[i:i + 8])), 2) for i in range(0, len(bits), 8))
        if len(data) <= budget or n == 0:
            return p, m, data
        n = n * 9 // 10


def vectors():
    out = []
    for count, budget in [(20, 400), (1000, 400), (300, 64)]:
        ids = [packet_id(i) for i in range(count)]
        p, m, data = build(ids, budget)
        out.append({"count": count, "budget": budget, "p": p, "m": m, "data": data.hex()})
    return out


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        with open(sys.argv[2]) as f:
            stored = json.load(f)
        if stored != vectors():
            sys.exit(f"{sys.argv[2]} differs from the reference GCS implementation")
        print(f"gcs_reference: {len(stored)} vectors match")
    else:
        print(json.dumps(vectors(), indent=1))
