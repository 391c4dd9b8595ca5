"""Is the judge biased on the humans' scale? The rows of ``bland_altman.csv``, and its figure.

For each judge (and the ensemble, the mean of the VLM judges' scores per output where at
least two scored it, as in ``ratings.csv``) and each criterion (and ``average``, the mean of
all criteria on outputs scored on every one), the judge's score on each output is paired
with the mean of the humans' scores on that output, and
:func:`annotation.stats.bland_altman.limits_of_agreement` gives the mean difference
(judge - human mean), the 95% limits of agreement with their intervals and the
proportional-bias slope (Bland & Altman 1986, "Statistical methods for assessing agreement
between two methods of clinical measurement", Lancet; Bland & Altman 1999, "Measuring
agreement in method comparison studies", Stat Methods Med Res, sec. 3.2-3.3).

Read the limits as *judge vs the mean of the humans*, not vs one human: the human mean is
less noisy than one annotator, so a single annotator's differences from the judge spread
more. A slope of the difference on the mean also appears when the judge's scores are more
(or less) spread out than the human means, with no bias at any level: cov(D, A) =
(var(judge) - var(human mean)) / 2.

A judge on its own declared scale (``judges.scale_min``/``scale_max`` not null and not the
criterion's ``min``/``max``, e.g. a metric on 0-1 against 1-10 ratings) has no limits of
agreement on the humans' scale: its rows are listed with NaN and a note. Such judges are
also left out of the ensemble's mean (a mean of a 0-1 and a 1-10 score is on no scale).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from annotation.results.figures import plot_text
from annotation.results.ratings import AVERAGE, ENSEMBLE, ensemble_scores, own_scale, with_average
from annotation.results.study import StudyData
from annotation.stats.bland_altman import COLUMNS as LOA_COLUMNS
from annotation.stats.bland_altman import limits_of_agreement

__all__ = ["COLUMNS", "PAIR_COLUMNS", "bland_altman_figure", "bland_altman_pairs",
           "bland_altman_table"]

STAT_COLUMNS = [c for c in LOA_COLUMNS if c not in ("n", "note")]
COLUMNS = ["judge", "criterion", "n_items", *STAT_COLUMNS, "note"]
PAIR_COLUMNS = ["judge", "criterion", "output_id", "judge_score", "human_mean", "own_scale"]


def bland_altman_pairs(study: StudyData) -> pd.DataFrame:
    """One row per (judge, criterion, output) scored by the judge and at least one human:
    ``judge_score``, ``human_mean`` (mean of the humans' scores on the output) and
    ``own_scale`` (``"lo-hi"`` for a judge on its own scale, else missing). Judges sorted by
    name, the ensemble last; criteria in the project's order, then ``average``."""
    criteria = list(study.criteria.name)
    humans = with_average(study.human_scores[["output_id", "annotator", "criterion", "score"]],
                          "annotator", criteria)
    humans = humans[humans.score.notna()]
    mean = humans.groupby(["criterion", "output_id"], sort=False).score.mean() \
        .rename("human_mean").reset_index()
    single = study.judge_scores[["output_id", "judge", "criterion", "score"]]
    single = single[single.score.notna()]
    judged = pd.concat([with_average(single, "judge", criteria),
                        with_average(ensemble_scores(study), "judge", criteria)],
                       ignore_index=True)
    pairs = judged.rename(columns={"score": "judge_score"}).merge(
        mean, on=["criterion", "output_id"])
    order = {c: i for i, c in enumerate([*criteria, AVERAGE])}
    names = sorted(set(pairs.judge) - {ENSEMBLE}) + [ENSEMBLE]
    pairs = pairs.assign(_j=pairs.judge.map({j: i for i, j in enumerate(names)}),
                         _c=pairs.criterion.map(order).fillna(len(order)))
    pairs = pairs.sort_values(["_j", "_c", "criterion", "output_id"], kind="stable")
    scales = {(j, c): own_scale(study, j, c)
              for j, c in pairs[["judge", "criterion"]].drop_duplicates().itertuples(index=False)}
    pairs["own_scale"] = pd.Series([scales[(j, c)] for j, c in zip(pairs.judge, pairs.criterion)],
                                   index=pairs.index, dtype=object)
    return pairs[PAIR_COLUMNS].reset_index(drop=True)


def bland_altman_table(study: StudyData) -> pd.DataFrame:
    """The ``bland_altman.csv`` table: one row per judge (the ensemble included) and
    criterion (``average`` included), see the module docstring.

    Columns: ``judge``, ``criterion``, ``n_items`` (outputs scored by the judge and at least
    one human), the statistics of
    :func:`annotation.stats.bland_altman.limits_of_agreement` (judge - human mean, on the
    humans' scale), and ``note``. A judge on its own scale is listed with NaN statistics and
    the note "judge on its own scale (lo-hi): no limits of agreement on the humans' scale".
    """
    pairs = bland_altman_pairs(study)
    rows = []
    for (judge, criterion), g in pairs.groupby(["judge", "criterion"], sort=False):
        scale = g.own_scale.iloc[0]
        row: dict[str, object] = {"judge": judge, "criterion": criterion, "n_items": len(g)}
        if pd.notna(scale):
            row.update({c: np.nan for c in STAT_COLUMNS})
            row["note"] = (f"judge on its own scale ({scale}): no limits of agreement on the "
                           "humans' scale")
        else:
            stats = limits_of_agreement(g.judge_score.to_numpy(float),
                                        g.human_mean.to_numpy(float)).iloc[0]
            row.update({c: stats[c] for c in STAT_COLUMNS})
            row["note"] = stats["note"]
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def bland_altman_figure(study_or_pairs: StudyData | pd.DataFrame, judge: str,
                        criterion: str) -> go.Figure | None:
    """The Bland-Altman plot of one judge and criterion (Bland & Altman 1986, Fig. 2):
    difference (judge - human mean) against the mean of the two per output, the mean
    difference and the two limits of agreement as lines, each with its interval as a band,
    and the proportional-bias regression line (Bland & Altman 1999, sec. 3.2).

    ``study_or_pairs``: a :class:`StudyData` or the rows of :func:`bland_altman_pairs`.
    None when there is no pair, or when the judge is on its own scale.
    """
    pairs = bland_altman_pairs(study_or_pairs) if isinstance(study_or_pairs, StudyData) \
        else study_or_pairs
    g = pairs[(pairs.judge == judge) & (pairs.criterion == criterion)]
    if g.empty or ("own_scale" in g.columns and g.own_scale.notna().any()):
        return None
    x = (g.judge_score.to_numpy(float) + g.human_mean.to_numpy(float)) / 2
    d = g.judge_score.to_numpy(float) - g.human_mean.to_numpy(float)
    stats = limits_of_agreement(g.judge_score.to_numpy(float),
                                g.human_mean.to_numpy(float)).iloc[0]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=d, mode="markers", name="outputs",
                             text=g.output_id.map(plot_text), hovertemplate=(
                                 "%{text}<br>mean %{x:.2f}<br>judge - human %{y:.2f}"
                                 "<extra></extra>")))
    lines = (("mean_diff", "mean difference", "mean_diff_lo", "mean_diff_hi", "solid"),
             ("loa_lo", "lower limit", "loa_lo_lo", "loa_lo_hi", "dot"),
             ("loa_hi", "upper limit", "loa_hi_lo", "loa_hi_hi", "dot"))
    for value, label, lo, hi, dash in lines:
        if pd.isna(stats[value]):
            continue
        if pd.notna(stats[lo]) and pd.notna(stats[hi]):
            fig.add_hrect(y0=stats[lo], y1=stats[hi], fillcolor="grey", opacity=0.15,
                          line_width=0)
        fig.add_hline(y=stats[value], line_dash=dash, line_color="black",
                      annotation_text=f"{label} {stats[value]:.2f}",
                      annotation_position="right")
    if pd.notna(stats["slope"]):
        xs = np.array([x.min(), x.max()])
        intercept = d.mean() - stats["slope"] * x.mean()
        fig.add_trace(go.Scatter(x=xs, y=intercept + stats["slope"] * xs, mode="lines",
                                 line={"dash": "dash"},
                                 name=f"slope {stats['slope']:.2f} (p {stats['slope_p']:.2g})"))
    fig.update_layout(height=420, legend_title_text="",
                      title=f"{plot_text(judge)}: {plot_text(criterion)} "
                            f"(n = {int(stats['n'])})",
                      xaxis_title="mean of judge and human mean",
                      yaxis_title="judge - human mean")
    return fig
