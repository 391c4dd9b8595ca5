"""The adjudication queue (issue #16, item 3): disputed decisions of the three workflows go
to an adjudicator (or an admin), who decides with a note; decisions are append-only, the
statistics say when they use them, agreement among humans stays on the raw answers."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from annotation.accounts import auth
from annotation.formats.importers import import_path
from annotation.results import checklist as cl
from annotation.results import conflicts as cr
from annotation.results import trees as tres
from annotation.results.annotators import annotators_table
from annotation.results.reliability import reliability_table
from annotation.results.study import load_study
from annotation.store import Store
from annotation.store import adjudications as decision_rows
from annotation.store.history import history
from annotation.store.schema import SCHEMA_VERSION
from annotation.work import adjudication as ad
from annotation.work import tree_review as tr
from annotation.work.engine import ItemTaken
from annotation.work.verification import VerifySession, submit_task
from tests.helpers.adjudication_fixture import (
    DECISIONS,
    JUDGE_NAME,
    OUTPUT,
    TIES,
    write_tie_bundle,
)
from tests.helpers.apptest import signed_in
from tests.helpers.conflict_fixture import open_task_as, write_conflict_bundle
from tests.helpers.tree_fixture import write_tree_bundle


def _tie_project(db: str | Path, tmp_path: Path) -> str | Path:
    with Store.open(db) as store:
        import_path(store, write_tie_bundle(tmp_path / "b"))
    return db


@pytest.fixture
def ties(tmp_path, engine_db: str) -> str:
    """The tie bundle imported, on SQLite and on PostgreSQL (``engine_db``)."""
    return _tie_project(engine_db, tmp_path)


@pytest.fixture
def ties_file(tmp_path) -> Path:
    """The tie bundle in a SQLite file, for the page tests (the pages run on PostgreSQL in
    tests/test_served.py; an AppTest per engine would add minutes here)."""
    return _tie_project(tmp_path / "ties.db", tmp_path)


def _decide_all(store: Store, who: str = "adj") -> None:
    while (unit := ad.ROUTER.next(store, who)) is not None:
        kind, item, target = ad.parse_unit(unit)
        ad.decide(store, who, unit, DECISIONS[(item, target)], f"looked at {item}")


# ------------------------------------------------------------------ queue content
def test_checklist_ties_and_disagreements_are_the_units(ties):
    with Store.open(ties) as store:
        assert ad.checklist_disputes(store) == TIES
        disagreements = sorted([*TIES, (OUTPUT["o4"], "q1")])
        assert ad.checklist_disputes(store, "disagreements") == disagreements
        assert [ad.parse_unit(u)[1:] for u in ad.queue_units(store)] == TIES
        ad.set_settings(store, "boss", disputes="disagreements")
        assert [ad.parse_unit(u)[1:] for u in ad.queue_units(store)] == disagreements
        with pytest.raises(ValueError, match="disputes"):
            ad.set_settings(store, "boss", disputes="everything")


def test_pure_dispute_rules():
    assert ad.vote_dispute(1, 1, "ties") and not ad.vote_dispute(2, 1, "ties")
    assert ad.vote_dispute(2, 1, "disagreements") and not ad.vote_dispute(3, 0, "disagreements")
    assert not ad.vote_dispute(0, 0, "ties")
    assert ad.origin_dispute(["N1", "N2"], "ties")
    assert not ad.origin_dispute(["N1", "N1", "N2"], "ties")
    assert ad.origin_dispute(["N1", "N1", "N2"], "disagreements")
    assert not ad.origin_dispute(["N1"], "disagreements")
    unit = ad.unit_id("tree", "tr1/m", "g|g1")
    assert ad.parse_unit(unit) == ("tree", "tr1/m", "g|g1")
    with pytest.raises(ValueError):
        ad.parse_unit('["judge", "x", "y"]')


@pytest.fixture
def conflict_tie(tmp_path, engine_db: str) -> tuple[str, str, str]:
    """Two verifiers who submitted opposite verdicts on one conflict label of a task."""
    db = engine_db
    with Store.open(db) as store:
        import_path(store, write_conflict_bundle(tmp_path / "b"))
        first = VerifySession(store, "ann1", {})
        task = first.task_id
        first.confirm_readings({})
        kind = first.item.checks[0].conflict
        for check in first.item.checks:
            first.set_verdict(check.conflict, agree=True)
        submit_task(store, "ann1", task)
        second = open_task_as(store, "ann2", task)
        for check in second.item.checks:
            second.set_verdict(check.conflict, agree=check.conflict != kind)
        submit_task(store, "ann2", task)
    return db, task, kind


def test_conflict_ties_are_units_and_go_to_conflict_resolutions(conflict_tie):
    db, task, kind = conflict_tie
    with Store.open(db) as store:
        assert ad.conflict_disputes(store) == [(task, kind)]
        unit = ad.ROUTER.next(store, "adj")
        assert unit == ad.unit_id("conflict", task, kind)
        item = ad.load_item(store, unit)
        assert [a.answer for a in item.answers] in (["Conflict", "No conflict"],
                                                    ["No conflict", "Conflict"])
        ad.decide(store, "adj", unit, "conflict", "the hair blows in the reference")
        # one source of truth: the verified label is the resolution, no adjudications row
        labels = cr.verified_labels(cr.load_verdicts(store), cr.load_resolutions(store))
        row = labels[(labels.task_id == task) & (labels.conflict == kind)].iloc[0]
        assert row.verified is True and row.resolved_by == "adj"
        assert decision_rows.decisions_df(store).empty
        assert ad.ROUTER.next(store, "adj") is None
        # a decision made on the Conflict labels page takes the unit out of the queue too
        assert ad.queue_units(store) == [unit]  # decided here: kept for progress


def _reviews_that_disagree(store: Store) -> None:
    tr.give_review(store, "r1", "tr1/m", "g|g1", "N2a", reason="attribute_mismatch")
    tr.give_review(store, "r2", "tr1/m", "g|g1", "N1", reason="other", note="hat in N1")
    tr.give_review(store, "r1", "tr1/m", "f|f2", "N1", reason="identity_inconsistency")
    tr.give_review(store, "r2", "tr1/m", "f|f2", "N1", reason="identity_inconsistency")


@pytest.fixture
def tree_dispute(tmp_path, engine_db: str) -> str:
    """Two reviewers of the fixture tree who disagree on the origin of g|g1."""
    db = engine_db
    with Store.open(db) as store:
        import_path(store, write_tree_bundle(tmp_path / "b"))
        _reviews_that_disagree(store)
        tr.submit_tree(store, "r1", "tr1/m")
        tr.submit_tree(store, "r2", "tr1/m")
    return db


def test_unsubmitted_reviews_are_no_dispute(tmp_path, engine_db):
    with Store.open(engine_db) as store:
        import_path(store, write_tree_bundle(tmp_path / "b"))
        _reviews_that_disagree(store)
        assert ad.tree_disputes(store) == []  # not submitted yet: work in progress


def test_tree_disagreements_are_units(tree_dispute):
    with Store.open(tree_dispute) as store:
        assert ad.tree_disputes(store) == [("tr1/m", "g|g1")]
        unit = ad.ROUTER.next(store, "adj")
        item = ad.load_item(store, unit)
        assert {a.answer.split(":")[0] for a in item.answers} == {"N2a", "N1"}
        assert "N2a" in dict(item.options) and tr.NOT_A_FAILURE in dict(item.options)
        assert "gpt-5" not in repr(item)  # never the judge
        with pytest.raises(ValueError, match="decision must be one of"):
            ad.decide(store, "adj", unit, "N9", "no such node")
        ad.decide(store, "adj", unit, "N2a", "the hat appears at N2a")
        table = tres.tree_tables(store)["adjudicated_localization"]
        row = table[table.instance == "g|g1"].iloc[0]
        assert row.majority_origin is None and row.adjudicated_origin == "N2a"
        assert row.consensus_origin == "N2a" and row.agree_node is True  # automatic N2a
        agreed = table[table.instance == "f|f2"].iloc[0]
        assert agreed.adjudicated_origin is None and agreed.consensus_origin == "N1"
        # the reviewers' agreement stays on the raw reviews: 1 of 2 pairs agree
        human = tres.tree_tables(store)["human_agreement"]
        overall = human[(human.level == "node") & (human.operator == "Overall")].iloc[0]
        assert (overall.n_pairs, overall.n_pairs_agree) == (2, 1)


# ------------------------------------------------------------------ names
def test_names_hidden_by_default_and_shown_when_set(ties):
    with Store.open(ties) as store:
        unit = ad.unit_id("checklist", *TIES[0])
        hidden = ad.load_item(store, unit)
        assert sorted(a.who for a in hidden.answers) == ["Annotator 1", "Annotator 2"]
        assert "ann_a" not in repr(hidden) and "ann_b" not in repr(hidden)
        assert JUDGE_NAME not in repr(hidden) and "model-alpha" not in repr(hidden.answers)
        ad.set_settings(store, "boss", show_names=True)
        shown = ad.load_item(store, unit)
        assert {a.who: a.answer for a in shown.answers} == {"ann_a": "Yes", "ann_b": "No"}
        assert {a.who: a.note for a in shown.answers}["ann_a"] == "A's note on q1"


# ------------------------------------------------------------------ decisions
def test_decisions_are_append_only_with_history(ties):
    with Store.open(ties) as store:
        unit = ad.ROUTER.next(store, "adj")
        kind, item, target = ad.parse_unit(unit)
        with pytest.raises(ValueError, match="note"):
            ad.decide(store, "adj", unit, "yes", "   ")
        first = ad.decide(store, "adj", unit, "yes", "first look")
        assert ad.ROUTER.is_submitted(store, "adj", unit)
        assert ad.ROUTER.previous(store, "adj", None) == unit
        second = ad.decide(store, "adj", unit, "no", "second look")  # via Back: a new row
        rows = decision_rows.decisions_df(store, history=True)
        assert list(rows.adjudication_id) == [first, second]
        assert rows.supersedes.iloc[1] == first
        current = decision_rows.decisions_df(store)
        assert list(current.decision) == ["no"] and list(current.note) == ["second look"]
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            store.conn.execute("UPDATE adjudications SET decision = 'yes'")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            store.conn.execute("DELETE FROM adjudications")
        events = history(store, item=item)
        mine = events[events.event.str.startswith("adjudicat")]
        assert list(mine.event) == ["adjudication", "adjudicate.submit",
                                    "adjudication.change", "adjudicate.submit"]
        assert list(mine[mine.event.str.startswith("adjudication")].answer) == ["yes", "no"]
        assert set(mine.who) == {"adj"}
        assert json.loads(mine.detail.iloc[2])["supersedes"] == first
        log = ad.decision_history(store)
        assert list(log.decision) == ["yes", "no"] and set(log.source) == {"adjudications"}


def test_a_stale_tab_decides_nothing(ties):
    from datetime import UTC, datetime, timedelta

    with Store.open(ties) as store:
        t0 = datetime.now(UTC)
        unit = ad.ROUTER.next(store, "adj1", now=t0)
        later = t0 + timedelta(hours=2)  # adj1's reservation lapsed, adj2 took the unit
        ad.ROUTER.next(store, "adj2", now=later)
        with pytest.raises(ItemTaken):
            ad.decide(store, "adj1", unit, "yes", "late", slot=True, now=later)
        assert decision_rows.decisions_df(store).empty


def _failing_submissions(store: Store) -> None:
    """A real failure at the submission step: a trigger makes every insert into
    queue_submissions abort (SQLite: a temporary one on the store's own connection;
    PostgreSQL has no temporary triggers: one in this test's own database)."""
    if store.engine == "postgresql":
        store.conn.raw("CREATE FUNCTION refuse_submission_fn() RETURNS trigger LANGUAGE"
                       " plpgsql AS $$ BEGIN RAISE EXCEPTION USING MESSAGE = 'disk gone',"
                       " ERRCODE = '23000'; END $$")
        store.conn.raw("CREATE TRIGGER refuse_submission BEFORE INSERT ON queue_submissions"
                       " FOR EACH ROW EXECUTE FUNCTION refuse_submission_fn()")
        return
    store.conn.execute("CREATE TEMP TRIGGER refuse_submission BEFORE INSERT ON"
                       " queue_submissions BEGIN SELECT RAISE(ABORT, 'disk gone'); END")


def _submissions_work_again(store: Store) -> None:
    if store.engine == "postgresql":
        store.conn.raw("DROP TRIGGER refuse_submission ON queue_submissions")
        return
    store.conn.execute("DROP TRIGGER refuse_submission")


def test_a_decision_and_its_submission_are_one_write(ties):
    """A decision whose submission fails leaves nothing behind: no decision row that no
    submission accounts for, the unit still open (it was three transactions before)."""
    with Store.open(ties) as store:
        unit = ad.ROUTER.next(store, "adj")
        _failing_submissions(store)
        with pytest.raises(sqlite3.IntegrityError):
            ad.decide(store, "adj", unit, "yes", "looked", slot=True)
        assert decision_rows.decisions_df(store, history=True).empty
        _submissions_work_again(store)
        assert ad.ROUTER.next(store, "adj") == unit
        ad.decide(store, "adj", unit, "yes", "looked again", slot=True)
        assert len(decision_rows.decisions_df(store, history=True)) == 1


def test_a_conflict_decision_and_its_submission_are_one_write(conflict_tie):
    db, task, kind = conflict_tie
    with Store.open(db) as store:
        unit = ad.ROUTER.next(store, "adj")
        _failing_submissions(store)
        with pytest.raises(sqlite3.IntegrityError):
            ad.decide(store, "adj", unit, "conflict", "the hair blows", slot=True)
        assert cr.load_resolutions(store).empty


def test_the_cli_history_shows_adjudications(ties, tmp_path):
    from annotation.cli.main import main

    with Store.open(ties) as store:
        _decide_all(store)
    out = tmp_path / "history.csv"
    assert main(["history", "--db", str(ties), "--item", OUTPUT["o1"], "--csv", str(out),
                 "--quiet"]) == 0
    events = pd.read_csv(out)
    row = events[events.event == "adjudication"].iloc[0]
    assert (row.who, row.question_id, row.answer, row.note) == ("adj", "q1", "yes",
                                                                f"looked at {OUTPUT['o1']}")
    assert "adjudicate.submit" in set(events.event)


# ------------------------------------------------------------------ statistics
def _rows(table: pd.DataFrame, reference: str) -> pd.DataFrame:
    return table[(table.judge == JUDGE_NAME) & (table.group == "all")
                 & (table.reference == reference)].reset_index(drop=True)


def test_statistics_with_and_without_adjudicated_labels(ties):
    """Checked by hand (tests/helpers/adjudication_fixture.py): 7 of 9 against the human
    majority; 9 of 12 and kappa 8/17 against the adjudicated majority."""
    with Store.open(ties) as store:
        before_study = load_study(store)
        before = cl.checklist_table(before_study, n_boot=50)
        assert _rows(before, cl.HUMAN_MAJORITY_ADJUDICATED).empty  # nothing adjudicated
        reliability_before = reliability_table(before_study, n_boot=50)
        annotators_before = annotators_table(before_study)
        _decide_all(store)
        study = load_study(store)
        after = cl.checklist_table(study, n_boot=50)
    majority = _rows(before, cl.HUMAN_MAJORITY).iloc[0]
    assert (majority.n_decisions, majority.agreement) == (9, pytest.approx(7 / 9))
    adjudicated = _rows(after, cl.HUMAN_MAJORITY_ADJUDICATED).iloc[0]
    assert adjudicated.n_decisions == 12
    assert adjudicated.agreement == pytest.approx(9 / 12)
    assert (adjudicated.both_yes, adjudicated.judge_yes_human_no,
            adjudicated.judge_no_human_yes, adjudicated.both_no) == (6, 2, 1, 3)
    assert adjudicated.kappa == pytest.approx(8 / 17)
    # existing rows never change: every row of the old table is in the new one, as it was
    pd.testing.assert_frame_equal(
        after[after.reference != cl.HUMAN_MAJORITY_ADJUDICATED].reset_index(drop=True),
        before.reset_index(drop=True))
    # agreement among the annotators is on the raw answers, adjudicated or not
    pd.testing.assert_frame_equal(reliability_table(study, n_boot=50), reliability_before)
    pd.testing.assert_frame_equal(annotators_table(study), annotators_before)


# ------------------------------------------------------------------ the role
def test_the_role_adjudicator_and_its_writes(ties):
    with Store.open(ties) as store:
        auth.add_user(store, "judy", "adjudicator", "pw-judy-12345", actor="t")
        assert auth.get_user(store, "judy").role == "adjudicator"
        with pytest.raises(auth.AccountError):
            auth.add_user(store, "x", "overlord", None, actor="t")


def test_the_cli_adds_an_adjudicator(tmp_path, monkeypatch, capsys):
    from annotation.cli.main import main

    db = tmp_path / "p.db"
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("tulip orbit cactus\n"))
    assert main(["user", "add", "judy", "--role", "adjudicator", "--db", str(db)]) == 0
    assert "added adjudicator 'judy'" in capsys.readouterr().out


