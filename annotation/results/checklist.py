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
from annotation.stats.clustered import clustered_agreement, clustered_mcnemar
from annotation.stats.comparison import adjust_pvalues
from annotation.stats.dawid_skene import DawidSkeneFit

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
    ``judges``: judge, output_id, ... for every judge and the VLM majority ensemble;
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


def _keyed(df: pd.DataFrame) -> pd.DataFrame:
    """``key`` = output_id + SEP + question_id, as plain Python strings (object dtype:
    membership tests on them hash, where Arrow strings would loop in Python)."""
    key = (df.output_id.astype(object) + SEP + df.question_id.astype(object)).astype(object)
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
    votes = judges[judges.judge.isin(vlm) & judges.answer.isin(("yes", "no"))]
    if len(vlm) < 2 or votes.empty:
        return judges.iloc[0:0]
    counts = _vote_counts(votes)
    winner = _strict_majority(counts.n_yes, counts.n_no).dropna()
    first = votes.drop_duplicates("key").set_index("key").reindex(winner.index)
    return pd.DataFrame({"judge": ENSEMBLE, "output_id": first.output_id.to_numpy(),
                         "question_id": first.question_id.to_numpy(),
                         "answer": winner.to_numpy(), "gated": False, "imputed": False,
                         "key": winner.index.to_numpy()})


