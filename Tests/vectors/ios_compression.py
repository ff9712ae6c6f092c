#!/usr/bin/env python3
"""
Test vectors for bitchat payload compression (iOS rule vs. alternatives).

iOS rule (permissionlesstech/bitchat, localPackages/BitFoundation/Sources/BitFoundation/):
  shouldCompress(d): len(d) >= 100 and len(set(d)) / min(len(d), 256) < 0.9
  compress(d):       c = raw DEFLATE (Apple COMPRESSION_ZLIB == deflateInit2(level 5,
                     Z_DEFLATED, -15, memLevel 8, Z_DEFAULT_STRATEGY) per Apple docs);
                     use c iff 0 < len(c) < len(d)   (size prefix NOT counted)
Android: same shouldCompress; java.util.zip.Deflater(DEFAULT_COMPRESSION=-1 -> level 6, nowrap=true).

Deterministic: every text comes from random.Random(<documented seed>) (Python's Mersenne
Twister; stable across CPython 3.x for random()/choice()/randrange()).
Run: python3 Tests/vectors/ios_compression.py OUT.json     writes the vectors
     python3 Tests/vectors/ios_compression.py --check FILE   checks FILE is what this makes
The Swift tests (StarlingWireTests/IOSCompressionTests) hold Starling's encoder to
these bytes: they come from the iOS source's rule through Python's zlib, not from
Starling's encoder.
"""
import json, os, random, sys, zlib

THRESHOLD = 100
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def deflate(data: bytes, level: int, mem_level: int = 8) -> bytes:
    c = zlib.compressobj(level=level, method=zlib.DEFLATED, wbits=-15,
                         memLevel=mem_level, strategy=zlib.Z_DEFAULT_STRATEGY)
    return c.compress(data) + c.flush(zlib.Z_FINISH)


def should_compress(d: bytes) -> bool:
    if len(d) < THRESHOLD:
        return False
    return len(set(d)) / min(len(d), 256) < 0.9


def ios_compresses(d: bytes) -> bool:
    if not should_compress(d):
        return False
    c = deflate(d, 5)
    return 0 < len(c) < len(d)


def prefix_rule_compresses(d: bytes, prefix: int = 2) -> bool:
    """Alternative (wrong w.r.t. iOS) rule: compressed + original-size prefix < original."""
    if not should_compress(d):
        return False
    return len(deflate(d, 5)) + prefix < len(d)


def android_compresses(d: bytes) -> bool:
    if not should_compress(d):
        return False
    c = deflate(d, 6)
    return 0 < len(c) < len(d)


def key_text(rng: random.Random, token_len: int) -> bytes:
    """Mimics 'my new key is <base64 token> (ask me for the key)'."""
    tok = "".join(rng.choice(B64) for _ in range(token_len))
    return f"my new key is {tok} (ask me for the key)".encode()


WORDS = ("the be to of and a in that have I it for not on with he as you do at this but his by "
         "from they we say her she or an will my one all would there their what so up out if "
         "about who get which go me when make can like time no just him know take people into "
         "year your good some could them see other than then now look only come its over think "
         "also back after use two how our work first well way even new want because any these "
         "give day most us key mesh bitchat peer message hello ok lol yes meet tonight channel").split()


def word_mix(rng: random.Random, target_len: int) -> bytes:
    """Random words, occasional base64 token / number / punctuation, cut to target_len."""
    parts = []
    n = 0
    while n < target_len:
        r = rng.random()
        if r < 0.08:
            w = "".join(rng.choice(B64) for _ in range(rng.randrange(4, 45)))
        elif r < 0.12:
            w = str(rng.randrange(0, 100000))
        elif r < 0.16:
            w = rng.choice(["!", "?", ".", ",", ":)", "#mesh", "@bob", "https://example.com/x"])
        else:
            w = rng.choice(WORDS)
        parts.append(w)
        n += len(w) + 1
    return " ".join(parts).encode()[:target_len]


def vector(name, d: bytes, notes: str, seed_info: str):
    c5, c6 = deflate(d, 5), deflate(d, 6)
    return {
        "name": name,
        "text_hex": d.hex(),
        "text_ascii": d.decode("ascii"),
        "length": len(d),
        "deflate_level5_hex": c5.hex(),
        "deflate_level5_length": len(c5),
        "saving_bytes_level5": len(d) - len(c5),
        "unique_bytes": len(set(d)),
        "should_compress_entropy_and_threshold": should_compress(d),
        "ios_compresses": ios_compresses(d),
        "prefix2_rule_compresses": prefix_rule_compresses(d, 2),
        "deflate_level6_hex": c6.hex(),
        "level5_equals_level6": c5 == c6,
        "android_level6_compresses": android_compresses(d),
        "generation": seed_info,
        "notes": notes,
    }


def find_key_text(saving: int, total_len: int = 139):
    tok_len = total_len - len("my new key is  (ask me for the key)")
    for seed in range(100000):
        d = key_text(random.Random(seed), tok_len)
        assert len(d) == total_len
        if len(d) - len(deflate(d, 5)) == saving:
            return seed, d
    raise RuntimeError("not found")


