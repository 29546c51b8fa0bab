// throwbox dashboard: plain JS, no build step, no CDN. Reads the service's API with a key kept in
// sessionStorage; follows /v1/events with fetch() (EventSource cannot send an Authorization header).
//
// Opening costs a few requests whatever the table's age: the tables, one event stream that begins with
// the newest RECENT events of the table (?last=) and then follows, the open round once the stream has
// said where the past ends (X-Throwbox-Head-Id), and the evidence frame of the newest read. Past events
// fill the lists without a request each; only new round events refresh the round, one refresh at a time.
"use strict";

const MAX_ITEMS = 20;
const RECENT = 100;
const ROUND_EVENTS = ["round_opened", "wager_placed", "no_more_bets", "roll", "invalid_roll", "settlement", "correction"];
const $ = (id) => document.getElementById(id);
let key = null;
let tableId = null;
let cursor = 0;  // the stream resumes after this event id
let streamAbort = null;
let latestRead = null;
let imageTimer = null;
let roundBusy = false;
let roundAgain = false;

async function api(path, options = {}) {
  const headers = Object.assign({ Authorization: "Bearer " + key }, options.headers || {});
  const response = await fetch(path, Object.assign({}, options, { headers }));
  if (response.status === 401 || response.status === 403) {
    throw new Error("the key was refused (" + response.status + "): use a dealer or surveillance key");
  }
  return response;
}

function text(tag, content, cls) {
  const el = document.createElement(tag);
  el.textContent = content;
  if (cls) el.className = cls;
  return el;
}

function timeOf(iso) {
  return iso ? new Date(iso).toLocaleTimeString() : "";
}

function prepend(list, item) {
  list.insertBefore(item, list.firstChild);
  while (list.children.length > MAX_ITEMS) list.removeChild(list.lastChild);
}

function describeRead(data) {
  const parts = [data.verdict.toUpperCase()];
  if (data.faces && data.faces.length) parts.push("faces " + data.faces.join(" "));
  if (data.winner != null) parts.push("winner " + data.winner + " x" + data.match_count);
  if (data.extra_roll) {
    parts.push("Extra Roll: " + data.extra_roll.new_matches + " new matches, " + data.extra_roll.kept + " kept");
    if (data.extra_roll.verdict && data.extra_roll.verdict !== data.verdict) {
      // The read judges every die in the frame; the Extra Roll counts only the rethrown ones (593.4(g)).
      parts.push("the Extra Roll counts as " + data.extra_roll.verdict.toUpperCase()
        + " (what the judge found about the kept dice alone is set aside)");
    }
  }
  if (data.layout) parts.push("layout box " + (data.layout.ok ? "OK" : "WRONG"));
  if (data.reasons && data.reasons.length) parts.push(data.reasons.slice(0, 2).join("; "));
  return parts.join(" | ");
}

async function showFrame(sha256) {
  const response = await api("/v1/evidence/" + sha256);
  if (!response.ok) return;
  const blob = await response.blob();
  const img = $("frame");
  const old = img.src;
  img.src = URL.createObjectURL(blob);
  img.dataset.sha256 = sha256;
  if (old && old.startsWith("blob:")) URL.revokeObjectURL(old);
}

function onRead(event) {
  const data = event.data;
  latestRead = data;
  const caption = $("read");
  caption.textContent = "";
  caption.appendChild(text("span", describeRead(data), (data.extra_roll && data.extra_roll.verdict) || data.verdict));
  caption.appendChild(text("span", "  " + timeOf(event.created_at) + " " + (data.frame_id || ""), "time"));
  caption.dataset.verdict = data.verdict;
  if (data.evidence_sha256) {
    clearTimeout(imageTimer);  // a backlog of reads shows only the newest frame
    imageTimer = setTimeout(() => showFrame(data.evidence_sha256), 150);
  }
}

