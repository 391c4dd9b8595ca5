"""Judges against humans on checklist questions: ``checklist.csv``, ``leniency.csv`` and
``checklist_comparisons.csv``.

A decision is one (output, question), scored by the one rule of
:mod:`annotation.results.decisions`: DSG gating (a child of a parent answered "no" is failed,
whatever its own answer) for judges and humans alike, ``cant_tell`` as no decision, and
outputs a judge never answered left out (counted in ``n_unanswered``) or, with
``unanswered="fail"``, scored as failed. For every judge (and the majority of the VLM
judges, ``ensemble (majority of VLM judges)``) the judge's decisions are compared
(:func:`annotation.stats.clustered.clustered_agreement`) against:

* ``human majority``: the strict majority of the annotators' decisions (ties and
  ``cant_tell`` give no reference; pooled over decisions, as TRACE-Bench's Agreement);
* ``human majority (adjudicated)`` (only when an adjudicator decided a disputed decision,
  :mod:`annotation.work.adjudication`): the human majority with every adjudicated decision
  in its place (a tie gets the decision; with the setting ``disagreements`` a decided
  split too); added rows, the ``human majority`` rows stay as they were. Agreement among
  the annotators (``reliability.csv``, ``annotators.csv``, the leave-one-out rows) is
  always on their raw answers;
* ``leave-one-out majority``: for every annotator and decision, the majority of the
  *other* annotators; the judge is compared with exactly the references the human
  baseline ``human (leave-one-out)`` (each annotator against the others' majority) is
  compared with, on the same pairs: the like-for-like baseline;
* each annotator: ``annotator:<name>`` (the pairwise view);
* ``human Dawid-Skene``: the annotators' label per decision from the Dawid-Skene model
  (:mod:`annotation.results.aggregation`), which weighs each annotator by an estimated
  confusion matrix; ties of votes can get a label (rows added at the end of the judge's
  references, with two or more annotators);
* ``expected answer``: the question's pass answer (TIIF-Bench's expected answers: then
  agreement is the judge's accuracy against them);
* every other judge: ``judge:<name>`` (judge-judge agreement, e.g. GPT-4o vs QwenVL).

**Intervals resample outputs**: a checklist asks many questions of one output, and their
answers are correlated, so every interval (``agreement_lo``/``hi``, ``kappa_lo``/``hi``,
``ac1_lo``/``hi``, ``balanced_accuracy_lo``/``hi``) is a percentile cluster bootstrap
over outputs, all questions of a drawn output together; the Wilson interval over
decisions (which assumes independent decisions) is kept as ``agreement_wilson_lo``/
``hi``.

**Baselines on the judge's own decisions.** A human baseline row (``human
(leave-one-out)``) with ``paired_judge`` empty uses every decision the humans made; when a
judge decided only some of them, a baseline row with ``paired_judge = <judge>`` repeats it
on exactly that judge's decisions, so the two rows that stand side by side count the
same outputs.

``group`` is ``all`` or ``<by>=<value>`` for a column of the outputs (e.g. ``generator``).
``agreement`` pools decisions; ``agreement_per_item`` is the mean over outputs of each
output's share of agreeing decisions (``n_items`` outputs), the other denominator in use.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from annotation.results.aggregation import DAWID_SKENE, checklist_fit, dawid_skene_labels
from annotation.results.decisions import Unanswered, human_decisions, judge_decisions
from annotation.results.progress import JudgeProgress, each_judge
from annotation.results.study import GroupBy, StudyData, group_values, output_groups
from annotation.stats.clustered import clustered_mcnemar, coded_agreement, read_labels
from annotation.stats.comparison import adjust_pvalues
from annotation.stats.dawid_skene import DawidSkeneFit
from annotation.stats.membership import positions, take

ENSEMBLE = "ensemble (majority of VLM judges)"
HUMAN_LOO = "human (leave-one-out)"
HUMAN_MAJORITY = "human majority"
#: the human majority with the adjudicators' decisions in place (issue #16): added rows
HUMAN_MAJORITY_ADJUDICATED = "human majority (adjudicated)"
LOO_MAJORITY = "leave-one-out majority"
EXPECTED = "expected answer"
COLUMNS = ["judge", "group", "reference", "n_decisions", "agreement", "agreement_lo",
           "agreement_hi", "kappa", "ac1", "yes_recall", "no_recall", "judge_yes_human_no",
           "judge_no_human_yes", "prevalence_yes", "n_items", "agreement_per_item",
           # added in the statistical-truth release (see docs/report.md)
           "paired_judge", "agreement_wilson_lo", "agreement_wilson_hi", "kappa_lo",
           "kappa_hi", "ac1_lo", "ac1_hi", "pabak", "p_pos", "p_neg", "both_yes", "both_no",
           "judge_yes_rate", "balanced_accuracy", "balanced_accuracy_lo",
           "balanced_accuracy_hi", "n_gated", "n_unanswered", "n_boot", "note"]
COUNTS = ["n_decisions", "judge_yes_human_no", "judge_no_human_yes", "n_items", "both_yes",
          "both_no", "n_gated", "n_unanswered", "n_boot"]
SEP = "\x1f"


@dataclass(frozen=True)
class StudyDecisions:
    """The decisions of one study, computed once for every checklist table.

    ``human``: annotator, output_id, question_id, answer, ... (:func:`human_decisions`);
    ``judges``: judge, output_id, question_id, answer, passed, gated, imputed, key for every
    judge and the VLM majority ensemble (judge and answer as categoricals; the judge's own
    answer beside the scored one is not kept);
    ``majority``: the human majority per decision; ``loo``: per (annotator, decision)
    the annotator's decided answer and the other annotators' majority (``others``).
    All keyed by ``key`` = output_id + SEP + question_id. ``dawid_skene``: the
    Dawid-Skene fit over ``human`` (computed once, on first use).
    """

    human: pd.DataFrame
    judges: pd.DataFrame
    majority: pd.DataFrame
    loo: pd.DataFrame

    @cached_property
    def dawid_skene(self) -> DawidSkeneFit:
        """The Dawid-Skene model of the annotators' decisions
        (:func:`annotation.results.aggregation.checklist_fit`)."""
        return checklist_fit(self.human)


def _text(column: pd.Series) -> pa.Array | None:
    """``column`` as an Arrow large_string array, or None if it is not all text."""
    try:
        arr = pa.array(column, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if arr.null_count or not (pa.types.is_string(arr.type)
                              or pa.types.is_large_string(arr.type)):
        return None
    return arr.cast(pa.large_string())


def _keyed(df: pd.DataFrame) -> pd.DataFrame:
    """``key`` = output_id + SEP + question_id, as plain Python strings (object dtype:
    membership tests on them hash, where Arrow strings would loop in Python). Joined in
    C when both columns are text without a missing value, else by Python's ``+``."""
    parts = [_text(df[c]) for c in ("output_id", "question_id")]
    if len(df) and parts[0] is not None and parts[1] is not None:
        joined = pc.binary_join_element_wise(parts[0], parts[1],
                                             pa.scalar(SEP, pa.large_string()))
        # one Python string per distinct key, shared by the rows that have it (every judge
        # answers the same decisions: a fifth of the strings, issue #18's peak memory)
        encoded = pc.dictionary_encode(joined)
        distinct = np.asarray(encoded.dictionary.to_numpy(zero_copy_only=False), dtype=object)
        key = pd.Series(distinct[encoded.indices.to_numpy()], index=df.index, dtype=object)
    else:
        key = (df.output_id.astype(object) + SEP + df.question_id.astype(object)).astype(
            object)
    return df.assign(key=key)


