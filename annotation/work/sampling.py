"""Sampling designs: which outputs humans annotate. One place for every design.

Human time is the scarce resource of a judge-validation study, and how the items were
chosen decides what the numbers mean. Every design is seeded (``random.Random(seed)``),
recorded in the audit log with its parameters (``workflow.sample``; the report shows it:
:func:`annotation.store.items.sample_design`) and replaces the previous sample.

* ``all``: no restriction.
* ``uniform``: ``size`` outputs uniformly at random.
* ``stratified``: ``size`` outputs split over the strata of ``by`` (default
  ``generator``; any column the report's ``--by`` takes: ``meta.<path>``,
  ``task.<feature>``, ``conflict.<type>``, several for their combinations) in proportion
  to their outputs (largest remainders), or ``per_stratum`` from each; uniform within
  each. VIF-Bench's human study samples this way ("VIF-Bench: Evaluating Visual
  Instruction Following in Multi-Reference Image Generation", Sec. 4.2).
* ``paired``: ``size`` tasks drawn uniformly among those with an output of every
  generator of ``generators`` (default: all), and all those outputs: the same tasks for
  every generator, as TRACE-Bench audits the same 200 cases for both generators
  ("TRACE-Bench", Sec. 5), so generators are compared on the same items.
* ``balanced``: question-level units, half "yes" and half "no" by the expected answer,
  a judge's answer or the human majority (:mod:`annotation.work.validation_set`,
  TIIF-Bench's 280 / 280).

Disagreement first (:func:`disagreement_scores`, the workflow setting
``disagreement_first``) is not a sample but an order: outputs whose judges disagree with
each other, or with the humans so far, are offered first. The items annotated first are
then not a uniform sample of the benchmark, and the report says so.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from annotation.store import Store, items

DESIGNS = ("all", "uniform", "stratified", "paired", "balanced")
NO_VALUE = "(none)"


def stratum_labels(outputs: pd.DataFrame, by: Sequence[str]) -> pd.Series:
    """Each output's stratum: the values of the ``by`` columns joined ``k=v & ...`` (a
    list value as its items joined by ``+``; no value is ``(none)``, a stratum of its
    own). Raises ``KeyError`` naming the columns there are."""
    for key in by:
        if key not in outputs.columns:
            raise KeyError(f"{key}: not a column of the outputs; available: "
                           f"{', '.join(map(str, outputs.columns))}")

    def text(value: Any) -> str:
        if value is None or (isinstance(value, float) and np.isnan(value)):
            return NO_VALUE
        if isinstance(value, list | tuple):
            return "+".join(map(str, value)) or NO_VALUE
        return str(value)

    parts = [outputs[key].map(text).map(lambda v, k=key: f"{k}={v}") for key in by]
    label = parts[0]
    for part in parts[1:]:
        label = label + " & " + part
    return label


def allocate(sizes: dict[str, int], total: int) -> dict[str, int]:
    """``total`` split over strata in proportion to ``sizes`` by largest remainders (ties
    by stratum name), never more than a stratum holds."""
    total = min(total, sum(sizes.values()))
    whole = sum(sizes.values())
    quotas = {s: total * n / whole for s, n in sizes.items()}
    counts = {s: min(int(q), sizes[s]) for s, q in quotas.items()}
    left = total - sum(counts.values())
    while left > 0:
        open_ = [s for s in sizes if counts[s] < sizes[s]]
        for s in sorted(open_, key=lambda s: (-(quotas[s] - counts[s]), s))[:left]:
            counts[s] += 1
            left -= 1
    return counts


def stratified(outputs: pd.DataFrame, by: Sequence[str], rng: random.Random, *,
               size: int | None = None, per_stratum: int | None = None) -> list[str]:
    """Output ids drawn uniformly within each stratum of ``by``: ``size`` in all, in
    proportion (:func:`allocate`), or ``per_stratum`` from each (all of a smaller one)."""
    labels = stratum_labels(outputs, by)
    groups = {s: sorted(map(str, outputs.output_id[labels == s])) for s in sorted(set(labels))}
    if per_stratum is not None:
        counts = {s: min(per_stratum, len(ids)) for s, ids in groups.items()}
    else:
        counts = allocate({s: len(ids) for s, ids in groups.items()}, size or 0)
    chosen: list[str] = []
    for s, ids in groups.items():
        chosen.extend(rng.sample(ids, counts[s]))
    return chosen


def paired(outputs: pd.DataFrame, size: int, rng: random.Random,
           generators: Sequence[str] | None = None) -> list[str]:
    """All outputs of ``generators`` for ``size`` tasks drawn uniformly among the tasks
    that have an output of each of them; ``ValueError`` when none or unknown ones."""
    present = sorted(set(map(str, outputs.generator)))
    wanted = list(generators) if generators else present
    unknown = sorted(set(wanted) - set(present))
    if unknown:
        raise ValueError(f"no annotatable outputs of generator(s) {', '.join(unknown)}; "
                         f"there are: {', '.join(present)}")
    mine = outputs[outputs.generator.astype(str).isin(wanted)]
    per_task = mine.groupby("task_id").generator.nunique()
    complete = sorted(map(str, per_task.index[per_task == len(wanted)]))
    if not complete:
        raise ValueError(f"no task has an annotatable output of every one of "
                         f"{', '.join(wanted)}")
    tasks = set(rng.sample(complete, min(size, len(complete))))
    return [str(o) for o, t in zip(mine.output_id, mine.task_id, strict=True) if t in tasks]


def draw(store: Store, actor: str, design: str, *, size: int | None = None, seed: int = 0,
         by: Sequence[str] = (), per_stratum: int | None = None,
         generators: Sequence[str] | None = None, questions: int | None = None,
         balance: str = "expected") -> list[str]:
    """Draw the sample of ``design`` (module docstring) and make it the sample; return
    the output ids (``all``: an empty list, no restriction). Raises ``ValueError`` with
    what to change when the project cannot give the design."""
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {', '.join(DESIGNS)}, not {design!r}")
    if design == "balanced":
        from annotation.work.validation_set import draw_validation_set

        if size is None or questions is None:
            raise ValueError("the balanced design needs a size (outputs) and a number of "
                             "questions")
        table = draw_validation_set(store, actor, images=size, questions=questions,
                                    seed=seed, balance=balance)
        return list(dict.fromkeys(table.output_id))
    outputs = items.annotatable_outputs(store)
    rng = random.Random(seed)
    if size is not None:
        size = min(size, len(outputs))
    detail: dict[str, Any] = {"mode": design, "size": size, "seed": seed}
    if design == "all":
        chosen: list[str] = []
    elif design == "uniform":
        _need_size(size)
        chosen = rng.sample(list(map(str, outputs.output_id)),  # import order
                            min(int(size or 0), len(outputs)))
    elif design == "stratified":
        keys = list(by) or ["generator"]
        if per_stratum is None:
            _need_size(size)
        table = outputs if keys == ["generator"] else _with_features(store, outputs)
        chosen = stratified(table, keys, rng, size=size, per_stratum=per_stratum)
        detail.update(by=keys, per_stratum=per_stratum)
    else:
        _need_size(size)
        chosen = paired(outputs, int(size or 0), rng, generators)
        detail.update(generators=list(generators) if generators else None,
                      tasks=int(outputs[outputs.output_id.isin(chosen)].task_id.nunique()))
    detail["drawn"] = len(chosen)
    items.replace_sample(store, actor, chosen, detail)
    return chosen


def stratum_keys(store: Store) -> list[str]:
    """The columns a stratified sample can use (``generator`` first), for a picker
    (:func:`annotation.results.features.grouping_keys`: cheap, no values computed)."""
    from annotation.results.features import grouping_keys

    return grouping_keys(store)


def generators(store: Store) -> list[str]:
    """The generators with annotatable outputs, sorted."""
    return sorted(set(map(str, items.annotatable_outputs(store).generator)))


def _need_size(size: int | None) -> None:
    if size is None or size < 1:
        raise ValueError("a sample needs a size of at least 1")


def _with_features(store: Store, outputs: pd.DataFrame) -> pd.DataFrame:
    """The annotatable ``outputs`` with every grouping column of the report."""
    from annotation.results.study import output_table

    table = output_table(store)
    return table[table.output_id.isin(set(outputs.output_id))].reset_index(drop=True)


# ------------------------------------------------------------ disagreement first
def disagreement_scores(judge_answers: pd.DataFrame, judge_scores: pd.DataFrame,
                        human_answers: pd.DataFrame, human_scores: pd.DataFrame,
                        ranges: dict[str, float]) -> pd.Series:
    """Per output, how much its judges disagree with each other or with the humans so far,
    in [0, 1]: the largest over its questions and criteria of

    * a question: 1 when the judges' yes/no answers (and the humans' strict majority,
      when there is one) are not all the same, else 0;
    * a criterion: the spread (max - min) of the judges' scores and the humans' mean
      score, over the criterion's range (``ranges``: max - min of the scale).

    Outputs with a single source of answers score 0 (nothing to disagree with)."""
    parts: list[pd.Series] = []
    if len(judge_answers):
        votes = judge_answers[judge_answers.answer.isin(("yes", "no"))][
            ["output_id", "question_id", "answer"]]
        if len(human_answers):
            decided = human_answers[human_answers.answer.isin(("yes", "no"))]
            counts = decided.groupby(["output_id", "question_id"]).answer.value_counts(
            ).unstack(fill_value=0)
            for column in ("yes", "no"):
                if column not in counts:
                    counts[column] = 0
            majority = counts[counts.yes != counts.no]
            majority = pd.DataFrame({
                "output_id": majority.index.get_level_values(0),
                "question_id": majority.index.get_level_values(1),
                "answer": np.where(majority.yes > majority.no, "yes", "no")})
            votes = pd.concat([votes, majority], ignore_index=True)
        split = votes.groupby(["output_id", "question_id"]).answer.nunique() > 1
        parts.append(split.astype(float).groupby(level=0).max())
    if len(judge_scores):
        scores = judge_scores[["output_id", "criterion", "score"]]
        if len(human_scores):
            mean = human_scores.groupby(["output_id", "criterion"]).score.mean().reset_index()
            scores = pd.concat([scores, mean], ignore_index=True)
        spread = scores.groupby(["output_id", "criterion"]).score.agg(lambda s: s.max()
                                                                      - s.min())
        scale = pd.Series([ranges.get(c, 0.0) for c in spread.index.get_level_values(1)],
                          index=spread.index)
        spread = (spread / scale.where(scale > 0)).clip(0, 1).fillna(0.0)
        parts.append(spread.groupby(level=0).max())
    if not parts:
        return pd.Series(dtype=float)
    both = pd.concat(parts, axis=1).max(axis=1)
    return both.rename("disagreement")


_CACHE: dict[tuple[str, tuple[int, ...]], pd.Series] = {}
_LOCK = threading.Lock()


def output_disagreement(store: Store) -> pd.Series:
    """:func:`disagreement_scores` of the project's current answers, per output; kept
    until a judgment or an answer is added (the router asks at every item change)."""
    mark = items.answer_fingerprint(store)
    key = (str(store.path), mark)
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    judged = store.judgments_df()
    judged = judged[judged.parse_status == "ok"]
    human = store.annotations_df()
    criteria = store.criteria_df()
    ranges = {str(n): float(hi - lo) for n, lo, hi in zip(criteria.name, criteria["min"],
                                                          criteria["max"], strict=True)}
    scores = disagreement_scores(
        judged[judged.question_id.notna()], judged[judged.criterion.notna()],
        human[human.question_id.notna()], human[human.criterion.notna()], ranges)
    with _LOCK:
        _CACHE.clear()  # one project state per process is enough
        _CACHE[key] = scores
    return scores
