"""``judge-audit plan``: how many more items (and annotators per item) a target interval
width needs, from the study's current data and from stated assumptions.

Each row plans one interval of the report for a target 95% width (the formulas are in
:mod:`annotation.stats.planning`):

* ``plcc``: per judge and criterion against the human mean (``ratings.csv``): the Fisher z
  width at the current r (exact in n). Where the annotators' single-rating reliability is
  known (``icc_a1`` of ``reliability.csv``, or ``--assume-icc-raters``), also per number of
  annotators per output: more annotators make the human mean more reliable and the judge's
  r higher (Spearman-Brown and Spearman's attenuation), so fewer outputs are needed.
* ``srcc``, ``kappa``, ``alpha``, ``leaderboard``: the report's own interval at its
  current n scaled by width ~ 1 / sqrt(n): an approximation (the estimate and the
  interval's shape change with n too); ``kappa`` from ``checklist.csv`` (each judge against
  the human majority), ``alpha`` from ``reliability.csv`` (per criterion, the annotators
  among themselves; in outputs at the current annotators per output), ``leaderboard`` from
  ``leaderboard.csv`` (human-scored outputs per generator; capped by its outputs), and
  beside it the PPI++ variance at the sample's judge-human r and human sd.
* ``agreement``: each judge against the human majority, a binomial share with the design
  effect of an output's correlated questions estimated from the data (the ratio
  estimator's variance over outputs), in outputs at the current questions per output.

Without data (or beside it) the same quantities come from assumptions: ``r``
(plcc/srcc/leaderboard), ``p`` (agreement), ``kappa`` and ``prevalence`` (kappa),
``questions`` per output and ``icc`` between an output's decisions (agreement/kappa), ``sd``
of the human score and ``outputs`` per generator (leaderboard). Every row says its
``basis`` and ``method``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from annotation.results.checklist import HUMAN_MAJORITY, StudyDecisions, study_decisions
from annotation.results.study import StudyData
from annotation.stats import planning as sp

__all__ = ["COLUMNS", "MEASURES", "Assumptions", "agreement_rows", "current_widths",
           "plan_or_assume", "plan_table"]

MEASURES = ("plcc", "srcc", "agreement", "kappa", "alpha", "leaderboard")
COLUMNS = ["measure", "judge", "criterion", "generator", "basis", "estimate", "n_now",
           "width_now", "target_width", "annotators_per_item", "n_needed", "n_more",
           "annotations_needed", "unit", "method", "note"]
MAX_RATERS = 5


@dataclass(frozen=True)
class Assumptions:
    """Stated values for planning without (or beside) data; None = not stated."""

    r: float | None = None
    p: float | None = None
    kappa: float | None = None
    prevalence: float | None = None
    questions: float = 1.0
    icc: float = 0.0
    icc_raters: float | None = None
    sd: float | None = None
    outputs: int | None = None


def _row(measure: str, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = {c: None for c in COLUMNS}
    row.update(measure=measure, **values)
    if row["n_needed"] is not None and row["n_now"] is not None:
        row["n_more"] = max(int(row["n_needed"]) - int(row["n_now"]), 0)
    if row["n_needed"] is not None and _ok(row["annotators_per_item"]):
        row["annotations_needed"] = math.ceil(row["n_needed"] * row["annotators_per_item"])
    return row


def _ok(x: Any) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def _raters_per_output(study: StudyData, criterion: str) -> float:
    scores = study.human_scores
    if criterion != "average":
        scores = scores[scores.criterion == criterion]
    scored = scores[scores.score.notna()]
    if scored.empty:
        return math.nan
    return float(scored.groupby("output_id").annotator.nunique().mean())


def _plcc_rows(study: StudyData, ratings: pd.DataFrame, reliability: pd.DataFrame,
               width: float, icc_raters: float | None) -> list[dict[str, Any]]:
    from annotation.results.ratings import HUMAN_MEAN

    rows = []
    mine = ratings[(ratings.reference == HUMAN_MEAN) & (ratings.group == "all")
                   & ratings.paired_judge.fillna("").eq("")]
    icc_of = {str(c): v for c, v in zip(reliability.criterion, reliability.icc_a1,
                                        strict=True) if _ok(v)} if len(reliability) else {}
    for r in mine.itertuples():
        if not (_ok(r.plcc) and r.n_items > 3):
            continue
        now = sp.fisher_z_width(float(r.plcc), int(r.n_items))
        k_now = _raters_per_output(study, str(r.criterion))
        base = {"judge": r.judge, "criterion": r.criterion, "basis": "data",
                "estimate": float(r.plcc), "n_now": int(r.n_items), "width_now": now,
                "target_width": width, "unit": "outputs"}
        rows.append(_row("plcc", **base, annotators_per_item=k_now,
                         n_needed=sp.fisher_z_n(float(r.plcc), width),
                         method="Fisher z at the current r",
                         note=None if r.plcc_ci_method == "fisher" or not _ok(
                             r.plcc_fisher_lo) else "the report's plcc_lo/hi is a "
                         "bootstrap; this plan is Fisher's interval (plcc_fisher_lo/hi)"))
        icc = icc_raters if icc_raters is not None else icc_of.get(str(r.criterion))
        if icc is None or not (0 < icc < 1) or not _ok(k_now) or r.plcc <= 0:
            continue
        r_true = min(float(r.plcc) / math.sqrt(sp.spearman_brown(icc, k_now)), 0.99)
        for k in range(1, MAX_RATERS + 1):
            r_k = sp.attenuated_r(r_true, sp.spearman_brown(icc, k))
            n_k = sp.fisher_z_n(r_k, width)
            rows.append(_row("plcc", **{**base, "estimate": r_k}, annotators_per_item=k,
                             n_needed=n_k,
                             method=f"Fisher z at the r expected with k annotators per "
                                    f"output (Spearman-Brown, ICC(A,1) {icc:.2f})"))
    return rows


def _scaled_rows(measure: str, table: pd.DataFrame, estimate: str, lo: str, hi: str, n: str,
                 width: float, keys: dict[str, str], unit: str, method: str,
                 cap: str | None = None) -> list[dict[str, Any]]:
    rows = []
    for r in table.to_dict("records"):
        now = r[hi] - r[lo] if _ok(r[hi]) and _ok(r[lo]) else math.nan
        if not (_ok(now) and now > 0 and r[n] and int(r[n]) > 0):
            continue
        needed = sp.scaled_n(int(r[n]), float(now), width)
        note = None
        if cap is not None and needed > int(r[cap]):
            note = f"more than the {int(r[cap])} outputs there are: not reachable this way"
        rows.append(_row(measure, **{k: r[v] for k, v in keys.items()}, basis="data",
                         estimate=r[estimate],
                         n_now=int(r[n]), width_now=float(now), target_width=width,
                         n_needed=needed, unit=unit, method=method, note=note))
    return rows


def agreement_rows(decided: StudyDecisions, width: float | None = None) -> list[dict[str, Any]]:
    """Per judge against the human majority: agreement, its design-effect binomial width
    now and (with ``width``) the outputs needed at the current questions per output."""
    rows = []
    majority = decided.majority.answer
    for judge, mine in decided.judges.groupby("judge", sort=True):
        pairs = mine[mine.key.isin(majority.index) & mine.answer.isin(("yes", "no"))]
        if pairs.empty:
            continue
        same = (pairs.answer.to_numpy() == majority.reindex(pairs.key).to_numpy())
        per = pd.DataFrame({"o": pairs.output_id.to_numpy(), "a": same}).groupby("o").a
        fit = sp.clustered_proportion(per.sum().to_numpy(), per.size().to_numpy())
        if not _ok(fit["p"]):
            continue
        deff = max(fit["deff"], 1.0) if _ok(fit["deff"]) else 1.0
        now = 2 * sp.z_crit() * fit["se"]
        rows.append(_row(
            "agreement", judge=judge, basis="data", estimate=fit["p"], n_now=int(fit["m"]),
            width_now=now, target_width=width, annotators_per_item=None,
            n_needed=sp.proportion_n(fit["p"], width, fit["k"], deff) if width else None,
            unit="outputs",
            method=f"binomial x design effect {deff:.2f} of {fit['k']:.1f} questions per "
                   "output (estimated)",
            note="p at 0 or 1: no width to scale" if fit["p"] in (0.0, 1.0) else None))
    return rows


def _assumption_rows(measure: str, a: Assumptions, width: float) -> list[dict[str, Any]]:
    base = {"basis": "assumption", "target_width": width}
    if measure in ("plcc", "srcc") and a.r is not None:
        factor = 1.0 if measure == "plcc" else 1 + a.r ** 2 / 2
        rows = [_row(measure, **base, estimate=a.r, n_needed=sp.fisher_z_n(
            a.r, width, factor=factor), unit="outputs",
            method="Fisher z" + ("" if measure == "plcc" else
                                 " with Bonett-Wright's variance 1 + r^2/2"),
            note=f"r = {a.r}")]
        if measure == "plcc" and a.icc_raters is not None and 0 < a.icc_raters < 1:
            for k in range(1, MAX_RATERS + 1):
                r_k = sp.attenuated_r(a.r, sp.spearman_brown(a.icc_raters, k))
                n_k = sp.fisher_z_n(r_k, width)
                rows.append(_row(measure, **base, estimate=r_k, annotators_per_item=k,
                                 n_needed=n_k, unit="outputs",
                                 method=f"Fisher z at r x sqrt(Spearman-Brown reliability "
                                        f"of k annotators, ICC(A,1) {a.icc_raters})",
                                 note=f"r = {a.r} with the true score"))
        return rows
    deff = sp.design_effect(a.questions, a.icc)
    if measure == "agreement" and a.p is not None:
        return [_row(measure, **base, estimate=a.p, n_needed=sp.proportion_n(
            a.p, width, a.questions, deff), unit="outputs",
            method=f"binomial x design effect {deff:.2f} ({a.questions:g} questions per "
                   f"output, icc {a.icc:g})", note=f"p = {a.p}")]
    if measure == "kappa" and a.kappa is not None and a.prevalence is not None:
        return [_row(measure, **base, estimate=a.kappa, n_needed=sp.kappa_n(
            a.kappa, a.prevalence, width, a.questions, deff), unit="outputs",
            method=f"Cohen's large-sample SE x design effect {deff:.2f}",
            note=f"kappa = {a.kappa}, prevalence = {a.prevalence}")]
    if measure == "leaderboard" and None not in (a.r, a.sd, a.outputs):
        assert a.r is not None and a.sd is not None and a.outputs is not None
        n = sp.ppi_mean_n(a.sd, a.r, a.outputs, width)
        return [_row(measure, **base, n_needed=n, unit="human-scored outputs per generator",
                     method="PPI++ mean variance sd^2/n (1 - r^2 N/(n+N))",
                     note=(f"sd = {a.sd}, r = {a.r}, {a.outputs} outputs" if n is not None
                           else f"not reachable with {a.outputs} outputs"))]
    return []


def plan_table(study: StudyData | None, measure: str, width: float, *,
               criterion: str | None = None, judge: str | None = None,
               assume: Assumptions = Assumptions(), n_boot: int = 200,
               seed: int = 0) -> pd.DataFrame:
    """The plan (module docstring) for one ``measure`` at target ``width``, from the
    study's data (when ``study`` has some) and from ``assume`` (when stated)."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {MEASURES}, got {measure!r}")
    rows: list[dict[str, Any]] = []
    if study is not None:
        rows += _data_rows(study, measure, width, n_boot=n_boot, seed=seed,
                           icc_raters=assume.icc_raters)
    rows += _assumption_rows(measure, assume, width)
    table = pd.DataFrame(rows, columns=COLUMNS).astype(
        {c: "Int64" for c in ("n_now", "n_needed", "n_more", "annotations_needed")})
    if judge is not None:
        table = table[table.judge.isna() | (table.judge == judge)]
    if criterion is not None:
        table = table[table.criterion.isna() | (table.criterion == criterion)]
    return table.reset_index(drop=True)