def test_migration_keeps_accounts_and_sessions(tmp_path):
    """A schema-9 database with accounts and a session migrates to the role check that
    admits adjudicators, keeping every row."""
    from annotation.store import schema

    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    for number in range(9):
        conn.executescript(schema.MIGRATIONS[number])
    conn.execute("PRAGMA user_version = 9")
    conn.execute("INSERT INTO users (name, role, created_at) VALUES ('boss', 'admin', 'x')")
    conn.execute("INSERT INTO sessions (token_hash, user, role, created_at, last_seen)"
                 " VALUES ('h', 'boss', 'admin', 'x', 'x')")
    conn.commit()
    conn.close()
    with Store.open(db) as store:
        assert store.schema_version() == SCHEMA_VERSION
        assert store.query_df("SELECT name, role FROM users").values.tolist() == [
            ["boss", "admin"]]
        assert store.query_df("SELECT token_hash, user FROM sessions").values.tolist() == [
            ["h", "boss"]]
        store.conn.execute("INSERT INTO users (name, role, created_at) VALUES"
                           " ('judy', 'adjudicator', 'x')")
        assert store.conn.execute("PRAGMA foreign_key_check").fetchall() == []


# ------------------------------------------------------------------ the page
def test_an_annotator_cannot_open_the_page(ties_file, monkeypatch):
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(ties_file))
    at = signed_in("adjudicate.py", "ann9", "annotator", db=ties_file)
    at.run()
    assert any("adjudicators and admins only" in e.value for e in at.error)
    assert not at.radio


