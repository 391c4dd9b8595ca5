"""Dawid-Skene: a label per item that weighs each annotator by their estimated reliability.

The strict majority counts every annotator alike. Dawid & Skene (1979), "Maximum
likelihood estimation of observer error-rates using the EM algorithm", *Applied
Statistics* 28:20, Sec. 2-3, model each annotator ``w`` by a confusion matrix
``pi[w, j, l]`` = P(``w`` answers ``l`` | the true class is ``j``) and the classes by their
prevalences ``p[j]``, with the answers independent given the true class, and estimate
both by the EM algorithm:

* **initialization** (their Sec. 3, "a suitable starting point"): each item's class
  probabilities ``T[i, j]`` are the shares of its answers that say ``j`` (the soft
  majority vote);
* **M-step** (their eqs. 2.3-2.4): ``pi[w, j, l]`` is proportional to
  ``sum_i T[i, j] * n[i, w, l]`` (``n``: how often ``w`` answered ``l`` on item ``i``),
  normalized over ``l``; ``p[j]`` is the mean of ``T[:, j]``;
* **E-step** (their eq. 2.5): ``T[i, j]`` is proportional to
  ``p[j] * prod_w prod_l pi[w, j, l] ** n[i, w, l]`` (computed in logs);
* repeated until the log-likelihood ``sum_i log sum_j p[j] prod ...`` rises by less than
  ``tol`` per answer, or ``max_iter`` rounds.

A probability is kept from 0 (``1e-10``) so that a class an annotator never used does not
veto it. The item's label is the class of highest posterior ``T[i, :]`` (None on an exact
tie). The same updates as crowd-kit's ``DawidSkene`` (Ustalov et al., "Learning from
Crowds with Crowd-Kit", JOSS 2024), which the tests check this implementation against.

Any number of classes (binary yes/no answers are ``K = 2``); annotators answer any subset
of the items (missing answers carry no likelihood).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["EPS", "DawidSkeneFit", "dawid_skene"]

#: The floor of every estimated probability (crowd-kit's ``_EPS``).
EPS = 1e-10


@dataclass(frozen=True)
class DawidSkeneFit:
    """The fitted model.

    ``items``: one row per item: ``item``, ``label`` (the most probable class; None on a
    tie), ``posterior`` (its probability), ``n_answers``, and ``p_<class>`` for every
    class. ``confusion``: one row per annotator, true class and answer: ``annotator``,
    ``true``, ``answer``, ``probability`` (``pi``), ``expected_count`` (the posterior-
    weighted count of such answers), ``n_answers`` (the annotator's answers). ``priors``:
    the class prevalences. ``n_iter``: EM rounds run; ``converged``: the tolerance was met;
    ``log_likelihood``: of the answers at the last E-step.
    """

    items: pd.DataFrame
    confusion: pd.DataFrame
    priors: pd.Series
    classes: tuple[Any, ...]
    n_iter: int
    converged: bool
    log_likelihood: float


@dataclass(frozen=True)
class _Answers:
    """One row per answer: item, annotator and answer codes (sparse: memory grows with the
    answers, not with items x annotators)."""

    item: np.ndarray
    worker: np.ndarray
    label: np.ndarray
    n_items: int
    n_workers: int
    k: int


def _m_step(t: np.ndarray, a: _Answers) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``pi[w, j, l]``, ``p[j]`` and the posterior-weighted counts from the item posteriors
    ``t`` (items x K)."""
    weighted = np.zeros((a.n_workers, a.k, a.k))
    for j in range(a.k):  # weighted[:, j, :] is a view: add.at writes through it
        np.add.at(weighted[:, j, :], (a.worker, a.label), t[a.item, j])
    clipped = np.clip(weighted, EPS, None)
    return clipped / clipped.sum(axis=2, keepdims=True), t.mean(axis=0), weighted


def _e_step(pi: np.ndarray, priors: np.ndarray, a: _Answers) -> tuple[np.ndarray, float]:
    """The item posteriors and the log-likelihood of the answers."""
    log = np.tile(np.log(np.clip(priors, EPS, None)), (a.n_items, 1))
    np.add.at(log, a.item, np.log(pi[a.worker, :, a.label]))
    top = log.max(axis=1, keepdims=True)
    scaled = np.exp(log - top)
    total = scaled.sum(axis=1, keepdims=True)
    return scaled / total, float((top[:, 0] + np.log(total[:, 0])).sum())


def dawid_skene(items: Sequence[Any] | pd.Series, annotators: Sequence[Any] | pd.Series,
                labels: Sequence[Any] | pd.Series, *, classes: Sequence[Any] | None = None,
                max_iter: int = 100, tol: float = 1e-5) -> DawidSkeneFit:
    """Fit the Dawid-Skene model (module docstring) to one answer per row: ``items[r]``
    was answered ``labels[r]`` by ``annotators[r]`` (an annotator answering an item twice
    counts twice). ``classes``: every possible answer, in order (default: the sorted
    answers given). ``tol``: the stopping rise of the log-likelihood per answer."""
    frame = pd.DataFrame({"item": list(items), "annotator": list(annotators),
                          "label": list(labels)})
    if frame.label.isna().any():
        raise ValueError("dawid_skene: missing labels; drop them first")
    classes_ = tuple(classes) if classes is not None else tuple(sorted(pd.unique(frame.label)))
    unknown = set(frame.label) - set(classes_)
    if unknown:
        raise ValueError(f"dawid_skene: labels {sorted(map(str, unknown))} are not in "
                         f"classes {list(classes_)}")
    prob_cols = [f"p_{c}" for c in classes_]
    if frame.empty:
        return DawidSkeneFit(
            items=pd.DataFrame(columns=["item", "label", "posterior", "n_answers",
                                        *prob_cols]),
            confusion=pd.DataFrame(columns=["annotator", "true", "answer", "probability",
                                            "expected_count", "n_answers"]),
            priors=pd.Series(np.nan, index=list(classes_), name="prior"),
            classes=classes_, n_iter=0, converged=False, log_likelihood=float("nan"))
    item_codes, item_names = pd.factorize(frame.item, sort=True)
    worker_codes, worker_names = pd.factorize(frame.annotator, sort=True)
    label_codes = frame.label.map({c: k for k, c in enumerate(classes_)}).to_numpy(int)
    k = len(classes_)
    answers = _Answers(item=item_codes, worker=worker_codes, label=label_codes,
                       n_items=len(item_names), n_workers=len(worker_names), k=k)
    per_item = np.zeros((len(item_names), k))
    np.add.at(per_item, (item_codes, label_codes), 1.0)
    t = per_item / per_item.sum(axis=1, keepdims=True)  # the soft majority vote
    pi, priors, expected = _m_step(t, answers)
    previous = -np.inf
    converged = False
    n_iter = 0
    loglik = float("nan")
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (n_iter is reported)
        t, loglik = _e_step(pi, priors, answers)
        pi, priors, expected = _m_step(t, answers)
        if loglik / len(frame) - previous < tol:
            converged = True
            break
        previous = loglik / len(frame)
    best = t.argmax(axis=1)
    top = t[np.arange(len(t)), best]
    tied = (np.isclose(t, top[:, None], rtol=0, atol=1e-12).sum(axis=1) > 1)
    item_table = pd.DataFrame({
        "item": np.asarray(item_names, dtype=object),
        "label": pd.Series([None if tie else classes_[b] for b, tie in zip(best, tied,
                                                                          strict=True)],
                           dtype=object),
        "posterior": top, "n_answers": per_item.sum(axis=1).astype(int)})
    for c, column in zip(prob_cols, t.T, strict=True):
        item_table[c] = column
    answered = np.bincount(worker_codes, minlength=len(worker_names)).astype(float)
    w_idx, j_idx, l_idx = np.meshgrid(np.arange(len(worker_names)), np.arange(k),
                                      np.arange(k), indexing="ij")
    confusion = pd.DataFrame({
        "annotator": np.asarray(worker_names, dtype=object)[w_idx.ravel()],
        "true": [classes_[j] for j in j_idx.ravel()],
        "answer": [classes_[m] for m in l_idx.ravel()],
        "probability": pi.ravel(), "expected_count": expected.ravel(),
        "n_answers": answered[w_idx.ravel()].astype(int)})
    return DawidSkeneFit(items=item_table, confusion=confusion,
                         priors=pd.Series(priors, index=list(classes_), name="prior"),
                         classes=classes_, n_iter=n_iter, converged=converged,
                         log_likelihood=loglik)
