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
uniform random sample of its outputs. A uniform or generator-stratified sample (and no
sample, where the router offers every annotator the outputs in a random order of their
own) qualifies; the TIIF-Bench validation set (balanced by answer) does not, nor a
sample offered disagreement first until all of it is annotated: their rows keep the
judge-only and human-only columns and leave the corrected ones empty, with the reason
in ``note``. ``design`` says which sample the rows come from.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from annotation.results.checklist import HUMAN_MAJORITY, StudyDecisions
from annotation.results.study import StudyData
from annotation.results.tiif import image_scores
from annotation.stats.ppi import ppi_mean

CHECKLIST = "checklist"
COLUMNS = ["judge", "measure", "generator", "design", "n_outputs", "n_labeled",
           "n_unlabeled", "judge_mean", "human_mean", "human_lo", "human_hi", "estimate",
           "lo", "hi", "lam", "rank_judge", "rank_human", "rank_corrected", "rank_changed",
           "width_ratio", "note"]
#: sample modes whose human-scored outputs are a uniform sample within each generator
UNIFORM_DESIGNS = ("none", "all", "uniform", "stratified")


def design_problem(design: dict[str, Any], complete: bool = True) -> str | None:
    """Why the sample ``design`` does not support the correction (None: it does).
    ``complete``: every output of the sample has a human score (then the order in which
    they were offered does not matter)."""
    mode = str(design.get("mode", "none"))
    if mode == "validation":
        return ("the sample is the validation set, balanced by answer, not a uniform "
                "sample of the outputs: no corrected estimate")
    if mode not in UNIFORM_DESIGNS:
        return (f"the sample ({mode}) is not a uniform sample of the outputs: no corrected "
                "estimate")
    if design.get("disagreement_first_ever") and not complete:
        return ("outputs were offered disagreement first and the sample is not complete: "
                "the outputs humans scored are not a uniform sample, no corrected estimate")
    return None


def _scores(study: StudyData, decided: StudyDecisions | None
            ) -> list[tuple[str, pd.Series, dict[str, pd.Series]]]:
    """(measure, human score per output, {judge: its score per output})."""
    out = []
    humans = study.human_scores.groupby(["criterion", "output_id"]).score.mean()
    scored = set(humans.index.get_level_values(0))
    for criterion in dict.fromkeys(study.criteria.name):
        if criterion not in scored:
            continue
        sub = study.judge_scores[study.judge_scores.criterion == criterion]
        mine = {str(j): g.groupby("output_id").score.mean() for j, g in sub.groupby("judge")}
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


def leaderboard_table(study: StudyData, decided: StudyDecisions | None = None, *,
                      conf: float = 0.95) -> pd.DataFrame:
    """The ``leaderboard.csv`` table (module docstring)."""
    mode = str(study.design.get("mode", "none"))
    scored = set(study.human_scores.output_id) | set(study.human_answers.output_id)
    wanted = study.offered or set(study.outputs.output_id)
    problem = design_problem(study.design, complete=wanted <= scored)
    generator = study.outputs.set_index("output_id").generator
    rows: list[dict[str, Any]] = []
    for measure, human, by_judge in _scores(study, decided):
        for judge, judged in sorted(by_judge.items()):
            block = []
            for gen in sorted(generator.unique().astype(str)):
                ids = generator.index[generator.astype(str) == gen]
                f_all = judged.reindex(ids).dropna()
                y = human.reindex(f_all.index).dropna()
                fu = f_all.drop(y.index)
                result = ppi_mean(y.to_numpy(), f_all.reindex(y.index).to_numpy(),
                                  fu.to_numpy(), conf=conf).iloc[0]
                row: dict[str, Any] = {
                    "judge": judge, "measure": measure, "generator": gen, "design": mode,
                    "n_outputs": len(f_all), **{k: result[k] for k in (
                        "n_labeled", "n_unlabeled", "judge_mean", "human_mean", "human_lo",
                        "human_hi", "estimate", "lo", "hi", "lam")},
                    "note": result["note"]}
                if problem:
                    row.update(estimate=np.nan, lo=np.nan, hi=np.nan, lam=np.nan,
                               note="; ".join(x for x in (problem, row["note"]) if x))
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
