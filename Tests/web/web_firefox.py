"""The page in Firefox (Debian's firefox-esr, headless), driven over WebDriver
BiDi, the W3C protocol Firefox speaks itself (no geckodriver): two tabs, one
on alice's daemon and one on bob's; a public message both ways, a private
message that reaches "read" only once bob opens it, the settings form; then
Ctrl-K's switcher, search, the sound setting, and axe-core on every panel.

    web_firefox.py ALICE_LINK BOB_LINK SCREENSHOT_DIR
"""
import base64
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from websockets.sync.client import connect

import axe

alice_link, bob_link, shots = sys.argv[1:4]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


profile = tempfile.mkdtemp(prefix="starling-firefox-")
firefox = subprocess.Popen(["/usr/bin/firefox-esr", "--headless", "--no-remote", "--profile", profile,
                            "--remote-debugging-port=0", "--window-size=1100,700", "about:blank"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
found = []


def read_stderr():
    for line in firefox.stderr:
        m = re.search(r"WebDriver BiDi listening on (ws://\S+)", line)
        if m:
            found.append(m.group(1))


threading.Thread(target=read_stderr, daemon=True).start()
deadline = time.time() + 60
while not found and time.time() < deadline and firefox.poll() is None:
    time.sleep(0.1)
if not found:
    print("FAIL Firefox did not open WebDriver BiDi (exit %r)" % firefox.poll())
    sys.exit(1)

ws = None
ids = itertools.count(1)


def call(method, **params):
    """One command; its result (events that come meanwhile are passed over)."""
    n = next(ids)
    ws.send(json.dumps({"id": n, "method": method, "params": params}))
    end = time.time() + 60
    while time.time() < end:
        answer = json.loads(ws.recv(timeout=60))
        if answer.get("id") == n:
            if answer.get("type") == "error":
                raise RuntimeError("%s: %s %s" % (method, answer.get("error"), answer.get("message")))
            return answer["result"]
    raise RuntimeError(method + ": no answer")


def run(context, expression):
    """Evaluates a script in the tab; its value (JSON-serialisable values only)."""
    r = call("script.evaluate", expression="JSON.stringify((() => { %s })())" % expression,
             target={"context": context}, awaitPromise=False)
    if r.get("type") == "exception":
        raise RuntimeError(r["exceptionDetails"]["text"])
    value = r["result"].get("value")
    return json.loads(value) if value is not None else None


def wait(context, expression, what, seconds=30):
    end = time.time() + seconds
    while time.time() < end:
        try:
            v = run(context, expression)
        except RuntimeError:
            v = None
        if v:
            return v
        time.sleep(0.2)
    check(False, what + " (within %d s)" % seconds)
    return None


def send(context, text):
    run(context, """const box = document.querySelector("textarea[aria-label='Message']");
        box.value = %s; box.dispatchEvent(new Event('input'));
        document.querySelector("#composer button[type='submit'], #send").click(); return true""" % json.dumps(text))


def press(context, where, label_start):
    return run(context, """const b = [...document.querySelectorAll(%s)]
        .find(b => (b.getAttribute('aria-label') || b.textContent).startsWith(%s));
        if (b) { b.click(); return true } return false""" % (json.dumps(where), json.dumps(label_start)))


MESSAGES = "return [...document.querySelectorAll('#messages li')].map(li => li.textContent)"
STATES = "return [...document.querySelectorAll('#messages li.own .state')].map(s => s.getAttribute('aria-label'))"

def main():
    call("session.new", capabilities={})
    alice = call("browsingContext.getTree")["contexts"][0]["context"]
    bob = call("browsingContext.create", type="tab")["context"]
    call("browsingContext.navigate", context=alice, url=alice_link, wait="complete")
    call("browsingContext.navigate", context=bob, url=bob_link, wait="complete")
    for tab, other in ((alice, "bob"), (bob, "alice")):
        check(wait(tab, "return document.getElementById('me').getAttribute('data-following') === 'yes'",
                   "the page follows the events") is not None, "Firefox: %s's page follows the daemon's events" % ("alice" if tab == alice else "bob"))
        wait(tab, "return [...document.querySelectorAll('#people button')].some(b => (b.getAttribute('aria-label') || '').startsWith('Message %s'))" % other,
             "%s is listed" % other)
    check("#token=" not in run(alice, "return location.href"), "Firefox: the token leaves the address bar")

    send(alice, "hello from firefox")
    check(wait(bob, "return [...document.querySelectorAll('#messages li')].some(li => li.textContent.includes('hello from firefox'))",
               "bob sees it") is not None, "Firefox: a public message from alice reaches bob's page")
    send(bob, "and back")
    check(wait(alice, "return [...document.querySelectorAll('#messages li')].some(li => li.textContent.includes('and back'))",
               "alice sees it") is not None, "Firefox: a public message from bob reaches alice's page")

    check(press(alice, "#people button", "Message bob"), "Firefox: alice opens a conversation with bob")
    wait(alice, "return document.getElementById('title').textContent === 'bob'", "the conversation opens")
    send(alice, "psst from firefox")
    check(wait(alice, "const s = (() => { %s })(); return s.includes('delivered')" % STATES, "delivered") is not None,
          "Firefox: alice's private message is delivered")
    check("read" not in (run(alice, STATES) or []), "Firefox: not read before bob opens it")
    if wait(bob, "return [...document.querySelectorAll('#conversations button')].some(b => (b.getAttribute('aria-label') || b.textContent).startsWith('alice, 1 unread'))",
            "bob's page counts it unread"):
        press(bob, "#conversations button", "alice, 1 unread")
        check(wait(alice, "const s = (() => { %s })(); return s.includes('read')" % STATES, "read") is not None,
              "Firefox: alice's page shows read once bob opened it")

    # The settings form: a bad address refused in words.
    run(bob, """document.getElementById('settings-panel').open = true;
        document.getElementById('server-address').value = 'the school';
        document.querySelector('#node-settings button').click(); return true""")
    check(wait(bob, "return document.getElementById('node-settings-note').textContent.includes('expected HOST:PORT')", "refused") is not None,
          "Firefox: a bad server address is refused in words")

    # A group made on alice's page with bob: listed on bob's, a message each way with its author.
    run(alice, """document.getElementById('groups-panel').open = true;
        document.getElementById('group-name').value = 'fox crew'; document.getElementById('group-members').value = 'bob';
        document.getElementById('new-group').requestSubmit(); return true""")
    check(wait(alice, "return document.getElementById('title').textContent === 'fox crew'", "the group opens") is not None,
          "Firefox: alice makes the group 'fox crew' on her page")
    check(wait(bob, "return [...document.querySelectorAll('#conversations button')].some(b => b.textContent.startsWith('fox crew'))",
               "bob's page lists it") is not None, "Firefox: bob's page lists the group")
    send(alice, "hello fox crew")
    press(bob, "#conversations button", "fox crew")
    line = wait(bob, "return [...document.querySelectorAll('#messages li')].map(l => l.textContent).find(t => t.includes('hello fox crew')) || null",
                "bob reads it")
    check(line is not None and "alice" in line, "Firefox: bob's page shows the group's message with its author: %r" % (line,))
    send(bob, "fox crew answers")
    line = wait(alice, "return [...document.querySelectorAll('#messages li')].map(l => l.textContent).find(t => t.includes('fox crew answers')) || null",
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
    wait(bob, "return [...document.querySelectorAll('#conversations button')].some(b => b.textContent.includes('speaker'))", "speaker listed", 60)
    press(bob, "#conversations button", "speaker")
    # (Firefox's length of a raw ADTS stream is an estimate until it has read it all: played through, muted.)
    ready = wait(bob, """const a = document.querySelector('#messages audio');
        if (!a || a.readyState < 1) return null;
        if (!a.dataset.started) { a.dataset.started = '1'; a.muted = true; a.play().catch(e => { a.dataset.error = String(e); }); }
        return [a.getAttribute('aria-label')]""", "the note's player", 60)
    played = wait(bob, """const a = document.querySelector('#messages audio');
        return a.dataset.error ? ['error', a.dataset.error] : a.ended ? [a.currentTime, a.duration] : null""", "the note played through", 30)
    check(ready is not None and "voice note from speaker" in ready[0] and played is not None and played[0] != "error"
          and 1.7 <= played[0] <= 2.5, "Firefox: the voice note plays through, %s s of audio: %r %r" % (played and played[0], ready, played))

    # A picture from alice's daemon (its API), shown inline on bob's page; an SOS raised on alice's page, a banner on bob's.
    def alice_api(path, body):
        abase, atoken = alice_link.split("/#token=")
        r = urllib.request.Request(abase + path, data=json.dumps(body).encode(),
                                   headers={"Authorization": "Bearer " + atoken, "Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(r, timeout=30) as f:
            return json.loads(f.read() or b"null")
    import web_media
    bob_peer = run(bob, "return state.me.peerID")
    alice_api("/v1/files", {"to": bob_peer, "name": "fox.png", "content": base64.b64encode(web_media.png()).decode()})
    press(bob, "#conversations button", "alice")
    shown = wait(bob, """const i = document.querySelector('#messages img.inline');
        return i && i.complete && i.naturalWidth > 0 ? [i.naturalWidth, i.naturalHeight, i.alt] : null""", "the picture", 60)
    check(shown is not None and shown[0] == 24 and "fox.png" in shown[2], "Firefox: alice's picture is shown inline on bob's page: %r" % (shown,))
    run(alice, "document.getElementById('status-panel').open = true; document.getElementById('sos').click(); return true")
    banner = wait(bob, "const b = document.getElementById('sos-banner'); return b.hidden ? null : b.textContent", "the SOS banner", 60)
    check(banner is not None and "SOS from alice" in banner, "Firefox: an SOS raised on alice's page is a banner on bob's: %r" % banner)
    run(alice, "document.getElementById('sos').click(); return true")

    # A long conversation read back in pages: 450 from alice, bob's page opens at the newest 100 and scrolls back to the first.
    conversation = alice_api("/v1/conversations", {"peerID": bob_peer})["id"]
    for i in range(450):
        alice_api("/v1/messages", {"to": conversation, "text": "page line %03d" % i})
    press(bob, "#conversations button", "#mesh")
    press(bob, "#conversations button", "alice")
    wait(bob, "return [...document.querySelectorAll('#messages li')].some(l => l.textContent.includes('page line 449'))", "the newest", 60)
    first = None
    for _ in range(40):
        run(bob, "document.getElementById('messages').scrollTop = 0; document.getElementById('messages').dispatchEvent(new Event('scroll')); return true")
        time.sleep(0.3)
        first = run(bob, "return [...document.querySelectorAll('#messages li')].some(l => l.textContent.includes('page line 000'))")
        if first:
            break
    check(bool(first), "Firefox: scrolling up reads the conversation back in pages to its first line")

    # The desktop flows (issue 56): Ctrl-K's switcher, search, the sound setting.
    run(bob, "document.dispatchEvent(new KeyboardEvent('keydown', { key: 'k', ctrlKey: true, bubbles: true })); return true")
    check(wait(bob, "return document.getElementById('switcher').open && document.activeElement.id === 'switcher-text'", "open") is not None,
          "Firefox: Ctrl-K opens the switcher, its box focused")
    run(bob, """const box = document.getElementById('switcher-text'); box.value = 'ali'; box.dispatchEvent(new Event('input'));
        box.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })); return true""")
    check(wait(bob, "return document.getElementById('title').textContent === 'alice' && !document.getElementById('switcher').open", "opened") is not None,
          "Firefox: 'ali' and Enter open alice's conversation")
    run(bob, """document.getElementById('search-text').value = 'PSST';
        document.getElementById('search').requestSubmit(); return true""")
    found = wait(bob, """return document.getElementById('found-bar').hidden ? null :
        [document.getElementById('found-text').textContent, [...document.querySelectorAll('#messages mark')].map(m => m.textContent)]""", "found")
    check(found is not None and found[0].startswith("1 message") and found[1] == ["psst"], "Firefox: search finds alice's message, marked: %r" % (found,))
    run(bob, "document.getElementById('found-close').click(); return true")
    check(wait(bob, "return document.getElementById('found-bar').hidden", "back") is not None, "Firefox: back to the conversation")
    run(bob, "const s = document.getElementById('sound-on'); s.click(); return s.checked")
    check(run(bob, "return localStorage.getItem('starling-sound')") == "on", "Firefox: the sound setting is kept in the browser")

    # axe-core in Firefox: every sidebar panel open, a conversation; search results.
    run(bob, "document.querySelectorAll('details').forEach(x => x.open = true); return true")
    version, serious = axe.firefox(call, bob)
    check(not serious, "Firefox: axe-core %s finds nothing serious or critical, every panel open%s" % (version, "".join("\n     " + v for v in serious)))
    run(bob, "document.getElementById('search-text').value = 'psst'; document.getElementById('search').requestSubmit(); return true")
    wait(bob, "return !document.getElementById('found-bar').hidden", "found")
    version, serious = axe.firefox(call, bob)
    check(not serious, "Firefox: axe-core finds nothing serious or critical in search results%s" % "".join("\n     " + v for v in serious))

    shot = call("browsingContext.captureScreenshot", context=alice)["data"]
    with open(os.path.join(shots, "web-firefox.png"), "wb") as f:
        f.write(base64.b64decode(shot))


try:
    with connect(found[0] + "/session", max_size=64 * 1024 * 1024, open_timeout=30) as ws:
        main()
        try:
            call("session.end")
        except Exception:
            pass
finally:
    firefox.terminate()
    try:
        firefox.wait(10)
    except subprocess.TimeoutExpired:
        firefox.kill()
    shutil.rmtree(profile, ignore_errors=True)

print("%d check(s) failed" % len(failures) if failures else "all checks passed")
sys.exit(1 if failures else 0)
