"""Admin: judge validation. The report's tables and figures, in the layouts of the seed
papers, and a drill-down to the items where a judge is furthest from the humans.

Layout only: the statistics are :func:`annotation.results.report.build_report`, the seed layouts
and the drill-down :mod:`annotation.results.analytics`, the figures
:mod:`annotation.results.figures`. This is the one page that shows judges' text: always with
``st.text`` / ``st.code``, never as markdown or HTML.
"""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import streamlit as st

from annotation.results import analytics, judge_bias, pairwise, tiif
from annotation.results import figures as report_figures
from annotation.results.design import design_sentence
from annotation.results.ratings import AVERAGE
from annotation.results.report import ReportOptions, build_report
from annotation.results.study import StudyData, load_study
from annotation.store import Store
from annotation.ui import render
from annotation.ui.app_state import open_store
from annotation.ui.widgets import inert, require, show_image
from annotation.work.workflow import load_item

require("admin")
store = open_store(st.session_state)


@st.cache_data(show_spinner=False, max_entries=4)
def study_of(db: str, stamp: tuple[int, ...], _store: Store) -> StudyData:
    """The study, read again when the data changes (``stamp``)."""
    return load_study(_store)


@st.cache_data(show_spinner=False, max_entries=8)
def report_of(db: str, stamp: tuple[int, ...], n_boot: int, seed: int,
              by: str | tuple[str, ...] | None,
              unanswered: str, _study: StudyData) -> dict[str, pd.DataFrame]:
    """Every report table, recomputed when the data (``stamp``) or an option changes."""
    return build_report(_study, ReportOptions(n_boot=n_boot, seed=seed, by=by,
                                              unanswered=unanswered))


def show(table: pd.DataFrame, name: str, key: str, *, display: pd.DataFrame | None = None,
         first: list[str] | None = None, **column_config: object) -> None:
    """A table (floats to 3 decimals, ``first`` columns first) and its CSV download under
    it. ``display``: what to show instead of ``table`` (the download stays ``table``)."""
    shown = table if display is None else display
    if isinstance(shown.columns, pd.MultiIndex):  # column_config cannot address these
        st.dataframe(shown.style.format("{:.3f}", na_rep="–",
                                        subset=analytics.float_columns(shown)),
                     hide_index=True, width="stretch", placeholder="–")
    else:
        config = {c: st.column_config.NumberColumn(format="%.3f")
                  for c in analytics.float_columns(shown)}
        config.update(column_config)
        order = None
        if first:
            order = [*first, *[c for c in shown.columns if c not in first]]
        st.dataframe(shown, hide_index=True, width="stretch", column_config=config,
                     column_order=order, placeholder="–")
    st.download_button("CSV", analytics.csv_bytes(table), file_name=f"{name}.csv",
                       mime="text/csv", key=f"csv-{key}", on_click="ignore",
                       icon=":material/download:", type="tertiary")


def chart(fig: object, key: str) -> None:
    if fig is None:
        st.caption("No data for this figure.")
    else:
        st.plotly_chart(fig, width="stretch", key=key)


st.title("Judge validation")
st.caption("Judges against the human annotations of this project: the tables of "
           "`judge-audit report`, live. Everything is recomputed when answers or imports "
           "change.")
stamp = analytics.data_stamp(store)
db = str(store.path)
with st.spinner("Reading the project ..."):
    study = study_of(db, stamp, store)

if (study.human_scores.empty and study.human_answers.empty
        and not pairwise.has_answers(study.pairwise, "human")):
    st.info("No human answers yet: the statistics need annotations (Annotate outputs, or "
            "import human answers with a bundle).")
    st.stop()
if (study.judge_scores.empty and study.judge_answers.empty
        and not pairwise.has_answers(study.pairwise, "judge")):
    st.info("No parsed judge answers in this project: import a benchmark's judgments first.")
    st.stop()

# ------------------------------------------------------------------------- controls
st.session_state.setdefault("an_n_boot", 1000)
st.session_state.setdefault("an_seed", 0)
controls = st.columns([1, 1, 2, 2, 2], vertical_alignment="bottom")
n_boot = controls[0].number_input("Bootstrap resamples", 10, 100_000, step=100, key="an_n_boot",
                                  help="For the intervals of SRCC, Kendall, alpha and the "
                                       "paired comparisons")
