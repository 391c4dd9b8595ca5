"""Compare outputs: pairwise preferences and rankings (issue #17), keyboard first, blind.

Layout only: the controllers are annotation.work.compare.PairSession and RankingSession (one
workflow engine, queue kinds ``pairs`` and ``rankings``); answers are typed into the answer
panel (annotation.ui.answer_panel: keys handled in the browser, an outbox retried until the
server acknowledges each one). A pair shows its two outputs as "Left" and "Right" (which one
is output A is drawn per annotator and pair, and never sent to the browser); a ranking shows
its outputs as "Output 1".."Output k" in a per-annotator order. Images come from
annotation.ui.widgets.show_image (re-encoded, neutral); no output id, generator name, judge
answer or other annotator's answer is put on this page.
"""

import streamlit as st

from annotation.ui import answer_panel, render
from annotation.ui.app_state import open_store
from annotation.ui.incidents import guarded
from annotation.ui.widgets import inert, require, safe_markdown, show_image, show_input_images
from annotation.work import compare

user = require()
store = open_store(st.session_state)
state = st.session_state.setdefault("compare", {})
session = compare.session_for(store, user.name, state)

if session is None:
    pairs = compare.PairSession(store, user.name, state["pairs"])
    rankings = compare.RankingSession(store, user.name, state["rankings"])
    done_p, _ = pairs.progress()
    done_r, _ = rankings.progress()
    st.title("All done" if compare.has_items(store) else "Nothing to compare")
    if compare.has_items(store):
        st.success(f"You have answered {done_p} pair(s) and {done_r} ranking(s); nothing is "
                   "waiting for you right now.")
    else:
        st.info("This project has no pairs or rankings: see pairs.jsonl and rankings.jsonl "
                "in docs/bundle-format.md.")
    left, right = st.columns(2)
    if done_p and left.button("Review my previous pair", icon=":material/undo:"):
        compare.review_previous(store, user.name, state, "pairs")
        st.rerun()
    if done_r and right.button("Review my previous ranking", icon=":material/undo:"):
        compare.review_previous(store, user.name, state, "rankings")
        st.rerun()
    st.stop()

guidelines = store.project_info().get("guidelines")
if guidelines:
    with st.sidebar.expander("Guidelines", icon=":material/menu_book:"):
        st.markdown(safe_markdown(guidelines))
if notice := session.state.pop("notice", None):  # a stale tab was refused: say why
    st.warning(notice, icon=":material/sync_problem:")
is_pair = isinstance(session, compare.PairSession)
view = session.view()
inputs = view.inputs
done, total = session.progress()

# ------------------------------------------------------------------ header
head, bar = st.columns([3, 2], vertical_alignment="bottom")
with head:
    st.subheader(("Which is better?" if is_pair else "Rank the outputs")
                 + f" · task {inert(inputs.task_id)}", anchor=False)
    if session.state.get("reviewing"):
        st.caption(f":orange[Reviewing a {session.NOUN} you already submitted: changes are "
                   "kept as history.]")
with bar:
    st.progress(min(done / total, 1.0) if total else 1.0,
                text=f"Your progress: {done} of {total} {session.NOUN}s")

main, answer_column = st.columns([5, 2], gap="medium")

# ------------------------------------------------------------------ the instruction, once
with main:
    with st.container(border=True):
        st.caption("Text instruction")
        st.text(inputs.instruction)

    # -------------------------------------------------------------- the outputs
    if isinstance(view, compare.PairView):
        for column, sha, label in zip(st.columns(2, gap="medium"), (view.left, view.right),
                                      ("Left", "Right"), strict=True):
            with column:
                st.markdown(f"**{label}**")
                show_image(store, sha, render.LARGE_SIZE, generated=True)
    else:
        per_row = 3 if len(view.images) > 4 else max(2, len(view.images))
        for start in range(0, len(view.images), per_row):
            row = st.columns(per_row, gap="small")
            for i, sha in enumerate(view.images[start:start + per_row]):
                with row[i]:
                    st.markdown(f"**Output {start + i + 1}**")
                    show_image(store, sha, render.NODE_SIZE, generated=True)


# ------------------------------------------------------------------ the answer panel
def on_command(command: dict) -> None:
    """A command from the answer panel (before the page runs): the controller acts on it."""
    here = compare.session_for(open_store(st.session_state), user.name,
                               st.session_state["compare"])
    if here is not None:
        here.command(command)


@guarded
def answers_view() -> None:
    """The answer panel (an error here leaves the images in place)."""
    assert session is not None and session.unit is not None
    # the kind in the token: a pair and a ranking of the same id are different items
    answer_panel.show(session.panel(), person=user.name,
                      unit=f"{session.router.kind.name}:{session.unit}",
                      key="pair-panel" if is_pair else "ranking-panel",
                      on_command=on_command)


with answer_column:
    answers_view()
    st.caption("A = left better · B = right better · T = both good · X = both bad · "
               "Enter submits · Backspace goes back" if is_pair else
               "Give each output a place with a digit (1 = best; the same digit for a tie); "
               "J / K move · Enter submits · Backspace goes back")
    # the input images beside the outputs (as on Annotate outputs), not above them
    show_input_images(store, inputs.images)
