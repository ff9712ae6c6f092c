"""The page in Firefox (Debian's firefox-esr, headless, over WebDriver BiDi:
firefox.py): two tabs, one on alice's daemon and one on bob's; a public
message both ways, a private message that reaches "read" only once bob opens
it, the settings form, a group, a voice note, a picture, an SOS, a long
conversation read back in pages, notifications while the tab is hidden; then
Ctrl-K's switcher, search, the sound setting, and axe-core on every panel.

    web_firefox.py ALICE_LINK BOB_LINK SCREENSHOT_DIR
"""
import base64
import json
import os
import subprocess
import sys
import time
import urllib.request

import axe
from chromium import Checks
from firefox import Firefox, drive
from standins import NOTIFICATIONS

alice_link, bob_link, shots = sys.argv[1:4]
check = Checks()

MESSAGES = "return [...document.querySelectorAll('#messages li')].map(li => li.textContent)"
STATES = "return [...document.querySelectorAll('#messages li.own .state')].map(s => s.getAttribute('aria-label'))"

def main(fx):
    # The browser's notifications, as the page sees them: headless Firefox shows none, so the
    # Notification API is stood in for before the pages load, and the tab's visibility is the test's.
    fx.preload(NOTIFICATIONS)
    alice, bob = fx.tab(alice_link), fx.tab(bob_link)
    for tab, other in ((alice, "bob"), (bob, "alice")):
        check(fx.wait(tab, "return document.getElementById('me').getAttribute('data-following') === 'yes'",
                   "the page follows the events") is not None, "Firefox: %s's page follows the daemon's events" % ("alice" if tab == alice else "bob"))
        fx.wait(tab, "return [...document.querySelectorAll('#people button')].some(b => (b.getAttribute('aria-label') || '').startsWith('Message %s'))" % other,
             "%s is listed" % other)
    check("#token=" not in fx.run(alice, "return location.href"), "Firefox: the token leaves the address bar")

    fx.send(alice, "hello from firefox")
    check(fx.wait(bob, "return [...document.querySelectorAll('#messages li')].some(li => li.textContent.includes('hello from firefox'))",
               "bob sees it") is not None, "Firefox: a public message from alice reaches bob's page")
    fx.send(bob, "and back")
    check(fx.wait(alice, "return [...document.querySelectorAll('#messages li')].some(li => li.textContent.includes('and back'))",
               "alice sees it") is not None, "Firefox: a public message from bob reaches alice's page")

    check(fx.press(alice, "#people button", "Message bob"), "Firefox: alice opens a conversation with bob")
    fx.wait(alice, "return document.getElementById('title').textContent === 'bob'", "the conversation opens")
    fx.send(alice, "psst from firefox")
    check(fx.wait(alice, "const s = (() => { %s })(); return s.includes('delivered')" % STATES, "delivered") is not None,
          "Firefox: alice's private message is delivered")
    check("read" not in (fx.run(alice, STATES) or []), "Firefox: not read before bob opens it")
    if fx.wait(bob, "return [...document.querySelectorAll('#conversations button')].some(b => (b.getAttribute('aria-label') || b.textContent).startsWith('alice, 1 unread'))",
            "bob's page counts it unread"):
        fx.press(bob, "#conversations button", "alice, 1 unread")
        check(fx.wait(alice, "const s = (() => { %s })(); return s.includes('read')" % STATES, "read") is not None,
              "Firefox: alice's page shows read once bob opened it")

    # The settings form: a bad address refused in words.
    fx.run(bob, """document.getElementById('settings-panel').open = true;
        document.getElementById('server-address').value = 'the school';
        document.querySelector('#node-settings button').click(); return true""")
    check(fx.wait(bob, "return document.getElementById('node-settings-note').textContent.includes('expected HOST:PORT')", "refused") is not None,
          "Firefox: a bad server address is refused in words")

    # A group made on alice's page with bob: listed on bob's, a message each way with its author.
    fx.run(alice, """document.getElementById('groups-panel').open = true;
        document.getElementById('group-name').value = 'fox crew'; document.getElementById('group-members').value = 'bob';
        document.getElementById('new-group').requestSubmit(); return true""")
    check(fx.wait(alice, "return document.getElementById('title').textContent === 'fox crew'", "the group opens") is not None,
          "Firefox: alice makes the group 'fox crew' on her page")
    check(fx.wait(bob, "return [...document.querySelectorAll('#conversations button')].some(b => b.textContent.startsWith('fox crew'))",
               "bob's page lists it") is not None, "Firefox: bob's page lists the group")
    fx.send(alice, "hello fox crew")
    fx.press(bob, "#conversations button", "fox crew")
    line = fx.wait(bob, "return [...document.querySelectorAll('#messages li')].map(l => l.textContent).find(t => t.includes('hello fox crew')) || null",
                "bob reads it")
    check(line is not None and "alice" in line, "Firefox: bob's page shows the group's message with its author: %r" % (line,))
    fx.send(bob, "fox crew answers")
    line = fx.wait(alice, "return [...document.querySelectorAll('#messages li')].map(l => l.textContent).find(t => t.includes('fox crew answers')) || null",
                "alice reads it")
    check(line is not None and "bob" in line, "Firefox: alice's page shows bob's answer in the group: %r" % (line,))

    # A private voice note from the independent speaker (PyAV's AAC, a noiseprotocol session) to bob's daemon:
    # Firefox plays it (its length read by its own decoder).
    base, token = bob_link.split("/#token=")
    request = urllib.request.Request(base + "/v1/status", headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=30) as r:
        udp = json.loads(r.read())["udpPort"]
    spoke = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop", "voice_peer.py"),
                            "send-private", str(udp)], capture_output=True, text=True, timeout=120)
    check(spoke.returncode == 0, "Firefox: the speaker sent bob a private voice note: " + (spoke.stdout + spoke.stderr).strip().replace("\n", "; "))
    fx.wait(bob, "return [...document.querySelectorAll('#conversations button')].some(b => b.textContent.includes('speaker'))", "speaker listed", 60)
    fx.press(bob, "#conversations button", "speaker")
    # (Firefox's length of a raw ADTS stream is an estimate until it has read it all: played through, muted.)
    ready = fx.wait(bob, """const a = document.querySelector('#messages audio');
        if (!a || a.readyState < 1) return null;
        if (!a.dataset.started) { a.dataset.started = '1'; a.muted = true; a.play().catch(e => { a.dataset.error = String(e); }); }
        return [a.getAttribute('aria-label')]""", "the note's player", 60)
    played = fx.wait(bob, """const a = document.querySelector('#messages audio');
        return a.dataset.error ? ['error', a.dataset.error] : a.ended ? [a.currentTime, a.duration] : null""", "the note played through", 30)
    check(ready is not None and "voice note from speaker" in ready[0] and played is not None and played[0] != "error"
          and 1.7 <= played[0] <= 2.5, "Firefox: the voice note plays through, %s s of audio: %r %r" % (played and played[0], ready, played))

    # A picture from alice's daemon (its API), shown inline on bob's page; an SOS raised on alice's page, a banner on bob's.
    def alice_api(path, body=None):
        abase, atoken = alice_link.split("/#token=")
        r = urllib.request.Request(abase + path, data=None if body is None else json.dumps(body).encode(),
                                   headers={"Authorization": "Bearer " + atoken, "Content-Type": "application/json"},
                                   method="GET" if body is None else "POST")
        with urllib.request.urlopen(r, timeout=30) as f:
            return json.loads(f.read() or b"null")
    import web_media
    bob_peer = fx.run(bob, "return state.me.peerID")
    alice_api("/v1/files", {"to": bob_peer, "name": "fox.png", "content": base64.b64encode(web_media.png()).decode()})
    fx.press(bob, "#conversations button", "alice")
    shown = fx.wait(bob, """const i = document.querySelector('#messages img.inline');
        return i && i.complete && i.naturalWidth > 0 ? [i.naturalWidth, i.naturalHeight, i.alt] : null""", "the picture", 60)
    check(shown is not None and shown[0] == 24 and "fox.png" in shown[2], "Firefox: alice's picture is shown inline on bob's page: %r" % (shown,))
    fx.run(alice, "document.getElementById('status-panel').open = true; document.getElementById('sos').click(); return true")
    banner = fx.wait(bob, "const b = document.getElementById('sos-banner'); return b.hidden ? null : b.textContent", "the SOS banner", 60)
    check(banner is not None and "SOS from alice" in banner, "Firefox: an SOS raised on alice's page is a banner on bob's: %r" % banner)
    fx.run(alice, "document.getElementById('sos').click(); return true")

    # A long conversation read back in pages: 450 from alice, bob's page opens at the newest 100 and scrolls back to the first.
    conversation = alice_api("/v1/conversations", {"peerID": bob_peer})["id"]
    for i in range(450):
        alice_api("/v1/messages", {"to": conversation, "text": "page line %03d" % i})
    fx.press(bob, "#conversations button", "#mesh")
    fx.press(bob, "#conversations button", "alice")
    fx.wait(bob, "return [...document.querySelectorAll('#messages li')].some(l => l.textContent.includes('page line 449'))", "the newest", 60)
    first = None
    for _ in range(40):
        fx.run(bob, "document.getElementById('messages').scrollTop = 0; document.getElementById('messages').dispatchEvent(new Event('scroll')); return true")
        time.sleep(0.3)
        first = fx.run(bob, "return [...document.querySelectorAll('#messages li')].some(l => l.textContent.includes('page line 000'))")
        if first:
            break
    check(bool(first), "Firefox: scrolling up reads the conversation back in pages to its first line")

    # Notifications: asked for on a click, never on load; shown only while the tab is hidden, for a private
    # message, a group's and an SOS; the tab's title counts what came meanwhile.
    check(fx.run(bob, "return window.__asked") == 0, "Firefox: the page does not ask for notifications on load")
    fx.run(bob, "document.getElementById('settings-panel').open = true; document.getElementById('notify').click(); return true")
    check(fx.wait(bob, "return window.__asked === 1 && document.getElementById('settings-note').textContent.includes('background')",
                  "asked") is not None, "Firefox: the button asks once, and says when they come")
    fx.run(bob, "window.__hide(true); return true")
    alice_api("/v1/messages", {"to": conversation, "text": "while you are away"})
    shown = fx.wait(bob, "return window.__shown.find(n => n[1] === 'while you are away') || null", "notified", 30)
    check(shown is not None and shown[0] == "alice (private)", "Firefox: a private message in the background is notified: %r" % (shown,))
    check(fx.wait(bob, "return document.title === '(1) Starling'", "counted", 10) is not None,
          "Firefox: the tab's title counts it, though its conversation is open")
    crew = next(g for g in alice_api("/v1/groups") if g["name"] == "fox crew")
    alice_api("/v1/groups/%s/messages" % crew["groupID"], {"text": "fox crew, meet at six"})
    shown = fx.wait(bob, "return window.__shown.find(n => n[1] === 'fox crew, meet at six') || null", "notified", 30)
    check(shown is not None and shown[0] == "alice in fox crew", "Firefox: a group's message is notified: %r" % (shown,))
    alice_api("/v1/stately", {"state": "sos"})
    shown = fx.wait(bob, "return window.__shown.find(n => n[0].includes('SOS from')) || null", "notified", 30)
    check(shown is not None and "alice" in shown[0], "Firefox: an SOS is notified: %r" % (shown,))
    alice_api("/v1/stately", {"state": "clear"})
    fx.run(bob, "window.__hide(false); return true")
    check(fx.wait(bob, "return document.title === '(1) Starling'", "seen", 10) is not None,
          "Firefox: back in the tab, alice's conversation is seen; the group's waits")

    # The desktop flows (issue 56): Ctrl-K's switcher, search, the sound setting.
    fx.run(bob, "document.dispatchEvent(new KeyboardEvent('keydown', { key: 'k', ctrlKey: true, bubbles: true })); return true")
    check(fx.wait(bob, "return document.getElementById('switcher').open && document.activeElement.id === 'switcher-text'", "open") is not None,
          "Firefox: Ctrl-K opens the switcher, its box focused")
    fx.run(bob, """const box = document.getElementById('switcher-text'); box.value = 'ali'; box.dispatchEvent(new Event('input'));
        box.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })); return true""")
    check(fx.wait(bob, "return document.getElementById('title').textContent === 'alice' && !document.getElementById('switcher').open", "opened") is not None,
          "Firefox: 'ali' and Enter open alice's conversation")
    fx.run(bob, """document.getElementById('search-text').value = 'PSST';
        document.getElementById('search').requestSubmit(); return true""")
    found = fx.wait(bob, """return document.getElementById('found-bar').hidden ? null :
        [document.getElementById('found-text').textContent, [...document.querySelectorAll('#messages mark')].map(m => m.textContent)]""", "found")
    check(found is not None and found[0].startswith("1 message") and found[1] == ["psst"], "Firefox: search finds alice's message, marked: %r" % (found,))
    fx.run(bob, "document.getElementById('found-close').click(); return true")
    check(fx.wait(bob, "return document.getElementById('found-bar').hidden", "back") is not None, "Firefox: back to the conversation")
    fx.run(bob, "const s = document.getElementById('sound-on'); s.click(); return s.checked")
    check(fx.run(bob, "return localStorage.getItem('starling-sound')") == "on", "Firefox: the sound setting is kept in the browser")

    # axe-core in Firefox: every sidebar panel open, a conversation; search results.
    fx.run(bob, "document.querySelectorAll('details').forEach(x => x.open = true); return true")
    version, serious = axe.firefox(fx.call, bob)
    check(not serious, "Firefox: axe-core %s finds nothing serious or critical, every panel open%s" % (version, "".join("\n     " + v for v in serious)))
    fx.run(bob, "document.getElementById('search-text').value = 'psst'; document.getElementById('search').requestSubmit(); return true")
    fx.wait(bob, "return !document.getElementById('found-bar').hidden", "found")
    version, serious = axe.firefox(fx.call, bob)
    check(not serious, "Firefox: axe-core finds nothing serious or critical in search results%s" % "".join("\n     " + v for v in serious))

    fx.screenshot(alice, os.path.join(shots, "web-firefox.png"))


drive(main, check)
