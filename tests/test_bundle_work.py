"""The bundle keeps all human work (issue #15, item 10): export writes every verification,
resolution, tree review, flag, submission and visit with its history, and importing the
export into a new database reproduces them, table by table."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from annotation.cli.main import main as cli
from annotation.formats.bundle import write_bundle
from annotation.formats.importers import import_path
from annotation.records import ImportRefused
from annotation.store import Store
from annotation.work import adjudication, gold
from annotation.work import tree_review as tr
from annotation.work import verification as vf
from annotation.work import workflow as wf
from tests.helpers.conflict_fixture import write_conflict_bundle
from tests.helpers.tree_fixture import write_tree_bundle

#: the human-work tables: (table, row id column); compared row by row, ids aside
TABLES = (
    ("annotations", "annotation_id"),
    ("prelabel_readings", "reading_id"),
    ("conflict_verdicts", "verdict_id"),
    ("conflict_resolutions", "resolution_id"),
    ("tree_reviews", "review_id"),
    ("flags", "flag_id"),
    ("queue_submissions", "submission_id"),
    ("queue_visits", "visit_id"),
    ("adjudications", "adjudication_id"),
    ("gold_answers", "gold_id"),
)


def _rows(db: str | Path, table: str, row_id: str, *, current: bool = False) -> list[dict]:
    """Every row of ``table`` in row order, without its row id and import id, with
    ``supersedes`` given as the position (0, 1, ...) of the row it names."""
    store = Store.open(db, migrate=False)
    conn = store.conn
    try:
        cur = conn.execute(f"SELECT * FROM {table} ORDER BY {row_id}")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        if current:
            live = {r[0] for r in conn.execute(f"SELECT {row_id} FROM current_{table}")}
    finally:
        store.close()
    place = {r[row_id]: i for i, r in enumerate(rows)}
    out = []
    for r in rows:
        if current and r[row_id] not in live:
            continue
        r = dict(r)
        r.pop(row_id)
        r.pop("import_id", None)
        if r.get("supersedes") is not None:
            r["supersedes"] = place[r["supersedes"]]
        out.append(r)
    return out


def _human_work(db: str | Path) -> dict[str, list[dict]]:
    work = {table: _rows(db, table, row_id) for table, row_id in TABLES}
    for table, row_id in TABLES[:5]:
        work[f"current_{table}"] = _rows(db, table, row_id, current=True)
    return work


def _do_work(db: str | Path, tmp_path: Path) -> str | Path:
    """A VIF-Bench conflict project and a TRACE-Bench tree in one database, with real work
    done through the workflows: a changed answer, a flag, submissions of every kind,
    visits with active time, readings and verdicts with a superseded one, an admin's
    resolution (changed once) and tree reviews with a superseded one."""
    with Store.open(db) as store:
        import_path(store, write_conflict_bundle(tmp_path / "conflicts"))
        import_path(store, write_tree_bundle(tmp_path / "trees"))
        # annotation: an answer changed, a flag, active time, one item submitted
        visit = wf.start_visit(store, "ann1", "c1/m")
        wf.give_answer(store, "ann1", "c1/m", criterion="visual_quality", score=4,
                       active=(visit, 12.5))
        wf.give_answer(store, "ann1", "c1/m", criterion="visual_quality", score=7,
                       note="looked again", active=(visit, 3.0))
        wf.flag_item(store, "ann1", "c1/m", "broken_image", note="the corner is cut")
        wf.submit(store, "ann1", "c1/m")
        wf.give_answer(store, "ann2", "c2/m", criterion="visual_quality", score=5)  # open
        # verification: a corrected reading, a verdict changed, a second verifier
        v_visit = vf.start_visit(store, "ver1", "c1")
        vf.give_reading(store, "ver1", "c1", 0, "yaw", 30, active=(v_visit, 20.0))
        vf.give_reading(store, "ver1", "c1", 0, "yaw", -40)
        vf.give_reading(store, "ver1", "c1", 0, "yaw_reliable", True)
        vf.give_reading(store, "ver1", "c1", 1, "light_distinctive", False)
        vf.give_verdict(store, "ver1", "c1", "orientation", False, True)
        vf.give_verdict(store, "ver1", "c1", "orientation", True, True, note="sure now")
        vf.give_verdict(store, "ver1", "c1", "light", False, None, blind=False)
        vf.submit_task(store, "ver1", "c1")
        vf.give_verdict(store, "ver2", "c1", "orientation", False, True, note="faces away")
        vf.submit_task(store, "ver2", "c1")
        vf.resolve_label(store, "c1", "orientation", True, "the pyramid says so", actor="admin")
        vf.resolve_label(store, "c1", "orientation", False, "second look", actor="admin")
        # tree review: a localization changed, with a box
        tr.give_review(store, "rev1", "tr1/m", "g|g1", "N1", reason="other")
        tr.give_review(store, "rev1", "tr1/m", "g|g1", "N2a", reason="attribute_mismatch",
                       box={"node": "N0", "box": [0.1, 0.2, 0.5, 0.6]}, note="hat")
        tr.give_review(store, "rev1", "tr1/m", "f|f2", "persistent", reason="duplication")
        tr.submit_tree(store, "rev1", "tr1/m")
        # a second reviewer disagrees on g1: a dispute, decided twice by the admin
        tr.set_settings(store, "admin", overlap=2)
        tr.give_review(store, "rev2", "tr1/m", "g|g1", "N1", reason="other")
        tr.submit_tree(store, "rev2", "tr1/m")
        unit = adjudication.unit_id("tree", "tr1/m", "g|g1")
        choices = [v for v, _ in adjudication.load_item(store, unit).options]
        adjudication.decide(store, "admin", unit, choices[0], "the hat comes from N1")
        adjudication.decide(store, "admin", unit, choices[1], "looked again")
        # gold: an output marked gold, then its score changed
        gold.mark(store, "admin", "c2/m", {}, {"visual_quality": 6.0})
        gold.mark(store, "admin", "c2/m", {}, {"visual_quality": 7.0}, note="sharper")
    return db


@pytest.fixture
def worked(tmp_path, engine_db: str) -> str:
    """:func:`_do_work` on SQLite and on PostgreSQL (``engine_db``): the round trips."""
    return str(_do_work(engine_db, tmp_path))


@pytest.fixture
def worked_file(tmp_path) -> Path:
    """:func:`_do_work` in a SQLite file: the source of the refusals' exports (each
    imported into a project on the test's engine) and the raw-SQLite test below."""
    return Path(_do_work(tmp_path / "a.db", tmp_path))