function onRoll(event) {
  const d = event.data;
  const li = text("li", "");
  li.appendChild(text("span", timeOf(event.created_at) + " ", "time"));
  li.appendChild(text("span", d.verdict + " ", d.verdict));
  li.appendChild(text("span", "round " + d.round_id + " [" + (d.faces || []).join(" ") + "] -> " + d.phase
    + (event.type === "invalid_roll" && d.rethrow ? " (rethrow)" : "")));
  li.dataset.rollId = d.roll_id;
  prepend($("rolls"), li);
}

// The table's own faults (its calibration, enrollment or camera; `faults` of GET /v1/tables[/{id}]), shown
// above the view: taken from the table list the page opens with (no request of their own), and read again
// after every live alert, which is when they change.
async function loadFaults() {
  if (!tableId) return;
  const response = await api("/v1/tables/" + encodeURIComponent(tableId));
  if (response.ok) showFaults((await response.json()).faults);
}

function showFaults(faults) {
  faults = faults || [];
  const box = $("faults");
  box.textContent = "";
  for (const f of faults) box.appendChild(text("div", "table " + tableId + ": " + f.part + ": " + f.detail, "fault"));
  box.hidden = !faults.length;
}

function onAlert(event) {
  const d = event.data;
  if (d.kind === "camera_lost" || d.kind === "camera_recovered") {
    const pill = $("camera");
    pill.hidden = false;
    pill.textContent = d.kind === "camera_lost" ? "camera lost" : "camera ok";
    pill.className = "pill " + (d.kind === "camera_lost" ? "off" : "on");
  }
  const li = text("li", "");
  li.className = "alert";
  li.dataset.kind = d.kind;
  li.appendChild(text("span", timeOf(event.created_at) + " ", "time"));
  li.appendChild(text("span", d.kind + " ", "alert-kind"));
  li.appendChild(text("span", d.message));
  const sha = d.data && d.data.evidence_sha256;
  if (sha) {
    const link = text("a", " [frame]");
    link.href = "#";
    link.onclick = (e) => { e.preventDefault(); showFrame(sha); };
    li.appendChild(link);
  }
  prepend($("alerts"), li);
}

async function loadRound() {
  const box = $("round");
  const response = await api("/v1/tables/" + encodeURIComponent(tableId) + "/rounds/current");
  if (response.status === 204) {  // no open round: an answer, not an error
    box.textContent = "no open round";
    return;
  }
  if (response.status === 404) {
    box.textContent = "no table " + tableId;
    return;
  }
  if (!response.ok) return;
  const round = await response.json();
  box.textContent = "";
  const s = round.summary || {};
  let line = "round " + round.id + " (" + round.game + "), phase " + round.phase;
  if (s.first_roll) line += "; roll one [" + s.first_roll.faces.join(" ") + "] winner " + s.first_roll.winner
    + " x" + s.first_roll.match_count;
  if (s.rethrows && s.rethrows.length) line += "; " + s.rethrows.length + " rethrow(s)";
  box.appendChild(text("div", line));
  const table = document.createElement("table");
  table.className = "wagers";
  for (const w of round.wagers) {
    const tr = document.createElement("tr");
    const what = w.kind + (w.face != null ? " " + w.face : "") + (w.count != null ? " " + w.count : "");
    for (const cell of ["seat " + w.seat, what, "$" + w.amount]) tr.appendChild(text("td", cell));
    table.appendChild(tr);
  }
  box.appendChild(table);
}

// One request at a time: events that arrive while one is in flight ask for one more afterwards.
async function refreshRound() {
  if (roundBusy) { roundAgain = true; return; }
  roundBusy = true;
  try {
    do {
      roundAgain = false;
      await loadRound();
    } while (roundAgain);
  } finally {
    roundBusy = false;
  }
}

async function onSettlement(event) {
  const d = event.data;
  const seats = Object.entries(d.seats || {}).map(([seat, t]) => "seat " + seat + " net " + t.net).join(", ");
  const li = text("li", "");
  li.appendChild(text("span", timeOf(event.created_at) + " ", "time"));
  li.appendChild(text("span", "settled round " + d.round_id + (d.final ? "" : " (roll one)") + ": " + seats, "valid"));
  prepend($("rolls"), li);
}

