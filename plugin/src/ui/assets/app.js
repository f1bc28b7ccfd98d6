// longtask UI: one page, three views (#/ list, #/task/NS/NAME, #/timeline).
// The server (kubectl longtask ui) watches Tasks as the user and pushes
// trimmed rows as a stream of server-sent events; nothing here polls per
// row. Every API call carries the token in a header (never a cookie: a
// cookie of 127.0.0.1 goes to every port of it); the token comes once in
// the URL's fragment and stays in this tab's session storage.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const rows = new Map();   // key "ns/name" -> row from the server
const order = [];         // keys, stable: by creation time, then namespace/name
let listSource = null;    // the stream of the list
let taskSource = null;    // the stream of the open Task
let logSource = null;     // the stream of its log
let pending = new Set();  // keys changed since the last paint
let paintQueued = false;
let needsFullPaint = true;
// Whether the list stream has sent its first full list (`reset`).
let listed = false;

// ---- the token and the streams ----------------------------------------------

const TOKEN_KEY = "longtask-ui-token";

// Takes the token out of a `#token=…` fragment into session storage (this
// origin, port included, and this tab only) and out of the address bar
// and its history; true when there was one.
function takeToken() {
  const m = /^#token=([0-9a-f]+)$/.exec(location.hash);
  if (!m) return false;
  sessionStorage.setItem(TOKEN_KEY, m[1]);
  history.replaceState(null, "", location.pathname + "#/");
  return true;
}

function authHeaders() {
  return {"X-Longtask-Token": sessionStorage.getItem(TOKEN_KEY) || ""};
}

// fetch() with the token; never with cookies.
function api(path, init = {}) {
  return fetch(path, {...init, headers: {...authHeaders(), ...(init.headers || {})}, credentials: "omit", cache: "no-store"});
}

// One server-sent event block ("event: x\ndata: …") as [event, data];
// null for a comment (the keep-alive) or a block without data.
function sseBlock(block) {
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const i = line.indexOf(":");
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? "" : line.slice(i + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  return data.length ? [event, data.join("\n")] : null;
}

// Follows a stream of server-sent events with fetch(), since EventSource
// cannot send a header: `on[event]({data})` for each event; `opened()`
// each time the stream (re)starts, `broken(text)` when it fails or ends;
// it starts again after 1 s, doubling to 15 s, until close().
function follow(path, on, {opened = () => {}, broken = () => {}} = {}) {
  const stop = new AbortController();
  let closed = false;
  let delay = 1000;
  const once = async () => {
    const res = await api(path, {signal: stop.signal, headers: {"Accept": "text/event-stream"}});
    if (!res.ok) {
      const text = (await res.text().catch(() => "")).trim();
      throw new Error(text || `HTTP ${res.status}`);
    }
    delay = 1000;
    opened();
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done || closed) return;
      buf += value.replace(/\r/g, "");
      let at = 0, cut;
      while (!closed && (cut = buf.indexOf("\n\n", at)) >= 0) {
        const ev = sseBlock(buf.slice(at, cut));
        at = cut + 2;
        if (ev && on[ev[0]]) on[ev[0]]({data: ev[1]});
      }
      buf = buf.slice(at);
    }
  };
  (async () => {
    while (!closed) {
      try {
        await once();
        if (!closed) broken("the stream ended; reconnecting…");
      } catch (err) {
        if (closed) return;
        broken(String(err.message || err));
      }
      await new Promise(r => setTimeout(r, delay));
      delay = Math.min(2 * delay, 15000);
    }
  })();
  return {close() { closed = true; stop.abort(); }};
}

// ---- helpers -------------------------------------------------------------

function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