def test_an_adjudicator_cannot_open_admin_pages(ties_file, monkeypatch):
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(ties_file))
    for page in ("analytics.py", "assignment.py", "import_data.py", "home.py",
                 "conflict_results.py", "tree_results.py"):
        at = signed_in(page, "judy", "adjudicator", db=ties_file)
        at.run()
        assert any("admins only" in e.value for e in at.error), page


def test_the_app_menu_of_an_adjudicator(ties_file, monkeypatch):
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(ties_file))
    at = signed_in("app.py", "judy", "adjudicator", db=ties_file)
    at.run()
    assert not at.exception
    links = [getattr(p, "proto", p).label for p in at.get("page_link")]
    assert links == ["Adjudicate"]


def test_the_page_decides_with_a_required_note(ties_file, monkeypatch):
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(ties_file))
    at = signed_in("adjudicate.py", "judy", "adjudicator", db=ties_file)
    at.run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown).replace("\\", "")  # markdown escapes
    assert "Annotator 1" in text and "ann_a" not in text and "ann_b" not in text
    assert not at.expander  # the settings are an admin's
    unit = at.session_state["adjudicate"]["unit"]
    at.radio[0].set_value("yes")
    at.button[0].click()  # Decide, without a note
    at.run()
    assert any("note" in w.value for w in at.warning)
    with Store.open(ties_file) as store:
        assert decision_rows.decisions_df(store).empty
    at.radio[0].set_value("no")
    at.text_input[0].input("the shirt is clearly striped")
    at.button[0].click()
    at.run()
    assert not at.exception
    with Store.open(ties_file) as store:
        rows = decision_rows.decisions_df(store)
        kind, item, target = ad.parse_unit(unit)
        assert rows[["item", "target", "decision", "note", "decided_by"]].values.tolist() == [
            [item, target, "no", "the shirt is clearly striped", "judy"]]
    assert at.session_state["adjudicate"]["unit"] != unit  # the next dispute is open


