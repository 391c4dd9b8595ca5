"""PostgreSQL as a second store engine (issue #18, items 3 and 6), against a real server.

The translation of the store's SQLite dialect (pure, no server), then on a throwaway
cluster (:mod:`tests.helpers.postgres`; skipped where none can be started): the same
tables, columns and views as SQLite's, the append-only refusals, a schema reached by an
older version plus a migration equal to the one built at once, the demo's import and
``judge-audit report`` giving the same tables as on SQLite, and sessions valid through any
store (server) on the database.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from annotation.records import Annotation
from annotation.store import Store, pg, schema
from annotation.store.pg import translate

KEYS = {"annotations": "annotation_id"}


# ------------------------------------------------------------------ the translation
@pytest.mark.parametrize(("sqlite", "postgres"), [
    ("SELECT a FROM t WHERE b = ? AND c = ?", "SELECT a FROM t WHERE b = %s AND c = %s"),
    ("SELECT IFNULL(MAX(position) + 1, 0) FROM criteria",
     "SELECT COALESCE(MAX(position) + 1, 0) FROM criteria"),
    ("SELECT max(a, b), min(x, 1), max(c) FROM t",
     "SELECT GREATEST(a, b), LEAST(x, 1), max(c) FROM t"),
    ("SELECT user FROM imports", 'SELECT "user" FROM imports'),
    ("SELECT s.user FROM sessions s", 'SELECT s."user" FROM sessions s'),
    ("SELECT 1 WHERE a IS NOT ? AND b IS ? AND c IS NOT NULL AND d IS NULL",
     "SELECT 1 WHERE a IS DISTINCT FROM %s AND b IS NOT DISTINCT FROM %s"
     " AND c IS NOT NULL AND d IS NULL"),
    ("SELECT * FROM t ORDER BY a, b DESC LIMIT 3",
     "SELECT * FROM t ORDER BY a NULLS FIRST, b DESC NULLS LAST LIMIT 3"),
    ("SELECT * FROM (SELECT a FROM t ORDER BY f(a, b)) x",
     "SELECT * FROM (SELECT a FROM t ORDER BY f(a, b) NULLS FIRST) x"),
    ("SELECT 'a%' WHERE x LIKE '%b'", "SELECT 'a%%' WHERE x ILIKE '%%b'"),
    ("SELECT 'it''s ? user' FROM t", "SELECT 'it''s ? user' FROM t"),
    ("SELECT json_object('a', x) FROM t", "SELECT json_build_object('a', x) FROM t"),
    ("UPDATE v SET s = s + ? WHERE (? IS NULL OR p = ?)",
     "UPDATE v SET s = s + %s WHERE (%s::text IS NULL OR p = %s)"),
    ("SELECT a + 1 FROM t WHERE +kind = ? AND b = +c", "SELECT a + 1 FROM t WHERE kind = %s"
     " AND b = c"),
    ("SELECT datetime('now')",
     "SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')"),
    ("SELECT n FROM (SELECT 1 AS n) GROUP BY n",
     "SELECT n FROM (SELECT 1 AS n) AS _subquery1 GROUP BY n"),
    ("SELECT n FROM (SELECT 1 AS n) x JOIN (SELECT 2) AS y ON 1 = 1",
     "SELECT n FROM (SELECT 1 AS n) x JOIN (SELECT 2) AS y ON 1 = 1"),
])
def test_the_translation_of_the_store_dialect(sqlite: str, postgres: str) -> None:
    assert translate(sqlite, KEYS).sql == postgres


def test_inserts_ignore_conflicts_and_return_their_key() -> None:
    t = translate("INSERT OR IGNORE INTO annotators (name, created_at) VALUES (?, ?)", KEYS)
    assert t.sql == ("INSERT INTO annotators (name, created_at) VALUES (%s, %s)"
                     " ON CONFLICT DO NOTHING")
    assert t.returning is None
    t = translate("INSERT INTO annotations (annotator) VALUES (?)", KEYS)
    assert t.sql == "INSERT INTO annotations (annotator) VALUES (%s) RETURNING annotation_id"
    assert t.returning == "annotation_id"
    with pytest.raises(ValueError, match="INSERT OR REPLACE"):
        translate("INSERT OR REPLACE INTO t VALUES (1)", KEYS)


def test_the_write_lock_and_the_schema_version() -> None:
    assert translate("BEGIN IMMEDIATE", KEYS).kind == "begin"
    assert translate("PRAGMA user_version", KEYS).kind == "version"
    t = translate("PRAGMA user_version = 12", KEYS)
    assert (t.kind, t.value) == ("set_version", 12)


def test_urls_select_postgresql_and_keep_their_media_folder(tmp_path: Path) -> None:
    assert pg.is_url("postgresql://u@h/db") and pg.is_url("postgres:///db")
    assert not pg.is_url("study.db") and not pg.is_url(tmp_path / "x.db")
    target = pg.parse(f"postgresql://u:secret@h:5433/study?sslmode=require&media={tmp_path}")
    assert target.conninfo == "postgresql://u:secret@h:5433/study?sslmode=require"
    assert target.dbname == "study"
    assert target.anchor == tmp_path / "study.postgresql"  # media: <tmp_path>/study_media
    assert pg.redacted("postgresql://u:secret@h/db") == "postgresql://u:***@h/db"


def test_a_url_turned_into_a_path_is_refused(tmp_path: Path, monkeypatch) -> None:
    """``Path(url)`` collapses ``//``: it used to open a new SQLite file under a folder
    ``postgresql:`` of the working directory (the tests' stray files did exactly that)."""
    monkeypatch.chdir(tmp_path)
    for url in ("postgresql:///study?host=/tmp&user=ja", "postgres://u:secret@h/db"):
        with pytest.raises(ValueError, match="URL turned into a file path") as err:
            Store.open(Path(url))
        assert "secret" not in str(err.value)
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------- the schema
def _sqlite_columns(path: Path) -> dict[str, list[str]]:
    conn = sqlite3.connect(path)
    try:
        names = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
        return {n: [r[1] for r in conn.execute(f'PRAGMA table_info("{n}")')] for n in names}
    finally:
        conn.close()


def _pg_columns(store: Store) -> dict[str, list[str]]:
    rows = store.conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = 'public' AND column_name <> 'rowid'"
        " AND table_name <> 'judge_audit_schema' ORDER BY table_name, ordinal_position"
    ).fetchall()
    out: dict[str, list[str]] = {}
    for table, column in rows:
        out.setdefault(table, []).append(column)
    return out


