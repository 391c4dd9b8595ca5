"""The annotator workspace: one output at a time, keyboard first, blind.

Layout only: the controller is annotation.work.workflow.AnnotationSession; the answers are
typed into the answer panel (annotation.ui.answer_panel: keys handled in the browser, an
outbox retried until the server acknowledges each answer); images come from
annotation.ui.widgets.show_image (re-encoded from pixels, a placeholder if unreadable). No pass
answer, judge output or generator name is ever put on this page (AnnotatorItem has no field
for them, the panel gets targets by position).
"""

import streamlit as st

from annotation.ui import answer_panel, render
from annotation.ui.app_state import open_store
from annotation.ui.incidents import guarded
from annotation.ui.widget_keys import widget_key
from annotation.ui.widgets import inert, require, safe_markdown, show_image, show_input_images
from annotation.vif.readouts import readouts
from annotation.work import workflow
from annotation.work.workflow import AnnotationSession

user = require()
store = open_store(st.session_state)
session = AnnotationSession(store, user.name, st.session_state.setdefault("annotate", {}))
guidelines = store.project_info().get("guidelines")

# ------------------------------------------------------------------ first visit: guidelines
if guidelines and not session.state.get("guidelines_seen"):
    done, _ = session.progress()
    if done == 0 and not session.has_started():  # not again after a reload mid-item
        st.title("Before you start")
        with st.container(border=True):
            st.markdown(safe_markdown(guidelines))
        if st.button("I have read the guidelines: start", type="primary", shortcut="Enter"):
            session.state["guidelines_seen"] = True
            st.rerun()
        st.stop()
    session.state["guidelines_seen"] = True

def gold_feedback() -> None:
    """Training mode: after a gold item, which answers differed from the known ones."""
    feedback = session.state.pop("feedback", None)
    if not feedback:
        return
    differed = feedback["differed"]
    if not differed:
        st.success(f"Check item (task {inert(feedback['task'])}): all "
                   f"{feedback['compared']} of your answers matched the known answers.",
                   icon=":material/school:")
        return
    def shown(value: object) -> str:
        return f"{value:.3g}" if isinstance(value, float) else str(value).replace("_", " ")

    lines = [f"- {inert(str(d['text']))}: you gave **{inert(shown(d['given']))}**, the "
             f"known answer is **{inert(shown(d['gold']))}**" for d in differed]
    st.info(f"Check item (task {inert(feedback['task'])}): {len(differed)} of "
            f"{feedback['compared']} answers differed from the known answers.\n\n"
            + "\n".join(lines), icon=":material/school:")


if session.output_id is None:
    done, total = session.progress()
    gold_feedback()
    qualification = workflow.qualification(store, user.name)
    if qualification.state == "failed":
        st.title("Qualification not passed")
        st.error(f"{qualification.share:.0%} of your answers on the {qualification.done} "
                 "qualification items matched the known answers; "
                 f"{workflow.get_settings(store).qualification_pass:.0%} are needed. No "
                 "further items are offered to you until an admin resets your "
                 "qualification: please contact them.", icon=":material/block:")
        st.stop()
    st.title("All done")
    st.success(f"You have submitted {done} item(s); nothing is waiting for you right now.")
    if st.button("Review my previous item", shortcut="B", icon=":material/undo:"):
        session.back()
        st.rerun()
    st.stop()

item = session.item
done, total = session.progress()
if notice := session.state.pop("notice", None):  # a stale tab was refused: say why
    st.warning(notice, icon=":material/sync_problem:")
gold_feedback()
qualification = workflow.qualification(store, user.name)

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
    if qualification.state == "pending":
        st.caption(f"Qualification: item {qualification.done + 1} of {qualification.needed}"
                   " (real items follow once you pass)")
    elif not workflow.gold_in_use(store):  # it would not move after a gold item
        everyone, needed = workflow.overall_progress(store)
        st.progress(min(everyone / needed, 1.0) if needed else 1.0,
                    text=f"All annotators: {everyone} of {needed} annotations")
if guidelines:
    with st.sidebar.expander("Guidelines", icon=":material/menu_book:"):
        st.markdown(safe_markdown(guidelines))

view, answer_column = st.columns([4, 3], gap="medium")

# ------------------------------------------------------------------ the item
with view:
    with st.container(border=True):
        st.caption("Text instruction")
        st.text(item.instruction)
    output_area, inputs_area = st.columns([2, 1])

with inputs_area:
    show_input_images(store, item.images)

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
        if st.session_state.get("enlarge_open"):
            def close_enlarge() -> None:
                st.session_state["enlarge_open"] = False

            @st.dialog("Generated output", width="large", on_dismiss=close_enlarge)
            @guarded
            def enlarge() -> None:
                show_image(store, item.output_sha256, render.ENLARGE_SIZE, generated=True)
            enlarge()

# ------------------------------------------------------------------ questions and ratings
def on_command(command: dict) -> None:
    """A command from the answer panel (before the page runs): the controller acts on it
    once; the page opens the dialogs of F and E."""
    here = AnnotationSession(open_store(st.session_state), user.name,
                             st.session_state["annotate"])
    dialog = here.command(command)
    if dialog is not None:
        st.session_state[f"{dialog}_open"] = True


@guarded
def answers_view() -> None:
    """The answer panel (an error here leaves the header and images in place)."""
    answer_panel.show(session.panel(), person=user.name, unit=item.output_id,
                      key="annotate-panel", on_command=on_command)


with answer_column:
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