function time(t) {
  if (!t) return "";
  const d = new Date(t);
  return d.toLocaleString(undefined, {month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit"});
}

function span(ms) {
  if (ms == null || ms < 0) return "";
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor(s % 3600 / 60)).padStart(2, "0")}m`;
}

function duration(r, now = Date.now()) {
  if (!r.started) return "";
  const end = r.completed ? Date.parse(r.completed) : now;
  return span(end - Date.parse(r.started));
}

function eta(r, now = Date.now()) {
  if (!r.eta || r.phase !== "Running") return "";
  return "in " + span(Math.max(0, Date.parse(r.eta) - now));
}

function cmpKeys(a, b) {
  const ra = rows.get(a), rb = rows.get(b);
  if (ra.created !== rb.created) return ra.created < rb.created ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

// Where key goes in `order` (binary search): rows never move once placed,
// since their creation time and name never change.
function insertKey(key) {
  let lo = 0, hi = order.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cmpKeys(order[mid], key) < 0) lo = mid + 1; else hi = mid;
  }
  order.splice(lo, 0, key);
}

// ---- filters, kept in the URL ----------------------------------------------

function route() {
  const h = location.hash.replace(/^#/, "") || "/";
  const [path, query = ""] = h.split("?");
  return {path, params: new URLSearchParams(query)};
}

function filters() {
  const p = route().params;
  return {ns: p.get("ns") || "", phase: p.get("phase") || "", label: p.get("label") || "", name: p.get("name") || ""};
}

function matches(r, f) {
  if (f.ns && r.namespace !== f.ns) return false;
  if (f.phase && (r.phase || "Pending") !== f.phase) return false;
  if (f.name && !r.name.includes(f.name)) return false;
  if (f.label) {
    const [k, v] = f.label.split("=", 2);
    const have = (r.labels || {})[k.trim()];
    if (have === undefined) return false;
    if (v !== undefined && have !== v.trim()) return false;
  }
  return true;
}

function setFilter(name, value) {
  const {path, params} = route();
  if (value) params.set(name, value); else params.delete(name);
  const q = params.toString();
  history.replaceState(null, "", "#" + path + (q ? "?" + q : ""));
  needsFullPaint = true;
  schedulePaint();
  if (path === "/timeline") drawTimeline();
}

// ---- the list ---------------------------------------------------------------

function waitingText(r) {
  if (r.queuePosition != null) return `queue position ${r.queuePosition}`;
  if (r.waiting) return r.waiting + (r.waitingMessage ? ": " + r.waitingMessage : "");
  return "";
}

function progressCell(r) {
  const pct = r.percent == null ? (r.phase === "Completed" ? 100 : 0) : r.percent;
  const text = r.percent == null ? (r.progressMessage || "") : `${r.percent}%${r.progressMessage ? " " + r.progressMessage : ""}`;
  return `<div class="bar" data-percent="${pct}"><div class="fill" style="width:${pct}%;${r.phase === "Failed" ? "background:var(--failed)" : r.phase === "Completed" ? "background:var(--completed)" : ""}"></div><div class="text">${esc(text)}</div></div>`;
}

function rowHtml(r) {
  const phase = r.phase || "Pending";
  const reason = r.reason && r.phase !== "Running" ? ` <span class="muted">${esc(r.reason)}</span>` : "";
  const href = `#/task/${encodeURIComponent(r.namespace)}/${encodeURIComponent(r.name)}`;
  return `<td>${esc(r.namespace)}</td>` +
    `<td class="name"><a href="${href}">${esc(r.name)}</a></td>` +
    `<td><span class="phase ${esc(phase)}">${esc(phase)}</span>${reason}</td>` +
    `<td class="progress-col">${progressCell(r)}</td>` +
    `<td class="eta">${esc(eta(r))}</td>` +
    `<td>${r.attempts ?? ""}</td>` +
    `<td class="outputs">${esc(r.outputs || "")}</td>` +
    `<td class="waiting" title="${esc(r.waitingMessage || "")}">${esc(waitingText(r))}</td>` +
    `<td>${esc(time(r.started))}</td>` +
    `<td class="duration">${esc(duration(r))}</td>`;
}

function schedulePaint() {
  if (paintQueued) return;
  paintQueued = true;
  requestAnimationFrame(paint);
}

