"""Make ``engine_migration.db.gz`` and ``.json.gz`` with the code of the previous main.

The migration test (``tests/test_migration_engine.py``) opens a database written by the
code before the one workflow engine (commit c398739, schema version 5: per-workflow queue
tables) and compares what the new code shows against what the old code reported. Both
files are produced here, by the OLD code, never by the code under test::

    git archive c398739 | tar -x -C /tmp/oldmain
    PYTHONPATH=/tmp/oldmain python3 tests/old_main/make_engine_migration_db.py tests/old_main

The database is the demo project (no media folder: none of the compared reads opens an
image) with, through the old API: answers (one changed, one with a note), a flag, active
time, submissions, one live and one expired reservation per workflow, pre-label readings
and conflict verdicts (one changed), tree reviews (one changed), and the audit history of
it all. The JSON holds what the old code reported: every answer row, the history, the
progress and previous items of every person, personal orders, and the unit ``next_*``
chooses for each person at ``evaluated_at``.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from annotation.project_files import build_demo_db
from annotation.store import Store
from annotation.store.history import history
from annotation.trace.trees import load_tree_item, tree_units
from annotation.work import routing, workflow
from annotation.work import tree_review as tr
from annotation.work import verification as vf

PEOPLE = ("alice", "ann1", "ann2", "ann3", "admin")
NAMES = ("alice", "ann1", "zoë", "a:b", "")
UNITS = [f"u{i:02d}" for i in range(12)]


def annotate(store: Store, long_ago: datetime) -> None:
    """alice: two items submitted (one answer changed, a note), one started; ann2: an
    expired reservation; ann3: a live reservation; a flag; active time."""
    for _ in range(2):
        item = workflow.next_item(store, "alice")
        assert item is not None
        loaded = workflow.load_item(store, item)
        visit = workflow.start_visit(store, "alice", item)
        for q in loaded.questions:
            workflow.give_answer(store, "alice", item, question_id=q.question_id, answer="yes")
        first = loaded.questions[0].question_id
        workflow.give_answer(store, "alice", item, question_id=first, answer="no",
                             note="looked again")
        for c in loaded.criteria:
            workflow.give_answer(store, "alice", item, criterion=c.name, score=7.0,
                                 active=(visit, 3.5))
        workflow.add_active_time(store, visit, 12.0, annotator="alice")
        workflow.submit(store, "alice", item)
    started = workflow.next_item(store, "alice")
    assert started is not None
    q = workflow.load_item(store, started).questions[0].question_id
    workflow.give_answer(store, "alice", started, question_id=q, answer="cant_tell")
    workflow.flag_item(store, "alice", started, "ambiguous_question", "which one?", q)
    workflow.next_item(store, "ann2", now=long_ago)
    workflow.next_item(store, "ann3")


def verify(store: Store, long_ago: datetime) -> None:
    """alice verifies one task (a changed verdict) and starts another; ann1 holds an
    expired reservation, ann2 a live one."""
    task = vf.next_task(store, "alice")
    assert task is not None
    item = vf.load_verify_item(store, task)
    visit = vf.start_visit(store, "alice", task)
    for idx, attr in item.needed():
        value = 30.0 if attr == "yaw" else True
        vf.give_reading(store, "alice", task, idx, attr, value, active=(visit, 2.0))
    if item.needed():
        idx, attr = item.needed()[0]
        vf.give_reading(store, "alice", task, idx, attr, 45.0 if attr == "yaw" else False)
    for check in item.checks:
        vf.give_verdict(store, "alice", task, check.conflict, True, check.automatic,
                        active=(visit, 1.0))
    first = item.checks[0]
    vf.give_verdict(store, "alice", task, first.conflict, False, first.automatic,
                    note="the arrow points left")
    vf.submit_task(store, "alice", task)
    second = vf.next_task(store, "alice")
    assert second is not None
    item2 = vf.load_verify_item(store, second)
    if item2.needed():
        idx, attr = item2.needed()[0]
        vf.give_reading(store, "alice", second, idx, attr, 10.0 if attr == "yaw" else True)
    vf.next_task(store, "ann1", now=long_ago)
    vf.next_task(store, "ann2")


def review(store: Store, long_ago: datetime) -> None:
    """alice reviews one tree (a changed review) and submits it; ann1: an expired
    reservation; ann2: a live one with a review given."""
    tr.set_settings(store, "admin", overlap=2)
    unit = tr.next_tree(store, "alice")
    assert unit is not None
    judge = tr.judge_for(store)
    assert judge is not None
    failing = tr.failing_instances(store, load_tree_item(store, unit), judge)
    for f in failing:
        tr.give_review(store, "alice", unit, f.key, tr.PERSISTENT, reason="attribute_mismatch")
    if failing:
        tr.give_review(store, "alice", unit, failing[0].key, tr.NOT_A_FAILURE,
                       box={"node": "N0", "box": [0.1, 0.1, 0.5, 0.5]}, note="fine")
    tr.submit_tree(store, "alice", unit)
    tr.next_tree(store, "ann1", now=long_ago)
    other = tr.next_tree(store, "ann2")
    if other is not None:
        failing = tr.failing_instances(store, load_tree_item(store, other), judge)
        if failing:
            tr.give_review(store, "ann2", other, failing[0].key, tr.PERSISTENT,
                           reason="duplication")


def rows(store: Store, sql: str) -> list[list]:
    return [list(r) for r in store.conn.execute(sql)]


def report(store: Store, db: Path, at: datetime) -> dict:
    """What the old code shows of the database (``at``: when ``next_*`` is asked)."""
    eligible = list(workflow.eligible_outputs(store).output_id)
    tasks = vf.verifiable_tasks(store)
    trees = tree_units(store)
    hist = history(store)
    out: dict = {
        "evaluated_at": at.isoformat(timespec="microseconds"),
        "answers": {
            "annotations": rows(store, "SELECT * FROM annotations ORDER BY annotation_id"),
            "prelabel_readings": rows(store,
                                      "SELECT * FROM prelabel_readings ORDER BY reading_id"),
            "conflict_verdicts": rows(store,
                                      "SELECT * FROM conflict_verdicts ORDER BY verdict_id"),
            "tree_reviews": rows(store, "SELECT * FROM tree_reviews ORDER BY review_id"),
        },
        "current": {
            "annotations": rows(store, "SELECT annotation_id FROM current_annotations"
                                " ORDER BY annotation_id"),
            "prelabel_readings": rows(store, "SELECT reading_id FROM"
                                      " current_prelabel_readings ORDER BY reading_id"),
            "conflict_verdicts": rows(store, "SELECT verdict_id FROM"
                                      " current_conflict_verdicts ORDER BY verdict_id"),
            "tree_reviews": rows(store, "SELECT review_id FROM current_tree_reviews"
                                 " ORDER BY review_id"),
        },
        "history": json.loads(hist.astype(object).where(hist.notna(), None)
                              .to_json(orient="split", index=False)),
        "flags": rows(store, "SELECT * FROM flags ORDER BY flag_id"),
        "item_times": json.loads(store.item_times_df().to_json(orient="records")),
        "overall": {"annotate": list(workflow.overall_progress(store)),
                    "verify": list(vf.overall_progress(store))},
        "personal": {}, "previous": {}, "my_answers": {}, "orders": {}, "next": {},
        "queue": {
            "reservations": rows(store, "SELECT * FROM reservations ORDER BY rowid"),
            "submissions": rows(store, "SELECT * FROM submissions ORDER BY rowid"),
            "item_time": rows(store, "SELECT * FROM item_time ORDER BY visit_id"),
            "verify_reservations": rows(store, "SELECT * FROM verify_reservations"
                                        " ORDER BY rowid"),
            "verify_submissions": rows(store, "SELECT * FROM verify_submissions"
                                       " ORDER BY rowid"),
            "verify_time": rows(store, "SELECT * FROM verify_time ORDER BY visit_id"),
            "tree_reservations": rows(store, "SELECT * FROM tree_reservations ORDER BY rowid"),
            "tree_submissions": rows(store, "SELECT * FROM tree_submissions ORDER BY rowid"),
        },
    }
    for p in PEOPLE:
        out["personal"][p] = {"annotate": list(workflow.personal_progress(store, p)),
                              "verify": list(vf.personal_progress(store, p)),
                              "trees": list(tr.personal_progress(store, p))}
        out["previous"][p] = {"annotate": workflow.previous_item(store, p, None),
                              "verify": vf.previous_task(store, p, None),
                              "trees": tr.previous_tree(store, p, None)}
    s_a, s_v, s_t = (workflow.get_settings(store).seed, vf.get_settings(store).seed,
                     tr.get_settings(store).seed)
    for p in PEOPLE + NAMES:
        out["orders"][p] = {
            "annotate": workflow.personal_order(eligible, p, s_a),
            "verify": routing.personal_order(tasks, p, s_v, "verify"),
            "trees": routing.personal_order(trees, p, s_t, "tree"),
            # the pure functions on a fixed list and other seeds
            "annotate_units_seed7": workflow.personal_order(UNITS, p, 7),
            "verify_units_seed7": routing.personal_order(UNITS, p, 7, "verify"),
            "trees_units_seed7": routing.personal_order(UNITS, p, 7, "tree"),
        }
    # what next_* chooses at ``at`` (on a copy: choosing writes a reservation)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "copy.db"
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        shutil.copyfile(db, copy)
        with Store.open(copy) as c:
            for p in PEOPLE:
                out["next"][p] = {"annotate": workflow.next_item(c, p, now=at),
                                  "verify": vf.next_task(c, p, now=at),
                                  "trees": tr.next_tree(c, p, now=at)}
    return out


def main(folder: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "demo.db"
        db = Path(tmp) / "engine_migration.db"
        build_demo_db(work)
        long_ago = datetime.now(UTC) - timedelta(hours=3)
        with Store.open(work) as store:
            annotate(store, long_ago)
            verify(store, long_ago)
            review(store, long_ago)
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            store.conn.execute("PRAGMA journal_mode = DELETE")
            store.conn.execute("VACUUM")
        shutil.copyfile(work, db)
        at = datetime.now(UTC) + timedelta(seconds=1)
        with Store.open(db) as store:
            assert store.schema_version() == 5, "run with the code of c398739"
            data = report(store, db, at)
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            store.conn.execute("PRAGMA journal_mode = DELETE")
        # gzip -n style: no name and no time in the header, so a rebuild differs only in data
        (folder / "engine_migration.db.gz").write_bytes(
            gzip.compress(db.read_bytes(), 9, mtime=0))
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    (folder / "engine_migration.json.gz").write_bytes(
        gzip.compress(text.encode() + b"\n", 9, mtime=0))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent))
