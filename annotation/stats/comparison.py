"""Is judge A better than judge B? Two correlations with one human reference, and FDR control.

Notation follows Steiger (1980) and Zou (2007): variables 1, 2, 3 (, 4); ``r12`` is the
correlation of variables 1 and 2. For two judges against the same humans on the same items,
take 1 = human, 2 = judge A, 3 = judge B: ``r12`` and ``r13`` are the two judges' validity
correlations, ``r23`` the judges' correlation with each other (the *overlapping* case). The
test vectors of ``shared/stats/test_vectors.json`` use cocor's names: ``r_jk`` = r12,
``r_jh`` = r13, ``r_kh`` = r23 (and, non-overlapping, ``r_hm`` = r34, ``r_jm`` = r14,
``r_km`` = r24).

All closed-form tests assume Pearson correlations of (bivariate) normal data; for Spearman or
Kendall, or non-normal ratings, confirm with :func:`paired_bootstrap_diff` over items.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from annotation.stats.correlation import (
    POINT_STATS,
    ArrayLike,
    as_float_array,
    bootstrap_statistics,
    fisher_ci,
    item_codes,
    percentile_interval,
)

__all__ = [
    "DependentTest",
    "PairedBootstrapDiff",
    "ZouInterval",
    "adjust_pvalues",
    "meng_z",
    "paired_bootstrap_diff",
    "steiger_z",
    "williams_t",
    "zou_ci",
    "zou_ci_independent",
    "zou_ci_nonoverlap",
    "zou_ci_overlap",
]


class _Frame:
    def to_frame(self) -> pd.DataFrame:
        """The result as a one-row DataFrame."""
        return pd.DataFrame([asdict(self)])  # type: ignore[call-overload]


@dataclass(frozen=True)
class DependentTest(_Frame):
    """A test of H0: rho12 = rho13 (statistic, its degrees of freedom or None for z)."""

    method: str
    diff: float  # r12 - r13
    statistic: float
    df: float | None
    p: float  # two-sided
    p_one_sided: float  # H1: rho12 > rho13


def _check_r(**rs: float) -> None:
    for name, r in rs.items():
        if not -1.0 <= r <= 1.0:
            raise ValueError(f"{name} must be a correlation in [-1, 1], got {r}")


def williams_t(r12: float, r13: float, r23: float, n: int) -> DependentTest:
    """Williams' t for two overlapping dependent correlations (H0: rho12 = rho13).

    Williams (1959), as given by Steiger (1980, Psychol. Bull. 87:245, eq. 7)::

        t = (r12 - r13) sqrt( (n-1)(1+r23) / (2 (n-1)/(n-3) |R| + rbar^2 (1-r23)^3) )

    with |R| = 1 - r12^2 - r13^2 - r23^2 + 2 r12 r13 r23, rbar = (r12 + r13)/2 and
    n - 3 degrees of freedom. Steiger's recommended test for this case; as cocor's
    ``williams1959``.
    """
    _check_r(r12=r12, r13=r13, r23=r23)
    if n <= 3:
        raise ValueError(f"n must exceed 3, got {n}")
    det = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    rbar = (r12 + r13) / 2
    t = (r12 - r13) * np.sqrt(
        (n - 1) * (1 + r23) / (2 * (n - 1) / (n - 3) * det + rbar**2 * (1 - r23) ** 3)
    )
    df = n - 3
    return DependentTest(
        method="Williams (1959) t",
        diff=r12 - r13,
        statistic=float(t),
        df=float(df),
        p=float(2 * stats.t.sf(abs(t), df)),
        p_one_sided=float(stats.t.sf(t, df)),
    )


def steiger_z(r12: float, r13: float, r23: float, n: int) -> DependentTest:
    """Steiger's Z for two overlapping dependent correlations, pooled r (H0: rho12 = rho13).

    Steiger (1980, eq. 14, with eq. 3 for the covariance of the z's evaluated at the pooled
    rbar = (r12 + r13)/2, as his eq. 15 recommends)::

        Z = (z12 - z13) sqrt(n - 3) / sqrt(2 - 2 s),   s = psi / (1 - rbar^2)^2,
        psi = r23 (1 - 2 rbar^2) - rbar^2 (1 - 2 rbar^2 - r23^2) / 2

    with z = atanh(r). This is cocor's ``steiger1980``; Steiger's own printed Case A value
    (-.8913) differs in the third decimal from the exact formula (-.8887).
    """
    _check_r(r12=r12, r13=r13, r23=r23)
    if n <= 3:
        raise ValueError(f"n must exceed 3, got {n}")
    rbar = (r12 + r13) / 2
    psi = r23 * (1 - 2 * rbar**2) - 0.5 * rbar**2 * (1 - 2 * rbar**2 - r23**2)
    s = psi / (1 - rbar**2) ** 2
    z = (np.arctanh(r12) - np.arctanh(r13)) * np.sqrt(n - 3) / np.sqrt(2 - 2 * s)
    return DependentTest(
        method="Steiger (1980) Z",
        diff=r12 - r13,
        statistic=float(z),
        df=None,
        p=float(2 * stats.norm.sf(abs(z))),
        p_one_sided=float(stats.norm.sf(z)),
    )


def meng_z(r12: float, r13: float, r23: float, n: int) -> DependentTest:
    """Meng, Rosenthal & Rubin's Z for two overlapping correlations (H0: rho12 = rho13).

    Meng, Rosenthal & Rubin (1992, Psychol. Bull. 111:172, eq. 1)::

        Z = (z12 - z13) sqrt( (n - 3) / (2 (1 - r23) h) ),
        h = (1 - f rbar2) / (1 - rbar2),  f = min(1, (1 - r23) / (2 (1 - rbar2))),
        rbar2 = (r12^2 + r13^2) / 2
    """
    _check_r(r12=r12, r13=r13, r23=r23)
    if n <= 3:
        raise ValueError(f"n must exceed 3, got {n}")
    rbar2 = (r12**2 + r13**2) / 2
    f = min(1.0, (1 - r23) / (2 * (1 - rbar2)))
    h = (1 - f * rbar2) / (1 - rbar2)
    z = (np.arctanh(r12) - np.arctanh(r13)) * np.sqrt((n - 3) / (2 * (1 - r23) * h))
    return DependentTest(
        method="Meng, Rosenthal & Rubin (1992) Z",
        diff=r12 - r13,
        statistic=float(z),
        df=None,
        p=float(2 * stats.norm.sf(abs(z))),
        p_one_sided=float(stats.norm.sf(z)),
    )


# ------------------------------------------------------------------------------ Zou


@dataclass(frozen=True)
class ZouInterval(_Frame):
    """Zou's (2007) interval for a difference of two correlations."""

    case: str  # "overlapping", "nonoverlapping" or "independent"
    diff: float
    lo: float
    hi: float
    ci: float
    corr_between: float  # estimated correlation of the two r's (0 when independent)

    @property
    def excludes_zero(self) -> bool:
        return bool(self.lo > 0 or self.hi < 0)