def plan_or_assume(study: StudyData, measure: str, width: float,
                   assumed: float) -> pd.DataFrame:
    """The Assignment page's plan: from the study's data, or, when it has none for
    ``measure``, from one stated value (``assumed``: r for PLCC and SRCC, the agreement
    for ``agreement``; the other assumptions are ``judge-audit plan``'s options)."""
    plan = plan_table(study, measure, width)
    if plan.empty:
        stated = Assumptions(r=assumed if measure in ("plcc", "srcc") else None,
                             p=assumed if measure == "agreement" else None)
        plan = plan_table(None, measure, width, assume=stated)
    return plan


def _data_rows(study: StudyData, measure: str, width: float, *, n_boot: int, seed: int,
               icc_raters: float | None) -> list[dict[str, Any]]:
    if measure in ("plcc", "srcc", "alpha"):
        from annotation.results.ratings import HUMAN_MEAN, ratings_table
        from annotation.results.reliability import reliability_table

        reliability = reliability_table(study, n_boot=n_boot, seed=seed)
        reliability = reliability[reliability.group == "all"] if len(reliability) else \
            reliability
        if measure == "alpha":
            # outputs, not units: the checklist row's units are decisions, and the
            # interval resamples outputs
            alpha = reliability.assign(
                alpha=reliability.alpha_interval.astype(float).fillna(
                    reliability.alpha_nominal.astype(float)),
                n_plan=reliability.n_outputs.astype(float).fillna(
                    reliability.n_items.astype(float)))
            return _scaled_rows("alpha", alpha, "alpha", "alpha_lo",
                                "alpha_hi", "n_plan", width, {"criterion": "criterion"},
                                "outputs", "the report's interval scaled by 1/sqrt(n) "
                                "(at the current annotators per output)")
        ratings = ratings_table(study, n_boot=n_boot, seed=seed)
        if measure == "plcc":
            return _plcc_rows(study, ratings, reliability, width, icc_raters)
        mine = ratings[(ratings.reference == HUMAN_MEAN) & (ratings.group == "all")
                       & ratings.paired_judge.fillna("").eq("")]
        return _scaled_rows("srcc", mine, "srcc", "srcc_lo", "srcc_hi", "n_items", width,
                            {"judge": "judge", "criterion": "criterion"}, "outputs",
                            "the report's interval scaled by 1/sqrt(n)")
    decided = study_decisions(study)
    if measure == "agreement":
        return agreement_rows(decided, width)
    if measure == "kappa":
        from annotation.results.checklist import checklist_table

        table = checklist_table(study, per_annotator=False, n_boot=n_boot, seed=seed,
                                decided=decided, dawid_skene=False)
        mine = table[(table.reference == HUMAN_MAJORITY) & (table.group == "all")]
        return _scaled_rows("kappa", mine, "kappa", "kappa_lo", "kappa_hi", "n_items", width,
                            {"judge": "judge"}, "outputs",
                            "the report's interval scaled by 1/sqrt(n)")
    from annotation.results.leaderboard import leaderboard_table

    board = leaderboard_table(study, decided)
    return [*_scaled_rows("leaderboard", board, "estimate", "lo", "hi", "n_labeled", width,
                          {"judge": "judge", "criterion": "measure",
                           "generator": "generator"},
                          "human-scored outputs per generator",
                          "the report's interval scaled by 1/sqrt(n)", cap="n_outputs"),
            *_ppi_rows(study, decided, width)]


