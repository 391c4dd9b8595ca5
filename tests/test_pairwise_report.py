"""Pairwise and ranking tables end to end (issue #17): bundle -> store -> ``judge-audit
report`` CSVs and report.html, checked against hand counts and reference implementations;
and GenAI-Bench's judge results through a bundle reproduce its leaderboard accuracy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from annotation.cli.main import main as cli
from annotation.formats.importers import import_path
from annotation.results.report import TABLES
from annotation.stats.rankings import ALPHA
from annotation.store import Store
from scripts.genai_arena_bundle import convert
from tests.helpers.pair_fixture import PAIRS, pair_bundle

choix = pytest.importorskip("choix")
krippendorff = pytest.importorskip("krippendorff")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("pairs")
    db = tmp / "a.db"
    with Store.open(db) as store:
        import_path(store, pair_bundle(tmp / "bundle"))
    out = tmp / "report"
    assert cli(["report", "--db", str(db), "--out", str(out), "--bootstrap", "200"]) == 0
    return out


def _human() -> dict[str, str]:
    """The fixture's human preference per pair, by hand: A (the lower generator name) is
    better, except the swapped pair, a tie and a both-bad."""
    ref = {pid: ("a" if a < b else "b") for pid, (a, b) in PAIRS.items()}
    ref["pt2yz"], ref["pt3xz"] = "tie", "both_bad"
    return ref


def test_the_report_lists_the_new_tables_last(report):
    assert TABLES[-4:] == ("pairwise", "pairwise_confusion", "pairwise_rankings", "rankings")
    for name in TABLES[-4:]:
        assert (report / f"{name}.csv").is_file()
    html = (report / "report.html").read_text(encoding="utf-8")
    assert "Pairwise judges against the human preference" in html
    assert "Bradley-Terry strengths of the generators" in html


def test_pairwise_accuracies_by_hand_and_kappa_against_scikit_learn(report):
    table = pd.read_csv(report / "pairwise.csv").set_index("rater")
    ref = _human()
    n = len(ref)
    # judge_1 agrees with the humans except on pt4xy
    j1 = table.loc["judge_1"]
    assert j1.accuracy_all == pytest.approx((n - 1) / n)
    assert j1.n_unparsed == 0
    # judge_2 always says 'a' (unparsed on pt3yz): right where the humans say 'a'
    j2 = table.loc["judge_2"]
    right = sum(v == "a" for p, v in ref.items() if p != "pt3yz")
    assert j2.accuracy_all == pytest.approx(right / n)
    assert j2.accuracy_parsed == pytest.approx(right / (n - 1))
    assert j2.n_unparsed == 1
    verdict = {p: "a" for p in ref if p != "pt3yz"}
    assert j2.kappa == pytest.approx(cohen_kappa_score(
        [ref[p] for p in verdict], list(verdict.values())))
    merged = {"a": "a", "b": "b", "tie": "none", "both_bad": "none"}
    assert j2.accuracy_ties_merged == pytest.approx(
        sum(merged[ref[p]] == "a" for p in verdict) / n)
    # position bias: judge_2's decided verdicts are all 'a'; the swapped pair is
    # answered inconsistently by judge_2 and consistently by judge_1
    assert j2.first_shown_share == 1.0 and j2.n_decided == n - 1
    assert (j1.n_both_orders, j1.order_consistency) == (1, 1.0)
    assert (j2.n_both_orders, j2.order_consistency) == (1, 0.0)
    confusion = pd.read_csv(report / "pairwise_confusion.csv")
    cell = confusion.set_index(["judge", "reference", "verdict"]).n
    assert cell["judge_2", "b", "unparsed"] + cell["judge_2", "a", "unparsed"] == 1
    assert cell["judge_1", "a", "b"] == 1
    assert confusion.groupby("judge").n.sum().to_dict() == {"judge_1": n, "judge_2": n}


def test_human_agreement_against_the_krippendorff_package(report):
    humans = pd.read_csv(report / "pairwise.csv").set_index("rater").loc["humans"]
    codes = {"a": 0, "b": 1, "tie": 2, "both_bad": 3}
    ref = _human()
    data = np.array([[codes[ref[p]] for p in ref]] * 2, dtype=float)  # both agree
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert humans.alpha == pytest.approx(expected)
    assert humans.pct_agreement == 1.0 and humans.n_annotators == 2
    # ann1 saw output A on the left, ann2 on the right: half of the decided answers
    # prefer the left output
    assert humans.first_shown_share == pytest.approx(0.5)


def test_bradley_terry_from_the_humans_equals_choix(report):
    table = pd.read_csv(report / "pairwise_rankings.csv")
    humans = table[table.rater == "humans"].set_index("generator")
    index = {"gen_x": 0, "gen_y": 1, "gen_z": 2}
    data = []  # both annotators' current answers; a win twice, a tie once each way
    for pid, pref in _human().items():
        a, b = (index[o.split("/")[1]] for o in PAIRS[pid])
        for _ in range(2):  # two annotators
            if pref == "tie":
                data += [(a, b), (b, a)]
            elif pref in ("a", "b"):
                data += [(a, b)] * 2 if pref == "a" else [(b, a)] * 2
    fit = choix.opt_pairwise(3, data, alpha=2 * ALPHA, tol=1e-12)
    fit = fit - fit.mean()
    assert humans.loc[["gen_x", "gen_y", "gen_z"], "strength"].to_numpy() == pytest.approx(
        fit, abs=1e-5)
    judge_1 = table[table.rater == "judge_1"].set_index("generator")
    tau = stats.kendalltau(humans.strength.sort_index(), judge_1.strength.sort_index())
    assert judge_1.kendall_tau_b.iloc[0] == pytest.approx(tau.statistic)


def test_rankings_kendall_w_by_hand_and_spearman_against_scipy(report):
    table = pd.read_csv(report / "rankings.csv", keep_default_na=False, na_values=[""])
    w = table[(table.ranking_id == "rt1") & (table.statistic == "kendall_w")].iloc[0]
    # ann1 ranks x, y, z as 1, 2, 3; ann2 as 1, 2.5, 2.5: rank sums 2, 4.5, 5.5 about 4,
    # S = 4 + 0.25 + 2.25 = 6.5; T = 2^3 - 2 = 6; W = 12 * 6.5 / (4 * 24 - 2 * 6)
    assert w.value == pytest.approx(78 / 84)
    rho = table[(table.ranking_id == "rt1") & (table.statistic == "spearman")].iloc[0]
    expected = stats.spearmanr([1, 2.25, 2.75], [2, 1, 3]).statistic
    assert rho.judge == "judge_1" and rho.value == pytest.approx(expected)
    overall = table[(table.ranking_id == "all") & (table.statistic == "spearman_generators")]
    assert overall.value.iloc[0] == pytest.approx(expected)  # every task alike


def test_a_project_without_pairs_has_empty_tables_with_their_columns(tmp_path, make_engine_db):
    db = make_engine_db("empty.db")
    Store.open(db).close()
    out = tmp_path / "report"
    assert cli(["report", "--db", str(db), "--out", str(out), "--bootstrap", "0"]) == 0
    for name in ("pairwise", "pairwise_confusion", "pairwise_rankings", "rankings"):
        table = pd.read_csv(out / f"{name}.csv")
        assert table.empty and len(table.columns) > 2, name


# ------------------------------------------------------------------- GenAI-Arena
VOTES = ["leftvote", "rightvote", "tievote", "bothbad_vote"]
JUDGE_A = ["[[A>B]]", "[[B>A]]", "[[A=B=Good]]", "[[A=B=Bad]]", "[[B>A]]", "I think A",
           "[[A=B=Good]]", "[[A=B=Bad]]", "[[A>B]]", "[[B>A]]", "[[B>A]]", "[[A>B]]"]
JUDGE_B = ["[[A>B]]"] * 12


def _results(root: Path, judge: str, verdicts: list[str]) -> Path:
    """A judge's results in GenAI-Bench's shape, with the ``correct`` flag its
    leaderboard averages."""
    names = {"[[A>B]]": "leftvote", "[[B>A]]": "rightvote", "[[A=B=Good]]": "tievote",
             "[[A=B=Bad]]": "bothbad_vote"}
    path = root / judge / "pairwise.jsonl"
    path.parent.mkdir(parents=True)
    lines = []
    for idx, verdict in enumerate(verdicts):
        human = VOTES[idx % 4]
        lines.append({"idx": idx, "prompt": f"prompt {idx}", "response": verdict,
                      "model_vote": verdict, "human_vote": human,
                      "correct": names.get(verdict) == human})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_genai_bench_results_reproduce_the_leaderboard_accuracy(tmp_path, make_engine_db):
    files = [_results(tmp_path / "results", "judge-a", JUDGE_A),
             _results(tmp_path / "results", "judge-b", JUDGE_B)]
    bundle = tmp_path / "bundle"
    assert convert(files, bundle) == {"pairs": 12, "judgments": 24}
    db = make_engine_db("g.db")
    with Store.open(db) as store:
        import_path(store, bundle)
    out = tmp_path / "report"
    assert cli(["report", "--db", str(db), "--out", str(out), "--bootstrap", "0"]) == 0
    table = pd.read_csv(out / "pairwise.csv").set_index("rater")
    for path in files:
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        leaderboard = np.mean([x["correct"] for x in lines])  # GenAI-Bench's accuracy
        assert table.loc[path.parent.name, "accuracy_all"] == pytest.approx(leaderboard)
    # by hand: judge-a is right on 0-3 and 6-9 (8 of 12), 'I think A' is unparsed;
    # judge-b ('A' always) on the three leftvotes
    assert table.loc["judge-a", "accuracy_all"] == pytest.approx(8 / 12)
    assert table.loc["judge-a", "n_unparsed"] == 1
    assert table.loc["judge-a", "accuracy_parsed"] == pytest.approx(8 / 11)
    assert table.loc["judge-b", "accuracy_all"] == pytest.approx(3 / 12)


def test_the_converter_refuses_files_that_disagree(tmp_path):
    a = _results(tmp_path / "r", "judge-a", JUDGE_A)
    b = _results(tmp_path / "r", "judge-b", JUDGE_B)
    lines = b.read_text().splitlines()
    changed = json.loads(lines[2])
    changed["human_vote"] = "leftvote"
    lines[2] = json.dumps(changed)
    b.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"pairwise.jsonl:3: pair 2 has another"):
        convert([a, b], tmp_path / "bundle")
