"""Issue #7, part 3: the audit trail. Every answer (also the superseded ones), flag,
submission, role change, setting change and import is in :func:`annotation.store.history.history`
with who and when, and its filters keep exactly the events of one annotator or item."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from annotation.accounts import auth
from annotation.cli import main
from annotation.formats.importers import import_path
from annotation.store import Store, process_user
from annotation.store.history import COLUMNS, history
from annotation.work import workflow
from tests.test_concurrency import make_bundle

IMPORTED = [  # answers made elsewhere: ann3 changed its mind on t0.q0
    {"annotator": "ann3", "output_id": "t0/g1", "question_id": "t0.q0", "answer": "yes",
     "created_at": "2026-11-02T10:00:00+00:00"},
    {"annotator": "ann3", "output_id": "t0/g1", "question_id": "t0.q0", "answer": "no",
     "created_at": "2026-11-02T10:01:30+00:00", "note": "looked again"},
]


@pytest.fixture
def project(tmp_path: Path, engine_db: str) -> Store:
    """Two imports (the second, without a user, brings ann3's answers), then a session of
    app work by ann1 and ann2 and an admin's changes (on SQLite and on PostgreSQL)."""
    bundle = make_bundle(tmp_path / "bundle", n_tasks=2, generators=("g1", "g2"))
    store = Store.open(engine_db)
    import_path(store, bundle, user="admin")
    (bundle / "annotations.jsonl").write_text(
        "".join(json.dumps(a) + "\n" for a in IMPORTED), encoding="utf-8")
    import_path(store, bundle)  # no user named: the CLI without --user does this
    auth.add_user(store, "root", "admin", "root-password-1", actor="cli:ops")
    auth.add_user(store, "ann1", "annotator", "ann1-password-1", actor="root")
    auth.set_role(store, "ann1", "admin", "root")
    workflow.set_settings(store, "root", overlap=2)
    workflow.draw_sample(store, "root", "uniform", size=4, seed=1)
    for annotator in ("ann1", "ann2"):
        output_id = workflow.next_item(store, annotator)
        assert output_id is not None
        item = workflow.load_item(store, output_id)
        for q in item.questions:
            workflow.give_answer(store, annotator, output_id, question_id=q.question_id,
                                 answer="yes")
        workflow.give_answer(store, annotator, output_id, criterion="visual_quality",
                             score=6)
        # a change of mind: a new row that supersedes the first
        workflow.give_answer(store, annotator, output_id,
                             question_id=item.questions[0].question_id, answer="cant_tell",
                             note="too small to see")
        workflow.flag_item(store, annotator, output_id, "ambiguous_question", "which cat?",
                           item.questions[1].question_id)
        workflow.submit(store, annotator, output_id)
    yield store
    store.close()


def test_every_change_is_there_with_who_and_when(project: Store) -> None:
    df = history(project)
    assert list(df.columns) == COLUMNS
    # every row says who and when, and the times are in order
    assert df["who"].notna().all() and (df["who"] != "").all()
    moments = pd.to_datetime(df["at"], utc=True, format="ISO8601")
    assert moments.notna().all() and moments.is_monotonic_increasing

    conn = project.conn
    n_answers = conn.execute("SELECT count(*) FROM annotations").fetchone()[0]
    n_audit = conn.execute("SELECT count(*) FROM audit_log").fetchone()[0]
    assert len(df) == n_answers + n_audit + 2  # + the two imports
    events = df["event"].value_counts().to_dict()
    assert events["answer.change"] == 3 and events["answer"] == n_answers - 3
    assert events["item.flag"] == 2 and events["item.submit"] == 2
    assert events["user.role"] == 1 and events["import"] == 2
    assert events["workflow.settings"] == 1 and events["workflow.sample"] == 1

    # a change names the row it replaced and what that row said
    change = df[(df.event == "answer.change") & (df.annotator == "ann1")].iloc[0]
    replaced = df[df.annotation_id == change.supersedes].iloc[0]
    assert (replaced.answer, replaced.who, replaced.event) == ("yes", "ann1", "answer")
    assert (change.previous_answer, change.answer, change.note) == (
        "yes", "cant_tell", "too small to see")
    # answers made elsewhere keep their own time and say which import brought them
    imported = df[df.annotator == "ann3"]
    assert imported.event.tolist() == ["answer", "answer.change"]
    assert pd.to_datetime(imported["at"], format="ISO8601").tolist() == [
        pd.Timestamp(a["created_at"]) for a in IMPORTED]
    assert imported.previous_answer.tolist()[1] == "yes"
    second_import = df[df.event == "import"].iloc[1]
    assert imported.source.tolist() == [f"import:{second_import.import_id}"] * 2

    # who changed a role, whose, from and to what
    role = df[df.event == "user.role"].iloc[0]
    assert (role.who, role.annotator, json.loads(role.detail)) == (
        "root", "ann1", {"from": "annotator", "to": "admin"})
    # a flag: by whom, on which item and question, why
    flag = df[(df.event == "item.flag") & (df.who == "ann2")].iloc[0]
    assert flag.annotator == "ann2" and flag["item"].startswith("t")
    assert flag.question_id and flag.note == "which cat?"
    assert json.loads(flag.detail)["reason"] == "ambiguous_question"
    # an import without a named user records the process's user (it used to be NULL)
    imports = df[df.event == "import"]
    assert imports.who.tolist() == ["admin", process_user()]
    assert json.loads(imports.detail.iloc[1])["counts"]["annotations"] == 2
    settings = df[df.event == "workflow.settings"].iloc[0]
    assert settings.who == "root" and json.loads(settings.detail) == {"overlap": 2}


def test_account_changes_without_a_named_actor_still_say_who(project: Store) -> None:
    """A library caller that names no actor: the account change is logged as made by the
    process's user (it used to be logged with nobody)."""
    auth.set_role(project, "ann1", "annotator", None)
    auth.disable_user(project, "ann1", None)
    df = history(project, annotator="ann1")
    last = df[df.event.isin(["user.role", "user.disable"])].tail(2)
    assert last.event.tolist() == ["user.role", "user.disable"]
    assert last.who.tolist() == [process_user()] * 2


def test_filters_keep_one_annotator_or_item(project: Store) -> None:
    full = history(project)
    mine = history(project, annotator="ann2")
    assert len(mine) > 0
    assert ((mine.annotator == "ann2") | (mine.who == "ann2")).all()
    expected = full[(full.annotator == "ann2") | (full.who == "ann2")]
    assert mine.reset_index(drop=True).equals(expected.reset_index(drop=True))
    assert set(mine.event) == {"answer", "answer.change", "item.flag", "item.submit"}

    # ann1 is an annotator and, since the role change, an admin: both show
    ann1 = history(project, annotator="ann1")
    assert {"user.add", "user.role", "answer", "item.submit"} <= set(ann1.event)
    root = history(project, annotator="root")
    assert {"user.add", "user.role", "workflow.settings", "workflow.sample"} <= set(root.event)
    assert "answer" not in set(root.event)

    item = mine[mine.event == "item.submit"]["item"].iloc[0]
    on_item = history(project, item=item)
    assert (on_item["item"] == item).all()
    assert len(on_item) == (full["item"] == item).sum()
    assert {"answer", "answer.change", "item.flag", "item.submit"} <= set(on_item.event)
    both = history(project, annotator="ann2", item=item)
    assert (both["item"] == item).all() and (both.annotator == "ann2").all()
    assert len(both) < len(on_item) or set(on_item.annotator) == {"ann2"}
    assert history(project, annotator="nobody").empty
    assert history(project, item="no/such-item").empty


def test_empty_project_has_an_empty_history(engine_db: str) -> None:
    with Store.open(engine_db) as store:
        df = history(store)
    assert df.empty and list(df.columns) == COLUMNS


def test_history_cli(project: Store, tmp_path: Path, capsys) -> None:
    db = project.location
    out = tmp_path / "history.csv"
    assert main(["history", "--db", db, "--annotator", "ann1", "--csv", str(out)]) == 0
    written = pd.read_csv(out)
    assert len(written) == len(history(project, annotator="ann1"))
    assert list(written.columns) == COLUMNS
    capsys.readouterr()
    assert main(["history", "--db", db, "--item", "t0/g1"]) == 0
    printed = capsys.readouterr().out
    assert "answer.change" in printed and "ann3" in printed
    assert main(["history", "--db", str(tmp_path / "none.db")]) == 1
    assert not (tmp_path / "none.db").exists()


def test_history_includes_verification_and_tree_reviews(tmp_path, engine_db):
    from annotation.formats.importers import import_path
    from annotation.store import Store
    from annotation.store.history import history
    from annotation.work import tree_review
    from annotation.work import verification as vf
    from tests.helpers.conflict_fixture import write_conflict_bundle
    from tests.helpers.tree_fixture import write_tree_bundle

    with Store.open(engine_db) as store:
        import_path(store, write_conflict_bundle(tmp_path / "c"))
        import_path(store, write_tree_bundle(tmp_path / "t"))
        vf.give_reading(store, "ann1", "c1", 0, "yaw", 30)
        vf.give_reading(store, "ann1", "c1", 0, "yaw", -40)
        vf.give_verdict(store, "ann1", "c1", "orientation", False, True, note="faces left")
        tree_review.give_review(store, "rev", "tr1/m", "f|f2", "N1", reason="other")
        events = history(store, annotator="ann1")
        trees = history(store, item="tr1/m")
    readings = events[events.event.str.startswith("reading")]
    assert list(readings.event) == ["reading", "reading.change"]
    assert list(readings.answer) == ["30.0", "-40.0"]
    assert list(readings.question_id) == ["Image_0.yaw", "Image_0.yaw"]
    assert json.loads(readings.detail.iloc[1])["supersedes"] == json.loads(
        readings.detail.iloc[0])["reading_id"]
    verdict = events[events.event == "verdict"].iloc[0]
    assert (verdict["item"], verdict.question_id, verdict.answer, verdict.note) == (
        "c1", "orientation", "no conflict", "faces left")
    assert json.loads(verdict.detail)["agrees"] == 0
    review = trees[trees.event == "tree_review"].iloc[0]
    assert (review.who, review.question_id, review.answer) == ("rev", "f|f2", "N1")
    assert json.loads(review.detail)["reason"] == "other"
