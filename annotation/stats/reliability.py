"""Reliability among many annotators, with missing data: humans among themselves.

Pure functions (no I/O). The wide layout is **units x raters** (one row per item, one
column per annotator, missing = ``None``/``NaN``/``pd.NA``), the orientation of most
packages and the transpose of the ``krippendorff`` package's, which this module hides.
``"cant_tell"`` answers count as missing (:data:`MISSING_TOKENS`).

* :func:`krippendorff_alpha`: Krippendorff's alpha at any level, via the ``krippendorff``
  package; NaN (not an exception) where there is no variation or no pairable unit.
* :func:`alpha_bootstrap`: the same with a percentile interval from a bootstrap over
  units, computed with vectorized coincidence matrices (checked against the package).
* :func:`multirater_agreement`: raw pairwise agreement, Gwet's AC1, Fleiss/Conger-style
  kappa with missing data, free-marginal kappa (irrCAC's definitions).
* :func:`fleiss_kappa` on a subjects x categories count matrix; :func:`category_counts`.
* :func:`icc`: the six Shrout & Fleiss / McGraw & Wong ICCs with F tests and intervals.
* :func:`alpha_table`: everything above for one long-format table, as one tidy row.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import krippendorff
import numpy as np
import pandas as pd
from scipy import sparse, stats

__all__ = [
    "LEVELS",
    "MISSING_TOKENS",
    "AlphaEstimate",
    "FleissKappa",
    "MultiRaterAgreement",
    "alpha_bootstrap",
    "alpha_table",
    "category_counts",
    "fleiss_kappa",
    "icc",
    "krippendorff_alpha",
    "multirater_agreement",
]

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")
MISSING_TOKENS: frozenset[str] = frozenset({"cant_tell"})
"""String answers treated as missing (compared after stripping and lower-casing)."""

_BOOT_CHUNK_CELLS = 4_000_000  # cells per block of bootstrap replicates (bounds memory)
_PACKAGE_MAX_CELLS = 20_000_000  # units x values^2 above which the package would need GBs


# --------------------------------------------------------------------------- input handling


def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, str):
        return v.strip().lower() in MISSING_TOKENS
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _as_object_matrix(data: Any) -> np.ndarray:
    """Units x raters as a 2-D object array with every missing value replaced by None."""
    if isinstance(data, pd.DataFrame):
        arr = data.astype(object).to_numpy()
    else:
        arr = np.empty((0, 0), dtype=object) if data is None else np.asarray(data, dtype=object)
        if arr.ndim == 1:
            arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise ValueError(f"need a 2-D units x raters table, got {arr.ndim} dimensions")
    out = np.empty(arr.shape, dtype=object)
    for idx, v in np.ndenumerate(arr):
        out[idx] = None if _is_missing(v) else v
    return out


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Number | np.bool_) and not isinstance(v, complex)


def _encode(
    data: Any, level: str, value_domain: Sequence[Any] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Values as floats for the metric (``x``, NaN = missing) and the sorted value domain.

    Numbers are used as they are. Non-numbers are allowed at the nominal level (coded by
    first appearance), or at the ordinal level when ``value_domain`` gives their order
    (coded by rank). Interval and ratio need numbers.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    obj = _as_object_matrix(data)
    present = [v for v in obj.ravel() if v is not None]
    x = np.full(obj.shape, np.nan)
    if value_domain is not None:
        domain = list(value_domain)
        numeric_domain = all(_is_number(v) for v in domain)
        if level in ("interval", "ratio") and not numeric_domain:
            raise ValueError(f"{level} alpha needs numeric values")
        pos = {v: i for i, v in enumerate(domain)}
        for idx, v in np.ndenumerate(obj):
            if v is None:
                continue
            if v not in pos:
                raise ValueError(f"value {v!r} is not in value_domain")
            x[idx] = float(v) if numeric_domain else pos[v]
        dom = (
            np.unique(np.asarray(domain, dtype=float))
            if numeric_domain
            else np.arange(len(domain), dtype=float)
        )
        return x, dom
    if all(_is_number(v) for v in present):
        for idx, v in np.ndenumerate(obj):
            if v is not None:
                x[idx] = float(v)
        return x, np.unique(x[~np.isnan(x)])
    if level != "nominal":
        raise ValueError(
            f"{level} alpha needs numeric values (or, for ordinal, an ordered value_domain)"
        )
    codes: dict[Hashable, int] = {}
    for idx, v in np.ndenumerate(obj):
        if v is not None:
            x[idx] = codes.setdefault(v, len(codes))
    return x, np.arange(len(codes), dtype=float)


@dataclass(frozen=True)
class _Coincidences:
    """Per-unit coincidence contributions of the pairable units, one sparse row per unit.

    Row u, column ``c * V + k`` holds ``n_uc (n_uk - [c = k]) / (m_u - 1)`` (Krippendorff
    2011, step 2: each of the m_u (m_u - 1) ordered pairs of values within a unit counts
    1 / (m_u - 1)). Units with fewer than two values are left out.
    """

    rows: sparse.csr_matrix  # pairable units x V^2
    domain: np.ndarray  # V sorted values
    n_values: int  # pairable values

    @property
    def n_units(self) -> int:
        return int(self.rows.shape[0])

    def total(self) -> np.ndarray:
        """The coincidence matrix of the data, 1 x V x V."""
        v = len(self.domain)
        return np.asarray(self.rows.sum(axis=0), dtype=float).reshape(1, v, v)


def _coincidences(x: np.ndarray, domain: np.ndarray) -> _Coincidences:
    """Sparse per-unit coincidences of the float matrix ``x`` (units x raters, NaN missing)."""
    n_units, n_dom = x.shape[0], len(domain)
    units, raters = np.nonzero(~np.isnan(x))
    codes = np.searchsorted(domain, x[units, raters])
    m = np.bincount(units, minlength=n_units)
    pairable = m >= 2
    keys, counts = np.unique(units * n_dom + codes, return_counts=True)  # sorted by unit
    unit, value = keys // n_dom, keys % n_dom
    keep = pairable[unit]
    unit, value, counts = unit[keep], value[keep], counts[keep].astype(float)
    new_id = np.cumsum(pairable) - 1
    row = new_id[unit]
    n_rows = int(pairable.sum())
    # all ordered pairs (i, j) of distinct values within a unit, i == j included
    size = np.bincount(row, minlength=n_rows)
    first = np.cumsum(size) - size
    left = np.repeat(np.arange(row.size), size[row])
    block = np.repeat(np.cumsum(size[row]) - size[row], size[row])
    right = first[row[left]] + (np.arange(left.size) - block)
    scale = 1.0 / (m[pairable] - 1.0)
    vals = counts[left] * (counts[right] - (left == right)) * scale[row[left]]
    nz = vals != 0
    rows = sparse.csr_matrix(
        (vals[nz], (row[left][nz], value[left][nz] * n_dom + value[right][nz])),
        shape=(n_rows, n_dom * n_dom),
    )
    return _Coincidences(rows, domain, int(m[pairable].sum()))


# --------------------------------------------------------------------------- Krippendorff


def krippendorff_alpha(
    data: Any,
    level: Level = "interval",
    *,
    value_domain: Sequence[Any] | None = None,
) -> float:
    """Krippendorff's alpha for units x raters data with missing values.

    ``alpha = 1 - D_o / D_e`` from the coincidence matrix (Krippendorff 2004, Content
    Analysis 2nd ed., sec. 11.3-11.5; Krippendorff 2011, "Computing Krippendorff's
    alpha-reliability", eqs. for nominal/ordinal/interval/ratio metrics), computed by the
    ``krippendorff`` package (Castro 2017) after transposing to its raters x units layout
    and turning ``None``/``pd.NA``/``"cant_tell"`` into ``np.nan``. The package holds a
    dense units x values^2 array; above 2e7 cells (e.g. thousands of items on a 0-100
    slider) the same formula is evaluated on sparse per-unit coincidence matrices instead
    (tested equal to the package).

    Returns NaN (does not raise) when alpha is undefined: no unit with two or more values,
    or no variation among the pairable values (D_e = 0). Non-numeric values are allowed
    at the nominal level, and at the ordinal level with an ordered ``value_domain``.
    """
    x, domain = _encode(data, level, value_domain)
    co = _coincidences(x, domain)
    return _alpha_value(x, co, level)


def _alpha_value(x: np.ndarray, co: _Coincidences, level: str) -> float:
    o = co.total()
    if co.n_units == 0 or (o.sum(axis=2) > 0).sum() < 2:
        return math.nan
    if x.shape[0] * len(co.domain) ** 2 > _PACKAGE_MAX_CELLS:
        # the package builds a dense units x V x V array: use the sparse path (same value)
        a = float(_alpha_from_coincidences(o, co.domain, level)[0][0])
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            a = float(
                krippendorff.alpha(
                    reliability_data=x.T, value_domain=co.domain, level_of_measurement=level
                )
            )
    return a if math.isfinite(a) else math.nan


def _alpha_from_coincidences(
    o: np.ndarray, domain: np.ndarray, level: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Alpha, D_o and D_e for a stack of coincidence matrices ``o`` (B x V x V), vectorized.

    ``D_o = sum o_ck d_ck / n``, ``D_e = sum n_c n_k d_ck / (n (n - 1))`` and ``alpha =
    1 - D_o / D_e`` (Krippendorff 2011), with the nominal, ordinal (rank sums of the
    marginals n_g), interval and ratio squared distances d_ck. Alpha is NaN where D_e = 0.
    """
    n_v = o.sum(axis=2)  # B x V
    n = n_v.sum(axis=1)  # B
    v = domain
    if level == "nominal":
        d = np.broadcast_to(1.0 - np.eye(len(v)), o.shape)
    elif level == "interval":
        d = np.broadcast_to(np.subtract.outer(v, v) ** 2, o.shape)
    elif level == "ratio":
        s = np.add.outer(v, v)
        diff = np.subtract.outer(v, v)
        d = np.broadcast_to(
            np.divide(diff, s, out=np.zeros_like(s), where=s != 0) ** 2, o.shape
        )
    elif level == "ordinal":
        cum = np.cumsum(n_v, axis=1)  # sum_{g <= c} n_g
        lo_i = np.minimum.outer(np.arange(len(v)), np.arange(len(v)))
        hi_i = np.maximum.outer(np.arange(len(v)), np.arange(len(v)))
        # sum_{g=c}^{k} n_g - (n_c + n_k) / 2, for c <= k
        between = cum[:, hi_i] - cum[:, lo_i] + n_v[:, lo_i]
        d = (between - (n_v[:, :, None] + n_v[:, None, :]) / 2) ** 2
    else:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    observed = (o * d).sum(axis=(1, 2))
    expected = (n_v[:, :, None] * n_v[:, None, :] * d).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        d_o = observed / n
        d_e = expected / (n * (n - 1))
        alpha = 1.0 - d_o / d_e
    return np.where((expected > 0) & (n > 1), alpha, np.nan), d_o, d_e


@dataclass(frozen=True)
class AlphaEstimate:
    """Krippendorff's alpha with D_o, D_e and a percentile bootstrap interval over units."""

    level: str
    alpha: float  # krippendorff package
    d_o: float  # observed disagreement D_o (numpy coincidence matrix)
    d_e: float  # expected disagreement D_e; 1 - d_o / d_e equals alpha
    lo: float
    hi: float
    n_units: int  # units with >= 2 values (pairable)
    n_values: int  # pairable values
    n_boot: int  # bootstrap replicates with a defined alpha
    conf: float


def alpha_bootstrap(
    data: Any,
    level: Level = "interval",
    *,
    n_boot: int = 1000,
    seed: int = 0,
    conf: float = 0.95,
    value_domain: Sequence[Any] | None = None,
) -> AlphaEstimate:
    """Krippendorff's alpha with a percentile bootstrap interval, resampling units.

    Units (items) are drawn with replacement, keeping all of a unit's values together
    (the cluster bootstrap of METHODS.md; not Hayes & Krippendorff's 2007 bootstrap of
    pairable values). A replicate's coincidence matrix is the count-weighted sum of the
    per-unit coincidence matrices, so all replicates are one matrix product (Efron &
    Tibshirani 1993, ch. 13 percentile interval). Replicates where alpha is undefined are
    left out (``n_boot`` reports the ones used). Per-unit matrices are sparse, replicates
    are evaluated in blocks: cost grows with n_boot x values^2, not with units x values^2.

    Caveat: the ordinal metric depends on the marginal counts, which resampling makes
    lumpier; with many sparsely used values (a 0-100 slider) ordinal replicates are biased
    low and the interval can exclude the estimate. Prefer ``level="interval"`` there.
    """
    x, domain = _encode(data, level, value_domain)
    co = _coincidences(x, domain)
    point = _alpha_value(x, co, level)
    n_units, n_dom = co.n_units, len(domain)
    lo = hi = d_o = d_e = math.nan
    used = 0
    if n_units:
        d_o, d_e = (float(a[0]) for a in _alpha_from_coincidences(co.total(), domain, level)[1:])
    if n_boot > 0 and n_units > 0 and math.isfinite(point):
        rng = np.random.default_rng(seed)
        chunk = max(1, _BOOT_CHUNK_CELLS // max(n_units, 3 * n_dom * n_dom))
        per_unit_t = co.rows.T.tocsr()  # V^2 x units
        reps = []
        for start in range(0, n_boot, chunk):
            b = min(chunk, n_boot - start)
            weights = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=b)
            o = np.asarray(per_unit_t @ weights.T.astype(float)).T.reshape(b, n_dom, n_dom)
            reps.append(_alpha_from_coincidences(o, domain, level)[0])
        boot = np.concatenate(reps)
        boot = boot[np.isfinite(boot)]
        used = int(boot.size)
        if used:
            lo, hi = (float(q) for q in np.quantile(boot, [(1 - conf) / 2, (1 + conf) / 2]))
    return AlphaEstimate(level, point, d_o, d_e, lo, hi, n_units, co.n_values, used, conf)


# --------------------------------------------------------------------------- kappa family


def category_counts(data: Any, *, categories: Sequence[Hashable] | None = None) -> pd.DataFrame:
    """Units x categories counts of units x raters labels (missing values not counted).

    Like statsmodels' ``aggregate_raters`` with missing data. Categories default to the
    sorted observed values (first-appearance order if they cannot be sorted).
    """
    obj = _as_object_matrix(data)
    present = list(dict.fromkeys(v for v in obj.ravel() if v is not None))
    if categories is None:
        try:
            cats: list[Hashable] = sorted(present)
        except TypeError:
            cats = present
    else:
        cats = list(categories)
        unknown = [v for v in present if v not in set(cats)]
        if unknown:
            raise ValueError(f"values {unknown[:5]} are not in categories")
    pos = {c: i for i, c in enumerate(cats)}
    counts = np.zeros((obj.shape[0], len(cats)), dtype=np.int64)
    for (i, _), v in np.ndenumerate(obj):
        if v is not None:
            counts[i, pos[v]] += 1
    index = data.index if isinstance(data, pd.DataFrame) else None
    return pd.DataFrame(counts, index=index, columns=pd.Index(cats, dtype=object))


@dataclass(frozen=True)
class FleissKappa:
    """Fleiss' kappa with its observed (``po``) and chance (``pe``) agreement."""

    kappa: float
    po: float
    pe: float
    n_subjects: int
    n_raters: int
    n_categories: int


def fleiss_kappa(counts: Any) -> FleissKappa:
    """Fleiss' kappa (Fleiss 1971, Psychol. Bull. 76:378, eqs. 2-9) from counts.

    ``counts``: subjects x categories, ``n_ij`` = raters who put subject i in category j;
    every subject needs the same number n >= 2 of ratings (raises ``ValueError``
    otherwise: for unequal numbers use :func:`multirater_agreement` or
    :func:`krippendorff_alpha`). ``P_i = (sum_j n_ij^2 - n) / (n (n - 1))``,
    ``po = mean P_i``, ``pe = sum_j p_j^2``, ``kappa = (po - pe) / (1 - pe)`` (NaN when
    pe = 1). Equals statsmodels' ``fleiss_kappa(method="fleiss")``.
    """
    c = np.asarray(counts, dtype=float)
    if c.ndim != 2 or c.shape[0] == 0:
        raise ValueError("need a non-empty subjects x categories count matrix")
    if (c < 0).any() or not np.isfinite(c).all():
        raise ValueError("counts must be finite and >= 0")
    per_subject = c.sum(axis=1)
    n = per_subject[0]
    if not np.all(per_subject == n):
        raise ValueError("Fleiss' kappa needs the same number of ratings for every subject")
    if n < 2:
        raise ValueError("Fleiss' kappa needs at least two ratings per subject")
    p_j = c.sum(axis=0) / c.sum()
    p_i = ((c**2).sum(axis=1) - n) / (n * (n - 1))
    po = float(p_i.mean())
    pe = float((p_j**2).sum())
    kappa = (po - pe) / (1 - pe) if pe < 1 else math.nan
    return FleissKappa(float(kappa), po, pe, c.shape[0], int(n), c.shape[1])


@dataclass(frozen=True)
class MultiRaterAgreement:
    """Raw and chance-corrected agreement among many raters (irrCAC's definitions).

    ``pa`` = pairwise % agreement; chance agreements ``pe_ac1`` (Gwet), ``pe_fleiss``
    (Fleiss' pe with Gwet's missing-data margins) and ``1/q`` (free marginal).
    """

    n_units: int  # units with >= 2 ratings (the denominator of pa)
    q: int  # number of categories
    pa: float
    pe_ac1: float
    ac1: float
    pe_fleiss: float
    fleiss: float
    free_marginal: float


def multirater_agreement(
    data: Any, *, categories: Sequence[Hashable] | None = None
) -> MultiRaterAgreement:
    """Pairwise agreement, Gwet's AC1, Fleiss' kappa and free-marginal kappa, missing data.

    Units x raters labels, compared as nominal categories. With r_ik = raters putting unit
    i in category k and r_i = sum_k r_ik (Gwet 2008, Br J Math Stat Psychol 61:29, eqs.
    18-19; Gwet 2014, Handbook of Inter-Rater Reliability, 4th ed., ch. 2-4; R irrCAC
    ``gwet.ac1.raw`` and ``fleiss.kappa.raw``):

    * ``pa = mean over units with r_i >= 2 of sum_k r_ik (r_ik - 1) / (r_i (r_i - 1))``,
      the share of agreeing ordered rater pairs per unit, averaged with equal weight per
      unit (this is ``pct_agreement`` of :func:`alpha_table`);
    * ``pi_k = mean over units with r_i >= 1 of r_ik / r_i``;
    * AC1: ``pe = sum_k pi_k (1 - pi_k) / (q - 1)``; Fleiss: ``pe = sum_k pi_k^2``
      (= Fleiss 1971 for complete data); free marginal (Brennan & Prediger 1981;
      Randolph 2005): ``pe = 1/q``.

    q = ``len(categories)`` or the number of observed categories; q = 1 gives the AC1 and
    free-marginal pe = 0, as irrCAC.
    """
    counts = category_counts(data, categories=categories).to_numpy(dtype=float)
    q = counts.shape[1]
    r = counts.sum(axis=1)
    two = r >= 2
    nan = math.nan
    if not two.any():
        return MultiRaterAgreement(0, q, nan, nan, nan, nan, nan, nan)
    pa = float(((counts[two] * (counts[two] - 1)).sum(axis=1) / (r[two] * (r[two] - 1))).mean())
    rated = r >= 1
    pi = (counts[rated] / r[rated, None]).mean(axis=0)
    pe_ac1 = float((pi * (1 - pi)).sum() / (q - 1)) if q >= 2 else 0.0
    pe_f = float((pi**2).sum())
    pe_free = 1.0 / q if q >= 2 else 0.0

    def corrected(pe: float) -> float:
        return (pa - pe) / (1 - pe) if pe < 1 else nan

    return MultiRaterAgreement(
        n_units=int(two.sum()), q=q, pa=pa, pe_ac1=pe_ac1, ac1=corrected(pe_ac1),
        pe_fleiss=pe_f, fleiss=corrected(pe_f), free_marginal=corrected(pe_free),
    )


# --------------------------------------------------------------------------- ICC


def icc(data: Any, *, conf: float = 0.95) -> pd.DataFrame:
    """The six intraclass correlations of a complete units x raters design, one row each.

    Two-way ANOVA mean squares MSR (units), MSC (raters), MSE (residual), MSW (within
    units); n units, k raters (McGraw & Wong 1996, Psychol. Methods 1:30, Table 4;
    Shrout & Fleiss 1979, Psychol. Bull. 86:420, Table 2):

    * ``ICC(1,1) = (MSR - MSW) / (MSR + (k-1) MSW)``, ``ICC(1,k) = (MSR - MSW) / MSR``
      (one-way random);
    * ``ICC(A,1) = (MSR - MSE) / (MSR + (k-1) MSE + k (MSC - MSE) / n)`` = S&F ICC(2,1),
      ``ICC(A,k) = (MSR - MSE) / (MSR + (MSC - MSE) / n)`` = S&F ICC(2,k) (two-way random,
      absolute agreement);
    * ``ICC(C,1) = (MSR - MSE) / (MSR + (k-1) MSE)`` = S&F ICC(3,1), ``ICC(C,k) =
      (MSR - MSE) / MSR`` (two-way, consistency).

    F tests and intervals from McGraw & Wong (1996) Tables 7-8 (for ICC(A,1) the
    Satterthwaite df of their eq. in Table 7, case 2A; ICC(A,k) bounds by Spearman-Brown
    of the ICC(A,1) bounds, as pingouin). Raises ``ValueError`` on missing values or
    non-numeric data; needs n >= 2 and k >= 2.
    """
    obj = _as_object_matrix(data)
    if any(v is None for v in obj.ravel()):
        raise ValueError("ICC needs a complete design (no missing ratings)")
    if not all(_is_number(v) for v in obj.ravel()):
        raise ValueError("ICC needs numeric ratings")
    x = obj.astype(float)
    n, k = x.shape
    if n < 2 or k < 2:
        raise ValueError(f"ICC needs at least 2 units and 2 raters, got {n} x {k}")
    grand = x.mean()
    ss_r = k * ((x.mean(axis=1) - grand) ** 2).sum()
    ss_c = n * ((x.mean(axis=0) - grand) ** 2).sum()
    ss_t = ((x - grand) ** 2).sum()
    ss_e = ss_t - ss_r - ss_c
    df_r, df_c, df_e, df_w = n - 1, k - 1, (n - 1) * (k - 1), n * (k - 1)
    msr, msc, mse, msw = ss_r / df_r, ss_c / df_c, ss_e / df_e, (ss_t - ss_r) / df_w
    alpha = 1 - conf

    def fq(df1: float, df2: float) -> float:
        return float(stats.f.ppf(1 - alpha / 2, df1, df2))

    def div(a: float, b: float) -> float:
        return a / b if b != 0 else math.nan

    rows = []
    # one-way random
    f1 = div(msr, msw)
    fl, fu = div(f1, fq(df_r, df_w)), f1 * fq(df_w, df_r)
    icc1 = div(msr - msw, msr + (k - 1) * msw)
    icc1k = div(msr - msw, msr)
    p1 = float(stats.f.sf(f1, df_r, df_w))
    rows.append(("ICC(1,1)", "one-way random, single rater", icc1, f1, df_r, df_w, p1,
                 div(fl - 1, fl + k - 1), div(fu - 1, fu + k - 1)))
    # two-way, absolute agreement
    icc_a1 = div(msr - mse, msr + (k - 1) * mse + k * (msc - mse) / n)
    icc_ak = div(msr - mse, msr + (msc - mse) / n)
    f3 = div(msr, mse)
    p3 = float(stats.f.sf(f3, df_r, df_e))
    a = div(k * icc_a1, n * (1 - icc_a1))
    b = 1 + div(k * icc_a1 * (n - 1), n * (1 - icc_a1))
    v = div((a * msc + b * mse) ** 2, (a * msc) ** 2 / df_c + (b * mse) ** 2 / df_e)
    if math.isfinite(v) and v > 0:
        fl_a, fu_a = fq(df_r, v), fq(v, df_r)
        lo_a1 = div(n * (msr - fl_a * mse), fl_a * (k * msc + (k * n - k - n) * mse) + n * msr)
        hi_a1 = div(n * (fu_a * msr - mse), k * msc + (k * n - k - n) * mse + n * fu_a * msr)
    else:
        lo_a1 = hi_a1 = math.nan
    rows.append(("ICC(A,1)", "two-way random, absolute agreement, single rater", icc_a1, f3,
                 df_r, df_e, p3, lo_a1, hi_a1))
    # two-way, consistency
    fl3, fu3 = div(f3, fq(df_r, df_e)), f3 * fq(df_e, df_r)
    rows.append(("ICC(C,1)", "two-way, consistency, single rater",
                 div(msr - mse, msr + (k - 1) * mse), f3, df_r, df_e, p3,
                 div(fl3 - 1, fl3 + k - 1), div(fu3 - 1, fu3 + k - 1)))
    rows.append(("ICC(1,k)", "one-way random, mean of k raters", icc1k, f1, df_r, df_w, p1,
                 1 - div(1, fl), 1 - div(1, fu)))

    def sb(r: float) -> float:
        return div(k * r, 1 + (k - 1) * r)

    rows.append(("ICC(A,k)", "two-way random, absolute agreement, mean of k raters", icc_ak,
                 f3, df_r, df_e, p3, sb(lo_a1), sb(hi_a1)))
    rows.append(("ICC(C,k)", "two-way, consistency, mean of k raters", div(msr - mse, msr),
                 f3, df_r, df_e, p3, 1 - div(1, fl3), 1 - div(1, fu3)))
    out = pd.DataFrame(rows, columns=["type", "description", "icc", "F", "df1", "df2", "p",
                                      "lo", "hi"])
    out["n_units"], out["n_raters"], out["conf"] = n, k, conf
    return out


# --------------------------------------------------------------------------- one row


def _wide(long_df: pd.DataFrame, item_col: str, rater_col: str, value_col: str) -> pd.DataFrame:
    missing_cols = [c for c in (item_col, rater_col, value_col) if c not in long_df.columns]
    if missing_cols:
        raise KeyError(f"columns not found: {missing_cols}")
    df = long_df[[item_col, rater_col, value_col]]
    df = df[~df[value_col].map(_is_missing).astype(bool)]
    dup = df.duplicated([item_col, rater_col])
    if dup.any():
        first = df[dup].iloc[0]
        raise ValueError(
            f"rater {first[rater_col]!r} has more than one {value_col!r} for item "
            f"{first[item_col]!r}: keep one answer per (item, rater) first"
        )
    values = df[value_col].astype(object)
    return (
        pd.DataFrame({"i": df[item_col], "r": df[rater_col], "v": values})
        .pivot(index="i", columns="r", values="v")
        .rename_axis(index=item_col, columns=rater_col)
    )


def alpha_table(
    long_df: pd.DataFrame,
    *,
    item_col: str,
    rater_col: str,
    value_col: str,
    levels: Sequence[Level] = ("interval", "ordinal", "nominal"),
    n_boot: int = 1000,
    seed: int = 0,
    ci_level: Level = "interval",
    conf: float = 0.95,
    categories: Sequence[Hashable] | None = None,
) -> pd.DataFrame:
    """Reliability among annotators, one tidy row, from long data (one row per rating).

    Missing values and ``"cant_tell"`` are dropped first; two ratings of one item by one
    rater raise ``ValueError``. Columns:

    * ``n_items`` (items with >= 1 rating), ``n_pairable_items`` (>= 2), ``n_annotators``,
      ``n_ratings``;
    * ``alpha_<level>`` for each of ``levels`` (:func:`krippendorff_alpha`) and
      ``alpha_lo``/``alpha_hi``, the percentile interval at ``ci_level`` from
      :func:`alpha_bootstrap` with ``n_boot`` resamples of items (``ci_level`` column);
    * ``pct_agreement``: exact pairwise agreement among the raters of an item (share of
      agreeing rater pairs), averaged over items with >= 2 ratings, each item weighted
      equally; ``ac1``: Gwet's multi-rater AC1; both from :func:`multirater_agreement`,
      on the values as nominal categories (``categories`` fixes q);
    * ``fleiss_kappa``: Fleiss (1971) when every item has the same number (>= 2) of
      ratings, else NaN;
    * ``icc_a1``/``icc_ak``: McGraw & Wong ICC(A,1)/ICC(A,k) (= Shrout & Fleiss ICC(2,1)/
      ICC(2,k)) when the design is complete (every annotator rated every item), else NaN.

    A statistic that does not apply to the values (interval alpha, ICC of yes/no
    strings) is NaN rather than an error.
    """
    wide = _wide(long_df, item_col, rater_col, value_col)
    obj = _as_object_matrix(wide)
    present = np.vectorize(lambda v: v is not None, otypes=[bool])(obj)
    per_item = present.sum(axis=1)
    numeric = all(_is_number(v) for v in obj[present])
    row: dict[str, Any] = {
        "n_items": int(wide.shape[0]),
        "n_pairable_items": int((per_item >= 2).sum()),
        "n_annotators": int(wide.shape[1]),
        "n_ratings": int(present.sum()),
    }

    def applies(level: str) -> bool:
        return numeric or level == "nominal"

    for level in levels:
        row[f"alpha_{level}"] = krippendorff_alpha(wide, level) if applies(level) else math.nan
    if applies(ci_level) and wide.size:
        est = alpha_bootstrap(wide, ci_level, n_boot=n_boot, seed=seed, conf=conf)
        row["alpha_lo"], row["alpha_hi"] = est.lo, est.hi
    else:
        row["alpha_lo"] = row["alpha_hi"] = math.nan
    row["ci_level"] = ci_level
    row["n_boot"] = n_boot
    if wide.size:
        mra = multirater_agreement(wide, categories=categories)
        row["pct_agreement"], row["ac1"] = mra.pa, mra.ac1
        counts = category_counts(wide, categories=categories).to_numpy()
    else:
        row["pct_agreement"] = row["ac1"] = math.nan
        counts = np.zeros((0, 0))
    equal = counts.shape[0] > 0 and np.all(per_item == per_item[0]) and per_item[0] >= 2
    row["fleiss_kappa"] = fleiss_kappa(counts).kappa if equal else math.nan
    complete = numeric and wide.shape[0] >= 2 and wide.shape[1] >= 2 and bool(present.all())
    if complete:
        table = icc(wide).set_index("type")["icc"]
        row["icc_a1"], row["icc_ak"] = float(table["ICC(A,1)"]), float(table["ICC(A,k)"])
    else:
        row["icc_a1"] = row["icc_ak"] = math.nan
    return pd.DataFrame([row])