def _ppi_rows(study: StudyData, decided: StudyDecisions, width: float
              ) -> list[dict[str, Any]]:
    """The leaderboard planned with the PPI++ variance at each sample's judge-human r and
    human sd (the unlabelled share shrinks as humans score more: the scaling ignores it)."""
    from annotation.results.leaderboard import measure_scores

    generator = study.outputs.set_index("output_id").generator.astype(str)
    rows = []
    for measure, human, by_judge in measure_scores(study, decided):
        for judge, judged in sorted(by_judge.items()):
            for gen in sorted(generator.unique()):
                f_all = judged.reindex(generator.index[generator == gen]).dropna()
                y = human.reindex(f_all.index).dropna()
                f = f_all.reindex(y.index)
                if len(y) < 3 or y.std() == 0 or f.std() == 0:
                    continue
                r, sd, total = float(y.corr(f)), float(y.std(ddof=1)), len(f_all)
                n = sp.ppi_mean_n(sd, max(r, 0.0), total, width)
                rows.append(_row(
                    "leaderboard", judge=judge, criterion=measure, generator=gen,
                    basis="data", estimate=r, n_now=len(y),
                    width_now=sp.ppi_mean_width(sd, max(r, 0.0), len(y), total),
                    target_width=width, n_needed=n,
                    unit="human-scored outputs per generator",
                    method="PPI++ variance at the sample's judge-human r (estimate) and sd",
                    note=None if n is not None else
                    f"not reachable with the generator's {total} outputs"))
    return rows


