"""The one AppTest sign-in helper: a page (or the app) in a new browser session with an
account signed in, as the sign-in page leaves the session.

AppTest has no browser, hence no session cookie: :func:`annotation.ui.app_state.sign_in`
keeps the session token in ``session_state`` instead (``tests/conftest.py`` enables that
seam for the test process).
"""

from __future__ import annotations

import os
from pathlib import Path

from streamlit.testing.v1 import AppTest

from annotation.accounts.auth import User
from annotation.store import Store
from annotation.ui.app_state import sign_in
from tests.helpers import ROOT
from tests.helpers.bundles import ensure_account


def page_file(page: str) -> str:
    """The script of ``page``: ``"app.py"``, ``"pages/annotate.py"``, ``"annotate.py"``
    (a page name) or an absolute path."""
    path = Path(page)
    if path.is_absolute():
        return str(path)
    if path.parts[0] == "pages" or path.name in ("app.py", "server.py"):
        return str(ROOT / path)
    return str(ROOT / "pages" / path)


def signed_in(page: str, name: str, role: str = "annotator", *, db: Path | str | None = None,
              timeout: float = 60, guidelines_seen: bool = False) -> AppTest:
    """``page`` in a new AppTest session where ``name`` is signed in (not run yet).

    The account is created in ``db`` (default: ``$JUDGE_AUDIT_DB``, the project the page
    opens) with ``role`` if it does not exist; an existing account keeps its role, as a real
    sign-in would. ``guidelines_seen`` skips the annotation page's guidelines screen.
    """
    db = db if db is not None else os.environ["JUDGE_AUDIT_DB"]  # a path, or a URL
    ensure_account(db, name, role)
    at = AppTest.from_file(page_file(page), default_timeout=timeout)
    with Store.open(db) as store:
        sign_in(at.session_state, User(name, role), store)
    if guidelines_seen:
        at.session_state["annotate"] = {"annotator": name, "guidelines_seen": True}
    return at
