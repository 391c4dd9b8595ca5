"""TRACE operator scores: pass answers, DSG gating, instance weighting, judge vs humans."""

from __future__ import annotations

import pandas as pd
import pytest

from annotation.cli import main
from annotation.operator_scores import ALL, operator_scores, operators_table, passes
from annotation.store import Store
from annotation.study import load_study

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


def test_operators_table_on_the_demo(tmp_path):
    db = tmp_path / "demo.db"
    assert main(["demo", "--db", str(db), "--quiet"]) == 0
    with Store.open(db) as store:
        study = load_study(store)
    table = operators_table(study)
    assert set(table.judge) == {"gpt-5", "gemini-2.5-pro", "qwen3-vl"}
    assert {"f", "g", "⊕", "C", ALL} <= set(table.operator)
    row = table[(table.judge == "gpt-5") & (table.operator == ALL)].iloc[0]
    assert row.n_items >= 10
    assert -1 <= row.pearson <= 1 and 0 <= row.mae <= 1
