"""The design-effect Wilson interval for clustered yes/no units
(annotation.stats.clustered.clustered_wilson): its variance against statsmodels'
cluster-robust variance, its reduction to the plain Wilson interval, and its coverage on
simulated clustered data with a known truth (where the plain Wilson interval over units
is too narrow)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from annotation.stats.agreement import wilson_interval
from annotation.stats.clustered import clustered_wilson

sm = pytest.importorskip("statsmodels.api")


def _clustered(rng: np.random.Generator, clusters: int, size: int, p: float, icc: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """Units in clusters: each cluster's own rate from a Beta with mean p and
    intra-cluster correlation icc (a beta-binomial), ``size`` units each."""
    a = p * (1 - icc) / icc
    b = (1 - p) * (1 - icc) / icc
    rates = rng.beta(a, b, clusters)
    y = (rng.random((clusters, size)) < rates[:, None]).astype(int).ravel()
    return y, np.repeat(np.arange(clusters), size)


def test_variance_is_statsmodels_cluster_robust_variance():
    rng = np.random.default_rng(3)
    y, g = _clustered(rng, 40, 4, 0.3, 0.4)
    # unequal cluster sizes too: drop some units
    keep = rng.random(y.size) > 0.2
    y, g = y[keep], g[keep]
    ours = clustered_wilson(y, g)
    assert ours.design_effect > 1
    fit = sm.OLS(y.astype(float), np.ones(y.size)).fit(cov_type="cluster",
                                                       cov_kwds={"groups": g})
    p = y.mean()
    assert ours.estimate == pytest.approx(p)
    assert p * (1 - p) / (y.size - 1) * ours.design_effect == pytest.approx(fit.bse[0] ** 2,
                                                                      rel=1e-9)


def test_independent_units_give_the_plain_wilson_interval():
    y = np.array([1] * 7 + [0] * 13)
    plain = stats.binomtest(7, 20).proportion_ci(method="wilson")
    for clusters in (None, np.arange(20)):
        ours = clustered_wilson(y, clusters)
        assert (ours.lo, ours.hi) == pytest.approx((plain.low, plain.high))
    # no variance to estimate: all yes, or a single cluster
    assert clustered_wilson([1, 1, 1, 1], [0, 0, 1, 1]).lo == pytest.approx(
        wilson_interval(4, 4).lo)
    assert clustered_wilson([1, 0, 1, 0], [0, 0, 0, 0]).design_effect == 1.0
    empty = clustered_wilson([], [])
    assert empty.n == 0 and math.isnan(empty.lo)


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        clustered_wilson([0, 2, 1])
    with pytest.raises(ValueError):
        clustered_wilson([0, 1, 1], [0, 1])


def test_coverage_on_clustered_data_with_a_known_truth():
    """Three reviewers on each of 60 outputs' instances (5 units per output, ICC 0.3):
    the plain Wilson interval over units misses the truth far more often than 5%; the
    design-effect interval covers it about 95% of the time."""
    rng = np.random.default_rng(11)
    truth, studies = 0.2, 1500
    plain = clustered = 0
    for _ in range(studies):
        y, g = _clustered(rng, 60, 5, truth, 0.3)
        w = wilson_interval(int(y.sum()), y.size)
        c = clustered_wilson(y, g)
        plain += w.lo <= truth <= w.hi
        clustered += c.lo <= truth <= c.hi
    assert plain / studies < 0.85
    assert 0.93 <= clustered / studies <= 0.975
