"""Means and differences of means (annotation.stats.means) against published output, the
reference packages and a coverage simulation with known truth."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from annotation.stats.means import mean_interval, welch_difference

# Cushny & Peebles' sleep data (Student 1908, the "sleep" data set of R): extra hours of
# sleep with two drugs, ten patients each
SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


def test_welch_on_the_sleep_data_as_r_prints_it():
    """R's ``t.test(extra ~ group, data = sleep)`` (Welch by default): t = -1.8608,
    df = 17.776, p-value = 0.07939, 95 percent CI -3.3654832 0.2054832, means 0.75 and
    2.33."""
    d = welch_difference(SLEEP_1, SLEEP_2).iloc[0]
    assert d["mean_x"] == pytest.approx(0.75)
    assert d["mean_y"] == pytest.approx(2.33)
    assert d["df"] == pytest.approx(17.776, abs=5e-4)
    assert d["p"] == pytest.approx(0.07939, abs=5e-6)
    assert (d["diff_lo"], d["diff_hi"]) == pytest.approx((-3.3654832, 0.2054832), abs=1e-7)


def test_welch_matches_statsmodels_and_scipy():
    sm = pytest.importorskip("statsmodels.stats.weightstats")
    rng = np.random.default_rng(3)
    x, y = rng.normal(5, 1, 14), rng.normal(6, 3, 31)
    d = welch_difference(x, y, conf=0.9).iloc[0]
    lo, hi = sm.CompareMeans(sm.DescrStatsW(x), sm.DescrStatsW(y)).tconfint_diff(
        alpha=0.1, usevar="unequal")
    assert (d["diff_lo"], d["diff_hi"]) == pytest.approx((lo, hi), rel=1e-12)
    assert d["p"] == pytest.approx(stats.ttest_ind(x, y, equal_var=False).pvalue, rel=1e-12)


def test_mean_interval_matches_statsmodels():
    sm = pytest.importorskip("statsmodels.stats.weightstats")
    x = np.array(SLEEP_2)
    m = mean_interval(x).iloc[0]
    assert (m["mean_lo"], m["mean_hi"]) == pytest.approx(
        sm.DescrStatsW(x).tconfint_mean(alpha=0.05), rel=1e-12)
    assert m["sd"] == pytest.approx(np.std(x, ddof=1))


def test_too_small_or_constant_groups_give_no_interval():
    assert np.isnan(mean_interval([4.0]).iloc[0]["mean_lo"])
    assert mean_interval([]).iloc[0]["n"] == 0
    d = welch_difference([5, 5, 5], [5, 5]).iloc[0]
    assert d["diff"] == 0 and np.isnan(d["diff_lo"]) and np.isnan(d["p"])
    d = welch_difference([1.0], [2.0, 3.0]).iloc[0]
    assert d["diff"] == pytest.approx(-1.5) and np.isnan(d["diff_hi"])
    assert welch_difference([1, np.nan, 3], [2, 4]).iloc[0]["n_x"] == 2


def test_coverage_of_both_intervals_with_known_truth():
    """2,000 studies each: the 95% intervals cover the true mean and the true difference
    about 95% of the time, with unequal variances and sizes (where a pooled-variance
    interval would not)."""
    rng = np.random.default_rng(11)
    reps = 2000
    mean_hits = diff_hits = 0
    for _ in range(reps):
        x = rng.normal(6.0, 1.0, 12)
        y = rng.normal(5.0, 3.0, 40)
        m = mean_interval(x).iloc[0]
        mean_hits += m["mean_lo"] <= 6.0 <= m["mean_hi"]
        d = welch_difference(x, y).iloc[0]
        diff_hits += d["diff_lo"] <= 1.0 <= d["diff_hi"]
    se = np.sqrt(0.95 * 0.05 / reps)  # about 0.005
    assert abs(mean_hits / reps - 0.95) < 3 * se
    assert abs(diff_hits / reps - 0.95) < 3 * se
