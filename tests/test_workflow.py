"""Assignment rules, reservations, resume, submissions, flags and active time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from annotation.store import Store
from annotation.work import checklist, workflow
from annotation.work.checklist import QuestionView
from annotation.work.workflow import AnnotationSession

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@pytest.fixture
def demo(engine_demo: str) -> Store:
    """The demo project, on SQLite and on PostgreSQL (issue #18)."""
    store = Store.open(engine_demo)
    yield store
    store.close()


@pytest.fixture
def fresh(engine_db: str) -> Store:
    """The demo project without its imported human answers: every output is open (on
    SQLite and on PostgreSQL)."""
    from annotation.formats.importers import import_project, load
    from annotation.project_files import DEMO_BUNDLE

    store = Store.open(engine_db)
    with load(DEMO_BUNDLE) as project:
        project.annotations = []
        project.work = {}  # nor its verifications, reviews and submissions
        import_project(store, project)
    yield store
    store.close()


def complete_item(session: AnnotationSession) -> None:
    for _ in range(100):
        if session.complete():
            return
        target = session.current
        if target.is_question:
            session.answer("yes")
        else:
            session.score(7)
    raise AssertionError("item never became complete")


def test_imported_answers_count_as_submissions(demo):
    subs = demo.query_df("SELECT annotator, count(*) n FROM submissions GROUP BY 1")
    answered = demo.query_df(
        "SELECT annotator, count(DISTINCT output_id) n FROM annotations GROUP BY 1")
    assert subs.set_index("annotator").n.to_dict() == answered.set_index("annotator").n.to_dict()


def test_overlap_is_respected_and_started_items_come_first(fresh):
    workflow.set_settings(fresh, "admin", overlap=2)
    eligible = list(workflow.eligible_outputs(fresh).output_id)
    first = workflow.next_item(fresh, "a", now=T0)
    # b is offered what a started (overlaps complete first)
    assert workflow.next_item(fresh, "b", now=T0) == first
    # c is not: two annotators hold it (a and b reservations) and overlap is 2
    third = workflow.next_item(fresh, "c", now=T0)
    assert third != first and third in eligible


def test_reservation_blocks_then_expires(fresh):
    workflow.set_settings(fresh, "admin", overlap=1, reservation_minutes=10)
    [only] = workflow.draw_sample(fresh, "admin", "uniform", 1, seed=3)
    assert workflow.next_item(fresh, "a", now=T0) == only
    assert workflow.next_item(fresh, "b", now=T0 + timedelta(minutes=9)) is None
    # a gave no answer for 10 minutes: the reservation expired, the item is free again
    assert workflow.next_item(fresh, "b", now=T0 + timedelta(minutes=11)) == only
    # neither a (whose reservation expired without an answer) nor c gets it: b holds it
    assert workflow.next_item(fresh, "a", now=T0 + timedelta(minutes=12)) is None
    assert workflow.next_item(fresh, "c", now=T0 + timedelta(minutes=12)) is None


def test_no_reservation_handed_to_two_annotators_beyond_overlap(fresh):
    workflow.set_settings(fresh, "admin", overlap=1)
    eligible = list(workflow.eligible_outputs(fresh).output_id)
    got = [workflow.next_item(fresh, f"ann{i}", now=T0) for i in range(len(eligible) + 3)]
    assigned = [g for g in got if g is not None]
    assert len(assigned) == len(set(assigned)) == len(eligible)
    assert got[-1] is None


def test_each_annotator_has_a_stable_personal_order(fresh):
    ids = list(workflow.eligible_outputs(fresh).output_id)
    assert workflow.personal_order(ids, "a") == workflow.personal_order(ids, "a")
    assert workflow.personal_order(ids, "a") != workflow.personal_order(ids, "b")
    assert sorted(workflow.personal_order(ids, "a")) == sorted(ids)


def test_resume_on_another_machine_is_the_first_unfinished_item(fresh):
    s1 = AnnotationSession(fresh, "alice", {})
    first = s1.output_id
    s1.answer("yes")
    # a new browser session (another machine): same item, cursor on the next open question
    s2 = AnnotationSession(fresh, "alice", {})
    assert s2.output_id == first
    assert s2.current == s1.current


def test_submit_requires_complete_and_moves_on(fresh):
    s = AnnotationSession(fresh, "alice", {})
    first = s.output_id
    assert not s.submit()
    complete_item(s)
    assert s.submit()
    assert s.output_id != first
    assert workflow.is_submitted(fresh, "alice", first)
    assert workflow.personal_progress(fresh, "alice")[0] == 1
    assert s.back() and s.output_id == first and s.state["reviewing"]


def test_changing_an_answer_keeps_history(fresh):
    s = AnnotationSession(fresh, "alice", {})
    qid = s.current.key
    s.answer("yes")
    s.go_to(0)
    s.answer("no")
    history = fresh.annotations_df(history=True)
    mine = history[(history.annotator == "alice") & (history.question_id == qid)]
    assert list(mine.answer) == ["yes", "no"]
    assert mine.iloc[1].supersedes == mine.iloc[0].annotation_id
    assert s.answers().answers[qid] == "no"


def test_dependency_gating_makes_children_not_applicable():
    qs = [QuestionView("q1", "Is there a cat?"),
          QuestionView("q2", "Is the cat black?", depends_on=("q1",)),
          QuestionView("q3", "Is its collar red?", depends_on=("q2",)),
          QuestionView("q4", "Is there a dog?")]
    assert checklist.applicable(qs, {"q1": "no"}) == {"q1": True, "q2": False, "q3": False,
                                                      "q4": True}
    assert checklist.applicable(qs, {"q1": "cant_tell"})["q2"] is True
    assert checklist.is_complete(qs, ["quality"], {"q1": "no", "q4": "yes"}, {"quality": 5})
    assert not checklist.is_complete(qs, ["quality"], {"q1": "yes", "q4": "yes"},
                                     {"quality": 5})


def test_gating_in_a_session_on_the_demo(fresh):
    """demo questions with depends_on: answering the parent No skips the child."""
    dependent = fresh.query_df(
        "SELECT q.question_id, q.depends_on, o.output_id FROM questions q"
        " JOIN tasks t ON t.checklist_id = q.checklist_id JOIN outputs o ON o.task_id = t.task_id"
        " WHERE q.depends_on != '[]' AND o.sha256 IS NOT NULL LIMIT 1").iloc[0]
    parent = __import__("json").loads(dependent.depends_on)[0]
    s = AnnotationSession(fresh, "bob", {})
    # an item is answered under a reservation (issue #12): take it as next_item would
    fresh.conn.execute("INSERT INTO queue_reservations (kind, unit, person, reserved_at,"
                       " expires_at) VALUES ('annotate', ?, 'bob', datetime('now'), '9999')",
                       [dependent.output_id])
    s._open(dependent.output_id)
    s.go_to(next(i for i, t in enumerate(s.targets()) if t.key == parent))
    s.answer("no")
    assert s.applicable()[dependent.question_id] is False
    assert all(t.key != dependent.question_id for t in s.remaining())


def test_grouping_follows_operator_and_target():
    qs = [QuestionView("a", "A", "f", "f1"), QuestionView("b", "B", "g", "g1"),
          QuestionView("c", "C", "f", "f1")]
    assert [(h, [q.question_id for q in g]) for h, g in checklist.group_questions(qs)] == \
        [("f · f1", ["a", "c"]), ("g · g1", ["b"])]
    plain = [QuestionView("a", "A"), QuestionView("b", "B")]
    assert checklist.group_questions(plain) == [(None, plain)]


def test_samples_uniform_and_stratified(fresh):
    total = workflow.annotatable_outputs(fresh)
    chosen = workflow.draw_sample(fresh, "admin", "uniform", 6, seed=1)
    assert len(chosen) == 6 and set(workflow.eligible_outputs(fresh).output_id) == set(chosen)
    assert workflow.draw_sample(fresh, "admin", "uniform", 6, seed=1) == chosen
    strat = workflow.draw_sample(fresh, "admin", "stratified", 6, seed=1)
    per = total[total.output_id.isin(strat)].generator.value_counts()
    assert per.min() >= 1 and per.max() - per.min() <= 1
    workflow.draw_sample(fresh, "admin", "all")
    assert len(workflow.eligible_outputs(fresh)) == len(total)
    audit = fresh.query_df("SELECT action FROM audit_log WHERE action = 'workflow.sample'")
    assert len(audit) == 4


def test_flags_and_active_time(fresh):
    clock = iter([0.0, 5.0, 500.0, 510.0, 520.0, 530.0]).__next__
    s = AnnotationSession(fresh, "alice", {}, clock=clock)
    output = s.output_id  # opens: t=0
    s.answer("yes")  # +5 s
    s.answer("yes")  # +495 s idle, capped at 120
    s.flag("broken_image", "the output is black")
    times = fresh.query_df("SELECT SUM(active_seconds) s FROM item_time WHERE annotator = 'alice'")
    assert times.s[0] == pytest.approx(125.0)
    flags = workflow.flags_df(fresh)
    assert list(flags.reason) == ["broken_image"] and flags.output_id[0] == output
    assert workflow.active_increment(10, 5) == 0 and workflow.active_increment(0, 30) == 30
