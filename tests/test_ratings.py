"""ratings.csv rows: judge vs human mean, the like-for-like human baseline, the ensemble."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from annotation.formats.importers import import_path
from annotation.results.ratings import ENSEMBLE, HUMAN_LOO, ratings_table
from annotation.results.study import load_study
from annotation.store import Store
from tests.helpers.fixture_bundles import TIFA, TIFA_METRICS, write_tifa_bundle

# TIFA v1.0, PUBLISHED.md: published "rho" (= Pearson) and Kendall tau-b per metric
TIFA_PUBLISHED = {
    "bleu": (0.1833, 0.1879), "rouge": (0.3289, 0.2449), "meteor": (0.3397, 0.2741),
    "spice": (0.3281, 0.2318), "clipscore_vitb32": (0.3318, 0.2314),
    "tifa_vilt": (0.4932, 0.3824), "tifa_git-large": (0.5445, 0.4255),
    "tifa_ofa-large": (0.4961, 0.3725), "tifa_blip2-flant5xl": (0.5590, 0.4360),
    "tifa_mplug-large": (0.5967, 0.4717),
}


@pytest.mark.slow
@pytest.mark.skipif(not TIFA.exists(), reason="../shared/fixtures/tifa is not at hand")
def test_tifa_reproduces_the_20_published_values(tmp_path, make_engine_db):
    bundle = write_tifa_bundle(tmp_path / "tifa")
    with Store.open(make_engine_db("tifa.db")) as store:
        import_path(store, bundle)
        table = ratings_table(load_study(store), n_boot=200, seed=1)
    mean_ref = table[(table.reference == "human mean") & (table.group == "all")]
    assert set(mean_ref.judge) == set(TIFA_METRICS)
    for metric, (pearson, kendall) in TIFA_PUBLISHED.items():
        row = mean_ref[mean_ref.judge == metric].iloc[0]
        assert row.n_items == 800
        assert round(row.plcc, 4) == pearson, metric
        assert round(row.kendall, 4) == kendall, metric
        assert row.plcc_lo < row.plcc < row.plcc_hi
        assert np.isnan(row.mae)  # metrics live on their own scale: no MAE against 1-5


@pytest.mark.slow
def test_rows_against_scipy_and_the_like_for_like_baseline(tmp_path, engine_demo):
    db = engine_demo
    with Store.open(db) as store:
        study = load_study(store)
    table = ratings_table(study, n_boot=100, seed=3, by="generator")
    crit = "visual_quality"
    human = study.human_scores[study.human_scores.criterion == crit]
    mean = human.groupby("output_id").score.mean()
    judge = study.judge_scores[(study.judge_scores.judge == "gpt-5")
                               & (study.judge_scores.criterion == crit)].set_index("output_id")
    common = mean.index.intersection(judge.index)
    row = table[(table.judge == "gpt-5") & (table.criterion == crit) & (table.group == "all")
                & (table.reference == "human mean")].iloc[0]
    assert row.n_items == len(common)
    assert row.plcc == pytest.approx(stats.pearsonr(judge.score[common], mean[common])[0])
    assert row.srcc == pytest.approx(stats.spearmanr(judge.score[common], mean[common])[0])
    assert row.kendall == pytest.approx(stats.kendalltau(judge.score[common], mean[common])[0])
    assert row.mae == pytest.approx(np.mean(np.abs(judge.score[common] - mean[common])))
    assert row.bias == pytest.approx(np.mean(judge.score[common] - mean[common]))
    # leave-one-out: recomputed by hand
    pairs = []
    for (output, annotator), score in human.set_index(["output_id", "annotator"]).score.items():
        others = human[(human.output_id == output) & (human.annotator != annotator)].score
        if len(others):
            pairs.append((output, score, others.mean()))
    pairs = pd.DataFrame(pairs, columns=["output_id", "score", "others"])
    loo = table[(table.judge == HUMAN_LOO) & (table.criterion == crit)
                & (table.group == "all")].iloc[0]
    assert loo.n_items == pairs.output_id.nunique()
    assert loo.plcc == pytest.approx(stats.pearsonr(pairs.score, pairs.others)[0])
    judge_loo = table[(table.judge == "gpt-5") & (table.criterion == crit)
                      & (table.group == "all") & (table.reference == "leave-one-out mean")]
    jl = pairs[pairs.output_id.isin(judge.index)]
    assert judge_loo.iloc[0].plcc == pytest.approx(
        stats.pearsonr(judge.score[jl.output_id], jl.others)[0])
    # the ensemble and the average are rows of their own; groups per generator
    assert ENSEMBLE in set(table.judge)
    assert "average" in set(table.criterion)
    assert {"generator=nano-banana", "generator=gpt-image-1"} <= set(table.group)
    # same seed, same table; the bootstrap intervals contain the estimates
    again = ratings_table(study, n_boot=100, seed=3, by="generator")
    pd.testing.assert_frame_equal(table, again)
    ok = table.dropna(subset=["srcc_lo"])
    assert ((ok.srcc_lo <= ok.srcc + 1e-12) & (ok.srcc <= ok.srcc_hi + 1e-12)).all()


@pytest.mark.slow
def test_pairwise_and_pooled_rows_by_hand(tmp_path, engine_demo):
    from annotation.results.ratings import HUMAN_PAIRWISE, POOLED

    db = engine_demo
    with Store.open(db) as store:
        study = load_study(store)
    table = ratings_table(study, n_boot=50, seed=0, by="generator")
    crit = "scene_coherence"
    human = study.human_scores[study.human_scores.criterion == crit]
    wide = human.pivot(index="output_id", columns="annotator", values="score")
    rs, ns = [], []
    for a, b in [("ann1", "ann2"), ("ann1", "ann3"), ("ann2", "ann3")]:
        pair = wide[[a, b]].dropna()
        rs.append(stats.pearsonr(pair[a], pair[b])[0])
        ns.append(len(pair))
    weights = np.array(ns) - 3
    expected = np.tanh(np.sum(weights * np.arctanh(rs)) / weights.sum())
    row = table[(table.judge == HUMAN_PAIRWISE) & (table.criterion == crit)].iloc[0]
    assert row.plcc == pytest.approx(expected)
    # pooled over generators: Fisher-z mean of the per-group PLCCs, weighted by n - 3,
    # groups of fewer than 10 outputs left out
    groups = table[(table.judge == "gpt-5") & (table.criterion == crit)
                   & (table.reference == "human mean") & table.group.str.startswith("generator=")]
    assert (groups.n_items < 10).any() and (groups.n_items >= 10).any()
    groups = groups[groups.n_items >= 10]
    w = groups.n_items.to_numpy() - 3
    pooled = np.tanh(np.sum(w * np.arctanh(groups.plcc)) / w.sum())
    got = table[(table.judge == "gpt-5") & (table.criterion == crit)
                & (table.reference == "human mean") & (table.group == POOLED)].iloc[0]
    assert got.plcc == pytest.approx(pooled)


def _pivot_average(scores: pd.DataFrame, who: str, criteria: list[str]) -> pd.DataFrame:
    """with_average as pivot_table computes it (the reference for the fast path)."""
    wide = scores.pivot_table(index=["output_id", who], columns="criterion", values="score")
    wide = wide.reindex(columns=criteria).dropna()
    avg = wide.mean(axis=1).rename("score").reset_index()
    avg["criterion"] = "average"
    return pd.concat([scores, avg[["output_id", who, "criterion", "score"]]],
                     ignore_index=True)


@pytest.mark.parametrize("duplicates", [False, True])
def test_with_average_is_the_pivot_table_average(duplicates):
    from annotation.results.ratings import with_average

    rng = np.random.default_rng(3)
    n = 4000
    scores = pd.DataFrame({
        "output_id": rng.choice([f"o{i:03d}" for i in range(300)], n),
        "judge": rng.choice(["zeta", "alpha", "mid"], n),
        "criterion": rng.choice(["x", "y", "z", "other"], n),
        "score": rng.integers(1, 11, n) / rng.choice([1.0, 3.0, 7.0], n)})
    scores.loc[::41, "score"] = np.nan
    scores = scores.drop_duplicates(["output_id", "judge", "criterion"], ignore_index=True)
    if duplicates:  # several scores of one cell: their mean, as pivot_table takes it
        scores = pd.concat([scores, scores.iloc[:50].assign(score=2.5)], ignore_index=True)
    criteria = ["y", "x", "z"]
    got = with_average(scores, "judge", criteria)
    assert (got.criterion == "average").sum() > 50
    pd.testing.assert_frame_equal(got, _pivot_average(scores, "judge", criteria))
