"""How many items for a 95% interval of a given width: sample-size formulas.

Pure functions; every one returns a width from a sample size or the smallest sample size
whose *expected* width is at most a target (intervals are random: about half the studies
of that size get a slightly wider one).

* :func:`fisher_z_width` / :func:`fisher_z_n`: Pearson's r with the Fisher (1921) z
  interval, ``tanh(atanh r +/- z_c * sqrt(v / (n - 3)))``, solved exactly for ``n``
  (``v = 1``); for Spearman's rho Bonett & Wright's variance factor ``v = 1 + rho^2 / 2``
  (Bonett & Wright 2000, "Sample size requirements for estimating Pearson, Kendall and
  Spearman correlations", *Psychometrika* 65:23).
  :func:`bonett_wright_n0`: their closed-form first approximation
  ``n0 = 4 v z_c^2 (1 - r^2)^2 / w^2 + 3``, the textbook value the exact solution
  is checked against.
* :func:`clustered_proportion`, :func:`proportion_n`: a share of agreeing decisions when an
  output's decisions (its checklist questions) are correlated: the ratio estimator's
  variance over clusters and the design effect ``deff = Var / (p (1 - p) / N)`` (Kish
  1965, *Survey Sampling*, on cluster samples; ``deff = 1 + (k - 1) icc`` for clusters of
  ``k``: :func:`design_effect`); outputs needed
  ``m = z_c^2 p (1 - p) deff / (k (w / 2)^2)``.
* :func:`kappa_n`: Cohen's kappa with Cohen's large-sample standard error
  ``sqrt(p_o (1 - p_o) / (N (1 - p_e)^2))`` (Cohen 1960, "A coefficient of agreement for
  nominal scales", *Educational and Psychological Measurement* 20:37), times the
  design effect of clustered decisions.
* :func:`scaled_n`: any interval from its current width ``w`` at ``n``: width
  ~ 1 / sqrt(n), so ``n * (w / target)^2`` (an approximation: it ignores how the estimate
  itself and a small-sample interval's critical value change).
* :func:`ppi_mean_n`: the prediction-powered mean with PPI++'s tuned weight
  (Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient Prediction-Powered Inference",
  Example 6.1): ``Var = sd^2 / n * (1 - rho^2 N / (n + N))`` for ``n`` human-scored of
  ``n + N`` outputs, ``rho`` the judge-human correlation.
* :func:`spearman_brown`, :func:`attenuated_r`: annotators per item. The mean of ``k``
  annotators has reliability ``k icc / (1 + (k - 1) icc)`` (Spearman 1910; Brown 1910,
  *British Journal of Psychology* 3), and a judge's correlation with that mean is its
  correlation with the true score times ``sqrt(reliability)`` (Spearman 1904, "The proof
  and measurement of association between two things", the attenuation formula).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import optimize, stats

__all__ = ["attenuated_r", "bonett_wright_n0", "clustered_proportion", "design_effect",
           "fisher_z_n", "fisher_z_width", "kappa_n", "kappa_se", "ppi_mean_n",
           "ppi_mean_width", "proportion_n", "proportion_width", "scaled_n",
           "spearman_brown", "z_crit"]


def z_crit(conf: float = 0.95) -> float:
    """The two-sided normal critical value (1.96 for 95%)."""
    return float(stats.norm.ppf(0.5 + conf / 2))


def fisher_z_width(r: float, n: float, conf: float = 0.95, *, factor: float = 1.0) -> float:
    """Width of the Fisher z interval of a correlation ``r`` at ``n`` pairs (``factor``:
    the variance factor, 1 for Pearson, ``1 + r^2 / 2`` for Spearman); NaN below 4."""
    if n <= 3:
        return math.nan
    z, h = math.atanh(max(min(r, 0.999999), -0.999999)), z_crit(conf) * math.sqrt(
        factor / (n - 3))
    return math.tanh(z + h) - math.tanh(z - h)


def fisher_z_n(r: float, width: float, conf: float = 0.95, *, factor: float = 1.0) -> int:
    """The smallest ``n`` whose Fisher z interval of ``r`` is at most ``width`` wide."""
    if not 0 < width < 2:
        raise ValueError(f"target width must be in (0, 2), got {width}")
    z = math.atanh(max(min(r, 0.999999), -0.999999))
    # width(h) = tanh(z + h) - tanh(z - h) rises from 0 to 2 with the half-width h in z
    h = optimize.brentq(lambda x: math.tanh(z + x) - math.tanh(z - x) - width, 1e-12, 50)
    n = math.ceil(3 + factor * (z_crit(conf) / h) ** 2 - 1e-9)
    while n > 4 and fisher_z_width(r, n - 1, conf, factor=factor) <= width:
        n -= 1
    return max(n, 4)


def bonett_wright_n0(r: float, width: float, conf: float = 0.95, *,
                     factor: float = 1.0) -> float:
    """Bonett & Wright's (2000) first approximation ``4 v z^2 (1 - r^2)^2 / w^2 + 3``."""
    return 4 * factor * z_crit(conf) ** 2 * (1 - r * r) ** 2 / width ** 2 + 3


