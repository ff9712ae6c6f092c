// Starling in the browser: one more face of the daemon's API (docs/API.md).
// Everything from the network is put on the page as text, never as HTML.
"use strict";

const MESH = "mesh";
const state = {
  token: null,
  me: null,
  peers: [],
  conversations: new Map(), // id -> {id, name, unread, fingerprint}
  messages: new Map(),      // conversation id or MESH -> [{key, time, who, text, own, state, via, id, hops}]
  current: MESH,
  lastSeq: 0,
};

// The token: from the fragment the command line printed (never sent in a
// request line); kept for this tab only, and taken off the address bar.
function readToken() {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromHash) {
    sessionStorage.setItem("starling-token", fromHash);
    history.replaceState(null, "", location.pathname);
  }
  return sessionStorage.getItem("starling-token");
}

class Refused extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(path, body, method) {
  const init = { method: method || (body === undefined ? "GET" : "POST"), headers: { Authorization: "Bearer " + state.token } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch (_) { json = null; }
  if (!r.ok) throw new Refused(r.status, (json && json.error && json.error.message) || ("the daemon answered " + r.status));
  return json;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = v;
    else if (k === "on") for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c) e.append(c);
  return e;
}

// One line that says what went wrong and what to do; the person can dismiss it,
// and the next thing that works takes it away.
function say(text) {
  document.getElementById("alert-text").textContent = text;
  document.getElementById("alert").hidden = !text;
}

function clock(ms) {
  const d = ms ? new Date(ms) : new Date();
  return d.toTimeString().slice(0, 5);
}

const STATE_WORDS = {
  composing: "composing", encrypting: "encrypting", routing: "routing", sending: "sent", sent: "sent",
  delivered: "delivered", read: "read", retrying: "kept until they are back", failed: "not delivered",
};
const STATE_MARKS = { sending: "✓", sent: "✓", delivered: "✓✓", read: "✓✓ read", retrying: "↻", failed: "✗" };

function list(key) {
  if (!state.messages.has(key)) state.messages.set(key, []);
  return state.messages.get(key);
}

// A private message (ours or theirs) as the page keeps it.
function fromRecord(m, nickname) {
  const r = {
    // (A group's messages are keyed by their message ID: the live event names no record.)
    key: isGroup(m.conversation) && m.messageID ? m.messageID : m.id, id: m.id, messageID: m.messageID, time: m.timestamp, own: m.outgoing, text: m.text,
    who: m.outgoing ? (state.me ? state.me.nickname : "you") : (m.author || nickname || conversationName(m.conversation)),
    state: m.outgoing ? m.state : undefined, via: m.via && m.via !== "mesh" ? m.via : undefined,
    position: m.position,
  };
  // A file in the history: the same line its live events make (keyed by its transfer).
  if (m.file) {
    const voice = m.file.mimeType === "audio/aac" && typeof m.file.durationMillis === "number";
    r.key = m.file.transferID;
    r.text = voice ? `voice note (${seconds(m.file.durationMillis)})` : `file ${m.file.name} (${m.file.size} bytes)`;
    r.file = { transferID: m.file.transferID, name: m.file.name, size: m.file.size, conversation: m.conversation,
               saved: !m.outgoing && !!m.file.path, voice: voice ? m.file.durationMillis : undefined };
  }
  return r;
}

