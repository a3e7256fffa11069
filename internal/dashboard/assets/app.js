// peerctl dashboard. Every text from the server is put in the page with
// textContent (through el): never as HTML.
//
// Each section is drawn into a fresh tree and then merged into the page
// (morph): nodes that did not change stay as they are, so a focused
// button, a text selection and a scroll position survive an update; a
// section whose data did not change is not drawn at all. Controls carry
// data-focus, a stable key (such as "cancel 7"), so that focus returns to
// the same control when its node had to be replaced.
"use strict";

// The server sends the whole data once ("state"), then what changed
// ("delta"): the page keeps it in model, by key, and draws from state,
// the same data as sorted lists.
let model = null;
let state = null;
// selected is the session whose messages the Messages section shows (a
// click on its name), or null.
let selected = null;
const drawn = {};
// view is the page of the outbox shown: a state ("" any) and where it
// starts (before a message id; 0 the newest); newer are the pages seen
// before it, for "newer".
const view = { state: "", before: 0 };
let newer = [];
// confirming holds the outcome_unknown messages whose retry waits for the
// user's confirmation.
const confirming = new Set();

function el(tag, cls, ...kids) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  for (const k of kids) {
    if (k === null || k === undefined || k === false) continue;
    e.append(typeof k === "string" || typeof k === "number" ? document.createTextNode(String(k)) : k);
  }
  return e;
}

function badge(word) {
  return el("span", "badge s-" + String(word).replace(/[^a-z_]/g, ""), word);
}

function $(id) { return document.getElementById(id); }

function age(iso) {
  if (!iso) return "–";
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return Math.floor(s) + "s";
  if (s < 3600) return Math.floor(s / 60) + "m";
  if (s < 86400) return Math.floor(s / 3600) + "h";
  return Math.floor(s / 86400) + "d";
}

// when is a time as the CLI prints it for people: UTC, RFC 3339 to the
// second ("2026-03-01T10:00:00Z"), one form whatever the browser's zone.
function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (isNaN(d)) return iso;
  return d.toISOString().slice(0, 19) + "Z";
}

// seen is how long ago a time was: "just now" for the last 10 s (so a
// machine listed every second does not change its row every second).
function seen(iso) {
  if (!iso) return "never";
  if (Date.now() - Date.parse(iso) < 10000) return "just now";
  return age(iso) + " ago (" + when(iso) + ")";
}

// ---- merging a fresh tree into the page ----

function keyOf(n) { return n.nodeType === 1 ? n.getAttribute("data-key") : null; }

// morph makes old look like nu and returns the node to keep: old itself
// (changed in place) when it is of the same kind, else nu.
function morph(old, nu) {
  if (old.nodeType !== nu.nodeType || old.nodeName !== nu.nodeName || keyOf(old) !== keyOf(nu)) return nu;
  if (old.isEqualNode(nu) || old.nodeName === "DETAILS" && sameBut(old, nu, "open")) return old;
  if (old.nodeType === 3) {
    old.data = nu.data;
    return old;
  }
  if (old.nodeType !== 1) return nu;
  // A <details> the user opened or closed stays so: its "open" is theirs.
  const own = a => a.name === "open" && old.nodeName === "DETAILS";
  for (const a of Array.from(old.attributes)) if (!own(a) && !nu.hasAttribute(a.name)) old.removeAttribute(a.name);
  for (const a of Array.from(nu.attributes)) if (!own(a) && old.getAttribute(a.name) !== a.value) old.setAttribute(a.name, a.value);
  morphChildren(old, nu);
  return old;
}

// sameBut says whether elements a and b are equal but for attribute name.
function sameBut(a, b, name) {
  const x = a.cloneNode(true), y = b.cloneNode(true);
  x.removeAttribute(name);
  y.removeAttribute(name);
  return x.isEqualNode(y);
}

