"""Rankings of generators: Bradley-Terry strengths from pairs, Kendall's W among rankers.

* :func:`bradley_terry`: the Bradley-Terry model (Bradley & Terry 1952, "Rank analysis of
  incomplete block designs: I. The method of paired comparisons", Biometrika 39:324):
  ``P(i beats j) = 1 / (1 + exp(-(theta_i - theta_j)))``, fitted by maximum a posteriori
  with an isotropic Gaussian prior (penalty ``alpha * sum theta^2``, which keeps the
  strengths finite when a generator never loses) by Newton's method on the strictly convex
  objective; the same estimate as ``choix.opt_pairwise`` (Maystre & Grossglauser 2015,
  "Fast and accurate inference of Plackett-Luce models", Sec. 2) on the same comparisons
  (tested). **Ties and both-bad**: a ``tie`` (both good) counts half a win for each
  output, as the Bradley-Terry fits of the arena leaderboards count a tie ("Chatbot Arena:
  An Open Platform for Evaluating LLMs by Human Preference", Sec. 5 and App.; GenAI-Arena
  follows that leaderboard code); a ``both_bad`` vote says nothing about which is better
  and is left out. Strengths are on the log-odds scale, centred on 0.
* :func:`bt_bootstrap`: percentile intervals of the strengths, the comparisons resampled
  in clusters (the pairs of one task together), Davison & Hinkley 1997, Sec. 3.8.
* :func:`order_ranks`: the ranks (1 = best, ties given their mean rank) of an order.
* :func:`kendall_w`: Kendall's coefficient of concordance W among m rankers of the same n
  objects, with the correction for ties: ``W = 12 S / (m^2 (n^3 - n) - m sum_j T_j)``,
  ``T_j = sum (t^3 - t)`` over the tie groups of ranker j, ``S`` the sum of squared
  deviations of the objects' rank sums from their mean; ``chi2 = m (n - 1) W`` on ``n - 1``
  df (Siegel & Castellan 1988, *Nonparametric Statistics for the Behavioral Sciences*, 2nd
  ed., Sec. 9.4, eqs. 9.15-9.16).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from annotation.stats.clustered import MIN_CLUSTERS, cluster_counts
from annotation.stats.correlation import percentile_interval

__all__ = ["ALPHA", "bradley_terry", "bt_bootstrap", "kendall_w", "order_ranks",
           "win_matrix"]

#: the default prior strength of :func:`bradley_terry` (a weak prior: variance 50)
ALPHA = 0.01


def win_matrix(winners: Sequence[int], losers: Sequence[int], weights: Sequence[float],
               n: int) -> np.ndarray:
    """``W[i, j]``: the weighted wins of item i over item j."""
    w = np.zeros((n, n))
    np.add.at(w, (np.asarray(winners, dtype=int), np.asarray(losers, dtype=int)),
              np.asarray(weights, dtype=float))
    return w


def bradley_terry(wins: np.ndarray, *, alpha: float = ALPHA, tol: float = 1e-10,
                  max_iter: int = 100, start: np.ndarray | None = None) -> np.ndarray:
    """The MAP Bradley-Terry strengths of a win matrix (``W[i, j]``: wins of i over j,
    fractional for ties): minimizes ``alpha * sum theta^2 - sum_ij W_ij log sigma(theta_i -
    theta_j)`` by Newton's method (gradient ``2 alpha theta_i - sum_j (W_ij - N_ij
    sigma_ij)``, Hessian ``2 alpha + sum_j N_ij s_ij`` on the diagonal and ``-N_ij s_ij``
    off it, ``N = W + W^T``, ``s = sigma (1 - sigma)``), from ``start`` (default 0)."""
    if alpha <= 0:
        raise ValueError("alpha must be positive (the prior keeps the strengths finite)")
    w = np.asarray(wins, dtype=float)
    n_games = w + w.T
    theta = np.zeros(len(w)) if start is None else np.array(start, dtype=float)
    for _ in range(max_iter):
        sigma = 1 / (1 + np.exp(-(theta[:, None] - theta[None, :])))
        grad = 2 * alpha * theta - (w - n_games * sigma).sum(axis=1)
        s = n_games * sigma * (1 - sigma)
        hess = -s
        np.fill_diagonal(hess, 2 * alpha + s.sum(axis=1) - np.diag(s))
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.abs(step).max() < tol:
            break
    return theta - theta.mean()


def bt_bootstrap(winners: Sequence[int], losers: Sequence[int], weights: Sequence[float],
                 n: int, clusters: Sequence[Hashable] | None = None, *, n_boot: int = 1000,
                 seed: int | None = 0, conf: float = 0.95,
                 alpha: float = ALPHA) -> pd.DataFrame:
    """Strengths of ``n`` items from weighted comparisons (``winners[k]`` beat
    ``losers[k]`` with weight ``weights[k]``) with cluster-bootstrap percentile intervals:
    columns ``item`` (index), ``strength``, ``strength_lo``, ``strength_hi``, ``rank``
    (1 = strongest), ``n_clusters``, ``n_boot``."""
    theta = bradley_terry(win_matrix(winners, losers, weights, n), alpha=alpha)
    codes = (np.arange(len(winners)) if clusters is None
             else pd.factorize(pd.Series(list(clusters), dtype=object))[0])
    n_clusters = int(codes.max()) + 1 if len(codes) else 0
    lo = np.full(n, math.nan)
    hi = np.full(n, math.nan)
    used = 0
    if n_clusters >= MIN_CLUSTERS and n_boot > 0:
        per = np.zeros((n_clusters, n, n))
        np.add.at(per, (codes, np.asarray(winners, dtype=int), np.asarray(losers, dtype=int)),
                  np.asarray(weights, dtype=float))
        flat = per.reshape(n_clusters, -1)
        rng = np.random.default_rng(seed)
        draws = [bradley_terry(m.reshape(n, n), alpha=alpha, start=theta)
                 for block in cluster_counts(rng, n_clusters, n_boot) for m in block @ flat]
        boot = np.array(draws)
        used = len(boot)
        for i in range(n):
            lo[i], hi[i] = percentile_interval(boot[:, i], conf, n_clusters)
    ranks = stats.rankdata(-theta, method="min")
    return pd.DataFrame({"item": range(n), "strength": theta, "strength_lo": lo,
                         "strength_hi": hi, "rank": ranks.astype(int),
                         "n_clusters": n_clusters, "n_boot": used})


def order_ranks(order: Sequence[Any]) -> dict[Any, float]:
    """Rank of each object of an order, best first (1 = best); a nested list is a tie
    group and its objects share the mean of the ranks they occupy."""
    ranks: dict[Any, float] = {}
    position = 1
    for place in order:
        group = list(place) if isinstance(place, list | tuple) else [place]
        mean = position + (len(group) - 1) / 2
        for obj in group:
            ranks[obj] = mean
        position += len(group)
    return ranks


def kendall_w(ranks: Any) -> dict[str, float]:
    """Kendall's W (tie-corrected) of a rankers x objects matrix of ranks (mean ranks for
    ties; every ranker ranks every object): ``w``, ``chi2``, ``df``, ``p_value``, ``m``,
    ``n``. NaN when fewer than two rankers or objects, or when every ranker ties all."""
    r = np.asarray(ranks, dtype=float)
    m, n = r.shape if r.ndim == 2 else (0, 0)
    nan = math.nan
    if m < 2 or n < 2:
        return {"w": nan, "chi2": nan, "df": nan, "p_value": nan, "m": m, "n": n}
    sums = r.sum(axis=0)
    s = float(((sums - sums.mean()) ** 2).sum())
    ties = 0.0
    for row in r:
        _, counts = np.unique(row, return_counts=True)
        ties += float((counts**3 - counts).sum())
    den = m**2 * (n**3 - n) - m * ties
    w = 12 * s / den if den > 0 else nan
    chi2 = m * (n - 1) * w
    return {"w": w, "chi2": chi2, "df": n - 1,
            "p_value": float(stats.chi2.sf(chi2, n - 1)) if math.isfinite(chi2) else nan,
            "m": m, "n": n}
