"""Reliability among many annotators, with missing data: humans among themselves.

Pure functions (no I/O). The wide layout is **units x raters** (one row per item, one
column per annotator, missing = ``None``/``NaN``/``pd.NA``), the orientation of most
packages and the transpose of the ``krippendorff`` package's, which this module hides.
``"cant_tell"`` answers count as missing (:data:`MISSING_TOKENS`).

* :func:`krippendorff_alpha`: Krippendorff's alpha at any level, via the ``krippendorff``
  package; NaN (not an exception) where there is no variation or no pairable unit.
* :func:`alpha_bootstrap`: the same with a percentile interval from a bootstrap over
  units or over clusters of units (all questions of one output), computed with vectorized
  coincidence matrices (checked against the package).
* :func:`multirater_agreement`: raw pairwise agreement, Gwet's AC1, Fleiss/Conger-style
  kappa with missing data, free-marginal kappa (irrCAC's definitions).
* :func:`fleiss_kappa` on a subjects x categories count matrix; :func:`category_counts`.
* :func:`icc`: the six Shrout & Fleiss / McGraw & Wong ICCs with F tests and intervals.
* :func:`icc_variance_components`: ICC(A,1) and ICC(A,k) for incomplete designs from
  Henderson's Method III variance components, with a cluster-bootstrap interval.
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

from annotation.stats.correlation import percentile_interval

__all__ = [
    "ICC_COMPLETE",
    "ICC_INCOMPLETE",
    "LEVELS",
    "MIN_BOOT_CLUSTERS",
    "MISSING_TOKENS",
    "AlphaEstimate",
    "FleissKappa",
    "IccEstimate",
    "MultiRaterAgreement",
    "alpha_bootstrap",
    "alpha_table",
    "category_counts",
    "fleiss_kappa",
    "icc",
    "icc_variance_components",
    "krippendorff_alpha",
    "multirater_agreement",
]

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")
MISSING_TOKENS: frozenset[str] = frozenset({"cant_tell"})
"""String answers treated as missing (compared after stripping and lower-casing)."""

MIN_BOOT_CLUSTERS = 10
"""Fewest clusters (outputs) a bootstrap interval is computed from; fewer give NaN bounds."""
ICC_COMPLETE = "two-way ANOVA, complete design (McGraw & Wong 1996)"
ICC_INCOMPLETE = "Henderson III variance components, incomplete design"

_BOOT_CHUNK_CELLS = 4_000_000  # cells per block of bootstrap replicates (bounds memory)
_PACKAGE_MAX_CELLS = 20_000_000  # units x values^2 above which the package would need GBs


# --------------------------------------------------------------------------- input handling


def is_missing_value(v: Any) -> bool:
    """True for a missing rating: None, NaN / ``pd.NA``, or a missing token such as
    ``cant_tell`` (:data:`MISSING_TOKENS`, any case, surrounding spaces ignored)."""
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
        out[idx] = None if is_missing_value(v) else v
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
                    reliability_data=x.T, value_domain=co.domain,
                    level_of_measurement=level,  # type: ignore[arg-type]  # checked above
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
    """Krippendorff's alpha with D_o, D_e and a percentile bootstrap interval over clusters."""

    level: str
    alpha: float  # krippendorff package
    d_o: float  # observed disagreement D_o (numpy coincidence matrix)
    d_e: float  # expected disagreement D_e; 1 - d_o / d_e equals alpha
    lo: float
    hi: float
    n_units: int  # units with >= 2 values (pairable)
    n_values: int  # pairable values
    n_boot: int  # bootstrap replicates with a defined alpha (0 when no interval)
    conf: float
    n_clusters: int = 0  # clusters with a pairable unit (= n_units without clusters)


def _cluster_codes(clusters: Sequence[Hashable], n: int) -> np.ndarray:
    """Integer codes 0..C-1 of one cluster label per unit, in order of first appearance."""
    labels = np.empty(len(clusters), dtype=object)
    labels[:] = list(clusters)
    if labels.size != n:
        raise ValueError(f"need one cluster label per unit: {labels.size} labels, {n} units")
    codes, _ = pd.factorize(labels, use_na_sentinel=False)
    return codes.astype(np.int64)


