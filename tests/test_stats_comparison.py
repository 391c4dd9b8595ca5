"""annotation.stats.comparison: the published dependent-correlation examples, FDR, bootstrap."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from annotation.stats.comparison import (
    adjust_pvalues,
    meng_z,
    paired_bootstrap_diff,
    steiger_z,
    williams_t,
    zou_ci,
    zou_ci_independent,
    zou_ci_nonoverlap,
    zou_ci_overlap,
)

VECTORS = Path(__file__).resolve().parents[2] / "shared" / "stats" / "test_vectors.json"


@pytest.fixture(scope="module")
def dep() -> dict:
    if not VECTORS.exists():
        pytest.skip(f"{VECTORS} not present")
    return json.loads(VECTORS.read_text())["dependent_correlations"]


def assert_published(value: float, published: float) -> None:
    """``value`` rounds to ``published`` at the number of decimals printed."""
    text = repr(float(published))
    decimals = len(text.split(".")[1]) if "." in text and "e" not in text else 12
    assert abs(value - published) <= 0.5 * 10.0**-decimals + 1e-12, (value, published)


def overlap_args(a: dict) -> tuple[float, float, float, int]:
    """cocor names -> Steiger's: j is the shared variable 1, k = 2, h = 3."""
    return a["r_jk"], a["r_jh"], a["r_kh"], a["n"]


# ------------------------------------------------------------------- published vectors


def test_williams1959(dep: dict) -> None:
    v = dep["williams1959"]
    res = williams_t(*overlap_args(v["args"]))
    assert_published(res.statistic, v["published"]["t"])
    assert_published(res.p, v["published"]["p"])
    assert res.df == v["published"]["df"]
    assert res.statistic == pytest.approx(v["computed"]["t"], rel=1e-12)
    assert res.p == pytest.approx(v["computed"]["p"], rel=1e-12)


@pytest.mark.parametrize("name", ["steiger1980_caseA", "steiger1980_depcor"])
def test_steiger1980(dep: dict, name: str) -> None:
    v = dep[name]
    res = steiger_z(*overlap_args(v["args"]))
    assert_published(res.statistic, v["published"]["z"])
    assert res.statistic == pytest.approx(v["computed"]["z"], rel=1e-12)
    if "p" in v["published"]:
        assert_published(res.p, v["published"]["p"])
        assert res.p == pytest.approx(v["computed"]["p"], rel=1e-12)
    if "z_paper" in v["published"]:  # Steiger's print, off in the third decimal
        assert res.statistic == pytest.approx(v["published"]["z_paper"], abs=5e-3)


def test_meng1992(dep: dict) -> None:
    v = dep["meng1992"]
    res = meng_z(*overlap_args(v["args"]))
    assert_published(res.statistic, v["published"]["z"])
    assert_published(res.p_one_sided, v["published"]["p_one_sided"])
    assert res.statistic == pytest.approx(v["computed"]["z"], rel=1e-12)
    assert res.p_one_sided == pytest.approx(v["computed"]["p_one_sided"], rel=1e-12)
    # the example needs Meng's formula: Steiger's Z differs in the second decimal
    assert abs(steiger_z(*overlap_args(v["args"])).statistic - v["computed"]["z"]) > 0.01


def _check_interval(res, v: dict) -> None:
    lo, hi = v["published"]["ci95"]
    assert_published(res.lo, lo)
    assert_published(res.hi, hi)
    clo, chi = v["computed"]["ci95"]
    assert res.lo == pytest.approx(clo, rel=1e-12)
    assert res.hi == pytest.approx(chi, rel=1e-12)


def test_zou2007_overlap(dep: dict) -> None:
    v = dep["zou2007_overlap"]
    r12, r13, r23, n = overlap_args(v["args"])
    _check_interval(zou_ci_overlap(r12, r13, r23, n), v)
    _check_interval(zou_ci(r12=r12, r13=r13, r23=r23, n=n), v)


def test_zou2007_nonoverlap(dep: dict) -> None:
    v = dep["zou2007_nonoverlap"]
    a = v["args"]
    kw = dict(r12=a["r_jk"], r34=a["r_hm"], r13=a["r_jh"], r14=a["r_jm"], r23=a["r_kh"],
              r24=a["r_km"], n=a["n"])  # fmt: skip
    _check_interval(zou_ci_nonoverlap(**kw), v)
    _check_interval(zou_ci(**kw), v)


