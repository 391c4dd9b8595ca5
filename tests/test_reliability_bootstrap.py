"""Cluster bootstrap of Krippendorff's alpha: resample outputs, not (output, question) units.

References are written out here: the krippendorff package on explicitly rebuilt data
(draw outputs with replacement, copy all their units, call ``krippendorff.alpha``), with
the same draws (exact) or with draws of its own (loose tolerance).
"""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pandas as pd
import pytest

from annotation.results.reliability import CHECKLIST, reliability_table
from annotation.stats.reliability import alpha_bootstrap, alpha_table
from tests.helpers.expanded import tails
from tests.test_reliability_ac1 import make_study


def checklist_units(rng: np.random.Generator, n_outputs: int, n_questions: int,
                    n_raters: int = 3, correlated: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Yes/no codes (1/0) as (output x question) units x raters, and each unit's output.

    With ``correlated``, an output is either clear (raters rarely flip the true answer)
    or ambiguous (they often do), and its prevalence of "yes" is its own: the questions
    of one output agree or disagree together.
    """
    if correlated:
        ambiguous = rng.random(n_outputs) < 0.3
        flip = np.where(ambiguous, 0.4, 0.03)[:, None, None]
        p_yes = rng.choice([0.15, 0.85], n_outputs)[:, None]
    else:
        flip = np.full((n_outputs, 1, 1), 0.12)
        p_yes = np.full((n_outputs, 1), 0.6)
    truth = rng.random((n_outputs, n_questions)) < p_yes
    x = (truth[:, :, None] ^ (rng.random((n_outputs, n_questions, n_raters)) < flip))
    units = x.reshape(n_outputs * n_questions, n_raters).astype(float)
    return units, np.repeat(np.arange(n_outputs), n_questions)


def naive_cluster_boot(units: np.ndarray, clusters: np.ndarray, weights: np.ndarray,
                       level: str) -> np.ndarray:
    """Per draw: copy every unit of a cluster as often as it was drawn, call the package."""
    labels = list(dict.fromkeys(clusters))  # first-appearance order
    rows = [np.flatnonzero(clusters == c) for c in labels]
    out = []
    for w in weights:
        take = np.concatenate([np.tile(r, k) for r, k in zip(rows, w) if k] or [[]]).astype(int)
        out.append(krippendorff.alpha(reliability_data=units[take].T,
                                      level_of_measurement=level))
    return np.array(out)


def test_each_unit_its_own_cluster_is_todays_bootstrap():
    """clusters=None and one distinct label per unit: the very same interval."""
    rng = np.random.default_rng(31)
    x = rng.integers(1, 6, (60, 3)).astype(float)
    x[rng.random(x.shape) < 0.35] = np.nan  # some units end up unpairable
    base = alpha_bootstrap(x, "interval", n_boot=300, seed=5)
    own = alpha_bootstrap(x, "interval", n_boot=300, seed=5, clusters=[f"c{i}" for i in range(60)])
    assert (own.lo, own.hi, own.n_boot) == (base.lo, base.hi, base.n_boot)
    assert own.n_clusters == base.n_units == base.n_clusters


@pytest.mark.parametrize("level", ["nominal", "interval"])
def test_cluster_bootstrap_equals_package_on_rebuilt_data_same_draws(level):
    """A replicate = the package on the data rebuilt from the drawn outputs (same draws)."""
    rng = np.random.default_rng(32)
    units, clusters = checklist_units(rng, 25, 6)
    units[rng.random(units.shape) < 0.1] = np.nan
    est = alpha_bootstrap(units, level, n_boot=150, seed=9, clusters=clusters)
    pairable = (~np.isnan(units)).sum(axis=1) >= 2
    n_c = len(set(clusters[pairable]))
    draws = np.random.default_rng(9).multinomial(n_c, np.full(n_c, 1 / n_c), size=150)
    boot = naive_cluster_boot(units[pairable], clusters[pairable], draws, level)
    boot = boot[np.isfinite(boot)]
    assert est.n_boot == boot.size and est.n_clusters == n_c
    assert (est.lo, est.hi) == pytest.approx(tuple(np.quantile(boot, tails(n_c))),
                                             abs=1e-10)


@pytest.mark.slow
def test_cluster_bootstrap_agrees_with_independent_naive_bootstrap():
    """Own draws (numpy choice of outputs), 2000 resamples each: SD and quantiles agree."""
    rng = np.random.default_rng(33)
    units, clusters = checklist_units(rng, 40, 5)
    est = alpha_bootstrap(units, "nominal", n_boot=2000, seed=1, clusters=clusters)
    draw = np.random.default_rng(2)
    boot = []
    for _ in range(2000):
        picked = draw.choice(40, size=40, replace=True)
        take = np.concatenate([np.flatnonzero(clusters == c) for c in picked])
        boot.append(krippendorff.alpha(reliability_data=units[take].T,
                                       level_of_measurement="nominal"))
    boot = np.array(boot)
    # our replicates, rebuilt from the same seed, give the SD to compare with
    n_c = 40
    ours = naive_cluster_boot(units, clusters, np.random.default_rng(1).multinomial(
        n_c, np.full(n_c, 1 / n_c), size=2000), "nominal")
    assert np.quantile(ours, tails(n_c)) == pytest.approx([est.lo, est.hi], abs=1e-10)
    assert ours.std() == pytest.approx(boot.std(), rel=0.12)
    assert (est.lo, est.hi) == pytest.approx(tuple(np.quantile(boot, tails(n_c))), abs=0.03)


def test_clustered_interval_is_wider_with_output_level_correlation():
    """Correlated questions within an output: resampling units is far too narrow."""
    rng = np.random.default_rng(34)
    units, clusters = checklist_units(rng, 60, 8)
    by_unit = alpha_bootstrap(units, "nominal", n_boot=1000, seed=3)
    by_output = alpha_bootstrap(units, "nominal", n_boot=1000, seed=3, clusters=clusters)
    assert by_output.alpha == by_unit.alpha
    assert (by_output.hi - by_output.lo) > 1.4 * (by_unit.hi - by_unit.lo)
    # independent questions: the two intervals are alike
    units, clusters = checklist_units(rng, 60, 8, correlated=False)
    by_unit = alpha_bootstrap(units, "nominal", n_boot=1000, seed=3)
    by_output = alpha_bootstrap(units, "nominal", n_boot=1000, seed=3, clusters=clusters)
    ratio = (by_output.hi - by_output.lo) / (by_unit.hi - by_unit.lo)
    assert 0.75 < ratio < 1.35


def _checklist_long(units: np.ndarray, clusters: np.ndarray, n_questions: int) -> pd.DataFrame:
    rows = []
    for u, out in enumerate(clusters):
        for r in range(units.shape[1]):
            v = units[u, r]
            if not math.isnan(v):
                rows.append((f"o{out:03d}", f"ann{r}", f"q{u % n_questions}",
                             "yes" if v == 1 else "no"))
    return pd.DataFrame(rows, columns=["output_id", "annotator", "question_id", "answer"])


def test_reliability_table_checklist_interval_resamples_outputs():
    """Defect 2: the checklist row's alpha interval is the cluster bootstrap over outputs."""
    rng = np.random.default_rng(35)
    units, clusters = checklist_units(rng, 30, 6)
    long = _checklist_long(units, clusters, 6)
    row = reliability_table(make_study(answers=long), n_boot=400, seed=4).iloc[0]
    assert row.criterion == CHECKLIST
    # the table's units are sorted by "output / question": rebuild the same order
    item = long.output_id + " / " + long.question_id
    wide = (long.assign(item=item, v=(long.answer == "yes").astype(float))
            .pivot(index="item", columns="annotator", values="v"))
    out_of = [i.split(" / ")[0] for i in wide.index]
    n_c = len(set(out_of))
    draws = np.random.default_rng(4).multinomial(n_c, np.full(n_c, 1 / n_c), size=400)
    boot = naive_cluster_boot(wide.to_numpy(), np.array(out_of), draws, "nominal")
    boot = boot[np.isfinite(boot)]
    assert (row.alpha_lo, row.alpha_hi) == pytest.approx(
        tuple(np.quantile(boot, tails(n_c))), abs=1e-10)
    assert row.n_boot == boot.size and row.n_outputs == 30
    unit_est = alpha_bootstrap(wide, "nominal", n_boot=400, seed=4)
    assert (row.alpha_lo, row.alpha_hi) != pytest.approx((unit_est.lo, unit_est.hi))


def test_no_interval_from_fewer_than_10_outputs():
    """Defect 3: 9 outputs (54 decisions) give no interval, with a note; 10 outputs do."""
    rng = np.random.default_rng(36)
    units, clusters = checklist_units(rng, 10, 6)
    long = _checklist_long(units, clusters, 6)
    nine = long[long.output_id != "o009"]
    row = reliability_table(make_study(answers=nine), n_boot=200).iloc[0]
    assert math.isnan(row.alpha_lo) and math.isnan(row.alpha_hi) and row.n_boot == 0
    assert "fewer than 10 outputs: no bootstrap interval" in row.note.split("; ")
    assert row.n_outputs == 9 and row.n_items == 54
    row = reliability_table(make_study(answers=long), n_boot=200).iloc[0]
    assert row.alpha_lo <= row.alpha_nominal <= row.alpha_hi
    assert "no bootstrap interval" not in row.note
    # alpha_bootstrap itself, without clusters: units are the clusters
    few = alpha_bootstrap(units[:9], "nominal", n_boot=100)
    assert math.isnan(few.lo) and few.n_boot == 0 and math.isfinite(few.alpha)
    assert alpha_bootstrap(units[:9], "nominal", n_boot=100, min_clusters=2).n_boot == 100


def test_n_boot_reports_the_replicates_used():
    """Defect 3: 11 unanimous outputs and 1 disputed one; a replicate missing the disputed
    output has no variation (alpha undefined) and is not counted."""
    answers = []
    for o in range(12):
        for q in range(4):
            for r in range(3):
                disputed = o == 5 and q < 2 and r == 0
                answers.append((f"o{o:02d}", f"ann{r}", f"q{q}", "no" if disputed else "yes"))
    long = pd.DataFrame(answers, columns=["output_id", "annotator", "question_id", "answer"])
    row = reliability_table(make_study(answers=long), n_boot=1000, seed=8).iloc[0]
    draws = np.random.default_rng(8).multinomial(12, np.full(12, 1 / 12), size=1000)
    expected = int((draws[:, 5] > 0).sum())  # output o05 is the 6th cluster in item order
    assert 0 < expected < 1000
    assert row.n_boot == expected
    table = alpha_table(long.assign(item=long.output_id + long.question_id), item_col="item",
                        rater_col="annotator", value_col="answer", n_boot=1000, seed=8,
                        ci_level="nominal", cluster_col="output_id").iloc[0]
    assert table.n_boot == expected