// morphChildren makes old's children nu's: keyed ones matched by key, the
// others by position; nodes are moved only when their order changed.
function morphChildren(old, nu) {
  const olds = Array.from(old.childNodes);
  const keyed = new Map();
  for (const o of olds) { const k = keyOf(o); if (k !== null) keyed.set(k, o); }
  const used = new Set();
  let pos = 0;
  const keep = [];
  for (const n of Array.from(nu.childNodes)) {
    const k = keyOf(n);
    let o = null;
    if (k !== null) o = keyed.get(k) || null;
    else {
      while (pos < olds.length && (keyOf(olds[pos]) !== null || used.has(olds[pos]))) pos++;
      if (pos < olds.length) o = olds[pos++];
    }
    if (o && used.has(o)) o = null;
    const got = o ? morph(o, n) : n;
    if (got === o) used.add(o);
    keep.push(got);
  }
  for (const o of olds) if (!used.has(o)) o.remove();
  let cur = old.firstChild;
  for (const k of keep) {
    if (k === cur) { cur = cur.nextSibling; continue; }
    old.insertBefore(k, cur);
  }
}

// update merges the fresh children of nu into box, keeping focus on the
// control of the same data-focus key.
function update(box, nu) {
  const active = document.activeElement;
  const fk = active && active !== document.body && box.contains(active) ? active.getAttribute("data-focus") : null;
  morphChildren(box, nu);
  if (fk !== null && (document.activeElement !== active || !document.contains(active))) {
    const again = box.querySelector('[data-focus="' + CSS.escape(fk) + '"]');
    if (again) again.focus({ preventScroll: true });
  }
}

// changed says whether a section's inputs differ from the last drawing.
function changed(name, ...inputs) {
  const sig = JSON.stringify(inputs);
  if (drawn[name] === sig) return false;
  drawn[name] = sig;
  return true;
}

// ---- sessions ----

function sessionKey(s) { return s.host + " " + s.sessionId; }

function hostLine(hv) {
  if (!hv) return null;
  if (hv.pending) return el("span", "muted", " ", badge("listing"), hv.listingSince ? " since " + when(hv.listingSince) : "");
  if (hv.stale) {
    const why = hv.error ? "its latest listing failed" : "its listing is late (running since " + when(hv.listingSince) + ")";
    return el("span", "muted", " ", badge("stale"), " last seen " + seen(hv.seenAt) + "; " + why);
  }
  if (!hv.reachable) return el("span", null, " ", badge("unreachable"));
  return null;
}

