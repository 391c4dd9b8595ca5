"""The data of a judge-validation study, read from the store as tidy long DataFrames.

Everything the statistics need, in the shapes :mod:`annotation.stats` takes:

* ``human_scores``: output_id, annotator, criterion, score (current answers only);
* ``judge_scores``: output_id, judge, criterion, score (parsed judgments only);
* ``human_answers``: output_id, annotator, question_id, answer (``cant_tell`` kept);
* ``judge_answers``: output_id, judge, question_id, answer;
* ``questions``: question_id, checklist_id, operator, target, pass_answer, depends_on,
  plus the question's meta flattened as ``meta.<key>`` columns (scalars only), for the
  leniency table per question category;
* ``outputs``: output_id, task_id, generator, plus the task's meta flattened as
  ``meta.<key>`` columns (scalars only), for grouping (``--by meta.conflict``);
* ``times``: annotator, output_id, active_seconds (summed over visits of the annotation
  workflow; gaps over 2 minutes already count as 2 minutes).

Unparsed judge answers and superseded human answers are left out; missing outputs have no
answers. Diagnostic-tree node outputs (``meta.node`` other than the root, see
:mod:`annotation.trace.trees`) are not items of the study: their answers and judgments are left
out (they feed the tree localization instead). Pure reading: no statistics here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pandas as pd

from annotation.store import Store
from annotation.store import project as project_rows


@dataclass(frozen=True)
class StudyData:
    human_scores: pd.DataFrame
    judge_scores: pd.DataFrame
    human_answers: pd.DataFrame
    judge_answers: pd.DataFrame
    questions: pd.DataFrame
    outputs: pd.DataFrame
    criteria: pd.DataFrame
    judges: pd.DataFrame
    times: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["annotator", "output_id", "active_seconds"]))


def output_groups(study: StudyData, by: str | None) -> list[tuple[str, set[str] | None]]:
    """The groups a report table has rows for: ``("all", None)``, then with ``by`` (a
    column of ``study.outputs``: ``generator``, ``task_id``, ``meta.<key>``) one
    ``("<by>=<value>", {output ids})`` per value, sorted. An unknown ``by`` raises
    ``KeyError`` naming the columns there are."""
    groups: list[tuple[str, set[str] | None]] = [("all", None)]
    if by is not None:
        if by not in study.outputs.columns:
            raise KeyError(f"--by {by}: not a column of the outputs (generator, task_id, "
                           f"meta.<key>); available: {', '.join(study.outputs.columns)}")
        for value, df in study.outputs.groupby(by, dropna=True, sort=True):
            groups.append((f"{by}={value}", set(df.output_id)))
    return groups


def _flat_meta(meta: str) -> dict[str, object]:
    data = json.loads(meta) if meta else {}
    return {f"meta.{k}": v for k, v in data.items()
            if isinstance(v, str | int | float | bool) or v is None}


def load_study(store: Store) -> StudyData:
    """Read every current answer and judgment of the project (see the module docstring)."""
    from annotation.trace.trees import node_output_ids

    nodes = node_output_ids(store)
    annotations = store.annotations_df()
    annotations = annotations[~annotations.output_id.isin(nodes)]
    judgments = store.judgments_df()
    judgments = judgments[(judgments.parse_status == "ok") & ~judgments.output_id.isin(nodes)]
    human_scores = annotations.loc[annotations.criterion.notna(),
                                   ["output_id", "annotator", "criterion", "score"]]
    human_answers = annotations.loc[annotations.question_id.notna(),
                                    ["output_id", "annotator", "question_id", "answer"]]
    judge_scores = judgments.loc[judgments.criterion.notna(),
                                 ["output_id", "judge", "criterion", "score"]]
    judge_answers = judgments.loc[judgments.question_id.notna(),
                                  ["output_id", "judge", "question_id", "answer"]]
    stored = store.questions_df()
    questions = stored[["question_id", "checklist_id", "operator", "target", "pass_answer",
                        "depends_on"]].copy()
    questions["depends_on"] = questions["depends_on"].map(json.loads)
    question_meta = pd.DataFrame([_flat_meta(m) for m in stored["meta"]], index=stored.index)
    questions = pd.concat([questions, question_meta], axis=1)
    outputs = project_rows.outputs_with_tasks_df(store)
    outputs = outputs[~outputs.output_id.isin(nodes)].reset_index(drop=True)
    times = store.item_times_df()
    meta = pd.DataFrame([_flat_meta(m) for m in outputs.pop("meta")], index=outputs.index)
    outputs = pd.concat([outputs, meta], axis=1)
    return StudyData(
        human_scores=human_scores.reset_index(drop=True),
        judge_scores=judge_scores.reset_index(drop=True),
        human_answers=human_answers.reset_index(drop=True),
        judge_answers=judge_answers.reset_index(drop=True),
        questions=questions.reset_index(drop=True),
        outputs=outputs,
        criteria=store.criteria_df(),
        judges=store.judges_df(),
        times=times[~times.output_id.isin(nodes)].reset_index(drop=True),
    )
