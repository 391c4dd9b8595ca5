"""Conflict-label verification: storage, routing, blind mode and the page (AppTest)."""

from __future__ import annotations

import os
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from annotation.formats.importers import import_path
from annotation.store import Store
from annotation.ui.widget_keys import widget_key
from annotation.work import verification as vf
from annotation.work.verification import VerifySession
from tests.helpers import panel
from tests.helpers.apptest import signed_in
from tests.helpers.bundles import ensure_account
from tests.helpers.conflict_fixture import write_conflict_bundle
from tests.test_annotate_page import all_text

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "conflicts.py")


@pytest.fixture
def vdb(tmp_path, monkeypatch, engine_db: str) -> str:
    """The conflict bundle's project, on SQLite and on PostgreSQL (issue #18)."""
    path = engine_db
    with Store.open(path) as store:
        import_path(store, write_conflict_bundle(tmp_path / "bundle"))
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(path))
    return path


# ------------------------------------------------------------------ the library
def test_only_tasks_with_a_conflict_capable_instruction_are_verified(vdb):
    with Store.open(vdb) as store:
        assert vf.verifiable_tasks(store) == ["c1", "c2"]
        c1 = vf.load_verify_item(store, "c1")
        assert [c.conflict for c in c1.checks] == ["orientation", "light"]
        orientation = c1.checks[0]
        # the paper's example: 30 vs -20 conflicts by sign although only 50 degrees apart
        assert orientation.rule.conflict is True and "opposite yaw signs" in orientation.rule.rule
        assert orientation.references == (0,) and orientation.instructions == (3,)
        dog = c1.reference(0)
        assert dog.name == "dog"
        assert dog.attributes == ("yaw", "yaw_reliable", "light_distinctive")
        assert dog.prelabel == {"yaw": 30, "yaw_reliable": True, "light_distinctive": False}
        # light is read on every reference: the night street carries it
        assert c1.checks[1].references == (0, 1) and c1.reference(1).attributes == (
            "light_distinctive",)
        c2 = vf.load_verify_item(store, "c2")
        pose = next(c for c in c2.checks if c.conflict == "pose")
        assert pose.published is True and pose.rule.conflict is False  # a wrong published label
        assert pose.automatic is True and pose.instructions == (2,)


def test_readings_and_verdicts_keep_their_history(vdb):
    with Store.open(vdb) as store:
        first = vf.give_reading(store, "ann1", "c1", 0, "yaw", 30)
        assert vf.give_reading(store, "ann1", "c1", 0, "yaw", 30.0) == first  # no-op
        second = vf.give_reading(store, "ann1", "c1", 0, "yaw", -40)
        assert second != first
        assert vf.my_readings(store, "ann1", "c1") == {(0, "yaw"): -40.0}
        rows = store.conn.execute(
            "SELECT reading_id, value, supersedes FROM prelabel_readings ORDER BY 1").fetchall()
        assert rows == [(first, "30.0", None), (second, "-40.0", first)]
        v1 = vf.give_verdict(store, "ann1", "c1", "orientation", False, True)
        v2 = vf.give_verdict(store, "ann1", "c1", "orientation", True, True, note="sure")
        verdict = vf.my_verdicts(store, "ann1", "c1")["orientation"]
        assert (verdict.agrees, verdict.label, verdict.note) == (True, True, "sure")
        history = store.conn.execute(
            "SELECT verdict_id, agrees, label, supersedes FROM conflict_verdicts ORDER BY 1"
        ).fetchall()
        assert history == [(v1, 0, 0, None), (v2, 1, 1, v1)]
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            store.conn.execute("DELETE FROM conflict_verdicts")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            store.conn.execute("UPDATE prelabel_readings SET value = '0'")
        # the table refuses an 'agrees' that contradicts the labels
        with pytest.raises(sqlite3.IntegrityError):
            store.conn.execute(
                "INSERT INTO conflict_verdicts (verifier, task_id, conflict, automatic, agrees,"
                " label, blind, created_at) VALUES ('x', 'c1', 'light', 1, 1, 0, 1, 'now')")


@pytest.mark.parametrize(("attribute", "value"), [("yaw", "left"), ("yaw", 400),
                                                   ("yaw", True), ("wind_responsive", 1),
                                                   ("colour", True)])
def test_bad_readings_are_refused(vdb, attribute, value):
    with Store.open(vdb) as store, pytest.raises(ValueError):
        vf.give_reading(store, "ann1", "c1", 0, attribute, value)


