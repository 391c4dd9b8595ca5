"""Backup, restore and check of a project on PostgreSQL (issue #18): a ``postgresql://`` URL.

The SQLite versions (:mod:`annotation.store.backup`, :mod:`annotation.store.check`) hand a
URL to the functions here; the commands, their output and the backup's layout are the same:

* :func:`backup` writes ``OUT`` (an archive of ``pg_dump --format=custom``) and
  ``<OUT stem>_media/`` beside it (the image files the ``files`` table names, the same
  ``<sha[:2]>/<sha>.<ext>`` folders). The snapshot is consistent: one REPEATABLE READ
  transaction exports its snapshot and ``pg_dump --snapshot`` dumps exactly that, while the
  same transaction reads the schema version, the row counts and the list of image files
  (so the media copied are those of the dump, never of a later moment). Image bytes are
  written before the rows that name them, so every file the snapshot names is there. The
  archive is written under a temporary name, read back (``pg_restore --list``) and renamed
  into place (mode 0600: a backup is as private as the project).
* :func:`restore` reads the archive's schema version and its ``files`` rows without a
  server (``pg_restore --data-only --table``), refuses a newer schema or missing image
  files, copies the media first, then runs ``pg_restore --single-transaction
  --exit-on-error --no-owner --no-acl``: the database holds all of the backup or nothing of
  it. The target must be an empty database (no table, view or function in it); with
  ``force`` an existing one is first backed up beside its media folder
  (``<media root>/<db>.replaced-<time>.dump``, as SQLite keeps ``<name>.replaced-<time>``)
  and then replaced (``--clean --if-exists``, still one transaction).
* :func:`check` is ``judge-audit check`` in one READ ONLY transaction: the schema version
  (``judge_audit_schema``); every table, index, view, trigger and function the schema of
  that version has (the statements :func:`annotation.store.pg.schema_statements` builds it
  with, compared with ``pg_catalog``); the append-only triggers enabled; instead of
  ``PRAGMA integrity_check``, every table read end to end (each row as text, which reads
  every column's stored value) and the references SQLite's ``foreign_key_check`` checks
  (the schema's ``REFERENCES``, counted with ``NOT EXISTS``); then the media files as on
  SQLite (present, size, SHA-256, Pillow).

``pg_dump`` and ``pg_restore`` are looked for in ``$JUDGE_AUDIT_PG_BIN``, on ``PATH``, then
in the newest ``/usr/lib/postgresql/*/bin`` (Debian's ``postgresql-client``). A password
in the URL reaches them through ``PGPASSWORD``, never their command line.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import cast

from annotation.store import now_iso, pg, schema
from annotation.store.backup import (
    COUNTED,
    BackupSummary,
    RecoveryError,
    copy_media,
    fsync_dir,
    fsync_file,
    refuse_missing_media,
)
from annotation.store.check import CORE_TABLES, CheckReport, Problem, check_images
from annotation.store.media import media_dir

#: the first bytes of a ``pg_dump --format=custom`` archive
ARCHIVE_MAGIC = b"PGDMP"
SQLITE_MAGIC = b"SQLite format 3\x00"
_SYSTEM = "('pg_catalog', 'information_schema', 'pg_toast')"


def tool(name: str) -> Path:
    """The path of PostgreSQL's client program ``name`` (``pg_dump``, ``pg_restore``)."""
    configured = os.environ.get("JUDGE_AUDIT_PG_BIN")
    if configured and (Path(configured) / name).is_file():
        return Path(configured) / name
    found = shutil.which(name)
    if found:
        return Path(found)
    folders = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                     key=lambda p: int(p.split("/")[-2]) if p.split("/")[-2].isdigit() else 0,
                     reverse=True)
    for folder in folders:
        if (Path(folder) / name).is_file():
            return Path(folder) / name
    raise RecoveryError(f"{name} not found (looked in $JUDGE_AUDIT_PG_BIN, PATH and "
                        "/usr/lib/postgresql/*/bin): install PostgreSQL's client programs "
                        "(Debian: apt-get install postgresql-client), as new as the server")


