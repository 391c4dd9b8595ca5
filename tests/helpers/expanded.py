"""The quantile levels of Hesterberg's expanded percentile interval, written out from its
definition (Hesterberg 2015, "What Teachers Should Know About the Bootstrap", sec. 4.5) for
the tests' reference bootstraps: the 2.5% tail becomes Phi(-sqrt(n/(n-1)) t_{.975, n-1})."""

from __future__ import annotations

from scipy import stats


def tails(n: int, ci: float = 0.95) -> list[float]:
    """[lower, upper] quantile levels for ``n`` resampled clusters."""
    tail = float(stats.norm.cdf(-((n / (n - 1)) ** 0.5) * stats.t.ppf((1 + ci) / 2, n - 1)))
    return [tail, 1 - tail]
