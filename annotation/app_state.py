"""The app's link to its project and its signed-in user (one store per browser session)."""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from annotation import guard
from annotation.auth import User, session_valid
from annotation.store import Store, now_iso

ENV_DB = "JUDGE_AUDIT_DB"
ENV_DEMO = "JUDGE_AUDIT_DEMO"


def configured_db() -> Path | None:
    """The database the app serves: ``$JUDGE_AUDIT_DB`` (set by ``judge-audit serve``)."""
    value = os.environ.get(ENV_DB)
    return Path(value) if value else None


def demo_mode() -> bool:
    """True when serving the embedded demo project (``judge-audit serve`` without --db)."""
    return os.environ.get(ENV_DEMO) == "1" or configured_db() is None


def resolve_db() -> Path:
    """The configured database, or the demo project (built on first use)."""
    db = configured_db()
    if db is not None:
        return db
    from annotation.project_files import build_demo_db, default_demo_db

    db = default_demo_db()
    if not db.exists():
        build_demo_db(db)
    return db


def open_store(session_state: MutableMapping[str, Any]) -> Store:
    """One store per browser session, kept in ``st.session_state``.

    The store's database files are guarded against ordinary opens in this process for as
    long as it lives (:func:`annotation.guard.protect`): such an open would drop SQLite's
    locks and let a CLI command delete the ``-wal`` under the app."""
    db = resolve_db()
    store = session_state.get("_store")
    if store is None or store.path != db:
        store = Store.open(db)
        guard.protect(store)
        session_state["_store"] = store
    return store


def sign_in(session_state: MutableMapping[str, Any], user: User) -> None:
    session_state["user"] = user
    session_state["signed_in_at"] = session_state["last_seen"] = now_iso()


def sign_out(session_state: MutableMapping[str, Any]) -> None:
    for key in ("user", "signed_in_at", "last_seen", "annotate"):
        session_state.pop(key, None)


def current_user(session_state: MutableMapping[str, Any], store: Store | None = None
                 ) -> User | None:
    """The signed-in user, or None: also when the session has expired, or (given the
    store) when the account was disabled or its role changed meanwhile; then signed out."""
    user = session_state.get("user")
    if user is None:
        return None
    now = now_iso()
    if not session_valid(session_state["signed_in_at"], session_state["last_seen"], now):
        sign_out(session_state)
        session_state["expired"] = True
        return None
    if store is not None:
        from annotation.auth import get_user

        fresh = get_user(store, user.name)
        if fresh is None or fresh.role != user.role:
            sign_out(session_state)
            return None
    session_state["last_seen"] = now
    return user