function renderSessions(force) {
  const all = $("show-all").checked;
  const f = $("session-filter").value.trim().toLowerCase();
  const fh = $("session-host").value;
  if (!changed("sessions", state.sessions, state.hosts, all, f, fh, selected && sessionKey(selected)) && !force) return;
  const groups = new Map();
  for (const h of state.hosts) if (!fh || h.host === fh) groups.set(h.host, []);
  let live = 0;
  for (const s of state.sessions) {
    if (s.live) live++;
    if (!all && !s.live) continue;
    if (fh && s.host !== fh) continue;
    if (f && ![s.name, s.sessionId, s.cwd, s.harness, s.status, s.host].some(v => (v || "").toLowerCase().includes(f))) continue;
    if (!groups.has(s.host)) groups.set(s.host, []);
    groups.get(s.host).push(s);
  }
  $("session-count").textContent = live + " live" + (all ? ", " + state.sessions.length + " records" : "");
  const frag = el("div");
  for (const [host, rows] of groups) {
    const hv = state.hosts.find(h => h.host === host);
    const g = el("div", "group");
    g.dataset.key = "host " + host;
    g.append(el("h3", null, host === "." ? "this machine (.)" : host, " ", el("span", "count", rows.length + (all ? " records" : " live")), hostLine(hv)));
    if (hv && hv.error) g.append(el("p", "error", hv.error));
    if (rows.length === 0) { g.append(el("p", "muted", hv && hv.pending ? "listing…" : "no sessions")); frag.append(g); continue; }
    const cols = ["name", "harness", "session", "pid", "status", "age", "cwd", all ? "verdict / reason" : "note"];
    const thead = el("thead", null, el("tr", null, ...cols.map((c, i) => el("th", i === 3 || i === 5 ? "hide-narrow" : null, c))));
    const tbody = el("tbody");
    for (const s of rows) {
      const note = all
        ? el("td", null, badge(s.verdict), s.reason ? " " + s.reason : "", !s.addressable && s.live && s.unaddressable ? el("div", "why", s.unaddressable) : null)
        : el("td", "why", s.addressable ? "" : (s.unaddressable || "not addressable"));
      const pick = el("button", "link pick", s.name || "–");
      pick.type = "button";
      pick.dataset.focus = "session " + sessionKey(s);
      pick.dataset.pick = sessionKey(s);
      pick.setAttribute("aria-label", "show the messages of " + (s.name || s.shortId));
      const tr = el("tr", [s.live ? null : "dead", s.stale ? "stale" : null, selected && sessionKey(selected) === sessionKey(s) ? "picked" : null].filter(Boolean).join(" ") || null,
        el("td", null, pick),
        el("td", null, s.harness),
        el("td", "mono", s.shortId || "–"),
        el("td", "mono hide-narrow", s.pid),
        el("td", null, s.live ? badge(s.status) : "–", s.live && s.waitingFor ? el("div", "muted", s.waitingFor) : null),
        el("td", "hide-narrow", age(s.startedAt)),
        el("td", "mono cwd", s.cwd),
        note);
      tr.dataset.session = s.sessionId;
      tr.dataset.key = s.key;
      tbody.append(tr);
    }
    g.append(el("div", "scroll", el("table", "sessions", thead, tbody)));
    frag.append(g);
  }
  update($("session-groups"), frag);
}

function renderHostChoices() {
  const sel = $("session-host");
  const hosts = state.hosts.map(h => h.host);
  if (!changed("host-choices", hosts)) return;
  const was = sel.value;
  const frag = el("select", null, el("option", null, "every host"));
  frag.firstChild.value = "";
  for (const h of hosts) {
    const o = el("option", null, h === "." ? "this machine (.)" : h);
    o.value = h;
    frag.append(o);
  }
  sel.replaceChildren(...frag.childNodes);
  sel.value = hosts.includes(was) ? was : "";
}

// pick shows the messages of the session of key, or every message when it
// is the one shown already.
function pick(key) {
  const s = state.sessions.find(s => sessionKey(s) === key);
  if (!s || (selected && sessionKey(selected) === key)) {
    selected = null;
    $("msg-session").value = "";
  } else {
    selected = s;
    $("msg-session").value = s.name || s.shortId;
  }
  renderSessions();
  renderMessages();
  if (selected) $("messages").scrollIntoView({ block: "start" });
}

// ---- messages ----

// reasonShort is how long a reason is shown whole; a longer one (or one
// of several lines) shows its first line, cut, with the rest on demand.
const reasonShort = 100;

// reason is a reason as the page shows it: whole when short, else one
// line that opens to the whole text (a <details>, closed).
function reason(text, cls) {
  const first = text.split("\n")[0];
  if (text.length <= reasonShort && first === text) return el("div", cls, text);
  const cut = first.length > reasonShort ? first.slice(0, reasonShort) + "…" : first + " …";
  return el("details", cls + " reason", el("summary", null, cut), el("div", "full", text));
}

// chainOf is a message's changes (oldest first) as a list: each state,
// how many in a row, when, and its reason on one line.
function chainOf(hist) {
  const chain = el("ol", "chain");
  hist.forEach((h, i) => {
    const step = el("li", null, badge(h.state), h.count > 1 ? " ×" + h.count : null, h.at ? el("span", "at", " " + when(h.at)) : null,
      h.reason ? reason(h.reason, "why") : null);
    step.dataset.key = i + " " + h.state;
    chain.append(step);
  });
  return chain;
}

