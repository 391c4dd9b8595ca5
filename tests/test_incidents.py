"""Issue #12, item 2 (and the command line of item 5): no traceback or server path reaches
a user; ``judge-audit serve`` launches Streamlit locked down.

* The real app (``app.py`` through AppTest, signed in as an annotator, on the demo
  project) with a library call monkeypatched to raise an error whose message holds a
  server path: the page shows "Something went wrong (incident XXXXXXXX)" and no path, no
  exception element; the log (caplog) has the incident id with the traceback. The same
  inside the answer panel (a fragment): the rest of the page still renders.
* ``st.stop()`` and ``st.rerun()`` pass through the guard.
* The argv ``judge-audit serve`` executes (``os.execve`` captured): 127.0.0.1 unless
  ``--host``; ``client.showErrorDetails=none``, XSRF and CORS on, an upload limit, no
  data export, no static folder, no agent API; every option exists in this Streamlit.
* The server's websocket guard: ``NewSession.main_script_path`` is replaced, developer
  requests (``load_git_info``...) are dropped. (In a real browser: ``tests/test_served.py``.)
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from annotation.cli import MAX_UPLOAD_MB, main
from annotation.ui import incidents
from annotation.work import workflow
from tests.helpers.apptest import signed_in
from tests.helpers.bundles import ensure_account
from tests.test_hostile_input import rendered_strings

ROOT = Path(__file__).resolve().parents[1]
FAKE_PATH = "/srv/secret-server-folder/study_media/ab/abcdef.png"
INCIDENT = re.compile(r"Something went wrong \(incident ([0-9A-F]{8})\)")


@pytest.fixture
def demo_db(tmp_path, monkeypatch, engine_demo) -> str:
    db = engine_demo
    ensure_account(db, "incident-annotator")
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    return db


def app_as_annotator() -> AppTest:
    return signed_in("app.py", "incident-annotator", guidelines_seen=True)


def all_strings(at: AppTest) -> str:
    return "\n".join(text for _, _, text in rendered_strings(at))


def raise_with_path(*args, **kwargs):
    raise FileNotFoundError(2, "No such file or directory", FAKE_PATH)


def assert_incident(at: AppTest, caplog) -> str:
    assert not at.exception  # no exception element: no type, message or traceback
    shown = [e.value for e in at.error if INCIDENT.search(e.value)]
    assert len(shown) == 1, [e.value for e in at.error]
    incident = INCIDENT.search(shown[0]).group(1)
    text = all_strings(at)
    assert FAKE_PATH not in text and "secret-server-folder" not in text
    assert str(ROOT) not in text and "Traceback" not in text and "FileNotFoundError" not in text
    records = [r for r in caplog.records if r.name == "judge_audit.incidents"
               and incident in r.getMessage()]
    assert len(records) == 1 and records[0].levelno == logging.ERROR
    logged = logging.Formatter().format(records[0])
    assert "Traceback" in logged and FAKE_PATH in logged and "FileNotFoundError" in logged
    return incident


def test_an_error_on_the_page_shows_an_incident_id_and_logs_the_traceback(demo_db,
                                                                         monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="judge_audit.incidents")
    monkeypatch.setattr(workflow, "overall_progress", raise_with_path)
    at = app_as_annotator().run()
    assert_incident(at, caplog)
    # the menu (drawn before the page) is still there: the user can go elsewhere
    assert at.sidebar.get("page_link")


def test_an_error_in_the_answer_panel_keeps_the_rest_of_the_page(demo_db, monkeypatch,
                                                                caplog):
    caplog.set_level(logging.INFO, logger="judge_audit.incidents")
    from annotation.work.workflow import AnnotationSession

    monkeypatch.setattr(AnnotationSession, "panel", raise_with_path)  # the panel's only
    at = app_as_annotator().run()
    assert_incident(at, caplog)
    assert at.subheader[0].value.startswith("Task ")  # the header and images rendered


def test_without_the_guard_the_same_error_shows_the_path(demo_db, monkeypatch):
    """What the guard protects from: Streamlit's own exception element carries the path."""
    monkeypatch.setattr(workflow, "overall_progress", raise_with_path)
    monkeypatch.setattr(incidents, "run_guarded", lambda body: body())
    at = app_as_annotator().run()
    assert at.exception and FAKE_PATH in at.exception[0].value


def test_stop_and_rerun_pass_through_the_guard():
    def script() -> None:
        import streamlit as st

        from annotation.ui.incidents import run_guarded

        def body() -> None:
            runs = st.session_state.setdefault("runs", 0)
            st.session_state["runs"] = runs + 1
            if runs == 0:
                st.rerun()
            st.write("after the rerun")
            st.stop()
            st.write("never")  # pragma: no cover

        run_guarded(body)
        st.write("after the page")  # st.stop ends the whole script

    at = AppTest.from_function(script).run()
    assert not at.exception and not at.error
    assert at.session_state["runs"] == 2
    assert [m.value for m in at.markdown] == ["after the rerun"]