def test_an_admin_sets_names_shown(ties_file, monkeypatch):
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(ties_file))
    at = signed_in("adjudicate.py", "boss", "admin", db=ties_file)
    at.run()
    assert not at.exception
    assert at.caption[0].value == "Disputes: checklist question: 0 of 3 decided"
    at.toggle[0].set_value(True)
    next(b for b in at.button if b.label == "Save settings").click()
    at.run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown).replace("\\", "")
    assert "ann_a" in text and "ann_b" in text
    with Store.open(ties_file) as store:
        assert ad.get_settings(store).show_names is True


def test_the_page_shows_a_tree_dispute(tree_dispute, monkeypatch):
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(tree_dispute))
    at = signed_in("adjudicate.py", "judy", "adjudicator", db=tree_dispute)
    at.run()
    assert not at.exception
    assert [h.value for h in at.subheader] == ["Tree localization · task tr1"]
    text = " ".join(m.value for m in at.markdown).replace("\\", "")
    assert "Reviewer 1" in text and "Reviewer 2" in text
    assert "r1" not in text.split() and "gpt-5" not in text
    assert at.radio[0].options == ["N1: C(f1⊕g1, f2)", "N2a: f1⊕g1", "N2b: f2", "N3a1: f1",
                                   "Persistent: fails at every node",
                                   "Not a failure: the root image is fine"]
    at.radio[0].set_value("N2a")
    at.text_input[0].input("the hat is right at N2a")
    at.button[0].click()
    at.run()
    assert not at.exception
    with Store.open(tree_dispute) as store:
        rows = decision_rows.decisions_df(store)
    assert rows[["kind", "item", "target", "decision"]].values.tolist() == [
        ["tree", "tr1/m", "g|g1", "N2a"]]