// `live`: the event is newer than the stream's start; past events only fill the lists.
function handle(event, live) {
  cursor = Math.max(cursor, event.id);
  if (tableId && event.table_id && event.table_id !== tableId) return;
  if (event.type === "read") onRead(event);
  else if (event.type === "roll" || event.type === "invalid_roll") onRoll(event);
  else if (event.type === "alert") onAlert(event);
  else if (event.type === "settlement") onSettlement(event);
  if (live && ROUND_EVENTS.includes(event.type)) refreshRound().catch(() => {});
  if (live && event.type === "alert") loadFaults().catch(() => {});
}

function parseBlock(block) {
  let data = "";
  for (const line of block.split("\n")) {
    if (line.startsWith("data:")) data += line.slice(5).trim();
  }
  return data ? JSON.parse(data) : null;
}

function setStream(label, on) {
  $("stream").textContent = label;
  $("stream").className = "pill " + (on ? "on" : "off");
}

async function follow() {
  let first = true;
  for (;;) {
    const abort = new AbortController();
    streamAbort = abort;
    try {
      // The first connection asks for the recent past only; a reconnection for everything it missed.
      const from = first ? "last=" + RECENT : "after=" + cursor;
      const url = "/v1/events?" + from + "&table_id=" + encodeURIComponent(tableId);
      const response = await api(url, { signal: abort.signal });
      if (!response.ok) throw new Error("event stream: HTTP " + response.status);
      const head = Number(response.headers.get("X-Throwbox-Head-Id") || 0);
      cursor = Math.max(cursor, head);
      first = false;
      setStream("live", true);
      refreshRound().catch(() => {});  // the round as of the stream's start; new events refresh it
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const event = parseBlock(block);
          if (event) handle(event, event.id > head);
        }
      }
    } catch (err) {
      if (err.name === "AbortError" || abort !== streamAbort) return;
      if (String(err.message).includes("refused")) { signOut(err.message); return; }
    }
    if (abort !== streamAbort) return;  // signed out meanwhile
    setStream("reconnecting", false);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    if (abort !== streamAbort) return;
  }
}

function clearView() {
  for (const id of ["rolls", "alerts"]) $(id).textContent = "";
  $("read").textContent = "no read yet";
  $("round").textContent = "no open round";
  $("camera").hidden = true;
  const img = $("frame");
  if (img.src && img.src.startsWith("blob:")) URL.revokeObjectURL(img.src);
  img.removeAttribute("src");
  delete img.dataset.sha256;
  clearTimeout(imageTimer);
  latestRead = null;
  cursor = 0;
}

// Back to the sign-in form: the key is forgotten and the stream closed; `message` says why.
function signOut(message) {
  forgetKey();
  key = null;
  if (streamAbort) streamAbort.abort();
  streamAbort = null;
  clearView();
  $("main").hidden = true;
  $("table-pick").hidden = true;
  $("signout").hidden = true;
  $("login").hidden = false;
  $("key").value = "";
  $("login-error").textContent = message || "";
  setStream("signed out", false);
  $("key").focus();
}

async function start() {
  key = storedKey();
  if (!key) { signOut(""); return; }
  setStream("signing in", false);
  let tables;
  try {
    const response = await api("/v1/tables");
    if (!response.ok) throw new Error("cannot list tables: HTTP " + response.status);
    tables = await response.json();
  } catch (err) { signOut(err.message); return; }
  const select = $("table");
  select.textContent = "";
  const wanted = new URLSearchParams(window.location.search).get("table");
  for (const t of tables) select.appendChild(new Option(t.id + " (" + t.game + ")", t.id));
  if (!tables.length) select.appendChild(new Option("no tables", ""));
  tableId = wanted || (tables.find((t) => t.id === "demo") || tables[0] || { id: "" }).id;
  select.value = tableId;
  $("login").hidden = true;
  $("login-error").textContent = "";
  $("main").hidden = false;
  $("table-pick").hidden = false;
  $("signout").hidden = false;
  showFaults((tables.find((t) => t.id === tableId) || {}).faults);
  follow();
}