def test_on_script_error_shows_the_message_and_suppresses_streamlits(caplog):
    caplog.set_level(logging.INFO, logger="judge_audit.incidents")

    def script() -> None:
        from annotation.ui.incidents import on_script_error

        try:
            raise PermissionError(13, "Permission denied", "/srv/x/y.db")
        except PermissionError as exc:
            assert on_script_error(exc) is True

    at = AppTest.from_function(script).run()
    assert not at.exception and INCIDENT.search(at.error[0].value)
    assert "/srv/x/y.db" not in all_strings(at)
    assert any("/srv/x/y.db" in logging.Formatter().format(r) for r in caplog.records)


# ------------------------------------------------------------------ the serve command line
def served_argv(monkeypatch, *args: str) -> tuple[list[str], dict[str, str]]:
    import os

    seen = {}

    def execve(path, argv, env):
        seen.update(path=path, argv=list(argv), env=dict(env))
        raise SystemExit(0)

    monkeypatch.setattr(os, "execve", execve)
    with pytest.raises(SystemExit):
        main(["serve", *args])
    return seen["argv"], seen["env"]


def options(argv: list[str]) -> dict[str, str]:
    flags = argv[argv.index("run") + 2:]
    assert len(flags) % 2 == 0
    return {flags[i].removeprefix("--"): flags[i + 1] for i in range(0, len(flags), 2)}


def test_serve_runs_the_locked_down_launcher_on_loopback(demo_db, monkeypatch, capsys):
    argv, env = served_argv(monkeypatch, "--db", str(demo_db), "--port", "8599")
    assert argv[argv.index("run") + 1] == str(ROOT / "server.py")
    given = options(argv)
    assert given["server.address"] == "127.0.0.1" and given["server.port"] == "8599"
    assert given["client.showErrorDetails"] == "none"
    assert given["server.enableXsrfProtection"] == "true"
    assert given["server.enableCORS"] == "true"
    assert given["server.maxUploadSize"] == str(MAX_UPLOAD_MB)
    assert given["client.disableDataExport"] == "true"
    assert given["server.enableStaticServing"] == "false"
    assert given["server.enableAgentApi"] == "false"
    assert given["client.toolbarMode"] == "minimal"
    # a SQLite path is made absolute; a PostgreSQL URL is passed on as given
    assert env["JUDGE_AUDIT_DB"] == (demo_db if demo_db.startswith("postgresql:")
                                     else str(Path(demo_db).resolve()))
    assert "http://127.0.0.1:8599" in capsys.readouterr().err
    # every option is one this Streamlit knows, with an allowed value
    from streamlit import config

    known = config._config_options_template
    assert set(given) <= set(known), set(given) - set(known)
    assert "none" in str(known["client.showErrorDetails"].description)


def test_serve_host_is_passed_and_warned_about(demo_db, monkeypatch, capsys):
    argv, _ = served_argv(monkeypatch, "--db", str(demo_db), "--host", "0.0.0.0")
    assert options(argv)["server.address"] == "0.0.0.0"
    assert "behind a reverse proxy with TLS" in capsys.readouterr().err


def test_the_launcher_is_an_asgi_app_streamlit_run_finds():
    from streamlit.web.server.app_discovery import discover_asgi_app

    found = discover_asgi_app(ROOT / "server.py")
    assert found.is_asgi_app and found.import_string == "server:app"


# ------------------------------------------------------------------ the websocket guard
def test_the_script_path_is_replaced_in_new_session_messages():
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    from annotation.ui.served import SHOWN_SCRIPT_PATH, scrub_forward_msg

    msg = ForwardMsg()
    msg.new_session.main_script_path = str(ROOT / "app.py")
    msg.new_session.name = "app"
    data = msg.SerializeToString()
    scrubbed = scrub_forward_msg(data, str(ROOT).encode())
    assert str(ROOT).encode() not in scrubbed
    out = ForwardMsg()
    out.ParseFromString(scrubbed)
    assert out.new_session.main_script_path == SHOWN_SCRIPT_PATH
    assert out.new_session.name == "app"
    other = ForwardMsg()
    other.script_finished = 1
    assert scrub_forward_msg(other.SerializeToString(), b"/x") == other.SerializeToString()


def test_developer_requests_are_dropped():
    from streamlit.proto.BackMsg_pb2 import BackMsg

    from annotation.ui.served import dropped_back_msg

    for kind in ("load_git_info", "clear_cache"):
        msg = BackMsg()
        setattr(msg, kind, True)
        assert dropped_back_msg(msg.SerializeToString()) == kind
    rerun = BackMsg()
    rerun.rerun_script.query_string = ""
    assert dropped_back_msg(rerun.SerializeToString()) is None
