"""Limits of agreement between a judge and the humans on the same scale (Bland-Altman).

Bland & Altman (1986), "Statistical methods for assessing agreement between two methods of
clinical measurement", Lancet 1:307-310: the differences d = judge - human of paired
measurements, their mean (the bias) and the 95% limits of agreement mean(d) -/+ 1.96 sd(d),
within which about 95% of differences lie if they are roughly normal. The 1986 paper
rounded 1.96 to 2 (``z=2`` reproduces its figures).

Intervals (``conf``, 95% by default):

* the mean difference: the t interval mean(d) -/+ t_{n-1} sd / sqrt(n) (Bland & Altman 1986,
  "Precision of estimated limits");
* each limit, ``method="exact"`` (default): the exact interval for a normal quantile
  mu + z sigma, from the noncentral t distribution (Carkeet 2015, "Exact parametric
  confidence intervals for Bland-Altman limits of agreement", Optom Vis Sci 92:e71-e80,
  whose tolerance factors are these quantiles): sqrt(n) (mu + z sigma - mean(d)) / sd
  follows a noncentral t with n - 1 degrees of freedom and noncentrality z sqrt(n), so with
  its quantiles t'_a the upper limit's interval is mean(d) + sd t'_{(1-conf)/2} / sqrt(n) to
  mean(d) + sd t'_{(1+conf)/2} / sqrt(n), and the lower limit's is its mirror image;
* ``method="approximate"``: the large-sample standard error sqrt(3 sd^2 / n) of a limit with
  t_{n-1} (Bland & Altman 1986; Bland & Altman 1999, "Measuring agreement in method
  comparison studies", Stat Methods Med Res 8:135-160, sec. 3.3), as pingouin draws it.

Why exact by default: at n = 50-200 both give about 95% coverage in total, but the
approximate interval is symmetric while the sampling distribution of sd is skewed, so its
misses are lopsided (simulated under normality, 40,000 samples each: for the upper limit,
4.2% above and 0.8% below the interval at n = 50, 3.3% / 1.6% at n = 200, and 6.0% / 0.2%,
total 93.8%, at n = 20), while the exact interval misses 2.5% on each side at every n, which
is what a reader of "the upper limit could be as high as loa_hi_hi" needs. The exact method
assumes normal differences, as the limits themselves do.

Proportional bias (Bland & Altman 1999, sec. 3.2): the OLS regression of the difference on
the mean of the two measurements, ``slope`` with its t interval (n - 2 degrees of freedom)
and two-sided p. A slope also appears when one method's values are more spread out than the
other's with no bias at any level: cov(d, mean) = (var(judge) - var(human)) / 2.

Fewer than 3 pairs: every statistic NaN, with a note.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats

__all__ = ["COLUMNS", "limits_of_agreement"]

COLUMNS = ["n", "mean_diff", "mean_diff_lo", "mean_diff_hi", "sd_diff", "loa_lo", "loa_hi",
           "loa_lo_lo", "loa_lo_hi", "loa_hi_lo", "loa_hi_hi", "slope", "slope_lo",
           "slope_hi", "slope_p", "note"]
MIN_PAIRS = 3


def _pairs(judge: ArrayLike | pd.Series, human: ArrayLike | pd.Series
           ) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(judge, pd.Series) and isinstance(human, pd.Series):
        judge, human = judge.align(human, join="inner")
    x = np.asarray(judge, dtype=float).ravel()
    y = np.asarray(human, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"judge and human differ in length ({len(x)} and {len(y)})")
    ok = np.isfinite(x) & np.isfinite(y)
    return x[ok], y[ok]


def limits_of_agreement(judge: ArrayLike | pd.Series, human: ArrayLike | pd.Series, *,
                        conf: float = 0.95, z: float = 1.96,
                        method: Literal["exact", "approximate"] = "exact") -> pd.DataFrame:
    """Bland-Altman limits of agreement of ``judge`` against ``human``, as one tidy row.

    ``judge``, ``human``: paired measurements on the same scale (arrays of equal length, or
    two Series aligned on their index); pairs with a missing side are dropped. ``conf``: the
    level of every interval; ``z``: the multiple of sd for the limits (1.96 for 95% limits;
    2 in Bland & Altman 1986); ``method``: the interval of the limits (see the module
    docstring: ``"exact"``, Carkeet 2015; ``"approximate"``, Bland & Altman 1999 sec. 3.3).

    Columns: ``n`` (pairs), ``mean_diff`` (mean of judge - human) with its t interval
    ``mean_diff_lo``/``mean_diff_hi``, ``sd_diff`` (sample SD, n - 1), ``loa_lo``/``loa_hi``
    (mean_diff -/+ z sd_diff), ``loa_lo_lo``/``loa_lo_hi`` and ``loa_hi_lo``/``loa_hi_hi``
    (the interval of each limit), ``slope``/``slope_lo``/``slope_hi``/``slope_p`` (OLS of the
    difference on the pair's mean, Bland & Altman 1999 sec. 3.2), ``note``.
    """
    if not 0 < conf < 1:
        raise ValueError(f"conf must lie in (0, 1), got {conf}")
    if method not in ("exact", "approximate"):
        raise ValueError(f"method must be 'exact' or 'approximate', got {method!r}")
    x, y = _pairs(judge, human)
    n = len(x)
    row: dict[str, object] = {c: np.nan for c in COLUMNS}
    row["n"], row["note"] = n, ""
    if n < MIN_PAIRS:
        row["note"] = f"fewer than {MIN_PAIRS} pairs: no limits of agreement"
        return pd.DataFrame([row], columns=COLUMNS)
    d = x - y
    a = (x + y) / 2
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    t = float(stats.t.ppf((1 + conf) / 2, n - 1))
    notes = []
    row.update(mean_diff=mean, sd_diff=sd, mean_diff_lo=mean - t * sd / np.sqrt(n),
               mean_diff_hi=mean + t * sd / np.sqrt(n), loa_lo=mean - z * sd,
               loa_hi=mean + z * sd)
    if method == "exact":
        nc = z * np.sqrt(n)
        k_lo, k_hi = (float(stats.nct.ppf(p, n - 1, nc)) / np.sqrt(n)
                      for p in ((1 - conf) / 2, (1 + conf) / 2))
        row.update(loa_hi_lo=mean + k_lo * sd, loa_hi_hi=mean + k_hi * sd,
                   loa_lo_lo=mean - k_hi * sd, loa_lo_hi=mean - k_lo * sd)
    else:
        half = t * np.sqrt(3 * sd**2 / n)
        row.update(loa_lo_lo=row["loa_lo"] - half, loa_lo_hi=row["loa_lo"] + half,
                   loa_hi_lo=row["loa_hi"] - half, loa_hi_hi=row["loa_hi"] + half)
    if sd == 0:
        notes.append("all differences equal: the limits are the mean difference")
    sxx = float(np.sum((a - a.mean()) ** 2))
    if sxx == 0:
        notes.append("all pairs have the same mean: no proportional-bias slope")
    else:
        slope = float(np.sum((a - a.mean()) * (d - mean)) / sxx)
        resid = d - mean - slope * (a - a.mean())
        df = n - 2
        se = float(np.sqrt(np.sum(resid**2) / df / sxx))
        t2 = float(stats.t.ppf((1 + conf) / 2, df))
        # se 0: the differences lie on a line, the slope is exact
        exact = 0.0 if slope != 0 else np.nan
        p = float(2 * stats.t.sf(abs(slope / se), df)) if se > 0 else exact
        row.update(slope=slope, slope_lo=slope - t2 * se, slope_hi=slope + t2 * se, slope_p=p)
    row["note"] = "; ".join(notes)
    return pd.DataFrame([row], columns=COLUMNS)
