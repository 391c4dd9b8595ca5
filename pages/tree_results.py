"""Admin: diagnostic-tree review settings, progress and results (TRACE-Bench).

Layout only: annotation.work.tree_review (settings) and annotation.results.trees (progress,
tables, figures, export) do the work; `judge-audit trees --db DB --out DIR` writes the
same tables.
"""

import pandas as pd
import streamlit as st

from annotation.results import trees as res
from annotation.results.analytics import csv_bytes, float_columns
from annotation.store import Store
from annotation.trace.trees import default_judge, vlm_judges
from annotation.ui.app_state import open_store
from annotation.ui.widgets import require
from annotation.work import tree_review as tr

PAPER_AGREEMENT = 0.826  # TRACE-Bench Appendix C.3: 200 Emu3.5 cases

TITLES = {
    "auto_vs_human": "Automatic vs human localization",
    "human_agreement": "Reviewers vs each other",
    "table3": "Table 3",
    "table3_long": "Table 3 with counts",
    "figure11": "Figure 11 data",
    "failure_reasons": "Failure reasons",
    "automatic_localization": "Automatic localization",
    "reviews": "Reviews",
    "tree_problems": "Trees left out",
    "false_passes": "False passes: the judge passed, a reviewer failed",
    "passed_instances": "Judge-passed instances and their reviews",
    "adjudicated_localization": "Consensus localization (with adjudicated origins)",
}
CAPTIONS = {
    "auto_vs_human": "Automatic against human localization of each failing instance "
                     "(Appendix C.3): agreement with its Wilson interval and Cohen's kappa on "
                     "the node, on the Table 3 category, and per reviewed tree (case: every "
                     "instance agrees). 'Not a failure' reviews count as disagreements.",
    "human_agreement": "Reviewers against each other on instances reviewed by two or more: "
                       "pairwise agreement, Cohen's kappa (exactly two reviewers) and "
                       "Krippendorff's alpha (nominal).",
    "table3": "Table 3: distribution of diagnostic outcomes per operator (% of instances).",
    "table3_long": "Table 3 with counts.",
    "figure11": "Figure 11: cumulative pass rate over relative tree depth (0 = root, "
                "1 = leaf); persistent failures never pass, so curves end below 1.",
    "failure_reasons": "Failure reasons given by the reviewers, per operator.",
    "automatic_localization": "Automatic localization of every operator instance of every "
                              "tree (the judge's answers on the node outputs).",
    "reviews": "Every current review next to the automatic localization.",
    "tree_problems": "Trees left out: they could not be built.",
    "false_passes": "Per operator, of the reviews of instances the judge passes at the root "
                    "(a blind sample mixed into the reviewers' lists, see the settings), the "
                    "share a reviewer failed, with its Wilson interval; instances nobody "
                    "reviewed are 'not reviewed', not agreements. Beside it, the share of "
                    "judge failures reviewers called 'not a failure'.",
    "passed_instances": "Every instance the judge passes at the root: not reviewed, agreed "
                        "(every reviewer: not a failure) or human failed.",
    "adjudicated_localization": "Per reviewed instance: the reviewers' origins, the strict "
                                "majority, the adjudicator's origin where reviewers "
                                "disagreed (Adjudicate page) and the consensus (adjudicated, "
                                "else the majority) against the automatic origin. The "
                                "agreement tables above stay on the raw reviews.",
}


@st.cache_data(show_spinner=False, max_entries=4)
def report_of(db: str, stamp: tuple, judge: str | None,
              _store: Store) -> tuple[dict[str, pd.DataFrame], str]:
    """The tables and reviews.jsonl, recomputed when the data (``stamp``) changes."""
    return res.tree_report(_store, judge)


def show(name: str, table: pd.DataFrame) -> None:
    st.subheader(TITLES[name], anchor=False)
    st.caption(CAPTIONS[name])
    config = {c: st.column_config.NumberColumn(format="%.3f") for c in float_columns(table)}
    st.dataframe(table, hide_index=True, width="stretch", column_config=config,
                 placeholder="–")
    st.download_button("CSV", csv_bytes(table), file_name=f"{name}.csv", mime="text/csv",
                       key=f"csv-{name}", on_click="ignore", icon=":material/download:",
                       type="tertiary")


def chart(fig: object, key: str) -> None:
    if fig is None:
        st.caption("No data for this figure.")
    else:
        st.plotly_chart(fig, width="stretch", key=key)


