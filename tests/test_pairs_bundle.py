"""Pairs and rankings in the bundle and the store (issue #17): import, export round trip,
append-only human answers with history, precise refusals that leave the database as it
was, and the schema migration."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from annotation.formats.bundle import write_bundle
from annotation.formats.importers import import_path
from annotation.records import ImportRefused
from annotation.store import Store, schema
from tests.helpers.bundles import db_checksum, read_jsonl, write_jsonl
from tests.helpers.pair_fixture import PAIRS, pair_bundle

TABLES = {"pairs": "rowid", "rankings": "rowid", "pair_judgments": "pair_judgment_id",
          "ranking_judgments": "ranking_judgment_id", "pair_annotations": "pair_annotation_id",
          "ranking_annotations": "ranking_annotation_id"}


def _content(db: str | Path) -> dict[str, list[tuple]]:
    """Every row of the pair tables without row ids, import ids and import sources."""
    store = Store.open(db, migrate=False)
    conn = store.conn
    try:
        out = {}
        for table, order in TABLES.items():
            cur = conn.execute(f"SELECT * FROM {table} ORDER BY {order}")
            names = [d[0] for d in cur.description]
            keep = [i for i, n in enumerate(names)
                    if not n.endswith("_id") or n in ("pair_id", "ranking_id")]
            keep = [i for i in keep if names[i] not in ("import_id", "supersedes")]
            rows = []
            for r in cur.fetchall():
                row = [r[i] for i in keep]
                if "supersedes" in names:  # the superseded row's content, not its id
                    sup = r[names.index("supersedes")]
                    row.append(None if sup is None else conn.execute(
                        f"SELECT created_at FROM {table} WHERE {order} = ?", [sup]).fetchone())
                if "source" in names:
                    row[[names[i] for i in keep].index("source")] = "-"
                rows.append(tuple(row))
            out[table] = rows
        return out
    finally:
        store.close()


def _imported(db: str | Path, tmp_path: Path) -> str | Path:
    with Store.open(db) as store:
        import_path(store, pair_bundle(tmp_path / "bundle"))
    return db


@pytest.fixture
def imported(tmp_path, engine_db: str) -> str:
    """The pair bundle imported, on SQLite and on PostgreSQL (``engine_db``)."""
    return str(_imported(engine_db, tmp_path))


@pytest.fixture
def imported_file(tmp_path) -> Path:
    """The pair bundle imported into a SQLite file (``backup`` copies a file)."""
    return Path(_imported(tmp_path / "a.db", tmp_path))


def test_import_stores_pairs_rankings_and_answers(imported):
    with Store.open(imported) as store:
        conn = store.conn
        assert conn.execute("SELECT count(*) FROM pairs").fetchone()[0] == len(PAIRS)
        assert conn.execute("SELECT count(*) FROM rankings").fetchone()[0] == 4
        assert conn.execute("SELECT count(*) FROM pair_judgments").fetchone()[0] == 2 * len(PAIRS)
        unparsed = conn.execute("SELECT raw FROM pair_judgments WHERE preference IS NULL"
                                ).fetchall()
        assert unparsed == [("I cannot decide",)]
        # ann1's changed answer is a history of two rows; the current one is the later
        rows = conn.execute("SELECT pair_annotation_id, preference, note, supersedes"
                            " FROM pair_annotations WHERE annotator = 'ann1'"
                            " AND pair_id = 'pt1xy' ORDER BY pair_annotation_id").fetchall()
        assert [(r[1], r[2]) for r in rows] == [("b", "misclicked"), ("a", None)]
        assert rows[1][3] == rows[0][0]
        assert conn.execute("SELECT preference FROM current_pair_annotations WHERE annotator"
                            " = 'ann1' AND pair_id = 'pt1xy'").fetchall() == [("a",)]
        assert conn.execute("SELECT shown_first FROM pair_annotations WHERE annotator = 'ann2'"
                            " LIMIT 1").fetchone() == ("b",)
        ties = conn.execute("SELECT ranked FROM ranking_annotations WHERE annotator = 'ann2'"
                            " AND ranking_id = 'rt1'").fetchone()[0]
        assert json.loads(ties) == ["t1/gen_x", ["t1/gen_y", "t1/gen_z"]]


def test_human_pair_answers_are_append_only(imported):
    store = Store.open(imported)
    conn = store.conn
    for table in ("pair_annotations", "ranking_annotations"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute(f"UPDATE {table} SET note = 'x'")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute(f"DELETE FROM {table}")
    store.close()


def test_export_then_import_reproduces_everything(imported, tmp_path, make_engine_db):
    out = tmp_path / "export"
    with Store.open(imported) as store:
        counts = write_bundle(store.read_project(), out)
    assert counts["pairs"] == len(PAIRS) and counts["rankings"] == 4
    exported = read_jsonl(out / "judgments.jsonl")
    unparsed = [x for x in exported if x.get("pair_id") == "pt3yz" and x["judge"] == "judge_2"]
    assert unparsed == [{"judge": "judge_2", "pair_id": "pt3yz", "preference": None,
                         "raw": "I cannot decide"}]
    history = [x for x in read_jsonl(out / "annotations.jsonl")
               if x.get("pair_id") == "pt1xy" and x["annotator"] == "ann1"]
    assert [x["preference"] for x in history] == ["b", "a"]
    b = make_engine_db("b.db")
    with Store.open(b) as store:
        import_path(store, out)
    assert _content(b) == _content(imported)
    # and the second export is the first, file for file
    with Store.open(b) as store:
        write_bundle(store.read_project(), tmp_path / "again")
    for name in ("pairs.jsonl", "rankings.jsonl", "judgments.jsonl"):
        assert (tmp_path / "again" / name).read_text() == (out / name).read_text(), name


def test_re_importing_is_idempotent_and_a_new_answer_extends_the_history(imported, tmp_path):
    out = tmp_path / "export"
    with Store.open(imported) as store:
        write_bundle(store.read_project(), out)
        before = _content(imported)
        summary = import_path(store, out)
    assert _content(imported) == before
    assert summary.unchanged["pair_answers"] == 2 * len(PAIRS) + 2 * len(PAIRS) + 1
    assert not summary.written.get("pair_answers")
    lines = read_jsonl(out / "annotations.jsonl")
    lines.append({"annotator": "ann2", "pair_id": "pt2xy", "preference": "both_bad",
                  "created_at": "2026-02-01T00:00:00+00:00"})
    write_jsonl(out / "annotations.jsonl", lines)
    with Store.open(imported) as store:
        summary = import_path(store, out)
        assert summary.written["pair_answers"] == 1
        rows = store.conn.execute(
            "SELECT preference FROM pair_annotations WHERE annotator = 'ann2'"
            " AND pair_id = 'pt2xy' ORDER BY pair_annotation_id").fetchall()
        assert rows == [("a",), ("both_bad",)]


BAD_JUDGMENTS = [
    ({"judge": "judge_1", "pair_id": "pt1xy", "preference": "a", "score": 3},
     "judgments.jsonl", "score", "unknown field"),
    ({"judge": "judge_1", "pair_id": "pt1xy", "preference": "left"},
     "judgments.jsonl", "preference", "must be one of a, b, tie, both_bad or null"),
    ({"judge": "judge_1", "pair_id": "pt1xy"}, "judgments.jsonl", "preference", "missing"),
    ({"judge": "judge_1", "pair_id": "nope", "preference": "a"},
     "judgments.jsonl", "pair_id", "unknown pair 'nope'"),
    ({"judge": "judge_9", "pair_id": "pt1xy", "preference": "a"},
     "judgments.jsonl", "judge", "unknown judge 'judge_9'"),
    ({"judge": "judge_1", "pair_id": "pt1xy", "preference": "b"},
     "judgments.jsonl", "pair_id", "a second answer of this judge"),
    ({"judge": "judge_1", "ranking_id": "rt1", "order": ["t1/gen_x", "t1/gen_y"]},
     "judgments.jsonl", "order", "output 't1/gen_z' of the ranking is not placed"),
    ({"judge": "judge_2", "ranking_id": "rt1", "order": ["t1/gen_x", "t1/gen_x", "t1/gen_y",
                                                         "t1/gen_z"]},
     "judgments.jsonl", "order", "placed twice"),
    ({"judge": "judge_2", "ranking_id": "rt1", "order": ["t1/gen_x", [], "t1/gen_y"]},
     "judgments.jsonl", "order[1]", "a tie is a non-empty list"),
]
BAD_ANNOTATIONS = [
    ({"annotator": "ann3", "pair_id": "pt1xy", "preference": None},
     "annotations.jsonl", "preference", "must be one of a, b, tie, both_bad"),
    ({"annotator": "ann3", "pair_id": "pt1xy", "preference": "a", "raw": "x"},
     "annotations.jsonl", "raw", "unknown field"),
    ({"annotator": "ann3", "pair_id": "pt1xy", "preference": "a", "shown_first": "left"},
     "annotations.jsonl", "shown_first", "must be one of a, b"),
    ({"annotator": "ann3", "pair_id": "pt1xy", "preference": "a", "created_at": "monday"},
     "annotations.jsonl", "created_at", "not an ISO 8601 time"),
    ({"annotator": "ann3", "ranking_id": "rt1", "order": ["t1/gen_x", "t2/gen_y",
                                                          "t1/gen_z"]},
     "annotations.jsonl", "order", "output 't2/gen_y' is not in ranking 'rt1'"),
]


@pytest.mark.parametrize(("line", "file", "field", "message"), BAD_JUDGMENTS + BAD_ANNOTATIONS)
def test_a_bad_answer_is_refused_at_its_line_and_field(tmp_path, line, file, field, message,
                                                       engine_db):
    db = engine_db
    Store.open(db).close()
    before = db_checksum(db)
    key = "extra_judgments" if file == "judgments.jsonl" else "extra_annotations"
    bundle = pair_bundle(tmp_path / "bundle", **{key: [line]})
    number = len(read_jsonl(bundle / file))
    with Store.open(db) as store, pytest.raises(ImportRefused) as err:
        import_path(store, bundle)
    problem = err.value.problems[0]
    assert (problem.file, problem.line, problem.field) == (file, number, field), problem
    assert message in problem.message
    assert db_checksum(db) == before


@pytest.mark.parametrize(("change", "field", "message"), [
    ({"surprise": 1}, "surprise", "unknown field"),
    ({"output_b": "t1/gen_x", "output_a": "t1/gen_x"}, "output_b", "the same output"),
    ({"output_b": "t1/nobody"}, "output_b", "unknown output 't1/nobody'"),
    ({"task_id": "t9"}, "task_id", "unknown task 't9'"),
    ({"pair_id": None}, "pair_id", "must not be null"),
])
def test_a_bad_pair_line_is_refused(tmp_path, change, field, message, engine_db):
    db = engine_db
    Store.open(db).close()
    before = db_checksum(db)
    bundle = pair_bundle(tmp_path / "bundle")
    lines = read_jsonl(bundle / "pairs.jsonl")
    lines[2].update(change)
    write_jsonl(bundle / "pairs.jsonl", lines)
    with Store.open(db) as store, pytest.raises(ImportRefused) as err:
        import_path(store, bundle)
    problem = err.value.problems[0]
    assert (problem.file, problem.line, problem.field) == ("pairs.jsonl", 3, field), problem
    assert message in problem.message
    assert db_checksum(db) == before


def test_a_ranking_line_and_a_changed_stored_item_are_refused(imported, tmp_path):
    bundle = pair_bundle(tmp_path / "b2")
    lines = read_jsonl(bundle / "rankings.jsonl")
    lines[1]["outputs"] = ["t2/gen_x", "t2/gen_x"]
    write_jsonl(bundle / "rankings.jsonl", lines)
    with Store.open(imported) as store, pytest.raises(ImportRefused) as err:
        import_path(store, bundle)
    assert str(err.value.problems[0]).startswith("rankings.jsonl:2: outputs: output 't2/gen_x'")
    bundle = pair_bundle(tmp_path / "b3")
    lines = read_jsonl(bundle / "pairs.jsonl")
    lines[0]["output_b"] = "t1/gen_z"
    write_jsonl(bundle / "pairs.jsonl", lines)
    before = db_checksum(imported)
    with Store.open(imported) as store, pytest.raises(ImportRefused) as err:
        import_path(store, bundle)
    assert str(err.value.problems[0]).startswith("pairs.jsonl:1: output_b: pair 'pt1xy' is "
                                                 "stored with another output_b")
    assert db_checksum(imported) == before


# SQLite only: an old SQLite schema migrated (and its tables listed from sqlite_master).
def test_a_schema_before_pairs_migrates_with_its_data(tmp_path, monkeypatch):
    """Migrate from the version just before the pairs migration (found by its text, since
    migrations are renumbered at merge) to :data:`schema.SCHEMA_VERSION`."""
    index = next(i for i, m in enumerate(schema.MIGRATIONS) if "CREATE TABLE pairs" in m)
    path = tmp_path / "old.db"
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:index])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", index)
    with Store.open(path) as old:
        assert old.schema_version() == index
        old.conn.execute("INSERT INTO annotators (name, created_at) VALUES ('a', 'now')")
    monkeypatch.undo()
    with Store.open(path) as new:
        assert new.schema_version() == schema.SCHEMA_VERSION
        assert new.conn.execute("SELECT name FROM annotators").fetchall() == [("a",)]
        tables = {r[0] for r in new.conn.execute("SELECT name FROM sqlite_master")}
    assert set(TABLES) | {"current_pair_annotations", "current_ranking_annotations"} <= tables


def test_a_backup_counts_the_human_answers_on_pairs_and_rankings(imported_file, tmp_path):
    from annotation.store.backup import backup

    summary = backup(imported_file, tmp_path / "copy.db")
    assert summary.counts["pair_annotations"] == 2 * len(PAIRS) + 1
    assert summary.counts["ranking_annotations"] == 8
    assert "pair_annotations 27" in summary.text()