// Only the rows in view, and a margin, are in the table: with thousands of
// Tasks the browser lays out a few dozen rows, not all of them (laying out
// 5,000 took about a second here). Spacer rows above and below keep the
// scroll bar true; rows have one height (app.css), measured once.
let shownKeys = [];          // the filtered order
let shownSet = new Set();
let rowHeight = 29;          // px, replaced by the first row's measure
let windowFrom = 0, windowTo = 0;
const MARGIN = 40;           // rows kept above and below the view
const STEP = 20;             // the window moves in steps of this many rows

function spacer(n) {
  return n > 0 ? `<tr class="spacer" aria-hidden="true"><td colspan="10" style="height:${n * rowHeight}px"></td></tr>` : "";
}

// The rows [from, to) to have in the page, of `count` rows of `height` px
// whose first would be at `top` px from the top of the view.
function windowAt(top, count, height) {
  const seen = Math.ceil(window.innerHeight / height);
  // Scrolled past the end of a list that just got shorter (a filter): the
  // last rows, never an empty window.
  const first = Math.min(Math.floor(Math.max(0, -top) / height), Math.max(0, count - seen));
  const from = Math.max(0, Math.floor((first - MARGIN) / STEP) * STEP);
  const to = Math.min(count, Math.ceil((first + seen + MARGIN) / STEP) * STEP);
  return [Math.min(from, to), to];
}

// The rows to have in the table for the current scroll position.
function wantedWindow() {
  return windowAt($("#tasks tbody").getBoundingClientRect().top, shownKeys.length, rowHeight);
}

function renderWindow(force) {
  const [from, to] = wantedWindow();
  if (!force && from === windowFrom && to === windowTo) return;
  windowFrom = from;
  windowTo = to;
  const parts = [spacer(from)];
  for (let i = from; i < to; i++) {
    const key = shownKeys[i], r = rows.get(key);
    parts.push(`<tr data-key="${esc(key)}" data-phase="${esc(r.phase || "Pending")}">${rowHtml(r)}</tr>`);
  }
  parts.push(spacer(shownKeys.length - to));
  const tbody = $("#tasks tbody");
  tbody.innerHTML = parts.join("");
  const one = tbody.querySelector("tr[data-key]");
  const h = one ? one.getBoundingClientRect().height : 0;
  if (h > 0 && Math.abs(h - rowHeight) > 0.5) {
    rowHeight = h;
    renderWindow(true);
  }
}

let scrollQueued = false;
function onScroll() {
  const path = route().path;
  if (scrollQueued || (path !== "/" && path !== "/timeline")) return;
  scrollQueued = true;
  requestAnimationFrame(() => {
    scrollQueued = false;
    if (route().path === "/timeline") renderLanes(false); else renderWindow(false);
  });
}

function paint() {
  paintQueued = false;
  if (route().path !== "/") { pending.clear(); return; }
  const tbody = $("#tasks tbody");
  const f = filters();
  if (needsFullPaint) {
    needsFullPaint = false;
    pending.clear();
    shownKeys = order.filter(key => matches(rows.get(key), f));
    shownSet = new Set(shownKeys);
    renderWindow(true);
    $("#count").textContent = `${shownKeys.length} of ${rows.size} Tasks`;
    $("#empty").hidden = shownKeys.length > 0;
    window.longtaskPainted = Date.now();
    // The first whole list on screen (benchmarks and tests read it): after
    // the frame that showed it, not when the script wrote it.
    if (listed && window.longtaskFirstPaint === undefined) {
      requestAnimationFrame(() => setTimeout(() => {
        if (window.longtaskFirstPaint === undefined) window.longtaskFirstPaint = Date.now();
      }, 0));
    }
    return;
  }
  let structural = false;
  for (const key of pending) {
    const r = rows.get(key);
    const want = Boolean(r && matches(r, f));
    if (want !== shownSet.has(key)) {
      structural = true;   // a row appears or goes: repaint in order
      continue;
    }
    const tr = want && tbody.querySelector(`tr[data-key="${CSS.escape(key)}"]`);
    if (tr) {
      tr.innerHTML = rowHtml(r);
      tr.dataset.phase = r.phase || "Pending";
    }
  }
  pending.clear();
  if (structural) { needsFullPaint = true; paint(); return; }
  window.longtaskPainted = Date.now();
}

