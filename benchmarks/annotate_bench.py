"""Server-side cost of one answer from the answer panel, against a bare write of the same row.

    python benchmarks/annotate_bench.py [--repeats 300]

An answer no longer reruns the annotate page: the panel posts it to ``/_ja/answers`` and the
server runs :func:`annotation.ui.answer_panel.deliver_body` (parse the delivery, check the
session, find the visit, the item's targets and the DSG gate, claim the item, check the row
the panel saw, write the answer and its receipt, add the active time: one transaction per
entry). This benchmark times that function in this process on a fresh demo project with a
signed-in annotator on an open item, answering the first question "yes" / "no" in turn (so
every press writes a row), against a **bare write** of the same row: ``json.loads`` of the
same body and one ``INSERT`` into ``annotations`` in a ``BEGIN IMMEDIATE`` transaction on
the same database file (WAL, ``synchronous=FULL``), no checks. The two alternate in blocks
of 20 (each side measured first in turn) after 20 unmeasured answers each. Printed: median
and 90th percentile in ms per answer and the ratio of the medians (goal: at most 5x: what
the checks cost, a dozen indexed reads around the one insert). Latency under load, through
the network and the browser, is ``benchmarks/soak.py``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotation.accounts import auth, sessions  # noqa: E402
from annotation.project_files import build_demo_db  # noqa: E402
from annotation.store import Store  # noqa: E402
from annotation.store import accounts as accounts_store  # noqa: E402
from annotation.ui import answer_panel  # noqa: E402
from annotation.work import workflow  # noqa: E402

GOAL = 5.0
WHO = "bench"


def setup(folder: Path) -> tuple[Path, str, int, str]:
    """A demo project, the bench account signed in on an open item: (db, token, visit,
    output)."""
    db = folder / "bench.db"
    build_demo_db(db)
    with Store.open(db) as store:
        auth.add_user(store, WHO, "annotator", "bench-pass-1", actor="bench")
        workflow.set_settings(store, "bench", overlap=10)
        with accounts_store.writing(store, public=True) as rows:
            token = sessions.create(rows, WHO, "annotator", handoff=False)
        state: dict = {}
        session = workflow.AnnotationSession(store, WHO, state)
        assert session.output_id is not None
        return db, token, int(state["visit_id"]), session.output_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=300, help="measured answers per side")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db, token, visit, output = setup(Path(tmp))
        os.environ["JUDGE_AUDIT_DB"] = str(db)  # the project the route serves
        bare = sqlite3.connect(db, isolation_level=None)
        bare.execute("PRAGMA journal_mode = WAL")
        bare.execute("PRAGMA synchronous = FULL")
        first_question = bare.execute(
            "SELECT q.question_id FROM questions q JOIN tasks t ON t.checklist_id ="
            " q.checklist_id JOIN outputs o ON o.task_id = t.task_id WHERE o.output_id = ?"
            " ORDER BY q.position LIMIT 1", [output]).fetchone()[0]
        seen: list[int | None] = [None]
        count = [0, 0]  # answers of each side: each alternates yes / no

        def panel_answer() -> float:
            count[0] += 1
            value = "yes" if count[0] % 2 else "no"
            body = json.dumps({"entries": [{
                "visit": visit, "target": 0, "value": value, "cid": f"{uuid.uuid4()}:1",
                "seq": time.time_ns() // 1000, "seen": seen[0], "seconds": 1.0}]}).encode()
            t0 = time.perf_counter()
            status, payload = answer_panel.deliver_body(token, body)
            elapsed = time.perf_counter() - t0
            assert status == 200, payload
            receipt = payload["receipts"][0]
            assert status == 200 and receipt["outcome"] == "written", payload
            seen[0] = receipt["row"]
            return elapsed

        def bare_answer() -> float:
            count[1] += 1
            body = json.dumps({"entries": [{
                "visit": visit, "target": 0, "value": "yes" if count[1] % 2 else "no",
                "cid": f"{uuid.uuid4()}:1", "seq": 1, "seen": None, "seconds": 1.0}]})
            t0 = time.perf_counter()
            entry = json.loads(body)["entries"][0]
            bare.execute("BEGIN IMMEDIATE")
            bare.execute("INSERT INTO annotations (annotator, output_id, question_id, answer,"
                         " source, created_at) VALUES (?, ?, ?, ?, 'bench', ?)",
                         ["bare", output, first_question, entry["value"],
                          "2026-01-01T00:00:00+00:00"])
            bare.execute("COMMIT")
            return time.perf_counter() - t0

        for _ in range(20):
            panel_answer()
            bare_answer()
        times: dict[str, list[float]] = {"panel": [], "bare": []}
        block, k = 20, 0
        while min(len(v) for v in times.values()) < args.repeats:
            order = (("panel", panel_answer), ("bare", bare_answer))
            for name, fn in (order if k % 2 == 0 else order[::-1]):
                for _ in range(block):
                    times[name].append(fn())
            k += 1
        bare.close()
    print(f"one answer, {args.repeats} per side (ms): median / p90")
    medians = {}
    for name, label in (("panel", "answer panel (deliver_body)"),
                        ("bare", "bare INSERT of the row")):
        ms = sorted(t * 1000 for t in times[name])
        medians[name] = statistics.median(ms)
        print(f"  {label:<30} {medians[name]:7.2f} / {ms[int(0.9 * len(ms))]:7.2f}")
    ratio = medians["panel"] / medians["bare"]
    print(f"ratio {ratio:.2f} (goal: at most {GOAL:g})")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
