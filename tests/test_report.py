"""judge-audit report: the CSV files and columns of the public interface, reproducibility,
and the TIFA figures through the command itself."""

from __future__ import annotations

import pandas as pd
import pytest

from annotation.cli import main
from tests.helpers.fixture_bundles import TIFA, write_tifa_bundle

COLUMNS = {
    "ratings": ["judge", "criterion", "group", "n_items", "plcc", "plcc_lo", "plcc_hi", "srcc",
                "srcc_lo", "srcc_hi", "kendall", "kendall_lo", "kendall_hi", "mae", "bias"],
    "checklist": ["judge", "group", "n_decisions", "agreement", "agreement_lo", "agreement_hi",
                  "kappa", "ac1", "yes_recall", "no_recall", "judge_yes_human_no",
                  "judge_no_human_yes"],
    "operators": ["judge", "operator", "n_items", "pearson", "spearman", "mae"],
    "reliability": ["criterion", "group", "n_items", "n_annotators", "alpha_interval",
                    "alpha_ordinal", "alpha_nominal", "alpha_lo", "alpha_hi", "pct_agreement",
                    "ac1", "fleiss_kappa", "icc_a1", "icc_ak"],
    "judge_comparisons": ["criterion", "judge_a", "judge_b", "p", "p_bh", "p_by"],
    "checklist_comparisons": ["reference", "judge_a", "judge_b", "n_decisions", "mcnemar_p"],
    "system_level": ["criterion", "judge", "kendall", "pairwise_accuracy"],
    "alt_test": ["criterion", "judge", "winning_rate", "advantage_prob", "passed"],
}


@pytest.mark.slow
def test_report_on_the_demo(tmp_path, capsys, engine_demo):
    db = engine_demo
    out = tmp_path / "report"
    assert main(["report", "--db", str(db), "--out", str(out), "--bootstrap", "200",
                 "--seed", "7", "--by", "generator"]) == 0
    for name, columns in COLUMNS.items():
        table = pd.read_csv(out / f"{name}.csv")
        missing = [c for c in columns if c not in table.columns]
        assert not missing, (name, missing)
        assert len(table) > 0, name
    ratings = pd.read_csv(out / "ratings.csv")
    assert "human (leave-one-out)" in set(ratings.judge)
    assert "ensemble (mean of VLM judges)" in set(ratings.judge)
    html = (out / "report.html").read_text()
    assert "plotly" in html.lower() and "ratings.csv" in html
    # same seed: the same numbers
    again = tmp_path / "again"
    assert main(["report", "--db", str(db), "--out", str(again), "--bootstrap", "200",
                 "--seed", "7", "--by", "generator", "--quiet"]) == 0
    for name in COLUMNS:
        assert (out / f"{name}.csv").read_bytes() == (again / f"{name}.csv").read_bytes(), name
    # a different seed moves the bootstrap intervals, not the estimates
    other = tmp_path / "other"
    assert main(["report", "--db", str(db), "--out", str(other), "--bootstrap", "200",
                 "--seed", "8", "--quiet"]) == 0
    a = pd.read_csv(out / "ratings.csv")
    b = pd.read_csv(other / "ratings.csv")
    a, b = a[a.group == "all"].reset_index(drop=True), b.reset_index(drop=True)
    assert (a.plcc.round(12) == b.plcc.round(12)).all()
    assert not (a.srcc_lo.round(12) == b.srcc_lo.round(12)).all()


def test_report_refuses_an_unknown_grouping(tmp_path, capsys, engine_demo):
    db = engine_demo
    code = main(["report", "--db", str(db), "--out", str(tmp_path / "r"), "--by", "colour",
                 "--bootstrap", "10", "--quiet"])
    assert code == 2
    assert "--by colour" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(not TIFA.exists(), reason="../shared/fixtures/tifa is not at hand")
def test_tifa_published_values_through_the_command(tmp_path, make_engine_db):
    db = make_engine_db("tifa.db")
    assert main(["import", str(write_tifa_bundle(tmp_path / "tifa")), "--db", str(db),
                 "--quiet"]) == 0
    out = tmp_path / "report"
    assert main(["report", "--db", str(db), "--out", str(out), "--bootstrap", "100",
                 "--quiet"]) == 0
    ratings = pd.read_csv(out / "ratings.csv")
    rows = ratings[(ratings.reference == "human mean") & (ratings.group == "all")]
    published = {"bleu": (0.1833, 0.1879), "rouge": (0.3289, 0.2449),
                 "meteor": (0.3397, 0.2741), "spice": (0.3281, 0.2318),
                 "clipscore_vitb32": (0.3318, 0.2314), "tifa_vilt": (0.4932, 0.3824),
                 "tifa_git-large": (0.5445, 0.4255), "tifa_ofa-large": (0.4961, 0.3725),
                 "tifa_blip2-flant5xl": (0.5590, 0.4360),
                 "tifa_mplug-large": (0.5967, 0.4717)}
    for metric, (pearson, kendall) in published.items():
        row = rows[rows.judge == metric].iloc[0]
        assert (round(row.plcc, 4), round(row.kendall, 4)) == (pearson, kendall), metric
    reliability = pd.read_csv(out / "reliability.csv")
    assert round(reliability.alpha_ordinal[0], 4) == 0.7186


@pytest.mark.slow
def test_pair_checklist_pass_rate_with_a_rating(tmp_path, engine_demo):
    from scipy import stats

    from annotation.results.operators import passes
    from annotation.results.study import load_study
    from annotation.store import Store

    db = engine_demo
    out = tmp_path / "r"
    assert main(["report", "--db", str(db), "--out", str(out), "--bootstrap", "50",
                 "--pair", "checklist:text_instruction_following", "--quiet"]) == 0
    ratings = pd.read_csv(out / "ratings.csv")
    rows = ratings[ratings.criterion == "text_instruction_following ~ checklist pass rate"]
    assert set(rows.judge) == {"gpt-5", "gemini-2.5-pro", "qwen3-vl"}
    with Store.open(db) as store:
        study = load_study(store)
    rate = passes(study.judge_answers, study.questions, "judge").groupby(
        ["judge", "output_id"]).passed.mean()["gpt-5"]
    human = study.human_scores[study.human_scores.criterion == "text_instruction_following"]
    mean = human.groupby("output_id").score.mean()
    common = rate.index.intersection(mean.index)
    expected = stats.pearsonr(rate[common], mean[common])[0]
    assert rows[rows.judge == "gpt-5"].plcc.iloc[0] == pytest.approx(expected)
    assert main(["report", "--db", str(db), "--out", str(out), "--pair", "ratings:x",
                 "--quiet"]) == 2
