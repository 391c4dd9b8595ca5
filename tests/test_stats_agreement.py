"""Two-rater agreement (annotation.stats.agreement) against published worked examples.

Test vectors: ../shared/stats/test_vectors.json (key ``two_rater_tables``); tests using it
skip when ../shared is absent. Random-data checks against scipy, and statsmodels when
installed.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from annotation.stats.agreement import (
    bennett_s,
    binary_agreement,
    cohen_kappa,
    contingency_table,
    gwet_ac1,
    majority,
    mcnemar_exact,
    normalize_label,
    scott_pi,
    wilson_interval,
)
from annotation.stats.reliability import krippendorff_alpha
from tests.helpers.vectors import VECTORS, computed_tol, published_tol

TABLE_NAMES = [
    "Cohen1960_p45",
    "SAS_FREQ_3x3",
    "ArtsteinPoesio2008_p558",
    "Kripp2004_p246_a",
    "Kripp2004_p246_b",
    "FeinsteinCicchetti1990_A",
    "FeinsteinCicchetti1990_B_paradox",
    "R_irrCAC_1.4_fixture_paradox",
]


@pytest.fixture(scope="module")
def tables() -> dict:
    if not VECTORS.is_file():
        pytest.skip(f"{VECTORS} not found (../shared is absent)")
    return json.loads(VECTORS.read_text())["two_rater_tables"]








def expand(table: list[list[int]]) -> tuple[list[int], list[int]]:
    """Rater A / rater B labels (category indices) reproducing a contingency table."""
    a: list[int] = []
    b: list[int] = []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            a += [i] * count
            b += [j] * count
    return a, b


def statistic(name: str, key: str, table: list[list[int]]):
    """Our value of the statistic a vector lists under ``key``."""
    k = cohen_kappa(table)
    kw = cohen_kappa(table, weights="linear")
    ac1 = gwet_ac1(table)
    values = {
        "kappa": k.kappa,
        "po": k.po,
        "pa": ac1.po,
        # irrCAC's fixture lists AC1's chance agreement; the others list kappa's
        "pe": ac1.pe if name.startswith("R_irrCAC") else k.pe,
        "ase": k.se,
        "ase_h0": k.se0,
        "z": k.z,
        "ci95": [k.lo, k.hi],
        "kappa_linear_weighted": kw.kappa,
        "ci95_weighted": [kw.lo, kw.hi],
        "scott_pi": scott_pi(table).estimate,
        "bennett_S": bennett_s(table).estimate,
        "ac1": ac1.estimate,
    }
    if key == "kripp_alpha":
        a, b = expand(table)
        return krippendorff_alpha(np.column_stack([a, b]), "nominal")
    return values[key]


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_two_rater_tables_published(tables, name):
    vector = tables[name]
    assert vector["published"], name
    for key, published in vector["published"].items():
        ours = statistic(name, key, vector["table"])
        if isinstance(published, list):
            for o, p in zip(ours, published, strict=True):
                assert abs(o - p) <= published_tol(p), (name, key, ours, published)
        else:
            assert abs(ours - published) <= published_tol(published), (name, key, ours)


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_two_rater_tables_computed(tables, name):
    vector = tables[name]
    for key, computed in vector["computed"].items():
        ours = statistic(name, key, vector["table"])
        if isinstance(computed, list):
            for o, c in zip(ours, computed, strict=True):
                assert abs(o - c) <= computed_tol(c), (name, key, ours, computed)
        else:
            assert abs(ours - computed) <= computed_tol(computed), (name, key, ours, computed)


def test_all_listed_vectors_are_known(tables):
    assert sorted(tables) == sorted(TABLE_NAMES)


def test_kappa_paradox(tables):
    """Feinstein & Cicchetti (1990): same p_o .85, kappa .70 balanced vs .32 skewed."""
    balanced = tables["FeinsteinCicchetti1990_A"]["table"]
    skewed = tables["FeinsteinCicchetti1990_B_paradox"]["table"]
    kb, ks = cohen_kappa(balanced), cohen_kappa(skewed)
    assert kb.po == pytest.approx(0.85) and ks.po == pytest.approx(0.85)
    assert round(kb.kappa, 2) == 0.70 and round(ks.kappa, 2) == 0.32
    # AC1 stays high under skew (and rises with it), where kappa collapses
    assert gwet_ac1(skewed).estimate == pytest.approx(0.808)
    assert gwet_ac1(skewed).estimate > gwet_ac1(balanced).estimate > ks.kappa
    # the same through binary_agreement on yes/no labels (row 0 = yes)
    a, b = expand(skewed)
    judge = ["yes" if i == 0 else "no" for i in a]
    human = ["yes" if j == 0 else "no" for j in b]
    row = binary_agreement(judge, human).iloc[0]
    assert row["n_decisions"] == 100 and row["n_dropped"] == 0
    assert row["agreement"] == pytest.approx(0.85)
    assert row["kappa"] == pytest.approx(0.31818181818181823)
    assert row["ac1"] == pytest.approx(0.808)
    assert row["pabak"] == pytest.approx(0.70)
    assert row["p_pos"] == pytest.approx(160 / 175)  # 2a / (2a + b + c)
    assert row["p_neg"] == pytest.approx(10 / 25)  # 2d / (2d + b + c)
    assert row["prevalence_yes"] == pytest.approx(0.85)


# --------------------------------------------------------------------------- Wilson


def test_wilson_methods_example():
    """METHODS.md: 82.5% (165/200) localization agreement -> [0.766, 0.871]."""
    w = wilson_interval(165, 200)
    assert (round(w.lo, 3), round(w.hi, 3)) == (0.766, 0.871)
    assert w.estimate == 0.825 and w.n == 200


@pytest.mark.parametrize("conf", [0.9, 0.95, 0.99])
def test_wilson_matches_scipy(conf):
    rng = np.random.default_rng(1)
    for _ in range(50):
        n = int(rng.integers(1, 500))
        k = int(rng.integers(0, n + 1))
        ours = wilson_interval(k, n, conf)
        ref = stats.binomtest(k, n).proportion_ci(confidence_level=conf, method="wilson")
        assert ours.lo == pytest.approx(ref.low, abs=1e-12)
        assert ours.hi == pytest.approx(ref.high, abs=1e-12)


def test_wilson_edges():
    assert math.isnan(wilson_interval(0, 0).lo)
    w0, w1 = wilson_interval(0, 10), wilson_interval(10, 10)
    assert w0.lo == 0.0 and 0 < w0.hi < 0.5 and w1.hi == 1.0 and 0.5 < w1.lo < 1
    with pytest.raises(ValueError):
        wilson_interval(5, 3)


# --------------------------------------------------------------------------- McNemar


def test_mcnemar_exact_counts_and_p():
    a = [1, 1, 1, 1, 1, 0, 0, 1, None, 1]
    b = [0, 0, 0, 0, 1, 1, 0, 1, 1, np.nan]
    r = mcnemar_exact(a, b)
    assert (r.b, r.c, r.n) == (4, 1, 8)
    assert r.p == pytest.approx(2 * stats.binom.cdf(1, 5, 0.5))  # 0.375
    assert r.p == pytest.approx(0.375)
    assert mcnemar_exact([True, False], [True, False]).p == 1.0


def test_mcnemar_matches_scipy_binomtest():
    rng = np.random.default_rng(2)
    for _ in range(50):
        n = int(rng.integers(5, 300))
        a = rng.random(n) < rng.uniform(0.3, 0.95)
        b = rng.random(n) < rng.uniform(0.3, 0.95)
        r = mcnemar_exact(a, b)
        if r.b + r.c:
            assert r.p == pytest.approx(stats.binomtest(r.b, r.b + r.c).pvalue, rel=1e-10)


def test_mcnemar_matches_statsmodels():
    contingency = pytest.importorskip("statsmodels.stats.contingency_tables")
    rng = np.random.default_rng(3)
    for _ in range(20):
        a, b = rng.random(80) < 0.7, rng.random(80) < 0.8
        r = mcnemar_exact(a, b)
        table = [[np.sum(a & b), r.b], [r.c, np.sum(~a & ~b)]]
        assert r.p == pytest.approx(contingency.mcnemar(table, exact=True).pvalue, rel=1e-10)


# --------------------------------------------------------------------------- coefficients


def _random_table(rng: np.random.Generator, k: int) -> np.ndarray:
    truth = rng.integers(0, k, 200)
    noise = rng.random(200) < 0.4
    other = np.where(noise, rng.integers(0, k, 200), truth)
    return contingency_table(truth, other, categories=list(range(k))).to_numpy()


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_matches_statsmodels(weights):
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    rng = np.random.default_rng(4)
    for k in (2, 3, 5):
        for _ in range(10):
            table = _random_table(rng, k)
            ours = cohen_kappa(table, weights=weights)
            wt = {None: None, "linear": "linear", "quadratic": "quadratic"}[weights]
            ref = inter_rater.cohens_kappa(table, wt=wt)
            assert ours.kappa == pytest.approx(ref.kappa, abs=1e-12)
            assert ours.se == pytest.approx(ref.std_kappa, abs=1e-12)
            assert ours.lo == pytest.approx(ref.kappa_low, abs=1e-12)
            assert ours.hi == pytest.approx(ref.kappa_upp, abs=1e-12)
            if weights is None:  # statsmodels gives the H0 variance unweighted only
                assert ours.se0 == pytest.approx(ref.std_kappa0, abs=1e-12)
                assert ours.z == pytest.approx(ref.z_value, rel=1e-10)


def test_cohen_kappa_from_labels_definition():
    """kappa = (p_o - p_e) / (1 - p_e) computed directly from random labels."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 3, 500)
    b = np.where(rng.random(500) < 0.6, a, rng.integers(0, 3, 500))
    po = np.mean(a == b)
    pe = sum(np.mean(a == c) * np.mean(b == c) for c in range(3))
    assert cohen_kappa(contingency_table(a, b)).kappa == pytest.approx((po - pe) / (1 - pe))
    # AC1 from its definition too (Gwet 2008, eq. 15)
    pi = np.array([(np.mean(a == c) + np.mean(b == c)) / 2 for c in range(3)])
    pe1 = (pi * (1 - pi)).sum() / 2
    assert gwet_ac1(contingency_table(a, b)).estimate == pytest.approx((po - pe1) / (1 - pe1))


