#!/usr/bin/env python3
"""A location channel in the browser: the page of LINK (a daemon with Nostr)
joins #GEOHASH from its form, says LINE there, and waits for REPLY from
someone else in the channel (a terminal chat, which the Swift test drives).

    web_channel.py LINK GEOHASH LINE REPLY SCREENSHOT

Prints "said" once its line is sent, one line a check, and exits 0 when all
hold. Every wait is bounded (60 s).
"""
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

link, geohash, line, reply, screenshot = sys.argv[1:6]
o = webdriver.ChromeOptions()
o.binary_location = "/usr/bin/chromium"
for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1100,700",
          "--user-data-dir=" + tempfile.mkdtemp(prefix="starling-chromium-")]:
    o.add_argument(a)
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
failures = 0


def until(condition, seconds=60):
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
    lines = lambda: d.execute_script("return [...document.querySelectorAll('#messages li')].map(li => li.textContent)")
    got = until(lambda: [l for l in lines() if reply in l])
    check(bool(got), "the channel's reply is on the page: %r" % (got or lines()))
    d.save_screenshot(screenshot)
finally:
    d.quit()
sys.exit(1 if failures else 0)