def test_every_kind_of_human_work_is_in_the_fixture(worked):
    work = _human_work(worked)
    for table, _ in TABLES:
        assert work[table], table
    for table in ("annotations", "prelabel_readings", "conflict_verdicts",
                  "conflict_resolutions", "tree_reviews", "adjudications", "gold_answers"):
        assert any(r["supersedes"] is not None for r in work[table]), table
    assert {r["kind"] for r in work["queue_submissions"]} == {"annotate", "verify", "trees",
                                                               "adjudicate"}


def test_export_then_import_reproduces_all_human_work(worked, tmp_path, make_engine_db):
    out = tmp_path / "export"
    with Store.open(worked) as store:
        counts = write_bundle(store.read_project(), out)
    for name in ("prelabel_readings", "conflict_verdicts", "conflict_resolutions",
                 "tree_reviews", "flags", "submissions", "visits"):
        assert counts[name] > 0 and (out / f"{name}.jsonl").is_file(), name
    # supersedes is the file's own line id, never a database row id
    lines = [json.loads(x) for x in (out / "conflict_verdicts.jsonl").read_text().splitlines()]
    assert [x["id"] for x in lines] == list(range(1, len(lines) + 1))
    changed = next(x for x in lines if x["supersedes"] is not None)
    assert lines[changed["supersedes"] - 1]["label"] is False and changed["note"] == "sure now"
    b = make_engine_db("b.db")
    with Store.open(b) as store:
        import_path(store, out)
    assert _human_work(b) == _human_work(worked)
    # the in-progress item stays unsubmitted: submissions come from submissions.jsonl
    with Store.open(b) as store:
        assert not wf.is_submitted(store, "ann2", "c2/m")
        assert wf.is_submitted(store, "ann1", "c1/m")


def test_re_importing_the_export_is_idempotent(worked, tmp_path, make_engine_db):
    out = tmp_path / "export"
    with Store.open(worked) as store:
        write_bundle(store.read_project(), out)
        before = _human_work(worked)
        summary = import_path(store, out)  # into the database it came from
    assert _human_work(worked) == before
    assert summary.unchanged["conflict_verdicts"] == len(before["conflict_verdicts"])
    assert not {k: v for k, v in summary.written.items() if v}
    b = make_engine_db("b.db")
    with Store.open(b) as store:
        import_path(store, out)
        import_path(store, out)
    assert _human_work(b) == before


