"""The data of a judge-validation study, read from the store as tidy long DataFrames.

Everything the statistics need, in the shapes :mod:`annotation.stats` takes:

* ``human_scores``: output_id, annotator, criterion, score (current answers only);
* ``judge_scores``: output_id, judge, criterion, score (parsed judgments only);
* ``human_answers``: output_id, annotator, question_id, answer (``cant_tell`` kept);
* ``judge_answers``: output_id, judge, question_id, answer;
* ``questions``: question_id, checklist_id, operator, target, pass_answer, depends_on,
  plus the question's meta flattened as ``meta.<key>`` columns (scalars only), for the
  leniency table per question category;
* ``outputs``: output_id, task_id, generator, plus every grouping column of
  :mod:`annotation.results.features`: the task's meta flattened as ``meta.<path>``
  (nested objects by dotted paths, lists of scalars as tuples), the task features
  ``task.<feature>`` and the conflict labels ``conflict.<type>`` (``--by``);
* ``times``: annotator, output_id, active_seconds (summed over visits of the annotation
  workflow; gaps over 2 minutes already count as 2 minutes).

Unparsed judge answers and superseded human answers are left out; missing outputs have no
answers. Diagnostic-tree node outputs (``meta.node`` other than the root, see
:mod:`annotation.trace.trees`) are not items of the study: their answers and judgments are left
out (they feed the tree localization instead). Nor are gold items (outputs with known
answers, :mod:`annotation.work.gold`): they are chosen, not sampled, so every annotator's
answers on them are left out of ``human_scores``/``human_answers`` and kept as
``gold_records`` (accuracy against the gold answers); the gold answers themselves are never
human answers. Pure reading: no statistics here.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from annotation.results import features
from annotation.store import Store, items
from annotation.store import project as project_rows

#: ``--by``: one grouping key, several (their combinations), or none (:func:`output_groups`)
GroupBy = str | Sequence[str] | None


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
    #: the question-level validation set (:mod:`annotation.work.validation_set`), if drawn
    validation: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["output_id", "question_id"]))
    #: how the annotation sample was drawn (:func:`annotation.store.items.sample_design`)
    design: dict[str, Any] = field(default_factory=lambda: {"mode": "none"})
    #: per annotator and gold item submitted: gold answers compared and correct
    #: (:func:`annotation.work.gold.records`); gold items are not in the answers above
    gold_records: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["annotator", "output_id", "compared", "correct"]))
    #: per annotator and submitted item: the speed flags (:func:`annotation.work.gold.speed_flags`)
    speed: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["annotator", "output_id", "active_seconds", "fast_own", "fast_floor"]))


def output_groups(study: StudyData, by: GroupBy) -> list[tuple[str, set[str] | None]]:
    """The groups a report table has rows for: ``("all", None)``, then one
    ``("<key>=<value>", {output ids})`` per value of ``by``, sorted.

    ``by`` is a column of ``study.outputs`` (``generator``, ``task_id``, ``meta.<path>``,
    ``task.<feature>``, ``conflict.<type>``: :mod:`annotation.results.features`) or several:
    then the groups are their combinations, labelled ``"<k1>=<v1> & <k2>=<v2>"`` (only those
    with outputs). A multi-valued key (a list in the meta, ``task.vi_type``) puts an output
    in the group of each of its values. Outputs without a value are in no group of that key.
    An unknown key raises ``KeyError`` naming the columns there are."""
    groups: list[tuple[str, set[str] | None]] = [("all", None)]
    for keys, values, members in group_values(study, by):
        label = " & ".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))
        groups.append((label, members))
    return groups


def group_values(study: StudyData, by: GroupBy
                 ) -> list[tuple[tuple[str, ...], tuple[Any, ...], set[str]]]:
    """The groups of :func:`output_groups` but ``all``, as (keys, values, output ids)."""
    keys = tuple(dict.fromkeys([by] if isinstance(by, str) else list(by or ())))
    for key in keys:
        if key not in study.outputs.columns:
            raise KeyError(f"--by {key}: not a column of the outputs (generator, task_id, "
                           f"meta.<path>, task.<feature>, conflict.<type>); available: "
                           f"{', '.join(study.outputs.columns)}")
    if not keys:
        return []
    members: dict[tuple[Any, ...], set[str]] = {}
    for row in study.outputs[["output_id", *keys]].itertuples(index=False):
        for combination in itertools.product(*(_values(v) for v in row[1:])):
            members.setdefault(combination, set()).add(row[0])
    return [(keys, combination, members[combination]) for combination in
            sorted(members, key=lambda c: tuple(_sort_key(v) for v in c))]


def _values(value: Any) -> tuple[Any, ...]:
    """The group values of one cell: a list's elements, nothing for a missing value."""
    if isinstance(value, list | tuple):
        return tuple(dict.fromkeys(value))
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return ()
    return (value,)


def _sort_key(value: Any) -> tuple[int, Any]:
    """Numbers in numeric order before text (2 before 10), booleans as False, True."""
    if isinstance(value, bool):
        return (0, int(value))
    if isinstance(value, int | float):
        return (1, value)
    return (2, str(value))


def _flat_meta(meta: str) -> dict[str, object]:
    """A question's meta as ``meta.<path>`` columns (:func:`features.flat_meta`), scalars
    only: the leniency table's question categories."""
    flat = features.flat_meta(json.loads(meta) if meta else {})
    return {k: v for k, v in flat.items() if not isinstance(v, tuple)}


def _with_features(store: Store, outputs: pd.DataFrame) -> pd.DataFrame:
    """``outputs`` (with the task's meta as JSON) plus every grouping column of
    :mod:`annotation.results.features`: the meta flattened, the task features and the
    conflict labels (object columns, so a value is never turned into a float)."""
    metas = [json.loads(m) if m else {} for m in outputs.pop("meta")]
    flat = pd.DataFrame([features.flat_meta(m) for m in metas], index=outputs.index,
                        dtype=object)
    outputs = pd.concat([outputs, flat], axis=1)
    tasks = pd.DataFrame({"task_id": outputs["task_id"], "meta": metas}).drop_duplicates(
        "task_id")
    derived = features.load_task_features(store, tasks).merge(
        features.load_conflict_features(store), on="task_id", how="left")
    derived = derived.astype(object).where(derived.notna(), None)
    return outputs.merge(derived, on="task_id", how="left")


def load_study(store: Store) -> StudyData:
    """Read every current answer and judgment of the project (see the module docstring)."""
    from annotation.store import gold as gold_rows
    from annotation.trace.trees import node_output_ids
    from annotation.work import gold, workflow

    nodes = node_output_ids(store)
    annotations = store.annotations_df()
    annotations = annotations[~annotations.output_id.isin(nodes)]
    # gold items are chosen, not sampled: their answers are a test of the annotators,
    # never part of a judge-vs-human or agreement statistic
    gold_items = set(gold_rows.gold_outputs(store))
    annotations = annotations[~annotations.output_id.isin(gold_items)]
    tolerance = workflow.get_settings(store).gold_tolerance
    gold_records = pd.DataFrame(
        [{"annotator": a, **r} for a in gold_rows.annotation_people(store)
         for r in gold.records(store, a, tolerance)] if gold_items else [],
        columns=["annotator", "output_id", "compared", "correct"])
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
    outputs = _with_features(store, outputs)
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
        validation=items.validation_pairs(store),
        design=items.sample_design(store),
        gold_records=gold_records,
        speed=workflow.speed_flags_df(store),
    )