def study_decisions(study: StudyData, unanswered: Unanswered = "omit") -> StudyDecisions:
    """Gated decisions of humans and judges, the human majority and the leave-one-out
    pairs (:class:`StudyDecisions`)."""
    human = _keyed(human_decisions(study))
    judges = _keyed(judge_decisions(study, unanswered))
    vlm = [str(n) for n, k in zip(study.judges.name, study.judges.kind, strict=True)
           if k == "vlm"]
    judges = pd.concat([judges, _ensemble(judges, vlm)], ignore_index=True)
    decided = human[human.answer.isin(("yes", "no"))]
    counts = _vote_counts(decided)
    majority = _strict_majority(counts.n_yes, counts.n_no).rename("answer")
    loo = decided[["annotator", "output_id", "key", "answer"]].join(counts, on="key")
    loo = loo.assign(n_yes=loo.n_yes - (loo.answer == "yes"),
                     n_no=loo.n_no - (loo.answer == "no"))
    loo = loo.assign(others=_strict_majority(loo.n_yes, loo.n_no))
    loo = loo[loo.others.notna()].drop(columns=["n_yes", "n_no"]).reset_index(drop=True)
    return StudyDecisions(human=human, judges=judges.reset_index(drop=True),
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


def _row(judge: str, group: str, reference: str, judged: pd.Series, ref: pd.Series,
         outputs: np.ndarray, *, n_boot: int, seed: int, paired: str = "", n_gated: int = 0,
         n_unanswered: int = 0) -> dict[str, object] | None:
    """One checklist.csv row from aligned decisions (``judged[i]`` vs ``ref[i]``)."""
    stats = clustered_agreement(judged.to_numpy(), ref.to_numpy(), outputs, n_boot=n_boot,
                                seed=seed).iloc[0]
    if stats["n_decisions"] == 0:
        return None
    row: dict[str, object] = {"judge": judge, "group": group, "reference": reference,
                              "paired_judge": paired}
    for column in COLUMNS:
        if column in stats.index and column not in row:
            row[column] = stats[column]
    decided = judged.isin(("yes", "no")).to_numpy() & ref.isin(("yes", "no")).to_numpy()
    same = pd.Series(judged.to_numpy()[decided] == ref.to_numpy()[decided]).groupby(
        outputs[decided]).mean()
    row["n_items"] = len(same)
    row["agreement_per_item"] = same.mean() if len(same) else float("nan")
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
    (:mod:`annotation.results.progress`)."""
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
    passing = d.judges.drop_duplicates("key").merge(
        study.questions[["question_id", "pass_answer"]], on="question_id")
    if len(passing):
        references[EXPECTED] = passing.set_index("key").pass_answer
    by_judge = {str(j): g.set_index("key") for j, g in d.judges.groupby("judge", sort=True)}
    for judge, mine in by_judge.items():
        if judge != ENSEMBLE:
            references[f"judge:{judge}"] = mine.answer
    if dawid_skene and d.human.annotator.nunique() >= 2 and len(d.majority):
        references[DAWID_SKENE] = dawid_skene_labels(d.dawid_skene)
    loo_keys = d.loo.set_index("key")
    rows: list[dict[str, object] | None] = []
    for group, members in output_groups(study, by):
        def inside(index: pd.Index, members: set[str] | None = members) -> pd.Index:
            return index if members is None else index[np.isin(_output_of(index),
                                                               list(members))]
        loo = loo_keys if members is None else loo_keys[loo_keys.output_id.isin(members)]
        for judge in each_judge(sorted(by_judge, key=lambda j: (j == ENSEMBLE, j)), on_judge,
                                "" if members is None else f", {group}"):
            mine = by_judge[judge]
            judged = mine.answer[inside(mine.index)]
            gated = mine.gated.reindex(judged.index).fillna(False).astype(bool)
            answered = set(_output_of(judged.index))
            for reference, ref in references.items():
                if reference == f"judge:{judge}":
                    continue
                ref = ref.dropna()
                common = judged.index.intersection(ref.index)
                ref_outputs = set(_output_of(inside(ref.index)))
                rows.append(_row(judge, group, reference, judged[common], ref[common],
                                 _output_of(common), n_boot=n_boot, seed=seed,
                                 n_gated=int(gated[common].sum()),
                                 n_unanswered=len(ref_outputs - answered)))
                if reference == HUMAN_MAJORITY:
                    rows.append(_loo_judge_row(judge, group, judged, gated, loo, answered,
                                               n_boot=n_boot, seed=seed))
        rows.extend(_loo_human_rows(group, loo, by_judge, n_boot=n_boot, seed=seed))
    table = pd.DataFrame([r for r in rows if r is not None], columns=COLUMNS)
    return table.astype({c: "int64" for c in COUNTS}) if not table.empty else table


def _loo_judge_row(judge: str, group: str, judged: pd.Series, gated: pd.Series,
                   loo: pd.DataFrame, answered: set[str], *, n_boot: int,
                   seed: int) -> dict[str, object] | None:
    """The judge against the leave-one-out majorities, on the human baseline's pairs."""
    pairs = loo[loo.index.isin(judged.index)]
    if pairs.empty:
        return None
    return _row(judge, group, LOO_MAJORITY, judged.reindex(pairs.index), pairs.others,
                pairs.output_id.to_numpy(), n_boot=n_boot, seed=seed,
                n_gated=int(gated.reindex(pairs.index).sum()),
                n_unanswered=len(set(loo.output_id) - answered))


def _loo_human_rows(group: str, loo: pd.DataFrame, by_judge: dict[str, pd.DataFrame], *,
                    n_boot: int, seed: int) -> Iterable[dict[str, object] | None]:
    """The human baseline: every annotator against the others' majority, on all pairs and
    (where a judge decided fewer) on exactly that judge's decisions."""
    if loo.empty:
        return
    yield _row(HUMAN_LOO, group, LOO_MAJORITY, loo.answer, loo.others,
               loo.output_id.to_numpy(), n_boot=n_boot, seed=seed)
    for judge in sorted(by_judge, key=lambda j: (j == ENSEMBLE, j)):
        keys = by_judge[judge].index
        pairs = loo[loo.index.isin(keys)]
        if pairs.empty or len(pairs) == len(loo):
            continue
        yield _row(HUMAN_LOO, group, LOO_MAJORITY, pairs.answer, pairs.others,
                   pairs.output_id.to_numpy(), n_boot=n_boot, seed=seed, paired=judge)


# ---------------------------------------------------------------------------- leniency
LENIENCY_COLUMNS = ["judge", "reference", "facet", "value", "n_items", "n_decisions",
                    "both_yes", "judge_yes_human_no", "judge_no_human_yes", "both_no",
                    "prevalence_yes", "judge_yes_rate", "leniency", "strictness"]


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
    """
    d = decided or study_decisions(study, unanswered)
    if d.majority.empty or d.judges.empty:
        return pd.DataFrame(columns=LENIENCY_COLUMNS)
    q = study.questions.set_index("question_id")
    facets = {"operator": q.operator.fillna("(none)").astype(str)}
    for column in (c for c in q.columns if c.startswith("meta.")):
        facets[column] = q[column].astype(object).where(q[column].notna(), None)
    joined = d.judges[d.judges.answer.isin(("yes", "no"))].join(
        d.majority.answer.rename("human"), on="key", how="inner")
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
    for judge, mine in joined.groupby("judge", sort=True):
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
MCNEMAR_COLUMNS = ["reference", "judge_a", "judge_b", "n_decisions", "accuracy_a",
                   "accuracy_b", "a_right_b_wrong", "a_wrong_b_right", "mcnemar_p",
                   # added in the statistical-truth release
                   "n_items", "diff", "diff_lo", "diff_hi", "clustered_chi2", "clustered_p",
                   "p_bh", "p_by", "n_boot", "note"]


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
    """
    from annotation.stats.agreement import mcnemar_exact

    d = decided or study_decisions(study, unanswered)
    judges = d.judges[(d.judges.judge != ENSEMBLE) & d.judges.answer.isin(("yes", "no"))]
    references: dict[str, pd.Series] = {}
    if len(d.majority):
        references[HUMAN_MAJORITY] = d.majority.answer
    expected = judges.drop_duplicates("key").merge(
        study.questions[["question_id", "pass_answer"]], on="question_id")
    if not expected.empty:
        references[EXPECTED] = expected.set_index("key").pass_answer
    by_judge = {str(j): g.set_index("key").answer for j, g in judges.groupby("judge",
                                                                            sort=True)}
    rows = []
    for reference, ref in references.items():
        for a, b in itertools.combinations(sorted(by_judge), 2):
            common = by_judge[a].index.intersection(by_judge[b].index).intersection(ref.index)
            if not len(common):
                continue
            right_a = (by_judge[a][common] == ref[common]).to_numpy()
            right_b = (by_judge[b][common] == ref[common]).to_numpy()
            exact = mcnemar_exact(right_a, right_b)
            clustered = clustered_mcnemar(right_a, right_b, _output_of(common),
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
