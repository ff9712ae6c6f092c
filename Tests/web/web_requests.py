#!/usr/bin/env python3
"""Strangers' messages over Nostr as requests, on the page:

    web_requests.py LINK CAROL_NPUB MALLORY_NPUB SCREENSHOT

Both requests are listed with what they wrote; carol is accepted under a name
(her message is then in her conversation), mallory is blocked (the panel
empties). One line a check; exits 0 when all hold; every wait bounded (60 s).
"""
import sys

from selenium.webdriver.common.by import By

from chromium import Checks, browser, messages, until

link, carol, mallory, shot = sys.argv[1:5]
check = Checks()


def listed(d):
    return d.execute_script("""return [...document.querySelectorAll('#requests > li')].map(li =>
        [li.querySelector('code').title, [...li.querySelectorAll('li')].map(m => m.textContent)])""")


def item(d, npub):
    return d.execute_script("return [...document.querySelectorAll('#requests > li')].find(li => li.querySelector('code').title === arguments[0])", npub)


d = browser()
try:
    d.get(link)
    both = until(lambda: (lambda l: l if len(l) == 2 else None)(listed(d)))
    check(both is not None and {n for n, _ in both} == {carol, mallory}, "both requests are listed: %r" % (both,))
    check(any(n == carol and "hello ann, carol here" in m for n, m in (both or [])), "with what carol wrote")
    check(d.find_element(By.ID, "requests-panel").is_displayed(), "the requests panel shows")
    d.save_screenshot(shot)
    # Accept without a name: said in words, nothing done (the control).
    item(d, carol).find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    said = until(lambda: d.find_element(By.ID, "alert-text").text)
    check(said is not None and "name" in said, "accepting needs a name: %r" % said)
    box = item(d, carol).find_element(By.CSS_SELECTOR, "input")
    box.send_keys("carol")
    item(d, carol).find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    named = until(lambda: [b for b in d.execute_script("return [...document.querySelectorAll('#conversations button')].map(b => b.getAttribute('aria-label'))")
                           if b.startswith("carol")])
    check(bool(named), "carol is a conversation once accepted")
    d.execute_script("[...document.querySelectorAll('#conversations button')].find(b => b.getAttribute('aria-label').startsWith('carol')).click()")
    shown = until(lambda: [m for m in messages(d) if "hello ann, carol here" in m])
    check(bool(shown), "her message is in her conversation: %r" % messages(d))
    item(d, mallory).find_element(By.CSS_SELECTOR, "button.danger").click()
    check(until(lambda: not d.find_element(By.ID, "requests-panel").is_displayed()) is not None, "mallory blocked: no request is left")
finally:
    d.quit()

check.exit()
