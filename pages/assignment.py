"""Admin: overlap, sample, progress per annotator and generator, flags, accounts."""

import streamlit as st

from annotation.accounts import auth
from annotation.store import items
from annotation.ui.app_state import open_store
from annotation.ui.widgets import require
from annotation.work import sampling, validation_set, workflow

user = require("admin")
store = open_store(st.session_state)
settings = workflow.get_settings(store)

st.title("Assignment & progress")
done, needed = workflow.overall_progress(store)
st.progress(min(done / needed, 1.0) if needed else 1.0,
            text=f"Overall: {done} of {needed} annotations needed "
                 f"({settings.overlap} per output)")

left, right = st.columns(2)
with left, st.form("settings"):
    st.subheader("Overlap", anchor=False)
    overlap = st.number_input("Distinct annotators per output", 1, 20, settings.overlap)
    minutes = st.number_input("Reservation timeout (minutes)", 1, 24 * 60,
                              settings.reservation_minutes,
                              help="An item opened but not answered is offered to someone "
                                   "else after this long")
    first = st.checkbox("Disagreement first", settings.disagreement_first,
                        help="Offer outputs whose judges disagree (with each other, or with "
                             "the humans so far) first. Until the whole sample is annotated, "
                             "the annotated outputs are then not a uniform sample; the report "
                             "says so.")
    if st.form_submit_button("Save"):
        workflow.set_settings(store, user.name, overlap=int(overlap),
                              reservation_minutes=int(minutes), disagreement_first=first)
        st.rerun()
with right, st.form("sample"):
    st.subheader("Sample", anchor=False)
    total = len(workflow.annotatable_outputs(store))
    current = len(workflow.eligible_outputs(store))
    design = items.sample_design(store)
    drawn = ("no sample drawn" if design.get("mode") in ("none", "all") else
             f"design: {design.get('mode')}, seed {design.get('seed')}")
    st.caption(f"{current} of {total} annotatable outputs are in the current sample "
               f"({drawn}).")
    mode = st.radio("Design", ("all", "uniform", "stratified", "paired"), horizontal=True,
                    format_func={"all": "All", "uniform": "Uniform random",
                                 "stratified": "Stratified", "paired": "Paired tasks"}.get,
                    help="Stratified: in proportion to the strata below. Paired: the same "
                         "tasks for every generator chosen below (size = tasks).")
    size = st.number_input("Sample size", 1, max(total, 1), min(168, max(total, 1)))
    seed = st.number_input("Seed", 0, 2**31 - 1, 0)
    strata = st.multiselect("Strata (stratified)", sampling.stratum_keys(store),
                            default=["generator"])
    generators = st.multiselect("Generators (paired; none = all)",
                                sampling.generators(store))
    if st.form_submit_button("Draw"):
        try:
            sampling.draw(store, user.name, str(mode), size=int(size), seed=int(seed),
                          by=tuple(strata), generators=generators or None)
        except (ValueError, KeyError) as exc:
            st.error(str(exc.args[0] if exc.args else exc))
        else:
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
        balance = columns[3].radio("Balance on", ("expected", "human"),
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
