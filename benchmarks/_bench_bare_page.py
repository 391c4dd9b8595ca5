"""The bare page of benchmarks/annotate_bench.py (real-server mode): run by ``streamlit run``.

The same 14 thumbnails as the annotate page (from the same cache, through
:func:`annotation.ui.render.thumbnail`), the instruction text and one button with the "Y"
shortcut whose callback writes one answer through :func:`annotation.work.workflow.give_answer`
(the call the annotate page makes, with a reservation renewal and active time in the same
transaction), alternately "yes" and "no" so that every press writes one row. Nothing else:
no account check, no navigation, no fragment.

Reads the project from ``JUDGE_AUDIT_DB`` and the page (JSON: instruction, images, output,
annotator, question) from ``JUDGE_AUDIT_BENCH_PAGE``.
"""

import json
import os
import time
from pathlib import Path

import streamlit as st

from annotation.ui import render
from annotation.ui.app_state import open_store
from annotation.work import workflow

st.set_page_config(page_title="bare page", layout="wide")
PAGE = json.loads(Path(os.environ["JUDGE_AUDIT_BENCH_PAGE"]).read_text())
store = open_store(st.session_state)
state = st.session_state.setdefault("bench", {"presses": 0})
if "visit" not in state:
    state["visit"] = workflow.start_visit(store, PAGE["annotator"], PAGE["output"])
    state["last"] = time.monotonic()


def answer() -> None:
    now = time.monotonic()
    workflow.give_answer(store, PAGE["annotator"], PAGE["output"],
                         question_id=PAGE["question"],
                         answer=("yes", "no")[state["presses"] % 2],
                         active=(state["visit"], workflow.active_increment(state["last"], now)))
    state["last"] = now
    state["presses"] += 1


view, panel = st.columns([3, 2], gap="large")
with view:
    st.text(PAGE["instruction"])
    for group in (PAGE["references"], PAGE["visual_instructions"]):
        columns = st.columns(7)
        for i, (sha, caption) in enumerate(group):
            with columns[i % 7]:
                st.image(str(render.thumbnail(store, sha, 256)), caption=caption, width="stretch")
    st.image(str(render.thumbnail(store, PAGE["output_sha256"], 1024)), width="content")
with panel:
    st.button("Yes", shortcut="Y", on_click=answer)
    st.caption(f"{state['presses']} answer(s) written")
