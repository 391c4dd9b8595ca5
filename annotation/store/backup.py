"""Backups and restores of a project database and its media folder (issue #7).

* :func:`backup` copies the database with SQLite's online backup API
  (:meth:`sqlite3.Connection.backup`) in one step: it reads one consistent snapshot while
  the app goes on writing (WAL: readers never block writers), so the copy holds exactly
  the transactions committed before it started, never half of one. The copy is written
  beside the target under a temporary name, checked with ``PRAGMA integrity_check``,
  switched to a self-contained single file (``journal_mode=DELETE``), flushed to disk and
  renamed into place. *Then* the media folder is copied: image bytes are written before the
  rows that name them (:meth:`annotation.store.Store.write`), so every file the snapshot
  names is already there. Media files are content-addressed: only missing ones are copied.
* :func:`restore` checks the backup (``integrity_check``, a judge-audit schema not newer
  than this one, every image file at hand), copies the media files the project lacks, then
  writes the database: a new file is built under a temporary name and renamed into place;
  an existing database (only with ``force=True``) is overwritten through the backup API in
  one transaction, so a running app sees either the old or the restored content, never a
  mix. An existing file that SQLite cannot read is moved aside (``<name>.replaced-<time>``),
  never deleted.

The layout is the store's: ``<dir>/<stem>.db`` and ``<dir>/<stem>_media/<sha[:2]>/<sha>.<ext>``,
so a backup file can itself be opened as a project. A copy (database file, media folder)
gets the permission bits of what it copies: a backup is as private as the project.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path

from annotation.store import BUSY_TIMEOUT_MS, now_iso, pg, schema
from annotation.store.media import media_dir, media_file

COUNTED = ("annotations", "submissions", "flags", "outputs", "files", "users", "audit_log",
           "prelabel_readings", "conflict_verdicts", "tree_reviews", "conflict_resolutions",
           # issue #17: the human answers on pairs and rankings
           "pair_annotations", "ranking_annotations", "ranking_places")


class RecoveryError(RuntimeError):
    """A backup or restore was refused; the message says why. Nothing was replaced."""


@dataclass(frozen=True)
class BackupSummary:
    """What :func:`backup` or :func:`restore` wrote."""

    path: Path
    media_dir: Path
    schema_version: int
    counts: dict[str, int]
    media_copied: int
    media_present: int
    media_missing: tuple[str, ...] = ()
    set_aside: Path | None = None
    #: what :meth:`text` calls the database (a PostgreSQL URL, its password hidden);
    #: None: ``path``
    label: str | None = None
    #: what :meth:`text` calls the database ``set_aside`` holds
    set_aside_what: str = "the unreadable database that was there"

    def text(self) -> str:
        """A short human-readable account (printed by the CLI)."""
        counts = ", ".join(f"{k} {v:,}" for k, v in self.counts.items())
        lines = [
            f"{self.label or self.path} (schema v{self.schema_version}): {counts}",
            f"{self.media_dir}: {self.media_copied:,} image files copied, "
            f"{self.media_present:,} already there",
        ]
        if self.media_missing:
            lines.append(f"{len(self.media_missing)} image files were missing from the source "
                         f"media folder, e.g. {self.media_missing[0]}")
        if self.set_aside is not None:
            lines.append(f"{self.set_aside_what} is kept as {self.set_aside}")
        return "\n".join(lines)


# ------------------------------------------------------------------ helpers
def connect(path: Path, *, read_only: bool = False) -> sqlite3.Connection:
    if read_only:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True,
                               timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    else:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def integrity_problems(conn: sqlite3.Connection) -> list[str]:
    """``PRAGMA integrity_check`` and ``foreign_key_check`` findings ([] when sound)."""
    problems = [r[0] for r in conn.execute("PRAGMA integrity_check")]
    if problems == ["ok"]:
        problems = []
    problems += [f"foreign key: {r[0]} row {r[1]} -> {r[2]}"
                 for r in conn.execute("PRAGMA foreign_key_check")]
    return problems


def _describe(conn: sqlite3.Connection) -> tuple[int, dict[str, int], list[tuple[str, str, int]]]:
    """(schema version, row counts, image files ``(sha256, format, size_bytes)``)."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if version < 1 or not {"annotations", "files", "outputs"} <= tables:
        raise RecoveryError("not a judge-audit project database")
    counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for t in COUNTED if t in tables}
    files = conn.execute("SELECT sha256, format, size_bytes FROM files ORDER BY sha256").fetchall()
    return version, counts, files


def fsync_file(path: Path) -> None:
    """Force ``path``'s written bytes to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Force a folder's entries (a rename into it) to disk, where the file system can."""
    with contextlib.suppress(OSError):  # some file systems cannot fsync a directory
        fsync_file(path)


