"""A pairwise judge against human preferences: accuracy, kappa, position bias.

A pair shows outputs A and B; a preference is ``a``, ``b``, ``tie`` (both good) or
``both_bad`` (GenAI-Arena's four votes: "GenAI Arena: An Open Evaluation Platform for
Generative Models", Sec. 3; its judge benchmark GenAI-Bench scores a multimodal judge by
its accuracy against the human vote, Sec. 4.2).

* :func:`human_reference`: the humans' answer on a pair: the preference of a **strict
  majority** of the annotators (one annotator: theirs); a tied vote gives no reference and
  the pair is left out.
* :func:`pairwise_agreement`: per judge, over the pairs with a reference: accuracy over
  **all** pairs with an unparsed verdict counted as a miss (the convention of GenAI-Bench's
  leaderboard, Sec. 4.2), accuracy over the parsed verdicts, the number unparsed, Cohen's
  kappa on the four classes (Cohen 1960, "A coefficient of agreement for nominal scales",
  eq. 1; parsed verdicts), accuracy with ties merged (a / b / no preference: ``tie`` and
  ``both_bad`` one class; unparsed = miss), each with a cluster-bootstrap percentile
  interval: pairs resampled with replacement, or the clusters they belong to (the task of a
  pair: pairs of one task share its outputs), Davison & Hinkley 1997, *Bootstrap Methods
  and their Application*, Sec. 3.8; read as Hesterberg's expanded percentile interval
  (:func:`annotation.stats.correlation.percentile_interval`). No interval from fewer than
  :data:`annotation.stats.clustered.MIN_CLUSTERS` clusters.
* :func:`confusion`: the 4 x 5 confusion counts (reference x verdict, ``unparsed`` last).
* :func:`position_bias`: the share of the judge's decided verdicts (``a`` or ``b``) that
  prefer the first-shown output, with a Wilson interval (0.5: no position bias); and, when
  the same two outputs appear as two pairs in both orders, the share of such order-swapped
  pairs the judge answers consistently (same output preferred, or the same tie / both-bad
  verdict): the position-consistency check of Zheng et al. 2023, "Judging LLM-as-a-Judge
  with MT-Bench and Chatbot Arena", Sec. 3.3 (position bias) and Table 2.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from annotation.records import PREFERENCES
from annotation.stats.agreement import wilson_interval
from annotation.stats.clustered import MIN_CLUSTERS, cluster_weights
from annotation.stats.correlation import percentile_interval

__all__ = ["UNPARSED", "confusion", "human_reference", "pairwise_agreement", "position_bias"]

#: the verdict column of an unparsed judge answer in :func:`confusion`
UNPARSED = "unparsed"
_STATS = ("accuracy_all", "accuracy_parsed", "kappa", "accuracy_ties_merged")
_INDEX = {p: i for i, p in enumerate(PREFERENCES)}


def human_reference(votes: Iterable[str | None]) -> str | None:
    """The preference more than half of ``votes`` give (None: no strict majority, or no
    vote)."""
    given = [v for v in votes if v is not None]
    if not given:
        return None
    best, n = Counter(given).most_common(1)[0]
    return best if 2 * n > len(given) else None


def _cells(verdict: Sequence[str | None], reference: Sequence[str]) -> np.ndarray:
    """Per decision a one-hot 4 x 5 cell (reference x verdict, unparsed last), flattened."""
    out = np.zeros((len(reference), 20))
    for i, (v, r) in enumerate(zip(verdict, reference, strict=True)):
        out[i, _INDEX[r] * 5 + (4 if v is None else _INDEX[v])] = 1
    return out


def _statistics(c: np.ndarray) -> dict[str, np.ndarray]:
    """The four statistics of confusion tables ``c`` (..., 4, 5)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        total = c.sum(axis=(-1, -2))
        parsed = c[..., :4]
        n_parsed = parsed.sum(axis=(-1, -2))
        correct = np.trace(parsed, axis1=-2, axis2=-1)
        po = correct / n_parsed
        pe = (parsed.sum(axis=-1) * parsed.sum(axis=-2)).sum(axis=-1) / n_parsed**2
        kappa = np.where(pe < 1, (po - pe) / (1 - pe), np.nan)
        merged = (c[..., 0, 0] + c[..., 1, 1] + c[..., 2:4, 2:4].sum(axis=(-1, -2)))
        return {"accuracy_all": correct / total, "accuracy_parsed": po, "kappa": kappa,
                "accuracy_ties_merged": merged / total}


