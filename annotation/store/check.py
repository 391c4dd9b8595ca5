"""``judge-audit check``: is a project sound, and if not, what to restore (issue #12, item 2).

:func:`check_project` reads the database (read only; nothing is written, nothing migrated)
and its media folder and reports:

* the database: SQLite can open it, ``PRAGMA integrity_check`` and ``foreign_key_check``
  pass (:func:`annotation.store.backup.integrity_problems`);
* the schema: a judge-audit project, a version this judge-audit knows, and every table,
  view, index and trigger that version has (the append-only triggers included);
* the images: every file the ``files`` table names is in the media folder, with its size
  and SHA-256, and Pillow can read it (``Image.verify``);
* the WAL: the journal mode and the size of a ``-wal`` file (commits not yet copied into
  the main file: a copy of the ``.db`` alone would lose them; ``judge-audit backup``
  does not).

Each problem says what to restore (the database with ``judge-audit restore``, or the named
image files from the media folder of the last backup).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from annotation.store import pg, schema
from annotation.store.backup import connect, integrity_problems
from annotation.store.media import media_dir, media_file

CORE_TABLES = frozenset({"annotations", "files", "outputs", "tasks", "project"})


@dataclass(frozen=True)
class Problem:
    """One finding: ``kind`` (``database``, ``schema``, ``image``), what is wrong, and
    ``restore``: what to do about it."""

    kind: str
    what: str
    restore: str


@dataclass
class CheckReport:
    """What :func:`check_project` found (``ok``: no problem)."""

    database: str
    media_dir: str
    schema_version: int | None = None
    journal_mode: str | None = None
    wal_bytes: int = 0
    images_checked: int = 0
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}

    def text(self) -> str:
        """The plain report the CLI prints."""
        lines = [f"{self.database}: " + ("OK" if self.ok else
                                          f"{len(self.problems)} problem(s)")]
        if self.schema_version is not None:
            lines.append(f"  schema v{self.schema_version} (this judge-audit: "
                         f"v{schema.SCHEMA_VERSION}), journal {self.journal_mode}, "
                         f"WAL {self.wal_bytes:,} bytes, {self.images_checked:,} images "
                         f"checked in {self.media_dir}")
        lines += [f"  note: {note}" for note in self.notes]
        for problem in self.problems:
            lines.append(f"  {problem.kind}: {problem.what}")
        todo = list(dict.fromkeys(p.restore for p in self.problems))
        if todo:
            lines.append("what to do:")
            lines += [f"  - {step}" for step in todo]
        return "\n".join(lines)


def _restore_db(db: Path) -> str:
    return (f"restore the database from your last backup: judge-audit restore --from "
            f"BACKUP.db --db {db} --force (a file SQLite cannot read is kept as "
            f"{db.name}.replaced-<time>)")


def _restore_media(db: Path) -> str:
    return (f"restore the media folder from your last backup: copy the files named above "
            f"from <backup name>_media/ (same sub-folders) into {media_dir(db)}/, deleting "
            "a damaged file first; or judge-audit restore --from BACKUP.db --db "
            f"{db} --force, which also replaces the answers given since that backup")


def expected_objects(version: int) -> set[tuple[str, str]]:
    """``(type, name)`` of every table, view, index and trigger of schema ``version``."""
    conn = sqlite3.connect(":memory:")
    try:
        from annotation.store import split_sql

        for number in range(version):
            for statement in split_sql(schema.MIGRATIONS[number]):
                conn.execute(statement)
        return _objects(conn)
    finally:
        conn.close()


def _objects(conn: sqlite3.Connection) -> set[tuple[str, str]]:
    return {(t, n) for t, n in conn.execute(
        "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")}


def _open(db: Path) -> sqlite3.Connection:
    """Read only where SQLite allows it (a WAL database without its -shm file may need a
    writable connection to open; nothing is written through it either way)."""
    try:
        conn = connect(db, read_only=True)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        return connect(db)


def _check_image(path: Path, sha256: str, size: int) -> str | None:
    """What is wrong with the media file at ``path`` (None: present and sound)."""
    from PIL import Image

    if not path.is_file():
        return "missing"
    if path.stat().st_size != size:
        return f"damaged: {path.stat().st_size:,} bytes, the database says {size:,}"
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != sha256:
        return "damaged: its content does not match its SHA-256"
    try:
        with Image.open(path) as im:
            im.verify()
    except Exception as exc:  # Pillow raises many kinds on a broken file
        return f"damaged: not a readable image ({type(exc).__name__})"
    return None


def _used_by(conn: sqlite3.Connection, sha256: str) -> str:
    outputs = [r[0] for r in conn.execute(
        "SELECT output_id FROM outputs WHERE sha256 = ? ORDER BY output_id LIMIT 3", [sha256])]
    inputs = [f"{t} Image_{i}" for t, i in conn.execute(
        "SELECT task_id, idx FROM images WHERE sha256 = ? ORDER BY task_id, idx LIMIT 3",
        [sha256])]
    names = [f"output {o}" for o in outputs] + [f"task {i}" for i in inputs]
    return f" (used by {', '.join(names)})" if names else ""


def check_project(db_path: str | os.PathLike[str]) -> CheckReport:
    """Check the project at ``db_path`` and its media folder (see the module docstring); a
    ``postgresql://`` URL: :func:`annotation.store.pgops.check`."""
    if pg.is_url(db_path):
        from annotation.store import pgops

        return pgops.check(str(db_path))
    db = Path(db_path)
    report = CheckReport(str(db), str(media_dir(db)))
    if not db.is_file():
        report.problems.append(Problem("database", f"{db}: no such database file",
                                       _restore_db(db)))
        return report
    try:
        conn = _open(db)
    except sqlite3.DatabaseError as exc:
        report.problems.append(Problem("database", f"SQLite cannot open it: {exc}",
                                       _restore_db(db)))
        return report
    try:
        _check_database(conn, db, report)
    except sqlite3.DatabaseError as exc:
        report.problems.append(Problem("database", f"SQLite cannot read it: {exc}",
                                       _restore_db(db)))
    finally:
        conn.close()
    return report


