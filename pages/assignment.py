"""Admin: overlap, sample, progress per annotator and generator, flags, accounts."""

import pandas as pd
import streamlit as st

from annotation.accounts import auth
from annotation.results import planning
from annotation.results.analytics import data_stamp
from annotation.results.study import StudyData, load_study
from annotation.store import Store
from annotation.ui.app_state import open_store
from annotation.ui.widgets import require
from annotation.work import validation_set, workflow

user = require("admin")
store = open_store(st.session_state)
settings = workflow.get_settings(store)

st.title("Assignment & progress")
done, needed = workflow.overall_progress(store)
st.progress(min(done / needed, 1.0) if needed else 1.0,
            text=f"Overall: {done} of {needed} annotations needed "
                 f"({settings.overlap} per output)")


@st.cache_data(show_spinner=False, max_entries=4)
def study_of(db: str, stamp: tuple[int, ...], _store: Store) -> StudyData:
    """The study, read again when the data changes (``stamp``)."""
    return load_study(_store)


@st.cache_data(show_spinner=False, max_entries=4)
def widths_of(db: str, stamp: tuple[int, ...], _study: StudyData) -> pd.DataFrame:
    """The current interval widths, computed again when the data changes."""
    return planning.current_widths(_study)


stamp = data_stamp(store)
study = study_of(str(store.path), stamp, store)
widths = widths_of(str(store.path), stamp, study)
if widths.empty:
    st.caption("Current 95% interval widths: none yet (no human answers beside a judge's).")
else:
    st.caption("Current 95% interval width, per judge (PLCC with the human mean: Fisher z; "
               "checklist agreement with the human majority: binomial with the design "
               "effect of an output's questions). Plan more below.")
    st.dataframe(widths, hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.3f")
                                for c in ("estimate", "width_now")})

left, right = st.columns(2)
with left, st.form("settings"):
    st.subheader("Overlap", anchor=False)
    overlap = st.number_input("Distinct annotators per output", 1, 20, settings.overlap)
    minutes = st.number_input("Reservation timeout (minutes)", 1, 24 * 60,
                              settings.reservation_minutes,
                              help="An item opened but not answered is offered to someone "
                                   "else after this long")
    if st.form_submit_button("Save"):
        workflow.set_settings(store, user.name, overlap=int(overlap),
                              reservation_minutes=int(minutes))
        st.rerun()
with right, st.form("sample"):
    st.subheader("Sample", anchor=False)
    total = len(workflow.annotatable_outputs(store))
    current = len(workflow.eligible_outputs(store))
    st.caption(f"{current} of {total} annotatable outputs are in the current sample.")
    mode = st.radio("Which outputs", workflow.SAMPLE_MODES, horizontal=True,
                    format_func={"all": "All", "uniform": "Uniform random",
                                 "stratified": "Stratified by generator"}.get)
    size = st.number_input("Sample size", 1, max(total, 1), min(168, max(total, 1)))
    seed = st.number_input("Seed", 0, 2**31 - 1, 0)
    if st.form_submit_button("Draw"):
        workflow.draw_sample(store, user.name, mode, int(size) if mode != "all" else None,
                             int(seed))
        st.rerun()

with (st.expander("Validation set: questions balanced yes / no (TIIF-Bench)"),
      st.form("validation_set")):
        st.caption("Draws questions over exactly that many outputs, half 'yes' and half "
                   "'no', and makes those outputs the sample (their whole checklists are "
                   "annotated); the report scores each judge on these questions "
                   "(validation_set.csv). Balance on the human majority to draw, from a "
                   "pool already annotated, when nearly every expected answer is 'yes'.")
        columns = st.columns(4)
        images = columns[0].number_input("Outputs", 1, max(total, 1), min(300, max(total, 1)))
        questions = columns[1].number_input("Questions (even)", 2, 100_000,
                                            min(560, 2 * max(total, 1)), step=2)
        set_seed = columns[2].number_input("Seed ", 0, 2**31 - 1, 0)
        balance = columns[3].radio("Balance on", validation_set.BALANCES,
                                   format_func={"expected": "expected answers",
                                                "human": "human majority"}.get)
        if st.form_submit_button("Draw the validation set"):
            try:
                drawn = validation_set.draw_validation_set(
                    store, user.name, images=int(images), questions=int(questions),
                    seed=int(set_seed), balance=str(balance))
            except ValueError as exc:
                st.error(str(exc))
            else:
                st.success(f"{len(drawn)} questions over {drawn.output_id.nunique()} outputs; "
                           "those outputs are now the sample.")

with st.expander("Planning: how many more outputs for a target interval width"):
    st.caption("From the current data (the report's interval scaled by 1/sqrt(n), an "
               "approximation; PLCC: Fisher z; agreement: binomial with the estimated design "
               "effect) or, without data, from a stated value. Same as `judge-audit plan`, "
               "which also takes the assumptions of kappa and the leaderboard and annotators "
               "per output (docs/planning.md).")
    with st.form("plan"):
        plan_columns = st.columns(3)
        measure = plan_columns[0].selectbox("Interval", planning.MEASURES)
        target = plan_columns[1].number_input("Target 95% width", 0.001, 100.0, 0.1, step=0.01,
                                         format="%.3f")
        assumed = plan_columns[2].number_input(
            "Assumed value (r, agreement or kappa) when there is no data", -1.0, 1.0, 0.7,
            step=0.05)
        if st.form_submit_button("Plan"):
            stated = planning.Assumptions(
                r=assumed if measure in ("plcc", "srcc") else None,
                p=assumed if measure == "agreement" else None)
            try:
                plan = planning.plan_table(study, str(measure), float(target))
                if plan.empty:
                    plan = planning.plan_table(None, str(measure), float(target),
                                               assume=stated)
            except ValueError as exc:
                st.error(str(exc))
            else:
                if plan.empty:
                    st.info("Nothing to plan from yet: annotate a pilot first.")
                else:
                    st.dataframe(plan.drop(columns=["target_width"]), hide_index=True,
                                 width="stretch")

st.subheader("Per annotator", anchor=False)
st.dataframe(workflow.progress_by_annotator(store), hide_index=True, width="stretch")
st.subheader("Per generator", anchor=False)
st.dataframe(workflow.progress_by_generator(store), hide_index=True, width="stretch")
st.subheader("Flags", anchor=False)
flags = workflow.flags_df(store)
if flags.empty:
    st.caption("No flags.")
else:
    st.dataframe(flags, hide_index=True, width="stretch")
st.subheader("Accounts", anchor=False)
st.dataframe(auth.list_users(store), hide_index=True, width="stretch")
st.caption("Add, disable or change accounts with `judge-audit user ...` (see docs/accounts.md).")