seed = controls[1].number_input("Seed", 0, 2**31 - 1, key="an_seed",
                                help="Same seed, same numbers")
keys = controls[2].multiselect("Group by", analytics.group_options(study), key="an_by",
                              placeholder="none",
                              help="Extra rows per group beside 'all' (ratings, checklist, "
                                   "reliability); several keys: their combinations")
by = tuple(keys) or None
unanswered = controls[3].selectbox(
    "Unanswered checklist questions", ["omit", "fail"], key="an_unanswered",
    format_func={"omit": "left out (counted)", "fail": "failed (DSG's 0)"}.get,
    help="A checklist question a judge never answered: left out of its rows and counted in "
         "n_unanswered, or scored as failed, the DSG authors' convention")
with st.spinner("Computing the statistics ..."):
    tables = report_of(db, stamp, int(n_boot), int(seed), by, unanswered, study)
controls[4].caption(f"{len(study.outputs)} outputs · {len(study.judges)} judges · "
                    f"{study.human_scores.annotator.nunique() if len(study.human_scores) else 0}"
                    f" annotators with ratings · {int(n_boot)} resamples, seed {int(seed)}")

st.caption(design_sentence(tables["study_design"]))

labels = {**dict(zip(study.criteria.name, study.criteria.label)), AVERAGE: "Average"}
ratings, checklist = tables["ratings"], tables["checklist"]
with_pairs = pairwise.has_pairwise(study.pairwise)
tab_ratings, tab_checklist, tab_reliability, tab_compare, *tab_pairs, tab_items = st.tabs(
    ["Ratings", "Checklist", "Reliability", "Judges compared",
     *(["Pairwise preferences"] if with_pairs else []), "Disagreements"])

