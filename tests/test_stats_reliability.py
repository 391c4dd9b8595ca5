"""Reliability among annotators (annotation.stats.reliability).

Published worked examples from ../shared/stats/test_vectors.json (keys
``krippendorff_alpha``, ``krippendorff_alpha_hayes_krippendorff_2007``,
``fleiss_kappa_1971``, ``fleiss_kappa_wikipedia``, ``icc_shrout_fleiss_1979``) and the
ImagenHub human ratings of ../shared/fixtures/imagenhub (published Fleiss kappa and
Krippendorff alpha per model); those tests skip when ../shared is absent. Random-data
checks against the krippendorff package, and statsmodels/pingouin when installed.
"""

from __future__ import annotations

import json
import math
import re
import time

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from annotation.stats import reliability
from annotation.stats.reliability import (
    _alpha_from_coincidences,
    _coincidences,
    _encode,
    alpha_bootstrap,
    alpha_table,
    category_counts,
    fleiss_kappa,
    icc,
    krippendorff_alpha,
    multirater_agreement,
)
from tests.helpers.expanded import tails
from tests.helpers.vectors import SHARED, VECTORS, computed_tol, published_tol

IMAGENHUB = SHARED / "fixtures" / "imagenhub"


@pytest.fixture(scope="module")
def vectors() -> dict:
    if not VECTORS.is_file():
        pytest.skip(f"{VECTORS} not found (../shared is absent)")
    return json.loads(VECTORS.read_text())








def units_by_raters(raters_by_units: list[list]) -> np.ndarray:
    """The vectors' krippendorff-package layout (raters x units) turned the common way."""
    return np.array(raters_by_units, dtype=object).T


def to_long(units: np.ndarray) -> pd.DataFrame:
    rows = [
        (f"u{i:05d}", f"r{j:03d}", v)  # zero-padded: the pivot keeps this order
        for (i, j), v in np.ndenumerate(np.asarray(units, dtype=object))
        if v is not None and not (isinstance(v, float) and math.isnan(v))
    ]
    return pd.DataFrame(rows, columns=["item", "rater", "value"])


# --------------------------------------------------------------------------- Krippendorff vectors

KRIPP_CASES = [
    ("K2004_binary_2coders", "nominal"),
    ("K2004_nominal_2coders_12units", "nominal"),
    ("K2011_exampleB_ben_gerry", "nominal"),
    ("K2011_exampleC_4coders_missing", "nominal"),
    ("K2011_exampleC_4coders_missing", "ordinal"),
    ("K2011_exampleC_4coders_missing", "interval"),
    ("K2011_exampleC_4coders_missing", "ratio"),
    ("wikipedia_3coders_15units", "nominal"),
    ("wikipedia_3coders_15units", "interval"),
    ("K1980_3coders_9units", "nominal"),
]


def test_kripp_cases_cover_the_vectors(vectors):
    listed = {(n, lvl) for n, v in vectors["krippendorff_alpha"].items() for lvl in v["computed"]}
    assert listed == set(KRIPP_CASES)


@pytest.mark.parametrize(("name", "level"), KRIPP_CASES)
def test_krippendorff_vectors(vectors, name, level):
    v = vectors["krippendorff_alpha"][name]
    units = units_by_raters(v["data"])
    ours = krippendorff_alpha(units, level)
    computed = v["computed"][level]
    assert ours == pytest.approx(computed, abs=1e-12)
    if level in v["published"]:
        published = v["published"][level]
        assert abs(ours - published) <= published_tol(published)
    # the vectorized coincidence-matrix implementation used by the bootstrap agrees
    est = alpha_bootstrap(units, level, n_boot=0)
    assert est.alpha == ours
    assert 1 - est.d_o / est.d_e == pytest.approx(computed, abs=1e-12)


def test_krippendorff_orientation_matters(vectors):
    """Units x raters is the layout; the package's raters x units, passed as is, differs."""
    v = vectors["krippendorff_alpha"]["K2011_exampleC_4coders_missing"]
    right = krippendorff_alpha(units_by_raters(v["data"]), "interval")
    wrong = krippendorff_alpha(np.array(v["data"], dtype=object), "interval")
    assert right == pytest.approx(v["computed"]["interval"])
    assert abs(wrong - right) > 0.01