def test_zou2007_independent(dep: dict) -> None:
    v = dep["zou2007_independent"]
    a = v["args"]
    _check_interval(zou_ci_independent(a["r1"], a["n1"], a["r2"], a["n2"]), v)
    res = zou_ci(r1=a["r1"], n1=a["n1"], r2=a["r2"], n2=a["n2"])
    _check_interval(res, v)
    assert res.corr_between == 0 and not res.excludes_zero


# --------------------------------------------------------------------------- properties


def test_dependent_tests_antisymmetric_and_null() -> None:
    for f in (williams_t, steiger_z, meng_z):
        a, b = f(0.6, 0.4, 0.5, 80), f(0.4, 0.6, 0.5, 80)
        assert a.statistic == pytest.approx(-b.statistic)
        assert a.p == pytest.approx(b.p)
        assert a.p_one_sided == pytest.approx(1 - b.p_one_sided)
        null = f(0.5, 0.5, 0.3, 80)
        assert null.statistic == 0 and null.p == pytest.approx(1.0)
    # more correlated judges -> the same difference is more significant
    assert williams_t(0.6, 0.5, 0.9, 100).p < williams_t(0.6, 0.5, 0.1, 100).p


def test_zou_nonoverlap_reduces_to_independent_when_uncorrelated() -> None:
    a = zou_ci_nonoverlap(0.5, 0.3, 0.0, 0.0, 0.0, 0.0, 100)
    b = zou_ci_independent(0.5, 100, 0.3, 100)
    assert (a.lo, a.hi) == pytest.approx((b.lo, b.hi))


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="overlapping"):
        zou_ci(r12=0.3, r13=0.2, n=50)
    with pytest.raises(ValueError, match="correlation"):
        williams_t(1.3, 0.2, 0.1, 50)
    with pytest.raises(ValueError, match="n must"):
        steiger_z(0.3, 0.2, 0.1, 3)


# ---------------------------------------------------------------------------------- FDR


def test_bh_by_hand() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted .005 .01 .03 .04 -> m p / rank = .02 .02 .04 .04 (monotone already)
    assert adjust_pvalues(p, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    c = 1 + 1 / 2 + 1 / 3 + 1 / 4  # 25/12
    assert adjust_pvalues(p, "by") == pytest.approx(np.array([0.02, 0.04, 0.04, 0.02]) * c)
    # step-up: a larger p can pull a smaller one down
    assert adjust_pvalues([0.02, 0.03, 0.035], "bh") == pytest.approx([0.035, 0.035, 0.035])
    assert adjust_pvalues([0.5, 0.9], "by") == pytest.approx([1.0, 1.0])  # capped
    assert adjust_pvalues([0.2], "bh") == pytest.approx([0.2])


def test_adjust_nan_and_series() -> None:
    s = pd.Series([0.01, np.nan, 0.04], index=["a", "b", "c"], name="p")
    out = adjust_pvalues(s, "bh")
    assert isinstance(out, pd.Series) and list(out.index) == ["a", "b", "c"]
    assert np.isnan(out["b"])
    assert out[["a", "c"]].tolist() == pytest.approx([0.02, 0.04])  # m = 2
    assert adjust_pvalues([], "by").shape == (0,)
    with pytest.raises(ValueError):
        adjust_pvalues([0.1], "holm")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        adjust_pvalues([1.5], "bh")


@pytest.mark.parametrize("seed", range(5))
def test_adjust_matches_step_up_rule(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0, 0.01, 5), rng.uniform(0, 1, 25)])
    q = 0.05
    for method, c in (("bh", 1.0), ("by", np.sum(1 / np.arange(1, 31)))):
        ps = np.sort(p)
        ok = np.flatnonzero(ps <= np.arange(1, 31) / 30 * q / c)
        n_reject = ok.max() + 1 if len(ok) else 0
        assert (adjust_pvalues(p, method) <= q).sum() == n_reject