def test_the_page_decides_a_conflict_tie(conflict_tie, monkeypatch):
    db, task, kind = conflict_tie
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    at = signed_in("adjudicate.py", "judy", "adjudicator", db=db)
    at.run()
    assert not at.exception
    assert [h.value for h in at.subheader] == [f"Conflict label · task {task}"]
    text = " ".join(m.value for m in at.markdown).replace("\\", "")
    assert "Verifier 1" in text and "ann1" not in text and "ann2" not in text
    at.radio[0].set_value("no_conflict")
    at.text_input[0].input("no wind-responsive element")
    at.button[0].click()
    at.run()
    assert not at.exception
    with Store.open(db) as store:
        resolutions = cr.load_resolutions(store)
    assert resolutions[["task_id", "conflict", "label", "decided_by"]].values.tolist() == [
        [task, kind, 0, "judy"]]


@pytest.mark.parametrize("role, allowed", [("annotator", False), ("adjudicator", True),
                                           ("admin", True)])
def test_the_decision_write_checks_the_role_in_its_transaction(ties, role, allowed):
    """As the app writes (a signed-in session): an annotator's session writes nothing, an
    adjudicator's and an admin's decide; an adjudicator may not change the settings."""
    from annotation.accounts import sessions
    from annotation.accounts.sessions import SignedOut
    from annotation.store import SessionGuard
    from annotation.store import accounts as accounts_store

    with Store.open(ties) as store:
        auth.add_user(store, "who", role, "pw-who-12345678", actor="t", allow_weak=True)
        with accounts_store.writing(store, public=True) as rows:
            token = sessions.create(rows, "who", role, handoff=False)
        store.guard = SessionGuard(token=lambda: token)
        unit = ad.ROUTER.next(store, "who")
        if not allowed:
            with pytest.raises(SignedOut):
                ad.decide(store, "who", unit, "yes", "an annotator's try")
            store.guard = None
            assert decision_rows.decisions_df(store).empty
            return
        ad.decide(store, "who", unit, "yes", "decided")
        if role == "adjudicator":
            with pytest.raises(SignedOut):
                ad.set_settings(store, "who", show_names=True)
        store.guard = None
        assert decision_rows.decisions_df(store).decided_by.tolist() == ["who"]


