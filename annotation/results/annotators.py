"""Which annotator is off? The rows of ``annotators.csv``, one per annotator.

Every number compares an annotator with the *other* annotators only (leave one out), so an
annotator never agrees with themself:

* ``r_<criterion>``: Pearson's r between the annotator's scores and the mean of the other
  annotators' scores, on the outputs the annotator scored that at least one other annotator
  scored too (``n_<criterion>`` of them); NaN below 3 outputs or when either side is
  constant (the "item-rest" correlation of classical test theory, with raters in place of
  items);
* ``checklist_agreement``/``checklist_kappa``: the annotator's gated checklist decisions
  (:func:`annotation.results.decisions.human_decisions`, the one gating rule of every checklist
  table; ``cant_tell`` is no decision) against the strict majority of the other annotators'
  decisions on the same output and question (:func:`annotation.results.decisions.majority_of`; a
  tie gives no majority and the decision is left out), by
  :func:`annotation.stats.agreement.binary_agreement` (raw agreement; Cohen 1960 kappa),
  over ``n_checklist`` decisions;
* ``median_active_seconds``: median over the annotator's outputs of the active time on
  the output (``study.times``); ``cant_tell_share``: the share of the annotator's own
  checklist answers that are ``cant_tell``.

``flags`` (joined by "; ", empty when none) are transparent screening rules, not verdicts;
look at the annotator's answers before discarding anything:

* ``low_correlation:<criterion>``: r below :data:`LOW_R` (0.3), or more than
  :data:`R_GAP` (0.2) below the median r of the other annotators on that criterion;
* ``low_kappa``: kappa below :data:`LOW_KAPPA` (0.2, "slight" agreement or worse in Landis &
  Koch 1977, "The measurement of observer agreement for categorical data", Biometrics
  33:159). Yes-heavy checklists give a low kappa at high raw agreement (the prevalence
  paradox, Feinstein & Cicchetti 1990): the note says so when agreement is at least 0.85;
* ``fast``: median active time below a third (:data:`FAST_SHARE`) of the median of all
  annotators' medians;
* ``many_cant_tell``: ``cant_tell_share`` above :data:`MANY_CANT_TELL` (0.2);
* ``straight_lining:<criterion>``: one score value makes up at least
  :data:`STRAIGHT_SHARE` (90%) of the annotator's scores on a criterion with at least
  :data:`STRAIGHT_MIN` (10) scores.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from annotation.results.decisions import human_decisions, majority_of
from annotation.results.study import StudyData
from annotation.stats.agreement import binary_agreement

__all__ = ["FAST_SHARE", "LOW_KAPPA", "LOW_R", "MANY_CANT_TELL", "R_GAP", "STRAIGHT_MIN",
           "STRAIGHT_SHARE", "annotators_table"]

LOW_R = 0.3
R_GAP = 0.2
LOW_KAPPA = 0.2
PARADOX_AGREEMENT = 0.85
FAST_SHARE = 1 / 3
MANY_CANT_TELL = 0.2
STRAIGHT_SHARE = 0.9
STRAIGHT_MIN = 10
MIN_R_ITEMS = 3


def _criteria(study: StudyData) -> list[str]:
    named = list(study.criteria.name)
    return named + [c for c in pd.unique(study.human_scores.criterion) if c not in named]


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < MIN_R_ITEMS or np.ptp(x) == 0 or np.ptp(y) == 0:
        return np.nan
    return float(stats.pearsonr(x, y).statistic)


def _rest_correlation(scores: pd.DataFrame, annotator: str) -> tuple[float, int]:
    """r of ``annotator``'s scores (one criterion) with the others' mean, and the count."""
    own = scores[scores.annotator == annotator].groupby("output_id").score.mean()
    rest = scores[scores.annotator != annotator].groupby("output_id").score.mean()
    common = own.index.intersection(rest.index)
    x, y = own[common].to_numpy(float), rest[common].to_numpy(float)
    return _pearson(x, y), len(common)


def _straight(scores: pd.Series) -> bool:
    if len(scores) < STRAIGHT_MIN:
        return False
    return bool(scores.value_counts().iloc[0] / len(scores) >= STRAIGHT_SHARE)


def annotators_table(study: StudyData) -> pd.DataFrame:
    """The ``annotators.csv`` table (see the module docstring), one row per annotator (by
    name).

    Columns: ``annotator``; ``n_items`` (outputs with any current answer of the annotator:
    a score or a checklist answer); ``n_scores`` (scores given); ``n_decisions`` (gated
    yes/no checklist decisions); per criterion in the project's order ``r_<criterion>``
    and ``n_<criterion>``; ``n_checklist`` (decisions compared with the others' majority),
    ``checklist_agreement``, ``checklist_kappa``; ``median_active_seconds``;
    ``cant_tell_share``; ``flags``; ``note``.
    """
    criteria = _criteria(study)
    scores = study.human_scores[study.human_scores.score.notna()]
    answers = study.human_answers
    decided = human_decisions(study)
    decided = decided[decided.answer.isin(("yes", "no"))]
    times = study.times
    names = sorted(pd.unique(pd.concat([scores.annotator, answers.annotator,
                                        study.gold_records.annotator]).dropna()), key=str)
    rows = []
    for name in names:
        own_scores = scores[scores.annotator == name]
        own_answers = answers[answers.annotator == name]
        own_decided = decided[decided.annotator == name]
        row: Any = {
            "annotator": name,
            "n_items": len(set(own_scores.output_id) | set(own_answers.output_id)),
            "n_scores": len(own_scores),
            "n_decisions": len(own_decided),
        }
        straight = []
        for c in criteria:
            sc = scores[scores.criterion == c]
            r, n = _rest_correlation(sc, name)
            row[f"r_{c}"], row[f"n_{c}"] = r, n
            if _straight(own_scores[own_scores.criterion == c].score):
                straight.append(c)
        majority = majority_of(decided[decided.annotator != name])
        paired = own_decided.merge(majority, on=["output_id", "question_id"],
                                   suffixes=("", "_others"))
        notes = []
        if len(paired):
            agree = binary_agreement(paired.answer.to_list(), paired.answer_others.to_list())
            row["n_checklist"] = int(agree.n_decisions.iloc[0])
            row["checklist_agreement"] = float(agree.agreement.iloc[0])
            row["checklist_kappa"] = float(agree.kappa.iloc[0])
        else:
            row["n_checklist"] = 0
            row["checklist_agreement"] = row["checklist_kappa"] = np.nan
            if len(own_decided):
                notes.append("no strict majority of the other annotators on any of the "
                             "annotator's checklist decisions")
        own_times = times[times.annotator == name].active_seconds.dropna()
        row["median_active_seconds"] = float(own_times.median()) if len(own_times) else np.nan
        row["cant_tell_share"] = float((own_answers.answer == "cant_tell").mean()) \
            if len(own_answers) else np.nan
        row["_straight"] = straight
        row["_notes"] = notes
        rows.append(row)
    columns = ["annotator", "n_items", "n_scores", "n_decisions",
               *[f"{p}_{c}" for c in criteria for p in ("r", "n")], "n_checklist",
               "checklist_agreement", "checklist_kappa", "median_active_seconds",
               "cant_tell_share", "flags", "note", *GOLD_COLUMNS]
    if not rows:
        return pd.DataFrame(columns=columns)
    table = pd.DataFrame(rows)
    overall = table.median_active_seconds.median()
    flags_col, notes_col = [], []
    for i, row in table.iterrows():
        flags: list[str] = []
        notes = []
        for c in criteria:
            r = row[f"r_{c}"]
            others = table.loc[table.index != i, f"r_{c}"].dropna()
            median = others.median() if len(others) else np.nan
            if pd.notna(r) and (r < LOW_R or (pd.notna(median) and r < median - R_GAP)):
                flags.append(f"low_correlation:{c}")
            if pd.isna(r) and row[f"n_{c}"] >= MIN_R_ITEMS:
                notes.append(f"r_{c}: constant scores")
        kappa, agreement = row.checklist_kappa, row.checklist_agreement
        if pd.notna(kappa) and kappa < LOW_KAPPA:
            flags.append("low_kappa")
            if agreement >= PARADOX_AGREEMENT:
                notes.append(f"low kappa at agreement {agreement:.2f}: likely the prevalence "
                             "paradox of a yes-heavy checklist")
        seconds = row.median_active_seconds
        if pd.notna(seconds) and pd.notna(overall) and seconds < FAST_SHARE * overall:
            flags.append("fast")
        if pd.notna(row.cant_tell_share) and row.cant_tell_share > MANY_CANT_TELL:
            flags.append("many_cant_tell")
        flags.extend(f"straight_lining:{c}" for c in row["_straight"])
        if pd.isna(seconds):
            notes.append("no active time recorded")
        flags_col.append("; ".join(flags))
        notes_col.append("; ".join([*row["_notes"], *notes]))
    table["flags"], table["note"] = flags_col, notes_col
    table = table.drop(columns=[c for c in GOLD_COLUMNS if c in table.columns]).merge(
        gold_columns(study), how="left", on="annotator")
    for c in ("n_gold_items", "gold_answers", "gold_correct", "n_fast_own", "n_fast_floor"):
        table[c] = table[c].fillna(0).astype(int)
    return table[columns]


#: the columns added by issue #16 item 2, after the older ones (never renamed)
GOLD_COLUMNS = ("n_gold_items", "gold_answers", "gold_correct", "gold_accuracy",
                "gold_accuracy_low", "gold_accuracy_high", "n_fast_own", "n_fast_floor")


def gold_columns(study: StudyData) -> pd.DataFrame:
    """Per annotator: gold items submitted (``n_gold_items``), gold answers compared and
    correct, ``gold_accuracy`` with its 95% Wilson interval (Wilson 1927, "Probable
    inference, the law of succession, and statistical inference", JASA 22:209: answers
    pooled over the gold items), and the submitted items flagged fast against the
    annotator's own median item time (``n_fast_own``) and against the floor per answer
    target (``n_fast_floor``; :func:`annotation.work.gold.speed_flags`)."""
    from annotation.work.gold import wilson

    rec = study.gold_records
    by = rec.groupby("annotator").agg(n_gold_items=("output_id", "nunique"),
                                      gold_answers=("compared", "sum"),
                                      gold_correct=("correct", "sum")).reset_index()
    by["gold_accuracy"] = [k / n if n else np.nan
                           for k, n in zip(by.gold_correct, by.gold_answers, strict=True)]
    bounds = [wilson(int(k), int(n)) for k, n in zip(by.gold_correct, by.gold_answers,
                                                     strict=True)]
    by["gold_accuracy_low"] = [b[0] for b in bounds]
    by["gold_accuracy_high"] = [b[1] for b in bounds]
    speed = study.speed.groupby("annotator").agg(
        n_fast_own=("fast_own", "sum"), n_fast_floor=("fast_floor", "sum")).reset_index()
    return by.merge(speed, how="outer", on="annotator")
