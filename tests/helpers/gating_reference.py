"""An independent statement of the DSG gating rule, for tests: the annotation page's own
``annotation.work.checklist.applicable``, applied answerer by answerer and output by output
(a slow loop, unlike the vectorized ``annotation.results.decisions``)."""

from __future__ import annotations

import pandas as pd

from annotation.work.checklist import QuestionView, applicable


def gated_answers(answers: pd.DataFrame, questions: pd.DataFrame, who: str) -> pd.DataFrame:
    """Per (who, output, question): the scored answer. A question that is not applicable
    (a parent, or an ancestor, answered "no") scores its failing answer whatever was said;
    otherwise the answerer's own answer (cant_tell included); unanswered and applicable:
    no row."""
    fail = {q: ("no" if p == "yes" else "yes")
            for q, p in zip(questions.question_id, questions.pass_answer, strict=True)}
    views = {}
    for checklist, qs in questions.groupby("checklist_id"):
        views[checklist] = [QuestionView(q, "", depends_on=tuple(d))
                            for q, d in zip(qs.question_id, qs.depends_on, strict=True)]
    checklist_of = dict(zip(questions.question_id, questions.checklist_id, strict=True))
    rows = []
    for (person, output), group in answers.groupby([who, "output_id"], sort=True):
        given = dict(zip(group.question_id, group.answer, strict=True))
        checklist = checklist_of[group.question_id.iloc[0]]
        gate = applicable(views[checklist], given)
        for view in views[checklist]:
            q = view.question_id
            if not gate[q]:
                rows.append((person, output, q, fail[q]))
            elif q in given:
                rows.append((person, output, q, given[q]))
    return pd.DataFrame(rows, columns=[who, "output_id", "question_id", "answer"])