def test_degenerate_tables():
    assert math.isnan(cohen_kappa([[5, 0], [0, 0]]).kappa)  # p_e = 1
    assert gwet_ac1([[5, 0], [0, 0]]).estimate == 1.0
    assert gwet_ac1([[7]]).estimate == 1.0  # q = 1: p_e = 0, as irrCAC
    assert math.isnan(cohen_kappa([[0, 0], [0, 0]]).kappa)
    with pytest.raises(ValueError):
        cohen_kappa([[1, 2, 3], [4, 5, 6]])
    with pytest.raises(ValueError):
        cohen_kappa([[1, -1], [0, 2]])


# --------------------------------------------------------------------------- binary_agreement


def test_binary_agreement_confusion_and_drops():
    judge = ["yes", "yes", "no", "yes", True, "no", "no", None, "yes", "Yes"]
    human = ["yes", "no", "no", "cant_tell", "yes", "yes", "no", "no", np.nan, "YES"]
    row = binary_agreement(judge, human).iloc[0]
    # kept: (y,y) (y,n) (n,n) (y,y) (n,y) (n,n) (y,y) -> a=3, b=1, c=1, d=2
    assert row["n_decisions"] == 7 and row["n_dropped"] == 3
    assert (row["both_yes"], row["judge_yes_human_no"]) == (3, 1)
    assert (row["judge_no_human_yes"], row["both_no"]) == (1, 2)
    assert row["agreement"] == pytest.approx(5 / 7)
    w = wilson_interval(5, 7)
    assert (row["agreement_lo"], row["agreement_hi"]) == pytest.approx((w.lo, w.hi))
    assert row["yes_recall"] == pytest.approx(3 / 4)
    assert row["no_recall"] == pytest.approx(2 / 3)
    assert row["p_pos"] == pytest.approx(6 / 8)
    assert row["p_neg"] == pytest.approx(4 / 6)
    assert row["pabak"] == pytest.approx(2 * 5 / 7 - 1)
    assert row["prevalence_yes"] == pytest.approx(4 / 7)
    assert row["judge_yes_rate"] == pytest.approx(4 / 7)
    table = [[3, 1], [1, 2]]
    assert row["kappa"] == pytest.approx(cohen_kappa(table).kappa)
    assert row["ac1"] == pytest.approx(gwet_ac1(table).estimate)


