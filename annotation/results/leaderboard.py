"""``leaderboard.csv``: each generator's benchmark score from the judge, corrected by the
human sample (prediction-powered inference), beside the judge-only and human-only scores.

A benchmark reports every generator's mean judge score. With humans on a random sample
of the outputs, :func:`annotation.stats.ppi.ppi_mean` (PPI++: "PPI++: Efficient
Prediction-Powered Inference", Angelopoulos, Duchi & Zrnic 2023; after "Prediction-powered
inference", Angelopoulos et al., *Science* 2023) gives the generator's score on the
humans' scale with a valid 95% interval, using the judge on every output and the humans
to correct its bias. Per judge, measure and generator:

* measures: every rating criterion the humans scored (the mean of the annotators' scores
  of an output is its human score) and ``checklist`` (an output's pass rate x 100: the
  share of its decided questions answered as expected, for the judge from its decisions
  and for the humans from their strict majority, DSG gating included:
  :func:`annotation.results.tiif.image_scores`);
* ``judge_mean``: the judge alone over all the generator's outputs (what the benchmark
  reports; no interval: its bias is what the humans measure); ``human_mean`` with a
  Student's t interval over the outputs humans scored; ``estimate``/``lo``/``hi``: corrected;
  ``lam``: the judge's tuned weight (0: the judge does not help, 1: plain PPI);
* ranks (1 = best) of the generators by each of the three, and ``rank_changed``: the
  corrected rank differs from the judge's.

**The design.** The correction needs the human-scored outputs of a generator to be a
uniform random sample of its outputs (:func:`annotation.results.design.not_uniform`, the
rule ``study_design.csv`` states too): no sample (the router offers every annotator the
outputs in a random order of their own), a uniform sample, a stratified one in
proportion, paired tasks. Equal numbers per stratum, the TIIF-Bench validation set
(balanced by answer) and a sample offered disagreement first until all of it is annotated
do not: their rows keep the judge-only column and leave the human-only and corrected ones
empty (both would be biased), with the reason in ``note``. Only the human scores of the
*current* sample count: scores of outputs outside it (an earlier pilot, a validation
set) are left out and counted in ``n_outside_sample``. ``design`` says which sample the
rows come from.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from annotation.results.checklist import HUMAN_MAJORITY, StudyDecisions
from annotation.results.design import not_uniform
from annotation.results.study import StudyData
from annotation.results.tiif import image_scores
from annotation.stats.membership import isin, positions
from annotation.stats.ppi import ppi_mean

CHECKLIST = "checklist"
COLUMNS = ["judge", "measure", "generator", "design", "n_outputs", "n_labeled",
           "n_unlabeled", "judge_mean", "human_mean", "human_lo", "human_hi", "estimate",
           "lo", "hi", "lam", "rank_judge", "rank_human", "rank_corrected", "rank_changed",
           "width_ratio", "note",
           # added: human scores of outputs outside the current sample, left out
           "n_outside_sample"]


def _judge_means(scores: pd.DataFrame) -> dict[object, dict[str, pd.Series]]:
    """Per criterion and judge (in sorted order) the judge's mean score per output (index
    ``output_id``, sorted): what ``groupby("output_id").score.mean()`` of each criterion's
    and judge's rows gives (the same rows in the same order: the same floats), from one
    grouping on integer codes."""
    criterion, criteria = pd.factorize(scores.criterion)
    judge, judges = pd.factorize(scores.judge, sort=True)
    output, outputs = pd.factorize(scores.output_id, sort=True)
    keep = (criterion >= 0) & (judge >= 0) & (output >= 0)
    n_judges, n_outputs = max(len(judges), 1), max(len(outputs), 1)
    key = (criterion.astype(np.int64) * n_judges + judge) * n_outputs + output
    means = scores.score[keep].groupby(key[keep]).mean()
    keys = means.index.to_numpy()
    if not len(keys):
        return {}
    group = keys // n_outputs  # (criterion, judge); sorted, as the keys are
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    out: dict[object, dict[str, pd.Series]] = {}
    for a, b in zip(starts, [*starts[1:], len(keys)], strict=True):
        c, j = divmod(int(group[a]), n_judges)
        index = pd.Index(outputs.take(keys[a:b] % n_outputs), name="output_id")
        out.setdefault(criteria[c], {})[str(judges[j])] = pd.Series(
            means.to_numpy()[a:b], index=index, name="score")
    return out


def measure_scores(study: StudyData, decided: StudyDecisions | None
            ) -> list[tuple[str, pd.Series, dict[str, pd.Series]]]:
    """(measure, human score per output, {judge: its score per output})."""
    out = []
    humans = study.human_scores.groupby(["criterion", "output_id"]).score.mean()
    scored = set(humans.index.get_level_values(0))
    judged = _judge_means(study.judge_scores)
    for criterion in dict.fromkeys(study.criteria.name):
        if criterion not in scored:
            continue
        mine = judged.get(criterion, {})
        if mine:
            out.append((str(criterion), humans.loc[criterion], mine))
    if decided is not None and len(decided.majority) and len(decided.judges):
        scores = image_scores(study, decided).set_index("output_id")
        human = scores[scores.scorer == HUMAN_MAJORITY].score
        mine = {str(j): s.score for j, s in scores[scores.scorer != HUMAN_MAJORITY].groupby(
            "scorer")}
        if len(human) and mine:
            out.append((CHECKLIST, human, mine))
    return out


def _aligned(values: pd.Series, ids: pd.Index) -> np.ndarray:
    """``values.reindex(ids).to_numpy(float)``, the labels looked up in C
    (:func:`annotation.stats.membership.positions`)."""
    if not ids.is_unique:
        return values.reindex(ids).to_numpy(dtype=float)
    at = positions(values.index, ids)  # where each value goes; -1: not an output
    found = at >= 0
    if np.bincount(at[found], minlength=len(ids)).max(initial=0) > 1:  # repeated labels
        return values.reindex(ids).to_numpy(dtype=float)
    out = np.full(len(ids), np.nan)
    out[at[found]] = values.to_numpy(dtype=float)[found]
    return out


def leaderboard_table(study: StudyData, decided: StudyDecisions | None = None, *,
                      conf: float = 0.95) -> pd.DataFrame:
    """The ``leaderboard.csv`` table (module docstring)."""
    mode = str(study.design.get("mode", "none"))
    scored = set(study.human_scores.output_id) | set(study.human_answers.output_id)
    offered = study.offered or frozenset(study.outputs.output_id)
    problem = not_uniform(study.design, complete=offered <= scored)
    generator = study.outputs.set_index("output_id").generator
    output_ids = generator.index
    # per generator the positions of its outputs (in the outputs' order); whether each
    # output is in the current sample: the same for every measure and judge
    names = generator.astype(str).to_numpy()
    where = {gen: np.flatnonzero(names == gen) for gen in sorted(set(names))}
    in_sample = isin(output_ids, offered)
    rows: list[dict[str, Any]] = []
    for measure, human, by_judge in measure_scores(study, decided):
        human_of = _aligned(human, output_ids)
        for judge, judged in sorted(by_judge.items()):
            judge_of = _aligned(judged, output_ids)
            block = []
            for gen, at in where.items():
                f_all = judge_of[at]
                y_all = human_of[at]
                rated = ~np.isnan(f_all)  # the generator's outputs the judge scored
                labeled = rated & ~np.isnan(y_all)  # ... and the humans too
                sample = labeled & in_sample[at]  # only the current sample's
                result = ppi_mean(y_all[sample], f_all[sample], f_all[rated & ~sample],
                                  conf=conf).iloc[0]
                row: dict[str, Any] = {
                    "judge": judge, "measure": measure, "generator": gen, "design": mode,
                    "n_outputs": int(rated.sum()), **{k: result[k] for k in (
                        "n_labeled", "n_unlabeled", "judge_mean", "human_mean", "human_lo",
                        "human_hi", "estimate", "lo", "hi", "lam")},
                    "note": result["note"],
                    "n_outside_sample": int(labeled.sum() - sample.sum())}
                if problem:  # both estimates from the humans' outputs would be biased
                    row.update(estimate=np.nan, lo=np.nan, hi=np.nan, lam=np.nan,
                               human_mean=np.nan, human_lo=np.nan, human_hi=np.nan,
                               note="; ".join(x for x in (
                                   problem + ": no estimate from the human scores",
                                   row["note"]) if x))
                width = row["hi"] - row["lo"]
                human_width = row["human_hi"] - row["human_lo"]
                row["width_ratio"] = width / human_width if human_width > 0 else np.nan
                block.append(row)
            frame = pd.DataFrame(block)
            for column, source in (("rank_judge", "judge_mean"), ("rank_human", "human_mean"),
                                   ("rank_corrected", "estimate")):
                frame[column] = frame[source].rank(ascending=False, method="min")
            frame["rank_changed"] = np.where(
                frame.rank_corrected.notna() & frame.rank_judge.notna(),
                frame.rank_corrected != frame.rank_judge, pd.NA)
            rows.extend(frame.to_dict("records"))
    table = pd.DataFrame(rows, columns=COLUMNS)
    for column in ("rank_judge", "rank_human", "rank_corrected"):
        table[column] = table[column].astype("Int64")
    return table