def test_a_tie_resolved_on_the_conflict_labels_page_leaves_the_queue(conflict_tie):
    from annotation.work.verification import resolve_label

    db, task, kind = conflict_tie
    with Store.open(db) as store:
        assert ad.queue_units(store) == [ad.unit_id("conflict", task, kind)]
        resolve_label(store, task, kind, False, "decided by the admin", actor="boss")
        assert ad.queue_units(store) == []
        assert ad.ROUTER.next(store, "adj") is None
        item = ad.load_item(store, ad.unit_id("conflict", task, kind))
        assert item.decision == ("no_conflict", "decided by the admin")


def test_an_item_still_being_answered_is_no_dispute(ties):
    from annotation.work import workflow

    delta = OUTPUT["o4"]  # q2: both annotators said yes
    with Store.open(ties) as store:
        before = ad.checklist_disputes(store, "disagreements")
        assert (delta, "q2") not in before
        workflow.give_answer(store, "ann_d", delta, question_id="q2", answer="no")
        assert ad.checklist_disputes(store, "disagreements") == before  # work in progress
        workflow.submit(store, "ann_d", delta)
        assert (delta, "q2") in ad.checklist_disputes(store, "disagreements")


def test_the_report_command_writes_the_adjudicated_rows(ties, tmp_path):
    from annotation.cli.main import main

    with Store.open(ties) as store:
        _decide_all(store)
    out = tmp_path / "report"
    assert main(["report", "--db", str(ties), "--out", str(out), "--bootstrap", "50",
                 "--quiet"]) == 0
    table = pd.read_csv(out / "checklist.csv")
    rows = table[(table.group == "all") & table.reference.str.startswith("human majority")]
    assert rows[["reference", "n_decisions"]].values.tolist() == [
        ["human majority", 9], ["human majority (adjudicated)", 12]]
    assert rows.agreement.tolist() == pytest.approx([7 / 9, 9 / 12])