bindSignIn(start);
$("signout").addEventListener("click", () => signOut("signed out"));
$("table").addEventListener("change", () => {
  const url = new URL(window.location.href);
  url.searchParams.set("table", $("table").value);
  window.location.href = url.toString();
});
takeKeyFromHash();
start();

// ---- Dice fairness panel (issue 49): self-contained. Every few seconds, while the page shows a table, it
// reads GET /v1/tables/{id}/fairness and draws observed against expected (with the exact 95 % interval) per
// face and per outcome, the chi-square p-values and the sequential charts nearest their threshold.
(function fairnessPanel() {
  const SVG = "http://www.w3.org/2000/svg";
  const PANELS = [["faces", "faces, over the set"], ["pip_street", "Pip Street winner"], ["like_kind", "Like Kind count"]];

  function svgEl(tag, attrs) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    return el;
  }

  function chart(name, rows) {
    const w = 300, h = 110, pad = 18;
    const top = Math.max(0.05, ...rows.map((r) => Math.max(r.high, r.expected_p))) * 1.1;
    const y = (p) => h - pad - (p / top) * (h - 2 * pad);
    const svg = svgEl("svg", { width: w, height: h, viewBox: "0 0 " + w + " " + h, "data-panel": name });
    const step = (w - 10) / rows.length;
    rows.forEach((r, i) => {
      const x = 10 + i * step + step * 0.2, bw = step * 0.6, mid = x + bw / 2;
      svg.appendChild(svgEl("rect", { class: "observed", x, y: y(r.observed_p), width: bw, height: Math.max(0, y(0) - y(r.observed_p)) }));
      svg.appendChild(svgEl("line", { class: "interval", x1: mid, x2: mid, y1: y(r.low), y2: y(r.high) }));
      svg.appendChild(svgEl("line", { class: "expected", x1: x - 2, x2: x + bw + 2, y1: y(r.expected_p), y2: y(r.expected_p) }));
      const label = svgEl("text", { class: "label", x: mid, y: h - 4, "text-anchor": "middle" });
      label.textContent = r.label;
      svg.appendChild(label);
    });
    return svg;
  }

  async function refresh() {
    if (!key || !tableId || $("main").hidden) return;
    const response = await api("/v1/tables/" + encodeURIComponent(tableId) + "/fairness");
    if (!response.ok) return;
    const doc = await response.json();
    const box = $("fairness");
    box.textContent = "";
    box.dataset.rolls = doc.rolls;
    const set = doc.dice_set ? doc.dice_set.name : "none registered";
    box.appendChild(text("div", "dice set " + set + ": " + doc.rolls + " valid rolls", "fair-caption"));
    for (const [name, title] of PANELS) {
      box.appendChild(text("div", title + " (observed, 95 % interval, expected)", "fair-caption"));
      box.appendChild(chart(name, doc[name]));
    }
    const tests = doc.chi_square.filter((t) => ["faces, over the set", "Pip Street winner", "Like Kind count"].includes(t.what));
    box.appendChild(text("div", "chi-square p: " + tests.map((t) => t.what + " " + t.p_value.toPrecision(3)).join("; "), "fair-caption"));
    const near = doc.sequential.slice().sort((a, b) => b.statistic_llr / b.threshold_llr - a.statistic_llr / a.threshold_llr)[0];
    if (near) {
      const open = doc.sequential.filter((s) => s.open_alert != null).length;
      const line = text("div", "nearest threshold: " + near.chart + " " + Math.round(100 * near.statistic_llr / near.threshold_llr)
        + " %" + (open ? "; " + open + " chart(s) alerted" : ""), "fair-caption" + (open ? " suspect" : ""));
      line.id = "fairness-watch";
      box.appendChild(line);
    }
  }

  setInterval(() => { refresh().catch(() => {}); }, 3000);
  setTimeout(() => { refresh().catch(() => {}); }, 300);
})();