def _percentile(boot: np.ndarray, conf: float, n_clusters: int) -> tuple[float, float]:
    """The expanded percentile interval of :func:`annotation.stats.correlation.
    percentile_interval` (Hesterberg 2015), as for every bootstrap of the report."""
    return percentile_interval(boot, conf, n_clusters)


def alpha_bootstrap(
    data: Any,
    level: Level = "interval",
    *,
    n_boot: int = 1000,
    seed: int = 0,
    conf: float = 0.95,
    value_domain: Sequence[Any] | None = None,
    clusters: Sequence[Hashable] | None = None,
    min_clusters: int = MIN_BOOT_CLUSTERS,
) -> AlphaEstimate:
    """Krippendorff's alpha with a percentile bootstrap interval, resampling clusters of units.

    ``clusters`` gives one label per unit (row of ``data``), e.g. the output of a
    (output, question) unit; ``None`` makes each unit its own cluster. A replicate draws
    the clusters that hold a pairable unit with replacement and keeps every unit of a drawn
    cluster together (the cluster bootstrap: Davison & Hinkley 1997,
    Bootstrap Methods and their Application, sec. 3.8; not Hayes & Krippendorff's 2007
    bootstrap of pairable values). Resampling units independently when a cluster's units
    are correlated (the questions of one image) gives too narrow an interval.

    A replicate's coincidence matrix is the count-weighted sum of the per-unit coincidence
    matrices, so the per-unit rows are first summed by cluster and all replicates are one
    matrix product (Efron & Tibshirani 1993, An Introduction to the Bootstrap, ch. 13,
    percentile interval). Replicates where alpha is undefined are left out (``n_boot``
    reports the ones used). Per-cluster matrices are sparse, replicates are evaluated in
    blocks: cost grows with n_boot x values^2, not with units x values^2. With each unit
    its own cluster the draws are exactly those of ``clusters=None``.

    No interval (NaN bounds, ``n_boot`` 0) from fewer than ``min_clusters`` clusters with
    a pairable unit: a percentile interval from a handful of clusters is not worth
    printing.

    Caveat: the ordinal metric depends on the marginal counts, which resampling makes
    lumpier; with many sparsely used values (a 0-100 slider) ordinal replicates are biased
    low and the interval can exclude the estimate. Prefer ``level="interval"`` there.
    """
    x, domain = _encode(data, level, value_domain)
    co = _coincidences(x, domain)
    point = _alpha_value(x, co, level)
    n_units, n_dom = co.n_units, len(domain)
    if clusters is None:
        per_cluster = co.rows
    else:
        codes = _cluster_codes(clusters, x.shape[0])
        pairable = (~np.isnan(x)).sum(axis=1) >= 2  # the rows of co.rows, in order
        codes, _ = pd.factorize(codes[pairable])
        group = sparse.csr_matrix(
            (np.ones(codes.size), (codes, np.arange(codes.size))),
            shape=(int(codes.max(initial=-1)) + 1, codes.size),
        )
        per_cluster = (group @ co.rows).tocsr()
    n_clusters = int(per_cluster.shape[0])
    lo = hi = d_o = d_e = math.nan
    used = 0
    if n_units:
        d_o, d_e = (float(a[0]) for a in _alpha_from_coincidences(co.total(), domain, level)[1:])
    if n_boot > 0 and n_clusters >= max(1, min_clusters) and math.isfinite(point):
        rng = np.random.default_rng(seed)
        chunk = max(1, _BOOT_CHUNK_CELLS // max(n_clusters, 3 * n_dom * n_dom))
        per_cluster_t = per_cluster.T.tocsr()  # V^2 x clusters
        reps = []
        for start in range(0, n_boot, chunk):
            b = min(chunk, n_boot - start)
            weights = rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=b)
            o = np.asarray(per_cluster_t @ weights.T.astype(float)).T.reshape(b, n_dom, n_dom)
            reps.append(_alpha_from_coincidences(o, domain, level)[0])
        boot = np.concatenate(reps)
        boot = boot[np.isfinite(boot)]
        used = int(boot.size)
        if used:
            lo, hi = _percentile(boot, conf, n_clusters)
    return AlphaEstimate(level, point, d_o, d_e, lo, hi, n_units, co.n_values, used, conf,
                         n_clusters)


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


