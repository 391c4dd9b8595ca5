"""A database written by the previous main (c398739, schema 5: one set of queue tables per
workflow) opens, migrates to the one queue keyed by workflow kind (schema 6), and shows the
same answers, history, progress, personal orders and next units.

``tests/old_main/engine_migration.db.gz`` and the values compared against
(``engine_migration.json.gz``) were both made by the old code
(``tests/old_main/make_engine_migration_db.py``, run with the old tree on ``PYTHONPATH``),
never by the code under test.
"""

# SQLite only: the migration of an old SQLite project file (schema 5, written by old code).

from __future__ import annotations

import gzip
import json
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from annotation.store import Store, schema
from annotation.store.history import history
from annotation.trace.trees import tree_units
from annotation.work import engine, workflow
from annotation.work import tree_review as tr
from annotation.work import verification as vf

HERE = Path(__file__).resolve().parent / "old_main"
PEOPLE = ("alice", "ann1", "ann2", "ann3", "admin")
UNITS = [f"u{i:02d}" for i in range(12)]


@pytest.fixture(scope="module")
def old() -> dict[str, Any]:
    """What the old code reported of the database."""
    return json.loads(gzip.decompress((HERE / "engine_migration.json.gz").read_bytes()))


@pytest.fixture
def migrated(tmp_path) -> Store:
    db = tmp_path / "old.db"
    db.write_bytes(gzip.decompress((HERE / "engine_migration.db.gz").read_bytes()))
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 5
    conn.close()
    store = Store.open(db)
    yield store
    store.close()


def rows(store: Store, sql: str) -> list[list[Any]]:
    return [list(r) for r in store.conn.execute(sql)]


def test_the_old_database_migrates_to_one_queue(migrated, old):
    assert migrated.schema_version() == schema.SCHEMA_VERSION >= 6
    tables = set(migrated.db.table_names())
    assert {"queue_reservations", "queue_submissions", "queue_visits"} <= tables
    assert not tables & set(schema.COMPAT_VIEWS)
    assert migrated.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert migrated.conn.execute("PRAGMA foreign_key_check").fetchall() == []
    # every row of the old queue tables is kept (read through the compatibility views)
    sort = sorted
    for name, old_rows in old["queue"].items():
        columns = "*" if not name.endswith("time") else (
            "annotator, output_id, started_at, active_seconds" if name == "item_time"
            else "verifier, task_id, started_at, active_seconds")
        now = rows(migrated, f"SELECT {columns} FROM {name}")
        if name.endswith("time"):
            old_rows = [r[1:] for r in old_rows]
        assert sort(now) == sort(old_rows), name
    # annotation visits keep their ids
    assert [r[0] for r in old["queue"]["item_time"]] == [
        r[0] for r in rows(migrated, "SELECT visit_id FROM item_time ORDER BY visit_id")]
    assert migrated.conn.execute("SELECT count(*) FROM queue_reservations").fetchone()[0] == \
        sum(len(old["queue"][t]) for t in ("reservations", "verify_reservations",
                                          "tree_reservations"))


def test_the_same_answers_and_history(migrated, old):
    for table, id_column in (("annotations", "annotation_id"),
                             ("prelabel_readings", "reading_id"),
                             ("conflict_verdicts", "verdict_id"),
                             ("tree_reviews", "review_id")):
        got = rows(migrated, f"SELECT * FROM {table} ORDER BY {id_column}")
        if table == "prelabel_readings":  # schema 9 appends the image's content hash
            hashes = dict(migrated.conn.execute(
                "SELECT task_id || '/' || idx, sha256 FROM images").fetchall())
            assert [r[-1] for r in got] == [hashes[f"{r[2]}/{r[3]}"] for r in got]
            got = [r[:-1] for r in got]
        assert got == old["answers"][table], table
        assert rows(migrated, f"SELECT {id_column} FROM current_{table}"
                    f" ORDER BY {id_column}") == old["current"][table], table
    assert len(old["answers"]["conflict_verdicts"]) > len(old["current"]["conflict_verdicts"])
    hist = history(migrated)
    now = json.loads(hist.astype(object).where(hist.notna(), None)
                     .to_json(orient="split", index=False))
    assert now == old["history"]
    assert rows(migrated, "SELECT * FROM flags ORDER BY flag_id") == old["flags"]
    assert json.loads(migrated.item_times_df().to_json(orient="records")) == old["item_times"]


def test_the_same_progress_and_previous_units(migrated, old):
    assert [list(workflow.overall_progress(migrated)),
            list(vf.overall_progress(migrated))] == [old["overall"]["annotate"],
                                                     old["overall"]["verify"]]
    for p in PEOPLE:
        assert {"annotate": list(workflow.personal_progress(migrated, p)),
                "verify": list(vf.personal_progress(migrated, p)),
                "trees": list(tr.personal_progress(migrated, p))} == old["personal"][p], p
        assert {"annotate": workflow.previous_item(migrated, p, None),
                "verify": vf.previous_task(migrated, p, None),
                "trees": tr.previous_tree(migrated, p, None)} == old["previous"][p], p


def test_the_same_personal_orders(migrated, old):
    eligible = list(workflow.eligible_outputs(migrated).output_id)
    tasks = vf.verifiable_tasks(migrated)
    units = tree_units(migrated)
    seeds = (workflow.get_settings(migrated).seed, vf.get_settings(migrated).seed,
             tr.get_settings(migrated).seed)
    for p, orders in old["orders"].items():
        assert {
            "annotate": workflow.personal_order(eligible, p, seeds[0]),
            "verify": vf.ROUTER.order(tasks, p, seeds[1]),
            "trees": tr.ROUTER.order(units, p, seeds[2]),
            "annotate_units_seed7": engine.personal_order(UNITS, p, 7),
            "verify_units_seed7": engine.personal_order(UNITS, p, 7, "verify"),
            "trees_units_seed7": engine.personal_order(UNITS, p, 7, "tree"),
        } == orders, p


def test_the_same_next_units(migrated, old):
    """Resume, live and expired reservations, overlap: each person is routed to the unit
    the old code chose at the same moment."""
    at = datetime.fromisoformat(old["evaluated_at"])
    for p in PEOPLE:
        assert {"annotate": workflow.next_item(migrated, p, now=at),
                "verify": vf.next_task(migrated, p, now=at),
                "trees": tr.next_tree(migrated, p, now=at)} == old["next"][p], p


def test_the_migrated_answer_tables_stay_append_only(migrated):
    for table, _, what in schema.ANSWER_TABLES:
        with pytest.raises(sqlite3.IntegrityError, match=f"{what} are append-only"):
            migrated.conn.execute(f"DELETE FROM {table}")