// Durations and ETAs move with the clock: refresh those cells only.
setInterval(() => {
  if (route().path !== "/") return;
  for (const tr of document.querySelectorAll("#tasks tbody tr[data-phase=Running]")) {
    const r = rows.get(tr.dataset.key);
    if (!r) continue;
    tr.querySelector(".duration").textContent = duration(r);
    tr.querySelector(".eta").textContent = eta(r);
  }
}, 1000);

function connectList() {
  if (listSource) return;
  const live = $("#live");
  const on = {};
  listSource = follow("/api/tasks/stream", on, {
    opened: () => { live.textContent = "live"; live.className = "live on"; },
    broken: text => { live.textContent = text; live.className = "live off"; },
  });
  on.reset = e => {
    const d = JSON.parse(e.data);
    rows.clear();
    order.length = 0;
    for (const r of d.rows) rows.set(r.key, r);
    order.push(...rows.keys());
    order.sort(cmpKeys);
    namespaces();
    listed = true;
    needsFullPaint = true;
    schedulePaint();
    if (route().path === "/timeline") drawTimeline();
  };
  on.upsert = e => {
    const r = JSON.parse(e.data);
    const had = rows.has(r.key);
    rows.set(r.key, r);
    if (!had) { insertKey(r.key); namespaces(); }
    window.longtaskLastEvent = Date.now();
    pending.add(r.key);
    schedulePaint();
    if (route().path === "/timeline") scheduleTimeline();
  };
  on.delete = e => {
    const {key} = JSON.parse(e.data);
    if (!rows.delete(key)) return;
    const i = order.indexOf(key);
    if (i >= 0) order.splice(i, 1);
    pending.add(key);
    schedulePaint();
    if (route().path === "/timeline") scheduleTimeline();
  };
  on.failure = e => {
    live.textContent = JSON.parse(e.data).message;
    live.className = "live off";
  };
}

function namespaces() {
  const seen = [...new Set([...rows.values()].map(r => r.namespace))].sort();
  $("#namespaces").innerHTML = seen.map(n => `<option value="${esc(n)}">`).join("");
}

// ---- a Task's page ------------------------------------------------------------

function closeTask() {
  if (taskSource) { taskSource.close(); taskSource = null; }
  if (logSource) { logSource.close(); logSource = null; }
  logGen++;
}

function apiPath(ns, name) {
  return `/api/tasks/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`;
}

function openTask(ns, name) {
  closeTask();
  $("#task-title").textContent = `${ns}/${name}`;
  $("#task-status").innerHTML = "";
  $("#history").innerHTML = "";
  $("#result").innerHTML = "";
  $("#outputs").innerHTML = "";
  outputsShown = null;
  $("#log").textContent = "";
  $("#action-result").textContent = "";
  const base = apiPath(ns, name);
  let conditions = [], events = [];
  const failed = text => {
    const out = $("#action-result");
    out.className = "error";
    out.textContent = text;
  };
  taskSource = follow(base + "/stream", {
    task: e => {
      const d = JSON.parse(e.data);
      showStatus(d);
      conditions = d.status?.conditions || [];
      showHistory(conditions, events);
      showResult(base, d);
      showOutputs(base, d);
    },
    events: e => {
      events = JSON.parse(e.data);
      showHistory(conditions, events);
    },
    gone: () => {
      $("#action-result").textContent = "this Task does not exist (any more)";
    },
    failure: e => failed(JSON.parse(e.data).message),
  }, {broken: failed});
  followLog(base);
}

