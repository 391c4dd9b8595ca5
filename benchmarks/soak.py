"""Soak: N simulated annotators for T minutes against a running ``judge-audit serve``.

    python benchmarks/soak.py [--annotators 4] [--minutes 2] [--port 0]

Builds a fresh copy of the demo project in a temporary folder, adds the accounts
``soak1..soakN`` (and, to have work for all of them, sets the overlap to N), starts
``judge-audit serve --db DB`` on localhost (its own process group, stopped at the end, also
on error) and drives one Debian Chromium (Playwright, ``/usr/bin/chromium``) with N browser
contexts at once, one per annotator, over HTTP and the app's websocket, as people would:
sign in, leave the guidelines with Enter, then answer with the keyboard (Y / N on the
question marked ▶, a digit on a criterion, Enter to submit a complete item), each annotator
with its own think time (0.2-0.6 s, seeded).

Every key press is followed until the answer is in the database (read-only connection,
polled every 20 ms): that delay is the figure, server time plus localhost transport and the
browser, as a user feels it. Printed at the end: answers written, answers/s over the run,
p50 / p95 / max of the per-answer delay, items submitted, and errors (a key press whose
answer did not arrive within 15 s, server exceptions in its log, broken integrity). Bounded:
at most 20 annotators and 30 minutes. Exit status 1 when any error was seen.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotation.accounts import auth  # noqa: E402
from annotation.store import Store  # noqa: E402
from annotation.work import workflow  # noqa: E402

MAX_ANNOTATORS, MAX_MINUTES = 20, 30
ANSWER_TIMEOUT = 15.0


def _screenshot_helpers():
    spec = importlib.util.spec_from_file_location("shots", ROOT / "scripts" / "screenshot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


shots = _screenshot_helpers()


def prepare(folder: Path, n: int) -> Path:
    db = folder / "soak.db"
    subprocess.run([sys.executable, "-m", "annotation.cli", "demo", "--db", str(db),
                    "--quiet"], check=True, cwd=folder)
    with Store.open(db) as store:
        for i in range(1, n + 1):
            auth.add_user(store, f"soak{i}", "annotator", f"soak-pass-{i}", actor="soak")
        workflow.set_settings(store, "soak", overlap=max(n, 3))
    return db


class Reader:
    """The database as the soak sees it: a read-only store, fresh per question."""

    def __init__(self, db: Path):
        self.store = Store.open(db, migrate=False)

    def answers(self, who: str) -> int:
        return self.store.conn.execute(
            "SELECT count(*) FROM annotations WHERE annotator = ?", [who]).fetchone()[0]

    def submissions(self, who: str) -> int:
        return self.store.conn.execute(
            "SELECT count(*) FROM queue_submissions WHERE kind = 'annotate' AND person = ?",
            [who]).fetchone()[0]

    def reserved(self, who: str) -> str | None:
        row = self.store.conn.execute(
            "SELECT unit FROM queue_reservations WHERE kind = 'annotate' AND person = ?",
            [who]).fetchone()
        return row[0] if row else None

    def criteria_labels(self) -> set[str]:
        return {" ".join(r[0].split()) for r in self.store.conn.execute(
            "SELECT label FROM criteria")}


#: The checklist entry marked "▶" on the page (where the keyboard acts), as shown.
POINTER_JS = """() => Array.from(document.querySelectorAll(
        '[data-testid="stMainBlockContainer"] strong'))
    .map(e => e.innerText.trim()).filter(t => t.startsWith('▶'))
    .map(t => t.slice(1).trim().replace(/\\s+/g, ' '))"""
SUBMIT_JS = """() => Array.from(document.querySelectorAll('button'))
    .some(b => b.innerText.includes('Submit item') && !b.disabled)"""


async def next_key(page, criteria: set[str], rng: random.Random) -> str | None:
    """What a person would press now, reading the page: Enter on a complete item, y / n on
    the marked question, a digit on the marked criterion."""
    if await page.evaluate(SUBMIT_JS):
        return "Enter"
    marked = await page.evaluate(POINTER_JS)
    if len(marked) != 1:
        return None
    text = marked[0].split(" · ")[0]
    return str(rng.randint(1, 9)) if text in criteria else rng.choice("yn")


async def wait_for(check, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        await asyncio.sleep(0.02)
    return False


async def settle(page, quiet: float = 0.3, timeout: float = ANSWER_TIMEOUT) -> None:
    """Wait until Streamlit has been idle (nothing running, something drawn) for ``quiet``."""
    deadline = time.monotonic() + timeout
    since = None
    while time.monotonic() < deadline:
        if await page.evaluate(shots.RENDERED_JS):
            since = since or time.monotonic()
            if time.monotonic() - since >= quiet:
                return
        else:
            since = None
        await asyncio.sleep(0.05)


async def annotator(browser, port: int, i: int, reader: Reader, end: float,
                    delays: list[float], errors: list[str], counts: dict[str, int]) -> None:
    who = f"soak{i}"
    rng = random.Random(i)
    criteria = reader.criteria_labels()
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await context.new_page()
    await page.goto(f"http://127.0.0.1:{port}/")
    await page.locator("input[aria-label='Name']").fill(who)
    await page.locator("input[type='password']").fill(f"soak-pass-{i}")
    await page.keyboard.press("Enter")
    await page.wait_for_selector("[data-testid='stSidebar']", timeout=60_000)
    start = page.get_by_role("button", name="I have read the guidelines")
    await start.wait_for(timeout=60_000)
    await page.evaluate("document.activeElement && document.activeElement.blur()")
    await page.keyboard.press("Enter")
    while time.monotonic() < end:
        await asyncio.sleep(rng.uniform(0.2, 0.6))
        await settle(page)  # a key pressed before the page has drawn the item is lost
        key = await next_key(page, criteria, rng)
        if key is None:
            counts["idle"] += 1
            if reader.reserved(who) is None and await page.get_by_text("All done").count():
                break
            continue
        if key == "Enter":
            before = reader.submissions(who)
            await page.keyboard.press("Enter")
            if await wait_for(lambda b=before: reader.submissions(who) > b, ANSWER_TIMEOUT):
                counts["submitted"] += 1
            else:
                errors.append(f"{who}: Enter on a complete item did not submit it within "
                              f"{ANSWER_TIMEOUT:g} s")
            continue
        before = reader.answers(who)
        t0 = time.perf_counter()
        await page.keyboard.press(key)
        if await wait_for(lambda b=before: reader.answers(who) > b, ANSWER_TIMEOUT):
            delays.append(time.perf_counter() - t0)
        else:
            errors.append(f"{who}: answer {key!r} did not arrive within {ANSWER_TIMEOUT:g} s")
    await context.close()


async def run(port: int, reader: Reader, n: int, minutes: float) -> tuple[list[float],
                                                                           list[str],
                                                                           dict[str, int],
                                                                           float]:
    from playwright.async_api import async_playwright

    delays: list[float] = []
    errors: list[str] = []
    counts = {"submitted": 0, "idle": 0}
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=shots.CHROMIUM,
                                           args=shots.CHROMIUM_ARGS)
        t0 = time.monotonic()
        end = t0 + minutes * 60
        await asyncio.gather(*(annotator(browser, port, i, reader, end, delays, errors,
                                         counts) for i in range(1, n + 1)))
        elapsed = time.monotonic() - t0
        await browser.close()
    return delays, errors, counts, elapsed


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
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    args = parser.parse_args(argv)
    n = max(1, min(args.annotators, MAX_ANNOTATORS))
    minutes = max(0.1, min(args.minutes, MAX_MINUTES))
    port = args.port or shots.free_port()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = prepare(folder, n)
        log_path = folder / "serve.log"
        with log_path.open("w") as log:
            server = subprocess.Popen(
                [sys.executable, "-m", "annotation.cli", "serve", "--db", str(db), "--port",
                 str(port)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                cwd=folder)
            try:
                shots.wait_healthy(port, timeout=60)
                reader = Reader(db)
                delays, errors, counts, elapsed = asyncio.run(run(port, reader, n, minutes))
            finally:
                stop(server)
        server_errors = log_path.read_text().count("Traceback")
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        conn.close()
    answers = len(delays)
    print(f"annotators {n}, {elapsed:.0f} s on http://127.0.0.1:{port} (sign-in included)")
    print(f"answers written      {answers}  ({answers / elapsed:.2f} answers/s)")
    if delays:
        ms = sorted(d * 1000 for d in delays)
        p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
        print(f"key -> database (ms) p50 {statistics.median(ms):.0f}  p95 {p95:.0f}"
              f"  max {ms[-1]:.0f}")
    print(f"items submitted      {counts['submitted']}")
    ignored = sum("did not submit" in e for e in errors)
    print(f"errors               {len(errors) - ignored} answer keys without an answer, "
          f"{ignored} submit keys without a submission, {server_errors} server tracebacks, "
          f"integrity {integrity}")
    for e in errors[:10]:
        print(f"  {e}")
    return 1 if errors or server_errors or integrity != "ok" else 0


if __name__ == "__main__":
    sys.exit(main())
