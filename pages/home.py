"""Overview of the open project: counts, generators, judges, criteria, import log."""

import streamlit as st

from annotation.results import overview
from annotation.store.pg import redacted
from annotation.ui.app_state import open_store
from annotation.ui.widgets import inert, require, safe_markdown

require("admin")
store = open_store(st.session_state)
info = store.project_info()
counts = store.counts()

st.title(inert(info.get("name", "Empty project")))
st.caption(f"{inert(info.get('benchmark', 'no benchmark imported yet'))} · database "
           f"`{redacted(store.location)}`")

if counts["tasks"] == 0:
    st.info(
        "This project is empty. Import a bundle, a TIIF-Bench folder or a VIF-Bench release "
        "with `judge-audit import SOURCE --db " + redacted(store.location) + "`."
    )

cols = st.columns(6)
cols[0].metric("Tasks", f"{counts['tasks']:,}")
cols[1].metric("Outputs", f"{counts['outputs']:,}",
               help=f"{counts['missing_outputs']:,} missing (the generator produced nothing)")
cols[2].metric("Checklist questions", f"{counts['questions']:,}")
cols[3].metric("Judge answers", f"{counts['judgments']:,}")
cols[4].metric("Human answers", f"{counts['current_annotations']:,}",
               help=f"{counts['annotations']:,} rows including superseded history")
cols[5].metric("Annotators", f"{counts['annotators']:,}")

left, right = st.columns(2)
with left:
    st.subheader("Generators")
    st.dataframe(overview.generators_table(store), hide_index=True, width="stretch",
                 column_config={
                     "not at hand": st.column_config.NumberColumn(
                         help="judged, but the image is not in the project"),
                     "missing": st.column_config.NumberColumn(
                         help="the generator produced nothing (a refusal or failure)"),
                 })
    st.subheader("Rating criteria")
    st.dataframe(overview.criteria_table(store), hide_index=True, width="stretch")
with right:
    st.subheader("Judges")
    st.dataframe(overview.judges_table(store), hide_index=True, width="stretch")
    if info.get("guidelines"):
        st.subheader("Guidelines")
        with st.expander("Annotation guidelines of this project"):
            st.markdown(safe_markdown(info["guidelines"]))

st.subheader("Import log")
st.dataframe(overview.import_log_table(store), hide_index=True, width="stretch")
warnings = overview.import_warnings_table(store)
if not warnings.empty:
    with st.expander(f"{len(warnings):,} import warning(s)"):
        st.dataframe(warnings, hide_index=True, width="stretch")
