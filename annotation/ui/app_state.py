"""The app's link to its project and its signed-in user (one store per browser session).

Who is signed in is decided on every rerun, and at every write, from a secret the
browser holds apart from Streamlit's session id: the ``ja_session`` cookie (HttpOnly,
SameSite=Strict; :mod:`annotation.ui.web_session` sets it), whose token must name a live
row of ``sessions`` (:mod:`annotation.accounts.sessions`). ``st.session_state`` is never proof of
anything: a second websocket that presents someone's Streamlit session id gets their
``session_state``, not their cookie. ``session_state["user"]`` is only a cache for the
page of the user resolved from the cookie on this rerun.

**The test seam.** ``streamlit.testing.v1.AppTest`` has no browser and so no cookies.
A test process calls :func:`enable_test_sessions` (``tests/conftest.py`` does); from then
on, and only in that process, :func:`sign_in` keeps the session *token* in
``session_state[TEST_TOKEN_KEY]`` and :func:`presented_token` falls back to it when no
cookie came. Nothing a browser sends can turn this on: it is a Python call, which the
served app (``judge-audit serve``) never makes; there a token in ``session_state`` is
ignored.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from annotation.accounts import sessions
from annotation.accounts.auth import AccountError, User, get_user
from annotation.accounts.sessions import SignedOut
from annotation.store import SessionGuard, Store, guard
from annotation.store import accounts as accounts_store
from annotation.store.pg import is_url

ENV_DB = "JUDGE_AUDIT_DB"
ENV_DEMO = "JUDGE_AUDIT_DEMO"

TEST_TOKEN_KEY = "_ja_test_token"
HANDOFF_KEY = "_ja_handoff"
CLEAR_COOKIE_KEY = "_ja_clear_cookie"
SIGNED_OUT_KEY = "signed_out"
#: what a sign-out forgets (the work itself is in the database); a pending handoff code
#: is kept: this connection may still present an old cookie while it signs in again
SESSION_KEYS = ("user", "signed_in_at", "last_seen", "annotate", "verify", "trees",
                "flag_open", TEST_TOKEN_KEY)

_test_sessions = False


def enable_test_sessions() -> None:
    """Let this process sign in without a browser (AppTest): see the module docstring."""
    global _test_sessions
    _test_sessions = True


def configured_db() -> Path | str | None:
    """The database the app serves: ``$JUDGE_AUDIT_DB`` (set by ``judge-audit serve``): a
    SQLite file's path, or a ``postgresql://`` URL (kept as text)."""
    value = os.environ.get(ENV_DB)
    if not value:
        return None
    return value if is_url(value) else Path(value)


def demo_mode() -> bool:
    """True when serving the embedded demo project (``judge-audit serve`` without --db)."""
    return os.environ.get(ENV_DEMO) == "1" or configured_db() is None


def resolve_db() -> Path | str:
    """The configured database, or the demo project (built on first use)."""
    db = configured_db()
    if db is not None:
        return db
    from annotation.project_files import build_demo_db, default_demo_db

    db = default_demo_db()
    if not db.exists():
        build_demo_db(db)
    return db


def _cookie() -> str | None:
    """The session cookie of the browser connection running this script, if any."""
    try:
        import streamlit as st

        value = st.context.cookies.get(sessions.COOKIE_NAME)
    except Exception:  # no script run context: nobody presents anything
        return None
    return value if isinstance(value, str) and value else None


def presented_token(session_state: MutableMapping[str, Any]) -> str | None:
    """The session token the current request presents: its cookie (or, in a test process
    only, the token :func:`sign_in` kept in ``session_state``)."""
    token = _cookie()
    if token is None and _test_sessions:
        kept = session_state.get(TEST_TOKEN_KEY)
        token = kept if isinstance(kept, str) and kept else None
    return token


def open_store(session_state: MutableMapping[Any, Any]) -> Store:
    """One store per browser session, kept in ``st.session_state``. It acts for the
    signed-in person: every write it makes checks the session the current request
    presents (:meth:`Store.transaction`), callbacks and fragments included.

    The store's database files are guarded against ordinary opens in this process for as
    long as it lives (:func:`annotation.store.guard.protect`): such an open would drop SQLite's
    locks and let a CLI command delete the ``-wal`` under the app."""
    db = resolve_db()
    store = session_state.get("_store")
    if store is None or store.location != str(db):
        store = Store.open(db)
        guard.protect(store)
        session_state["_store"] = store
    store.guard = SessionGuard(token=lambda: presented_token(session_state),
                               on_refused=lambda exc: refused(session_state, exc))
    return store