def test_the_cli_lists_the_disputes_and_decides_one(ties, capsys):
    """``judge-audit adjudicate list | decide``: the queue without the app."""
    from annotation.cli.main import main
    from tests.helpers.bundles import ensure_account

    assert main(["adjudicate", "list", "--db", str(ties), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {(r["item"], r["target"]) for r in listed} == set(TIES)
    assert all(r["decision"] is None and r["options"] == ["yes", "no"] for r in listed)
    first = listed[0]
    assert main(["adjudicate", "decide", "--db", str(ties), "--unit", first["unit"],
                 "--decision", "maybe", "--note", "x"]) == 1
    assert "decision must be one of yes, no" in capsys.readouterr().err
    assert main(["adjudicate", "decide", "--db", str(ties), "--unit", first["unit"],
                 "--decision", "yes", "--note", "x", "--as", "nobody"]) == 1
    assert "not an account with the role" in capsys.readouterr().err
    ensure_account(ties, "judy", "adjudicator")
    assert main(["adjudicate", "decide", "--db", str(ties), "--unit", first["unit"],
                 "--decision", "yes", "--note", "the cat is there", "--as", "judy"]) == 0
    capsys.readouterr()
    assert main(["adjudicate", "list", "--db", str(ties)]) == 0
    text = capsys.readouterr().out
    assert "decided 'yes' by judy" in text and f"{len(TIES)} disputed decisions, 1 decided" in text