def test_krippendorff_extras(vectors):
    """Krippendorff 2004 D_o, D_e, % agreement; irrCAC's pa, AC1 and Fleiss (missing data)."""
    v = vectors["krippendorff_alpha"]["K2004_binary_2coders"]
    units = units_by_raters(v["data"])
    est = alpha_bootstrap(units, "nominal", n_boot=0)
    assert abs(est.d_o - v["extra"]["Do"]) <= published_tol(v["extra"]["Do"])
    assert abs(est.d_e - v["extra"]["De"]) <= 0.0005
    assert multirater_agreement(units).pa == pytest.approx(v["extra"]["pct_agreement"])

    v = vectors["krippendorff_alpha"]["K2011_exampleC_4coders_missing"]
    m = multirater_agreement(units_by_raters(v["data"]))
    assert abs(m.pa - v["extra"]["irrCAC_pa"]) <= 0.5e-5
    assert abs(m.ac1 - v["extra"]["irrCAC_AC1"]) <= 0.5e-5
    assert abs(m.fleiss - v["extra"]["irrCAC_fleiss"]) <= 0.5e-5
    assert m.q == 5 and m.n_units == 11  # unit 11 has a single rating


def test_hayes_krippendorff_2007(vectors):
    v = vectors["krippendorff_alpha_hayes_krippendorff_2007"]
    units = np.array(v["units_by_observers"], dtype=object)
    assert units.shape == (40, 5)
    ordinal = krippendorff_alpha(units, "ordinal")
    assert abs(ordinal - v["published"]["ordinal"]) <= published_tol(v["published"]["ordinal"])
    for level, computed in v["computed"].items():
        assert krippendorff_alpha(units, level) == pytest.approx(computed, abs=1e-12)
        est = alpha_bootstrap(units, level, n_boot=0)
        assert 1 - est.d_o / est.d_e == pytest.approx(computed, abs=1e-12)


def test_string_values_nominal_and_ordinal():
    """The krippendorff docstring example: strings, ordinal with an ordered value domain."""
    raters = [
        ["very low", "low", "mid", "mid", "low", "very low", "high", "very low", "low", None,
         None, None],
        ["very low", "low", "mid", "mid", "low", "low", "high", "very low", "low", "very high",
         None, "mid"],
        [None, "mid", "mid", "mid", "low", "mid", "high", "low", "low", "very high",
         "very low", None],
        ["very low", "low", "mid", "mid", "low", "high", "high", "very low", "low", "very high",
         "very low", None],
    ]  # fmt: skip
    units = units_by_raters(raters)
    domain = ["very low", "low", "mid", "high", "very high"]
    assert round(krippendorff_alpha(units, "ordinal", value_domain=domain), 3) == 0.815
    assert round(krippendorff_alpha(units, "nominal"), 3) == 0.743
    est = alpha_bootstrap(units, "ordinal", value_domain=domain, n_boot=0)
    assert round(1 - est.d_o / est.d_e, 3) == 0.815
    with pytest.raises(ValueError):
        krippendorff_alpha(units, "interval")
    with pytest.raises(ValueError):
        krippendorff_alpha(units, "ordinal")  # strings need an ordered value_domain


def test_missing_value_kinds_and_no_variation():
    base = [[1, 1, 2], [2, 2, 2], [3, 3, 1], [1, 2, 1]]
    ref = krippendorff_alpha(np.array(base, dtype=float), "interval")
    with_missing = [[1, 1, 2, None], [2, 2, 2, pd.NA], [3, 3, 1, np.nan], [1, 2, 1, "cant_tell"]]
    assert krippendorff_alpha(with_missing, "interval") == pytest.approx(ref)
    assert krippendorff_alpha(pd.DataFrame(with_missing), "interval") == pytest.approx(ref)
    # undefined -> NaN, not an exception
    assert math.isnan(krippendorff_alpha([[3, 3], [3, 3], [3, None]], "interval"))
    assert math.isnan(krippendorff_alpha([["yes", "yes"], ["yes", "yes"]], "nominal"))
    assert math.isnan(krippendorff_alpha([[1, None], [None, 2]], "nominal"))  # no pairable unit
    assert math.isnan(krippendorff_alpha([[1, 1], [1, 1], [5, None]], "interval"))
    assert math.isnan(alpha_bootstrap([[3, 3], [3, 3]], "nominal", n_boot=50).alpha)


