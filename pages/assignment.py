"""Admin: overlap, sample, gold items and qualification, progress per annotator (with gold
accuracy and speed flags) and generator, flags, accounts."""

import pandas as pd
import streamlit as st

from annotation.accounts import auth
from annotation.results import planning
from annotation.results.analytics import data_stamp
from annotation.results.study import StudyData, load_study
from annotation.store import Store, items
from annotation.ui.app_state import open_store
from annotation.ui.widgets import require
from annotation.work import compare, gold, sampling, validation_set, workflow

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

with st.expander("Gold items, qualification and speed flags",
                 expanded=workflow.gold_in_use(store)):
    st.caption("Gold items are outputs with known answers, mixed into every annotator's "
               "queue without being shown as such; they are kept out of every judge-vs-human "
               "and agreement table (see docs/gold.md). Import many with "
               "`judge-audit gold import --db DB FILE`.")
    with st.form("gold_settings"):
        cols = st.columns(4)
        every = cols[0].number_input("One gold item in every", 0, 1000, settings.gold_every,
                                     help="0: no gold items mixed in; at least 2 otherwise")
        feedback = cols[1].radio("Feedback", gold.FEEDBACK_MODES,
                                 index=gold.FEEDBACK_MODES.index(settings.gold_feedback),
                                 format_func={"test": "Test (silent)",
                                              "training": "Training (show differences)"}.get)
        qual_n = cols[2].number_input("Qualification items", 0, 1000,
                                      settings.qualification_items,
                                      help="Gold items before any real item (0: none)")
        qual_pass = cols[3].number_input("Pass share", 0.0, 1.0,
                                         float(settings.qualification_pass), step=0.05)
        row = st.columns(3)
        tolerance = row[0].number_input("Score tolerance (points)", 0.0, 100.0,
                                         float(settings.gold_tolerance), step=0.5)
        fast_share = row[1].number_input("Fast: below this share of own median", 0.0, 1.0,
                                          float(settings.fast_share), step=0.05)
        floor = row[2].number_input("Fast: below seconds per question", 0.0, 600.0,
                                     float(settings.fast_floor_seconds), step=0.5)
        if st.form_submit_button("Save gold settings"):
            try:
                workflow.set_settings(
                    store, user.name, gold_every=int(every), gold_feedback=str(feedback),
                    qualification_items=int(qual_n), qualification_pass=float(qual_pass),
                    gold_tolerance=float(tolerance), fast_share=float(fast_share),
                    fast_floor_seconds=float(floor))
            except ValueError as exc:
                st.error(str(exc))
            else:
                st.rerun()

    st.markdown("**Mark an output as gold**")
    outputs = list(workflow.annotatable_outputs(store).output_id)
    chosen = st.selectbox("Output", outputs, index=None, placeholder="Pick an output ...")
    if chosen is not None:
        item = workflow.load_item(store, chosen)
        start = st.radio("Start from", ("human", "blank"), horizontal=True,
                         format_func={"human": "the current human majority / mean",
                                      "blank": "nothing (type the answers)"}.get)
        majority, mean = gold.human_reference(store, chosen) if start == "human" else ({}, {})
        with st.form("gold_mark"):
            options = [None, *gold.ANSWERS]
            typed_answers = {q.question_id: st.selectbox(
                q.text, options, index=options.index(majority.get(q.question_id)),
                key=f"gold-q-{chosen}-{q.question_id}-{start}")
                for q in item.questions}
            typed_scores = {c.name: st.number_input(
                c.label, c.min, c.max, value=mean.get(c.name), step=c.step or 0.5,
                key=f"gold-c-{chosen}-{c.name}-{start}") for c in item.criteria}
            note = st.text_input("Note (optional)")
            if st.form_submit_button("Save as gold", type="primary"):
                try:
                    n = gold.mark(store, user.name, chosen, typed_answers, typed_scores,
                                  source="majority" if start == "human" else "typed",
                                  note=note or None)
                except gold.GoldFileError as exc:
                    st.error(str(exc))
                else:
                    st.success(f"{n} gold answer(s) written for {chosen}.")

    current = gold.gold_table(store)
    if current.empty:
        st.caption("No gold items yet.")
    else:
        st.dataframe(current, hide_index=True, width="stretch")
        withdraw = st.selectbox("Withdraw the gold answers of", list(current.output_id),
                                index=None, placeholder="Pick a gold item ...")
        if withdraw is not None and st.button("Withdraw (kept in the history)"):
            gold.unmark(store, user.name, withdraw)
            st.rerun()

    st.markdown("**Gold accuracy and qualification**")
    accuracy = workflow.gold_accuracy_df(store)
    st.dataframe(accuracy, hide_index=True, width="stretch")
    failed = list(accuracy[accuracy.qualification == "failed"].annotator)
    if failed:
        with st.form("gold_reset"):
            who = st.selectbox("Failed the qualification", failed)
            why = st.text_input("Note (kept in the audit log)")
            if st.form_submit_button("Reset: admit to real items"):
                gold.reset_qualification(store, user.name, str(who), why or None)
                st.rerun()

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
            try:
                plan = planning.plan_or_assume(study, str(measure), float(target),
                                               float(assumed))
            except ValueError as exc:
                st.error(str(exc))
            else:
                if plan.empty:
                    st.info("Nothing to plan from yet: annotate a pilot first.")
                else:
                    st.dataframe(plan.drop(columns=["target_width"]), hide_index=True,
                                 width="stretch")

if compare.has_items(store):  # pairs and rankings (issue #17): the Compare outputs page
    st.subheader("Pairs and rankings", anchor=False)
    compare_columns = st.columns(2)
    for column, router, noun in ((compare_columns[0], compare.PAIRS, "pair"),
                                 (compare_columns[1], compare.RANKINGS, "ranking")):
        kind_settings = router.settings(store)
        got, wanted = router.overall_progress(store)
        with column, st.form(f"{router.kind.name}-settings"):
            st.progress(min(got / wanted, 1.0) if wanted else 1.0,
                        text=f"{noun.capitalize()}s: {got} of {wanted} answers needed "
                             f"({kind_settings.overlap} per {noun})")
            kind_overlap = st.number_input(f"Distinct annotators per {noun}", 1, 20,
                                           kind_settings.overlap)
            kind_minutes = st.number_input("Reservation timeout (minutes)", 1, 24 * 60,
                                           kind_settings.reservation_minutes,
                                           key=f"{router.kind.name}-minutes")
            if st.form_submit_button("Save"):
                router.set_settings(store, user.name, overlap=int(kind_overlap),
                                    reservation_minutes=int(kind_minutes))
                st.rerun()

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
