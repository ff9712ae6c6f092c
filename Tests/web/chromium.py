"""What the Chromium checks in Tests/web share: a headless Chromium (Debian's,
through chromedriver, a fresh profile each), bounded waits, and the checks'
tally. Imported by the scripts beside it (Python puts a script's folder on
its path)."""
import json
import sys
import tempfile
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def browser(window="1100,700", profile="starling-chromium-"):
    """A headless Chromium; `window` None leaves its size alone."""
    o = webdriver.ChromeOptions()
    o.binary_location = "/usr/bin/chromium"
    arguments = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--user-data-dir=" + tempfile.mkdtemp(prefix=profile)]
    if window:
        arguments.append("--window-size=" + window)
    for a in arguments:
        o.add_argument(a)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)


def api(link, path, body=None):
    """A call of the daemon's API, with the token of a `starling web` link; its JSON answer."""
    base, token = link.split("/#token=")
    request = urllib.request.Request(base + path, data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"},
                                     method="POST" if body is not None else "GET")
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.loads(r.read() or b"null")


def until(condition, seconds=60):
    """The first true value `condition` gives within `seconds` (polled every 0.1 s), else None."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    return None


def messages(driver):
    """The conversation's lines, read in one script (the page redraws its list as events come)."""
    return driver.execute_script("return [...document.querySelectorAll('#messages li')].map(li => li.textContent)")


class Checks:
    """One line a check ("ok" or "FAIL"); `exit()` ends with 1 when any failed."""

    def __init__(self):
        self.failures = []

    def __call__(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        if not ok:
            self.failures.append(what)

    def exit(self):
        sys.exit(1 if self.failures else 0)
