"""Limits of agreement (annotation.stats.bland_altman) and bland_altman.csv
(annotation.results.judge_bias): against Bland & Altman's published example, published tolerance
factors, statsmodels' mean_diff_plot, pingouin's plot_blandaltman, statsmodels OLS and a
seeded simulation of coverage."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pingouin as pg  # noqa: E402
import pytest  # noqa: E402
import statsmodels.api as sm  # noqa: E402
from scipy import stats  # noqa: E402

from annotation.results.judge_bias import (  # noqa: E402
    COLUMNS,
    bland_altman_figure,
    bland_altman_pairs,
    bland_altman_table,
)
from annotation.results.ratings import AVERAGE, ENSEMBLE  # noqa: E402
from annotation.results.study import StudyData  # noqa: E402
from annotation.stats.bland_altman import COLUMNS as LOA_COLUMNS  # noqa: E402
from annotation.stats.bland_altman import limits_of_agreement  # noqa: E402

# Bland & Altman (1986), Lancet 1:307, Table 1: peak expiratory flow rate (l/min) of 17
# subjects, first reading with the large Wright peak flow meter and with the mini meter.
WRIGHT = [494, 395, 516, 434, 476, 557, 413, 442, 650, 433, 417, 656, 267, 478, 178, 423, 427]
MINI = [512, 430, 520, 428, 500, 600, 364, 380, 658, 445, 432, 626, 260, 477, 259, 350, 451]


def _row(judge, human, **kw) -> pd.Series:
    return limits_of_agreement(judge, human, **kw).iloc[0]


def test_bland_altman_1986_published_example() -> None:
    """Published: mean difference -2.1, SD 38.8, limits -2.1 -/+ 2 x 38.8 = -79.7 and 75.5
    (the paper used 2 SD), all printed to one decimal (tolerance half a unit, 0.05). The
    paper computed the limits from the rounded mean and SD, so they carry the rounding of
    both (0.05 + 2 x 0.05)."""
    row = _row(np.array(WRIGHT, float), np.array(MINI, float), z=2)
    assert row.n == 17
    assert abs(row.mean_diff - -2.1) <= 0.05 + 1e-12
    assert abs(row.sd_diff - 38.8) <= 0.05 + 1e-12
    assert abs(row.loa_lo - -79.7) <= 0.15 + 1e-9
    assert abs(row.loa_hi - 75.5) <= 0.15 + 1e-9
    assert row.note == ""


@pytest.mark.parametrize(("n", "p", "k"), [
    (10, 0.90, 2.355), (10, 0.95, 2.911), (10, 0.99, 3.981),
    (20, 0.95, 2.396), (50, 0.95, 2.065),
])  # fmt: skip
def test_exact_limits_are_the_published_one_sided_tolerance_factors(n, p, k) -> None:
    """The exact upper end of a limit's interval is mean + K sd, K the one-sided normal
    tolerance factor for proportion p at confidence (1 + conf) / 2 (Natrella 1963,
    "Experimental Statistics", NBS Handbook 91, one-sided tolerance factors at 95%
    confidence; the factors Carkeet 2015 tabulates): here z = z_p and conf = 0.90."""
    rng = np.random.default_rng(n)
    x, y = rng.normal(5, 2, n), rng.normal(5, 2, n)
    row = _row(x, y, z=stats.norm.ppf(p), conf=0.90)
    assert round((row.loa_hi_hi - row.mean_diff) / row.sd_diff, 3) == k
    assert round((row.mean_diff - row.loa_lo_lo) / row.sd_diff, 3) == k


def test_exact_intervals_cover_2_5_percent_on_each_side() -> None:
    """Seeded simulation under normality (n = 50, 40,000 samples): the true upper limit
    mu + 1.96 sigma falls below the interval 2.5% of the time and above it 2.5%; the
    approximate interval misses lopsidedly (why the exact one is the default)."""
    n, reps = 50, 40_000
    rng = np.random.default_rng(2024)
    template = rng.normal(size=n)
    exact = _row(template, np.zeros(n))
    approx = _row(template, np.zeros(n), method="approximate")
    k_lo = (exact.loa_hi_lo - exact.mean_diff) / exact.sd_diff
    k_hi = (exact.loa_hi_hi - exact.mean_diff) / exact.sd_diff
    half = (approx.loa_hi_hi - approx.loa_hi) / approx.sd_diff
    sims = rng.normal(size=(reps, n))
    m, s = sims.mean(axis=1), sims.std(axis=1, ddof=1)
    truth = 1.96
    below, above = (truth < m + k_lo * s).mean(), (truth > m + k_hi * s).mean()
    se = np.sqrt(0.025 * 0.975 / reps)
    assert abs(below - 0.025) < 4.5 * se and abs(above - 0.025) < 4.5 * se
    a_below = (truth < m + (1.96 - half) * s).mean()
    a_above = (truth > m + (1.96 + half) * s).mean()
    assert a_above - a_below > 0.02  # the symmetric interval misses mostly above


def _pairs(seed: int, n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.uniform(2, 9, n)
    judge = 0.3 + 1.1 * human + rng.normal(0, 0.8, n)
    return judge, human


@pytest.mark.parametrize("seed", [0, 1])
def test_against_pingouin_plot_blandaltman(seed: int) -> None:
    """pingouin draws mean -/+ 1.96 SD (n - 1) and, at 95%, the t interval of the mean and
    the limits' intervals with SE sqrt(3 s^2 / n) and t_{n-1}: our approximate method."""
    judge, human = _pairs(seed)
    fig, ax = plt.subplots()
    pg.plot_blandaltman(judge, human, ax=ax)
    # the horizontal lines it draws (pingouin 0.7 adds a zero line first: read them as a
    # set, not by position) and the bands of the intervals
    levels = [float(line.get_ydata()[0]) for line in ax.lines
              if len(set(np.asarray(line.get_ydata(), dtype=float))) == 1]
    spans = [(p.get_bbox().y0, p.get_bbox().y1) for p in ax.patches]
    plt.close(fig)
    row = _row(judge, human, method="approximate")
    for value in (row.mean_diff, row.loa_hi, row.loa_lo):
        assert any(value == pytest.approx(level, rel=1e-12) for level in levels), value
    got = [(row.mean_diff_lo, row.mean_diff_hi), (row.loa_hi_lo, row.loa_hi_hi),
           (row.loa_lo_lo, row.loa_lo_hi)]
    for interval in got:
        assert any(np.allclose(interval, span, rtol=1e-12) for span in spans), interval
    exact = _row(judge, human)
    assert (exact.mean_diff_lo, exact.mean_diff_hi) == (row.mean_diff_lo, row.mean_diff_hi)


