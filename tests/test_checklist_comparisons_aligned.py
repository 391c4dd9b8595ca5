"""checklist_comparisons.csv aligns keys as integer codes: the same rows as the plain
pandas alignment (``Index.intersection`` of the two judges and the reference, judge A's
order) it replaced."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from annotation.results.checklist import (
    ENSEMBLE,
    EXPECTED,
    HUMAN_MAJORITY,
    mcnemar_table,
    study_decisions,
)
from annotation.results.study import load_study
from annotation.stats.agreement import mcnemar_exact, paired_flags
from annotation.stats.clustered import clustered_mcnemar
from annotation.store import Store


def _plain_rows(study) -> list[dict[str, object]]:
    d = study_decisions(study)
    judges = d.judges[(d.judges.judge != ENSEMBLE) & d.judges.answer.isin(("yes", "no"))]
    expected = judges.drop_duplicates("key").merge(
        study.questions[["question_id", "pass_answer"]], on="question_id")
    references = {HUMAN_MAJORITY: d.majority.answer,
                  EXPECTED: expected.set_index("key").pass_answer}
    by_judge = {str(j): g.set_index("key").answer for j, g in judges.groupby("judge")}
    rows = []
    for reference, ref in references.items():
        for a, b in itertools.combinations(sorted(by_judge), 2):
            common = by_judge[a].index.intersection(by_judge[b].index).intersection(ref.index)
            if not len(common):
                continue
            right_a = (by_judge[a][common] == ref[common]).to_numpy()
            right_b = (by_judge[b][common] == ref[common]).to_numpy()
            outputs = [k.split("\x1f", 1)[0] for k in common]
            exact = mcnemar_exact(list(right_a), list(right_b))
            clustered = clustered_mcnemar(list(right_a), list(right_b), outputs,
                                          n_boot=200, seed=0).iloc[0]
            rows.append({"reference": reference, "judge_a": a, "judge_b": b,
                         "n_decisions": exact.n, "mcnemar_p": exact.p,
                         "a_right_b_wrong": exact.b, "diff_lo": clustered.diff_lo,
                         "diff_hi": clustered.diff_hi, "clustered_p": clustered.clustered_p})
    return rows


@pytest.mark.slow
def test_mcnemar_table_matches_the_plain_alignment(tmp_path, engine_demo):
    db = engine_demo
    with Store.open(db) as store:
        study = load_study(store)
    table = mcnemar_table(study, n_boot=200)
    plain = pd.DataFrame(_plain_rows(study))
    assert len(table) == len(plain) > 0
    pd.testing.assert_frame_equal(table[list(plain.columns)].reset_index(drop=True), plain,
                                  check_exact=True, check_dtype=False)


def test_paired_flags_uses_boolean_arrays_as_they_are():
    a, b = np.array([True, False, True]), np.array([False, False, True])
    xa, xb, keep = paired_flags(a, b)
    assert xa is a and xb is b and keep.all()
    xa, xb, keep = paired_flags([True, None, 1], [0, True, np.nan])
    assert xa.tolist() == [True] and xb.tolist() == [False]
    assert keep.tolist() == [True, False, False]
    with pytest.raises(ValueError, match="length mismatch"):
        paired_flags(a, b[:2])