def _pop(session_state: MutableMapping[str, Any], key: str) -> Any:
    """``pop(key, None)``, also for AppTest's session state (which has no ``pop``)."""
    if key not in session_state:
        return None
    value = session_state[key]
    del session_state[key]
    return value


def _forget(session_state: MutableMapping[str, Any]) -> None:
    for key in SESSION_KEYS:
        _pop(session_state, key)


def rerun_app() -> None:
    """Rerun the whole app now (to the sign-in page), if a script is running."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
    except ImportError:  # pragma: no cover - Streamlit is a dependency
        return
    if get_script_run_ctx() is None:
        return
    import streamlit as st

    st.rerun(scope="app")


def refused(session_state: MutableMapping[str, Any], exc: SignedOut) -> None:
    """A write was refused (the store's guard): sign this browser session out, say why,
    and rerun the app to the sign-in page, from a callback or a fragment too."""
    _forget(session_state)
    session_state[SIGNED_OUT_KEY] = exc.message
    session_state[CLEAR_COOKIE_KEY] = True
    rerun_app()


def sign_in(session_state: MutableMapping[Any, Any], user: User, store: Store | None = None,
            *, user_agent: str | None = None) -> None:
    """Start a new session for ``user`` (an enabled account, its current role).

    A browser gets a one-time handoff code in ``session_state[HANDOFF_KEY]``, which the
    app exchanges for the HttpOnly cookie (:func:`annotation.ui.web_session.cookie_step`);
    until then nobody is signed in on this connection. In a test process the token itself
    is kept in ``session_state`` (the seam of the module docstring). A new session at
    every sign-in: the old token of this browser, if any, is not reused.
    """
    owned = store is None
    store = store if store is not None else Store.open(resolve_db())
    try:
        account = get_user(store, user.name)
        if account is None:
            raise AccountError(f"no enabled account named {user.name!r}")
        with accounts_store.writing(store, public=True) as rows:
            sessions.revoke(rows, presented_token(session_state))
            secret = sessions.create(rows, account.name, account.role,
                                     handoff=not _test_sessions, user_agent=user_agent)
    finally:
        if owned:
            store.close()
    _forget(session_state)
    _pop(session_state, SIGNED_OUT_KEY)
    _pop(session_state, CLEAR_COOKIE_KEY)
    if _test_sessions:
        session_state[TEST_TOKEN_KEY] = secret
        session_state["user"] = account
    else:
        session_state[HANDOFF_KEY] = secret


def sign_out(session_state: MutableMapping[Any, Any], store: Store | None = None) -> None:
    """Revoke the presented session (at once: another tab of it is signed out too), forget
    this browser session's state, and have the app clear the cookie."""
    token = presented_token(session_state)
    if token is not None:
        owned = store is None
        store = store if store is not None else Store.open(resolve_db())
        try:
            with accounts_store.writing(store, public=True) as rows:
                sessions.sign_out(rows, token)
        finally:
            if owned:
                store.close()
    _forget(session_state)
    _pop(session_state, HANDOFF_KEY)
    _pop(session_state, SIGNED_OUT_KEY)
    session_state[CLEAR_COOKIE_KEY] = True


def current_user(session_state: MutableMapping[Any, Any], store: Store | None = None
                 ) -> User | None:
    """The signed-in user of this request, from the session it presents; or None.

    None also when that session is revoked, expired (60 idle minutes, 12 hours), or its
    account disabled or given another role meanwhile: then this browser session is
    signed out and ``session_state[SIGNED_OUT_KEY]`` says why.
    """
    token = presented_token(session_state)
    was_signed_in = session_state.get("user") is not None
    if token is None:
        if was_signed_in:
            _forget(session_state)
            session_state[SIGNED_OUT_KEY] = sessions.MESSAGES["revoked"]
        return None
    store = store if store is not None else open_store(session_state)
    try:
        info = sessions.check(accounts_store.reading(store), token, touch=False)
        if sessions.stale(info.last_seen):
            with accounts_store.writing(store, public=True) as rows:  # slide the idle window
                info = sessions.check(rows, token)
    except SignedOut as exc:
        _forget(session_state)
        if HANDOFF_KEY not in session_state:  # not while signing in again
            session_state[SIGNED_OUT_KEY] = exc.message
            session_state[CLEAR_COOKIE_KEY] = True
        return None
    user = get_user(store, info.user)
    if user is None:  # pragma: no cover - check() saw the account enabled
        return None
    session_state["user"] = user
    return user

