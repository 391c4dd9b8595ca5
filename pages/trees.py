"""Review diagnostic trees (TRACE-Bench): where does each failure at the root originate?

Layout only: annotation.trace.trees reads the tree, its node images and the judge's passes;
annotation.work.tree_review stores the reviewer's answers and decides when the automatic
localization may be shown (after every failing instance is answered).
"""


import plotly.graph_objects as go
import streamlit as st

from annotation.trace.trees import (
    automatic_localization,
    instance_table,
    load_tree_item,
    question_passes,
    task_questions,
)
from annotation.ui import answer_panel, render
from annotation.ui.app_state import open_store
from annotation.ui.widget_keys import widget_key
from annotation.ui.widgets import inert, require, show_image
from annotation.work import tree_review as tr

user = require()
store = open_store(st.session_state)
session = tr.TreeSession(store, user.name, st.session_state.setdefault("trees", {}))
if notice := session.state.pop("notice", None):  # a stale tab was refused: say why
    st.warning(notice, icon=":material/sync_problem:")
judge = tr.judge_for(store)
if session.output_id is None or judge is None:
    done, _ = tr.personal_progress(store, user.name)
    st.title("All done" if judge else "No diagnostic trees")
    if judge is None:
        st.info("This project has no diagnostic trees with judged node outputs. Import tasks "
                "with `meta.formula` and node outputs (`meta.node`): see "
                "docs/bundle-format.md.")
    else:
        st.success(f"You have reviewed {done} tree(s); nothing is waiting for you right now.")
    if st.button("Review my previous tree", shortcut="B", icon=":material/undo:"):
        session.back()
        st.rerun()
    st.stop()

output_id = session.output_id
item = load_tree_item(store, output_id)
passes = question_passes(store, item, judge)

instances = instance_table(store, item, judge)
settings = tr.get_settings(store)
failing = tr.review_instances(store, item, judge, settings)  # with the passed sample, blind
reviews = session.reviews()
question_text = dict(task_questions(store, item.task_id)[["question_id", "text"]].itertuples(
    index=False))
revealed = tr.reveal_automatic(failing, reviews)
shown = passes if revealed else passes.iloc[0:0]  # the judge's node passes: after answering
done, total = tr.personal_progress(store, user.name)

# ------------------------------------------------------------------ header
head, bar = st.columns([3, 2], vertical_alignment="bottom")
with head:
    st.subheader(f"Diagnostic tree · task {inert(item.task_id)}", anchor=False)
    if session.state.get("reviewing"):
        st.caption(":orange[Reviewing a tree you already submitted: changes are kept as "
                   "history.]")
with bar:
    st.progress(min(done / total, 1.0) if total else 1.0,
                text=f"Your progress: {done} of {total} trees")
with st.expander("Text instruction"):
    st.text(item.instruction)

tree_col, node_col = st.columns([3, 2], gap="medium")
node_ids = [n.id for n in item.tree.nodes]
with node_col:
    selected = st.segmented_control("Node", node_ids, default=node_ids[0],
                                    key=widget_key("node", output_id)) or node_ids[0]
    node = item.tree.node(selected)
    sha = item.node_images.get(selected)
    if sha:
        show_image(store, sha, render.NODE_SIZE, generated=True)
    else:
        st.warning("No image for this node.")
    st.code(node.formula, language=None)
    if node.prompt:
        st.caption("Node prompt")
        st.text(node.prompt)
    if node.downgrades:
        st.caption("Downgraded to text: " + inert(", ".join(node.downgrades)))
    mine = shown[shown.node == selected]
    for qid in node.questions:
        row = mine[mine.question_id == qid]
        mark = ((":green-badge[pass]" if bool(row.passed.iloc[0]) else ":red-badge[fail]")
                if len(row) else ":gray-badge[–]")
        st.markdown(f"{mark} {inert(question_text.get(qid, qid))}")
    if revealed:
        st.caption(f"Passes by {inert(judge)} (the judge being audited)")
    else:
        st.caption("The judge's passes per node are shown once you have localized every "
                   "failure (blind review): judge the images yourself.")
with tree_col:
    st.graphviz_chart(tr.tree_dot(item, shown, selected), width="content")