def test_binary_agreement_series_align_on_index():
    judge = pd.Series({"i1": "yes", "i2": "no", "i3": "yes", "i9": "no"})
    human = pd.Series({"i3": "yes", "i2": "yes", "i1": "yes", "i7": "no"})
    row = binary_agreement(judge, human).iloc[0]
    assert row["n_decisions"] == 3 and row["both_yes"] == 2 and row["judge_no_human_yes"] == 1
    with pytest.raises(ValueError):
        binary_agreement(["yes"], ["yes", "no"])


def test_binary_agreement_one_category_used():
    row = binary_agreement(["yes"] * 5, [True] * 5).iloc[0]
    assert row["agreement"] == 1.0 and math.isnan(row["kappa"])
    assert row["ac1"] == 1.0  # q = 2 (yes/no), p_e = 0
    assert math.isnan(row["no_recall"]) and row["yes_recall"] == 1.0


def test_binary_agreement_general_categories():
    row = binary_agreement(["a", "b", "c", "a"], ["a", "c", "c", "b"]).iloc[0]
    assert row["agreement"] == 0.5
    assert row["pabak"] == pytest.approx((3 * 0.5 - 1) / 2)  # Bennett's S, q = 3
    assert math.isnan(row["yes_recall"]) and math.isnan(row["both_yes"])
    row = binary_agreement(["a", "b", "c", "a"], ["a", "c", "c", "b"], positive="a").iloc[0]
    assert (row["both_yes"], row["judge_yes_human_no"], row["both_no"]) == (1, 1, 2)