def test_a_longer_history_extends_the_stored_one(worked, tmp_path, make_engine_db):
    """An export made after more work appends the new rows to the stored histories."""
    b = make_engine_db("b.db")
    with Store.open(worked) as store:
        write_bundle(store.read_project(), tmp_path / "first")
    with Store.open(b) as store:
        import_path(store, tmp_path / "first")
    with Store.open(worked) as store:
        vf.give_verdict(store, "ver2", "c1", "orientation", True, True, note="changed mind")
        tr.give_review(store, "rev1", "tr1/m", "f|f2", "N1", reason="duplication")
        write_bundle(store.read_project(), tmp_path / "second")
    with Store.open(b) as store:
        summary = import_path(store, tmp_path / "second")
    assert summary.written["conflict_verdicts"] == 1 and summary.written["tree_reviews"] == 1
    assert _human_work(b) == _human_work(worked)


def test_zip_export_round_trip(worked, tmp_path, capsys, make_engine_db):
    assert cli(["export", "--db", str(worked), "--out", str(tmp_path / "study.zip"),
                "--zip"]) == 0
    out = capsys.readouterr().out
    assert "tree_reviews 4" in out and "adjudications 2" in out and "gold_answers 2" in out
    b = make_engine_db("b.db")
    assert cli(["import", str(tmp_path / "study.zip"), "--db", str(b), "--quiet"]) == 0
    assert _human_work(b) == _human_work(worked)


# -------------------------------------------------------------------- refusals
def _export(worked: Path, out: Path) -> Path:
    with Store.open(worked) as store:
        write_bundle(store.read_project(), out)
    return out