# ------------------------------------------------------------------------- ratings
with tab_ratings:
    if ratings.empty:
        st.info("No rating criteria scored by both judges and humans.")
    else:
        st.subheader("Correlation with the humans (VIF-Bench Table 7)", anchor=False)
        row = st.columns([2, 2, 1], vertical_alignment="bottom")
        reference = row[0].radio(
            "Judges against", [analytics.HUMAN_MEAN, analytics.LOO_MEAN], horizontal=True,
            key="an_reference",
            format_func={analytics.HUMAN_MEAN: "mean of all annotators",
                         analytics.LOO_MEAN: "leave-one-out means (like for like)"}.get)
        vif_csv = tables["vif_table"]
        groups = list(dict.fromkeys(vif_csv.group))
        group = row[1].selectbox("Group", groups, key="an_rgroup", disabled=len(groups) < 2)
        with_ci = row[2].toggle("95% intervals", key="an_ci")
        short = {c: analytics.abbreviate(label) for c, label in labels.items()}
        shown = analytics.vif_view(vif_csv, reference=reference, group=group, ci=with_ci,
                                   labels=short)
        show(vif_csv, "vif_table", "vif",
             display=analytics.two_level(analytics.ci_text(shown) if with_ci else shown))
        legend = "; ".join(f"{short[c]} {labels[c]}" for c in labels if short[c] != labels[c])
        st.caption("PLCC (Pearson) and SRCC (Spearman) of each judge's score with the "
                   "humans' per output; intervals resample outputs (cluster bootstrap). "
                   "Human (leave-one-out): each annotator against the mean of the others, "
                   "pooled, as Table 7's Human-Human, on the same outputs as the judges (a "
                   "row per judge whose outputs differ)."
                   + (f" Abbreviations: {inert(legend)}." if legend else ""))

        st.subheader("Judge against human mean, per output", anchor=False)
        judges = sorted(study.judge_scores.judge.unique())
        criteria = [c for c in labels if c in set(ratings.criterion)]
        pick = st.columns(2)
        judge = pick[0].selectbox("Judge", judges, key="an_sc_judge")
        criterion = pick[1].selectbox("Criterion", criteria, key="an_sc_crit",
                                      format_func=labels.get)
        pairs = analytics.score_pairs(study, judge, criterion)
        if pairs.empty:
            st.caption("No output scored by both.")
        else:
            fig = px.scatter(report_figures.plot_columns(pairs, "generator", "output_id"),
                             x="human_mean", y="judge", color="generator",
                             hover_data=["output_id", "humans"],
                             labels={"human_mean": "human mean",
                                     "judge": report_figures.plot_text(judge)})
            lo = min(pairs.human_mean.min(), pairs.judge.min())
            hi = max(pairs.human_mean.max(), pairs.judge.max())
            fig.add_shape(type="line", x0=lo, y0=lo, x1=hi, y1=hi,
                          line={"dash": "dot", "color": "gray"})
            fig.update_traces(marker={"size": 10, "opacity": 0.75})
            fig.update_layout(height=420, legend_title_text="")
            chart(fig, "scatter")

        st.subheader("Per criterion", anchor=False)
        stat = st.radio("Statistic", ["plcc", "srcc"], horizontal=True, key="an_stat",
                        format_func=str.upper)
        named = ratings.assign(criterion=ratings.criterion.map(short).fillna(
            ratings.criterion))
        in_order = [short[c] for c in labels if c in set(ratings.criterion)]
        st.caption(f"{stat.upper()} with 95% interval: judges and humans against the same "
                   "leave-one-out means")
        bars = report_figures.correlation_bars(named, stat)
        if bars is not None:
            bars.update_xaxes(categoryorder="array", categoryarray=in_order)
        chart(bars, "bars")
        st.caption(f"{stat.upper()} of each judge with the human mean")
        heatmap = report_figures.correlation_heatmap(named, stat)
        if heatmap is not None:
            heatmap.update_layout(height=max(heatmap.layout.height or 0, 320))
            cells = heatmap.data[0]  # criteria in the project's order (pivot sorts them)
            columns = [list(cells.x).index(c) for c in in_order if c in list(cells.x)]
            cells.update(x=[cells.x[i] for i in columns],
                         z=[[row[i] for i in columns] for row in cells.z])
            heatmap.update_xaxes(title_text="")
        chart(heatmap, "heatmap")
        with st.expander("All rows of ratings.csv"):
            show(ratings, "ratings", "ratings")
        st.subheader("Mean scores per generator and group", anchor=False)
        st.caption("Each judge's and the humans' mean score (Student's 95% interval), per "
                   "generator and 'Group by' group (VIF-Bench App. F.1-F.2)")
        show(tables["group_scores"], "group_scores", "group_scores")
        if not tables["vif_conflicts"].empty:
            st.subheader("Conflict vs no conflict (VIF-Bench Fig. 6 left)", anchor=False)
            st.caption("Mean score on tasks with a conflict and on tasks with that instruction "
                       "but none; difference with Welch's 95% interval. Verified labels where "
                       "verifiers decided, else the published ones (the labels_* columns "
                       "count which).")
            show(tables["vif_conflicts"], "vif_conflicts", "vif_conflicts")
        if not tables["vif_variants"].empty:
            st.subheader("Visual vs text instructions (VIF-Bench Fig. 6 right)", anchor=False)
            st.caption("Judge scores of the outputs generated from the tasks with their visual "
                       "instructions (vi) and from their text variants, all judged against "
                       "the original task, on the variants' subset; text minus VI paired by "
                       "task (paired t 95% interval)")
            show(tables["vif_variants"], "vif_variants", "vif_variants")

