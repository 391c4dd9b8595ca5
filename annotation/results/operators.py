"""Checklist pass rates per operator, as TRACE-Bench scores them: ``operators.csv`` and the
paper's judge table, ``trace_table.csv``.

* A question **passes** when the scored answer equals its ``pass_answer`` (TRACE phrases
  some questions negatively, so a pass can be "no"); ``cant_tell`` is no decision. Answers
  are scored by the one rule of :mod:`annotation.results.decisions` (DSG gating: a child of a
  parent answered "no" fails whatever its own answer; outputs a judge never answered are
  left out, or failed with ``unanswered="fail"``).
* **Operator scores** (TRACE-Bench: "Decomposing and Diagnosing Multi-Reference Image
  Generation", Sec. 3.5): the questions of one operator instance (same ``operator`` and
  ``target``) give the instance's pass fraction; each instance weighs 1 in its operator's
  score on an output; the case score (operator ``all``) is the mean over every instance of
  the output.
* Human scores per output are the mean of each annotator's own scores; a judge's are its
  own; the ensemble ``ensemble (mean of VLM judges)`` averages the VLM judges' scores per
  output and operator where at least two scored it ("The ensemble averages the four VLM
  judges", TRACE-Bench Table 7).
* ``operators.csv``: per judge and operator, Pearson, Spearman (with cluster-bootstrap
  intervals over outputs, :func:`annotation.stats.correlation.correlations`) and MAE
  between judge and human scores over the outputs both scored.
* ``trace_table.csv`` (TRACE-Bench Table 7): per judge and the ensemble, Pearson,
  Spearman and MAE between the judge's and the humans' operator scores and Agreement on
  individual checklist decisions. The paper correlates operator scores, so the first unit
  pools (output, operator) pairs (``unit = "output x operator"``; intervals resample
  outputs, all of an output's operators together); the case score is offered as a second
  unit (``unit = "case"``). Beside them, the human baseline ``human (leave-one-out)``: each
  annotator's scores against the mean of the other annotators', and each annotator's
  decisions against the majority of the others.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import cast

import numpy as np
import pandas as pd

from annotation.results.checklist import (
    ENSEMBLE as MAJORITY_ENSEMBLE,
)
from annotation.results.checklist import (
    HUMAN_LOO,
    HUMAN_MAJORITY,
    LOO_MAJORITY,
    StudyDecisions,
    study_decisions,
)
from annotation.results.decisions import Unanswered, decisions
from annotation.results.study import StudyData
from annotation.stats.correlation import correlations, reported_plcc_interval
from annotation.stats.membership import isin, positions

ALL = "all"
ENSEMBLE = "ensemble (mean of VLM judges)"
COLUMNS = ["judge", "operator", "n_items", "pearson", "spearman", "mae",
           # added in the statistical-truth release (see docs/report.md)
           "pearson_lo", "pearson_hi", "spearman_lo", "spearman_hi", "n_unanswered",
           "n_boot", "note"]
TRACE_COLUMNS = ["judge", "unit", "n_items", "n_pairs", "pearson", "pearson_lo", "pearson_hi",
                 "spearman", "spearman_lo", "spearman_hi", "mae", "n_decisions", "agreement",
                 "agreement_lo", "agreement_hi", "agreement_wilson_lo", "agreement_wilson_hi",
                 "n_boot", "note"]
UNITS = ("output x operator", "case")


def passes(answers: pd.DataFrame, questions: pd.DataFrame, who: str) -> pd.DataFrame:
    """Per (who, output, question) with a decision: ``passed`` in {1.0, 0.0}, gated
    children included (:func:`annotation.results.decisions.decisions`)."""
    scored = decisions(answers, questions, who)
    scored = scored[scored.passed.notna()]
    return scored[[who, "output_id", "question_id", "passed"]].reset_index(drop=True)


def _lexicographic_key(codes: list[np.ndarray], sizes: list[int]) -> np.ndarray:
    """Per row one int64 key of the code columns ``codes`` (codes 0..size-1 of sorted
    uniques): it orders and groups the rows as a sorted groupby by those columns does. A
    prefix whose key could overflow is first renumbered densely (same order)."""
    key = codes[0].astype(np.int64)
    for column, size in zip(codes[1:], sizes[1:], strict=True):
        if (int(key.max(initial=0)) + 1) * max(size, 1) >= 2 ** 62:
            key = np.unique(key, return_inverse=True)[1].astype(np.int64)
        key = key * size + column
    return key


def _runs(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start of each run of equal keys, run number of each position) of sorted keys."""
    new = np.empty(len(sorted_keys), dtype=bool)
    new[:1] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=new[1:])
    return np.flatnonzero(new), np.cumsum(new) - 1