def _random_units(rng: np.random.Generator, n: int, k: int, values: np.ndarray, p_missing: float):
    truth = rng.integers(0, len(values), n)
    idx = np.clip(truth[:, None] + rng.integers(-1, 2, (n, k)), 0, len(values) - 1)
    x = values[idx].astype(float)
    x[rng.random((n, k)) < p_missing] = np.nan
    return x


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_numpy_alpha_equals_package_random(level):
    rng = np.random.default_rng(7)
    domains = [np.arange(1, 11), np.array([0, 1]), np.array([1, 3, 7, 10]),
               np.array([0.0, 0.5, 0.7071067811865476, 1.0])]  # fmt: skip
    for trial in range(40):
        values = domains[trial % len(domains)]
        x = _random_units(rng, int(rng.integers(5, 80)), int(rng.integers(2, 6)), values, 0.3)
        ref = krippendorff.alpha(reliability_data=x.T, level_of_measurement=level)
        assert krippendorff_alpha(x, level) == pytest.approx(ref, abs=1e-12)
        est = alpha_bootstrap(x, level, n_boot=0)
        assert 1 - est.d_o / est.d_e == pytest.approx(ref, abs=1e-10)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_weighted_coincidences_equal_package_on_resampled_units(level):
    """A bootstrap replicate (weights = times each unit is drawn) equals the package on the
    explicitly resampled data."""
    rng = np.random.default_rng(8)
    x = _random_units(rng, 60, 4, np.arange(1, 8), 0.25)
    codes, domain = _encode(x, level)
    co = _coincidences(codes, domain)
    keep = (~np.isnan(x)).sum(axis=1) >= 2
    assert co.n_units == keep.sum() and co.n_values == (~np.isnan(x[keep])).sum()
    per_unit = co.rows.toarray()
    for _ in range(10):
        w = rng.multinomial(keep.sum(), np.full(keep.sum(), 1 / keep.sum()))
        o = (w @ per_unit).reshape(1, len(domain), len(domain))
        resampled = np.repeat(x[keep], w, axis=0)
        ref = krippendorff.alpha(reliability_data=resampled.T, level_of_measurement=level)
        assert _alpha_from_coincidences(o, domain, level)[0][0] == pytest.approx(ref, abs=1e-10)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_sparse_path_for_many_values_equals_package(level, monkeypatch):
    """0-100 sliders: the point estimate switches to sparse coincidences past a size."""
    rng = np.random.default_rng(16)
    x = _random_units(rng, 300, 3, np.arange(0, 101), 0.2)
    ref = krippendorff.alpha(reliability_data=x.T, level_of_measurement=level)
    monkeypatch.setattr(reliability, "_PACKAGE_MAX_CELLS", 1000)
    assert krippendorff_alpha(x, level) == pytest.approx(ref, abs=1e-10)
    est = alpha_bootstrap(x, level, n_boot=100)
    assert est.alpha == pytest.approx(ref, abs=1e-10) and est.lo < est.hi
    # (ordinal alpha on sparse values is biased low under unit resampling: the interval
    # may exclude the point estimate, as the same draws through the package show)


def test_bootstrap_interval_equals_naive_loop():
    """Same draws, the krippendorff package on each resampled data set: same percentiles."""
    rng = np.random.default_rng(9)
    x = _random_units(rng, 40, 3, np.arange(1, 6), 0.2)
    est = alpha_bootstrap(x, "interval", n_boot=200, seed=11)
    keep = (~np.isnan(x)).sum(axis=1) >= 2
    m = int(keep.sum())
    draws = np.random.default_rng(11).multinomial(m, np.full(m, 1 / m), size=200)
    boot = [
        krippendorff.alpha(np.repeat(x[keep], w, axis=0).T, level_of_measurement="interval")
        for w in draws
    ]
    lo, hi = np.quantile(boot, tails(m))  # the expanded percentile interval
    assert (est.lo, est.hi) == pytest.approx((lo, hi), abs=1e-10)
    assert est.lo < est.alpha < est.hi and est.n_boot == 200 and est.n_units == m
    again = alpha_bootstrap(x, "interval", n_boot=200, seed=11)
    assert (again.lo, again.hi) == (est.lo, est.hi)
    assert alpha_bootstrap(x, "interval", n_boot=200, seed=12).lo != est.lo


