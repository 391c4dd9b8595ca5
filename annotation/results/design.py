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
UNIFORM = ("none", "all", "uniform", "stratified", "paired")


def design_table(study: StudyData) -> pd.DataFrame:
    """The ``study_design.csv`` row (module docstring)."""
    d: dict[str, Any] = study.design
    mode = str(d.get("mode", "none"))
    annotated = set(study.human_scores.output_id) | set(study.human_answers.output_id)
    sample = study.offered or frozenset(study.outputs.output_id)
    complete = sample <= annotated
    notes = []
    uniform = mode in UNIFORM
    if mode == "validation":
        notes.append("questions balanced by answer: agreement on them is not the "
                     "benchmark's, accuracy there is the point")
    elif mode == "paired":
        notes.append("the same tasks for every generator: uniform over tasks")
    elif mode == "stratified" and d.get("per_stratum"):
        notes.append("equal numbers per stratum: weigh strata by their size for "
                     "benchmark-wide figures")
    if d.get("disagreement_first_ever") and not complete:
        uniform = False
        notes.append("offered disagreement first, and not all annotated yet: the annotated "
                     "outputs over-represent disagreements")
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
