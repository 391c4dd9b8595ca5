"""annotation.stats.correlation and annotation.stats.system against scipy and hand values."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from annotation.stats import correlation as corr
from annotation.stats.correlation import (
    correlations,
    fisher_ci,
    fisher_z_mean,
    fisher_z_pool,
    mae_bias,
    viescore_mean,
)
from annotation.stats.system import system_level, system_means
from tests.helpers.expanded import tails


def _data(seed: int, n: int, ties: bool) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.normal(5, 2, n)
    judge = human + rng.normal(0.3, 1.5, n)
    if ties:  # a 1-10 judge against a mean of 3 humans
        judge = np.clip(np.round(judge), 1, 10)
        human = np.round(human * 3) / 3
    return judge, human


# --------------------------------------------------------------- point estimates vs scipy


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("ties", [False, True])
def test_point_estimates_match_scipy(seed: int, ties: bool) -> None:
    x, y = _data(seed, 20 + 37 * seed, ties)
    row = correlations(x, y, n_boot=0).iloc[0]
    pr = stats.pearsonr(x, y)
    lo, hi = pr.confidence_interval(confidence_level=0.95)
    assert row["n"] == row["n_items"] == len(x)
    assert row["plcc"] == pytest.approx(pr.statistic, abs=1e-14)
    assert row["plcc_lo"] == pytest.approx(lo, abs=1e-12)
    assert row["plcc_hi"] == pytest.approx(hi, abs=1e-12)
    assert row["srcc"] == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-14)
    tau = stats.kendalltau(x, y, variant="b").statistic
    assert row["kendall"] == pytest.approx(tau, abs=1e-14)
    assert row["mae"] == pytest.approx(np.mean(np.abs(x - y)), abs=1e-12)
    assert row["bias"] == pytest.approx(np.mean(x - y), abs=1e-12)
    assert np.isnan(row["srcc_lo"]) and np.isnan(row["kendall_hi"])  # n_boot=0


@pytest.mark.parametrize("ci", [0.8, 0.9, 0.99])
def test_fisher_interval_matches_scipy_at_any_level(ci: float) -> None:
    x, y = _data(11, 50, False)
    row = correlations(x, y, n_boot=0, ci=ci).iloc[0]
    lo, hi = stats.pearsonr(x, y).confidence_interval(confidence_level=ci)
    assert (row["plcc_lo"], row["plcc_hi"]) == pytest.approx((lo, hi), abs=1e-12)


def test_fisher_ci_small_n_like_scipy() -> None:
    r3 = stats.pearsonr([1, 2, 3], [1, 3, 2])
    assert fisher_ci(r3.statistic, 3) == tuple(r3.confidence_interval())  # (-1, 1)
    r4 = stats.pearsonr([1, 2, 3, 4], [1, 3, 2, 4])
    assert fisher_ci(r4.statistic, 4) == pytest.approx(tuple(r4.confidence_interval()))
    assert np.isnan(fisher_ci(0.5, 2)).all()
    assert fisher_ci(1.0, 10) == (1.0, 1.0)


def test_columns() -> None:
    x, y = _data(0, 30, False)
    cols = list(correlations(x, y, n_boot=10).columns)
    for c in [
        "n_items", "plcc", "plcc_lo", "plcc_hi", "plcc_boot_lo", "plcc_boot_hi", "srcc",
        "srcc_lo", "srcc_hi", "kendall", "kendall_lo", "kendall_hi", "mae", "bias",
    ]:  # fmt: skip
        assert c in cols


# ----------------------------------------------------------------------- degenerate input


def test_nan_pairs_dropped_pairwise() -> None:
    x, y = _data(3, 60, True)
    x[[2, 7]] = np.nan
    y[[7, 9, 30]] = np.nan
    keep = np.isfinite(x) & np.isfinite(y)
    row = correlations(pd.Series(x), list(y), n_boot=50).iloc[0]
    assert row["n"] == keep.sum() == 56
    assert row["plcc"] == pytest.approx(stats.pearsonr(x[keep], y[keep]).statistic)
    assert row["kendall"] == pytest.approx(stats.kendalltau(x[keep], y[keep]).statistic)


def test_pd_na_and_none_are_missing() -> None:
    x = pd.Series([1.0, 2.0, pd.NA, 4.0, 5.0, 7.0], dtype="Float64")
    y = [1.0, None, 3.0, 4.0, 6.0, 5.0]
    row = correlations(x, y, n_boot=20).iloc[0]
    assert row["n"] == 4
    assert row["srcc"] == pytest.approx(stats.spearmanr([1, 4, 5, 7], [1, 4, 6, 5]).statistic)


def test_constant_input_gives_nan_without_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        row = correlations([3, 3, 3, 3, 3], [1, 2, 3, 4, 5], n_boot=100).iloc[0]
    for c in ["plcc", "plcc_lo", "srcc", "srcc_lo", "kendall", "kendall_hi", "plcc_boot_lo"]:
        assert np.isnan(row[c]), c
    assert row["bias"] == pytest.approx(0.0) and row["mae"] == pytest.approx(1.2)


@pytest.mark.parametrize("n", [0, 1, 2])
def test_fewer_than_three_pairs(n: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        row = correlations(np.arange(n, dtype=float), np.arange(n) * 2.0, n_boot=10).iloc[0]
    assert row["n"] == n
    assert np.isnan(row["plcc"]) and np.isnan(row["srcc"]) and np.isnan(row["kendall"])
    assert np.isnan(row["plcc_lo"]) and np.isnan(row["kendall_lo"])


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="length"):
        correlations([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="ci"):
        correlations([1, 2, 3], [1, 2, 3], ci=95)
    with pytest.raises(ValueError, match="missing labels"):
        correlations([1, 2, 3], [1, 2, 3], items=["a", None, "b"])
    with pytest.raises(ValueError, match="labels"):
        correlations([1, 2, 3], [1, 2, 3], items=["a", "b"])


# -------------------------------------------------------------------------- bootstrap


@pytest.mark.parametrize("seed", range(4))
def test_bootstrap_intervals_contain_estimate(seed: int) -> None:
    x, y = _data(seed, 80, seed % 2 == 0)
    row = correlations(x, y, n_boot=500, seed=seed).iloc[0]
    for est, lo, hi in [
        ("plcc", "plcc_boot_lo", "plcc_boot_hi"),
        ("plcc", "plcc_lo", "plcc_hi"),
        ("srcc", "srcc_lo", "srcc_hi"),
        ("kendall", "kendall_lo", "kendall_hi"),
    ]:
        assert row[lo] < row[est] < row[hi], (est, row[lo], row[est], row[hi])
    # the Fisher and bootstrap intervals for Pearson are of a similar width
    fisher = row["plcc_hi"] - row["plcc_lo"]
    assert 0.6 < (row["plcc_boot_hi"] - row["plcc_boot_lo"]) / fisher < 1.6


def test_same_seed_same_output_other_seed_other_output() -> None:
    x, y = _data(5, 120, True)
    a = correlations(x, y, n_boot=300, seed=7)
    b = correlations(x, y, n_boot=300, seed=7)
    c = correlations(x, y, n_boot=300, seed=8)
    pd.testing.assert_frame_equal(a, b)
    boot = ["plcc_boot_lo", "plcc_boot_hi", "srcc_lo", "srcc_hi", "kendall_lo", "kendall_hi"]
    assert not np.allclose(a[boot].to_numpy(), c[boot].to_numpy())
    point = ["plcc", "plcc_lo", "srcc", "kendall", "mae", "bias"]
    pd.testing.assert_frame_equal(a[point], c[point])


def test_percentile_interval_is_the_quantile_of_the_resamples() -> None:
    x, y = _data(9, 40, False)
    codes = np.arange(40)
    boot = corr.bootstrap_statistics([(x, y)], codes, 40, n_boot=400, seed=3)
    row = correlations(x, y, n_boot=400, seed=3).iloc[0]
    for stat, lo, hi in [
        ("spearman", "srcc_lo", "srcc_hi"),
        ("kendall", "kendall_lo", "kendall_hi"),
    ]:
        q = np.quantile(boot[(0, stat)], tails(40))  # the expanded percentile interval
        assert (row[lo], row[hi]) == pytest.approx(tuple(q), abs=1e-14)


def test_weighted_resample_statistics_equal_scipy_on_expanded_sample() -> None:
    rng = np.random.default_rng(0)
    n = 45
    x = rng.integers(1, 6, n).astype(float)  # heavy ties
    y = np.round(x + rng.normal(0, 1.5, n), 1)
    w = rng.integers(0, 4, (8, n)).astype(float)
    gx, gy = corr._groups(x), corr._groups(y)
    tx, ty = corr._group_totals(w, gx), corr._group_totals(w, gy)
    ok = np.ones(len(w), bool)
    pearson = corr._w_pearson(w, x, y, ok)
    spearman = corr._w_pearson(w, corr._w_midranks(tx, gx), corr._w_midranks(ty, gy), ok)
    kendall = corr._w_kendall(w, x, y, tx, ty, ok)
    for b in range(len(w)):
        rows = np.repeat(np.arange(n), w[b].astype(int))
        assert pearson[b] == pytest.approx(stats.pearsonr(x[rows], y[rows]).statistic, abs=1e-13)
        assert spearman[b] == pytest.approx(stats.spearmanr(x[rows], y[rows]).statistic, abs=1e-13)
        assert kendall[b] == pytest.approx(stats.kendalltau(x[rows], y[rows]).statistic, abs=1e-13)


def test_kendall_fallback_for_many_rows_gives_the_same_resamples(monkeypatch) -> None:
    x, y = _data(2, 60, True)
    fast = correlations(x, y, n_boot=50, seed=1)
    monkeypatch.setattr(corr, "_KENDALL_MATRIX_MAX_ROWS", 0)
    monkeypatch.setattr(corr, "_TABLE_CELLS_PER_ROW", 0)
    slow = correlations(x, y, n_boot=50, seed=1)
    pd.testing.assert_frame_equal(fast, slow, atol=1e-12)


@pytest.mark.parametrize("levels", [(10, 28), (3, 2), (37, 40)])
def test_kendall_on_the_contingency_table_equals_scipy_and_the_pair_matrix(levels) -> None:
    """Ratings with few distinct values (a judge's 1-10 score against a mean of 3 humans):
    the table count of concordant minus discordant pairs equals scipy's tau-b on each
    expanded resample and the O(n^2) pair matrix, ties in x, in y and in both included."""
    rng = np.random.default_rng(7)
    n = 300
    x = rng.integers(0, levels[0], n).astype(float)
    y = np.round(x * levels[1] / levels[0] + rng.integers(-3, 4, n)).clip(0, levels[1])
    w = rng.integers(0, 3, (40, n)).astype(float)
    gx, gy = corr._groups(x), corr._groups(y)
    table = corr._kendall_numerator_table(w, gx, gy)
    assert table == pytest.approx(corr._kendall_numerator(w, x, y), abs=1e-6)
    tx, ty = corr._group_totals(w, gx), corr._group_totals(w, gy)
    tau = corr._w_kendall(w, x, y, tx, ty, np.ones(len(w), bool), gx, gy)
    for b in range(0, len(w), 7):
        rows = np.repeat(np.arange(n), w[b].astype(int))
        assert tau[b] == pytest.approx(stats.kendalltau(x[rows], y[rows]).statistic, abs=1e-12)


def test_kendall_table_is_used_beyond_the_pair_matrix_size(monkeypatch) -> None:
    """5,000 rows on a 1-10 scale: no per-resample scipy loop, the same distribution."""
    rng = np.random.default_rng(3)
    n = 5000
    x = rng.integers(1, 11, n).astype(float)
    y = (x + rng.integers(-2, 3, n)).clip(1, 10)
    w = rng.integers(0, 3, (6, n)).astype(float)
    gx, gy = corr._groups(x), corr._groups(y)
    tx, ty = corr._group_totals(w, gx), corr._group_totals(w, gy)
    with monkeypatch.context() as m:  # the per-resample scipy path must not run
        m.setattr(corr, "_kendall", lambda *a: pytest.fail("per-resample kendalltau ran"))
        tau = corr._w_kendall(w, x, y, tx, ty, np.ones(len(w), bool), gx, gy)
    for b in range(len(w)):
        rows = np.repeat(np.arange(n), w[b].astype(int))
        assert tau[b] == pytest.approx(stats.kendalltau(x[rows], y[rows]).statistic, abs=1e-12)


def test_cluster_bootstrap_keeps_items_together() -> None:
    """k identical rows per item: resampling items must equal resampling the item table.

    Pearson, Spearman and tau-b are all invariant to replicating every observation k times,
    and the cluster bootstrap draws the same item indices, so the output is identical.
    A row bootstrap of the same table instead treats the copies as independent evidence and
    gives a much narrower interval.
    """
    x, y = _data(4, 25, True)
    k = 6
    xr, yr = np.repeat(x, k), np.repeat(y, k)
    items = np.repeat([f"img{i}" for i in range(25)], k)
    by_item = correlations(x, y, n_boot=400, seed=5).iloc[0]
    clustered = correlations(xr, yr, items=items, n_boot=400, seed=5).iloc[0]
    rows = correlations(xr, yr, n_boot=400, seed=5).iloc[0]
    assert clustered["n"] == 150 and clustered["n_items"] == 25
    cols = ["plcc", "plcc_boot_lo", "plcc_boot_hi", "srcc_lo", "srcc_hi", "kendall_lo",
            "kendall_hi"]  # fmt: skip
    for c in cols:
        assert clustered[c] == pytest.approx(by_item[c], abs=1e-12), c
    for lo, hi in [("srcc_lo", "srcc_hi"), ("kendall_lo", "kendall_hi")]:
        assert rows[hi] - rows[lo] < 0.6 * (clustered[hi] - clustered[lo])


def test_cluster_bootstrap_unequal_clusters_wider_than_row_bootstrap() -> None:
    rng = np.random.default_rng(12)
    sizes = rng.integers(1, 12, 40)
    items = np.repeat(np.arange(40), sizes)
    effect = rng.normal(0, 1, 40)  # shared by an item's questions
    human = effect[items] + rng.normal(0, 0.2, len(items))
    judge = effect[items] + rng.normal(0, 0.2, len(items)) + rng.normal(0, 1, 40)[items]
    clustered = correlations(judge, human, items=items, n_boot=600, seed=0).iloc[0]
    naive = correlations(judge, human, n_boot=600, seed=0).iloc[0]
    assert clustered["n_items"] == 40 and clustered["n"] == len(items)
    for lo, hi in [("plcc_boot_lo", "plcc_boot_hi"), ("srcc_lo", "srcc_hi"),
                   ("kendall_lo", "kendall_hi")]:  # fmt: skip
        assert clustered[hi] - clustered[lo] > 1.4 * (naive[hi] - naive[lo])
        assert clustered[lo] < clustered[lo.replace("_lo", "").replace("_boot", "")] < clustered[hi]


# ------------------------------------------------------------------ pooled correlations


def test_fisher_z_mean_by_hand() -> None:
    rs, ns = [0.5, 0.3, 0.8], [23, 13, 53]
    z = np.arctanh(rs)
    assert fisher_z_mean(rs) == pytest.approx(np.tanh(z.mean()), abs=1e-15)
    w = np.array(ns) - 3.0
    assert fisher_z_mean(rs, ns) == pytest.approx(np.tanh((w * z).sum() / w.sum()), abs=1e-15)
    # 20, 10, 50 weights: by hand
    expected = np.tanh((20 * 0.5493061443 + 10 * 0.3095196042 + 50 * 1.0986122887) / 80)
    assert fisher_z_mean(rs, ns) == pytest.approx(expected, abs=1e-9)
    assert fisher_z_mean([0.4, np.nan], [50, 60]) == pytest.approx(0.4)
    assert fisher_z_mean([0.4, 0.9], [50, 3]) == pytest.approx(0.4)  # n <= 3 has no weight
    assert np.isnan(fisher_z_mean([]))
    # |r| = 1 is clipped: it no longer makes the pool 1.0 (see the defect test below)
    clipped = np.tanh((np.arctanh(0.9999) + np.arctanh(0.2)) / 2)
    assert fisher_z_mean([1.0, 0.2]) == pytest.approx(clipped)


def test_fisher_z_mean_is_not_captured_by_a_perfect_correlation() -> None:
    """Defect: fisher_z_mean([1.0, 0.2], ns=[4, 500]) returned 1.0 (atanh(1) = inf), so two
    annotators agreeing on 4 outputs made the "human pairwise" row read 1.0."""
    pooled = fisher_z_mean([1.0, 0.2], ns=[4, 500])
    assert 0.2 < pooled < 0.22
    # the report leaves out correlations from fewer than 10 common outputs
    assert fisher_z_mean([1.0, 0.2], ns=[4, 500], min_n=10) == pytest.approx(0.2)
    assert fisher_z_pool([1.0, 0.2, np.nan], [4, 500, 50], min_n=10) == (
        pytest.approx(0.2), 1, 2)


def test_viescore_convention_reproduces_its_table() -> None:
    # VIEScore analyze_json.ipynb, gemini 0-shot, ImagenHub_Multi-Concept_IC, SC:
    # per-model Spearman .3538, .2145, .5476 printed as "Avg 0.3557".
    rhos = [0.3538, 0.2145, 0.5476]
    assert viescore_mean(rhos) == pytest.approx(0.3557, abs=5e-5)
    assert fisher_z_mean(rhos) == pytest.approx(0.3807, abs=5e-5)  # not what they print
    # ImagenHub_Text-Guided_IE, SC, eight models -> "0.2836"
    ie = [0.3249, 0.4387, 0.1091, 0.1719, 0.4689, 0.1368, 0.197, 0.4856]
    assert viescore_mean(ie) == pytest.approx(0.2836, abs=5e-5)


def test_mae_bias() -> None:
    res = mae_bias([3, 5, 8, np.nan], [4, 5, 6, 1])
    assert (res.n, res.mae, res.bias) == (3, pytest.approx(1.0), pytest.approx(1 / 3))
    assert res.to_frame().columns.tolist() == ["n", "mae", "bias"]
    assert np.isnan(mae_bias([np.nan], [1]).mae)


# ------------------------------------------------------------------------ system level


def _systems(seed: int = 0, k: int = 6, per: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    quality = np.linspace(3, 7, k)
    rows = []
    for s in range(k):
        for i in range(per):
            h = quality[s] + rng.normal(0, 1.5)
            rows.append(
                {
                    "system": f"gen{s}",
                    "item": f"gen{s}-img{i}",
                    "human": h,
                    "judge_a": h + rng.normal(0, 1),
                    "judge_b": rng.normal(5, 2),
                }
            )
    return pd.DataFrame(rows)


def test_system_means_table() -> None:
    df = _systems()
    df.loc[3, "judge_a"] = np.nan
    t = system_means(df, system_col="system", judge_col=["judge_a", "judge_b"], human_col="human")
    assert len(t) == 12 and set(t["judge"]) == {"judge_a", "judge_b"}
    a0 = t[(t["judge"] == "judge_a") & (t["system"] == "gen0")].iloc[0]
    g0 = df[(df["system"] == "gen0") & df["judge_a"].notna()]
    assert a0["n"] == 29
    assert a0["judge_mean"] == pytest.approx(g0["judge_a"].mean())
    assert a0["human_mean"] == pytest.approx(g0["human"].mean())
    b0 = t[(t["judge"] == "judge_b") & (t["system"] == "gen0")].iloc[0]
    assert b0["n"] == 30
    assert sorted(t.loc[t["judge"] == "judge_a", "human_rank"]) == [1, 2, 3, 4, 5, 6]


def test_system_level_matches_scipy_and_steps() -> None:
    df = _systems()
    res = system_level(
        df, system_col="system", judge_col=["judge_a", "judge_b"], human_col="human",
        n_boot=500, seed=1,
    )  # fmt: skip
    assert list(res["judge"]) == ["judge_a", "judge_b"]
    means = system_means(df, system_col="system", judge_col=["judge_a", "judge_b"],
                         human_col="human")  # fmt: skip
    for _, row in res.iterrows():
        m = means[means["judge"] == row["judge"]]
        tau = stats.kendalltau(m["judge_mean"], m["human_mean"]).statistic
        assert row["kendall"] == pytest.approx(tau, abs=1e-12)
        assert row["n_systems"] == 6 and row["n_pairs"] == 15
        assert row["tau_step"] == pytest.approx(2 / 15)
        # without ties, pairwise accuracy = (1 + tau) / 2
        assert row["pairwise_accuracy"] == pytest.approx((1 + tau) / 2)
        assert row["kendall_lo"] <= row["kendall"] <= row["kendall_hi"]
        assert row["pairwise_accuracy_lo"] <= row["pairwise_accuracy"]
        assert row["pairwise_accuracy"] <= row["pairwise_accuracy_hi"]
        # tau of 6 systems lives on the grid of 2/15 steps
        assert (row["kendall"] * 15) == pytest.approx(round(row["kendall"] * 15), abs=1e-9)
    a = res.iloc[0]
    assert a["kendall"] > 0.5


def test_system_level_ties_by_hand() -> None:
    # per-system means: judge (1, 2, 2, 4), human (1, 2, 3, 3)
    df = pd.DataFrame(
        {"system": list("ABCD"), "judge": [1.0, 2.0, 2.0, 4.0], "human": [1.0, 2.0, 3.0, 3.0]}
    )
    row = system_level(df, system_col="system", judge_col="judge", human_col="human",
                       n_boot=0).iloc[0]  # fmt: skip
    # pairs: AB ++, AC ++, AD ++, BC (tie vs +) no, BD ++, CD (+ vs tie) no -> 4/6
    assert row["pairwise_accuracy"] == pytest.approx(4 / 6)
    assert row["kendall"] == pytest.approx(
        stats.kendalltau([1, 2, 2, 4], [1, 2, 3, 3]).statistic, abs=1e-12
    )
    both_tied = pd.DataFrame({"system": list("ABC"), "judge": [1.0, 1.0, 2.0],
                              "human": [5.0, 5.0, 6.0]})  # fmt: skip
    row = system_level(both_tied, system_col="system", judge_col="judge", human_col="human",
                       n_boot=0).iloc[0]  # fmt: skip
    assert row["pairwise_accuracy"] == 1.0 and row["kendall"] == pytest.approx(1.0)


def test_system_level_bootstrap_within_systems() -> None:
    df = _systems(3)
    kw = dict(system_col="system", judge_col="judge_b", human_col="human", n_boot=300)
    a = system_level(df, seed=4, **kw)
    pd.testing.assert_frame_equal(a, system_level(df, seed=4, **kw))
    c = system_level(df, seed=5, **kw)
    boot = ["kendall_lo", "kendall_hi", "pairwise_accuracy_lo", "pairwise_accuracy_hi"]
    assert not np.allclose(a[boot].to_numpy(float), c[boot].to_numpy(float))
    # two questions per image: resampling images (item_col) widens nothing when the two
    # rows are identical copies -> same as resampling the image table itself
    doubled = pd.concat([df, df]).sort_index(kind="stable")
    per_item = system_level(doubled, item_col="item", seed=4, **kw)
    cols = ["kendall", "kendall_lo", "kendall_hi", "pairwise_accuracy_lo"]
    pd.testing.assert_frame_equal(per_item[cols], a[cols])


def test_system_level_degenerate() -> None:
    df = pd.DataFrame({"system": ["A", "A"], "judge": [1.0, 2.0], "human": [3.0, 4.0]})
    row = system_level(df, system_col="system", judge_col="judge", human_col="human").iloc[0]
    assert row["n_systems"] == 1 and np.isnan(row["kendall"])
    with pytest.raises(KeyError):
        system_level(df, system_col="gen", judge_col="judge", human_col="human")


def test_expanded_percentile_level() -> None:
    """Hesterberg (2015, sec. 4.5): the tail Phi(-sqrt(n/(n-1)) t_{.975, n-1}); wider for few
    clusters, the plain percentile level for many."""
    from annotation.stats.correlation import expanded_level

    assert 1 - expanded_level(0.95, 60) == pytest.approx(2 * tails(60)[0])
    assert expanded_level(0.95, 10) > expanded_level(0.95, 60) > 0.95
    assert expanded_level(0.95, 100_000) == pytest.approx(0.95, abs=1e-4)
    assert expanded_level(0.95, None) == 0.95


def test_cluster_robust_se_of_fisher_z_written_out() -> None:
    """fisher_z_studentized against the influence function of r written out per row
    (Devlin, Gnanadesikan & Kettenring 1975), summed per cluster, for the sample and a
    weighted resample; and near Fisher's 1/sqrt(n - 3) for independent normal pairs."""
    from annotation.stats.correlation import (
        _cluster_moments,
        _standardise,
        fisher_z_studentized,
    )

    rng = np.random.default_rng(21)
    x = rng.normal(size=150)
    y = 0.6 * x + rng.normal(size=150)
    codes = np.repeat(np.arange(50), 3)
    moments = _cluster_moments(_standardise(x), _standardise(y), codes, 50)
    for counts in (np.ones(50), np.bincount(rng.integers(0, 50, 50), minlength=50)):
        w = counts[codes].astype(float)
        total = w.sum()
        u = (x - (w * x).sum() / total)
        v = (y - (w * y).sum() / total)
        u, v = u / np.sqrt((w * u * u).sum() / total), v / np.sqrt((w * v * v).sum() / total)
        r = (w * u * v).sum() / total
        per_cluster = np.bincount(codes, weights=u * v - r * (u * u + v * v) / 2,
                                  minlength=50)
        se = np.sqrt((counts * per_cluster**2).sum()) / total / (1 - r * r)
        got_r, got_se = fisher_z_studentized(counts[None, :], moments)
        assert (got_r[0], got_se[0]) == pytest.approx((r, se), rel=1e-12)
    x = rng.normal(size=400)
    y = 0.5 * x + rng.normal(size=400)
    moments = _cluster_moments(_standardise(x), _standardise(y), np.arange(400), 400)
    assert fisher_z_studentized(np.ones((1, 400)), moments)[1][0] == pytest.approx(
        1 / np.sqrt(397), rel=0.15)


def test_bootstrap_from_the_table_equals_scipy_on_each_resample(monkeypatch) -> None:
    """Scores with few distinct values go through the contingency-table path: each
    resample's Pearson, Spearman and tau-b equal scipy's on the rows it draws (clusters of
    3 rows, drawn with the function's own generator), and the row-by-row path agrees."""
    rng = np.random.default_rng(11)
    n_items, per = 80, 3
    x = rng.integers(1, 11, n_items * per).astype(float)
    y = (x + rng.integers(-3, 4, len(x))).clip(1, 10)
    codes = np.repeat(np.arange(n_items), per)
    names = ("pearson", "pearson_se", "spearman", "kendall")
    boot = corr.bootstrap_statistics([(x, y)], codes, n_items, n_boot=30, seed=5,
                                     statistics=names)
    draws = np.random.default_rng(5).integers(0, n_items, size=(30, n_items))
    for b in range(0, 30, 3):
        rows = np.concatenate([np.flatnonzero(codes == k) for k in draws[b]])
        assert boot[(0, "pearson")][b] == pytest.approx(
            stats.pearsonr(x[rows], y[rows]).statistic, abs=1e-12)
        assert boot[(0, "spearman")][b] == pytest.approx(
            stats.spearmanr(x[rows], y[rows]).statistic, abs=1e-12)
        assert boot[(0, "kendall")][b] == pytest.approx(
            stats.kendalltau(x[rows], y[rows]).statistic, abs=1e-12)
    monkeypatch.setattr(corr, "_TABLE_CELLS_PER_ROW", 0)
    rows_path = corr.bootstrap_statistics([(x, y)], codes, n_items, n_boot=30, seed=5,
                                          statistics=names)
    for name in names:
        np.testing.assert_allclose(boot[(0, name)], rows_path[(0, name)], rtol=1e-11)


@pytest.mark.parametrize("noise", [1e-2, 1e-4])
def test_cluster_robust_se_near_r_of_one_keeps_its_digits(noise) -> None:
    """Near-identical judge and human scores (r close to 1): the SE of atanh r still equals
    the influence function written out per row; a quadratic form in the per-cluster sums
    of squares would lose its digits there and even turn negative."""
    from annotation.stats.correlation import (
        _cluster_moments,
        _standardise,
        fisher_z_studentized,
    )

    rng = np.random.default_rng(4)
    x = rng.normal(size=201)
    y = x + noise * rng.normal(size=201)
    codes = np.repeat(np.arange(67), 3)
    moments = _cluster_moments(_standardise(x), _standardise(y), codes, 67)
    u, v = _standardise(x), _standardise(y)
    r = (u * v).mean()
    per_cluster = np.bincount(codes, weights=u * v - r * (u * u + v * v) / 2, minlength=67)
    se = np.sqrt((per_cluster**2).sum()) / len(x) / (1 - r * r)
    got_r, got_se = fisher_z_studentized(np.ones((1, 67)), moments)
    assert got_r[0] == pytest.approx(r, rel=1e-12)
    assert got_se[0] == pytest.approx(se, rel=1e-3 if noise < 1e-3 else 1e-8)
