"""Firefox (Debian's firefox-esr, headless) driven over WebDriver BiDi, the W3C
protocol Firefox speaks itself (no geckodriver): one browser, its tabs named
by their BiDi contexts. Every wait is bounded.

    with Firefox() as fx:
        tab = fx.tab(link)
        fx.wait(tab, "return document.title === 'Starling'", "the page loads")
"""
import itertools
import json
import re
import shutil
import subprocess
import tempfile
import threading
import time

from websockets.sync.client import connect


class Firefox:
    def __init__(self, check, window="1100,700"):
        self.check = check
        self.profile = tempfile.mkdtemp(prefix="starling-firefox-")
        self.process = subprocess.Popen(["/usr/bin/firefox-esr", "--headless", "--no-remote", "--profile", self.profile,
                                         "--remote-debugging-port=0", "--window-size=" + window, "about:blank"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        found = []

        def read_stderr():
            for line in self.process.stderr:
                m = re.search(r"WebDriver BiDi listening on (ws://\S+)", line)
                if m:
                    found.append(m.group(1))

        threading.Thread(target=read_stderr, daemon=True).start()
        deadline = time.time() + 60
        while not found and time.time() < deadline and self.process.poll() is None:
            time.sleep(0.1)
        if not found:
            self.close()
            raise RuntimeError("Firefox did not open WebDriver BiDi (exit %r)" % self.process.poll())
        self.ids = itertools.count(1)
        self.ws = connect(found[0] + "/session", max_size=64 * 1024 * 1024, open_timeout=30)
        self.call("session.new", capabilities={})
        self.first = self.call("browsingContext.getTree")["contexts"][0]["context"]
        self.used_first = False

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    def close(self):
        try:
            self.call("session.end")
        except Exception:
            pass
        try:
            self.ws.close()
        except Exception:
            pass
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.profile, ignore_errors=True)

    def call(self, method, **params):
        """One command; its result (events that come meanwhile are passed over)."""
        n = next(self.ids)
        self.ws.send(json.dumps({"id": n, "method": method, "params": params}))
        end = time.time() + 60
        while time.time() < end:
            answer = json.loads(self.ws.recv(timeout=60))
            if answer.get("id") == n:
                if answer.get("type") == "error":
                    raise RuntimeError("%s: %s %s" % (method, answer.get("error"), answer.get("message")))
                return answer["result"]
        raise RuntimeError(method + ": no answer")

    def tab(self, url):
        """A tab (the first one, then new ones) at `url`, loaded."""
        if self.used_first:
            context = self.call("browsingContext.create", type="tab")["context"]
        else:
            context, self.used_first = self.first, True
        self.call("browsingContext.navigate", context=context, url=url, wait="complete")
        return context

    def reload(self, context):
        self.call("browsingContext.reload", context=context, wait="complete")

    def preload(self, source):
        """A script every page runs before its own (a stand-in for an API headless Firefox has not)."""
        self.call("script.addPreloadScript", functionDeclaration="() => { %s }" % source)

    def run(self, context, expression):
        """Evaluates a function body in the tab; its value (JSON-serialisable values only)."""
        r = self.call("script.evaluate", expression="JSON.stringify((() => { %s })())" % expression,
                      target={"context": context}, awaitPromise=False)
        if r.get("type") == "exception":
            raise RuntimeError(r["exceptionDetails"]["text"])
        value = r["result"].get("value")
        return json.loads(value) if value is not None else None

    def wait(self, context, expression, what, seconds=30):
        """The expression's value once truthy; None (a failed check saying `what`) after `seconds`."""
        end = time.time() + seconds
        while time.time() < end:
            try:
                v = self.run(context, expression)
            except RuntimeError:
                v = None
            if v:
                return v
            time.sleep(0.2)
        self.check(False, what + " (within %d s)" % seconds)
        return None

    def send(self, context, text):
        """Types `text` into the composer and sends it."""
        self.run(context, """const box = document.querySelector("textarea[aria-label='Message']");
            box.value = %s; box.dispatchEvent(new Event('input'));
            document.querySelector("#composer button[type='submit'], #send").click(); return true""" % json.dumps(text))

    def press(self, context, where, label_start):
        """Clicks the first of `where` whose accessible name starts with `label_start`; False when none."""
        return self.run(context, """const b = [...document.querySelectorAll(%s)]
            .find(b => (b.getAttribute('aria-label') || b.textContent).startsWith(%s));
            if (b) { b.click(); return true } return false""" % (json.dumps(where), json.dumps(label_start)))

    def screenshot(self, context, path):
        import base64
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.call("browsingContext.captureScreenshot", context=context)["data"]))


def drive(main, check):
    """Runs `main(firefox)` in a fresh Firefox, says how the checks went, and exits 1 when any failed."""
    try:
        with Firefox(check) as fx:
            main(fx)
    except RuntimeError as e:
        check(False, "Firefox: %s" % e)
    print("%d check(s) failed" % len(check.failures) if check.failures else "all checks passed")
    check.exit()
