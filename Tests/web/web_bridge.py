#!/usr/bin/env python3
"""What crossed from another mesh, on the page: the page of LINK (a daemon
that is a mesh bridge) shows LINE in the mesh's conversation marked "across
a bridge", and NOTICE on the board marked the same way.

    web_bridge.py LINK LINE NOTICE SCREENSHOT

Prints "ready" once the page is up, one line a check, and exits 0 when all
hold. Every wait is bounded (90 s).
"""
import sys

from chromium import Checks, browser, messages, until

link, line, notice, screenshot = sys.argv[1:5]
d = browser()
check = Checks()

try:
    d.get(link)
    until(lambda: d.execute_script("return document.getElementById('messages') !== null"), 90)
    print("ready", flush=True)
    got = until(lambda: [l for l in messages(d) if line in l], 90)
    check(bool(got), "the crossed line is in the mesh's conversation: %r" % (got or messages(d)))
    check(bool(got) and all("across a bridge" in l for l in got), "marked across a bridge: %r" % got)
    check(bool(got) and len(got) == 1, "once: %r" % got)
    d.execute_script("document.getElementById('notices-panel').open = true")
    notices = lambda: d.execute_script("return [...document.querySelectorAll('#notices li')].map(li => li.textContent)")
    board = until(lambda: [n for n in notices() if notice in n], 90)
    check(bool(board) and "across a bridge" in board[0], "the crossed notice is on the board, marked: %r" % (board or notices()))
    d.save_screenshot(screenshot)
finally:
    d.quit()
check.exit()