def _conninfo(target: pg.Target) -> tuple[str, dict[str, str]]:
    """The connection string for the client programs without a password, and the
    environment that carries it."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(target.conninfo)
    env = dict(os.environ)
    password = params.pop("password", None)
    if password is not None:
        env["PGPASSWORD"] = str(password)
    return make_conninfo(**{k: str(v) for k, v in params.items()}), env


def _run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(args, capture_output=True, env=env)
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise RecoveryError(f"{Path(args[0]).name} failed: " + " / ".join(message[-5:]))
    return done


def _connect(url: str) -> pg.PgConnection:
    """:func:`annotation.store.pg.connect`, a failure raised as :class:`sqlite3.Error`."""
    psycopg = pg._driver()
    try:
        return pg.connect(url)
    except psycopg.Error as exc:
        raise pg._sqlite_error(exc) from exc


def _describe(conn: pg.PgConnection) -> tuple[int, dict[str, int], list[tuple[str, str, int]]]:
    """(schema version, row counts, image files) of the database, in the caller's
    transaction; :class:`RecoveryError` when it is not a judge-audit project."""
    tables = _tables(conn)
    if not {pg.VERSION_TABLE, "annotations", "files", "outputs"} <= tables:
        raise RecoveryError("not a judge-audit project database")
    version = int(conn.raw(f"SELECT version FROM {pg.VERSION_TABLE}").fetchone()[0])
    counts = {t: int(conn.raw(f'SELECT count(*) FROM "{t}"').fetchone()[0])
              for t in COUNTED if t in tables}
    files = [(str(s), str(f), int(n)) for s, f, n in conn.raw(
        'SELECT sha256, format, size_bytes FROM files ORDER BY sha256 COLLATE "C"')]
    return version, counts, files


def _tables(conn: pg.PgConnection) -> set[str]:
    return {r[0] for r in conn.raw(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')")}


# ------------------------------------------------------------------ backup
def backup(url: str, out_path: str | os.PathLike[str]) -> BackupSummary:
    """``judge-audit backup`` of the PostgreSQL database ``url`` into ``out_path`` (see the
    module docstring); a :class:`annotation.store.backup.BackupSummary`."""
    target = pg.parse(url)
    out = Path(out_path)
    if media_dir(out).resolve() == media_dir(target.anchor).resolve():
        raise RecoveryError(f"{out}: a backup cannot replace the media folder it copies")
    dump = tool("pg_dump")
    conninfo, env = _conninfo(target)
    try:
        conn = _connect(url)
    except sqlite3.Error as exc:
        raise RecoveryError(f"{pg.redacted(url)}: {exc}") from exc
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(f".{out.name}.{os.getpid()}.part")
    part.unlink(missing_ok=True)
    try:
        conn.raw("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        snapshot = str(conn.raw("SELECT pg_export_snapshot()").fetchone()[0])
        version, counts, files = _describe(conn)
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        _run([str(dump), "--format=custom", f"--snapshot={snapshot}", f"--file={part}",
              f"--dbname={conninfo}"], env)
        with contextlib.suppress(pg.ConnectionLost):  # read only: the dump is whole
            conn.raw("COMMIT")
        _run([str(tool("pg_restore")), "--list", str(part)])  # the archive reads back
        fsync_file(part)
        os.replace(part, out)
        fsync_dir(out.parent)
    except sqlite3.Error as exc:
        raise RecoveryError(f"{pg.redacted(url)}: {exc}") from exc
    finally:
        conn.close()
        part.unlink(missing_ok=True)
    copied, present, missing = copy_media(files, target.anchor, out)
    return BackupSummary(out, media_dir(out), version, counts, copied, present, tuple(missing))


# ------------------------------------------------------------------ restore
def _copy_rows(text: str, table: str) -> list[dict[str, str | None]]:
    """The rows of ``table`` in the ``COPY ... FROM stdin`` block of a plain SQL dump."""
    m = re.search(rf"^COPY (?:\w+\.)?\"?{table}\"? \((?P<cols>[^)]*)\) FROM stdin;\n"
                  r"(?P<rows>.*?)^\\\.$", text, re.MULTILINE | re.DOTALL)
    if m is None:
        return []
    cols = [c.strip().strip('"') for c in m["cols"].split(",")]
    out = []
    for line in m["rows"].splitlines():
        values = [None if v == r"\N" else v for v in line.split("\t")]
        out.append(dict(zip(cols, values, strict=False)))
    return out


def _archive_contents(src: Path) -> tuple[int, list[tuple[str, str, int]]]:
    """(schema version, image files) of the archive ``src``, read without a server."""
    done = _run([str(tool("pg_restore")), "--data-only", f"--table={pg.VERSION_TABLE}",
                 "--table=files", "--file=-", str(src.resolve())])
    text = done.stdout.decode("utf-8", errors="replace")
    versions = _copy_rows(text, pg.VERSION_TABLE)
    if not versions or versions[0].get("version") is None:
        raise RecoveryError(f"{src}: not a backup of a judge-audit project database")
    files = [(str(r["sha256"]), str(r["format"]), int(str(r["size_bytes"])))
             for r in _copy_rows(text, "files")]
    return int(str(versions[0]["version"])), sorted(files)


def _occupied(conn: pg.PgConnection) -> bool:
    """Whether the database holds anything of its own: a table, view, sequence or function
    outside the system schemas."""
    relations = conn.raw(
        "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        f" WHERE n.nspname NOT IN {_SYSTEM} AND n.nspname NOT LIKE 'pg_temp%'"
        " AND n.nspname NOT LIKE 'pg_toast_temp%'").fetchone()[0]
    functions = conn.raw(
        "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        f" WHERE n.nspname NOT IN {_SYSTEM}").fetchone()[0]
    return bool(relations or functions)


def restore(backup_path: str | os.PathLike[str], url: str, *,
            force: bool = False) -> BackupSummary:
    """``judge-audit restore`` of the archive ``backup_path`` (and its ``_media`` folder)
    into the PostgreSQL database ``url`` (see the module docstring)."""
    src = Path(backup_path)
    shown = pg.redacted(url)
    if not src.is_file():
        raise RecoveryError(f"{src}: no such backup")
    with src.open("rb") as fh:
        head = fh.read(16)
    if head.startswith(SQLITE_MAGIC):
        raise RecoveryError(f"{src} is a backup of a SQLite project: restore it into a SQLite "
                            "file (--db FILE.db), or export a bundle from it and import that "
                            "into PostgreSQL")
    if not head.startswith(ARCHIVE_MAGIC):
        raise RecoveryError(f"{src}: not a backup written by judge-audit backup (neither a "
                            "pg_dump archive nor a SQLite file)")
    restorer = tool("pg_restore")
    version, files = _archive_contents(src)
    if version > schema.SCHEMA_VERSION:
        raise RecoveryError(f"{src}: schema version {version} is newer than this "
                            f"judge-audit ({schema.SCHEMA_VERSION}); upgrade judge-audit")
    target = pg.parse(url)
    db = target.anchor
    try:
        conn = _connect(url)
    except sqlite3.Error as exc:
        raise RecoveryError(f"{shown}: {exc}") from exc
    try:
        occupied = _occupied(conn)
    finally:
        conn.close()
    if occupied and not force:
        raise RecoveryError(f"{shown} is not an empty database: restore with --force "
                            "(force=True) to replace it, or into a new database "
                            "(CREATE DATABASE)")
    refuse_missing_media(files, src, db)
    target.media_root.mkdir(parents=True, exist_ok=True)
    copied, present, _ = copy_media(files, src, db)  # files first: rows never lack them
    set_aside = None
    args = [str(restorer), "--single-transaction", "--exit-on-error", "--no-owner",
            "--no-acl"]
    if occupied:
        # keep what is replaced: a forced restore must not lose answers given since
        stamp = now_iso()[:19].replace(":", "").replace("-", "")
        set_aside = target.media_root / f"{target.dbname}.replaced-{stamp}.dump"
        backup(url, set_aside)
        args += ["--clean", "--if-exists"]
    conninfo, env = _conninfo(target)
    _run([*args, f"--dbname={conninfo}", str(src.resolve())], env)
    try:
        conn = _connect(url)
        try:
            version, counts, _files = _describe(conn)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise RecoveryError(f"{shown}: restored, but cannot be read: {exc}") from exc
    return BackupSummary(db, media_dir(db), version, counts, copied, present, (), set_aside,
                         label=shown, set_aside_what="the database that was there (backed up)")


# ------------------------------------------------------------------ check
_CREATE = re.compile(r"CREATE\s+(?:UNIQUE\s+)?(?P<kind>TABLE|INDEX|VIEW|TRIGGER|FUNCTION|AGGREGATE)"
                     r"\s+(?:IF\s+NOT\s+EXISTS\s+)?\"?(?P<name>\w+)\"?", re.IGNORECASE)


def expected_objects(version: int) -> set[tuple[str, str]]:
    """``(type, name)`` of every table, index, view, trigger and function the PostgreSQL
    schema of ``version`` has (aggregates are functions), plus the version table."""
    out = {("table", pg.VERSION_TABLE)}
    for statement in pg.schema_statements(version):
        m = _CREATE.match(statement)
        if m is not None:
            kind = m["kind"].lower()
            out.add(("function" if kind == "aggregate" else kind, m["name"].lower()))
    return out


def _objects(conn: pg.PgConnection) -> set[tuple[str, str]]:
    kinds = {"r": "table", "p": "table", "i": "index", "v": "view", "m": "view"}
    out = {(kinds[k], n) for k, n in conn.raw(
        "SELECT c.relkind, c.relname FROM pg_class c JOIN pg_namespace n"
        " ON n.oid = c.relnamespace WHERE n.nspname = current_schema()") if k in kinds}
    out |= {("trigger", n) for (n,) in conn.raw(
        "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = current_schema() AND NOT t.tgisinternal")}
    out |= {("function", n) for (n,) in conn.raw(
        "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = current_schema()")}
    return out


def _references(version: int) -> list[tuple[str, str, str, str]]:
    """(table, column, referenced table, referenced column) of every single-column
    ``REFERENCES`` of the schema (what SQLite's ``foreign_key_check`` checks)."""
    mem = sqlite3.connect(":memory:")
    out = []
    try:
        for kind, _name, _table, sql in pg.sqlite_schema(version):
            if kind == "table":
                mem.execute(sql)
        for kind, name, _table, _sql in pg.sqlite_schema(version):
            if kind != "table":
                continue
            for row in mem.execute(f'PRAGMA foreign_key_list("{name}")'):
                parent, column, parent_column = row[2], row[3], row[4]
                if parent_column is None:  # the parent's primary key
                    parent_column = next(r[1] for r in mem.execute(
                        f'PRAGMA table_info("{parent}")') if r[5] == 1)
                out.append((name, column, parent, parent_column))
    finally:
        mem.close()
    return out


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def database_problems(conn: pg.PgConnection, version: int) -> list[str]:
    """What PostgreSQL offers instead of SQLite's ``integrity_check`` and
    ``foreign_key_check``: every table read end to end, every reference resolved, every
    append-only trigger enabled ([] when sound)."""
    problems = []
    tables = sorted(_tables(conn))
    for table in tables:
        try:
            conn.raw("SAVEPOINT judge_audit_check")
            conn.raw(f"SELECT sum(length(t::text)) FROM {_quoted(table)} t").fetchone()
            conn.raw("RELEASE SAVEPOINT judge_audit_check")
        except pg.ConnectionLost:
            raise  # not the table's fault: the check as a whole is told
        except sqlite3.Error as exc:
            conn.raw("ROLLBACK TO SAVEPOINT judge_audit_check")
            problems.append(f"table {table} cannot be read to the end: {exc}")
    for table, column, parent, parent_column in _references(version):
        if table not in tables or parent not in tables:
            continue  # a missing table is reported as a missing schema object
        bad = conn.raw(
            f"SELECT count(*) FROM {_quoted(table)} c WHERE c.{_quoted(column)} IS NOT NULL"
            f" AND NOT EXISTS (SELECT 1 FROM {_quoted(parent)} p"
            f" WHERE p.{_quoted(parent_column)} = c.{_quoted(column)})").fetchone()[0]
        if bad:
            problems.append(f"foreign key: {table}.{column} -> {parent}.{parent_column}: "
                            f"{bad} row(s) name a missing {parent} row")
    for trigger, table in conn.raw(
            "SELECT t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema()"
            " AND NOT t.tgisinternal AND t.tgenabled = 'D' ORDER BY 1"):
        problems.append(f"the trigger {trigger} on {table} is disabled (ALTER TABLE {table} "
                        f"ENABLE TRIGGER {trigger}): the append-only guarantee is off")
    return problems


def check(url: str) -> CheckReport:
    """``judge-audit check`` of the PostgreSQL database ``url``: a
    :class:`annotation.store.check.CheckReport` (see the module docstring)."""
    target = pg.parse(url)
    shown = pg.redacted(url)
    db = target.anchor
    report = CheckReport(shown, str(media_dir(db)))
    report.journal_mode = "postgresql"
    fix_db = (f"restore the database from your last backup into a new, empty database: "
              f"judge-audit restore --from BACKUP.dump --db <its URL> (or --db {shown} "
              "--force, which first backs up what is there beside the media folder)")
    fix_media = (f"restore the media folder from your last backup: copy the files named above "
                 f"from <backup name>_media/ (same sub-folders) into {media_dir(db)}/, "
                 "deleting a damaged file first")
    report.notes.append("PostgreSQL: no journal file or WAL beside the database to keep (the "
                        "server keeps its own); instead of integrity_check every table is read "
                        "end to end and every reference resolved")
    try:
        conn = _connect(url)
    except sqlite3.Error as exc:
        report.problems.append(Problem("database", f"PostgreSQL cannot open it: {exc}", fix_db))
        return report
    try:
        conn.raw("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        objects = _objects(conn)
        tables = {n for t, n in objects if t == "table"}
        if pg.VERSION_TABLE not in tables or not tables >= CORE_TABLES:
            report.problems.append(Problem("schema", "not a judge-audit project database",
                                           fix_db))
            return report
        row = conn.raw(f"SELECT version FROM {pg.VERSION_TABLE}").fetchone()
        version = int(row[0]) if row is not None else 0
        report.schema_version = version
        if version > schema.SCHEMA_VERSION:
            report.problems.append(Problem(
                "schema", f"schema version {version} is newer than this judge-audit "
                          f"({schema.SCHEMA_VERSION})", "upgrade judge-audit; nothing to restore"))
            return report
        if version < 1:
            report.problems.append(Problem("schema", "not a judge-audit project database",
                                           fix_db))
            return report
        if version < schema.SCHEMA_VERSION:
            report.notes.append(f"schema v{version} is migrated to v{schema.SCHEMA_VERSION} "
                                "the next time judge-audit opens it for writing")
        for kind, name in sorted(expected_objects(version) - objects):
            report.problems.append(Problem("schema", f"the {kind} {name} of schema v{version} "
                                                     "is missing", fix_db))
        problems = database_problems(conn, version)
        for problem in problems[:20]:
            report.problems.append(Problem("database", problem, fix_db))
        if problems:
            return report  # the rows cannot be trusted: the images come after the restore
        # the store's dialect, translated
        check_images(cast(sqlite3.Connection, conn), db, report, fix_media)
    except pg.ConnectionLost as exc:  # the server restarted or ended this session
        report.problems.append(Problem(
            "database", f"the check was cut off: {exc}",
            "run judge-audit check again (a lost connection says nothing about the data)"))
    except sqlite3.Error as exc:
        report.problems.append(Problem("database", f"PostgreSQL cannot read it: {exc}", fix_db))
    finally:
        conn.close()
    return report
