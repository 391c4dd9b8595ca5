"""Plotly figures of the report tables (shared by ``report.html`` and the analytics pages).

Plotly reads a subset of HTML in every text it draws (legend entries, axis categories and
titles, hover text, annotations: ``<b>``, ``<i>``, ``<br>``, ``<sup>``, ``<span style>``,
``<a href>``) and decodes entities. Every name from the data (judges, criteria,
generators, operators, output ids) goes through :func:`plot_text` / :func:`plot_columns`
before it enters a figure, so it is drawn as the characters typed.
"""

from __future__ import annotations

import html

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from annotation.results.ratings import HUMAN_LOO


def plot_text(value: object) -> str:
    """``value`` as text plotly draws literally: ``&``, ``<`` and ``>`` as entities (plotly
    turns them back into the characters, never into markup)."""
    return html.escape(str(value), quote=False)


def plot_columns(frame: pd.DataFrame, *columns: str) -> pd.DataFrame:
    """``frame`` with the text of ``columns`` (those present) through :func:`plot_text`."""
    return frame.assign(**{c: frame[c].map(plot_text) for c in columns if c in frame})


def correlation_bars(ratings: pd.DataFrame, stat: str = "plcc") -> go.Figure | None:
    """Per criterion, each judge's correlation with its interval; the human leave-one-out
    baseline beside it (judges against the same leave-one-out means)."""
    main = ratings.paired_judge.fillna("") == "" if "paired_judge" in ratings else True
    rows = ratings[(ratings.group == "all") & (ratings.reference == "leave-one-out mean")
                   & main]
    if rows.empty:
        rows = ratings[(ratings.group == "all") & (ratings.reference == "human mean")]
    if rows.empty:
        return None
    rows = plot_columns(rows, "judge", "criterion").assign(
        err_hi=rows[f"{stat}_hi"] - rows[stat], err_lo=rows[stat] - rows[f"{stat}_lo"])
    fig = px.bar(rows, x="criterion", y=stat, color="judge", barmode="group",
                 error_y="err_hi", error_y_minus="err_lo",
                 labels={stat: stat.upper(), "criterion": ""})
    fig.update_layout(height=420, legend_title_text="", yaxis_range=[-0.2, 1])
    return fig


def correlation_heatmap(ratings: pd.DataFrame, stat: str = "srcc") -> go.Figure | None:
    rows = ratings[(ratings.group == "all") & (ratings.reference == "human mean")]
    if rows.empty:
        return None
    grid = plot_columns(rows, "judge", "criterion").pivot_table(
        index="judge", columns="criterion", values=stat)
    fig = px.imshow(grid, text_auto=".2f", color_continuous_scale="RdYlGn", zmin=-1, zmax=1,
                    aspect="auto", labels={"color": stat.upper()})
    fig.update_layout(height=120 + 40 * len(grid))
    return fig


def checklist_bars(checklist: pd.DataFrame) -> go.Figure | None:
    rows = checklist[(checklist.group == "all")
                     & checklist.reference.isin(["human majority", "expected answer"])]
    if "paired_judge" in rows:
        rows = rows[rows.paired_judge.fillna("") == ""]
    if rows.empty:
        return None
    rows = plot_columns(rows, "judge", "reference").assign(
        err_hi=rows.agreement_hi - rows.agreement, err_lo=rows.agreement - rows.agreement_lo)
    fig = px.bar(rows, x="judge", y="agreement", color="reference", barmode="group",
                 error_y="err_hi", error_y_minus="err_lo", hover_data=["kappa", "ac1",
                                                                      "n_decisions"])
    fig.update_layout(height=380, yaxis_range=[0, 1], legend_title_text="")
    return fig


def leaderboard_plot(board: pd.DataFrame, measure: str, judge: str) -> go.Figure | None:
    """Generators ranked by their corrected score (95% interval), beside the judge-only
    score (a point: what the benchmark reports) and the human-only interval."""
    rows = board[(board.measure == measure) & (board.judge == judge)]
    if rows.empty:
        return None
    rows = plot_columns(rows.sort_values(["estimate", "human_mean"], ascending=True,
                                         na_position="first"), "generator")
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=rows.human_mean, y=rows.generator, mode="markers", name="humans only (sample)",
        marker={"symbol": "circle-open", "size": 9, "color": "#7f7f7f"},
        error_x={"type": "data", "symmetric": False, "color": "#7f7f7f", "thickness": 1,
                 "array": rows.human_hi - rows.human_mean,
                 "arrayminus": rows.human_mean - rows.human_lo}))
    if rows.estimate.notna().any():
        fig.add_trace(go.Scatter(
            x=rows.estimate, y=rows.generator, mode="markers", name="judge corrected (PPI++)",
            marker={"size": 10, "color": "#1f77b4"},
            error_x={"type": "data", "symmetric": False, "array": rows.hi - rows.estimate,
                     "arrayminus": rows.estimate - rows.lo}))
    fig.add_trace(go.Scatter(x=rows.judge_mean, y=rows.generator, mode="markers",
                             name="judge only (all outputs)",
                             marker={"symbol": "x", "size": 10, "color": "#d62728"}))
    fig.update_layout(height=120 + 40 * len(rows), xaxis_title=plot_text(measure),
                      margin={"l": 10, "r": 10, "t": 30, "b": 40})
    return fig


def figures(tables: dict[str, pd.DataFrame]) -> list[tuple[str, go.Figure]]:
    """The report's figures, with captions; those without data are left out."""
    out = []
    ratings = tables.get("ratings")
    if ratings is not None and not ratings.empty:
        for caption, fig in (
            (f"PLCC per criterion with 95% CI (judges and {HUMAN_LOO} against the same "
             "leave-one-out means)", correlation_bars(ratings)),
            ("SRCC of each judge with the human mean", correlation_heatmap(ratings)),
        ):
            if fig is not None:
                out.append((caption, fig))
    checklist = tables.get("checklist")
    if checklist is not None and not checklist.empty:
        fig = checklist_bars(checklist)
        if fig is not None:
            out.append(("Checklist agreement with 95% interval (cluster bootstrap over "
                        "outputs)", fig))
    board = tables.get("leaderboard")
    if board is not None and not board.empty:
        for (judge, measure), _ in board.groupby(["judge", "measure"], sort=True):
            fig = leaderboard_plot(board, str(measure), str(judge))
            if fig is not None:
                out.append((f"Judge-corrected leaderboard, {judge}, {measure}: generators "
                            "by corrected score (PPI++, 95% CI), the judge alone and the "
                            "humans alone", fig))
    return out
