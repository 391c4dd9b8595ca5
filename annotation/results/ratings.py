"""Judges against humans on rating criteria: the rows of ``ratings.csv``.

For each judge and criterion (and the criteria ``average``), the judge's score per output
is compared with the mean of the humans' scores on that output
(:func:`annotation.stats.correlation.correlations`: PLCC, SRCC and Kendall tau-b with
cluster-bootstrap intervals over outputs, MAE and bias where judge and humans share a
scale).

**Like for like** (see "The human baseline must be like for like" in the methods notes of
the project; the point is made by comparing a judge with the mean of all k humans against
a human with the mean of the other k - 1): for every annotator ``a`` and output rated by
``a`` and at least one other annotator, ``a``'s score is paired with the mean of the
*others*; all such pairs are pooled into the row ``human (leave-one-out)``. Each judge is
compared with **the same** leave-one-out means on the same pairs, in rows whose
``reference`` is ``leave-one-out mean``, so the two can be read side by side.

**On the judge's own outputs.** A judge rarely scores every output (a failed parse, a
judge run on one generator only). The human baseline row with ``paired_judge`` empty uses
every output the humans rated; for each judge whose outputs differ, a baseline row with
``paired_judge = <judge>`` is computed on exactly that judge's outputs (the pairs of its
``leave-one-out mean`` row), and likewise for the pairwise baseline and in every ``--by``
group. Compare a judge only with the baseline row paired with it (or the empty one where
there is none).

**Intervals resample outputs.** A leave-one-out or pooled row has several pairs per output
(one per annotator), so Fisher's interval with n = pairs is far too narrow; ``plcc_lo``/
``plcc_hi`` are the studentized cluster bootstrap over outputs (all pairs of a drawn
output together; :func:`annotation.stats.correlation.reported_plcc_interval`) whenever it
was computed (``plcc_ci_method``), Fisher's interval only where there is one pair per
output and no bootstrap (``n_boot`` 0 or fewer than 10 outputs). Fisher's interval is
kept in ``plcc_fisher_lo``/``hi`` where it is valid (one pair per output). SRCC and
Kendall intervals are always the (expanded percentile) cluster bootstrap.

An ensemble judge (the mean of the VLM judges' scores per output, where at least two on
the criterion's scale scored it) is reported as its own row,
``ensemble (mean of VLM judges)``.

Also like for like, pairwise: ``human pairwise (Fisher-z mean)`` pools the correlations of
every pair of annotators on their common outputs, and each judge's rows with reference
``single annotator (Fisher-z mean)`` pool its correlations with each annotator alone
(tanh of the (n - 3)-weighted mean of atanh r; Fisher 1921; Hedges & Olkin 1985). A
correlation from fewer than :data:`MIN_POOL_ITEMS` common outputs is left out of a pool
(``n_pooled``/``n_left_out`` count them). With ``by``, the rows of group
``pooled (Fisher z)`` pool the per-group correlations the same way (no interval).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from annotation.results.decisions import Unanswered, judge_decisions
from annotation.results.progress import JudgeProgress, each_judge
from annotation.results.study import GroupBy, StudyData, output_groups
from annotation.stats.correlation import correlations, fisher_z_pool, reported_plcc_interval
from annotation.stats.membership import isin

HUMAN_LOO = "human (leave-one-out)"
HUMAN_PAIRWISE = "human pairwise (Fisher-z mean)"
POOLED = "pooled (Fisher z)"
ENSEMBLE = "ensemble (mean of VLM judges)"
AVERAGE = "average"
HUMAN_MEAN = "human mean"
LOO_MEAN = "leave-one-out mean"
PAIRWISE = "pairwise annotators"
SINGLE = "single annotator (Fisher-z mean)"
#: Correlations from fewer common outputs than this are left out of a Fisher-z pool.
MIN_POOL_ITEMS = 10
COLUMNS = ["judge", "criterion", "group", "reference", "n_items", "plcc", "plcc_lo", "plcc_hi",
           "srcc", "srcc_lo", "srcc_hi", "kendall", "kendall_lo", "kendall_hi", "mae", "bias",
           # added in the statistical-truth release (see docs/report.md)
           "paired_judge", "n_pairs", "plcc_ci_method", "plcc_fisher_lo", "plcc_fisher_hi",
           "n_boot", "n_pooled", "n_left_out", "note"]
_STATS = ("plcc", "srcc", "kendall")


def with_average(scores: pd.DataFrame, who: str, criteria: list[str]) -> pd.DataFrame:
    """Add criterion ``average`` (mean of all criteria) for outputs scored on every one."""
    if len(criteria) < 2 or scores.empty:
        return scores
    wide = _wide_scores(scores, who, criteria)
    if wide is None:  # several scores of one output, answerer and criterion: their mean
        wide = scores.pivot_table(index=["output_id", who], columns="criterion",
                                  values="score")
    wide = wide.reindex(columns=criteria).dropna()
    if wide.empty:
        return scores
    avg = wide.mean(axis=1).rename("score").reset_index()
    avg["criterion"] = AVERAGE
    return pd.concat([scores, avg[["output_id", who, "criterion", "score"]]], ignore_index=True)


def _wide_scores(scores: pd.DataFrame, who: str, criteria: list[str]) -> pd.DataFrame | None:
    """``scores`` as (output_id, ``who``) x ``criteria``, rows sorted as ``pivot_table``
    sorts them, when every (output, answerer, criterion) has one score (else None); the
    same cells as ``pivot_table(...).reindex(columns=criteria)``, with no groupby per
    cell. Rows without a score on every criterion may be left out (the caller drops them)."""
    k = len(criteria)
    position = {c: i for i, c in enumerate(criteria)}
    c_codes, c_names = pd.factorize(scores.criterion)
    lookup = np.array([position.get(name, -1) for name in c_names] + [-1], dtype=np.int64)
    crit = lookup[c_codes]  # code -1 (missing) reads the last entry: -1
    o_codes, o_names = pd.factorize(scores.output_id, sort=True)
    w_codes, w_names = pd.factorize(scores[who], sort=True)
    keep = (crit >= 0) & (o_codes >= 0) & (w_codes >= 0)
    n_pairs = len(o_names) * len(w_names)
    if n_pairs * k > 8 * len(scores) + (1 << 20):  # sparse codes: bincount would not pay
        return None
    pair = o_codes[keep].astype(np.int64) * len(w_names) + w_codes[keep]
    c = crit[keep]
    if np.bincount(pair * k + c, minlength=1).max(initial=0) > 1:
        return None
    present = np.bincount(pair, minlength=n_pairs) > 0
    row_of = np.cumsum(present) - 1  # pairs in sorted (output, answerer) order
    values = np.full((int(present.sum()), k), np.nan)
    values[row_of[pair], c] = scores.score.to_numpy(dtype=float, na_value=np.nan)[keep]
    codes = np.flatnonzero(present)
    index = pd.MultiIndex.from_arrays([o_names[codes // len(w_names)],
                                       w_names[codes % len(w_names)]],
                                      names=["output_id", who])
    return pd.DataFrame(values, index=index, columns=pd.Index(criteria, name="criterion"))


def criterion_scale(study: StudyData, criterion: str) -> tuple[float, float] | None:
    """The (min, max) of a criterion's ratings; for ``average``, the scale every criterion
    shares (None when they differ, or when the criterion is not in ``study.criteria``)."""
    crit = study.criteria
    if criterion == AVERAGE and criterion not in set(crit.name):
        scales = {(float(lo), float(hi)) for lo, hi in zip(crit["min"], crit["max"],
                                                           strict=True)
                  if pd.notna(lo) and pd.notna(hi)}
        return scales.pop() if len(scales) == 1 else None
    row = crit[crit.name == criterion]
    if row.empty or pd.isna(row["min"].iloc[0]) or pd.isna(row["max"].iloc[0]):
        return None
    return float(row["min"].iloc[0]), float(row["max"].iloc[0])


def judge_scale(study: StudyData, judge: str) -> tuple[float, float] | None:
    """The judge's declared own scale (``scale_min``, ``scale_max``), or None (it scores on
    the criteria's scales; also for the ensemble and judges not in ``study.judges``)."""
    judges = study.judges
    if "scale_min" not in judges.columns:
        return None
    row = judges[judges.name == judge]
    if row.empty or pd.isna(row["scale_min"].iloc[0]) or pd.isna(row["scale_max"].iloc[0]):
        return None
    return float(row["scale_min"].iloc[0]), float(row["scale_max"].iloc[0])


