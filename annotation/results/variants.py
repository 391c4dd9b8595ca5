"""VIF-Bench's visual vs text-converted instructions: ``vif_variants.csv``.

"VIF-Bench: Evaluating Visual Instruction Following in Multi-Reference Image Generation",
Sec. 4.4 and Fig. 6 (right), App. F.3 (Fig. 13): each generator's judge scores per
criterion when the task is given with its visual instructions (``vi``) and with their
text at three granularities (``text-dense``, ``text-medium``, ``text-sparse``; the
variant tasks of :mod:`annotation.vif.variants`). Every output, whatever it was generated
from, is judged against the *original* task.

:func:`variant_table`: per generator, judge, criterion (and the criteria ``average``; and
``checklist pass rate``, the share of the original task's checklist questions passed, where
the judge answered them) and condition, the number of tasks, the mean score with its
Student-t interval (:func:`annotation.stats.means.mean_interval`; tasks are the units)
and, for each text level, the paired difference text minus VI over the tasks that have both
(:func:`annotation.stats.means.paired_difference`: the paired t interval and test). The
``vi`` row covers the tasks of the subset only: those with an output of that generator
from at least one text variant; judges that scored no output of a text variant have no
rows.

Pure function of a :class:`~annotation.results.study.StudyData`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from annotation.results.decisions import decisions
from annotation.results.paper_tables import judge_order
from annotation.results.ratings import AVERAGE, with_average
from annotation.results.study import StudyData
from annotation.stats.means import mean_interval, paired_difference
from annotation.vif.variants import CONDITIONS, VI

#: The pseudo-criterion of the checklist: the share of the original task's questions passed.
CHECKLIST = "checklist pass rate"
VARIANT_COLUMNS = ["generator", "judge", "criterion", "condition", "n_tasks", "mean", "sd",
                   "mean_lo", "mean_hi", "n_pairs", "mean_vi", "diff", "diff_lo", "diff_hi",
                   "df", "p"]


def condition_scores(study: StudyData) -> pd.DataFrame:
    """task_id, generator, condition, judge, criterion, score: the judges' scores of the
    outputs of the original tasks (``vi``) and of their text variants, with the criteria
    ``average`` where an output has every criterion, and :data:`CHECKLIST` (the share of
    the original's checklist questions the judge passed, gated as every table does:
    :func:`annotation.results.decisions.decisions`) where the judge answered questions."""
    criteria = list(study.criteria.name)
    columns = ["task_id", "generator", "condition", "judge", "criterion", "score"]
    if study.variant_outputs.empty:
        return pd.DataFrame(columns=columns)
    frames = []
    for outputs, scores, answers, condition in (
            (study.outputs, study.judge_scores, study.judge_answers, None),
            (study.variant_outputs, study.variant_scores, study.variant_answers, "variant")):
        scored = with_average(scores, "judge", criteria)
        if len(answers):
            decided = decisions(answers, study.questions, "judge")
            rates = (decided.groupby(["output_id", "judge"]).passed.mean().dropna()
                     .rename("score").reset_index().assign(criterion=CHECKLIST))
            scored = pd.concat([scored, rates], ignore_index=True)
        keep = ["output_id", "task_id", "generator"] + ([condition] if condition else [])
        merged = scored.merge(outputs[keep], on="output_id")
        merged["condition"] = merged[condition] if condition else VI
        frames.append(merged[columns])
    return pd.concat(frames, ignore_index=True)


def variant_table(study: StudyData) -> pd.DataFrame:
    """``vif_variants.csv`` (see the module docstring); no rows without variant outputs."""
    scores = condition_scores(study)
    if scores.empty:
        return pd.DataFrame(columns=VARIANT_COLUMNS)
    texts = scores[scores.condition != VI]
    subset = set(zip(texts.generator, texts.task_id, strict=True))
    on_subset = [(g, t) in subset for g, t in zip(scores.generator, scores.task_id,
                                                  strict=True)]
    scores = scores[np.array(on_subset, dtype=bool) & scores.judge.isin(set(texts.judge))]
    criteria = [c for c in study.criteria.name if c in set(scores.criterion)] + [
        c for c in (AVERAGE, CHECKLIST) if c in set(scores.criterion)]
    cells = dict(tuple(scores.groupby(["generator", "judge", "criterion", "condition"])))
    rows = []
    for gen in sorted(set(scores.generator)):
        for judge in judge_order(sorted(set(scores.judge))):
            for criterion in criteria:
                vi = cells.get((gen, judge, criterion, VI))
                vi_by_task = (vi.groupby("task_id").score.mean() if vi is not None
                              else pd.Series(dtype=float))
                for condition in CONDITIONS:
                    g = cells.get((gen, judge, criterion, condition))
                    if g is None:
                        continue
                    by_task = g.groupby("task_id").score.mean()
                    m = mean_interval(by_task).iloc[0]
                    row = {"generator": gen, "judge": judge, "criterion": criterion,
                           "condition": condition, "n_tasks": int(m["n"]),
                           **{k: m[k] for k in ("mean", "sd", "mean_lo", "mean_hi")}}
                    if condition != VI:
                        both = by_task.index.intersection(vi_by_task.index)
                        d = paired_difference(by_task[both], vi_by_task[both]).iloc[0]
                        row.update(n_pairs=int(d["n"]), mean_vi=d["mean_y"],
                                   **{k: d[k] for k in ("diff", "diff_lo", "diff_hi", "df",
                                                        "p")})
                    rows.append(row)
    return pd.DataFrame(rows, columns=VARIANT_COLUMNS)
