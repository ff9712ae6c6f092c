#!/usr/bin/env python3
"""A location channel in the browser: the page of LINK (a daemon with Nostr)
joins #GEOHASH from its form, says LINE there, and waits for REPLY from
someone else in the channel (a terminal chat, which the Swift test drives).
Then the page is reloaded: the channel is listed again (GET /v1/channels);
its bar's button leaves it, and another reload does not bring it back.

    web_channel.py LINK GEOHASH LINE REPLY SCREENSHOT

Prints "said" once its line is sent, one line a check, and exits 0 when all
hold. Every wait is bounded (60 s).
"""
import sys

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from chromium import Checks, browser, messages, until

link, geohash, line, reply, screenshot = sys.argv[1:6]
d = browser()
check = Checks()

try:
    d.get(link)
    until(lambda: d.execute_script("return document.getElementById('me').dataset.following") == "yes")
    d.execute_script("document.getElementById('channels-panel').open = true")
    box = d.find_element(By.ID, "geohash")
    box.send_keys("#" + geohash)
    box.send_keys(Keys.ENTER)
    check(until(lambda: d.find_element(By.ID, "title").text == "#" + geohash) is not None, "the page joins #" + geohash)
    message = d.find_element(By.CSS_SELECTOR, "textarea[aria-label='Message']")
    message.send_keys(line)
    message.send_keys(Keys.ENTER)
    print("said", flush=True)
    got = until(lambda: [l for l in messages(d) if reply in l])
    check(bool(got), "the channel's reply is on the page: %r" % (got or messages(d)))
    d.save_screenshot(screenshot)
    # The daemon keeps what was joined: a reload lists the channel again; its bar's button leaves it.
    d.refresh()
    until(lambda: d.execute_script("return document.getElementById('me').dataset.following") == "yes")
    listed = until(lambda: d.execute_script(
        "return [...document.querySelectorAll('#conversations button')].map(b => b.textContent).filter(t => t.includes(arguments[0]))",
        "#" + geohash), 30)
    check(bool(listed), "after a reload the channel is still in the sidebar: %r" % listed)
    d.execute_script("[...document.querySelectorAll('#conversations button')].find(b => b.textContent.includes(arguments[0])).click()", "#" + geohash)
    check(until(lambda: d.execute_script("return !document.getElementById('channel-bar').hidden"), 10) is not None, "its bar offers to leave it")
    d.find_element(By.ID, "leave-channel").click()
    gone = until(lambda: d.execute_script(
        "return ![...document.querySelectorAll('#conversations button')].some(b => b.textContent.includes(arguments[0]))"
        " && document.getElementById('title').textContent === '#mesh'", "#" + geohash), 30)
    check(gone is not None, "leaving takes it from the sidebar, back on #mesh")
    d.refresh()
    until(lambda: d.execute_script("return document.getElementById('me').dataset.following") == "yes")
    check(until(lambda: d.execute_script("return document.querySelectorAll('#conversations button').length > 0"), 30) is not None and
          not d.execute_script("return [...document.querySelectorAll('#conversations button')].some(b => b.textContent.includes(arguments[0]))",
                               "#" + geohash), "and a reload does not bring it back")
finally:
    d.quit()
check.exit()