# --------------------------------------------------------------------------- Fleiss


def test_fleiss_1971(vectors):
    v = vectors["fleiss_kappa_1971"]
    data = np.array(v["subjects_by_raters"], dtype=object)
    fk = fleiss_kappa(category_counts(data))
    for key, ours in (("kappa", fk.kappa), ("Po", fk.po)):
        assert abs(ours - v["published"][key]) <= published_tol(v["published"][key]), key
    # Fleiss printed Pe = .2201 from the p_j rounded to 3 decimals; exact Pe is .21994
    p_j = category_counts(data).to_numpy().sum(axis=0) / 180
    assert abs((np.round(p_j, 3) ** 2).sum() - v["published"]["Pe"]) <= 0.5e-4
    assert abs(fk.pe - v["published"]["Pe"]) <= 2e-4
    c = v["computed"]
    assert fk.kappa == pytest.approx(c["kappa"], abs=1e-12)
    assert krippendorff_alpha(data, "nominal") == pytest.approx(c["kripp_alpha_nominal"], 1e-12)
    m = multirater_agreement(data)
    assert abs(m.ac1 - c["irrCAC_AC1"]) <= computed_tol(c["irrCAC_AC1"])
    assert m.free_marginal == pytest.approx(c["randolph_free_marginal"], abs=1e-12)
    assert m.fleiss == pytest.approx(fk.kappa, abs=1e-12)  # complete data: same pe
    assert (fk.n_subjects, fk.n_raters, fk.n_categories) == (30, 6, 5)


def test_fleiss_wikipedia(vectors):
    v = vectors["fleiss_kappa_wikipedia"]
    counts = np.array(v["counts_subjects_by_categories"])
    fk = fleiss_kappa(counts)
    assert abs(fk.kappa - v["published"]["kappa"]) <= published_tol(v["published"]["kappa"])
    assert fk.kappa == pytest.approx(v["computed"]["kappa"], abs=1e-12)
    # alpha from the same counts: expand to 14 ratings per subject
    units = [[j for j, n in enumerate(row) for _ in range(n)] for row in counts]
    alpha = krippendorff_alpha(units, "nominal")
    assert alpha == pytest.approx(v["computed"]["kripp_alpha_from_counts"], abs=1e-12)
    assert alpha == pytest.approx(
        krippendorff.alpha(value_counts=counts, level_of_measurement="nominal"), abs=1e-12
    )


def test_fleiss_needs_equal_ratings():
    with pytest.raises(ValueError):
        fleiss_kappa([[2, 1], [1, 1]])
    with pytest.raises(ValueError):
        fleiss_kappa([[1, 0], [0, 1]])
    assert math.isnan(fleiss_kappa([[3, 0], [3, 0]]).kappa)  # one category: pe = 1


def test_fleiss_matches_statsmodels_random():
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    rng = np.random.default_rng(10)
    for _ in range(20):
        data = rng.integers(0, int(rng.integers(2, 6)), (int(rng.integers(5, 60)), 4))
        table, _ = inter_rater.aggregate_raters(data)
        assert fleiss_kappa(category_counts(data)).kappa == pytest.approx(
            inter_rater.fleiss_kappa(table, method="fleiss"), abs=1e-12
        )
        assert multirater_agreement(data).free_marginal == pytest.approx(
            inter_rater.fleiss_kappa(table, method="randolph"), abs=1e-12
        )


# --------------------------------------------------------------------------- ICC

ICC_PUBLISHED = {  # Shrout & Fleiss's names -> McGraw & Wong's
    "ICC(1,1)": "ICC(1,1)", "ICC(2,1)": "ICC(A,1)", "ICC(3,1)": "ICC(C,1)",
    "ICC(1,4)": "ICC(1,k)", "ICC(2,4)": "ICC(A,k)", "ICC(3,4)": "ICC(C,k)",
}  # fmt: skip