def test_rules_on_the_verifiers_reading(vdb):
    with Store.open(vdb) as store:
        item = vf.load_verify_item(store, "c1")
        # the verifier sees the dog facing -40: same side as the target -20, 20 degrees apart
        assert vf.decisions_on(item, {(0, "yaw"): -40.0})["orientation"].conflict is False
        # 170 vs a -20 target: 170 degrees apart
        assert vf.decisions_on(item, {(0, "yaw"): 170.0})["orientation"].conflict is True
        # an unclear facing direction is not judged
        assert vf.decisions_on(item, {(0, "yaw_reliable"): False})["orientation"].conflict is False
        # no reference with distinctive light: no light conflict
        off = {(0, "light_distinctive"): False, (1, "light_distinctive"): False}
        assert vf.decisions_on(item, off)["light"].conflict is False


def test_blind_mode_reveals_after_a_complete_reading(vdb):
    with Store.open(vdb) as store:
        item = vf.load_verify_item(store, "c1")
        assert vf.reveal_automatic(item, {}, blind=True) is False
        assert vf.reveal_automatic(item, {}, blind=False) is True
        partial = {(0, "yaw"): 30.0, (0, "yaw_reliable"): True}
        assert vf.reveal_automatic(item, partial, blind=True) is False
        full = partial | {(0, "light_distinctive"): False, (1, "light_distinctive"): True}
        assert vf.reveal_automatic(item, full, blind=True) is True
        # a facing direction read as unclear needs no yaw
        unclear = {k: v for k, v in full.items() if k != (0, "yaw")} | {
            (0, "yaw_reliable"): False}
        assert vf.reveal_automatic(item, unclear, blind=True) is True


def test_routing_overlap_reservations_and_resume(vdb):
    t0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    with Store.open(vdb) as store:
        vf.set_settings(store, "admin", overlap=1, reservation_minutes=10)
        a = vf.next_task(store, "ann1", now=t0)
        b = vf.next_task(store, "ann2", now=t0)
        assert {a, b} == {"c1", "c2"}  # overlap 1: never the same task while reserved
        assert vf.next_task(store, "ann3", now=t0) is None
        # the same verifier asking again gets the same task back (resume)
        assert vf.next_task(store, "ann1", now=t0 + timedelta(minutes=5)) == a
        # an expired reservation frees the task for someone else
        assert vf.next_task(store, "ann3", now=t0 + timedelta(minutes=30)) in {a, b}
        # started work resumes even after the reservation expired
        vf.give_reading(store, "ann2", b, 0, "light_distinctive", True,
                        now=t0 + timedelta(minutes=1))
        assert vf.next_task(store, "ann2", now=t0 + timedelta(hours=2)) == b


def test_submit_requires_every_reading_and_verdict(vdb):
    with Store.open(vdb) as store:
        session = VerifySession(store, "ann1", {})
        task = session.task_id
        assert task is not None
        with pytest.raises(ValueError):
            session.submit()
        session.confirm_readings({})
        for check in session.item.checks:
            session.set_verdict(check.conflict, agree=True)
        session.submit()
        assert vf.is_submitted(store, "ann1", task)
        assert session.task_id not in (None, task)
        assert vf.personal_progress(store, "ann1") == (1, 2)
        progress = vf.progress_by_verifier(store)
        assert progress.loc[0, "verifier"] == "ann1" and progress.loc[0, "submitted"] == 1
        assert session.back() and session.task_id == task and session.state["reviewing"]


# ------------------------------------------------------------------ the page
def verify_as(name: str) -> AppTest:
    ensure_account(os.environ["JUDGE_AUDIT_DB"], name)
    at = signed_in(PAGE, name)
    return at.run()


def button(at: AppTest, label: str):
    matches = [b for b in at.button if b.label == label]
    assert matches, f"no button {label!r}: {[b.label for b in at.button]}"
    return matches[0]


def page_task(at: AppTest) -> str:
    return at.subheader[0].value.rsplit("task ", 1)[1].replace("\\", "")