def scaled_n(n: int, width_now: float, width: float) -> int:
    """``n`` scaled to a target width by width ~ 1 / sqrt(n) (module docstring)."""
    if not (width_now > 0 and width > 0) or n <= 0:
        raise ValueError("scaled_n needs a positive current width, target and n")
    return max(math.ceil(n * (width_now / width) ** 2 - 1e-9), 1)


def clustered_proportion(successes: Sequence[float] | np.ndarray,
                         trials: Sequence[float] | np.ndarray) -> dict[str, float]:
    """A share pooled over clusters (``successes[i]`` of ``trials[i]`` in cluster ``i``):
    ``p``, its cluster-robust standard error ``se`` (the ratio estimator's, with the
    ``m / (m - 1)`` correction), the binomial ``se_binomial``, ``deff`` (their squared
    ratio), ``m`` clusters, ``n`` trials and ``k`` = mean trials per cluster."""
    a = np.asarray(successes, dtype=float)
    t = np.asarray(trials, dtype=float)
    keep = t > 0
    a, t = a[keep], t[keep]
    m, n = len(t), float(t.sum())
    out = {"p": math.nan, "se": math.nan, "se_binomial": math.nan, "deff": math.nan,
           "m": float(m), "n": n, "k": n / m if m else math.nan}
    if m < 2:
        return out
    p = float(a.sum() / n)
    var = m / (m - 1) * float(((a - p * t) ** 2).sum()) / n ** 2
    binomial = p * (1 - p) / n
    out.update(p=p, se=math.sqrt(var), se_binomial=math.sqrt(binomial),
               deff=var / binomial if binomial > 0 else math.nan)
    return out


def design_effect(k: float, icc: float) -> float:
    """Kish's design effect of clusters of ``k`` with intra-cluster correlation ``icc``."""
    return 1 + (k - 1) * icc


def proportion_width(p: float, m: float, k: float, deff: float = 1.0,
                     conf: float = 0.95) -> float:
    """Width of the normal interval of a share ``p`` over ``m`` clusters of ``k`` trials."""
    return 2 * z_crit(conf) * math.sqrt(p * (1 - p) * deff / (m * k))


def proportion_n(p: float, width: float, k: float = 1.0, deff: float = 1.0,
                 conf: float = 0.95) -> int:
    """Clusters (outputs) of ``k`` trials (decisions) for a share's interval of ``width``."""
    if not 0 < width < 1:
        raise ValueError(f"target width must be in (0, 1), got {width}")
    p = min(max(p, 0.0), 1.0)
    return max(math.ceil(z_crit(conf) ** 2 * p * (1 - p) * max(deff, 1e-9)
                         / (k * (width / 2) ** 2) - 1e-9), 2)


def kappa_se(kappa: float, prevalence: float, n: float) -> float:
    """Cohen's (1960) large-sample standard error of kappa at ``n`` decisions when both
    raters say "yes" at rate ``prevalence`` (``p_e = q^2 + (1 - q)^2``,
    ``p_o = kappa (1 - p_e) + p_e``)."""
    p_e = prevalence ** 2 + (1 - prevalence) ** 2
    p_o = kappa * (1 - p_e) + p_e
    return math.sqrt(p_o * (1 - p_o) / (n * (1 - p_e) ** 2))


def kappa_n(kappa: float, prevalence: float, width: float, k: float = 1.0,
            deff: float = 1.0, conf: float = 0.95) -> int:
    """Outputs of ``k`` decisions for a kappa interval of ``width`` (:func:`kappa_se`,
    times the design effect of clustered decisions)."""
    if not 0 < width < 2:
        raise ValueError(f"target width must be in (0, 2), got {width}")
    per_decision = kappa_se(kappa, prevalence, 1.0) ** 2 * max(deff, 1e-9)
    return max(math.ceil(z_crit(conf) ** 2 * per_decision / (k * (width / 2) ** 2) - 1e-9), 2)


def ppi_mean_width(sd: float, rho: float, n: int, total: int, conf: float = 0.95) -> float:
    """Width of the PPI++ mean's interval with ``n`` of ``total`` outputs human-scored."""
    unlabeled = total - n
    shrink = 1 - rho ** 2 * unlabeled / total if total else 1.0
    return 2 * z_crit(conf) * sd * math.sqrt(max(shrink, 0.0) / n)


def ppi_mean_n(sd: float, rho: float, total: int, width: float,
               conf: float = 0.95) -> int | None:
    """Human-scored outputs (of ``total``) for a PPI++ mean of ``width``; None if even
    every output scored by humans is not enough."""
    for n in range(2, total + 1):
        if ppi_mean_width(sd, rho, n, total, conf) <= width:
            return n
    return None


def spearman_brown(icc: float, k: float) -> float:
    """Reliability of the mean of ``k`` annotators whose single-rating reliability is
    ``icc``."""
    return k * icc / (1 + (k - 1) * icc)


def attenuated_r(r_true: float, reliability: float) -> float:
    """The correlation with a reference of that ``reliability``."""
    return r_true * math.sqrt(max(reliability, 0.0))