def pairwise_agreement(verdict: Sequence[str | None], reference: Sequence[str],
                       clusters: Sequence[Any] | None = None, *, n_boot: int = 1000,
                       seed: int | None = 0, conf: float = 0.95) -> pd.DataFrame:
    """One judge against the human reference on pairs, as one tidy row (module docstring).

    ``verdict``: the judge's preference per pair (None: unparsed); ``reference``: the
    humans' preference (pairs without one must be left out by the caller); ``clusters``:
    the cluster of each pair (None: each pair its own). Columns: ``n_pairs``,
    ``n_parsed``, ``n_unparsed``, then for each of ``accuracy_all``, ``accuracy_parsed``,
    ``kappa``, ``accuracy_ties_merged`` the estimate and its ``_lo`` / ``_hi`` interval,
    ``n_clusters``, ``n_boot``, ``note``. Seeded numpy ``Generator``."""
    verdict, reference = list(verdict), list(reference)
    if len(verdict) != len(reference):
        raise ValueError(f"verdict and reference differ in length: {len(verdict)} != "
                         f"{len(reference)}")
    cells = _cells(verdict, reference)
    codes = (np.arange(len(reference)) if clusters is None
             else pd.factorize(pd.Series(list(clusters), dtype=object))[0])
    n_clusters = int(codes.max()) + 1 if len(codes) else 0
    per_cluster = np.zeros((n_clusters, 20))
    np.add.at(per_cluster, codes, cells)
    point = _statistics(per_cluster.sum(axis=0).reshape(4, 5))
    n_unparsed = sum(v is None for v in verdict)
    row: dict[str, Any] = {"n_pairs": len(reference), "n_parsed": len(reference) - n_unparsed,
                           "n_unparsed": n_unparsed}
    for s in _STATS:
        row[s] = float(point[s])
        row[f"{s}_lo"] = row[f"{s}_hi"] = math.nan
    notes = []
    used = 0
    if n_clusters < MIN_CLUSTERS:
        notes.append(f"fewer than {MIN_CLUSTERS} clusters: no bootstrap interval")
    elif n_boot > 0:
        boot: dict[str, list[np.ndarray]] = {s: [] for s in _STATS}
        for w in cluster_weights(seed, n_clusters, n_boot):
            values = _statistics((w @ per_cluster).reshape(-1, 4, 5))
            for s in _STATS:
                boot[s].append(values[s])
        counts = []
        for s in _STATS:
            arr = np.concatenate(boot[s])
            row[f"{s}_lo"], row[f"{s}_hi"] = percentile_interval(arr, conf, n_clusters)
            if math.isfinite(row[s]):
                counts.append(int(np.isfinite(arr).sum()))
        used = min(counts) if counts else 0
    if not reference:
        notes.append("no pair with a human reference")
    elif not math.isfinite(row["kappa"]):
        notes.append("kappa undefined: judge and reference each used one answer only")
    row["n_clusters"] = n_clusters
    row["n_boot"] = used
    row["note"] = "; ".join(notes)
    return pd.DataFrame([row])


def confusion(verdict: Sequence[str | None], reference: Sequence[str]) -> pd.DataFrame:
    """Long confusion counts: ``reference``, ``verdict`` (``unparsed`` for None), ``n``;
    every one of the 4 x 5 cells, zeros included."""
    table = _cells(list(verdict), list(reference)).sum(axis=0).reshape(4, 5)
    return pd.DataFrame([
        {"reference": r, "verdict": v, "n": int(table[i, j])}
        for i, r in enumerate(PREFERENCES)
        for j, v in enumerate((*PREFERENCES, UNPARSED))])


def position_bias(pairs: pd.DataFrame, *, conf: float = 0.95) -> dict[str, Any]:
    """A judge's position bias. ``pairs``: one row per pair it answered, with
    ``output_a``, ``output_b``, ``verdict`` (None: unparsed).

    Returns ``n_decided`` (verdicts ``a`` or ``b``), ``first_shown_share`` (the share of
    them that are ``a``) with its Wilson interval ``first_shown_lo`` / ``_hi``;
    ``n_both_orders`` (pairs of pairs showing the same two outputs in swapped order, both
    answered) and ``order_consistency`` (the share of those answered consistently)."""
    decided = pairs.verdict.isin(["a", "b"])
    k = int((pairs.verdict[decided] == "a").sum())
    w = wilson_interval(k, int(decided.sum()), conf)
    parsed = pairs[pairs.verdict.notna()]
    by_order = {(a, b): v for a, b, v in zip(parsed.output_a, parsed.output_b, parsed.verdict,
                                             strict=True)}
    swapped = {"a": "b", "b": "a", "tie": "tie", "both_bad": "both_bad"}
    n_both = consistent = 0
    for (a, b), v in by_order.items():
        other = by_order.get((b, a))
        if other is None or (a, b) > (b, a):  # each couple once
            continue
        n_both += 1
        consistent += swapped[v] == other
    return {"n_decided": w.n, "first_shown_share": w.estimate, "first_shown_lo": w.lo,
            "first_shown_hi": w.hi, "n_both_orders": n_both,
            "order_consistency": consistent / n_both if n_both else math.nan}