def _vote_counts(decided: pd.DataFrame) -> pd.DataFrame:
    votes = decided.assign(n_yes=(decided.answer == "yes").astype(int),
                           n_no=(decided.answer == "no").astype(int))
    return votes.groupby("key", sort=True)[["n_yes", "n_no"]].sum()


def _strict_majority(n_yes: pd.Series, n_no: pd.Series) -> pd.Series:
    out = pd.Series(np.where(n_yes > n_no, "yes", np.where(n_no > n_yes, "no", None)),  # type: ignore[call-overload]
                    index=n_yes.index, dtype=object)
    return out.where(out.notna(), None)


def _ensemble(judges: pd.DataFrame, vlm: list[str]) -> pd.DataFrame:
    """The strict majority of the VLM judges' decided answers per decision key (a tie is
    no decision), with the ids of the key's first vote, in key order. Counted on integer
    codes of the keys (``np.bincount``), never a grouped copy of the judges' decisions
    (at 100,000 outputs that copy was the largest rise of the decisions' peak, issue #18)."""
    answer = judges.answer
    mask = (judges.judge.isin(vlm) & answer.isin(("yes", "no"))).to_numpy()
    if len(vlm) < 2 or not mask.any():
        return judges.iloc[0:0]
    votes = np.flatnonzero(mask)
    del mask
    codes, keys = pd.factorize(judges.key.to_numpy(dtype=object)[votes], sort=True)
    yes = answer.eq("yes").to_numpy(dtype=bool, na_value=False)[votes]  # no str per row
    n_yes = np.bincount(codes, weights=yes, minlength=len(keys))
    n_no = np.bincount(codes, minlength=len(keys)) - n_yes
    first = np.empty(len(keys), dtype=np.intp)
    first[codes[::-1]] = votes[::-1]  # the first vote of each key: written last
    del codes, yes, votes
    decided = np.flatnonzero(n_yes != n_no)
    rows = first[decided]
    return pd.DataFrame({
        "judge": pd.Series(ENSEMBLE, index=range(len(rows)), dtype=judges.judge.dtype),
        "output_id": judges.output_id.take(rows).reset_index(drop=True),
        "question_id": judges.question_id.take(rows).reset_index(drop=True),
        "answer": pd.Series(np.where(n_yes[decided] > n_no[decided], "yes", "no"),
                            dtype=answer.dtype),
        "gated": False, "imputed": False,
        "key": pd.Series(np.asarray(keys, dtype=object)[decided], dtype=object)})