user = require("admin")
store = open_store(st.session_state)
settings = tr.get_settings(store)
judge = tr.judge_for(store)

st.title("Tree localization")
done, needed, units = res.overall_progress(store)
st.progress(min(done / needed, 1.0) if needed else 1.0,
            text=f"Tree review: {done} of {needed} needed ({settings.overlap} reviewer(s) "
                 f"per tree, {units} trees with node outputs)")

left, right = st.columns(2)
with left, st.form("tree-settings"):
    st.subheader("Settings", anchor=False)
    overlap = st.number_input("Distinct reviewers per tree", 1, 20, settings.overlap)
    minutes = st.number_input("Reservation timeout (minutes)", 1, 24 * 60,
                              settings.reservation_minutes)
    share = st.number_input(
        "Share of judge-passed instances mixed in for review", 0.0, 1.0,
        float(settings.passed_share), step=0.05, format="%.2f",
        help="Reviewers also check this share of the instances the judge passes at the "
             "root, listed like the failing ones (blind), to measure false passes.")
    judges = vlm_judges(store)
    options = [None, *judges]
    fallback = default_judge(store)
    chosen = st.selectbox(
        "Judge whose node answers define pass / fail", options,
        index=options.index(settings.judge) if settings.judge in options else 0,
        format_func=lambda j: (f"Default: most answers on node outputs ({fallback or 'none'})"
                               if j is None else j))
    if st.form_submit_button("Save"):
        tr.set_settings(store, user.name, overlap=int(overlap),
                        reservation_minutes=int(minutes), judge=chosen,
                        passed_share=float(share))
        st.rerun()

with st.spinner("Localizing every tree ..."):
    tables, jsonl = report_of(str(store.path), res.data_stamp(store), judge, store)

with right:
    st.subheader("Per reviewer", anchor=False)
    st.dataframe(tables["reviewer_progress"], hide_index=True, width="stretch")
    st.download_button("Reviews (JSONL)", jsonl, file_name="reviews.jsonl",
                       mime="application/jsonl", icon=":material/download:", on_click="ignore")

if judge is None:
    st.info("No judged node outputs in this project: import tasks with `meta.formula` and "
            "node outputs (`meta.node`) with their judgments (docs/bundle-format.md).")
if not tables["tree_problems"].empty:
    st.warning(f"{len(tables['tree_problems'])} tree(s) could not be built and are left out.")

overall = tables["auto_vs_human"]
overall = overall[overall["operator"] == "Overall"].set_index("level")
metrics = st.columns(4)
node = overall.loc["node"]
metrics[0].metric("Automatic = human (node)",
                  "–" if node["n"] == 0 else f"{node['agreement']:.1%}",
                  help=f"of {int(node['n'])} reviewed failing instances; the paper reports "
                       f"{PAPER_AGREEMENT:.1%} on 200 cases (Appendix C.3)")
metrics[1].metric("Cohen's kappa (node)",
                  "–" if pd.isna(node["kappa"]) else f"{node['kappa']:.2f}")
category = overall.loc["category"]
metrics[2].metric("Automatic = human (category)",
                  "–" if category["n"] == 0 else f"{category['agreement']:.1%}")
metrics[3].metric("'Not a failure' reviews", int(node["n_not_a_failure"]),
                  help="Reviews saying the judge was wrong at the root (disagreements)")

show("auto_vs_human", tables["auto_vs_human"])
show("human_agreement", tables["human_agreement"])
show("false_passes", tables["false_passes"])
if settings.passed_share == 0:
    st.caption("No judge-passed instances are mixed into the reviewers' lists (share 0 in "
               "the settings): false passes cannot be measured.")

figures = st.columns(2)
with figures[0]:
    st.subheader("Table 3: outcome / source per operator", anchor=False)
    chart(res.table3_chart(tables["table3_long"]), "table3-chart")
with figures[1]:
    st.subheader("Figure 11: cumulative pass rate", anchor=False)
    chart(res.figure11_chart(tables["figure11"]), "figure11-chart")

for name in ("table3", "table3_long", "figure11", "failure_reasons",
             "automatic_localization", "reviews", "passed_instances",
             "adjudicated_localization"):
    show(name, tables[name])
if not tables["tree_problems"].empty:
    show("tree_problems", tables["tree_problems"])
