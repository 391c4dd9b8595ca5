"""ICC(A,1) / ICC(A,k) for incomplete designs: Henderson's Method III variance components.

References: a dense least-squares implementation of Method III written here from its
definitions (Searle, Casella & McCulloch 1992, Variance Components, ch. 5: reductions in
sums of squares from ``numpy.linalg.lstsq`` on dummy matrices, ranks from
``matrix_rank``, expectation coefficients from traces of projections), pingouin and
:func:`annotation.stats.reliability.icc` (McGraw & Wong 1996) on complete designs,
statsmodels' MixedLM (REML, crossed variance components) on a large incomplete design,
and simulations with known variance components.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from annotation.results.reliability import reliability_table
from annotation.stats import reliability as rel
from annotation.stats.reliability import alpha_table, icc
from tests.helpers.expanded import tails
from tests.test_reliability_ac1 import criterion, long_scores, make_study


def simulate(rng: np.random.Generator, n_items: int, n_raters: int, per_item: int | None,
             s_i: float = 1.0, s_r: float = 0.5, s_e: float = 1.0) -> np.ndarray:
    """y = 5 + item + rater + e; each item rated by ``per_item`` random raters (None: all)."""
    x = (5 + math.sqrt(s_i) * rng.normal(size=(n_items, 1))
         + math.sqrt(s_r) * rng.normal(size=(1, n_raters))
         + math.sqrt(s_e) * rng.normal(size=(n_items, n_raters)))
    if per_item is not None:
        keep = np.zeros(x.shape, dtype=bool)
        for i in range(n_items):
            keep[i, rng.choice(n_raters, per_item, replace=False)] = True
        x[~keep] = np.nan
    return x


def henderson_dense(x: np.ndarray, truncate: bool = True) -> dict[str, float]:
    """Method III from the definitions, with dense dummy matrices (small designs only)."""
    rows = np.flatnonzero((~np.isnan(x)).any(axis=1))
    x = x[rows]
    cols = np.flatnonzero((~np.isnan(x)).any(axis=0))
    x = x[:, cols]
    i, j = np.nonzero(~np.isnan(x))
    y = x[i, j]
    n = y.size
    a = np.eye(x.shape[0])[i]  # item dummies
    b = np.eye(x.shape[1])[j]  # rater dummies
    one = np.ones((n, 1))

    def fit(*blocks: np.ndarray) -> tuple[float, int, np.ndarray]:
        m = np.hstack(blocks)
        beta = np.linalg.lstsq(m, y, rcond=None)[0]
        r = y - m @ beta
        return float(r @ r), int(np.linalg.matrix_rank(m)), m @ np.linalg.pinv(m)

    sse_full, rank_full, _ = fit(one, a, b)
    sse_a, rank_a, p_a = fit(one, a)
    sse_b, rank_b, p_b = fit(one, b)
    s_e = sse_full / (n - rank_full)
    coef_r = np.trace(b.T @ b) - np.trace(b.T @ p_a @ b)
    coef_i = np.trace(a.T @ a) - np.trace(a.T @ p_b @ a)
    s_r = ((sse_a - sse_full) - (rank_full - rank_a) * s_e) / coef_r
    s_i = ((sse_b - sse_full) - (rank_full - rank_b) * s_e) / coef_i
    if truncate:
        s_r, s_i = max(s_r, 0.0), max(s_i, 0.0)
    k = 1 / np.mean(1 / (~np.isnan(x)).sum(axis=1))
    return {"s_i": s_i, "s_r": s_r, "s_e": s_e, "rank": rank_full,
            "a1": s_i / (s_i + s_r + s_e), "ak": s_i / (s_i + (s_r + s_e) / k), "k": k}


# --------------------------------------------------------------------------- complete designs


@pytest.mark.filterwarnings("ignore:The inplace keyword")  # pingouin on pandas >= 3.1
def test_complete_design_equals_mcgraw_wong_and_pingouin():
    """Without truncation, Method III on a complete design is McGraw & Wong's ICC(A,1)/(A,k)
    exactly, including designs where a component estimate is negative."""
    pg = pytest.importorskip("pingouin")
    rng = np.random.default_rng(41)
    for trial in range(12):
        n, k = int(rng.integers(4, 40)), int(rng.integers(2, 6))
        s_r = (0.0, 0.5, 2.0)[trial % 3]  # 0: MSC < MSE happens, a negative rater component
        x = simulate(rng, n, k, None, s_i=(0.05, 1.0)[trial % 2], s_r=s_r)
        vc = rel.icc_variance_components(x, truncate=False)
        table = icc(x).set_index("type")["icc"]
        assert vc.icc_a1 == pytest.approx(table["ICC(A,1)"], abs=1e-10)
        assert vc.icc_ak == pytest.approx(table["ICC(A,k)"], abs=1e-10)
        assert vc.k == pytest.approx(k) and vc.n_components == 1
        long = pd.DataFrame([(f"u{a:03d}", f"r{b}", v) for (a, b), v in np.ndenumerate(x)],
                            columns=["item", "rater", "value"])
        ref = pg.intraclass_corr(long, targets="item", raters="rater",
                                 ratings="value").set_index("Type")["ICC"]
        # pingouin names them ICC2 / ICC2k (Shrout & Fleiss) or ICC(A,1) / ICC(A,k) (0.6+)
        a1_name, ak_name = ("ICC2", "ICC2k") if "ICC2" in ref.index else ("ICC(A,1)", "ICC(A,k)")
        assert vc.icc_a1 == pytest.approx(ref[a1_name], abs=1e-10)
        assert vc.icc_ak == pytest.approx(ref[ak_name], abs=1e-10)
        truncated = rel.icc_variance_components(x)
        if vc.var_item >= 0 and vc.var_rater >= 0:
            assert truncated.icc_a1 == pytest.approx(vc.icc_a1, abs=1e-12)
        else:
            assert truncated.var_item >= 0 and truncated.var_rater >= 0


def test_alpha_table_complete_design_keeps_mcgraw_wong_with_f_intervals():
    rng = np.random.default_rng(42)
    x = simulate(rng, 8, 4, None)  # 8 items: F intervals need no bootstrap
    long = pd.DataFrame([(f"u{a}", f"r{b}", v) for (a, b), v in np.ndenumerate(x)],
                        columns=["item", "rater", "value"])
    row = alpha_table(long, item_col="item", rater_col="rater", value_col="value",
                      n_boot=100).iloc[0]
    t = icc(x).set_index("type")
    assert row.icc_method == rel.ICC_COMPLETE
    assert (row.icc_a1, row.icc_ak) == pytest.approx((t.loc["ICC(A,1)", "icc"],
                                                      t.loc["ICC(A,k)", "icc"]), abs=1e-12)
    assert (row.icc_a1_lo, row.icc_a1_hi) == pytest.approx(
        (t.loc["ICC(A,1)", "lo"], t.loc["ICC(A,1)", "hi"]), abs=1e-12)
    assert (row.icc_ak_lo, row.icc_ak_hi) == pytest.approx(
        (t.loc["ICC(A,k)", "lo"], t.loc["ICC(A,k)", "hi"]), abs=1e-12)
    assert row.judge_ceiling == pytest.approx(math.sqrt(t.loc["ICC(A,k)", "icc"]))


# --------------------------------------------------------------------------- incomplete designs


@pytest.mark.slow
def test_incomplete_and_disconnected_designs_equal_the_dense_reference():
    rng = np.random.default_rng(43)
    designs = [simulate(rng, 30, 5, 2), simulate(rng, 25, 4, 3), simulate(rng, 40, 6, None)]
    x = simulate(rng, 30, 5, None)
    x[rng.random(x.shape) < 0.4] = np.nan  # some items rated once
    designs.append(x)
    # two blocks of raters that share no item: c = 2 components
    block = simulate(rng, 36, 6, None)
    block[:18, 3:] = np.nan
    block[18:, :3] = np.nan
    block[rng.random(block.shape) < 0.2] = np.nan
    designs.append(block)
    for x in designs:
        for truncate in (True, False):
            ours = rel.icc_variance_components(x, truncate=truncate)
            ref = henderson_dense(x, truncate=truncate)
            assert ours.var_error == pytest.approx(ref["s_e"], rel=1e-9)
            assert ours.var_rater == pytest.approx(ref["s_r"], rel=1e-9, abs=1e-12)
            assert ours.var_item == pytest.approx(ref["s_i"], rel=1e-9, abs=1e-12)
            assert ours.icc_a1 == pytest.approx(ref["a1"], abs=1e-10)
            assert ours.icc_ak == pytest.approx(ref["ak"], abs=1e-10)
            assert ours.k == pytest.approx(ref["k"])
            n_items = int((~np.isnan(x)).any(axis=1).sum())
            n_raters = int((~np.isnan(x)).any(axis=0).sum())
            assert n_items + n_raters - ours.n_components == ref["rank"]
    assert rel.icc_variance_components(block).n_components == 2


@pytest.mark.slow  # statsmodels' REML on 1200 ratings with 408 crossed random effects
def test_incomplete_design_agrees_with_statsmodels_reml():
    """A different estimator (REML), both consistent: close on a large incomplete design."""
    smf = pytest.importorskip("statsmodels.formula.api")
    rng = np.random.default_rng(44)
    x = simulate(rng, 400, 8, 3, s_i=2.0, s_r=0.6, s_e=1.0)
    ours = rel.icc_variance_components(x)
    i, j = np.nonzero(~np.isnan(x))
    df = pd.DataFrame({"y": x[i, j], "item": i, "rater": j, "g": 1})
    model = smf.mixedlm("y ~ 1", df, groups="g", re_formula="0",
                        vc_formula={"item": "0 + C(item)", "rater": "0 + C(rater)"})
    fit = model.fit(reml=True)
    vc = dict(zip(model.exog_vc.names, fit.vcomp))
    assert ours.var_item == pytest.approx(vc["item"], rel=0.05)
    assert ours.var_rater == pytest.approx(vc["rater"], rel=0.10)
    assert ours.var_error == pytest.approx(fit.scale, rel=0.05)
    reml_a1 = vc["item"] / (vc["item"] + vc["rater"] + fit.scale)
    assert ours.icc_a1 == pytest.approx(reml_a1, abs=0.015)


@pytest.mark.slow
def test_method_iii_is_unbiased_and_recovers_known_components():
    """200 simulated incomplete studies: the mean untruncated estimate is the truth (Method
    III is unbiased) within 4 standard errors; one large study: ICC close to the truth."""
    rng = np.random.default_rng(45)
    truth = {"var_item": 1.0, "var_rater": 0.5, "var_error": 0.8}
    est = {k: [] for k in truth}
    for _ in range(200):
        x = simulate(rng, 150, 10, 3, s_i=1.0, s_r=0.5, s_e=0.8)
        vc = rel.icc_variance_components(x, truncate=False)
        for key in truth:
            est[key].append(getattr(vc, key))
    for key, value in truth.items():
        e = np.array(est[key])
        assert abs(e.mean() - value) < 4 * e.std(ddof=1) / math.sqrt(e.size), key
    x = simulate(rng, 6000, 60, 3, s_i=1.0, s_r=0.5, s_e=0.8)
    vc = rel.icc_variance_components(x)
    assert vc.icc_a1 == pytest.approx(1.0 / 2.3, abs=0.03)
    assert vc.icc_ak == pytest.approx(1.0 / (1.0 + 1.3 / 3), abs=0.03)
    assert vc.k == pytest.approx(3.0)


def test_incomplete_bootstrap_equals_rebuilt_data_same_draws():
    """A replicate: draw items with replacement, each copy a new item, Method III again."""
    rng = np.random.default_rng(46)
    x = simulate(rng, 30, 4, 3)
    vc = rel.icc_variance_components(x, n_boot=120, seed=7)
    draws = np.random.default_rng(7).multinomial(30, np.full(30, 1 / 30), size=120)
    a1, ak = [], []
    for w in draws:
        ref = henderson_dense(np.repeat(x, w, axis=0))
        a1.append(ref["a1"])
        ak.append(ref["ak"])
    assert vc.n_boot == 120 and vc.n_clusters == 30
    assert (vc.a1_lo, vc.a1_hi) == pytest.approx(tuple(np.quantile(a1, tails(30))),
                                                 abs=1e-9)
    assert (vc.ak_lo, vc.ak_hi) == pytest.approx(tuple(np.quantile(ak, tails(30))),
                                                 abs=1e-9)
    assert vc.a1_lo < vc.icc_a1 < vc.a1_hi
    # clusters of items: two items per cluster resampled together
    pairs = np.arange(30) // 2
    vc2 = rel.icc_variance_components(x, n_boot=60, seed=7, clusters=pairs)
    draws = np.random.default_rng(7).multinomial(15, np.full(15, 1 / 15), size=60)
    a1 = [henderson_dense(np.repeat(x, w[pairs], axis=0))["a1"] for w in draws]
    assert (vc2.a1_lo, vc2.a1_hi) == pytest.approx(tuple(np.quantile(a1, tails(15))),
                                                   abs=1e-9)
    # a weak bridge: replicates that miss the one item linking two blocks of raters are
    # disconnected (c = 2), the others connected
    bridged = simulate(rng, 24, 6, None)
    bridged[:12, 3:] = np.nan
    bridged[12:, :3] = np.nan
    bridged[0, 3] = 5.0
    vc3 = rel.icc_variance_components(bridged, n_boot=80, seed=3)
    draws = np.random.default_rng(3).multinomial(24, np.full(24, 1 / 24), size=80)
    assert 0 < (draws[:, 0] == 0).sum() < 80
    a1 = [henderson_dense(np.repeat(bridged, w, axis=0))["a1"] for w in draws]
    assert vc3.n_components == 1 and vc3.n_boot == 80
    assert (vc3.a1_lo, vc3.a1_hi) == pytest.approx(tuple(np.quantile(a1, tails(24))),
                                                   abs=1e-9)
    again = rel.icc_variance_components(x, n_boot=120, seed=7)
    assert (again.a1_lo, again.a1_hi) == (vc.a1_lo, vc.a1_hi)
    few = rel.icc_variance_components(x[:9], n_boot=100)
    assert math.isnan(few.a1_lo) and few.n_boot == 0 and math.isfinite(few.icc_a1)
    assert "fewer than 10 clusters: no bootstrap interval" in few.note


def test_reliability_table_fills_icc_for_incomplete_designs():
    """Defect 4: today icc_a1/icc_ak are NaN unless every annotator rated every output."""
    rng = np.random.default_rng(47)
    x = np.clip(np.round(simulate(rng, 60, 5, 3, s_i=4.0, s_r=0.5, s_e=1.0)), 1, 10)
    table = reliability_table(make_study(long_scores(x), criteria=[criterion()]), n_boot=300,
                              seed=2)
    row = table.iloc[0]
    ref = henderson_dense(x)
    assert row.icc_a1 == pytest.approx(ref["a1"], abs=1e-10)
    assert row.icc_ak == pytest.approx(ref["ak"], abs=1e-10)
    assert row.icc_method == rel.ICC_INCOMPLETE
    vc = rel.icc_variance_components(x, n_boot=300, seed=2)
    assert (row.icc_a1_lo, row.icc_a1_hi, row.icc_ak_lo, row.icc_ak_hi) == pytest.approx(
        (vc.a1_lo, vc.a1_hi, vc.ak_lo, vc.ak_hi))
    assert row.icc_a1_lo < row.icc_a1 < row.icc_a1_hi
    assert row.icc_ak_lo < row.icc_ak < row.icc_ak_hi
    assert row.judge_ceiling == pytest.approx(math.sqrt(ref["ak"]))


def test_icc_notes_and_refusals():
    with pytest.raises(ValueError):
        rel.icc_variance_components([["a", "b"], ["c", None]])
    one_rater = rel.icc_variance_components([[1.0], [2.0], [3.0]])
    assert math.isnan(one_rater.icc_a1) and one_rater.note == "fewer than 2 annotators"
    no_pair = rel.icc_variance_components([[1.0, None], [None, 2.0], [3.0, None]])
    assert math.isnan(no_pair.icc_a1) and no_pair.note == "no item rated by two annotators"
    const = rel.icc_variance_components([[3.0, 3.0], [3.0, None], [3.0, 3.0]])
    assert math.isnan(const.icc_a1) and const.note == "ICC undefined: no variance"
