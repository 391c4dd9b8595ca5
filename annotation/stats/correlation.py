"""A judge's scores against the humans' scores: PLCC, SRCC, Kendall tau-b, MAE and bias.

Conventions (see ``shared/stats/METHODS.md``):

* ``x`` is the judge, ``y`` the human reference (usually the mean of the humans per item);
  ``bias`` is ``mean(x - y)``, so a positive bias is a lenient judge.
* PLCC is the raw Pearson correlation (no logistic fit first, unlike much image-quality
  work), SRCC Spearman's rho (Pearson of mid-ranks), Kendall's tau-b (ties corrected).
* Pearson's interval is Fisher's z interval, identical to scipy's
  ``pearsonr(x, y).confidence_interval()``: ``tanh(atanh(r) -/+ z_{1-a/2} / sqrt(n - 3))``
  (Fisher 1921; e.g. Bonett & Wright 2000, eq. 1).
* Spearman and Kendall intervals are bootstrap percentile intervals (Efron & Tibshirani 1993,
  ch. 13). Resampling is over **items** (a cluster bootstrap, Davison & Hinkley 1997,
  sec. 3.8): when several rows share an item label they enter or leave a resample together.
  A resample is represented by a weight per row (how many times its item was drawn), and the
  weighted statistics below equal the unweighted statistic of the expanded resample exactly
  (mid-ranks and tie counts included), so no resample is ever materialised.
* Rows where x or y is missing are dropped pairwise; ``n`` reports the rows kept and
  ``n_items`` their distinct items. Fewer than 3 pairs, or a constant x or y, give NaN
  correlations (never an exception or a warning).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
from scipy import stats

ArrayLike: TypeAlias = Sequence[Any] | np.ndarray | pd.Series

__all__ = [
    "MIN_BOOT_ITEMS",
    "MaeBias",
    "correlations",
    "fisher_ci",
    "fisher_z_mean",
    "expanded_level",
    "fisher_z_pool",
    "fisher_z_studentized",
    "mae_bias",
    "percentile_interval",
    "reported_plcc_interval",
    "viescore_mean",
]

#: Above this many rows the vectorised O(B n^2) Kendall bootstrap gives way to one
#: O(n log n) ``scipy.stats.kendalltau`` call per resample.
_KENDALL_MATRIX_MAX_ROWS = 2000
#: Up to this many cells of the (distinct x) x (distinct y) table per row, the bootstrap
#: computes its statistics on that table (rating scales: few distinct values); at one cell
#: per row the table is never larger than the rows it replaces.
_TABLE_CELLS_PER_ROW = 1
#: Elements per temporary (resamples x rows) block: bounds memory, not results.
_BLOCK_ELEMENTS = 1 << 22


# --------------------------------------------------------------------------- inputs


def as_float_array(values: ArrayLike, name: str = "values") -> np.ndarray:
    """Return ``values`` as a 1-D float array; None, NaN and pd.NA become NaN."""
    if isinstance(values, pd.Series | pd.Index):
        arr = values.to_numpy(dtype=float, na_value=np.nan)
    else:
        arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def item_codes(items: ArrayLike | None, n: int) -> tuple[np.ndarray, int]:
    """Integer cluster codes 0..K-1 for ``items`` (each row its own item when None)."""
    if items is None:
        return np.arange(n), n
    labels = items.to_numpy() if isinstance(items, pd.Series | pd.Index) else np.asarray(items)
    if labels.ndim != 1 or len(labels) != n:
        raise ValueError(f"items must be one-dimensional with {n} labels, got {labels.shape}")
    codes, uniques = pd.factorize(labels, use_na_sentinel=True)
    if (codes < 0).any():
        raise ValueError("items contains missing labels")
    return codes.astype(np.int64), len(uniques)


def _check_ci(ci: float) -> None:
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must be in (0, 1), got {ci}")


def _is_constant(v: np.ndarray) -> bool:
    return len(v) == 0 or bool(np.all(v == v[0]))


# ------------------------------------------------------------------ point estimates


def fisher_ci(r: float, n: int, ci: float = 0.95) -> tuple[float, float]:
    """Fisher z interval for a Pearson correlation, as scipy's ``confidence_interval()``.

    ``tanh(atanh(r) -/+ z_{(1+ci)/2} / sqrt(n - 3))`` (Fisher 1921). For ``n == 3`` the
    standard error is infinite and the interval is (-1, 1), as in scipy; ``n < 3`` or a
    NaN ``r`` give NaN.
    """
    _check_ci(ci)
    if not np.isfinite(r) or n < 3:
        return (np.nan, np.nan)
    if n == 3:
        return (-1.0, 1.0)
    zc = stats.norm.ppf(0.5 + ci / 2.0)
    with np.errstate(divide="ignore"):
        z = np.arctanh(r)
    se = 1.0 / np.sqrt(n - 3)
    return (float(np.tanh(z - zc * se)), float(np.tanh(z + zc * se)))


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 3 or _is_constant(x) or _is_constant(y):
        return np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.pearsonr(x, y).statistic)


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 3 or _is_constant(x) or _is_constant(y):
        return np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.spearmanr(x, y).statistic)


def _kendall(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 3 or _is_constant(x) or _is_constant(y):
        return np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.kendalltau(x, y, variant="b").statistic)


POINT_STATS = {"pearson": _pearson, "spearman": _spearman, "kendall": _kendall}


# ------------------------------------------------------ weighted (resample) statistics
#
# A bootstrap resample is a weight matrix W (B resamples x n rows): W[b, i] is the number
# of copies of row i in resample b. Every function returns, for each resample, exactly the
# unweighted statistic of the expanded sample.


@dataclass(frozen=True)
class _Groups:
    """Tie groups of one variable, precomputed once for all resamples."""

    codes: np.ndarray  # group (distinct value, ascending) of each row
    order: np.ndarray  # rows sorted by group
    starts: np.ndarray  # first position of each group in ``order``


def _groups(v: np.ndarray) -> _Groups:
    _, codes = np.unique(v, return_inverse=True)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    return _Groups(codes=codes, order=order, starts=starts)


def _group_totals(w: np.ndarray, g: _Groups) -> np.ndarray:
    """Total weight of each tie group in each resample, shape (B, G)."""
    return np.add.reduceat(w[:, g.order], g.starts, axis=1)


def _w_pearson(w: np.ndarray, a: np.ndarray, b: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Pearson r of each weighted resample (two-pass, so no cancellation); NaN where not ok.

    ``a`` and ``b`` are (n,) or (B, n).
    """
    total = w.sum(axis=1)
    ma = (w * a).sum(axis=1) / total
    mb = (w * b).sum(axis=1) / total
    da = a - ma[:, None]
    db = b - mb[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (w * da * db).sum(axis=1) / np.sqrt((w * da * da).sum(axis=1) * (w * db * db).sum(1))
    r = np.clip(r, -1.0, 1.0)
    r[~ok] = np.nan
    return r


def _w_midranks(t: np.ndarray, g: _Groups) -> np.ndarray:
    """Mid-rank of each row within each resample, from the group totals ``t`` (B, G)."""
    below = np.cumsum(t, axis=1) - t
    return (below + (t + 1.0) / 2.0)[:, g.codes]


def _kendall_numerator(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``sum_ij w_i w_j sign(x_i - x_j) sign(y_i - y_j)`` = 2 (C - D) for each resample."""
    n = len(x)
    out = np.zeros(w.shape[0])
    rows = max(1, _BLOCK_ELEMENTS // max(n, 1))
    for lo in range(0, n, rows):
        hi = min(n, lo + rows)
        s = np.sign(x[lo:hi, None] - x[None, :]) * np.sign(y[lo:hi, None] - y[None, :])
        out += np.einsum("bi,bi->b", w[:, lo:hi], w @ s.T)
    return out


def _concordance(table: np.ndarray) -> np.ndarray:
    """``2 (C - D)`` of each weighted contingency table ``table`` (B, distinct x, distinct
    y): ``C - D = sum_ab N[a, b] (N[<a, <b] - N[<a, >b])`` (Kendall 1945's count of
    concordant minus discordant pairs, on the cross-tabulation as in Agresti, *Analysis of
    Ordinal Categorical Data*, 2nd ed., sec. 7.1)."""
    # above[:, a, b]: weight at y value b of the x values below the a-th
    above = np.cumsum(table, axis=1) - table
    below_y = np.cumsum(above, axis=2) - above
    above_y = above.sum(axis=2, keepdims=True) - below_y - above
    return 2.0 * (table * (below_y - above_y)).sum(axis=(1, 2))


def _kendall_numerator_table(w: np.ndarray, gx: _Groups, gy: _Groups) -> np.ndarray:
    """The same ``2 (C - D)`` as :func:`_kendall_numerator`, from the weighted contingency
    table of the distinct values (:func:`_concordance`): O(B (n + cells)) instead of
    O(B n^2); ratings on a 1-10 scale have few distinct values however many rows."""
    ka, kb = len(gx.starts), len(gy.starts)
    cell = gx.codes * kb + gy.codes
    order = np.argsort(cell, kind="stable")
    present, starts = np.unique(cell[order], return_index=True)
    out = np.empty(w.shape[0])
    step = max(1, _BLOCK_ELEMENTS // max(ka * kb, 1))
    for lo in range(0, w.shape[0], step):
        wb = w[lo:lo + step]
        flat = np.zeros((wb.shape[0], ka * kb))
        flat[:, present] = np.add.reduceat(wb[:, order], starts, axis=1)
        out[lo:lo + step] = _concordance(flat.reshape(-1, ka, kb))
    return out


@dataclass(frozen=True)
class _Table:
    """One (x, y) pair as a contingency table of its distinct values, for resamples of
    clusters: ``incidence[k, c]`` = rows of cluster k in present cell c."""

    ka: int
    kb: int
    present: np.ndarray  # flat cell index (a * kb + b) of each present cell
    incidence: np.ndarray  # (n_items, len(present)) float
    xv: np.ndarray  # standardized x at each distinct x value, ascending
    yv: np.ndarray


def _table_of(xs: np.ndarray, ys: np.ndarray, gx: _Groups, gy: _Groups,
              codes: np.ndarray, n_items: int) -> _Table | None:
    """The :class:`_Table` of a pair, or None when it would not be smaller than the rows
    (many distinct values: continuous scores)."""
    ka, kb = len(gx.starts), len(gy.starts)
    if ka * kb > _TABLE_CELLS_PER_ROW * max(len(xs), 64):
        return None
    present, cell = np.unique(gx.codes * kb + gy.codes, return_inverse=True)
    if n_items * len(present) > _BLOCK_ELEMENTS:
        return None
    incidence = np.zeros((n_items, len(present)))
    np.add.at(incidence, (codes, cell.reshape(-1)), 1.0)
    return _Table(ka, kb, present, incidence, xs[gx.order[gx.starts]], ys[gy.order[gy.starts]])


def _table_pearson(table: np.ndarray, tx: np.ndarray, ty: np.ndarray, xv: np.ndarray,
                   yv: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Pearson r of each resample from its contingency table (B, ka, kb), the margins
    ``tx``, ``ty`` and the value of each distinct x and y (``(ka,)`` or per resample
    ``(B, ka)``): the two-pass weighted r of :func:`_w_pearson`, summed by cell."""
    total = tx.sum(axis=1)
    dx = xv - ((tx * xv).sum(axis=1) / total)[:, None]
    dy = yv - ((ty * yv).sum(axis=1) / total)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (np.einsum("bak,ba,bk->b", table, dx, dy)
             / np.sqrt((tx * dx * dx).sum(axis=1) * (ty * dy * dy).sum(axis=1)))
    r = np.clip(r, -1.0, 1.0)
    r[~ok] = np.nan
    return r


def _table_statistics(t: _Table, counts: np.ndarray, statistics: Sequence[str]
                      ) -> dict[str, np.ndarray]:
    """Pearson, Spearman (Pearson of the resample's mid-ranks) and Kendall's tau-b of each
    resample (``counts``: resamples x clusters) of a pair given as a :class:`_Table`; the
    same statistics as the row-by-row path, in O(B (clusters + cells))."""
    step = max(1, _BLOCK_ELEMENTS // max(t.ka * t.kb, 1))
    if counts.shape[0] > step:  # bounded (resamples x cells) blocks
        parts = [_table_statistics(t, counts[lo:lo + step], statistics)
                 for lo in range(0, counts.shape[0], step)]
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    flat = np.zeros((counts.shape[0], t.ka * t.kb))
    flat[:, t.present] = counts @ t.incidence
    table = flat.reshape(-1, t.ka, t.kb)
    tx, ty = table.sum(axis=2), table.sum(axis=1)
    ok = ((tx > 0).sum(axis=1) >= 2) & ((ty > 0).sum(axis=1) >= 2)
    out: dict[str, np.ndarray] = {}
    if "pearson" in statistics:
        out["pearson"] = _table_pearson(table, tx, ty, t.xv, t.yv, ok)
    if "spearman" in statistics:
        rx = np.cumsum(tx, axis=1) - tx + (tx + 1.0) / 2.0
        ry = np.cumsum(ty, axis=1) - ty + (ty + 1.0) / 2.0
        out["spearman"] = _table_pearson(table, tx, ty, rx, ry, ok)
    if "kendall" in statistics:
        total = tx.sum(axis=1)
        den = np.sqrt((total**2 - (tx**2).sum(axis=1)) * (total**2 - (ty**2).sum(axis=1)))
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = np.clip(_concordance(table) / den, -1.0, 1.0)
        tau[~ok] = np.nan
        out["kendall"] = tau
    out["ok"] = ok
    return out


def _w_kendall(
    w: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    tx: np.ndarray,
    ty: np.ndarray,
    ok: np.ndarray,
    gx: _Groups | None = None,
    gy: _Groups | None = None,
) -> np.ndarray:
    """Kendall tau-b of each weighted resample (Kendall 1945; scipy's ``variant='b'``).

    tau_b = (C - D) / sqrt((n0 - n1)(n0 - n2)) with n0 = N(N-1)/2 and n1 = sum T(T-1)/2
    over tie groups; in terms of weights, n0 - n1 = (N^2 - sum T^2) / 2, copies of one row
    being tied with each other in both variables.
    """
    gx = _groups(x) if gx is None else gx
    gy = _groups(y) if gy is None else gy
    table = len(gx.starts) * len(gy.starts) <= _TABLE_CELLS_PER_ROW * max(len(x), 64)
    if table or len(x) <= _KENDALL_MATRIX_MAX_ROWS:
        num = (_kendall_numerator_table(w, gx, gy) if table
               else _kendall_numerator(w, x, y))
        total = w.sum(axis=1)
        den = np.sqrt((total**2 - (tx**2).sum(axis=1)) * (total**2 - (ty**2).sum(axis=1)))
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = num / den
        tau = np.clip(tau, -1.0, 1.0)
    else:
        tau = np.empty(w.shape[0])
        for b in range(w.shape[0]):
            rows = np.repeat(np.arange(len(x)), w[b].astype(np.int64))
            tau[b] = _kendall(x[rows], y[rows])
    tau[~ok] = np.nan
    return tau


def _standardise(v: np.ndarray) -> np.ndarray:
    sd = v.std()
    return (v - v.mean()) / (sd if sd > 0 else 1.0)


@dataclass(frozen=True)
class _ClusterMoments:
    """Per-cluster sums of standardized x and y: rows, x, y, x^2, y^2, xy (each (K,))."""

    n: np.ndarray
    sx: np.ndarray
    sy: np.ndarray
    sxx: np.ndarray
    syy: np.ndarray
    sxy: np.ndarray


def _cluster_moments(xs: np.ndarray, ys: np.ndarray, codes: np.ndarray,
                     n_items: int) -> _ClusterMoments:
    def total(v: np.ndarray) -> np.ndarray:
        return np.bincount(codes, weights=v, minlength=n_items)

    return _ClusterMoments(total(np.ones_like(xs)), total(xs), total(ys), total(xs * xs),
                           total(ys * ys), total(xs * ys))


def fisher_z_studentized(counts: np.ndarray, m: _ClusterMoments
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Pearson's r and the cluster-robust standard error of atanh(r), for each row of
    ``counts`` (resamples x clusters: how often each cluster is drawn; a row of ones is the
    sample itself).

    The delta-method (sandwich) variance of r: ``Var(r) = sum_k c_k T_k^2 / N^2``, with
    ``T_k`` the sum over cluster k's rows of r's influence function
    ``u v - r (u^2 + v^2) / 2`` (u, v: x and y standardized by the resample's own moments;
    Devlin, Gnanadesikan & Kettenring 1975, *Biometrika* 62:531), so the rows of one
    cluster count as one unit; SE(atanh r) = SE(r) / (1 - r^2). Computed from the
    per-cluster sums, one (resamples x clusters) array at a time.
    """
    c = counts.astype(float)
    # t_k is linear in cluster k's sums M_k = (n, x, y, x^2, y^2, xy), with coefficients a
    # of the resample: T = a @ M' is one (B x 6) @ (6 x K) product; each T_k is squared
    # after its terms cancel (a quadratic form in sum_k c_k M_k M_k' would square the
    # condition number: near r = 1 it loses every digit)
    sums = np.stack([m.n, m.sx, m.sy, m.sxx, m.syy, m.sxy], axis=1)
    total, sx, sy, sxx, syy, sxy = (c @ sums).T
    mx, my = sx / total, sy / total
    vx = sxx / total - mx**2
    vy = syy / total - my**2
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(vx * vy)
        r = (sxy / total - mx * my) / sd
        half_x, half_y = r / (2 * vx), r / (2 * vy)
        a = np.stack([mx * my / sd - half_x * mx**2 - half_y * my**2,  # n
                      -my / sd + 2 * half_x * mx,  # x
                      -mx / sd + 2 * half_y * my,  # y
                      -half_x, -half_y, 1 / sd], axis=1)  # x^2, y^2, xy
        t_k = a @ sums.T
        var = (c * t_k * t_k).sum(axis=1) / total**2
        se_z = np.sqrt(var) / (1 - r**2)
    bad = ~np.isfinite(r) | (np.abs(r) >= 1) | ~(se_z > 0)
    return np.where(bad, np.nan, r), np.where(bad, np.nan, se_z)


def bootstrap_t_interval(point: tuple[float, float], boot_r: np.ndarray,
                         boot_se: np.ndarray, ci: float) -> tuple[float, float]:
    """The studentized (bootstrap-t) interval of Pearson's r on Fisher's z scale (Efron &
    Tibshirani 1993, sec. 12.5; DiCiccio & Efron 1996, *Statistical Science* 11:189, sec.
    3): with z = atanh r and its standard error s, ``t* = (z* - z) / s*`` over the
    resamples, and the interval ``tanh(z - t*_{(1+ci)/2} s), tanh(z - t*_{(1-ci)/2} s)``.
    ``point`` is (r, s) of the sample. NaN when undefined."""
    r, se = point
    if not (np.isfinite(r) and np.isfinite(se) and abs(r) < 1):
        return (np.nan, np.nan)
    z = float(np.arctanh(r))
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (np.arctanh(boot_r) - z) / boot_se
    t = t[np.isfinite(t)]
    if not len(t):
        return (np.nan, np.nan)
    hi_t, lo_t = np.quantile(t, [0.5 + ci / 2.0, 0.5 - ci / 2.0])
    return (float(np.tanh(z - hi_t * se)), float(np.tanh(z - lo_t * se)))


def bootstrap_statistics(
    pairs: Sequence[tuple[np.ndarray, np.ndarray]],
    codes: np.ndarray,
    n_items: int,
    *,
    n_boot: int,
    seed: int | None,
    statistics: Sequence[str] = ("pearson", "spearman", "kendall"),
) -> dict[tuple[int, str], np.ndarray]:
    """Cluster-bootstrap distributions of correlation statistics, all on the same resamples.

    ``pairs`` are (x, y) arrays of equal length without NaN; ``codes`` the item code of each
    row (0..n_items-1). Each resample draws ``n_items`` items with replacement (numpy
    ``Generator`` seeded with ``seed``); every pair is evaluated on the same resamples, which
    makes differences between pairs paired. Returns ``{(pair index, statistic): (n_boot,)}``
    with NaN for degenerate resamples (a constant variable). The statistic
    ``"pearson_se"`` is the cluster-robust standard error of atanh(r) of each resample
    (:func:`fisher_z_studentized`), for the bootstrap-t interval.
    """
    unknown = set(statistics) - {*POINT_STATS, "pearson_se"}
    if unknown:
        raise ValueError(f"unknown statistics {sorted(unknown)}; use {sorted(POINT_STATS)}")
    out: dict[tuple[int, str], list[np.ndarray]] = {
        (k, s): [] for k in range(len(pairs)) for s in statistics
    }
    rng = np.random.default_rng(seed)
    n = len(codes)
    prepared = []
    moments = []
    tables: list[_Table | None] = []
    for x, y in pairs:
        gx, gy = _groups(x), _groups(y)
        prepared.append((_standardise(x), _standardise(y), gx, gy, x, y))
        moments.append(_cluster_moments(prepared[-1][0], prepared[-1][1], codes, n_items)
                       if "pearson_se" in statistics else None)
        tables.append(_table_of(prepared[-1][0], prepared[-1][1], gx, gy, codes, n_items))
    chunk = max(1, _BLOCK_ELEMENTS // max(n, n_items, 1))
    done = 0
    while done < n_boot:
        size = min(chunk, n_boot - done)
        draws = rng.integers(0, n_items, size=(size, n_items))
        offsets = draws + (np.arange(size) * n_items)[:, None]
        counts = np.bincount(offsets.ravel(), minlength=size * n_items).reshape(size, n_items)
        w = None if all(tables) else counts[:, codes].astype(float)
        for k, (xs, ys, gx, gy, x, y) in enumerate(prepared):
            table = tables[k]
            if table is not None:  # few distinct values: every statistic from the table
                found = _table_statistics(table, counts, statistics)
                for stat in statistics:
                    if stat == "pearson_se":
                        se = fisher_z_studentized(counts, moments[k])[1]  # type: ignore[arg-type]
                        out[(k, stat)].append(np.where(found["ok"], se, np.nan))
                    else:
                        out[(k, stat)].append(found[stat])
                continue
            if w is None:
                w = counts[:, codes].astype(float)
            tx, ty = _group_totals(w, gx), _group_totals(w, gy)
            ok = ((tx > 0).sum(axis=1) >= 2) & ((ty > 0).sum(axis=1) >= 2)
            if "pearson" in statistics:
                out[(k, "pearson")].append(_w_pearson(w, xs, ys, ok))
            if "pearson_se" in statistics:
                se = fisher_z_studentized(counts, moments[k])[1]  # type: ignore[arg-type]
                out[(k, "pearson_se")].append(np.where(ok, se, np.nan))
            if "spearman" in statistics:
                rx, ry = _w_midranks(tx, gx), _w_midranks(ty, gy)
                out[(k, "spearman")].append(_w_pearson(w, rx, ry, ok))
            if "kendall" in statistics:
                out[(k, "kendall")].append(_w_kendall(w, x, y, tx, ty, ok, gx, gy))
        done += size
    return {key: (np.concatenate(v) if v else np.empty(0)) for key, v in out.items()}


def expanded_level(ci: float, n_clusters: int | None) -> float:
    """The coverage at which to read a percentile interval from ``n_clusters`` resampled
    clusters so that it covers ``ci``: Hesterberg's expanded percentile interval
    (Hesterberg 2015, "What Teachers Should Know About the Bootstrap", *The American
    Statistician* 69:371, sec. 4.5): the tail ``(1 - ci) / 2`` becomes
    ``Phi(-sqrt(n / (n - 1)) t_{(1 + ci) / 2, n - 1})``, which corrects the percentile
    interval's narrowness in small samples (the bootstrap distribution has the spread of a
    variance divided by n, not n - 1, and normal rather than t tails). With 60 outputs a
    nominal .95 is read at .956; the correction vanishes as n grows. ``None`` or fewer than 2
    clusters: ``ci`` unchanged."""
    if n_clusters is None or n_clusters < 2:
        return ci
    tail = stats.norm.cdf(-np.sqrt(n_clusters / (n_clusters - 1))
                          * stats.t.ppf(0.5 + ci / 2.0, n_clusters - 1))
    return float(1.0 - 2.0 * tail)


def percentile_interval(boot: np.ndarray, ci: float,
                        n_clusters: int | None = None) -> tuple[float, float]:
    """Percentile bootstrap interval (Efron & Tibshirani 1993, eq. 13.5), NaN resamples
    (degenerate, e.g. constant) left out; NaN when no resample is usable. Given the number
    of resampled clusters, the expanded percentile interval (:func:`expanded_level`)."""
    finite = boot[np.isfinite(boot)]
    if len(finite) == 0:
        return (np.nan, np.nan)
    level = expanded_level(ci, n_clusters)
    lo, hi = np.quantile(finite, [0.5 - level / 2.0, 0.5 + level / 2.0])
    return (float(lo), float(hi))


# ------------------------------------------------------------------------ public API


@dataclass(frozen=True)
class MaeBias:
    """Mean absolute error and mean bias (judge - human) on the judge's scale."""

    n: int
    mae: float
    bias: float

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(self)])


def mae_bias(x: ArrayLike, y: ArrayLike) -> MaeBias:
    """MAE = mean |x - y| and bias = mean (x - y) over complete pairs (x = judge, y = human).

    Both on the rating scale, as METHODS.md asks beside the correlations (a judge can
    correlate perfectly and still be 2 points too lenient). NaN when no complete pair.
    """
    xa, ya = as_float_array(x, "x"), as_float_array(y, "y")
    if len(xa) != len(ya):
        raise ValueError(f"x and y differ in length: {len(xa)} != {len(ya)}")
    keep = np.isfinite(xa) & np.isfinite(ya)
    d = xa[keep] - ya[keep]
    if len(d) == 0:
        return MaeBias(n=0, mae=np.nan, bias=np.nan)
    return MaeBias(n=int(len(d)), mae=float(np.abs(d).mean()), bias=float(d.mean()))


#: Fewer distinct items than this: no bootstrap interval (a percentile interval from a
#: handful of resampled items is far too narrow).
MIN_BOOT_ITEMS = 10


def correlations(
    x: ArrayLike,
    y: ArrayLike,
    *,
    items: ArrayLike | None = None,
    n_boot: int = 1000,
    seed: int | None = 0,
    ci: float = 0.95,
) -> pd.DataFrame:
    """PLCC, SRCC and Kendall tau-b of judge ``x`` against human ``y``, with intervals.

    Returns one row with columns ``n`` (complete pairs), ``n_items`` (their distinct
    items), ``plcc``, ``plcc_lo``/``plcc_hi`` (Fisher z, as scipy's
    ``pearsonr(x, y).confidence_interval()``, with n = pairs: valid only with one pair per
    item), ``plcc_boot_lo``/``plcc_boot_hi`` (percentile), ``plcc_bt_lo``/``plcc_bt_hi``
    (the studentized bootstrap on Fisher's z, :func:`bootstrap_t_interval`, with a
    cluster-robust standard error), ``srcc``, ``srcc_lo``/``srcc_hi``,
    ``kendall`` (tau-b), ``kendall_lo``/``kendall_hi`` (all expanded percentile intervals
    of a bootstrap over items, :func:`expanded_level`), ``mae``, ``bias`` (mean x - y),
    ``ci``, ``n_boot`` (resamples in which the
    correlations were defined), ``note`` (why a value is NaN: fewer than 3 pairs, a
    constant variable, fewer than :data:`MIN_BOOT_ITEMS` items for a bootstrap).

    Sources: Pearson (1896); Spearman (1904) as Pearson of mid-ranks; Kendall (1945) tau-b,
    i.e. scipy ``kendalltau(variant="b")``; Fisher (1921) z interval; percentile bootstrap
    (Efron & Tibshirani 1993, eq. 13.5) over items (cluster bootstrap, Davison & Hinkley
    1997, sec. 3.8). Pingouin's Fisher interval for Spearman/Kendall is deliberately not
    used (too wide for tau).

    Parameters
    ----------
    x, y: judge and human scores, one per row; rows with NaN in either are dropped.
    items: optional item label per row; rows sharing a label are resampled together.
        Without it every row is its own item.
    n_boot: bootstrap resamples (0 disables the bootstrap: the bootstrap columns are NaN).
    seed: seed of the numpy ``Generator``; the same seed gives identical output.
    ci: coverage of every interval.
    """
    _check_ci(ci)
    xa, ya = as_float_array(x, "x"), as_float_array(y, "y")
    if len(xa) != len(ya):
        raise ValueError(f"x and y differ in length: {len(xa)} != {len(ya)}")
    codes, _ = item_codes(items, len(xa))
    keep = np.isfinite(xa) & np.isfinite(ya)
    xa, ya = xa[keep], ya[keep]
    codes = np.unique(codes[keep], return_inverse=True)[1].reshape(-1)
    n_items = int(codes.max()) + 1 if len(codes) else 0
    n = len(xa)

    err = mae_bias(xa, ya)
    plcc = _pearson(xa, ya)
    plcc_lo, plcc_hi = fisher_ci(plcc, n, ci)
    row: dict[str, float | int | str] = {
        "n": n,
        "n_items": n_items,
        "plcc": plcc,
        "plcc_lo": plcc_lo,
        "plcc_hi": plcc_hi,
        "plcc_boot_lo": np.nan,
        "plcc_boot_hi": np.nan,
        "plcc_bt_lo": np.nan,
        "plcc_bt_hi": np.nan,
        "srcc": _spearman(xa, ya),
        "srcc_lo": np.nan,
        "srcc_hi": np.nan,
        "kendall": _kendall(xa, ya),
        "kendall_lo": np.nan,
        "kendall_hi": np.nan,
        "mae": err.mae,
        "bias": err.bias,
        "ci": ci,
        "n_boot": 0,
    }
    notes = []
    if n < 3:
        notes.append(f"fewer than 3 pairs ({n})")
    elif _is_constant(xa) or _is_constant(ya):
        notes.append("constant " + ("judge and human" if _is_constant(xa) and _is_constant(ya)
                                    else "judge" if _is_constant(xa) else "human")
                     + " scores: correlations undefined")
    elif n_items < MIN_BOOT_ITEMS and n_boot > 0:
        notes.append(f"fewer than {MIN_BOOT_ITEMS} items ({n_items}): no bootstrap interval")
    if n_boot > 0 and np.isfinite(plcc) and n_items >= MIN_BOOT_ITEMS:
        boot = bootstrap_statistics([(xa, ya)], codes, n_items, n_boot=n_boot, seed=seed,
                                    statistics=("pearson", "pearson_se", "spearman",
                                                "kendall"))
        for stat, column in (("pearson", "plcc_boot"), ("spearman", "srcc"),
                             ("kendall", "kendall")):
            row[f"{column}_lo"], row[f"{column}_hi"] = percentile_interval(
                boot[(0, stat)], ci, n_items)
        moments = _cluster_moments(_standardise(xa), _standardise(ya), codes, n_items)
        r0, se0 = fisher_z_studentized(np.ones((1, n_items)), moments)
        row["plcc_bt_lo"], row["plcc_bt_hi"] = bootstrap_t_interval(
            (float(r0[0]), float(se0[0])), boot[(0, "pearson")], boot[(0, "pearson_se")], ci)
        row["n_boot"] = int(np.isfinite(boot[(0, "pearson")]).sum())
    row["note"] = "; ".join(notes)
    return pd.DataFrame([row])


def reported_plcc_interval(stats: pd.Series | dict) -> tuple[float, float, str]:
    """The PLCC interval a report shows for one :func:`correlations` row, and its method.

    The studentized cluster bootstrap over items when it was computed
    (``plcc_bt_lo``/``hi``: the benchmark of intervals found it closer to its nominal
    coverage than the percentile interval for pooled operator scores of 60 outputs), since
    rows that pool several pairs per item (leave-one-out, pooled operators) make Fisher's
    n = pairs far too small an interval; else the percentile cluster bootstrap; otherwise
    Fisher's interval where there is one pair per item (``n == n_items``); otherwise none.
    Returns ``(lo, hi, method)`` with method ``"cluster bootstrap-t"``,
    ``"cluster bootstrap"``, ``"fisher"`` or ``""``.
    """
    for columns, method in ((("plcc_bt_lo", "plcc_bt_hi"), "cluster bootstrap-t"),
                            (("plcc_boot_lo", "plcc_boot_hi"), "cluster bootstrap")):
        if columns[0] not in stats:
            continue
        lo, hi = float(stats[columns[0]]), float(stats[columns[1]])
        if np.isfinite(lo) and np.isfinite(hi):
            return lo, hi, method
    if stats["n"] == stats["n_items"] and np.isfinite(stats["plcc_lo"]):
        return float(stats["plcc_lo"]), float(stats["plcc_hi"]), "fisher"
    return np.nan, np.nan, ""


#: Fisher-z pooling clips |r| to this before atanh: a perfect correlation of a few items
#: (|r| = 1 has an infinite z) must not outweigh everything else in the pool.
FISHER_CLIP = 0.9999


def fisher_z_mean(rs: ArrayLike, ns: ArrayLike | None = None, *, min_n: int = 4) -> float:
    """Pooled correlation: ``tanh`` of the mean of ``atanh(r)``, weighted by ``n - 3``.

    The fixed-effect meta-analytic average of correlations (Hedges & Olkin 1985,
    *Statistical Methods for Meta-Analysis*, ch. 11, eq. 9: z-bar = sum (n_i - 3) z_i /
    sum (n_i - 3)); unweighted when ``ns`` is None. NaN correlations are left out, as are
    correlations from fewer than ``min_n`` items (at least 4: the weight n - 3 must be
    positive). |r| is clipped to :data:`FISHER_CLIP` first, so a correlation of exactly
    +-1 (two annotators who agree on 4 outputs) counts as a large but finite z instead of
    making the pool +-1.

    Not what VIEScore reports: VIEScore (Ku et al., ACL 2024, ``analyze_json.ipynb``,
    ``average_correlation``) pools per-model Spearman rhos **unweighted and without the
    atanh step**, ``tanh(mean(rho))``; see :func:`viescore_mean` to reproduce its numbers.
    Always label which aggregation a pooled number used.
    """
    return fisher_z_pool(rs, ns, min_n=min_n)[0]


def fisher_z_pool(rs: ArrayLike, ns: ArrayLike | None = None, *,
                  min_n: int = 4) -> tuple[float, int, int]:
    """:func:`fisher_z_mean` and how many correlations it pooled and left out:
    ``(r, n_pooled, n_left_out)``; a NaN r or fewer than ``min_n`` items leaves a
    correlation out."""
    r = as_float_array(rs, "rs")
    if ns is None:
        w = np.ones_like(r)
        big = np.ones(len(r), dtype=bool)
    else:
        counts = as_float_array(ns, "ns")
        if len(counts) != len(r):
            raise ValueError(f"rs and ns differ in length: {len(r)} != {len(counts)}")
        w = counts - 3.0
        big = np.isfinite(counts) & (counts >= max(min_n, 4))
    keep = np.isfinite(r) & np.isfinite(w) & (w > 0) & big
    used = int(keep.sum())
    if not used:
        return np.nan, 0, int(len(r))
    z = np.arctanh(np.clip(r[keep], -FISHER_CLIP, FISHER_CLIP))
    return float(np.tanh(np.sum(w[keep] * z) / np.sum(w[keep]))), used, int(len(r) - used)


def viescore_mean(rs: ArrayLike) -> float:
    """VIEScore's pooled correlation, ``tanh(mean(r))`` (unweighted, no ``atanh``).

    Reproduces Ku et al. (VIEScore, ACL 2024), ``analyze_json.ipynb``:
    ``average_correlation`` receives the raw per-model Spearman rhos and returns
    ``(exp(2 z) - 1) / (exp(2 z) + 1)`` of their plain mean, e.g. rhos .3538, .2145, .5476
    (ImagenHub Multi-Concept IC, SC) -> .3557, where a Fisher z mean gives .3806. It is
    applied again to the per-task results for the final number. Offered only to compare
    with VIEScore's tables; use :func:`fisher_z_mean` for a proper pooled correlation.
    """
    r = as_float_array(rs, "rs")
    r = r[np.isfinite(r)]
    return float(np.tanh(r.mean())) if len(r) else np.nan