def test_icc_shrout_fleiss(vectors):
    v = vectors["icc_shrout_fleiss_1979"]
    table = icc(v["data"]).set_index("type")
    assert len(table) == 6
    for key, computed in v["computed"].items():
        assert table.loc[key, "icc"] == pytest.approx(computed, abs=1e-12), key
    for key, published in v["published"].items():
        ours = table.loc[ICC_PUBLISHED[key], "icc"]
        assert abs(ours - published) <= published_tol(published), key
    assert (table["lo"] < table["icc"]).all() and (table["icc"] < table["hi"]).all()
    row = alpha_table(to_long(np.array(v["data"])), item_col="item", rater_col="rater",
                      value_col="value", n_boot=50).iloc[0]  # fmt: skip
    assert row["icc_a1"] == pytest.approx(v["computed"]["ICC(A,1)"], abs=1e-12)
    assert row["icc_ak"] == pytest.approx(v["computed"]["ICC(A,k)"], abs=1e-12)
    assert row["fleiss_kappa"] == pytest.approx(fleiss_kappa(category_counts(v["data"])).kappa)


def test_icc_ak_interval_is_mcgraw_wong_direct_formula():
    """ICC(A,k) bounds: Spearman-Brown of ICC(A,1)'s = McGraw & Wong (1996) Table 7, 2A/k."""
    rng = np.random.default_rng(12)
    for _ in range(5):
        n, k = int(rng.integers(5, 40)), int(rng.integers(2, 6))
        x = rng.normal(size=(n, 1)) + 0.7 * rng.normal(size=(1, k)) + rng.normal(size=(n, k))
        t = icc(x).set_index("type")
        g = x.mean()
        msr = k * ((x.mean(1) - g) ** 2).sum() / (n - 1)
        msc = n * ((x.mean(0) - g) ** 2).sum() / (k - 1)
        mse = (((x - g) ** 2).sum() - msr * (n - 1) - msc * (k - 1)) / ((n - 1) * (k - 1))
        r = t.loc["ICC(A,1)", "icc"]
        a, b = k * r / (n * (1 - r)), 1 + k * r * (n - 1) / (n * (1 - r))
        v = (a * msc + b * mse) ** 2 / (
            (a * msc) ** 2 / (k - 1) + (b * mse) ** 2 / ((n - 1) * (k - 1))
        )
        fl, fu = stats.f.ppf(0.975, n - 1, v), stats.f.ppf(0.975, v, n - 1)
        lo = n * (msr - fl * mse) / (fl * (msc - mse) + n * msr)
        hi = n * (fu * msr - mse) / (msc - mse + n * fu * msr)
        assert (t.loc["ICC(A,k)", "lo"], t.loc["ICC(A,k)", "hi"]) == pytest.approx((lo, hi))


@pytest.mark.filterwarnings("ignore:The inplace keyword")  # pingouin on pandas >= 3.1
def test_icc_matches_pingouin(vectors):
    pg = pytest.importorskip("pingouin")
    data = np.array(vectors["icc_shrout_fleiss_1979"]["data"], dtype=float)
    rng = np.random.default_rng(13)
    for x in (data, rng.normal(size=(30, 1)) + rng.normal(size=(30, 3))):
        long = to_long(x)
        ref = pg.intraclass_corr(long, targets="item", raters="rater", ratings="value")
        ours = icc(x)
        assert list(ours["icc"]) == pytest.approx(list(ref["ICC"]), abs=1e-10)
        assert list(ours["F"]) == pytest.approx(list(ref["F"]), rel=1e-10)
        assert list(ours["p"]) == pytest.approx(list(ref["pval"]), rel=1e-8, abs=1e-300)
        ci = np.array(ref["CI95"].tolist())  # pingouin rounds its intervals to 2 decimals
        assert np.abs(ours[["lo", "hi"]].to_numpy() - ci).max() <= 0.005 + 1e-9


def test_icc_refuses_incomplete_or_text():
    with pytest.raises(ValueError):
        icc([[1, 2], [3, None]])
    with pytest.raises(ValueError):
        icc([["a", "b"], ["c", "d"]])