// clipId is a long id (a msg_id) cut for a narrow column.
function clipId(id) { return id.length > 12 ? id.slice(0, 12) + "…" : id; }

const pending = new Set(["stored", "delivering"]);
const retryable = new Set(["stored", "outcome_unknown", "expired", "refused", "cancelled"]);

// The host a message is for: its own (send --host), or the one its
// address names (ssh:v1:<host>:...), else this machine (".").
function hostOf(m) {
  if (m.host) return m.host;
  const e = /^ssh:v1:([^:]*):/.exec(m.address);
  return e ? decodeURIComponent(e[1]) : ".";
}

// forSession says whether message m is for session s: by the session id
// it went to, else by the address it was given (a name, an id or its
// prefix, an endpoint), on the same host.
function forSession(m, s) {
  if (hostOf(m) !== s.host) return false;
  if (m.sessionId) return m.sessionId === s.sessionId;
  const a = m.address.replace(/^ssh:v1:[^:]*:/, "");
  const ep = (s.endpoint || "").replace(/^ssh:v1:[^:]*:/, "");
  return a === s.name || a === s.sessionId || a === ep || a === s.shortId || (a.length >= 8 && s.sessionId.startsWith(a));
}

function renderMessages(force) {
  const fs = $("msg-session").value.trim().toLowerCase();
  const fh = $("msg-host").value.trim().toLowerCase();
  if (selected && fs !== (selected.name || selected.shortId).toLowerCase()) selected = null;
  if (!changed("messages", state.messages, state.outboxError, state.page, fs, fh, [...confirming], selected && sessionKey(selected)) && !force) return;
  $("outbox-error").hidden = !state.outboxError;
  $("outbox-error").textContent = state.outboxError ? "the outbox cannot be read: " + state.outboxError : "";
  const tbody = el("tbody");
  let n = 0;
  for (const m of state.messages) {
    if (selected ? !forSession(m, selected) : fs && !(m.address.toLowerCase().includes(fs) || (m.sessionId || "").toLowerCase().includes(fs))) continue;
    if (fh && !hostOf(m).toLowerCase().includes(fh)) continue;
    n++;
    const hist = m.history && m.history.length ? m.history : [{ state: m.state, reason: m.reason, at: m.updatedAt }];
    const chain = chainOf(hist);
    // A message for a node of the fleet: its chain there, from the
    // node's receipts, under the node's name and its id there.
    const far = (m.far || []).map(f => {
      const box = el("div", "far", el("div", "muted", "on " + f.where + (f.id ? " (message " + f.id + " there)" : "") + ":"), chainOf(f.history || []));
      box.dataset.key = "far " + f.where + " " + (f.id || 0);
      box.dataset.node = f.where;
      return box;
    });
    const last = hist[hist.length - 1];
    const extra = m.reason && (!last || m.reason !== last.reason) ? m.reason : "";
    const receipt = [m.outcome && ("outcome " + m.outcome), m.transport && ("by " + m.transport), m.msgId && ("msg_id " + m.msgId),
      m.rule && ("held by " + m.rule), m.approvedBy && ("approved by " + m.approvedBy)].filter(Boolean).join(", ");
    const acts = el("td");
    // A plain send the service carried has no outbox id: nothing to cancel or retry.
    if (m.id && pending.has(m.state)) acts.append(action("Cancel", m.id, "cancel"));
    // Held by the trust policy: the user approves it (then it is
    // delivered as a durable message) or denies it (never sent).
    if (m.id && m.state === "awaiting_approval") acts.append(action("Approve", m.id, "approve"), " ", action("Deny", m.id, "deny"));
    if (m.id && m.state === "outcome_unknown" && confirming.has(m.id)) {
      // It may have arrived: the user looks first, then says so.
      acts.append(el("div", "why confirm", "It may have arrived already: sending it again may deliver it twice. Look first (peerctl outbox show " + m.id + ", the session's transcript)."),
        action("Keep it", m.id, "keep"), " ", action("Send again", m.id, "resend"));
    } else if (m.id && retryable.has(m.state)) acts.append(" ", action("Retry", m.id, "retry"));
    // A plain send the service carried has no outbox id: its harness's
    // msg_id names it, when there is one.
    const idCell = m.id ? el("td", "mono", m.id)
      : el("td", "mono", m.msgId ? clipId(m.msgId) : "–", el("div", "muted", "plain send"));
    if (!m.id && m.msgId) idCell.title = "msg_id " + m.msgId;
    // Who sent it, as a rule's --from names it ("mcp:reviewer-1").
    const from = el("td", "sender", m.sender ? m.sender.as : "–");
    if (!m.sender) from.title = "who sent it was not recorded for this message";
    const text = el("td", "text", el("div", null, m.text),
      m.reply ? el("div", "reply", el("div", "muted", "reply from " + (m.reply.from || "the session") + ":"), el("div", "reply-text", m.reply.text)) : null);
    const tr = el("tr", null,
      idCell,
      from,
      el("td", "mono", m.address, hostOf(m) !== "." ? el("div", "muted", "on " + hostOf(m)) : null),
      el("td", null, badge(m.state)),
      el("td", "receipts", chain, ...far, extra ? reason(extra, "why") : null, receipt ? el("div", "muted", receipt) : null),
      text,
      el("td", null, age(m.updatedAt)),
      acts);
    tr.dataset.id = String(m.id);
    tr.dataset.key = m.key;
    tbody.append(tr);
  }
  const of = n === state.messages.length ? "" : " of " + state.messages.length;
  $("message-count").textContent = n + of + (selected ? " for " + (selected.name || selected.shortId) + (selected.host === "." ? "" : " on " + selected.host) : "");
  update($("message-table").tBodies[0], tbody);
  renderPager();
}

