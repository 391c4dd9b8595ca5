"""Prediction-powered means (:mod:`annotation.stats.ppi`), checked against the authors'
package ``ppi-python`` and, for coverage, against simulated studies with a known mean."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from annotation.stats.ppi import ppi_mean, tuned_lambda


def _data(rng: np.random.Generator, n: int, big_n: int, *, bias: float = 0.7,
          noise: float = 0.6, slope: float = 1.0) -> tuple[np.ndarray, ...]:
    """Human scores y around a true mean of 5; the judge f = slope * y + bias + noise."""
    def draw(size: int) -> tuple[np.ndarray, np.ndarray]:
        y = 5 + rng.normal(0, 1.5, size)
        return y, slope * y + bias + rng.normal(0, noise, size)
    y, f = draw(n)
    _, fu = draw(big_n)
    return y, f, fu


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("lam", [None, 1.0, 0.0, 0.4])
def test_estimate_and_interval_match_ppi_python(seed, lam):
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(seed)
    n, big_n = int(rng.integers(15, 200)), int(rng.integers(50, 3000))
    y, f, fu = _data(rng, n, big_n, slope=float(rng.uniform(0.2, 1.5)),
                     noise=float(rng.uniform(0.1, 3)))
    ours = ppi_mean(y, f, fu, lam=lam, small_sample=False).iloc[0]
    point = ppi_py.ppi_mean_pointestimate(y, f, fu, lam=lam)
    lo, hi = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05, lam=lam)
    assert ours.estimate == pytest.approx(float(np.ravel(point)[0]), rel=1e-10)
    assert (ours.lo, ours.hi) == pytest.approx((float(lo[0]), float(hi[0])), rel=1e-10)


def test_the_tuned_weight_is_ppi_plus_plus_for_a_mean():
    """PPI++ (Angelopoulos, Duchi & Zrnic 2023, Example 6.1): Cov(Y, f) / ((1 + n/N)
    Var(f)), written out here from the arrays."""
    rng = np.random.default_rng(3)
    y, f, fu = _data(rng, 80, 400, slope=1.5)
    n, big_n = len(y), len(fu)
    cov = np.mean((y - y.mean()) * (f - f.mean()))
    expected = cov / ((1 + n / big_n) * np.var(np.concatenate([f, fu]), ddof=1))
    assert 0 < expected < 1
    assert tuned_lambda(y, f, fu) == pytest.approx(expected)
    assert tuned_lambda(y, -f, -fu) == 0.0  # a judge that is anti-correlated: clipped to 0


def test_lambda_zero_is_the_human_only_mean():
    rng = np.random.default_rng(1)
    y, f, fu = _data(rng, 50, 500)
    row = ppi_mean(y, f, fu, lam=0.0).iloc[0]
    assert row.estimate == pytest.approx(y.mean())
    assert (row.lo, row.hi) == pytest.approx((row.human_lo, row.human_hi))
    ttest = stats.ttest_1samp(y, 0).confidence_interval(0.95)  # Student's t interval
    assert (row.human_lo, row.human_hi) == pytest.approx((ttest.low, ttest.high))
    assert row.judge_mean == pytest.approx(np.concatenate([f, fu]).mean())


def test_the_small_sample_interval_is_the_normal_one_read_at_t_with_unbiased_variances():
    rng = np.random.default_rng(8)
    y, f, fu = _data(rng, 25, 300, noise=1.5)
    normal = ppi_mean(y, f, fu, small_sample=False).iloc[0]
    small = ppi_mean(y, f, fu).iloc[0]
    assert small.estimate == pytest.approx(normal.estimate) and small.lam == normal.lam
    lam = small.lam
    se = np.sqrt(np.var(y - lam * f, ddof=1) / 25 + lam**2 * np.var(fu, ddof=1) / 300)
    half = stats.t.ppf(0.975, 24) * se
    assert (small.lo, small.hi) == pytest.approx((small.estimate - half, small.estimate + half))


def test_too_little_data_says_why():
    assert "fewer than 2" in ppi_mean([5.0], [6.0], [6.0, 7.0]).iloc[0].note
    row = ppi_mean([5.0, 6.0, 7.0], [6.0, 6.5, 8.0], []).iloc[0]
    assert row.estimate == pytest.approx(6.0) and row.lam == 0.0
    assert "every output has a human score" in row.note
    const = ppi_mean([5.0, 6.0, 7.0], [6.0, 6.0, 6.0], [6.0] * 10).iloc[0]
    assert const.lam == 0.0 and const.estimate == pytest.approx(6.0)


@pytest.mark.parametrize(("case", "kw"), [
    ("good judge, biased", {"bias": 0.8, "noise": 0.5}),
    ("poor judge", {"bias": -1.0, "noise": 3.0, "slope": 0.3}),
    ("useless judge", {"bias": 0.0, "noise": 2.0, "slope": 0.0}),
])
def test_coverage_of_the_true_mean_is_nominal_whatever_the_judge(case, kw):
    """2,000 simulated studies (n = 60 human-scored outputs of N = 600 judged ones) with
    a true mean of 5: the 95% interval covers it in 93-97% of them (Monte Carlo se
    0.005), and with a good judge it is narrower than the human-only interval."""
    rng = np.random.default_rng(20_261_201)
    hits, widths, human_widths = 0, [], []
    for _ in range(2000):
        row = ppi_mean(*_data(rng, 60, 600, **kw)).iloc[0]
        hits += row.lo <= 5.0 <= row.hi
        widths.append(row.hi - row.lo)
        human_widths.append(row.human_hi - row.human_lo)
    coverage = hits / 2000
    assert 0.93 <= coverage <= 0.97, (case, coverage)
    ratio = np.mean(widths) / np.mean(human_widths)
    if case.startswith("good"):
        assert ratio < 0.6, ratio
    else:
        assert ratio < 1.02, ratio  # tuning never makes it (much) wider than the humans'