# --------------------------------------------------------------------------- alpha_table


def test_alpha_table_row():
    rng = np.random.default_rng(14)
    x = _random_units(rng, 80, 3, np.arange(1, 11), 0.0)
    row = alpha_table(to_long(x), item_col="item", rater_col="rater", value_col="value",
                      n_boot=200).iloc[0]  # fmt: skip
    assert (row["n_items"], row["n_annotators"], row["n_ratings"]) == (80, 3, 240)
    for level in ("interval", "ordinal", "nominal"):
        ref = krippendorff.alpha(reliability_data=x.T, level_of_measurement=level)
        assert row[f"alpha_{level}"] == pytest.approx(ref, abs=1e-12)
    est = alpha_bootstrap(x, "interval", n_boot=200, seed=0)
    assert (row["alpha_lo"], row["alpha_hi"]) == (est.lo, est.hi)
    assert row["alpha_lo"] < row["alpha_interval"] < row["alpha_hi"]
    pairwise = np.mean(
        [np.mean([u[i] == u[j] for i in range(3) for j in range(3) if i != j]) for u in x]
    )
    assert row["pct_agreement"] == pytest.approx(pairwise)
    assert row["ac1"] == pytest.approx(multirater_agreement(x).ac1)
    assert row["fleiss_kappa"] == pytest.approx(fleiss_kappa(category_counts(x)).kappa)
    t = icc(x).set_index("type")["icc"]
    assert (row["icc_a1"], row["icc_ak"]) == pytest.approx((t["ICC(A,1)"], t["ICC(A,k)"]))


def test_alpha_table_missing_data_and_yes_no():
    long = pd.DataFrame(
        {
            "item": ["a", "a", "a", "b", "b", "c", "c", "c", "d", "d"],
            "who": ["x", "y", "z", "x", "y", "x", "y", "z", "x", "z"],
            "ans": ["yes", "yes", "no", "no", "no", "yes", "yes", "cant_tell", "yes", None],
        }
    )
    row = alpha_table(long, item_col="item", rater_col="who", value_col="ans",
                      n_boot=100, ci_level="nominal").iloc[0]  # fmt: skip
    assert (row["n_items"], row["n_pairable_items"], row["n_ratings"]) == (4, 3, 8)
    wide = [["yes", "yes", "no"], ["no", "no", None], ["yes", "yes", None], ["yes", None, None]]
    assert row["alpha_nominal"] == pytest.approx(krippendorff_alpha(wide, "nominal"))
    assert math.isnan(row["alpha_interval"]) and math.isnan(row["icc_a1"])  # text values
    assert math.isnan(row["fleiss_kappa"])  # 3, 2, 2, 1 ratings per item
    assert row["pct_agreement"] == pytest.approx((1 / 3 + 1 + 1) / 3)
    with pytest.raises(ValueError, match="more than one"):
        alpha_table(pd.concat([long, long.iloc[:1]]), item_col="item", rater_col="who",
                    value_col="ans")  # fmt: skip


@pytest.mark.parametrize(("n_items", "values"), [(600, np.arange(1, 11)),
                                                 (2000, np.arange(0, 101))])  # fmt: skip
def test_alpha_table_speed(n_items, values):
    """600 items x 3 raters x 1-10 (and a 0-100 slider), 1000 resamples: well under 10 s."""
    rng = np.random.default_rng(15)
    long = to_long(_random_units(rng, n_items, 3, values, 0.1))
    start = time.perf_counter()
    out = alpha_table(long, item_col="item", rater_col="rater", value_col="value", n_boot=1000)
    elapsed = time.perf_counter() - start
    assert elapsed < 10, elapsed
    assert out.shape[0] == 1 and np.isfinite(out.loc[0, ["alpha_lo", "alpha_hi"]]).all()


# --------------------------------------------------------------------------- ImagenHub

ALIASES = {"SD-Inpainting": "SDInpaint"}  # PUBLISHED.md names this column differently