@pytest.mark.slow  # a PostgreSQL database per test
def test_the_same_tables_columns_and_views_as_sqlite(pg_url: str, tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    Store.open(path).close()
    with Store.open(pg_url) as store:
        assert store.engine == "postgresql"
        assert store.schema_version() == schema.SCHEMA_VERSION
        assert _pg_columns(store) == _sqlite_columns(path)
        views = {r[0] for r in store.conn.execute(
            "SELECT table_name FROM information_schema.views WHERE table_schema = 'public'")}
        assert {"current_annotations", "current_image_readings", "reservations"} <= views
        # foreign keys hold, as with SQLite's PRAGMA foreign_keys = ON
        with pytest.raises(sqlite3.IntegrityError):
            store.conn.execute(
                "INSERT INTO outputs (output_id, task_id, generator) VALUES ('o', 'nope', 'g')")


def _append_only_tables() -> list[str]:
    return sorted(name[: -len("_no_update")] for kind, name, _t, _s
                  in pg.sqlite_schema(schema.SCHEMA_VERSION)
                  if kind == "trigger" and name.endswith("_no_update"))


@pytest.mark.slow  # a PostgreSQL database per test
@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_every_append_only_table_refuses_update_and_delete(
        engine: str, tmp_path: Path, make_demo_db, request: pytest.FixtureRequest) -> None:
    location = (str(make_demo_db(tmp_path / "demo.db")) if engine == "sqlite"
                else request.getfixturevalue("make_pg_demo")())
    tables = _append_only_tables()
    assert {"annotations", "audit_log", "pair_annotations", "gold_answers"} <= set(tables)
    checked = []
    with Store.open(location) as store:
        for table in tables:
            before = store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            if before == 0:  # row triggers: an empty table has no row to refuse
                continue
            checked.append(table)
            column = store.conn.execute(f"SELECT * FROM {table} LIMIT 1").description[0][0]
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                store.conn.execute(f"UPDATE {table} SET {column} = {column}")
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                store.conn.execute(f"DELETE FROM {table}")
            if engine == "postgresql":  # TRUNCATE skips row triggers: refused as well
                with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                    store.conn.execute(f"TRUNCATE {table} CASCADE")
            assert store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == before
    assert {"annotations", "audit_log", "conflict_verdicts", "tree_reviews"} <= set(checked)


@pytest.mark.slow  # a PostgreSQL database per test
def test_an_older_schema_migrates_to_the_one_built_at_once(pg_cluster) -> None:
    """A database at schema 11 gets migration 12's tables, indexes, views and triggers,
    and ends with the catalog of a database built at 12 at once."""
    older = pg_cluster.url(pg_cluster.create_database())
    with Store.open(older, migrate=False) as store:
        conn = store.conn
        pg.migrate(conn, schema.SCHEMA_VERSION - 1)  # type: ignore[arg-type]
        assert store.schema_version() == schema.SCHEMA_VERSION - 1
    with Store.open(older) as store:
        assert store.schema_version() == schema.SCHEMA_VERSION
        migrated = _catalog(store)
    with Store.open(pg_cluster.url(pg_cluster.create_database())) as store:
        assert _catalog(store) == migrated


def _catalog(store: Store) -> dict[str, list[tuple]]:
    return {
        "columns": store.conn.execute(
            "SELECT table_name, column_name, data_type, is_nullable, collation_name"
            " FROM information_schema.columns WHERE table_schema = 'public'"
            " ORDER BY 1, 2").fetchall(),
        "indexes": store.conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
            " ORDER BY 1").fetchall(),
        "views": store.conn.execute(
            "SELECT table_name FROM information_schema.views WHERE table_schema = 'public'"
            " ORDER BY 1").fetchall(),
        "triggers": store.conn.execute(
            "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1").fetchall(),
    }


