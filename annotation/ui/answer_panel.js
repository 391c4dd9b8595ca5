// The answer panel (judge-audit): keys handled in the browser, answers shown at once, an
// outbox of unacknowledged answers retried until the server confirms each one.
// Python side and contract: annotation/ui/answer_panel.py, annotation/work/deliveries.py.
// Every text from the data is put on the page with textContent, never as HTML.

const ROUTE = "/_ja/answers";
const STORE_PREFIX = "ja-outbox-v1:";   // + the account's token: one outbox per account
const IDLE_CAP_MS = 120000;
const MAX_BATCH = 50;
const COMMAND_RETRY_MS = 4000;
// the list's heading per kind of target (checklist questions: "Checklist")
const GROUPS = { v: "Verdicts", p: "Preference", r: "Places (1 = best)" };

// ------------------------------------------------------------------ pure rules
/** DSG gating: a question is not applicable when a parent is answered "no" or is itself
 * not applicable (transitive; the server's annotation.work.checklist.applicable). */
export function applicable(targets, values) {
  const memo = {};
  const visit = (i, trail) => {
    if (i in memo) return memo[i];
    let ok = true;
    for (const p of targets[i].parents || []) {
      if (p < 0 || p >= targets.length || trail.has(p)) continue;
      const next = new Set(trail); next.add(i);
      if (values[p] === "no" || !visit(p, next)) { ok = false; break; }
    }
    memo[i] = ok;
    return ok;
  };
  return targets.map((_, i) => visit(i, new Set()));
}

/** Positions of the applicable targets still without an answer, in walking order. */
export function openTargets(targets, values) {
  const gate = applicable(targets, values);
  return targets.map((t, i) => i).filter((i) => gate[i] && (values[i] === undefined || values[i] === null));
}

/** The next open target after `current` (wrapping), or `current` when none is open. */
export function nextOpen(targets, values, current) {
  const gate = applicable(targets, values);
  const n = targets.length;
  for (let step = 1; step <= n; step++) {
    const i = (current + step) % n;
    if (gate[i] && (values[i] === undefined || values[i] === null)) return i;
  }
  return current;
}

/** J / K: the next or previous applicable target, no wrap. */
export function moveCursor(targets, values, current, delta) {
  const gate = applicable(targets, values);
  let i = current;
  while (i + delta >= 0 && i + delta < targets.length) {
    i += delta;
    if (gate[i]) return i;
  }
  return current;
}

