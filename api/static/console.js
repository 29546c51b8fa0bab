// throwbox table console (issue 56): plain JS, no build step, no external assets. The same sign-in as the
// dashboard (the key in sessionStorage). A dealer decides the roll the reader left to a person; surveillance
// sees the rolls where the dealer's keyed faces and the reader's sure faces disagree, and acknowledges them.
//
// The roll being decided is in the address (?table=&roll=) and the person's edits in sessionStorage, so a
// reload mid-roll comes back to the same state; a roll that no longer waits (the round moved on) says so.
"use strict";

const POLL_MS = 2000;
const FACES = "123456";
const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
let key = null;
let tableId = null;
let waiting = null;   // the roll shown (GET /v1/console/waiting)
let edits = null;     // {faces: {index: face}, struck: [index], added: [{box_xyxy, face}], call}
let lastTyped = null; // the reading-order place of the die typed last (whole rolls are keyed in order)
let pollTimer = null;
let sending = false;

function api(path, options = {}) {
  const headers = Object.assign({ Authorization: "Bearer " + key }, options.headers || {});
  return fetch(path, Object.assign({}, options, { headers }));
}

async function detailOf(response) {
  // An error body in words: a sentence, the rules engine's problems by clause, or the fields that do not fit.
  let body = null;
  try { body = await response.json(); } catch (e) { return "HTTP " + response.status; }
  const d = body && body.detail;
  if (typeof d === "string") return d;
  if (d && d.problems) return d.message + ": " + d.problems.map((p) => p.clause + " " + p.message).join("; ");
  if (Array.isArray(d)) return d.map((e) => (e.loc || []).join(".") + ": " + e.msg).join("; ");
  return "HTTP " + response.status;
}

function refusedInWords(status, detail) {
  const what = status === 401 ? "the key was refused (401)" : "refused (403): this key may not submit here";
  return what + ": " + detail;
}

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text != null) node.textContent = text;
  return node;
}

