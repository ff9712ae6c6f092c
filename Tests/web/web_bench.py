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
d = browser(window=None, profile="starling-bench-chromium-")
try:
    d.get(link)
    deadline = time.time() + 30
    while time.time() < deadline and d.execute_script("return document.getElementById('me').dataset.following") != "yes":
        time.sleep(0.05)
    d.execute_script("""
        window.__seen = {};
        const look = () => { for (const li of document.querySelectorAll('#messages li')) {
            const m = li.textContent.match(/bench (\\d+)$/);
            if (m && !(m[1] in window.__seen)) window.__seen[m[1]] = Date.now(); } };
        new MutationObserver(look).observe(document.getElementById('messages'), { childList: true, subtree: true });""")
    print("ready", flush=True)
    deadline = time.time() + 90
    seen = {}
    while time.time() < deadline:
        seen = d.execute_script("return window.__seen")
        if len(seen) >= count:
            break
        time.sleep(0.2)
    resources = d.execute_script(
        "return performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))"
        ".map(e => [e.name, e.encodedBodySize || 0])")
    page = [r for r in resources if "/v1/" not in r[0]]
    print(json.dumps({"seen": seen, "resources": resources, "weight": sum(r[1] for r in page), "files": len(page)}), flush=True)
finally:
    d.quit()