def _check_database(conn: sqlite3.Connection, db: Path, report: CheckReport) -> None:
    report.journal_mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    wal = db.with_name(db.name + "-wal")
    report.wal_bytes = wal.stat().st_size if wal.is_file() else 0
    if report.wal_bytes:
        report.notes.append(f"{wal.name} holds {report.wal_bytes:,} bytes of commits not yet "
                            "copied into the main file: keep it with the database (judge-audit "
                            "backup copies both consistently; a copy of the .db alone does not)")
    problems = integrity_problems(conn)
    for problem in problems[:20]:
        report.problems.append(Problem("database", f"integrity_check: {problem}",
                                       _restore_db(db)))
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    report.schema_version = version
    objects = _objects(conn)
    if version < 1 or not {n for t, n in objects if t == "table"} >= CORE_TABLES:
        report.problems.append(Problem("schema", "not a judge-audit project database",
                                       _restore_db(db)))
        return
    if version > schema.SCHEMA_VERSION:
        report.problems.append(Problem(
            "schema", f"schema version {version} is newer than this judge-audit "
                      f"({schema.SCHEMA_VERSION})", "upgrade judge-audit; nothing to restore"))
        return
    if version < schema.SCHEMA_VERSION:
        report.notes.append(f"schema v{version} is migrated to v{schema.SCHEMA_VERSION} the "
                            "next time judge-audit opens it for writing")
    for kind, name in sorted(expected_objects(version) - objects):
        report.problems.append(Problem("schema", f"the {kind} {name} of schema v{version} is "
                                                 "missing", _restore_db(db)))
    if problems:
        return  # the rows cannot be trusted: the images come after the restore
    check_images(conn, db, report, _restore_media(db))


def check_images(conn: sqlite3.Connection, db: Path, report: CheckReport, fix: str) -> None:
    """Every image the ``files`` table names: in ``db``'s media folder, of its size and
    SHA-256, readable by Pillow; each one that is not is a problem (``fix``: what to do)."""
    files = conn.execute("SELECT sha256, format, size_bytes FROM files ORDER BY sha256")
    for sha, fmt, size in files.fetchall():
        report.images_checked += 1
        path = media_file(db, sha, fmt)
        wrong = _check_image(path, sha, int(size))
        if wrong is not None:
            where = path.relative_to(media_dir(db)) if path.is_relative_to(media_dir(db)) \
                else path
            report.problems.append(Problem("image", f"{where} {wrong}{_used_by(conn, sha)}",
                                           fix))
