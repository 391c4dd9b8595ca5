"""The app as ``judge-audit serve`` runs it: ``app.py`` in Streamlit's ASGI ``App``.

``streamlit run server.py`` finds ``app`` below and serves ``app.py`` with security
headers on every response, the server's paths kept out of the websocket frames and a short
message with an incident id for errors (:mod:`annotation.served`,
:mod:`annotation.incidents`). ``streamlit run app.py`` still works, without them.
"""

from pathlib import Path

from streamlit.starlette import App

from annotation.incidents import on_script_error
from annotation.served import middleware

HERE = Path(__file__).resolve().parent

app = App(HERE / "app.py", middleware=middleware(str(HERE)), on_script_error=on_script_error)
