"""The demo shows every page populated (issue #15, item 12): its bundle carries submitted
conflict verifications (one disagreement with an automatic label, one corrected
pre-label) and tree reviews (one reviewer disagreeing with the automatic localization),
so that the admin pages *Conflict labels* and *Tree localization* show real tables on
first start; the demo's accounts keep their story (alice has nothing done)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.project_files import DEMO_BUNDLE, build_demo_db
from annotation.results import conflicts as conflict_results
from annotation.store import Store
from annotation.trace import trees
from annotation.work import compare
from annotation.work import tree_review as tr
from annotation.work import verification as vf
from tests.helpers.apptest import signed_in

PAGES = Path(__file__).resolve().parents[1] / "pages"
HUMAN_WORK = ("annotations", "prelabel_readings", "conflict_verdicts", "tree_reviews",
              "flags", "queue_submissions", "queue_visits")

#: the tests on ``served_demo`` run on SQLite and on PostgreSQL (tests/conftest.py)
SERVED_ENGINES = ("sqlite", "postgresql")


def _lines(name: str) -> list[dict]:
    return [json.loads(x) for x in (DEMO_BUNDLE / name).read_text().splitlines()]


def _people(db: str | Path) -> set[str]:
    """Everyone with any human work in the database."""
    with Store.open(db) as store:
        found = set()
        for table, column in (("annotations", "annotator"), ("prelabel_readings", "verifier"),
                              ("conflict_verdicts", "verifier"), ("tree_reviews", "reviewer"),
                              ("flags", "annotator"), ("queue_submissions", "person"),
                              ("queue_visits", "person"),
                              ("conflict_resolutions", "decided_by")):
            found |= {r[0] for r in store.conn.execute(
                f"SELECT DISTINCT {column} FROM {table}")}
        return found


def test_the_demo_holds_the_designed_verifications_and_reviews():
    verdicts = _lines("conflict_verdicts.jsonl")
    disagreeing = [(v["verifier"], v["task_id"], v["conflict"]) for v in verdicts
                   if v["automatic"] is not None and v["label"] != v["automatic"]]
    assert disagreeing == [("ann2", "demo-07", "wind")]
    readings = _lines("prelabel_readings.jsonl")
    corrected = [r for r in readings if r["supersedes"] is not None]
    assert [(r["verifier"], r["task_id"], r["image_index"], r["attribute"], r["value"])
            for r in corrected] == [("ann2", "demo-07", 0, "wind_responsive", True)]
    reviews = _lines("tree_reviews.jsonl")
    assert any(r["supersedes"] is not None for r in reviews)
    submitted = _lines("submissions.jsonl")
    assert {s["kind"] for s in submitted} == {"annotate", "verify", "trees", "pairs",
                                              "rankings"}
    assert [(r["task_id"], r["conflict"], r["decided_by"])
            for r in _lines("conflict_resolutions.jsonl")] == [("demo-07", "wind", "admin")]


def test_the_demo_accounts_keep_their_story(engine_demo):
    db = engine_demo
    people = _people(db)
    assert "alice" not in people
    assert people == {"ann1", "ann2", "ann3", "admin"}  # admin: the tie's decision
    with Store.open(db) as store:
        # the reviewers have work to show; alice has nothing started and still gets a tree
        # to review and a task to verify
        assert tr.personal_progress(store, "ann1")[0] == 2
        assert tr.personal_progress(store, "alice")[0] == 0
        assert tr.next_tree(store, "alice") == "demo-10/gpt-image-1"
        # the demo annotators' pair and ranking answers are submitted work: they are not
        # offered again, and alice gets what the overlap leaves open
        ann1 = compare.PairSession(store, "ann1", {})
        assert ann1.progress()[0] > 0 and compare.RankingSession(
            store, "ann1", {}).progress() == (2, 2)
        answered = {r["pair_id"] for r in _lines("annotations.jsonl")
                    if r.get("annotator") == "ann1" and "pair_id" in r}
        assert ann1.unit not in answered
        assert vf.next_task(store, "alice") is not None


def test_one_reviewer_disagrees_with_the_automatic_localization(engine_demo):
    db = engine_demo
    with Store.open(db) as store:
        judge = tr.judge_for(store)
        assert judge is not None
        item = trees.load_tree_item(store, "demo-10/qwen-image-edit")
        auto = trees.automatic_localization(store, item, judge).set_index("key")
        mine = tr.my_reviews(store, "ann1", "demo-10/qwen-image-edit")
    assert auto.loc["⊕|f1⊕g1", "first_pass"] == "N2a"
    assert mine["⊕|f1⊕g1"].origin == "persistent"


def test_the_tie_is_decided_by_the_admin(engine_demo):
    db = engine_demo
    with Store.open(db) as store:
        labels = conflict_results.verified_labels(conflict_results.load_verdicts(store),
                                                  conflict_results.load_resolutions(store))
    wind = labels[(labels.task_id == "demo-07") & (labels.conflict == "wind")].iloc[0]
    assert (wind.n_verifiers, wind.votes_conflict) == (2, 1)
    assert wind.majority is None or wind.majority != wind.majority  # a tie
    assert bool(wind.verified) is True and bool(wind.automatic) is False
    assert wind.resolved_by == "admin"


@pytest.mark.slow
@pytest.mark.parametrize(("page", "title", "tables"), [
    ("conflict_results.py", "Conflict labels", 12),
    ("tree_results.py", "Tree localization", 12),
])
def test_admin_result_pages_show_real_tables_on_first_start(served_demo, page, title, tables):
    at = signed_in(str(PAGES / page), "admin", "admin")
    at.run(timeout=120)
    assert not at.exception
    assert at.title[0].value == title
    assert len(at.dataframe) == tables
    for frame in at.dataframe:
        assert len(frame.value) > 0, frame


@pytest.mark.slow
def test_importing_the_demo_again_changes_nothing(engine_db):
    db = engine_db
    build_demo_db(db)

    def snapshot() -> dict[str, list]:
        with Store.open(db) as store:
            return {t: store.conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()
                    for t in HUMAN_WORK}

    before = snapshot()
    assert all(before[t] for t in HUMAN_WORK if t != "flags")
    text = build_demo_db(db)
    assert "written: \n" in text or text.splitlines()[1].strip() == "written:"
    assert snapshot() == before


def test_tables_of_mixed_readings_reach_the_page_as_arrow(served_demo):
    """verified_prelabels / reading_history hold a yaw (degrees) beside yes/no readings in
    one column: Arrow (what st.dataframe sends) refuses such a column; the page shows it as
    text."""
    import pyarrow as pa

    from annotation.results import conflicts as conflict_results
    from annotation.store import Store
    from annotation.ui.widgets import arrow_safe

    with Store.open(served_demo) as store:
        tables = conflict_results.conflict_tables(store)
    mixed = tables["reading_history"]
    with pytest.raises(pa.ArrowInvalid):
        pa.Table.from_pandas(mixed)
    for table in tables.values():
        pa.Table.from_pandas(arrow_safe(table))
    shown = arrow_safe(mixed)
    assert set(shown.value.map(type)) <= {str, type(None)}
