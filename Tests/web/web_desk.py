#!/usr/bin/env python3
"""The page as a desktop client (issue 56), in headless Chromium:

    web_desk.py ALICE_LINK BOB_LINK SHOTS

Alice's daemon writes to bob through its API. On bob's page: Ctrl-K opens the
conversation switcher, a few letters and Enter open alice's conversation (the
arrow keys choose, Esc closes it); a search finds the messages that hold a
word (any case, the match marked, the others not shown; Esc brings the
conversation back); the sound setting is off until turned on, stays on after a
reload, and a private message then plays the tone (counted by the page); the
desktop notifications are asked for on a click only and shown while the tab is
hidden (a private message, a group's, an SOS), the tab's title counting what
came meanwhile; the contacts panel shows bob's whole fingerprint as /v1/status
gives it. Then
axe-core (Tests/web/axe.py) finds nothing serious or critical on any panel:
every sidebar panel open, a conversation, a group, search results, the
switcher, at 1280 and 360 px (the menu open and closed), light and dark.
Prints one line a check; exits 0 when all hold. Every wait is bounded.
"""
import os
import sys

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

import axe
from standins import NOTIFICATIONS
from chromium import Checks, api, browser, until

alice_link, bob_link, shots = sys.argv[1:4]
check = Checks()


def lines(d):
    return d.execute_script("return [...document.querySelectorAll('#messages li')].map(li => li.textContent)")


bob_peer = api(bob_link, "/v1/status")["peerID"]
check(until(lambda: any(p["peerID"] == bob_peer for p in api(alice_link, "/v1/peers")), 60) is not None, "alice hears bob")
conversation = api(alice_link, "/v1/conversations", {"peerID": bob_peer})["id"]
said = ["the water point is at the school", "bring a torch", "The WATER is clean now", "see you at six"]
for t in said:
    api(alice_link, "/v1/messages", {"to": conversation, "text": t})

