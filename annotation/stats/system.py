"""System level: do judge and humans rank the generators (systems) the same way?

Average per system (generator), then compare the two orderings with Kendall's tau-b and
pairwise ranking accuracy (METHODS.md, "System level"). With k systems, tau without ties
moves in steps of 2 / n_pairs = 4 / (k (k - 1)) (0.133 for 6 generators); the table reports
that step, and a bootstrap interval that resamples items **within** each system (the systems
themselves are fixed: they are the objects being ranked).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from annotation.stats.correlation import percentile_interval

__all__ = ["system_level", "system_means"]

#: Relative tolerance under which two system means count as tied (floating-point noise).
_TIE_RTOL = 1e-12


def _judges(judge_col: str | Sequence[str]) -> list[str]:
    return [judge_col] if isinstance(judge_col, str) else list(judge_col)


def _clean(
    df: pd.DataFrame, system_col: str, judge: str, human_col: str, item_col: str | None
) -> pd.DataFrame:
    cols = [system_col, judge, human_col] + ([item_col] if item_col else [])
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise KeyError(f"columns not in df: {missing}")
    out = df[cols].copy()
    out[judge] = pd.to_numeric(out[judge], errors="coerce").astype(float)
    out[human_col] = pd.to_numeric(out[human_col], errors="coerce").astype(float)
    out = out.dropna(subset=[system_col, judge, human_col])
    if item_col and out[item_col].isna().any():
        raise ValueError(f"{item_col} has missing labels")
    return out


def system_means(
    df: pd.DataFrame,
    *,
    system_col: str,
    judge_col: str | Sequence[str],
    human_col: str,
    item_col: str | None = None,
) -> pd.DataFrame:
    """Mean judge and human score per system, one row per (judge, system).

    Columns: ``judge``, ``system``, ``n`` (rows with both scores), ``n_items`` (distinct
    items, = n without ``item_col``), ``judge_mean``, ``human_mean``, ``judge_rank``,
    ``human_rank`` (1 = highest mean; tied means share their average rank). Rows missing the
    judge's or the human score are left out for that judge only.
    """
    frames = []
    for judge in _judges(judge_col):
        d = _clean(df, system_col, judge, human_col, item_col)
        g = d.groupby(system_col, sort=True)
        t = pd.DataFrame(
            {
                "judge": judge,
                "n": g.size(),
                "n_items": g[item_col].nunique() if item_col else g.size(),
                "judge_mean": g[judge].mean(),
                "human_mean": g[human_col].mean(),
            }
        )
        t.index.name = "system"
        t = t.reset_index()
        t["judge_rank"] = t["judge_mean"].rank(ascending=False, method="average")
        t["human_rank"] = t["human_mean"].rank(ascending=False, method="average")
        frames.append(t[["judge", "system", *t.columns.drop(["judge", "system"])]])
    if not frames:
        raise ValueError("no judge column given")
    return pd.concat(frames, ignore_index=True)


def _signs(m: np.ndarray) -> np.ndarray:
    """sign(m_i - m_j) for all pairs i < j of the last axis, ties within tolerance -> 0.

    ``m`` is (B, k); returns (B, k (k - 1) / 2).
    """
    i, j = np.triu_indices(m.shape[-1], k=1)
    d = m[..., i] - m[..., j]
    scale = np.maximum(np.abs(m[..., i]), np.abs(m[..., j]))
    return np.where(np.abs(d) <= _TIE_RTOL * np.maximum(scale, 1.0), 0.0, np.sign(d))


def _tau_b_and_accuracy(judge_m: np.ndarray, human_m: np.ndarray) -> tuple[np.ndarray, ...]:
    """Kendall tau-b and pairwise accuracy between rows of two (B, k) mean matrices.

    tau_b = sum_{i<j} s_x s_y / sqrt(#untied-in-x pairs * #untied-in-y pairs) (Kendall 1945).
    Pairwise accuracy = share of the k (k - 1) / 2 pairs where sign(judge difference) equals
    sign(human difference), a tie counting as a sign of its own (Kocmi et al. 2021 with
    ties as in Deutsch, Foster & Freitag 2023, "Ties Matter", acc_eq without tie calibration):
    a pair tied by both agrees, a pair tied by one only disagrees.
    """
    sx, sy = _signs(judge_m), _signs(human_m)
    num = (sx * sy).sum(axis=-1)
    den = np.sqrt((sx != 0).sum(axis=-1) * (sy != 0).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    acc = (sx == sy).mean(axis=-1) if sx.shape[-1] else np.full(sx.shape[:-1], np.nan)
    return tau, acc


def system_level(
    df: pd.DataFrame,
    *,
    system_col: str,
    judge_col: str | Sequence[str],
    human_col: str,
    item_col: str | None = None,
    n_boot: int = 1000,
    seed: int | None = 0,
    ci: float = 0.95,
) -> pd.DataFrame:
    """System-level agreement of each judge with the humans, one row per judge.

    ``df`` has one row per scored unit (an item, or an item's question when ``item_col``
    groups several rows), with the system, each judge's score and the human score (e.g.
    the mean of the annotators). Per judge, systems are averaged over the rows where both
    the judge and the human score exist, then compared:

    * ``kendall``: tau-b of the per-system means (Kendall 1945), with ``tau_step`` =
      2 / n_pairs = 4 / (k (k - 1)), the change from swapping two adjacent systems
      (without ties);
    * ``pairwise_accuracy``: share of system pairs ordered the same way (see
      :func:`_tau_b_and_accuracy` for ties: a tie is its own outcome);
    * ``kendall_lo``/``hi`` and ``pairwise_accuracy_lo``/``hi``: percentile bootstrap
      (Efron & Tibshirani 1993, eq. 13.5) resampling, within each system independently,
      its items (rows of an item together when ``item_col`` is given) with replacement;
      judge and human means come from the same resample. Seeded numpy ``Generator``.

    Columns: ``judge``, ``n_systems``, ``n_pairs``, ``n_rows``, ``kendall``, ``kendall_lo``,
    ``kendall_hi``, ``tau_step``, ``pairwise_accuracy``, ``pairwise_accuracy_lo``,
    ``pairwise_accuracy_hi``, ``ci``, ``n_boot``. Fewer than 2 systems give NaN.
    """
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
    rows = []
    for judge in _judges(judge_col):
        d = _clean(df, system_col, judge, human_col, item_col)
        systems = list(pd.unique(d[system_col]))
        k = len(systems)
        row: dict[str, object] = {
            "judge": judge,
            "n_systems": k,
            "n_pairs": k * (k - 1) // 2,
            "n_rows": len(d),
            "kendall": np.nan,
            "kendall_lo": np.nan,
            "kendall_hi": np.nan,
            "tau_step": 4.0 / (k * (k - 1)) if k >= 2 else np.nan,
            "pairwise_accuracy": np.nan,
            "pairwise_accuracy_lo": np.nan,
            "pairwise_accuracy_hi": np.nan,
            "ci": ci,
            "n_boot": int(n_boot),
        }
        if k >= 2:
            groups = [d[d[system_col] == s] for s in systems]
            jm = np.array([g[judge].mean() for g in groups])
            hm = np.array([g[human_col].mean() for g in groups])
            tau, acc = _tau_b_and_accuracy(jm[None, :], hm[None, :])
            row["kendall"], row["pairwise_accuracy"] = float(tau[0]), float(acc[0])
            if n_boot > 0:
                rng = np.random.default_rng(seed)
                bj = np.empty((n_boot, k))
                bh = np.empty((n_boot, k))
                for s, g in enumerate(groups):
                    if item_col:
                        codes, uniq = pd.factorize(g[item_col])
                    else:
                        codes, uniq = np.arange(len(g)), np.arange(len(g))
                    m = len(uniq)
                    draws = rng.integers(0, m, size=(n_boot, m))
                    offsets = draws + (np.arange(n_boot) * m)[:, None]
                    counts = np.bincount(offsets.ravel(), minlength=n_boot * m)
                    w = counts.reshape(n_boot, m)[:, codes].astype(float)
                    total = w.sum(axis=1)
                    bj[:, s] = w @ g[judge].to_numpy(float) / total
                    bh[:, s] = w @ g[human_col].to_numpy(float) / total
                btau, bacc = _tau_b_and_accuracy(bj, bh)
                row["kendall_lo"], row["kendall_hi"] = percentile_interval(btau, ci)
                lo, hi = percentile_interval(bacc, ci)
                row["pairwise_accuracy_lo"], row["pairwise_accuracy_hi"] = lo, hi
        rows.append(row)
    if not rows:
        raise ValueError("no judge column given")
    return pd.DataFrame(rows)
