"""Stand-ins the tests load into a page before its own scripts, for what a
headless browser has not: the Notification API as the page sees it (what it
asks, what it would show: window.__asked, window.__shown) and the tab's
visibility, the test's to set (window.__hide(true) / (false))."""

NOTIFICATIONS = """
  window.__asked = 0; window.__shown = [];
  let permission = sessionStorage.getItem("granted") ? "granted" : "default", hidden = false;
  window.Notification = function (title, options) { window.__shown.push([title, options && options.body]); };
  Object.defineProperty(window.Notification, "permission", { get: () => permission });
  window.Notification.requestPermission = async () => { window.__asked++; permission = "granted"; sessionStorage.setItem("granted", "1"); return permission; };
  Object.defineProperty(document, "visibilityState", { get: () => hidden ? "hidden" : "visible", configurable: true });
  window.__hide = (h) => { hidden = h; document.dispatchEvent(new Event("visibilitychange")); };
"""