@pytest.mark.slow  # a PostgreSQL database per test
def test_a_newer_database_is_refused(pg_url: str) -> None:
    from annotation.store import SchemaTooNew

    with Store.open(pg_url) as store:
        store.conn.raw(f"UPDATE judge_audit_schema SET version = {schema.SCHEMA_VERSION + 1}")
    with pytest.raises(SchemaTooNew, match="newer"):
        Store.open(pg_url)


# --------------------------------------------------------------- writers, sessions
@pytest.mark.slow  # a PostgreSQL database per test
def test_one_writer_at_a_time_across_connections(make_pg_demo) -> None:
    """Two stores (two servers) on one database: a write transaction waits for the other's
    commit (the advisory write lock), so both chains of supersedes stay linear."""
    url = make_pg_demo()
    first, second = Store.open(url), Store.open(url)
    order: list[str] = []
    try:
        with first.transaction() as conn:
            waiter = threading.Thread(target=lambda: _write(second, order))
            waiter.start()
            waiter.join(0.5)
            assert waiter.is_alive(), "the second writer did not wait for the first"
            conn.execute("SELECT 1")
            order.append("first")
        waiter.join(30)
        assert order == ["first", "second"]
        a = Annotation("ann1", "demo-01/gpt-image-1", question_id="demo-01.q1", answer="yes")
        ids = [first.record_annotation(a), second.record_annotation(
            Annotation("ann1", "demo-01/gpt-image-1", question_id="demo-01.q1", answer="no"))]
        history = second.annotations_df(history=True)
        mine = history[history.annotation_id.isin(ids)]
        assert list(mine.supersedes)[1] == ids[0]
    finally:
        first.close()
        second.close()


def _write(store: Store, order: list[str]) -> None:
    with store.transaction():
        order.append("second")


@pytest.mark.slow  # a PostgreSQL database per test
def test_a_session_started_through_one_server_is_valid_on_another(make_pg_demo) -> None:
    from annotation.accounts import sessions
    from annotation.store import accounts as accounts_store

    url = make_pg_demo()
    with Store.open(url) as one, Store.open(url) as other:
        with accounts_store.writing(one, public=True) as rows:
            token = sessions.create(rows, "alice", "annotator", handoff=False)
        assert token
        info = sessions.check(accounts_store.reading(other), token)
        assert info.user == "alice"
        with accounts_store.writing(other, public=True) as rows:
            sessions.sign_out(rows, token)
        with pytest.raises(sessions.SignedOut):
            sessions.check(accounts_store.reading(one), token)


# ---------------------------------------------------------------- import, report
@pytest.mark.slow  # two demo reports
def test_report_on_postgresql_gives_the_tables_of_sqlite(tmp_path: Path, make_demo_db,
                                                         make_pg_demo) -> None:
    """``judge-audit report`` on the demo imported into PostgreSQL writes the same CSV
    tables, byte for byte, as on the demo's SQLite file."""
    from annotation.cli import main

    sqlite_db = make_demo_db(tmp_path / "demo.db")
    url = make_pg_demo()
    with Store.open(sqlite_db) as a, Store.open(url) as b:
        assert a.counts() == b.counts()
    outs = {}
    for name, location in (("sqlite", str(sqlite_db)), ("postgresql", url)):
        out = tmp_path / f"report-{name}"
        assert main(["report", "--db", location, "--out", str(out), "--bootstrap", "50",
                     "--quiet"]) == 0
        outs[name] = {p.name: p.read_bytes() for p in sorted(out.glob("*.csv"))}
    assert len(outs["sqlite"]) >= 10
    assert outs["postgresql"] == outs["sqlite"]


