"""The store: schema migration from an empty file, pragmas, append-only annotations."""

from __future__ import annotations

import sqlite3

import pytest

from annotation.records import Annotation
from annotation.store import SchemaTooNew, Store, schema

#: the tests that use ``store`` run on SQLite and on PostgreSQL (tests/conftest.py)
STORE_ENGINES = ("sqlite", "postgresql")


def test_migrates_an_empty_file_to_the_current_schema(tmp_path):
    # SQLite only: it makes an empty SQLite file (version 0) and migrates it
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()  # an empty SQLite file, version 0
    with Store.open(path) as store:
        assert store.schema_version() == schema.SCHEMA_VERSION
        tables = set(store.db.table_names())
        for table in ("tasks", "images", "outputs", "questions", "criteria", "judges",
                      "judgments", "annotators", "annotations", "imports", "files", "project"):
            assert table in tables, table
        assert "current_annotations" in store.db.view_names()
    # reopening does not migrate twice
    with Store.open(path) as store:
        assert store.schema_version() == schema.SCHEMA_VERSION


def test_pragmas_wal_and_foreign_keys(store):
    if store.engine == "sqlite":  # PostgreSQL: no such settings; foreign keys always hold
        assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    with pytest.raises(sqlite3.IntegrityError):
        store.conn.execute(
            "INSERT INTO outputs (output_id, task_id, generator) VALUES ('o', 'nope', 'g')")


def test_refuses_a_database_from_a_newer_version(tmp_path):
    # SQLite only: it writes the SQLite file's user_version directly
    path = tmp_path / "future.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(SchemaTooNew, match="newer"):
        Store.open(path)


def test_a_failed_migration_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    # SQLite only: it inspects the SQLite file (user_version, sqlite_master) afterwards
    path = tmp_path / "half.db"
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, "CREATE TABLE x (;"])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", len(schema.MIGRATIONS))
    with pytest.raises(sqlite3.OperationalError):
        Store.open(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0


def test_annotations_are_append_only(store, example_bundle):
    from annotation.formats.importers import import_path

    import_path(store, example_bundle)
    first = store.record_annotation(
        Annotation("ann2", "t1/modelA", question_id="t1.q1", answer="yes"))
    second = store.record_annotation(
        Annotation("ann2", "t1/modelA", question_id="t1.q1", answer="no", note="missed it"))
    history = store.annotations_df(history=True)
    mine = history[(history.annotator == "ann2") & (history.question_id == "t1.q1")]
    assert list(mine.annotation_id) == [first, second]
    assert list(mine.answer) == ["yes", "no"]
    assert mine.iloc[1].supersedes == first
    current = store.annotations_df()
    assert list(current[(current.annotator == "ann2")].answer) == ["no"]
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.conn.execute("UPDATE annotations SET answer = 'yes' WHERE annotation_id = ?",
                           [second])
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.conn.execute("DELETE FROM annotations")
    assert len(store.annotations_df(history=True)) == len(history)


def test_a_superseded_answer_cannot_be_superseded_twice(store, example_bundle):
    """Two writers that both saw the same current answer cannot fork the history."""
    from annotation.formats.importers import import_path

    import_path(store, example_bundle)
    first = store.record_annotation(
        Annotation("ann2", "t1/modelA", question_id="t1.q1", answer="yes"))
    store.record_annotation(Annotation("ann2", "t1/modelA", question_id="t1.q1", answer="no"))
    with pytest.raises(sqlite3.IntegrityError):
        store.conn.execute(
            "INSERT INTO annotations (annotator, output_id, question_id, answer, created_at,"
            " supersedes) VALUES ('ann2', 't1/modelA', 't1.q1', 'yes', 'x', ?)", [first])


def test_a_version_1_project_migrates_with_its_data(tmp_path, example_bundle, monkeypatch):
    """Databases in the field were built by older versions: v1 -> current keeps every row."""
    # SQLite only: the migration of an old SQLite file
    from annotation.formats.importers import import_path

    path = tmp_path / "v1.db"
    # today's write path also fills v2 tables for imported answers; a v1 file had none
    (example_bundle / "annotations.jsonl").unlink()
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:1])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", 1)
    with Store.open(path) as old:
        import_path(old, example_bundle)
        before = old.counts()
        assert old.schema_version() == 1
    monkeypatch.undo()
    with Store.open(path) as new:
        assert new.schema_version() == schema.SCHEMA_VERSION
        after = new.counts()
        assert {k: after[k] for k in before} == before
        assert "users" in new.db.table_names() and "submissions" in new.db.view_names()