function showStatus(d) {
  const s = d.status || {}, r = d.row;
  const items = [
    ["Phase", `<span class="phase ${esc(r.phase || "Pending")}">${esc(r.phase || "Pending")}</span>`],
    ["Reason", esc(s.reason)],
    ["Message", esc(s.message)],
    ["Progress", progressCell(r)],
    ["ETA", esc(eta(r))],
    ["Waiting", esc(waitingText(r))],
    ["Attempts", esc(s.attempts)],
    ["Disruptions", s.disruptions ? esc(`${s.disruptions} (last: pod ${s.lastDisruption?.pod} ${s.lastDisruption?.reason})`) : ""],
    ["Exit code", esc(s.exitCode)],
    ["Created", esc(time(r.created))],
    ["Started", esc(time(s.startedAt))],
    ["Completed", esc(time(s.completedAt))],
    ["Duration", esc(duration(r))],
    ["Job", s.jobName ? `<code>kubectl logs job/${esc(s.jobName)}</code>` : ""],
    ["Command", `<code>${esc((d.spec?.command || []).join(" "))}</code>`],
  ];
  $("#task-status").innerHTML = items.filter(([, v]) => v !== "" && v !== undefined)
    .map(([k, v]) => `<dt>${k}</dt><dd data-field="${esc(k)}">${v}</dd>`).join("");
  const done = ["Completed", "Failed"].includes(r.phase);
  $("#cancel").disabled = done || r.cancel;
  $("#rerun").disabled = false;
}

function showHistory(conditions, events) {
  const items = [];
  for (const c of conditions) {
    items.push({at: c.lastTransitionTime, cls: "condition",
      html: `<b>${esc(c.type)}=${esc(c.status)}</b> ${esc(c.reason)}${c.message ? ": " + esc(c.message) : ""}`});
  }
  for (const ev of events) {
    items.push({at: ev.at, cls: ev.type,
      html: `<b>${esc(ev.reason)}</b>${ev.count > 1 ? ` ×${ev.count}` : ""} ${esc(ev.note)}`});
  }
  items.sort((a, b) => (a.at || "").localeCompare(b.at || ""));
  $("#history").innerHTML = items.map(i => `<li class="${esc(i.cls)}"><time>${esc(time(i.at))}</time>${i.html}</li>`).join("");
}

function showResult(base, d) {
  const s = d.status || {};
  if (!["Completed", "Failed"].includes(d.row.phase)) {
    $("#result").innerHTML = `<p class="muted">not finished yet</p>`;
    return;
  }
  if (s.result == null && !s.resultDigest) {
    const stored = (s.outputs?.files || []).some(f => f.name === RESULT_OUTPUT);
    $("#result").innerHTML = stored
      ? `<p class="muted">too large to keep inline: the result is the output <code>${RESULT_OUTPUT}</code> below</p>`
      : `<p class="muted">no result</p>`;
    return;
  }
  const note = s.resultTruncated ? `<p class="muted">the status holds the first 32 KiB; the download has every byte</p>` : "";
  $("#result").innerHTML = `<pre class="result" id="result-text">${esc(s.result || "")}</pre>${note}` +
    `<p><button id="result-download" type="button">Download the exact bytes</button>` +
    (s.resultDigest ? ` <span class="muted">(checked against ${esc(s.resultDigest)})</span>` : "") +
    ` <span id="download-state" role="status"></span></p>`;
  $("#result-download").addEventListener("click", () => download(base, d.row.name));
}

// A link cannot send the token's header: the bytes are fetched with it
// and saved from a blob.
async function download(base, name) {
  const state = $("#download-state");
  state.className = "";
  state.textContent = "downloading…";
  try {
    const res = await api(base + "/result");
    if (!res.ok) {
      const body = await res.json().catch(() => ({}));
      throw new Error(body.error || `HTTP ${res.status}`);
    }
    const url = URL.createObjectURL(await res.blob());
    const a = document.createElement("a");
    a.href = url;
    a.download = `${name}.result`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    state.textContent = "";
  } catch (err) {
    state.className = "error";
    state.textContent = `download failed: ${err.message || err}`;
  }
}

// ---- output files ----------------------------------------------------------------

// The output a result too large to keep inline is stored as.
const RESULT_OUTPUT = ".longtask/result";
// Most output files listed at once; the filter finds the others.
const OUTPUTS_SHOWN = 200;
// The status.outputs last drawn, so an unchanged Task does not redraw it
// (a download's state stays on the page).
let outputsShown = null;