@pytest.mark.slow  # a PostgreSQL database per test
def test_the_demo_bundle_imports_the_same_rows(tmp_path: Path, make_demo_db,
                                               make_pg_demo) -> None:
    sqlite_db = make_demo_db(tmp_path / "demo.db")
    with Store.open(sqlite_db) as a, Store.open(make_pg_demo()) as b:
        assert a.counts() == b.counts()
        for frame in ("tasks_df", "outputs_df", "judgments_df", "questions_df"):
            left, right = getattr(a, frame)(), getattr(b, frame)()
            assert left.equals(right), frame
        assert a.annotations_df(history=True).equals(b.annotations_df(history=True))
        assert b.file_path(b.outputs_df().sha256.dropna().iloc[0]).is_file()


_HOLDER = """
import sys, time
from annotation.store import Store
store = Store.open(sys.argv[1])
with store.transaction() as conn:
    conn.execute("INSERT INTO annotators (name, created_at) VALUES ('ghost', 'now')")
    print("inside", flush=True)
    time.sleep(600)
"""


@pytest.mark.slow  # a subprocess
def test_a_writer_killed_inside_its_transaction_leaves_nothing_and_frees_the_lock(
        make_pg_demo, tmp_path: Path) -> None:
    """kill -9 of a process holding the write lock mid-transaction: the server rolls its
    transaction back (its row is gone) and the next writer gets the lock at once."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.test_concurrency import worker_env

    url = make_pg_demo()
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, url], stdout=subprocess.PIPE,
                            text=True, env=worker_env())
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "inside"
        with Store.open(url) as store:
            waiter = threading.Thread(target=lambda: _write(store, order))
            order: list[str] = []
            waiter.start()
            waiter.join(0.5)
            assert waiter.is_alive()  # the holder has the lock
            os.kill(proc.pid, signal.SIGKILL)
            started = time.monotonic()
            waiter.join(30)
            assert order == ["second"] and time.monotonic() - started < 10
            assert store.conn.execute(
                "SELECT count(*) FROM annotators WHERE name = 'ghost'").fetchone()[0] == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


PAGES = ("app.py", "home.py", "assignment.py", "analytics.py", "annotate.py", "conflicts.py",
         "conflict_results.py", "trees.py", "tree_results.py", "adjudicate.py",
         "import_data.py")


@pytest.mark.slow  # every page of the app
def test_every_page_runs_on_the_demo_on_postgresql(make_pg_demo,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The app's pages (an admin sees them all) on a PostgreSQL project: no exception (the
    tree results' ``SUM(origin = ?)`` needed SUM of booleans)."""
    from tests.helpers.apptest import signed_in

    url = make_pg_demo()
    monkeypatch.setenv("JUDGE_AUDIT_DB", url)
    monkeypatch.setenv("JUDGE_AUDIT_DEMO", "0")
    failed = {}
    for page in PAGES:
        at = signed_in(page, "admin", "admin", guidelines_seen=True).run(timeout=120)
        if at.exception:
            failed[page] = [getattr(e, "value", str(e))[:300] for e in at.exception]
    assert failed == {}


@pytest.mark.slow  # a PostgreSQL database per test
def test_sums_and_averages_of_comparisons_as_on_sqlite(pg_url: str, tmp_path: Path) -> None:
    sql = ("SELECT SUM(x > 1), AVG(x > 1), SUM(x > 9), AVG(x > 9), SUM(x IS NULL)"
           " FROM (SELECT 1 AS x UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT NULL)")
    empty = "SELECT SUM(1 > 0), AVG(1 > 0) FROM project"
    with Store.open(tmp_path / "s.db") as a, Store.open(pg_url) as b:
        for query in (sql, empty):
            assert b.conn.execute(query).fetchall() == a.conn.execute(query).fetchall()


def test_a_database_made_before_views_were_read_only_gets_their_triggers(pg_url: str) -> None:
    """A PostgreSQL project made by the first stage of issue #18 has views without the
    read-only trigger; opening it gives them theirs (and `check` then finds nothing
    missing), so a DELETE on the old queue names cannot empty the queue there either."""
    from annotation.store.check import check_project

    with Store.open(pg_url) as store:
        views = {r[0] for r in store.conn.raw(  # type: ignore[attr-defined]
            "SELECT table_name FROM information_schema.views WHERE table_schema = 'public'")}
        for view in views:  # as such a database was made
            store.conn.raw(f"DROP TRIGGER {view}_read_only ON {view}")  # type: ignore[attr-defined]
        assert pg._unguarded_views(store.conn) == views  # type: ignore[arg-type]
    with Store.open(pg_url) as store:
        assert pg._unguarded_views(store.conn) == set()  # type: ignore[arg-type]
    assert check_project(pg_url).ok
