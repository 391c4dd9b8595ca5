"""Gwet's AC1 in reliability.csv: q is the number of categories of the criterion's scale.

Gwet (2008), Br J Math Stat Psychol 61:29, eq. 18-19 (multi-rater AC1 with missing
ratings): pa = mean over units rated twice or more of sum_k r_ik (r_ik - 1) / (r_i (r_i -
1)); pi_k = mean over rated units of r_ik / r_i; pe = sum_k pi_k (1 - pi_k) / (q - 1),
q = the number of categories of the scale. Checked against the irrCAC package (which
rounds to 5 decimals) and against that hand computation.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from annotation.results import reliability as human_reliability
from annotation.results.reliability import CHECKLIST, reliability_table
from annotation.results.study import StudyData
from annotation.stats.reliability import alpha_table


def _empty(*columns: str) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})


def make_study(scores: pd.DataFrame | None = None, answers: pd.DataFrame | None = None,
               criteria: list[dict] | None = None) -> StudyData:
    """A StudyData with only what reliability_table reads."""
    scores = _empty("output_id", "annotator", "criterion", "score") if scores is None else scores
    answers = (_empty("output_id", "annotator", "question_id", "answer") if answers is None
               else answers)
    crit = pd.DataFrame(criteria or [], columns=["name", "label", "min", "max", "step", "level",
                                                 "rubric", "position"])
    outputs = sorted(set(scores.output_id) | set(answers.output_id))
    return StudyData(
        human_scores=scores, judge_scores=_empty("output_id", "judge", "criterion", "score"),
        human_answers=answers,
        judge_answers=_empty("output_id", "judge", "question_id", "answer"),
        questions=_empty("question_id", "checklist_id", "operator", "target", "pass_answer",
                         "depends_on"),
        outputs=pd.DataFrame({"output_id": outputs, "task_id": outputs, "generator": "g"}),
        criteria=crit, judges=_empty("name", "kind", "scale_min", "scale_max"),
    )


def criterion(name: str = "quality", lo: float = 1, hi: float = 10,
              step: float | None = 1.0) -> dict:
    return {"name": name, "label": name, "min": lo, "max": hi, "step": step,
            "level": "interval", "rubric": "", "position": 0}


def gwet_ac1_by_hand(units: np.ndarray, categories: list) -> float:
    """Gwet (2008) eq. 18-19, written out over a units x raters array (NaN = missing)."""
    n_units = units.shape[0]
    pa_terms, pi = [], np.zeros(len(categories))
    rated = 0
    for u in range(n_units):
        vals = [v for v in units[u] if not (isinstance(v, float) and math.isnan(v))]
        r_i = len(vals)
        if r_i == 0:
            continue
        rated += 1
        r_ik = np.array([sum(v == c for v in vals) for c in categories], dtype=float)
        pi += r_ik / r_i
        if r_i >= 2:
            pa_terms.append((r_ik * (r_ik - 1)).sum() / (r_i * (r_i - 1)))
    pa = float(np.mean(pa_terms))
    pi /= rated
    q = len(categories)
    pe = float((pi * (1 - pi)).sum() / (q - 1))
    return (pa - pe) / (1 - pe)


# Two raters, 24 outputs, only 5, 6 and 7 used on a 1-10 scale: 8 agreements (2 x 5-5,
# 3 x 6-6, 3 x 7-7) and 16 disagreements (2 x 5-6, 6 x 5-7, 8 x 6-7); pa = 1/3, marginal
# shares of 5, 6, 7 = 12, 16, 20 of 48. pe(q = 3) = .3264 gives AC1 .010; pe(q = 10) =
# .0725 gives AC1 .281.
PAIRS = ([(5, 5)] * 2 + [(6, 6)] * 3 + [(7, 7)] * 3 + [(5, 6)] * 2 + [(5, 7)] * 6
         + [(6, 7)] * 8)


def five_to_seven() -> np.ndarray:
    # alternate which rater gave the larger score: AC1 does not care, but it is realistic
    return np.array([(a, b) if i % 2 else (b, a) for i, (a, b) in enumerate(PAIRS)],
                    dtype=float)


def long_scores(units: np.ndarray, name: str = "quality") -> pd.DataFrame:
    rows = [(f"o{i:03d}", f"ann{j}", name, float(v)) for (i, j), v in np.ndenumerate(units)
            if not math.isnan(v)]
    return pd.DataFrame(rows, columns=["output_id", "annotator", "criterion", "score"])


def test_scale_ac1_is_281_not_010_when_only_5_to_7_are_used():
    """Defect 1: today q = 3 observed scores gives .010; the 1-10 scale's q = 10 gives .281."""
    irr = pytest.importorskip("irrCAC.raw")
    units = five_to_seven()
    by_hand_10 = gwet_ac1_by_hand(units, list(range(1, 11)))
    by_hand_3 = gwet_ac1_by_hand(units, [5, 6, 7])
    assert round(by_hand_10, 3) == 0.281 and round(by_hand_3, 3) == 0.010
    frame = pd.DataFrame(units, columns=["a", "b"])
    ref_10 = irr.CAC(frame, categories=list(range(1, 11))).gwet()["est"]["coefficient_value"]
    ref_3 = irr.CAC(frame).gwet()["est"]["coefficient_value"]
    assert abs(by_hand_10 - ref_10) <= 0.5e-5 and abs(by_hand_3 - ref_3) <= 0.5e-5

    table = reliability_table(make_study(long_scores(units), criteria=[criterion()]),
                              n_boot=50)
    row = table.iloc[0]
    assert row.criterion == "quality"
    assert row.ac1 == pytest.approx(by_hand_10, abs=1e-12)
    assert row.pct_agreement == pytest.approx(1 / 3)


