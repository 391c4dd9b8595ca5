"""The project store: one SQLite file per project, opened through sqlite-utils.

This package is the only code that speaks SQL (``tests/test_storage_boundary.py`` checks
it): this module (connection, migrations, imports, whole-table frames), ``project``
(reads of project rows), ``accounts`` (users, sign-in audit, sessions), ``trees`` and
``conflicts`` (review and verdict rows for the results), ``backup``, ``check``,
``history``, ``guard``. Everything else hands it validated records
(:mod:`annotation.records`) to write, and asks it for records or DataFrames.

* WAL journal, ``synchronous=FULL`` (an acknowledged answer survives a crash of the
  process and of the machine), foreign keys on, a busy timeout so concurrent annotators
  wait for each other instead of failing.
* The schema is migrated forward on open (:mod:`annotation.store.schema`).
* Image bytes live beside the database in ``<name>_media/<sha[:2]>/<sha>.<ext>``,
  content-addressed, so a bundle folder may be moved or deleted after its import.
* Human answers are append-only: one writer (:func:`annotation.store.answers.supersede`)
  appends a new row that supersedes the current one; triggers refuse UPDATE and DELETE.
* The workflows' reservations, submissions, visits and settings: :mod:`annotation.store.queue`.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import operator
import os
import re
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pandas as pd
import sqlite_utils

from annotation.accounts import sessions
from annotation.records import (
    Annotation,
    Criterion,
    ImageFile,
    Judge,
    Judgment,
    Output,
    ProjectData,
    Question,
    RecordProgress,
    Task,
    TaskImage,
)
from annotation.store import pg, schema
from annotation.store.media import media_dir, media_file
from annotation.timestamps import now_iso  # noqa: F401  (re-exported: store.now_iso)

BUSY_TIMEOUT_MS = 30_000
#: judgments written per ``executemany`` of an import (progress is told after each)
WRITE_CHUNK = 10_000


def dumps(value: Any) -> str:
    """Canonical JSON for meta columns: sorted keys, UTF-8 kept."""
    if not value and type(value) in (dict, list):
        return "{}" if type(value) is dict else "[]"  # most meta: no encoder for them
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def append_audit(conn: sqlite3.Connection, *, actor: str | None, action: str,
                 subject: str | None, detail: dict[str, Any] | None = None,
                 at: str | None = None) -> None:
    """Append one event to the append-only ``audit_log``, inside the caller's transaction
    (accounts, sign-ins, submissions, flags, workflow settings)."""
    conn.execute(
        "INSERT INTO audit_log (at, actor, action, subject, detail) VALUES (?, ?, ?, ?, ?)",
        [at or now_iso(), actor, action, subject, dumps(detail or {})],
    )


def process_user() -> str:
    """Who runs this process, for records whose caller named nobody: ``os:<login name>``."""
    try:
        return f"os:{getpass.getuser()}"
    except Exception:  # no login name in the environment
        return "os"


def _create_private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 if it does not exist (an existing file is left
    as it is): the CLI has no sign-in, so whoever can read the file owns the project."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, 0o600)  # exactly 0600, whatever the umask
    finally:
        os.close(fd)


def _create_private_dir(path: Path) -> None:
    """Create the folder ``path`` with mode 0700 if it does not exist (else leave it)."""
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        return
    path.chmod(0o700)


_writer_locks: dict[str, threading.RLock] = {}
_writer_locks_guard = threading.Lock()


def writer_lock(path: str | os.PathLike[str]) -> threading.RLock:
    """The lock the writers of this process take around a write transaction on ``path``.

    SQLite lets one writer in at a time; the others wait in its busy handler, which sleeps
    and retries (up to 100 ms between tries), so under load a freed lock sat unused while
    every waiter slept, and a transaction whose thread waited for the GIL kept the rest
    out (the soak of issue #14: 20 annotators, most of a press's delay spent waiting in
    ``BEGIN IMMEDIATE``). Within one process the writers now queue on this lock and the
    next one starts the moment the previous one commits; other processes (the command
    line) still meet SQLite's busy handler. Re-entrant, one per database file."""
    key = os.path.realpath(path)
    with _writer_locks_guard:
        lock = _writer_locks.get(key)
        if lock is None:
            lock = _writer_locks[key] = threading.RLock()
        return lock


