"""Diagnostic trees in a project and their human review: storage, routing, the page."""

from __future__ import annotations

import os
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from annotation.formats.importers import import_path
from annotation.store import Store
from annotation.trace import trees
from annotation.work import tree_review as tr
from tests.helpers import panel
from tests.helpers.apptest import signed_in
from tests.helpers.bundles import ensure_account
from tests.helpers.tree_fixture import EXPECTED, write_tree_bundle
from tests.test_annotate_page import all_text

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "trees.py")


@pytest.fixture(params=[False, True], ids=["computed-tree", "explicit-tree-nodes"])
def tdb(request, tmp_path, monkeypatch, engine_db: str) -> str:
    """The tree bundle's project, on SQLite and on PostgreSQL (issue #18)."""
    path = engine_db
    with Store.open(path) as store:
        import_path(store, write_tree_bundle(tmp_path / "b", explicit_nodes=request.param))
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(path))
    return path


def test_tree_nodes_outputs_and_retained_questions(tdb):
    with Store.open(tdb) as store:
        assert trees.tree_units(store) == ["tr1/m"]
        assert trees.node_output_ids(store) == {f"tr1/m/{n}" for n in
                                                ("N1", "N2a", "N2b", "N3a1")}
        assert trees.default_judge(store) == "gpt-5"
        item = trees.load_tree_item(store, "tr1/m")
    tree = item.tree
    assert [n.id for n in tree.nodes] == ["N0", "N1", "N2a", "N2b", "N3a1"]
    assert [n.parent for n in tree.nodes] == [None, "N0", "N1", "N1", "N2a"]
    assert [n.rule for n in tree.nodes] == [None, 1, 2, 2, 4]
    assert [n.depth for n in tree.nodes] == [0, 1, 2, 2, 3]
    assert tree.node("N1").removed == ("g_style",)
    # a node keeps the questions of the targets it retains (Appendix C.2)
    assert tree.node("N1").questions == ("tr1.q1", "tr1.q2", "tr1.q3", "tr1.q4", "tr1.q6")
    assert tree.node("N2a").questions == ("tr1.q1", "tr1.q2", "tr1.q3")
    assert tree.node("N2b").questions == ("tr1.q4",)
    assert tree.node("N3a1").questions == ("tr1.q1",)
    assert all(item.node_images[n] for n in item.node_images)


def test_automatic_localization_of_the_fixture(tdb):
    with Store.open(tdb) as store:
        item = trees.load_tree_item(store, "tr1/m")
        auto = trees.automatic_localization(store, item, "gpt-5").set_index("key")
        failing = tr.failing_instances(store, item, "gpt-5")
    assert {f.key for f in failing} == set(EXPECTED)
    for key, node in EXPECTED.items():
        assert auto.loc[key, "first_pass"] == node
    assert auto.loc["f|f2", "category"] == "Global Reference"
    assert auto.loc["g|g1", "category"] == "Joint Composition"
    assert auto.loc["f|f1", "category"] == "Stable Success"


def test_reviews_keep_history_and_refuse_bad_values(tdb):
    with Store.open(tdb) as store:
        first = tr.give_review(store, "r1", "tr1/m", "g|g1", "N1", reason="other")
        assert tr.give_review(store, "r1", "tr1/m", "g|g1", "N1", reason="other") == first
        second = tr.give_review(store, "r1", "tr1/m", "g|g1", "N2a",
                                reason="attribute_mismatch",
                                box={"node": "N0", "box": [0.1, 0.2, 0.5, 0.6]})
        review = tr.my_reviews(store, "r1", "tr1/m")["g|g1"]
        assert (review.origin, review.reason) == ("N2a", "attribute_mismatch")
        assert review.box == {"node": "N0", "box": [0.1, 0.2, 0.5, 0.6]}
        rows = store.conn.execute(
            "SELECT review_id, supersedes FROM tree_reviews ORDER BY 1").fetchall()
        assert rows == [(first, None), (second, first)]
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            store.conn.execute("UPDATE tree_reviews SET origin = 'N1'")
        with pytest.raises(ValueError):
            tr.give_review(store, "r1", "tr1/m", "g|g1", "N1", reason="bad luck")
        with pytest.raises(ValueError):
            tr.give_review(store, "r1", "tr1/m", "g|g1", "N1",
                           box={"node": "N0", "box": [0.5, 0.2, 0.1, 0.6]})
        with pytest.raises(ValueError):
            tr.give_review(store, "r1", "tr1/m", "g|g1", "")


def test_reveal_only_after_every_failure_is_localized(tdb):
    with Store.open(tdb) as store:
        item = trees.load_tree_item(store, "tr1/m")
        failing = tr.failing_instances(store, item, "gpt-5")
        for n, f in enumerate(failing):
            assert not tr.reveal_automatic(failing, tr.my_reviews(store, "r1", "tr1/m"))
            tr.give_review(store, "r1", "tr1/m", f.key, "N1")  # no reason yet
            assert not tr.reveal_automatic(failing, tr.my_reviews(store, "r1", "tr1/m"))
            if n < len(failing) - 1:
                tr.give_review(store, "r1", "tr1/m", f.key, "N1", reason="other")
            else:  # 'not a failure' needs no reason
                tr.give_review(store, "r1", "tr1/m", f.key, tr.NOT_A_FAILURE)
        assert tr.reveal_automatic(failing, tr.my_reviews(store, "r1", "tr1/m"))


