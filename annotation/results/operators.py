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

from dataclasses import dataclass
from functools import cached_property

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


def _lexicographic_keys(codes: list[np.ndarray], sizes: list[int]) -> list[np.ndarray]:
    """Per row, one int64 key per prefix of ``codes`` (codes 0..size-1 of sorted uniques):
    key ``k`` orders and groups the rows as a sorted groupby by the first ``k + 1`` columns
    does. A prefix whose key could overflow is first renumbered densely (same order)."""
    key = codes[0].astype(np.int64)
    keys = [key]
    for column, size in zip(codes[1:], sizes[1:], strict=True):
        if (int(key.max(initial=0)) + 1) * max(size, 1) >= 2 ** 62:
            key = np.unique(key, return_inverse=True)[1].astype(np.int64)
        key = key * size + column
        keys.append(key)
    return keys


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


def operator_scores(passed: pd.DataFrame, questions: pd.DataFrame, who: str) -> pd.DataFrame:
    """Per (who, output, operator) the TRACE operator score, plus operator ``all``.

    The same floats as the means of ``groupby([who, output_id, operator, target])`` of the
    decisions joined to their questions and of its levels, in the same order, grouped on
    integer codes instead of strings (:func:`group_means`). Decisions on a question not in
    ``questions``, or without a ``who`` or output, are left out (as that groupby drops
    them)."""
    columns = [who, "output_id", "operator", "score"]
    if passed.empty:
        return pd.DataFrame(columns=columns)
    q = questions.set_index("question_id")[["operator", "target"]].fillna("")
    if not q.index.is_unique:
        raise ValueError("operator_scores: question ids are not unique")
    q["operator"] = q["operator"].replace("", "(none)")
    op_codes, op_names = pd.factorize(q["operator"], sort=True)
    target_codes, _ = pd.factorize(q["target"], sort=True)
    q_codes, q_ids = pd.factorize(passed["question_id"])
    position = q.index.get_indexer(q_ids)  # per distinct question id; -1: unknown
    row_q = np.where(q_codes >= 0, position[q_codes], -1)
    who_codes, who_names = pd.factorize(passed[who], sort=True)
    out_codes, out_names = pd.factorize(passed["output_id"], sort=True)
    keep = (row_q >= 0) & (who_codes >= 0) & (out_codes >= 0)
    if not keep.any():
        return pd.DataFrame(columns=columns)
    row_q = row_q[keep]
    row_who, row_out = who_codes[keep], out_codes[keep]
    row_op, row_target = op_codes[row_q], target_codes[row_q]
    values = passed["passed"].to_numpy(dtype=float)[keep]
    by_case, by_operator, by_instance = _lexicographic_keys(
        [row_who, row_out, row_op, row_target],
        [len(who_names), len(out_names), len(op_names), int(target_codes.max()) + 1])[1:]
    order = np.argsort(by_instance, kind="stable")
    start, run = _runs(by_instance[order])
    instance = np.empty(len(order), dtype=np.intp)
    instance[order] = run
    first = order[start]  # each instance's first row, instances in sorted order
    means = group_means(values, instance, len(first))

    def level(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(a row of each group, the mean of its instances' means)."""
        begin, group = _runs(keys[first])  # sorted: the instances are
        return first[begin], group_means(means, group, len(begin))

    rows, scores = level(by_operator)
    per_operator = pd.DataFrame({who: who_names.take(row_who[rows]),
                                 "output_id": out_names.take(row_out[rows]),
                                 "operator": op_names.take(row_op[rows]), "score": scores})
    rows, scores = level(by_case)
    case = pd.DataFrame({who: who_names.take(row_who[rows]),
                         "output_id": out_names.take(row_out[rows]), "score": scores})
    case["operator"] = ALL
    return pd.concat([per_operator, case[columns]], ignore_index=True)


@dataclass(frozen=True)
class OperatorScores:
    """The operator scores of one study, computed once for ``operators.csv``,
    ``trace_table.csv`` and ``trace_generators.csv`` (:func:`study_operator_scores`).

    ``humans``: annotator, output_id, operator, score; ``judges``: judge, output_id,
    operator, score for every judge and the mean ensemble (:data:`ENSEMBLE`)."""

    humans: pd.DataFrame
    judges: pd.DataFrame

    @cached_property
    def human_mean(self) -> pd.Series:
        """Per (output_id, operator) the mean of the annotators' scores."""
        return self.humans.groupby(["output_id", "operator"]).score.mean()


def study_operator_scores(study: StudyData, decided: StudyDecisions | None = None, *,
                          unanswered: Unanswered = "omit") -> OperatorScores:
    """Per-annotator and per-judge operator scores (the mean ensemble included) by output
    and operator, from the gated decisions (``decided``, or scored here)."""
    d = decided or study_decisions(study, unanswered)
    human = d.human[["annotator", "output_id", "question_id", "passed"]]
    humans = operator_scores(human[human.passed.notna()], study.questions, "annotator")
    judged = d.judges[["judge", "output_id", "question_id", "passed"]]
    judges = operator_scores(judged[(judged.judge != MAJORITY_ENSEMBLE)
                                    & judged.passed.notna()], study.questions, "judge")
    vlm = [str(n) for n, k in zip(study.judges.name, study.judges.kind, strict=True)
           if k == "vlm"]
    mine = judges[judges.judge.isin(vlm)]
    if len(vlm) >= 2 and not mine.empty:
        grouped = mine.groupby(["output_id", "operator"]).score.agg(["mean", "size"])
        grouped = grouped[grouped["size"] >= 2].reset_index()
        ensemble = pd.DataFrame({"judge": ENSEMBLE, "output_id": grouped.output_id,
                                 "operator": grouped.operator, "score": grouped["mean"]})
        judges = pd.concat([judges, ensemble], ignore_index=True)
    return OperatorScores(humans, judges)


def _judge_order(names: pd.Series) -> list[str]:
    return sorted({str(n) for n in pd.unique(names)}, key=lambda j: (j == ENSEMBLE, j))


def _sorted_codes(*columns: pd.Series | pd.Index) -> tuple[list[np.ndarray], pd.Index]:
    """Integer codes of the values of ``columns`` (one code space, the sorted distinct
    values; -1 missing) and those values: codes compare and match as the values do, so
    index operations on them (intersection, order) give what they give on the values."""
    values = pd.Index(columns[0]).append([pd.Index(c) for c in columns[1:]])
    codes, names = pd.factorize(values, sort=True)
    bounds = np.cumsum([0, *(len(c) for c in columns)])
    return [codes[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)], names


def _groups(keys: list[np.ndarray], sizes: list[int]) -> list[np.ndarray]:
    """The row numbers of each group of a sorted ``groupby`` by the code columns
    ``keys`` (codes of sorted values, -1 missing: left out, as groupby drops them), groups
    in its order and rows in frame order."""
    rows = np.flatnonzero(np.logical_and.reduce([k >= 0 for k in keys]))
    key = _lexicographic_keys([k[rows] for k in keys], sizes)[-1]
    order = np.argsort(key, kind="stable")
    start, _ = _runs(key[order])
    return np.split(rows[order], start[1:]) if len(rows) else []


def operators_table(study: StudyData, *, n_boot: int = 1000, seed: int = 0,
                    unanswered: Unanswered = "omit",
                    decided: StudyDecisions | None = None,
                    scores: OperatorScores | None = None) -> pd.DataFrame:
    """``operators.csv``: per judge and operator (see the module docstring). ``scores``:
    the study's :func:`study_operator_scores`, computed here when not given."""
    shared = scores or study_operator_scores(study, decided, unanswered=unanswered)
    judges, human_mean = shared.judges, shared.human_mean
    # output ids as sorted integer codes: aligning on them is aligning on the ids
    (judge_items, human_items), items = _sorted_codes(
        judges.output_id, human_mean.index.get_level_values("output_id"))
    human_ops = human_mean.index.get_level_values("operator")
    human_values = human_mean.to_numpy()
    refs = {}  # per operator: the human mean by output code, in human_mean's order
    for op in pd.unique(human_ops):
        mask = np.asarray(human_ops == op)
        refs[op] = pd.Series(human_values[mask], index=pd.Index(human_items[mask]))
    judge_codes, judge_names = pd.factorize(judges.judge, sort=True)
    op_codes, op_names = pd.factorize(judges.operator, sort=True)
    values = judges.score.to_numpy()
    rows = []
    for group in _groups([judge_codes, op_codes], [len(judge_names), len(op_names)]):
        judge, operator = judge_names[judge_codes[group[0]]], op_names[op_codes[group[0]]]
        mine = pd.Series(values[group], index=pd.Index(judge_items[group]))
        ref = refs.get(operator)
        if ref is None:
            continue
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
    humans, judges, human_mean = shared.humans, shared.judges, shared.human_mean
    rows: list[dict[str, object]] = []
    # (output, operator) pairs as one sorted integer code: aligning on it is aligning on
    # the pairs
    (judge_out, human_out), outputs = _sorted_codes(
        judges.output_id, human_mean.index.get_level_values("output_id"))
    (judge_op, human_op), operators = _sorted_codes(
        judges.operator, human_mean.index.get_level_values("operator"))
    n_ops = max(len(operators), 1)
    judge_keys = judge_out.astype(np.int64) * n_ops + judge_op
    reference = pd.Series(human_mean.to_numpy(),
                          index=pd.Index(human_out.astype(np.int64) * n_ops + human_op))
    values = judges.score.to_numpy()
    is_case = np.asarray(judges.operator == ALL)
    for judge in _judge_order(judges.judge):
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
    :func:`study_operator_scores`, computed here when not given.
    """
    shared = scores or study_operator_scores(study, decided, unanswered=unanswered)
    judges = shared.judges
    human = shared.human_mean.reset_index()
    human.insert(0, "scorer", HUMAN_MEAN_SCORER)
    frames = [judges.rename(columns={"judge": "scorer"}), human]
    long = pd.concat([f for f in frames if not f.empty], ignore_index=True) if any(
        not f.empty for f in frames) else pd.DataFrame(
        columns=["scorer", "output_id", "operator", "score"])
    long = long[long.operator.isin(list(TABLE2_COLUMNS))]
    columns = ["scorer", "generator", *TABLE2_COLUMNS.values(), TABLE2_AVG, "n_outputs",
               "n_slots"]
    if long.empty:
        return pd.DataFrame(columns=columns)
    outputs = study.outputs.set_index("output_id")
    formula = outputs["meta.formula"] if "meta.formula" in outputs else pd.Series(
        np.nan, index=outputs.index)
    avg = long.groupby(["scorer", "output_id"]).score.mean().reset_index()
    avg["operator"] = TABLE2_AVG
    long = pd.concat([long, avg[long.columns]], ignore_index=True)
    long["generator"] = long.output_id.map(outputs["generator"])
    long["slot"] = long.output_id.map(_slots(formula)).fillna(-1.0)
    per_slot = long.groupby(["scorer", "generator", "operator", "slot"]).score.mean()
    cells = per_slot.groupby(level=[0, 1, 2]).mean().unstack("operator")
    cells = cells.rename(columns=TABLE2_COLUMNS).reindex(
        columns=[*TABLE2_COLUMNS.values(), TABLE2_AVG])
    counts = long[long.operator == TABLE2_AVG].groupby(["scorer", "generator"]).agg(
        n_outputs=("output_id", "nunique"), n_slots=("slot", "nunique"))
    table = cells.join(counts).reset_index()
    order = {s: i for i, s in enumerate([*_judge_order(judges.judge), HUMAN_MEAN_SCORER])}
    table = table.sort_values(["scorer", "generator"], key=lambda c: c.map(order)
                              if c.name == "scorer" else c, kind="stable")
    return table.reindex(columns=columns).reset_index(drop=True)
