#!/usr/bin/env python3
"""A long conversation on the page (issue 56), in headless Chromium:

    web_history.py ALICE_LINK BOB_LINK COUNT

Alice's daemon sends COUNT private messages to bob through the API; bob's page
opens the conversation with the newest page (100), and as the window is
scrolled to its top, older pages come from the API (?before=POSITION) until the
first message shows, the reader's place kept; the page never holds more than
1,000 lines (the newest are let go, and scrolling down to the end brings the
newest page back). Prints one line a check; exits 0 when all hold. Every wait
is bounded.
"""
import sys
import time

from selenium.webdriver.common.by import By

from chromium import api, browser, until

alice_link, bob_link, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


bob_peer = api(bob_link, "/v1/status")["peerID"]
alice_peer = api(alice_link, "/v1/status")["peerID"]
check(until(lambda: any(p["peerID"] == bob_peer for p in api(alice_link, "/v1/peers")), 60) is not None, "alice hears bob")
conversation = api(alice_link, "/v1/conversations", {"peerID": bob_peer})["id"]
texts = ["m%04d" % i for i in range(count)]
start = time.time()
for t in texts:
    api(alice_link, "/v1/messages", {"to": conversation, "text": t})
print("sent %d in %.1f s" % (count, time.time() - start), flush=True)

# Bob's store has them all: paged through the API back to the start (the pages' control).
bob_conversation = until(lambda: api(bob_link, "/v1/conversations", {"peerID": alice_peer})["id"], 30)


def all_pages():
    seen, before = [], None
    for _ in range(100):
        page = api(bob_link, "/v1/conversations/%s/messages?limit=500%s" % (bob_conversation, "&before=%d" % before if before else ""))
        if not page:
            break
        seen = [m["text"] for m in page] + seen
        before = min(m["position"] for m in page)
    return seen


arrived = until(lambda: sorted(all_pages()) == texts, 180)
check(arrived is not None, "bob's daemon holds all %d, read in pages of 500 through ?before=" % count)
newest = api(bob_link, "/v1/conversations/%s/messages" % bob_conversation)
check(len(newest) == 200 and newest[-1]["text"] == texts[-1] and all("position" in m for m in newest),
      "without before: the newest 200, each with its position")

page = browser("1100,700")
try:
    page.get(bob_link)
    until(lambda: page.execute_script("return document.querySelectorAll('#conversations button').length") >= 2, 30)
    opened = page.execute_script("""const b = [...document.querySelectorAll('#conversations button')].find(b => b.textContent.startsWith('alice'));
        if (b) { b.click(); return true } return false""")
    lines = lambda: page.execute_script("return [...document.querySelectorAll('#messages li .text')].map(s => s.textContent)")
    first = until(lambda: (lambda l: l if l and l[-1] == texts[-1] else None)(lines()), 30)
    check(opened and first is not None and len(first) == 100, "bob's page opens it with the newest page of 100 (%d lines)" % len(first or []))
    most, steps, kept_place = 0, 0, True
    while steps < 60:
        before = lines()
        if before and before[0] == texts[0]:
            break
        # The line at the top of the window before the scroll: after the older page comes, it is still in view.
        anchor = before[0] if before else None
        page.execute_script("const ol = document.getElementById('messages'); ol.scrollTop = 0; ol.dispatchEvent(new Event('scroll'))")
        grown = until(lambda: lines() and lines()[0] != before[0], 20)
        if not grown:
            break
        now = lines()
        most = max(most, len(now))
        at = page.execute_script("""const ol = document.getElementById('messages'), top = ol.getBoundingClientRect().top;
            const li = [...ol.querySelectorAll('li')].find(li => li.getBoundingClientRect().bottom > top + 1);
            return li ? li.querySelector('.text').textContent : null""")
        if anchor and at and abs(texts.index(at) - texts.index(anchor)) > 3:
            print("     page %d: %s was at the top, %s is now" % (steps + 1, anchor, at), flush=True)
            kept_place = False
        steps += 1
    now = lines()
    check(now and now[0] == texts[0], "scrolling back reaches the first message (%d pages)" % steps)
    check(now == sorted(now) and len(set(now)) == len(now), "in order, each once")
    check(0 < most <= 1000, "the page never held more than 1,000 lines (most: %d)" % most)
    check(kept_place, "each older page kept the reader's place")
    # Back down to the end: the newest page again.
    page.execute_script("const ol = document.getElementById('messages'); ol.scrollTop = ol.scrollHeight; ol.dispatchEvent(new Event('scroll'))")
    back = until(lambda: (lambda l: l if l and l[-1] == texts[-1] else None)(lines()), 30)
    check(back is not None and len(back) <= 1000, "scrolled to the end: the newest again (%d lines)" % len(back or []))
    # A new message while the conversation is in view: added at the end (alone), in the window's bound.
    api(alice_link, "/v1/messages", {"to": conversation, "text": "the newest of all"})
    check(until(lambda: (lines() or [None])[-1] == "the newest of all", 30) is not None, "a new message shows at the end")
finally:
    page.quit()

print("%d check(s) failed" % len(failures) if failures else "all checks passed")
sys.exit(1 if failures else 0)
