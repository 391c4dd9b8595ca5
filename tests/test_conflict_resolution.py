"""Ties and undecided conflict verdicts get a resolution (issue #15, item 3): an admin decides
with a note; the decision is the verified label everywhere, append-only, in the history."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from annotation.formats.importers import import_path
from annotation.results import conflicts as cr
from annotation.results import features
from annotation.store import Store
from annotation.store.history import history
from annotation.work.verification import VerifySession, resolve_label, submit_task
from tests.helpers.apptest import signed_in
from tests.helpers.bundles import ensure_account
from tests.helpers.conflict_fixture import open_task_as, write_conflict_bundle


def _verdicts(rows):
    return pd.DataFrame(rows, columns=["task_id", "conflict", "verifier", "label", "automatic",
                                       "created_at"])


def test_a_decision_settles_a_tie_and_keeps_what_the_votes_said():
    verdicts = _verdicts([("t1", "wind", "a", True, False, "1"),
                          ("t1", "wind", "b", False, False, "2"),
                          ("t2", "pose", "a", True, True, "3")])
    assert cr.verified_labels(verdicts).set_index("task_id").loc["t1", "verified"] is None
    decided = pd.DataFrame([{"task_id": "t1", "conflict": "wind", "label": 1,
                             "note": "hair clearly moves", "decided_by": "boss"}])
    labels = cr.verified_labels(verdicts, decided).set_index("task_id")
    assert labels.loc["t1", "verified"] is True and labels.loc["t1", "majority"] is None
    assert (labels.loc["t1", "resolved_by"], labels.loc["t1", "resolution_note"]) == (
        "boss", "hair clearly moves")
    assert labels.loc["t2", "verified"] is True and labels.loc["t2", "resolved_by"] is None
    assert list(cr.undecided_labels(cr.verified_labels(verdicts)).task_id) == ["t1"]
    assert cr.undecided_labels(cr.verified_labels(verdicts, decided)).empty


@pytest.fixture
def tied(tmp_path, engine_db: str) -> tuple[str, str, str]:
    """Two verifiers who submitted opposite verdicts on one conflict label of a task, on
    SQLite and on PostgreSQL (``engine_db``, tests/conftest.py)."""
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


def test_the_decision_is_append_only_and_in_the_history(tied):
    db, task, kind = tied
    with Store.open(db) as store:
        labels = cr.verified_labels(cr.load_verdicts(store), cr.load_resolutions(store))
        assert list(zip(*[cr.undecided_labels(labels)[c] for c in ("task_id", "conflict")])
                    ) == [(task, kind)]
        with pytest.raises(ValueError, match="note"):
            resolve_label(store, task, kind, True, "  ", actor="boss")
        with pytest.raises(ValueError, match="no task"):
            resolve_label(store, "nope", kind, True, "why", actor="boss")
        first = resolve_label(store, task, kind, True, "both arrows and hair: a conflict",
                           actor="boss")
        second = resolve_label(store, task, kind, False, "on a second look, no", actor="boss")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            store.conn.execute("UPDATE conflict_resolutions SET label = 1")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            store.conn.execute("DELETE FROM conflict_resolutions")
        current = cr.load_resolutions(store)
        assert list(current.resolution_id) == [second]
        labels = cr.verified_labels(cr.load_verdicts(store), current).set_index(
            ["task_id", "conflict"])
        assert labels.loc[(task, kind), "verified"] is False
        events = history(store, item=task)
        mine = events[events.event.str.startswith("resolution")]
        assert list(mine.event) == ["resolution", "resolution.change"]
        assert list(mine.answer) == ["conflict", "no conflict"]
        assert list(mine.who) == ["boss", "boss"]
        assert str(first) in mine.detail.iloc[1]  # the change names the row it supersedes
        assert json.loads(mine.detail.iloc[1]) == {"resolution_id": second,
                                                   "supersedes": first}
        # the report's grouping by conflict label reads the decision, as "verified"
        row = features.load_conflict_features(store).set_index("task_id").loc[task]
        assert (row[f"conflict.{kind}"], row[f"conflict.{kind}.source"]) == (False,
                                                                              "verified")


@pytest.mark.slow
def test_an_admin_decides_a_tie_on_the_conflict_labels_page(tied, monkeypatch):
    db, task, kind = tied
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    ensure_account(db, "boss", "admin")
    page = str(Path(__file__).resolve().parents[1] / "pages" / "conflict_results.py")
    at = signed_in(page, "boss", "admin")
    at.run()
    assert not at.exception
    assert any("Ties and undecided labels" in s.value for s in at.subheader)
    at.radio[0].set_value("conflict")
    at.text_input[0].set_value("the reference's hair is windswept")
    next(b for b in at.button if b.label == "Decide").click().run()
    assert not at.exception
    with Store.open(db) as store:
        current = cr.load_resolutions(store)
    assert list(zip(current.task_id, current.conflict, current.label, current.decided_by)
                ) == [(task, kind, 1, "boss")]
    assert any("Every verified label has a majority or a decision" in c.value
               for c in at.caption)
