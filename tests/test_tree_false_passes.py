"""False passes (TRACE-Bench diagnostic trees): reviewers also check, blind, a sample of
the operator instances the judge passes at the root; the results say how often the judge
passed what a reviewer failed, per operator (real SQLite, the real page via AppTest)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from scipy.stats import binomtest

from annotation.formats.importers import import_path
from annotation.results import trees as res
from annotation.store import Store
from annotation.trace import trees
from annotation.work import tree_review as tr
from tests.helpers import panel
from tests.helpers.apptest import signed_in
from tests.helpers.tree_fixture import EXPECTED, write_tree_bundle
from tests.test_annotate_page import all_text

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "trees.py")
RESULTS_PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "tree_results.py")
#: the fixture's root instances in checklist order; the judge passes f1, g_style and C
ROOT = ["f|f1", "g|g1", "⊕|f1⊕g1", "f|f2", "g|g_style", "C|C, duplication"]
PASSED = {"f|f1", "g|g_style", "C|C, duplication"}


@pytest.fixture
def tdb(tmp_path, monkeypatch, make_engine_db) -> Path:
    path = make_engine_db("trees.db")
    with Store.open(path) as store:
        import_path(store, write_tree_bundle(tmp_path / "b"))
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(path))
    return path


def _keys(store: Store) -> list[str]:
    item = trees.load_tree_item(store, "tr1/m")
    return [f.key for f in tr.review_instances(store, item, "gpt-5")]


def test_the_passed_sample_is_mixed_in_checklist_order(tdb):
    with Store.open(tdb) as store:
        assert _keys(store) == [k for k in ROOT if k in EXPECTED]  # share 0: as before
        tr.set_settings(store, "admin", passed_share=1.0)
        assert _keys(store) == ROOT  # every instance, failing and passed alike
        tr.set_settings(store, "admin", passed_share=0.5, seed=3)
        half = _keys(store)
        assert set(EXPECTED) <= set(half) and half == [k for k in ROOT if k in half]
        assert _keys(store) == half  # the same on every visit and for every reviewer
        with pytest.raises(ValueError, match="passed_share"):
            tr.set_settings(store, "admin", passed_share=1.5)
        assert tr.get_settings(store).passed_share == 0.5
    # the sample is a uniform draw: about share x n of many keys
    drawn = sum(tr.sampled(0, "o", f"f|f{i}", 0.3) for i in range(4000))
    assert abs(drawn / 4000 - 0.3) < 0.03
    assert not tr.sampled(0, "o", "f|f1", 0.0)


def _review_all(store: Store, reviewer: str, passed_origin: dict[str, str]) -> None:
    for key, node in EXPECTED.items():
        tr.give_review(store, reviewer, "tr1/m", key, node, reason="attribute_mismatch")
    for key, origin in passed_origin.items():
        reason = None if origin == tr.NOT_A_FAILURE else "identity_inconsistency"
        box = None if reason is None else {"node": "N0", "box": [0.1, 0.1, 0.4, 0.5]}
        tr.give_review(store, reviewer, "tr1/m", key, origin, reason=reason, box=box)


def test_false_pass_rates_per_operator_with_wilson_intervals(tdb):
    with Store.open(tdb) as store:
        tr.set_settings(store, "admin", passed_share=1.0)
        # r1 fails the judge-passed f1 (persistent) and C; r2 agrees on f1; g_style unseen
        _review_all(store, "r1", {"f|f1": tr.PERSISTENT, "C|C, duplication": "N1"})
        _review_all(store, "r2", {"f|f1": tr.NOT_A_FAILURE})
        # r2 first failed a judge failure, then changed its mind: history kept, current used
        tr.give_review(store, "r2", "tr1/m", "f|f2", tr.NOT_A_FAILURE)
        rows = store.conn.execute("SELECT count(*) FROM tree_reviews WHERE reviewer = 'r2'"
                                  " AND instance = 'f|f2'").fetchone()[0]
        assert rows == 2
        tables = res.tree_tables(store)
    passed = tables["passed_instances"].set_index("key")
    assert set(passed.index) == PASSED
    assert passed.loc["g|g_style", "status"] == res.NOT_REVIEWED  # not an agreement
    assert passed.loc["f|f1", "status"] == res.HUMAN_FAILED
    assert (passed.loc["f|f1", "n_reviews"], passed.loc["f|f1", "n_human_failed"]) == (2, 1)
    assert passed.loc["f|f1", "reviewers"] == "r1; r2"
    table = tables["false_passes"].set_index("operator")
    assert list(table.index) == ["f", "g", "⊕", "C", "Overall"]
    f = table.loc["f"]
    assert (f.n_judge_passed, f.n_reviewed, f.n_not_reviewed, f.n_reviews,
            f.n_human_failed) == (1, 1, 0, 2, 1)
    ci = binomtest(1, 2).proportion_ci(method="wilson")
    assert f.false_pass_rate == 0.5
    assert math.isclose(f.false_pass_lo, ci.low) and math.isclose(f.false_pass_hi, ci.high)
    g = table.loc["g"]
    assert (g.n_judge_passed, g.n_not_reviewed, g.n_reviews) == (1, 1, 0)
    assert math.isnan(g.false_pass_rate)
    overall = table.loc["Overall"]
    assert (overall.n_judge_passed, overall.n_reviewed, overall.n_not_reviewed,
            overall.n_reviews, overall.n_human_failed) == (3, 2, 1, 3, 2)
    ci = binomtest(2, 3).proportion_ci(method="wilson")
    assert math.isclose(overall.false_pass_lo, ci.low)
    assert math.isclose(overall.false_pass_hi, ci.high)
    # the other direction: judge failures a reviewer called "not a failure" (r2 on f2)
    assert (overall.n_judge_failed_reviews, overall.n_human_passed) == (6, 1)
    assert table.loc["f", "n_human_passed"] == 1
    # the automatic-vs-human agreement still counts only the judge's failures
    node = tables["auto_vs_human"].set_index(["level", "operator"]).loc[("node", "Overall")]
    assert node.n == 6 and node.n_passes_at_root == 3


def test_the_tree_report_writes_the_false_pass_tables(tdb, tmp_path):
    from annotation.cli import main

    with Store.open(tdb) as store:
        tr.set_settings(store, "admin", passed_share=1.0)
        _review_all(store, "r1", {"f|f1": tr.PERSISTENT})
    out = tmp_path / "out"
    assert main(["trees", "--db", str(tdb), "--out", str(out), "--quiet"]) == 0
    import pandas as pd

    table = pd.read_csv(out / "false_passes.csv").set_index("operator")
    assert table.loc["Overall", "n_human_failed"] == 1
    assert (out / "passed_instances.csv").is_file()


@pytest.mark.slow
def test_page_mixes_passed_instances_in_without_saying_which(tdb):
    with Store.open(tdb) as store:
        tr.set_settings(store, "admin", passed_share=1.0)
    at = signed_in(PAGE, "rev1").run()
    assert not at.exception
    text = all_text(at)
    assert "Elements to check at the root" in text and "Failures at the root" not in text
    for hidden in ("badge[pass]", "badge[fail]", "Stable Success", "the judge passes",
                   "Automatic localization", "3/5 pass"):
        assert hidden not in text, hidden
    elements = [m.value.split("**")[1].replace("\\", "") for m in at.markdown
                if m.value.startswith("**")]
    assert elements == ["f1", "g1", "f1⊕g1", "f2", "g_style", "C, duplication"]
    origins = [s for s in at.selectbox if s.label.startswith("First node")]
    assert len(origins) == 6
    # every list offers the same choices, failing or passed: persistent / not a failure
    assert all(o.options[-2:] == ["Persistent: fails at every node",
                                  "Not a failure: the root image is fine"] for o in origins)
    choice = {"f1": "persistent", "g1": "N2a", "f1⊕g1": "N1", "f2": "N1",
              "g_style": "not_a_failure", "C, duplication": "not_a_failure"}
    for element in elements:
        box = next(s for s in at.selectbox if s.label.startswith("First node")
                   and s.value is None)
        box.set_value(choice[element]).run()
        if choice[element] != "not_a_failure":
            reason = next(s for s in at.selectbox if s.label == "Failure reason"
                          and not s.disabled and s.value is None)
            reason.set_value("identity_inconsistency").run()
    assert not at.exception
    text = all_text(at)
    assert "Automatic localization" in text  # revealed only now
    assert panel.spec(at)["ready"]
    panel.command(at, "submit")
    assert at.title[0].value == "All done"
    with Store.open(tdb) as store:
        table = res.tree_tables(store)["false_passes"].set_index("operator")
    assert table.loc["f", "n_human_failed"] == 1 and table.loc["C", "n_human_failed"] == 0
    assert table.loc["Overall", "n_reviews"] == 3


@pytest.mark.slow
def test_results_page_shows_the_false_pass_table_and_the_setting(tdb):
    with Store.open(tdb) as store:
        tr.set_settings(store, "admin", passed_share=1.0)
        _review_all(store, "r1", {"f|f1": tr.PERSISTENT})
    at = signed_in(RESULTS_PAGE, "boss", role="admin").run()
    assert not at.exception
    assert any(s.value.startswith("False passes") for s in at.subheader)
    share = next(n for n in at.number_input if n.label.startswith("Share of judge-passed"))
    assert share.value == 1.0
    share.set_value(0.25)
    at.button[0].click().run()  # the settings form's Save
    assert not at.exception
    with Store.open(tdb) as store:
        assert tr.get_settings(store).passed_share == 0.25


def test_the_blind_passed_sample_leaves_human_agreement_and_reasons_as_they_were(tmp_path):
    """The same two reviewers, the same answers on the judge's failures: switching on the
    passed sample (where both say "not a failure") must not move the human baseline of
    localization (it moved from 0.667 to 0.833) nor dilute the failure reasons."""
    from annotation.formats.importers import import_path
    from annotation.results import trees as res
    from annotation.store import Store
    from annotation.work import tree_review as tr
    from tests.helpers.tree_fixture import EXPECTED, write_tree_bundle

    tables = {}
    for share in (0.0, 1.0):
        root = tmp_path / f"s{share}"
        with Store.open(root / "t.db") as store:
            import_path(store, write_tree_bundle(root / "b"))
            tr.set_settings(store, "admin", passed_share=share)
            for i, key in enumerate(EXPECTED):
                tr.give_review(store, "r1", "tr1/m", key, EXPECTED[key],
                               reason="attribute_mismatch")
                tr.give_review(store, "r2", "tr1/m", key,
                               EXPECTED[key] if i else tr.PERSISTENT,
                               reason="attribute_mismatch")
            if share:
                for key in ("f|f1", "g|g_style", "C|C, duplication"):
                    for reviewer in ("r1", "r2"):
                        tr.give_review(store, reviewer, "tr1/m", key, tr.NOT_A_FAILURE)
            tables[share] = res.tree_tables(store)
    for name in ("human_agreement", "failure_reasons"):
        assert tables[1.0][name].equals(tables[0.0][name]), name
