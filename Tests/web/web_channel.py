#!/usr/bin/env python3
"""A location channel in the browser: the page of LINK (a daemon with Nostr)
joins #GEOHASH from its form, says LINE there, and waits for REPLY from
someone else in the channel (a terminal chat, which the Swift test drives).

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
finally:
    d.quit()
check.exit()
