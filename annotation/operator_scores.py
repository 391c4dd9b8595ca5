"""Checklist pass rates per operator, as TRACE-Bench scores them: the rows of ``operators.csv``.

* A question **passes** when the answer equals its ``pass_answer`` (TRACE phrases some
  questions negatively, so a pass can be "no"); ``cant_tell`` is no decision and is left out.
* **Gating** (DSG: Cho et al., *Davidsonian Scene Graph*, ICLR 2024, Sec. 3): when a parent
  question is answered "no", its dependent questions are not asked and count as **failed**
  (DSG assigns them "no"); the rule is applied transitively, and only where the answerer
  gave no answer of their own to the child.
* **Operator scores** (TRACE-Bench, seed 002, Sec. 3.4): the questions of one operator
  instance (same ``operator`` and ``target``) give the instance's pass fraction; each
  instance weighs 1 in its operator's score on an output; the case score (operator
  ``all``) is the mean over every instance of the output.
* Human scores per output are the mean of each annotator's own scores; a judge's are its
  own. Per judge and operator: Pearson, Spearman and MAE between judge and human scores over
  the outputs both scored (scipy).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from annotation.study import StudyData

ALL = "all"


def passes(answers: pd.DataFrame, questions: pd.DataFrame, who: str) -> pd.DataFrame:
    """Per (who, output, question): ``passed`` in {1.0, 0.0}, gated children included.

    ``answers``: output_id, ``who``, question_id, answer. ``questions``: question_id,
    checklist_id, operator, target, pass_answer, depends_on (lists). Vectorized: the
    gating is propagated level by level over the dependency edges (the same rule as
    :func:`annotation.checklist.applicable`, which the annotation page uses).
    """
    columns = [who, "output_id", "question_id", "passed"]
    q = questions[["question_id", "checklist_id", "pass_answer"]]
    given = answers[[who, "output_id", "question_id", "answer"]].merge(q, on="question_id")
    decided = given[given.answer.isin(("yes", "no"))]
    scored = decided.assign(passed=(decided.answer == decided.pass_answer).astype(float))
    edges = questions[["question_id", "checklist_id", "depends_on"]].explode("depends_on")
    edges = edges.dropna(subset=["depends_on"]).rename(columns={"question_id": "child",
                                                                "depends_on": "parent"})
    if edges.empty or given.empty:
        return scored[columns].reset_index(drop=True)
    # (who, output, checklist) sessions, and every child question of their checklist
    sessions = given[[who, "output_id", "checklist_id"]].drop_duplicates()
    candidates = sessions.merge(edges, on="checklist_id")
    answered = given[[who, "output_id", "question_id", "answer"]]
    said = candidates.merge(answered.rename(columns={"question_id": "parent"}),
                            on=[who, "output_id", "parent"], how="left")
    gated = said[said.answer == "no"][[who, "output_id", "child"]].drop_duplicates()
    while True:  # a child of a gated (unanswered) question is gated too
        grown = candidates.merge(gated.rename(columns={"child": "parent"}),
                                 on=[who, "output_id", "parent"])[[who, "output_id", "child"]]
        grown = pd.concat([gated, grown]).drop_duplicates()
        if len(grown) == len(gated):
            break
        gated = grown
    own = answered.rename(columns={"question_id": "child"})
    gated = gated.merge(own, on=[who, "output_id", "child"], how="left")
    gated = gated[gated.answer.isna()]  # an answer of one's own counts as given
    failed = pd.DataFrame({who: gated[who], "output_id": gated.output_id,
                           "question_id": gated.child, "passed": 0.0})
    return pd.concat([scored[columns], failed[columns]], ignore_index=True)


def operator_scores(passed: pd.DataFrame, questions: pd.DataFrame, who: str) -> pd.DataFrame:
    """Per (who, output, operator) the TRACE operator score, plus operator ``all``."""
    if passed.empty:
        return pd.DataFrame(columns=[who, "output_id", "operator", "score"])
    q = questions.set_index("question_id")[["operator", "target"]].fillna("")
    merged = passed.join(q, on="question_id")
    merged["operator"] = merged["operator"].replace("", "(none)")
    instances = merged.groupby([who, "output_id", "operator", "target"]).passed.mean()
    per_operator = instances.groupby(level=[0, 1, 2]).mean().rename("score").reset_index()
    case = instances.groupby(level=[0, 1]).mean().rename("score").reset_index()
    case["operator"] = ALL
    return pd.concat([per_operator, case[[who, "output_id", "operator", "score"]]],
                     ignore_index=True)


def operators_table(study: StudyData) -> pd.DataFrame:
    """``operators.csv``: judge, operator, n_items, pearson, spearman, mae."""
    human = operator_scores(passes(study.human_answers, study.questions, "annotator"),
                            study.questions, "annotator")
    human_mean = human.groupby(["output_id", "operator"]).score.mean()
    judges = operator_scores(passes(study.judge_answers, study.questions, "judge"),
                             study.questions, "judge")
    rows = []
    for (judge, operator), js in judges.groupby(["judge", "operator"], sort=True):
        scores = js.set_index("output_id").score
        try:
            ref = human_mean.xs(operator, level="operator")
        except KeyError:
            continue
        common = scores.index.intersection(ref.index)
        x, y = scores[common].to_numpy(), ref[common].to_numpy()
        varied = len(common) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0
        rows.append({
            "judge": judge, "operator": operator, "n_items": len(common),
            "pearson": stats.pearsonr(x, y)[0] if varied else np.nan,
            "spearman": stats.spearmanr(x, y)[0] if varied else np.nan,
            "mae": float(np.mean(np.abs(x - y))) if len(common) else np.nan,
        })
    return pd.DataFrame(rows, columns=["judge", "operator", "n_items", "pearson", "spearman",
                                       "mae"])
