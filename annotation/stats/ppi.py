"""Prediction-powered inference for a mean: a judge on every output, humans on a sample.

A benchmark scores every output with a judge; humans score a random sample. The judge's
mean over all outputs is precise but biased by whatever the judge gets wrong; the humans'
mean over the sample is unbiased but wide. Prediction-powered inference combines them:

    theta_hat = mean_N(lam * f(X_u)) + mean_n(Y - lam * f(X))

the judge's mean on the ``N`` outputs without human labels, corrected by the mean of the
human-minus-judge differences on the ``n`` labelled ones. Its standard error is
``sqrt(lam^2 Var(f_u) / N + Var(Y - lam f) / n)`` and the papers' interval the normal one
(here read at Student's t with ``n - 1`` degrees of freedom by default: ``ppi_mean``):
Angelopoulos, Bates, Fannjiang, Jordan & Zrnic (2023), "Prediction-powered inference",
*Science* 382:669, Sec. "Mean estimation" (``lam = 1``). PPI++ (Angelopoulos, Duchi &
Zrnic 2023, "PPI++: Efficient Prediction-Powered Inference", arXiv:2311.01453, Example
6.1 and Sec. 6) tunes ``lam`` to minimize that variance:

    lam_hat = Cov(Y, f) / ((1 + n / N) Var(f)),   clipped to [0, 1]

(``Var(f)`` over labelled and unlabelled predictions together): ``lam = 0`` is the
human-only mean (a useless judge costs nothing), ``lam = 1`` plain PPI. The interval is
valid whatever the judge's quality, provided the labelled outputs are a uniform random
sample of the outputs the estimate is about (the caller checks the design).

Checked against ``ppi-python`` (``ppi_mean_pointestimate`` / ``ppi_mean_ci``, the
authors' package) and, for coverage, against simulated studies with a known mean.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["COLUMNS", "ppi_mean", "tuned_lambda"]

COLUMNS = ["n_labeled", "n_unlabeled", "estimate", "se", "lo", "hi", "lam",
           "human_mean", "human_se", "human_lo", "human_hi", "judge_mean", "note"]


def tuned_lambda(y: np.ndarray, f: np.ndarray, f_unlabeled: np.ndarray) -> float:
    """PPI++'s variance-minimizing weight of the judge for a mean, clipped to [0, 1]
    (module docstring); 0 when the judge's scores do not vary."""
    n, big_n = len(y), len(f_unlabeled)
    pooled = np.concatenate([f, f_unlabeled])
    var_f = float(np.var(pooled, ddof=1)) if len(pooled) > 1 else 0.0
    if var_f <= 0 or n < 2:
        return 0.0
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    return float(np.clip(cov / ((1 + n / big_n) * var_f), 0.0, 1.0))


def ppi_mean(y: Any, f: Any, f_unlabeled: Any, *, lam: float | None = None,
             conf: float = 0.95, small_sample: bool = True) -> pd.DataFrame:
    """The prediction-powered mean with its interval, as one tidy row.

    ``y``: the human score of each labelled output; ``f``: the judge's score of the same
    outputs; ``f_unlabeled``: the judge's score of the outputs without a human score.
    ``lam`` None tunes it (PPI++), 1 is plain PPI, 0 the human-only mean.

    ``small_sample`` (the default) reads the interval at Student's t with ``n - 1``
    degrees of freedom and uses unbiased variances (``ddof=1``), the classical
    small-sample form of the mean's interval; the papers' normal interval (``False``,
    as ``ppi-python``) under-covers with the 20-50 human-scored outputs per generator a
    study has (coverage 0.91-0.93 at n = 20 in ``benchmarks/coverage.py``, family H).

    Columns: ``n_labeled``, ``n_unlabeled``, ``estimate``, ``se``, ``lo``, ``hi``,
    ``lam``; the human-only mean of the sample with its interval (``human_mean``,
    ``human_se``, ``human_lo``, ``human_hi``: the classical estimate the correction is
    compared with); ``judge_mean`` (the judge alone, over every output: no interval, its
    bias is unknown); ``note``.
    """
    y = np.asarray(y, dtype=float)
    f = np.asarray(f, dtype=float)
    fu = np.asarray(f_unlabeled, dtype=float)
    if len(y) != len(f):
        raise ValueError(f"y and f differ in length: {len(y)} != {len(f)}")
    n, big_n = len(y), len(fu)
    ddof = 1 if small_sample else 0
    z = float(stats.t.ppf(0.5 + conf / 2, n - 1) if small_sample and n > 1
              else stats.norm.ppf(0.5 + conf / 2))
    row: dict[str, Any] = {c: math.nan for c in COLUMNS}
    row.update(n_labeled=n, n_unlabeled=big_n, note="")
    if n + big_n:
        row["judge_mean"] = float(np.concatenate([f, fu]).mean())
    if n < 2:
        row["note"] = "fewer than 2 outputs with a human score"
        return pd.DataFrame([row], columns=COLUMNS)
    row["human_mean"] = float(y.mean())
    row["human_se"] = float(y.std(ddof=ddof) / math.sqrt(n))
    row["human_lo"] = row["human_mean"] - z * row["human_se"]
    row["human_hi"] = row["human_mean"] + z * row["human_se"]
    if big_n == 0:
        row["note"] = "every output has a human score: the human mean is the estimate"
        lam = 0.0
    elif lam is None:
        lam = tuned_lambda(y, f, fu)
    rectified = y - lam * f
    estimate = (float(np.mean(lam * fu)) if big_n else 0.0) + float(rectified.mean())
    variance = (rectified.var(ddof=ddof) / n
                + ((lam ** 2) * fu.var(ddof=ddof) / big_n if big_n > ddof else 0.0))
    se = math.sqrt(float(variance))
    row.update(estimate=estimate, se=se, lo=estimate - z * se, hi=estimate + z * se,
               lam=float(lam))
    return pd.DataFrame([row], columns=COLUMNS)
