"""checklist_comparisons.csv aligns keys as integer codes: the same rows as the plain
pandas alignment (``Index.intersection`` of the two judges and the reference, judge A's
order) it replaced."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annotation.results.checklist import (
    mcnemar_table,
    study_decisions,
)
from annotation.results.study import load_study
from annotation.stats.agreement import mcnemar_exact, paired_flags
from annotation.stats.clustered import clustered_mcnemar
from annotation.store import Store
from tests.helpers.plain_pairs import plain_pairs


def _plain_rows(study) -> list[dict[str, object]]:
    rows = []
    for reference, a, b, common, right_a, right_b in plain_pairs(study_decisions(study), study):
        if not len(common):
            continue
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