d = browser()
# The browser's notifications, as the page sees them: headless Chromium shows none, so the
# Notification API is stood in for before the page loads (what it asks, what it would show),
# and the tab's visibility is the test's to set.
d.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": NOTIFICATIONS})
try:
    d.get(bob_link)
    check(until(lambda: d.execute_script("return document.getElementById('me').dataset.following") == "yes", 60) is not None, "bob's page follows")
    check(until(lambda: d.execute_script(
        "return [...document.querySelectorAll('#conversations button')].some(b => b.textContent.includes('alice'))"), 60) is not None,
        "alice's conversation is in the sidebar")

    # Ctrl-K: the switcher; "ali" and Enter open alice's conversation.
    ActionChains(d).key_down(Keys.CONTROL).send_keys("k").key_up(Keys.CONTROL).perform()
    check(until(lambda: d.execute_script("return document.getElementById('switcher').open"), 10) is not None, "Ctrl-K opens the switcher")
    check(d.execute_script("return document.activeElement.id") == "switcher-text", "its box has the focus")
    box = d.find_element(By.ID, "switcher-text")
    box.send_keys("ali")
    options = d.execute_script("return [...document.querySelectorAll('#switcher-list li')].map(li => li.textContent)")
    check(options == ["alice"], "typing 'ali' leaves alice alone in the list: %r" % options)
    box.send_keys(Keys.ENTER)
    check(until(lambda: d.find_element(By.ID, "title").text == "alice", 10) is not None, "Enter opens alice's conversation")
    check(not d.execute_script("return document.getElementById('switcher').open"), "and closes the switcher")
    check(until(lambda: len([l for l in lines(d) if any(t in l for t in said)]) == 4, 60) is not None, "alice's four messages are there")
    # The arrows choose, Esc closes without going anywhere (the control: the title stays).
    ActionChains(d).key_down(Keys.CONTROL).send_keys("k").key_up(Keys.CONTROL).perform()
    box.send_keys(Keys.ARROW_DOWN)
    chosen = d.execute_script("return document.querySelector('#switcher-list li[aria-selected=\"true\"]').textContent")
    check(chosen != "#mesh", "the down arrow chooses the next conversation: %r" % chosen)
    box.send_keys(Keys.ESCAPE)
    check(until(lambda: not d.execute_script("return document.getElementById('switcher').open"), 10) is not None and
          d.find_element(By.ID, "title").text == "alice", "Esc closes the switcher and stays in alice's conversation")

    # Search: "water" finds two (any case), each match marked; Esc brings the conversation back.
    search = d.find_element(By.ID, "search-text")
    search.send_keys("water")
    search.send_keys(Keys.ENTER)
    found = until(lambda: d.execute_script("""
        return document.getElementById('found-bar').hidden ? null :
          [document.getElementById('found-text').textContent, [...document.querySelectorAll('#messages li')].map(li => li.textContent),
           [...document.querySelectorAll('#messages mark')].map(m => m.textContent)]"""), 30)
    check(found is not None and found[0].startswith("2 messages"), "the search says what it found: %r" % (found and found[0]))
    check(found is not None and len(found[1]) == 2 and all("water" in l.lower() for l in found[1]), "only the two with 'water': %r" % (found and found[1]))
    check(found is not None and sorted(found[2]) == ["WATER", "water"], "each match is marked: %r" % (found and found[2]))
    d.save_screenshot(os.path.join(shots, "web-search.png"))
    search.send_keys("nowhere")
    search.send_keys(Keys.ENTER)
    check(until(lambda: d.find_element(By.ID, "found-text").text.startswith("nothing"), 30) is not None, "a word said nowhere finds nothing")
    d.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    check(until(lambda: d.execute_script("return document.getElementById('found-bar').hidden") and len(lines(d)) >= 4, 10) is not None,
          "Esc brings the whole conversation back")

    # Sound: off by default (no tone for a message), on after the setting, kept across a reload.
    check(not d.execute_script("return document.getElementById('sound-on').checked"), "sounds are off until the person turns them on")
    api(alice_link, "/v1/messages", {"to": conversation, "text": "quiet one"})
    until(lambda: any("quiet one" in l for l in lines(d)), 30)
    check(not d.execute_script("return state.chimes || 0"), "no tone with sounds off")
    d.execute_script("document.getElementById('settings-panel').open = true")
    d.find_element(By.ID, "sound-on").click()
    d.refresh()
    check(until(lambda: d.execute_script("return document.getElementById('me').dataset.following") == "yes", 60) is not None, "the page reloads")
    check(d.execute_script("return document.getElementById('sound-on').checked"), "the sound setting is kept across a reload")
    api(alice_link, "/v1/messages", {"to": conversation, "text": "loud one"})
    check(until(lambda: d.execute_script("return state.chimes || 0") >= 1, 30) is not None, "a private message plays the tone")

    # Notifications: asked for on a click, never on load; shown only while the tab is hidden, for a
    # private message, a group's and an SOS; the tab's title counts what came meanwhile.
    group = api(bob_link, "/v1/groups", {"name": "crew", "members": ["alice"]})
    check(until(lambda: any(g["groupID"] == group["groupID"] for g in api(alice_link, "/v1/groups")), 60) is not None, "alice is in bob's group crew")
    check(d.execute_script("return window.__asked") == 0, "the page does not ask for notifications on load")
    d.execute_script("document.getElementById('settings-panel').open = true")
    d.find_element(By.ID, "notify").click()
    check(until(lambda: d.execute_script("return window.__asked") == 1, 10) is not None, "the button asks once")
    check(until(lambda: "background" in d.find_element(By.ID, "settings-note").text, 10) is not None, "and says when they come")
    d.execute_script("[...document.querySelectorAll('#conversations button')].find(b => b.textContent.includes('alice')).click()")
    until(lambda: d.find_element(By.ID, "title").text == "alice", 10)
    api(alice_link, "/v1/messages", {"to": conversation, "text": "while you look"})
    check(until(lambda: any("while you look" in l for l in lines(d)), 30) is not None and d.execute_script("return window.__shown.length") == 0
          and d.title == "Starling", "a message while the tab shows: no notification, the title clean (%r)" % d.title)
    d.execute_script("window.__hide(true)")
    api(alice_link, "/v1/messages", {"to": conversation, "text": "while you are away"})
    shown = until(lambda: d.execute_script("return window.__shown.find(n => n[1] === 'while you are away') || null"), 30)
    check(shown is not None and shown[0] == "alice (private)", "a private message in the background is notified: %r" % (shown,))
    check(until(lambda: d.title == "(1) Starling", 10) is not None, "the tab's title counts it, though its conversation is open: %r" % d.title)
    api(alice_link, "/v1/groups/%s/messages" % group["groupID"], {"text": "crew, meet at six"})
    shown = until(lambda: d.execute_script("return window.__shown.find(n => n[1] === 'crew, meet at six') || null"), 30)
    check(shown is not None and shown[0] == "alice in crew", "a group's message is notified: %r" % (shown,))
    check(until(lambda: d.title == "(2) Starling", 10) is not None, "the title counts two: %r" % d.title)
    api(alice_link, "/v1/stately", {"state": "sos"})
    shown = until(lambda: d.execute_script("return window.__shown.find(n => n[0].includes('SOS from')) || null"), 30)
    check(shown is not None and "alice" in shown[0], "an SOS is notified: %r" % (shown,))
    api(alice_link, "/v1/stately", {"state": "clear"})
    d.execute_script("window.__hide(false)")
    check(until(lambda: d.title == "(1) Starling", 10) is not None, "back in the tab, alice's conversation is seen; the group's waits: %r" % d.title)
    d.execute_script("[...document.querySelectorAll('#conversations button')].find(b => b.textContent.includes('crew')).click()")
    check(until(lambda: d.title == "Starling", 10) is not None, "and once the group is open too, the title is clean: %r" % d.title)

    # alice makes bob a favourite: bob's page says so on #mesh (as the terminal does).
    bob_fingerprint = api(bob_link, "/v1/status")["fingerprint"]
    api(alice_link, "/v1/trust", {"fingerprint": bob_fingerprint, "change": "favourite", "nickname": "bob"})
    d.execute_script("[...document.querySelectorAll('#conversations button')].find(b => b.textContent.includes('#mesh')).click()")
    said = until(lambda: [l for l in lines(d) if "alice made you a favourite" in l], 30)
    check(bool(said), "alice's favourite is said on bob's #mesh: %r" % (said or lines(d)[-3:]))

    # Our own identity: the whole fingerprint, as the daemon says it.
    fingerprint = api(bob_link, "/v1/status")["fingerprint"]
    d.execute_script("document.getElementById('contacts-panel').open = true")
    shown = until(lambda: d.find_element(By.ID, "my-fingerprint").text, 30)
    check(shown is not None and shown.replace(" ", "") == fingerprint and len(fingerprint) == 64,
          "the contacts panel shows bob's fingerprint: %r" % shown)

    # axe-core on every panel: all the sidebar's panels open, a private conversation, a group with its bar,
    # search results, the switcher; wide and narrow (the menu open and closed); light and dark.
    audited = []

    def audit(what):
        version, serious = axe.chromium(d)
        audited.append(what)
        check(not serious, "axe-core %s finds nothing serious or critical: %s%s" % (version, what, "".join("\n     " + v for v in serious)))

    def show(name):
        d.execute_script("[...document.querySelectorAll('#conversations button')].find(b => b.textContent.includes(arguments[0])).click()", name)
        until(lambda: d.find_element(By.ID, "title").text == name, 10)

    d.refresh()
    until(lambda: d.execute_script("return document.getElementById('me').dataset.following") == "yes", 60)
    until(lambda: d.execute_script("return [...document.querySelectorAll('#conversations button')].some(b => b.textContent.includes('crew'))"), 30)
    for scheme in ["light", "dark"]:
        d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
        d.set_window_size(1280, 800)
        d.execute_script("document.querySelectorAll('details').forEach(x => x.open = true)")
        show("alice")
        audit("%s, 1280 px, every panel open, alice's conversation" % scheme)
        show("crew")
        check(not d.execute_script("return document.getElementById('group-bar').hidden"), "the group's bar shows (%s)" % scheme)
        audit("%s, the group crew with its bar" % scheme)
        show("alice")
        d.find_element(By.ID, "search-text").send_keys("water" + Keys.ENTER)
        until(lambda: not d.execute_script("return document.getElementById('found-bar').hidden"), 30)
        audit("%s, search results" % scheme)
        d.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
        ActionChains(d).key_down(Keys.CONTROL).send_keys("k").key_up(Keys.CONTROL).perform()
        until(lambda: d.execute_script("return document.getElementById('switcher').open"), 10)
        audit("%s, the switcher open" % scheme)
        d.find_element(By.ID, "switcher-text").send_keys(Keys.ESCAPE)
        d.set_window_size(360, 740)
        d.find_element(By.ID, "menu").click()
        until(lambda: d.execute_script("return document.body.classList.contains('menu-open')"), 10)
        audit("%s, 360 px, the menu open" % scheme)
        d.find_element(By.ID, "menu").click()
        audit("%s, 360 px, the conversation" % scheme)
    check(len(audited) == 12 and d.execute_script("return typeof axe.run") == "function", "axe ran on %d panels" % len(audited))
    d.set_window_size(1280, 800)
    d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
finally:
    d.quit()
if not check.failures:
    print("all checks passed", flush=True)
check.exit()
