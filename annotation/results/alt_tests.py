"""Can a judge replace a human annotator? The report's ``alt_test.csv`` and
``alt_test_annotators.csv``.

The alternative annotator test (Calderon, Reichart & Dror 2025, "The Alternative Annotator
Test for LLM-as-a-Judge: How to Statistically Justify Replacing Human Annotators with LLMs",
ACL 2025, Sec. 3; :func:`annotation.stats.alt_test.alt_test`) of every judge:

* **per rating criterion**, items = outputs, alignment = negative RMSE to the other
  annotators' scores. A judge on its own scale (``judges.scale_min``/``scale_max`` declared
  and not the criterion's ``min``/``max``, e.g. a metric on 0-1 against 1-10 ratings) is
  never scored by an RMSE across scales: the judge's scores and each annotator's scores are
  first turned into normalized mid-ranks, ``(mid-rank - 0.5) / n`` per rater over the items
  the test uses (:func:`annotation.stats.alt_test.normalized_ranks`, which documents the
  transformation and its limits), the rank-based alignment the authors suggest where the
  scales differ; ``scoring`` then reads ``neg_rmse (ranks)`` and ``note`` says why. On ranks
  the test asks whether the judge *orders* outputs like a human, not whether its numbers can
  stand for human scores. When annotators rated different item sets, each annotator's ranks
  are over their own items (comparable when items were assigned at random), and the note
  says so.
* **on the checklist** (``criterion = "checklist (yes/no)"``), items = ``output_id /
  question_id``, alignment = accuracy, on the *decisions* of :mod:`annotation.results.decisions`
  (gated by the dependencies, Cho et al. 2024; ``cant_tell`` is no label), the one rule
  every checklist table uses; ``unanswered="fail"`` scores the questions a judge left
  unanswered as failed (the DSG convention), ``"omit"`` leaves them out.

Both tables come from one run of the test (:func:`run_alt_tests`): ``alt_test.csv`` has one
row per criterion and judge (the verdict), ``alt_test_annotators.csv`` one row per
criterion, judge and annotator (the per-annotator t-tests behind the verdict).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from annotation.results.checklist import ENSEMBLE, StudyDecisions, judge_rows
from annotation.results.decisions import Unanswered, human_decisions, judge_decisions
from annotation.results.progress import JudgeProgress, each_judge
from annotation.results.ratings import criterion_scale, own_scale
from annotation.results.study import StudyData
from annotation.stats.alt_test import alt_test, normalized_ranks
from annotation.stats.membership import isin, take

__all__ = ["ANNOTATOR_COLUMNS", "CHECKLIST", "COLUMNS", "MIN_ANNOTATORS", "AltTests",
           "alt_test_annotators_table", "alt_test_table", "run_alt_tests"]

CHECKLIST = "checklist (yes/no)"
RANKS = "neg_rmse (ranks)"
MIN_ITEMS = 30
#: Below this many tested annotators the test "means little" (Calderon et al. 2025, FAQ).
MIN_ANNOTATORS = 3
COLUMNS = ["criterion", "judge", "scoring", "epsilon", "q", "n_items", "n_annotators",
           "n_skipped", "winning_rate", "advantage_prob", "passed", "note"]
ANNOTATOR_COLUMNS = ["criterion", "judge", "annotator", "n_items", "tested", "judge_win_rate",
                     "human_win_rate", "mean_d", "t", "p", "p_by", "judge_wins", "scoring",
                     "note"]


@dataclass(frozen=True)
class AltTests:
    """One run of the alt-test of every judge: ``summary`` (the rows of ``alt_test.csv``,
    :data:`COLUMNS`) and ``annotators`` (``alt_test_annotators.csv``,
    :data:`ANNOTATOR_COLUMNS`)."""

    summary: pd.DataFrame
    annotators: pd.DataFrame


def _criteria(study: StudyData) -> list[str]:
    named = list(study.criteria.name)
    return named + [c for c in pd.unique(study.human_scores.criterion) if c not in named]


def _rank_note(study: StudyData, judge: str, criterion: str, scale: str,
               humans: pd.DataFrame) -> str:
    theirs = criterion_scale(study, criterion)
    human_scale = f"{theirs[0]:g}-{theirs[1]:g}" if theirs else "criterion's"
    note = (f"judge on its own scale ({scale}) vs the humans' {human_scale}: negative RMSE "
            "of normalized mid-ranks ((rank - 0.5) / n per rater over the items used)")
    sets = humans.groupby("annotator").item.agg(frozenset)
    if sets.nunique() > 1:
        note += ("; annotators rated different item sets: each one's ranks are over their "
                 "own items (comparable only if items were assigned at random)")
    return note


def _verdict_note(summary: pd.Series) -> str:
    if summary["n_annotators"] == 0:
        return f"no annotator with {MIN_ITEMS} items shared with the judge and another " \
               "annotator: not tested"
    if summary["n_annotators"] < MIN_ANNOTATORS:
        return (f"only {summary['n_annotators']} annotator(s) tested: with fewer than "
                f"{MIN_ANNOTATORS} the test means little")
    return ""


def _first(group: tuple[Any, ...]) -> str:
    """The key of a ``groupby`` item, as text."""
    return str(group[0])


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _run(humans: pd.DataFrame, judge: pd.Series, *, criterion: str, judge_name: str,
         scoring: str, label: str, note: str, epsilon: float, q: float
         ) -> tuple[dict[str, object], pd.DataFrame]:
    result = alt_test(humans, judge, epsilon=epsilon, q=q, scoring=scoring,
                      min_items=MIN_ITEMS, judge_name=judge_name)
    summary = result.summary.iloc[0].to_dict()
    summary.update(criterion=criterion, scoring=label,
                   note=_join(note, _verdict_note(result.summary.iloc[0])))
    per = result.annotators.rename(columns={"rho_judge": "judge_win_rate",
                                            "rho_human": "human_win_rate"})
    untested = (f"fewer than {MIN_ITEMS} items shared with the judge and another "
                "annotator: not tested")
    per = per.assign(criterion=criterion, judge=judge_name, scoring=label,
                     note=[_join(note, "" if t else untested) for t in per.tested])
    return summary, per[ANNOTATOR_COLUMNS]


def _item(decisions: pd.DataFrame) -> pd.Series:
    """The alt-test's item of each decision, ``output_id / question_id``, as text (from text
    or categorical columns alike)."""
    return decisions.output_id.astype("str") + " / " + decisions.question_id.astype("str")


def _checklist_values(decisions: pd.DataFrame, rows: np.ndarray, items: pd.Series
                      ) -> pd.Series:
    """One judge's checklist answers (its ``rows`` of ``decisions``) by item
    (``output_id / question_id``), only on the ``items`` the annotators decided.

    The alt-test scores nothing else (Calderon et al. 2025, Sec. 3, step 1: items labeled
    by the judge and by humans), so its answer is the same as on all the judge's
    decisions, without a string per decision (1.2 million a judge at 100,000 outputs, ~250
    MB to hash, issue #18): only the rows of an output some annotator decided (``rows``)
    get an item string (another output's item string is an annotator's item only if an id
    contains " / "). Two answers of the judge on one of these items still raise in
    :func:`annotation.stats.alt_test.alt_test`; a store has one judgment per (judge,
    output, question) (its ``judgments_key`` index), so there are none elsewhere."""
    mine = take(decisions, rows)
    item = _item(mine)
    known = isin(item, items)
    return pd.Series(mine.answer[known].to_numpy(), index=pd.Index(item[known]))


def run_alt_tests(study: StudyData, *, epsilon: float = 0.2, q: float = 0.05,
                  unanswered: Unanswered = "omit",
                  on_judge: JudgeProgress | None = None,
                  decided: StudyDecisions | None = None) -> AltTests:
    """The alt-test of every judge per rating criterion and on the checklist (see the module
    docstring), with margin ``epsilon`` and Benjamini-Yekutieli FDR ``q``.

    Rows: criteria in the project's order, judges by name within each, then the checklist.
    The humans' items are their current scores (``study.human_scores``) and their gated
    checklist decisions (:func:`annotation.results.decisions.human_decisions`); the judges' are
    their parsed scores and :func:`annotation.results.decisions.judge_decisions` with
    ``unanswered``. ``on_judge`` is told of each judge (:mod:`annotation.results.progress`).
    ``decided``: those decisions already scored, with the same ``unanswered``
    (:func:`annotation.results.checklist.study_decisions`; its majority ensemble is no judge
    here), so that a report scores them once.
    """
    summaries: list[dict[str, object]] = []
    per_annotator: list[pd.DataFrame] = []
    scores = study.human_scores
    for criterion in _criteria(study):
        hc = scores[(scores.criterion == criterion) & scores.score.notna()]
        long = hc.rename(columns={"output_id": "item", "score": "value"})
        long = long[["item", "annotator", "value"]]
        judged = study.judge_scores[(study.judge_scores.criterion == criterion)
                                    & study.judge_scores.score.notna()]
        if long.empty:
            continue
        for judge, js in each_judge(judged.groupby("judge", sort=True), on_judge,
                                    f", {criterion}", _first):
            values = js.set_index("output_id").score.astype(float)
            scale = own_scale(study, str(judge), criterion)
            if scale is None:
                humans, judge_values, label, note = long, values, "neg_rmse", ""
            else:
                humans, judge_values = normalized_ranks(long, values)
                label, note = RANKS, _rank_note(study, str(judge), criterion, scale, humans)
            summary, per = _run(humans, judge_values, criterion=criterion,
                                judge_name=str(judge), scoring="neg_rmse", label=label,
                                note=note, epsilon=epsilon, q=q)
            summaries.append(summary)
            per_annotator.append(per)
    human = human_decisions(study) if decided is None else decided.human
    if not human.empty:
        long = pd.DataFrame({"item": _item(human),
                             "annotator": human.annotator, "value": human.answer})
        if decided is None:
            judged, keep = judge_decisions(study, unanswered), None
        else:
            judged = decided.judges
            keep = (judged.judge != ENSEMBLE).to_numpy(dtype=bool, na_value=True)
        note = "gated decisions (annotation.results.decisions); cant_tell is no label"
        if unanswered == "fail":
            note += "; questions a judge left unanswered scored as failed"
        rows = judge_rows(judged.judge, keep)
        # the rows of an output some annotator decided: a few hundred outputs of 100,000
        asked = isin(judged.output_id, human.output_id)
        judged = judged[["output_id", "question_id", "answer"]]
        for judge, at in each_judge(list(rows.items()), on_judge, ", checklist", _first):
            values = _checklist_values(judged, at[asked[at]], long.item)
            summary, per = _run(long, values, criterion=CHECKLIST, judge_name=judge,
                                scoring="accuracy", label="accuracy", note=note,
                                epsilon=epsilon, q=q)
            summaries.append(summary)
            per_annotator.append(per)
    summary_table = pd.DataFrame(summaries, columns=COLUMNS)
    if per_annotator:
        annotators = pd.concat(per_annotator, ignore_index=True)
    else:
        annotators = pd.DataFrame(columns=ANNOTATOR_COLUMNS)
    summary_table["passed"] = summary_table["passed"].astype(bool)
    return AltTests(summary=summary_table.reset_index(drop=True),
                    annotators=annotators.reset_index(drop=True))


def alt_test_table(study: StudyData, *, epsilon: float = 0.2,
                   unanswered: Unanswered = "omit") -> pd.DataFrame:
    """``alt_test.csv``: one row per criterion (and the checklist) and judge, the verdict of
    the alt-test (:func:`run_alt_tests`, whose ``summary`` it is).

    Columns: ``criterion``, ``judge``, ``scoring`` (``neg_rmse``, ``neg_rmse (ranks)`` for a
    judge on its own scale, ``accuracy`` on the checklist), ``epsilon``, ``q``, ``n_items``
    (items scored by the judge and at least two annotators), ``n_annotators`` (tested),
    ``n_skipped`` (annotators with too few items), ``winning_rate`` (share of tested
    annotators the judge beats), ``advantage_prob`` (mean W_judge), ``passed`` (winning
    rate >= 0.5), ``note``.
    """
    return run_alt_tests(study, epsilon=epsilon, unanswered=unanswered).summary


def alt_test_annotators_table(study: StudyData, *, epsilon: float = 0.2,
                              unanswered: Unanswered = "omit") -> pd.DataFrame:
    """``alt_test_annotators.csv``: one row per criterion, judge and annotator, the
    per-annotator test behind the verdict (:func:`run_alt_tests`, its ``annotators``).

    Columns: ``criterion``, ``judge``, ``annotator``, ``n_items``, ``tested``,
    ``judge_win_rate`` (rho_judge = mean W_judge), ``human_win_rate`` (rho_h = mean W_h),
    ``mean_d`` (mean of W_h - W_judge), ``t``, ``p`` (one-sided, H1 mean(d) < epsilon),
    ``p_by`` (Benjamini-Yekutieli across this judge's tested annotators), ``judge_wins``,
    ``scoring``, ``note``.
    """
    return run_alt_tests(study, epsilon=epsilon, unanswered=unanswered).annotators
