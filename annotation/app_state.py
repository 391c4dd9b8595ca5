"""The app's link to its project database: which file, and one open store per session."""

from __future__ import annotations

import os
from pathlib import Path

from annotation.store import Store

ENV_DB = "JUDGE_AUDIT_DB"


def configured_db() -> Path | None:
    """The database the app serves: ``$JUDGE_AUDIT_DB`` (set by ``judge-audit serve``)."""
    value = os.environ.get(ENV_DB)
    return Path(value) if value else None


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


def open_store(session_state) -> Store:
    """One store per browser session, kept in ``st.session_state``."""
    db = resolve_db()
    store = session_state.get("_store")
    if store is None or store.path != db:
        store = Store.open(db)
        session_state["_store"] = store
    return store