function seconds(ms) {
  const s = Math.max(1, Math.round(ms / 1000));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

function isGroup(id) {
  const c = state.conversations.get(id);
  return !!(c && c.kind === "group");
}

function groupConversation(groupID) {
  for (const c of state.conversations.values()) if (c.group && c.group.groupID === groupID) return c;
  return null;
}

function conversationName(id) {
  const c = state.conversations.get(id);
  return c ? c.name : id.slice(0, 8);
}

// Where a message is, in order: an answer that comes late (the send call's,
// after the receipts' events) never moves it back.
const RANK = { composing: 0, encrypting: 1, routing: 2, sending: 3, retrying: 3, failed: 3, sent: 4, delivered: 5, read: 6 };

// What the page keeps of a conversation it shows (the network can send without end; the
// store keeps the history, GET /v1/conversations/ID/messages brings it back).
const KEPT_PER_CONVERSATION = 1000;

// A conversation the store keeps is shown as a window of it (issue 56): its newest page
// when opened, older pages as the person scrolls back (PAGE at a time, GET
// …/messages?before=POSITION), never more than KEPT_PER_CONVERSATION lines. Past that the
// newest are let go (`newer`: they are in the store), and scrolling down to the end
// brings the newest page back. conversation → { oldest, older, newer, loading }.
const PAGE = 200;
// The first page smaller (a screen shows ~30 lines): the first load stays under 150 KB.
const FIRST_PAGE = 100;
const views = new Map();

function oldestPosition(l) {
  let p = Infinity;
  for (const e of l) if (e.position !== undefined && e.position < p) p = e.position;
  return p === Infinity ? undefined : p;
}

function upsert(key, entry) {
  const l = list(key);
  const i = l.findIndex((e) => e.key === entry.key);
  if (i < 0) {
    const v = views.get(key);
    // Scrolled back past the newest: a stored message comes back with the newest page
    // (a file offer or arrival, which waits for an answer and is not stored, is shown).
    if (v && v.newer && !/^(offer|incoming)-/.test(entry.key)) return;
    l.push(entry);
    if (l.length > KEPT_PER_CONVERSATION) {
      l.splice(0, l.length - KEPT_PER_CONVERSATION);
      if (v) { v.older = true; v.oldest = oldestPosition(l); }
    }
    return;
  }
  if (l[i].state && entry.state && (RANK[entry.state] ?? 0) < (RANK[l[i].state] ?? 0)) entry = Object.assign({}, entry, { state: l[i].state });
  l[i] = Object.assign(l[i], entry);
}

// MARK: Rendering

// A list drawn again (a peer's announce, a message) keeps the keyboard's place: the
// element that had the focus is found again by its data-focus key and focused.
// (CI found a person's Enter lost: the button Tab reached was redrawn under it.)
function keepingFocus(container, draw) {
  const had = container.contains(document.activeElement) ? document.activeElement.dataset.focus : null;
  draw();
  if (had) container.querySelector(`[data-focus="${CSS.escape(had)}"]`)?.focus();
}

function renderConversations() {
  const ul = document.getElementById("conversations");
  keepingFocus(ul, () => drawConversations(ul));
}

function drawConversations(ul) {
  ul.replaceChildren();
  const items = [{ id: MESH, name: "#mesh", unread: 0 }].concat([...state.conversations.values()]);
  for (const c of items) {
    const label = c.id === MESH ? "#mesh" : c.name;
    const unread = c.id === state.current && !hiddenTab() ? 0 : (c.unread || 0);
    const kind = c.group ? `group of ${c.group.members.length}` : null;
    const named = kind ? `${label} (${kind})` : label;
    const b = el("button", {
      type: "button", "aria-current": c.id === state.current ? "true" : "false", "data-focus": "open:" + c.id,
      "aria-label": unread ? `${named}, ${unread} unread` : named,
      on: { click: () => open(c.id) },
    }, el("span", { text: label }), unread ? el("span", { class: "badge", "aria-hidden": "true", text: String(unread) }) : null,
       kind ? el("small", { class: "kind", text: kind }) : null);
    ul.append(el("li", {}, b));
  }
  // The tab says how many wait unread, so a background tab is noticed (issue 56).
  const waiting = items.reduce((n, c) => n + (c.id === state.current && !hiddenTab() ? 0 : (c.unread || 0)), 0);
  document.title = waiting ? `(${waiting}) Starling` : "Starling";
}

function renderPeople() {
  const ul = document.getElementById("people");
  keepingFocus(ul, () => drawPeople(ul));
}

function drawPeople(ul) {
  ul.replaceChildren();
  if (!state.peers.length) ul.append(el("li", { class: "note", text: "nobody yet" }));
  for (const p of state.peers) {
    const marks = (p.verified ? " ✓" : "") + (p.favorite ? " ★" : "") + (p.blocked ? " (blocked)" : "");
    const b = el("button", {
      type: "button", class: "peer", "data-focus": "message:" + p.peerID, "aria-label": `Message ${p.nickname}${marks}, ${p.hops === 1 ? "direct" : p.hops + " hops"}`,
      on: { click: () => message(p) },
    }, el("span", { text: p.nickname + marks }),
       el("small", { text: `${p.fingerprint.slice(0, 16)} · ${p.hops === 1 ? "direct" : p.hops + " hops"}` }));
    const actions = el("div", { class: "peer-actions" },
      el("button", { type: "button", "data-focus": "favourite:" + p.peerID, "aria-label": (p.favorite ? "Unfavourite " : "Favourite ") + p.nickname, text: p.favorite ? "★ unfavourite" : "☆ favourite",
                     on: { click: () => decide(p, p.favorite ? "unfavourite" : "favourite") } }),
      el("button", { type: "button", "data-focus": "block:" + p.peerID, "aria-label": (p.blocked ? "Unblock " : "Block ") + p.nickname, text: p.blocked ? "unblock" : "block",
                     on: { click: () => decide(p, p.blocked ? "unblock" : "block") } }));
    ul.append(el("li", {}, b, actions));
  }
}

async function decide(p, change) {
  try {
    await api("/v1/trust", { fingerprint: p.fingerprint, change, nickname: p.nickname });
    await refreshPeople();
    await refreshContacts();
  } catch (e) { say(e.message); }
}

// MARK: The mesh, channels, settings, notifications

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

// Who hears whom, from announces' neighbour lists: peers on a circle, us at the centre.
async function refreshMesh() {
  let mesh;
  try { mesh = await api("/v1/mesh"); } catch (e) { return; }
  const names = new Map(state.peers.map((p) => [p.peerID, p.nickname]));
  names.set(mesh.me, state.me ? state.me.nickname : "you");
  const ids = [...new Set([mesh.me, ...Object.keys(mesh.neighbours), ...Object.values(mesh.neighbours).flat()])].slice(0, 64);
  const others = ids.filter((id) => id !== mesh.me);
  const at = new Map([[mesh.me, [100, 100]]]);
  others.forEach((id, i) => {
    const a = 2 * Math.PI * i / Math.max(1, others.length);
    at.set(id, [100 + 70 * Math.cos(a), 100 + 70 * Math.sin(a)]);
  });
  const picture = svg("svg", { viewBox: "0 0 200 200" });
  const edges = [];
  for (const [from, list] of Object.entries(mesh.neighbours)) {
    for (const to of list) if (at.has(from) && at.has(to) && from < to) edges.push([from, to]);
    for (const to of list) if (at.has(from) && at.has(to) && from > to && !(mesh.neighbours[to] || []).includes(from)) edges.push([to, from]);
  }
  for (const [a, b] of edges) {
    const [x1, y1] = at.get(a), [x2, y2] = at.get(b);
    picture.append(svg("line", { x1, y1, x2, y2 }));
  }
  for (const id of ids) {
    const [x, y] = at.get(id);
    picture.append(svg("circle", { cx: x, cy: y, r: 5, class: id === mesh.me ? "me" : "" }));
    picture.append(svg("text", { x: x + 7, y: y + 3 }, names.get(id) || id.slice(0, 6)));
  }
  const holder = document.getElementById("mesh-picture");
  holder.replaceChildren(picture);
  holder.setAttribute("aria-label", `The mesh: ${ids.length} node${ids.length === 1 ? "" : "s"}, ${edges.length} link${edges.length === 1 ? "" : "s"} heard in announces`);
}

function channelKey(g) { return "#" + g; }

// The channels joined (kept by the daemon: a reload, or another face's join, shows them).
async function refreshChannels() {
  let joined;
  try { joined = await api("/v1/channels"); } catch (e) { return; }
  const keys = new Set(joined.map((c) => channelKey(c.geohash)));
  for (const c of joined) {
    const key = channelKey(c.geohash);
    if (!state.conversations.has(key)) state.conversations.set(key, { id: key, name: key, unread: 0, channel: c.geohash });
  }
  for (const [key, c] of [...state.conversations]) if (c.channel && !keys.has(key)) state.conversations.delete(key);
  if (state.current.startsWith("#") && state.current !== MESH && !keys.has(state.current)) await open(MESH);
  renderConversations();
}

async function leaveChannel() {
  const c = state.conversations.get(state.current);
  if (!c || !c.channel) return;
  try {
    await api(`/v1/channels/${encodeURIComponent(c.channel)}`, undefined, "DELETE");
    state.conversations.delete(c.id);
    state.messages.delete(c.id);
    await open(MESH);
  } catch (e) { say(e.message); }
}

async function join(geohash) {
  try {
    const r = await api(`/v1/channels/${encodeURIComponent(geohash)}`, {});
    const key = channelKey(r.joined);
    if (!state.conversations.has(key)) state.conversations.set(key, { id: key, name: key, unread: 0, channel: r.joined });
    await open(key);
    say("");
  } catch (e) { say(e.message); }
}

function notify(title, body) {
  if (localStorage.getItem("starling-sound") === "on") chime();
  if (!("Notification" in window) || Notification.permission !== "granted" || document.visibilityState === "visible") return;
  try { new Notification(title, { body }); } catch (_) { /* not in this context */ }
}

// A short tone (WebAudio: nothing fetched), only when the person turned sounds on.
let audioContext = null;
function chime() {
  try {
    audioContext = audioContext || new AudioContext();
    const o = audioContext.createOscillator(), g = audioContext.createGain(), t = audioContext.currentTime;
    o.frequency.value = 880;
    g.gain.setValueAtTime(0.15, t);
    g.gain.exponentialRampToValueAtTime(0.001, t + 0.25);
    o.connect(g).connect(audioContext.destination);
    o.start(t);
    o.stop(t + 0.25);
    state.chimes = (state.chimes || 0) + 1;
  } catch (_) { /* no audio here */ }
}

// MARK: Stately

let statesKnown = [];
async function refreshStately() {
  let v;
  try { v = await api("/v1/stately"); } catch (e) { return; }
  const select = document.getElementById("state");
  if (!statesKnown.length && v.states) {
    statesKnown = v.states;
    for (const k of v.states) if (k.name !== "sos") select.append(el("option", { value: k.name, text: `${k.emoji} ${k.displayName}` }));
  }
  if (v.state !== "sos") select.value = v.state;
  const sos = document.getElementById("sos");
  sos.textContent = v.state === "sos" ? "Clear my SOS" : "Raise SOS";
  const board = document.getElementById("board");
  board.replaceChildren();
  for (const b of v.board) {
    board.append(el("li", { class: b.state === "sos" ? "sos" : "", text: `${b.emoji} ${b.name} — ${b.state === "sos" ? "SOS" : b.state}${b.hops > 1 ? ` (${b.hops} hops)` : ""}` }));
  }
  const sosAround = v.board.filter((b) => b.state === "sos");
  const banner = document.getElementById("sos-banner");
  banner.textContent = sosAround.length ? "🆘 SOS from " + sosAround.map((b) => b.name).join(", ") + ": someone near you needs help" : "";
  banner.hidden = !sosAround.length;
}

async function setState(name) {
  try { await api("/v1/stately", { state: name }); } catch (e) { say(e.message); }
  refreshStately();
}

// MARK: The mesh's board (notices; not Stately's board of states)

async function refreshNotices() {
  let posts;
  try { posts = await api("/v1/board"); } catch (e) { return; }
  const ul = document.getElementById("notices");
  ul.replaceChildren();
  if (!posts.length) ul.append(el("li", { class: "note", text: "no notices" }));
  for (const p of posts) {
    const until = new Date(p.expiresAt).toLocaleString([], { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" });
    const li = el("li", { class: p.urgent ? "urgent" : "" },
      el("strong", { text: p.shownName + ": ", title: p.author ? undefined : "a key no peer here announces: the name is only what the poster claims" }), el("span", { class: "notice-text", text: p.text }),
      el("small", { text: ` ${p.urgent ? "· urgent " : ""}${p.crossed ? "· across a bridge " : ""}· until ${until}` }));
    if (p.ours) {
      const del = el("button", { type: "button", text: "Delete", "aria-label": "Delete the notice " + p.text });
      del.addEventListener("click", async () => {
        try { await api("/v1/board/" + p.postID, undefined, "DELETE"); } catch (e) { say(e.message); }
        refreshNotices();
      });
      li.append(del);
    }
    ul.append(li);
  }
}

async function postNotice() {
  const box = document.getElementById("notice"), text = box.value.trim();
  if (!text) return;
  try {
    await api("/v1/board", { text, urgent: document.getElementById("notice-urgent").checked,
                             days: Number(document.getElementById("notice-days").value) });
    box.value = "";
    document.getElementById("notice-urgent").checked = false;
  } catch (e) { say(e.message); }
  refreshNotices();
}

// MARK: Contacts

async function refreshContacts() {
  let contacts;
  try { contacts = await api("/v1/contacts"); } catch (e) { return; }
  const ul = document.getElementById("contacts");
  ul.replaceChildren();
  for (const c of contacts) {
    const li = el("li", { class: "contact" },
      el("span", { text: c.name + (c.verified ? " ✓" : "") + (c.favorite ? " ★" : "") + (c.blocked ? " (blocked)" : "") }));
    if (c.safetyNumber) {
      li.append(el("code", { "aria-label": `Safety number with ${c.name}`, text: c.safetyNumber }));
      li.append(el("button", { type: "button", "aria-label": (c.verified ? "Unverify " : "Verify ") + c.name,
                               text: c.verified ? "unverify" : "the same on both screens: verify",
                               on: { click: () => decide({ fingerprint: c.fingerprint, nickname: c.name }, c.verified ? "unverify" : "verify") } }));
    }
    ul.append(li);
  }
}

async function showCard() {
  try {
    const card = await api("/v1/card");
    // Our own daemon's picture, shown as an image (never inserted as markup).
    document.getElementById("qr").src = "data:image/svg+xml;base64," + btoa(card.qrSVG);
    document.getElementById("qr").title = card.uri;
    const me = await api("/v1/status");
    document.getElementById("my-npub").textContent = me.npub || "(none)";
    document.getElementById("my-fingerprint").textContent = (me.fingerprint || "").match(/.{1,4}/g)?.join(" ") || "";
  } catch (e) { say(e.message); }
}

async function addContact() {
  const link = document.getElementById("contact-link"), file = document.getElementById("contact-image");
  try {
    if (link.value.trim()) {
      await api("/v1/contacts", { uri: link.value.trim() });
    } else if (file.files.length) {
      const bytes = new Uint8Array(await file.files[0].arrayBuffer());
      let binary = "";
      for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
      await api("/v1/contacts", { image: btoa(binary) });
    } else {
      say("give their yaok:// link or a picture of their QR code");
      return;
    }
    link.value = "";
    file.value = "";
    say("");
    await refreshContacts();
    await refreshConversations();
  } catch (e) { say(e.message); }
}

// MARK: The store's lock

// The messenger locks the store after a while with no one using any face: a
// key or a click here says someone is (at most every 30 s).
let activityNoted = 0;
function noteActivity() {
  if (!state.token || Date.now() - activityNoted < 30000) return;
  activityNoted = Date.now();
  api("/v1/activity", {}).catch(() => {});
}

async function unlock(secret) {
  try {
    await api("/v1/store/unlock", { secret });
    say("");
  } catch (e) { say(e.message); }
  await refreshMe();
}

function renderMessages() {
  const ol = document.getElementById("messages");
  const atEnd = ol.scrollHeight - ol.scrollTop - ol.clientHeight < 40;
  ol.replaceChildren();
  document.getElementById("title").textContent = state.current === MESH ? "#mesh" : conversationName(state.current);
  renderGroupBar();
  const channel = state.conversations.get(state.current);
  document.getElementById("channel-bar").hidden = !(channel && channel.channel);
  const found = state.found && state.found.conversation === state.current ? state.found : null;
  document.getElementById("found-bar").hidden = !found;
  if (found) {
    // Search results in place of the conversation, each match marked.
    document.getElementById("found-text").textContent =
      `${found.lines.length === 0 ? "nothing" : found.lines.length === 1 ? "1 message" : found.lines.length + " messages"} with “${found.text}”` +
      (found.lines.length >= SEARCH_LIMIT ? ` (the newest ${SEARCH_LIMIT})` : "");
    for (const m of found.lines) ol.append(messageItem(m, found.text));
    return;
  }
  for (const m of list(state.current)) ol.append(messageItem(m));
  if (atEnd) ol.scrollTop = ol.scrollHeight;
  seen();
}

// A new line at the end of the conversation in view: added alone, not the whole list redrawn.
function appendMessage(m) {
  const ol = document.getElementById("messages");
  const atEnd = ol.scrollHeight - ol.scrollTop - ol.clientHeight < 40;
  ol.append(messageItem(m));
  while (ol.childElementCount > KEPT_PER_CONVERSATION) ol.firstElementChild.remove();
  if (atEnd) ol.scrollTop = ol.scrollHeight;
}

function messageItem(m, marked) {
  {
    const li = el("li", { class: m.own ? "own" : "", "data-key": m.key },
      el("span", { class: "time", text: clock(m.time) }),
      el("span", { class: "who", text: m.who }),
      marked ? highlighted(m.text, marked) : el("span", { class: "text", text: m.text }));
    if (m.file) renderFile(li, m);
    if (m.hops > 1) li.append(el("span", { class: "via", text: `via ${m.hops - 1} relay${m.hops === 2 ? "" : "s"}` }));
    if (m.via) li.append(el("span", { class: "via", text: m.via === "nostr" ? "via Nostr" : "via the Ya OK server" }));
    if (m.note) li.append(el("span", { class: "via", text: m.note }));
    if (m.own && m.state && STATE_MARKS[m.state]) {
      const queued = m.state === "sent" && m.via && m.via !== "nostr";
      const words = queued ? "queued at the server" : STATE_WORDS[m.state];
      li.append(el("span", { class: "state" + (m.state === "failed" ? " failed" : ""), role: "img", "aria-label": words, title: words,
                             text: queued ? "✓ queued" : STATE_MARKS[m.state] }));
    }
    return li;
  }
}

// The text with each match of `q` (any case) in a <mark>: text nodes only, never markup.
function highlighted(text, q) {
  const span = el("span", { class: "text" }), lower = text.toLowerCase(), ql = q.toLowerCase();
  let at = 0;
  for (let i = lower.indexOf(ql); i >= 0 && ql; i = lower.indexOf(ql, at)) {
    span.append(document.createTextNode(text.slice(at, i)), el("mark", { text: text.slice(i, i + q.length) }));
    at = i + q.length;
  }
  span.append(document.createTextNode(text.slice(at)));
  return span;
}

// MARK: Search (a stored conversation through the API: the store is sealed at rest; #mesh and channels here)

const SEARCH_LIMIT = 200;
async function search(text) {
  const id = state.current;
  if (!text) { closeSearch(); return; }
  let lines;
  if (id === MESH || id.startsWith("#")) {
    lines = list(id).filter((m) => m.text.toLowerCase().includes(text.toLowerCase())).slice(-SEARCH_LIMIT);
  } else {
    try {
      const found = await api(`/v1/conversations/${id}/messages?limit=${SEARCH_LIMIT}&search=${encodeURIComponent(text)}`);
      lines = found.map((m) => fromRecord(m));
    } catch (e) { say(e.message); return; }
  }
  if (state.current !== id) return;
  state.found = { conversation: id, text, lines };
  renderMessages();
}

function closeSearch() {
  if (!state.found) return;
  state.found = null;
  document.getElementById("search-text").value = "";
  renderMessages();
  const ol = document.getElementById("messages");
  ol.scrollTop = ol.scrollHeight;
}

// MARK: The conversation switcher (Ctrl-K): type a few letters, Enter opens the first (or the one chosen)

function openSwitcher() {
  const d = document.getElementById("switcher"), box = document.getElementById("switcher-text");
  if (d.open) return;
  box.value = "";
  switcherList();
  d.showModal();
  box.focus();
}

function switcherMatches() {
  const q = document.getElementById("switcher-text").value.trim().toLowerCase();
  const all = [[MESH, "#mesh"], ...[...state.conversations.values()].filter((c) => c.id !== MESH).map((c) => [c.id, conversationName(c.id)])];
  return all.filter(([, name]) => name.toLowerCase().includes(q)).slice(0, 20);
}

let switcherChoice = 0;
function switcherList() {
  const ul = document.getElementById("switcher-list"), found = switcherMatches();
  switcherChoice = Math.min(switcherChoice, Math.max(0, found.length - 1));
  ul.replaceChildren(...found.map(([id, name], i) => el("li", { role: "option", id: "switch-" + i, "aria-selected": i === switcherChoice ? "true" : "false",
                                                               text: name, on: { click: () => switchTo(id) } })));
  document.getElementById("switcher-text").setAttribute("aria-activedescendant", found.length ? "switch-" + switcherChoice : "");
}

function switchTo(id) {
  document.getElementById("switcher").close();
  open(id);
}

// MARK: Groups (docs/PROTOCOL.md, "Groups": sealed for their members; no receipts)

function renderGroupBar() {
  const c = state.conversations.get(state.current), bar = document.getElementById("group-bar");
  bar.hidden = !(c && c.group);
  if (bar.hidden) return;
  const g = c.group, ours = state.me && g.creator === state.me.fingerprint;
  const roster = document.getElementById("group-roster");
  roster.replaceChildren();
  for (const m of g.members) {
    const li = el("li", {}, el("span", { text: m.nickname + (m.fingerprint === g.creator ? " (made it)" : "") }));
    if (ours && m.fingerprint !== g.creator) {
      li.append(el("button", { type: "button", text: "remove", "aria-label": `Remove ${m.nickname} from ${g.name}`,
                               on: { click: () => groupCall(`/v1/groups/${g.groupID}/members/${encodeURIComponent(m.nickname)}`, undefined, "DELETE") } }));
    }
    roster.append(li);
  }
  document.getElementById("invite").hidden = !ours;
}

async function groupCall(path, body, method) {
  try { await api(path, body, method); say(""); } catch (e) { say(e.message); }
  await refreshConversations();
  renderMessages();
}

async function makeGroup() {
  const name = document.getElementById("group-name").value.trim();
  const members = document.getElementById("group-members").value.split(",").map((s) => s.trim()).filter((s) => s);
  if (!name) { say("a group needs a name"); return; }
  try {
    const g = await api("/v1/groups", { name, members });
    document.getElementById("group-name").value = "";
    document.getElementById("group-members").value = "";
    say("");
    await refreshConversations();
    const c = groupConversation(g.groupID);
    if (c) await open(c.id);
  } catch (e) { say(e.message); }
}

async function takeGroupMessage(e) {
  let c = groupConversation(e.groupID);
  if (!c) { await refreshConversations(); c = groupConversation(e.groupID); }
  if (!c) return;
  upsert(c.id, { key: e.messageID, time: e.timestamp, who: e.nickname, text: e.text, hops: e.hops });
  list(c.id).sort((a, b) => a.time - b.time);
  countUnread(c.id);
  notify(`${e.nickname} in ${c.name}`, e.text);
  render();
}

// MARK: Requests (strangers over Nostr; docs/NOSTR.md, "Requests")

async function refreshRequests() {
  let waiting;
  try { waiting = await api("/v1/requests"); } catch (e) { return; }
  const ul = document.getElementById("requests");
  ul.replaceChildren();
  document.getElementById("requests-panel").hidden = !waiting.length;
  for (const r of waiting) {
    const short = r.npub.slice(0, 16) + "…";
    const name = el("input", { autocomplete: "off", spellcheck: "false", "aria-label": `A name for ${short}`, placeholder: "a name for them" });
    const li = el("li", { class: "request" },
      el("code", { text: short, title: r.npub }),
      el("ul", {}, ...r.messages.map((m) => el("li", { text: m.text }))),
      el("form", { class: "request-actions", on: { submit: (ev) => { ev.preventDefault(); answerRequest(r.npub, name.value.trim()); } } },
        name,
        el("button", { type: "submit", text: "Accept", "aria-label": `Accept ${short}` }),
        el("button", { type: "button", class: "danger", text: "Block", "aria-label": `Block ${short}`, on: { click: () => answerRequest(r.npub, null) } })));
    ul.append(li);
  }
}

async function answerRequest(npub, name) {
  if (name === "") { say("give them a name first (it is how they are shown here)"); return; }
  try {
    await api(`/v1/requests/${encodeURIComponent(npub)}/${name === null ? "block" : "accept"}`, name === null ? {} : { name });
    say("");
  } catch (e) { say(e.message); }
  await refreshRequests();
  await refreshConversations();
}

// MARK: Files

function renderFile(li, m) {
  const f = m.file;
  if (f.total) {
    const pct = Math.round(100 * f.received / f.total);
    li.append(el("progress", { max: String(f.total), value: String(f.received), "aria-label": `${m.own ? "sending" : "receiving"} ${f.name || "a file"}: ${pct}%` }));
  }
  if (f.words) li.append(el("span", { class: "state" + (f.failed ? " failed" : ""), role: "img", "aria-label": f.words, text: f.words }));
  if (f.offer && !f.answered) {
    li.append(el("button", { class: "accept", text: "accept", "aria-label": `Accept ${f.name}`, on: { click: () => answerOffer(m, true) } }));
    li.append(el("button", { class: "decline", text: "decline", "aria-label": `Decline ${f.name}`, on: { click: () => answerOffer(m, false) } }));
  }
  if (f.transferID && f.saved) {
    li.append(el("a", { class: "save", href: "#", text: "save", "aria-label": `Save ${f.name}`, on: { click: (ev) => { ev.preventDefault(); saveFile(f); } } }));
    if (f.voice !== undefined && f.audio) {
      li.append(el("audio", { class: "inline", controls: true, preload: "metadata", src: f.audio,
                              "aria-label": `voice note from ${m.who}, ${seconds(f.voice)}` }));
    } else if (f.image) {
      li.append(el("img", { class: "inline", src: f.image, alt: `picture ${f.name} from ${m.who}` }));
    } else if (!f.tried && (f.voice !== undefined || (f.size || 0) <= 16 << 20)) {
      loadMedia(m);
    }
  }
}

// A saved file's bytes, read once: a voice note becomes an <audio>, a picture an <img>
// (by their first bytes; the name and the sender's word are never trusted). A large file
// is only offered to save (never read whole here).
async function loadMedia(m) {
  const f = m.file;
  f.tried = true;
  try {
    const bytes = await fileBytes(f.transferID, f.conversation);
    if (f.voice !== undefined) {
      if (bytes[0] === 0xff && (bytes[1] & 0xf6) === 0xf0) f.audio = URL.createObjectURL(new Blob([bytes], { type: "audio/aac" }));
    } else {
      const type = pictureType(bytes);
      if (type) f.image = URL.createObjectURL(new Blob([bytes], { type }));
    }
  } catch (err) { return; /* shown without it; "save" says why */ }
  if (!f.audio && !f.image) return;
  const li = [...document.querySelectorAll("#messages > li")].find((x) => x.dataset.key === m.key);
  if (li) li.replaceWith(messageItem(m));
}

// What a picture's first bytes say it is (its name and the sender's word are never trusted).
function pictureType(bytes) {
  const b = bytes.subarray(0, 12);
  if (b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) return "image/png";
  if (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return "image/jpeg";
  if (b[0] === 0x47 && b[1] === 0x49 && b[2] === 0x46) return "image/gif";
  if (b[0] === 0x52 && b[1] === 0x49 && b[2] === 0x46 && b[3] === 0x46 && b[8] === 0x57 && b[9] === 0x45 && b[10] === 0x42 && b[11] === 0x50) return "image/webp";
  return null;
}

async function fileBytes(transferID, conversation) {
  // (After a restart the daemon finds a file through its conversation's history.)
  const where = conversation ? `?conversation=${encodeURIComponent(conversation)}` : "";
  const r = await fetch(`/v1/files/${encodeURIComponent(transferID)}` + where, { headers: { Authorization: "Bearer " + state.token } });
  if (!r.ok) throw new Refused(r.status, "the file could not be read (" + r.status + ")");
  return new Uint8Array(await r.arrayBuffer());
}

async function saveFile(f) {
  try {
    const bytes = await fileBytes(f.transferID, f.conversation);
    const url = URL.createObjectURL(new Blob([bytes], { type: "application/octet-stream" }));
    const a = el("a", { href: url, download: f.name || "file" });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) { say(e.message); }
}

// The conversation with a peer here (made when new).
async function conversationWithPeer(peerID) {
  for (const c of state.conversations.values()) if (c.fingerprint && c.fingerprint.startsWith(peerID)) return c.id;
  try {
    const c = await api("/v1/conversations", { peerID });
    state.conversations.set(c.id, Object.assign(state.conversations.get(c.id) || {}, c));
    return c.id;
  } catch (e) { return null; }
}

function currentPeer() {
  const c = state.conversations.get(state.current);
  if (!c || !c.fingerprint) return null;
  const id = c.fingerprint.slice(0, 16);
  return state.peers.find((p) => p.peerID === id) ? id : null;
}

async function sendFile(file) {
  const to = currentPeer();
  if (!to) { say("files go to someone here: open a conversation with a person listed under People here"); return; }
  // The file is the request's body: the browser streams it, any size (the daemon takes
  // up to 4 GiB); the daemon sends it over the mesh when it fits, else over the network.
  say(`sending ${file.name}…`);
  try {
    const r = await fetch(`/v1/files/upload?to=${encodeURIComponent(to)}&name=${encodeURIComponent(file.name)}`,
                          { method: "POST", headers: { Authorization: "Bearer " + state.token, "Content-Type": "application/octet-stream" }, body: file });
    const text = await r.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch (_) { json = null; }
    if (!r.ok) throw new Refused(r.status, (json && json.error && json.error.message) || ("the daemon answered " + r.status));
    upsert(state.current, { key: json.transferID, time: Date.now(), who: state.me.nickname, own: true, text: `file ${file.name} (${file.size} bytes)`,
                            file: { transferID: json.transferID, name: file.name, received: 0, total: 1, words: "queued" } });
    fileConversation.set(json.transferID, state.current);
    // Its events can come before the call's answer: taken now, in order.
    for (const e of earlyFileEvents.get(json.transferID) || []) applyFileEvent(e);
    earlyFileEvents.delete(json.transferID);
    renderMessages();
    say("");
  } catch (e) { say(e.message); }
}

// An offer of a large file over the network, answered here (docs/BULK.md).
async function answerOffer(m, accept) {
  try {
    await api(`/v1/files/offers/${encodeURIComponent(m.file.transferID)}`, { accept });
    Object.assign(m.file, { answered: true, words: accept ? "taking it" : "declined" });
  } catch (e) {
    Object.assign(m.file, { answered: true, words: e.message, failed: true });
  }
  renderMessages();
}

const fileConversation = new Map(); // transfer ID -> conversation, for its receipts
const earlyFileEvents = new Map();  // transfer ID -> events that came before the send call's answer (64 at most)
let fileQueue = Promise.resolve();  // file events, taken one at a time in the order they came

// Our file's progress: out to the links, delivered, failed.
function applyFileEvent(e) {
  const id = e.transferID || e.messageID;
  const m = fileEntry(id);
  if (!m) {
    if (e.event === "fileSent" || e.event === "fileSending" || earlyFileEvents.has(id)) {
      if (!earlyFileEvents.has(id) && earlyFileEvents.size >= 64) earlyFileEvents.delete(earlyFileEvents.keys().next().value);
      earlyFileEvents.set(id, (earlyFileEvents.get(id) || []).concat([e]));
    } else if (e.event === "delivered" || e.event === "failed") {
      // (A message's receipt, or a file's that came before its fileSent: kept a moment.)
      if (earlyFileEvents.size < 64) earlyFileEvents.set(id, [e]);
    }
    return;
  }
  if (e.event === "fileSent" && e.total === 0 && m.file.words !== "delivered") {
    Object.assign(m.file, { received: 0, total: 1, words: "offered over the network" });
  } else if (e.event === "fileSending" && m.file.words !== "delivered") {
    Object.assign(m.file, { received: e.sent, total: e.total, words: `${Math.round(100 * e.sent / Math.max(1, e.total))}% on their disk` });
  } else if (e.event === "fileSent" && m.file.words !== "delivered") {
    Object.assign(m.file, { received: e.total, total: e.total, words: `sent in ${e.total} fragment${e.total === 1 ? "" : "s"}, waiting for the receipt` });
  } else if (e.event === "delivered") {
    Object.assign(m.file, { received: m.file.total, words: "delivered" });
  } else if (e.event === "failed") {
    Object.assign(m.file, { words: "not delivered", failed: true });
  }
}

function fileEntry(transferID) {
  const c = fileConversation.get(transferID);
  return c ? list(c).find((m) => m.key === transferID) : null;
}

async function takeFile(e) {
  switch (e.event) {
    case "fileSent":
    case "fileSending":
    case "delivered":
    case "failed":
      applyFileEvent(e);
      break;
    case "fileOffered": {
      const c = await conversationWithPeer(e.from);
      if (!c) break;
      upsert(c, { key: "offer-" + e.transferID, time: Date.now(), who: peerName(e.from),
                  text: `offers ${e.name} (${e.size} bytes) over the network`, file: { transferID: e.transferID, name: e.name, offer: true } });
      countUnread(c);
      break;
    }
    case "fileProgress": {
      const c = await conversationWithPeer(e.from);
      if (!c) break;
      upsert(c, { key: "incoming-" + e.from, time: Date.now(), who: peerName(e.from), text: "a file is arriving",
                  file: { received: e.received, total: e.total } });
      break;
    }
    case "fileReceived": {
      const c = await conversationWithPeer(e.from);
      if (!c) break;
      const l = list(c), i = l.findIndex((m) => m.key === "incoming-" + e.from);
      if (i >= 0) l.splice(i, 1);
      const entry = { key: e.transferID, time: Date.now(), who: peerName(e.from), text: `file ${e.name} (${e.size} bytes)`,
                      file: { transferID: e.transferID, name: e.name, size: e.size, conversation: c, saved: true } };
      upsert(c, entry);
      countUnread(c);
      break;
    }
    case "voice": {
      // A private voice note is in the sender's conversation (and its history); a public one on #mesh.
      const c = e.private ? await conversationWithPeer(e.from) : MESH;
      if (!c) break;
      const entry = { key: e.transferID, time: Date.now(), who: peerName(e.from), text: `voice note (${seconds(e.durationMillis)})`,
                      file: { transferID: e.transferID, name: e.transferID + ".aac", size: e.size, conversation: e.private ? c : undefined,
                              saved: true, voice: e.durationMillis } };
      upsert(c, entry);
      countUnread(c);
      if (e.private) notify(`${peerName(e.from)} (private)`, `a voice note, ${seconds(e.durationMillis)}`);
      break;
    }
  }
  render();
}

function peerName(peerID) {
  const p = state.peers.find((p) => p.peerID === peerID);
  return p ? p.nickname : peerID;
}

function render() {
  renderConversations();
  renderPeople();
  renderMessages();
}

// MARK: Doing

function showMenu(on) {
  document.body.classList.toggle("menu-open", on);
  document.getElementById("menu").setAttribute("aria-expanded", on ? "true" : "false");
}

async function open(id) {
  if (state.found && state.found.conversation !== id) { state.found = null; document.getElementById("search-text").value = ""; }
  state.current = id;
  showMenu(false);
  let toEnd = false;
  if (id !== MESH && !id.startsWith("#")) {
    try {
      const history = await api(`/v1/conversations/${id}/messages?limit=${FIRST_PAGE}`);
      const was = views.get(id);
      if (was && was.newer) {
        // Back from far back: the window is the newest page again (and what is not stored).
        state.messages.set(id, list(id).filter((e) => !e.id));
        toEnd = true;
      }
      views.set(id, { oldest: undefined, older: history.length === FIRST_PAGE, newer: false, loading: false });
      for (const m of history) upsert(id, fromRecord(m));
      list(id).sort((a, b) => a.time - b.time);
      views.get(id).oldest = oldestPosition(list(id));
    } catch (e) { say(e.message); }
  }
  render();
  if (toEnd) { const ol = document.getElementById("messages"); ol.scrollTop = ol.scrollHeight; }
  document.getElementById("message").focus();
}

// Scrolled to the top: the page before the oldest line held, the reader's place kept.
async function loadOlder() {
  const id = state.current, v = views.get(id);
  if (!v || !v.older || v.loading || v.oldest === undefined) return;
  v.loading = true;
  try {
    const page = await api(`/v1/conversations/${id}/messages?limit=${PAGE}&before=${v.oldest}`);
    if (state.current !== id) return;
    v.older = page.length === PAGE;
    if (!page.length) return;
    const l = list(id), held = new Set(l.map((e) => e.key));
    for (const m of page) { const r = fromRecord(m); if (!held.has(r.key)) l.push(r); }
    l.sort((a, b) => a.time - b.time);
    if (l.length > KEPT_PER_CONVERSATION) { l.splice(KEPT_PER_CONVERSATION); v.newer = true; }
    v.oldest = oldestPosition(l);
    // The line at the top of the window stays where it is (the lines let go at the end
    // change the height below it, so the distance from the end would not hold).
    const ol = document.getElementById("messages"), top = ol.getBoundingClientRect().top;
    const anchor = [...ol.children].find((li) => li.getBoundingClientRect().bottom > top + 1);
    const key = anchor ? anchor.dataset.key : null, offset = anchor ? anchor.getBoundingClientRect().top - top : 0;
    renderMessages();
    const again = key ? ol.querySelector(`li[data-key="${CSS.escape(key)}"]`) : null;
    if (again) ol.scrollTop += again.getBoundingClientRect().top - ol.getBoundingClientRect().top - offset;
  } catch (e) { say(e.message); } finally { v.loading = false; }
}

function scrolled() {
  const ol = document.getElementById("messages"), v = views.get(state.current);
  if (!v || state.found) return;
  if (ol.scrollTop < 80) loadOlder();
  else if (v.newer && !v.loading && ol.scrollHeight - ol.scrollTop - ol.clientHeight < 40) open(state.current);
}

async function message(peer) {
  try {
    const c = await api("/v1/conversations", { peerID: peer.peerID });
    state.conversations.set(c.id, Object.assign(state.conversations.get(c.id) || {}, c));
    await open(c.id);
  } catch (e) { say(e.message); }
}

// The person sees the open conversation: read through the newest message shown.
let seenThrough = new Map();
function hiddenTab() { return document.visibilityState !== "visible"; }

// A message that came: unread unless its conversation is open in a tab that shows
// (one that came in the background counts in the tab's title until the person looks).
function countUnread(key) {
  if (state.current === key && !hiddenTab()) return;
  const c = state.conversations.get(key);
  if (c) c.unread = (c.unread || 0) + 1;
}

async function seen() {
  if (hiddenTab()) return;
  if (state.current === MESH || state.current.startsWith("#")) {
    // (A channel keeps no receipts: looked at is seen.)
    const c = state.conversations.get(state.current);
    if (c && c.unread) { c.unread = 0; renderConversations(); }
    return;
  }
  // (A group's lines and a file that came live name no record: seen through the newest, all of it.)
  const incoming = list(state.current).filter((m) => !m.own && (m.id || m.file || isGroup(state.current)));
  const last = incoming[incoming.length - 1];
  if (!last || seenThrough.get(state.current) === last.key) return;
  seenThrough.set(state.current, last.key);
  const c = state.conversations.get(state.current);
  if (c && c.unread) { c.unread = 0; renderConversations(); }
  try { await api(`/v1/conversations/${state.current}/seen`, last.id ? { through: last.id } : {}); } catch (e) { say(e.message); }
}

async function send(text) {
  if (!text.trim()) return;
  try {
    // Written while scrolled far back: the newest page first, so that it shows where it goes.
    if (views.get(state.current)?.newer) await open(state.current);
    const conversation = state.conversations.get(state.current);
    if (conversation && conversation.channel) {
      await api(`/v1/channels/${encodeURIComponent(conversation.channel)}/messages`, { text });
      upsert(state.current, { key: "own-" + Date.now() + Math.random(), time: Date.now(), who: state.me.nickname, text, own: true });
      renderMessages();
    } else if (conversation && conversation.group) {
      const m = await api(`/v1/groups/${conversation.group.groupID}/messages`, { text });
      upsert(state.current, fromRecord(m));
      renderMessages();
    } else if (state.current === MESH) {
      await api("/v1/public", { text });
      upsert(MESH, { key: "own-" + Date.now() + Math.random(), time: Date.now(), who: state.me.nickname, text, own: true });
      renderMessages();
    } else {
      const m = await api("/v1/messages", { to: state.current, text });
      upsert(state.current, fromRecord(m));
      renderMessages();
    }
    say("");
  } catch (e) { say(e.message); }
}

// MARK: Events

function take(e) {
  switch (e.event) {
    case "message": {
      const key = `${e.from}-${e.timestamp}`, l = list(MESH), isNew = !l.some((m) => m.key === key);
      const entry = { key, time: e.timestamp, who: e.nickname || e.from, text: e.text, hops: e.hops };
      upsert(MESH, entry);
      if (state.current === MESH) { if (isNew) appendMessage(entry); else renderMessages(); }
      break;
    }
    case "privateMessage": {
      if (!e.conversation) break;
      if (!state.conversations.has(e.conversation)) state.conversations.set(e.conversation, { id: e.conversation, name: e.nickname, unread: 0 });
      const c = state.conversations.get(e.conversation), l = list(e.conversation), entry = fromRecord(e.message, e.nickname);
      const last = l[l.length - 1], fresh = !l.some((x) => x.key === entry.key);
      upsert(e.conversation, entry);
      countUnread(e.conversation);
      notify(`${e.nickname} (private)`, e.text);
      if (state.current === e.conversation && fresh && l[l.length - 1] === entry && (!last || last.time <= entry.time)) {
        // A new line at the end of the conversation in view: added alone (the window may hold 1,000).
        appendMessage(entry);
        renderConversations();
        seen();
      } else render();
      break;
    }
    case "groupMessage":
      takeGroupMessage(e);
      break;
    case "request":
      notify(`A message from ${e.npub.slice(0, 16)}… (not a contact)`, e.text);
      refreshRequests();
      break;
    case "group":
      // Joined, left, a member in or out: the list and the roster follow.
      refreshConversations().then(() => { if (!state.conversations.has(state.current)) open(MESH); else renderMessages(); });
      break;
    case "sent":
    case "progress": {
      if (!state.conversations.has(e.conversation)) refreshConversations();
      const r = fromRecord(e.message);
      // A file's live line keeps its bar and buttons: its record moves only its state.
      if (e.message.file && list(e.conversation).some((x) => x.key === r.key)) delete r.file;
      upsert(e.conversation, r);
      if (state.current === e.conversation) renderMessages();
      break;
    }
    case "peer":
      // (A rename comes as a peer event: the conversations' names follow.)
      refreshPeople().then(refreshMesh).then(refreshConversations);
      break;
    case "left":
      refreshPeople().then(refreshMesh);
      break;
    case "trust":
      refreshPeople();
      refreshContacts();
      break;
    case "sos":
      notify("🆘 SOS from " + e.name, "someone near you needs help");
      refreshStately();
      break;
    case "state":
    case "stateExpired":
      refreshStately();
      break;
    case "channelMessage": {
      const key = channelKey(e.geohash);
      if (!state.conversations.has(key)) state.conversations.set(key, { id: key, name: key, unread: 0, channel: e.geohash });
      upsert(key, { key: e.eventID || `${e.publicKey}-${e.createdAt}`, time: e.createdAt * 1000,
                    who: (e.nickname || "anon") + "#" + e.publicKey.slice(0, 4), text: e.text });
      const c = state.conversations.get(key);
      countUnread(key);
      render();
      break;
    }
    case "bridgedMessage": {
      // A public message from another mesh, through the bridges: its author is a Nostr key, the name only a claim.
      const key = "bridge-" + e.eventID, isNew = !list(MESH).some((m) => m.key === key);
      const entry = { key, time: e.createdAt * 1000, who: `${e.nickname || "anon"}? ${e.pubkey.slice(0, 8)}`, text: e.text, note: "across a bridge" };
      upsert(MESH, entry);
      if (state.current === MESH) { if (isNew) appendMessage(entry); else renderMessages(); }
      break;
    }
    case "gatewayMessage": {
      // A location channel's message a gateway on the mesh carried down.
      const key = channelKey(e.geohash);
      if (!state.conversations.has(key)) state.conversations.set(key, { id: key, name: key, unread: 0, channel: e.geohash });
      upsert(key, { key: e.eventID, time: e.createdAt * 1000, who: (e.nickname || "anon") + "#" + e.pubkey.slice(0, 4), text: e.text,
                    note: "via a gateway" });
      const c = state.conversations.get(key);
      countUnread(key);
      render();
      break;
    }
    case "favorited":
    case "recognized":
    case "vouched": {
      // What others said about us or vouched for, as the terminal says it: a line on #mesh.
      const text = e.event === "favorited" ? `${e.nickname} ${e.on ? "made you a favourite" : "is no longer a favourite of yours"}`
        + (e.overNostr ? " (over Nostr)" : "") : e.text;
      if (!text) break;
      const entry = { key: `${e.event}-${e.from || e.fingerprint || e.peerID}-${Date.now()}`, time: Date.now(), who: "*", text };
      upsert(MESH, entry);
      if (state.current === MESH) appendMessage(entry);
      refreshPeople();
      break;
    }
    case "board":
      if (e.urgent) notify("Urgent notice from " + e.shownName, e.text);
      refreshNotices();
      break;
    case "boardDeleted":
      refreshNotices();
      break;
    case "channelFailed":
      say("a channel message was not sent: " + e.reason);
      break;
    case "fileSent":
    case "fileSending":
    case "fileOffered":
    case "delivered":
    case "failed":
    case "fileProgress":
    case "fileReceived":
    case "voice":
      fileQueue = fileQueue.then(() => takeFile(e)).catch((err) => console.warn(err));
      break;
    case "gap":
      say(`${e.missed} events were missed while this page was away`);
      break;
    case "warning":
    case "notSaved":
    case "notice":
      say(e.text);
      break;
    case "rejected":
      if (!e.diagnostic) say(e.reason); // a transport down, a refused file: a person should know; internals are not shown
      break;
    case "store":
      // Closed by any face or by the messenger's auto-lock: the page asks for the PIN at once.
      if (!e.open) {
        say(`${e.reason || "locked"}: enter the PIN or passphrase to open the store`);
        refreshMe().then(() => document.getElementById("secret").focus());
      } else {
        refreshMe();
      }
      break;
  }
}

// The contract's events this page does not show (yet, or on purpose): docs/openapi.json
// lists every kind, and a test holds that each is rendered in take() or named here.
const NOT_SHOWN = new Set([
  "capabilities", "pinned", "started", "linkUp", "linkDown", "session", "pong", // the node's internals
  "read", "sentOffMesh", "held", "dropDeposited", "sendingWaiting", // said by the message's own progress event
  "channelPresence", // who is in a location channel: not shown (its messages are)
]);

async function follow() {
  for (let attempt = 0; ; attempt++) {
    try {
      const r = await fetch(`/v1/events?since=${state.lastSeq}`, { headers: { Authorization: "Bearer " + state.token } });
      if (!r.ok) throw new Refused(r.status, "the event stream was refused (" + r.status + ")");
      attempt = 0;
      document.getElementById("me").dataset.following = "yes";
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      let pending = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        pending += decoder.decode(value, { stream: true });
        let end;
        while ((end = pending.indexOf("\n\n")) >= 0) {
          const block = pending.slice(0, end);
          pending = pending.slice(end + 2);
          for (const line of block.split("\n")) {
            if (line.startsWith("id: ")) state.lastSeq = Number(line.slice(4)) || state.lastSeq;
            if (line.startsWith("data: ")) {
              try { take(JSON.parse(line.slice(6))); } catch (err) { console.warn(err); }
            }
          }
        }
      }
    } catch (e) {
      if (e instanceof Refused && e.status === 401) { say("This page needs the link `starling web` printed (its token is missing or wrong)."); return; }
    }
    document.getElementById("me").dataset.following = "no";
    say("the daemon is not answering: trying again…");
    await new Promise((ok) => setTimeout(ok, Math.min(5000, 500 * (attempt + 1))));
    if (await refreshMe()) { say(""); await resync(); }
  }
}

// Back after the daemon was away (restarted, or the machine slept): what it holds now, not
// what the page remembered (a restarted node knows nobody until they announce again).
async function resync() {
  await Promise.all([refreshPeople(), refreshConversations(), refreshChannels(), refreshMesh(), refreshStately(), refreshNotices(),
                     refreshContacts(), refreshRequests()]);
  if (state.current !== MESH && state.conversations.has(state.current)) await open(state.current);
  else render();
}

// MARK: Loading

async function refreshMe() {
  try {
    state.me = await api("/v1/status");
    document.getElementById("me").textContent =
      `you are ${state.me.nickname} (${state.me.peerID}) · ${state.me.peers} here` + (state.me.storeOpen ? "" : " · store locked");
    document.getElementById("unlock").hidden = state.me.storeOpen;
    document.getElementById("transports").textContent =
      `Running now: Ya OK server ${state.me.server ? "on" : "none"}, Nostr ${state.me.nostr ? "on" : "off"}.`;
    return true;
  } catch (e) {
    // The header says it too (it stayed on "connecting…").
    if (e instanceof Refused && e.status === 401) {
      document.getElementById("me").textContent = "not connected: the link's token is missing or wrong";
      say("This page needs the link `starling web` printed (its token is missing or wrong).");
    } else {
      document.getElementById("me").textContent = "not connected: the daemon is not answering";
    }
    return false;
  }
}

// The node's settings: shown as saved (else as in effect); whether they wait for a restart.
async function refreshSettings() {
  try { showSettings(await api("/v1/settings")); } catch (e) { /* said by refreshMe */ }
}

function showSettings(s) {
  const shown = s.saved || s.inEffect;
  document.getElementById("server-address").value = shown.server || "";
  document.getElementById("nostr-on").checked = shown.nostr;
  document.getElementById("proxy-address").value = shown.proxy;
  const fixed = s.setOnCommandLine.length
    ? ` The daemon's command line sets ${s.setOnCommandLine.join(", ")}: that wins over what is saved here.` : "";
  document.getElementById("node-settings-note").textContent = (s.restartNeeded
    ? "Saved. The daemon uses them from its next start: stop it (Ctrl-C where it runs) and start it again."
    : "These are the settings the daemon runs with.") + fixed;
}

async function refreshPeople() {
  try { state.peers = await api("/v1/peers"); } catch (e) { return; }
  renderPeople();
  refreshMe();
}

async function refreshConversations() {
  let fresh;
  try { fresh = await api("/v1/conversations"); } catch (e) { return; }
  for (const c of fresh) state.conversations.set(c.id, Object.assign(state.conversations.get(c.id) || {}, c));
  // One person, one conversation: a peer's conversation merged into their contact's (same key) goes,
  // and the page follows it there (its history came along).
  const ids = new Set(fresh.map((c) => c.id));
  for (const [id, c] of [...state.conversations]) {
    // A group we left (or were removed from) goes from the list.
    if (c.kind === "group" && !ids.has(id)) {
      state.conversations.delete(id);
      if (state.current === id) await open(MESH);
      continue;
    }
    if (ids.has(id) || id === MESH || id.startsWith("#") || !c.fingerprint) continue;
    const into = fresh.find((n) => n.fingerprint === c.fingerprint);
    if (!into) continue;
    state.conversations.delete(id);
    state.messages.delete(id);
    if (state.current === id) await open(into.id);
  }
  renderConversations();
}

async function start() {
  for (const kind of ["keydown", "pointerdown"]) document.addEventListener(kind, noteActivity, { passive: true });
  document.getElementById("alert-close").addEventListener("click", () => say(""));
  document.getElementById("menu").addEventListener("click", () => showMenu(!document.body.classList.contains("menu-open")));
  // Keys (issue 56): Alt-1 … Alt-9 open the sidebar's conversations in their order (Alt-1 is
  // #mesh, as window 1 is in the terminal); Esc folds the menu away, then dismisses the error.
  document.addEventListener("keydown", (ev) => {
    const digit = /^Digit([1-9])$/.exec(ev.code);
    if (digit && ev.altKey && !ev.ctrlKey && !ev.metaKey && !ev.shiftKey) {
      const b = document.querySelectorAll("#conversations button")[Number(digit[1]) - 1];
      if (b) { ev.preventDefault(); b.click(); }
    } else if ((ev.ctrlKey || ev.metaKey) && !ev.altKey && ev.key.toLowerCase() === "k") {
      ev.preventDefault();
      openSwitcher();
    } else if (ev.key === "Escape" && !document.getElementById("switcher").open) {
      if (state.found) closeSearch();
      else if (document.body.classList.contains("menu-open")) { showMenu(false); document.getElementById("menu").focus(); }
      else if (!document.getElementById("alert").hidden) say("");
    }
  });
  state.token = readToken();
  if (!state.token) {
    document.getElementById("me").textContent = "not connected: the link carries no token";
    say("This page needs the link `starling web` printed (it carries the token).");
    return;
  }
  if (!(await refreshMe())) return;
  state.lastSeq = state.me.events;
  await Promise.all([refreshPeople(), refreshConversations(), refreshChannels()]);
  const composer = document.getElementById("composer"), box = document.getElementById("message");
  composer.addEventListener("submit", (ev) => { ev.preventDefault(); const t = box.value; box.value = ""; send(t); });
  box.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); composer.requestSubmit(); }
  });
  document.addEventListener("visibilitychange", seen);
  document.getElementById("messages").addEventListener("scroll", scrolled, { passive: true });
  document.getElementById("state-form").addEventListener("submit", (ev) => { ev.preventDefault(); setState(document.getElementById("state").value); });
  document.getElementById("sos").addEventListener("click", () => setState(document.getElementById("sos").textContent.startsWith("Clear") ? "clear" : "sos"));
  document.getElementById("add-contact").addEventListener("submit", (ev) => { ev.preventDefault(); addContact(); });
  document.getElementById("notice-form").addEventListener("submit", (ev) => { ev.preventDefault(); postNotice(); });
  document.getElementById("new-group").addEventListener("submit", (ev) => { ev.preventDefault(); makeGroup(); });
  document.getElementById("invite").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const c = state.conversations.get(state.current), who = document.getElementById("invite-name").value.trim();
    if (!c || !c.group || !who) return;
    document.getElementById("invite-name").value = "";
    groupCall(`/v1/groups/${c.group.groupID}/members`, { nickname: who });
  });
  document.getElementById("leave-group").addEventListener("click", () => {
    const c = state.conversations.get(state.current);
    if (c && c.group && confirm(`Leave ${c.group.name}? Its messages stop coming here.`)) groupCall(`/v1/groups/${c.group.groupID}`, undefined, "DELETE");
  });
  document.getElementById("unlock").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const box = document.getElementById("secret");
    const secret = box.value;
    box.value = "";
    unlock(secret);
  });
  document.getElementById("search").addEventListener("submit", (ev) => { ev.preventDefault(); search(document.getElementById("search-text").value.trim()); });
  document.getElementById("found-close").addEventListener("click", closeSearch);
  document.getElementById("leave-channel").addEventListener("click", leaveChannel);
  const switcherBox = document.getElementById("switcher-text");
  switcherBox.addEventListener("input", () => { switcherChoice = 0; switcherList(); });
  switcherBox.addEventListener("keydown", (ev) => {
    const found = switcherMatches();
    if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
      ev.preventDefault();
      switcherChoice = (switcherChoice + (ev.key === "ArrowDown" ? 1 : found.length - 1)) % Math.max(1, found.length);
      switcherList();
    } else if (ev.key === "Enter") {
      ev.preventDefault();
      if (found[switcherChoice]) switchTo(found[switcherChoice][0]);
    }
  });
  const sound = document.getElementById("sound-on");
  sound.checked = localStorage.getItem("starling-sound") === "on";
  sound.addEventListener("change", () => { localStorage.setItem("starling-sound", sound.checked ? "on" : "off"); if (sound.checked) chime(); });
  document.getElementById("file").addEventListener("change", (ev) => { const f = ev.target.files[0]; ev.target.value = ""; if (f) sendFile(f); });
  const drop = document.getElementById("conversation");
  drop.addEventListener("dragover", (ev) => { ev.preventDefault(); drop.classList.add("dropping"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("dropping"));
  drop.addEventListener("drop", (ev) => {
    ev.preventDefault();
    drop.classList.remove("dropping");
    for (const f of ev.dataTransfer.files) sendFile(f);
  });
  document.getElementById("join").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const g = document.getElementById("geohash").value.trim().replace(/^#/, "");
    if (g) join(g);
  });
  document.getElementById("rename").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const name = document.getElementById("nickname").value.trim();
    if (!name) return;
    try { await api("/v1/nickname", { nickname: name }); say(""); } catch (e) { say(e.message); }
    await refreshMe();
  });
  document.getElementById("nickname").value = state.me.nickname;
  document.getElementById("node-settings").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const change = {
      server: document.getElementById("server-address").value.trim(),
      nostr: document.getElementById("nostr-on").checked,
      proxy: document.getElementById("proxy-address").value.trim(),
    };
    try { showSettings(await api("/v1/settings", change, "PUT")); } catch (e) {
      document.getElementById("node-settings-note").textContent = e.message;
    }
  });
  refreshSettings();
  document.getElementById("notify").addEventListener("click", async () => {
    if (!("Notification" in window)) { document.getElementById("settings-note").textContent = "this browser has no desktop notifications"; return; }
    const answer = await Notification.requestPermission();
    document.getElementById("settings-note").textContent = answer === "granted"
      ? "private messages and SOS are notified while this tab is in the background" : "notifications are off (the browser's setting)";
  });
  render();
  refreshMesh();
  refreshStately();
  refreshNotices();
  refreshContacts();
  refreshRequests();
  showCard();
  follow();
  // States age out without an event of their own for each: the board is read again every 10 s.
  setInterval(() => { refreshStately(); refreshMesh(); }, 10000);
  // Notices expire without an event: read again every minute.
  setInterval(refreshNotices, 60000);
}

start();
