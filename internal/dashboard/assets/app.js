// peerctl dashboard. Every text from the server is put in the page with
// textContent (through el): never as HTML.
"use strict";

let state = null;

function el(tag, cls, ...kids) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  for (const k of kids) {
    if (k === null || k === undefined) continue;
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

function renderSessions() {
  const all = $("show-all").checked;
  const f = $("session-filter").value.trim().toLowerCase();
  const box = $("session-groups");
  const groups = new Map();
  for (const h of state.hosts) groups.set(h.host, []);
  let live = 0;
  for (const s of state.sessions) {
    if (s.live) live++;
    if (!all && !s.live) continue;
    if (f && ![s.name, s.sessionId, s.cwd, s.harness, s.status, s.host].some(v => (v || "").toLowerCase().includes(f))) continue;
    if (!groups.has(s.host)) groups.set(s.host, []);
    groups.get(s.host).push(s);
  }
  $("session-count").textContent = live + " live" + (all ? ", " + state.sessions.length + " records" : "");
  const frag = document.createDocumentFragment();
  for (const [host, rows] of groups) {
    const hv = state.hosts.find(h => h.host === host);
    const head = el("h3", null, host === "." ? "this machine (.)" : host, " ", el("span", "count", rows.length + (all ? " records" : " live")));
    if (hv && !hv.reachable) head.append(" ", badge("unreachable"));
    frag.append(head);
    if (hv && hv.error) frag.append(el("p", "error", hv.error));
    if (rows.length === 0) { frag.append(el("p", "muted", "no sessions")); continue; }
    const cols = ["name", "harness", "session", "pid", "status", "age", "cwd", all ? "verdict / reason" : "note"];
    const thead = el("thead", null, el("tr", null, ...cols.map((c, i) => el("th", i === 3 || i === 5 ? "hide-narrow" : null, c))));
    const tbody = el("tbody");
    for (const s of rows) {
      const note = all
        ? el("td", null, badge(s.verdict), s.reason ? " " + s.reason : "", !s.addressable && s.live && s.unaddressable ? el("div", "why", s.unaddressable) : null)
        : el("td", "why", s.addressable ? "" : (s.unaddressable || "not addressable"));
      const tr = el("tr", s.live ? null : "dead",
        el("td", null, s.name || "–"),
        el("td", null, s.harness),
        el("td", "mono", s.shortId || "–"),
        el("td", "mono hide-narrow", s.pid),
        el("td", null, s.live ? badge(s.status) : "–"),
        el("td", "hide-narrow", age(s.startedAt)),
        el("td", "mono cwd", s.cwd),
        note);
      tr.dataset.session = s.sessionId;
      tbody.append(tr);
    }
    frag.append(el("div", "scroll", el("table", "sessions", thead, tbody)));
  }
  box.replaceChildren(frag);
}

const pending = new Set(["stored", "delivering"]);
const retryable = new Set(["stored", "outcome_unknown", "expired", "refused", "cancelled"]);

// The host a message is for: its own (send --durable --host), or the one
// its address names (ssh:v1:<host>:...), else this machine (".").
function hostOf(m) {
  if (m.host) return m.host;
  const e = /^ssh:v1:([^:]*):/.exec(m.address);
  return e ? decodeURIComponent(e[1]) : ".";
}

function renderMessages() {
  const fs = $("msg-session").value.trim().toLowerCase();
  const fh = $("msg-host").value.trim().toLowerCase();
  const fst = $("msg-state").value;
  $("outbox-error").hidden = !state.outboxError;
  $("outbox-error").textContent = state.outboxError ? "the outbox cannot be read: " + state.outboxError : "";
  const tbody = el("tbody");
  let n = 0;
  for (const m of state.messages) {
    if (fst && m.state !== fst) continue;
    if (fs && !(m.address.toLowerCase().includes(fs) || (m.sessionId || "").toLowerCase().includes(fs))) continue;
    if (fh && !hostOf(m).toLowerCase().includes(fh)) continue;
    n++;
    const chain = el("div", "chain");
    const hist = m.history && m.history.length ? m.history : [{ state: m.state, reason: m.reason, at: m.updatedAt }];
    for (const h of hist) chain.append(el("span", null, badge(h.state), h.count > 1 ? " ×" + h.count : null));
    const last = hist[hist.length - 1];
    const why = m.reason || (last && last.reason) || "";
    const receipt = [m.outcome && ("outcome " + m.outcome), m.transport && ("by " + m.transport), m.msgId && ("msg_id " + m.msgId)].filter(Boolean).join(", ");
    const acts = el("td");
    // A plain send the service carried has no outbox id: nothing to cancel or retry.
    if (m.id && pending.has(m.state)) acts.append(action("Cancel", m.id, "cancel"));
    if (m.id && retryable.has(m.state)) acts.append(" ", action("Retry", m.id, "retry"));
    const tr = el("tr", null,
      el("td", "mono", m.id ? m.id : "send"),
      el("td", "mono", m.address, m.host ? el("div", "muted", "on " + m.host) : null),
      el("td", null, badge(m.state)),
      el("td", null, chain, why ? el("div", "why", why) : null, receipt ? el("div", "muted", receipt) : null),
      el("td", "text", m.text),
      el("td", null, age(m.updatedAt)),
      acts);
    tr.dataset.id = String(m.id);
    tbody.append(tr);
  }
  $("message-count").textContent = n + (n === state.messages.length ? "" : " of " + state.messages.length);
  $("message-table").tBodies[0].replaceWith(tbody);
}

function action(label, id, op) {
  const b = el("button", "act-" + op, label);
  b.type = "button";
  b.setAttribute("aria-label", label + " message " + id);
  b.addEventListener("click", async () => {
    b.disabled = true;
    const r = await post("/api/outbox/" + id + "/" + op, {});
    if (r.code !== 0) alertResult(label + " message " + id, r);
  });
  return b;
}

async function post(path, body) {
  try {
    const res = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), credentials: "same-origin" });
    if (!res.ok) return { code: -1, json: null, stderr: await res.text() };
    return await res.json();
  } catch (e) {
    return { code: -1, json: null, stderr: String(e) };
  }
}