# ------------------------------------------------------------------------- checklist
with tab_checklist:
    if not tables["tiif_table"].empty:
        st.subheader("TIIF-Bench Table 2", anchor=False)
        st.caption("Mean image score (share of questions answered as expected, x 100) per "
                   "scorer and generator; short and long prompts")
        show(tables["tiif_table"], "tiif_table", "tiif_table",
             display=tiif.tiif_wide(tables["tiif_table"]))
        st.caption("Short vs long, paired by prompt (Student's 95% interval of the mean "
                   "difference)")
        show(tables["tiif_pairs"], "tiif_pairs", "tiif_pairs")
    if checklist.empty:
        st.info("No checklist answered by both judges and humans.")
    else:
        st.subheader("Judges against the humans (TRACE-Bench Table 7)", anchor=False)
        trace_csv = tables["trace_table"]
        unit = st.radio("Unit", ["output x operator", "case"], horizontal=True,
                        key="an_trace_unit",
                        format_func={"output x operator": "operator scores (as the paper)",
                                     "case": "case scores"}.get)
        show(trace_csv, "trace_table", "trace",
             display=analytics.ci_text(analytics.trace_view(trace_csv, unit=unit)))
        st.caption("Pearson, Spearman and MAE between the judge's and the humans' operator "
                   "scores (0-1; pooled over the (output, operator) pairs, or the case score "
                   "per output); Agreement: share of yes/no decisions equal to the human "
                   "majority (ties left out). Intervals resample outputs with all their "
                   "questions. DSG gating applies to judges and humans alike.")
        st.caption("Agreement with 95% interval (cluster bootstrap over outputs)")
        chart(report_figures.checklist_bars(checklist), "checklist_bars")
        st.subheader("Confusion table", anchor=False)
        left, right = st.columns([1, 2], gap="medium")
        with left:
            all_rows = checklist[checklist.group == "all"]
            judge = st.selectbox("Judge", analytics.judge_order(list(all_rows.judge)),
                                 key="an_cf_judge")
            references = list(all_rows[all_rows.judge == judge].reference)
            reference = st.selectbox("Reference", references, key="an_cf_ref")
        with right:
            chosen = all_rows[(all_rows.judge == judge) & (all_rows.reference == reference)]
            if not chosen.empty:
                cells = chosen.iloc[0]
                st.caption(f"Decisions, judge by reference ({int(cells.n_decisions)} in all)")
                st.table(analytics.confusion(cells))
                st.caption(f"agreement {cells.agreement:.3f} · kappa {cells.kappa:.3f} · "
                           f"AC1 {cells.ac1:.3f} · PABAK {cells.pabak:.3f} · "
                           f"balanced accuracy {cells.balanced_accuracy:.3f} · yes-recall "
                           f"{cells.yes_recall:.3f} · no-recall {cells.no_recall:.3f}")
        if by is not None:
            st.subheader("Agreement with the human majority per group", anchor=False)
            show(analytics.agreement_by_group(checklist), "agreement_by_group", "bygroup")
        st.subheader("Where the judges are lenient", anchor=False)
        show(tables["leniency"], "leniency", "leniency",
             first=["judge", "facet", "value", "n_decisions", "leniency", "strictness"])
        st.caption("Judge yes where the human majority says no (leniency = b / (b + d)) and "
                   "judge no where it says yes (strictness), per operator, per question "
                   "category and per group.")
        with st.expander("Operator scores (operators.csv)"):
            show(tables["operators"], "operators", "operators")
        with st.expander("All rows of checklist.csv"):
            show(checklist, "checklist", "checklist")

# ------------------------------------------------------------------------- reliability
with tab_reliability:
    st.subheader("Humans among themselves", anchor=False)
    reliability = tables["reliability"]
    if reliability.empty:
        st.info("Reliability needs at least two annotators on the same outputs.")
    else:
        show(reliability, "reliability", "reliability",
             first=["criterion", "group", "n_items", "n_annotators", "alpha_interval",
                    "alpha_nominal", "alpha_lo", "alpha_hi", "ci_level", "prevalence_yes",
                    "pct_agreement", "ac1", "icc_a1", "icc_ak", "judge_ceiling", "note"])
    st.caption("Krippendorff's alpha at the interval, ordinal and nominal levels, with the "
               "bootstrap interval (resampling outputs) at the criterion's own level "
               "(ci_level), the yes prevalence beside it for the checklist, AC1 on the "
               "criterion's own categories, ICC(A,1)/ICC(A,k) (Henderson III variance "
               "components where the design is incomplete) and judge_ceiling = "
               "sqrt(ICC(A,k)), the best correlation any judge can reach with the human "
               "mean. Krippendorff's guideline: alpha ≥ .800 for reliable data; .667 ≤ "
               "alpha < .800 only for tentative conclusions; below .667, do not rely on the "
               "labels.")
    st.subheader("Annotators", anchor=False)
    annotators = tables["annotators"]
    if annotators.empty:
        st.caption("No annotator has answered yet.")
    else:
        show(annotators, "annotators", "annotators",
             first=["annotator", "flags", "n_items", "checklist_agreement",
                    "checklist_kappa", "median_active_seconds", "cant_tell_share"])
    st.caption("Each annotator against the others: r_<criterion> is the correlation with "
               "the mean of the other annotators, checklist agreement and kappa are against "
               "the majority of the others. flags: low_correlation, low_kappa, fast (under a "
               "third of the typical active time), many_cant_tell, straight_lining.")

    st.subheader("Annotators' confusion (Dawid-Skene)", anchor=False)
    confusion = tables["annotator_confusion"]
    if confusion.empty:
        st.caption("No checklist decisions by annotators yet.")
    else:
        show(confusion, "annotator_confusion", "annotator_confusion",
             first=["annotator", "true", "answer", "probability", "annotator_accuracy"])
        with st.expander("Per decision: the majority beside the Dawid-Skene label"):
            show(tables["human_labels"], "human_labels", "human_labels")
    st.caption("The Dawid-Skene model (Dawid & Skene 1979) estimates each annotator's "
               "confusion matrix P(answer | true answer) from all their checklist decisions "
               "and labels each decision by its posterior: checklist.csv's reference "
               "'human Dawid-Skene', an alternative to the majority that weighs careful "
               "annotators more.")

