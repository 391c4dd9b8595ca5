"""``validation_set.csv``: each judge on the balanced validation set, against the humans.

"TIIF-Bench: How Does Your T2I Model Follow Your Instructions?", Key Design 4 and
Sec. 3.4: the evaluator's accuracy on human answers to a question-level set balanced by
expected answer (280 "yes" / 280 "no" of 560 questions over 300 images; drawn by
:mod:`annotation.work.validation_set`). Here, per judge (and the majority of the VLM
judges): accuracy and balanced accuracy against the human majority, with
cluster-bootstrap intervals over images (the rows of ``checklist.csv``, computed by the
same :func:`annotation.results.checklist.checklist_table` on the set's decisions only),
the judge against the leave-one-out majority, and the human baseline (each annotator
against the others' majority). The set's make-up is in every row: images, questions,
expected yes/no, and the human majority's yes/no (a set balanced by expected answer need
not be balanced by what the humans said: the gap is itself a finding about the expected
answers).
"""

from __future__ import annotations

import pandas as pd

from annotation.results.checklist import (
    HUMAN_LOO,
    HUMAN_MAJORITY,
    LOO_MAJORITY,
    SEP,
    StudyDecisions,
    checklist_table,
)
from annotation.results.study import StudyData

COLUMNS = ["judge", "reference", "paired_judge", "n_images", "n_questions", "expected_yes",
           "expected_no", "human_yes", "human_no", "n_decisions", "accuracy", "accuracy_lo",
           "accuracy_hi", "balanced_accuracy", "balanced_accuracy_lo", "balanced_accuracy_hi",
           "kappa", "kappa_lo", "kappa_hi", "judge_yes_rate", "n_items", "n_unanswered",
           "n_boot", "note"]


def restrict(decided: StudyDecisions, keys: set[str]) -> StudyDecisions:
    """The decisions of ``decided`` whose key (``output_id + SEP + question_id``) is in
    ``keys``."""
    return StudyDecisions(
        human=decided.human[decided.human.key.isin(keys)],
        judges=decided.judges[decided.judges.key.isin(keys)],
        majority=decided.majority[decided.majority.index.isin(keys)],
        loo=decided.loo[decided.loo.key.isin(keys)].reset_index(drop=True))


def validation_table(study: StudyData, decided: StudyDecisions, *, n_boot: int = 1000,
                     seed: int = 0) -> pd.DataFrame:
    """The ``validation_set.csv`` table (module docstring); empty without a set."""
    pairs = study.validation
    if pairs.empty:
        return pd.DataFrame(columns=COLUMNS)
    keys = {f"{o}{SEP}{q}" for o, q in zip(pairs.output_id, pairs.question_id, strict=True)}
    mine = restrict(decided, keys)
    table = checklist_table(study, per_annotator=False, decided=mine, n_boot=n_boot,
                            seed=seed, dawid_skene=False)
    if table.empty:
        return pd.DataFrame(columns=COLUMNS)
    table = table[table.reference.isin((HUMAN_MAJORITY, LOO_MAJORITY))
                  & (table.group == "all")]
    expected = pairs.merge(study.questions[["question_id", "pass_answer"]], on="question_id",
                           how="left").pass_answer.value_counts()
    majority = mine.majority.answer.value_counts()
    make_up = {"n_images": pairs.output_id.nunique(), "n_questions": len(pairs),
               "expected_yes": int(expected.get("yes", 0)),
               "expected_no": int(expected.get("no", 0)),
               "human_yes": int(majority.get("yes", 0)), "human_no": int(majority.get("no", 0))}
    table = table.rename(columns={"agreement": "accuracy", "agreement_lo": "accuracy_lo",
                                  "agreement_hi": "accuracy_hi"}).assign(**make_up)
    order = {HUMAN_MAJORITY: 0, LOO_MAJORITY: 1}
    table = table.assign(_human=table.judge == HUMAN_LOO,
                         _ref=table.reference.map(order)).sort_values(
        ["_human", "_ref", "judge", "paired_judge"], kind="stable")
    return table[COLUMNS].reset_index(drop=True)