@pytest.mark.parametrize("seed", range(5))
def test_adjust_matches_statsmodels(seed: int) -> None:
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, 0.2, 40) ** 2
    for method, sm in (("bh", "fdr_bh"), ("by", "fdr_by")):
        reject, adj, _, _ = multitest.multipletests(p, alpha=0.05, method=sm)
        ours = adjust_pvalues(p, method)
        np.testing.assert_allclose(ours, adj, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(ours <= 0.05, reject)


# --------------------------------------------------------------------- paired bootstrap


def _judges(seed: int = 0, n: int = 200):
    rng = np.random.default_rng(seed)
    human = rng.normal(size=n)
    a = human + rng.normal(0, 0.7, n)
    b = human + rng.normal(0, 1.4, n)
    return a, b, human


@pytest.mark.parametrize("stat", ["pearson", "spearman", "kendall"])
def test_paired_bootstrap_detects_better_judge(stat: str) -> None:
    a, b, h = _judges()
    res = paired_bootstrap_diff(a, b, h, stat=stat, n_boot=800, seed=1)
    f = {"pearson": stats.pearsonr, "spearman": stats.spearmanr,
         "kendall": stats.kendalltau}[stat]  # fmt: skip
    assert res.r_a == pytest.approx(f(a, h).statistic)
    assert res.r_b == pytest.approx(f(b, h).statistic)
    assert res.diff == pytest.approx(res.r_a - res.r_b)
    assert 0 < res.lo < res.diff < res.hi
    assert res.p < 0.01 and res.p >= 1 / 801
    swapped = paired_bootstrap_diff(b, a, h, stat=stat, n_boot=800, seed=1)
    assert swapped.diff == pytest.approx(-res.diff)
    assert (swapped.lo, swapped.hi) == pytest.approx((-res.hi, -res.lo))


def test_paired_bootstrap_identical_judges() -> None:
    a, _, h = _judges(2)
    res = paired_bootstrap_diff(a, a.copy(), h, n_boot=200)
    assert res.diff == 0 and res.lo == 0 and res.hi == 0 and res.p == 1.0


def test_paired_bootstrap_agrees_with_zou_on_normal_data() -> None:
    a, b, h = _judges(3, 1000)
    boot = paired_bootstrap_diff(a, b, h, n_boot=2000, seed=0)
    r12, r13 = stats.pearsonr(h, a).statistic, stats.pearsonr(h, b).statistic
    r23 = stats.pearsonr(a, b).statistic
    zou = zou_ci_overlap(r12, r13, r23, 1000)
    assert zou.diff == pytest.approx(boot.diff)
    assert boot.lo == pytest.approx(zou.lo, abs=0.02)
    assert boot.hi == pytest.approx(zou.hi, abs=0.02)


def test_paired_bootstrap_seed_nan_and_items() -> None:
    a, b, h = _judges(4, 120)
    x = paired_bootstrap_diff(a, b, h, stat="spearman", n_boot=300, seed=9)
    assert x == paired_bootstrap_diff(a, b, h, stat="spearman", n_boot=300, seed=9)
    y = paired_bootstrap_diff(a, b, h, stat="spearman", n_boot=300, seed=10)
    assert (x.lo, x.hi) != (y.lo, y.hi)
    a2 = a.copy()
    a2[:5] = np.nan
    z = paired_bootstrap_diff(a2, b, h, n_boot=100)
    assert z.n == 115  # judge b is scored on the same 115 rows
    assert z.r_b == pytest.approx(stats.pearsonr(b[5:], h[5:]).statistic)
    # items: identical copies of each row resampled together = resampling the rows
    k = 3
    items = np.repeat(np.arange(120), k)
    clustered = paired_bootstrap_diff(
        np.repeat(a, k), np.repeat(b, k), np.repeat(h, k), items=items, n_boot=300, seed=9
    )
    plain = paired_bootstrap_diff(a, b, h, n_boot=300, seed=9)
    assert clustered.n == 360 and clustered.n_items == 120
    assert (clustered.lo, clustered.hi, clustered.p) == pytest.approx((plain.lo, plain.hi, plain.p))
    frame = plain.to_frame()
    assert frame.shape == (1, 11) and frame["stat"].iloc[0] == "pearson"
    with pytest.raises(ValueError, match="stat"):
        paired_bootstrap_diff(a, b, h, stat="tau")  # type: ignore[arg-type]