// renderPager says which page of the outbox is shown, how many of its
// messages (the plain sends aside) of how many in all ("the newest 500 of
// 1200"), with "newer" and "older" when there are such pages.
function renderPager() {
  const p = state.page || {};
  const n = state.messages.filter(m => m.id).length, total = p.total || 0;
  const of = " " + n + " of " + total;
  let where;
  if (p.before) where = (p.more ? "the next" : "the last") + of + ", older than message " + p.before;
  else if (total === 0) where = "no message";
  else where = p.more || n !== total ? "the newest" + of : "all " + n;
  $("msg-page").textContent = where + (p.state ? ", " + p.state + " only" : "") + (p.more ? "; older ones on the next page" : "");
  $("msg-newer").hidden = !p.before;
  $("msg-older").hidden = !p.more;
}

// oldestId is the smallest outbox id shown (0: none).
function oldestId() {
  let lo = 0;
  for (const m of state.messages) if (m.id && (!lo || m.id < lo)) lo = m.id;
  return lo;
}

// go shows another page of the outbox: the server reads it and streams it.
function go(before, word) {
  view.before = before;
  if (word !== undefined) view.state = word;
  connect();
}

function action(label, id, op) {
  const b = el("button", "act-" + op, label);
  b.type = "button";
  b.setAttribute("aria-label", label + " message " + id);
  b.dataset.focus = op + " " + id;
  b.dataset.op = op;
  b.dataset.msg = String(id);
  return b;
}

// onAction runs a message's button. Retrying an outcome_unknown message
// asks first (Keep it / Send again); only "Send again" tells the server
// the user confirmed it, which it needs to send such a message again.
async function onAction(b) {
  const op = b.dataset.op, id = Number(b.dataset.msg);
  const m = state.messages.find(m => m.id === id);
  if (op === "retry" && m && m.state === "outcome_unknown") {
    confirming.add(id);
    renderMessages(true);
    const keep = $("message-table").querySelector('[data-focus="keep ' + id + '"]');
    if (keep) keep.focus();
    return;
  }
  if (op === "keep") {
    confirming.delete(id);
    renderMessages(true);
    return;
  }
  const label = { cancel: "Cancel", approve: "Approve", deny: "Deny" }[op] || "Retry";
  b.disabled = true;
  const r = await post("/api/outbox/" + id + "/" + (op === "resend" ? "retry" : op), op === "resend" ? { confirmOutcomeUnknown: true } : {});
  confirming.delete(id);
  if (r.json && r.json.needsConfirmation) {
    // It became outcome_unknown since the page drew it: ask.
    confirming.add(id);
    renderMessages(true);
    return;
  }
  if (r.code !== 0) alertResult(label + " message " + id, r);
  renderMessages(true);
}