def find_word_text(length: int, want_saving_min: int = 10):
    for seed in range(100000):
        d = word_mix(random.Random(1_000_000 + seed), length + 40)[:length]
        if len(d) == length and len(d) - len(deflate(d, 5)) >= want_saving_min:
            return 1_000_000 + seed, d
    raise RuntimeError("not found")



PHRASES = ["meet at the north gate at 9pm ", "is anyone on the mesh tonight? ",
           "my new key is ", " (ask me for the key) ", "https://example.com/some/long/path?id=",
           "ok see you there ", "lol ", "the quick brown fox jumps over the lazy dog "]


def phrase_mix(rng: random.Random, target_len: int) -> bytes:
    parts, n = [], 0
    while n < target_len:
        p = rng.choice(PHRASES) if rng.random() < 0.7 else "".join(rng.choice(B64) for _ in range(rng.randrange(4, 40))) + " "
        parts.append(p)
        n += len(p)
    return "".join(parts).encode()[:target_len]


def named_vectors():
    out = []
    for s in (0, 1, 2, 3):
        seed, d = find_key_text(s)
        out.append(vector(f"key139_saving{s}", d, f"'my new key is ...' text, level-5 DEFLATE saves {s} byte(s)",
                          f"seed={seed}: key_text(random.Random(seed), 104)"))
    for s in (0, 1, 2, 3):
        for seed in range(100000):
            rng = random.Random(2_000_000 + seed)
            d = "".join(rng.choice(B64) for _ in range(110)).encode()
            if len(d) - len(deflate(d, 5)) == s:
                break
        out.append(vector(f"base64_110_saving{s}", d, f"base64-like token, level-5 DEFLATE saves {s} byte(s)",
                          f"seed={2_000_000 + seed}: 110 random base64 characters"))
    for L in (99, 100, 101):
        seed, d = find_word_text(L)
        out.append(vector(f"threshold_{L}", d, "below the 100-byte threshold: never compressed" if L < 100
                          else "at or above the 100-byte threshold: compressed", f"seed={seed}: word_mix"))
    rng = random.Random(3_000_000)
    alphabet = [chr(c) for c in range(33, 33 + 90)]
    d = ("".join(alphabet) + "".join(rng.choice(alphabet) for _ in range(10))).encode()
    out.append(vector("entropy_edge_100b_90unique", d, "90 distinct / 100 = 0.90 is not < 0.9: not tried", "seed=3000000"))
    d2 = ("".join(alphabet[:89]) + "".join(rng.choice(alphabet[:89]) for _ in range(11))).encode()
    out.append(vector("entropy_edge_100b_89unique", d2, "0.89 < 0.9: tried; DEFLATE is longer: not compressed", "seed=3000000, continued"))
    rng = random.Random(4_000_000)
    A = "".join(rng.choice(B64) for _ in range(70))
    d = (A[:40] + " q " + A + " r " + A[:40] + " s " + A).encode()
    out.append(vector("level5_ne_level6", d, "zlib level 5 and level 6 make different bytes: only level 5 is Apple's", "seed=4000000"))
    return out


def corpus(n=450, differing=50):
    """Texts of 1-400 bytes (a third each word mixes, repeated phrases and base64
    tokens), then `differing` phrase mixes whose level-5 and level-6 DEFLATE
    differ, each with what iOS puts after the size prefix: `deflate_hex`, or
    empty when iOS sends the text plain."""
    rng = random.Random(20261129)
    texts = []
    for i in range(n):
        L = rng.randrange(1, 401)
        kind = i % 3
        if kind == 0:
            texts.append(word_mix(rng, L)[:L])
        elif kind == 1:
            texts.append(phrase_mix(rng, L))
        else:
            texts.append("".join(rng.choice(B64) for _ in range(L)).encode())
    found = 0
    while found < differing:
        d = phrase_mix(rng, rng.randrange(100, 401))
        if ios_compresses(d) and deflate(d, 5) != deflate(d, 6):
            texts.append(d)
            found += 1
    return [{"text_hex": d.hex(), "deflate_hex": deflate(d, 5).hex() if ios_compresses(d) else "",
             "level6_differs": deflate(d, 5) != deflate(d, 6)} for d in texts]


def build():
    named = named_vectors()
    keep = ("name", "text_hex", "length", "deflate_level5_hex", "saving_bytes_level5", "ios_compresses",
            "prefix2_rule_compresses", "level5_equals_level6", "generation", "notes")
    return {"rule": "iOS: len >= 100 and distinct/min(len,256) < 0.9, then zlib raw DEFLATE level 5 "
                    "(wbits -15, memLevel 8, default strategy), used when shorter than the payload (prefix not counted)",
            "zlib": zlib.ZLIB_RUNTIME_VERSION,
            "vectors": [{k: v[k] for k in keep} for v in named],
            "corpus": corpus()}


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        have = json.load(open(sys.argv[2]))
        want = build()
        have.pop("zlib", None); want.pop("zlib", None)
        if have != want:
            sys.exit(f"{sys.argv[2]} is not what {sys.argv[0]} makes: run it again and commit the file")
        print(f"{sys.argv[2]}: {len(want['vectors'])} vectors and {len(want['corpus'])} corpus texts as the iOS rule makes them")
        return
    if len(sys.argv) != 2:
        sys.exit("usage: ios_compression.py OUT.json | --check FILE")
    with open(sys.argv[1], "w") as f:
        json.dump(build(), f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