// 1536 -> "1.5Ki", as the plugin writes sizes.
function humanSize(n) {
  const units = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
  if (n < 1024) return String(n);
  let v = n / 1024, u = 0;
  while (v >= 1024 && u + 1 < units.length) { v /= 1024; u++; }
  return v.toFixed(1) + units[u];
}

function showOutputs(base, d) {
  const o = d.status?.outputs;
  const key = JSON.stringify(o || null) + d.row.phase;
  if (key === outputsShown) return;
  outputsShown = key;
  const box = $("#outputs");
  if (!o) {
    box.innerHTML = `<p class="muted">${["Completed", "Failed"].includes(d.row.phase) ? "no output files" : "not finished yet"}</p>`;
    return;
  }
  const files = o.files || [];
  box.innerHTML = `<p>${esc(d.row.outputs)} <span class="muted">in ${esc(o.location)}</span></p>` +
    (files.length > OUTPUTS_SHOWN ? `<input id="outputs-filter" placeholder="name contains">` : "") +
    `<table><thead><tr><th>Name</th><th>Size</th><th>Digest</th><th></th></tr></thead><tbody></tbody></table>` +
    `<p id="outputs-more" class="muted"></p>`;
  const draw = filter => {
    const shown = files.filter(f => f.name.includes(filter)).slice(0, OUTPUTS_SHOWN);
    box.querySelector("tbody").innerHTML = shown.map((f, i) =>
      `<tr data-name="${esc(f.name)}"><td>${esc(f.name)}</td><td class="size">${esc(humanSize(f.size))}</td>` +
      `<td class="digest" title="${esc(f.digest)}">${esc(f.digest.slice(0, 19))}…</td>` +
      `<td><button type="button" data-i="${i}">Download</button> <span class="state" role="status"></span></td></tr>`).join("");
    for (const b of box.querySelectorAll("tbody button")) {
      b.addEventListener("click", () => downloadOutput(base, shown[Number(b.dataset.i)].name, b.parentElement));
    }
    const hidden = files.filter(f => f.name.includes(filter)).length - shown.length;
    $("#outputs-more").textContent = hidden > 0
      ? `… and ${hidden} more: filter by name, or kubectl longtask result ${d.row.name} -o DIR downloads all` : "";
  };
  draw("");
  const filter = $("#outputs-filter");
  if (filter) filter.addEventListener("input", () => draw(filter.value.trim()));
}

// A link cannot send the token's header: a POST with it gets a one-time
// link (good once, for 60 s), which the browser then downloads itself,
// streamed, with its own progress; wrong bytes make that download fail.
async function downloadOutput(base, file, cell) {
  const state = cell.querySelector(".state");
  state.className = "state";
  state.textContent = "starting…";
  try {
    const res = await api(base + "/download", {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({file}),
    });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
    const a = document.createElement("a");
    a.href = body.path;
    a.download = body.filename;
    document.body.appendChild(a);
    a.click();
    a.remove();
    state.textContent = "started: see the browser's downloads";
  } catch (err) {
    state.className = "state error";
    state.textContent = `download failed: ${err.message || err}`;
  }
}

// The log view holds at most this many lines (pod headings and notes
// included); older ones are dropped, and a marker at the top counts them.
const LOG_LINES = 5000;
// Which followLog owns #log: a timer of one closed since does nothing.
let logGen = 0;