@dataclass(frozen=True)
class IccEstimate:
    """ICC(A,1) and ICC(A,k) from variance components, with a percentile bootstrap interval.

    ``var_*`` are the Henderson III estimates (truncated at 0 when ``truncated``); ``k`` is
    the harmonic mean number of ratings per item used for ICC(A,k); ``note`` says why a
    value is NaN ("" when nothing to say).
    """

    icc_a1: float
    icc_ak: float
    k: float
    var_item: float
    var_rater: float
    var_error: float
    a1_lo: float
    a1_hi: float
    ak_lo: float
    ak_hi: float
    n_items: int  # items with >= 1 rating
    n_raters: int  # raters with >= 1 rating
    n_ratings: int
    n_components: int  # connected components of the item-rater design
    df_error: float
    n_clusters: int
    n_boot: int  # bootstrap replicates with a defined ICC (0 when no interval)
    conf: float
    truncated: bool
    note: str


@dataclass(frozen=True)
class _Design:
    """Per-item sufficient statistics of a 0/1 items x raters design (ratings centered)."""

    n: np.ndarray  # I: ratings per item
    ss_within: np.ndarray  # I: sum over the item's ratings of (y - item mean)^2
    z: np.ndarray  # I x J: 1 where the rater rated the item
    y: np.ndarray  # I x J: centered rating, 0 where missing
    y2: np.ndarray  # I x J: its square
    q: np.ndarray  # I x J: rating minus the item mean, 0 where missing
    pairs_t: sparse.csr_matrix  # J^2 x I: 1 / n_i at (j, k) for raters j, k of item i


def _design(x: np.ndarray) -> _Design:
    """The :class:`_Design` of a float units x raters matrix (NaN = missing)."""
    z = (~np.isnan(x)).astype(float)
    x, z = x[z.sum(axis=1) > 0], z[z.sum(axis=1) > 0]
    n_items, n_raters = z.shape
    y = np.where(z > 0, x - (np.nanmean(x) if x.size else 0.0), 0.0)
    n = z.sum(axis=1)
    mean = y.sum(axis=1) / np.where(n > 0, n, 1)
    q = np.where(z > 0, y - mean[:, None], 0.0)
    items, raters = np.nonzero(z)
    size = np.bincount(items, minlength=n_items)
    # all ordered pairs (j, k) of raters of one item, j == k included
    left = np.repeat(np.arange(items.size), size[items])
    first = np.cumsum(size) - size
    block = np.repeat(np.cumsum(size[items]) - size[items], size[items])
    right = first[items[left]] + (np.arange(left.size) - block)
    pairs_t = sparse.csr_matrix(
        (1.0 / n[items[left]], (raters[left] * n_raters + raters[right], items[left])),
        shape=(n_raters * n_raters, n_items),
    )
    return _Design(n, (q**2).sum(axis=1), z, y, y**2, q, pairs_t)