def _divide(num: float, den: float) -> float:
    """``num / den`` in float64, NaN (not ZeroDivisionError) when ``den`` is 0: a
    correlation of exactly +-1 has no Zou interval."""
    return float(num) / float(den) if float(den) != 0.0 else float("nan")


def _zou(case: str, r1: float, n1: int, r2: float, n2: int, c: float, ci: float) -> ZouInterval:
    """Zou (2007, eq. 12-13) modified asymptotic interval from the two Fisher intervals."""
    l1, u1 = fisher_ci(r1, n1, ci)
    l2, u2 = fisher_ci(r2, n2, ci)
    diff = r1 - r2
    lo = diff - np.sqrt((r1 - l1) ** 2 + (u2 - r2) ** 2 - 2 * c * (r1 - l1) * (u2 - r2))
    hi = diff + np.sqrt((u1 - r1) ** 2 + (r2 - l2) ** 2 - 2 * c * (u1 - r1) * (r2 - l2))
    return ZouInterval(case, float(diff), float(lo), float(hi), ci, float(c))


def zou_ci_overlap(r12: float, r13: float, r23: float, n: int, ci: float = 0.95) -> ZouInterval:
    """Zou's interval for rho12 - rho13, two correlations sharing variable 1.

    Zou (2007, Psychol. Methods 12:399, eq. 12-13 with the correlation between r12 and r13
    from Olkin & Finn 1990 / Steiger 1980 eq. 3, text below eq. 13)::

        c = ((r23 - r12 r13 / 2)(1 - r12^2 - r13^2 - r23^2) + r23^3)
            / ((1 - r12^2)(1 - r13^2))
    """
    _check_r(r12=r12, r13=r13, r23=r23)
    c = _divide(((r23 - 0.5 * r12 * r13) * (1 - r12**2 - r13**2 - r23**2) + r23**3),
                (1 - r12**2) * (1 - r13**2))
    return _zou("overlapping", r12, n, r13, n, c, ci)