def test_routing_overlap_and_resume(tdb):
    t0 = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
    with Store.open(tdb) as store:
        assert tr.next_tree(store, "r1", now=t0) == "tr1/m"
        assert tr.next_tree(store, "r2", now=t0) is None  # overlap 1, reserved by r1
        tr.set_settings(store, "admin", overlap=2)
        assert tr.next_tree(store, "r2", now=t0) == "tr1/m"
        tr.give_review(store, "r1", "tr1/m", "g|g1", "N2a", reason="other",
                       now=t0 + timedelta(minutes=1))
        assert tr.next_tree(store, "r1", now=t0 + timedelta(hours=3)) == "tr1/m"  # resume
        tr.submit_tree(store, "r1", "tr1/m")
        assert tr.next_tree(store, "r1", now=t0 + timedelta(hours=3)) is None
        assert tr.personal_progress(store, "r1") == (1, 1)
        assert tr.previous_tree(store, "r1", None) == "tr1/m"


def test_review_table_like_the_paper(tdb):
    with Store.open(tdb) as store:
        item = trees.load_tree_item(store, "tr1/m")
        tr.give_review(store, "r1", "tr1/m", "f|f2", "N1", reason="identity_inconsistency")
        table = tr.review_table(item, tr.failing_instances(store, item, "gpt-5"),
                                tr.my_reviews(store, "r1", "tr1/m"),
                                trees.instance_table(store, item, "gpt-5"))
    assert list(table.columns) == ["Element", "Operator", "Result", "Failure reason"]
    row = table.set_index("Element").loc["f2"]
    assert (row.Operator, row.Result) == ("f", "fail")
    assert row["Failure reason"] == "Identity inconsistency (originates at N1)"
    assert table.set_index("Element").loc["f1", "Result"] == "pass"


# ------------------------------------------------------------------ the page
def review_as(name: str) -> AppTest:
    ensure_account(os.environ["JUDGE_AUDIT_DB"], name)
    at = signed_in(PAGE, name)
    return at.run()


@pytest.mark.slow
def test_page_hides_the_automatic_localization_until_answered(tdb):
    at = review_as("rev1")
    assert not at.exception
    assert at.subheader[0].value.endswith("task tr1")
    text = all_text(at)
    for hidden in ("Automatic localization", "Joint Composition", "Global Reference",
                   "Stable Success", "Persistent Failure", "badge[pass]", "badge[fail]",
                   " pass\\n", "3/5 pass"):
        assert hidden not in text, hidden
    origins = [s for s in at.selectbox if s.label.startswith("First node")]
    assert len(origins) == 3
    choice = {"g1": "N2a", "f1⊕g1": "N1", "f2": "N1"}
    elements = [m.value.split("**")[1] for m in at.markdown if m.value.startswith("**")]
    for element in elements:
        box = next(s for s in at.selectbox if s.label.startswith("First node")
                   and s.value is None)
        box.set_value(choice[element]).run()
        reason = next(s for s in at.selectbox if s.label == "Failure reason" and not s.disabled
                      and s.value is None)
        reason.set_value("attribute_mismatch").run()
    assert not at.exception
    text = all_text(at)
    assert "Automatic localization" in text and "Joint Composition" in text
    assert "badge[fail]" in text and "3/5 pass" in text  # the judge's node passes, now
    with Store.open(tdb) as store:
        reviews = tr.my_reviews(store, "rev1", "tr1/m")
    assert {k: r.origin for k, r in reviews.items()} == {
        "g|g1": "N2a", "⊕|f1⊕g1": "N1", "f|f2": "N1"}
    assert len(at.dataframe) == 1  # the review table
    assert panel.spec(at)["ready"]
    panel.command(at, "submit")
    assert at.title[0].value == "All done"


def test_node_outputs_are_not_annotation_items_nor_study_items(tdb):
    from annotation.results.study import load_study
    from annotation.work import workflow

    with Store.open(tdb) as store:
        offered = set(workflow.annotatable_outputs(store).output_id)
        study = load_study(store)
    assert offered == {"tr1/m", "plain/m"}
    assert set(study.outputs.output_id) == {"tr1/m", "plain/m"}
    assert set(study.judge_answers.output_id) == {"tr1/m"}
    assert len(study.judge_answers) == 6  # the root's six answers, not the nodes'


def test_box_from_pixels_clips_and_normalizes():
    assert tr.box_from_pixels([100, 300], [50, 150], 400, 200) == [0.25, 0.25, 0.75, 0.75]
    assert tr.box_from_pixels([-20, 200], [10, 500], 400, 200) == [0.0, 0.05, 0.5, 1.0]
    assert tr.box_from_pixels([100, 100], [0, 50], 400, 200) is None  # no width


def test_session_fields_do_not_undo_each_other_and_navigate(tdb):
    with Store.open(tdb) as store:
        session = tr.TreeSession(store, "r1", {})
        assert session.output_id == "tr1/m"
        assert session.set_field("f|f2", "reason", "other") is None  # no origin yet
        session.set_field("f|f2", "origin", "N1")
        session.set_field("f|f2", "reason", "identity_inconsistency")
        session.set_field("f|f2", "note", "the cat is grey")
        session.set_box_pixels("f|f2", "N0", [10, 50], [20, 60], 100, 100)
        review = session.reviews()["f|f2"]
        assert (review.origin, review.reason, review.note) == (
            "N1", "identity_inconsistency", "the cat is grey")
        assert review.box == {"node": "N0", "box": [0.1, 0.2, 0.5, 0.6]}
        with pytest.raises(ValueError):
            session.set_field("f|f2", "colour", "red")
        item = trees.load_tree_item(store, "tr1/m")
        rows = tr.compare_with_automatic(trees.automatic_localization(store, item, "gpt-5"),
                                         tr.failing_instances(store, item, "gpt-5"),
                                         session.reviews())
        assert rows == [{"element": "f2", "category": "Global Reference", "automatic": "N1",
                         "yours": "N1", "same": True}]
        session.submit()
        assert session.output_id is None
        assert session.back() and session.output_id == "tr1/m" and session.state["reviewing"]
