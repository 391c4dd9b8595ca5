"""The report's pairwise and ranking tables (issue #17; columns in ``docs/report.md``).

* ``pairwise.csv`` (:func:`pairwise_table`): one row per judge against the human
  reference (:func:`annotation.stats.pairwise.human_reference`, the strict majority of the
  annotators of a pair), with :func:`annotation.stats.pairwise.pairwise_agreement` (pairs
  clustered by task) and :func:`annotation.stats.pairwise.position_bias`; and one row
  ``humans``: Krippendorff's alpha (nominal, four classes) and % agreement among the
  annotators of pairs answered by two or more (:mod:`annotation.stats.reliability`), and the
  humans' own share of preferences for the output shown on the left, where the side was
  recorded (``shown_first``).
* ``pairwise_confusion.csv`` (:func:`confusion_table`): per judge the reference x verdict
  counts.
* ``pairwise_rankings.csv`` (:func:`pairwise_rankings_table`): Bradley-Terry strengths of
  the generators (:func:`annotation.stats.rankings.bt_bootstrap`) from every human answer
  (rater ``humans``) and from each judge's parsed verdicts, with cluster-bootstrap
  intervals (pairs of one task resampled together), and Kendall tau-b between the humans'
  strengths and each judge's (``scipy.stats.kendalltau``, tau-b).
* ``rankings.csv`` (:func:`rankings_table`): on ranking items, Kendall's W among the
  annotators of each item (tie-corrected, :func:`annotation.stats.rankings.kendall_w`) and
  Spearman's rho between the mean human ranks of the item's outputs and each judge's ranks;
  over all items (``ranking_id`` = ``all``): the mean of the items' W, and Spearman's rho
  between each generator's mean human rank and its mean rank by the judge. TIIF-Bench
  validates its benchmark this way ("TIIF-Bench: How Does Your T2I Model Follow Your
  Instructions?", Sec. 4.2: volunteers rank the models' outputs per prompt and the ranking
  is compared with the benchmark's).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from annotation.records import PREFERENCES
from annotation.stats.pairwise import (
    UNPARSED,
    confusion,
    human_reference,
    pairwise_agreement,
    position_bias,
)
from annotation.stats.rankings import bt_bootstrap, kendall_w, order_ranks
from annotation.stats.reliability import krippendorff_alpha, multirater_agreement

HUMANS = "humans"
_AGREEMENT = ("accuracy_all", "accuracy_parsed", "kappa", "accuracy_ties_merged")
PAIRWISE_COLUMNS = [
    "rater", "n_pairs", "n_parsed", "n_unparsed",
    *(c for s in _AGREEMENT for c in (s, f"{s}_lo", f"{s}_hi")),
    "n_clusters", "n_boot", "n_decided", "first_shown_share", "first_shown_lo",
    "first_shown_hi", "n_both_orders", "order_consistency", "n_annotators", "alpha",
    "pct_agreement", "note"]
CONFUSION_COLUMNS = ["judge", "reference", "verdict", "n"]
BT_COLUMNS = ["rater", "generator", "strength", "strength_lo", "strength_hi", "rank",
              "n_comparisons", "n_clusters", "n_boot", "kendall_tau_b", "tau_p_value",
              "n_generators"]
RANKING_COLUMNS = ["ranking_id", "statistic", "judge", "value", "n_raters", "n_objects",
                   "chi2", "df", "p_value"]


def _frames(pairwise: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    pairs = pairwise.get("pairs", pd.DataFrame(columns=["pair_id", "output_a", "output_b",
                                                        "task_id", "generator_a",
                                                        "generator_b"]))
    answers = pairwise.get("pair_answers", pd.DataFrame(columns=["pair_id", "rater", "kind",
                                                                 "preference",
                                                                 "shown_first"]))
    return pairs, answers


def references(pairwise: dict[str, pd.DataFrame]) -> pd.Series:
    """pair_id -> the human reference preference (pairs without one left out)."""
    _, answers = _frames(pairwise)
    human = answers[answers.kind == "human"]
    ref = human.groupby("pair_id", sort=False).preference.agg(lambda v: human_reference(v))
    return ref.dropna()


def pairwise_table(pairwise: dict[str, pd.DataFrame], *, n_boot: int = 1000,
                   seed: int = 0) -> pd.DataFrame:
    """``pairwise.csv`` (module docstring)."""
    pairs, answers = _frames(pairwise)
    if pairs.empty:
        return pd.DataFrame(columns=PAIRWISE_COLUMNS)
    ref = references(pairwise)
    task = dict(zip(pairs.pair_id, pairs.task_id, strict=True))
    rows: list[dict[str, Any]] = []
    judged = answers[answers.kind == "judge"]
    for judge, group in judged.groupby("rater", sort=True):
        on = group[group.pair_id.isin(ref.index)]
        verdict = [None if pd.isna(v) else v for v in on.preference]
        row = pairwise_agreement(verdict, list(ref[on.pair_id]),
                                 [task[p] for p in on.pair_id], n_boot=n_boot,
                                 seed=seed).iloc[0].to_dict()
        shown = group.merge(pairs[["pair_id", "output_a", "output_b"]], on="pair_id")
        row |= position_bias(shown.assign(verdict=[None if pd.isna(v) else v
                                                   for v in shown.preference]))
        rows.append({"rater": judge, **row})
    human = answers[answers.kind == "human"]
    if not human.empty:
        wide = human.pivot_table(index="pair_id", columns="rater", values="preference",
                                 aggfunc="first")
        several = wide[wide.notna().sum(axis=1) >= 2]
        row = {"rater": HUMANS, "n_pairs": len(several),
               "n_annotators": int(human.rater.nunique())}
        if len(several):
            row["alpha"] = krippendorff_alpha(several.to_numpy(dtype=object), "nominal",
                                              value_domain=list(PREFERENCES))
            row["pct_agreement"] = multirater_agreement(
                several.to_numpy(dtype=object), categories=list(PREFERENCES)).pa
        else:
            row["note"] = "no pair answered by two or more annotators"
        sided = human[human.shown_first.notna()] if "shown_first" in human else human[:0]
        if len(sided):
            seen = [p if s == "a" else {"a": "b", "b": "a"}.get(p, p)
                    for p, s in zip(sided.preference, sided.shown_first, strict=True)]
            bias = position_bias(pd.DataFrame({"output_a": sided.pair_id,
                                               "output_b": sided.pair_id, "verdict": seen}))
            row |= {k: bias[k] for k in ("n_decided", "first_shown_share", "first_shown_lo",
                                         "first_shown_hi")}
        rows.append(row)
    return pd.DataFrame(rows).reindex(columns=PAIRWISE_COLUMNS)


def confusion_table(pairwise: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """``pairwise_confusion.csv``: per judge, the 4 x 5 reference x verdict counts."""
    pairs, answers = _frames(pairwise)
    ref = references(pairwise)
    parts = []
    judged = answers[(answers.kind == "judge") & answers.pair_id.isin(ref.index)]
    for judge, group in judged.groupby("rater", sort=True):
        verdict = [None if pd.isna(v) else v for v in group.preference]
        parts.append(confusion(verdict, list(ref[group.pair_id])).assign(judge=judge))
    if not parts:
        return pd.DataFrame(columns=CONFUSION_COLUMNS)
    return pd.concat(parts, ignore_index=True)[CONFUSION_COLUMNS]


def _comparisons(pairs: pd.DataFrame, rows: pd.DataFrame, generators: list[str]
                 ) -> tuple[list[int], list[int], list[float], list[Any]]:
    """Weighted (winner, loser) generator comparisons of the answers ``rows``: a win is 1,
    a tie half a win each way, both-bad, unparsed and same-generator pairs left out."""
    index = {g: i for i, g in enumerate(generators)}
    info = pairs.set_index("pair_id")
    winners: list[int] = []
    losers: list[int] = []
    weights: list[float] = []
    clusters: list[Any] = []
    for pair_id, pref in zip(rows.pair_id, rows.preference, strict=True):
        p = info.loc[pair_id]
        a, b = index[p.generator_a], index[p.generator_b]
        if a == b or pd.isna(pref) or pref == "both_bad":
            continue
        if pref == "tie":
            winners += [a, b]
            losers += [b, a]
            weights += [0.5, 0.5]
            clusters += [p.task_id, p.task_id]
        else:
            winners.append(a if pref == "a" else b)
            losers.append(b if pref == "a" else a)
            weights.append(1.0)
            clusters.append(p.task_id)
    return winners, losers, weights, clusters


def pairwise_rankings_table(pairwise: dict[str, pd.DataFrame], *, n_boot: int = 1000,
                            seed: int = 0) -> pd.DataFrame:
    """``pairwise_rankings.csv`` (module docstring)."""
    pairs, answers = _frames(pairwise)
    if pairs.empty or answers.empty:
        return pd.DataFrame(columns=BT_COLUMNS)
    generators = sorted(set(pairs.generator_a) | set(pairs.generator_b))
    raters: list[tuple[str, pd.DataFrame]] = [(HUMANS, answers[answers.kind == "human"])]
    judged = answers[answers.kind == "judge"]
    raters += [(str(j), g) for j, g in judged.groupby("rater", sort=True)]
    out = []
    strengths: dict[str, np.ndarray] = {}
    for rater, rows in raters:
        w, losers, weights, clusters = _comparisons(pairs, rows, generators)
        if not w:
            continue
        fit = bt_bootstrap(w, losers, weights, len(generators), clusters, n_boot=n_boot,
                           seed=seed)
        games = np.zeros(len(generators))
        np.add.at(games, w, weights)
        np.add.at(games, losers, weights)
        fit = fit.assign(rater=rater, generator=[generators[i] for i in fit["item"]],
                         n_comparisons=games)
        strengths[rater] = fit.strength.to_numpy()
        out.append(fit)
    if not out:
        return pd.DataFrame(columns=BT_COLUMNS)
    table = pd.concat(out, ignore_index=True)
    table["n_generators"] = len(generators)
    table["kendall_tau_b"] = math.nan
    table["tau_p_value"] = math.nan
    if HUMANS in strengths and len(generators) >= 2:
        for rater, theta in strengths.items():
            if rater == HUMANS:
                continue
            res = stats.kendalltau(strengths[HUMANS], theta, variant="b")
            mask = table.rater == rater
            table.loc[mask, "kendall_tau_b"] = float(res.statistic)
            table.loc[mask, "tau_p_value"] = float(res.pvalue)
    return table[BT_COLUMNS]


def _ranking_rows(pairwise: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    rankings = pairwise.get("rankings", pd.DataFrame(columns=["ranking_id", "outputs",
                                                              "task_id"]))
    answers = pairwise.get("ranking_answers", pd.DataFrame(columns=["ranking_id", "rater",
                                                                    "kind", "order"]))
    return rankings, answers


def rankings_table(pairwise: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """``rankings.csv`` (module docstring)."""
    rankings, answers = _ranking_rows(pairwise)
    if rankings.empty or answers.empty:
        return pd.DataFrame(columns=RANKING_COLUMNS)
    generator = dict(zip(pairwise["generators"].output_id, pairwise["generators"].generator,
                         strict=True)) if "generators" in pairwise else {}
    rows: list[dict[str, Any]] = []
    ws: list[float] = []
    by_generator: dict[str, dict[str, list[float]]] = {}  # rater -> generator -> ranks
    for ranking_id, outputs in zip(rankings.ranking_id, rankings.outputs, strict=True):
        given = answers[(answers.ranking_id == ranking_id) & answers.order.notna()]
        human = given[given.kind == "human"]
        human_ranks = np.array([[order_ranks(o)[x] for x in outputs] for o in human.order])
        if len(human_ranks) >= 2:
            w = kendall_w(human_ranks)
            ws.append(w["w"])
            rows.append({"ranking_id": ranking_id, "statistic": "kendall_w", "judge": "",
                         "value": w["w"], "n_raters": w["m"], "n_objects": w["n"],
                         "chi2": w["chi2"], "df": w["df"], "p_value": w["p_value"]})
        for kind_rows, ranks_of in ((human, HUMANS), *((g, None) for _, g in
                                                     given[given.kind == "judge"].groupby(
                                                         "rater", sort=True))):
            for rater, order in zip(kind_rows.rater, kind_rows.order, strict=True):
                key = ranks_of or str(rater)
                placed = order_ranks(order)
                for x in outputs:
                    by_generator.setdefault(key, {}).setdefault(
                        generator.get(x, x), []).append(placed[x])
        if len(human_ranks) == 0:
            continue
        mean_human = human_ranks.mean(axis=0)
        for judge, order in zip(given.rater[given.kind == "judge"],
                                given.order[given.kind == "judge"], strict=True):
            judge_ranks = [order_ranks(order)[x] for x in outputs]
            rho = _spearman(mean_human, judge_ranks)
            rows.append({"ranking_id": ranking_id, "statistic": "spearman", "judge": judge,
                         "value": rho[0], "n_raters": len(human_ranks),
                         "n_objects": len(outputs), "p_value": rho[1]})
    if ws:
        rows.append({"ranking_id": "all", "statistic": "kendall_w_mean", "judge": "",
                     "value": float(np.nanmean(ws)) if np.isfinite(ws).any() else math.nan,
                     "n_raters": math.nan, "n_objects": len(ws)})
    humans = by_generator.get(HUMANS, {})
    for judge, ranks in by_generator.items():
        if judge == HUMANS or not humans:
            continue
        shared = sorted(set(humans) & set(ranks))
        rho = _spearman([np.mean(humans[g]) for g in shared], [np.mean(ranks[g]) for g in shared])
        rows.append({"ranking_id": "all", "statistic": "spearman_generators", "judge": judge,
                     "value": rho[0], "n_raters": math.nan, "n_objects": len(shared),
                     "p_value": rho[1]})
    return pd.DataFrame(rows).reindex(columns=RANKING_COLUMNS)


def _spearman(x: Any, y: Any) -> tuple[float, float]:
    """Spearman's rho and its p-value (``scipy.stats.spearmanr``); NaN when undefined
    (fewer than two objects, or a constant side)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan, math.nan
    res = stats.spearmanr(x, y)
    return float(res.statistic), float(res.pvalue)