function svgEl(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

// --- state: the address and sessionStorage -------------------------------------------------------------

function storeKey(rollId) { return "throwbox.console." + tableId + "." + rollId; }

function setAddress(rollId) {
  const params = new URLSearchParams(window.location.search);
  params.set("table", tableId);
  if (rollId) params.set("roll", rollId); else params.delete("roll");
  history.replaceState(null, "", window.location.pathname + "?" + params.toString());
}

function save() {
  if (waiting && edits) sessionStorage.setItem(storeKey(waiting.roll_id), JSON.stringify(edits));
}

function load(rollId) {
  try {
    const kept = JSON.parse(sessionStorage.getItem(storeKey(rollId)) || "null");
    if (kept && kept.faces && kept.struck && kept.added && kept.call) return kept;
  } catch (e) { /* a damaged entry: start afresh */ }
  return { faces: {}, struck: [], added: [], call: "valid" };
}

// --- the dice: the reader's, the person's ----------------------------------------------------------------

function faceOf(die) {
  const typed = edits.faces[die.index];
  return typed != null ? typed : die.face;
}

function readerSaid(die) {
  // The reader's face and confidence; an unsure die shows the face model's guess with a question mark.
  const face = die.face != null ? String(die.face) : die.guess != null ? die.guess + "?" : "?";
  return face + " " + die.confidence.toFixed(2);
}

function isStruck(die) { return edits.struck.includes(die.index); }

function counted() {
  // The dice the person keys: the read's (not struck, not an Extra Roll's kept dice) and the added ones.
  return waiting.dice.filter((d) => !d.kept && !isStruck(d)).length + edits.added.length;
}

function inputs() { return Array.from(document.querySelectorAll("#dice input")); }

function drawDice() {
  const box = $("dice");
  box.textContent = "";
  waiting.dice.forEach((die) => {
    const cls = ["die"];
    if (die.kept) cls.push("kept");
    else if (isStruck(die)) cls.push("struck");
    else if (edits.faces[die.index] != null) cls.push("edited");
    else if (die.uncertain) cls.push("uncertain");
    const wrap = el("label", { class: cls.join(" ") });
    const face = faceOf(die);
    const input = el("input", {
      type: "text", inputmode: "numeric", maxlength: "1", autocomplete: "off",
      "aria-label": "die " + (die.order + 1) + (die.uncertain ? " (the reader is not sure)" : "")
        + (die.kept ? " (kept)" : ""),
    });
    input.value = isStruck(die) ? "x" : face != null ? String(face) : "";
    input.dataset.index = die.index;
    input.dataset.order = die.order;
    input.readOnly = die.kept;
    wrap.appendChild(input);
    const conf = die.kept ? "kept" : readerSaid(die);
    wrap.appendChild(el("span", {}, conf));
    box.appendChild(wrap);
  });
  edits.added.forEach((added, i) => {
    const wrap = el("label", { class: "die added" });
    const input = el("input", { type: "text", inputmode: "numeric", maxlength: "1", autocomplete: "off",
      "aria-label": "added die " + (i + 1) });
    input.value = added.face != null ? String(added.face) : "";
    input.dataset.added = i;
    input.dataset.order = waiting.dice.length + i;
    wrap.appendChild(input);
    wrap.appendChild(el("span", {}, "added"));
    box.appendChild(wrap);
  });
  const withFace = waiting.dice.filter((d) => !d.kept && !isStruck(d) && faceOf(d) != null).length
    + edits.added.filter((a) => a.face != null).length;
  $("count").textContent = withFace + " of " + counted() + " dice have a face" + (waiting.dice_expected != null
    ? "; the " + (waiting.kind === "extra_roll" ? "Extra Roll rethrows " : "game has ") + waiting.dice_expected : "");
  for (const r of document.querySelectorAll("input[name=call]")) r.checked = r.value === edits.call;
  drawOverlay();
}

function drawOverlay() {
  const img = $("frame");
  const svg = $("overlay");
  svg.textContent = "";
  if (!img.naturalWidth) return;
  svg.setAttribute("viewBox", "0 0 " + img.naturalWidth + " " + img.naturalHeight);
  const font = Math.max(12, img.naturalWidth / 60);
  const focused = document.activeElement && document.activeElement.dataset
    ? document.activeElement.dataset : {};
  const mark = (b, cls, label, labelCls, onClick) => {
    const [x0, y0, x1, y1] = b;
    const rect = svgEl("rect", { x: x0, y: y0, width: x1 - x0, height: y1 - y0, class: "box " + cls });
    rect.addEventListener("click", (e) => { e.stopPropagation(); onClick(); });
    svg.appendChild(rect);
    const tag = svgEl("text", { x: x0, y: Math.max(font, y0 - 3), class: "tag " + labelCls, "font-size": font });
    tag.textContent = label;
    svg.appendChild(tag);
    if (cls.includes("struck")) {
      svg.appendChild(svgEl("line", { x1: x0, y1: y0, x2: x1, y2: y1, class: "strike" }));
      svg.appendChild(svgEl("line", { x1: x0, y1: y1, x2: x1, y2: y0, class: "strike" }));
    }
  };
  waiting.dice.forEach((die) => {
    const cls = [die.kept ? "kept" : isStruck(die) ? "struck" : edits.faces[die.index] != null ? "edited"
      : die.uncertain ? "uncertain" : ""];
    if (focused.index === String(die.index)) cls.push("focus");
    const reader = readerSaid(die);
    const typed = edits.faces[die.index];
    const label = (die.order + 1) + ": " + reader + (typed != null ? " -> " + typed : "");
    mark(die.box_xyxy, cls.join(" "), label, die.uncertain ? "uncertain" : "", () => focusDie(die.index));
  });
  edits.added.forEach((added, i) => {
    const cls = "added" + (focused.added === String(i) ? " focus" : "");
    mark(added.box_xyxy, cls, "+ " + (added.face != null ? added.face : "?"), "", () => focusAdded(i));
  });
}

function focusDie(index) {
  const input = inputs().find((i) => i.dataset.index === String(index));
  if (input) { input.focus(); input.select(); }
}

function focusAdded(i) {
  const input = inputs().find((x) => x.dataset.added === String(i));
  if (input) { input.focus(); input.select(); }
}

function firstUncertain() {
  return inputs().find((i) => {
    if (i.dataset.added != null) return i.value === "";
    const die = waiting.dice.find((d) => String(d.index) === i.dataset.index);
    return die && !die.kept && !isStruck(die) && faceOf(die) == null;
  });
}

function afterTyping(input) {
  // Keyed in order (the first die, or the one after the die typed last): on to the next die. A spot
  // correction: on to the next die still without a face, or to submit when none is left.
  const order = Number(input.dataset.order);
  const all = inputs().filter((i) => !i.readOnly);
  const at = all.indexOf(input);
  const inOrder = at === 0 || (lastTyped != null && at > 0 && Number(all[at - 1].dataset.order) === lastTyped);
  lastTyped = order;
  let next = null;
  if (inOrder) next = all[all.indexOf(input) + 1] || null;
  else next = firstUncertain() || null;
  (next || $("submit")).focus();
  if (next) next.select();
}

function onDieKey(e) {
  const input = e.target;
  if (!input.matches || !input.matches("#dice input")) return;
  const all = inputs();
  const at = all.indexOf(input);
  const index = input.dataset.index != null ? Number(input.dataset.index) : null;
  const added = input.dataset.added != null ? Number(input.dataset.added) : null;
  if (e.key === "Enter") return;  // the form submits
  if (e.key === "Tab" || e.ctrlKey || e.metaKey || e.altKey) return;
  e.preventDefault();
  if (input.readOnly) { if (e.key === "ArrowRight" || e.key === "ArrowDown") (all[at + 1] || input).focus(); return; }
  if (FACES.includes(e.key) && e.key.length === 1) {
    const face = Number(e.key);
    if (added != null) edits.added[added].face = face;
    else {
      edits.faces[index] = face;
      edits.struck = edits.struck.filter((i) => i !== index);
    }
    save();
    drawDice();
    const again = inputs().find((i) => i.dataset.order === input.dataset.order);
    afterTyping(again);
    return;
  }
  if (e.key === "x" || e.key === "X" || e.key === "0") {
    if (added != null) { edits.added.splice(added, 1); save(); drawDice(); (inputs()[at] || $("submit")).focus(); return; }
    if (edits.struck.includes(index)) edits.struck = edits.struck.filter((i) => i !== index);
    else { edits.struck.push(index); delete edits.faces[index]; }
    save();
    drawDice();
    focusDie(index);
    return;
  }
  if (e.key === "Backspace" || e.key === "Delete") {
    if (added != null) edits.added[added].face = null;
    else { delete edits.faces[index]; edits.struck = edits.struck.filter((i) => i !== index); }
    save();
    drawDice();
    (inputs()[at] || $("submit")).focus();
    return;
  }
  const moves = { ArrowRight: at + 1, ArrowDown: at + 1, ArrowLeft: at - 1, ArrowUp: at - 1, Home: 0, End: all.length - 1 };
  if (e.key in moves) {
    const target = all[Math.max(0, Math.min(all.length - 1, moves[e.key]))];
    target.focus();
    target.select();
    lastTyped = null;
  }
}

function onFrameClick(e) {
  // A click where no box is: a die the camera missed. Its box is the size of the read's median die.
  if (!waiting) return;
  const svg = $("overlay");
  const at = new DOMPoint(e.clientX, e.clientY).matrixTransform(svg.getScreenCTM().inverse());
  const sides = waiting.dice.map((d) => Math.max(d.box_xyxy[2] - d.box_xyxy[0], d.box_xyxy[3] - d.box_xyxy[1]))
    .sort((a, b) => a - b);
  const side = sides.length ? sides[Math.floor(sides.length / 2)] : $("frame").naturalWidth / 20;
  const box = [at.x - side / 2, at.y - side / 2, at.x + side / 2, at.y + side / 2].map((v) => Math.round(v * 10) / 10);
  edits.added.push({ box_xyxy: box, face: null });
  save();
  drawDice();
  focusAdded(edits.added.length - 1);
}

// --- the roll waiting for a person -------------------------------------------------------------------

async function showFrame(img, sha256) {
  if (!sha256) { img.removeAttribute("src"); return; }
  const response = await api("/v1/evidence/" + sha256);
  if (!response.ok) return;
  const old = img.src;
  img.src = URL.createObjectURL(await response.blob());
  img.dataset.sha256 = sha256;
  if (old && old.startsWith("blob:")) URL.revokeObjectURL(old);
}

function show(roll) {
  waiting = roll;
  lastTyped = null;
  $("error").textContent = "";
  if (!roll) {
    $("decide").hidden = true;
    $("idle").hidden = false;
    $("idle-text").textContent = "No roll at table " + tableId + " waits for a person. This page follows the table.";
    setAddress(null);
    return;
  }
  edits = load(roll.roll_id);
  setAddress(roll.roll_id);
  $("idle").hidden = true;
  $("decide").hidden = false;
  $("waiting-title").textContent = "Roll " + roll.roll_id + " (round " + roll.round_id + ", "
    + (roll.kind === "extra_roll" ? "the Extra Roll" : "first roll") + ") waits for a person";
  const reasons = $("reasons");
  reasons.textContent = "";
  for (const r of roll.reasons) reasons.appendChild(el("li", {}, r));
  if (!roll.read_id) reasons.appendChild(el("li", { class: "error" }, "no read of this roll: key it at the dealer terminal"));
  drawDice();
  const img = $("frame");
  img.onload = () => drawOverlay();
  showFrame(img, roll.evidence_sha256);
  const start = firstUncertain() || inputs()[0];
  if (start) { start.focus(); start.select(); }
}

async function showLearning() {
  // The table's one line of what it has learned from its people (GET /v1/tables/{id}/learning).
  try {
    const response = await api("/v1/tables/" + encodeURIComponent(tableId) + "/learning");
    $("learning").textContent = response.ok ? "this table " + (await response.json()).line : "";
  } catch (e) {
    $("learning").textContent = "";
  }
}

async function poll() {
  clearTimeout(pollTimer);
  showLearning();
  try {
    const response = await api("/v1/console/waiting?table_id=" + encodeURIComponent(tableId));
    if (response.status === 401 || response.status === 403) {
      signOut(refusedInWords(response.status, await detailOf(response)).replace("may not submit here", "may not open the console"));
      return;
    }
    if (response.ok && !sending) {
      const rolls = await response.json();
      const now = rolls[0] || null;
      const shown = waiting ? waiting.roll_id : new URLSearchParams(window.location.search).get("roll");
      if ((now && now.roll_id) !== (waiting && waiting.roll_id)) {
        if (shown && (!now || now.roll_id !== shown)) {
          $("notice").textContent = "roll " + shown + " no longer waits for a person: the round moved on"
            + (now ? "; roll " + now.roll_id + " waits now" : "");
        }
        show(now);
      }
    }
  } catch (e) {
    $("notice").textContent = "cannot reach the service: " + e.message;
  }
  pollTimer = setTimeout(poll, POLL_MS);
}

async function submit(e) {
  e.preventDefault();
  if (!waiting || sending) return;
  const call = (document.querySelector("input[name=call]:checked") || { value: "valid" }).value;
  edits.call = call;
  save();
  const body = {
    table_id: tableId,
    roll_id: waiting.roll_id,
    round_id: waiting.round_id,
    call,
    dice: waiting.dice.slice().sort((a, b) => a.index - b.index).map((d) => ({
      face: isStruck(d) || d.kept ? null : faceOf(d),
      struck: isStruck(d),
    })),
    added: edits.added.filter((a) => a.face != null),
  };
  if (call === "valid" && edits.added.some((a) => a.face == null)) {
    $("error").textContent = "an added die has no face: type it, or strike it out with x";
    return;
  }
  sending = true;
  $("error").textContent = "";
  try {
    const response = await api("/v1/console/decisions", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    if (response.ok) {
      const decided = await response.json();
      sessionStorage.removeItem(storeKey(waiting.roll_id));
      $("notice").textContent = "roll " + waiting.roll_id + " decided as dealer roll " + decided.dealer_roll_id
        + ": " + decided.answer.message + (decided.mismatch ? " (the camera was sure of another face: surveillance will see it)" : "");
      waiting = null;
      show(null);
    } else if (response.status === 401 || response.status === 403) {
      $("error").textContent = refusedInWords(response.status, await detailOf(response));
    } else {
      $("error").textContent = (response.status === 409 ? "refused (409): " : "refused (" + response.status + "): ")
        + await detailOf(response);
    }
  } catch (err) {
    $("error").textContent = "not sent: " + err.message + " (the decision is kept; submit again)";
  } finally {
    sending = false;
  }
  poll();
}

// --- surveillance: the dealer's call and the camera -------------------------------------------------------

let mismatchTimer = null;

async function pollMismatches() {
  clearTimeout(mismatchTimer);
  let response;
  try {
    response = await api("/v1/console/mismatches?table_id=" + encodeURIComponent(tableId));
  } catch (e) {
    mismatchTimer = setTimeout(pollMismatches, 4 * POLL_MS);
    return;
  }
  if (!response.ok) { $("surveillance").hidden = true; return; }  // a dealer's key: not theirs to see
  $("surveillance").hidden = false;
  const rows = await response.json();
  const box = $("mismatches");
  const seen = new Set(rows.map((r) => r.roll_id));
  for (const card of Array.from(box.children)) if (!seen.has(card.dataset.rollId)) card.remove();
  for (const row of rows) {
    if (box.querySelector('[data-roll-id="' + CSS.escape(row.roll_id) + '"]')) continue;
    box.appendChild(mismatchCard(row));
  }
  $("mismatch-empty").hidden = rows.length > 0;
  mismatchTimer = setTimeout(pollMismatches, 4 * POLL_MS);
}

function mismatchCard(row) {
  const card = el("article", { class: "mismatch" });
  card.dataset.rollId = row.roll_id;
  const stage = el("div", { class: "stage" });
  const img = el("img", { alt: "the evidence frame of roll " + row.roll_id });
  const svg = svgEl("svg", { class: "overlay" });
  stage.append(img, svg);
  img.onload = () => {
    svg.setAttribute("viewBox", "0 0 " + img.naturalWidth + " " + img.naturalHeight);
    const font = Math.max(12, img.naturalWidth / 60);
    for (const b of row.boxes) {
      const [x0, y0, x1, y1] = b.box_xyxy;
      const disputed = b.reader_sure && b.read_index != null && (b.label === "no_die" || b.face !== b.reader_face);
      svg.appendChild(svgEl("rect", { x: x0, y: y0, width: x1 - x0, height: y1 - y0,
        class: "box" + (disputed ? " disputed" : b.origin === "person" ? " added" : "") }));
      const tag = svgEl("text", { x: x0, y: Math.max(font, y0 - 3), class: "tag", "font-size": font });
      tag.textContent = (b.reader_face != null ? b.reader_face : "+") + (disputed ? " / " + (b.face != null ? b.face : "x") : "");
      svg.appendChild(tag);
    }
  };
  showFrame(img, row.evidence_sha256);
  const side = el("div");
  side.appendChild(el("p", {}, "Round " + row.round_id + ", roll " + row.roll_id + ": keyed by " + row.decided_by
    + " as " + row.verdict + " [" + row.faces.join(" ") + "]"));
  const table = el("table");
  const head = el("tr");
  for (const h of ["box", "camera", "sure", "dealer"]) head.appendChild(el("th", {}, h));
  table.appendChild(head);
  row.boxes.forEach((b, i) => {
    const disputed = b.reader_sure && b.read_index != null && (b.label === "no_die" || b.face !== b.reader_face);
    const tr = el("tr", disputed ? { class: "disputed" } : {});
    tr.appendChild(el("td", {}, String(i + 1) + (b.origin === "person" ? " (added)" : "")));
    tr.appendChild(el("td", {}, b.reader_face != null ? b.reader_face + " (" + Number(b.reader_confidence).toFixed(2) + ")" : "-"));
    tr.appendChild(el("td", {}, b.reader_sure ? "yes" : "no"));
    tr.appendChild(el("td", {}, b.label === "no_die" ? "no die" : b.face != null ? String(b.face) : "-"));
    table.appendChild(tr);
  });
  side.appendChild(table);
  const button = el("button", { type: "button", class: "ack" }, "acknowledge");
  const said = el("p", { class: "error", role: "alert" });
  button.addEventListener("click", async () => {
    const response = await api("/v1/console/mismatches/" + encodeURIComponent(row.roll_id) + "/acknowledge", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: "{}",
    });
    if (response.ok) {
      const done = await response.json();
      card.remove();
      $("notice").textContent = "acknowledged roll " + row.roll_id + " as " + done.acknowledged_by;
      $("mismatch-empty").hidden = $("mismatches").children.length > 0;
    } else {
      said.textContent = "refused (" + response.status + "): " + await detailOf(response);
    }
  });
  side.append(button, said);
  card.append(stage, side);
  return card;
}

// --- sign in and out -------------------------------------------------------------------------------------

function signOut(message) {
  clearTimeout(pollTimer);
  clearTimeout(mismatchTimer);
  forgetKey();
  key = null;
  waiting = null;
  $("main").hidden = true;
  $("signout").hidden = true;
  $("table-pick").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
}

async function start() {
  key = storedKey();
  if (!key) { signOut(""); return; }
  const response = await api("/v1/tables");
  if (!response.ok) { signOut(refusedInWords(response.status, await detailOf(response))); return; }
  const tables = await response.json();
  const wanted = new URLSearchParams(window.location.search).get("table");
  const select = $("table");
  select.textContent = "";
  for (const t of tables) select.appendChild(new Option(t.id + " (" + t.game + ")", t.id));
  tableId = wanted || (tables.find((t) => t.id === "demo") || tables[0] || { id: "" }).id;
  select.value = tableId;
  $("login").hidden = true;
  $("main").hidden = false;
  $("signout").hidden = false;
  $("table-pick").hidden = false;
  await poll();
  pollMismatches();
}

bindSignIn(start);
$("signout").addEventListener("click", () => signOut("signed out"));
$("table").addEventListener("change", () => {
  tableId = $("table").value;
  waiting = null;
  $("notice").textContent = "";
  $("mismatches").textContent = "";
  setAddress(null);
  poll();
});
$("decide").addEventListener("submit", submit);
$("dice").addEventListener("keydown", onDieKey);
$("dice").addEventListener("focusin", () => drawOverlay());
$("overlay").addEventListener("click", onFrameClick);
document.addEventListener("change", (e) => {
  if (e.target.name === "call" && edits) { edits.call = e.target.value; save(); }
});
window.addEventListener("resize", () => drawOverlay());
takeKeyFromHash();
start();
