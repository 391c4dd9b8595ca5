"""judge-audit: the Streamlit entry point. Layout only; the library does the work."""

import streamlit as st

st.set_page_config(page_title="judge-audit", page_icon=":material/fact_check:", layout="wide")

pages = {
    "Project": [
        st.Page("pages/home.py", title="Overview", icon=":material/home:", default=True),
    ],
    "Annotate": [
        st.Page("pages/annotate.py", title="Annotate outputs", icon=":material/edit_note:"),
        st.Page("pages/conflicts.py", title="Verify conflict labels", icon=":material/rule:"),
        st.Page("pages/trees.py", title="Review diagnostic trees", icon=":material/account_tree:"),
    ],
    "Analyze": [
        st.Page("pages/analytics.py", title="Judge validation", icon=":material/monitoring:"),
    ],
}
st.navigation(pages).run()
