"""Can the judge replace a human annotator? The alternative annotator test.

Calderon, Reichart & Dror (2025), "The Alternative Annotator Test for LLM-as-a-Judge: How to
Statistically Justify Replacing Human Annotators with LLMs", ACL 2025, pp. 16051-16081,
Sec. 3 (procedure) and the authors' reference implementation (``alt_test`` in
``alt_test_example.ipynb``, github.com/nitaytech/AltTest), which this module reproduces
exactly, with the defaults of that function.

Procedure (leave one annotator out):

1. Keep items labeled by the judge and by at least ``min_humans_per_item`` (2) humans.
2. For each annotator h with at least ``min_items`` (30) kept items: on each of h's items,
   score the judge's and h's alignment with the *other* annotators of that item
   (``accuracy``: share of the others with the same label; ``neg_rmse``: minus the root mean
   squared difference to the others; ``neg_mae``: minus the mean absolute difference).
   W_judge = 1 if the judge aligns at least as well as h, W_h = 1 if h aligns at least as
   well as the judge (a tie gives both 1).
3. One-sided one-sample t-test of d = W_h - W_judge: H0 mean(d) >= epsilon against
   H1 mean(d) < epsilon (epsilon: 0.2 experts, 0.15 skilled, 0.1 crowd workers).
4. Benjamini-Yekutieli across the tested annotators at ``q``; the judge "wins" against h when
   H0 is rejected. Winning rate omega = share of tested annotators won; the judge passes
   when omega >= 0.5. Advantage probability rho = mean over tested annotators of mean(W_judge)
   (for ranking judges). Annotators below ``min_items`` are listed but not tested and do not
   count in omega or in the BY correction (as in the reference code).

With fewer than 3 annotators the test means little (paper, FAQ). A judge that outputs the
human majority gets rho = 1: ensembles are favoured by construction.

Missing values: None, NaN, ``pd.NA`` and ``"cant_tell"`` (any case, surrounding blanks
ignored; :data:`annotation.stats.agreement.MISSING_TOKENS`) are no label, for the humans
and for the judge alike, so an "I can't tell" never counts as agreeing with another one.

Judges on another scale: :func:`normalized_ranks` puts the judge and every annotator on
normalized mid-ranks first (the authors suggest rank-based alignment where the scales
differ), so that negative RMSE never compares a 0-1 score with a 1-10 rating.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy import stats

from annotation.stats.agreement import MISSING_TOKENS
from annotation.stats.comparison import adjust_pvalues
from annotation.stats.membership import isin

__all__ = ["AltTestResult", "alignment", "alt_test", "is_missing", "normalized_ranks"]

Scoring = str | Callable[[Any, np.ndarray], float]


def _accuracy(pred: Any, others: np.ndarray) -> float:
    return float(np.mean([pred == o for o in others]))


def _neg_rmse(pred: Any, others: np.ndarray) -> float:
    o = np.asarray(others, dtype=float)
    return -float(np.sqrt(np.mean((float(pred) - o) ** 2)))


def _neg_mae(pred: Any, others: np.ndarray) -> float:
    o = np.asarray(others, dtype=float)
    return -float(np.mean(np.abs(float(pred) - o)))


_SCORINGS: dict[str, Callable[[Any, np.ndarray], float]] = {
    "accuracy": _accuracy,
    "neg_rmse": _neg_rmse,
    "neg_mae": _neg_mae,
}


def alignment(scoring: Scoring) -> Callable[[Any, np.ndarray], float]:
    """The per-item alignment function of Calderon et al. (2025, Sec. 3).

    ``"accuracy"``: share of the other annotators with the same label (labels, yes/no);
    ``"neg_rmse"``: minus the root mean squared difference to the others (ratings, the
    reference code's ``neg_rmse``); ``"neg_mae"``: minus the mean absolute difference;
    or a callable ``f(prediction, others) -> float``, higher meaning better aligned.
    """
    if callable(scoring):
        return scoring
    try:
        return _SCORINGS[scoring]
    except KeyError:
        raise ValueError(f"scoring must be one of {sorted(_SCORINGS)} or a callable") from None


@dataclass(frozen=True)
class AltTestResult:
    """Result of :func:`alt_test`.

    ``annotators``: one row per annotator: ``annotator``, ``n_items``, ``tested``,
    ``rho_judge`` (mean W_judge), ``rho_human`` (mean W_h), ``mean_d``, ``t``, ``p`` (raw),
    ``p_by`` (Benjamini-Yekutieli adjusted), ``judge_wins``.
    ``summary``: one row: ``judge``, ``scoring``, ``epsilon``, ``q``, ``n_items``,
    ``n_annotators`` (tested), ``n_skipped``, ``winning_rate``, ``advantage_prob``,
    ``passed``.
    """

    annotators: pd.DataFrame
    summary: pd.DataFrame

    @property
    def winning_rate(self) -> float:
        return float(self.summary["winning_rate"].iloc[0])

    @property
    def advantage_prob(self) -> float:
        return float(self.summary["advantage_prob"].iloc[0])

    @property
    def passed(self) -> bool:
        return bool(self.summary["passed"].iloc[0])


def is_missing(values: pd.Series) -> np.ndarray:
    """True where a value is no label: None, NaN, ``pd.NA`` or ``"cant_tell"`` (any case,
    blanks around it ignored; :data:`annotation.stats.agreement.MISSING_TOKENS`)."""
    missing = values.isna().to_numpy(bool)
    if values.dtype.kind in "biufcmM":  # numbers and dates are never "cant_tell"
        return missing
    token = np.array([isinstance(v, str) and v.strip().lower() in MISSING_TOKENS
                      for v in values.to_numpy(dtype=object)], dtype=bool)
    return missing | token


def _judge_series(judge: pd.Series | pd.DataFrame, item_col: str, value_col: str) -> pd.Series:
    if isinstance(judge, pd.DataFrame):
        missing = [c for c in (item_col, value_col) if c not in judge.columns]
        if missing:
            raise KeyError(f"judge DataFrame lacks columns {missing}")
        if judge[item_col].duplicated().any():
            raise ValueError("judge has several values for one item")
        judge = judge.set_index(item_col)[value_col]
    elif judge.index.duplicated().any():
        raise ValueError("judge has several values for one item")
    return judge[~is_missing(judge)]


def _scoring_name(scoring: Scoring) -> str:
    return scoring if isinstance(scoring, str) else getattr(scoring, "__name__", "custom")


_EXACT_INT = 2**53  # integers up to this size compare exactly as float64


def _is_text(values: pd.Series) -> bool:
    return pd.api.types.infer_dtype(values, skipna=False) == "string"


def _comparable(humans: pd.Series, judge: pd.Series, scoring: str) -> tuple | None:
    """Human and judge values as arrays on which numpy's ``==`` / arithmetic gives exactly what
    the per-item functions of :data:`_SCORINGS` give, or None when that is not guaranteed
    (mixed or unusual types: the per-item path then runs).

    Numbers (and booleans) become float64; for ``accuracy``, integers must stay exact in
    float64 and texts become codes (equal codes for equal texts).
    """
    kinds = {getattr(v.dtype, "kind", "O") for v in (humans, judge)}
    if kinds <= set("biuf"):
        try:
            hv, jv = humans.to_numpy(dtype=float), judge.to_numpy(dtype=float)
        except (TypeError, ValueError):
            return None
        big = [np.abs(v).max() >= _EXACT_INT for v in (hv, jv) if len(v)]
        if scoring == "accuracy" and kinds & set("iu") and any(big):
            return None
        return hv, jv
    if scoring != "accuracy" or not (_is_text(humans) and _is_text(judge)):
        return None
    codes, uniques = pd.factorize(
        np.concatenate([humans.to_numpy(dtype=object), judge.to_numpy(dtype=object)])
    )
    # numpy drops trailing NULs of its strings (the per-item path builds numpy arrays)
    if any(u.endswith("\x00") for u in uniques):
        return None
    return codes[: len(humans)], codes[len(humans) :]


def _fast_alignment(scoring: str, pred: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Row-wise :data:`_SCORINGS` of ``pred[i]`` against ``others[i]`` (m x k), bit for bit."""
    if scoring == "accuracy":
        return (others == pred[:, None]).sum(axis=1) / others.shape[1]
    diff = pred[:, None] - others
    if scoring == "neg_rmse":
        return -np.sqrt(np.mean(diff**2, axis=1))
    return -np.mean(np.abs(diff), axis=1)


def _fast_wins(
    scoring: str, item: np.ndarray, values: np.ndarray, judged: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """W_judge and W_h of every kept row, vectorized over the items of each size.

    ``item``: group number of each row (0..n_items-1); ``values``: the row's human value;
    ``judged``: the judge's value for the row's item. The others of a row are the other rows
    of its item, in row order (as the per-item path sees them).
    """
    n = len(item)
    w_judge = np.zeros(n, dtype=int)
    w_human = np.zeros(n, dtype=int)
    order = np.argsort(item, kind="stable")
    sizes = np.bincount(item)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    pos = np.empty(n, dtype=int)
    pos[order] = np.arange(n) - starts[item[order]]
    row_size = sizes[item]
    for s in np.unique(row_size):
        if s < 2:  # no other annotator (only with min_humans_per_item < 2)
            continue
        rows = np.flatnonzero(row_size == s)
        groups, local = np.unique(item[rows], return_inverse=True)
        table = np.empty((len(groups), s), dtype=values.dtype)
        table[local, pos[rows]] = values[rows]
        rest = np.array([[c for c in range(s) if c != p] for p in range(s)])
        others = table[local[:, None], rest[pos[rows]]]
        human = _fast_alignment(scoring, values[rows], others)
        judge = _fast_alignment(scoring, judged[rows], others)
        w_judge[rows] = judge >= human
        w_human[rows] = human >= judge
    return w_judge, w_human


def _one_sided_t(d: np.ndarray, epsilon: float) -> tuple[float, float]:
    """scipy ``ttest_1samp(d, epsilon, alternative="less")`` (t, p), without its warnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.ttest_1samp(d, epsilon, alternative="less")
    return float(res.statistic), float(res.pvalue)


def alt_test(
    humans: pd.DataFrame,
    judge: pd.Series | pd.DataFrame,
    *,
    epsilon: float = 0.2,
    q: float = 0.05,
    scoring: Scoring = "accuracy",
    min_items: int = 30,
    min_humans_per_item: int = 2,
    item_col: str = "item",
    annotator_col: str = "annotator",
    value_col: str = "value",
    judge_name: str = "judge",
) -> AltTestResult:
    """The alternative annotator test (Calderon, Reichart & Dror, ACL 2025) of one judge.

    Parameters
    ----------
    humans: long table, one row per (item, annotator) with the annotator's ``value``.
        Missing values (None, NaN, ``pd.NA``, ``"cant_tell"``: :func:`is_missing`) are
        dropped, for the judge too; two values from one annotator for one item are an
        error (checked after dropping the missing ones).
    judge: the judge's value per item, a Series indexed by item or a DataFrame with
        ``item_col`` and ``value_col``.
    epsilon: cost-benefit margin (0.2 experts, 0.15 skilled, 0.1 crowd).
    q: false discovery rate for the Benjamini-Yekutieli correction across annotators.
    scoring: ``"accuracy"``, ``"neg_rmse"``, ``"neg_mae"`` or a callable, see
        :func:`alignment`.
    min_items: annotators with fewer kept items are not tested (the t-test needs ~30).
    min_humans_per_item: items with fewer human annotators are dropped (2 = h + one other).

    The p-value of an annotator whose d is constant and equal to epsilon is NaN (as scipy
    returns); like the reference code it counts in the BY correction's m and is never
    rejected (it enters the correction as p = 1).

    The built-in scorings are computed for all items at once, with the same floating-point
    operations as item by item (identical results); a callable is called item by item.
    """
    align = alignment(scoring)
    for c in (item_col, annotator_col, value_col):
        if c not in humans.columns:
            raise KeyError(f"humans lacks column {c!r}")
    h = humans[[item_col, annotator_col, value_col]]
    h = h[~is_missing(h[value_col])]
    if h.duplicated([item_col, annotator_col]).any():
        raise ValueError("humans has several values for one (item, annotator)")
    jv = _judge_series(judge, item_col, value_col)

    per_item = h.groupby(item_col, sort=False)[annotator_col].transform("size")
    kept = h[(per_item >= min_humans_per_item) & isin(h[item_col], jv.index)]
    grouped = kept.groupby(item_col, sort=False)
    item = grouped.ngroup().to_numpy()
    n_items = int(grouped.ngroups)

    # each kept row's annotator (position in `annotators`, -1 for NA: NA == NA is False)
    annotators = pd.unique(h[annotator_col])
    named = np.flatnonzero(~pd.isna(np.asarray(annotators, dtype=object)))
    who = np.full(len(kept), -1)
    has_name = kept[annotator_col].notna().to_numpy()
    found = pd.Index(annotators[named]).get_indexer(kept.loc[has_name, annotator_col])
    who[has_name] = named[found]
    by_annotator = np.argsort(who, kind="stable")
    counts = np.bincount(who[who >= 0], minlength=len(annotators))
    bounds = np.concatenate([[0], np.cumsum(counts)]) + int((who < 0).sum())
    own_rows = [by_annotator[bounds[i] : bounds[i + 1]] for i in range(len(annotators))]
    tested = counts >= min_items

    fast = None
    if isinstance(scoring, str) and tested.any():
        judge_pos = jv.index.get_indexer(kept[item_col])
        if (judge_pos >= 0).all():
            fast = _comparable(kept[value_col], jv.iloc[judge_pos], scoring)
    if fast is not None:
        w_judge_all, w_human_all = _fast_wins(cast(str, scoring), item, *fast)
    elif tested.any():  # a callable (or unusual values): item by item
        by_item = {
            key: dict(zip(g[annotator_col], g[value_col], strict=True)) for key, g in grouped
        }

    rows = []
    for i, annotator in enumerate(annotators):
        row: dict[str, Any] = {
            "annotator": annotator,
            "n_items": int(counts[i]),
            "tested": bool(tested[i]),
            "rho_judge": np.nan,
            "rho_human": np.nan,
            "mean_d": np.nan,
            "t": np.nan,
            "p": np.nan,
        }
        if row["tested"]:
            w_judge: Any
            w_human: Any
            if fast is not None:
                w_judge, w_human = w_judge_all[own_rows[i]], w_human_all[own_rows[i]]
            else:
                own = kept.iloc[own_rows[i]]
                w_judge, w_human = [], []
                for key, value in zip(own[item_col], own[value_col], strict=True):
                    others = np.array([v for a, v in by_item[key].items() if a != annotator])
                    human_score = align(value, others)
                    judge_score = align(jv[key], others)
                    w_judge.append(1 if judge_score >= human_score else 0)
                    w_human.append(1 if human_score >= judge_score else 0)
            d = np.array(w_human, dtype=float) - np.array(w_judge, dtype=float)
            row["rho_judge"] = float(np.mean(w_judge))
            row["rho_human"] = float(np.mean(w_human))
            row["mean_d"] = float(d.mean())
            row["t"], row["p"] = _one_sided_t(d, epsilon)
        rows.append(row)

    table = pd.DataFrame(
        rows,
        columns=["annotator", "n_items", "tested", "rho_judge", "rho_human", "mean_d", "t", "p"],
    )
    tested = table["tested"].to_numpy(bool)
    table["p_by"] = np.nan
    if tested.any():
        p_for_by = table.loc[tested, "p"].fillna(1.0).to_numpy(float)
        table.loc[tested, "p_by"] = adjust_pvalues(p_for_by, "by")
    table["judge_wins"] = tested & (table["p_by"] <= q).to_numpy(bool)

    n_tested = int(tested.sum())
    winning_rate = float(table["judge_wins"].sum() / n_tested) if n_tested else np.nan
    advantage = float(table.loc[tested, "rho_judge"].mean()) if n_tested else np.nan
    summary = pd.DataFrame(
        [
            {
                "judge": judge_name,
                "scoring": _scoring_name(scoring),
                "epsilon": epsilon,
                "q": q,
                "n_items": n_items,
                "n_annotators": n_tested,
                "n_skipped": int((~tested).sum()),
                "winning_rate": winning_rate,
                "advantage_prob": advantage,
                "passed": bool(n_tested and winning_rate >= 0.5),
            }
        ]
    )
    return AltTestResult(annotators=table, summary=summary)


def normalized_ranks(
    humans: pd.DataFrame,
    judge: pd.Series | pd.DataFrame,
    *,
    min_humans_per_item: int = 2,
    item_col: str = "item",
    annotator_col: str = "annotator",
    value_col: str = "value",
) -> tuple[pd.DataFrame, pd.Series]:
    """The judge's and each annotator's scores as normalized mid-ranks, for an alt-test of a
    judge that scores on another scale than the humans.

    Calderon, Reichart & Dror (2025, ACL), "The Alternative Annotator Test for LLM-as-a-Judge",
    suggest a rank-based alignment where the judge's and the humans' scales differ; this is
    the transformation used, exactly:

    1. The items used are those :func:`alt_test` keeps with the same ``min_humans_per_item``:
       scored by the judge and by at least that many annotators (missing values, see
       :func:`is_missing`, dropped first).
    2. Each rater separately (the judge, and every annotator), over *its own* scores on those
       items: mid-ranks (ties share the average of the ranks they span, 1 = lowest), then
       ``(rank - 0.5) / n`` with n the rater's number of scores there. Every rater's values
       lie in (0, 1) and average exactly 0.5 (ties included), whatever n.
    3. :func:`alt_test` is then run on these values (negative RMSE of ranks).

    Limits: ranks keep the order and drop the level and the spacing, so a judge that is any
    increasing function of the humans aligns perfectly: the test then says the judge *orders*
    items like a human, not that its numbers can stand for human scores. When annotators rated
    different item sets, each annotator's ranks are relative to their own items: ranks of
    raters who agree perfectly differ when their sets differ systematically (one rated only
    the hard items), and differ by sampling noise of order 1/sqrt(n) when items were assigned
    at random; an annotator with few items (not tested, but an "other" for the rest) has
    coarse ranks. Coarse scales give many ties, whose shared mid-rank a continuous judge
    cannot match exactly.

    Returns ``humans`` (only the used rows, ``value_col`` replaced by the normalized rank)
    and the judge's normalized ranks indexed by item (only the used items).
    """
    for c in (item_col, annotator_col, value_col):
        if c not in humans.columns:
            raise KeyError(f"humans lacks column {c!r}")
    h = humans[[item_col, annotator_col, value_col]]
    h = h[~is_missing(h[value_col])]
    jv = _judge_series(judge, item_col, value_col)
    per_item = h.groupby(item_col, sort=False)[annotator_col].transform("size")
    h = h[(per_item >= min_humans_per_item) & isin(h[item_col], jv.index)]
    jv = jv[isin(jv.index, h[item_col])].astype(float)

    def hazen(x: pd.Series) -> pd.Series:
        return (x.rank(method="average") - 0.5) / len(x)

    ranked = h.assign(**{value_col: h[value_col].astype(float)})
    ranked[value_col] = ranked.groupby(annotator_col, sort=False, dropna=False)[value_col] \
        .transform(hazen)
    return ranked.reset_index(drop=True), hazen(jv)