def group_means(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """``pd.Series(values).groupby(groups).mean()`` for dense group ids 0..n_groups-1, each
    present: the same floats. Whole numbers (0/1 pass decisions, and the means of
    one-question instances) are summed with ``np.bincount``: their sums are exact either
    way, and the mean is that sum over the count, as pandas divides. Anything else, or a
    missing value, goes to pandas (its compensated sum depends on the order)."""
    if (np.isfinite(values).all() and bool((values == np.round(values)).all())
            and float(np.abs(values).sum()) < 2.0 ** 52):
        return (np.bincount(groups, weights=values, minlength=n_groups)
                / np.bincount(groups, minlength=n_groups))
    return pd.Series(values).groupby(groups).mean().to_numpy()


def _distinct(column: pd.Series | pd.Index) -> tuple[np.ndarray, pd.Index]:
    """(a code per row, -1 missing; the values of the codes, in no particular order): a
    categorical's own codes and categories (nothing hashed), else ``pd.factorize``."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        values = cast(pd.Categorical, column.array)
        return np.asarray(values.codes), pd.Index(values.categories)
    codes, uniques = pd.factorize(column)
    return codes, pd.Index(uniques)


def _sorted_codes(*columns: pd.Series | pd.Index) -> tuple[list[np.ndarray], pd.Index]:
    """Integer codes of the values of ``columns`` (one code space, the sorted distinct
    values; -1 missing) and those values: codes compare and match as the values do, so
    index operations on them (intersection, order, a sorted groupby) give what they give
    on the values. Each column is factorized on its own and only the distinct values are
    sorted: a categorical costs no hashing, whatever the order of its categories (the
    values may then include unused categories). Codes are int32 where they fit."""
    coded = [_distinct(c) for c in columns]
    uniques = coded[0][1].append([u for _, u in coded[1:]])
    position, names = pd.factorize(uniques, sort=True)
    dtype = np.int32 if len(names) < 2 ** 31 - 1 else np.int64
    bounds = np.cumsum([0, *(len(u) for _, u in coded)])
    return [np.append(position[a:b], -1).astype(dtype)[codes]  # -1 (missing) stays -1
            for (codes, _), a, b in zip(coded, bounds[:-1], bounds[1:], strict=True)], names


@dataclass(frozen=True)
class _Instances:
    """The operator instance of each question (TRACE-Bench Sec. 3.5: one ``operator`` and
    ``target``): per question of ``ids`` (unique) the code of its operator among
    ``operators`` (sorted; a missing or empty one reads ``(none)``) and of its target
    (codes of the ``n_targets`` sorted targets; missing reads as empty)."""

    ids: pd.Index
    operator: np.ndarray
    target: np.ndarray
    operators: pd.Index
    n_targets: int

    @classmethod
    def of(cls, questions: pd.DataFrame) -> _Instances:
        q = questions.set_index("question_id")[["operator", "target"]].fillna("")
        if not q.index.is_unique:
            raise ValueError("operator_scores: question ids are not unique")
        q["operator"] = q["operator"].replace("", "(none)")
        op_codes, op_names = pd.factorize(q["operator"], sort=True)
        target_codes, targets = pd.factorize(q["target"], sort=True)
        return cls(q.index, op_codes.astype(np.int32), target_codes.astype(np.int32),
                   pd.Index(op_names), max(len(targets), 1))


@dataclass(frozen=True)
class _Scored:
    """One scorer's operator scores as codes: per (output, operator), sorted, the codes of
    the output and of the operator (among the instances' operators) and the score; per
    output (the case score, operator ``all``), sorted, likewise."""

    output: np.ndarray
    operator: np.ndarray
    score: np.ndarray
    case_output: np.ndarray
    case_score: np.ndarray


def _scorer_scores(output: np.ndarray, n_outputs: int, question: np.ndarray,
                   passed: np.ndarray, instances: _Instances) -> _Scored | None:
    """The operator scores of one scorer's decisions; None without any. Per row:
    ``output``, the code of its output id (codes 0..n_outputs-1 of the sorted ids; -1
    missing), ``question``, the position of its question in ``instances`` (-1: not
    there), and ``passed`` in {1.0, 0.0}.

    The same floats as the means of ``groupby([output_id, operator, target])`` of the
    decisions joined to their questions and of its levels, in the same order, grouped on
    integer codes instead of strings (:func:`group_means`). A decision on an unknown
    question, or without an output, is left out (as that groupby drops it)."""
    keep = (question >= 0) & (output >= 0)
    if not keep.any():
        return None
    question, output, values = question[keep], output[keep], passed[keep]
    del keep
    operator = instances.operator[question]
    key = _lexicographic_key([output, operator, instances.target[question]],
                             [n_outputs, len(instances.operators), instances.n_targets])
    del question
    order = np.argsort(key, kind="stable")
    start, run = _runs(key[order])
    del key
    instance = np.empty(len(order), dtype=np.intp)
    instance[order] = run
    first = order[start]  # each instance's first row, instances in sorted order
    del order, run, start
    means = group_means(values, instance, len(first))
    del instance, values
    output, operator = output[first], operator[first]  # per instance
    # the instances' means per (output, operator), then per output (sorted: the instances
    # are)
    begin, group = _runs(_lexicographic_key([output, operator],
                                            [n_outputs, len(instances.operators)]))
    scores = group_means(means, group, len(begin))
    case_begin, case_group = _runs(output)
    return _Scored(output[begin], operator[begin], scores, output[case_begin],
                   group_means(means, case_group, len(case_begin)))


@dataclass(frozen=True)
class _Coded:
    """Operator scores of several scorers as integer codes, one row each: ``who`` codes
    among ``whos``, ``output`` among ``outputs``, ``operator`` among ``operators`` (sorted
    values, operator ``all`` included), and ``score``."""

    who: np.ndarray
    output: np.ndarray
    operator: np.ndarray
    score: np.ndarray
    whos: pd.Index
    outputs: pd.Index
    operators: pd.Index

    @classmethod
    def of(cls, whos: list[object], parts: list[_Scored], outputs: pd.Index,
           operators: pd.Index) -> _Coded:
        """The rows of ``parts`` (the scores of ``whos``, in sorted order; output codes
        among ``outputs``, operator codes among ``operators``): every scorer's
        per-operator rows, then every scorer's case rows (the order of
        ``pd.concat([per_operator, case])`` of one groupby over all scorers)."""
        (operator_map, (case_code,)), names = _sorted_codes(operators, pd.Index([ALL]))
        sizes = [len(p.score) for p in parts] + [len(p.case_score) for p in parts]
        positions = np.arange(len(parts), dtype=np.int32)
        return cls(
            who=np.repeat(np.concatenate([positions, positions]), sizes),
            output=np.concatenate([p.output for p in parts] + [p.case_output for p in parts]),
            operator=np.concatenate(
                [operator_map[p.operator] for p in parts]
                + [np.full(len(p.case_score), case_code, dtype=operator_map.dtype)
                   for p in parts]),
            score=np.concatenate([p.score for p in parts] + [p.case_score for p in parts]),
            whos=pd.Index(whos), outputs=outputs, operators=names)

    def frame(self, who: str, *, categorical: bool) -> pd.DataFrame:
        """who, output_id, operator, score: categoricals, or the values themselves."""
        def column(codes: np.ndarray, values: pd.Index) -> object:
            return (pd.Categorical.from_codes(codes, categories=values) if categorical
                    else values.take(codes))

        return pd.DataFrame({who: column(self.who, self.whos),
                             "output_id": column(self.output, self.outputs),
                             "operator": column(self.operator, self.operators),
                             "score": self.score})


def _scores(passed: pd.DataFrame, instances: _Instances, who: str,
            names: list[object] | None = None,
            rows: np.ndarray | None = None) -> _Coded | None:
    """The operator scores of every ``who`` of ``passed`` (or of ``names`` only) from the
    rows where ``rows`` is true (default: all); None without any. The output and question
    ids of all rows are coded once (int32), then the scorers scored one at a time on
    their rows' codes (:func:`_scorer_scores`): no group spans two scorers, and a study's
    4.8M judge decisions (issue #18) are never copied whole, as strings (pyarrow takes
    rows of a chunked column by first joining its chunks) or as 8-byte codes."""
    values = passed["passed"].to_numpy(dtype=float)
    (output,), outputs = _sorted_codes(passed["output_id"])
    (question,), ids = _sorted_codes(passed["question_id"])
    question = np.append(positions(ids, instances.ids), -1).astype(np.int32)[question]
    if names is None:
        names = list(_sorted_codes(pd.Index(pd.unique(passed[who])))[1])
    whos, parts = [], []
    for name in names:
        mine = np.asarray(passed[who] == name)
        mine = mine if rows is None else mine & rows
        part = _scorer_scores(output[mine], len(outputs), question[mine], values[mine],
                              instances)
        if part is not None:
            whos.append(name)
            parts.append(part)
    return _Coded.of(whos, parts, outputs, instances.operators) if parts else None


def operator_scores(passed: pd.DataFrame, questions: pd.DataFrame, who: str) -> pd.DataFrame:
    """Per (who, output, operator) the TRACE operator score, plus operator ``all``: the
    frame of a groupby by who, output_id and operator, sorted, then of one by who and
    output_id (:func:`_scorer_scores`, once per who). Decisions on a question not in
    ``questions``, or without a ``who`` or output, are left out (as that groupby drops
    them)."""
    columns = [who, "output_id", "operator", "score"]
    if passed.empty:
        return pd.DataFrame(columns=columns)
    scores = _scores(passed, _Instances.of(questions), who)
    return pd.DataFrame(columns=columns) if scores is None else scores.frame(
        who, categorical=False)


@dataclass(frozen=True)
class OperatorScores:
    """The operator scores of one study, computed once for ``operators.csv``,
    ``trace_table.csv`` and ``trace_generators.csv`` (:func:`study_operator_scores`).

    ``humans``: annotator, output_id, operator, score; ``judges``: judge, output_id,
    operator, score for every judge and the mean ensemble (:data:`ENSEMBLE`), its three
    first columns categorical (sorted categories): it stays in memory while the report
    builds the tables between the first and the last of the three (issue #18), and as
    strings the 2.5M rows of a 100,000-output study take four times the room (135 MiB,
    not 35)."""

    humans: pd.DataFrame
    judges: pd.DataFrame

    @cached_property
    def human_mean(self) -> pd.Series:
        """Per (output_id, operator) the mean of the annotators' scores."""
        return self.humans.groupby(["output_id", "operator"]).score.mean()


def _with_ensemble(scores: _Coded, vlm: list[str]) -> _Coded:
    """``scores`` and the mean ensemble's rows after them: per (output, operator), sorted,
    the mean of the VLM judges' scores where at least two scored it ("The ensemble
    averages the four VLM judges", TRACE-Bench Table 7)."""
    mine = np.flatnonzero(scores.whos.isin(vlm)[scores.who])
    if len(vlm) < 2 or not len(mine):
        return scores
    n_ops = len(scores.operators)
    key = scores.output[mine].astype(np.int64) * n_ops + scores.operator[mine]
    grouped = pd.Series(scores.score[mine]).groupby(key).agg(["mean", "size"])
    grouped = grouped[grouped["size"] >= 2]
    key = grouped.index.to_numpy()
    (who_map, (ensemble,)), whos = _sorted_codes(scores.whos, pd.Index([ENSEMBLE]))
    return _Coded(
        who=np.concatenate([who_map[scores.who], np.full(len(key), ensemble)]).astype(np.int32),
        output=np.concatenate([scores.output, key // n_ops]).astype(np.int32),
        operator=np.concatenate([scores.operator, key % n_ops]).astype(np.int32),
        score=np.concatenate([scores.score, grouped["mean"].to_numpy()]),
        whos=whos, outputs=scores.outputs, operators=scores.operators)


def study_operator_scores(study: StudyData, decided: StudyDecisions | None = None, *,
                          unanswered: Unanswered = "omit") -> OperatorScores:
    """Per-annotator and per-judge operator scores (the mean ensemble included) by output
    and operator, from the gated decisions (``decided``, or scored here), one scorer at
    a time on integer codes of the columns of ``decided`` (whatever their dtype), which
    are neither copied nor filtered (:func:`_scores`; issue #18's 100,000-output study
    has 4.8M judge decisions)."""
    d = decided or study_decisions(study, unanswered)
    instances = _Instances.of(study.questions)
    human = d.human[["annotator", "output_id", "question_id", "passed"]]
    coded = _scores(human, instances, "annotator", rows=human.passed.notna().to_numpy())
    humans = coded.frame("annotator", categorical=False) if coded is not None else (
        pd.DataFrame(columns=["annotator", "output_id", "operator", "score"]))
    judged = d.judges[["judge", "output_id", "question_id", "passed"]]
    names = [n for n in _sorted_codes(pd.Index(pd.unique(judged.judge)))[1]
             if n != MAJORITY_ENSEMBLE]
    scores = _scores(judged, instances, "judge", names, judged.passed.notna().to_numpy())
    if scores is None:
        return OperatorScores(humans, pd.DataFrame(
            columns=["judge", "output_id", "operator", "score"]))
    vlm = [str(n) for n, k in zip(study.judges.name, study.judges.kind, strict=True)
           if k == "vlm"]
    return OperatorScores(humans, _with_ensemble(scores, vlm).frame("judge", categorical=True))


def _judge_order(names: Iterable[object]) -> list[str]:
    """The distinct judges of ``names`` sorted by name, the mean ensemble last."""
    return sorted({str(n) for n in names}, key=lambda j: (j == ENSEMBLE, j))


def _groups(keys: list[np.ndarray], sizes: list[int]) -> list[np.ndarray]:
    """The row numbers of each group of a sorted ``groupby`` by the code columns
    ``keys`` (codes of sorted values, -1 missing: left out, as groupby drops them), groups
    in its order and rows in frame order."""
    rows = np.flatnonzero(np.logical_and.reduce([k >= 0 for k in keys]))
    key = _lexicographic_key([k[rows] for k in keys], sizes)
    order = np.argsort(key, kind="stable")
    start, _ = _runs(key[order])
    return np.split(rows[order], start[1:]) if len(rows) else []


def _on_outputs(judges: pd.DataFrame, outputs: pd.Index) -> pd.DataFrame:
    """The rows of ``judges`` on one of ``outputs``, in order: the only rows a comparison
    with the humans' scores reads (the judges of issue #18's study score 100,000 outputs,
    its annotators 600)."""
    codes, values = _distinct(judges.output_id)
    return judges.iloc[np.flatnonzero(np.append(isin(values, outputs), False)[codes])]


def _present(column: pd.Series) -> pd.Index:
    """The distinct values of ``column`` (missing left out), found on its codes (a
    categorical's, sorted as small ints: ``pd.unique`` hashes them in 8-byte ints)."""
    codes, values = _distinct(column)
    present = np.unique(codes)
    return values.take(present[present >= 0])


def _pairs(judges: pd.DataFrame) -> list[tuple[object, object]]:
    """The (judge, operator) pairs of ``judges``, sorted (missing values left out): the
    groups of a groupby by the two, found one judge at a time on integer codes."""
    judge, judge_names = _distinct(judges.judge)
    operator, operator_names = _distinct(judges.operator)
    pairs = []
    for code, name in enumerate(judge_names):
        present = np.unique(operator[judge == code])
        pairs += [(name, operator_names[k]) for k in present[present >= 0]]
    return sorted(pairs)


def operators_table(study: StudyData, *, n_boot: int = 1000, seed: int = 0,
                    unanswered: Unanswered = "omit",
                    decided: StudyDecisions | None = None,
                    scores: OperatorScores | None = None) -> pd.DataFrame:
    """``operators.csv``: per judge and operator (see the module docstring). ``scores``:
    the study's :func:`study_operator_scores`, computed here when not given."""
    shared = scores or study_operator_scores(study, decided, unanswered=unanswered)
    human_mean = shared.human_mean
    human_outputs = human_mean.index.get_level_values("output_id")
    judges = _on_outputs(shared.judges, human_outputs)
    # output ids as sorted integer codes: aligning on them is aligning on the ids
    (judge_items, human_items), items = _sorted_codes(judges.output_id, human_outputs)
    human_ops = human_mean.index.get_level_values("operator")
    human_values = human_mean.to_numpy()
    refs = {}  # per operator: the human mean by output code, in human_mean's order
    for op in pd.unique(human_ops):
        mask = np.asarray(human_ops == op)
        refs[op] = pd.Series(human_values[mask], index=pd.Index(human_items[mask]))
    (judge_codes,), judge_names = _sorted_codes(judges.judge)
    (op_codes,), op_names = _sorted_codes(judges.operator)
    values = judges.score.to_numpy()
    groups = {(judge_names[judge_codes[g[0]]], op_names[op_codes[g[0]]]): g
              for g in _groups([judge_codes, op_codes], [len(judge_names), len(op_names)])}
    rows = []
    # every (judge, operator) of the scores, also one without an output the humans scored
    for judge, operator in _pairs(shared.judges):
        ref = refs.get(operator)
        if ref is None:
            continue
        group = groups.get((judge, operator), np.empty(0, dtype=np.intp))
        mine = pd.Series(values[group], index=pd.Index(judge_items[group]))
        common = mine.index.intersection(ref.index)
        x, y = mine.loc[common].to_numpy(float), ref.loc[common].to_numpy(float)
        stats = correlations(x, y, items=items.take(common).to_numpy(), n_boot=n_boot,
                             seed=seed).iloc[0]
        rows.append({
            "judge": judge, "operator": operator, "n_items": len(common),
            "pearson": stats.plcc, "spearman": stats.srcc,
            "mae": float(np.mean(np.abs(x - y))) if len(common) else np.nan,
            "pearson_lo": stats.plcc_boot_lo, "pearson_hi": stats.plcc_boot_hi,
            "spearman_lo": stats.srcc_lo, "spearman_hi": stats.srcc_hi,
            "n_unanswered": len(ref.index.difference(mine.index)),
            "n_boot": int(stats.n_boot), "note": stats.note,
        })
    table = pd.DataFrame(rows, columns=COLUMNS)
    order = {j: i for i, j in enumerate(_judge_order(table.judge))}
    return table.sort_values(["judge", "operator"], key=lambda c: c.map(order)
                             if c.name == "judge" else c, kind="stable").reset_index(drop=True)


def _units(scores: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {UNITS[0]: scores[scores.operator != ALL], UNITS[1]: scores[scores.operator == ALL]}


def _trace_row(judge: str, unit: str, x: pd.Series, y: pd.Series, outputs: np.ndarray, *,
               n_boot: int, seed: int) -> dict[str, object]:
    stats = correlations(x.to_numpy(float), y.to_numpy(float), items=outputs, n_boot=n_boot,
                         seed=seed).iloc[0]
    lo, hi, _ = reported_plcc_interval(stats)
    return {"judge": judge, "unit": unit, "n_items": int(stats.n_items), "n_pairs": int(stats.n),
            "pearson": stats.plcc, "pearson_lo": lo, "pearson_hi": hi,
            "spearman": stats.srcc, "spearman_lo": stats.srcc_lo,
            "spearman_hi": stats.srcc_hi, "mae": stats.mae, "n_boot": int(stats.n_boot),
            "note": stats.note}


def trace_table(study: StudyData, checklist: pd.DataFrame, *, n_boot: int = 1000,
                seed: int = 0, unanswered: Unanswered = "omit",
                decided: StudyDecisions | None = None,
                scores: OperatorScores | None = None) -> pd.DataFrame:
    """``trace_table.csv``: TRACE-Bench Table 7 (see the module docstring).

    ``checklist``: the ``checklist.csv`` table of the same study, whose ``human
    majority`` rows (group ``all``) give the judges' Agreement and whose ``leave-one-out
    majority`` row of the human baseline gives the humans'. The mean ensemble's Agreement
    is that of the majority of the VLM judges' decisions (ties left out), said in
    ``note``. ``scores``: the study's :func:`study_operator_scores`, computed here when
    not given.
    """
    shared = scores or study_operator_scores(study, decided, unanswered=unanswered)
    humans, human_mean = shared.humans, shared.human_mean
    human_outputs = human_mean.index.get_level_values("output_id")
    judge_order = _judge_order(_present(shared.judges.judge))
    judges = _on_outputs(shared.judges, human_outputs)
    rows: list[dict[str, object]] = []
    # (output, operator) pairs as one sorted integer code: aligning on it is aligning on
    # the pairs
    (judge_out, human_out), outputs = _sorted_codes(judges.output_id, human_outputs)
    (judge_op, human_op), operators = _sorted_codes(
        judges.operator, human_mean.index.get_level_values("operator"))
    n_ops = max(len(operators), 1)
    judge_keys = judge_out.astype(np.int64) * n_ops + judge_op
    reference = pd.Series(human_mean.to_numpy(),
                          index=pd.Index(human_out.astype(np.int64) * n_ops + human_op))
    values = judges.score.to_numpy()
    is_case = np.asarray(judges.operator == ALL)
    for judge in judge_order:
        mine = np.flatnonzero(np.asarray(judges.judge == judge))
        for unit, part in zip(UNITS, (mine[~is_case[mine]], mine[is_case[mine]]),
                              strict=True):
            x = pd.Series(values[part], index=pd.Index(judge_keys[part]))
            common = x.index.intersection(reference.index)
            rows.append(_trace_row(judge, unit, x.loc[common], reference.loc[common],
                                   outputs.take(common.to_numpy() // n_ops).to_numpy(),
                                   n_boot=n_boot, seed=seed))
    # the human baseline: each annotator against the mean of the others
    total = humans.groupby(["output_id", "operator"]).score.agg(["sum", "count"])
    loo = humans.join(total, on=["output_id", "operator"])
    loo = loo[loo["count"] >= 2]
    loo = loo.assign(others=(loo["sum"] - loo.score) / (loo["count"] - 1))
    for unit, part in _units(loo).items():
        if len(part):
            rows.append(_trace_row(HUMAN_LOO, unit, part.score, part.others,
                                   part.output_id.to_numpy(), n_boot=n_boot, seed=seed))
    table = pd.DataFrame(rows, columns=TRACE_COLUMNS)
    agree = checklist[(checklist.group == "all") & (
        ((checklist.reference == HUMAN_MAJORITY) & (checklist.judge != HUMAN_LOO))
        | ((checklist.judge == HUMAN_LOO) & (checklist.reference == LOO_MAJORITY)
           & (checklist.paired_judge.fillna("") == "")))]
    agree = agree.set_index(agree.judge.replace(MAJORITY_ENSEMBLE, ENSEMBLE))
    for column in ("n_decisions", "agreement", "agreement_lo", "agreement_hi",
                   "agreement_wilson_lo", "agreement_wilson_hi"):
        table[column] = table.judge.map(agree[column]) if column in agree else np.nan
    is_ensemble = table.judge == ENSEMBLE
    table.loc[is_ensemble, "note"] = [
        "; ".join(p for p in (n, "agreement: majority of the VLM judges' decisions") if p)
        for n in table.loc[is_ensemble, "note"].fillna("")]
    table["n_decisions"] = table["n_decisions"].astype("Int64")
    return table


# ----------------------------------------------------------------------------- Table 2
#: Table 2's operator columns, in the paper's order and spelling
TABLE2_COLUMNS = {"f": "Anchor (f)", "g": "Disentangle (g)", "⊕": "Apply (⊕)",
                  "C": "Compose (C)"}
TABLE2_AVG = "Avg."
HUMAN_MEAN_SCORER = "human mean"


def _slot(formula: object) -> float:
    """The slot count (Eq. 2) of a task's formula; NaN without a parseable one."""
    from annotation.trace.formula import FormulaError, parse, slot_count

    if not isinstance(formula, str) or not formula.strip():
        return np.nan
    try:
        return float(slot_count(parse(formula)))
    except FormulaError:
        return np.nan


def _slots(formula: pd.Series) -> pd.Series:
    """:func:`_slot` of every formula of ``formula`` (same index), each distinct formula
    parsed once."""
    codes, distinct = pd.factorize(formula)  # missing: -1
    slots = np.array([*(_slot(f) for f in distinct), np.nan], dtype=float)
    return pd.Series(slots[codes], index=formula.index)


def compensated_means(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group id 0..n_groups-1 (each present) the mean of its ``values``, summed in row
    order with Kahan compensation: pandas' compiled groupby mean. pandas 3.1 computes it
    only when the group ids are not sorted (on sorted ids it adds with
    ``np.add.reduceat``, without compensation), so one row of a group of its own leads:
    ``trace_generators.csv`` averaged the rows of all scorers at once, whose ids are not
    sorted, and one scorer's rows (:func:`_generator_cells`) can be."""
    lead = np.concatenate([[n_groups], groups])
    return pd.Series(np.concatenate([[0.0], values])).groupby(lead).mean().to_numpy()[:n_groups]


def _generator_cells(output: np.ndarray, column: np.ndarray, score: np.ndarray,
                     generator: np.ndarray, slot: np.ndarray) -> pd.DataFrame | None:
    """One scorer's cells of ``trace_generators.csv`` (see :func:`generator_table`) by
    generator code: columns 0-3 (the operators of :data:`TABLE2_COLUMNS`) and 4 (Avg.),
    then n_outputs and n_slots; None without any. Per row of the scorer's scores (in the
    order of the scores): the ``output`` code, the ``column`` (-1: another operator) and
    the ``score``; per output code its ``generator`` code (-1: none) and ``slot`` level.
    The means of the table over the rows of all scorers, one scorer at a time: every
    group is one scorer's, and the rows of a group come in the same order."""
    keep = column >= 0
    output, column, score = output[keep], column[keep], score[keep]
    # Avg.: per output the mean of its operator scores, as rows after the scores
    outputs, inverse = np.unique(output, return_inverse=True)
    output = np.concatenate([output, outputs])
    column = np.concatenate([column, np.full(len(outputs), len(TABLE2_COLUMNS))])
    score = np.concatenate([score, compensated_means(score, inverse, len(outputs))])
    keep = generator[output] >= 0
    output, column, score = output[keep], column[keep], score[keep]
    if not len(output):
        return None
    gen = generator[output]
    slots, slot_codes = np.unique(slot[output], return_inverse=True)
    # per (generator, column, slot level), sorted, the mean of its rows; then per
    # (generator, column) the mean of its slot levels
    n_columns = len(TABLE2_COLUMNS) + 1
    per_slot, groups = np.unique((gen.astype(np.int64) * n_columns + column) * len(slots)
                                 + slot_codes, return_inverse=True)
    means = compensated_means(score, groups, len(per_slot))
    cells = pd.Series(means).groupby(per_slot // len(slots)).mean()
    table = pd.DataFrame({"generator": cells.index // n_columns,
                          "column": cells.index % n_columns, "score": cells.to_numpy()}).pivot(
        index="generator", columns="column", values="score").reindex(columns=range(n_columns))
    averaged = column == len(TABLE2_COLUMNS)
    counts = pd.DataFrame({"generator": gen[averaged], "output": output[averaged],
                           "slot": slot_codes[averaged]}).groupby("generator").agg(
        n_outputs=("output", "nunique"), n_slots=("slot", "nunique"))
    return table.join(counts)


def _scorer_cells(output_id: pd.Series | pd.Index, operator: pd.Series | pd.Index,
                  score: np.ndarray, outputs: pd.Index, generator: np.ndarray,
                  slot: np.ndarray) -> pd.DataFrame | None:
    """:func:`_generator_cells` of one scorer's scores (``output_id``, ``operator``,
    ``score``), ``generator`` (codes) and ``slot`` given per study output of
    ``outputs``: sorted codes of the scorer's own output ids, so that the table's rows
    come in the order of the ids."""
    (output,), ids = _sorted_codes(output_id)
    at = np.append(positions(ids, outputs), -1)  # -1: not a study output, or missing
    (op,), ops = _sorted_codes(operator)
    column = np.append(pd.Index(list(TABLE2_COLUMNS)).get_indexer(ops), -1)[op]
    return _generator_cells(output, column, score, np.append(generator, -1)[at],
                            np.append(slot, -1.0)[at])


def generator_table(study: StudyData, *, unanswered: Unanswered = "omit",
                    decided: StudyDecisions | None = None,
                    scores: OperatorScores | None = None) -> pd.DataFrame:
    """``trace_generators.csv``: operator scores per generator in the layout of TRACE-Bench
    Table 2 ("Overall results on TRACE-Bench averaged over slots 1-8"), for each judge, the
    mean ensemble and the humans (``human mean``: per output the mean of the annotators'
    scores).

    Rows: scorer x generator. Columns: ``Anchor (f)``, ``Disentangle (g)``, ``Apply (⊕)``,
    ``Compose (C)`` and ``Avg.``, then n_outputs and n_slots. A cell is the operator score
    (module docstring) averaged over the outputs of each slot level (Eq. 2, from the task's
    ``meta.formula``; outputs without one form one level of their own), then over the slot
    levels, as the paper averages over slots 1-8. ``Avg.`` is, per output, the mean of the
    operator scores the output has, averaged the same way: the paper's Avg. is not the mean
    of its four columns (GPT-Image-1.5: 0.8118 against 0.7835), so it is read as the mean
    over each case's own operators (a case without ``g`` does not count a ``g`` score).
    The paper's CLIP Sim column is not computed. ``scores``: the study's
    :func:`study_operator_scores`, computed here when not given. Every cell is one
    scorer's, so the scorers are averaged one at a time on integer codes
    (:func:`_generator_cells`; issue #18's peak memory).
    """
    shared = scores or study_operator_scores(study, decided, unanswered=unanswered)
    judges, human_mean = shared.judges, shared.human_mean
    columns = ["scorer", "generator", *TABLE2_COLUMNS.values(), TABLE2_AVG, "n_outputs",
               "n_slots"]
    outputs = study.outputs.set_index("output_id")
    formula = outputs["meta.formula"] if "meta.formula" in outputs else pd.Series(
        np.nan, index=outputs.index)
    (generator,), generators = _sorted_codes(outputs["generator"])
    slot = _slots(formula).fillna(-1.0).to_numpy()
    parts = {}
    for judge in _judge_order(_present(judges.judge)):
        mine = judges.iloc[np.flatnonzero(np.asarray(judges.judge == judge))]
        parts[judge] = _scorer_cells(mine.output_id, mine.operator,
                                     mine.score.to_numpy(dtype=float), outputs.index,
                                     generator, slot)
    human = human_mean.index
    parts[HUMAN_MEAN_SCORER] = _scorer_cells(
        human.get_level_values("output_id"), human.get_level_values("operator"),
        human_mean.to_numpy(dtype=float), outputs.index, generator, slot)
    frames = []
    for scorer, cells in parts.items():
        if cells is None:
            continue
        cells = cells.rename(columns=dict(enumerate([*TABLE2_COLUMNS.values(), TABLE2_AVG])))
        cells.insert(0, "generator", generators.take(cells.index.to_numpy()))
        cells.insert(0, "scorer", pd.Series(scorer, index=cells.index, dtype=str))
        frames.append(cells)
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames).reindex(columns=columns).reset_index(drop=True)