def test_against_statsmodels_mean_diff_plot() -> None:
    """statsmodels plots the same points (mean of the two, difference) and mean line, but its
    limits use the population SD (ddof 0): ours are wider by sqrt(n / (n - 1))."""
    judge, human = _pairs(3, n=25)
    fig, ax = plt.subplots()
    sm.graphics.mean_diff_plot(judge, human, ax=ax)
    mean, lower, upper = (line.get_ydata()[0] for line in ax.lines[:3])
    points = ax.collections[0].get_offsets()
    plt.close(fig)
    row = _row(judge, human)
    n = row.n
    assert row.mean_diff == pytest.approx(mean, rel=1e-12)
    assert row.loa_hi - row.mean_diff == pytest.approx(
        (upper - mean) * np.sqrt(n / (n - 1)), rel=1e-12)
    assert row.mean_diff - row.loa_lo == pytest.approx(
        (mean - lower) * np.sqrt(n / (n - 1)), rel=1e-12)
    fig2 = bland_altman_figure(pd.DataFrame({
        "judge": "j", "criterion": "c", "output_id": [f"o{i}" for i in range(n)],
        "judge_score": judge, "human_mean": human, "own_scale": None}), "j", "c")
    np.testing.assert_allclose(fig2.data[0].x, np.asarray(points)[:, 0], rtol=1e-12)
    np.testing.assert_allclose(fig2.data[0].y, np.asarray(points)[:, 1], rtol=1e-12)


