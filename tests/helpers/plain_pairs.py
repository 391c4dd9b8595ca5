"""The plain pandas alignment of two judges' checklist decisions on a reference: the
reference ``checklist_comparisons.csv`` (McNemar) is checked against (it used it before
the integer-code alignment of issue #18)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pandas as pd

from annotation.results.checklist import ENSEMBLE, EXPECTED, HUMAN_MAJORITY, StudyDecisions
from annotation.results.study import StudyData


def plain_pairs(d: StudyDecisions, study: StudyData
                ) -> Iterator[tuple[str, str, str, pd.Index, np.ndarray, np.ndarray]]:
    """``(reference, judge A, judge B, common keys, A right, B right)`` for each reference
    (the human majority, the expected answer) and pair of judges (sorted names, no
    ensemble), aligned by ``Index.intersection`` on the string keys, judge A's order."""
    judges = d.judges[(d.judges.judge != ENSEMBLE) & d.judges.answer.isin(("yes", "no"))]
    expected = judges.drop_duplicates("key").merge(
        study.questions[["question_id", "pass_answer"]], on="question_id")
    references = {HUMAN_MAJORITY: d.majority.answer,
                  EXPECTED: expected.set_index("key").pass_answer}
    by_judge = {str(j): g.set_index("key").answer for j, g in judges.groupby("judge")}
    for reference, ref in references.items():
        for a, b in itertools.combinations(sorted(by_judge), 2):
            common = by_judge[a].index.intersection(by_judge[b].index).intersection(ref.index)
            yield (reference, a, b, common, (by_judge[a][common] == ref[common]).to_numpy(),
                   (by_judge[b][common] == ref[common]).to_numpy())
