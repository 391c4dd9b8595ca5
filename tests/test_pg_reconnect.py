"""A long-lived server's store on PostgreSQL outlives its connection (issue #18).

Against a real throwaway cluster (:mod:`tests.helpers.postgres`; skipped where none can be
started): the store's backend terminated (``pg_terminate_backend``) between transactions,
inside an open write transaction, and the whole server restarted. The next transaction
always works; a transaction that was under way fails once and leaves nothing behind.
"""

from __future__ import annotations

import sqlite3

import pytest

from annotation.store import Store, pg

pytestmark = pytest.mark.slow  # a PostgreSQL database per test


def _terminate(cluster, store: Store) -> None:
    """End the store's backend (and wait until it is gone)."""
    pid = store.conn._pg.info.backend_pid  # type: ignore[attr-defined]
    with cluster.admin() as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s, 10000)", [pid]).fetchone()[0]


def _names(url: str) -> list[str]:
    with Store.open(url) as other:
        return [r[0] for r in other.conn.execute(
            "SELECT name FROM annotators ORDER BY name").fetchall()]


def _add(store: Store, name: str) -> None:
    with store.transaction() as conn:
        conn.execute("INSERT INTO annotators (name, created_at) VALUES (?, '2026-01-01')",
                     [name])


def test_the_next_write_after_a_terminated_backend_succeeds_once(pg_cluster,
                                                                 pg_url: str) -> None:
    with Store.open(pg_url) as store:
        _add(store, "before")
        cache = store.conn._cache  # type: ignore[attr-defined]
        translated = dict(cache)
        _terminate(pg_cluster, store)
        _add(store, "after")  # BEGIN finds the connection dead: run again on a new one
        assert _names(pg_url) == ["after", "before"]
        assert store.conn.reconnects == 1  # type: ignore[attr-defined]
        # the translations made before the break are kept (and used) after it
        assert store.conn._cache is cache  # type: ignore[attr-defined]
        assert {k: cache[k] for k in translated} == translated


def test_a_read_outside_a_transaction_is_run_again_on_a_new_connection(pg_cluster,
                                                                       pg_url: str) -> None:
    with Store.open(pg_url) as store:
        _add(store, "ann")
        _terminate(pg_cluster, store)
        assert store.conn.execute("SELECT name FROM annotators").fetchall() == [("ann",)]
        _terminate(pg_cluster, store)
        assert list(store.annotations_df().columns)  # pandas reads through it too


def test_a_write_transaction_cut_off_fails_once_and_leaves_nothing(pg_cluster,
                                                                   pg_url: str) -> None:
    with Store.open(pg_url) as store:
        with (pytest.raises(pg.ConnectionLost, match="nothing of it was written"),
              store.transaction() as conn):
            conn.execute("INSERT INTO annotators (name, created_at) VALUES ('half', 'x')")
            _terminate(pg_cluster, store)
            conn.execute("INSERT INTO annotators (name, created_at) VALUES ('rest', 'x')")
        assert _names(pg_url) == []
        assert not store.conn.in_transaction  # type: ignore[attr-defined]
        _add(store, "next")
        assert _names(pg_url) == ["next"]


def test_a_transaction_that_swallows_the_error_cannot_go_on_in_autocommit(
        pg_cluster, pg_url: str) -> None:
    """Statements after the break are refused until the transaction ends: the rest of it
    never runs, statement by statement, on the new connection."""
    with Store.open(pg_url) as store:
        # the COMMIT raises too: the transaction is gone
        with pytest.raises(pg.ConnectionLost), store.transaction() as conn:
            conn.execute("INSERT INTO annotators (name, created_at) VALUES ('a', 'x')")
            _terminate(pg_cluster, store)
            with pytest.raises(pg.ConnectionLost):
                conn.execute("INSERT INTO annotators (name, created_at) VALUES ('b', 'x')")
            with pytest.raises(sqlite3.OperationalError):  # ConnectionLost is one
                conn.execute("INSERT INTO annotators (name, created_at) VALUES ('c', 'x')")
        assert _names(pg_url) == []
        _add(store, "d")
        assert _names(pg_url) == ["d"]


