"""Results of diagnostic-tree review (TRACE-Bench Sec. 4.4, Table 3, Figure 11, Appendix
C.3): against hand-computed values and the krippendorff package; the `judge-audit trees`
CLI end to end on the tree fixture; the admin page."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from annotation.cli import main
from annotation.formats.importers import import_path
from annotation.results import trees as res
from annotation.store import Store
from annotation.work import tree_review as tr
from tests.helpers.apptest import signed_in
from tests.helpers.tree_fixture import write_tree_bundle

P, NAF = tr.PERSISTENT, tr.NOT_A_FAILURE
GR, JC, RA = "Global Reference", "Joint Composition", "Relation / Attribute"
PF = "Persistent Failure"

#: one tree (task t1): N0 -> N1 (Rule 1) -> N2a, N2b (Rule 2); N2a -> N3a1 (Rule 4)
NODES = pd.DataFrame({
    "task_id": "t1", "node": ["N0", "N1", "N2a", "N2b", "N3a1"],
    "parent": [None, "N0", "N1", "N1", "N2a"], "depth": [0, 1, 2, 2, 3],
    "rule": [None, 1, 2, 2, 4], "category": [None, GR, JC, JC, RA], "removed": "",
    "formula": ""})


def _reviews(rows: list[tuple[str, str, str, str]]) -> pd.DataFrame:
    """(reviewer, output_id, instance, origin) -> a current-reviews table of task t1."""
    return pd.DataFrame({
        "review_id": range(1, len(rows) + 1), "reviewer": [r[0] for r in rows],
        "output_id": [r[1] for r in rows], "task_id": "t1", "generator": "m",
        "instance": [r[2] for r in rows], "origin": [r[3] for r in rows],
        "reason": "other", "box": None, "note": None, "created_at": "2026-01-01",
        "submitted": True}).astype({"box": object, "note": object})


def _automatic(rows: list[tuple[str, str, str | None, str, bool]]) -> pd.DataFrame:
    """(output_id, key, auto_origin, category, root_passed) -> an automatic table."""
    return pd.DataFrame(rows, columns=["output_id", "key", "auto_origin", "category",
                                       "root_passed"]).astype({"auto_origin": object})


# ------------------------------------------------------------------ automatic vs human
def test_human_category_follows_the_rule_into_the_node():
    assert res.human_category("N1", 1) == GR
    assert res.human_category("N2a", "2") == JC  # explicit tree_nodes may carry text
    assert res.human_category("N3a1", 4) == RA and res.human_category("x", 3) == RA
    assert res.human_category(P, None) == PF
    assert res.human_category(NAF, None) == "Not a failure"
    assert res.human_category("N0", None) == "Unknown node"  # the root has no rule


def test_auto_vs_human_by_hand():
    # ten failing instances, one per root output o0..o9 (f: o0-o3, g: o4-o9)
    auto = ["N1", "N1", "N1", "N1", "N2a", "N2a", "N2a", P, P, P]
    human = ["N1", "N1", "N1", "N2a", "N2a", "N2a", "N2b", P, P, NAF]
    keys = ["f|f1"] * 4 + ["g|g1"] * 6
    category = {"N1": GR, "N2a": JC, P: PF}
    automatic = _automatic(
        [(f"o{i}", k, a, category[a], False) for i, (k, a) in enumerate(zip(keys, auto))]
        + [("o0", "C|C", None, "Stable Success", True)])
    reviews = _reviews([("r", f"o{i}", k, h) for i, (k, h) in enumerate(zip(keys, human))]
                       + [("r", "o0", "C|C", "N1"),  # the judge passes C at the root
                          ("r", "o0", "f|f9", "N1")])  # no such instance
    pairs = res.review_pairs(reviews, automatic, NODES)
    assert list(pairs.status).count("compared") == 10
    assert pairs.set_index("instance").loc["C|C", "status"] == "passes at the root"
    assert pairs.set_index("instance").loc["f|f9", "status"] == "no automatic result"
    assert list(pairs.human_category[:10]) == [GR, GR, GR, JC, JC, JC, JC, PF, PF,
                                               "Not a failure"]

    table = res.auto_vs_human(pairs).set_index(["level", "operator"])
    node = table.loc[("node", "Overall")]
    assert (node.n, node.n_agree, node.agreement) == (10, 7, pytest.approx(0.7))
    wilson = stats.binomtest(7, 10).proportion_ci(method="wilson")
    assert (node.agreement_lo, node.agreement_hi) == (pytest.approx(wilson.low),
                                                      pytest.approx(wilson.high))
    # rows = automatic, columns = human, labels N1 N2a N2b persistent not_a_failure:
    #   N1         3 1 0 0 0   (4)
    #   N2a        0 2 1 0 0   (3)
    #   persistent 0 0 0 2 1   (3)
    #   columns:   3 3 1 2 1
    # p_o = 0.7, p_e = (4*3 + 3*3 + 3*2) / 100 = 0.27, kappa = 0.43 / 0.73
    assert node.kappa == pytest.approx(0.43 / 0.73)
    assert node.n_labels == 5
    assert node.kappa_lo < node.kappa < node.kappa_hi
    assert (node.n_not_a_failure, node.n_passes_at_root, node.n_no_automatic) == (1, 1, 1)
    # category level: N2b is Joint Composition like N2a, so 8 of 10 agree
    #   GR 3 1 0 0 (4) / JC 0 3 0 0 (3) / PF 0 0 2 1 (3); columns 3 4 2 1
    # p_e = (4*3 + 3*4 + 3*2) / 100 = 0.3, kappa = (0.8 - 0.3) / 0.7 = 5/7
    cat = table.loc[("category", "Overall")]
    assert (cat.n_agree, cat.agreement, cat.kappa) == (8, pytest.approx(0.8),
                                                       pytest.approx(5 / 7))
    # per operator
    assert (table.loc[("node", "f"), "n"], table.loc[("node", "f"), "n_agree"]) == (4, 3)
    assert table.loc[("node", "f"), "kappa"] == pytest.approx(0.0)  # p_o = p_e = 0.75
    assert (table.loc[("node", "g"), "n"], table.loc[("node", "g"), "n_agree"]) == (6, 4)
    assert table.loc[("category", "g"), "n_agree"] == 5
    assert table.loc[("node", "C"), "n"] == 0 and table.loc[("node", "C"),
                                                             "n_passes_at_root"] == 1
    assert math.isnan(table.loc[("node", "C"), "agreement"])
    # case level: ten reviewed trees (one instance each), seven agree everywhere
    case = table.loc[("case", "Overall")]
    assert (case.n, case.n_agree) == (10, 7)


def test_auto_vs_human_case_needs_every_instance():
    automatic = _automatic([("o1", "f|f1", "N1", GR, False), ("o1", "g|g1", P, PF, False)])
    reviews = _reviews([("a", "o1", "f|f1", "N1"), ("a", "o1", "g|g1", P),
                        ("b", "o1", "f|f1", "N1"), ("b", "o1", "g|g1", "N2a")])
    table = res.auto_vs_human(res.review_pairs(reviews, automatic, NODES)).set_index(
        ["level", "operator"])
    assert table.loc[("node", "Overall"), "n_agree"] == 3
    assert (table.loc[("case", "Overall"), "n"], table.loc[("case", "Overall"),
                                                           "n_agree"]) == (2, 1)


def _design_effect_wilson(hits: list[bool], clusters: list[str]) -> tuple[float, float]:
    """Korn & Graubard's interval by hand: statsmodels' cluster-robust variance of the
    share, the design effect against p(1-p)/(n-1), the Wilson interval at n/deff * (z/t)^2."""
    import statsmodels.api as sm

    y = np.asarray(hits, dtype=float)
    codes = pd.factorize(pd.Series(clusters))[0]
    fit = sm.OLS(y, np.ones(y.size)).fit(cov_type="cluster", cov_kwds={"groups": codes})
    n, p, g = y.size, y.mean(), len(set(clusters))
    deff = max(1.0, fit.bse[0] ** 2 / (p * (1 - p) / (n - 1)))
    z, t = stats.norm.ppf(0.975), stats.t.ppf(0.975, g - 1)
    m = n / deff * (z / t) ** 2
    center = (p * m + z * z / 2) / (m + z * z)
    half = z * math.sqrt(m) / (m + z * z) * math.sqrt(p * (1 - p) + z * z / (4 * m))
    return center - half, center + half


def test_auto_vs_human_intervals_count_reviewers_of_one_output_once():
    """Three reviewers on each of twelve outputs agree with each other: the 36 reviews
    hold about twelve outputs' worth of information, and the interval says so (it was the
    Wilson interval of 36 independent reviews)."""
    agree_on = {f"o{i}" for i in range(9)}  # the reviewers agree with the judge on 9 of 12
    automatic = _automatic([(f"o{i}", "f|f1", "N1", GR, False) for i in range(12)])
    reviews = _reviews([(r, f"o{i}", "f|f1", "N1" if f"o{i}" in agree_on else "N2a")
                        for i in range(12) for r in ("a", "b", "c")])
    pairs = res.review_pairs(reviews, automatic, NODES)
    node = res.auto_vs_human(pairs).set_index(["level", "operator"]).loc[("node", "Overall")]
    assert (node.n, node.n_agree) == (36, 27)
    plain = stats.binomtest(27, 36).proportion_ci(method="wilson")
    assert node.agreement_hi - node.agreement_lo > 1.5 * (plain.high - plain.low)
    done = pairs[pairs.status == "compared"]
    lo, hi = _design_effect_wilson(list(done.agree_node), list(done.output_id))
    assert (node.agreement_lo, node.agreement_hi) == (pytest.approx(lo), pytest.approx(hi))


# ------------------------------------------------------------------ human vs human
def test_two_reviewers_kappa_by_hand():
    a = ["N1", "N1", "N2a", "N2a", P, P]
    b = ["N1", "N2a", "N2a", "N2a", P, "N1"]
    reviews = _reviews([("a", f"o{i}", "f|f1", v) for i, v in enumerate(a)]
                       + [("b", f"o{i}", "f|f1", v) for i, v in enumerate(b)]
                       + [("a", "o9", "f|f1", "N1")])  # reviewed once: no pair
    pairs = res.review_pairs(reviews, _automatic([]), NODES)
    table = res.human_agreement(pairs).set_index(["level", "operator"])
    row = table.loc[("node", "Overall")]
    assert (row.n_units, row.n_units_multi, row.n_reviewers) == (7, 6, 2)
    assert (row.n_pairs, row.n_pairs_agree) == (6, 4)
    # rows a, columns b over N1 N2a persistent: 1 1 0 (2) / 0 2 0 (2) / 1 0 1 (2);
    # columns 2 3 1: p_e = (2*2 + 2*3 + 2*1) / 36 = 1/3, kappa = (2/3 - 1/3) / (2/3) = 0.5
    assert row.kappa == pytest.approx(0.5)
    code = {"N1": 0, "N2a": 1, P: 2}
    expected = krippendorff.alpha(reliability_data=[[code[v] for v in a],
                                                    [code[v] for v in b]],
                                  level_of_measurement="nominal")
    assert row.alpha == pytest.approx(expected)
    assert table.loc[("node", "f"), "kappa"] == pytest.approx(0.5)
    # the three nodes are three categories: the same numbers at category level
    assert table.loc[("category", "Overall"), "kappa"] == pytest.approx(0.5)


def test_alpha_matches_the_krippendorff_package_with_three_reviewers():
    rng = np.random.default_rng(11)
    labels = ["N1", "N2a", "N2b", "N3a1", P, NAF]
    rows = []
    for u in range(40):
        truth = labels[rng.integers(len(labels))]
        for who in ("a", "b", "c"):
            if rng.random() < 0.25:
                continue
            value = truth if rng.random() < 0.7 else labels[rng.integers(len(labels))]
            rows.append((who, f"o{u}", "g|g1", value))
    pairs = res.review_pairs(_reviews(rows), _automatic([]), NODES)
    table = res.human_agreement(pairs).set_index(["level", "operator"])
    code = {v: i for i, v in enumerate(labels)}
    wide = pd.DataFrame(rows, columns=["who", "unit", "i", "v"]).assign(
        v=lambda d: d.v.map(code)).pivot(index="unit", columns="who", values="v")
    multi = wide[wide.notna().sum(axis=1) >= 2]
    expected = krippendorff.alpha(reliability_data=multi.to_numpy(dtype=float).T,
                                  level_of_measurement="nominal")
    row = table.loc[("node", "Overall")]
    assert row.alpha == pytest.approx(expected)
    assert math.isnan(row.kappa)  # three reviewers: no Cohen's kappa
    n_pairs = agree = 0
    for _, values in multi.iterrows():
        vals = list(values.dropna())
        for i in range(len(vals)):
            for j in range(i + 1, len(vals)):
                n_pairs += 1
                agree += vals[i] == vals[j]
    assert (row.n_pairs, row.n_pairs_agree) == (n_pairs, agree)
    assert row.n_units_multi == len(multi) and row.n_reviewers == 3
    # category level: N2a and N2b are both Joint Composition, alpha on the categories
    category = {"N1": GR, "N2a": JC, "N2b": JC, "N3a1": RA, P: PF, NAF: "Not a failure"}
    ccode = {c: i for i, c in enumerate(dict.fromkeys(category.values()))}
    cwide = pd.DataFrame(rows, columns=["who", "unit", "i", "v"]).assign(
        v=lambda d: d.v.map(lambda x: ccode[category[x]])).pivot(
        index="unit", columns="who", values="v")
    cmulti = cwide[cwide.notna().sum(axis=1) >= 2]
    assert table.loc[("category", "Overall"), "alpha"] == pytest.approx(krippendorff.alpha(
        reliability_data=cmulti.to_numpy(dtype=float).T, level_of_measurement="nominal"))


def test_failure_reasons_counted_per_operator():
    reviews = _reviews([("a", "o1", "f|f1", "N1"), ("a", "o1", "g|g1", "N2a"),
                        ("a", "o2", "g|g1", NAF), ("b", "o1", "g|g1", "N2a")])
    reviews["reason"] = pd.Series(["identity_inconsistency", "attribute_mismatch", None,
                                   "attribute_mismatch"], dtype=object)
    table = res.failure_reasons(res.review_pairs(reviews, _automatic([]), NODES))
    table = table.set_index(["operator", "reason"])
    assert table.loc[("g", "attribute_mismatch"), "n"] == 2
    assert table.loc[("g", "attribute_mismatch"), "percent"] == pytest.approx(200 / 3)
    assert table.loc[("g", "none"), "n"] == 1
    assert table.loc[("f", "identity_inconsistency"), "percent"] == pytest.approx(100)
    assert table.loc[("Overall", "attribute_mismatch"), "n"] == 2
    assert table.loc[("Overall", "duplication"), "n"] == 0  # every reason listed
    assert table.loc[("g", "source_leakage"), "label"] == "Source leakage → mis-binding"


def test_empty_project_gives_empty_tables(store, example_bundle):
    import_path(store, example_bundle)
    tables = res.tree_tables(store)
    assert set(tables) == set(res.TABLES)
    overall = tables["auto_vs_human"].set_index(["level", "operator"])
    assert overall.loc[("node", "Overall"), "n"] == 0
    assert tables["automatic_localization"].empty and tables["reviews"].empty
    assert res.figure11_chart(tables["figure11"]) is None
    assert res.table3_chart(tables["table3_long"]) is None


# ------------------------------------------------------------------ on a real project
def _project(tmp_path: Path, make_engine_db: Callable[[str], str],
             explicit_nodes: bool = False) -> str:
    db = make_engine_db("p.db")
    with Store.open(db) as store:
        import_path(store, write_tree_bundle(tmp_path / "b", explicit_nodes=explicit_nodes))
    return db


def _review_fixture(store: Store) -> None:
    """r1 and r2 localize the three failures of tr1/m (automatic: g1 and f1⊕g1 at N2a,
    f2 at N1). r1: N2a, N1, N1 (two agree); r2: N2a, not a failure, persistent (one)."""
    tr.give_review(store, "r1", "tr1/m", "g|g1", "N2a", reason="attribute_mismatch")
    tr.give_review(store, "r1", "tr1/m", "⊕|f1⊕g1", "N1", reason="source_leakage")
    tr.give_review(store, "r1", "tr1/m", "f|f2", "N1", reason="identity_inconsistency",
                   note='=HYPERLINK("http://x") looks off')
    tr.give_review(store, "r2", "tr1/m", "g|g1", "N2a", reason="attribute_mismatch",
                   box={"node": "N0", "box": [0.1, 0.2, 0.5, 0.6]})
    tr.give_review(store, "r2", "tr1/m", "⊕|f1⊕g1", NAF)
    tr.give_review(store, "r2", "tr1/m", "f|f2", P, reason="identity_inconsistency")
    tr.submit_tree(store, "r1", "tr1/m")


@pytest.mark.parametrize("explicit_nodes", [False, True], ids=["computed", "explicit"])
def test_bulk_localization_equals_annotation_trees_per_unit(tmp_path, explicit_nodes,
                                                            make_engine_db):
    from annotation.trace import trees

    with Store.open(_project(tmp_path, make_engine_db, explicit_nodes)) as store:
        bulk, problems = res.load_automatic(store, "gpt-5")
        item = trees.load_tree_item(store, "tr1/m")
        one = trees.automatic_localization(store, item, "gpt-5")
    assert problems.empty
    columns = list(one.columns)
    left = bulk[columns].sort_values("key").reset_index(drop=True)
    right = one.sort_values("key").reset_index(drop=True)
    pd.testing.assert_frame_equal(left, right, check_dtype=False)
    assert list(bulk.columns) == res.AUTOMATIC_COLUMNS


def test_a_tree_that_cannot_be_built_is_listed_not_fatal(tmp_path, make_engine_db):
    db = _project(tmp_path, make_engine_db)
    with Store.open(db) as store:
        store.conn.execute("""UPDATE tasks SET meta = '{"formula": "C(f1⊕"}'"""
                           " WHERE task_id = 'tr1'")
        tables = res.tree_tables(store)
    assert list(tables["tree_problems"].output_id) == ["tr1/m"]
    assert tables["automatic_localization"].empty


def test_table3_and_figure11_on_the_fixture(tmp_path, make_engine_db):
    with Store.open(_project(tmp_path, make_engine_db)) as store:
        automatic, problems = res.load_automatic(store)
    assert problems.empty
    auto = automatic.set_index("key")
    assert auto.loc["f|f2", "auto_origin"] == "N1" and auto.loc["g|g1", "auto_origin"] == "N2a"
    assert auto.loc["f|f1", "auto_origin"] is None  # a Stable Success has no origin
    assert set(automatic.judge) == {"gpt-5"} and set(automatic.generator) == {"m"}
    # six instances: f1, g_style, C pass at the root; f2 -> N1 (Rule 1), g1 and f1⊕g1 ->
    # N2a (Rule 2)
    t3 = res.table3(automatic).set_index("Outcome / Source")
    assert t3.loc["Stable Success", "f"] == pytest.approx(50)
    assert t3.loc["Global Reference", "f"] == pytest.approx(50)
    assert t3.loc["Joint Composition", "⊕"] == pytest.approx(100)
    assert t3.loc["Joint Composition", "Overall"] == pytest.approx(100 * 2 / 6)
    assert t3.loc["Persistent Failure", "Overall"] == pytest.approx(0)
    # Figure 11: f2 passes at relative depth 1/3 (N1 on N0 > N1 > N2b), g1 at 2/3
    curve = res.figure11(automatic).set_index(["operator", "rel_depth"])["pass_rate"]
    assert curve[("f", 0.0)] == pytest.approx(0.5)
    assert curve[("f", 1 / 3)] == pytest.approx(1.0)
    assert curve[("g", 1 / 3)] == pytest.approx(0.5) and curve[("g", 2 / 3)] == 1.0
    assert curve[("Overall", 1 / 3)] == pytest.approx(4 / 6)
    assert res.figure11_chart(res.figure11(automatic)) is not None
    assert res.table3_chart(res.table3_long(automatic)) is not None


@pytest.mark.parametrize("explicit_nodes", [False, True], ids=["computed", "explicit"])
def test_cli_writes_the_tables_and_reviews(tmp_path, capsys, explicit_nodes, make_engine_db):
    db = _project(tmp_path, make_engine_db, explicit_nodes)
    with Store.open(db) as store:
        before = res.data_stamp(store)
        _review_fixture(store)
        assert res.data_stamp(store) != before
    out = tmp_path / "out"
    assert main(["trees", "--db", str(db), "--out", str(out), "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    assert {p.name for p in out.iterdir()} == {"reviews.jsonl", "cases", "cases.html",
                                               *(f"{t}.csv" for t in res.TABLES)}
    agreement = pd.read_csv(out / "auto_vs_human.csv").set_index(["level", "operator"])
    node = agreement.loc[("node", "Overall")]
    assert (node.n, node.n_agree, node.n_not_a_failure) == (6, 3, 1)
    # automatic N1 N1 N2a N2a N2a N2a vs human N1 persistent N2a N2a N1 not_a_failure:
    # p_o = 1/2, p_e = (2*2 + 4*2) / 36 = 1/3, kappa = (1/2 - 1/3) / (2/3) = 1/4
    assert node.kappa == pytest.approx(0.25)
    assert agreement.loc[("node", "g"), "agreement"] == pytest.approx(1.0)
    assert agreement.loc[("node", "⊕"), "n_agree"] == 0
    assert (agreement.loc[("case", "Overall"), "n"],
            agreement.loc[("case", "Overall"), "n_agree"]) == (2, 0)
    humans = pd.read_csv(out / "human_agreement.csv").set_index(["level", "operator"])
    row = humans.loc[("node", "Overall")]
    assert (row.n_units_multi, row.n_pairs, row.n_pairs_agree) == (3, 3, 1)
    # r1 N1 N2a N1 vs r2 persistent N2a not_a_failure: p_o = 1/3, p_e = 1/9, kappa = 1/4
    assert row.kappa == pytest.approx(0.25)
    records = [json.loads(line) for line in (out / "reviews.jsonl").read_text().splitlines()]
    assert len(records) == 6
    by = {(r["reviewer"], r["instance"]): r for r in records}
    f2 = by[("r1", "f|f2")]
    assert (f2["task_id"], f2["output_id"], f2["origin"]) == ("tr1", "tr1/m", "N1")
    assert (f2["automatic_origin"], f2["automatic_category"]) == ("N1", GR)
    assert f2["note"].startswith("=HYPERLINK") and f2["submitted"] is True
    assert by[("r2", "g|g1")]["box"] == {"node": "N0", "box": [0.1, 0.2, 0.5, 0.6]}
    assert by[("r2", "⊕|f1⊕g1")]["reason"] is None
    assert by[("r2", "f|f2")]["human_category"] == PF
    assert {"reviewer", "task_id", "output_id", "instance", "origin", "reason", "box",
            "note", "automatic_origin", "automatic_category"} <= set(f2)
    # formula injection neutralized in the CSV, kept as it is in the JSONL
    text = (out / "reviews.csv").read_text(encoding="utf-8")
    assert "'=HYPERLINK" in text
    reviews = pd.read_csv(out / "reviews.csv")
    assert not reviews.note.dropna().str.startswith("=").any()
    reasons = pd.read_csv(out / "failure_reasons.csv").set_index(["operator", "reason"])
    assert reasons.loc[("Overall", "identity_inconsistency"), "n"] == 2
    t3 = pd.read_csv(out / "table3.csv").set_index("Outcome / Source")
    assert t3.loc["Global Reference", "f"] == pytest.approx(50)
    progress = pd.read_csv(out / "reviewer_progress.csv").set_index("reviewer")
    assert progress.loc["r1", "submitted"] == 1 and progress.loc["r2", "submitted"] == 0
    assert progress.loc["r2", "not_a_failure"] == 1 and progress.loc["r2", "with_box"] == 1


def test_cli_refuses_a_missing_database(tmp_path, capsys):
    # SQLite-only by nature: a missing database file is refused and no file is made
    missing = tmp_path / "none.db"
    assert main(["trees", "--db", str(missing), "--out", str(tmp_path / "o")]) == 1
    assert "no such database" in capsys.readouterr().err
    assert not missing.exists()


def test_progress_counts_towards_the_overlap(tmp_path, make_engine_db):
    with Store.open(_project(tmp_path, make_engine_db)) as store:
        assert res.overall_progress(store) == (0, 1, 1)
        _review_fixture(store)
        tr.submit_tree(store, "r2", "tr1/m")
        assert res.overall_progress(store) == (1, 1, 1)  # overlap 1: the second is extra
        tr.set_settings(store, "admin", overlap=3)
        assert res.overall_progress(store) == (2, 3, 1)


# ------------------------------------------------------------------ the admin page
@pytest.mark.slow
def test_admin_page_shows_results_and_refuses_annotators(tmp_path, monkeypatch, make_engine_db):

    from tests.helpers.bundles import ensure_account

    db = _project(tmp_path, make_engine_db)
    with Store.open(db) as store:
        _review_fixture(store)
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    page = str(Path(__file__).resolve().parents[1] / "pages" / "tree_results.py")
    for name, role in (("boss", "admin"), ("r1", "annotator")):
        ensure_account(db, name, role)
    at = signed_in(page, "boss", "admin")
    at.run()
    assert not at.exception
    assert at.title[0].value == "Tree localization"
    # per reviewer + eight result tables + the false passes and the judge-passed instances
    # + the consensus (adjudicated) localization (issue #16)
    assert len(at.dataframe) == 12
    assert len(at.get("plotly_chart")) == 2  # Table 3 and Figure 11
    assert at.metric[0].value == "50.0%"
    assert at.metric[3].value == "1"
    at.number_input[0].set_value(2)
    at.selectbox[0].set_value("gpt-5")
    at.button[0].click().run()  # the settings form's Save
    assert not at.exception
    with Store.open(db) as store:
        settings = tr.get_settings(store)
    assert (settings.overlap, settings.judge) == (2, "gpt-5")
    refused = signed_in(page, "r1")
    refused.run()
    assert [e.value for e in refused.error] == ["This page is for admins only."]
    assert not refused.dataframe
