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
out (they feed the tree localization instead). Outputs generated from a VIF-Bench text
variant (``meta.text_variant``, :mod:`annotation.vif.variants`) are not items either: they are
in ``variant_outputs`` (output_id, task_id, generator, variant), their parsed judge
scores in ``variant_scores`` (output_id, judge, criterion, score) and answers in
``variant_answers`` (output_id, judge, question_id, answer), for the VI vs text
comparison (:mod:`annotation.results.variants`). Nor are gold items (outputs with known
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
from annotation.store.pairs import pair_frames

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
    #: the outputs offered to annotators: the sample's, or every annotatable output when
    #: no sample is drawn (empty when unknown, e.g. a study built in memory)
    offered: frozenset[str] = frozenset()
    variant_outputs: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["output_id", "task_id", "generator", "variant"]))
    variant_scores: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["output_id", "judge", "criterion", "score"]))
    variant_answers: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["output_id", "judge", "question_id", "answer"]))
    #: the adjudicators' current decisions on disputed checklist decisions (issue #16):
    #: output_id, question_id, answer (``yes`` / ``no``)
    adjudicated: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["output_id", "question_id", "answer"]))
    #: per annotator and gold item submitted: gold answers compared and correct
    #: (:func:`annotation.work.gold.records`); gold items are not in the answers above
    gold_records: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["annotator", "output_id", "compared", "correct"]))
    #: per annotator and submitted item: the speed flags (:func:`annotation.work.gold.speed_flags`)
    speed: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["annotator", "output_id", "active_seconds", "fast_own", "fast_floor"]))
    #: pairs, rankings and their current answers (issue #17,
    #: :func:`annotation.store.pairs.pair_frames`); empty when the project has none
    pairwise: dict[str, pd.DataFrame] = field(default_factory=dict)


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


def output_table(store: Store, exclude: set[str] | None = None) -> pd.DataFrame:
    """Every output that is a study item (not a diagnostic-tree node, not a text-variant
    output; or all but ``exclude``), with every grouping column ``--by`` takes (the task's
    meta flattened, task features, conflict labels), in import order."""
    if exclude is None:
        from annotation.trace.trees import node_output_ids
        from annotation.vif.variants import output_variant

        stored = store.outputs_df()
        exclude = node_output_ids(store) | set(
            stored.output_id[stored["meta"].map(output_variant).notna()])
    outputs = project_rows.outputs_with_tasks_df(store)
    outputs = outputs[~outputs.output_id.isin(exclude)].reset_index(drop=True)
    return _with_features(store, outputs)


def load_study(store: Store) -> StudyData:
    """Read every current answer and judgment of the project (see the module docstring)."""
    from annotation.store import gold as gold_rows
    from annotation.trace.trees import node_output_ids
    from annotation.vif.variants import output_variant
    from annotation.work import gold, workflow

    stored_outputs = store.outputs_df()
    variant = stored_outputs["meta"].map(output_variant)
    variant_outputs = stored_outputs.loc[variant.notna(), ["output_id", "task_id",
                                                           "generator"]].assign(
        variant=variant[variant.notna()]).reset_index(drop=True)
    not_items = node_output_ids(store) | set(variant_outputs.output_id)
    annotations = store.annotations_df()
    annotations = annotations[~annotations.output_id.isin(not_items)]
    # gold items are chosen, not sampled: their answers are a test of the annotators,
    # never part of a judge-vs-human or agreement statistic
    gold_items = set(gold_rows.gold_outputs(store))
    annotations = annotations[~annotations.output_id.isin(gold_items)]
    tolerance = workflow.get_settings(store).gold_tolerance
    gold_records = pd.DataFrame(
        [{"annotator": a, **r} for a in gold_rows.annotation_people(store)
         for r in gold.records(store, a, tolerance)] if gold_items else [],
        columns=["annotator", "output_id", "compared", "correct"])
    # the parsed judgments, scores and answers read apart (each without the other's
    # columns: the peak memory and load time of a large study); the study's rows are
    # those frames themselves when no judgment is on a tree node or a VIF variant
    scores = store.judge_scores_df()
    answers = store.judge_answers_df()
    variant_ids = variant_outputs.output_id
    variant_scores = scores.loc[scores.output_id.isin(variant_ids)]
    variant_answers = answers.loc[answers.output_id.isin(variant_ids)]
    human_scores = annotations.loc[annotations.criterion.notna(),
                                   ["output_id", "annotator", "criterion", "score"]]
    human_answers = annotations.loc[annotations.question_id.notna(),
                                    ["output_id", "annotator", "question_id", "answer"]]
    judge_scores = _without(scores, not_items)
    judge_answers = _without(answers, not_items)
    del scores, answers
    stored = store.questions_df()
    questions = stored[["question_id", "checklist_id", "operator", "target", "pass_answer",
                        "depends_on"]].copy()
    questions["depends_on"] = questions["depends_on"].map(json.loads)
    question_meta = pd.DataFrame([_flat_meta(m) for m in stored["meta"]], index=stored.index)
    questions = pd.concat([questions, question_meta], axis=1)
    outputs = output_table(store, exclude=not_items)
    times = store.item_times_df()
    return StudyData(
        human_scores=human_scores.reset_index(drop=True),
        judge_scores=judge_scores.reset_index(drop=True),
        human_answers=human_answers.reset_index(drop=True),
        judge_answers=judge_answers.reset_index(drop=True),
        questions=questions.reset_index(drop=True),
        outputs=outputs,
        criteria=store.criteria_df(),
        judges=store.judges_df(),
        times=times[~times.output_id.isin(not_items)].reset_index(drop=True),
        validation=items.validation_pairs(store),
        design=items.sample_design(store),
        offered=frozenset(set(items.sample_ids(store)
                              or items.annotatable_outputs(store).output_id) - gold_items),
        variant_outputs=variant_outputs,
        variant_scores=variant_scores.reset_index(drop=True),
        variant_answers=variant_answers.reset_index(drop=True),
        adjudicated=_adjudicated(store),
        gold_records=gold_records,
        speed=workflow.speed_flags_df(store),
        pairwise=pair_frames(store),
    )


def _without(frame: pd.DataFrame, output_ids: set[str]) -> pd.DataFrame:
    """The rows of ``frame`` whose ``output_id`` is not in ``output_ids`` (the frame itself,
    not a copy, when that is every row)."""
    keep = ~frame.output_id.isin(output_ids).to_numpy()
    return frame if keep.all() else frame.loc[keep]


def _adjudicated(store: Store) -> pd.DataFrame:
    """The current checklist decisions of the adjudication queue (see StudyData)."""
    from annotation.store.adjudications import decisions_df

    rows = decisions_df(store, kind="checklist")
    return pd.DataFrame({"output_id": rows["item"], "question_id": rows["target"],
                         "answer": rows["decision"]}).reset_index(drop=True)
