"""Small StudyData builders for the statistics tests: tidy frames in memory, no database.

``rating_study`` simulates ratings on a 1-10 scale (a latent quality per output, annotators
and judges as noisy copies of it); ``checklist_study`` simulates yes/no checklists with an
output-level effect. Both return :class:`annotation.results.study.StudyData`, the input of every
report table builder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from annotation.results.study import StudyData

CRITERION = "quality"


def criteria_frame(names: Sequence[str] = (CRITERION,), lo: float = 1, hi: float = 10,
                   step: float | None = 1) -> pd.DataFrame:
    return pd.DataFrame({"name": list(names), "label": [n.title() for n in names],
                         "min": lo, "max": hi, "step": step, "level": "interval",
                         "rubric": None, "position": range(len(names))})


def judges_frame(names: Sequence[str], scales: Mapping[str, tuple[float, float]] | None = None,
                 kinds: Mapping[str, str] | None = None) -> pd.DataFrame:
    scales = scales or {}
    kinds = kinds or {}
    return pd.DataFrame({"name": list(names), "kind": [kinds.get(n, "vlm") for n in names],
                         "scale_min": [scales.get(n, (np.nan, np.nan))[0] for n in names],
                         "scale_max": [scales.get(n, (np.nan, np.nan))[1] for n in names]})


def outputs_frame(ids: Sequence[str], generators: Sequence[str] | None = None,
                  checklist: str = "c") -> pd.DataFrame:
    gens = list(generators) if generators is not None else ["g"] * len(ids)
    return pd.DataFrame({"output_id": list(ids), "task_id": [i.split("/")[0] for i in ids],
                         "generator": gens, "missing": 0, "checklist_id": checklist})


def empty_answers(who: str) -> pd.DataFrame:
    return pd.DataFrame(columns=["output_id", who, "question_id", "answer"])


def empty_scores(who: str) -> pd.DataFrame:
    return pd.DataFrame(columns=["output_id", who, "criterion", "score"])


def questions_frame(n: int, checklist: str = "c", depends: Mapping[int, Sequence[int]] | None
                    = None, pass_answers: Mapping[int, str] | None = None,
                    operators: Sequence[str] | None = None) -> pd.DataFrame:
    depends = depends or {}
    pass_answers = pass_answers or {}
    ops = list(operators) if operators is not None else ["f"] * n
    return pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n)], "checklist_id": checklist,
        "operator": ops, "target": [f"{o}{i % 2}" for i, o in enumerate(ops)],
        "pass_answer": [pass_answers.get(i, "yes") for i in range(n)],
        "depends_on": [[f"q{p}" for p in depends.get(i, ())] for i in range(n)],
    })


def rating_study(rng: np.random.Generator, *, n_outputs: int = 80, n_annotators: int = 3,
                 judges: Mapping[str, float] | None = None, noise: float = 1.2,
                 judge_outputs: Mapping[str, int] | None = None, p_rate: float = 1.0,
                 generators: int = 1) -> StudyData:
    """Outputs with a latent quality ~ N(5.5, 2); annotators = quality + N(0, noise);
    each judge = quality + N(0, its noise), on ``judge_outputs[judge]`` outputs only (the
    first ones) if given; scores rounded and clipped to 1..10; each annotator rates each
    output with probability ``p_rate``."""
    judges = {"judge": noise} if judges is None else dict(judges)
    ids = [f"t{i}/g{i % generators}" for i in range(n_outputs)]
    quality = rng.normal(5.5, 2.0, n_outputs)

    def score(sd: float, n: int) -> np.ndarray:
        return np.clip(np.round(quality[:n] + rng.normal(0, sd, n)), 1, 10)

    humans = []
    for a in range(n_annotators):
        s = score(noise, n_outputs)
        keep = rng.random(n_outputs) < p_rate
        humans += [(o, f"ann{a}", CRITERION, v) for o, v, k in zip(ids, s, keep, strict=True)
                   if k]
    judged = []
    for name, sd in judges.items():
        n = (judge_outputs or {}).get(name, n_outputs)
        judged += [(o, name, CRITERION, v) for o, v in zip(ids[:n], score(sd, n), strict=True)]
    return StudyData(
        human_scores=pd.DataFrame(humans, columns=["output_id", "annotator", "criterion",
                                                   "score"]),
        judge_scores=pd.DataFrame(judged, columns=["output_id", "judge", "criterion", "score"]),
        human_answers=empty_answers("annotator"), judge_answers=empty_answers("judge"),
        questions=questions_frame(0), outputs=outputs_frame(ids, [i.split("/")[1] for i in ids]),
        criteria=criteria_frame(), judges=judges_frame(list(judges)))


def checklist_study(rng: np.random.Generator, *, n_outputs: int = 60, n_questions: int = 10,
                    n_annotators: int = 3, judges: Mapping[str, float] | None = None,
                    human_error: float = 0.1, output_sd: float = 1.5,
                    judge_output_sd: float = 1.0) -> StudyData:
    """Yes/no checklists with output-level correlation: each output has a latent that
    shifts the probability that its questions' true answers are yes (logit N(1, output_sd))
    and a latent that shifts each judge's error rate on it (logit scale, judge_output_sd);
    annotators err independently with ``human_error``."""
    judges = {"judge": 0.12} if judges is None else dict(judges)
    ids = [f"t{i}/g" for i in range(n_outputs)]
    qs = questions_frame(n_questions)
    logit = rng.normal(1.0, output_sd, n_outputs)
    truth = rng.random((n_outputs, n_questions)) < 1 / (1 + np.exp(-logit))[:, None]

    def flip(values: np.ndarray, p: np.ndarray) -> np.ndarray:
        return np.where(rng.random(values.shape) < p, ~values, values)

    def long(values: np.ndarray, who: str, name: str) -> list[tuple]:
        return [(ids[i], name, f"q{j}", "yes" if values[i, j] else "no")
                for i in range(n_outputs) for j in range(n_questions)]

    humans = []
    for a in range(n_annotators):
        humans += long(flip(truth, np.full(truth.shape, human_error)), "annotator", f"ann{a}")
    judged = []
    for name, err in judges.items():
        shift = rng.normal(0, judge_output_sd, n_outputs)
        p = 1 / (1 + np.exp(-(np.log(err / (1 - err)) + shift)))[:, None]
        judged += long(flip(truth, np.broadcast_to(p, truth.shape)), "judge", name)
    return StudyData(
        human_scores=empty_scores("annotator"), judge_scores=empty_scores("judge"),
        human_answers=pd.DataFrame(humans, columns=["output_id", "annotator", "question_id",
                                                    "answer"]),
        judge_answers=pd.DataFrame(judged, columns=["output_id", "judge", "question_id",
                                                    "answer"]),
        questions=qs, outputs=outputs_frame(ids), criteria=criteria_frame([]),
        judges=judges_frame(list(judges)))