# ------------------------------------------------------------------ the reviewer's answers
if settings.passed_share > 0:  # failing and passed instances alike: say nothing of which
    st.markdown("#### Elements to check at the root")
    st.caption("Judge each element on the root image yourself. If the root image fails it, "
               "choose the first node where it passes and a reason; if it is fine, choose "
               "'Not a failure'.")
else:
    st.markdown("#### Failures at the root")
if not failing:
    st.info("Nothing to localize in this tree.")
labels = {tr.PERSISTENT: "Persistent: fails at every node",
          tr.NOT_A_FAILURE: "Not a failure: the root image is fine"}


def save(f: tr.FailingInstance, field: str, key: str) -> None:
    session.set_field(f.key, field, st.session_state[key])


for f in failing:
    r = reviews.get(f.key)
    with st.container(border=True):
        st.markdown(f"**{inert(f.target or f.operator)}** · operator `{f.operator}`")
        left, right = st.columns([2, 1])
        options = tr.origin_options(item, instances, f)
        origin_key = widget_key("o", output_id, f.key)
        left.selectbox("First node where it passes (the failure comes from what that step "
                       "removed)", options, index=options.index(r.origin) if r and
                       r.origin in options else None, key=origin_key,
                       format_func=lambda o: labels[o] if o in labels
                       else f"{o}: {item.tree.node(o).formula}",
                       placeholder="Choose a node ...", on_change=save,
                       args=(f, "origin", origin_key))
        reason_key = widget_key("r", output_id, f.key)
        reasons = list(tr.REASONS)
        right.selectbox("Failure reason", reasons,
                        index=reasons.index(r.reason) if r and r.reason else None,
                        key=reason_key, format_func=tr.REASONS.get,
                        placeholder="Choose ...", disabled=r is None, on_change=save,
                        args=(f, "reason", reason_key))
        note_key = widget_key("n", output_id, f.key)
        st.text_input("Note (optional)", value=(r.note if r else "") or "", key=note_key,
                      disabled=r is None, on_change=save, args=(f, "note", note_key))
        served = (render.browser_image(store, sha, render.NODE_SIZE, generated=True)
                  if r is not None and sha else None)
        if served is not None and not served.available:
            st.caption("The node's image is unavailable: no box can be marked on it.")
        elif served is not None:
            with st.expander("Mark the failure on the selected node's image (box select)"):
                image = served.pil()
                fig = go.Figure(go.Image(z=image.convert("RGB")))
                fig.update_layout(dragmode="select", height=360, margin=dict(l=0, r=0, t=0, b=0))
                event = st.plotly_chart(fig, on_select="rerun", selection_mode="box",
                                        key=widget_key("b", output_id, f.key, selected))
                boxes = (event or {}).get("selection", {}).get("box", []) if event else []
                if boxes:
                    session.set_box_pixels(f.key, selected, boxes[0]["x"], boxes[0]["y"],
                                           *image.size)
                if r.box:
                    st.caption(f"Box saved on {inert(r.box['node'])}: "
                               + ", ".join(f"{v:.2f}" for v in r.box["box"]))

# ------------------------------------------------------------------ after answering
if revealed and failing:
    st.markdown("#### Automatic localization")
    for row in tr.compare_with_automatic(automatic_localization(store, item, judge), failing,
                                         reviews):
        same = (":green-badge[same as yours]" if row["same"]
                else f":orange-badge[yours: {inert(row['yours'])}]")
        st.markdown(f"**{inert(row['element'])}**: {inert(row['category'])} "
                    f"(first pass at {inert(row['automatic'])}) · {same}")
    st.markdown("#### Review table")
    st.dataframe(tr.review_table(item, failing, reviews, instances), hide_index=True,
                 width="stretch")

complete = tr.reviews_complete(failing, reviews)


def on_command(command: dict) -> None:
    """A command from the answer panel (before the page runs): the controller acts on it."""
    tr.TreeSession(open_store(st.session_state), user.name,
                   st.session_state["trees"]).command(command)


answer_panel.show(session.panel(complete), person=user.name, unit=output_id, key="tree-panel",
                  on_command=on_command)