async function post(path, body) {
  try {
    const res = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), credentials: "same-origin" });
    if ((res.headers.get("Content-Type") || "").startsWith("application/json")) return await res.json();
    return { code: -1, json: null, stderr: await res.text() };
  } catch (e) {
    return { code: -1, json: null, stderr: String(e) };
  }
}

function alertResult(what, r) {
  const box = el("div", "result error", what + ": " + (r.stderr || "exit " + r.code));
  $("send-results").prepend(box);
}

// ---- send ----

function renderSendTargets() {
  const sel = $("send-to");
  const was = sel.value;
  const opts = state.sessions.filter(s => s.live && s.address);
  const label = s => (s.host === "." ? "" : s.host + " · ") + (s.name || s.shortId) + " (" + s.shortId + ", " + s.harness + ")" + (s.stale ? " (stale)" : "");
  if (!changed("send-to", opts.map(s => [s.address, label(s)]))) return;
  sel.replaceChildren(...opts.map(s => {
    const o = el("option", null, label(s));
    o.value = s.address;
    return o;
  }));
  if (opts.length === 0) sel.append(el("option", null, "no addressable session"));
  if (opts.some(s => s.address === was)) sel.value = was;
}

async function onSend(ev) {
  ev.preventDefault();
  const to = $("send-to").value, text = $("send-text").value, wait = $("send-await").checked;
  if (!to || !text) return;
  const name = $("send-to").selectedOptions[0] ? $("send-to").selectedOptions[0].textContent : to;
  const box = el("div", "result", el("div", null, "to " + name + ": "), el("pre", null, text));
  const status = el("div", "muted", wait ? "sending, then waiting for the reply…" : "sending…");
  box.append(status);
  $("send-results").prepend(box);
  $("send-button").disabled = true;
  // The server sends every text of the result escaped as the CLI prints it.
  const r = await post("/api/send", { address: to, text: text, await: wait });
  $("send-button").disabled = false;
  const j = r.json || {};
  // A refusal's word first: a send that was delivered but got no reply
  // (no_reply) or whose wait ran out says so, not "delivered".
  const word = (j.refusal && j.refusal.reason) || j.outcome || j.reason || (r.code === 0 ? "ok" : "exit " + r.code);
  const detail = j.refusal ? j.refusal.detail : (j.detail || "");
  const parts = [j.refusal && j.outcome ? "outcome " + j.outcome : "", j.transport ? "by " + j.transport : "", j.elapsedMs !== undefined ? "in " + j.elapsedMs + "ms" : "", detail || ""];
  status.replaceChildren(badge(word), " ", parts.filter(Boolean).join(" "));
  status.className = "receipt";
  if (r.stderr && r.code !== 0) box.append(el("pre", "error", r.stderr));
  if (j.reply) box.append(el("div", "reply", el("div", "muted", "reply from " + (j.reply.fromName || "the session") + ":"), el("pre", null, j.reply.text)));
  if (r.code === 0) $("send-text").value = "";
}

// ---- hosts ----

