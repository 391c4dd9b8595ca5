"""Admin: import a bundle (.zip upload or a folder on the server), or a TIIF/VIF folder."""

import tempfile
from pathlib import Path

import streamlit as st

from annotation.formats.importers import FORMATS, import_path
from annotation.records import ImportRefused
from annotation.ui.app_state import open_store
from annotation.ui.widgets import require

user = require("admin")
store = open_store(st.session_state)

st.title("Import")
st.caption("Everything is checked first; on any error nothing is written. Importing rows that "
           "are already stored identically is harmless. The same as `judge-audit import`.")

upload_tab, path_tab = st.tabs(["Upload a bundle (.zip)", "A folder on the server"])
with upload_tab:
    uploaded = st.file_uploader("Bundle .zip", type=["zip"])
    go_upload = st.button("Import the upload", type="primary", disabled=uploaded is None)
with path_tab:
    folder = st.text_input("Path on the server",
                           placeholder="/data/TIIF-Bench or /data/vif-release or a bundle")
    fmt = st.selectbox("Format", [None, *FORMATS],
                       format_func=lambda f: "detect automatically" if f is None else f)
    go_path = st.button("Import the folder", type="primary", disabled=not folder)


def run(source: Path, fmt: str | None = None) -> None:
    with st.spinner("Importing ..."):
        try:
            summary = import_path(store, source, fmt=fmt, user=user.name)
        except ImportRefused as refused:
            st.error(f"Import refused, nothing was written ({len(refused.problems)} problem(s)):")
            st.code(refused.report(), language=None, wrap_lines=True)  # long paths
            return
    st.success(f"Import #{summary.import_id} done.")
    st.code(summary.text(max_warnings=50), language=None, wrap_lines=True)


if go_upload and uploaded is not None:
    with tempfile.TemporaryDirectory(prefix="judge-audit-upload-") as tmp:
        archive = Path(tmp) / Path(uploaded.name).name
        archive.write_bytes(uploaded.getbuffer())
        run(archive, "bundle")
if go_path and folder:
    run(Path(folder).expanduser(), fmt)
