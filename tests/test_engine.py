"""The one workflow engine (issue #13): one router, one controller base, one answer writer
and one set of queue tables for annotation, conflict verification and tree review."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from annotation.accounts.auth import User
from annotation.formats.importers import import_path
from annotation.store import Store, schema
from annotation.store import queue as queues
from annotation.trace.trees import load_tree_item
from annotation.ui import app_state, web_session
from annotation.ui.app_state import presented_token, sign_in, sign_out
from annotation.work import engine, workflow
from annotation.work import tree_review as tr
from annotation.work import verification as vf
from tests.helpers.tree_fixture import write_tree_bundle

ROOT = Path(__file__).resolve().parents[1]


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def demo(engine_demo: str) -> Store:
    """The demo project, on SQLite and on PostgreSQL (``engine_demo``, tests/conftest.py)."""
    store = Store.open(engine_demo)
    yield store
    store.close()


@pytest.fixture
def trees(tmp_path, engine_db: str) -> Store:
    store = Store.open(engine_db)
    import_path(store, write_tree_bundle(tmp_path / "tb"))
    yield store
    store.close()


def first_failing(store: Store, unit: str) -> str:
    judge = tr.judge_for(store)
    assert judge is not None
    return tr.failing_instances(store, load_tree_item(store, unit), judge)[0].key


def verifiable_with_reading(store: Store) -> tuple[str, tuple[int, str]]:
    for task in vf.verifiable_tasks(store):
        needed = vf.load_verify_item(store, task).needed()
        if needed:
            return task, needed[0]
    raise AssertionError("the demo has no task with a pre-label to read")


# ------------------------------------------------------------------------ one engine
def test_the_three_workflows_run_on_one_router_and_one_controller_base():
    routers = {workflow.ROUTER, vf.ROUTER, tr.ROUTER}
    assert all(isinstance(r, engine.Router) for r in routers) and len(routers) == 3
    assert {r.kind.name for r in routers} == set(schema.QUEUE_KINDS)
    for controller in (workflow.AnnotationSession, vf.VerifySession, tr.TreeSession):
        assert issubclass(controller, engine.Controller)


def test_personal_orders_are_those_of_the_previous_code():
    """Pinned literals computed by c398739's ``workflow.personal_order`` (no salt) and
    ``routing.personal_order`` (salts ``verify`` and ``tree``)."""
    units = [f"out-{i}" for i in range(8)]
    assert workflow.personal_order(units, "alice", 0) == [
        "out-1", "out-7", "out-4", "out-6", "out-3", "out-2", "out-0", "out-5"]
    assert workflow.personal_order(units, "ann1", 3) == [
        "out-3", "out-2", "out-7", "out-6", "out-0", "out-1", "out-4", "out-5"]
    assert vf.ROUTER.order(units, "alice", 0) == [
        "out-4", "out-7", "out-3", "out-2", "out-0", "out-5", "out-1", "out-6"]
    assert tr.ROUTER.order(units, "alice", 0) == [
        "out-7", "out-6", "out-5", "out-1", "out-0", "out-2", "out-3", "out-4"]


def test_no_sql_and_no_connection_in_the_workflows():
    pattern = re.compile(r"\.execute\(|executemany|\.query\(|sqlite3\.connect|\.conn\b"
                         r"|store\.transaction\(")
    found = [f"{p.name}:{i}: {line.strip()}"
             for p in sorted((ROOT / "annotation" / "work").glob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []


def test_no_private_names_are_imported_within_work():
    imports = re.compile(r"^\s*from annotation\.[\w.]+ import (?:\(([^)]*)\)|([^\n(]*))", re.M)
    for p in (ROOT / "annotation" / "work").glob("*.py"):
        for group in imports.findall(p.read_text()):
            names = re.sub(r"#[^\n]*", "", "".join(group))
            private = [n.strip() for n in re.split(r"[,\s]+", names)
                       if n.strip().startswith("_") and n.strip() != "__future__"]
            assert private == [], (p.name, private)


def test_only_the_answer_writer_inserts_answers():
    tables = "|".join(t for t, _, _ in schema.ANSWER_TABLES)
    insert = re.compile(rf"INSERT\s+INTO\s+({tables})\b")
    writers = [p.relative_to(ROOT).as_posix()
               for base in ("annotation", "pages") for p in (ROOT / base).rglob("*.py")
               if insert.search(p.read_text())]
    assert writers == []  # the one writer builds its INSERT from AnswerKind.table


def test_record_annotation_takes_no_sql_from_outside():
    import inspect

    assert "also" not in inspect.signature(Store.record_annotation).parameters


# ------------------------------------------------------------------------ one answer writer
def test_one_writer_supersedes_for_every_kind_of_answer(demo):
    """A change is a new row naming the row it replaces; an equal answer writes nothing."""
    output = workflow.next_item(demo, "alice")
    assert output is not None
    qid = workflow.load_item(demo, output).questions[0].question_id
    task, (idx, attr) = verifiable_with_reading(demo)
    vf.next_task(demo, "alice")
    check = vf.load_verify_item(demo, task).checks[0]
    unit = tr.next_tree(demo, "alice")
    assert unit is not None
    instance = first_failing(demo, unit)
    reading = (30.0, 45.0) if attr == "yaw" else (True, False)
    writes = {
        "annotations": [lambda v: workflow.give_answer(demo, "alice", output, question_id=qid,
                                                       answer=v), ("yes", "no")],
        "prelabel_readings": [lambda v: vf.give_reading(demo, "alice", task, idx, attr, v),
                              reading],
        "conflict_verdicts": [lambda v: vf.give_verdict(demo, "alice", task, check.conflict,
                                                        v, check.automatic), (True, False)],
        "tree_reviews": [lambda v: tr.give_review(demo, "alice", unit, instance, v,
                                                  reason="other"),
                         (tr.PERSISTENT, tr.NOT_A_FAILURE)],
    }
    assert set(writes) == {t for t, _, _ in schema.ANSWER_TABLES}
    for table, row_id, _ in schema.ANSWER_TABLES:
        write, (first_value, second_value) = writes[table]
        count = demo.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        first, second = write(first_value), write(second_value)
        assert write(second_value) == second  # equal: nothing written
        assert demo.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == count + 2
        assert demo.conn.execute(f"SELECT supersedes FROM {table} WHERE {row_id} = ?",
                                 [second]).fetchone()[0] == first
        current = {r[0] for r in demo.conn.execute(f"SELECT {row_id} FROM current_{table}")}
        assert second in current and first not in current


def test_every_answer_table_refuses_update_and_delete(demo):
    workflow.give_answer(demo, "alice", workflow.next_item(demo, "alice"),
                         criterion=workflow.load_item(
                             demo, workflow.next_item(demo, "alice")).criteria[0].name,
                         score=5.0)
    task, (idx, attr) = verifiable_with_reading(demo)
    vf.give_reading(demo, "alice", task, idx, attr, 10.0 if attr == "yaw" else True)
    check = vf.load_verify_item(demo, task).checks[0]
    vf.give_verdict(demo, "alice", task, check.conflict, True, check.automatic)
    unit = tr.next_tree(demo, "alice")
    tr.give_review(demo, "alice", unit, first_failing(demo, unit), tr.PERSISTENT)
    for table, _, what in schema.ANSWER_TABLES:
        assert demo.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] > 0
        with pytest.raises(sqlite3.IntegrityError, match=f"{what} are append-only"):
            demo.conn.execute(f"UPDATE {table} SET created_at = created_at")
        with pytest.raises(sqlite3.IntegrityError, match=f"{what} are append-only"):
            demo.conn.execute(f"DELETE FROM {table}")


def test_the_old_queue_names_are_read_only_views(demo):
    workflow.next_item(demo, "alice")
    assert set(schema.COMPAT_VIEWS) <= set(demo.db.view_names())
    assert not set(schema.COMPAT_VIEWS) & set(demo.db.table_names())
    assert demo.conn.execute("SELECT count(*) FROM reservations WHERE annotator = 'alice'"
                             ).fetchone()[0] == 1
    # PostgreSQL would write a simple view through to queue_reservations: refused there too
    with pytest.raises(sqlite3.OperationalError, match="cannot modify reservations"):
        demo.conn.execute("DELETE FROM reservations")
    with pytest.raises(sqlite3.OperationalError, match="cannot modify reservations"):
        demo.conn.execute("UPDATE reservations SET expires_at = reserved_at")
    with pytest.raises(sqlite3.OperationalError, match="cannot modify reservations"):
        demo.conn.execute("INSERT INTO reservations VALUES ('x', 'bob', 'a', 'b')")
    assert len(queues.reservations_df(demo, "alice")) == 1


# ------------------------------------------------------------------------ active time
def test_tree_review_records_active_time(trees):
    """Tree review counts active time like the other pages: each gap between two
    interactions, capped at two minutes, on the visit of the open tree."""
    clock = Clock()
    session = tr.TreeSession(trees, "r1", {}, clock=clock)
    unit = session.output_id
    assert unit is not None
    instance = first_failing(trees, unit)
    clock.t += 5
    session.set_field(instance, "origin", tr.PERSISTENT)
    clock.t += 1000  # a coffee break counts two minutes
    session.set_field(instance, "reason", "other")
    clock.t += 7
    session.submit()
    times = queues.reader(trees, "trees").visit_seconds_df()
    mine = times[(times.person == "r1") & (times.unit == unit)]
    assert mine.active_seconds.sum() == pytest.approx(5 + engine.IDLE_CAP_SECONDS + 7)


def test_every_controller_caps_the_gap_at_two_minutes():
    assert engine.active_increment(10.0, 15.0) == 5.0
    assert engine.active_increment(10.0, 10_000.0) == engine.IDLE_CAP_SECONDS == 120.0
    assert engine.active_increment(10.0, 9.0) == 0.0


# ------------------------------------------------------------------------ sign-out
def test_a_sign_out_releases_the_persons_reservations(demo):
    """Every reservation of the person who signs out goes back to the queue, in every
    workflow; other people's stay."""
    workflow.next_item(demo, "ann2")
    state: dict = {}
    sign_in(state, User("alice", "annotator"), demo)
    assert workflow.next_item(demo, "alice") is not None
    assert vf.next_task(demo, "alice") is not None
    assert len(queues.reservations_df(demo, "alice")) == 2
    sign_out(state, demo)
    assert queues.reservations_df(demo, "alice").empty
    assert len(queues.reservations_df(demo, "ann2")) == 1


