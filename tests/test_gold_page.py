"""Gold items on the annotate page (issue #16, item 2), through AppTest on a real database:
a gold item looks exactly like a normal one (the answer panel's spec, the page's elements
and text, the widget keys); training mode shows the differences after a gold item is
submitted, test mode shows nothing; a failed qualification is said."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from annotation.store import Store
from annotation.timestamps import now_iso
from annotation.work import gold, workflow
from annotation.work.workflow import AnnotationSession, load_item
from tests.helpers import panel
from tests.helpers.apptest import signed_in

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages" / "annotate.py")
PERSON = "alice"

#: the tests on ``served_demo`` run on SQLite and on PostgreSQL (tests/conftest.py)
SERVED_ENGINES = ("sqlite", "postgresql")


@pytest.fixture
def fresh_db(monkeypatch, engine_db: str) -> str:
    """The demo project without its imported human answers: every output is open. On SQLite
    and on PostgreSQL (``engine_db``)."""
    from annotation.formats.importers import import_project, load
    from annotation.project_files import DEMO_BUNDLE

    path = engine_db
    with Store.open(path) as store, load(DEMO_BUNDLE) as project:
        project.annotations = []
        import_project(store, project)
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(path))
    return path


def same_task_pair(store: Store) -> tuple[str, str]:
    """Two outputs of one task (the same checklist and inputs): one to be gold."""
    outputs = workflow.eligible_outputs(store)
    for _, group in outputs.groupby("task_id"):
        if len(group) >= 2:
            return group.output_id.iloc[0], group.output_id.iloc[1]
    raise AssertionError("no task with two outputs")


def mark(store: Store, output_id: str, answer: str = "yes", score: float = 7.0) -> None:
    item = load_item(store, output_id)
    gold.mark(store, "admin", output_id, {q.question_id: answer for q in item.questions},
              {c.name: score for c in item.criteria})


def page_on(db: str | Path, person: str, output_id: str | None = None) -> AppTest:
    """The annotate page of ``person`` in a new session, on ``output_id`` when given
    (reserved and opened as the router would)."""
    at = signed_in(PAGE, person, guidelines_seen=True)
    if output_id is not None:
        with Store.open(db) as store:
            store.conn.execute(  # portable SQL: the test runs on both engines
                "INSERT INTO queue_reservations (kind, unit, person, reserved_at, expires_at)"
                " VALUES ('annotate', ?, ?, ?, '9999-12-31') ON CONFLICT(kind, unit, person)"
                " DO UPDATE SET expires_at = excluded.expires_at",
                [output_id, person, now_iso()])
            AnnotationSession(store, person, at.session_state["annotate"])._open(output_id)
    return at.run()


def elements(at: AppTest) -> list[tuple[str, str]]:
    """Every element's type and its protobuf text (what the browser receives), with the
    ids that differ per item by construction (session-keyed widget ids, image media ids,
    the visit) blanked."""
    out: list[tuple[str, str]] = []

    def walk(node) -> None:
        children = getattr(node, "children", None)
        if children:
            for child in (children.values() if isinstance(children, dict) else children):
                walk(child)
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append((type(node).__name__, str(proto)))

    walk(at._tree)
    return out


def normalized(text: str) -> str:
    text = re.sub(r"(compare|q|c|panel)-[0-9a-f]{24}", r"\1-KEY", text)
    text = re.sub(r"/media/[0-9a-f]+\.\w+", "/media/IMG", text)
    text = re.sub(r"\\\"visit\\\": ?\d+", '"visit": N', text)
    text = re.sub(r'"visit": ?\d+', '"visit": N', text)
    return re.sub(r"\b[0-9a-f]{24,}\b", "HEX", text)


def test_a_gold_item_looks_like_a_normal_item(fresh_db):
    with Store.open(fresh_db) as store:
        normal, golden = same_task_pair(store)
        mark(store, golden)
        workflow.set_settings(store, "admin", gold_every=5, gold_feedback="training")
    seen_normal = page_on(fresh_db, PERSON, normal)
    spec_normal = panel.spec(seen_normal)
    seen_gold = page_on(fresh_db, PERSON, golden)
    spec_gold = panel.spec(seen_gold)
    assert seen_gold.session_state["annotate"]["output_id"] == golden
    # the component's spec: the same but for the visit id and the opaque item key
    assert spec_gold.pop("visit") != spec_normal.pop("visit")
    keys = spec_gold.pop("item"), spec_normal.pop("item")
    assert all(re.fullmatch(r"[0-9a-f]{24}", k) for k in keys)
    assert spec_gold == spec_normal
    # every element of the page, in order, the same (ids that differ per item aside)
    a = [(kind, normalized(text)) for kind, text in elements(seen_normal)]
    b = [(kind, normalized(text)) for kind, text in elements(seen_gold)]
    assert [k for k, _ in a] == [k for k, _ in b]
    for (kind, x), (_, y) in zip(a, b, strict=True):
        assert x == y, kind
    everything = "\n".join(t for _, t in elements(seen_gold)) + json.dumps(spec_gold)
    assert "gold" not in everything.lower()
    assert "check item" not in everything.lower()


def _answer_and_submit(at: AppTest, question: str, score: float) -> AppTest:
    panel.complete(at, question=question, score=score)
    return panel.command(at, "submit", seconds=2.0)


@pytest.mark.parametrize("mode", ["training", "test"])
def test_feedback_after_a_gold_item(fresh_db, mode):
    with Store.open(fresh_db) as store:
        normal, golden = same_task_pair(store)
        mark(store, golden, answer="yes", score=7.0)
        workflow.set_settings(store, "admin", qualification_items=1, gold_feedback=mode,
                              qualification_pass=0.3)
    at = page_on(fresh_db, PERSON)
    assert at.session_state["annotate"]["output_id"] == golden  # the qualification item
    assert any("Qualification: item 1 of 1" in c.value for c in at.caption)
    at = _answer_and_submit(at, question="yes", score=3.0)
    assert at.session_state["annotate"]["output_id"] not in (None, golden)
    shown = [e.value for e in (*at.info, *at.success)]
    if mode == "training":
        assert len(shown) == 1 and "6 of" in shown[0] and "differed" in shown[0]
        assert "the known answer is **7**" in shown[0]
    else:
        assert shown == []
    # a normal item submitted next never shows feedback
    at = _answer_and_submit(at, question="yes", score=5.0)
    assert [e.value for e in (*at.info, *at.success)] == []


def test_a_failed_qualification_is_said_and_no_item_is_offered(fresh_db):
    with Store.open(fresh_db) as store:
        _, golden = same_task_pair(store)
        mark(store, golden, answer="yes", score=9.0)
        workflow.set_settings(store, "admin", qualification_items=1)
    at = page_on(fresh_db, PERSON)
    at = _answer_and_submit(at, question="no", score=2.0)
    assert at.title[0].value == "Qualification not passed"
    assert "until an admin resets" in at.error[0].value
    with Store.open(fresh_db) as store:
        gold.reset_qualification(store, "admin", PERSON)
    at = page_on(fresh_db, PERSON)
    assert at.session_state["annotate"]["output_id"] not in (None, golden)


# ------------------------------------------------------------------------ the admin's page
def test_admin_marks_gold_from_the_human_majority_and_resets(served_demo):
    at = signed_in("pages/assignment.py", "admin", role="admin").run()
    assert not at.exception
    with Store.open(served_demo) as store:
        output = store.query_df("SELECT output_id FROM current_annotations GROUP BY output_id"
                                " HAVING count(DISTINCT annotator) = 3").output_id.iloc[0]
        majority, mean = gold.human_reference(store, output)
    pick = next(s for s in at.selectbox if s.label == "Output")
    pick.set_value(output).run()
    save = next(b for b in at.button if b.label == "Save as gold")
    save.click().run()
    assert not at.exception
    assert any("gold answer(s) written" in s.value for s in at.success)
    with Store.open(served_demo) as store:
        from annotation.store import gold as gold_rows

        rows = gold_rows.gold_df(store)
        assert set(rows.output_id) == {output}
        assert set(rows.source) == {"majority"} and set(rows.created_by) == {"admin"}
        got = {r.question_id: r.answer for r in rows.itertuples() if isinstance(
            r.question_id, str)}
        assert got == majority
        scores = {r.criterion: r.score for r in rows.itertuples() if isinstance(
            r.criterion, str)}
        assert scores == pytest.approx(mean)
    # the gold settings form
    every = next(n for n in at.number_input if n.label == "One gold item in every")
    every.set_value(10)
    next(b for b in at.button if b.label == "Save gold settings").click().run()
    with Store.open(served_demo) as store:
        assert workflow.get_settings(store).gold_every == 10
    table = [d.value for d in at.dataframe]
    assert any("fast vs own median" in df.columns for df in table)