def has_pairwise(pairwise: dict[str, pd.DataFrame]) -> bool:
    """Whether the project has pairs or ranking items (the Judge validation page shows
    its section *Pairwise preferences* only then)."""
    return any(name in pairwise and not pairwise[name].empty for name in ("pairs", "rankings"))


def has_answers(pairwise: dict[str, pd.DataFrame], kind: str) -> bool:
    """Whether anyone of ``kind`` (``judge`` or ``human``) answered a pair or a ranking."""
    return any(name in pairwise and bool((pairwise[name].kind == kind).any())
               for name in ("pair_answers", "ranking_answers"))


def _interval_text(value: Any, lo: Any, hi: Any) -> str:
    """``v [lo, hi]`` (3 decimals), ``v`` without an interval, empty without a value."""
    if pd.isna(value):
        return ""
    return f"{value:.3f}" if pd.isna(lo) or pd.isna(hi) else f"{value:.3f} [{lo:.3f}, {hi:.3f}]"


#: pairwise.csv's agreement statistics as shown, with their interval columns
_SHOWN = (("accuracy, unparsed = miss", "accuracy_all"),
          ("accuracy of parsed", "accuracy_parsed"),
          ("kappa (4 classes)", "kappa"),
          ("accuracy, ties merged", "accuracy_ties_merged"))


