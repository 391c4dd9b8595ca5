"""Answer deliveries (the receipts of ``annotation.store.answers``): a key press delivered
twice is one answer, and a late retry of an earlier press never replaces a later one.

The browser-side outbox that retries until acknowledged is the next step; these tests fix
the server's half of the contract on a real SQLite file, for every kind of answer."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from annotation.store import Store, schema
from annotation.store.answers import (
    ANSWER_KINDS,
    Delivery,
    DeliveryConflict,
    current,
    supersede,
)
from annotation.work import tree_review as tr
from annotation.work import verification as vf
from annotation.work import workflow
from tests.test_engine import first_failing, verifiable_with_reading

#: per answer kind: the column that holds the answer, and two values it can take
VALUES: dict[str, tuple[str, Any, Any]] = {
    "annotation": ("answer", "yes", "no"),
    "reading": ("value", "12.0", "34.0"),
    "verdict": ("label", 1, 0),
    "review": ("origin", tr.PERSISTENT, tr.NOT_A_FAILURE),
}
SKIP = {"created_at", "supersedes"}


@pytest.fixture
def demo(engine_demo: str) -> Iterator[Store]:
    """The demo project, on SQLite and on PostgreSQL (issue #18)."""
    store = Store.open(engine_demo)
    yield store
    store.close()


def first_rows(demo: Store) -> dict[str, dict[str, Any]]:
    """One answer of each kind written through the workflows (alice's), as the row a
    retry would carry (no row id, no ``supersedes``)."""
    output = workflow.next_item(demo, "alice")
    assert output is not None
    qid = workflow.load_item(demo, output).questions[0].question_id
    workflow.give_answer(demo, "alice", output, question_id=qid, answer="yes")
    task, (idx, attr) = verifiable_with_reading(demo)
    vf.next_task(demo, "alice")
    item = vf.load_verify_item(demo, task)
    vf.give_reading(demo, "alice", task, idx, attr, 30.0 if attr == "yaw" else True)
    check = next(c for c in item.checks if c.automatic is not None)
    vf.give_verdict(demo, "alice", task, check.conflict, True, check.automatic)
    unit = tr.next_tree(demo, "alice")
    assert unit is not None
    tr.give_review(demo, "alice", unit, first_failing(demo, unit), tr.PERSISTENT,
                   reason="other")
    rows = {}
    for name, k in ANSWER_KINDS.items():
        got = demo.conn.execute(
            f"SELECT * FROM current_{k.table} WHERE {k.person} = 'alice'"
            f" ORDER BY {k.row_id} DESC LIMIT 1")
        row = dict(zip([d[0] for d in got.description], got.fetchone(), strict=True))
        rows[name] = {c: v for c, v in row.items() if c not in SKIP and c != k.row_id}
    return rows


def with_value(kind: str, row: dict[str, Any], value: Any) -> dict[str, Any]:
    column = VALUES[kind][0]
    out = dict(row, **{column: value})
    if kind == "verdict":  # a CHECK keeps agrees equal to (label = automatic)
        out["agrees"] = None if row["automatic"] is None else int(value == row["automatic"])
    return out


def deliver(demo: Store, kind: str, row: dict[str, Any], delivery: Delivery):
    with demo.transaction(user=row[ANSWER_KINDS[kind].person]) as conn:
        return supersede(conn, kind, row, same=(VALUES[kind][0],), delivery=delivery)


def rows_of(demo: Store, kind: str) -> int:
    return demo.conn.execute(f"SELECT count(*) FROM {ANSWER_KINDS[kind].table}").fetchone()[0]


def live_value(demo: Store, kind: str, row: dict[str, Any]) -> Any:
    k = ANSWER_KINDS[kind]
    now = current(demo.conn, kind, row[k.person], row[k.unit], row)
    assert now is not None
    return now[VALUES[kind][0]]


@pytest.mark.parametrize("kind", list(ANSWER_KINDS))
def test_a_press_delivered_twice_is_one_answer(demo, kind):
    row = first_rows(demo)[kind]
    before = rows_of(demo, kind)
    press = Delivery("press-1", 10)
    first = deliver(demo, kind, with_value(kind, row, VALUES[kind][2]), press)
    again = deliver(demo, kind, with_value(kind, row, VALUES[kind][2]), press)
    assert first.outcome == "written" and first.appended
    assert again.outcome == "duplicate" and not again.appended
    assert again.row_id == first.row_id
    assert rows_of(demo, kind) == before + 1
    receipts = demo.conn.execute(
        "SELECT outcome, row_id FROM answer_receipts WHERE client_id = 'press-1'").fetchall()
    assert receipts == [("written", first.row_id)]


@pytest.mark.parametrize("kind", list(ANSWER_KINDS))
def test_a_late_retry_never_replaces_a_later_press(demo, kind):
    """Press 1 (value a) is lost on the way, press 2 (value b) arrives, then the retry of
    press 1 arrives: the answer stays b, and press 1's receipt says it was stale."""
    row = first_rows(demo)[kind]
    _, a, b = VALUES[kind]
    later = deliver(demo, kind, with_value(kind, row, b), Delivery("tab:2", 20))
    assert later.outcome == "written"
    before = rows_of(demo, kind)
    late = deliver(demo, kind, with_value(kind, row, a), Delivery("tab:1", 10))
    assert late.outcome == "stale" and not late.appended and late.row_id == later.row_id
    assert rows_of(demo, kind) == before
    assert live_value(demo, kind, row) == b
    assert demo.conn.execute("SELECT outcome FROM answer_receipts WHERE client_id = 'tab:1'"
                             ).fetchone() == ("stale",)


@pytest.mark.parametrize("kind", list(ANSWER_KINDS))
def test_order_between_panels_is_not_read_from_their_clocks(demo, kind):
    """A laptop five minutes fast answered first; the same person then changes the answer on
    a machine with the right clock (a smaller seq): the change is written, not called stale
    (red-team finding: the lab machine's answers were silently dropped)."""
    row = first_rows(demo)[kind]
    _, a, b = VALUES[kind]
    fast = 1_796_000_300_000_000
    assert deliver(demo, kind, with_value(kind, row, b), Delivery("laptop:1", fast)
                   ).outcome == "written"
    change = deliver(demo, kind, with_value(kind, row, a), Delivery("lab:1", fast - 300_000_000))
    assert change.outcome == "written" and change.appended
    assert live_value(demo, kind, row) == a


def test_a_retry_reports_the_row_it_wrote_not_another_tabs(demo):
    """Press 1 of tab A is written, its acknowledgement lost; tab B changes the answer; the
    retry of press 1 names press 1's row, so A's next press (typed over it) is refused as
    changed instead of replacing B's answer (red-team finding)."""
    output = workflow.next_item(demo, "alice")
    assert output is not None
    qid = workflow.load_item(demo, output).questions[0].question_id
    a1 = workflow.give_answer(demo, "alice", output, question_id=qid, answer="yes",
                              delivery=Delivery("tabA:1", 1), expected=None)
    workflow.give_answer(demo, "alice", output, question_id=qid, answer="no",
                         delivery=Delivery("tabB:1", 1), expected=a1)
    retry = workflow.give_answer(demo, "alice", output, question_id=qid, answer="yes",
                                 delivery=Delivery("tabA:1", 1), expected=None)
    assert retry == a1
    with pytest.raises(workflow.ChangedElsewhere):
        workflow.give_answer(demo, "alice", output, question_id=qid, answer="cant_tell",
                             delivery=Delivery("tabA:2", 2), expected=retry)
    assert live_value(demo, "annotation", {"annotator": "alice", "output_id": output,
                                           "question_id": qid, "criterion": None}) == "no"


def test_order_is_kept_per_question_not_per_unit(demo):
    """A later press on another question does not make an earlier press on this one stale."""
    output = workflow.next_item(demo, "alice")
    assert output is not None
    q1, q2 = [q.question_id for q in workflow.load_item(demo, output).questions[:2]]
    base = {"annotator": "alice", "output_id": output, "source": "app"}
    assert deliver(demo, "annotation", dict(base, question_id=q2, answer="no"),
                   Delivery("tab:2", 20)).outcome == "written"
    first = deliver(demo, "annotation", dict(base, question_id=q1, answer="yes"),
                    Delivery("tab:1", 10))
    assert first.outcome == "written"
    assert live_value(demo, "annotation", dict(base, question_id=q1)) == "yes"
    assert live_value(demo, "annotation", dict(base, question_id=q2)) == "no"


def test_an_equal_answer_is_acknowledged_without_a_row(demo):
    row = first_rows(demo)["annotation"]
    before = rows_of(demo, "annotation")
    same = deliver(demo, "annotation", with_value("annotation", row, "yes"), Delivery("x", 5))
    assert same.outcome == "unchanged" and not same.appended
    assert rows_of(demo, "annotation") == before
    again = deliver(demo, "annotation", with_value("annotation", row, "yes"), Delivery("x", 5))
    assert again.outcome == "duplicate"


def test_a_client_id_reused_for_another_answer_is_refused_and_nothing_is_written(demo):
    output = workflow.next_item(demo, "alice")
    assert output is not None
    q1, q2 = [q.question_id for q in workflow.load_item(demo, output).questions[:2]]
    base = {"annotator": "alice", "output_id": output, "source": "app"}
    deliver(demo, "annotation", dict(base, question_id=q1, answer="yes"), Delivery("id", 1))
    before = (rows_of(demo, "annotation"),
              demo.conn.execute("SELECT count(*) FROM answer_receipts").fetchone()[0])
    with pytest.raises(DeliveryConflict, match="another answer"):
        deliver(demo, "annotation", dict(base, question_id=q2, answer="no"), Delivery("id", 2))
    after = (rows_of(demo, "annotation"),
             demo.conn.execute("SELECT count(*) FROM answer_receipts").fetchone()[0])
    assert after == before


def test_receipts_are_append_only(demo):
    output = workflow.next_item(demo, "alice")
    assert output is not None
    qid = workflow.load_item(demo, output).questions[0].question_id
    deliver(demo, "annotation", {"annotator": "alice", "output_id": output,
                                 "question_id": qid, "answer": "yes", "source": "app"},
            Delivery("r", 1))
    assert demo.conn.execute("SELECT count(*) FROM answer_receipts").fetchone()[0] == 1
    for sql in ("UPDATE answer_receipts SET outcome = 'stale'", "DELETE FROM answer_receipts"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"), \
                demo.transaction() as conn:
            conn.execute(sql)


def test_answers_without_a_delivery_leave_no_receipt(demo):
    """The import path and today's pages write as before (no client id, no receipt)."""
    first_rows(demo)
    assert demo.conn.execute("SELECT count(*) FROM answer_receipts").fetchone()[0] == 0
    assert schema.SCHEMA_VERSION >= 7


def test_the_engine_passes_a_delivery_through_to_the_writer(demo):
    """The path a page's answer takes (Router.answering -> Answering.supersede -> the queue
    -> the writer): a press delivered twice there is one row too."""
    output = workflow.next_item(demo, "alice")
    assert output is not None
    qid = workflow.load_item(demo, output).questions[0].question_id
    row = {"annotator": "alice", "output_id": output, "question_id": qid, "answer": "yes",
           "source": "app"}
    before = rows_of(demo, "annotation")
    ids = []
    for _ in range(2):
        with workflow.ROUTER.answering(demo, "alice", output) as act:
            ids.append(act.supersede("annotation", dict(row), same=("answer",),
                                     delivery=Delivery("page-press", 7)))
    assert ids[0] == ids[1] and rows_of(demo, "annotation") == before + 1
    assert demo.conn.execute("SELECT outcome FROM answer_receipts").fetchall() == [("written",)]