function renderHosts() {
  if (!changed("hosts", state.hosts, Math.floor(Date.now() / 10000))) return;
  const tbody = el("tbody");
  for (const h of state.hosts) {
    const status = h.pending ? "listing" : h.stale ? "stale" : h.reachable ? "ok" : "unreachable";
    const last = el("td", null,
      h.error ? el("div", "error", h.error) : null,
      h.lastError && h.lastError !== h.error ? el("div", "why", "last error " + seen(h.lastErrorAt) + ": " + h.lastError) : null,
      h.lastError && h.lastError === h.error ? el("div", "muted", "since " + seen(h.lastErrorAt)) : null,
      ...(h.notes || []).map(n => el("div", "why", n)));
    const tr = el("tr", null,
      el("td", "mono", h.host),
      el("td", null, badge(status), h.listingSince ? el("div", "muted", "listing since " + when(h.listingSince)) : null),
      el("td", null, seen(h.seenAt)),
      el("td", null, h.live), el("td", null, h.records),
      el("td", "mono", h.version || "–"), last);
    tr.dataset.key = h.host;
    tbody.append(tr);
  }
  update($("host-table").tBodies[0], tbody);
}

// ---- the fleet (serve --nats): every node's live sessions, by node ----

function renderFleet() {
  if (!changed("fleet", state.fleet)) return;
  $("fleet").hidden = !state.fleet;
  const nodes = state.fleet || [];
  $("fleet-count").textContent = nodes.length + " node" + (nodes.length === 1 ? "" : "s") + ", " +
    nodes.reduce((n, x) => n + x.sessions.length, 0) + " live";
  const box = el("div");
  for (const n of nodes) {
    const tbody = el("tbody");
    for (const s of n.sessions) {
      const status = s.status + (s.waitingFor ? " (" + s.waitingFor + ")" : "") + (s.addressable ? "" : " (not addressable)");
      const tr = el("tr", null, el("td", "name", s.name || "–"), el("td", null, s.harness), el("td", null, badge(status)),
        el("td", "mono", s.pid), el("td", "mono cwd", s.cwd || "–"));
      tr.dataset.key = s.sessionId + " " + s.pid;
      tr.dataset.session = s.sessionId;
      tbody.append(tr);
    }
    const group = el("div", "fleet-node", el("h3", "mono", n.node),
      el("table", null, el("thead", null, el("tr", null, el("th", null, "name"), el("th", null, "harness"), el("th", null, "status"),
        el("th", null, "pid"), el("th", null, "cwd"))), tbody));
    group.dataset.key = n.node;
    group.dataset.node = n.node;
    box.append(group);
  }
  update($("fleet-nodes"), box);
}

function render() {
  if (!state) return;
  const ex = $("exposed");
  ex.hidden = !state.exposed;
  ex.textContent = state.exposed ? "exposed on " + state.exposed + ": anyone who can reach this address and has the token can read every session and send into them" : "";
  renderHostChoices();
  renderSessions();
  renderMessages();
  renderSendTargets();
  renderHosts();
  renderFleet();
  $("read-at").textContent = when(state.at);
  document.body.dataset.at = state.at;
}

// ---- the data: the first event whole, then what changed ----

// timeKey is an RFC 3339 time in UTC that sorts as text (nanoseconds
// written out), newest last.
function timeKey(iso) {
  const m = /^(.{19})(?:\.(\d+))?Z$/.exec(iso || "");
  return m ? m[1] + "." + (m[2] || "").padEnd(9, "0") : (iso || "");
}

function cmpText(a, b) { return a < b ? -1 : a > b ? 1 : 0; }

// derive makes state, what the sections draw, from model: the sessions
// by host (in the hosts' order), live first, then by name and pid; the
// messages newest first (createdAt, then id).
function derive() {
  const order = new Map(model.hosts.map((h, i) => [h.host, i]));
  const sessions = [...model.sessions.values()].sort((a, b) =>
    (order.has(a.host) ? order.get(a.host) : 1e9) - (order.has(b.host) ? order.get(b.host) : 1e9) ||
    (a.live === b.live ? 0 : a.live ? -1 : 1) || cmpText(a.name, b.name) || a.pid - b.pid || cmpText(a.key, b.key));
  const messages = [...model.messages.values()].sort((a, b) =>
    cmpText(timeKey(b.createdAt), timeKey(a.createdAt)) || b.id - a.id || cmpText(a.key, b.key));
  state = { at: model.at, hosts: model.hosts, sessions, messages, outboxError: model.outboxError, exposed: model.exposed, page: model.page, fleet: model.fleet };
}

