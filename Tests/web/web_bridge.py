#!/usr/bin/env python3
"""What crossed from another mesh, on the page: the page of LINK (a daemon
that is a mesh bridge) shows LINE in the mesh's conversation marked "across
a bridge", and NOTICE on the board marked the same way.

    web_bridge.py LINK LINE NOTICE SCREENSHOT

Prints "ready" once the page is up, one line a check, and exits 0 when all
hold. Every wait is bounded (90 s).
"""
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

link, line, notice, screenshot = sys.argv[1:5]
o = webdriver.ChromeOptions()
o.binary_location = "/usr/bin/chromium"
for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1100,700",
          "--user-data-dir=" + tempfile.mkdtemp(prefix="starling-chromium-")]:
    o.add_argument(a)
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
failures = 0


def until(condition, seconds=90):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    return None


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    failures += 0 if ok else 1


try:
    d.get(link)
    until(lambda: d.execute_script("return document.getElementById('messages') !== null"))
    print("ready", flush=True)
    lines = lambda: d.execute_script("return [...document.querySelectorAll('#messages li')].map(li => li.textContent)")
    got = until(lambda: [l for l in lines() if line in l])
    check(bool(got), "the crossed line is in the mesh's conversation: %r" % (got or lines()))
    check(bool(got) and all("across a bridge" in l for l in got), "marked across a bridge: %r" % got)
    check(bool(got) and len(got) == 1, "once: %r" % got)
    d.execute_script("document.getElementById('notices-panel').open = true")
    notices = lambda: d.execute_script("return [...document.querySelectorAll('#notices li')].map(li => li.textContent)")
    board = until(lambda: [n for n in notices() if notice in n])
    check(bool(board) and "across a bridge" in board[0], "the crossed notice is on the board, marked: %r" % (board or notices()))
    d.save_screenshot(screenshot)
finally:
    d.quit()
sys.exit(1 if failures else 0)
