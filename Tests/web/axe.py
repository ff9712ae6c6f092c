"""axe-core (Deque's accessibility checker, its axe.min.js as the PyPI package
axe-playwright-python bundles it; scripts/install-deps --test installs it) run
on the page as it is now, in Chromium (Selenium) or Firefox (WebDriver BiDi).
What the page's tests call an audit: the violations axe rates serious or
critical, each as "rule (n nodes): help — first targets"."""
import importlib.util
import json
import os

WHAT_MATTERS = ("serious", "critical")

# The violations, summarised, as JSON text (one shape for both browsers).
_RUN = """axe.run(document, { resultTypes: ["violations"] }).then(r => JSON.stringify({
  version: axe.version, passes: r.passes.length,
  violations: r.violations.map(v => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length,
                                       targets: v.nodes.slice(0, 3).map(n => n.target.join(" ")) })) }))"""


def source():
    spec = importlib.util.find_spec("axe_playwright_python")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("axe-core is a test dependency: run scripts/install-deps --test")
    with open(os.path.join(spec.submodule_search_locations[0], "axe.min.js"), encoding="utf-8") as f:
        return f.read()


def _summary(text):
    r = json.loads(text)
    serious = [v for v in r["violations"] if v["impact"] in WHAT_MATTERS]
    return r["version"], ["%s (%d nodes): %s — %s" % (v["id"], v["nodes"], v["help"], "; ".join(v["targets"])) for v in serious]


def chromium(driver):
    """(axe's version, the serious and critical violations) on the Chromium page now."""
    if not driver.execute_script("return typeof axe !== 'undefined'"):
        driver.execute_script(source())
    text = driver.execute_async_script("const done = arguments[arguments.length - 1];\n"
                                       + _RUN + ".then(done, e => done(JSON.stringify({ error: String(e) })))")
    if "error" in json.loads(text):
        raise RuntimeError("axe: " + json.loads(text)["error"])
    return _summary(text)


def firefox(call, context):
    """The same in Firefox, through a WebDriver BiDi `call(method, **params)`."""
    loaded = call("script.evaluate", expression="typeof axe !== 'undefined'", target={"context": context}, awaitPromise=False)
    if not loaded["result"].get("value"):
        call("script.evaluate", expression=source() + "\n;true", target={"context": context}, awaitPromise=False)
    r = call("script.evaluate", expression=_RUN, target={"context": context}, awaitPromise=True)
    if r.get("type") == "exception":
        raise RuntimeError("axe: " + r["exceptionDetails"]["text"])
    return _summary(r["result"]["value"])