def test_scale_ac1_matches_irrcac_with_missing_ratings():
    """Random 1-10 ratings by 4 raters with missing values, on steps of 1 and of 0.5."""
    irr = pytest.importorskip("irrCAC.raw")
    rng = np.random.default_rng(21)
    for step, lo, hi in ((1.0, 1.0, 10.0), (0.5, 0.0, 5.0)):
        n_values = int(round((hi - lo) / step)) + 1
        truth = rng.integers(2, n_values - 3, 60)
        idx = np.clip(truth[:, None] + rng.integers(-1, 2, (60, 4)), 0, n_values - 1)
        units = lo + idx * step
        units[rng.random(units.shape) < 0.3] = np.nan
        cats = [lo + i * step for i in range(n_values)]
        ref = irr.CAC(pd.DataFrame(units), categories=cats).gwet()["est"]["coefficient_value"]
        table = reliability_table(
            make_study(long_scores(units), criteria=[criterion(lo=lo, hi=hi, step=step)]),
            n_boot=0)
        ours = table.iloc[0].ac1
        assert abs(ours - ref) <= 0.5e-5
        assert ours == pytest.approx(gwet_ac1_by_hand(units, cats), abs=1e-12)


def test_continuous_criterion_has_no_ac1():
    """A slider without steps has no categories: AC1 NaN, and the note says why."""
    rng = np.random.default_rng(22)
    units = np.round(rng.uniform(0, 100, (30, 3)), 1)
    table = reliability_table(
        make_study(long_scores(units), criteria=[criterion(lo=0, hi=100, step=None)]), n_boot=0)
    row = table.iloc[0]
    assert math.isnan(row.ac1)
    assert "AC1: not applicable to a continuous scale" in row.note.split("; ")
    assert math.isfinite(row.alpha_interval)


def test_checklist_ac1_uses_yes_no_categories():
    """The checklist row: categories ("yes", "no") whatever was observed, as irrCAC."""
    irr = pytest.importorskip("irrCAC.raw")
    rng = np.random.default_rng(23)
    truth = rng.random((20, 4)) < 0.8
    flips = rng.random((20, 4, 3)) < 0.1
    answers = np.where(truth[:, :, None] ^ flips, "yes", "no")
    rows = [(f"o{i:02d}", f"ann{r}", f"q{j}", answers[i, j, r])
            for i, j, r in np.ndindex(answers.shape)]
    long = pd.DataFrame(rows, columns=["output_id", "annotator", "question_id", "answer"])
    table = reliability_table(make_study(answers=long), n_boot=0)
    row = table[table.criterion == CHECKLIST].iloc[0]
    units = pd.DataFrame(answers.reshape(80, 3))
    ref = irr.CAC(units, categories=["yes", "no"]).gwet()["est"]["coefficient_value"]
    assert abs(row.ac1 - ref) <= 0.5e-5
    # everyone said yes: pe = 0 whether q is 1 or 2, so AC1 = pa = 1 (as irrCAC)
    all_yes = long.assign(answer="yes")
    row = reliability_table(make_study(answers=all_yes), n_boot=0).iloc[0]
    ref = irr.CAC(units.map(lambda _: "yes"), categories=["yes", "no"]).gwet()["est"]
    assert row.ac1 == pytest.approx(float(ref["coefficient_value"]))
    assert row.prevalence_yes == 1.0
    assert "constant values: alpha undefined" in row.note.split("; ")


def test_scale_categories_grid_and_off_grid_values():
    scale_categories = human_reliability.scale_categories
    cats, note = scale_categories(1, 10, 1, [5.0, 6.0, 7.0])
    assert cats == [float(v) for v in range(1, 11)] and note == ""
    cats, note = scale_categories(0, 1, 0.1, [0.3, 0.7])
    assert len(cats) == 11 and 0.3 in cats and 0.7 in cats and note == ""
    # a score within 1e-9 steps of a grid point (accepted by bundle validation) is that point
    near = 0.1 * 3 + 1e-12
    cats, _ = scale_categories(0, 1, 0.1, [near])
    assert near in cats and len(cats) == 11
    cats, note = scale_categories(1, 5, 1, [2.5])
    assert len(cats) == 6 and 2.5 in cats and "off the criterion's" in note
    assert scale_categories(0, 100, None, [3.0]) == (None, "")
    cats, note = scale_categories(0, 100, 0.01, [3.0])
    assert cats is None and "treated as continuous" in note


def test_alpha_table_categories_and_continuous_flags():
    """alpha_table itself: categories fix q; continuous=True gives NaN AC1 and the note."""
    units = five_to_seven()
    long = pd.DataFrame([(f"u{i}", f"r{j}", v) for (i, j), v in np.ndenumerate(units)],
                        columns=["item", "rater", "value"])
    kw = {"item_col": "item", "rater_col": "rater", "value_col": "value", "n_boot": 0}
    scale = alpha_table(long, categories=list(range(1, 11)), **kw).iloc[0]
    observed = alpha_table(long, **kw).iloc[0]
    assert scale.ac1 == pytest.approx(gwet_ac1_by_hand(units, list(range(1, 11))))
    assert observed.ac1 == pytest.approx(gwet_ac1_by_hand(units, [5, 6, 7]))
    cont = alpha_table(long, continuous=True, **kw).iloc[0]
    assert math.isnan(cont.ac1) and "AC1: not applicable to a continuous scale" in cont.note
