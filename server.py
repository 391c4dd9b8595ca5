"""What ``judge-audit serve`` runs: Streamlit's ASGI ``App`` on ``app.py`` beside it.

``streamlit run server.py`` finds ``app`` below and serves ``app.py`` with:

* the routes that set and clear the HttpOnly session cookie (:mod:`annotation.ui.web_session`);
* the route the answer panel delivers answers by (:mod:`annotation.ui.answer_panel`);
* security headers on every response and the server's paths kept out of the websocket
  frames (:mod:`annotation.ui.served`);
* a short message with an incident id for errors (:mod:`annotation.ui.incidents`).

``streamlit run app.py`` alone serves the pages without them: nobody can sign in.
"""

import streamlit as st

from annotation.project_files import app_path
from annotation.ui import answer_panel
from annotation.ui.incidents import on_script_error
from annotation.ui.served import middleware
from annotation.ui.web_session import routes

app = st.App(app_path(), routes=routes() + answer_panel.routes(),
             middleware=middleware(str(app_path().parent)), on_script_error=on_script_error)