def _create_like(path: Path, like: Path) -> None:
    """Create ``path`` empty with the permission bits of ``like``: a copy is exactly as
    private as what it copies (SQLite gives its journals the same mode)."""
    mode = stat.S_IMODE(like.stat().st_mode)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)  # whatever the umask
    finally:
        os.close(fd)


def copy_media(files: list[tuple[str, str, int]], source_db: Path, target_db: Path,
                ) -> tuple[int, int, list[str]]:
    """Copy the image files ``target_db``'s media folder lacks from ``source_db``'s (a
    new media folder gets the source folder's permission bits). Returns (copied, already
    present, missing from both)."""
    copied, present, missing = 0, 0, []
    root, source_root = media_dir(target_db), media_dir(source_db)
    if files and not root.exists():
        root.mkdir(parents=True, mode=0o700)
        if source_root.is_dir():
            root.chmod(stat.S_IMODE(source_root.stat().st_mode))
    for sha, fmt, size in files:
        target = media_file(target_db, sha, fmt)
        if target.is_file() and target.stat().st_size == size:
            present += 1
            continue
        source = media_file(source_db, sha, fmt)
        if not (source.is_file() and source.stat().st_size == size):
            missing.append(str(source))
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(target.name + ".part")
        shutil.copyfile(source, part)
        fsync_file(part)
        os.replace(part, target)
        copied += 1
    return copied, present, missing


def _sidecars(db: Path) -> list[Path]:
    return [db.with_name(db.name + suffix) for suffix in ("-wal", "-shm", "-journal")]


def refuse_missing_media(files: list[tuple[str, str, int]], src: Path, db: Path) -> None:
    """Raise :class:`RecoveryError` unless every image ``files`` names (sha256, format,
    size) is, at its size, in the backup ``src``'s media folder or already in ``db``'s."""
    lacking = [sha for sha, fmt, size in files
               if not any(p.is_file() and p.stat().st_size == size
                          for p in (media_file(src, sha, fmt), media_file(db, sha, fmt)))]
    if lacking:
        raise RecoveryError(f"{media_dir(src)}: {len(lacking)} image files of the backup "
                            f"are missing, e.g. {lacking[0]}")


# ------------------------------------------------------------------ backup
def backup(db_path: str | os.PathLike[str], out_path: str | os.PathLike[str]) -> BackupSummary:
    """Back up the project at ``db_path`` to ``out_path`` (one SQLite file) and its media
    folder to ``<out stem>_media/``; safe while the app writes. An existing ``out_path`` is
    replaced atomically. Raises :class:`RecoveryError` (nothing replaced) when the database
    is missing or unsound, or ``out_path`` is the database itself. A ``postgresql://`` URL
    is backed up with ``pg_dump`` (:func:`annotation.store.pgops.backup`)."""
    if Path(out_path).is_dir():
        raise RecoveryError(f"{out_path}: is a folder; give the backup's file name (e.g. "
                            f"{Path(out_path) / 'study-backup.db'})")
    if pg.is_url(db_path):
        from annotation.store import pgops

        return pgops.backup(str(db_path), out_path)
    db, out = Path(db_path), Path(out_path)
    if not db.is_file():
        raise RecoveryError(f"{db}: no such database")
    if out.resolve() == db.resolve() or media_dir(out).resolve() == media_dir(db).resolve():
        raise RecoveryError(f"{out}: a backup cannot replace the database it copies")
    stale = [p for p in _sidecars(out) if p.exists()]
    if stale:
        raise RecoveryError(f"{stale[0]} exists: it belongs to another database of that name; "
                            "remove it or back up under another name")
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(f".{out.name}.{os.getpid()}.part")
    for p in [part, *_sidecars(part)]:
        p.unlink(missing_ok=True)
    try:
        _create_like(part, db)
        source = connect(db)
        try:
            _describe(source)  # refuse anything that is not a project before copying
            target = sqlite3.connect(part, isolation_level=None)
            try:
                source.backup(target)  # all pages in one step: one consistent snapshot
                target.execute("PRAGMA journal_mode = DELETE")
                problems = integrity_problems(target)
                if problems:
                    raise RecoveryError(f"{db}: the copy fails integrity_check: {problems[:5]}")
                version, counts, files = _describe(target)
            finally:
                target.close()
        finally:
            source.close()
        fsync_file(part)
        os.replace(part, out)
        fsync_dir(out.parent)
    except sqlite3.DatabaseError as exc:
        raise RecoveryError(f"{db}: {exc}") from exc
    finally:
        for p in [part, *_sidecars(part)]:
            p.unlink(missing_ok=True)
    copied, present, missing = copy_media(files, db, out)
    return BackupSummary(out, media_dir(out), version, counts, copied, present, tuple(missing))


