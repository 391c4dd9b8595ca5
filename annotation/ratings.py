"""Judges against humans on rating criteria: the rows of ``ratings.csv``.

For each judge and criterion (and the criteria ``average``), the judge's score per output
is compared with the mean of the humans' scores on that output
(:func:`annotation.stats.correlation.correlations`: PLCC with Fisher's interval, SRCC and
Kendall tau-b with cluster-bootstrap intervals over outputs, MAE and bias where judge and
humans share a scale).

The human baseline is computed like for like (``shared/stats/METHODS.md``, "The human
baseline must be like for like"): for every annotator ``a`` and output rated by ``a`` and at
least one other annotator, ``a``'s score is paired with the mean of the *others*; all such
pairs are pooled (bootstrap clusters = outputs) into the row ``human (leave-one-out)``.
Each judge is compared with **the same** leave-one-out means on the same pairs, in rows
whose ``reference`` is ``leave-one-out mean``, so the two can be read side by side.

An ensemble judge (the mean of the VLM judges' scores per output, where at least two
scored it) is reported as its own row, ``ensemble (mean of VLM judges)``.

Also like for like, pairwise: ``human pairwise (Fisher-z mean)`` pools the correlations of
every pair of annotators on their common outputs, and each judge's rows with reference
``single annotator (Fisher-z mean)`` pool its correlations with each annotator alone
(tanh of the (n - 3)-weighted mean of atanh r; Fisher 1921). With ``by``, the rows of group
``pooled (Fisher z)`` pool the per-group correlations the same way (no interval).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from annotation.stats.correlation import correlations, fisher_z_mean
from annotation.study import StudyData

HUMAN_LOO = "human (leave-one-out)"
HUMAN_PAIRWISE = "human pairwise (Fisher-z mean)"
POOLED = "pooled (Fisher z)"
ENSEMBLE = "ensemble (mean of VLM judges)"
AVERAGE = "average"
COLUMNS = ["judge", "criterion", "group", "reference", "n_items", "plcc", "plcc_lo", "plcc_hi",
           "srcc", "srcc_lo", "srcc_hi", "kendall", "kendall_lo", "kendall_hi", "mae", "bias"]


def with_average(scores: pd.DataFrame, who: str, criteria: list[str]) -> pd.DataFrame:
    """Add criterion ``average`` (mean of all criteria) for outputs scored on every one."""
    if len(criteria) < 2 or scores.empty:
        return scores
    wide = scores.pivot_table(index=["output_id", who], columns="criterion", values="score")
    wide = wide.reindex(columns=criteria).dropna()
    if wide.empty:
        return scores
    avg = wide.mean(axis=1).rename("score").reset_index()
    avg["criterion"] = AVERAGE
    return pd.concat([scores, avg[["output_id", who, "criterion", "score"]]], ignore_index=True)


def _ensemble(judge_scores: pd.DataFrame, vlm_judges: list[str]) -> pd.DataFrame:
    vlm = judge_scores[judge_scores.judge.isin(vlm_judges)]
    if len(vlm_judges) < 2 or vlm.empty:
        return judge_scores.iloc[0:0]
    grouped = vlm.groupby(["output_id", "criterion"]).score.agg(["mean", "size"]).reset_index()
    grouped = grouped[grouped["size"] >= 2]
    return pd.DataFrame({"output_id": grouped.output_id, "judge": ENSEMBLE,
                         "criterion": grouped.criterion, "score": grouped["mean"]})


def _row(judge: str, criterion: str, group: str, reference: str, x: np.ndarray,
         y: np.ndarray, items: np.ndarray, *, same_scale: bool, n_boot: int,
         seed: int) -> dict[str, object]:
    stats = correlations(x, y, items=items, n_boot=n_boot, seed=seed).iloc[0]
    row = {"judge": judge, "criterion": criterion, "group": group, "reference": reference,
           "n_items": int(stats["n_items"])}
    for col in COLUMNS[5:]:
        row[col] = stats.get(col, np.nan)
    if not same_scale:
        row["mae"] = row["bias"] = np.nan
    return row


def ratings_table(study: StudyData, *, n_boot: int = 1000, seed: int = 0,
                  by: str | None = None,
                  progress: Callable[[int], object] | None = None) -> pd.DataFrame:
    """The ``ratings.csv`` table (see the module docstring). ``by``: a column of
    ``study.outputs`` (``generator``, ``meta.<key>``) giving extra per-group rows beside
    ``group = "all"``."""
    criteria = list(study.criteria.name)
    judges = study.judges.set_index("name")
    vlm = [j for j in judges.index if judges.loc[j, "kind"] == "vlm"]
    humans = with_average(study.human_scores, "annotator", criteria)
    judged = pd.concat([study.judge_scores, _ensemble(study.judge_scores, vlm)],
                       ignore_index=True)
    judged = with_average(judged, "judge", criteria)
    groups: list[tuple[str, set[str] | None]] = [("all", None)]
    if by is not None:
        if by not in study.outputs.columns:
            raise KeyError(f"--by {by}: not a column of the outputs (generator, task_id, "
                           f"meta.<key>); available: {', '.join(study.outputs.columns)}")
        for value, df in study.outputs.groupby(by, dropna=True, sort=True):
            groups.append((f"{by}={value}", set(df.output_id)))
    rows = []
    for criterion in [*criteria, AVERAGE]:
        hc = humans[humans.criterion == criterion]
        if hc.empty:
            continue
        mean = hc.groupby("output_id").score.mean()
        loo = _leave_one_out(hc)
        for group, members in groups:
            g_mean = mean if members is None else mean[mean.index.isin(members)]
            g_loo = loo if members is None else loo[loo.output_id.isin(members)]
            for judge, js in judged[judged.criterion == criterion].groupby("judge", sort=True):
                own_scale = judge in judges.index and pd.notna(judges.loc[judge, "scale_min"])
                scores = js.set_index("output_id").score
                common = g_mean.index.intersection(scores.index)
                if len(common):
                    rows.append(_row(judge, criterion, group, "human mean",
                                     scores[common].to_numpy(), g_mean[common].to_numpy(),
                                     common.to_numpy(), same_scale=not own_scale,
                                     n_boot=n_boot, seed=seed))
                pairs = g_loo[g_loo.output_id.isin(scores.index)]
                if len(pairs):
                    rows.append(_row(judge, criterion, group, "leave-one-out mean",
                                     scores[pairs.output_id].to_numpy(),
                                     pairs.others.to_numpy(), pairs.output_id.to_numpy(),
                                     same_scale=not own_scale, n_boot=n_boot, seed=seed))
            if len(g_loo):
                rows.append(_row(HUMAN_LOO, criterion, group, "leave-one-out mean",
                                 g_loo.score.to_numpy(), g_loo.others.to_numpy(),
                                 g_loo.output_id.to_numpy(), same_scale=True, n_boot=n_boot,
                                 seed=seed))
            if group == "all":
                rows.extend(_pairwise_rows(hc, judged[judged.criterion == criterion],
                                           criterion))
        if progress:
            progress(1)
    table = pd.DataFrame(rows, columns=COLUMNS)
    if by is not None and not table.empty:
        table = pd.concat([table, _pooled_groups(table)], ignore_index=True)
    return table


def _pooled(pairs: list[tuple[float, int]]) -> dict[str, float]:
    ok = [(r, n) for r, n in pairs if pd.notna(r) and n > 3]
    if not ok:
        return {"r": np.nan, "n": 0}
    return {"r": fisher_z_mean([r for r, _ in ok], [n for _, n in ok]),
            "n": sum(n for _, n in ok)}


def _corr_set(x: pd.Series, y: pd.Series) -> dict[str, tuple[float, int]]:
    common = x.index.intersection(y.index)
    a, b = x[common], y[common]
    if len(common) < 3 or a.nunique() < 2 or b.nunique() < 2:
        return {k: (np.nan, len(common)) for k in ("plcc", "srcc", "kendall")}
    return {"plcc": (a.corr(b), len(common)),
            "srcc": (a.corr(b, method="spearman"), len(common)),
            "kendall": (a.corr(b, method="kendall"), len(common))}


def _pairwise_rows(humans: pd.DataFrame, judged: pd.DataFrame, criterion: str
                   ) -> list[dict[str, object]]:
    """Human-human pairs and judge-vs-single-annotator, each pooled by Fisher z."""
    by_annotator = {a: g.set_index("output_id").score
                    for a, g in humans.groupby("annotator", sort=True)}
    rows = []
    names = sorted(by_annotator)
    pair_stats = [_corr_set(by_annotator[a], by_annotator[b])
                  for i, a in enumerate(names) for b in names[i + 1:]]
    entries = [(HUMAN_PAIRWISE, "pairwise annotators", pair_stats)]
    for judge, js in judged.groupby("judge", sort=True):
        scores = js.set_index("output_id").score
        entries.append((judge, "single annotator (Fisher-z mean)",
                        [_corr_set(scores, by_annotator[a]) for a in names]))
    for who, reference, stats in entries:
        if not stats:
            continue
        row: dict[str, object] = {"judge": who, "criterion": criterion, "group": "all",
                                  "reference": reference}
        for stat in ("plcc", "srcc", "kendall"):
            pooled = _pooled([s[stat] for s in stats])
            row[stat] = pooled["r"]
            row["n_items"] = pooled["n"]
        rows.append(row)
    return rows


def _pooled_groups(table: pd.DataFrame) -> pd.DataFrame:
    """Per judge, criterion and reference: Fisher-z mean of the per-group correlations."""
    groups = table[~table.group.isin(["all", POOLED])]
    rows = []
    for (judge, criterion, reference), g in groups.groupby(["judge", "criterion", "reference"],
                                                           sort=False):
        row: dict[str, object] = {"judge": judge, "criterion": criterion, "group": POOLED,
                                  "reference": reference, "n_items": int(g.n_items.sum())}
        for stat in ("plcc", "srcc", "kendall"):
            row[stat] = _pooled(list(zip(g[stat], g.n_items)))["r"]
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def _leave_one_out(scores: pd.DataFrame) -> pd.DataFrame:
    """Per (annotator, output) with at least one other rating: the annotator's score and
    the mean of the other annotators' scores on that output."""
    by_output = scores.groupby("output_id").score.agg(["sum", "count"])
    merged = scores.join(by_output, on="output_id")
    merged = merged[merged["count"] >= 2]
    merged = merged.assign(others=(merged["sum"] - merged.score) / (merged["count"] - 1))
    return merged[["output_id", "annotator", "score", "others"]].reset_index(drop=True)