def test_mean_interval_and_slope_against_scipy_and_statsmodels_ols() -> None:
    judge, human = _pairs(4, n=40)
    row = _row(judge, human, conf=0.9)
    d, a = judge - human, (judge + human) / 2
    lo, hi = stats.t.interval(0.9, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    assert (row.mean_diff_lo, row.mean_diff_hi) == pytest.approx((lo, hi), rel=1e-12)
    assert row.sd_diff == pytest.approx(np.std(d, ddof=1), rel=1e-12)
    fit = sm.OLS(d, sm.add_constant(a)).fit()
    assert row.slope == pytest.approx(fit.params[1], rel=1e-10)
    assert (row.slope_lo, row.slope_hi) == pytest.approx(tuple(fit.conf_int(0.1)[1]), rel=1e-10)
    assert row.slope_p == pytest.approx(fit.pvalues[1], rel=1e-8)
    assert row.slope_p < 0.01  # the judge spreads 1.1x the humans: proportional bias


def test_few_pairs_missing_values_and_alignment() -> None:
    row = _row([1.0, np.nan, 3.0], [2.0, 2.0, np.nan])
    assert row.n == 1 and np.isnan(row.mean_diff) and np.isnan(row.loa_hi)
    assert "fewer than 3 pairs" in row.note
    assert list(limits_of_agreement([], []).columns) == LOA_COLUMNS
    a = pd.Series([1.0, 2.0, 4.0, 8.0], index=["w", "x", "y", "z"])
    b = pd.Series([2.0, 2.5, 1.0, 3.0], index=["z", "y", "x", "v"])
    row = _row(a, b)  # aligned on w..z: pairs (2, 1), (4, 2.5), (8, 2)
    assert row.n == 3 and row.mean_diff == pytest.approx(np.mean([1, 1.5, 6]))
    same = _row([1.0, 2.0, 3.0], [0.0, 1.0, 2.0])
    assert same.sd_diff == 0 and same.loa_hi == same.loa_hi_hi == 1.0
    assert "all differences equal" in same.note
    with pytest.raises(ValueError):
        limits_of_agreement([1.0, 2.0], [1.0])


# ------------------------------------------------------------------ bland_altman.csv


def _study() -> tuple[StudyData, dict]:
    """3 annotators x 30 outputs x 2 criteria (1-10, some scores missing); VLM judges A, B
    (B skips outputs), a VLM judge C and a metric M on their own 0-1 scale."""
    rng = np.random.default_rng(8)
    outputs = [f"t{i:02d}/g" for i in range(30)]
    crit = ["c1", "c2"]
    truth = {(o, c): rng.uniform(2, 9) for o in outputs for c in crit}
    hs = [(o, f"a{a}", c, float(np.clip(round(truth[o, c] + rng.normal(0, 1)), 1, 10)))
          for a in range(3) for o in outputs for c in crit if rng.uniform() > 0.1]
    js = []
    for o in outputs:
        for c in crit:
            js.append((o, "A", c, float(np.clip(round(truth[o, c] + 0.5 + rng.normal()), 1, 10))))
            if o not in outputs[:5]:
                js.append((o, "B", c, float(np.clip(round(truth[o, c] + rng.normal()), 1, 10))))
            js.append((o, "C", c, truth[o, c] / 10))
            js.append((o, "M", c, truth[o, c] / 10 + rng.normal(0, 0.05)))
    human_scores = pd.DataFrame(hs, columns=["output_id", "annotator", "criterion", "score"])
    judge_scores = pd.DataFrame(js, columns=["output_id", "judge", "criterion", "score"])
    study = StudyData(
        human_scores=human_scores, judge_scores=judge_scores,
        human_answers=pd.DataFrame(columns=["output_id", "annotator", "question_id", "answer"]),
        judge_answers=pd.DataFrame(columns=["output_id", "judge", "question_id", "answer"]),
        questions=pd.DataFrame(columns=["question_id", "checklist_id", "operator", "target",
                                        "pass_answer", "depends_on"]),
        outputs=pd.DataFrame({"output_id": outputs, "task_id": outputs, "generator": "g",
                              "missing": 0, "checklist_id": outputs}),
        criteria=pd.DataFrame({"name": crit, "label": crit, "min": 1.0, "max": 10.0,
                               "step": 1.0, "level": "interval", "rubric": "",
                               "position": [0, 1]}),
        judges=pd.DataFrame({"name": ["A", "B", "C", "M"], "kind": ["vlm", "vlm", "vlm",
                                                                   "metric"],
                             "scale_min": [None, None, 0.0, 0.0],
                             "scale_max": [None, None, 1.0, 1.0]}))
    return study, {"hs": hs, "js": js, "outputs": outputs}


def _hand_pairs(raw: dict) -> dict:
    """(judge, criterion) -> {output: (judge score, human mean)}, by plain dicts."""
    human: dict = {}
    for o, a, c, v in raw["hs"]:
        human.setdefault((o, a), {})[c] = v
    means: dict = {}
    for (o, _a), got in human.items():
        for c, v in got.items():
            means.setdefault((c, o), []).append(v)
        if len(got) == 2:
            means.setdefault((AVERAGE, o), []).append((got["c1"] + got["c2"]) / 2)
    judged: dict = {}
    for o, j, c, v in raw["js"]:
        judged.setdefault((j, o), {})[c] = v
    for o in raw["outputs"]:  # the ensemble: mean of A and B where both scored
        if (("B", o)) in judged:
            judged[(ENSEMBLE, o)] = {c: (judged[("A", o)][c] + judged[("B", o)][c]) / 2
                                     for c in ("c1", "c2")}
    out: dict = {}
    for (j, o), got in judged.items():
        if len(got) == 2:
            got = {**got, AVERAGE: (got["c1"] + got["c2"]) / 2}
        for c, v in got.items():
            if (c, o) in means:
                out.setdefault((j, c), {})[o] = (v, float(np.mean(means[(c, o)])))
    return out


def test_table_against_hand_pairs_numpy_and_statsmodels() -> None:
    study, raw = _study()
    table = bland_altman_table(study)
    assert list(table.columns) == COLUMNS
    assert list(pd.unique(table.judge)) == ["A", "B", "C", "M", ENSEMBLE]
    assert list(table[table.judge == "A"].criterion) == ["c1", "c2", AVERAGE]
    hand = _hand_pairs(raw)
    assert {(j, c) for j, c in zip(table.judge, table.criterion, strict=True)} == set(hand)
    for (judge, criterion), pairs in hand.items():
        row = table[(table.judge == judge) & (table.criterion == criterion)].iloc[0]
        assert row.n_items == len(pairs)
        if judge in ("C", "M"):
            assert row.note == ("judge on its own scale (0-1): no limits of agreement on the "
                                "humans' scale")
            assert table.loc[row.name, COLUMNS[3:-1]].isna().all()
            continue
        x = np.array([v[0] for v in pairs.values()])
        y = np.array([v[1] for v in pairs.values()])
        d = x - y
        assert row.mean_diff == pytest.approx(d.mean(), rel=1e-12, abs=1e-12)
        assert row.sd_diff == pytest.approx(d.std(ddof=1), rel=1e-12)
        assert row.loa_lo == pytest.approx(d.mean() - 1.96 * d.std(ddof=1), rel=1e-12)
        assert row.loa_hi == pytest.approx(d.mean() + 1.96 * d.std(ddof=1), rel=1e-12)
        assert row.loa_lo_lo < row.loa_lo < row.loa_lo_hi
        assert row.loa_hi_lo < row.loa_hi < row.loa_hi_hi
        fit = sm.OLS(d, sm.add_constant((x + y) / 2)).fit()
        assert row.slope == pytest.approx(fit.params[1], rel=1e-9, abs=1e-12)
        assert row.slope_p == pytest.approx(fit.pvalues[1], rel=1e-7)
    a = table[(table.judge == "A") & (table.criterion == "c1")].iloc[0]
    assert a.mean_diff_lo > 0  # judge A scores 0.5 higher than the humans


def test_figure_of_a_study() -> None:
    study, raw = _study()
    fig = bland_altman_figure(study, "A", "c2")
    pairs = _hand_pairs(raw)[("A", "c2")]
    x = np.array([v[0] for v in pairs.values()])
    y = np.array([v[1] for v in pairs.values()])
    np.testing.assert_allclose(sorted(fig.data[0].x), sorted((x + y) / 2), rtol=1e-12)
    np.testing.assert_allclose(sorted(fig.data[0].y), sorted(x - y), rtol=1e-12)
    d = x - y
    lines = sorted(s.y0 for s in fig.layout.shapes if s.type == "line")
    np.testing.assert_allclose(lines, [d.mean() - 1.96 * d.std(ddof=1), d.mean(),
                                       d.mean() + 1.96 * d.std(ddof=1)], rtol=1e-12)
    assert sum(s.type == "rect" for s in fig.layout.shapes) == 3
    assert bland_altman_figure(study, "M", "c1") is None  # own scale
    assert bland_altman_figure(study, "nobody", "c1") is None
    pairs_table = bland_altman_pairs(study)
    assert bland_altman_figure(pairs_table, ENSEMBLE, AVERAGE) is not None
