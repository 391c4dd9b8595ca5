"""TRACE operator scores: pass answers, DSG gating, instance weighting, judge vs humans."""

from __future__ import annotations

import pandas as pd
import pytest

from annotation.results.operators import ALL, operator_scores, operators_table, passes
from annotation.results.study import load_study
from annotation.store import Store

QUESTIONS = pd.DataFrame([
    # instance f/f1: two questions; q2 depends on q1
    ("q1", "c", "f", "f1", "yes", []),
    ("q2", "c", "f", "f1", "yes", ["q1"]),
    # instance f/f2: one question
    ("q3", "c", "f", "f2", "yes", []),
    # instance C/duplication: negatively phrased, passes on "no"
    ("q4", "c", "C", "C, duplication", "no", []),
], columns=["question_id", "checklist_id", "operator", "target", "pass_answer", "depends_on"])


def answers(who: str, values: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame([("o1", who, q, a) for q, a in values.items()],
                        columns=["output_id", "annotator", "question_id", "answer"])


def test_pass_answers_gating_and_instance_weights():
    got = passes(answers("a", {"q1": "no", "q3": "yes", "q4": "no"}), QUESTIONS, "annotator")
    by_q = dict(zip(got.question_id, got.passed))
    # q2 was not asked: its parent q1 is "no", so it counts as failed (DSG)
    assert by_q == {"q1": 0.0, "q2": 0.0, "q3": 1.0, "q4": 1.0}
    scores = operator_scores(got, QUESTIONS, "annotator").set_index("operator").score
    # f: instances f1 (0/2) and f2 (1/1) weigh 1 each -> 0.5, not 1/3 per question
    assert scores["f"] == pytest.approx(0.5)
    assert scores["C"] == pytest.approx(1.0)
    assert scores[ALL] == pytest.approx((0 + 1 + 1) / 3)


def test_cant_tell_is_no_decision():
    got = passes(answers("a", {"q1": "yes", "q2": "cant_tell", "q3": "no"}), QUESTIONS,
                 "annotator")
    assert set(got.question_id) == {"q1", "q3"}


def test_operators_table_on_the_demo(tmp_path, engine_demo):
    db = engine_demo
    with Store.open(db) as store:
        study = load_study(store)
    table = operators_table(study)
    assert set(table.judge) == {"gpt-5", "gemini-2.5-pro", "qwen3-vl",
                                "ensemble (mean of VLM judges)"}
    assert {"f", "g", "⊕", "C", ALL} <= set(table.operator)
    row = table[(table.judge == "gpt-5") & (table.operator == ALL)].iloc[0]
    assert row.n_items >= 10
    assert -1 <= row.pearson <= 1 and 0 <= row.mae <= 1


def test_vectorized_passes_equal_the_page_rule_on_random_answers():
    """passes() (vectorized) against a direct use of checklist.applicable, the rule the
    annotation page uses, on random answers over a three-level dependency chain: a
    question that is not applicable fails whatever its own answer (DSG)."""
    import random

    from annotation.work.checklist import QuestionView, applicable

    rng = random.Random(4)
    qs = pd.DataFrame([
        ("a", "c", "f", "f1", "yes", []), ("b", "c", "f", "f1", "yes", ["a"]),
        ("c", "c", "g", "g1", "no", ["b"]), ("d", "c", "g", "g1", "yes", []),
        ("e", "c", "C", "C", "yes", ["a", "d"]),
    ], columns=["question_id", "checklist_id", "operator", "target", "pass_answer",
                "depends_on"])
    rows = []
    for person in ("p1", "p2", "p3"):
        for output in range(40):
            for qid in qs.question_id:
                if rng.random() < 0.8:
                    rows.append((f"o{output}", person, qid,
                                 rng.choice(["yes", "no", "no", "cant_tell"])))
    answers = pd.DataFrame(rows, columns=["output_id", "annotator", "question_id", "answer"])
    got = passes(answers, qs, "annotator")
    views = [QuestionView(q, "", depends_on=tuple(d)) for q, d in zip(qs.question_id,
                                                                      qs.depends_on)]
    pass_answer = dict(zip(qs.question_id, qs.pass_answer))
    expected = {}
    for (person, output), group in answers.groupby(["annotator", "output_id"]):
        given = dict(zip(group.question_id, group.answer))
        gate = applicable(views, given)
        for qid in qs.question_id:
            answer = given.get(qid)
            if not gate[qid]:
                expected[(person, output, qid)] = 0.0
            elif answer in ("yes", "no"):
                expected[(person, output, qid)] = float(answer == pass_answer[qid])
    assert dict(zip(zip(got.annotator, got.output_id, got.question_id), got.passed)) == expected