function followLog(base) {
  const log = $("#log"), state = $("#log-state");
  const gen = ++logGen;
  let dropped = 0;
  let marker = null;
  // Lines not yet in the page: added together, at most every 50 ms, so a
  // burst costs one layout, not one per line.
  let waiting = [];
  let flushQueued = false;
  const reset = () => {
    log.textContent = "";
    waiting = [];
    dropped = 0;
    marker = document.createElement("span");
    marker.className = "dropped";
    marker.hidden = true;
    log.appendChild(marker);
    state.textContent = "(following)";
  };
  reset();
  const flush = () => {
    flushQueued = false;
    if (gen !== logGen || !waiting.length) return;
    const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    const lines = document.createDocumentFragment();
    for (const [cls, text] of waiting) {
      const el = document.createElement("span");
      if (cls) el.className = cls;
      el.textContent = text.endsWith("\n") ? text : text + "\n";
      lines.appendChild(el);
    }
    waiting = [];
    log.appendChild(lines);
    // The marker is the first child: lines are children 1..n.
    let over = log.childElementCount - 1 - LOG_LINES;
    if (over > 0) {
      dropped += over;
      while (over-- > 0) marker.nextElementSibling.remove();
      marker.hidden = false;
      marker.textContent = `${dropped} earlier ${dropped === 1 ? "line" : "lines"} not shown\n`;
    }
    if (atEnd) log.scrollTop = log.scrollHeight;
  };
  const add = (cls, text) => {
    waiting.push([cls, text]);
    if (waiting.length >= LOG_LINES) flush();
    else if (!flushQueued) { flushQueued = true; setTimeout(flush, 50); }
  };
  // A stream started again follows the log from its start: the view too.
  logSource = follow(base + "/log", {
    pod: e => add("pod", `── ${JSON.parse(e.data).title} ──`),
    line: e => add("", JSON.parse(e.data).text),
    note: e => add("note", JSON.parse(e.data).text),
    end: () => {
      flush();
      state.textContent = "(ended)";
      if (logSource) logSource.close();
      logSource = null;
    },
  }, {opened: reset, broken: text => { state.textContent = `(${text})`; }});
}

async function act(verb) {
  const {path} = route();
  const [, , ns, name] = path.split("/").map(decodeURIComponent);
  const out = $("#action-result");
  out.className = "";
  out.textContent = `${verb}…`;
  try {
    const res = await api(apiPath(ns, name) + "/" + verb, {method: "POST"});
    const body = await res.json().catch(() => ({}));
    if (!res.ok) {
      out.className = "error";
      out.textContent = body.error || `${verb} failed: HTTP ${res.status}`;
      return;
    }
    out.textContent = body.message || "done";
    if (verb === "rerun" && body.name) {
      location.hash = `#/task/${encodeURIComponent(ns)}/${encodeURIComponent(body.name)}`;
    }
  } catch (err) {
    out.className = "error";
    out.textContent = `${verb} failed: ${err}`;
  }
}

// ---- the timeline -------------------------------------------------------------

let timelineQueued = false;
function scheduleTimeline() {
  if (timelineQueued) return;
  timelineQueued = true;
  setTimeout(() => { timelineQueued = false; drawTimeline(); }, 500);
}

// As the list: only the lanes in view, and a margin, are in the page, so
// thousands of Tasks cost a few dozen lanes; spacers above and below keep
// the scroll bar true. The axis spans every Task shown.
let lanes = [];              // the Tasks shown, in the list's order
let axis = null;             // {t0, t1, now, several}
let laneHeight = 18;         // px, replaced by the first lane's measure
let laneFrom = 0, laneTo = 0;

function drawTimeline() {
  const f = filters();
  lanes = order.map(k => rows.get(k)).filter(r => matches(r, f));
  const el = $("#timeline");
  if (!lanes.length) { el.innerHTML = `<p class="muted">No Tasks match.</p>`; return; }
  const now = Date.now();
  // A Task's start may be stamped before its creation by clock skew
  // between the operator and the API server: the axis holds both.
  let t0 = Infinity, t1 = now - 1;
  for (const r of lanes) {
    t0 = Math.min(t0, Date.parse(r.created), r.started ? Date.parse(r.started) : Infinity);
    t1 = Math.max(t1, r.completed ? Date.parse(r.completed) : now);
  }
  // The namespace in a label only when the Tasks shown span several.
  axis = {t0, t1, now, several: new Set(lanes.map(r => r.namespace)).size > 1};
  const ticks = [];
  for (let i = 0; i < 4; i++) {
    const t = t0 + (t1 - t0) * i / 4;
    ticks.push(`<span class="tick" style="left:${i * 25}%">${esc(time(new Date(t).toISOString()))}</span>`);
  }
  el.innerHTML = `<div class="axis">${ticks.join("")}</div><div class="lanes"></div>`;
  renderLanes(true);
}