function alertResult(what, r) {
  const box = el("div", "result error", what + ": " + (r.stderr || "exit " + r.code));
  $("send-results").prepend(box);
}

function renderSendTargets() {
  const sel = $("send-to");
  const was = sel.value;
  const opts = state.sessions.filter(s => s.live && s.address);
  const key = opts.map(s => s.address + "\u0000" + s.name).join("\u0001");
  if (sel.dataset.key === key) return;
  sel.dataset.key = key;
  sel.replaceChildren(...opts.map(s => {
    const o = el("option", null, (s.host === "." ? "" : s.host + " · ") + (s.name || s.shortId) + " (" + s.shortId + ", " + s.harness + ")");
    o.value = s.address;
    return o;
  }));
  if (opts.length === 0) sel.append(el("option", null, "no addressable session"));
  if (opts.some(s => s.address === was)) sel.value = was;
}

function renderHosts() {
  const tbody = el("tbody");
  for (const h of state.hosts) {
    const notes = el("td", null, h.error ? el("div", "error", h.error) : null, ...(h.notes || []).map(n => el("div", "why", n)));
    tbody.append(el("tr", null,
      el("td", "mono", h.host),
      el("td", null, badge(h.reachable ? "ok" : "unreachable")),
      el("td", null, h.live), el("td", null, h.records),
      el("td", "mono", h.version || "–"), notes));
  }
  $("host-table").tBodies[0].replaceWith(tbody);
}

function render() {
  if (!state) return;
  renderSessions();
  renderMessages();
  renderSendTargets();
  renderHosts();
  $("read-at").textContent = new Date(state.at).toLocaleTimeString();
  document.body.dataset.at = state.at;
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
  const r = await post("/api/send", { address: to, text: text, await: wait });
  $("send-button").disabled = false;
  const j = r.json || {};
  const outcome = j.outcome || (j.refusal && j.refusal.reason) || j.reason || (r.code === 0 ? "ok" : "exit " + r.code);
  const detail = j.refusal ? j.refusal.detail : (j.detail || "");
  status.replaceChildren(badge(outcome), " ", (j.transport ? "by " + j.transport + " " : "") + (j.elapsedMs !== undefined ? "in " + j.elapsedMs + "ms " : "") + (detail || ""));
  status.className = "receipt";
  if (r.stderr && r.code !== 0) box.append(el("pre", "error", r.stderr));
  if (j.reply) box.append(el("div", "reply", el("div", "muted", "reply from " + (j.reply.fromName || "the session") + ":"), el("pre", null, j.reply.text)));
  if (r.code === 0) $("send-text").value = "";
}

function connect() {
  const es = new EventSource("/api/events");
  es.addEventListener("state", ev => {
    state = JSON.parse(ev.data);
    $("live").textContent = "live";
    $("live").className = "badge s-ok";
    render();
  });
  es.onerror = () => {
    $("live").textContent = "reconnecting…";
    $("live").className = "badge s-held";
  };
}

document.addEventListener("DOMContentLoaded", () => {
  for (const id of ["show-all", "session-filter"]) $(id).addEventListener("input", renderSessions);
  for (const id of ["msg-session", "msg-host", "msg-state"]) $(id).addEventListener("input", renderMessages);
  $("send-form").addEventListener("submit", onSend);
  document.addEventListener("keydown", ev => {
    const t = ev.target.tagName;
    if (t === "INPUT" || t === "TEXTAREA" || t === "SELECT" || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === "/") { ev.preventDefault(); $("session-filter").focus(); }
    else if (ev.key === "a") { $("show-all").click(); }
    else if (ev.key === "s") { ev.preventDefault(); $("send-to").focus(); }
  });
  setInterval(() => { if (state) { renderSessions(); } }, 30000);
  connect();
});
