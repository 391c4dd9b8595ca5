"""Soak: N annotators typing for T minutes against one ``judge-audit serve``; every key
press accounted for.

    python benchmarks/soak.py [--annotators 4] [--minutes 2] [--port 0] [--seed 0]
                              [--db postgresql://...?media=DIR] [--servers 1]

Builds a fresh copy of the demo project in a temporary folder, adds the accounts
``soak1..soakN`` (and sets the overlap to N so there is work for all of them), starts
``judge-audit serve --db DB`` on localhost (its own process group, stopped at the end, also
on error) and drives one Debian Chromium (Playwright, ``/usr/bin/chromium``) with N browser
contexts at once, one per annotator, as people would: sign in (one every 1.5 s), leave the
guidelines with Enter, then answer with the keyboard, reading the page: Y / N / U on the
current question, a digit on the current rating, Enter when the panel says the item is
complete. Each
annotator thinks 0.8-2.0 s before a key (seeded; the keystroke-level model's 1.35 s of
mental preparation plus the press), and one time in six types a **burst** of 3-5 keys
30-80 ms apart, faster than the server can rerun a page (a run of obvious "yes").

The soak keeps its own record of every key it pressed: who, which item (the reservation in
the database), which target (the panel's cursor as shown before the key) and which value.
At the end (after letting every page deliver what it still holds, up to 30 s) it compares
that record with the database, read with its own connection:

* **lost**: a press whose answer is not in the database as the target's row of that value
  (per target, the rows must follow the presses that changed the value, in order, ending
  at the last one); an Enter on a complete item without a submission within 15 s;
* **duplicated**: more rows for a target than presses that changed its value;
* **pending**: answers the pages still hold unacknowledged at the end;
* **key -> visible**: in the page, from the key's event time to the next frame after the
  panel drew the answer (``window.__jaPanel.stats``);
* **key -> next paint**: the browser's own measure (the Event Timing API, as Chrome's INP
  uses it, in 8 ms steps): from the key's event time to the paint after its handlers ran;
  the browser reports only presses of 16 ms or more, the others count as under 16 ms;
* **key -> database**: from the key's event time (the page's clock, in epoch time) to the
  time its row was written (the receipt's ``received_at``, written in the same
  transaction; both clocks are this machine's);
* **key -> acknowledged**: until the page read the server's receipt;
* **server errors**: tracebacks in the server's log, HTTP 5xx on the answer route, and
  ``PRAGMA integrity_check``.

**Several servers on one PostgreSQL** (issue #18): ``--db postgresql://...?media=DIR``
serves that database (the demo imported into it, idempotent) and ``--servers N`` starts N
``judge-audit serve`` processes on it, annotator ``i`` on server ``(i - 1) % N``; the
accounting is the same, read from PostgreSQL (its "integrity": every table read through).

**The browsers run at a lower CPU priority** (``--nice 10``, set on this process once the
server runs, so Playwright's driver and every Chromium it starts inherit it): they stand
in for 20 annotators' own computers, which would not take the server's CPU; on a 2-core
machine 20 Chromium renderers would otherwise take most of it. ``--nice 0`` runs them at
the server's priority. Bounded: at most 20 annotators and 30 minutes. Exit status 1 when
anything was lost, duplicated or still pending, or on any server error. ``--json FILE``
also writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotation.accounts import auth  # noqa: E402
from annotation.store import Store  # noqa: E402
from annotation.work import panel as panels  # noqa: E402
from annotation.work import workflow  # noqa: E402

MAX_ANNOTATORS, MAX_MINUTES = 20, 30
#: seconds between two decisions: around the keystroke-level model's mental preparation
#: (1.35 s; Card, Moran and Newell, "The Psychology of Human-Computer Interaction", 1983)
#: plus a key press: a person reads each question and looks at the image before a key
THINK = (0.8, 2.0)
#: seconds between two annotators' arrivals (sign-in), so that 20 do not all sign in in
#: the same second
ARRIVAL = 1.5
SUBMIT_TIMEOUT = 15.0
DRAIN_SECONDS = 30.0
PANEL_JS = "() => { const p = document.querySelector('.ja-panel[data-visit]');" \
           " return p ? {...p.dataset} : null; }"
STATS_JS = """() => window.__jaPanel ? {origin: performance.timeOrigin,
    presses: window.__jaPanel.stats.presses.map(p => ({cid: p.cid, at: p.at,
        visible: p.visible, acked: p.acked, outcome: p.outcome || null})),
    pending: window.__jaPanel.outbox.length,
    painted: window.__soakKeydowns || []} : null"""
#: the browser's own measure of a key press (the Event Timing API, as INP uses it): from the
#: key's event time to the next paint after its handlers, in steps of 8 ms; the browser
#: reports only presses of 16 ms or more, so the others count as under 16 ms
EVENT_TIMING_JS = """window.__soakKeydowns = [];
try { new PerformanceObserver((list) => { for (const e of list.getEntries())
    if (e.name === 'keydown') window.__soakKeydowns.push([e.startTime, e.duration]); })
  .observe({type: 'event', durationThreshold: 16, buffered: true}); } catch (err) {}"""


def _screenshot_helpers():
    spec = importlib.util.spec_from_file_location("shots", ROOT / "scripts" / "screenshot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


shots = _screenshot_helpers()


def prepare(folder: Path, n: int, url: str | None = None) -> Path | str:
    """The demo project with the soak's accounts: a SQLite file in ``folder``, or the
    PostgreSQL database of ``url`` (issue #18; an empty database, or one the demo was
    imported into before)."""
    db: Path | str = url or folder / "soak.db"
    subprocess.run([sys.executable, "-m", "annotation.cli", "demo", "--db", str(db),
                    "--quiet"], check=True, cwd=folder)
    with Store.open(db) as store:
        for i in range(1, n + 1):
            auth.add_user(store, f"soak{i}", "annotator", f"soak-pass-{i}", actor="soak")
        workflow.set_settings(store, "soak", overlap=max(n, 3))
    return db


class Reader:
    """The database as the soak sees it (read-only queries on its own connection)."""

    def __init__(self, db: Path | str):
        self.store: Store | None = None
        if isinstance(db, str):  # PostgreSQL: the store's own connection (same SQL)
            self.store = Store.open(db, migrate=False)
            self.conn: Any = self.store.conn
        else:
            self.conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
        self.db = db
        self._targets: dict[str, list[panels.PanelTarget]] = {}

    def integrity(self) -> str:
        """``PRAGMA integrity_check``; on PostgreSQL (no such pragma, foreign keys checked
        at every write) every table read through."""
        if self.store is None:
            return self.conn.execute("PRAGMA integrity_check").fetchone()[0]
        for (table,) in self.conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = 'public' AND table_type = 'BASE TABLE'").fetchall():
            self.conn.execute(f"SELECT * FROM {table}").fetchall()
        return "ok"

    def submissions(self, who: str) -> int:
        return self.conn.execute(
            "SELECT count(*) FROM queue_submissions WHERE kind = 'annotate' AND person = ?",
            [who]).fetchone()[0]

    def reserved(self, who: str) -> str | None:
        row = self.conn.execute(
            "SELECT unit FROM queue_reservations WHERE kind = 'annotate' AND person = ?",
            [who]).fetchone()
        return row[0] if row else None

    def targets(self, unit: str) -> list[panels.PanelTarget]:
        if unit not in self._targets:
            with Store.open(self.db, migrate=False) as store:
                self._targets[unit] = panels.output_targets(store, unit)
        return self._targets[unit]


@dataclass
class Press:
    who: str
    unit: str
    target: int
    value: Any
    burst: bool


@dataclass
class Record:
    presses: list[Press] = field(default_factory=list)
    submits: int = 0
    submits_lost: list[str] = field(default_factory=list)
    submit_ms: list[float] = field(default_factory=list)
    stats: list[dict[str, Any]] = field(default_factory=list)
    http_5xx: int = 0
    pending: int = 0
    stray: list[str] = field(default_factory=list)
    timeline: list[tuple[float, float]] = field(default_factory=list)
    arrived: list[float] = field(default_factory=list)


#: the panel's data once it shows a visit other than ``arg`` (any visit for ``null``) with
#: no page change under way; ``null`` until then
PANEL_MOVED_JS = """(v) => { const p = document.querySelector('.ja-panel[data-visit]');
    return p && p.dataset.visit !== v && !p.dataset.command ? {...p.dataset} : null; }"""


async def wait_panel(page, away_from: str | None, timeout: float) -> dict[str, str] | None:
    """The panel's data once it shows a visit other than ``away_from``, or None after
    ``timeout`` seconds. The page checks every 50 ms itself: polling through Playwright
    would cost the browsers a round trip per check, load that no annotator makes."""
    try:
        handle = await page.wait_for_function(PANEL_MOVED_JS, arg=away_from, polling=50,
                                              timeout=timeout * 1000)
    except Exception:  # noqa: BLE001 - Playwright's timeout, or the page went away
        return None
    return await handle.json_value()


async def annotator(browser, port: int, i: int, reader: Reader, end: float,
                    record: Record, seed: int) -> None:
    """Annotator ``i`` on the server at ``port``."""
    who = f"soak{i}"
    rng = random.Random(seed * 1000 + i)
    await asyncio.sleep((i - 1) * ARRIVAL)  # people arrive one after the other
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    await context.add_init_script(EVENT_TIMING_JS)
    page = await context.new_page()
    page.on("response", lambda r: setattr(record, "http_5xx", record.http_5xx + 1)
            if r.status >= 500 else None)
    await page.goto(f"http://127.0.0.1:{port}/", timeout=90_000)
    # 20 sign-ins on two cores: the form may take longer than Playwright's default 30 s
    await page.locator("input[aria-label='Name']").fill(who, timeout=90_000)
    await page.locator("input[type='password']").fill(f"soak-pass-{i}", timeout=90_000)
    await page.keyboard.press("Enter")
    await page.wait_for_selector("[data-testid='stSidebar']", timeout=90_000)
    start = page.get_by_role("button", name="I have read the guidelines")
    await start.wait_for(timeout=90_000)
    await page.evaluate("document.activeElement && document.activeElement.blur()")
    await page.keyboard.press("Enter")
    await wait_panel(page, None, 90)
    record.arrived.append(time.time())
    while time.monotonic() < end:
        burst = rng.random() < 1 / 6
        keys = rng.randint(3, 5) if burst else 1
        await asyncio.sleep(rng.uniform(*THINK))
        data = None
        for _ in range(keys):
            data = await page.evaluate(PANEL_JS)
            if data is None or data.get("command"):
                break  # a page change is under way: a person waits for it
            if data["ready"] == "1":
                unit_before = reader.reserved(who)
                before = reader.submissions(who)
                t0 = time.perf_counter()
                await page.keyboard.press("Enter")
                record.submits += 1
                moved = await wait_panel(page, data["visit"], SUBMIT_TIMEOUT)
                if reader.submissions(who) <= before:
                    record.submits_lost.append(f"{who}: Enter on a complete item "
                                               f"({unit_before}) did not submit it")
                elif moved is not None:
                    record.submit_ms.append((time.perf_counter() - t0) * 1000)
                break
            kind = data["currentKind"]
            if kind not in ("q", "c"):
                break
            unit = reader.reserved(who)
            if unit is None:
                break
            if kind == "q":
                key = rng.choices("ynu", weights=(6, 3, 1))[0]
                value: Any = {"y": "yes", "n": "no", "u": "cant_tell"}[key]
            else:
                digit = rng.randint(1, 10)
                key, value = ("0" if digit == 10 else str(digit)), float(digit)
            record.presses.append(Press(who, unit, int(data["cursor"]), value, burst))
            await page.keyboard.press(key)
            if burst:
                await asyncio.sleep(rng.uniform(0.03, 0.08))
        if data is None and await page.get_by_text("All done").count():
            break  # no panel when last read: the queue may be finished
    # let the page deliver what it still holds
    deadline = time.monotonic() + DRAIN_SECONDS
    while time.monotonic() < deadline:
        stats = await page.evaluate(STATS_JS)
        if stats is None or stats["pending"] == 0:
            break
        await asyncio.sleep(0.2)
    stats = await page.evaluate(STATS_JS)
    if stats is not None:
        record.pending += stats["pending"]
        record.stats.append(stats)
    await context.close()


async def drive(ports: list[int], reader: Reader, n: int, minutes: float, seed: int
                ) -> tuple[Record, float]:
    """Annotator ``i`` on server ``(i - 1) % len(ports)``: split evenly between them."""
    from playwright.async_api import async_playwright

    record = Record()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=shots.CHROMIUM,
                                           args=shots.CHROMIUM_ARGS)
        t0 = time.monotonic()
        end = t0 + minutes * 60
        await asyncio.gather(*(annotator(browser, ports[(i - 1) % len(ports)], i, reader,
                                         end, record, seed) for i in range(1, n + 1)))
        elapsed = time.monotonic() - t0
        await browser.close()
    return record, elapsed


def account(record: Record, reader: Reader) -> dict[str, int]:
    """Compare the soak's presses with the rows of the database: lost and duplicated."""
    expected: dict[tuple[str, str, int], list[Any]] = {}
    for p in record.presses:
        seq = expected.setdefault((p.who, p.unit, p.target), [])
        if not seq or seq[-1] != p.value:
            seq.append(p.value)  # a press equal to the stored answer writes nothing
    lost = duplicated = 0
    for (who, unit, target), values in expected.items():
        t = reader.targets(unit)[target]
        column, value = ("question_id", "answer") if t.kind == "q" else ("criterion", "score")
        rows = [r[0] for r in reader.conn.execute(
            f"SELECT {value} FROM annotations WHERE annotator = ? AND output_id = ? AND"
            f" {column} = ? ORDER BY annotation_id", [who, unit, t.key])]
        if t.kind == "c":
            rows = [float(r) for r in rows]
        if rows == values:
            continue
        if len(rows) > len(values):
            duplicated += len(rows) - len(values)
            record.stray.append(f"{who} {unit} #{target}: pressed {values}, stored {rows}")
        else:
            lost += max(1, len(values) - len(rows))
            record.stray.append(f"{who} {unit} #{target}: pressed {values}, stored {rows}")
    return {"lost": lost, "duplicated": duplicated}


