#!/usr/bin/env python3
"""An independent voice speaker and listener for Starling's tests, written from
docs/PROTOCOL.md ("Voice (0x29)") with PyAV (FFmpeg's AAC encoder and decoder)
and pynacl.

    voice_peer.py send PORT     announce to the node at 127.0.0.1:PORT, then speak
                                2 s of a 440 Hz tone as a signed public burst
    voice_peer.py send-private PORT
                                the same, as a private note: a Noise XX session
                                with the node first, then the burst in it (Noise
                                payload 0x08 in 0x11 packets)
    voice_peer.py check PATH    decode the file the node saved: AAC, 16 kHz, mono,
                                about 2 s, and still the 440 Hz tone

Prints one line per check ("ok: …" or "FAILED: …"); exits 0 when all hold.
"""
import array
import hashlib
import math
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bitchat_peer import ANNOUNCE, decode, encode, noise_handshake, signed, tlv8  # noqa: E402

import av  # noqa: E402
from nacl.public import PrivateKey  # noqa: E402
from nacl.signing import SigningKey  # noqa: E402

VOICE = 0x29
RATE, TONE, SECONDS = 16_000, 440.0, 2


def tone_frames():
    """2 s of a 440 Hz tone as raw AAC-LC access units (16 kHz, mono, 16 kbit/s), as the apps encode."""
    enc = av.CodecContext.create("aac", "w")
    enc.sample_rate, enc.layout, enc.format, enc.bit_rate = RATE, "mono", av.AudioFormat("fltp"), 16_000
    enc.open()
    out = []
    for start in range(0, RATE * SECONDS, 1024):
        frame = av.AudioFrame(format="fltp", layout="mono", samples=1024)
        frame.planes[0].update(array.array("f", [0.5 * math.sin(2 * math.pi * TONE * (start + k) / RATE) for k in range(1024)]).tobytes())
        frame.sample_rate, frame.pts = RATE, start
        out += [bytes(p) for p in enc.encode(frame)]
    out += [bytes(p) for p in enc.encode(None)]
    return out


def burst(burst_id: bytes, seq: int, kind: int, body: bytes) -> bytes:
    return burst_id + struct.pack(">HB", seq, kind) + body


def send(port: int, private: bool) -> int:
    node = ("127.0.0.1", port)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.3)
    signing, noise = SigningKey.generate(), PrivateKey.generate()
    noise_pub = bytes(noise.public_key)
    me = hashlib.sha256(noise_pub).digest()[:8]
    now = lambda: int(time.time() * 1000)
    body = bytes([0x01, 7]) + b"speaker" + bytes([0x02, 32]) + noise_pub + bytes([0x03, 32]) + bytes(signing.verify_key)
    sock.sendto(signed(signing, ANNOUNCE, 7, now(), me, body), node)

    def receive(until, seconds):
        end = time.time() + seconds
        while time.time() < end:
            try:
                data, _ = sock.recvfrom(65535)
            except socket.timeout:
                continue
            p = decode(data)
            found = until(p) if p is not None else None
            if found is not None:
                return found
        return None

    frame = None
    if private:
        # The node's announce (its ID and Noise key), then a session with it.
        a = receive(lambda p: p if p["type"] == ANNOUNCE and p["sender"] != me else None, 20)
        if a is None:
            print("FAILED: the node did not announce itself in 20 s", flush=True)
            return 1
        node_id, node_noise = a["sender"], tlv8(a["payload"])[0x02]
        remote, frame = noise_handshake(sock, node, me, node_id, bytes(noise), receive)
        if frame is None or remote != node_noise:
            print("FAILED: no Noise session with the node's announced key", flush=True)
            return 1
        print("ok: a Noise session with the node", flush=True)
    time.sleep(1.0)  # the node knows our key (and its session) before it hears us
    frames = tone_frames()
    burst_id = os.urandom(8)
    packets = [burst(burst_id, 0, 0x01, b"\x01")]
    packets += [burst(burst_id, i + 1, 0x00, struct.pack(">H", len(f)) + f) for i, f in enumerate(frames)]
    packets.append(burst(burst_id, len(frames) + 1, 0x02, struct.pack(">HI", len(frames), len(frames) * 64)))
    for p in packets:
        if private:
            sock.sendto(encode(0x11, 7, now(), me, frame(bytes([0x08]) + p), recipient=node_id), node)
        else:
            sock.sendto(signed(signing, VOICE, 7, now(), me, p), node)
        time.sleep(0.02)
    print(f"ok: sent {len(frames)} AAC frames in burst {burst_id.hex()}{' privately' if private else ''}", flush=True)
    return 0


def check(path: str) -> int:
    failures = 0

    def ok(good: bool, what: str):
        nonlocal failures
        print(("ok: " if good else "FAILED: ") + what, flush=True)
        failures += 0 if good else 1

    with open(path, "rb") as f:
        head = f.read(7)
    ok(head[:2] == b"\xff\xf1", f"the file begins with an ADTS header: {head.hex()}")
    container = av.open(path)
    stream = container.streams.audio[0]
    ok(stream.codec_context.name == "aac", f"its codec is AAC ({stream.codec_context.name})")
    samples, crossings, last = 0, 0, 0.0
    for frame in container.decode(stream):
        ok_rate = frame.sample_rate == RATE and len(frame.layout.channels) == 1
        if not ok_rate:
            ok(False, f"16 kHz mono: {frame.sample_rate} Hz, {len(frame.layout.channels)} channels")
            return 1
        values = array.array("f", bytes(frame.planes[0]))[: frame.samples]
        for v in values:
            if (last < 0) != (v < 0):
                crossings += 1
            last = v
        samples += frame.samples
    seconds = samples / RATE
    ok(1.8 <= seconds <= 2.4, f"it lasts {seconds:.2f} s (2 s were spoken)")
    hz = crossings / 2 / max(seconds, 0.001)
    ok(abs(hz - TONE) < 30, f"the tone is still {TONE:.0f} Hz ({hz:.0f} Hz by zero crossings)")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("send", "send-private", "check"):
        print(__doc__)
        sys.exit(64)
    sys.exit(check(sys.argv[2]) if sys.argv[1] == "check" else send(int(sys.argv[2]), sys.argv[1] == "send-private"))
