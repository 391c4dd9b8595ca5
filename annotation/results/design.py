"""``study_design.csv``: how the items humans annotated were chosen, beside the statistics.

A judge-validation study must say how its items were chosen: agreement measured on a
uniform sample describes the benchmark, agreement on items chosen for disagreement or
balanced by answer does not (:mod:`annotation.work.sampling`). One row: the design of
the current sample as recorded in the history (``workflow.sample``), whether outputs were
offered disagreement first, how much of the sample humans have annotated, and
``uniform``: whether the annotated outputs are a uniform sample of the outputs (what the
leaderboard's correction and any benchmark-wide reading of the agreement tables need).
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from annotation.results.study import StudyData

COLUMNS = ["design", "seed", "size", "drawn", "by", "per_stratum", "generators", "balance",
           "questions", "disagreement_first", "disagreement_first_ever", "n_sample",
           "n_annotated", "uniform", "note"]


def not_uniform(design: dict[str, Any], complete: bool = True) -> str | None:
    """Why the outputs humans scored in the current sample are not a uniform sample of the
    outputs (None: they are, every output of a generator equally likely). The one rule the
    design row and the leaderboard's correction share.

    Equal-probability designs qualify: no sample (every output offered, each annotator in
    their own random order), uniform, stratified *in proportion* (every stratum sampled at
    the same rate) and paired (tasks drawn uniformly, all their outputs of the chosen
    generators). Not: a stratified sample with equal numbers per stratum (small strata
    over-represented), the validation set (balanced by answer), and a sample offered
    disagreement first until all of it is annotated (``complete``)."""
    mode = str(design.get("mode", "none"))
    if mode == "validation":
        return ("the sample is the validation set, balanced by answer, not a uniform "
                "sample of the outputs")
    if mode == "stratified" and design.get("per_stratum"):
        return ("the sample has equal numbers per stratum, not in proportion: small strata "
                "are over-represented")
    if mode not in ("none", "all", "uniform", "stratified", "paired"):
        return f"the sample ({mode}) is not a uniform sample of the outputs"
    if design.get("disagreement_first_ever") and not complete:
        return ("outputs were offered disagreement first and the sample is not complete: "
                "the annotated outputs over-represent disagreements")
    return None


def design_table(study: StudyData) -> pd.DataFrame:
    """The ``study_design.csv`` row (module docstring)."""
    d: dict[str, Any] = study.design
    mode = str(d.get("mode", "none"))
    annotated = set(study.human_scores.output_id) | set(study.human_answers.output_id)
    sample = study.offered or frozenset(study.outputs.output_id)
    complete = sample <= annotated
    problem = not_uniform(d, complete)
    uniform = problem is None
    notes = [problem] if problem else []
    if mode == "paired":
        notes.append("the same tasks for every generator: uniform over tasks")
    if mode in ("none", "all"):
        notes.append("no sample drawn: annotators are offered every output, each in their "
                     "own random order")
    row = {"design": mode, **{k: _cell(d.get(k)) for k in COLUMNS[1:9]},
           "disagreement_first": bool(d.get("disagreement_first")),
           "disagreement_first_ever": bool(d.get("disagreement_first_ever")),
           "n_sample": len(sample), "n_annotated": len(sample & annotated),
           "uniform": uniform, "note": "; ".join(notes)}
    return pd.DataFrame([row], columns=COLUMNS)


def _cell(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, list | dict) else value


DESIGN_WORDS = {"none": "no sample drawn (every annotatable output is offered)",
                "all": "no sample drawn (every annotatable output is offered)",
                "uniform": "a uniform random sample", "stratified": "a stratified sample",
                "paired": "paired tasks (the same tasks for every generator)",
                "validation": "the balanced validation set (questions half yes, half no)"}


def design_sentence(design: pd.DataFrame) -> str:
    """The ``study_design.csv`` row as one sentence for report.html and the Judge
    validation page: the design, how much of it is annotated, and whether it is a uniform
    sample of the benchmark's outputs."""
    if design.empty:
        return ""
    row = design.iloc[0]
    words = DESIGN_WORDS.get(str(row.design), str(row.design))
    seed = "" if row.design in ("none", "all") or row.seed is None or row.seed != row.seed \
        else f", seed {row.seed}"
    notes = [n for n in str(row.note or "").split("; ")
             if n and not n.startswith("no sample drawn")]
    return (f"How the items were chosen: {words}{seed}. {row.n_annotated} of "
            f"{row.n_sample} outputs offered have human answers"
            + "".join(f"; {n}" for n in notes)
            + ("." if row.uniform else
               ". They are NOT a uniform sample of the benchmark's outputs."))
