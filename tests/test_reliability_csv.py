"""The columns of reliability.csv: the original ones in place, the new ones appended."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from annotation.results.reliability import CHECKLIST, COLUMNS, reliability_table
from annotation.stats import reliability as rel
from annotation.stats.reliability import alpha_table, icc
from tests.test_reliability_ac1 import criterion, long_scores, make_study

ORIGINAL = ["criterion", "group", "n_items", "n_annotators", "alpha_interval", "alpha_ordinal",
            "alpha_nominal", "alpha_lo", "alpha_hi", "ci_level", "pct_agreement", "ac1",
            "fleiss_kappa", "icc_a1", "icc_ak"]
APPENDED = ["n_outputs", "prevalence_yes", "icc_method", "icc_a1_lo", "icc_a1_hi", "icc_ak_lo",
            "icc_ak_hi", "judge_ceiling", "n_boot", "note"]


def checklist_long(answers: np.ndarray) -> pd.DataFrame:
    """outputs x questions x raters array of answers, in long form."""
    rows = [(f"o{i:02d}", f"ann{r}", f"q{j}", answers[i, j, r])
            for i, j, r in np.ndindex(answers.shape) if answers[i, j, r] is not None]
    return pd.DataFrame(rows, columns=["output_id", "annotator", "question_id", "answer"])


def test_columns_are_the_original_then_the_new_ones():
    assert COLUMNS == ORIGINAL + APPENDED
    rng = np.random.default_rng(51)
    x = rng.integers(1, 11, (12, 3)).astype(float)
    answers = np.where(rng.random((12, 4, 3)) < 0.7, "yes", "no").astype(object)
    study = make_study(long_scores(x), checklist_long(answers), [criterion()])
    table = reliability_table(study, n_boot=50)
    assert list(table.columns) == ORIGINAL + APPENDED
    assert list(table.criterion) == ["quality", CHECKLIST]


def test_prevalence_outputs_and_notes_of_the_checklist_row():
    rng = np.random.default_rng(52)
    answers = np.where(rng.random((15, 4, 3)) < 0.8, "yes", "no").astype(object)
    answers[0, 0, 0] = "cant_tell"
    answers[1, :, :] = "cant_tell"  # output o01: no usable answer at all
    answers[2, 1, 2] = None
    long = checklist_long(answers)
    row = reliability_table(make_study(answers=long), n_boot=50).iloc[0]
    usable = [a for a in answers.ravel() if a in ("yes", "no")]
    assert row.prevalence_yes == pytest.approx(usable.count("yes") / len(usable))
    assert row.n_outputs == 14 and row.n_items == 14 * 4
    assert row.icc_method == "" and math.isnan(row.icc_a1) and math.isnan(row.judge_ceiling)
    assert "non-numeric values: no interval/ordinal/ratio alpha, no ICC" in row.note.split("; ")
    assert row.n_boot == 50


def test_rating_rows_have_no_prevalence_and_a_complete_design_ceiling():
    rng = np.random.default_rng(53)
    x = np.clip(np.round(5 + 2 * rng.normal(size=(20, 1)) + rng.normal(size=(20, 3))), 1, 10)
    row = reliability_table(make_study(long_scores(x), criteria=[criterion()]),
                            n_boot=50).iloc[0]
    assert math.isnan(row.prevalence_yes) and row.n_outputs == 20
    t = icc(x).set_index("type")
    assert row.icc_method == rel.ICC_COMPLETE
    assert row.judge_ceiling == pytest.approx(math.sqrt(t.loc["ICC(A,k)", "icc"]))
    assert (row.icc_ak_lo, row.icc_ak_hi) == pytest.approx(
        (t.loc["ICC(A,k)", "lo"], t.loc["ICC(A,k)", "hi"]))
    assert row.note == ""  # complete, 20 outputs, 1-10 scale: nothing to say


def test_judge_ceiling_is_nan_when_icc_ak_is_not_positive():
    """Raters who disagree more within items than items differ: McGraw & Wong's ICC(A,k)
    is negative on this complete design (MSR < MSE)."""
    x = np.array([[6, 4, 5], [3, 7, 5], [7, 6, 6], [4, 6, 3], [5, 5, 7], [3, 7, 3]], float)
    t = icc(x).set_index("type")
    assert t.loc["ICC(A,k)", "icc"] < 0
    row = reliability_table(make_study(long_scores(x), criteria=[criterion()]),
                            n_boot=0).iloc[0]
    assert row.icc_ak == pytest.approx(t.loc["ICC(A,k)", "icc"])
    assert math.isnan(row.judge_ceiling)
    assert "judge_ceiling: ICC(A,k) <= 0" in row.note.split("; ")


def test_notes_say_why_a_statistic_is_nan():
    def row(long: pd.DataFrame, **kw) -> pd.Series:
        return alpha_table(long, item_col="item", rater_col="rater", value_col="value",
                           n_boot=20, **kw).iloc[0]

    one = pd.DataFrame({"item": list("abc"), "rater": "x", "value": [1.0, 2.0, 3.0]})
    r = row(one)
    assert math.isnan(r.alpha_interval) and r.note.split("; ")[0] == "fewer than 2 annotators"
    apart = pd.DataFrame({"item": list("abcd"), "rater": list("xyxy"),
                          "value": [1.0, 2.0, 3.0, 4.0]})
    r = row(apart)
    assert math.isnan(r.alpha_interval) and math.isnan(r.icc_a1)
    assert r.note.split("; ")[0] == "no item rated by two annotators"
    same = pd.DataFrame({"item": list("aabbcc"), "rater": list("xyxyxy"), "value": "yes"})
    r = row(same, ci_level="nominal")
    assert math.isnan(r.alpha_nominal) and "constant values: alpha undefined" in r.note
    assert r.n_boot == 0
    x = np.array([[1, 2], [2, 2], [3, 4], [5, 4], [2, 1]], float)
    small = pd.DataFrame([(f"u{i}", f"r{j}", v) for (i, j), v in np.ndenumerate(x)],
                         columns=["item", "rater", "value"])
    r = row(small)
    assert math.isnan(r.alpha_lo) and r.n_boot == 0
    assert "fewer than 10 items: no bootstrap interval" in r.note.split("; ")
    assert r.icc_method == rel.ICC_COMPLETE and math.isfinite(r.icc_a1_lo)  # F-based: no bootstrap