class SchemaTooNew(RuntimeError):
    """The database was written by a newer judge-audit."""


@dataclass
class SessionGuard:
    """Who a store writes for: ``token()`` gives the acting session's token (read afresh
    at every write: in the app, the cookie of the browser connection that asked), and
    ``on_refused`` is told when :meth:`Store.transaction` refuses a write."""

    token: Callable[[], str | None]
    on_refused: Callable[[sessions.SignedOut], None] = lambda exc: None


class Store:
    """A judge-audit project database. Use :meth:`open`; close with :meth:`close`."""

    #: ``"sqlite"`` (a file) or ``"postgresql"`` (a URL: :mod:`annotation.store.pg`)
    engine = "sqlite"
    #: the ``postgresql://`` URL the store was opened with (None for a SQLite file)
    url: str | None = None

    def __init__(self, path: Path, conn: sqlite3.Connection):
        self.path = path
        self.conn = conn
        self.db: Any = sqlite_utils.Database(conn) if isinstance(conn, sqlite3.Connection) \
            else _DictRows(conn)
        #: set by the app: every transaction then checks the acting session
        self.guard: SessionGuard | None = None
        self._writer = writer_lock(path)  # the process's writers of this file queue on it

    # ----------------------------------------------------------------- opening
    @classmethod
    def open(cls, path: str | os.PathLike[str], *, migrate: bool = True) -> Store:
        """Open (creating if needed) the project database at ``path`` and migrate it.

        A database created here is readable by its owner only (0600; SQLite gives its
        ``-wal`` and ``-shm`` files the same mode); an existing file keeps its mode.
        """
        if isinstance(path, str) and pg.is_url(path):
            return cls._open_postgresql(path, migrate=migrate)
        if re.match(r"(?i)postgres(?:ql)?:/", os.fspath(path)):
            # a URL passed through Path() ("postgresql:/db?host=...") would silently become
            # a new SQLite file under a folder named "postgresql:" in the working directory
            raise ValueError("a postgresql:// URL turned into a file path (Path() drops a"
                             " '/'): pass the URL as a string")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        _create_private_file(path)
        conn = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        store = cls(path, conn)
        if migrate:
            store.migrate()
        return store

    @classmethod
    def _open_postgresql(cls, url: str, *, migrate: bool) -> Store:
        """A store on the PostgreSQL database of ``url`` (:mod:`annotation.store.pg`); its
        media folder is ``<media root>/<database>_media`` (:func:`pg.parse`)."""
        conn = pg.connect(url)
        conn.target.media_root.mkdir(parents=True, exist_ok=True)
        store = cls(conn.target.anchor, cast(sqlite3.Connection, conn))
        store.engine, store.url = "postgresql", url
        if migrate:
            store.migrate()
        else:
            conn.keys = pg.integer_keys(schema.SCHEMA_VERSION)
        return store

    @property
    def location(self) -> str:
        """What the store was opened with: the URL, or the file's path."""
        return self.url or str(self.path)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def media_dir(self) -> Path:
        return media_dir(self.path)

    def schema_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def migrate(self) -> int:
        """Apply the migrations this file has not seen yet; return the new version."""
        if self.engine == "postgresql":
            version = pg.migrate(cast(pg.PgConnection, self.conn), schema.SCHEMA_VERSION)
            if version > schema.SCHEMA_VERSION:
                raise SchemaTooNew(
                    f"{pg.redacted(self.location)}: schema version {version} is newer than this"
                    f" judge-audit ({schema.SCHEMA_VERSION}); upgrade judge-audit")
            return version
        with self.transaction(public=True):
            version = self.schema_version()
            if version > schema.SCHEMA_VERSION:
                raise SchemaTooNew(
                    f"{self.path}: schema version {version} is newer than this judge-audit "
                    f"({schema.SCHEMA_VERSION}); upgrade judge-audit"
                )
            for number in range(version, schema.SCHEMA_VERSION):
                for statement in split_sql(schema.MIGRATIONS[number]):
                    self.conn.execute(statement)
                self.conn.execute(f"PRAGMA user_version = {number + 1}")
        if version < schema.VACUUM_AFTER <= schema.SCHEMA_VERSION:
            # a migration dropped tables: give their pages back (no free pages stay
            # behind to hide a torn page from the integrity check); the migration stands
            # if another connection keeps the file busy
            with contextlib.suppress(sqlite3.OperationalError):
                self.conn.execute("VACUUM")
        return self.schema_version()

    @contextmanager
    def transaction(self, *, user: str | None = None, role: str | tuple[str, ...] | None = None,
                    public: bool = False) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any exception.

        The one check of every human write: when the store acts for a signed-in person
        (:attr:`guard` set, as the app does), the transaction first verifies, inside
        ``BEGIN IMMEDIATE``, that the acting session is live (not revoked, not expired),
        its account enabled with the role it began with, ``role`` (if given) that role,
        and ``user`` (if given: whose name the write is made under) the session's own.
        Otherwise :class:`annotation.accounts.sessions.SignedOut` is raised and nothing is
        written; the guard's ``on_refused`` is told (the app signs out and reruns).
        ``public``: writes made before anyone is signed in (sign-in attempts and their
        audit rows, starting and ending a session, migrations). Without a guard (the
        command line, which has no sign-in: whoever can write the file owns it) nothing
        is checked.
        """
        lock = self._writer
        if not lock.acquire(timeout=BUSY_TIMEOUT_MS / 1000):
            raise sqlite3.OperationalError("database is locked")
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                if self.guard is not None and not public:
                    from annotation.store.accounts import AccountRows

                    sessions.check(AccountRows(self.conn), self.guard.token(), user=user,
                                   role=role)
                yield self.conn
            except BaseException as exc:
                self.conn.execute("ROLLBACK")
                if isinstance(exc, sessions.SignedOut) and self.guard is not None:
                    self.guard.on_refused(exc)
                raise
            self.conn.execute("COMMIT")
        finally:
            lock.release()

    # ----------------------------------------------------------------- reading
    TABLES = (
        "tasks",
        "images",
        "questions",
        "criteria",
        "judges",
        "outputs",
        "judgments",
        "annotators",
        "annotations",
        "files",
        "imports",
    )

    def counts(self) -> dict[str, int]:
        """Rows per table, plus ``missing_outputs`` and ``current_annotations``."""
        out = {t: self.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in self.TABLES}
        out["missing_outputs"] = self.conn.execute(
            "SELECT count(*) FROM outputs WHERE missing = 1"
        ).fetchone()[0]
        out["current_annotations"] = self.conn.execute(
            "SELECT count(*) FROM current_annotations"
        ).fetchone()[0]
        return out

    def project_info(self) -> dict[str, Any]:
        return {k: v for k, v in self.conn.execute("SELECT key, value FROM project")}

    def query_df(self, sql: str, params: Iterable[Any] = ()) -> pd.DataFrame:
        """Run a read-only query and return a DataFrame (for the storage-layer modules):
        what ``pd.read_sql_query`` returns, converted in chunks (:mod:`annotation.store.frames`)."""
        from annotation.store.frames import read_frame

        return read_frame(self.conn, sql, params)

    def import_log(self) -> pd.DataFrame:
        df = self.query_df("SELECT * FROM imports ORDER BY import_id")
        df["counts"] = df["counts"].map(json.loads)
        df["warnings"] = df["warnings"].map(json.loads)
        return df

    def tasks_df(self) -> pd.DataFrame:
        return self.query_df(
            "SELECT task_id, instruction, checklist_id, meta FROM tasks ORDER BY rowid")

    def images_df(self, task_id: str | None = None) -> pd.DataFrame:
        sql = (
            "SELECT i.task_id, i.idx, i.role, i.kind, i.label, i.path, i.sha256, i.meta,"
            " f.format, f.width, f.height FROM images i JOIN files f USING (sha256)"
        )
        if task_id is None:
            return self.query_df(sql + " ORDER BY i.task_id, i.idx")
        return self.query_df(sql + " WHERE i.task_id = ? ORDER BY i.idx", [task_id])

    def questions_df(self) -> pd.DataFrame:
        return self.query_df("SELECT * FROM questions ORDER BY checklist_id, position")

    def criteria_df(self) -> pd.DataFrame:
        return self.query_df("SELECT * FROM criteria ORDER BY position")

    def judges_df(self) -> pd.DataFrame:
        return self.query_df("SELECT * FROM judges ORDER BY name")

    def outputs_df(self) -> pd.DataFrame:
        return self.query_df("SELECT * FROM outputs ORDER BY rowid")

    def judgments_df(self, *, raw: bool = True) -> pd.DataFrame:
        """Every judgment in import order; ``raw=False`` leaves out the ``raw`` column
        (the judge's unparsed reply: the study's tables never read it)."""
        return self.query_df(
            "SELECT judge, output_id, question_id, criterion, answer, score,"
            + (" raw," if raw else "") + " parse_status FROM judgments ORDER BY judgment_id"
        )

    def judge_scores_df(self) -> pd.DataFrame:
        """The parsed rating judgments (``parse_status = 'ok'`` with a criterion) in import
        order: ``output_id, judge, criterion, score`` (score as float). The same rows and
        values as filtering :meth:`judgments_df`, read without the columns they do not use:
        the database's cells become Python objects one by one, the bulk of a large
        study's load (issue #18)."""
        frame = self._parsed_judgments("criterion", "score")
        frame["score"] = frame["score"].astype("float64")
        return frame

    def judge_answers_df(self) -> pd.DataFrame:
        """The parsed checklist judgments (``parse_status = 'ok'`` with a question) in import
        order: ``output_id, judge, question_id, answer`` (see :meth:`judge_scores_df`)."""
        return self._parsed_judgments("question_id", "answer")

    def _parsed_judgments(self, target: str, value: str) -> pd.DataFrame:
        """``output_id, judge, <target>, <value>`` of the parsed judgments with a ``target``
        (column names of ``judgments``, never user input)."""
        return self.query_df(
            f"SELECT output_id, judge, {target}, {value} FROM judgments"
            f" WHERE parse_status = 'ok' AND {target} IS NOT NULL ORDER BY judgment_id")

    def item_times_df(self) -> pd.DataFrame:
        """Active seconds per (annotator, output), summed over visits of the annotation
        workflow (``queue_visits`` of kind ``annotate``)."""
        return self.query_df(
            "SELECT person AS annotator, unit AS output_id,"
            " SUM(active_seconds) AS active_seconds FROM queue_visits WHERE kind = 'annotate'"
            " GROUP BY person, unit ORDER BY person, unit")

    def annotations_df(self, *, history: bool = False) -> pd.DataFrame:
        """Current human answers, or with ``history=True`` every row ever written."""
        table = "annotations" if history else "current_annotations"
        return self.query_df(f"SELECT * FROM {table} ORDER BY annotation_id")

    def media_path(self, sha256: str, fmt: str) -> Path:
        return media_file(self.path, sha256, fmt)

    def file_path(self, sha256: str) -> Path:
        """Where the bytes of a stored image are."""
        row = self.conn.execute("SELECT format FROM files WHERE sha256 = ?", [sha256]).fetchone()
        if row is None:
            raise KeyError(sha256)
        return self.media_path(sha256, row[0])

    # -------------------------------------------------------- existing content
    def existing_rows(self, project: ProjectData) -> dict[str, dict[Any, dict[str, Any]]]:
        """The rows already stored under the keys ``project`` brings, as row dicts.

        Used by :func:`annotation.formats.validate.check_project` to accept identical re-imports
        and refuse conflicting ones.
        """
        def fetch(table: str, key: str, keys: set[Any]) -> dict:
            return {row[key]: row for row in self._rows_in(table, key, keys)}

        existing: dict[str, dict[Any, Any]] = {
            "tasks": fetch("tasks", "task_id", {t.task_id for t in project.tasks}),
            "questions": fetch(
                "questions", "question_id", {q.question_id for q in project.questions}
            ),
            "criteria": fetch("criteria", "name", {c.name for c in project.criteria}),
            "judges": fetch("judges", "name", {j.name for j in project.judges}),
            "outputs": fetch("outputs", "output_id", {o.output_id for o in project.outputs}),
        }
        existing["images"] = {
            (row["task_id"], row["idx"]): row
            for row in self._rows_in("images", "task_id", {t.task_id for t in project.tasks})}
        existing["judgments"] = self.stored_judgments(project.judgments)
        existing["annotations"] = {}
        any_annotation = self.conn.execute("SELECT 1 FROM annotations LIMIT 1").fetchone()
        if project.annotations and any_annotation:
            for row in self.db.query("SELECT * FROM annotations ORDER BY annotation_id"):
                key = (row["annotator"], row["output_id"], row["question_id"], row["criterion"])
                existing["annotations"].setdefault(key, []).append(row)
        # ids that may be referenced without being re-imported
        existing["all_output_ids"] = {
            r[0]: r[1] for r in self.conn.execute("SELECT output_id, task_id FROM outputs")
        }
        existing["all_questions"] = {
            r[0]: r[1] for r in self.conn.execute("SELECT question_id, checklist_id FROM questions")
        }
        existing["all_criteria"] = {
            r["name"]: r for r in self.db.query("SELECT * FROM criteria")
        }
        existing["all_judges"] = {r["name"]: r for r in self.db.query("SELECT * FROM judges")}
        existing["task_checklists"] = {
            r[0]: r[1] for r in self.conn.execute("SELECT task_id, checklist_id FROM tasks")
        }
        if project.work:
            from annotation.store import human_work

            existing["work"] = human_work.stored_rows(self, project.work)
            existing["task_images"] = human_work.image_counts(self)
            existing["image_hashes"] = human_work.image_hashes(self)
        if (project.pairs or project.rankings or project.pair_answers
                or project.ranking_answers or project.work):  # work: units of pairs, rankings
            from annotation.store import pairs

            existing["pairs"] = pairs.stored(self)  # issue #17
        return existing

    #: keys asked for in one query of :meth:`_rows_in` (SQLite takes up to 32,766
    #: parameters a statement; PostgreSQL 65,535)
    KEYS_PER_QUERY = 500

    def stored_judgments(self, judgments: Iterable[Judgment]
                         ) -> dict[tuple[Any, ...], dict[str, Any]]:
        """The stored judgments of the judges and outputs that ``judgments`` name, by key
        (judge, output, question, criterion), as row dicts: what an import compares its
        judgments with. Read through the ``judgments_key`` index, a judge and up to
        :data:`KEYS_PER_QUERY` outputs at a time, so an import into a big study reads
        what it brings, not every stored judgment."""
        rows: dict[tuple[Any, ...], dict[str, Any]] = {}
        if not self.conn.execute("SELECT 1 FROM judgments LIMIT 1").fetchone():
            return rows  # a first import: nothing to compare with
        wanted: dict[str, set[str]] = {}
        for j in judgments:
            outputs = wanted.get(j.judge)
            if outputs is None:
                outputs = wanted[j.judge] = set()
            outputs.add(j.output_id)
        for judge, outputs in wanted.items():
            for row in self._rows_in("judgments", "output_id", outputs, judge=judge):
                rows[(row["judge"], row["output_id"], row["question_id"],
                      row["criterion"])] = row
        return rows

    def _rows_in(self, table: str, column: str, values: set[Any], **equal: Any
                 ) -> Iterator[dict[str, Any]]:
        """The rows of ``table`` whose ``column`` is one of ``values`` (and each column
        of ``equal`` that value), as dicts: :data:`KEYS_PER_QUERY` values a query, each
        looked up through the table's key, so what is read grows with ``values``, not
        with the table. Nothing is asked of an empty table."""
        if not values or not self.conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone():
            return
        ids, step = list(values), self.KEYS_PER_QUERY
        where = "".join(f"{name} = ? AND " for name in equal)
        for start in range(0, len(ids), step):
            chunk = ids[start:start + step]
            yield from self.db.query(
                f"SELECT * FROM {table} WHERE {where}{column} IN"
                f" ({', '.join('?' * len(chunk))})", [*equal.values(), *chunk])

    def question_checklists(self) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
        """Every stored question -> its checklist, task -> its checklist and output -> its
        task: what :func:`annotation.formats.question_ids.qualify_question_ids` resolves
        question ids with."""
        questions = dict(self.conn.execute("SELECT question_id, checklist_id FROM questions"))
        tasks = dict(self.conn.execute("SELECT task_id, checklist_id FROM tasks"))
        outputs = dict(self.conn.execute("SELECT output_id, task_id FROM outputs"))
        return questions, tasks, outputs

    # ----------------------------------------------------------------- writing
    def write(self, project: ProjectData, *, user: str | None = None,
              progress: RecordProgress = None) -> int:
        """Write a validated import in one transaction; return its ``import_id``.

        ``project`` must have passed :func:`annotation.formats.validate.check_project` against this
        store (which drops rows already stored identically). Image bytes are copied into
        the media folder first: a file there without a row is harmless, a row without its
        file is not. ``user`` (who imports) defaults to :func:`process_user`, so the import
        log always says who. ``progress`` is told the judgments written
        (``"judgments", done, total``) every :data:`WRITE_CHUNK` rows.
        """
        self._copy_media(project)
        started = now_iso()
        # from the app: an admin's live session, importing under their own name
        with self.transaction(user=user, role="admin") as conn:
            cur = conn.execute(
                "INSERT INTO imports (source, format, started_at, counts, warnings, user)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [
                    project.source,
                    project.format,
                    started,
                    dumps(project.counts()),
                    dumps([str(w) for w in project.warnings]),
                    user or process_user(),
                ],
            )
            import_id = int(cur.lastrowid or 0)
            self._write_rows(conn, project, import_id, progress)
            conn.execute(
                "UPDATE imports SET finished_at = ? WHERE import_id = ?", [now_iso(), import_id]
            )
        return import_id

    def _copy_media(self, project: ProjectData) -> None:
        files: dict[str, ImageFile] = {}
        for image in project.images:
            files[image.file.sha256] = image.file
        for output in project.outputs:
            if output.file is not None:
                files[output.file.sha256] = output.file
        for f in files.values():
            target = self.media_path(f.sha256, f.format)
            if target.exists() and target.stat().st_size == f.size_bytes:
                continue
            _create_private_dir(self.media_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(target.suffix + ".part")
            shutil.copyfile(f.source, tmp)
            os.replace(tmp, target)

    def _write_rows(self, conn: sqlite3.Connection, p: ProjectData, import_id: int,
                    progress: RecordProgress = None) -> None:
        info = self.project_info()
        settings = {"name": p.name, "benchmark": p.benchmark}
        if p.guidelines is not None:
            settings["guidelines"] = p.guidelines
        if p.meta:
            settings["meta"] = dumps(p.meta)
        for key, value in settings.items():
            if key not in info or key in ("guidelines", "meta"):
                conn.execute(
                    "INSERT INTO project (key, value) VALUES (?, ?)"
                    " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    [key, value],
                )
        files = {}
        for image in p.images:
            files[image.file.sha256] = image.file
        for output in p.outputs:
            if output.file is not None:
                files[output.file.sha256] = output.file
        conn.executemany(
            "INSERT OR IGNORE INTO files (sha256, format, width, height, size_bytes)"
            " VALUES (?, ?, ?, ?, ?)",
            [(f.sha256, f.format, f.width, f.height, f.size_bytes) for f in files.values()],
        )
        position = conn.execute("SELECT IFNULL(MAX(position) + 1, 0) FROM criteria").fetchone()[0]
        conn.executemany(
            "INSERT INTO criteria (name, label, min, max, step, level, rubric, position)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (c.name, c.label, c.min, c.max, c.step, c.level, c.rubric, position + i)
                for i, c in enumerate(p.criteria)
            ],
        )
        conn.executemany(
            "INSERT INTO judges (name, kind, scale_min, scale_max) VALUES (?, ?, ?, ?)",
            [
                (j.name, j.kind, *(j.scale if j.scale else (None, None)))
                for j in p.judges
            ],
        )
        conn.executemany(
            "INSERT INTO tasks (task_id, instruction, checklist_id, meta, import_id)"
            " VALUES (?, ?, ?, ?, ?)",
            [(t.task_id, t.instruction, t.checklist_id, dumps(t.meta), import_id) for t in p.tasks],
        )
        conn.executemany(
            "INSERT INTO images (task_id, idx, role, kind, label, path, sha256, meta)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (i.task_id, i.index, i.role, i.kind, i.label, i.path, i.file.sha256, dumps(i.meta))
                for i in p.images
            ],
        )
        conn.executemany(
            "INSERT INTO questions (question_id, checklist_id, position, text, pass_answer,"
            " operator, target, depends_on, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    q.question_id, q.checklist_id, q.position, q.text, q.pass_answer,
                    q.operator, q.target, dumps(q.depends_on), dumps(q.meta),
                )
                for q in p.questions
            ],
        )
        conn.executemany(
            "INSERT INTO outputs (output_id, task_id, generator, path, sha256, missing, meta,"
            " import_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    o.output_id, o.task_id, o.generator, o.path,
                    o.file.sha256 if o.file else None, int(o.missing), dumps(o.meta), import_id,
                )
                for o in p.outputs
            ],
        )
        columns = ("judge", "output_id", "question_id", "criterion", "answer", "score", "raw",
                   "parse_status")
        row = operator.attrgetter(*columns)  # one tuple per judgment, no Python code per row
        insert = (f"INSERT INTO judgments ({', '.join(columns)}, import_id)"
                  f" VALUES ({', '.join('?' * len(columns))}, {int(import_id)})")
        judgments, total = p.judgments, len(p.judgments)
        for start in range(0, total, WRITE_CHUNK):
            conn.executemany(insert, map(row, judgments[start:start + WRITE_CHUNK]))
            if progress is not None:
                progress("judgments", min(start + WRITE_CHUNK, total), total)
        if p.annotations:
            self._write_annotations(conn, p.annotations, import_id,
                                    submitted="submissions.jsonl" not in p.work)
        if p.work:
            from annotation.store import human_work

            human_work.write(conn, p.work, import_id)
        if p.pairs or p.rankings or p.pair_answers or p.ranking_answers:
            from annotation.store import pairs

            pairs.write(conn, p, import_id)  # issue #17

    def _write_annotations(
        self, conn: sqlite3.Connection, annotations: list[Annotation], import_id: int,
        *, submitted: bool = True
    ) -> None:
        stamp = now_iso()
        names = sorted({a.annotator for a in annotations})
        conn.executemany(
            "INSERT OR IGNORE INTO annotators (name, created_at) VALUES (?, ?)",
            [(n, stamp) for n in names],
        )
        # history order: created_at, then file order (a stable sort keeps file order on ties)
        ordered = sorted(annotations, key=lambda a: a.created_at or stamp)
        for a in ordered:
            created = a.created_at or stamp
            answers.supersede(conn, "annotation", _annotation_row(
                a, created, a.source or f"import:{import_id}", import_id))
        # answers made elsewhere count as submitted items for the assignment rules, unless
        # the bundle says which were submitted (submissions.jsonl)
        if submitted:
            queue.Queue(conn, "annotate").submit_many(
                sorted({(a.annotator, a.output_id) for a in annotations}), stamp)

    def record_annotation(self, a: Annotation, *, source: str = "app") -> int:
        """Append one human answer (superseding the current one); return its row id.

        It runs in its own short ``BEGIN IMMEDIATE`` transaction, so concurrent annotators
        serialize on the write lock for milliseconds only. The annotation page writes
        through :func:`annotation.work.workflow.give_answer` instead (reservation and
        active time in the same transaction).
        """
        with self.transaction(user=a.annotator) as conn:
            return answers.supersede(conn, "annotation", _annotation_row(
                a, a.created_at or now_iso(), source, None)).row_id

    # ------------------------------------------------------------- exporting
    def read_project(self) -> ProjectData:
        """Everything in the store as records (image ``file.source`` = media path)."""
        info = self.project_info()
        files = {
            r["sha256"]: ImageFile(
                sha256=r["sha256"], width=r["width"], height=r["height"], format=r["format"],
                size_bytes=r["size_bytes"], source=self.media_path(r["sha256"], r["format"]),
            )
            for r in self.db.query("SELECT * FROM files")
        }
        p = ProjectData(
            name=info.get("name", ""),
            benchmark=info.get("benchmark", ""),
            source=str(self.path),
            format="store",
            guidelines=info.get("guidelines"),
            meta=json.loads(info["meta"]) if info.get("meta") else {},
        )
        p.criteria = [
            Criterion(r["name"], r["label"], r["min"], r["max"], r["step"], r["level"], r["rubric"])
            for r in self.db.query("SELECT * FROM criteria ORDER BY position")
        ]
        p.judges = [
            Judge(
                r["name"], r["kind"],
                (r["scale_min"], r["scale_max"]) if r["scale_min"] is not None else None,
            )
            for r in self.db.query("SELECT * FROM judges ORDER BY name")
        ]
        p.tasks = [
            Task(r["task_id"], r["instruction"], r["checklist_id"], json.loads(r["meta"]))
            for r in self.db.query("SELECT * FROM tasks ORDER BY rowid")
        ]
        p.images = [
            TaskImage(
                r["task_id"], r["idx"], r["role"], r["path"], files[r["sha256"]], r["kind"],
                r["label"], json.loads(r["meta"]),
            )
            for r in self.db.query("SELECT * FROM images ORDER BY task_id, idx")
        ]
        p.questions = [
            Question(
                r["question_id"], r["checklist_id"], r["position"], r["text"], r["pass_answer"],
                r["operator"], r["target"], json.loads(r["depends_on"]), json.loads(r["meta"]),
            )
            for r in self.db.query("SELECT * FROM questions ORDER BY checklist_id, position")
        ]
        p.outputs = [
            Output(
                r["output_id"], r["task_id"], r["generator"], r["path"],
                files[r["sha256"]] if r["sha256"] else None, bool(r["missing"]),
                json.loads(r["meta"]),
            )
            for r in self.db.query("SELECT * FROM outputs ORDER BY rowid")
        ]
        p.judgments = [
            Judgment(
                r["judge"], r["output_id"], r["question_id"], r["criterion"], r["answer"],
                r["score"], r["raw"], r["parse_status"],
            )
            for r in self.db.query("SELECT * FROM judgments ORDER BY judgment_id")
        ]
        p.annotations = [
            Annotation(
                r["annotator"], r["output_id"], r["question_id"], r["criterion"], r["answer"],
                r["score"], r["note"], r["created_at"], source=r["source"],
            )
            for r in self.db.query("SELECT * FROM annotations ORDER BY annotation_id")
        ]
        from annotation.store import human_work

        p.work = human_work.read_all(self)
        from annotation.store import pairs

        pairs.read_into(self, p)  # issue #17
        return p


