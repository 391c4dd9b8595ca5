// The answer panel (judge-audit): keys handled in the browser, answers shown at once, an
// outbox of unacknowledged answers retried until the server confirms each one.
// Python side and contract: annotation/ui/answer_panel.py, annotation/work/deliveries.py.
// Every text from the data is put on the page with textContent, never as HTML.

const ROUTE = "/_ja/answers";
const STORE_PREFIX = "ja-outbox-v1:";   // + the account's token: one outbox per account
const IDLE_CAP_MS = 120000;
const MAX_BATCH = 50;
const COMMAND_RETRY_MS = 4000;

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
  const keyHint = (k) => (k === "enter" ? "Enter" : k ? k.toUpperCase() : "");
  const same = (a, b) => a !== null && a !== undefined && (a === b || (typeof a === "number" && Number(a) === Number(b)));

  G.optionButton = (i, o, chosen, small) => {
    const b = el("button", "ja-option" + (chosen ? " ja-chosen" : "") + (small ? " ja-small" : ""));
    b.type = "button";
    b.appendChild(el("span", "ja-label", o[1]));
    if (o[2] && !small) b.appendChild(el("kbd", "ja-kbd", keyHint(o[2])));
    b.dataset.value = String(o[0]);
    b.addEventListener("click", (ev) => { G.answer(i, o[0], ev.timeStamp, "click"); });
    return b;
  };
  G.statusMark = (i) => {
    const st = G.status[i];
    if (st === "pending") return el("span", "ja-mark ja-pending", "saving…");
    if (st === "refused") return el("span", "ja-mark ja-refused", "not saved");
    if (st === "saved") return el("span", "ja-mark ja-saved", "✓");
    return null;
  };

  // The panel keeps three slots: the top (status, current target, J / K) and the bottom
  // (commands) are redrawn on every change; the list of targets is patched row by row, so
  // a key press redraws two rows and not the whole checklist.
  G.slots = null;
  G.ensureSlots = () => {
    const sl = G.slots;
    if (sl && sl.root === G.root && sl.top.parentNode === G.root) return sl;
    const top = el("div", "ja-slot"), list = el("div", "ja-list"), bottom = el("div", "ja-slot");
    G.root.replaceChildren(top, list, bottom);
    G.slots = { root: G.root, top, list, bottom, spec: null, rows: [] };
    return G.slots;
  };
  G.row = (i, gate) => {
    const t = G.spec.targets[i];
    const item = el("div", "ja-item" + (i === G.cursor ? " ja-here" : "") + (gate[i] ? "" : " ja-off"));
    const text = el("div", "ja-item-text", (i === G.cursor ? "▶ " : "") + t.text);
    text.addEventListener("click", () => { if (applicable(G.spec.targets, G.values)[i]) { G.cursor = i; G.render(); } });
    item.appendChild(text);
    if (!gate[i]) { item.appendChild(el("span", "ja-mark", "not applicable")); return item; }
    if (t.kind === "c") {
      const v = G.values[i];
      item.appendChild(el("span", "ja-score", v === undefined || v === null ? "–" : String(Number(v))));
    } else {
      const opts = el("div", "ja-mini");
      for (const o of t.options) opts.appendChild(G.optionButton(i, o, same(G.values[i], o[0]), true));
      item.appendChild(opts);
    }
    const mark = G.statusMark(i);
    if (mark) item.appendChild(mark);
    return item;
  };
  G.drawList = (gate) => {
    const sl = G.slots, s = G.spec;
    const sig = (i) => JSON.stringify([i === G.cursor, gate[i], G.values[i] === undefined ? null : G.values[i], G.status[i] || null]);
    if (sl.spec !== s) {   // new data: the whole list
      const children = [];
      sl.rows = [];
      let heading;
      s.targets.forEach((t, i) => {
        if (t.kind === "c" && (i === 0 || s.targets[i - 1].kind !== "c")) children.push(el("div", "ja-group", "Ratings"));
        else if (t.kind !== "c" && t.heading !== heading) {
          heading = t.heading;
          if (i === 0) children.push(el("div", "ja-group", t.kind === "v" ? "Verdicts" : "Checklist"));
          if (t.heading) children.push(el("div", "ja-subgroup", t.heading));
        }
        const row = G.row(i, gate);
        sl.rows.push({ sig: sig(i), el: row });
        children.push(row);
      });
      sl.list.replaceChildren(...children);
      sl.spec = s;
      return;
    }
    s.targets.forEach((t, i) => {   // the same data: only the rows that changed
      const now = sig(i);
      if (sl.rows[i].sig === now) return;
      const row = G.row(i, gate);
      sl.rows[i].el.replaceWith(row);
      sl.rows[i] = { sig: now, el: row };
    });
  };

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
    root.dataset.visit = String(G.visit);
    root.dataset.pending = String(G.outbox.length);
    root.dataset.connection = G.connection;
    root.dataset.currentKind = current && gate[G.cursor] ? current.kind : "";
    root.dataset.cursor = String(G.cursor);
    root.dataset.ready = G.ready() ? "1" : "0";
    root.dataset.command = G.command ? G.command.name : "";

    // status line: saved / saving / not connected (none on a panel without answers)
    let line;
    if (G.connection === "signed_out") line = el("div", "ja-status ja-bad", `Signed out: ${G.outbox.length} answer(s) wait in this browser. Sign in again (in this browser) and they are sent.`);
    else if (G.connection === "server_error" && G.outbox.length) line = el("div", "ja-status ja-bad", `The server had an error: ${G.outbox.length} answer(s) wait in this browser and are sent again automatically. Keep this tab open.`);
    else if (G.connection !== "ok" && G.outbox.length) line = el("div", "ja-status ja-bad", `Server not reachable: ${G.outbox.length} answer(s) wait in this browser and are sent again automatically. Keep this tab open.`);
    else if (G.outbox.length) line = el("div", "ja-status ja-busy", `Saving ${G.outbox.length} answer(s)…`);
    else line = el("div", "ja-status ja-ok", "All answers saved");
    if (elsewhere && G.connection === "ok") line.textContent += ` (${elsewhere} from an earlier page)`;
    if (s.targets.length || G.outbox.length) top.push(line);
    if (G.notice) top.push(el("div", "ja-notice", G.notice));
    if (s.reviewing) top.push(el("div", "ja-review", "Reviewing an item you already submitted: changes are kept as history."));

    // the current target, large
    if (current) {
      const card = el("div", "ja-card");
      if (current.heading) card.appendChild(el("div", "ja-caption", current.heading));
      if (current.caption) card.appendChild(el("div", "ja-caption", current.caption));
      card.appendChild(el("div", "ja-question", current.text));
      if (!gate[G.cursor]) card.appendChild(el("div", "ja-caption", "Not applicable: a question it depends on was answered no."));
      const row = el("div", current.options.length > 3 ? "ja-options ja-grid" : "ja-options");
      for (const o of current.options) row.appendChild(G.optionButton(G.cursor, o, same(G.values[G.cursor], o[0])));
      card.appendChild(row);
      const mark = G.statusMark(G.cursor);
      if (mark) card.appendChild(mark);
      if (current.rubric) {
        const rub = el("details", "ja-rubric"); rub.open = true;
        rub.appendChild(el("summary", null, "Rubric"));
        rub.appendChild(emphasized("div", "ja-rubric-text", current.rubric));
        card.appendChild(rub);
      }
      top.push(card);
      const nav = el("div", "ja-nav");
      for (const [label, key, delta] of [["Previous", "k", -1], ["Next", "j", 1]]) {
        const b = el("button", "ja-option"); b.type = "button";
        b.appendChild(el("span", "ja-label", label)); b.appendChild(el("kbd", "ja-kbd", key.toUpperCase()));
        b.addEventListener("click", () => { G.cursor = moveCursor(s.targets, G.values, G.cursor, delta); G.render(); });
        nav.appendChild(b);
      }
      top.push(nav);
    }

    // every target, grouped
    G.drawList(gate);

    // commands
    const actions = el("div", "ja-actions");
    const ready = G.ready();
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
    bottom.push(actions);
    if (G.command) bottom.push(el("div", "ja-caption", G.outbox.length ? `Waiting for ${G.outbox.length} answer(s) to be saved first…` : "Working…"));
    else if (s.submit && !ready && s.targets.length) {
      const left = el("div", "ja-caption" + (performance.now() < G.hintUntil ? " ja-flash" : ""), `${open.length} answer(s) left before you can submit.`);
      bottom.push(left);
    } else if (s.hint) bottom.push(el("div", "ja-caption", s.hint));
    sl.top.replaceChildren(...top);
    sl.bottom.replaceChildren(...bottom);
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