def test_the_store_works_again_after_the_server_restarts(pg_cluster, pg_url: str) -> None:
    with Store.open(pg_url) as store, Store.open(pg_url) as reader:
        _add(store, "before")
        pg_cluster.restart()
        _add(store, "after")
        assert [r[0] for r in reader.conn.execute(
            "SELECT name FROM annotators ORDER BY name").fetchall()] == ["after", "before"]
        # a transaction open across the restart fails once, the next one works
        pg_cluster.restart()
        with pytest.raises(pg.ConnectionLost), store.transaction() as conn:
            conn.execute("SELECT 1")
            pg_cluster.restart()
            conn.execute("INSERT INTO annotators (name, created_at) VALUES ('x', 'x')")
        _add(store, "again")
        assert _names(pg_url) == ["after", "again", "before"]


def _connections(cluster, url: str) -> int:
    dbname = pg.parse(url).dbname
    with cluster.admin() as admin:
        return int(admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                                 [dbname]).fetchone()[0])


def test_one_connection_per_browser_session(make_pg_demo, pg_cluster,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """What the README's connection count says: a browser session keeps one store (one
    connection) for its life, however often its page reruns; the sign-in's own stores are
    closed. And a session's connection cut off under it is replaced at its next rerun."""
    from tests.helpers.apptest import signed_in

    url = make_pg_demo()
    monkeypatch.setenv("JUDGE_AUDIT_DB", url)
    monkeypatch.setenv("JUDGE_AUDIT_DEMO", "0")
    sessions = []
    for n in range(1, 4):
        at = signed_in("annotate.py", f"ann{n}", guidelines_seen=True).run(timeout=120)
        assert not at.exception, at.exception
        sessions.append(at)
        assert _connections(pg_cluster, url) == n
    for at in sessions:
        at.run(timeout=120)
    assert _connections(pg_cluster, url) == 3
    _terminate(pg_cluster, sessions[0].session_state["_store"])
    assert _connections(pg_cluster, url) == 2
    sessions[0].run(timeout=120)
    assert not sessions[0].exception, sessions[0].exception
    assert _connections(pg_cluster, url) == 3


def test_a_raw_transaction_is_not_continued_outside_its_snapshot(pg_cluster,
                                                                 pg_url: str) -> None:
    """``raw("BEGIN ...")`` (the backup's and the check's snapshot) is a transaction too: a
    connection lost inside it fails the next statement instead of answering it from a new
    connection outside the snapshot; ROLLBACK then ends it and the store works again."""
    with Store.open(pg_url) as store:
        _add(store, "first")
        conn = store.conn
        conn.raw("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")  # type: ignore[attr-defined]
        assert conn.raw("SELECT count(*) FROM annotators").fetchone()[0] == 1  # type: ignore[attr-defined]
        with Store.open(pg_url) as other:
            _add(other, "second")
        _terminate(pg_cluster, store)
        with pytest.raises(pg.ConnectionLost):
            conn.raw("SELECT count(*) FROM annotators")  # type: ignore[attr-defined]
        conn.raw("ROLLBACK")  # type: ignore[attr-defined]
        assert conn.raw("SELECT count(*) FROM annotators").fetchone()[0] == 2  # type: ignore[attr-defined]


def test_a_url_password_in_the_query_is_redacted() -> None:
    shown = pg.redacted("postgresql://ja@db/study?password=s3cret&sslpassword=k3y&media=/m")
    assert "s3cret" not in shown and "k3y" not in shown and "media=/m" in shown
    assert pg.redacted("postgresql://ja:s3cret@db/study") == "postgresql://ja:***@db/study"
