"""``decisions`` (vectorized gating) against a row-by-row reference on random checklists."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from annotation.results.decisions import decisions


def _reference(answers: pd.DataFrame, questions: pd.DataFrame, unanswered: str,
               universe: pd.DataFrame) -> dict[tuple[str, str, str], tuple]:
    """Per (annotator, output, question): answer, passed, own answer, gated, imputed."""
    by_id = {q.question_id: q for q in questions.itertuples(index=False)}
    own = {(a.annotator, a.output_id, a.question_id): a.answer
           for a in answers.itertuples(index=False)}
    out: dict[tuple[str, str, str], tuple] = {}

    def row(key: tuple[str, str, str], said: str | None, gated: bool, imputed: bool) -> None:
        q = by_id[key[2]]
        fail = {"yes": "no", "no": "yes"}[q.pass_answer]
        answer = fail if gated or imputed else said
        passed = float(answer == q.pass_answer) if answer in ("yes", "no") else math.nan
        out[key] = (answer, passed, said, gated, imputed)

    for who, output in {(w, o) for w, o, _ in own}:
        checklist = by_id[next(q for w, o, q in own if (w, o) == (who, output))].checklist_id
        members = [q for q in questions.itertuples(index=False) if q.checklist_id == checklist]
        gated: set[str] = set()
        while True:
            grown = {q.question_id for q in members if any(
                own.get((who, output, p)) == "no" or p in gated for p in q.depends_on)}
            if grown == gated:
                break
            gated = grown
        for q in members:
            key = (who, output, q.question_id)
            if key in own or q.question_id in gated:
                row(key, own.get(key), q.question_id in gated, False)
    if unanswered == "fail":
        for who in answers.annotator.unique():
            for u in universe.itertuples(index=False):
                for q in questions[questions.checklist_id == u.checklist_id].itertuples():
                    if (who, u.output_id, q.question_id) not in out:
                        row((who, u.output_id, q.question_id), None, False, True)
    return out


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("unanswered", ["omit", "fail"])
def test_decisions_match_row_by_row_reference(seed: int, unanswered: str) -> None:
    rng = np.random.default_rng(seed)
    questions = pd.DataFrame([
        {"question_id": f"{c}.q{i}", "checklist_id": c,
         "pass_answer": str(rng.choice(["yes", "no"])),
         "depends_on": [f"{c}.q{j}" for j in range(i) if rng.random() < 0.35]}
        for c in ("c0", "c1") for i in range(int(rng.integers(1, 6)))])
    universe = pd.DataFrame({"output_id": [f"o{i}" for i in range(4)],
                             "checklist_id": [str(c) for c in rng.choice(["c0", "c1"], 4)]})
    answers = pd.DataFrame([
        {"output_id": u.output_id, "annotator": who, "question_id": q,
         "answer": str(rng.choice(["yes", "no", "cant_tell"]))}
        for u in universe.itertuples() for who in ("a", "b")
        for q in questions.question_id[questions.checklist_id == u.checklist_id]
        if rng.random() < 0.7], columns=["output_id", "annotator", "question_id", "answer"])
    got = decisions(answers, questions, "annotator", unanswered=unanswered,  # type: ignore[arg-type]
                    universe=universe)
    keys = list(zip(got.annotator, got.output_id, got.question_id, strict=True))
    assert keys == sorted(keys)
    expected = _reference(answers, questions, unanswered, universe)
    assert set(keys) == set(expected)
    for r in got.itertuples(index=False):
        answer, passed, said, gated, imputed = expected[(r.annotator, r.output_id,
                                                         r.question_id)]
        assert (r.answer, r.own_answer, r.gated, r.imputed) == (answer, said, gated, imputed)
        assert r.passed == passed or (math.isnan(r.passed) and math.isnan(passed))