def _stacked(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """``pd.concat(frames, ignore_index=True)``, one column at a time, each column of the
    inputs let go once stacked (``frames`` are emptied): the judges' decisions and the
    ensemble's, without a second copy of every column at once (issue #18)."""
    columns = list(dict.fromkeys(c for f in frames for c in f.columns))
    out = {}
    for column in columns:  # a frame without the column gives missing values, as concat
        out[column] = pd.concat([f[column] if column in f.columns else
                                 pd.Series(np.nan, index=range(len(f))) for f in frames],
                                ignore_index=True)
        for f in frames:
            if column in f.columns:
                del f[column]
    return pd.DataFrame(out, copy=False)


def study_decisions(study: StudyData, unanswered: Unanswered = "omit") -> StudyDecisions:
    """Gated decisions of humans and judges, the human majority and the leave-one-out
    pairs (:class:`StudyDecisions`)."""
    human = _keyed(human_decisions(study))
    # what the judge said beside the scored answer is no table's business: not kept
    judges = _keyed(judge_decisions(study, unanswered).drop(columns="own_answer"))
    vlm = [str(n) for n, k in zip(study.judges.name, study.judges.kind, strict=True)
           if k == "vlm"]
    judges = _stacked([judges, _ensemble(judges, vlm)])
    # a handful of judges and answers over millions of decisions: one byte each, not a
    # string each (categories sorted, as astype("category"); issue #18)
    for column in ("judge", "answer"):
        codes, names = pd.factorize(judges[column], sort=True)
        judges[column] = pd.Categorical.from_codes(codes, categories=names)
    decided = human[human.answer.isin(("yes", "no"))]
    counts = _vote_counts(decided)
    majority = _strict_majority(counts.n_yes, counts.n_no).rename("answer")
    loo = decided[["annotator", "output_id", "key", "answer"]].join(counts, on="key")
    loo = loo.assign(n_yes=loo.n_yes - (loo.answer == "yes"),
                     n_no=loo.n_no - (loo.answer == "no"))
    loo = loo.assign(others=_strict_majority(loo.n_yes, loo.n_no))
    loo = loo[loo.others.notna()].drop(columns=["n_yes", "n_no"]).reset_index(drop=True)
    return StudyDecisions(human=human, judges=judges,
                          majority=majority.dropna().to_frame(), loo=loo)


def adjudicated_majority(d: StudyDecisions, study: StudyData) -> pd.Series | None:
    """The human majority by decision key with the adjudicated decisions in place (ties
    filled, decided splits replaced); None when nothing was adjudicated."""
    adjudicated = getattr(study, "adjudicated", None)
    if adjudicated is None or adjudicated.empty:
        return None
    decided = _keyed(adjudicated).set_index("key").answer
    majority = d.majority.answer
    kept = majority[~majority.index.isin(decided.index)]
    return pd.concat([kept, decided]).sort_index()


def _output_of(keys: pd.Index | pd.Series) -> np.ndarray:
    """The output id of each decision key (``output_id + SEP + question_id``)."""
    if not len(keys):
        return np.empty(0, dtype=object)
    arr = pa.array(keys, from_pandas=True)
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return np.asarray([k[:k.index(SEP)] for k in keys], dtype=object)
    if (pc.find_substring(arr, SEP).to_numpy(zero_copy_only=False) < 0).any():
        raise ValueError(f"a decision key without the separator {SEP!r}")
    # in C: the part before the first separator (the key is output_id + SEP + question_id)
    head = pc.list_element(pc.split_pattern(arr, SEP, max_splits=1), 0)
    return np.asarray(head.to_numpy(zero_copy_only=False), dtype=object)


@dataclass(frozen=True)
class _Answers:
    """Answers of aligned decisions as int8 codes: ``raw`` 1 "yes", 0 "no", -1 anything
    else (as stored); ``label`` 1 yes, 0 another decided label, -1 undecided (missing,
    ``cant_tell``: read as :func:`annotation.stats.clustered.clustered_agreement` reads
    them)."""

    raw: np.ndarray
    label: np.ndarray

    @classmethod
    def of(cls, values: pd.Series) -> _Answers:
        yes, no = values.isin(["yes"]).to_numpy(), values.isin(["no"]).to_numpy()
        raw = np.where(yes, 1, np.where(no, 0, -1)).astype(np.int8)
        if (yes | no | values.isin(["cant_tell"]).to_numpy() | values.isna().to_numpy()).all():
            return cls(raw, raw)  # the store's own labels: read as they are
        labels = read_labels(values.to_numpy(dtype=object))
        label = np.where(labels.isin(["yes"]).to_numpy(), 1,
                         np.where(labels.notna().to_numpy(), 0, -1))
        return cls(raw, label.astype(np.int8))

    def __getitem__(self, at: np.ndarray) -> _Answers:
        return _Answers(self.raw[at], self.label[at])


class _Keys:
    """The decision keys of one table as integer codes (one hash of the strings for the
    whole table), with each key's output as a code in the sorted order of output ids.

    ``rows``: (keys, output ids) of row-aligned columns; ``keys``: more keys, whose output
    is read from the key itself where no row gave it."""

    def __init__(self, rows: list[tuple[np.ndarray, pd.Series]], keys: list[np.ndarray]
                 ) -> None:
        arrays = [k for k, _ in rows] + keys
        codes, uniques = pd.factorize(np.concatenate(arrays))
        self.n = len(uniques)
        # int32 codes where they fit: half the memory of the table's aligned arrays at
        # 100,000 outputs (6 million decisions, issue #18); the same positions
        codes = codes.astype(_code_type(self.n))
        bounds = np.cumsum([0, *map(len, arrays)])
        # each part its own array (not a view of ``codes``): a part kept for the whole
        # table (the references') would otherwise keep every judge's codes alive too
        self.parts = [codes[a:b].copy() for a, b in itertools.pairwise(bounds)]
        del codes
        # output ids: coded per column (no Python string, no 64-bit code per row), unified
        local = [_column_codes(outputs) for _, outputs in rows]
        covered = np.zeros(self.n, dtype=bool)
        for part in self.parts[:len(rows)]:
            covered[part] = True
        rest = np.flatnonzero(~covered)
        tails = _output_of(pd.Index(uniques[rest], dtype=object))
        names = [np.asarray(u, dtype=object) for _, u in local] + [tails]
        unified, self.output_names = pd.factorize(np.concatenate(names), sort=True)
        unified = unified.astype(_code_type(len(self.output_names)))
        self.output = np.full(self.n, -1, dtype=unified.dtype)
        start = 0
        for part, (local_codes, u) in zip(self.parts, local, strict=False):
            self.output[part] = unified[start:start + len(u)][local_codes]
            start += len(u)
        self.output[rest] = unified[start:]

    def lookup(self, codes: np.ndarray) -> np.ndarray:
        """Position of each key in ``codes`` (unique), -1 where absent, over all keys."""
        where = np.full(self.n, -1, dtype=np.int64)
        where[codes] = np.arange(len(codes))
        return where

    def output_mask(self, codes: np.ndarray) -> np.ndarray:
        mask = np.zeros(len(self.output_names), dtype=bool)
        mask[codes] = True
        return mask


def _code_type(n: int) -> type[np.signedinteger]:
    """The narrowest of int32 and int64 that holds codes -1 .. n - 1."""
    return np.int32 if n < np.iinfo(np.int32).max else np.int64


@dataclass(frozen=True)
class _Decisions:
    """Aligned decisions: key codes, answers, output codes (and gated flags)."""

    keys: np.ndarray
    answers: _Answers
    outputs: np.ndarray
    gated: np.ndarray

    def __getitem__(self, at: np.ndarray) -> _Decisions:
        if at.dtype == bool and len(at) == len(self.keys) and at.all():
            return self  # every decision (never written to): no copy of a million rows
        return _Decisions(self.keys[at], self.answers[at], self.outputs[at], self.gated[at])


def _unique_keys(codes: np.ndarray, what: str) -> None:
    """Raise if a key code (a :class:`_Keys` code, -1 for a missing key) repeats: counted in
    one pass (``np.unique`` would sort the codes)."""
    if len(codes) and np.bincount(codes + 1).max() > 1:
        raise ValueError(f"{what}: a decision appears more than once")


def _expected(judges: pd.DataFrame, codes: np.ndarray, questions: pd.DataFrame
              ) -> pd.Series | None:
    """The question's pass answer for every decision the judges made, indexed by the row of
    the decision's first judgment (None without any): the ``expected answer`` reference."""
    first = np.unique(codes, return_index=True)[1]
    asked, ids = pd.factorize(take(judges[["question_id"]], first).question_id)
    pass_answer = questions.drop_duplicates("question_id").set_index("question_id").pass_answer
    passing = pd.Series(pass_answer.reindex(ids).to_numpy(dtype=object)[asked], index=first,
                        dtype=object)
    passing = passing.dropna()  # also the questions not in the study's list
    return None if passing.empty else passing


def _row(judge: str, group: str, reference: str, judged: _Answers, ref: _Answers,
         outputs: np.ndarray, *, n_boot: int, seed: int, paired: str = "", n_gated: int = 0,
         n_unanswered: int = 0) -> dict[str, object] | None:
    """One checklist.csv row from aligned decisions (``judged[i]`` vs ``ref[i]``,
    ``outputs``: output codes in the sorted order of output ids)."""
    stats = coded_agreement(judged.label == 1, ref.label == 1,
                            (judged.label >= 0) & (ref.label >= 0), outputs, n_boot=n_boot,
                            seed=seed).iloc[0]
    if stats["n_decisions"] == 0:
        return None
    row: dict[str, object] = {"judge": judge, "group": group, "reference": reference,
                              "paired_judge": paired}
    for column in COLUMNS:
        if column in stats.index and column not in row:
            row[column] = stats[column]
    decided = (judged.raw >= 0) & (ref.raw >= 0)
    items, at = np.unique(outputs[decided], return_inverse=True)
    same = judged.raw[decided] == ref.raw[decided]
    per_item = pd.Series(np.bincount(at.reshape(-1), weights=same, minlength=len(items))
                         / np.bincount(at.reshape(-1), minlength=len(items)))
    row["n_items"] = len(items)
    row["agreement_per_item"] = per_item.mean() if len(items) else float("nan")
    row["n_gated"] = n_gated
    row["n_unanswered"] = n_unanswered
    return row


def checklist_table(study: StudyData, *, by: GroupBy = None, per_annotator: bool = True,
                    n_boot: int = 1000, seed: int = 0, unanswered: Unanswered = "omit",
                    decided: StudyDecisions | None = None,
                    dawid_skene: bool = True,
                    on_judge: JudgeProgress | None = None) -> pd.DataFrame:
    """The ``checklist.csv`` table (see the module docstring); ``dawid_skene=False`` leaves
    out the ``human Dawid-Skene`` rows; ``on_judge`` is told of each judge
    (:mod:`annotation.results.progress`).

    The decision keys are hashed once into integer codes (:class:`_Keys`); every judge and
    reference is then aligned on those codes with numpy."""
    d = decided or study_decisions(study, unanswered)
    references: dict[str, pd.Series] = {}
    if len(d.majority):
        references[HUMAN_MAJORITY] = d.majority.answer
    adjudicated = adjudicated_majority(d, study)
    if adjudicated is not None:
        references[HUMAN_MAJORITY_ADJUDICATED] = adjudicated
    if per_annotator:
        for annotator, mine in d.human.groupby("annotator", sort=True):
            references[f"annotator:{annotator}"] = mine.set_index("key").answer
    rows_of = judge_rows(d.judges.judge)
    order = [*references, EXPECTED, *(f"judge:{j}" for j in rows_of if j != ENSEMBLE)]
    if dawid_skene and d.human.annotator.nunique() >= 2 and len(d.majority):
        references[DAWID_SKENE] = dawid_skene_labels(d.dawid_skene)
        order.append(DAWID_SKENE)
    references = {name: ref.dropna() for name, ref in references.items()}
    names = list(references)
    keys = _Keys([(d.judges.key.to_numpy(dtype=object), d.judges.output_id),
                  (d.loo.key.to_numpy(dtype=object), d.loo.output_id),
                  (d.human.key.to_numpy(dtype=object), d.human.output_id)],
                 [ref.index.to_numpy(dtype=object) for ref in references.values()])
    judge_codes, loo_codes, _human, *ref_codes = keys.parts
    keys.parts = []  # each part freed once used (5.9 million codes for the judges)
    answers = _Answers.of(d.judges.answer)
    gated = d.judges.gated.fillna(False).astype(bool).to_numpy()
    present = d.judges.answer.notna().to_numpy()
    by_judge: dict[str, _Decisions] = {}
    refs: dict[str, _Decisions] = {}
    for judge, at in rows_of.items():
        _unique_keys(judge_codes[at], f"judge {judge}")
        mine = judge_codes[at]
        by_judge[judge] = _Decisions(mine, answers[at], keys.output[mine], gated[at])
        if judge != ENSEMBLE:
            refs[f"judge:{judge}"] = by_judge[judge][present[at]]
    for name, codes, ref in zip(names, ref_codes, references.values(), strict=True):
        _unique_keys(codes, name)
        refs[name] = _Decisions(codes, _Answers.of(ref.reset_index(drop=True)),
                                keys.output[codes], np.zeros(len(codes), dtype=bool))
    del rows_of
    expected = _expected(d.judges, judge_codes, study.questions)
    if expected is not None:
        mine = judge_codes[expected.index]
        refs[EXPECTED] = _Decisions(mine, _Answers.of(expected), keys.output[mine],
                                    np.zeros(len(expected), dtype=bool))
    del expected, judge_codes, answers, gated, present  # the rows of every judge: 80 MB
    refs = {name: refs[name] for name in order if name in refs}
    loo = _Decisions(loo_codes, _Answers.of(d.loo.answer), keys.output[loo_codes],
                     np.zeros(len(loo_codes), dtype=bool))
    loo_others = _Answers.of(d.loo.others)
    ref_outputs = {name: keys.output_mask(ref.outputs) for name, ref in refs.items()}
    rows: list[dict[str, object] | None] = []
    for group, members in output_groups(study, by):
        member = (np.ones(len(keys.output_names), dtype=bool) if members is None
                  else np.isin(keys.output_names, list(members)))
        in_loo = member[loo.outputs]
        group_loo, group_others = loo[in_loo], loo_others[in_loo]
        for judge in each_judge(sorted(by_judge, key=lambda j: (j == ENSEMBLE, j)), on_judge,
                                "" if members is None else f", {group}"):
            judged = by_judge[judge][member[by_judge[judge].outputs]]
            answered = keys.output_mask(judged.outputs)
            where = keys.lookup(judged.keys)
            for reference, ref in refs.items():
                if reference == f"judge:{judge}":
                    continue
                at = keys.lookup(ref.keys)[judged.keys]
                common = at >= 0
                rows.append(_row(judge, group, reference, judged.answers[common],
                                 ref.answers[at[common]], judged.outputs[common],
                                 n_boot=n_boot, seed=seed,
                                 n_gated=int(judged.gated[common].sum()),
                                 n_unanswered=int((ref_outputs[reference] & member
                                                   & ~answered).sum())))
                if reference == HUMAN_MAJORITY:
                    rows.append(_loo_judge_row(judge, group, judged, where, group_loo,
                                               group_others, answered, keys, n_boot=n_boot,
                                               seed=seed))
        rows.extend(_loo_human_rows(group, group_loo, group_others, by_judge, keys,
                                    n_boot=n_boot, seed=seed))
    table = pd.DataFrame([r for r in rows if r is not None], columns=COLUMNS)
    return table.astype({c: "int64" for c in COUNTS}) if not table.empty else table


def _loo_judge_row(judge: str, group: str, judged: _Decisions, where: np.ndarray,
                   loo: _Decisions, others: _Answers, answered: np.ndarray, keys: _Keys, *,
                   n_boot: int, seed: int) -> dict[str, object] | None:
    """The judge against the leave-one-out majorities, on the human baseline's pairs
    (``where``: the position of each key among the judge's decisions, -1 if absent)."""
    at = where[loo.keys]
    pairs = at >= 0
    if not pairs.any():
        return None
    return _row(judge, group, LOO_MAJORITY, judged.answers[at[pairs]], others[pairs],
                loo.outputs[pairs], n_boot=n_boot, seed=seed,
                n_gated=int(judged.gated[at[pairs]].sum()),
                n_unanswered=int((keys.output_mask(loo.outputs) & ~answered).sum()))


def _loo_human_rows(group: str, loo: _Decisions, others: _Answers,
                    by_judge: dict[str, _Decisions], keys: _Keys, *, n_boot: int,
                    seed: int) -> Iterable[dict[str, object] | None]:
    """The human baseline: every annotator against the others' majority, on all pairs and
    (where a judge decided fewer) on exactly that judge's decisions."""
    if not len(loo.keys):
        return
    yield _row(HUMAN_LOO, group, LOO_MAJORITY, loo.answers, others, loo.outputs,
               n_boot=n_boot, seed=seed)
    for judge in sorted(by_judge, key=lambda j: (j == ENSEMBLE, j)):
        pairs = keys.lookup(by_judge[judge].keys)[loo.keys] >= 0
        if not pairs.any() or pairs.all():
            continue
        yield _row(HUMAN_LOO, group, LOO_MAJORITY, loo.answers[pairs], others[pairs],
                   loo.outputs[pairs], n_boot=n_boot, seed=seed, paired=judge)


# ---------------------------------------------------------------------------- leniency
LENIENCY_COLUMNS = ["judge", "reference", "facet", "value", "n_items", "n_decisions",
                    "both_yes", "judge_yes_human_no", "judge_no_human_yes", "both_no",
                    "prevalence_yes", "judge_yes_rate", "leniency", "strictness"]


def judge_rows(judges: pd.Series, keep: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The row positions of each judge in ``judges`` (a judge column; only the rows where
    ``keep``), by judge name in sorted order, judges without a row left out: the rows a
    ``groupby("judge", sort=True)`` would give, without copying the frame per judge (4.8
    million decisions at 100,000 outputs, issue #18). One comparison per judge, no code per
    row; text and categorical columns alike; a missing name is no judge (as in a
    ``groupby``)."""
    names = [n for n in pd.unique(judges) if not pd.isna(n)]
    rows = {}
    for name in sorted(names, key=str):
        mine = (judges == name).to_numpy(dtype=bool, na_value=False)
        at = np.flatnonzero(mine if keep is None else mine & keep)
        if len(at):
            rows[str(name)] = at
    return rows


def key_positions(keys: pd.Series, index: pd.Index) -> np.ndarray:
    """``index.get_indexer(keys)`` (``index`` unique): the position of each decision key in
    ``index``, -1 where it is not there. A categorical column is looked up once per
    category; either way no frame is joined on millions of string keys (a join of the
    judges' decisions with the human majority cost ~1 GiB at 100,000 outputs, issue #18)."""
    if isinstance(keys.dtype, pd.CategoricalDtype):
        at = np.append(index.get_indexer(keys.cat.categories), -1)  # [-1]: a missing key
        return at[keys.cat.codes.to_numpy()]
    return np.asarray(index.get_indexer(keys), dtype=np.intp)


def leniency_table(study: StudyData, *, by: GroupBy = None, unanswered: Unanswered = "omit",
                   decided: StudyDecisions | None = None) -> pd.DataFrame:
    """``leniency.csv``: where a judge says yes and the humans say no.

    Per judge (and the VLM majority), against the human majority, the four cells of the
    2x2 table of decisions in every facet: ``all``; ``operator`` (the question's operator,
    TRACE-Bench's f, g, ⊕, C); each question ``meta.<key>`` category; and ``<by>`` groups of
    outputs. ``leniency`` = judge yes among human no = b / (b + d) (the usual VLM failure:
    accepting what the humans reject); ``strictness`` = judge no among human yes =
    c / (a + c). Counts only: the cluster intervals of these rates are in checklist.csv's
    recalls for the facet ``all`` (``no_recall`` = 1 - leniency).

    Only the judges' decisions with a human majority are counted, so they are found by
    position first (:func:`key_positions`) and only those rows are copied.
    """
    d = decided or study_decisions(study, unanswered)
    if d.majority.empty or d.judges.empty:
        return pd.DataFrame(columns=LENIENCY_COLUMNS)
    q = study.questions.set_index("question_id")
    facets = {"operator": q.operator.fillna("(none)").astype(str)}
    for column in (c for c in q.columns if c.startswith("meta.")):
        facets[column] = q[column].astype(object).where(q[column].notna(), None)
    # the majority's keys are unique (one row per decision): the rows of an inner join
    at = key_positions(d.judges.key, d.majority.index)
    rows_of = np.flatnonzero((at >= 0) & d.judges.answer.isin(("yes", "no")).to_numpy())
    joined = take(d.judges[["judge", "output_id", "question_id", "answer"]], rows_of).assign(
        human=d.majority.answer.to_numpy(dtype=object)[at[rows_of]])
    del at, rows_of
    # the --by groups: facet = the key(s), value = the group's value(s); an output is in as
    # many groups as it has values (one membership row each), grouped once per judge
    by_groups = group_values(study, by)
    by_facet = " & ".join(by_groups[0][0]) if by_groups else None
    labels_of = [values[0] if len(values) == 1 else " & ".join(map(str, values))
                 for _keys, values, _members in by_groups]
    membership = pd.DataFrame(
        [(o, k) for k, (_keys, _values, members) in enumerate(by_groups) for o in members],
        columns=["output_id", "__group__"])
    rows = []
    for judge, at_judge in judge_rows(joined.judge).items():
        mine = joined.iloc[at_judge]
        views: list[tuple[str, pd.DataFrame, np.ndarray]] = [
            ("all", mine, np.full(len(mine), "all", dtype=object))]
        views += [(name, mine, mine.question_id.map(values).to_numpy())
                  for name, values in facets.items()]
        if by_facet is not None:
            exploded = mine.merge(membership, on="output_id")
            views.append((by_facet, exploded, exploded["__group__"].to_numpy()))
        for facet, frame, labels in views:
            for value, part in frame.groupby(labels, sort=True, dropna=True):
                if facet == by_facet and frame is not mine:
                    value = labels_of[int(value)]
                jy, hy = part.answer == "yes", part.human == "yes"
                a, b = int((jy & hy).sum()), int((jy & ~hy).sum())
                c, dd = int((~jy & hy).sum()), int((~jy & ~hy).sum())
                n = a + b + c + dd
                rows.append({
                    "judge": judge, "reference": HUMAN_MAJORITY, "facet": facet,
                    "value": value, "n_items": int(part.output_id.nunique()),
                    "n_decisions": n, "both_yes": a, "judge_yes_human_no": b,
                    "judge_no_human_yes": c, "both_no": dd,
                    "prevalence_yes": (a + c) / n if n else np.nan,
                    "judge_yes_rate": (a + b) / n if n else np.nan,
                    "leniency": b / (b + dd) if b + dd else np.nan,
                    "strictness": c / (a + c) if a + c else np.nan,
                })
    return pd.DataFrame(rows, columns=LENIENCY_COLUMNS)


# ---------------------------------------------------------------------------- judges compared
def _yes_codes(answers: pd.Series) -> np.ndarray:
    """Each answer as 1 (``yes``), 0 (``no``) or -1 (anything else, missing included): two
    answers are the same label exactly when their codes are equal and not -1 (no Python
    string per answer; a missing reference is never equal)."""
    codes = np.full(len(answers), -1, dtype=np.int8)  # int8 throughout: 1 byte an answer
    codes[(answers == "no").to_numpy(dtype=bool, na_value=False)] = 0
    codes[(answers == "yes").to_numpy(dtype=bool, na_value=False)] = 1
    return codes


MCNEMAR_COLUMNS = ["reference", "judge_a", "judge_b", "n_decisions", "accuracy_a",
                   "accuracy_b", "a_right_b_wrong", "a_wrong_b_right", "mcnemar_p",
                   # added in the statistical-truth release
                   "n_items", "diff", "diff_lo", "diff_hi", "clustered_chi2", "clustered_p",
                   "p_bh", "p_by", "n_boot", "note"]


#: the answer code of a decision without an answer
_ABSENT = -2


def _column_codes(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """An integer code per row (-1: missing; equal values, equal codes) and the values
    coded, as ``pd.factorize`` gives, without its 64-bit code per row: pyarrow's
    dictionary indices (int32) for pyarrow text, a categorical column's own codes, else
    ``pd.factorize``. (5.9 million decisions: 125 MB for ``pd.factorize``, 45 MB so.)"""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy(), pd.Index(column.cat.categories)
    arr = _text(column) if len(column) else None
    if arr is None:
        codes, uniques = pd.factorize(column)
        return codes, pd.Index(uniques)
    encoded = pc.dictionary_encode(arr)  # no missing value (_text)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()  # one dictionary for every chunk
    return (encoded.indices.to_numpy(zero_copy_only=False),
            pd.Index(encoded.dictionary.to_pandas()))


def _positions_in(codes: np.ndarray, among: np.ndarray) -> np.ndarray:
    """The position in ``among`` of each of ``codes`` (-1 where it is not there; the
    missing code -1 is never found; a code twice in ``among``: its last), by a sort of
    ``among`` rather than a hash table of every code."""
    if not len(among):
        return np.full(len(codes), -1, dtype=np.intp)
    order = np.argsort(among, kind="stable")
    ordered = among[order]
    at = np.searchsorted(ordered, codes, side="right") - 1
    found = (at >= 0) & (codes >= 0)
    found[found] = ordered[at[found]] == codes[found]
    return np.where(found, order[at], -1)


def mcnemar_table(study: StudyData, *, n_boot: int = 1000, seed: int = 0,
                  unanswered: Unanswered = "omit",
                  decided: StudyDecisions | None = None) -> pd.DataFrame:
    """``checklist_comparisons.csv``: pairs of judges on the same decisions, each right or
    wrong against a reference (``human majority``, and ``expected answer``).

    Both accuracies; ``mcnemar_p``, the exact McNemar test over decisions
    (:func:`annotation.stats.agreement.mcnemar_exact`, which treats the decisions as
    independent); ``diff`` = accuracy_a - accuracy_b with a paired cluster-bootstrap
    interval over outputs and ``clustered_p``, the clustered McNemar test of Durkalski et
    al. (2003) (:func:`annotation.stats.clustered.clustered_mcnemar`): read these, since an
    output's decisions are correlated. ``p_bh``/``p_by``: Benjamini-Hochberg and
    Benjamini-Yekutieli adjustments of ``clustered_p`` over every row of the file.

    No copy of the 4.8 million decisions per judge and no merge on their string keys
    (issue #18): answers and references are int8 codes per decision, in judge A's order;
    a decision is found among judge B's by the integer of its (output, question) codes
    (:func:`_column_codes`, :func:`_positions_in`), the human majority by its key.
    """
    from annotation.stats.agreement import mcnemar_exact

    d = decided or study_decisions(study, unanswered)
    keep = ((d.judges.judge != ENSEMBLE) & d.judges.answer.isin(("yes", "no"))).to_numpy()
    rows_of = judge_rows(d.judges.judge, keep)
    del keep
    # each reference as a truth code per decision of each judge (_ABSENT: no reference)
    truths: dict[str, dict[str, np.ndarray]] = {}
    if len(d.majority):
        majority = d.majority.answer
        majority = majority[~majority.index.duplicated(keep="last")]
        truth = np.append(_yes_codes(majority), _ABSENT).astype(np.int8)
        at = key_positions(d.judges.key, majority.index)  # -1: the last truth, _ABSENT
        truths[HUMAN_MAJORITY] = {j: truth[at[rows]] for j, rows in rows_of.items()}
        del at
    # the expected answer: the question's pass answer (a question not in the study's list
    # gives no reference; a missing pass answer is never right)
    questions, question_ids = _column_codes(d.judges.question_id)
    passing = study.questions.drop_duplicates("question_id", keep="last").set_index(
        "question_id").pass_answer
    pass_codes = np.append(_yes_codes(passing), _ABSENT).astype(np.int8)
    truth = pass_codes[np.append(positions(question_ids, passing.index), -1)]
    expected = {j: truth[questions[rows]] for j, rows in rows_of.items()}
    if any((e != _ABSENT).any() for e in expected.values()):
        truths[EXPECTED] = expected
    # a decision is its (output, question): one integer of the two codes; outputs as codes
    # are the clusters (injective: the clustered tests factorize labels in order of
    # appearance, so the same numbers as the output ids)
    outputs, _output_ids = _column_codes(d.judges.output_id)
    answers = _yes_codes(d.judges.answer)
    judged: dict[str, tuple[np.ndarray, np.ndarray]] = {
        j: (answers[rows], outputs[rows]) for j, rows in rows_of.items()}
    decision = {j: np.where((outputs[rows] >= 0) & (questions[rows] >= 0),
                            outputs[rows].astype(np.int64) * len(question_ids)
                            + questions[rows], -1)
                for j, rows in rows_of.items()}
    del questions, outputs, answers, rows_of
    # judge B's answer on each of judge A's decisions (_ABSENT: B did not decide it)
    answer_b: dict[tuple[str, str], np.ndarray] = {}
    for a, b in itertools.combinations(judged, 2):
        at = _positions_in(decision[a], decision[b])
        answer_b[a, b] = np.where(at >= 0, judged[b][0][at], _ABSENT).astype(np.int8)
    del decision
    rows = []
    for reference, truth_of in truths.items():
        for a, b in itertools.combinations(judged, 2):
            (answers_a, outputs_a), answers_b = judged[a], answer_b[a, b]
            truth = truth_of[a]
            both = (answers_b != _ABSENT) & (truth != _ABSENT)
            if not both.any():
                continue
            truth = truth[both]
            right_a = answers_a[both] == truth
            right_b = answers_b[both] == truth
            exact = mcnemar_exact(right_a, right_b)
            clustered = clustered_mcnemar(right_a, right_b, outputs_a[both],
                                          n_boot=n_boot, seed=seed).iloc[0]
            rows.append({"reference": reference, "judge_a": a, "judge_b": b,
                         "n_decisions": exact.n, "accuracy_a": right_a.mean(),
                         "accuracy_b": right_b.mean(), "a_right_b_wrong": exact.b,
                         "a_wrong_b_right": exact.c, "mcnemar_p": exact.p,
                         "n_items": int(clustered.n_clusters), "diff": clustered["diff"],
                         "diff_lo": clustered.diff_lo, "diff_hi": clustered.diff_hi,
                         "clustered_chi2": clustered.clustered_chi2,
                         "clustered_p": clustered.clustered_p,
                         "n_boot": int(clustered.n_boot), "note": clustered.note})
    table = pd.DataFrame(rows, columns=MCNEMAR_COLUMNS)
    if not table.empty:
        table["p_bh"] = adjust_pvalues(table.clustered_p.to_numpy(), "bh")
        table["p_by"] = adjust_pvalues(table.clustered_p.to_numpy(), "by")
    return table
