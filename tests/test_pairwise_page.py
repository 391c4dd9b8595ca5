"""Pairs and rankings on the Judge validation page (pages/analytics.py, issue #17): the
section *Pairwise preferences* on the demo, its absence on a project without pairs, a
pairs-only project (GenAI-Arena style) reaching the section; and the demo's pairwise
statistics in the report (the four CSVs and report.html), checked against reference
implementations (scikit-learn, choix, scipy) computed from the demo's bundle files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from streamlit.testing.v1 import AppTest

from annotation.cli.main import main as cli
from annotation.formats.importers import import_path
from annotation.project_files import DEMO_BUNDLE
from annotation.stats.rankings import ALPHA
from annotation.store import Store
from tests.helpers.adjudication_fixture import write_tie_bundle
from tests.helpers.apptest import signed_in
from tests.helpers.pair_fixture import pair_bundle

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "analytics.py")
N_BOOT = 20
TAB = "Pairwise preferences"


def page_as_admin(db: Path) -> AppTest:
    at = signed_in(PAGE, "admin", "admin", db=db, timeout=180)
    at.session_state["an_n_boot"] = N_BOOT
    return at


def _lines(name: str) -> list[dict]:
    text = (DEMO_BUNDLE / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _demo_by_hand() -> tuple[dict[str, tuple[str, str]], dict[str, str],
                             dict[str, dict[str, str | None]]]:
    """From the demo's files, without our code: each pair's outputs, the human reference
    (the strict majority of each annotator's last answer) and each judge's verdicts."""
    pairs = {p["pair_id"]: (p["output_a"], p["output_b"]) for p in _lines("pairs.jsonl")}
    current: dict[tuple[str, str], str] = {}
    for a in sorted((a for a in _lines("annotations.jsonl") if "pair_id" in a),
                    key=lambda a: a["created_at"]):
        current[(a["annotator"], a["pair_id"])] = a["preference"]
    votes: dict[str, list[str]] = {}
    for (_who, pair), pref in current.items():
        votes.setdefault(pair, []).append(pref)
    reference = {}
    for pair, given in votes.items():
        best, n = Counter(given).most_common(1)[0]
        if 2 * n > len(given):
            reference[pair] = best
    verdicts: dict[str, dict[str, str | None]] = {}
    for j in _lines("judgments.jsonl"):
        if "pair_id" in j:
            verdicts.setdefault(j["judge"], {})[j["pair_id"]] = j["preference"]
    return pairs, reference, verdicts


# ------------------------------------------------------------------------ the page
@pytest.mark.slow
def test_the_demo_page_shows_the_pairwise_section_with_tables(served_demo):
    at = page_as_admin(served_demo).run()
    assert not at.exception
    labels = [t.label for t in at.tabs]
    assert TAB in labels and labels[-1] == "Disagreements"
    tab = at.tabs[labels.index(TAB)]
    assert "Pairwise preferences" in [h.value for h in tab.subheader]
    frames = [df.value for df in tab.dataframe]
    judges = next(f for f in frames if "accuracy, unparsed = miss [95% CI]" in f.columns)
    assert list(judges.judge) == ["gpt-5", "qwen3-vl"]
    qwen = judges.set_index("judge").loc["qwen3-vl"]
    assert qwen.n_unparsed == 1 and qwen["kappa (4 classes) [95% CI]"].count("[") == 1
    position = next(f for f in frames if "first shown preferred [95% CI]" in f.columns
                    and "judge" in f.columns).set_index("judge")
    assert position.loc["gpt-5"].n_both_orders == 3
    assert 0 <= position.loc["gpt-5", "order consistency"] < 1
    assert position.loc["qwen3-vl"].n_both_orders == 0
    confusion = next(f for f in frames if "unparsed" in f.columns)
    assert list(confusion["human reference"]) == ["a", "b", "tie", "both_bad"]
    assert confusion.drop(columns="human reference").to_numpy().sum() > 0
    humans = next(f for f in frames if "alpha (nominal)" in f.columns)
    assert humans["annotators"].iloc[0] == 3
    strengths = next(f for f in frames if "generator" in f.columns and "humans" in f.columns)
    assert set(strengths.generator) == {"nano-banana", "gpt-image-1", "qwen-image-edit"}
    assert {"gpt-5", "qwen3-vl"} <= set(strengths.columns)
    taus = next(f for f in frames if "kendall_tau_b" in f.columns)
    assert list(taus.judge) == ["gpt-5", "qwen3-vl"]
    rankings = next(f for f in frames if "statistic" in f.columns)
    assert {"kendall_w", "spearman"} <= set(rankings.statistic)
    assert all(len(f) for f in frames)
    # the other judge's confusion matrix on choosing it
    at.selectbox(key="an_pw_judge").set_value("qwen3-vl").run()
    assert not at.exception
    tab = at.tabs[[t.label for t in at.tabs].index(TAB)]
    confusion = next(df.value for df in tab.dataframe if "unparsed" in df.value.columns)
    assert confusion.set_index("human reference").unparsed.sum() == 1


@pytest.mark.slow
def test_no_pairwise_section_on_a_project_without_pairs(tmp_path, monkeypatch, engine_db):
    db = engine_db
    with Store.open(db) as store:
        import_path(store, write_tie_bundle(tmp_path / "bundle"))
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    at = page_as_admin(db).run()
    assert not at.exception
    labels = [t.label for t in at.tabs]
    assert labels == ["Ratings", "Checklist", "Reliability", "Judges compared",
                      "Disagreements"]
    assert "Pairwise preferences" not in [h.value for h in at.subheader]


@pytest.mark.slow
def test_a_pairs_only_project_reaches_the_pairwise_section(tmp_path, monkeypatch,
                                                           engine_db):
    """Before: a project whose only answers are on pairs (an imported GenAI-Bench) was
    stopped with 'No human answers yet'."""
    db = engine_db
    with Store.open(db) as store:
        import_path(store, pair_bundle(tmp_path / "bundle"))
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    at = page_as_admin(db).run()
    assert not at.exception
    assert not [i.value for i in at.info if "No human answers yet" in i.value]
    labels = [t.label for t in at.tabs]
    tab = at.tabs[labels.index(TAB)]
    judges = next(df.value for df in tab.dataframe
                  if "accuracy, unparsed = miss [95% CI]" in df.value.columns)
    assert list(judges.judge) == ["judge_1", "judge_2"]


# --------------------------------------------------------------- the demo's report
@pytest.fixture(scope="module")
def demo_report(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("demo-pairs")
    db = tmp / "demo.db"
    with Store.open(db) as store:
        import_path(store, DEMO_BUNDLE)
    out = tmp / "report"
    assert cli(["report", "--db", str(db), "--out", str(out), "--bootstrap", "100"]) == 0
    return out


@pytest.mark.slow
def test_the_demo_report_writes_the_four_pairwise_csvs_with_rows(demo_report):
    for name in ("pairwise", "pairwise_confusion", "pairwise_rankings", "rankings"):
        table = pd.read_csv(demo_report / f"{name}.csv")
        assert len(table) > 0, name
    table = pd.read_csv(demo_report / "pairwise.csv").set_index("rater")
    assert set(table.index) == {"gpt-5", "qwen3-vl", "humans"}
    assert table.loc["qwen3-vl"].n_unparsed == 1 and table.loc["gpt-5"].n_unparsed == 0
    assert table.loc["gpt-5"].n_both_orders == 3
    assert table.loc["gpt-5"].order_consistency < 1  # position consistency shows
    # ten tasks: the cluster bootstrap gives intervals
    assert table.loc["gpt-5"].accuracy_all_lo < table.loc["gpt-5"].accuracy_all


@pytest.mark.slow
def test_the_demo_report_html_holds_the_pairwise_section(demo_report):
    html = (demo_report / "report.html").read_text(encoding="utf-8")
    for caption in ("Pairwise judges against the human preference",
                    "Pairwise judges&#x27; position bias",
                    "Pairwise: the humans among themselves",
                    "Pairwise confusion matrix of gpt-5", "Pairwise confusion matrix of qwen3-vl",
                    "Bradley-Terry strengths of the generators",
                    "Kendall tau-b between each judge",
                    "Ranking items: Kendall&#x27;s W among the annotators"):
        assert caption in html, caption


@pytest.mark.slow
def test_the_demo_accuracies_and_kappa_against_scikit_learn(demo_report):
    metrics = pytest.importorskip("sklearn.metrics")
    _pairs, reference, verdicts = _demo_by_hand()
    table = pd.read_csv(demo_report / "pairwise.csv").set_index("rater")
    for judge, given in verdicts.items():
        on = [p for p in given if p in reference]
        parsed = [p for p in on if given[p] is not None]
        row = table.loc[judge]
        assert row.n_pairs == len(on)
        assert row.accuracy_all == pytest.approx(
            sum(given[p] == reference[p] for p in on) / len(on))
        assert row.accuracy_parsed == pytest.approx(metrics.accuracy_score(
            [reference[p] for p in parsed], [given[p] for p in parsed]))
        assert row.kappa == pytest.approx(metrics.cohen_kappa_score(
            [reference[p] for p in parsed], [given[p] for p in parsed]))
        merged = {"a": "a", "b": "b", "tie": "none", "both_bad": "none", None: "unparsed"}
        assert row.accuracy_ties_merged == pytest.approx(
            sum(merged[given[p]] == merged[reference[p]] for p in on) / len(on))
    # the lenient qwen3-vl: ties merged counts its 'tie' on a both-bad pair as right
    assert table.loc["qwen3-vl"].accuracy_ties_merged > table.loc["qwen3-vl"].accuracy_all


@pytest.mark.slow
def test_the_demo_bradley_terry_and_kendall_tau_against_choix_and_scipy(demo_report):
    choix = pytest.importorskip("choix")
    pairs, _reference, verdicts = _demo_by_hand()
    table = pd.read_csv(demo_report / "pairwise_rankings.csv")
    generators = sorted(set(table.generator))
    index = {g: i for i, g in enumerate(generators)}

    def fit(prefs: list[tuple[str, str | None]]) -> np.ndarray:
        data = []  # a win once; a tie as half a win each way: both directions, weight 1/2
        for pair, pref in prefs:
            a, b = (index[o.split("/")[1]] for o in pairs[pair])
            if pref == "a":
                data += [(a, b), (a, b)]
            elif pref == "b":
                data += [(b, a), (b, a)]
            elif pref == "tie":
                data += [(a, b), (b, a)]
        theta = choix.opt_pairwise(len(generators), data, alpha=2 * ALPHA, tol=1e-12)
        return theta - theta.mean()

    current: dict[tuple[str, str], str] = {}
    for a in sorted((a for a in _lines("annotations.jsonl") if "pair_id" in a),
                    key=lambda a: a["created_at"]):
        current[(a["annotator"], a["pair_id"])] = a["preference"]
    humans = fit([(p, v) for (_who, p), v in current.items()])
    shown = table[table.rater == "humans"].set_index("generator").loc[generators]
    assert shown.strength.to_numpy() == pytest.approx(humans, abs=1e-5)
    for judge, given in verdicts.items():
        theta = fit(list(given.items()))
        rows = table[table.rater == judge].set_index("generator").loc[generators]
        assert rows.strength.to_numpy() == pytest.approx(theta, abs=1e-5)
        tau = stats.kendalltau(humans, theta, variant="b")
        assert rows.kendall_tau_b.iloc[0] == pytest.approx(tau.statistic)


@pytest.mark.slow
def test_the_demo_rankings_spearman_against_scipy(demo_report):
    table = pd.read_csv(demo_report / "rankings.csv", keep_default_na=False, na_values=[""])
    items = {r["ranking_id"]: r["outputs"] for r in _lines("rankings.jsonl")}
    assert 1 <= len(items) <= 2

    def ranks(order: list, outputs: list[str]) -> list[float]:
        flat = [o for place in order for o in (place if isinstance(place, list) else [place])]
        positions = np.array([flat.index(o) for o in outputs], dtype=float)
        for place in order:  # tied outputs share their mean position
            if isinstance(place, list):
                shared = np.mean([flat.index(o) for o in place])
                for o in place:
                    positions[outputs.index(o)] = shared
        return list(positions + 1)

    answers = [a for a in _lines("annotations.jsonl") if "ranking_id" in a]
    judged = [j for j in _lines("judgments.jsonl") if "ranking_id" in j]
    for ranking_id, outputs in items.items():
        human = np.array([ranks(a["order"], outputs) for a in answers
                          if a["ranking_id"] == ranking_id])
        assert len(human) >= 2
        assert any(isinstance(p, list) for a in answers for p in a["order"])  # a tie
        for j in (j for j in judged if j["ranking_id"] == ranking_id):
            row = table[(table.ranking_id == ranking_id) & (table.statistic == "spearman")
                        & (table.judge == j["judge"])].iloc[0]
            expected = stats.spearmanr(human.mean(axis=0), ranks(j["order"], outputs))
            assert row.value == pytest.approx(expected.statistic)
        # tie-corrected Kendall's W is Friedman's (tie-corrected) chi2 / (m (n - 1))
        friedman = stats.friedmanchisquare(*human.T)
        m, n = human.shape
        w = table[(table.ranking_id == ranking_id) & (table.statistic == "kendall_w")]
        assert w.value.iloc[0] == pytest.approx(friedman.statistic / (m * (n - 1)))
        assert w.p_value.iloc[0] == pytest.approx(friedman.pvalue)