#: :func:`own_scale` of a metric judge that declared no scale: its scores keep their own units
OWN_UNITS = "own units"


def own_scale(study: StudyData, judge: str, criterion: str) -> str | None:
    """``"lo-hi"`` when the judge scores ``criterion`` on a scale other than the humans'
    (declared, and not equal to the criterion's min-max), :data:`OWN_UNITS` for a
    ``kind: "metric"`` judge without a declared scale (CLIPScore, a reward model: its units
    are its own), else None. The one rule for "no MAE, bias, limits of agreement or RMSE
    against the humans"."""
    scale = judge_scale(study, judge)
    if scale is None:
        judges = study.judges
        if "kind" in judges.columns and (judges.loc[judges.name == judge, "kind"]
                                         == "metric").any():
            return OWN_UNITS
        return None
    if scale == criterion_scale(study, criterion):
        return None
    return f"{scale[0]:g}-{scale[1]:g}"


def ensemble_scores(study: StudyData) -> pd.DataFrame:
    """The ensemble judge: per output and criterion, the mean score of the VLM judges that
    score that criterion on the humans' scale (:func:`own_scale`), where at least two of
    them scored it. Columns ``output_id``, ``judge`` (:data:`ENSEMBLE`), ``criterion``,
    ``score``."""
    columns = ["output_id", "judge", "criterion", "score"]
    vlm = {str(n) for n, k in zip(study.judges.name, study.judges.kind, strict=True)
           if k == "vlm"}
    scores = study.judge_scores[isin(study.judge_scores.judge, vlm)]
    j_codes, j_names = pd.factorize(scores.judge)
    c_codes, c_names = pd.factorize(scores.criterion)
    pair = j_codes.astype(np.int64) * len(c_names) + c_codes  # one code per (judge, criterion)
    valid = (j_codes >= 0) & (c_codes >= 0)
    same = [p for p in np.unique(pair[valid])  # a few pairs: one own_scale each
            if own_scale(study, str(j_names[p // len(c_names)]),
                         str(c_names[p % len(c_names)])) is None]
    scores = scores[valid & np.isin(pair, same)]
    if len(vlm) < 2 or scores.empty:
        return pd.DataFrame(columns=columns)
    grouped = scores.groupby(["output_id", "criterion"]).score.agg(["mean", "size"])
    grouped = grouped[grouped["size"] >= 2].reset_index()
    return pd.DataFrame({"output_id": grouped.output_id, "judge": ENSEMBLE,
                         "criterion": grouped.criterion, "score": grouped["mean"]})


def _row(judge: str, criterion: str, group: str, reference: str, x: np.ndarray,
         y: np.ndarray, items: np.ndarray, *, same_scale: bool, n_boot: int,
         seed: int, paired: str = "") -> dict[str, object]:
    stats = correlations(x, y, items=items, n_boot=n_boot, seed=seed).iloc[0]
    lo, hi, method = reported_plcc_interval(stats)
    one_pair = stats["n"] == stats["n_items"]
    row: dict[str, object] = {
        "judge": judge, "criterion": criterion, "group": group, "reference": reference,
        "n_items": int(stats["n_items"]), "plcc": stats["plcc"], "plcc_lo": lo, "plcc_hi": hi,
        "srcc": stats["srcc"], "srcc_lo": stats["srcc_lo"], "srcc_hi": stats["srcc_hi"],
        "kendall": stats["kendall"], "kendall_lo": stats["kendall_lo"],
        "kendall_hi": stats["kendall_hi"], "mae": stats["mae"], "bias": stats["bias"],
        "paired_judge": paired, "n_pairs": int(stats["n"]), "plcc_ci_method": method,
        "plcc_fisher_lo": stats["plcc_lo"] if one_pair else np.nan,
        "plcc_fisher_hi": stats["plcc_hi"] if one_pair else np.nan,
        "n_boot": int(stats["n_boot"]), "n_pooled": np.nan, "n_left_out": np.nan,
        "note": stats["note"],
    }
    if not same_scale:
        row["mae"] = row["bias"] = np.nan
        row["note"] = "; ".join(str(p) for p in (row["note"], "judge on its own scale: no MAE or "
                                            "bias") if p)
    return row


def _positions(index: pd.Index, within: pd.Index) -> np.ndarray | None:
    """For each label of ``index`` (unique), its position in ``within`` (-1 where absent),
    or None when a label of ``index`` is in ``within`` more than once. One membership test
    over ``within`` and lookups in ``index`` (small, and reused across judges), instead of
    a hash table of every judge's outputs."""
    found = np.flatnonzero(isin(within, index))
    at = index.get_indexer(within[found])
    if (at < 0).any() or len(np.unique(at)) != len(at):
        return None
    out = np.full(len(index), -1, dtype=np.int64)
    out[at] = found
    return out


def _judge_order(names: list[str]) -> list[str]:
    return sorted(dict.fromkeys(names), key=lambda j: (j == ENSEMBLE, j))


def ratings_table(study: StudyData, *, n_boot: int = 1000, seed: int = 0,
                  by: GroupBy = None,
                  progress: Callable[[int], object] | None = None,
                  on_judge: JudgeProgress | None = None) -> pd.DataFrame:
    """The ``ratings.csv`` table (see the module docstring). ``by``: a column of
    ``study.outputs`` (``generator``, ``meta.<key>``) giving extra per-group rows beside
    ``group = "all"``; ``progress(1)`` after each criterion, ``on_judge`` before each judge
    of each criterion and group (:mod:`annotation.results.progress`)."""
    criteria = list(study.criteria.name)
    humans = with_average(study.human_scores, "annotator", criteria)
    judged = pd.concat([study.judge_scores, ensemble_scores(study)], ignore_index=True)
    judged = with_average(judged, "judge", criteria)
    groups = output_groups(study, by)
    rows: list[dict[str, object]] = []
    for criterion in [*criteria, AVERAGE]:
        hc = humans[humans.criterion == criterion]
        if hc.empty:
            continue
        mean = hc.groupby("output_id").score.mean()
        loo = _leave_one_out(hc)
        by_judge = {str(j): g.set_index("output_id").score
                    for j, g in judged[judged.criterion == criterion].groupby("judge")}
        order = _judge_order(list(by_judge))
        for group, members in groups:
            g_mean = mean if members is None else mean[isin(mean.index, members)]
            g_loo = loo if members is None else loo[isin(loo.output_id, members)]
            g_humans = hc if members is None else hc[isin(hc.output_id, members)]
            paired_pairs: dict[str, pd.DataFrame] = {}
            loo_at = g_mean.index.get_indexer(g_loo.output_id)  # each pair's output in g_mean
            for judge in each_judge(order, on_judge, f", {criterion}" if members is None
                                    else f", {criterion}, {group}"):
                scores = by_judge[judge]
                same = own_scale(study, judge, criterion) is None
                values = scores.to_numpy()
                pos = _positions(g_mean.index, scores.index)
                if pos is None:  # an output scored twice: label lookups, as pandas does them
                    common = g_mean.index.intersection(scores.index)
                    judge_mean, human_mean = scores[common].to_numpy(), g_mean[common].to_numpy()
                else:
                    matched = pos >= 0
                    common = g_mean.index[matched]
                    judge_mean, human_mean = values[pos[matched]], g_mean.to_numpy()[matched]
                if len(common):
                    rows.append(_row(judge, criterion, group, HUMAN_MEAN, judge_mean,
                                     human_mean, common.to_numpy(), same_scale=same,
                                     n_boot=n_boot, seed=seed))
                if pos is None or (loo_at < 0).any():
                    pairs = g_loo[isin(g_loo.output_id, scores.index)]
                    judge_loo = scores[pairs.output_id].to_numpy()
                else:
                    at = pos[loo_at]
                    pairs, judge_loo = g_loo[at >= 0], values[at[at >= 0]]
                if len(pairs):
                    rows.append(_row(judge, criterion, group, LOO_MEAN, judge_loo,
                                     pairs.others.to_numpy(), pairs.output_id.to_numpy(),
                                     same_scale=same, n_boot=n_boot, seed=seed))
                    if len(pairs) < len(g_loo):
                        paired_pairs[judge] = pairs
            if len(g_loo):
                for paired, pairs in [("", g_loo), *paired_pairs.items()]:
                    rows.append(_row(HUMAN_LOO, criterion, group, LOO_MEAN,
                                     pairs.score.to_numpy(), pairs.others.to_numpy(),
                                     pairs.output_id.to_numpy(), same_scale=True,
                                     n_boot=n_boot, seed=seed, paired=paired))
            rows.extend(_pairwise_rows(g_humans, by_judge, order, criterion, group))
        if progress:
            progress(1)
    table = pd.DataFrame(rows, columns=COLUMNS)
    if by is not None and not table.empty:
        table = pd.concat([table, _pooled_groups(table)], ignore_index=True)
    return table.astype({"n_items": "int64", "n_pairs": "int64", "n_boot": "int64",
                         "n_pooled": "Int64", "n_left_out": "Int64"}) if len(table) else table


def _corr_set(x: pd.Series, y: pd.Series) -> dict[str, tuple[float, int, pd.Index]]:
    """PLCC, SRCC, Kendall of two score series on their common outputs, each with the
    number of those outputs and the outputs themselves."""
    common = x.index.intersection(y.index)
    a, b = x[common], y[common]
    outputs = common
    if len(common) < 3 or a.nunique() < 2 or b.nunique() < 2:
        return {k: (np.nan, len(common), outputs) for k in _STATS}
    return {"plcc": (a.corr(b), len(common), outputs),
            "srcc": (a.corr(b, method="spearman"), len(common), outputs),
            "kendall": (a.corr(b, method="kendall"), len(common), outputs)}


def _pooled_row(who: str, criterion: str, group: str, reference: str,
                stats: list[dict[str, tuple[float, int, pd.Index]]],
                paired: str = "") -> dict[str, object] | None:
    if not stats:
        return None
    row: dict[str, object] = {"judge": who, "criterion": criterion, "group": group,
                              "reference": reference, "paired_judge": paired,
                              "plcc_ci_method": "", "n_boot": 0}
    for stat in _STATS:
        values = [s[stat] for s in stats]
        r, used, left = fisher_z_pool([v[0] for v in values], [v[1] for v in values],
                                      min_n=MIN_POOL_ITEMS)
        row[stat] = r
        if stat == "plcc":
            kept = [v for v in values if np.isfinite(v[0]) and v[1] >= MIN_POOL_ITEMS]
            row["n_pooled"], row["n_left_out"] = used, left
            row["n_items"] = _n_distinct([v[2] for v in kept])
            row["n_pairs"] = sum(v[1] for v in kept)
    notes = ["Fisher-z pool: no interval"]
    if row["n_left_out"]:
        notes.append(f"{row['n_left_out']} of {len(stats)} correlations left out (fewer than "
                     f"{MIN_POOL_ITEMS} common outputs or undefined)")
    row["note"] = "; ".join(notes)
    return row


def _n_distinct(indexes: list[pd.Index]) -> int:
    """How many distinct outputs the output indexes hold together (0 for none)."""
    if not indexes:
        return 0
    return len(pd.unique(np.concatenate([i.astype(str).to_numpy(dtype=object)
                                         for i in indexes])))


def _pairwise_rows(humans: pd.DataFrame, by_judge: dict[str, pd.Series], order: list[str],
                   criterion: str, group: str) -> list[dict[str, object]]:
    """Human-human pairs and judge-vs-single-annotator, each pooled by Fisher z; the
    human pairs again on each judge's outputs where those differ."""
    by_annotator = {str(a): g.set_index("output_id").score
                    for a, g in humans.groupby("annotator", sort=True)}
    names = sorted(by_annotator)
    couples = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    rows = [_pooled_row(HUMAN_PAIRWISE, criterion, group, PAIRWISE,
                        [_corr_set(by_annotator[a], by_annotator[b]) for a, b in couples])]
    rated = humans.output_id.drop_duplicates()
    for judge in order:
        scores = by_judge[judge]
        rows.append(_pooled_row(judge, criterion, group, SINGLE,
                                [_corr_set(scores, by_annotator[a]) for a in names]))
        if couples and not isin(rated, scores.index).all():  # not every rated output
            mine = scores.index
            rows.append(_pooled_row(
                HUMAN_PAIRWISE, criterion, group, PAIRWISE,
                [_corr_set(by_annotator[a][isin(by_annotator[a].index, mine)], by_annotator[b])
                 for a, b in couples], paired=judge))
    return [r for r in rows if r is not None]


def _pooled_groups(table: pd.DataFrame) -> pd.DataFrame:
    """Per judge, criterion, reference and paired judge: Fisher-z mean of the per-group
    correlations (groups with fewer than :data:`MIN_POOL_ITEMS` outputs left out)."""
    groups = table[~table.group.isin(["all", POOLED])
                   & ~table.reference.isin([PAIRWISE, SINGLE])]
    rows = []
    keys = ["judge", "criterion", "reference", "paired_judge"]
    for (judge, criterion, reference, paired), g in groups.groupby(keys, sort=False):
        row: dict[str, object] = {"judge": judge, "criterion": criterion, "group": POOLED,
                                  "reference": reference, "paired_judge": paired,
                                  "plcc_ci_method": "", "n_boot": 0}
        for stat in _STATS:
            r, used, left = fisher_z_pool(g[stat], g.n_items, min_n=MIN_POOL_ITEMS)
            row[stat] = r
            if stat == "plcc":
                kept = g[np.isfinite(g.plcc.astype(float)) & (g.n_items >= MIN_POOL_ITEMS)]
                row["n_pooled"], row["n_left_out"] = used, left
                row["n_items"] = int(kept.n_items.sum())
                row["n_pairs"] = int(kept.n_pairs.sum())
        note = "Fisher-z pool of the groups: no interval"
        if row["n_left_out"]:
            note += (f"; {row['n_left_out']} of {len(g)} groups left out (fewer than "
                     f"{MIN_POOL_ITEMS} outputs or undefined)")
        row["note"] = note
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
                   seed: int = 0, unanswered: Unanswered = "omit") -> pd.DataFrame:
    """Score pairing across kinds (TIFA, DSG): each judge's checklist **pass rate** per
    output (share of its decided questions that pass, scored by the one rule of
    :mod:`annotation.results.decisions`: DSG gating, unanswered outputs left out or failed)
    against the humans' mean **rating** on each of ``criteria``. Rows have criterion
    ``<criterion> ~ checklist pass rate``; no MAE (the scales differ)."""
    passed = judge_decisions(study, unanswered)
    passed = passed[passed.passed.notna()]
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
                row = _row(judge, f"{criterion} ~ checklist pass rate", "all", HUMAN_MEAN,
                           scores[common].to_numpy(), mean[common].to_numpy(),
                           common.to_numpy(), same_scale=True, n_boot=n_boot, seed=seed)
                row["mae"] = row["bias"] = np.nan
                row["note"] = "; ".join(str(p) for p in (row["note"], "pass rate (0-1) against a "
                                                    "rating: no MAE or bias") if p)
                rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)