def zou_ci_nonoverlap(
    r12: float,
    r34: float,
    r13: float,
    r14: float,
    r23: float,
    r24: float,
    n: int,
    ci: float = 0.95,
) -> ZouInterval:
    """Zou's interval for rho12 - rho34, two correlations on the same cases, no shared variable.

    Zou (2007, eq. 12-13), correlation between r12 and r34 from Pearson & Filon (1898) as in
    Steiger (1980, eq. 4)::

        c = [ r12 r34 (r13^2 + r14^2 + r23^2 + r24^2) / 2 + r13 r24 + r14 r23
              - (r12 r13 r14 + r12 r23 r24 + r13 r23 r34 + r14 r24 r34) ]
            / ((1 - r12^2)(1 - r34^2))
    """
    _check_r(r12=r12, r34=r34, r13=r13, r14=r14, r23=r23, r24=r24)
    num = (
        0.5 * r12 * r34 * (r13**2 + r14**2 + r23**2 + r24**2)
        + r13 * r24
        + r14 * r23
        - (r12 * r13 * r14 + r12 * r23 * r24 + r13 * r23 * r34 + r14 * r24 * r34)
    )
    c = _divide(num, (1 - r12**2) * (1 - r34**2))
    return _zou("nonoverlapping", r12, n, r34, n, c, ci)


def zou_ci_independent(r1: float, n1: int, r2: float, n2: int, ci: float = 0.95) -> ZouInterval:
    """Zou's interval for rho1 - rho2 from two independent samples (Zou 2007, eq. 12-13, c = 0).

    E.g. one judge's correlation on two disjoint item sets.
    """
    _check_r(r1=r1, r2=r2)
    return _zou("independent", r1, n1, r2, n2, 0.0, ci)


def zou_ci(
    *,
    r12: float | None = None,
    r13: float | None = None,
    r23: float | None = None,
    r34: float | None = None,
    r14: float | None = None,
    r24: float | None = None,
    n: int | None = None,
    r1: float | None = None,
    r2: float | None = None,
    n1: int | None = None,
    n2: int | None = None,
    ci: float = 0.95,
) -> ZouInterval:
    """Zou's (2007) interval for a difference of correlations; the case follows the arguments.

    * overlapping (rho12 - rho13, variable 1 shared): ``r12, r13, r23, n``
    * non-overlapping (rho12 - rho34, same cases): ``r12, r34, r13, r14, r23, r24, n``
    * independent (rho1 - rho2, two samples): ``r1, n1, r2, n2``

    See :func:`zou_ci_overlap`, :func:`zou_ci_nonoverlap`, :func:`zou_ci_independent`.
    """
    given = {
        k
        for k, v in dict(
            r12=r12, r13=r13, r23=r23, r34=r34, r14=r14, r24=r24, n=n, r1=r1, r2=r2, n1=n1, n2=n2
        ).items()
        if v is not None
    }
    if given == {"r1", "r2", "n1", "n2"}:
        return zou_ci_independent(r1, n1, r2, n2, ci)  # type: ignore[arg-type]
    if given == {"r12", "r13", "r23", "n"}:
        return zou_ci_overlap(r12, r13, r23, n, ci)  # type: ignore[arg-type]
    if given == {"r12", "r34", "r13", "r14", "r23", "r24", "n"}:
        return zou_ci_nonoverlap(r12, r34, r13, r14, r23, r24, n, ci)  # type: ignore[arg-type]
    raise ValueError(
        "give r12, r13, r23, n (overlapping); r12, r34, r13, r14, r23, r24, n "
        f"(non-overlapping); or r1, n1, r2, n2 (independent); got {sorted(given)}"
    )


# -------------------------------------------------------------------- paired bootstrap


Statistic = Literal["pearson", "spearman", "kendall"]


@dataclass(frozen=True)
class PairedBootstrapDiff(_Frame):
    """Difference of two judges' correlations with the same humans on the same items."""

    stat: str
    n: int
    n_items: int
    r_a: float
    r_b: float
    diff: float  # r_a - r_b
    lo: float
    hi: float
    p: float  # two-sided percentile bootstrap p for H0: diff = 0
    ci: float
    n_boot: int