def _edit(path: Path, number: int, **changes) -> None:
    """Change fields of line ``number`` (1-based) of a .jsonl file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    obj = json.loads(lines[number - 1])
    obj.update(changes)
    lines[number - 1] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _first(path: Path, **match) -> int:
    for n, text in enumerate(path.read_text().splitlines(), start=1):
        obj = json.loads(text)
        if all(obj.get(k) == v for k, v in match.items()):
            return n
    raise AssertionError(match)


@pytest.mark.parametrize(("file", "match", "changes", "field", "message"), [
    ("conflict_verdicts.jsonl", {"supersedes": None}, {"supersedes": 99}, "supersedes",
     "no line of conflict_verdicts.jsonl has the id 99"),
    ("conflict_verdicts.jsonl", {"task_id": "c1"}, {"task_id": "nope"}, "task_id",
     "unknown task 'nope'"),
    ("conflict_verdicts.jsonl", {"task_id": "c1"}, {"conflict": "smell"}, "conflict",
     "must be one of"),
    ("prelabel_readings.jsonl", {"attribute": "yaw"}, {"image_index": 7}, "image_index",
     "has 5 image(s): no Image_7"),
    ("prelabel_readings.jsonl", {"attribute": "yaw"}, {"value": "left"}, "value",
     "a yaw is a number of degrees"),
    ("tree_reviews.jsonl", {"instance": "f|f2"}, {"output_id": "tr9/m"}, "output_id",
     "unknown output 'tr9/m'"),
    ("tree_reviews.jsonl", {"instance": "f|f2"}, {"reason": "bad luck"}, "reason",
     "must be one of"),
    ("flags.jsonl", {"annotator": "ann1"}, {"question_id": "c1.nope"}, "question_id",
     "unknown question 'c1.nope'"),
    ("submissions.jsonl", {"kind": "verify"}, {"kind": "review"}, "kind",
     "must be one of annotate, verify, trees"),
    ("submissions.jsonl", {"kind": "verify"}, {"unit": "c9"}, "unit", "unknown task 'c9'"),
    ("visits.jsonl", {"kind": "verify"}, {"active_seconds": -1}, "active_seconds",
     "must not be negative"),
    ("conflict_resolutions.jsonl", {"supersedes": None}, {"note": "  "}, "note",
     "must not be empty"),
])
def test_bad_lines_are_refused_at_their_field_and_nothing_is_written(
        worked_file, tmp_path, file, match, changes, field, message, make_engine_db):
    out = _export(worked_file, tmp_path / "export")
    number = _first(out / file, **match)
    _edit(out / file, number, **changes)
    b = make_engine_db("b.db")
    with Store.open(b) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, out)
    problem = refused.value.problems[0]
    assert (problem.file, problem.line, problem.field) == (file, number, field), problem
    assert message in problem.message, problem.message
    with Store.open(b) as store:
        assert store.counts()["tasks"] == 0  # the database is left as it was
    assert all(not rows for rows in _human_work(b).values())


def test_a_supersedes_cycle_is_refused(worked_file, tmp_path, make_engine_db):
    out = _export(worked_file, tmp_path / "export")
    path = out / "tree_reviews.jsonl"
    first = _first(path, supersedes=None, instance="g|g1")
    second = _first(path, instance="g|g1", supersedes=first)
    _edit(path, first, supersedes=second)
    with Store.open(make_engine_db("b.db")) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, out)
    messages = [str(p) for p in refused.value.problems]
    assert any("tree_reviews.jsonl" in m and "cycle" in m for m in messages), messages


@pytest.mark.parametrize(("changes", "message"), [
    ({"verifier": "ver2"}, "is another answer"),
    ({"supersedes": None}, "a second first answer"),
])
def test_supersedes_must_name_the_current_answer_of_the_same_person(worked_file, tmp_path,
                                                                  changes, message, make_engine_db):
    out = _export(worked_file, tmp_path / "export")
    path = out / "conflict_verdicts.jsonl"
    number = _first(path, verifier="ver1", conflict="orientation", note="sure now")
    _edit(path, number, **changes)
    with Store.open(make_engine_db("b.db")) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, out)
    assert any(message in p.message and p.line == number for p in refused.value.problems), \
        refused.value.problems


def test_a_history_that_differs_from_the_stored_one_is_refused(worked_file, tmp_path,
                                                               make_engine_db):
    out = _export(worked_file, tmp_path / "export")
    b = make_engine_db("b.db")
    with Store.open(b) as store:
        import_path(store, out)
    before = _human_work(b)
    path = out / "conflict_verdicts.jsonl"
    number = _first(path, verifier="ver2")
    _edit(path, number, note="rewritten")
    with Store.open(b) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, out)
    problem = refused.value.problems[0]
    assert problem.line == number and "never rewritten" in problem.message
    assert _human_work(b) == before


def test_a_bundle_without_the_new_files_imports_as_before(worked_file, tmp_path, make_engine_db):
    """Bundles written before these files still import: answers count as submitted."""
    out = _export(worked_file, tmp_path / "export")
    for name in ("prelabel_readings", "conflict_verdicts", "conflict_resolutions",
                 "tree_reviews", "flags", "submissions", "visits"):
        (out / f"{name}.jsonl").unlink()
    b = make_engine_db("b.db")
    with Store.open(b) as store:
        import_path(store, out)
        assert wf.is_submitted(store, "ann2", "c2/m")
    assert _human_work(b)["annotations"] == _human_work(worked_file)["annotations"]


def test_export_folder_leftovers_are_replaced(worked_file, tmp_path, make_engine_db):
    out = _export(worked_file, tmp_path / "export")
    assert (out / "flags.jsonl").is_file()
    b = make_engine_db("b.db")
    with Store.open(b) as store:
        write_bundle(store.read_project(), out)  # an empty project over the old export
    assert not (out / "flags.jsonl").exists()


def test_a_stored_time_in_another_spelling_is_the_same_time(worked_file, tmp_path):
    """Rows written by older versions may spell their time otherwise (no microseconds, a
    zone other than UTC): re-importing their export is still idempotent."""
    # SQLite only: a raw sqlite3 connection writes the row as an older version left it
    conn = sqlite3.connect(worked_file)
    with conn:
        conn.execute("INSERT INTO conflict_verdicts (verifier, task_id, conflict, automatic,"
                     " agrees, label, note, blind, created_at, source) VALUES ('ver3', 'c2',"
                     " 'pose', 1, 1, 1, NULL, 1, '2026-11-02T12:00:00+02:00', 'app')")
        conn.execute("INSERT INTO queue_visits (kind, person, unit, started_at,"
                     " active_seconds) VALUES ('verify', 'ver3', 'c2', '2026-11-02T10:00:00',"
                     " 4)")
    conn.close()
    out = _export(worked_file, tmp_path / "export")
    before = _human_work(worked_file)
    with Store.open(worked_file) as store:
        summary = import_path(store, out)
    assert not {k: v for k, v in summary.written.items() if v}
    assert _human_work(worked_file) == before
