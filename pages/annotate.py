"""The annotator workspace: one output at a time, keyboard first, blind.

Layout only: the controller is annotation.work.workflow.AnnotationSession; images come from
annotation.ui.widgets.show_image (re-encoded from pixels, a placeholder if unreadable). No pass
answer, judge output or generator name is ever put on this page (AnnotatorItem has no field
for them).
"""

import streamlit as st

from annotation.ui import render
from annotation.ui.app_state import open_store
from annotation.ui.incidents import guarded
from annotation.ui.widget_keys import widget_key
from annotation.ui.widgets import inert, require, safe_markdown, show_image
from annotation.vif.readouts import readouts
from annotation.work import workflow
from annotation.work.checklist import group_questions
from annotation.work.workflow import AnnotationSession

ANSWER_TEXT = {"yes": "Yes", "no": "No", "cant_tell": "Can't tell"}

user = require()
store = open_store(st.session_state)
session = AnnotationSession(store, user.name, st.session_state.setdefault("annotate", {}))
guidelines = store.project_info().get("guidelines")

# ------------------------------------------------------------------ first visit: guidelines
if guidelines and not session.state.get("guidelines_seen"):
    done, _ = session.progress()
    if done == 0:
        st.title("Before you start")
        with st.container(border=True):
            st.markdown(safe_markdown(guidelines))
        if st.button("I have read the guidelines: start", type="primary", shortcut="Enter"):
            session.state["guidelines_seen"] = True
            st.rerun()
        st.stop()
    session.state["guidelines_seen"] = True

if session.output_id is None:
    done, total = session.progress()
    st.title("All done")
    st.success(f"You have submitted {done} item(s); nothing is waiting for you right now.")
    if st.button("Review my previous item", shortcut="B", icon=":material/undo:"):
        session.back()
        st.rerun()
    st.stop()

item = session.item
shown_output = item.output_id  # what this page shows (the fragment checks it is still so)
done, total = session.progress()
if notice := session.state.pop("notice", None):  # a stale tab was refused: say why
    st.warning(notice, icon=":material/sync_problem:")

# ------------------------------------------------------------------ header
head, bar = st.columns([3, 2], vertical_alignment="bottom")
with head:
    st.subheader(f"Task {inert(item.task_id)}", anchor=False)
    if session.state.get("reviewing"):
        st.caption(":orange[Reviewing an item you already submitted: changes are kept as "
                   "history.]")
with bar:
    st.progress(min(done / total, 1.0) if total else 1.0,
                text=f"Your progress: {done} of {total} items")
    everyone, needed = workflow.overall_progress(store)
    st.progress(min(everyone / needed, 1.0) if needed else 1.0,
                text=f"All annotators: {everyone} of {needed} annotations")
if guidelines:
    with st.sidebar.expander("Guidelines", icon=":material/menu_book:"):
        st.markdown(safe_markdown(guidelines))

view, answer_panel = st.columns([4, 3], gap="medium")

# ------------------------------------------------------------------ the item
with view:
    with st.container(border=True):
        st.caption("Text instruction")
        st.text(item.instruction)
    output_area, inputs_area = st.columns([2, 1])

with inputs_area:
    for role, title in (("reference", "Reference images"),
                        ("visual_instruction", "Visual instructions")):
        group = [im for im in item.images if im.role == role]
        if not group:
            continue
        st.caption(title)
        grid = st.columns(2)
        for i, image in enumerate(group):
            with grid[i % 2]:
                show_image(store, image.sha256, render.STRIP_SIZE,
                           caption=inert(image.short_caption))

    words = readouts(item.task_meta)
    if words:
        with st.expander("Visual instructions in words"):
            for r in words:
                st.caption(" · ".join(inert(p) for p in (r["kind"], r.get("subject")) if p))
                st.text(f"{r['dense']}\n{r['medium']}\n{r['sparse']}")

with output_area:
    st.caption("Generated output")
    if item.output_sha256 is None:
        st.warning("The image of this output is not in the project: it cannot be annotated. "
                   "Flag it (F) so an admin can remove it from the sample.")
    else:
        shapes = render.overlay_layers(item.task_meta)
        show_guides = bool(shapes) and st.session_state.get("guides", False)
        compare_key = widget_key("compare", item.output_id)
        compare = st.session_state.get(compare_key)
        output_col, other_col = st.columns(2) if compare is not None else (st.container(), None)
        with output_col:
            show_image(store, item.output_sha256, render.LARGE_SIZE, generated=True,
                       task_meta=item.task_meta if show_guides else None)
        if other_col is not None:
            chosen = next(im for im in item.images if im.index == compare)
            with other_col:
                show_image(store, chosen.sha256, render.LARGE_SIZE,
                           caption=inert(chosen.caption))
        if shapes:
            st.toggle("Layout guides", key="guides",
                      help="Draw the instructed boxes and arrows, semi-transparent, over the "
                           "output")
        st.selectbox(
            "Compare with", [None] + [im.index for im in item.images],
            key=compare_key, label_visibility="collapsed",
            format_func=lambda i: "Compare side by side with an input ..." if i is None
            else f"Compare with Image_{i}")
        if st.button("Enlarge", icon=":material/zoom_in:", shortcut="E"):
            @st.dialog("Generated output", width="large")
            @guarded
            def enlarge() -> None:
                show_image(store, item.output_sha256, render.ENLARGE_SIZE, generated=True)
            enlarge()