# ------------------------------------------------------------------------- judges compared
with tab_compare:
    st.subheader("Pairs of judges against the same human means", anchor=False)
    show(tables["judge_comparisons"], "judge_comparisons", "comparisons",
         first=["criterion", "judge_a", "judge_b", "n_items", "r_a", "r_b", "diff", "p",
                "p_bh", "p_by"], df=st.column_config.NumberColumn(format="%.0f"))
    st.caption("Williams' t for two dependent correlations sharing the human mean (p), "
               "adjusted across all rows by Benjamini-Hochberg (p_bh) and "
               "Benjamini-Yekutieli (p_by); Zou's interval and a paired cluster bootstrap "
               "for the difference r_a - r_b.")
    st.subheader("Pairs of judges on the same checklist decisions", anchor=False)
    show(tables["checklist_comparisons"], "checklist_comparisons", "checklist_comparisons",
         first=["reference", "judge_a", "judge_b", "n_items", "n_decisions", "accuracy_a",
                "accuracy_b", "diff", "diff_lo", "diff_hi", "clustered_p", "p_bh", "p_by"])
    st.caption("Accuracy of each judge against the reference on the decisions both made; "
               "the difference with a paired cluster-bootstrap interval over outputs and "
               "the clustered McNemar test of Durkalski et al. (2003) (clustered_p, adjusted "
               "by Benjamini-Hochberg and -Yekutieli over the rows). mcnemar_p treats the "
               "decisions as independent and is kept for comparison only.")
    st.subheader("Judge-corrected leaderboard", anchor=False)
    board = tables["leaderboard"]
    show(board, "leaderboard", "leaderboard",
         first=["judge", "measure", "generator", "n_labeled", "n_unlabeled", "judge_mean",
                "human_mean", "estimate", "lo", "hi", "rank_judge", "rank_corrected"])
    st.caption("Each generator's score from the judge on every output, corrected by the "
               "human-scored outputs (prediction-powered inference with PPI++'s tuned "
               "weight lam; Student's t interval), beside the judge alone and the humans "
               "alone; empty corrected columns say why in note (the sample must be uniform).")
    if not board.empty:
        pick_lb = st.columns(2)
        lb_judge = pick_lb[0].selectbox("Judge ", list(dict.fromkeys(board.judge)),
                                        key="an_lb_judge")
        lb_measure = pick_lb[1].selectbox(
            "Measure", list(dict.fromkeys(board.measure[board.judge == lb_judge])),
            key="an_lb_measure", format_func=lambda c: labels.get(c, c))
        figure = report_figures.leaderboard_plot(board, lb_measure, lb_judge)
        if figure is not None:
            chart(figure, "leaderboard")
    st.subheader("System level: ranking the generators", anchor=False)
    show(tables["system_level"], "system_level", "system")
    st.caption("Kendall tau-b and pairwise accuracy of the per-generator means, judge vs "
               "humans.")
    st.subheader("Alternative annotator test", anchor=False)
    show(tables["alt_test"], "alt_test", "alt_test")
    st.caption("Calderon, Reichart & Dror (ACL 2025): can the judge replace an annotator? "
               "passed: the judge wins against enough annotators (negative RMSE on "
               "ratings, on ranks for a judge on its own scale; accuracy on the checklist's "
               "gated decisions). Needs at least 3 annotators with 30 items each.")
    with st.expander("Per annotator (alt_test_annotators.csv)"):
        show(tables["alt_test_annotators"], "alt_test_annotators", "alt_test_annotators")
    st.subheader("Limits of agreement (Bland-Altman)", anchor=False)
    show(tables["bland_altman"], "bland_altman", "bland_altman",
         first=["judge", "criterion", "n_items", "mean_diff", "loa_lo", "loa_hi", "slope",
                "slope_p"])
    st.caption("Judge minus human mean on the humans' scale: the mean difference (bias), "
               "the limits within which 95% of differences fall (mean ± 1.96 SD, with exact "
               "intervals, Carkeet 2015) and the proportional-bias slope of the difference "
               "on the mean.")
    ba = tables["bland_altman"]
    if not ba.empty:
        pick_ba = st.columns(2)
        ba_judge = pick_ba[0].selectbox("Judge", list(dict.fromkeys(ba.judge)),
                                        key="an_ba_judge")
        ba_criterion = pick_ba[1].selectbox(
            "Criterion", list(dict.fromkeys(ba.criterion[ba.judge == ba_judge])),
            key="an_ba_criterion", format_func=lambda c: labels.get(c, c))
        chart(judge_bias.bland_altman_figure(study, ba_judge, ba_criterion), "bland_altman")