def pass_rate_rows(study: StudyData, criteria: list[str], *, n_boot: int = 1000,
                   seed: int = 0) -> pd.DataFrame:
    """Score pairing across kinds (TIFA, DSG): each judge's checklist **pass rate** per
    output (share of its decided questions that pass, DSG gating applied; see
    :mod:`annotation.operator_scores`) against the humans' mean **rating** on each of
    ``criteria``. Rows have criterion ``<criterion> ~ checklist pass rate``; no MAE (the
    scales differ)."""
    from annotation.operator_scores import passes

    passed = passes(study.judge_answers, study.questions, "judge")
    rate = passed.groupby(["judge", "output_id"]).passed.mean()
    rows = []
    for criterion in criteria:
        if criterion not in set(study.human_scores.criterion):
            raise KeyError(f"--pair checklist:{criterion}: no human ratings of criterion "
                           f"{criterion!r}")
        mean = study.human_scores[study.human_scores.criterion == criterion].groupby(
            "output_id").score.mean()
        for judge in sorted(rate.index.get_level_values(0).unique()):
            scores = rate[judge]
            common = scores.index.intersection(mean.index)
            if len(common):
                rows.append(_row(judge, f"{criterion} ~ checklist pass rate", "all",
                                 "human mean", scores[common].to_numpy(),
                                 mean[common].to_numpy(), common.to_numpy(),
                                 same_scale=False, n_boot=n_boot, seed=seed))
    return pd.DataFrame(rows, columns=COLUMNS)
