#!/usr/bin/env python3
"""The page's side of `starling-bench web`: opens LINK in headless Chromium,
notes the wall-clock time (ms) at which each line "bench N" first appears in
the page's DOM, and prints, once COUNT lines came (or 90 s passed), one JSON
object: {"seen": {N: ms}, "resources": [[url, bytes]] (the page's files and
its API calls), "weight": the page's own files' bytes, "files": how many}.

    web_bench.py LINK COUNT
"""
import json
import sys
import time

from chromium import browser

link, count = sys.argv[1], int(sys.argv[2])


def ready_then_seen(d):
    """Says "ready" (the sender starts), then waits for COUNT lines (90 s at most): their times."""
    print("ready", flush=True)
    deadline = time.time() + 90
    seen = {}
    while time.time() < deadline:
        seen = d.execute_script("return window.__seen")
        if len(seen) >= count:
            break
        time.sleep(0.2)
    return seen


# A third argument: the conversation to open first (a long one), by the name its button starts with.
conversation = sys.argv[3] if len(sys.argv) > 3 else None
d = browser(window=None, profile="starling-bench-chromium-")
try:
    d.get(link)
    deadline = time.time() + 30
    while time.time() < deadline and d.execute_script("return document.getElementById('me').dataset.following") != "yes":
        time.sleep(0.05)
    if conversation:
        deadline = time.time() + 30
        while time.time() < deadline and not d.execute_script("""const b = [...document.querySelectorAll('#conversations button')]
                .find(b => b.textContent.startsWith(arguments[0])); if (b) { b.click(); return true } return false""", conversation):
            time.sleep(0.1)
        deadline = time.time() + 30
        while time.time() < deadline and d.execute_script("return document.querySelectorAll('#messages li').length") < 100:
            time.sleep(0.05)
        # Everything the first load took: the page's files and each API answer so far.
        first_load = d.execute_script("return performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))"
                                      ".reduce((n, e) => n + (e.encodedBodySize || e.transferSize || 0), 0)")
        # Only the last lines are looked at (a new one comes at the end): the observer's own cost
        # does not grow with the history.
        d.execute_script("""
            window.__seen = {};
            const ol = document.getElementById('messages');
            const look = () => { let li = ol.lastElementChild;
                for (let k = 0; li && k < 5; k++, li = li.previousElementSibling) {
                    const m = li.textContent.match(/bench (\\d+)/);
                    if (m && !(m[1] in window.__seen)) window.__seen[m[1]] = Date.now(); } };
            new MutationObserver(look).observe(ol, { childList: true });""")
        seen = ready_then_seen(d)
        lines = d.execute_script("return document.querySelectorAll('#messages li').length")
        print(json.dumps({"seen": seen, "lines": lines, "firstLoad": first_load}), flush=True)
        sys.exit(0)
    d.execute_script("""
        window.__seen = {};
        const look = () => { for (const li of document.querySelectorAll('#messages li')) {
            const m = li.textContent.match(/bench (\\d+)$/);
            if (m && !(m[1] in window.__seen)) window.__seen[m[1]] = Date.now(); } };
        new MutationObserver(look).observe(document.getElementById('messages'), { childList: true, subtree: true });""")
    seen = ready_then_seen(d)
    resources = d.execute_script(
        "return performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))"
        ".map(e => [e.name, e.encodedBodySize || 0])")
    page = [r for r in resources if "/v1/" not in r[0]]
    print(json.dumps({"seen": seen, "resources": resources, "weight": sum(r[1] for r in page), "files": len(page)}), flush=True)
finally:
    d.quit()