def delays(record: Record, reader: Reader, after: float = 0.0) -> dict[str, list[float]]:
    """Per press typed after ``after`` (epoch s; from the pages' own clocks and the
    receipts' write times), in ms."""
    written = dict(reader.conn.execute("SELECT client_id, received_at FROM answer_receipts"))
    from annotation.timestamps import parse_utc

    visible, database, acked = [], [], []
    for stats in record.stats:
        for p in stats["presses"]:
            at_epoch = (stats["origin"] + p["at"]) / 1000
            if at_epoch < after:
                continue
            if p["visible"] is not None:
                visible.append(p["visible"] - p["at"])
            if p["acked"] is not None:
                acked.append(p["acked"] - p["at"])
            stamp = written.get(p["cid"])
            if stamp is not None:
                database.append((parse_utc(stamp).timestamp() - at_epoch) * 1000)
                if not after:
                    record.timeline.append((at_epoch, database[-1]))
    return {"visible": visible, "database": database, "acked": acked}


def painted(record: Record, after: float = 0.0) -> dict[str, float]:
    """Key -> next paint (Event Timing) over the keys pressed after ``after`` (epoch s):
    p50 / p95 / max, the presses the browser did not report (under 16 ms) counted below
    16 ms; empty when fewer than 5% were reported (the p95 is then under 16 ms)."""
    slow, keys = [], 0
    for stats in record.stats:
        mine = {round(p["at"], 1) for p in stats["presses"]
                if (stats["origin"] + p["at"]) / 1000 >= after}
        keys += len(mine)
        # an entry's start time is its event's time stamp: the answer keys only (no Enter)
        slow += [d for t, d in stats.get("painted", []) if round(t, 1) in mine]
    keys = max(keys, len(slow))
    if not keys:
        return {}
    ranked = sorted(slow, reverse=True)

    def quantile(q: float) -> float:
        k = int((1 - q) * keys)  # how many presses are slower than the quantile
        return ranked[k] if k < len(ranked) else 16.0

    return {"n": keys, "reported": len(slow), "p50": quantile(0.5), "p95": quantile(0.95),
            "max": ranked[0] if ranked else 16.0}


def summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ms = sorted(values)
    return {"n": len(ms), "p50": statistics.median(ms),
            "p95": ms[min(len(ms) - 1, int(0.95 * len(ms)))], "max": ms[-1]}


def stop(server: subprocess.Popen) -> None:
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotators", type=int, default=4)
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--port", type=int, default=0,
                        help="0: free ports (several servers: PORT, PORT+1, ...)")
    parser.add_argument("--db", default=None,
                        help="a postgresql:// URL (with media=DIR) instead of a SQLite file")
    parser.add_argument("--servers", type=int, default=1,
                        help="judge-audit serve processes on the one database (PostgreSQL)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--log", type=Path, default=None, help="keep the server's log here")
    parser.add_argument("--nice", type=int, default=10,
                        help="CPU priority of the browsers below the server's (0: equal)")
    args = parser.parse_args(argv)
    n = max(1, min(args.annotators, MAX_ANNOTATORS))
    minutes = max(0.1, min(args.minutes, MAX_MINUTES))
    n_servers = max(1, min(args.servers, 8))
    if n_servers > 1 and not args.db:
        parser.error("--servers above 1 needs --db postgresql://... (one SQLite file is"
                     " served by one process)")
    ports = ([args.port + k for k in range(n_servers)] if args.port
             else [shots.free_port() for _ in range(n_servers)])
    port = ports[0]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = prepare(folder, n, args.db)
        log_paths = [folder / f"serve-{k}.log" for k in range(n_servers)]
        servers = []
        try:
            for server_port, log_path in zip(ports, log_paths, strict=True):
                with log_path.open("w") as log:
                    servers.append(subprocess.Popen(
                        [sys.executable, "-m", "annotation.cli", "serve", "--db", str(db),
                         "--port", str(server_port)], stdout=log, stderr=subprocess.STDOUT,
                        start_new_session=True, cwd=folder))
            for server_port in ports:
                shots.wait_healthy(server_port, timeout=60)
            if args.nice:  # this process and what it starts from now on: the browsers
                os.nice(args.nice)
            reader = Reader(db)
            record, elapsed = asyncio.run(drive(ports, reader, n, minutes, args.seed))
        finally:
            for server in servers:
                stop(server)
        log_text = "".join(p.read_text() for p in log_paths)
        tracebacks = log_text.count("Traceback")
        if args.log:
            args.log.write_text(log_text)
        counts = account(record, reader)
        times = {k: summary(v) for k, v in delays(record, reader).items()}
        all_in = max(record.arrived) if len(record.arrived) == n else float("inf")
        steady = {k: summary(v) for k, v in delays(record, reader, all_in).items()}
        times["painted"], steady["painted"] = painted(record), painted(record, all_in)
        rows = reader.conn.execute("SELECT count(*) FROM annotations WHERE source = 'app'"
                                   ).fetchone()[0]
        integrity = reader.integrity()
        if reader.store is not None:
            reader.store.close()
        else:
            reader.conn.close()
    bursts = sum(p.burst for p in record.presses)
    where = (f"http://127.0.0.1:{port}" if n_servers == 1 else
             f"{n_servers} servers (ports {', '.join(map(str, ports))}) on one PostgreSQL")
    print(f"annotators {n}, {elapsed:.0f} s on {where} (sign-in included),"
          f" browsers at nice {args.nice}")
    print(f"keys pressed              {len(record.presses)} answer keys ({bursts} in bursts), "
          f"{record.submits} Enter on complete items")
    print(f"answers written           {rows} rows ({rows / elapsed:.2f}/s)")
    print(f"lost                      {counts['lost']} answer keys, {len(record.submits_lost)} "
          f"submit keys")
    print(f"duplicated                {counts['duplicated']}")
    print(f"pending at the end        {record.pending}")
    for title, table in (("whole run, sign-ins included", times),
                         ("once all annotators were in", steady)):
        print(f"{title}:")
        for name, label in (("visible", "key -> visible"), ("painted", "key -> next paint"),
                            ("database", "key -> database"), ("acked", "key -> acknowledged")):
            t = table[name]
            if t:
                below = "<" if name == "painted" and t["p50"] <= 16 else ""
                print(f"  {label + ' (ms)':<24}p50 {below}{t['p50']:.0f}  p95 {t['p95']:.0f}  "
                      f"max {t['max']:.0f}  (n {t['n']})")
    submit = summary(record.submit_ms)
    if submit:
        print(f"Enter -> next item        p50 {submit['p50']:.0f}  p95 {submit['p95']:.0f}  "
              f"max {submit['max']:.0f} ms")
    print(f"server errors             {tracebacks} tracebacks, {record.http_5xx} HTTP 5xx, "
          f"integrity {integrity}")
    for line in (record.submits_lost + record.stray)[:10]:
        print(f"  {line}")
    if args.json:
        args.json.write_text(json.dumps({
            "annotators": n, "servers": n_servers,
            "engine": "postgresql" if args.db else "sqlite",
            "seconds": elapsed, "nice": args.nice, "presses": len(record.presses),
            "bursts": bursts, "submits": record.submits, "rows": rows, **counts,
            "submits_lost": len(record.submits_lost), "pending": record.pending,
            "times_ms": times, "steady_ms": steady, "submit_ms": submit, "tracebacks": tracebacks,
            "http_5xx": record.http_5xx, "integrity": integrity,
            "timeline": sorted(record.timeline)}, indent=1))
    bad = (counts["lost"] or counts["duplicated"] or record.pending or record.submits_lost
           or tracebacks or record.http_5xx or integrity != "ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
