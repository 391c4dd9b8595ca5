"""Pre-label readings through a bundle once readings are of the image (schema 9): a
correction given in another task showing the same image, and a project migrated from
schema 8, export and import again (review of issue #15, items 2 and 10)."""

from __future__ import annotations

import json

from annotation.formats.bundle import write_bundle
from annotation.formats.importers import import_path
from annotation.store import Store, schema
from tests.helpers.bundles import read_jsonl
from tests.helpers.conflict_fixture import open_task_as, write_shared_reference_bundle


def _readings(store: Store) -> list[tuple]:
    return [(r["verifier"], r["task_id"], r["image_idx"], r["attribute"],
             json.loads(r["value"]), r["supersedes"] is not None)
            for r in store.db.query("SELECT * FROM prelabel_readings ORDER BY reading_id")]


def _current(store: Store) -> set[tuple]:
    return {(r["verifier"], r["image_sha256"], r["attribute"], json.loads(r["value"]))
            for r in store.db.query("SELECT * FROM current_image_readings")}


def test_a_correction_given_in_another_task_survives_export_and_import(tmp_path,
                                                                       make_engine_db):
    db = make_engine_db("a.db")
    with Store.open(db) as store:
        import_path(store, write_shared_reference_bundle(tmp_path / "bundle"))
        open_task_as(store, "ann1", "c1").set_reading(0, "yaw", -40)
        store.conn.execute("DELETE FROM queue_reservations WHERE kind = 'verify'"
                           " AND unit = 'c4'")
        open_task_as(store, "ann1", "c4").set_reading(0, "yaw", 25)  # the same dog image
        write_bundle(store.read_project(), tmp_path / "export")
        before, current = _readings(store), _current(store)
    lines = read_jsonl(tmp_path / "export" / "prelabel_readings.jsonl")
    assert [(r["task_id"], r["value"]) for r in lines if r["attribute"] == "yaw"][-1] == (
        "c4", 25.0)
    with Store.open(make_engine_db("b.db")) as again:
        import_path(again, tmp_path / "export")  # refused before: "another answer"
        assert _readings(again) == before and _current(again) == current
    with Store.open(db) as store:  # and into the database it came from: nothing new
        summary = import_path(store, tmp_path / "export")
        assert _readings(store) == before
        assert summary.unchanged["prelabel_readings"] == len(before)


# SQLite only: a project file made with the SQLite schema 8, then migrated.
def test_a_project_migrated_from_schema_8_with_one_image_read_in_two_tasks_moves(tmp_path):
    """Schema 8 asked for the shared dog in c1 (30) and again in c4 (35): after the
    migration the later reading is the current one, and the export carries one history
    for the image (it raised RuntimeError on import, naming no line)."""
    path = tmp_path / "v8.db"
    migrations, version = schema.MIGRATIONS, schema.SCHEMA_VERSION
    schema.MIGRATIONS, schema.SCHEMA_VERSION = migrations[:8], 8
    try:
        with Store.open(path) as old:
            import_path(old, write_shared_reference_bundle(tmp_path / "bundle"))
            for task, value, at in (("c1", "30.0", "2026-01-01T10:00:00+00:00"),
                                    ("c4", "35.0", "2026-01-02T10:00:00+00:00")):
                old.conn.execute(
                    "INSERT INTO prelabel_readings (verifier, task_id, image_idx, attribute,"
                    " value, created_at) VALUES ('ann1', ?, 0, 'yaw', ?, ?)", [task, value, at])
    finally:
        schema.MIGRATIONS, schema.SCHEMA_VERSION = migrations, version
    with Store.open(path) as store:
        write_bundle(store.read_project(), tmp_path / "export")
        current = _current(store)
    lines = read_jsonl(tmp_path / "export" / "prelabel_readings.jsonl")
    assert [(r["task_id"], r["value"], r["supersedes"]) for r in lines] == [
        ("c1", 30.0, None), ("c4", 35.0, lines[0]["id"])]
    with Store.open(tmp_path / "b.db") as again:
        import_path(again, tmp_path / "export")
        assert _current(again) == current == {("ann1", _current(again).pop()[1], "yaw", 35.0)}