def paired_bootstrap_diff(
    judge_a: ArrayLike,
    judge_b: ArrayLike,
    human: ArrayLike,
    *,
    items: ArrayLike | None = None,
    stat: Statistic = "pearson",
    n_boot: int = 1000,
    seed: int | None = 0,
    ci: float = 0.95,
) -> PairedBootstrapDiff:
    """Paired (cluster) bootstrap of corr(judge_a, human) - corr(judge_b, human).

    Rows missing any of the three values are dropped, so both judges are scored on the
    same rows. Each resample draws items with replacement (rows of one item together) and
    evaluates both correlations on it, so the difference is paired (Efron & Tibshirani 1993,
    sec. 13; cluster resampling: Davison & Hinkley 1997, sec. 3.8). ``lo``/``hi`` is the
    percentile interval; ``p`` the two-sided percentile p-value
    ``min(1, 2 min((1 + #{d* <= 0}) / (B + 1), (1 + #{d* >= 0}) / (B + 1)))``
    (Davison & Hinkley 1997, eq. 4.11, add-one so it is never 0), over resamples where
    both correlations are defined.
    """
    if stat not in POINT_STATS:
        raise ValueError(f"stat must be one of {sorted(POINT_STATS)}, got {stat!r}")
    a = as_float_array(judge_a, "judge_a")
    b = as_float_array(judge_b, "judge_b")
    h = as_float_array(human, "human")
    if not len(a) == len(b) == len(h):
        raise ValueError(f"lengths differ: {len(a)}, {len(b)}, {len(h)}")
    codes, _ = item_codes(items, len(a))
    keep = np.isfinite(a) & np.isfinite(b) & np.isfinite(h)
    a, b, h = a[keep], b[keep], h[keep]
    codes = np.unique(codes[keep], return_inverse=True)[1].reshape(-1)
    n_items = int(codes.max()) + 1 if len(codes) else 0
    point = POINT_STATS[stat]
    r_a, r_b = point(a, h), point(b, h)
    diff = r_a - r_b
    lo = hi = p = np.nan
    if n_boot > 0 and np.isfinite(diff) and n_items >= 3:
        boot = bootstrap_statistics(
            [(a, h), (b, h)], codes, n_items, n_boot=n_boot, seed=seed, statistics=(stat,)
        )
        d = boot[(0, stat)] - boot[(1, stat)]
        d = d[np.isfinite(d)]
        if len(d):
            lo, hi = percentile_interval(d, ci, n_items)
            below = (1 + np.sum(d <= 0)) / (len(d) + 1)
            above = (1 + np.sum(d >= 0)) / (len(d) + 1)
            p = float(min(1.0, 2 * min(below, above)))
    return PairedBootstrapDiff(
        stat=stat,
        n=int(len(h)),
        n_items=n_items,
        r_a=r_a,
        r_b=r_b,
        diff=float(diff),
        lo=float(lo),
        hi=float(hi),
        p=float(p),
        ci=ci,
        n_boot=int(n_boot),
    )


# ---------------------------------------------------------------------------- FDR


def adjust_pvalues(p: ArrayLike, method: Literal["bh", "by"] = "bh") -> np.ndarray | pd.Series:
    """Benjamini-Hochberg or Benjamini-Yekutieli adjusted p-values (step-up).

    BH (Benjamini & Hochberg 1995, JRSS B 57:289): with p sorted ascending,
    ``p_adj(i) = min_{j >= i} min(1, m p(j) / j)``. BY (Benjamini & Yekutieli 2001,
    Ann. Stat. 29:1165, Theorem 1.3) multiplies by ``c(m) = sum_{k<=m} 1/k``, valid under
    any dependence. Rejecting ``p_adj <= q`` is exactly the step-up procedure at FDR q.
    Same values as statsmodels ``multipletests(p, method="fdr_bh" / "fdr_by")``.
    NaN p-values stay NaN and do not count in m. A Series keeps its index.
    """
    if method not in ("bh", "by"):
        raise ValueError(f"method must be 'bh' or 'by', got {method!r}")
    arr = as_float_array(p, "p")
    out = np.full(arr.shape, np.nan)
    ok = np.isfinite(arr)
    pv = arr[ok]
    m = len(pv)
    if m:
        if (pv < 0).any() or (pv > 1).any():
            raise ValueError("p-values must lie in [0, 1]")
        order = np.argsort(pv, kind="stable")
        ranks = np.arange(1, m + 1)
        c = np.sum(1.0 / ranks) if method == "by" else 1.0
        scaled = pv[order] * m * c / ranks
        adj_sorted = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
        adj = np.empty(m)
        adj[order] = adj_sorted
        out[ok] = adj
    if isinstance(p, pd.Series):
        return pd.Series(out, index=p.index, name=p.name)
    return out
