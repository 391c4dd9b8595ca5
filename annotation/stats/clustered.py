"""Agreement on decisions that come in clusters: the questions of one output.

A checklist asks ~10 questions of every output, and the answers to one output's questions
are not independent (a bad image fails many of them; a judge that misreads an image errs
on many). Intervals that treat decisions as independent (Wilson over decisions, the
Fleiss-Cohen-Everitt kappa interval, McNemar over decisions) are then too narrow. Here
the **output is the unit of resampling**:

* :func:`clustered_agreement`: % agreement, Cohen's kappa, Gwet's AC1, PABAK, specific
  agreements, balanced accuracy, each with a **cluster bootstrap** interval (Davison &
  Hinkley 1997, *Bootstrap Methods and their Application*, sec. 3.8: resample clusters
  with replacement, keep all of a cluster's decisions), read as Hesterberg's expanded
  percentile interval (:func:`annotation.stats.correlation.expanded_level`). The point estimates are
  those of :func:`annotation.stats.agreement.binary_agreement` on the pooled decisions.
  A resample is a weight per cluster, so all resamples are one matrix product of the
  per-cluster 2x2 cells.
* :func:`clustered_mcnemar`: two judges scored against one reference on the same
  clustered decisions: the accuracy difference with a paired cluster-bootstrap interval
  and the clustered McNemar test of Durkalski, Palesch, Lipsitz & Rust (2003),
  "Analysis of clustered matched-pair data", *Statistics in Medicine* 22:2417, eq. 3:
  ``X^2 = (sum_k (b_k - c_k))^2 / sum_k (b_k - c_k)^2`` on 1 df, where ``b_k``/``c_k``
  are cluster k's discordant counts. With one decision per cluster it is McNemar's
  statistic without continuity correction.

* :func:`clustered_wilson`: a proportion over clustered yes/no units (the reviews of one
  output's operator instances, by several reviewers) with the Wilson interval at the
  **effective sample size** (Kish's design effect; Korn & Graubard 1998, "Confidence
  intervals for proportions with small expected number of positive counts estimated from
  survey data", *Survey Methodology* 24:193): no resampling, so it is defined for small
  and extreme counts where a bootstrap is not.

No bootstrap interval is given from fewer than :data:`MIN_CLUSTERS` clusters.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from annotation.stats.agreement import (
    agreement_from_table,
    normalize_label,
    paired_flags,
    wilson_interval,
)
from annotation.stats.correlation import percentile_interval

__all__ = ["MIN_CLUSTERS", "ClusteredProportion", "cluster_bootstrap", "cluster_counts",
           "cluster_weights", "clustered_agreement", "clustered_mcnemar", "clustered_wilson",
           "coded_agreement"]

#: Fewer clusters than this: no bootstrap interval (the percentile interval of a handful
#: of clusters is far too narrow).
MIN_CLUSTERS = 10
#: Cells per block of resample weights (bounds memory, not results).
_BLOCK = 1 << 22


def cluster_counts(rng: np.random.Generator, n_clusters: int, n_boot: int
                   ) -> Iterator[np.ndarray]:
    """Blocks of bootstrap weights: row b = how often each of ``n_clusters`` clusters is
    drawn in resample b (``n_clusters`` draws with replacement), ``n_boot`` rows in all."""
    size = max(1, _BLOCK // max(n_clusters, 1))
    done = 0
    while done < n_boot:
        b = min(size, n_boot - done)
        offsets = rng.integers(0, n_clusters, size=(b, n_clusters))
        offsets += (np.arange(b) * n_clusters)[:, None]  # in place: one array of draws
        counts = np.bincount(offsets.ravel(), minlength=b * n_clusters).reshape(b, n_clusters)
        del offsets
        yield counts
        del counts  # before the next block is drawn (the caller drops its own reference)
        done += b


#: Seeded resample weights already drawn: (seed, n_clusters, n_boot) -> blocks, stored in the
#: narrowest unsigned type (:func:`cluster_weights`); at most _CACHE_BYTES in all.
_CACHE: OrderedDict[tuple[int, int, int], list[np.ndarray]] = OrderedDict()
_CACHE_BYTES = 64 << 20


def _narrowest(counts: np.ndarray) -> np.ndarray:
    """Resample counts as uint8 (uint16 if needed; as they are beyond)."""
    top = int(counts.max()) if counts.size else 0
    kind = np.uint8 if top <= np.iinfo(np.uint8).max else (
        np.uint16 if top <= np.iinfo(np.uint16).max else counts.dtype)
    return counts.astype(kind)


def cluster_weights(seed: int | None, n_clusters: int, n_boot: int) -> Iterator[np.ndarray]:
    """The blocks of :func:`cluster_counts` drawn from a fresh ``default_rng(seed)``: the
    same numbers, but drawn once per (seed, clusters, resamples) and reused.

    A report resamples the same outputs for every judge and reference (Davison & Hinkley
    1997, sec. 3.8: one set of cluster resamples); drawing them again for each table costs
    ``n_boot x n_clusters`` random integers every time. Counts are small, so the blocks are
    kept as uint8 (uint16 if needed); a product ``w @ cells`` with float64 cells casts them
    to float64 exactly as it casts int64 counts, so every result is bit-for-bit the same
    (with integer cells of a narrow type it would wrap: :func:`cluster_bootstrap` makes its
    cells float64 first). ``seed=None`` (fresh entropy) is never cached."""
    if seed is None:
        yield from cluster_counts(np.random.default_rng(seed), n_clusters, n_boot)
        return
    key = (int(seed), int(n_clusters), int(n_boot))
    blocks = _CACHE.get(key)
    if blocks is None and n_clusters * n_boot > _CACHE_BYTES:
        # too many for the cache even as uint8 (100,000 outputs: 100 MB): drawn a few blocks
        # at a time, at most half the cache's size held (issue #18's peak memory); the same
        # numbers. (Block by block, BLAS's threads spin between the products: ~1 s a call.)
        group: list[np.ndarray] = []
        for w in cluster_counts(np.random.default_rng(seed), n_clusters, n_boot):
            group.append(_narrowest(w))
            del w
            if sum(b.nbytes for b in group) >= _CACHE_BYTES // 2:
                yield from group
                group = []
        yield from group
        return
    if blocks is None:
        blocks = [_narrowest(w)
                  for w in cluster_counts(np.random.default_rng(seed), n_clusters, n_boot)]
        size = sum(b.nbytes for b in blocks)
        if size <= _CACHE_BYTES:
            while _CACHE and sum(b.nbytes for v in _CACHE.values() for b in v) + size > \
                    _CACHE_BYTES:
                _CACHE.popitem(last=False)
            _CACHE[key] = blocks
    else:
        _CACHE.move_to_end(key)
    yield from blocks


def cluster_bootstrap(cells: np.ndarray,
                      statistics: Callable[[np.ndarray], Mapping[str, np.ndarray]],
                      point: Mapping[str, float], *, n_boot: int, seed: int | None,
                      conf: float) -> tuple[dict[str, tuple[float, float]], int]:
    """Percentile cluster-bootstrap intervals (module docstring) of the statistics named
    in ``point`` (their estimates on all the data): ``cells`` holds each cluster's counts
    (one row per cluster), ``statistics`` maps resampled count rows (B, ...) to each
    statistic's B values. Returns the intervals by name and the number of resamples in
    which every statistic with a finite estimate was defined (the smallest)."""
    cells = np.asarray(cells, dtype=np.float64)  # the weights are uint8: no narrow product
    n_clusters = cells.shape[0]
    boot: dict[str, list[np.ndarray]] = {s: [] for s in point}
    for w in cluster_weights(seed, n_clusters, n_boot):
        values = statistics(w @ cells)
        for s in point:
            boot[s].append(values[s])
    intervals: dict[str, tuple[float, float]] = {}
    counts = []
    for s, estimate in point.items():
        arr = np.concatenate(boot[s])
        intervals[s] = percentile_interval(arr, conf, n_clusters)
        if math.isfinite(estimate):
            counts.append(int(np.isfinite(arr).sum()))
    return intervals, min(counts) if counts else 0


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _cell_stats(cells: np.ndarray) -> dict[str, np.ndarray]:
    """The agreement statistics of stacked 2x2 tables ``cells`` (..., 4) = a, b, c, d with
    a = both yes, b = judge yes / reference no, c = judge no / reference yes, d = both no.
    Same formulas as :func:`annotation.stats.agreement.binary_agreement` (two categories)."""
    a, b, c, d = (cells[..., i].astype(float) for i in range(4))
    n = a + b + c + d
    po = _ratio(a + d, n)
    judge_yes, ref_yes = _ratio(a + b, n), _ratio(a + c, n)
    pe = judge_yes * ref_yes + (1 - judge_yes) * (1 - ref_yes)
    pi = (judge_yes + ref_yes) / 2
    pe_ac1 = 2 * pi * (1 - pi)  # Gwet (2008) with q = 2: sum pi_k (1 - pi_k) / (q - 1)
    yes_recall, no_recall = _ratio(a, a + c), _ratio(d, d + b)
    return {
        "agreement": po,
        "kappa": _ratio(po - pe, 1 - pe),
        "ac1": _ratio(po - pe_ac1, 1 - pe_ac1),
        "pabak": 2 * po - 1,
        "p_pos": _ratio(2 * a, 2 * a + b + c),
        "p_neg": _ratio(2 * d, 2 * d + b + c),
        "yes_recall": yes_recall,
        "no_recall": no_recall,
        "balanced_accuracy": (yes_recall + no_recall) / 2,
    }


_KNOWN = {"yes": "yes", "no": "no", "cant_tell": None}


def read_labels(values: Any) -> pd.Series:
    """Labels as :func:`annotation.stats.agreement.normalize_label` reads them (missing and
    ``cant_tell`` become None), vectorized when they are the store's own yes/no/cant_tell."""
    s = pd.Series(np.asarray(list(values) if not isinstance(values, np.ndarray | pd.Series)
                             else values, dtype=object), dtype=object)
    fast = bool((s.isin(list(_KNOWN)) | s.isna()).all())
    out = s.map(_KNOWN) if fast else s.map(normalize_label)
    return out.astype(object).where(out.notna(), None)