class _DictRows:
    """``Store.db`` of a PostgreSQL store: sqlite-utils' ``query`` (rows as dicts)."""

    def __init__(self, conn: Any):
        self._conn = conn

    def query(self, sql: str, params: Iterable[Any] = ()) -> Iterator[dict[str, Any]]:
        cur = self._conn.execute(sql, list(params))
        names = [d[0] for d in cur.description]
        for row in cur.fetchall():
            yield dict(zip(names, row, strict=True))

    def table_names(self) -> list[str]:
        """The project's tables (sqlite-utils' ``table_names``; the schema-version table
        of PostgreSQL, SQLite's ``user_version``, is none of them)."""
        return self._names("BASE TABLE")

    def view_names(self) -> list[str]:
        """The project's views (sqlite-utils' ``view_names``)."""
        return self._names("VIEW")

    def _names(self, kind: str) -> list[str]:
        from annotation.store.pg import VERSION_TABLE

        rows = self._conn.raw(
            "SELECT table_name FROM information_schema.tables WHERE table_schema ="
            " current_schema() AND table_type = %s AND table_name <> %s ORDER BY table_name",
            [kind, VERSION_TABLE]).fetchall()
        return [r[0] for r in rows]


def _annotation_row(a: Annotation, created_at: str, source: str,
                    import_id: int | None) -> dict[str, Any]:
    """The ``annotations`` row of a record (for :func:`annotation.store.answers.supersede`)."""
    return {"annotator": a.annotator, "output_id": a.output_id, "question_id": a.question_id,
            "criterion": a.criterion, "answer": a.answer, "score": a.score, "note": a.note,
            "created_at": created_at, "source": source, "import_id": import_id}


def split_sql(script: str) -> list[str]:
    """Split a migration into statements (``sqlite3.complete_statement`` aware)."""
    statements, buf = [], ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--") and not buf.strip():
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            statements.append(buf.strip())
            buf = ""
    if buf.strip():
        statements.append(buf.strip())
    return statements


# the answer writer and the queues build on the helpers above
from annotation.store import answers, queue  # noqa: E402
