"""Pairwise and ranking statistics (issue #17) against reference implementations
(scikit-learn, choix, scipy, the krippendorff package) and hand-worked examples."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from annotation.stats.pairwise import (
    confusion,
    human_reference,
    pairwise_agreement,
    position_bias,
)
from annotation.stats.rankings import (
    bradley_terry,
    bt_bootstrap,
    kendall_w,
    order_ranks,
    win_matrix,
)

choix = pytest.importorskip("choix")

REFERENCE = ["a", "a", "a", "b", "b", "b", "tie", "tie", "both_bad", "both_bad"]
VERDICT = ["a", "a", "b", "b", "b", None, "tie", "a", "both_bad", "tie"]


def test_human_reference_is_a_strict_majority():
    assert human_reference(["a", "a", "b"]) == "a"
    assert human_reference(["a", "b"]) is None  # a tied vote: no reference
    assert human_reference(["a", "b", "tie"]) is None
    assert human_reference(["both_bad"]) == "both_bad"
    assert human_reference([None, "tie"]) == "tie"
    assert human_reference([]) is None


def test_accuracies_by_hand_and_kappa_against_scikit_learn():
    row = pairwise_agreement(VERDICT, REFERENCE, n_boot=0).iloc[0]
    # correct: pairs 0, 1, 3, 4, 6, 8 = 6 of 10; pair 5 is unparsed (a miss)
    assert row.accuracy_all == pytest.approx(6 / 10)
    assert row.accuracy_parsed == pytest.approx(6 / 9)
    assert (row.n_pairs, row.n_parsed, row.n_unparsed) == (10, 9, 1)
    # ties merged (a / b / none): pairs 0, 1, 3, 4, 6, 8, 9 = 7 of 10 (9: tie vs both_bad)
    assert row.accuracy_ties_merged == pytest.approx(7 / 10)
    parsed = [(v, r) for v, r in zip(VERDICT, REFERENCE, strict=True) if v is not None]
    expected = cohen_kappa_score([r for _, r in parsed], [v for v, _ in parsed])
    assert row.kappa == pytest.approx(expected)


def test_kappa_against_scikit_learn_on_random_data():
    rng = np.random.default_rng(3)
    classes = np.array(["a", "b", "tie", "both_bad"])
    ref = list(classes[rng.integers(0, 4, 200)])
    ver = [r if rng.random() < 0.6 else str(classes[rng.integers(0, 4)]) for r in ref]
    row = pairwise_agreement(ver, ref, n_boot=0).iloc[0]
    assert row.kappa == pytest.approx(cohen_kappa_score(ref, ver))
    assert row.accuracy_all == pytest.approx(np.mean(np.array(ver) == np.array(ref)))


def test_the_bootstrap_interval_holds_the_estimate_and_needs_clusters():
    ref = REFERENCE * 6
    ver = VERDICT * 6
    few = pairwise_agreement(ver, ref, [i % 5 for i in range(60)], n_boot=200).iloc[0]
    assert math.isnan(few.accuracy_all_lo) and "fewer than 10" in few.note
    many = pairwise_agreement(ver, ref, [i % 20 for i in range(60)], n_boot=300).iloc[0]
    for s in ("accuracy_all", "accuracy_parsed", "kappa", "accuracy_ties_merged"):
        assert many[f"{s}_lo"] <= many[s] <= many[f"{s}_hi"], s
    assert many.n_clusters == 20 and many.n_boot == 300
    perfect = pairwise_agreement(ref, ref, range(60), n_boot=200).iloc[0]
    assert (perfect.accuracy_all_lo, perfect.accuracy_all_hi) == (1.0, 1.0)


def test_confusion_counts_by_hand():
    table = confusion(VERDICT, REFERENCE).set_index(["reference", "verdict"]).n
    assert len(table) == 20 and table.sum() == 10
    assert table["a", "a"] == 2 and table["a", "b"] == 1
    assert table["b", "unparsed"] == 1 and table["tie", "a"] == 1
    assert table["both_bad", "tie"] == 1 and table["tie", "both_bad"] == 0


def test_position_bias_by_hand_with_a_wilson_interval():
    pairs = pd.DataFrame({
        "output_a": ["x", "y", "x", "z", "u", "w"],
        "output_b": ["y", "x", "z", "x", "w", "u"],
        "verdict": ["a", "a", "a", "b", None, "tie"]})
    got = position_bias(pairs)
    # decided: a, a, a, b -> 3 of 4 prefer the first-shown output
    assert got["n_decided"] == 4 and got["first_shown_share"] == pytest.approx(0.75)
    wilson = stats.binomtest(3, 4).proportion_ci(method="wilson")
    assert (got["first_shown_lo"], got["first_shown_hi"]) == pytest.approx(
        (wilson.low, wilson.high))
    # x/y both orders: 'a' then 'a' -> x, then y preferred: inconsistent;
    # x/z: 'a' (x) and 'b' (x): consistent; u/w: one side unparsed -> not counted
    assert got["n_both_orders"] == 2 and got["order_consistency"] == pytest.approx(0.5)


def test_bradley_terry_equals_choix():
    data = [(0, 1), (0, 1), (1, 2), (2, 0), (0, 2), (1, 2), (3, 0), (1, 3), (2, 3), (3, 2),
            (0, 3)]
    w = win_matrix([a for a, _ in data], [b for _, b in data], [1.0] * len(data), 4)
    for alpha in (0.01, 0.5):
        ours = bradley_terry(w, alpha=alpha)
        ref = choix.opt_pairwise(4, data, alpha=alpha, tol=1e-12)
        assert ours == pytest.approx(ref - ref.mean(), abs=1e-6)


def test_a_tie_is_half_a_win_each_way_as_doubled_data_in_choix():
    """Half wins: the same estimate as choix on the comparisons doubled (a win twice, a
    tie once each way) with the prior doubled too (the objective is then twice ours)."""
    wins = [(0, 1), (1, 2), (0, 2), (2, 1)]
    ties = [(0, 1), (1, 2)]
    w = win_matrix([a for a, _ in wins] + [a for a, _ in ties] + [b for _, b in ties],
                   [b for _, b in wins] + [b for _, b in ties] + [a for a, _ in ties],
                   [1.0] * len(wins) + [0.5] * (2 * len(ties)), 3)
    doubled = wins * 2 + ties + [(b, a) for a, b in ties]
    ours = bradley_terry(w, alpha=0.01)
    ref = choix.opt_pairwise(3, doubled, alpha=0.02, tol=1e-12)
    assert ours == pytest.approx(ref - ref.mean(), abs=1e-6)


def test_bt_bootstrap_interval_holds_the_strength():
    rng = np.random.default_rng(0)
    true = np.array([1.0, 0.0, -1.0])
    winners, losers, clusters = [], [], []
    for k in range(300):
        i, j = rng.choice(3, 2, replace=False)
        p = 1 / (1 + math.exp(-(true[i] - true[j])))
        win = rng.random() < p
        winners.append(i if win else j)
        losers.append(j if win else i)
        clusters.append(k // 10)
    fit = bt_bootstrap(winners, losers, [1.0] * 300, 3, clusters, n_boot=200)
    assert list(fit["rank"]) == [1, 2, 3]
    assert (fit.strength_lo <= fit.strength).all() and (fit.strength <= fit.strength_hi).all()
    assert fit.n_boot.iloc[0] == 200 and fit.n_clusters.iloc[0] == 30


def test_order_ranks_give_ties_their_mean_rank():
    assert order_ranks(["x", ["y", "z"], "w"]) == {"x": 1, "y": 2.5, "z": 2.5, "w": 4}


def test_kendall_w_with_ties_by_hand():
    """Three rankers, four objects, one tie (worked by hand with Siegel & Castellan's
    eqs. 9.15-9.16): rank sums 4.5, 4.5, 9, 12 about their mean 7.5, S = 9 + 9 + 2.25 +
    20.25 = 40.5; T = 2^3 - 2 = 6; W = 12 * 40.5 / (9 * 60 - 3 * 6) = 486 / 522."""
    ranks = [[1, 2, 3, 4], [2, 1, 3, 4], [1.5, 1.5, 3, 4]]
    got = kendall_w(ranks)
    assert got["w"] == pytest.approx(486 / 522)
    assert got["chi2"] == pytest.approx(3 * 3 * 486 / 522)
    assert got["p_value"] == pytest.approx(stats.chi2.sf(9 * 486 / 522, 3))
    assert (got["m"], got["n"], got["df"]) == (3, 4, 3)


def test_kendall_w_without_ties_matches_the_mean_spearman():
    """Without ties, the mean pairwise Spearman rho = (m W - 1) / (m - 1) (Siegel &
    Castellan, Sec. 9.4), with rho from scipy."""
    rng = np.random.default_rng(1)
    ranks = np.array([rng.permutation(6) + 1 for _ in range(5)], dtype=float)
    w = kendall_w(ranks)["w"]
    rhos = [stats.spearmanr(ranks[i], ranks[j]).statistic
            for i in range(5) for j in range(i + 1, 5)]
    assert np.mean(rhos) == pytest.approx((5 * w - 1) / 4)
    assert kendall_w(ranks[:1])["w"] != kendall_w(ranks[:1])["w"]  # NaN: one ranker
