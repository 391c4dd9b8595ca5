"""What a read-only command must leave as it was, on either engine (issue #18)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from annotation.store import Store


def project_state(db: str) -> object:
    """The SQLite file's bytes (a hash), or on PostgreSQL the row counts and the audit log."""
    if not db.startswith("postgresql:"):
        return hashlib.sha256(Path(db).read_bytes()).hexdigest()
    with Store.open(db) as store:
        return store.counts(), store.query_df("SELECT * FROM audit_log").to_dict("records")
