"""The accounts' rows (``annotation.store.accounts``): one transaction per change, and a
sign-out that is logged once. On SQLite and on PostgreSQL (``engine_db``)."""

from __future__ import annotations

import pytest

from annotation.accounts import auth, sessions
from annotation.store import Store
from annotation.store import accounts as accounts_store


@pytest.fixture
def store(engine_db: str):
    """A project with an admin and an annotator, on each engine (``engine_db``)."""
    with Store.open(engine_db) as s:
        auth.add_user(s, "boss", "admin", "demo-boss", allow_weak=True)
        auth.add_user(s, "ann", "annotator", "demo-ann", allow_weak=True)
        yield s


def audit(store: Store, action: str) -> list[tuple[str, str]]:
    df = store.query_df("SELECT actor, subject FROM audit_log WHERE action = ?", [action])
    return list(df.itertuples(index=False, name=None))


def test_a_sign_out_revokes_the_session_and_is_logged_once(store):
    with accounts_store.writing(store, public=True) as rows:
        token = sessions.create(rows, "ann", "annotator", handoff=False)
    assert sessions.check(accounts_store.reading(store), token).user == "ann"
    with accounts_store.writing(store, public=True) as rows:
        assert sessions.sign_out(rows, token) == "ann"
    with pytest.raises(sessions.SignedOut) as refused:
        sessions.check(accounts_store.reading(store), token)
    assert refused.value.reason == "revoked"
    with accounts_store.writing(store, public=True) as rows:
        assert sessions.sign_out(rows, token) is None  # nothing live: nothing logged
        assert sessions.sign_out(rows, None) is None
    assert audit(store, "logout") == [("ann", "ann")]


def test_what_is_written_through_the_rows_is_one_transaction(store):
    with pytest.raises(RuntimeError), accounts_store.writing(store, public=True) as rows:
        sessions.create(rows, "ann", "annotator", handoff=False)
        rows.set_role("ann", "admin")
        rows.audit(actor="ann", action="user.role", subject="ann")
        raise RuntimeError("refused half-way")
    assert auth.get_user(store, "ann") == auth.User("ann", "annotator")
    assert audit(store, "user.role") == []
    assert store.query_df("SELECT count(*) AS n FROM sessions").n[0] == 0


def test_the_rows_give_records_without_secrets_where_the_app_lists_them(store):
    rows = accounts_store.reading(store)
    assert rows.user("ANN") is None and rows.user_ignoring_case("ANN").name == "ann"
    assert rows.name_taken("Boss") == "boss" and rows.enabled_admins() == {"boss"}
    assert rows.user("ann").password_hash.startswith("scrypt$")
    listed = auth.list_users(store)
    assert list(listed.columns) == ["name", "role", "disabled", "created_at", "email"]
    assert set(listed.name) == {"boss", "ann"}