# ------------------------------------------------------------------ questions and ratings
@st.fragment
@guarded
def answers_view() -> None:
    """The answer panel. A fragment: an answer reruns only this panel, not the images."""
    user = require()  # every rerun of the panel checks the session again
    session = AnnotationSession(store, user.name, st.session_state["annotate"])
    if session.state.get("output_id") != shown_output:  # moved on: redraw the whole page
        st.rerun(scope="app")
    if notice := session.state.pop("notice", None):
        st.warning(notice, icon=":material/sync_problem:")
    item, mine, gate = session.item, session.answers(), session.applicable()
    targets, current = session.targets(), session.current
    if current is not None and current.is_question:
        question = next(q for q in item.questions if q.question_id == current.key)
        with st.container(border=True):
            heading = " · ".join(p for p in (question.operator, question.target) if p)
            if heading:
                st.caption(inert(heading))
            st.markdown(f"**{inert(question.text)}**")
            given = mine.answers.get(question.question_id)
            if given:
                st.caption(f"Your answer: {ANSWER_TEXT[given]}")
            row = st.columns([1, 1, 1.5], gap="xsmall")
            for col, (value, label, key) in zip(row, (("yes", "Yes", "Y"), ("no", "No", "N"),
                                                      ("cant_tell", "Can't tell", "U"))):
                col.button(label, shortcut=key, width="stretch", on_click=session.answer,
                           args=(value,), type="primary" if given == value else "secondary")
    elif current is not None:
        crit = next(c for c in item.criteria if c.name == current.key)
        with st.container(border=True):
            st.caption(f"Rating {crit.min:g}-{crit.max:g}")
            st.markdown(f"**{inert(crit.label)}**")
            given = mine.scores.get(crit.name)
            if given is not None:
                st.caption(f"Your score: {given:g}")
            values = list(range(int(crit.min), int(crit.max) + 1))
            per_row = 5 if len(values) > 5 else len(values)  # room for the key hint
            for start in range(0, len(values), per_row):
                row = st.columns(per_row, gap="xxsmall")
                for value, col in zip(values[start:start + per_row], row):
                    key = "0" if value == 10 else str(value)
                    usable = len(values) <= 10 and 0 <= value <= 10
                    col.button(str(value), shortcut=key if usable else None, width="stretch",
                               type="primary" if given == value else "secondary",
                               key=f"score-{value}", on_click=session.score,
                               args=(float(value),))
            if crit.rubric:
                with st.expander("Rubric", expanded=True):
                    st.markdown(safe_markdown(crit.rubric))

    nav = st.columns(2)
    nav[0].button("Previous", shortcut="K", icon=":material/arrow_upward:", width="stretch",
                  on_click=session.move, args=(-1,))
    nav[1].button("Next", shortcut="J", icon=":material/arrow_downward:", width="stretch",
                  on_click=session.move, args=(1,))

    st.caption("Checklist")
    index = {t.key: i for i, t in enumerate(targets)}
    for heading, questions in group_questions(item.questions):
        if heading:
            st.markdown(f":gray[{inert(heading)}]")
        for q in questions:
            i = index[q.question_id]
            given = mine.answers.get(q.question_id)
            here = i == session.cursor
            text = inert(q.text)
            if not gate[q.question_id]:
                st.markdown(f":gray[~~{text}~~ (not applicable)]")
                continue
            key = widget_key("q", item.output_id, q.question_id, given)
            st.segmented_control(  # the question is the control's label: one element each
                f"**▶ {text}**" if here else text, ["yes", "no", "cant_tell"], default=given,
                key=key, format_func=ANSWER_TEXT.get,
                on_change=lambda k=key, qid=q.question_id: session.answer_question(
                    qid, st.session_state[k]) if st.session_state[k] else None)
    if item.criteria:
        st.caption("Ratings")
        for c in item.criteria:
            given = mine.scores.get(c.name)
            here = index[c.name] == session.cursor
            score = f"{given:g}" if given is not None else "–"
            label = f"**▶ {inert(c.label)}**" if here else inert(c.label)
            st.button(f"{label} · {score}",
                      key=widget_key("c", item.output_id, c.name), type="tertiary",
                      icon=":material/star:" if given is not None
                      else ":material/radio_button_unchecked:",
                      on_click=session.go_to, args=(index[c.name],))

    complete = session.complete()
    actions = st.columns([2, 1, 1])
    # these change the item (or open a dialog): they rerun the whole page
    if actions[0].button("Submit item", shortcut="Enter", type="primary", disabled=not complete,
                         icon=":material/done_all:", width="stretch"):
        session.submit()
        st.rerun(scope="app")
    if actions[1].button("Back", shortcut="B", icon=":material/undo:", width="stretch",
                         help="Reopen the item you submitted before this one"):
        session.back()
        st.rerun(scope="app")
    if actions[2].button("Flag", shortcut="F", icon=":material/flag:", width="stretch"):
        st.session_state["flag_open"] = True
        st.rerun(scope="app")
    if not complete:
        st.caption(f"{len(session.remaining())} answer(s) left before you can submit.")


with answer_panel:
    answers_view()
    if st.session_state.get("flag_open"):
        def close_flag() -> None:
            st.session_state["flag_open"] = False

        @st.dialog("Flag this item", on_dismiss=close_flag)
        @guarded
        def flag_dialog() -> None:
            reason = st.radio("Reason", workflow.FLAG_REASONS,
                              format_func=lambda r: r.replace("_", " ").capitalize())
            note = st.text_area("Note (optional)")
            if st.button("Flag", type="primary", key="flag-confirm"):
                session.flag(reason, note or None)
                st.session_state["flag_open"] = False
                st.session_state["flagged"] = True
                st.rerun()
        flag_dialog()
    if st.session_state.pop("flagged", False):
        st.toast("Flag recorded. An admin will look at it.")