def _rater_reduction(c: np.ndarray, q: np.ndarray,
                     n_j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``q' C^+ q`` and ``rank(C)`` for a stack of rater information matrices (B x J x J).

    The rank comes from the eigenvalues. q is orthogonal to the null space of C (the
    indicators of the connected components, and of absent raters), so for a connected
    design ``q' C^+ q = q' M^-1 q`` with the positive definite ``M = C + s u u' / J_b +
    s diag(absent)`` (u = present raters): one batched solve. Disconnected replicates
    (rare unless the whole design is) take the eigen-decomposition instead.
    """
    present = n_j > 0
    n_present = present.sum(axis=1)
    lam = np.linalg.eigvalsh(c)
    tol = 1e-9 * np.maximum(1.0, lam.max(axis=1, initial=0.0))[:, None]
    rank = (lam > tol).sum(axis=1)
    out = np.zeros(c.shape[0])
    connected = (rank == n_present - 1) & (n_present >= 1)
    if connected.any():
        u = present[connected].astype(float)
        scale = (n_j[connected].sum(axis=1) / n_present[connected])[:, None, None]
        m = (c[connected] + scale * u[:, :, None] * u[:, None, :] / n_present[connected, None, None]
             + scale * np.eye(c.shape[1]) * (1.0 - u)[:, None, :])
        qc = q[connected]
        out[connected] = (qc * np.linalg.solve(m, qc[:, :, None])[:, :, 0]).sum(axis=1)
    rest = ~connected
    if rest.any():
        lam_r, vec = np.linalg.eigh(c[rest])
        keep = lam_r > tol[rest]
        proj = np.einsum("bjk,bj->bk", vec, q[rest])
        out[rest] = np.where(keep, proj**2 / np.where(keep, lam_r, 1.0), 0.0).sum(axis=1)
    return out, rank.astype(float)


def _henderson(d: _Design, w: np.ndarray, truncate: bool) -> dict[str, np.ndarray]:
    """Henderson III variance components for B weightings ``w`` (B x I) of the items.

    A weight is the number of copies of an item (a bootstrap draw): each copy is an item of
    its own, so the design stays 0/1. Every quantity is a weighted sum over items except
    the rater reduction ``R(rater | mu, item) = q' C^+ q``, with the rater information
    matrix ``C = diag(n_j) - sum_i w_i z_i z_i' / n_i`` and the item-centered rater totals
    ``q`` (the absorption of items; Searle, Casella & McCulloch 1992, Variance Components,
    ch. 5); ``rank(C) = J - c`` for c connected components, from the
    eigenvalues of C (:func:`_rater_reduction`).
    """
    n_raters_all = d.z.shape[1]
    n_items = w.sum(axis=1)
    n_obs = w @ d.n
    n_j = w @ d.z
    raters = (n_j > 0).sum(axis=1).astype(float)
    sse_items = w @ d.ss_within
    c = -np.asarray(d.pairs_t @ w.T).T.reshape(-1, n_raters_all, n_raters_all)
    diag = np.arange(n_raters_all)
    c[:, diag, diag] += n_j
    q = w @ d.q
    r_rater, rank_c = _rater_reduction(c, q, n_j)
    s1, s2 = w @ d.y, w @ d.y2
    sse_raters = (s2 - np.divide(s1**2, n_j, out=np.zeros_like(s1), where=n_j > 0)).sum(axis=1)
    sse_full = np.maximum(sse_items - r_rater, 0.0)
    r_item = np.maximum(sse_raters - sse_full, 0.0)
    components = raters - rank_c
    df_e = n_obs - n_items - rank_c
    with np.errstate(divide="ignore", invalid="ignore"):
        s_e = np.where(df_e > 0, sse_full / df_e, np.nan)
        s_r = np.where(n_obs > n_items, (r_rater - rank_c * s_e) / (n_obs - n_items), np.nan)
        s_i = np.where(
            n_obs > raters, (r_item - (n_items - components) * s_e) / (n_obs - raters), np.nan
        )
        if truncate:
            s_r, s_i = np.maximum(s_r, 0.0), np.maximum(s_i, 0.0)
        k = n_items / (w @ (1.0 / d.n))
        total = s_i + s_r + s_e
        ok = (raters >= 2) & (total > 0)
        a1 = np.where(ok, s_i / total, np.nan)
        ak = np.where(ok, s_i / (s_i + (s_r + s_e) / k), np.nan)
    return {"icc_a1": a1, "icc_ak": ak, "k": k, "var_item": s_i, "var_rater": s_r,
            "var_error": s_e, "df_error": df_e, "components": components, "raters": raters,
            "n_obs": n_obs, "n_items": n_items}


def icc_variance_components(
    data: Any,
    *,
    n_boot: int = 0,
    seed: int = 0,
    conf: float = 0.95,
    clusters: Sequence[Hashable] | None = None,
    truncate: bool = True,
    min_clusters: int = MIN_BOOT_CLUSTERS,
    cluster_noun: str = "clusters",
) -> IccEstimate:
    """ICC(A,1) and ICC(A,k) of a possibly incomplete units x raters design.

    Model: two-way crossed random effects without interaction, ``y = mu + item + rater +
    e`` (McGraw & Wong 1996, Psychol. Methods 1:30, case 2A), each rater rating an item at
    most once. Variance components by Henderson's Method III, fitting constants (Henderson
    1953, Biometrics 9:226; Searle, Casella & McCulloch 1992, Variance Components, ch. 5),
    with I items, J raters, N ratings and c connected components of the design:

    * ``s_e = SSE_full / (N - rank)``, ``rank = I + J - c``, SSE_full from the
      least-squares fit of both factors (items absorbed, the rater equations solved
      exactly through the eigen-decomposition of the rater information matrix; a
      disconnected design only lowers the rank);
    * ``R(rater | mu, item) = SSE(items only) - SSE_full``, expectation
      ``(J - c) s_e + (N - I) s_r``;
    * ``R(item | mu, rater) = SSE(raters only) - SSE_full``, expectation
      ``(I - c) s_e + (N - J) s_i``;
    * ``ICC(A,1) = s_i / (s_i + s_r + s_e)``; ``ICC(A,k) = s_i / (s_i + (s_r + s_e) / k)``
      with k the **harmonic** mean number of ratings per item: the error variance of the
      mean of item i's k_i ratings is (s_r + s_e) / k_i, whose average over items is
      (s_r + s_e) / k for the harmonic mean k, so ICC(A,k) is the reliability of the item
      means averaged over the items of this design (an item rated once counts too).

    Negative estimates of s_i and s_r (Method III is unbiased, hence can be negative;
    Searle et al. 1992, ch. 5) are truncated at 0 (``truncate=True``); without truncation
    a complete design gives exactly McGraw & Wong's ICC(A,1)/ICC(A,k) of :func:`icc`.

    Interval: percentile bootstrap of ``n_boot`` replicates drawing ``clusters`` (one
    label per unit; default each unit its own) with replacement, a drawn unit becoming a
    new item (Davison & Hinkley 1997, sec. 3.8); raters are not resampled, so the interval
    leaves out the uncertainty of s_r from having only J raters. Seeded, vectorized;
    NaN bounds from fewer than ``min_clusters`` clusters (``note`` then says so, calling
    them ``cluster_noun``). Raises ``ValueError`` on non-numeric values.
    """
    obj = _as_object_matrix(data)
    if not all(_is_number(v) for v in obj.ravel() if v is not None):
        raise ValueError("ICC needs numeric ratings")
    x = np.array([[math.nan if v is None else float(v) for v in row] for row in obj],
                 dtype=float).reshape(obj.shape)
    rated = (~np.isnan(x)).sum(axis=1) > 0
    d = _design(x)
    nan = math.nan
    if (d.z.sum(axis=0) > 0).sum() < 2:
        return IccEstimate(nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, int(d.n.size),
                           int((d.z.sum(axis=0) > 0).sum()), int(d.n.sum()), 0, nan, 0, 0,
                           conf, truncate, "fewer than 2 annotators")
    point = {k: float(v[0]) for k, v in _henderson(d, np.ones((1, d.n.size)), truncate).items()}
    notes = []
    if point["raters"] < 2:
        notes.append("fewer than 2 annotators")
    elif point["n_obs"] <= point["n_items"]:
        notes.append("no item rated by two annotators")
    elif not point["df_error"] > 0:
        notes.append("ICC: no residual degrees of freedom")
    elif not math.isfinite(point["icc_a1"]):
        notes.append("ICC undefined: no variance")
    if clusters is None:
        codes = np.arange(d.n.size)
    else:
        codes, _ = pd.factorize(_cluster_codes(clusters, len(x))[rated])
    n_clusters = int(codes.max(initial=-1)) + 1
    lo_a1 = hi_a1 = lo_ak = hi_ak = math.nan
    used = 0
    if n_boot > 0 and math.isfinite(point["icc_a1"]):
        if n_clusters < max(1, min_clusters):
            notes.append(f"fewer than {min_clusters} {cluster_noun}: no bootstrap interval")
        else:
            rng = np.random.default_rng(seed)
            n_r = d.z.shape[1]
            chunk = max(1, _BOOT_CHUNK_CELLS // max(d.n.size, n_clusters, 3 * n_r * n_r))
            a1s, aks = [], []
            for start in range(0, n_boot, chunk):
                b = min(chunk, n_boot - start)
                wc = rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=b)
                rep = _henderson(d, wc[:, codes].astype(float), truncate)
                a1s.append(rep["icc_a1"])
                aks.append(rep["icc_ak"])
            a1, ak = np.concatenate(a1s), np.concatenate(aks)
            fine = np.isfinite(a1) & np.isfinite(ak)
            used = int(fine.sum())
            if used:
                lo_a1, hi_a1 = _percentile(a1[fine], conf, n_clusters)
                lo_ak, hi_ak = _percentile(ak[fine], conf, n_clusters)
    return IccEstimate(
        icc_a1=point["icc_a1"], icc_ak=point["icc_ak"], k=point["k"],
        var_item=point["var_item"], var_rater=point["var_rater"],
        var_error=point["var_error"], a1_lo=lo_a1, a1_hi=hi_a1, ak_lo=lo_ak, ak_hi=hi_ak,
        n_items=int(d.n.size), n_raters=int(point["raters"]), n_ratings=int(point["n_obs"]),
        n_components=int(round(point["components"])), df_error=point["df_error"],
        n_clusters=n_clusters, n_boot=used, conf=conf, truncated=truncate,
        note="; ".join(notes),
    )


# --------------------------------------------------------------------------- one row


def _wide(long_df: pd.DataFrame, item_col: str, rater_col: str, value_col: str) -> pd.DataFrame:
    missing_cols = [c for c in (item_col, rater_col, value_col) if c not in long_df.columns]
    if missing_cols:
        raise KeyError(f"columns not found: {missing_cols}")
    df = long_df[[item_col, rater_col, value_col]]
    df = df[~df[value_col].map(is_missing_value).astype(bool)]
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


def _item_clusters(
    long_df: pd.DataFrame, item_col: str, cluster_col: str, items: pd.Index
) -> list[Hashable]:
    """The cluster of each of ``items`` (one per item, else ``ValueError``)."""
    if cluster_col not in long_df.columns:
        raise KeyError(f"columns not found: [{cluster_col!r}]")
    pairs = long_df[[item_col, cluster_col]].drop_duplicates()
    split = pairs[pairs.duplicated(item_col, keep=False)]
    if not split.empty:
        raise ValueError(
            f"item {split.iloc[0][item_col]!r} is in more than one {cluster_col!r}: "
            "an item must belong to one cluster"
        )
    return list(pairs.set_index(item_col)[cluster_col].reindex(items))


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
    cluster_col: str | None = None,
    cluster_noun: str = "clusters",
    continuous: bool = False,
    min_clusters: int = MIN_BOOT_CLUSTERS,
) -> pd.DataFrame:
    """Reliability among annotators, one tidy row, from long data (one row per rating).

    Missing values and ``"cant_tell"`` are dropped first; two ratings of one item by one
    rater raise ``ValueError``. ``cluster_col`` names the cluster of each item (the output
    of an (output, question) decision; each item in exactly one cluster): bootstrap
    intervals then resample clusters, keeping all of a cluster's items together
    (:func:`alpha_bootstrap`); without it each item is its own cluster. Columns, in order:

    * ``n_items`` (items with >= 1 rating), ``n_pairable_items`` (>= 2), ``n_annotators``,
      ``n_ratings``;
    * ``alpha_<level>`` for each of ``levels`` (:func:`krippendorff_alpha`) and
      ``alpha_lo``/``alpha_hi``, the percentile interval at ``ci_level`` from
      :func:`alpha_bootstrap` with ``n_boot`` resamples of clusters (``ci_level`` column);
      NaN bounds from fewer than ``min_clusters`` clusters with a pairable item;
    * ``n_boot``: the bootstrap replicates of the alpha interval actually used (those with
      a defined alpha; 0 when there is no interval), not the number requested;
    * ``pct_agreement``: exact pairwise agreement among the raters of an item (share of
      agreeing rater pairs), averaged over items with >= 2 ratings, each item weighted
      equally; ``ac1``: Gwet's multi-rater AC1; both from :func:`multirater_agreement`,
      on the values as nominal categories. Gwet's q is the number of categories **of the
      scale** (Gwet 2008, Br J Math Stat Psychol 61:29, eq. 18-19): pass them as
      ``categories`` (e.g. 1..10, or ("yes", "no")); without it q is the number of
      observed values, which understates AC1 when raters use part of the scale.
      ``continuous=True`` (a slider without steps): AC1 is NaN, there are no categories;
    * ``fleiss_kappa``: Fleiss (1971) when every item has the same number (>= 2) of
      ratings, else NaN;
    * ``icc_a1``/``icc_ak``: ICC(A,1)/ICC(A,k) (= Shrout & Fleiss ICC(2,1)/ICC(2,k)). A
      complete design (every annotator rated every item) gives McGraw & Wong's two-way
      ANOVA values of :func:`icc`; an incomplete one (new: these columns used to be NaN
      there) the Henderson III variance components of :func:`icc_variance_components`,
      negative components truncated at 0 and k = harmonic mean ratings per item;
    * ``n_clusters``: clusters holding an item with >= 1 rating (= ``n_items`` without
      ``cluster_col``);
    * ``icc_method``: :data:`ICC_COMPLETE`, :data:`ICC_INCOMPLETE` or "" (no ICC);
    * ``icc_a1_lo``/``icc_a1_hi``/``icc_ak_lo``/``icc_ak_hi``: complete designs McGraw &
      Wong's F-based intervals (:func:`icc`), incomplete designs a percentile bootstrap
      over clusters (``n_boot`` draws, ``seed``; no interval from fewer than
      ``min_clusters`` clusters);
    * ``judge_ceiling``: ``sqrt(ICC(A,k))``, the highest correlation any judge can reach
      with the mean of these raters: a correlation with a measure of reliability r is at
      most sqrt(r), the measure's correlation with its own true score (Spearman 1904,
      "The proof and measurement of association between two things", Am J Psychol 15:72,
      correction for attenuation); NaN when ICC(A,k) <= 0 or NaN;
    * ``note``: why a statistic is NaN, reasons joined by "; " ("" when nothing to say).

    A statistic that does not apply to the values (interval alpha, ICC of yes/no
    strings) is NaN rather than an error.
    """
    wide = _wide(long_df, item_col, rater_col, value_col)
    obj = _as_object_matrix(wide)
    present = np.vectorize(lambda v: v is not None, otypes=[bool])(obj)
    per_item = present.sum(axis=1)
    numeric = all(_is_number(v) for v in obj[present])
    pairable = per_item >= 2
    notes: list[str] = []

    def note(text: str) -> None:
        if text and text not in notes:
            notes.append(text)

    row: dict[str, Any] = {
        "n_items": int(wide.shape[0]),
        "n_pairable_items": int(pairable.sum()),
        "n_annotators": int(wide.shape[1]),
        "n_ratings": int(present.sum()),
    }
    if cluster_col is None:
        clusters: list[Hashable] | None = None
        n_clusters = int(wide.shape[0])
    else:
        clusters = _item_clusters(long_df, item_col, cluster_col, wide.index)
        n_clusters = len(set(clusters))
    noun = "items" if cluster_col is None else cluster_noun
    if wide.shape[1] < 2:
        note("fewer than 2 annotators")
    elif not pairable.any():
        note("no item rated by two annotators")
    elif len({v for v in obj[pairable][present[pairable]]}) < 2:
        note("constant values: alpha undefined")
    if not numeric:
        note("non-numeric values: no interval/ordinal/ratio alpha, no ICC")

    def applies(level: str) -> bool:
        return numeric or level == "nominal"

    for level in levels:
        row[f"alpha_{level}"] = krippendorff_alpha(wide, level) if applies(level) else math.nan
    row["alpha_lo"] = row["alpha_hi"] = math.nan
    used = 0
    if applies(ci_level) and wide.size:
        est = alpha_bootstrap(wide, ci_level, n_boot=n_boot, seed=seed, conf=conf,
                              clusters=clusters, min_clusters=min_clusters)
        row["alpha_lo"], row["alpha_hi"], used = est.lo, est.hi, est.n_boot
        if math.isfinite(est.alpha):
            if n_boot <= 0:
                note("n_boot = 0: no bootstrap interval")
            elif est.n_clusters < min_clusters:
                note(f"fewer than {min_clusters} {noun}: no bootstrap interval")
            elif used == 0:
                note("no bootstrap replicate with a defined alpha: no interval")
    row["ci_level"] = ci_level
    row["n_boot"] = used
    if wide.size:
        mra = multirater_agreement(wide, categories=categories)
        row["pct_agreement"], row["ac1"] = mra.pa, mra.ac1
        counts = category_counts(wide, categories=categories).to_numpy()
    else:
        row["pct_agreement"] = row["ac1"] = math.nan
        counts = np.zeros((0, 0))
    if continuous:
        row["ac1"] = math.nan
        note("AC1: not applicable to a continuous scale")
    equal = counts.shape[0] > 0 and np.all(per_item == per_item[0]) and per_item[0] >= 2
    row["fleiss_kappa"] = fleiss_kappa(counts).kappa if equal else math.nan
    if pairable.any() and not equal:
        note("Fleiss' kappa: unequal numbers of ratings per item")
    icc_row: dict[str, Any] = {
        "icc_a1": math.nan, "icc_ak": math.nan, "icc_method": "", "icc_a1_lo": math.nan,
        "icc_a1_hi": math.nan, "icc_ak_lo": math.nan, "icc_ak_hi": math.nan}
    complete = wide.shape[0] >= 2 and wide.shape[1] >= 2 and bool(present.all())
    if numeric and complete:
        table = icc(wide).set_index("type")
        a1, ak = table.loc["ICC(A,1)"], table.loc["ICC(A,k)"]
        icc_row.update(icc_a1=float(a1["icc"]), icc_ak=float(ak["icc"]), icc_method=ICC_COMPLETE,
                       icc_a1_lo=float(a1["lo"]), icc_a1_hi=float(a1["hi"]),
                       icc_ak_lo=float(ak["lo"]), icc_ak_hi=float(ak["hi"]))
        if not math.isfinite(icc_row["icc_a1"]):
            note("ICC undefined: no variance")
    elif numeric and wide.shape[1] >= 2 and pairable.any():
        vc = icc_variance_components(wide, n_boot=n_boot, seed=seed, conf=conf,
                                     clusters=clusters, min_clusters=min_clusters,
                                     cluster_noun=noun)
        icc_row.update(icc_a1=vc.icc_a1, icc_ak=vc.icc_ak, icc_method=ICC_INCOMPLETE,
                       icc_a1_lo=vc.a1_lo, icc_a1_hi=vc.a1_hi, icc_ak_lo=vc.ak_lo,
                       icc_ak_hi=vc.ak_hi)
        for text in vc.note.split("; "):
            note(text)
    row["icc_a1"], row["icc_ak"] = icc_row.pop("icc_a1"), icc_row.pop("icc_ak")
    row["n_clusters"] = n_clusters
    row.update(icc_row)
    ak = row["icc_ak"]
    row["judge_ceiling"] = math.sqrt(ak) if math.isfinite(ak) and ak > 0 else math.nan
    if math.isfinite(ak) and ak <= 0:
        note("judge_ceiling: ICC(A,k) <= 0")
    row["note"] = "; ".join(notes)
    return pd.DataFrame([row])
