#!/usr/bin/env python3
"""Voice notes and pictures on the page, live and after a restart (issue 56), in
headless Chromium:

    web_media.py live BOB_LINK BOB_UDP ALICE_LINK SHOTS MARKER
    web_media.py history BOB_LINK SHOTS

live: bob's page is open; an independent speaker (Tests/interop/voice_peer.py,
FFmpeg's AAC encoder) sends bob 2 s of a 440 Hz tone as a private voice note in
a Noise session, and alice's daemon sends him a picture (a PNG made here) through
its API. The page shows the note in the speaker's conversation as an <audio>
Chromium decodes (about 2 s long), and the picture inline in alice's. Then it
says "restart now" and waits for MARKER (the test restarts bob's daemon, then
makes it): the open page must take what the daemon holds now (nobody here).
history: after bob's daemon restarted, a fresh page shows both again from the
stored history (the daemon finds the files through their conversations).
Prints one line a check; exits 0 when all hold. Every wait is bounded.
"""
import base64
import os
import struct
import subprocess
import sys
import zlib

import axe
from chromium import Checks, api, browser, until

check = Checks()
HERE = os.path.dirname(os.path.abspath(__file__))


def png(width=24, height=16):
    """A small striped PNG, written by hand (zlib and CRC-32 only)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    row = b"\x00" + b"".join(bytes((200 if (x // 4) % 2 else 30, 90, 160)) for x in range(width))
    rows = row * height
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def open_conversation(driver, name):
    """Clicks the sidebar's conversation called `name` (waits for it)."""
    # (Found and clicked in one script: the sidebar is redrawn as events come.)
    return until(lambda: driver.execute_script("""
        const b = [...document.querySelectorAll('#conversations button')].find(b => b.textContent.includes(arguments[0]));
        if (b) b.click();
        return !!b""", name), 60) is not None


def audio(driver):
    """The voice note's <audio> once Chromium read its length: [duration, label] or None."""
    return driver.execute_script("""
        const a = document.querySelector('#messages audio');
        return a && a.readyState >= 1 && isFinite(a.duration) ? [a.duration, a.getAttribute('aria-label'), a.src.slice(0, 5)] : null""")


def picture(driver):
    return driver.execute_script("""
        const i = document.querySelector('#messages img.inline');
        return i && i.complete && i.naturalWidth > 0 ? [i.naturalWidth, i.naturalHeight, i.alt] : null""")


def media_checks(driver, when):
    check(open_conversation(driver, "speaker"), f"{when}: the speaker's conversation is in the sidebar")
    a = until(lambda: audio(driver), 60)
    check(a is not None and 1.7 <= a[0] <= 2.5 and a[2] == "blob:",
          f"{when}: the voice note plays in Chromium as {a and round(a[0], 2)} s of audio (2 s were spoken): {a}")
    check(a is not None and "voice note from speaker" in (a[1] or ""), f"{when}: the player says whose note it is: {a and a[1]}")
    line = driver.execute_script("return [...document.querySelectorAll('#messages li')].map(l => l.textContent).join(' | ')")
    check("voice note (2 s)" in line, f"{when}: the line says 'voice note (2 s)': {line[:200]!r}")
    check(open_conversation(driver, "alice"), f"{when}: alice's conversation is in the sidebar")
    p = until(lambda: picture(driver), 60)
    check(p is not None and p[0] == 24 and p[1] == 16 and "stripes.png" in p[2], f"{when}: alice's picture is shown inline: {p}")


def live(bob_link, bob_udp, alice_link, shots, marker):
    driver = browser()
    try:
        driver.get(bob_link)
        check(until(lambda: driver.execute_script("return document.querySelector('#conversations button') !== null"), 60),
              "bob's page opened")
        spoke = subprocess.run([sys.executable, os.path.join(HERE, "..", "interop", "voice_peer.py"), "send-private", bob_udp],
                               capture_output=True, text=True, timeout=120)
        check(spoke.returncode == 0, "the speaker sent a private voice note: " + (spoke.stdout + spoke.stderr).strip().replace("\n", "; "))
        bob = api(bob_link, "/v1/status")["peerID"]
        check(until(lambda: any(p["peerID"] == bob for p in api(alice_link, "/v1/peers")), 60) is not None, "alice hears bob")
        sent = api(alice_link, "/v1/files", {"to": bob, "name": "stripes.png", "content": base64.b64encode(png()).decode()})
        check(bool(sent.get("transferID")), f"alice sent bob a picture: {sent}")
        media_checks(driver, "live")
        driver.save_screenshot(os.path.join(shots, "web-media.png"))
        # The daemon restarts under the open page (the test does it once told): the page takes
        # what the daemon holds now (a new node knows nobody yet), not what it remembered.
        people = driver.execute_script("return state.peers.map(p => p.nickname)")
        check("alice" in people, f"before the restart the page lists alice here: {people}")
        print("restart now", flush=True)
        check(until(lambda: os.path.exists(marker), 120) is not None, "the daemon restarted")
        back = until(lambda: driver.execute_script(
            "return document.getElementById('me').dataset.following === 'yes' && !state.peers.length"
            " && document.querySelector('#people .note') ? document.getElementById('me').textContent : null"), 60)
        check(back is not None and "0 here" in back, f"back after the restart, the page says nobody is here yet: {back}")
        check(until(lambda: picture(driver), 30) is not None, "alice's picture is still shown")
    finally:
        driver.quit()


def history(bob_link, shots):
    driver = browser()
    try:
        driver.get(bob_link)
        media_checks(driver, "after a restart")
        # axe-core with a picture, then with the voice note's player, on the page.
        for name in ["alice", "speaker"]:
            open_conversation(driver, name)
            version, serious = axe.chromium(driver)
            check(not serious, f"axe-core {version} finds nothing serious or critical in {name}'s conversation" + "".join("\n     " + v for v in serious))
        driver.save_screenshot(os.path.join(shots, "web-voice.png"))
        driver.save_screenshot(os.path.join(shots, "web-media-history.png"))
    finally:
        driver.quit()


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "live":
        live(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "history":
        history(*sys.argv[2:])
    else:
        print(__doc__)
        sys.exit(64)
    if not check.failures:
        print("all checks passed", flush=True)
    check.exit()