# ------------------------------------------------------------------------- pairwise
for tab in tab_pairs:  # only when the project has pairs or ranking items (issue #17)
    with tab:
        st.subheader("Pairwise preferences", anchor=False)
        pw_table, pw_confusion = tables["pairwise"], tables["pairwise_confusion"]
        judged = pairwise.judges_view(pw_table)
        if judged.empty:
            st.caption("No judge answered a pair that has a human reference.")
        else:
            show(pw_table[pw_table.rater != pairwise.HUMANS], "pairwise", "pairwise",
                 display=judged)
        st.caption("Each judge against the human preference of a pair (the strict majority "
                   "of its annotators; pairs without one left out): accuracy over all "
                   "pairs with an unparsed verdict as a miss (GenAI-Bench), over the parsed "
                   "verdicts, 4-class Cohen's kappa and accuracy with tie and both-bad "
                   "merged, with 95% cluster-bootstrap intervals over tasks.")
        if not judged.empty:
            st.subheader("Position bias", anchor=False)
            show(pw_table[pw_table.rater != pairwise.HUMANS], "pairwise", "pairwise_position",
                 display=pairwise.position_view(pw_table))
            st.caption("First shown preferred: the share of a judge's a/b verdicts for the "
                       "output shown first (0.5: no position bias; Wilson 95% interval). "
                       "Order consistency: the share of the pairs judged in both orders "
                       "(n_both_orders) answered alike (Zheng et al. 2023).")
        if not pw_confusion.empty:
            st.subheader("Confusion matrix", anchor=False)
            pick_cf, matrix = st.columns([1, 3], gap="medium")
            cf_judge = pick_cf.selectbox("Judge", list(dict.fromkeys(pw_confusion.judge)),
                                         key="an_pw_judge")
            with matrix:
                show(pw_confusion, "pairwise_confusion", "pairwise_confusion",
                     display=pairwise.confusion_view(pw_confusion, cf_judge))
                st.caption("Pairs by the human reference (rows) and the judge's verdict "
                           "(columns; unparsed: the judge's text could not be read).")
        st.subheader("Humans among themselves on pairs", anchor=False)
        humans_pw = pairwise.humans_view(pw_table)
        if humans_pw.empty:
            st.caption("No human answered a pair.")
        else:
            show(pw_table[pw_table.rater == pairwise.HUMANS], "pairwise_humans",
                 "pairwise_humans", display=humans_pw)
        st.caption("Krippendorff's alpha (nominal, four classes) and % agreement over the "
                   "pairs two or more annotators answered; first shown preferred: the "
                   "annotators' own share of a/b answers for the output they saw on the left.")
        bt = tables["pairwise_rankings"]
        if not bt.empty:
            st.subheader("Generator rankings from pairs (Bradley-Terry)", anchor=False)
            show(bt, "pairwise_rankings", "pairwise_rankings",
                 display=pairwise.strengths_view(bt))
            st.caption("Bradley-Terry strength of each generator (log-odds, mean 0) with its "
                       "95% cluster-bootstrap interval over tasks and its rank (#), from the "
                       "humans' answers and from each judge's; a tie counts half a win each "
                       "way, both-bad is left out.")
            taus = pairwise.tau_view(bt)
            if not taus.empty:
                show(taus, "pairwise_tau", "pairwise_tau")
                st.caption("Kendall tau-b between each judge's Bradley-Terry ranking of the "
                           "generators and the humans' (1: the same order).")
        ranks = tables["rankings"]
        if not ranks.empty:
            st.subheader("Ranking items", anchor=False)
            whole = st.column_config.NumberColumn(format="%d")
            show(ranks, "rankings", "rankings", n_raters=whole, n_objects=whole, df=whole)
            st.caption("Per ranking item: Kendall's W among the annotators' orders (1: all "
                       "alike; chi2 test) and Spearman's rho between the mean human ranks "
                       "and each judge's; 'all': the mean W, and Spearman's rho between each "
                       "generator's mean human rank and its mean rank by the judge "
                       "(TIIF-Bench Sec. 4.2).")