def _published_rows() -> list[dict]:
    path = IMAGENHUB / "PUBLISHED.md"
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 8 or not cells[2].isdigit():
            continue
        task, model, n, sc, pq, o, fk, ka = cells
        column = re.search(r"\(column (\w+)\)", model)
        name = model.split(" (")[0]
        col = column.group(1) if column else ALIASES.get(name, name)
        # "Stable Diffusion XL (SDXL)": the abbreviation in parentheses is the column
        abbrev = re.search(r"\((\w+)\)$", model)
        if not column and abbrev:
            col = abbrev.group(1)

        def mean_sd(cell: str) -> tuple[float, float]:
            m, s = cell.split("+-")
            return float(m), float(s)

        rows.append({"task": task, "model": model, "column": col, "n": int(n),
                     "SC": mean_sd(sc), "PQ": mean_sd(pq), "O": mean_sd(o),
                     "fleiss": float(fk), "alpha": float(ka)})  # fmt: skip
    return rows


PUBLISHED_ROWS = _published_rows()


def _load_task(task: str) -> list[pd.DataFrame]:
    folder = IMAGENHUB / "human_ratings" / task
    frames = [
        pd.read_csv(folder / f"{task}_rater{i}.tsv", sep="\t", dtype=str) for i in (1, 2, 3)
    ]
    for f in frames[1:]:
        assert list(f["uid"]) == list(frames[0]["uid"])  # same uids, same order
    return frames


def _sc_pq(frames: list[pd.DataFrame], column: str) -> tuple[np.ndarray, np.ndarray]:
    """Units x raters SC and PQ from the cells "[SC, PQ]"."""
    cells = np.array([[json.loads(c) for c in f[column]] for f in frames], dtype=float)
    return cells[:, :, 0].T, cells[:, :, 1].T


def test_imagenhub_published_table_parsed():
    if not PUBLISHED_ROWS:
        pytest.skip(f"{IMAGENHUB} not found (../shared is absent)")
    assert len(PUBLISHED_ROWS) == 11


def _within(ours: float, published: float) -> bool:
    return abs(ours - published) <= 0.005 + 1e-9


@pytest.mark.parametrize("pub", PUBLISHED_ROWS, ids=lambda r: f"{r['task']}-{r['column']}")
def test_imagenhub_reproduces_published(pub):
    frames = _load_task(pub["task"])
    sc, pq = _sc_pq(frames, pub["column"])
    assert sc.shape == (pub["n"], 3)  # every row, every rater
    o = np.sqrt(sc * pq)
    # the leaderboard's mean over raters of each rater's average, +- population std
    for key, x in (("SC", sc), ("PQ", pq), ("O", o)):
        per_rater = x.mean(axis=0)
        assert _within(per_rater.mean(), pub[key][0]), (key, per_rater.mean())
        assert _within(per_rater.std(ddof=0), pub[key][1]), (key, per_rater.std(ddof=0))
    # Fleiss: the distinct O values are the categories; alpha: ordinal on O
    counts = category_counts(o)
    assert counts.shape[1] <= 4 and (counts.sum(axis=1) == 3).all()
    kappa = fleiss_kappa(counts).kappa
    alpha = krippendorff_alpha(o, "ordinal")
    assert _within(kappa, pub["fleiss"]), kappa
    assert _within(alpha, pub["alpha"]), alpha
    row = alpha_table(to_long(o), item_col="item", rater_col="rater", value_col="value",
                      levels=("ordinal",), n_boot=100, ci_level="ordinal").iloc[0]  # fmt: skip
    assert row["alpha_ordinal"] == alpha and row["fleiss_kappa"] == pytest.approx(kappa)
    assert row["alpha_lo"] < alpha < row["alpha_hi"]


def test_imagenhub_fleiss_matches_statsmodels():
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    if not PUBLISHED_ROWS:
        pytest.skip(f"{IMAGENHUB} not found (../shared is absent)")
    for pub in PUBLISHED_ROWS:
        sc, pq = _sc_pq(_load_task(pub["task"]), pub["column"])
        o = np.sqrt(sc * pq)
        table, _ = inter_rater.aggregate_raters(o)
        assert fleiss_kappa(category_counts(o)).kappa == pytest.approx(
            inter_rater.fleiss_kappa(table), abs=1e-12
        )