def judges_view(table: pd.DataFrame) -> pd.DataFrame:
    """pairwise.csv's judge rows for display: pairs, unparsed, each accuracy and kappa as
    ``value [lo, hi]`` (95% intervals)."""
    judges = table[table.rater != HUMANS]
    shown = pd.DataFrame({"judge": judges.rater, "n_pairs": judges.n_pairs.astype("Int64"),
                          "n_unparsed": judges.n_unparsed.astype("Int64")})
    for name, col in _SHOWN:
        shown[f"{name} [95% CI]"] = [
            _interval_text(v, a, b)
            for v, a, b in zip(judges[col], judges[f"{col}_lo"], judges[f"{col}_hi"],
                               strict=True)]
    return shown.reset_index(drop=True)


def position_view(table: pd.DataFrame) -> pd.DataFrame:
    """pairwise.csv's judge rows, their position bias for display: the decided (a/b)
    verdicts, the share preferring the first-shown output ``value [lo, hi]``, the pairs
    judged in both orders and the share of them answered alike."""
    judges = table[table.rater != HUMANS]
    return pd.DataFrame({
        "judge": judges.rater, "n_decided": judges.n_decided.astype("Int64"),
        "first shown preferred [95% CI]": [
            _interval_text(v, a, b) for v, a, b in zip(
                judges.first_shown_share, judges.first_shown_lo, judges.first_shown_hi,
                strict=True)],
        "n_both_orders": judges.n_both_orders.astype("Int64"),
        "order consistency": judges.order_consistency}).reset_index(drop=True)