function laneHtml(r) {
  const {t0, t1, now, several} = axis;
  const pct = t => ((t - t0) / Math.max(1, t1 - t0) * 100).toFixed(3) + "%";
  const started = r.started ? Date.parse(r.started) : null;
  const created = Math.min(Date.parse(r.created), started ?? Infinity);
  const end = r.completed ? Date.parse(r.completed) : now;
  const segs = [];
  const waitEnd = started ?? end;
  segs.push(`<span class="seg queued" style="left:${pct(created)};width:calc(${pct(waitEnd)} - ${pct(created)})" title="queued or waiting ${span(waitEnd - created)}"></span>`);
  if (started != null) {
    const cls = r.phase === "Completed" ? "completed" : r.phase === "Failed" ? "failed" : "running";
    segs.push(`<span class="seg ${cls}" style="left:${pct(started)};width:calc(${pct(end)} - ${pct(started)})" title="${cls} ${span(end - started)}"></span>`);
  }
  return `<div class="row" data-key="${esc(r.key)}"><span class="label" title="${esc(r.key)}">${several ? esc(r.namespace) + "/" : ""}${esc(r.name)}</span><span class="lane">${segs.join("")}</span></div>`;
}

function renderLanes(force) {
  const box = $("#timeline .lanes");
  if (!box) return;
  const [from, to] = windowAt(box.getBoundingClientRect().top, lanes.length, laneHeight);
  if (!force && from === laneFrom && to === laneTo) return;
  laneFrom = from;
  laneTo = to;
  const gap = n => n > 0 ? `<div class="spacer" aria-hidden="true" style="height:${n * laneHeight}px"></div>` : "";
  box.innerHTML = gap(from) + lanes.slice(from, to).map(laneHtml).join("") + gap(lanes.length - to);
  const one = box.querySelector(".row");
  const h = one ? one.getBoundingClientRect().height : 0;
  if (h > 0 && Math.abs(h - laneHeight) > 0.5) {
    laneHeight = h;
    renderLanes(true);
  }
}

// ---- views ----------------------------------------------------------------------

function show() {
  const {path} = route();
  const parts = path.split("/");
  const view = parts[1] === "task" ? "task" : parts[1] === "timeline" ? "timeline" : "list";
  for (const v of ["list", "task", "timeline"]) $(`#${v}-view`).hidden = v !== view;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.nav === view);
  const f = filters();
  const form = $("#filters");
  for (const k of ["ns", "phase", "label", "name"]) form.elements[k].value = f[k];
  if (view === "task") {
    openTask(decodeURIComponent(parts[2] || ""), decodeURIComponent(parts[3] || ""));
  } else {
    closeTask();
  }
  if (view === "list") { needsFullPaint = true; schedulePaint(); }
  if (view === "timeline") drawTimeline();
}

async function start() {
  takeToken();
  if (!sessionStorage.getItem(TOKEN_KEY)) {
    const live = $("#live");
    live.textContent = "no token: open the URL that `kubectl longtask ui` printed";
    live.className = "live off";
  }
  try {
    const c = await (await api("/api/config")).json();
    $("#context").textContent = `${c.context || ""}${c.namespace ? " · namespace " + c.namespace : " · all namespaces"}`;
    document.title = `longtask · ${c.context || ""}`;
  } catch (_) { /* the list shows the error */ }
  const form = $("#filters");
  form.addEventListener("input", e => setFilter(e.target.name, e.target.value.trim()));
  form.addEventListener("submit", e => e.preventDefault());
  $("#cancel").addEventListener("click", () => act("cancel"));
  $("#rerun").addEventListener("click", () => act("rerun"));
  window.addEventListener("hashchange", () => {
    // The printed URL opened again in this tab: a new token, new streams.
    if (takeToken()) { location.reload(); return; }
    show();
  });
  window.addEventListener("scroll", onScroll, {passive: true});
  window.addEventListener("resize", onScroll);
  connectList();
  show();
}

start();