function byKey(list) { return new Map(list.map(x => [x.key, x])); }

function applyChanges(map, c) {
  if (!c) return;
  for (const k of c.del || []) map.delete(k);
  for (const x of c.set || []) map.set(x.key, x);
}

let es = null;

// connect opens the event stream of the page of the outbox in view; a
// new stream starts with the whole data.
function connect() {
  if (es) es.close();
  const q = new URLSearchParams();
  if (view.state) q.set("state", view.state);
  if (view.before) q.set("before", String(view.before));
  const s = q.toString();
  es = new EventSource("/api/events" + (s ? "?" + s : ""));
  es.addEventListener("state", ev => {
    const d = JSON.parse(ev.data);
    model = { seq: d.seq, at: d.at, hosts: d.hosts, sessions: byKey(d.sessions), messages: byKey(d.messages), outboxError: d.outboxError || "", exposed: d.exposed || "", page: d.page || {}, fleet: d.fleet };
    live();
  });
  es.addEventListener("delta", ev => {
    const d = JSON.parse(ev.data);
    if (!model || d.seq !== model.seq + 1) { connect(); return; } // an event missed: start again
    model.seq = d.seq;
    model.at = d.at;
    if (d.hosts) model.hosts = d.hosts;
    applyChanges(model.sessions, d.sessions);
    applyChanges(model.messages, d.messages);
    if (d.outboxError !== undefined) model.outboxError = d.outboxError;
    if (d.more !== undefined) model.page = Object.assign({}, model.page, { more: d.more });
    if (d.total !== undefined) model.page = Object.assign({}, model.page, { total: d.total });
    if (d.fleet !== undefined) model.fleet = d.fleet; // null: no longer known
    live();
  });
  es.onerror = () => {
    $("live").textContent = "reconnecting…";
    $("live").className = "badge s-held";
  };
}

function live() {
  derive();
  $("live").textContent = "live";
  $("live").className = "badge s-ok";
  render();
}

document.addEventListener("DOMContentLoaded", () => {
  for (const id of ["show-all", "session-filter", "session-host"]) $(id).addEventListener("input", () => renderSessions());
  for (const id of ["msg-session", "msg-host"]) $(id).addEventListener("input", () => { renderMessages(); renderSessions(); });
  // The state filter is the server's: it reads that state's messages.
  $("msg-state").addEventListener("input", () => { newer = []; go(0, $("msg-state").value); });
  $("msg-older").addEventListener("click", () => { const lo = oldestId(); if (lo) { newer.push(view.before); go(lo); } });
  $("msg-newer").addEventListener("click", () => go(newer.length ? newer.pop() : 0));
  $("session-groups").addEventListener("click", ev => {
    const b = ev.target.closest("button[data-pick]");
    if (b) pick(b.dataset.pick);
  });
  $("message-table").addEventListener("click", ev => {
    const b = ev.target.closest("button[data-op]");
    if (b && !b.disabled) onAction(b);
  });
  $("send-form").addEventListener("submit", onSend);
  document.addEventListener("keydown", ev => {
    const t = ev.target.tagName;
    if (t === "INPUT" || t === "TEXTAREA" || t === "SELECT" || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === "/") { ev.preventDefault(); $("session-filter").focus(); }
    else if (ev.key === "a") { $("show-all").click(); }
    else if (ev.key === "s") { ev.preventDefault(); $("send-to").focus(); }
  });
  // Ages ("3m") move on with time: draw again, merging only what changed.
  setInterval(() => { if (state) { renderSessions(true); renderMessages(true); renderHosts(); } }, 30000);
  connect();
});