def humans_view(table: pd.DataFrame) -> pd.DataFrame:
    """pairwise.csv's ``humans`` row for display: pairs answered by two or more,
    annotators, Krippendorff's alpha, % agreement, the humans' first-shown share."""
    humans = table[table.rater == HUMANS]
    return pd.DataFrame({
        "pairs with 2+ annotators": humans.n_pairs.astype("Int64"),
        "annotators": humans.n_annotators.astype("Int64"),
        "alpha (nominal)": humans.alpha, "% agreement": humans.pct_agreement,
        "first shown preferred [95% CI]": [
            _interval_text(v, a, b) for v, a, b in zip(
                humans.first_shown_share, humans.first_shown_lo, humans.first_shown_hi,
                strict=True)],
        "note": humans.note}).reset_index(drop=True)


def confusion_view(confusion: pd.DataFrame, judge: str) -> pd.DataFrame:
    """One judge's rows of pairwise_confusion.csv as a matrix: a row per human reference,
    a column per verdict (``unparsed`` last), counts."""
    rows = confusion[confusion.judge == judge]
    wide = rows.pivot_table(index="reference", columns="verdict", values="n", aggfunc="sum")
    wide = wide.reindex(index=list(PREFERENCES), columns=[*PREFERENCES, UNPARSED],
                        fill_value=0).fillna(0).astype(int)
    wide.columns.name = None
    return wide.reset_index().rename(columns={"reference": "human reference"})


