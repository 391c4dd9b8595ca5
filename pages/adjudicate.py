"""Adjudicate disputed answers: one disputed decision at a time, keyboard first.

Layout only: the controller is annotation.work.adjudication.AdjudicationSession. The page
shows the item (instruction, images, the question), every human answer with its note (the
names hidden or shown as the setting says; never a judge's answer), and a form: the
decision (Tab, arrow keys) and a required note; Enter in the note decides, B goes back.
"""

import streamlit as st

from annotation.accounts.auth import ADJUDICATING
from annotation.ui import render
from annotation.ui.app_state import open_store
from annotation.ui.widget_keys import widget_key
from annotation.ui.widgets import inert, require, show_image
from annotation.work import adjudication as ad

user = require(ADJUDICATING)
store = open_store(st.session_state)
settings = ad.get_settings(store)

if user.role == "admin":
    counts = ad.queue_progress(store)
    st.caption("Disputes: " + (" · ".join(
        f"{ad.KIND_TITLES[k].lower()}: {counts.get(f'{k}_decided', 0)} of "
        f"{counts[f'{k}_disputes']} decided" for k in ad.KINDS
        if f"{k}_disputes" in counts) or "none"))
    with st.expander("Adjudication settings"), st.form("adjudication-settings"):
        mode = st.radio("Which decisions go to adjudication", ad.DISPUTE_MODES,
                        index=ad.DISPUTE_MODES.index(settings.disputes), horizontal=True,
                        format_func={"ties": "Ties only (no strict majority)",
                                     "disagreements": "Any disagreement"}.get)
        names = st.toggle("Show the annotators' names to adjudicators",
                          value=settings.show_names)
        if st.form_submit_button("Save settings"):
            settings = ad.set_settings(store, user.name, disputes=mode,
                                       show_names=bool(names))
            st.session_state.pop("adjudicate", None)  # reload the open item
            st.rerun()

session = ad.AdjudicationSession(store, user.name, st.session_state.setdefault("adjudicate",
                                                                               {}))
if notice := session.state.pop("notice", None):
    st.warning(notice, icon=":material/sync_problem:")

if session.unit is None:
    done, _ = session.progress()
    st.title("Nothing to adjudicate")
    st.success(f"You have decided {done} disputed answer(s); no dispute is waiting.")
    if st.button("Review my previous decision", shortcut="B", icon=":material/undo:"):
        session.back()
        st.rerun()
    st.stop()

item = session.item
done, total = session.progress()
head, bar = st.columns([3, 2], vertical_alignment="bottom")
with head:
    st.subheader(f"{item.title} · task {inert(item.task_id)}", anchor=False)
    if session.state.get("reviewing"):
        st.caption(":orange[Reviewing a decision you already made: a new decision "
                   "supersedes it, the history keeps both.]")
with bar:
    st.progress(min(done / total, 1.0) if total else 1.0,
                text=f"Your progress: {done} of {total} disputes")

left, right = st.columns([3, 2], gap="medium")
with left:
    st.caption("Text instruction")
    st.text(item.instruction)
    if item.output_sha256:
        show_image(store, item.output_sha256, render.LARGE_SIZE, generated=True,
                   caption="The generated image")
    for node, formula, sha in item.node_images[1:]:
        if sha:
            show_image(store, sha, render.NODE_SIZE, generated=True,
                       caption=inert(f"Node {node}: {formula}"))
    if item.images:
        columns = st.columns(min(len(item.images), 4))
        for i, image in enumerate(item.images):
            with columns[i % len(columns)]:
                show_image(store, image.sha256, render.STRIP_SIZE,
                           caption=inert(image.caption), task_meta=item.task_meta)
with right:
    st.markdown(f"#### {inert(item.question)}")
    st.caption("The human answers (the judges' answers are not shown):")
    for answer in item.answers:
        with st.container(border=True):
            st.markdown(f"**{inert(answer.who)}**: {inert(answer.answer)}")
            if answer.detail:
                st.caption(inert(answer.detail))
            if answer.note:
                st.caption("Note: " + inert(answer.note))
    if item.decision is not None:
        st.info(f"Decided: {inert(dict(item.options).get(item.decision[0], item.decision[0]))}"
                f" · {inert(item.decision[1])}")

    values = [v for v, _ in item.options]
    words = dict(item.options)
    with st.form(widget_key("decide", item.unit)):
        choice = st.radio("Decision", values, format_func=words.get,
                          index=values.index(item.decision[0])
                          if item.decision and item.decision[0] in values else None)
        note = st.text_input("Note (required): why", value=item.decision[1]
                             if item.decision else "")
        decided = st.form_submit_button("Decide", type="primary", icon=":material/gavel:")
    st.caption("Keys: Tab to the decision, arrow keys to choose, Tab to the note, Enter "
               "decides; B: back to your previous decision.")
    if decided:
        if choice is None:
            session.state["notice"] = "Choose a decision first."
        else:
            session.decide(str(choice), note)
        st.rerun()
    if st.button("Back", shortcut="B", icon=":material/undo:"):
        session.back()
        st.rerun()