def test_binary_agreement_columns():
    out = binary_agreement(["yes", "no"], ["yes", "no"])
    assert len(out) == 1
    for col in [
        "n_decisions", "agreement", "agreement_lo", "agreement_hi", "kappa", "ac1", "pabak",
        "p_pos", "p_neg", "yes_recall", "no_recall", "judge_yes_human_no",
        "judge_no_human_yes", "both_yes", "both_no", "prevalence_yes",
    ]:  # fmt: skip
        assert col in out.columns


# --------------------------------------------------------------------------- majority


def test_majority_ties_and_cant_tell():
    long = pd.DataFrame(
        {
            "item": ["a", "a", "a", "b", "b", "c", "c", "c", "d", "e", "e", "e"],
            "answer": ["yes", "no", "yes", "yes", "no", "cant_tell", "No", None,
                       "cant_tell", "yes", "cant_tell", "cant_tell"],
        }
    )  # fmt: skip
    m = majority(long, item_col="item", value_col="answer")
    assert m.to_dict() == {"a": "yes", "b": None, "c": "no", "d": None, "e": "yes"}
    assert m.index.name == "item" and m.name == "answer"
    # ties become missing for binary_agreement: only a, c, e count
    judge = pd.Series({"a": "yes", "b": "yes", "c": "yes", "d": "no", "e": "no"})
    row = binary_agreement(judge, m).iloc[0]
    assert row["n_decisions"] == 3 and row["n_dropped"] == 2 and row["agreement"] == 1 / 3


def test_normalize_label():
    assert normalize_label(True) == "yes" and normalize_label(np.bool_(False)) == "no"
    assert normalize_label(" Yes ") == "yes"
    for missing in (None, np.nan, pd.NA, "cant_tell", "CANT_TELL", ""):
        assert normalize_label(missing) is None
    assert normalize_label(3) == 3