def strengths_view(bt: pd.DataFrame) -> pd.DataFrame:
    """pairwise_rankings.csv as a matrix: a row per generator, a column per rater (humans
    first), each cell the Bradley-Terry strength ``value [lo, hi]`` and its rank."""
    raters = list(dict.fromkeys([*(r for r in bt.rater if r == HUMANS), *bt.rater]))
    out = pd.DataFrame({"generator": sorted(dict.fromkeys(bt.generator))})
    for rater in raters:
        rows = bt[bt.rater == rater].set_index("generator")
        out[rater] = [
            "" if g not in rows.index else
            f"{_interval_text(*rows.loc[g, ['strength', 'strength_lo', 'strength_hi']])}"
            f" (#{int(rows.loc[g, 'rank'])})" for g in out.generator]
    return out


def tau_view(bt: pd.DataFrame) -> pd.DataFrame:
    """Per judge: Kendall tau-b between its Bradley-Terry ranking of the generators and the
    humans' (pairwise_rankings.csv), its p-value and the number of generators."""
    judges = bt[(bt.rater != HUMANS) & bt.kendall_tau_b.notna()]
    return (judges.groupby("rater", sort=False)[["kendall_tau_b", "tau_p_value",
                                                 "n_generators"]].first()
            .reset_index().rename(columns={"rater": "judge"}))


def pairwise_sections(tables: dict[str, pd.DataFrame]) -> list[tuple[str, pd.DataFrame]]:
    """report.html's pairwise section: each judge's accuracies ``value [lo, hi]``
    (:func:`judges_view`) and position bias (:func:`position_view`), the humans' agreement
    (:func:`humans_view`), each judge's confusion matrix (:func:`confusion_view`), the
    generator strengths per rater (:func:`strengths_view`) with Kendall tau-b
    (:func:`tau_view`), and the ranking items' Kendall's W and Spearman's rho
    (rankings.csv)."""
    out = []
    table = tables.get("pairwise")
    if table is not None and not table.empty:
        if (table.rater != HUMANS).any():
            out.append(("Pairwise judges against the human preference (strict majority of "
                        "the annotators of a pair; GenAI-Bench's accuracy counts an unparsed "
                        "verdict as a miss)", judges_view(table)))
            out.append(("Pairwise judges' position bias (share of a/b verdicts for the "
                        "output shown first; consistency on the pairs judged in both orders)",
                        position_view(table)))
        if (table.rater == HUMANS).any():
            out.append(("Pairwise: the humans among themselves (Krippendorff's alpha and % "
                        "agreement on the pairs answered by two or more)", humans_view(table)))
    confusion = tables.get("pairwise_confusion")
    if confusion is not None and not confusion.empty:
        for judge in dict.fromkeys(confusion.judge):
            out.append((f"Pairwise confusion matrix of {judge}: human reference (rows) by "
                        "the judge's verdict (columns)", confusion_view(confusion, str(judge))))
    bt = tables.get("pairwise_rankings")
    if bt is not None and not bt.empty:
        out.append(("Bradley-Terry strengths of the generators from pairs (log-odds [95% CI] "
                    "and rank; a tie is half a win each, both-bad left out), per rater",
                    strengths_view(bt)))
        tau = tau_view(bt)
        if not tau.empty:
            out.append(("Kendall tau-b between each judge's Bradley-Terry ranking of the "
                        "generators and the humans'", tau))
    rankings = tables.get("rankings")
    if rankings is not None and not rankings.empty:
        out.append(("Ranking items: Kendall's W among the annotators, Spearman's rho between "
                    "the mean human ranks and each judge's (TIIF-Bench Sec. 4.2)", rankings))
    return out