# ------------------------------------------------------------------------- drill-down
with tab_items:
    st.subheader("Where the judge is furthest from the humans", anchor=False)
    judges = list(study.judges.name)
    targets = [c for c in study.criteria.name if c in set(study.judge_scores.criterion)]
    if len(targets) > 1:
        targets.append(AVERAGE)
    if not study.judge_answers.empty:
        targets.append(analytics.CHECKLIST)
    pick = st.columns([2, 2, 1])
    judge = pick[0].selectbox("Judge", judges, key="an_dd_judge")
    target = pick[1].selectbox(
        "Criterion or checklist", targets, key="an_dd_target",
        format_func=lambda t: "Checklist (yes/no)" if t == analytics.CHECKLIST
        else labels.get(t, t))
    limit = pick[2].number_input("Items", 1, 1000, 10, key="an_dd_limit")
    items = analytics.disagreements(study, judge, target, int(limit))
    if items.empty:
        st.info("This judge and the humans have no item in common here.")
        st.stop()
    show(items, f"disagreements_{judge}_{target}", "disagreements")
    if target == analytics.CHECKLIST:
        describe = dict(zip(items.output_id,
                            [f"{n} of {m} decisions differ" for n, m in
                             zip(items.n_disagreements, items.n_decisions, strict=True)],
                            strict=True))
    else:
        describe = dict(zip(items.output_id,
                            [f"judge {j:g}, humans {h:.2f} ({g:+.2f})" for j, h, g in
                             zip(items.judge, items.human_mean, items.gap, strict=True)],
                            strict=True))
    output_id = st.selectbox("Item", list(items.output_id), key=f"an_dd_item-{judge}-{target}",
                             format_func=lambda o: f"{o} · {describe[o]}")

    item = load_item(store, output_id)
    view, answers = st.columns([2, 3], gap="medium")
    with view:
        with st.container(border=True):
            st.caption(f"Task {inert(item.task_id)} · text instruction")
            st.text(item.instruction)
        st.caption("Generated output")
        if item.output_sha256 is None:
            st.warning("The image of this output is not in the project.")
        else:
            show_image(store, item.output_sha256, render.LARGE_SIZE, generated=True)
        if item.images:
            st.caption("Inputs")
            grid = st.columns(4)
            for i, image in enumerate(item.images):
                with grid[i % 4]:
                    show_image(store, image.sha256, render.STRIP_SIZE,
                               caption=inert(image.short_caption))
    with answers:
        questions = store.questions_df()
        texts = dict(zip(questions.question_id, questions.text, strict=True))
        side = analytics.item_answers(study, judge, output_id, target,
                                      texts=texts if target == analytics.CHECKLIST else labels)
        st.caption("The judge and each annotator")
        if target == analytics.CHECKLIST:
            show(side.drop(columns="question_id"), f"answers_{judge}", "answers",
                 first=["question", "judge", "majority", "disagree"],
                 question=st.column_config.TextColumn(width="medium"),
                 disagree=st.column_config.CheckboxColumn("differs"))
        else:
            show(side, f"answers_{judge}", "answers")
        st.caption("The judge's raw output (as it was imported; shown as plain text)")
        raw = analytics.judge_texts(store, judge, output_id, target)
        if raw.empty:
            st.caption("No raw text stored for this judgment.")
        differs = set(side.question_id[side.disagree]) if target == analytics.CHECKLIST \
            else set()
        for about, text, status in raw.itertuples(index=False):
            if target == analytics.CHECKLIST:
                mark = "✗ differs from the majority · " if about in differs else ""
                st.text(mark + texts.get(about, about)
                        + ("" if status == "ok" else f" ({status})"))
            elif status != "ok":
                st.text(f"({status})")
            st.code(text if isinstance(text, str) else "", language=None, wrap_lines=True)