def test_a_sign_out_request_releases_the_persons_reservations(demo, monkeypatch):
    """``POST /_ja/signout`` (:func:`annotation.ui.web_session.revoke_token`) too."""
    monkeypatch.setenv(app_state.ENV_DB, demo.location)
    state: dict = {}
    sign_in(state, User("alice", "annotator"), demo)
    assert tr.next_tree(demo, "alice") is not None
    web_session.revoke_token(presented_token(state))
    assert queues.reservations_df(demo, "alice").empty



def test_each_workflow_says_when_its_unit_is_complete(trees):
    session = tr.TreeSession(trees, "r1", {})
    failing = session.failing()
    assert failing and not session.complete()
    for f in failing:
        session.set_field(f.key, "origin", tr.NOT_A_FAILURE)
    assert session.complete()


def test_active_time_goes_only_to_the_persons_own_visit(demo):
    """A visit id is a plain integer; time written for ann1 cannot land on alice's visit."""
    output = workflow.next_item(demo, "alice")
    assert output is not None
    visit = workflow.ROUTER.start_visit(demo, "alice", output)
    workflow.ROUTER.add_active_time(demo, visit, 30.0, "ann1")
    workflow.ROUTER.add_active_time(demo, visit, 5.0, "alice")
    seconds = demo.conn.execute("SELECT active_seconds FROM queue_visits WHERE visit_id = ?",
                                [visit]).fetchone()[0]
    assert seconds == 5.0
