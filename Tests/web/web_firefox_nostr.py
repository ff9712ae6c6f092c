#!/usr/bin/env python3
"""The page's Nostr flows in Firefox (firefox.py, as web_firefox.py): on the
page of LINK (a daemon with Nostr), strangers' messages are requests (carol
accepted under a name, her message then in her conversation; mallory blocked,
the panel then empty); then a location channel: #GEOHASH joined from its form,
LINE said there, REPLY from someone else in it (a terminal chat the Swift test
drives); a reload lists the channel again, its bar leaves it, and another
reload does not bring it back.

    web_firefox_nostr.py LINK CAROL_NPUB MALLORY_NPUB GEOHASH LINE REPLY SCREENSHOT

Prints "said" once its line is sent, one line a check; exits 0 when all hold.
"""
import json
import sys

from chromium import Checks
from firefox import drive

link, carol, mallory, geohash, line, reply, shot = sys.argv[1:8]
check = Checks()
FOLLOWING = "return document.getElementById('me').dataset.following === 'yes'"
REQUESTS = """return [...document.querySelectorAll('#requests > li')].map(li =>
    [li.querySelector('code').title, [...li.querySelectorAll('li')].map(m => m.textContent)])"""
CHANNEL_LISTED = "return [...document.querySelectorAll('#conversations button')].some(b => b.textContent.includes(%s))" % json.dumps("#" + geohash)


def request(npub):
    return "[...document.querySelectorAll('#requests > li')].find(li => li.querySelector('code').title === %s)" % json.dumps(npub)


def main(fx):
    tab = fx.tab(link)
    check(fx.wait(tab, FOLLOWING, "the page follows", 60) is not None, "Firefox: the page follows the daemon's events")

    # Requests: both listed with what they wrote; carol accepted under a name, mallory blocked.
    both = fx.wait(tab, "const l = (() => { %s })(); return l.length === 2 ? l : null" % REQUESTS, "both requests", 60)
    check(both is not None and {n for n, _ in both} == {carol, mallory}, "Firefox: both requests are listed: %r" % (both,))
    check(any(n == carol and "hello ann, carol here" in m for n, m in (both or [])), "Firefox: with what carol wrote")
    fx.run(tab, "const r = %s; r.querySelector('input').value = 'carol'; r.querySelector('button[type=submit]').click(); return true" % request(carol))
    check(fx.wait(tab, "return [...document.querySelectorAll('#conversations button')].some(b => (b.getAttribute('aria-label') || '').startsWith('carol'))",
                  "carol's conversation") is not None, "Firefox: carol is a conversation once accepted")
    fx.press(tab, "#conversations button", "carol")
    check(fx.wait(tab, "return [...document.querySelectorAll('#messages li')].some(li => li.textContent.includes('hello ann, carol here'))",
                  "her message") is not None, "Firefox: her message is in her conversation")
    fx.run(tab, "%s.querySelector('button.danger').click(); return true" % request(mallory))
    check(fx.wait(tab, "return document.getElementById('requests-panel').hidden || getComputedStyle(document.getElementById('requests-panel')).display === 'none'",
                  "no request left") is not None, "Firefox: mallory blocked, no request is left")

    # A location channel, joined from its form.
    fx.run(tab, """document.getElementById('channels-panel').open = true;
        const box = document.getElementById('geohash'); box.value = %s; box.dispatchEvent(new Event('input'));
        box.form.requestSubmit(); return true""" % json.dumps("#" + geohash))
    check(fx.wait(tab, "return document.getElementById('title').textContent === %s" % json.dumps("#" + geohash), "joined") is not None,
          "Firefox: the page joins #" + geohash)
    fx.send(tab, line)
    print("said", flush=True)
    got = fx.wait(tab, "return [...document.querySelectorAll('#messages li')].map(l => l.textContent).find(t => t.includes(%s)) || null" % json.dumps(reply),
                  "the reply", 90)
    check(got is not None, "Firefox: the channel's reply is on the page: %r" % (got,))
    fx.screenshot(tab, shot)
    fx.reload(tab)
    fx.wait(tab, FOLLOWING, "the page follows again", 60)
    check(fx.wait(tab, CHANNEL_LISTED, "listed", 30) is not None, "Firefox: after a reload the channel is still in the sidebar")
    fx.press(tab, "#conversations button", "#" + geohash)
    check(fx.wait(tab, "return !document.getElementById('channel-bar').hidden", "its bar", 10) is not None, "Firefox: its bar offers to leave it")
    fx.run(tab, "document.getElementById('leave-channel').click(); return true")
    check(fx.wait(tab, "return !(() => { %s })() && document.getElementById('title').textContent === '#mesh'" % CHANNEL_LISTED, "left", 30) is not None,
          "Firefox: leaving takes it from the sidebar, back on #mesh")
    fx.reload(tab)
    fx.wait(tab, FOLLOWING, "the page follows again", 60)
    check(fx.wait(tab, "return document.querySelectorAll('#conversations button').length > 0", "listed", 30) is not None
          and not fx.run(tab, CHANNEL_LISTED), "Firefox: and a reload does not bring it back")


drive(main, check)