# ------------------------------------------------------------------ restore
def _usable(db: Path) -> bool:
    """Whether SQLite can read the database at ``db`` (``quick_check`` passes)."""
    try:
        conn = connect(db)
        try:
            return conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return False


def _write_new(source: sqlite3.Connection, db: Path, like: Path) -> None:
    """Build the database under a temporary name beside ``db`` (with the permission bits of
    ``like``), then rename it into place."""
    part = db.with_name(f".{db.name}.{os.getpid()}.part")
    for p in [part, *_sidecars(part)]:
        p.unlink(missing_ok=True)
    try:
        _create_like(part, like)
        target = connect(part)
        try:
            source.backup(target)
            target.execute("PRAGMA journal_mode = WAL")  # as Store.open leaves a project
            problems = integrity_problems(target)
            if problems:
                raise RecoveryError(f"the restored copy fails integrity_check: {problems[:5]}")
        finally:
            target.close()  # the last connection checkpoints: one self-contained file
        fsync_file(part)
        for p in _sidecars(db):  # journals of a database no longer there
            p.unlink(missing_ok=True)
        os.replace(part, db)
        fsync_dir(db.parent)
    finally:
        for p in [part, *_sidecars(part)]:
            p.unlink(missing_ok=True)


def _overwrite(source: sqlite3.Connection, db: Path) -> None:
    """Replace the content of the live database ``db`` in one write transaction."""
    target = connect(db)
    try:
        try:
            source.backup(target)
        except sqlite3.OperationalError as exc:
            raise RecoveryError(f"{db}: cannot overwrite it in place ({exc}); stop the app, "
                                "move the database away and restore again") from exc
        problems = integrity_problems(target)
        if problems:
            raise RecoveryError(f"{db}: fails integrity_check after the restore: {problems[:5]}")
    finally:
        target.close()


def restore(backup_path: str | os.PathLike[str], db_path: str | os.PathLike[str], *,
            force: bool = False) -> BackupSummary:
    """Restore the backup at ``backup_path`` (and its ``_media`` folder) as the project at
    ``db_path``. Refuses (:class:`RecoveryError`, nothing written) a backup that fails
    ``integrity_check``, is not a judge-audit project or is newer than this judge-audit,
    or lacks image files; and an existing database unless ``force``. Into a
    ``postgresql://`` URL: :func:`annotation.store.pgops.restore`."""
    if pg.is_url(db_path):
        from annotation.store import pgops

        return pgops.restore(backup_path, str(db_path), force=force)
    src, db = Path(backup_path), Path(db_path)
    if not src.is_file():
        raise RecoveryError(f"{src}: no such backup")
    if src.resolve() == db.resolve():
        raise RecoveryError(f"{db}: a database cannot be restored onto itself")
    exists = db.exists() or any(p.exists() for p in _sidecars(db))
    if exists and not force:
        raise RecoveryError(f"{db} exists: restore with --force (force=True) to replace it")
    try:
        source = connect(src, read_only=True)
    except sqlite3.DatabaseError as exc:
        raise RecoveryError(f"{src}: {exc}") from exc
    try:
        try:
            problems = integrity_problems(source)
            if problems:
                raise RecoveryError(f"{src}: the backup fails integrity_check: {problems[:5]}")
            version, counts, files = _describe(source)
        except sqlite3.DatabaseError as exc:
            raise RecoveryError(f"{src}: {exc}") from exc
        if version > schema.SCHEMA_VERSION:
            raise RecoveryError(f"{src}: schema version {version} is newer than this "
                                f"judge-audit ({schema.SCHEMA_VERSION}); upgrade judge-audit")
        refuse_missing_media(files, src, db)
        db.parent.mkdir(parents=True, exist_ok=True)
        copied, present, _ = copy_media(files, src, db)  # files first: rows never lack them
        set_aside = None
        if db.exists() and _usable(db):
            # keep what is replaced: a forced restore must not lose answers given since
            stamp = now_iso()[:19].replace(":", "").replace("-", "")
            set_aside = db.with_name(f"{db.name}.replaced-{stamp}")
            backup(db, set_aside)
            _overwrite(source, db)
        else:
            if db.exists():
                stamp = now_iso()[:19].replace(":", "").replace("-", "")
                set_aside = db.with_name(f"{db.name}.replaced-{stamp}")
                for p in (db, *_sidecars(db)):
                    if p.exists():
                        p.rename(p.with_name(set_aside.name + p.name[len(db.name):]))
            _write_new(source, db, src)
    finally:
        source.close()
    return BackupSummary(db, media_dir(db), version, counts, copied, present, (), set_aside)
