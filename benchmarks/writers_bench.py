"""Answer throughput of one database: W annotators writing as fast as they can, at once.

    python benchmarks/writers_bench.py [--writers 1,4,8,16] [--seconds 15]
                                       [--db postgresql://...?media=DIR]

Every write transaction of judge-audit takes the one write lock of its database (SQLite's
``BEGIN IMMEDIATE``; on PostgreSQL one transaction-level advisory lock, README,
*PostgreSQL*), so answers are written one at a time however many ``serve`` processes
deliver them. This benchmark measures how many answers a second that allows: a fresh demo
project (a SQLite file in a temporary folder, or the PostgreSQL database of ``--db``, the
demo imported into it), W accounts each signed in on an open item, and W processes, each
delivering one answer at a time through what ``POST /_ja/answers`` runs
(:func:`annotation.ui.answer_panel.deliver_body`: session, visit, gating, claim, receipt,
row, one transaction per answer) with no pause, toggling its first question yes / no for
``--seconds``. For each W it prints answers per second over all writers (from the first
writer's start to the last one's end), the median and 95th percentile of one answer's
time, and checks that the database holds exactly the answers the writers were told were
written. With ``--db``, one number of writers (each round needs a fresh database). The
soak's 20 annotators at a human pace write about 15 answers a second
(``benchmarks/soak.py``), about 0.75 each: the figure divided by 0.75 is roughly how many
annotators one database serves before answers queue.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotation.accounts import auth, sessions  # noqa: E402
from annotation.project_files import build_demo_db  # noqa: E402
from annotation.store import Store  # noqa: E402
from annotation.store import accounts as accounts_store  # noqa: E402
from annotation.work import workflow  # noqa: E402

#: answers a second of one annotator at a human pace (the soak: 20 annotators, ~15/s)
HUMAN_RATE = 0.75


def prepare(db: str, writers: int) -> list[tuple[str, str, int]]:
    """The demo with accounts ``bench1..W`` signed in, each on an open item:
    ``(name, session token, visit id)`` each."""
    build_demo_db(db)
    signed: list[tuple[str, str, int]] = []
    with Store.open(db) as store:
        workflow.set_settings(store, "bench", overlap=max(writers, 3))
        for i in range(1, writers + 1):
            name = f"bench-{uuid.uuid4().hex[:8]}"
            auth.add_user(store, name, "annotator", f"bench-pass-{i}-long", actor="bench")
            with accounts_store.writing(store, public=True) as rows:
                token = sessions.create(rows, name, "annotator", handoff=False)
            state: dict[str, Any] = {}
            session = workflow.AnnotationSession(store, name, state)
            assert session.output_id is not None, "the demo has no open item for a writer"
            signed.append((name, token, int(state["visit_id"])))
    return signed


def writer(db: str, token: str, visit: int, start: float, seconds: float,
           results: Any) -> None:
    """Deliver answers one at a time from ``start`` until ``start + seconds``; put
    ``("ok", (times, first, last))``: each answer's seconds, and when the writer began and
    ended (epoch seconds), or ``("error", why)``."""
    os.environ["JUDGE_AUDIT_DB"] = db
    from annotation.ui import answer_panel

    seen: int | None = None
    times: list[float] = []
    value = "yes"
    time.sleep(max(0.0, start - time.time()))
    first, end = time.time(), start + seconds
    while time.time() < end:
        body = json.dumps({"entries": [{
            "visit": visit, "target": 0, "value": value, "cid": f"{uuid.uuid4()}:1",
            "seq": time.time_ns() // 1000, "seen": seen, "seconds": 1.0}]}).encode()
        t0 = time.perf_counter()
        status, payload = answer_panel.deliver_body(token, body)
        times.append(time.perf_counter() - t0)
        receipt = payload["receipts"][0] if status == 200 else {}
        if status != 200 or receipt.get("outcome") != "written":
            results.put(("error", f"{status} {payload}"))
            return
        seen = receipt["row"]
        value = "no" if value == "yes" else "yes"
    results.put(("ok", (times, first, time.time())))


def run(db: str, signed: list[tuple[str, str, int]], seconds: float) -> dict[str, float]:
    """One round: every account of ``signed`` writing at once."""
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    # every process started and its imports done by then (about 0.5 CPU s each); one that
    # is late still stops at start + seconds, and the rate is taken over the time the
    # writers actually wrote (first start to last end)
    start = time.time() + 3.0 + 0.3 * len(signed)
    procs = [ctx.Process(target=writer, args=(db, token, visit, start, seconds, results))
             for _, token, visit in signed]
    for p in procs:
        p.start()
    outcomes = []
    for _ in procs:
        try:
            outcomes.append(results.get(timeout=start - time.time() + seconds + 120))
        except queue.Empty:
            codes = [p.exitcode for p in procs]
            raise SystemExit(f"a writer did not report (exit codes {codes})") from None
    for p in procs:
        p.join()
    errors = [detail for kind, detail in outcomes if kind == "error"]
    if errors:
        raise SystemExit(f"a writer failed: {errors[0]}")
    times = [t * 1000 for _, (ts, _, _) in outcomes for t in ts]
    window = (max(last for _, (_, _, last) in outcomes)
              - min(first for _, (_, first, _) in outcomes))
    with Store.open(db, migrate=False) as store:
        stored = store.conn.execute(
            "SELECT count(*) FROM annotations WHERE annotator IN"
            f" ({', '.join('?' * len(signed))})", [name for name, _, _ in signed]).fetchone()[0]
    ranked = sorted(times)
    return {"answers": len(times), "stored": stored, "per_second": len(times) / window,
            "p50": statistics.median(ranked), "p95": ranked[int(0.95 * (len(ranked) - 1))]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", default="1,4,8,16",
                        help="comma-separated numbers of writers, one round each")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--db", default=None, help="a postgresql:// URL (with media=DIR);"
                        " default: a SQLite file in a temporary folder")
    args = parser.parse_args(argv)
    rounds = [int(w) for w in args.writers.split(",")]
    if any(w < 1 or w > 64 for w in rounds):
        parser.error("--writers: from 1 to 64 each")
    if args.db and len(rounds) > 1:
        parser.error("--db takes one number of writers (each round needs a fresh database:"
                     " its writers take the demo's open items)")
    print(f"{'writers':>7} {'answers/s':>10} {'p50 ms':>8} {'p95 ms':>8}  annotators at"
          f" {HUMAN_RATE}/s   stored = written")
    with tempfile.TemporaryDirectory() as tmp:
        for w in rounds:
            db = args.db or str(Path(tmp) / f"writers-{w}.db")
            signed = prepare(db, w)
            r = run(db, signed, args.seconds)
            print(f"{w:>7} {r['per_second']:>10.1f} {r['p50']:>8.1f} {r['p95']:>8.1f}"
                  f"  {r['per_second'] / HUMAN_RATE:>14,.0f}   {r['stored'] == r['answers']}"
                  f" ({r['stored']:,} / {r['answers']:,})")
            if r["stored"] != r["answers"]:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
