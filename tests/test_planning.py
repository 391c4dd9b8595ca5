"""Planning (issue #16 item 6): the sample-size formulas against textbook values, scipy's
Fisher interval and simulations (the planned n gives roughly the target width), and
`judge-audit plan` and the Assignment page's panel on the demo project."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from annotation.cli import main
from annotation.results import planning as rp
from annotation.results.study import load_study
from annotation.stats import planning as sp
from annotation.store import Store


def _exact_r_sample(r: float, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """x, y of n pairs whose sample correlation is exactly r."""
    rng = np.random.default_rng(seed)
    x, e = rng.standard_normal(n), rng.standard_normal(n)
    x = (x - x.mean()) / x.std()
    e = e - e.mean() - (e @ x) / (x @ x) * x
    e = e / e.std()
    return x, r * x + math.sqrt(1 - r * r) * e


@pytest.mark.parametrize("r,width", [(0.5, 0.2), (0.7, 0.1), (0.3, 0.3), (0.9, 0.05)])
def test_fisher_n_is_the_smallest_n_whose_scipy_interval_is_narrow_enough(r, width):
    n = sp.fisher_z_n(r, width)
    for size, ok in ((n, True), (n - 1, False)):
        x, y = _exact_r_sample(r, size)
        ci = stats.pearsonr(x, y).confidence_interval(0.95)
        assert bool(ci.high - ci.low <= width) == ok
    # Bonett & Wright's (2000) closed-form approximation, the textbook value: r = .5,
    # w = .2 gives 4 * 1.96^2 * .75^2 / .04 + 3 = 219.1
    assert sp.bonett_wright_n0(0.5, 0.2) == pytest.approx(
        4 * 1.959964 ** 2 * 0.75 ** 2 / 0.04 + 3, rel=1e-6)
    assert abs(n - sp.bonett_wright_n0(r, width)) <= 0.03 * n


def test_fisher_plan_achieves_the_width_in_simulation():
    rng = np.random.default_rng(1)
    rho, width = 0.6, 0.25
    n = sp.fisher_z_n(rho, width)
    cov = [[1, rho], [rho, 1]]
    widths = []
    for _ in range(400):
        x, y = rng.multivariate_normal([0, 0], cov, n).T
        ci = stats.pearsonr(x, y).confidence_interval(0.95)
        widths.append(ci.high - ci.low)
    assert np.median(widths) == pytest.approx(width, rel=0.06)


def test_spearman_plan_with_bonett_wright_variance_in_simulation():
    # Bonett & Wright: var(atanh rho_s) ~ (1 + rho^2 / 2) / (n - 3); the planned n gives
    # intervals of about the width and about 95% coverage of the population rho_s
    rng = np.random.default_rng(2)
    rho, width = 0.6, 0.3
    rho_s = 6 / math.pi * math.asin(rho / 2)  # Spearman's rho of a bivariate normal
    n = sp.fisher_z_n(rho_s, width, factor=1 + rho_s ** 2 / 2)
    cov = [[1, rho], [rho, 1]]
    widths, covered = [], 0
    h = sp.z_crit() * math.sqrt((1 + rho_s ** 2 / 2) / (n - 3))
    for _ in range(400):
        x, y = rng.multivariate_normal([0, 0], cov, n).T
        z = math.atanh(stats.spearmanr(x, y).statistic)
        lo, hi = math.tanh(z - h), math.tanh(z + h)
        widths.append(hi - lo)
        covered += lo <= rho_s <= hi
    assert np.median(widths) == pytest.approx(width, rel=0.06)
    assert 0.92 <= covered / 400 <= 0.98


def _clustered(rng: np.random.Generator, m: int, k: int, p: float, icc: float):
    """m outputs of k decisions each, agreeing at rate p, correlated within an output
    (beta-binomial with intra-cluster correlation icc)."""
    a, b = p * (1 / icc - 1), (1 - p) * (1 / icc - 1)
    rates = rng.beta(a, b, m)
    return rng.binomial(k, rates), np.full(m, k)


def test_design_effect_matches_kish_and_the_planned_outputs_give_the_width():
    rng = np.random.default_rng(3)
    p, k, icc = 0.85, 8, 0.25
    successes, trials = _clustered(rng, 4000, k, p, icc)
    fit = sp.clustered_proportion(successes, trials)
    assert fit["deff"] == pytest.approx(sp.design_effect(k, icc), rel=0.08)  # 2.75
    # plan from a pilot of 40 outputs, then draw studies of the planned size
    pilot = sp.clustered_proportion(*_clustered(rng, 40, k, p, icc))
    target = 0.06
    m = sp.proportion_n(p, target, k, sp.design_effect(k, icc))
    widths = [2 * sp.z_crit() * sp.clustered_proportion(*_clustered(rng, m, k, p, icc))["se"]
              for _ in range(300)]
    assert np.median(widths) == pytest.approx(target, rel=0.06)
    assert pilot["deff"] > 1
    # with deff 1 and one question per output it is the textbook binomial n:
    # 1.96^2 * .5 * .5 / .05^2 = 384.1 -> 385
    assert sp.proportion_n(0.5, 0.1) == 385


def test_kappa_standard_error_against_simulation():
    # Cohen (1960): SE ~ sqrt(p_o (1 - p_o) / (N (1 - p_e)^2)); check against the spread of
    # kappa over simulated pairs of raters with that kappa and prevalence
    rng = np.random.default_rng(4)
    kappa, q, n = 0.6, 0.7, 400
    p_e = q * q + (1 - q) ** 2
    both_yes = q * q + kappa * (1 - p_e) / 2  # symmetric table with those margins
    cells = [both_yes, q - both_yes, q - both_yes, 1 - 2 * q + both_yes]
    kappas = []
    for _ in range(2000):
        a, b, c, d = rng.multinomial(n, cells) / n
        po, pe = a + d, (a + b) * (a + c) + (c + d) * (b + d)
        kappas.append((po - pe) / (1 - pe))
    assert np.std(kappas) == pytest.approx(sp.kappa_se(kappa, q, n), rel=0.1)
    m = sp.kappa_n(kappa, q, 0.2)
    assert 2 * sp.z_crit() * sp.kappa_se(kappa, q, m) <= 0.2 < \
        2 * sp.z_crit() * sp.kappa_se(kappa, q, m - 1)


def test_ppi_plan_in_simulation():
    # a judge correlated 0.8 with the human score; humans on the planned n of 400 outputs
    rng = np.random.default_rng(5)
    from annotation.stats.ppi import ppi_mean

    total, sd, rho, target = 400, 2.0, 0.8, 0.5
    n = sp.ppi_mean_n(sd, rho, total, target)
    human_only = math.ceil((2 * sp.z_crit() * sd / target) ** 2)  # 246
    assert n is not None and n < 0.65 * human_only
    widths = []
    for _ in range(300):
        f = rng.standard_normal(total)
        y = sd * (rho * f + math.sqrt(1 - rho * rho) * rng.standard_normal(total))
        labeled = rng.choice(total, n, replace=False)
        mask = np.zeros(total, bool)
        mask[labeled] = True
        row = ppi_mean(y[mask], f[mask], f[~mask]).iloc[0]
        widths.append(row.hi - row.lo)
    assert np.median(widths) == pytest.approx(target, rel=0.1)
    assert sp.ppi_mean_n(sd, 0.0, 50, 0.1) is None  # not reachable with 50 outputs


def test_scaling_and_spearman_brown_by_hand():
    assert sp.scaled_n(100, 0.2, 0.1) == 400
    assert sp.spearman_brown(0.5, 3) == pytest.approx(0.75)
    assert sp.attenuated_r(0.8, 0.64) == pytest.approx(0.64)
    with pytest.raises(ValueError, match="target width"):
        sp.fisher_z_n(0.5, 2.5)


def test_assumption_rows_without_data():
    table = rp.plan_table(None, "plcc", 0.1, assume=rp.Assumptions(r=0.7, icc_raters=0.5))
    first = table.iloc[0]
    assert first.basis == "assumption" and first.n_needed == sp.fisher_z_n(0.7, 0.1)
    per_k = table[table.annotators_per_item.notna()]
    assert list(per_k.annotators_per_item) == [1, 2, 3, 4, 5]
    assert per_k.n_needed.is_monotonic_decreasing  # more annotators: fewer outputs
    assert rp.plan_table(None, "alpha", 0.1).empty


@pytest.mark.slow
def test_plan_on_the_demo_from_data(tmp_path, engine_demo, capsys):
    db = engine_demo
    with Store.open(db) as store:
        study = load_study(store)
    for measure in rp.MEASURES:
        table = rp.plan_table(study, measure, 0.1, n_boot=50)
        assert len(table) and set(table.basis) == {"data"}, measure
        planned = table[table.n_needed.notna()]
        assert len(planned) and (planned.n_needed >= 1).all() and (table.width_now > 0).all()
        assert (planned.n_more == (planned.n_needed - planned.n_now).clip(lower=0)).all()
    board = rp.plan_table(study, "leaderboard", 5.0, n_boot=50)
    ppi = board[board.method.str.startswith("PPI++")]
    assert len(ppi) and ppi.estimate.between(-1, 1).all()  # the judge-human r
    unreachable = ppi[ppi.n_needed.isna()]
    assert unreachable.note.str.startswith("not reachable").all()
    plcc = rp.plan_table(study, "plcc", 0.1, n_boot=50, judge="gpt-5",
                         criterion="visual_quality")
    now = plcc[plcc.method == "Fisher z at the current r"].iloc[0]
    assert now.n_needed == sp.fisher_z_n(now.estimate, 0.1)
    assert now.width_now == pytest.approx(sp.fisher_z_width(now.estimate, now.n_now))
    # the current width is the report's Fisher interval
    from annotation.results.ratings import ratings_table

    ratings = ratings_table(study, n_boot=20)
    row = ratings[(ratings.judge == "gpt-5") & (ratings.criterion == "visual_quality")
                  & (ratings.reference == "human mean") & (ratings.group == "all")
                  & ratings.paired_judge.fillna("").eq("")].iloc[0]
    assert now.width_now == pytest.approx(row.plcc_fisher_hi - row.plcc_fisher_lo)
    out = tmp_path / "plan.csv"
    assert main(["plan", "--db", str(db), "--measure", "agreement", "--target-width",
                 "0.05", "--out", str(out)]) == 0
    assert "agreement" in capsys.readouterr().out and out.exists()
    assert main(["plan", "--measure", "alpha"]) == 2
    assert "no closed form" in capsys.readouterr().err
    assert main(["plan", "--db", str(tmp_path / "none.db")]) == 1


@pytest.mark.slow
def test_the_assignment_page_shows_widths_and_plans(tmp_path, engine_demo, monkeypatch):
    from tests.helpers.apptest import signed_in

    db = engine_demo
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    at = signed_in("pages/assignment.py", "boss", "admin").run(timeout=60)
    assert not at.exception
    assert any("Current 95% interval width" in c.value for c in at.caption)
    widths = at.dataframe[0].value
    assert set(widths.measure) == {"plcc", "agreement"} and (widths.width_now > 0).all()
    [interval] = [s for s in at.selectbox if s.label == "Interval"]
    interval.set_value("agreement")
    at.button(key="FormSubmitter:plan-Plan").click().run(timeout=60)
    assert not at.exception
    [plan] = [d.value for d in at.dataframe if "n_needed" in d.value.columns]
    assert set(plan.measure) == {"agreement"} and (plan.n_needed > 0).all()


def test_scaling_a_pilot_interval_reaches_roughly_the_target_in_simulation():
    # the data-based plans of srcc/kappa/alpha/leaderboard: a pilot's interval scaled by
    # 1/sqrt(n). Here the leaderboard's: PPI++ on 30 of 1000 outputs, scaled to half the
    # pilot's median width; studies of the planned size get about that width
    from annotation.stats.ppi import ppi_mean

    rng = np.random.default_rng(6)
    total, rho = 1000, 0.7

    def width(n: int) -> float:
        f = rng.standard_normal(total)
        y = 5 + 2 * (rho * f + math.sqrt(1 - rho * rho) * rng.standard_normal(total))
        mask = np.zeros(total, bool)
        mask[rng.choice(total, n, replace=False)] = True
        row = ppi_mean(y[mask], f[mask], f[~mask]).iloc[0]
        return float(row.hi - row.lo)

    pilot = float(np.median([width(30) for _ in range(200)]))
    target = pilot / 2
    n = sp.scaled_n(30, pilot, target)
    assert n == 120
    achieved = float(np.median([width(n) for _ in range(200)]))
    assert achieved == pytest.approx(target, rel=0.1)


def test_the_page_plan_uses_the_data_and_falls_back_to_the_stated_value(engine_demo, tmp_path):
    from dataclasses import replace

    from annotation.results.planning import Assumptions, plan_or_assume, plan_table
    from annotation.results.study import load_study
    from annotation.store import Store

    with Store.open(engine_demo) as store:
        study = load_study(store)
    from_data = plan_or_assume(study, "agreement", 0.08, 0.5)
    assert len(from_data) and from_data.equals(plan_table(study, "agreement", 0.08))
    no_humans = replace(study, human_answers=study.human_answers.iloc[0:0],
                        human_scores=study.human_scores.iloc[0:0])
    stated = plan_or_assume(no_humans, "agreement", 0.08, 0.5)
    assert len(stated) and stated.equals(plan_table(None, "agreement", 0.08,
                                                    assume=Assumptions(p=0.5)))