def _codes(clusters: Any, n: int) -> tuple[np.ndarray, int]:
    """Each decision's cluster as a code in order of first appearance, and the number of
    clusters. Integer labels are factorized as they are (the same codes as their Python
    objects would get, without one object per decision: a million at 100,000 outputs)."""
    if (isinstance(clusters, np.ndarray) and clusters.dtype.kind in "iu"
            and clusters.shape == (n,)):
        codes, uniques = pd.factorize(clusters)
        return codes, len(uniques)
    labels = np.asarray(clusters if clusters is not None else np.arange(n), dtype=object)
    if labels.shape != (n,):
        raise ValueError(f"clusters must have one label per decision ({n}), got {labels.shape}")
    codes, uniques = pd.factorize(labels)
    if (codes < 0).any():
        raise ValueError("clusters contains missing labels")
    return codes, len(uniques)


def _dense(codes: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The cluster codes (0..k-1, in order of first appearance) of the kept decisions,
    renumbered 0..m-1 in the same order. With every decision kept they are so already
    (no sort of a million codes at 100,000 outputs)."""
    if keep.all():
        return codes
    kept = codes[keep]
    return np.unique(kept, return_inverse=True)[1].reshape(-1) if len(kept) else kept


def clustered_agreement(judge: Any, reference: Any, clusters: Any = None, *,
                        n_boot: int = 1000, seed: int | None = 0, conf: float = 0.95,
                        positive: str = "yes") -> pd.DataFrame:
    """Judge-vs-reference agreement on clustered yes/no decisions, as one tidy row.

    ``judge``, ``reference``: one label per decision; ``clusters``: the output of each
    decision (None: every decision its own cluster). Pairs with a missing or
    ``cant_tell`` side are dropped (as :func:`annotation.stats.agreement.binary_agreement`).

    Columns: every column of ``binary_agreement`` (computed by the same
    :func:`annotation.stats.agreement.agreement_from_table`; agreement with its Wilson
    interval as
    ``agreement_wilson_lo``/``hi``, which assumes independent decisions), then
    ``agreement_lo``/``hi``, ``kappa_lo``/``hi``, ``ac1_lo``/``hi``,
    ``balanced_accuracy`` with ``balanced_accuracy_lo``/``hi``: percentile cluster bootstrap
    intervals (module docstring); ``n_clusters`` (clusters with a decision), ``n_boot``
    (resamples in which the statistic was defined, the smallest over the statistics),
    ``note`` (why an interval or statistic is missing). Seeded numpy ``Generator``.
    """
    j, r = read_labels(judge), read_labels(reference)
    if len(j) != len(r):
        raise ValueError(f"judge and reference differ in length: {len(j)} != {len(r)}")
    codes, _ = _codes(clusters, len(j))
    pos = normalize_label(positive)
    keep = (j.notna() & r.notna()).to_numpy()
    return coded_agreement((j == pos).to_numpy(), (r == pos).to_numpy(), keep, codes,
                           n_boot=n_boot, seed=seed, conf=conf, positive=pos)


def coded_agreement(judge_yes: np.ndarray, reference_yes: np.ndarray, decided: np.ndarray,
                    clusters: np.ndarray, *, n_boot: int = 1000, seed: int | None = 0,
                    conf: float = 0.95, positive: Hashable = "yes") -> pd.DataFrame:
    """:func:`clustered_agreement` on labels already read: per decision, whether the judge
    and the reference said ``positive`` (booleans), whether both decided, and the
    cluster of each as integer codes (any integers: clusters are ordered by first
    appearance, as :func:`clustered_agreement` orders its labels). The same row."""
    codes = np.asarray(clusters)
    if codes.dtype.kind not in "iu":
        raise ValueError("clusters must be integer codes")
    codes = pd.factorize(codes)[0]
    pos = positive
    keep = np.asarray(decided, dtype=bool)
    jy, ry = np.asarray(judge_yes, dtype=bool)[keep], np.asarray(reference_yes, dtype=bool)[keep]
    kept = _dense(codes, keep)
    n_clusters = int(kept.max()) + 1 if len(kept) else 0
    cells = np.zeros((n_clusters, 4))
    for i, mask in enumerate((jy & ry, jy & ~ry, ~jy & ry, ~jy & ~ry)):
        cells[:, i] = np.bincount(kept[mask], minlength=n_clusters)
    a, b, c, d = cells.sum(axis=0)
    other = "no" if pos == "yes" else "yes"
    row = agreement_from_table([[a, b], [c, d]], [pos, other], positive=pos,
                               n_dropped=int((~keep).sum()), conf=conf).iloc[0].to_dict()
    row["agreement_wilson_lo"] = row.pop("agreement_lo")
    row["agreement_wilson_hi"] = row.pop("agreement_hi")
    row.pop("kappa_lo")
    row.pop("kappa_hi")
    point = _cell_stats(cells.sum(axis=0))
    row["balanced_accuracy"] = float(point["balanced_accuracy"])
    intervals = ("agreement", "kappa", "ac1", "balanced_accuracy")
    for s in intervals:
        row[f"{s}_lo"] = row[f"{s}_hi"] = math.nan
    notes = []
    used = 0
    if n_clusters < MIN_CLUSTERS:
        notes.append(f"fewer than {MIN_CLUSTERS} outputs: no bootstrap interval")
    elif n_boot > 0:
        found, used = cluster_bootstrap(cells, _cell_stats, {s: row[s] for s in intervals},
                                        n_boot=n_boot, seed=seed, conf=conf)
        for s, (lo, hi) in found.items():
            row[f"{s}_lo"], row[f"{s}_hi"] = lo, hi
    if not row["n_decisions"]:
        notes.append("no decisions")
    elif not math.isfinite(row["kappa"]):
        notes.append("kappa undefined: judge and reference each used one answer only")
    row["n_clusters"] = n_clusters
    row["n_boot"] = used
    row["note"] = "; ".join(notes)
    return pd.DataFrame([row])


def clustered_mcnemar(right_a: Any, right_b: Any, clusters: Any = None, *, n_boot: int = 1000,
                      seed: int | None = 0, conf: float = 0.95) -> pd.DataFrame:
    """Two judges right/wrong on the same clustered decisions: is one more accurate?

    ``right_a``/``right_b``: per decision, whether judge A / B agrees with the reference
    (decisions where either is missing are dropped); ``clusters``: the output of each.
    One row: ``n_decisions``, ``n_clusters``, ``accuracy_a``, ``accuracy_b``, ``diff``
    (= accuracy_a - accuracy_b) with ``diff_lo``/``diff_hi`` (percentile paired cluster
    bootstrap: both accuracies on the same resampled outputs), ``a_right_b_wrong``,
    ``a_wrong_b_right``, ``clustered_chi2`` and ``clustered_p``: Durkalski et al. (2003,
    eq. 3) clustered McNemar, chi-square with 1 df (p = 1 without discordant decisions),
    ``n_boot`` (resamples used) and ``note``.
    """
    xa, xb, keep = paired_flags(right_a, right_b)
    codes, _ = _codes(clusters, len(keep))
    kept = _dense(codes, keep)
    k = int(kept.max()) + 1 if len(kept) else 0
    per = np.zeros((k, 4))
    per[:, 0] = np.bincount(kept[xa], minlength=k)
    per[:, 1] = np.bincount(kept[xb], minlength=k)
    per[:, 2] = np.bincount(kept, minlength=k)
    bk = np.bincount(kept[xa & ~xb], minlength=k).astype(float)
    ck = np.bincount(kept[~xa & xb], minlength=k).astype(float)
    n = int(keep.sum())
    diff_k = bk - ck
    den = float((diff_k**2).sum())
    chi2 = float(diff_k.sum() ** 2 / den) if den > 0 else 0.0
    row: dict[str, Any] = {
        "n_decisions": n, "n_clusters": k,
        "accuracy_a": float(xa.mean()) if n else math.nan,
        "accuracy_b": float(xb.mean()) if n else math.nan,
        "a_right_b_wrong": int(bk.sum()), "a_wrong_b_right": int(ck.sum()),
        "clustered_chi2": chi2, "clustered_p": float(stats.chi2.sf(chi2, 1)) if n else math.nan,
    }
    row["diff"] = row["accuracy_a"] - row["accuracy_b"]
    row["diff_lo"] = row["diff_hi"] = math.nan
    notes, used = [], 0
    if k < MIN_CLUSTERS:
        notes.append(f"fewer than {MIN_CLUSTERS} outputs: no bootstrap interval")
    elif n_boot > 0:
        parts = []
        for w in cluster_weights(seed, k, n_boot):
            t = w @ per
            parts.append(_ratio(t[:, 0] - t[:, 1], t[:, 2]))
        boot = np.concatenate(parts)
        row["diff_lo"], row["diff_hi"] = percentile_interval(boot, conf, k)
        used = int(np.isfinite(boot).sum())
    row["n_boot"] = used
    row["note"] = "; ".join(notes)
    return pd.DataFrame([row])


# --------------------------------------------------------------------------- proportions
@dataclass(frozen=True)
class ClusteredProportion:
    """``k / n`` over clustered units with its design-effect Wilson interval."""

    k: int
    n: int
    estimate: float
    lo: float
    hi: float
    n_clusters: int
    design_effect: float
    conf: float


def clustered_wilson(successes: Any, clusters: Any = None, conf: float = 0.95
                     ) -> ClusteredProportion:
    """The share of ``successes`` (one 0/1 per unit) with a Wilson interval that accounts
    for units in clusters (``clusters``: one label per unit; None: independent units).

    The estimate is the pooled share ``p = k / n``. Its variance is the ratio
    (linearisation) estimator over the G clusters,
    ``v = G / (G - 1) * sum_g (k_g - p n_g)^2 / n^2``, which is the cluster-robust variance
    of an intercept-only regression (statsmodels ``OLS(...).fit(cov_type="cluster")``).
    The design effect ``d = v / (p (1 - p) / (n - 1))`` (against the variance estimate of
    a simple random sample of n units, so that singleton clusters give exactly 1) is
    floored at 1 (Korn & Graubard 1998, Sec. 2: clustering is not let to narrow the
    interval) and the Wilson (1927) interval is
    taken at the effective size ``n* = n / d * (z / t)^2`` with ``p n*`` successes, ``t``
    the Student quantile on G - 1 degrees of freedom (Kish 1965, *Survey Sampling*, 8.2;
    Korn & Graubard, Sec. 2, their degrees-of-freedom adjusted effective size). With one
    unit per cluster, fewer than two clusters, or p = 0 or 1 (no variance to estimate:
    d = 1), it is the plain Wilson interval of :func:`annotation.stats.agreement.wilson_interval`.
    """
    y = np.asarray(successes, dtype=float)
    if y.ndim != 1 or not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("successes must be a 1-d sequence of 0/1 (or booleans)")
    n = int(y.size)
    k = int(y.sum())
    if clusters is None:
        codes, g = np.arange(n), n
    else:
        codes, g = _codes(clusters, n)
    if n == 0:
        return ClusteredProportion(0, 0, math.nan, math.nan, math.nan, 0, math.nan, conf)
    p = k / n
    deff = 1.0
    if g >= 2 and 0 < k < n:
        k_g = np.bincount(codes, weights=y, minlength=g)
        n_g = np.bincount(codes, minlength=g).astype(float)
        v = g / (g - 1) * float(((k_g - p * n_g) ** 2).sum()) / n**2
        deff = max(1.0, v / (p * (1 - p) / (n - 1)))
    if deff == 1.0:
        plain = wilson_interval(k, n, conf)
        return ClusteredProportion(k, n, plain.estimate, plain.lo, plain.hi, g, 1.0, conf)
    z = float(stats.norm.ppf(0.5 + conf / 2))
    t = float(stats.t.ppf(0.5 + conf / 2, g - 1))
    n_eff = n / deff * (z / t) ** 2
    den = n_eff + z * z
    center = (p * n_eff + z * z / 2) / den
    half = z * math.sqrt(n_eff) / den * math.sqrt(p * (1 - p) + z * z / (4 * n_eff))
    return ClusteredProportion(k, n, p, max(0.0, center - half), min(1.0, center + half), g,
                               deff, conf)
