"""What ``judge-audit serve`` runs: Streamlit's ``st.App`` on ``app.py`` beside it, plus the
routes that set and clear the session cookie (``annotation/web_session.py``).

``streamlit run server.py`` finds ``app`` and serves it with the pages of ``app.py``.
``streamlit run app.py`` alone serves the pages without those routes: nobody can sign in.
"""

import streamlit as st

from annotation.project_files import app_path
from annotation.web_session import routes

app = st.App(app_path(), routes=routes())