def test_page_blind_mode_hides_the_automatic_decision_until_confirmed(vdb):
    at = verify_as("ann1")
    assert not at.exception
    text = all_text(at)
    assert "Automatic label" not in text and "Rule on the pre-labels" not in text
    assert "opposite yaw signs" not in text and "Agree" not in text
    data = panel.spec(at)
    assert not data["targets"] and data["enter"] == "confirm"
    assert [(c[0], c[2]) for c in data["commands"]] == [("confirm", "enter"), ("back", "b")]
    # a verdict before the reading is confirmed is refused (the automatic label is hidden)
    fake = dict(data, targets=[{"row": None}])
    receipt = panel.deliver(at, panel.entry(fake, 0, "agree"))[1]["receipts"][0]
    assert receipt["status"] == "refused" and "confirm your reading" in receipt["message"]
    panel.command(at, "confirm")
    assert not at.exception
    text = all_text(at)
    assert "Automatic label" in text and "Agree" in text
    data = panel.spec(at)
    assert data["targets"] and data["submit"] == "submit"
    assert all([(o[0], o[2]) for o in t["options"]] == [("agree", "a"), ("disagree", "d")]
               for t in data["targets"])


def test_page_without_blind_mode_shows_the_decision_from_the_start(vdb):
    with Store.open(vdb) as store:
        vf.set_settings(store, "admin", blind=False)
    at = verify_as("ann1")
    assert "Automatic label" in all_text(at)
    data = panel.spec(at)
    assert data["submit"] == "submit" and data["targets"] and not data["enter"]


def test_page_correction_is_stored_with_the_corrected_label_and_note(vdb):
    at = verify_as("ann1")
    task = page_task(at)
    with Store.open(vdb) as store:
        item = vf.load_verify_item(store, task)
    first = item.checks[0]
    ref = first.references[0]
    attr = next(a for a in item.reference(ref).attributes
                if vf.ATTRIBUTE_TYPE[a] == first.conflict)
    field = widget_key("r", task, ref, attr, state=at.session_state)
    # correct a pre-label: the reading is written at once, before any confirmation
    if attr == "yaw":
        at.slider(key=field).set_value(-40).run()
        expected: object = -40.0
    else:
        widget = at.checkbox(key=field)
        expected = not widget.value
        widget.set_value(expected).run()
    with Store.open(vdb) as store:
        assert vf.my_readings(store, "ann1", task)[(ref, attr)] == expected
    panel.command(at, "confirm")
    assert "changed: the pre-label said" in all_text(at)
    assert panel.answer(at, 0, "disagree")["status"] == "ok"
    note = widget_key("n", task, first.conflict, state=at.session_state)
    at.text_input(key=note).input("the reference faces left").run()
    with Store.open(vdb) as store:
        verdict = vf.my_verdicts(store, "ann1", task)[first.conflict]
        rows = store.conn.execute(
            "SELECT count(*) FROM conflict_verdicts WHERE task_id = ?", [task]).fetchone()[0]
    assert verdict.agrees is False and verdict.label is (not first.automatic)
    assert verdict.note == "the reference faces left" and verdict.blind is True
    assert rows == 2  # the verdict, then the same verdict with its note: history kept
    assert panel.spec(at)["targets"][0]["value"] == "disagree"  # what the panel shows


def test_page_a_note_typed_before_the_verdict_is_kept(vdb):
    at = verify_as("ann1")
    task = page_task(at)
    panel.command(at, "confirm")
    with Store.open(vdb) as store:
        first = vf.load_verify_item(store, task).checks[0]
    note = widget_key("n", task, first.conflict, state=at.session_state)
    at.text_input(key=note).input("typed first").run()  # no verdict yet: kept aside
    assert panel.answer(at, 0, "agree")["status"] == "ok"  # the verdict, by the panel
    with Store.open(vdb) as store:
        verdict = vf.my_verdicts(store, "ann1", task)[first.conflict]
    assert verdict.note == "typed first" and verdict.agrees is True


@pytest.mark.slow
def test_page_resumes_the_same_task_with_the_readings_given(vdb):
    at = verify_as("ann1")
    task = page_task(at)
    panel.command(at, "confirm")
    panel.answer(at, 0, "agree")
    # a new browser session (reload, other machine): same task, reading confirmed, verdict kept
    again = verify_as("ann1")
    assert page_task(again) == task
    data = panel.spec(again)
    assert data["enter"] is None and data["targets"][0]["value"] == "agree"
    assert [t["value"] for t in data["targets"][1:]] == [None] * (len(data["targets"]) - 1)


@pytest.mark.slow
def test_page_submits_every_task_then_says_done(vdb):
    at = verify_as("ann1")
    seen = []
    for _ in range(2):
        seen.append(page_task(at))
        panel.command(at, "confirm")
        panel.complete(at, question="agree")
        panel.command(at, "submit")
        assert not at.exception
    assert sorted(seen) == ["c1", "c2"]
    assert at.title[0].value == "All done"
    with Store.open(vdb) as store:
        assert vf.personal_progress(store, "ann1") == (2, 2)