def current_widths(study: StudyData) -> pd.DataFrame:
    """What the Assignment page shows next to progress, computed without a bootstrap: per
    judge the width of the Fisher z interval of its PLCC with the human mean on the
    criteria average (or the only criterion) and of its checklist agreement with the human
    majority (design-effect binomial). Columns: measure, judge, criterion, estimate,
    n_now, width_now."""
    from annotation.results.ratings import AVERAGE, with_average

    rows: list[dict[str, Any]] = []
    criteria = list(study.criteria.name)
    if len(study.human_scores) and criteria:
        criterion = AVERAGE if len(criteria) > 1 else criteria[0]
        humans = with_average(study.human_scores, "annotator", criteria)
        judges = with_average(study.judge_scores, "judge", criteria)
        human = humans[humans.criterion == criterion].groupby("output_id").score.mean()
        for judge, mine in judges[judges.criterion == criterion].groupby("judge", sort=True):
            pair = pd.concat([mine.groupby("output_id").score.mean(), human], axis=1,
                             join="inner").dropna()
            if len(pair) < 4 or pair.std().eq(0).any():
                continue
            r = float(pair.corr().iloc[0, 1])
            rows.append({"measure": "plcc", "judge": judge, "criterion": criterion,
                         "estimate": r, "n_now": len(pair),
                         "width_now": sp.fisher_z_width(r, len(pair))})
    if len(study.human_answers):
        for row in agreement_rows(study_decisions(study)):
            rows.append({**{k: row[k] for k in ("measure", "judge", "estimate", "n_now",
                                                "width_now")}, "criterion": "checklist"})
    return pd.DataFrame(rows, columns=["measure", "judge", "criterion", "estimate", "n_now",
                                       "width_now"])