// ------------------------------------------------------------------ the panel
function makePanel() {
  const G = {
    spec: null, root: null, setStateValue: null,
    visit: null, item: null, values: {}, rows: {}, status: {}, cursor: 0,
    outbox: [], done: new Set(), inflight: false, backoff: 0, timer: null,
    connection: "ok", notice: null, hintUntil: 0,
    command: null,           // {name, n, visit, sent, sentAt, tries}
    lastPress: null, counter: 0, panelId: null,
    stats: { presses: [] },
  };

  G.newId = () => {
    if (!G.panelId) {
      const r = (crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2) + Date.now());
      G.panelId = r.toLowerCase().replace(/[^a-z0-9-]/g, "");
    }
    G.counter += 1;
    return `${G.panelId}:${G.counter}`;
  };
  G.nextSeq = () => {
    // later presses get larger numbers, also after a reload (ms since the epoch x 1000)
    const seq = Math.max(Date.now() * 1000, (G.lastSeq || 0) + 1);
    G.lastSeq = seq;
    return seq;
  };

  // ---------------------------------------------------------------- the outbox
  G.storeKey = () => STORE_PREFIX + (G.owner || "anonymous");
  G.load = () => {
    try {
      const kept = JSON.parse(window.localStorage.getItem(G.storeKey()) || "[]");
      const known = new Set(G.outbox.map((e) => e.cid));
      for (const e of Array.isArray(kept) ? kept : []) {
        if (e && e.cid && !known.has(e.cid)) G.outbox.push(Object.assign(e, { owner: G.owner }));
      }
    } catch (err) { /* storage unavailable: the outbox lives in memory only */ }
  };
  G.save = () => {
    // another tab of this browser keeps its outbox under the same key: keep its entries,
    // drop only what this tab saw acknowledged (or refused)
    try {
      const kept = JSON.parse(window.localStorage.getItem(G.storeKey()) || "[]");
      const mine = new Set(G.outbox.map((e) => e.cid));
      const merged = G.outbox.concat((Array.isArray(kept) ? kept : []).filter(
        (e) => e && e.cid && !mine.has(e.cid) && !G.done.has(e.cid)));
      window.localStorage.setItem(G.storeKey(), JSON.stringify(merged));
    } catch (err) { /* as above */ }
  };
  G.finished = (cid) => {
    G.done.add(cid);
    if (G.done.size > 20000) G.done = new Set(Array.from(G.done).slice(-10000));
  };

  G.flush = () => {
    if (G.timer) { clearTimeout(G.timer); G.timer = null; }
    if (G.inflight) return;
    if (!G.outbox.length) { G.sendCommand(); return; }
    const batch = G.outbox.slice(0, MAX_BATCH).map((e) => ({
      visit: e.visit, target: e.target, value: e.value, cid: e.cid, seq: e.seq,
      seen: e.seen === undefined ? null : e.seen, seconds: e.seconds }));
    G.inflight = true;
    const abort = new AbortController();
    const timeout = setTimeout(() => abort.abort(), 15000);
    fetch(ROUTE, {
      method: "POST", credentials: "same-origin", cache: "no-store", signal: abort.signal,
      headers: { "Content-Type": "application/json" }, body: JSON.stringify({ entries: batch }),
    }).then(async (response) => {
      clearTimeout(timeout);
      // the request stays in flight until its receipts are read: a key pressed meanwhile
      // waits for the next request instead of sending these entries a second time
      let body = null;
      if (response.ok) { try { body = await response.json(); } catch (err) { body = null; } }
      G.inflight = false;
      if (response.ok && body) {
        G.connection = "ok"; G.backoff = 0;
        G.acknowledge(body.receipts || []);
        G.render();
        G.flush();
        return;
      }
      if (response.ok) G.connection = "retrying";   // a body that could not be read
      else if (response.status === 401) {
        let why = {};
        try { why = await response.json(); } catch (err) { why = {}; }
        G.connection = "signed_out";
        if (why.keep === false) {   // the account was changed by an admin: not sent later
          const dropped = new Set(batch.map((e) => e.cid));
          dropped.forEach(G.finished);
          for (const e of G.outbox) if (dropped.has(e.cid) && e.visit === G.visit) G.status[e.target] = "refused";
          G.outbox = G.outbox.filter((e) => !dropped.has(e.cid));
          G.save();
          G.notice = `Not saved: ${why.error || "you were signed out"}`;
        }
        G.refresh();   // the page shows the sign-in and says why
        if (!G.outbox.length) { G.render(); return; }
      } else if (response.status >= 500) {
        let why = {};
        try { why = await response.json(); } catch (err) { why = {}; }
        G.connection = "server_error";
        G.notice = why.incident ? `The server had an error (incident ${why.incident}); your answers wait in this browser and are sent again.` : null;
      } else if (response.status === 400) {   // not what this panel sends: never retried
        let message = "";
        try { message = (await response.json()).error || ""; } catch (err) { /* none */ }
        const dropped = new Set(batch.map((e) => e.cid));
        dropped.forEach(G.finished);
        for (const e of G.outbox) if (dropped.has(e.cid) && e.visit === G.visit) G.status[e.target] = "refused";
        G.outbox = G.outbox.filter((e) => !dropped.has(e.cid));
        G.save();
        G.notice = `The server refused ${batch.length} answer(s): ${message}`;
        G.render(); G.flush();
        return;
      } else G.connection = "retrying";
      G.retryLater();
    }).catch(() => {
      clearTimeout(timeout);
      G.inflight = false;
      G.connection = navigator.onLine === false ? "offline" : "retrying";
      G.retryLater();
    });
  };
  G.retryLater = () => {
    const cap = { signed_out: 5000, server_error: 15000 }[G.connection] || 4000;
    G.backoff = Math.min(Math.max(250, G.backoff * 2), cap);
    G.render();
    G.timer = setTimeout(G.flush, G.backoff);
  };

  G.acknowledge = (receipts) => {
    const now = performance.now();
    for (const r of receipts) {
      const k = G.outbox.findIndex((e) => e.cid === r.client_id);
      if (k < 0) continue;
      const e = G.outbox[k];
      G.outbox.splice(k, 1);
      G.finished(e.cid);
      const press = G.stats.presses.find((p) => p.cid === e.cid);
      if (press) { press.acked = now; press.outcome = r.status === "ok" ? r.outcome : r.reason; }
      const here = e.visit === G.visit || (G.item && e.item === G.item);
      const later = G.outbox.some((o) => o.target === e.target && (o.visit === e.visit || (G.item && o.item === G.item && e.item === G.item)));
      if (r.status === "ok") {
        for (const o of G.outbox) if (o.visit === e.visit && o.target === e.target) o.seen = r.row;
        if (here) {
          if (e.visit === G.visit) G.rows[e.target] = r.row;
          if (!later) {
            G.status[e.target] = "saved";
            // a later press of this panel is stored: show what is stored
            if (r.outcome === "stale" && r.value !== undefined) G.values[e.target] = r.value;
          }
        }
        continue;
      }
      if (here && !later) {
        G.status[e.target] = "refused";
        if (r.reason === "changed" || r.reason === "invalid") G.values[e.target] = r.value === undefined ? null : r.value;
      }
      G.notice = r.message || "An answer was not saved.";
      if (r.reason === "taken" && e.visit === G.visit) G.requestCommand("reload");
    }
    G.save();
  };

  // ---------------------------------------------------------------- commands
  G.requestCommand = (name) => {
    if (G.command && G.command.name === name && G.command.visit === G.visit) return;
    const seconds = G.lastPress === null ? 0 : Math.min(performance.now() - G.lastPress, IDLE_CAP_MS) / 1000;
    G.command = { name, n: G.nextSeq(), visit: G.visit, sent: false, tries: 0, seconds, at: performance.now() };
    G.render();
    G.flush();
  };
  G.refresh = () => {
    // one rerun of the page, without waiting for the outbox (e.g. to show the sign-in)
    if (!G.setStateValue || G.refreshed === G.visit) return;
    G.refreshed = G.visit;
    G.setStateValue("command", { name: "refresh", n: G.nextSeq(), visit: G.visit, seconds: 0, cursor: G.cursor, tries: 1 });
  };
  G.sendCommand = () => {
    const c = G.command;
    if (!c || G.outbox.length || !G.setStateValue) return;
    if (c.sent && performance.now() - c.sentAt < COMMAND_RETRY_MS) return;
    c.sent = true; c.sentAt = performance.now(); c.tries += 1;
    G.setStateValue("command", { name: c.name, n: c.n, visit: c.visit, seconds: c.seconds, cursor: G.cursor, tries: c.tries });
    G.timer = setTimeout(G.flush, COMMAND_RETRY_MS);  // not handled by then: send it again
  };

  // ---------------------------------------------------------------- answering
  G.ready = () => {
    const s = G.spec;
    if (!s) return false;
    if (s.ready !== null && s.ready !== undefined && !s.targets.length) return !!s.ready;
    return openTargets(s.targets, G.values).length === 0 && (s.ready === null || s.ready === undefined || !!s.ready);
  };
  G.answer = (i, value, timeStamp, key) => {
    const s = G.spec;
    if (!s || i < 0 || i >= s.targets.length || G.command) return;
    if (!applicable(s.targets, G.values)[i]) return;
    const now = performance.now();
    const seconds = G.lastPress === null ? 0 : Math.min(now - G.lastPress, IDLE_CAP_MS) / 1000;
    G.lastPress = now;
    const entry = { visit: G.visit, item: G.item, owner: G.owner, target: i, value, cid: G.newId(), seq: G.nextSeq(),
                    seen: G.rows[i] === undefined ? null : G.rows[i], seconds };
    G.values[i] = value;
    G.status[i] = "pending";
    G.outbox.push(entry);
    G.save();
    G.cursor = nextOpen(s.targets, G.values, i);
    const press = { cid: entry.cid, key, at: timeStamp || now, visible: null, acked: null };
    G.stats.presses.push(press);
    if (G.stats.presses.length > 20000) G.stats.presses.splice(0, 10000);
    G.render();
    requestAnimationFrame(() => setTimeout(() => { press.visible = performance.now(); }, 0));
    G.flush();
  };
  G.submit = () => {
    if (!G.spec || !G.spec.submit) return;
    if (!G.ready()) { G.hintUntil = performance.now() + 2500; G.render(); return; }
    G.requestCommand(G.spec.submit);
  };

  G.onKey = (event) => {
    if (!G.root || !G.root.isConnected || !G.spec) return;
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    const el = event.target;
    if (el && el.closest && el.closest("input, textarea, select, [contenteditable=''], [contenteditable='true']")) return;
    if (document.querySelector("[role='dialog']")) return;
    const key = event.key === "Enter" ? "enter" : (event.key || "").toLowerCase();
    const s = G.spec;
    const t = s.targets[G.cursor];
    let handled = false;
    if (event.repeat) { if (["enter", "j", "k"].includes(key)) return; }
    if (t && key.length === 1) {
      const option = t.options.find((o) => o[2] === key);
      if (option && !event.repeat) { G.answer(G.cursor, option[0], event.timeStamp, key); handled = true; }
    }
    if (!handled && (key === "j" || key === "k") && s.targets.length) {
      G.cursor = moveCursor(s.targets, G.values, G.cursor, key === "j" ? 1 : -1);
      G.render(); handled = true;
    }
    if (!handled && key === "enter") {
      if (s.enter) G.requestCommand(s.enter); else G.submit();
      handled = true;
    }
    if (!handled && !event.repeat) {
      const c = s.commands.find((x) => x[2] === key && x[0] !== s.submit);
      if (c) { G.requestCommand(c[0]); handled = true; }
    }
    if (handled) { event.preventDefault(); event.stopPropagation(); }
  };

  // ---------------------------------------------------------------- data from the server
  G.mount = (data, parentElement, setStateValue) => {
    G.setStateValue = setStateValue;
    let root = parentElement.querySelector(".ja-panel");
    if (!root) {
      root = document.createElement("div");
      root.className = "ja-panel";
      // a clicked button gives its focus back: the panel keeps its buttons between
      // renders, and a focused one would take a later Space as a click on whatever
      // target it shows by then
      root.addEventListener("click", (ev) => {
        const b = ev.target && ev.target.closest ? ev.target.closest("button") : null;
        if (b) b.blur();
      });
      parentElement.appendChild(root);
    }
    G.root = root;
    if (!data || !data.targets) { G.spec = null; G.render(); return; }
    if (data.owner && data.owner !== G.owner) {   // another account in this tab: its own outbox
      if (G.owner) G.save();
      G.owner = data.owner;
      G.outbox = G.outbox.filter((e) => e.owner === G.owner);
    }
    const fresh = data.visit !== G.visit;
    G.spec = data;
    if (G.command && (data.handled >= G.command.n || data.visit !== G.command.visit)) G.command = null;
    if (fresh) {
      G.visit = data.visit; G.item = data.item || null;
      G.values = {}; G.rows = {}; G.status = {}; G.notice = null; G.lastPress = null;
      G.load();
      data.targets.forEach((t, i) => {
        if (t.value !== null && t.value !== undefined) { G.values[i] = t.value; G.status[i] = "saved"; }
        if (t.row !== null && t.row !== undefined) G.rows[i] = t.row;
      });
      // answers typed for this item and not yet acknowledged (e.g. before a reload)
      for (const e of G.outbox) {
        if (e.visit === G.visit || (G.item && e.item === G.item)) { G.values[e.target] = e.value; G.status[e.target] = "pending"; }
      }
      const open = openTargets(data.targets, G.values);
      G.cursor = open.length ? open[0] : 0;
    } else {
      data.targets.forEach((t, i) => {   // a rerun: what this panel typed wins
        if (G.status[i] === undefined && t.value !== null && t.value !== undefined) { G.values[i] = t.value; G.status[i] = "saved"; }
        if (t.row !== null && t.row !== undefined && G.rows[i] === undefined) G.rows[i] = t.row;
      });
    }
    if (data.notice) G.notice = data.notice;
    G.render();
    G.flush();
  };

  // ---------------------------------------------------------------- drawing
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  };
  /** Text with **bold** runs (a rubric's markdown emphasis), built from text nodes only. */
  const emphasized = (tag, cls, text) => {
    const e = el(tag, cls);
    String(text).split("**").forEach((part, k) => {
      if (!part) return;
      if (k % 2) e.appendChild(el("strong", null, part)); else e.appendChild(document.createTextNode(part));
    });
    return e;
  };
  const keyHint = (k) => (k === "enter" ? "Enter" : k === "backspace" ? "Backspace" : k ? k.toUpperCase() : "");
  const same = (a, b) => a !== null && a !== undefined && (a === b || (typeof a === "number" && Number(a) === Number(b)));

  /** An option button; `at()` is the target it answers when clicked (read at click time,
   * so the large card's buttons serve whichever target the cursor is on). */
  G.optionButton = (at, o, chosen, small) => {
    const b = el("button", "ja-option" + (chosen ? " ja-chosen" : "") + (small ? " ja-small" : ""));
    b.type = "button";
    b.appendChild(el("span", "ja-label", o[1]));
    if (o[2] && !small) b.appendChild(el("kbd", "ja-kbd", keyHint(o[2])));
    b.dataset.value = String(o[0]);
    b.__jaValue = o[0];
    b.addEventListener("click", (ev) => { G.answer(at(), o[0], ev.timeStamp, "click"); });
    return b;
  };
  const MARKS = { pending: ["ja-mark ja-pending", "saving…"], refused: ["ja-mark ja-refused", "not saved"],
                  saved: ["ja-mark ja-saved", "✓"] };
  /** Show target i's delivery state in `mark` (an element kept between renders). */
  G.setMark = (mark, i) => {
    const [cls, text] = MARKS[G.status[i]] || ["ja-mark", ""];
    if (mark.className !== cls) mark.className = cls;
    if (mark.textContent !== text) mark.textContent = text;
  };
  /** Set the class `cls` on `e` when `on`, remove it otherwise; touches nothing unchanged. */
  const toggle = (e, cls, on) => { if (e.classList.contains(cls) !== !!on) e.classList.toggle(cls, !!on); };

  // The panel keeps three slots: the top (status, current target, J / K), the list of
  // targets and the bottom (commands). Every render changes only what shows something new
  // (a class, a mark's text), so a key press makes no new nodes and no new text to lay out.
  G.slots = null;
  G.ensureSlots = () => {
    const sl = G.slots;
    if (sl && sl.root === G.root && sl.top.parentNode === G.root) return sl;
    const top = el("div", "ja-slot"), list = el("div", "ja-list"), bottom = el("div", "ja-slot");
    G.root.replaceChildren(top, list, bottom);
    G.slots = { root: G.root, top, list, bottom, spec: null, rows: [] };
    return G.slots;
  };
  /** Row i of the list, built for its applicability (`on`); `G.updateRow` shows the rest. */
  G.row = (i, on) => {
    const t = G.spec.targets[i];
    const item = el("div", "ja-item" + (on ? "" : " ja-off"));
    const text = el("div", "ja-item-text", t.text);
    text.addEventListener("click", () => { if (applicable(G.spec.targets, G.values)[i]) { G.cursor = i; G.render(); } });
    item.appendChild(text);
    const row = { el: item, on, buttons: [], score: null, mark: null };
    if (!on) { item.appendChild(el("span", "ja-mark", "not applicable")); return row; }
    if (t.kind === "c") {
      row.score = el("span", "ja-score", "–");
      item.appendChild(row.score);
    } else {
      const opts = el("div", "ja-mini");
      for (const o of t.options) {
        const button = G.optionButton(() => i, o, false, true);
        row.buttons.push([button, o[0]]);
        opts.appendChild(button);
      }
      item.appendChild(opts);
    }
    row.mark = el("span", "ja-mark");
    item.appendChild(row.mark);
    return row;
  };
  G.updateRow = (row, i) => {
    toggle(row.el, "ja-here", i === G.cursor);
    if (!row.on) return;
    const v = G.values[i];
    if (row.score) {
      const text = v === undefined || v === null ? "–" : String(Number(v));
      if (row.score.textContent !== text) row.score.textContent = text;
    }
    for (const [button, value] of row.buttons) toggle(button, "ja-chosen", same(v, value));
    G.setMark(row.mark, i);
  };
  G.drawList = (gate) => {
    const sl = G.slots, s = G.spec;
    if (sl.spec !== s) {   // new data: the whole list
      const children = [];
      sl.rows = [];
      let heading;
      s.targets.forEach((t, i) => {
        if (t.kind === "c" && (i === 0 || s.targets[i - 1].kind !== "c")) children.push(el("div", "ja-group", "Ratings"));
        else if (t.kind !== "c" && t.heading !== heading) {
          heading = t.heading;
          if (i === 0) children.push(el("div", "ja-group", GROUPS[t.kind] || "Checklist"));
          if (t.heading) children.push(el("div", "ja-subgroup", t.heading));
        }
        const row = G.row(i, gate[i]);
        sl.rows.push(row);
        children.push(row.el);
      });
      sl.list.replaceChildren(...children);
      sl.spec = s;
    }
    s.targets.forEach((t, i) => {
      let row = sl.rows[i];
      if (row.on !== gate[i]) {   // applicability changed (a parent answered no): a new row
        const fresh = G.row(i, gate[i]);
        row.el.replaceWith(fresh.el);
        sl.rows[i] = row = fresh;
      }
      G.updateRow(row, i);
    });
  };

  /** Keep `parent`'s children as `parts` ([key, signature, build] in order): a part whose
   * key and signature did not change keeps its element, so a key press creates only the
   * nodes that show something new (no new text to shape, no layout of unchanged rows). */
  const patch = (parent, parts) => {
    const old = parent.__jaParts || new Map();
    const next = new Map();
    const els = parts.map(([key, sig, build]) => {
      const had = old.get(key);
      const e = had && had.sig === sig ? had.el : build();
      next.set(key, { sig, el: e });
      return e;
    });
    parent.__jaParts = next;
    // remove what goes first, so that the parts kept are never moved (a moved node is laid
    // out again from scratch)
    const keep = new Set(els);
    for (const c of Array.from(parent.childNodes)) if (!keep.has(c)) parent.removeChild(c);
    els.forEach((e, k) => { if (parent.childNodes[k] !== e) parent.insertBefore(e, parent.childNodes[k] || null); });
  };
  G.patch = patch;

  G.render = () => {
    const root = G.root;
    if (!root) return;
    const s = G.spec;
    if (!s) { root.replaceChildren(); G.slots = null; return; }
    const sl = G.ensureSlots();
    const top = [], bottom = [];
    const gate = applicable(s.targets, G.values);
    const open = openTargets(s.targets, G.values);
    const mine = G.outbox.filter((e) => e.visit === G.visit || (G.item && e.item === G.item)).length;
    const elsewhere = G.outbox.length - mine;
    const current = s.targets[G.cursor];
    const ready = G.ready();
    const data = root.dataset;
    const set = (k, v) => { if (data[k] !== v) data[k] = v; };
    set("visit", String(G.visit));
    set("pending", String(G.outbox.length));
    set("connection", G.connection);
    set("currentKind", current && gate[G.cursor] ? current.kind : "");
    set("cursor", String(G.cursor));
    set("ready", ready ? "1" : "0");
    set("command", G.command ? G.command.name : "");

    // status line: saved / saving / not connected (none on a panel without answers)
    let cls, text;
    if (G.connection === "signed_out") [cls, text] = ["ja-bad", `Signed out: ${G.outbox.length} answer(s) wait in this browser. Sign in again (in this browser) and they are sent.`];
    else if (G.connection === "server_error" && G.outbox.length) [cls, text] = ["ja-bad", `The server had an error: ${G.outbox.length} answer(s) wait in this browser and are sent again automatically. Keep this tab open.`];
    else if (G.connection !== "ok" && G.outbox.length) [cls, text] = ["ja-bad", `Server not reachable: ${G.outbox.length} answer(s) wait in this browser and are sent again automatically. Keep this tab open.`];
    else if (G.outbox.length) [cls, text] = ["ja-busy", `Saving ${G.outbox.length} answer(s)…`];
    else [cls, text] = ["ja-ok", "All answers saved"];
    if (elsewhere && G.connection === "ok") text += ` (${elsewhere} from an earlier page)`;
    if (s.targets.length || G.outbox.length) top.push(["status", "", () => el("div", "ja-status")]);
    if (G.notice) top.push(["notice", G.notice, () => el("div", "ja-notice", G.notice)]);
    if (s.reviewing) top.push(["review", "", () => el("div", "ja-review", "Reviewing an item you already submitted: changes are kept as history.")]);

    // the current target, large
    if (current) {
      top.push(["card", "", () => el("div", "ja-card")]);
      if (s.targets.length > 1) top.push(["nav", "", () => {
        const nav = el("div", "ja-nav");
        for (const [label, key, delta] of [["Previous", "k", -1], ["Next", "j", 1]]) {
          const b = el("button", "ja-option"); b.type = "button";
          b.appendChild(el("span", "ja-label", label)); b.appendChild(el("kbd", "ja-kbd", key.toUpperCase()));
          b.addEventListener("click", () => { G.cursor = moveCursor(G.spec.targets, G.values, G.cursor, delta); G.render(); });
          nav.appendChild(b);
        }
        return nav;
      }]);
    }
    patch(sl.top, top);
    const status = sl.top.__jaParts.get("status");
    if (status) {
      if (status.el.className !== "ja-status " + cls) status.el.className = "ja-status " + cls;
      if (status.el.textContent !== text) status.el.textContent = text;
    }
    if (current) G.drawCard(sl.top.__jaParts.get("card").el, current, gate);

    // every target, grouped
    G.drawList(gate);

    // commands
    bottom.push(["actions", JSON.stringify([s.commands, s.submit, ready, G.command ? G.command.name : null]), () => {
      const actions = el("div", "ja-actions");
      for (const [name, label, key, primary] of s.commands) {
        const b = el("button", "ja-option" + (primary ? " ja-primary" : ""));
        b.type = "button";
        const waiting = G.command && G.command.name === name;
        b.appendChild(el("span", "ja-label", waiting ? `${label}…` : label));
        if (key) b.appendChild(el("kbd", "ja-kbd", keyHint(key)));
        b.dataset.command = name;
        if ((name === s.submit && !ready) || (G.command && !waiting)) b.disabled = true;
        b.addEventListener("click", () => { if (name === s.submit) G.submit(); else G.requestCommand(name); });
        actions.appendChild(b);
      }
      return actions;
    }]);
    let caption = null;
    if (G.command) caption = ["ja-caption", G.outbox.length ? `Waiting for ${G.outbox.length} answer(s) to be saved first…` : "Working…"];
    else if (s.submit && !ready && s.targets.length) caption = ["ja-caption" + (performance.now() < G.hintUntil ? " ja-flash" : ""), `${open.length} answer(s) left before you can submit.`];
    else if (s.hint) caption = ["ja-caption", s.hint];
    if (caption) bottom.push(["caption", "", () => el("div")]);
    patch(sl.bottom, bottom);
    if (caption) {
      const line = sl.bottom.__jaParts.get("caption").el;
      if (line.className !== caption[0]) line.className = caption[0];
      if (line.textContent !== caption[1]) line.textContent = caption[1];
    }
  };

  /** The current target, large: rebuilt part by part, only what changed. */
  G.drawCard = (card, current, gate) => {
    const i = G.cursor;
    const parts = [];
    if (current.heading) parts.push(["heading", current.heading, () => el("div", "ja-caption", current.heading)]);
    if (current.caption) parts.push(["caption", current.caption, () => el("div", "ja-caption", current.caption)]);
    parts.push(["question", current.text, () => el("div", "ja-question", current.text)]);
    if (!gate[i]) parts.push(["off", "", () => el("div", "ja-caption", "Not applicable: a question it depends on was answered no.")]);
    parts.push(["options", JSON.stringify(current.options), () => {
      const row = el("div", current.options.length > 3 ? "ja-options ja-grid" : "ja-options");
      for (const o of current.options) row.appendChild(G.optionButton(() => G.cursor, o, false));
      return row;
    }]);
    parts.push(["mark", "", () => el("span", "ja-mark")]);
    if (current.rubric) parts.push(["rubric:" + i, current.rubric, () => {   // keeps open / closed while on this target
      const rub = el("details", "ja-rubric"); rub.open = true;
      rub.appendChild(el("summary", null, "Rubric"));
      rub.appendChild(emphasized("div", "ja-rubric-text", current.rubric));
      return rub;
    }]);
    patch(card, parts);
    for (const b of card.__jaParts.get("options").el.children) toggle(b, "ja-chosen", same(G.values[i], b.__jaValue));
    G.setMark(card.__jaParts.get("mark").el, i);
  };
  return G;
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  if (!window.__jaPanel) {
    window.__jaPanel = makePanel();
    window.addEventListener("keydown", (e) => window.__jaPanel.onKey(e), true);
    window.addEventListener("online", () => window.__jaPanel.flush());
  }
  window.__jaPanel.mount(data, parentElement, setStateValue);
  return () => {};
}
