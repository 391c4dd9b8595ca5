"""Unexpected errors: a short message with an incident id for the user, the traceback in the
server log (issue #12, item 2).

Streamlit shows an uncaught exception in the browser with its message and traceback
(``client.showErrorDetails = "full"`` by default): server paths, SQL, file names of the
media folder. Pages are run through :func:`run_guarded` (``app.py`` wraps the page it
navigates to) and fragments are decorated with :func:`guarded`; ``judge-audit serve``
also passes :func:`on_script_error` to the server (``server.py``), which covers widget
callbacks and ``app.py`` itself, and sets ``client.showErrorDetails = "none"`` as the last
line of defence. Each incident is logged once at ERROR level, with its id and the full
traceback, on the ``judge_audit.incidents`` logger (stderr).

``st.stop()``, ``st.rerun()`` and ``st.switch_page()`` raise ``BaseException`` subclasses
(not ``Exception``): they pass through untouched, and so does Streamlit's
``FragmentHandledException`` (a fragment's error, already reported).
"""

from __future__ import annotations

import functools
import logging
import secrets
import sys
from collections.abc import Callable
from typing import Any, TypeVar

LOGGER = logging.getLogger("judge_audit.incidents")
MESSAGE = ("Something went wrong (incident {incident}). What you saved before is kept: "
           "reload the page, and give the incident id to the project's admin if it happens "
           "again.")

F = TypeVar("F", bound=Callable[..., Any])


def _ensure_handler() -> None:
    """Log to stderr even where nobody configured logging (the Streamlit server)."""
    if not LOGGER.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: "
                                               "%(message)s"))
        LOGGER.addHandler(handler)
        LOGGER.setLevel(logging.INFO)


def new_incident_id() -> str:
    """8 random hex digits, upper case (``7F3A09C2``): says nothing but where to look."""
    return secrets.token_hex(4).upper()


def log_incident(exc: BaseException) -> str:
    """Log ``exc`` with its traceback under a new incident id; return the id."""
    _ensure_handler()
    incident = new_incident_id()
    LOGGER.error("incident %s: %s: %s", incident, type(exc).__name__, exc,
                 exc_info=(type(exc), exc, exc.__traceback__))
    return incident


def show_incident(exc: BaseException) -> str:
    """Log ``exc`` (:func:`log_incident`) and show the user :data:`MESSAGE` only."""
    import streamlit as st

    incident = log_incident(exc)
    st.error(MESSAGE.format(incident=incident), icon=":material/error:")
    return incident


def _handled_elsewhere(exc: Exception) -> bool:
    """Streamlit's own signal that a fragment's error was already reported."""
    from streamlit.errors import FragmentHandledException

    return isinstance(exc, FragmentHandledException)


def run_guarded(body: Callable[[], object]) -> None:
    """Run ``body`` (a page); an unexpected exception becomes :func:`show_incident`."""
    try:
        body()
    except Exception as exc:  # st.stop / st.rerun are BaseException: not caught
        if _handled_elsewhere(exc):
            raise
        show_incident(exc)


def guarded(func: F) -> F:
    """Decorator form of :func:`run_guarded` (for ``@st.fragment`` bodies: put it below
    the fragment decorator). Keeps the function's name, so fragment ids are unchanged."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except Exception as exc:
            if _handled_elsewhere(exc):
                raise
            show_incident(exc)
            return None

    return wrapper  # type: ignore[return-value]


def on_script_error(exc: Exception) -> bool:
    """The server's handler for what the page guards cannot catch (widget callbacks,
    ``app.py``'s own code): the short message instead of Streamlit's exception box."""
    show_incident(exc)
    return True  # suppress Streamlit's display of the exception
