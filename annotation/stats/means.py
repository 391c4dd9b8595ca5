"""Means of scores and differences of means, with Student-t intervals.

* :func:`mean_interval`: the mean of independent scores with the Student (1908) t interval,
  ``mean +/- t_{n-1} * sd / sqrt(n)`` ("The probable error of a mean", Biometrika 6).
* :func:`welch_difference`: the difference of two independent means with Welch's (1947)
  interval and test, Satterthwaite degrees of freedom ("The generalization of 'Student's'
  problem when several different population variances are involved", Biometrika 34):
  it does not assume equal variances, which two groups of tasks (conflict, no conflict)
  rarely have.
* :func:`paired_difference`: the mean of paired differences with the Student (1908) t
  interval on the differences (the paired t test): the same task generated from its visual
  instruction and from a text variant.

All return tidy one-row DataFrames (pingouin's style), NaN where a group is too small.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats


def _clean(x: ArrayLike) -> np.ndarray:
    a = np.asarray(x, dtype=float).ravel()
    return a[np.isfinite(a)]


def mean_interval(x: ArrayLike, conf: float = 0.95) -> pd.DataFrame:
    """``n``, ``mean``, ``sd`` (n - 1), ``mean_lo``, ``mean_hi``: the Student-t interval of
    the mean of ``x`` (NaN values dropped; no interval below two values)."""
    a = _clean(x)
    n = len(a)
    mean = float(a.mean()) if n else math.nan
    sd = float(a.std(ddof=1)) if n > 1 else math.nan
    lo = hi = math.nan
    if n > 1:
        half = float(stats.t.ppf((1 + conf) / 2, n - 1)) * sd / math.sqrt(n)
        lo, hi = mean - half, mean + half
    return pd.DataFrame([{"n": n, "mean": mean, "sd": sd, "mean_lo": lo, "mean_hi": hi}])


def welch_difference(x: ArrayLike, y: ArrayLike, conf: float = 0.95) -> pd.DataFrame:
    """``n_x``, ``n_y``, ``mean_x``, ``mean_y``, ``diff`` (mean_x - mean_y), ``diff_lo``,
    ``diff_hi``, ``df`` (Welch-Satterthwaite) and the two-sided ``p`` of Welch's t test.
    NaN where a side has fewer than two values or both have no variance."""
    a, b = _clean(x), _clean(y)
    nx, ny = len(a), len(b)
    row = {"n_x": nx, "n_y": ny, "mean_x": float(a.mean()) if nx else math.nan,
           "mean_y": float(b.mean()) if ny else math.nan}
    row["diff"] = row["mean_x"] - row["mean_y"]
    row.update(diff_lo=math.nan, diff_hi=math.nan, df=math.nan, p=math.nan)
    if nx > 1 and ny > 1:
        vx, vy = a.var(ddof=1) / nx, b.var(ddof=1) / ny
        se = math.sqrt(vx + vy)
        if se > 0:
            df = (vx + vy) ** 2 / (vx ** 2 / (nx - 1) + vy ** 2 / (ny - 1))
            half = float(stats.t.ppf((1 + conf) / 2, df)) * se
            row.update(diff_lo=row["diff"] - half, diff_hi=row["diff"] + half, df=df,
                       p=float(2 * stats.t.sf(abs(row["diff"]) / se, df)))
    return pd.DataFrame([row])


def paired_difference(x: ArrayLike, y: ArrayLike, conf: float = 0.95) -> pd.DataFrame:
    """``n`` (pairs where both are finite), ``mean_x``, ``mean_y``, ``diff`` (the mean of
    ``x - y``), ``diff_lo``, ``diff_hi``, ``df`` (n - 1) and the two-sided ``p`` of the
    paired t test; ``x`` and ``y`` are aligned (pair i = ``x[i]``, ``y[i]``). NaN interval
    below two pairs or when every difference is the same."""
    a = np.asarray(x, dtype=float).ravel()
    b = np.asarray(y, dtype=float).ravel()
    if len(a) != len(b):
        raise ValueError(f"paired values must have the same length, got {len(a)} and {len(b)}")
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    n = len(a)
    d = a - b
    row = {"n": n, "mean_x": float(a.mean()) if n else math.nan,
           "mean_y": float(b.mean()) if n else math.nan,
           "diff": float(d.mean()) if n else math.nan,
           "diff_lo": math.nan, "diff_hi": math.nan, "df": math.nan, "p": math.nan}
    if n > 1:
        se = float(d.std(ddof=1)) / math.sqrt(n)
        if se > 0:
            half = float(stats.t.ppf((1 + conf) / 2, n - 1)) * se
            row.update(diff_lo=row["diff"] - half, diff_hi=row["diff"] + half, df=n - 1,
                       p=float(2 * stats.t.sf(abs(row["diff"]) / se, n - 1)))
    return pd.DataFrame([row])
