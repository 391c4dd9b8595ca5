"""Keep the project's own files away from ordinary file reads (issue #12).

Why: in WAL mode SQLite coordinates connections, in one process and across processes, with
POSIX advisory locks on the database file and its ``-shm`` file. POSIX drops **every** lock
a process holds on a file as soon as the process closes **any** descriptor of that file
(SQLite's documented hazard, https://www.sqlite.org/howtocorrupt.html section 2.2). So if
the app's process opens and closes the project database with an ordinary read (sniffing
whether it is a zip, hashing it, decoding it as an image), its connections silently lose
their locks; the next ``judge-audit`` command then believes it is the last connection,
checkpoints and deletes ``-wal`` and ``-shm`` under the running app, and every answer the app
writes afterwards goes into a deleted file: acknowledged answers are lost and the database
ends up malformed. SQLite's own opens are not affected (its VFS shares one descriptor per
file within a process); only opens that bypass it are.

Three layers, from the import source to any ``open()`` of the process:

1. :func:`source_problem`: an import source that **is**, **contains** or **lies inside**
   a project file (the database, ``-wal``, ``-shm``, ``-journal``, the media folder) is
   refused before anything opens it. Paths are compared after resolving symlinks and
   ``..`` (:func:`os.path.realpath`), and by inode (:func:`os.path.samefile`), so a symlink
   or a hard link to the database is caught too.
2. :func:`file_problem`: each file an importer is about to open (a bundle's JSONL files
   and images, TIIF-Bench and VIF-Bench files) is compared by inode with the database and
   its ``-wal``, ``-shm`` and ``-journal`` (a hard link or a symlink inside a folder that is
   otherwise harmless).
3. :func:`protect`: the app calls it for every store it opens. From then on a
   process-wide audit hook (:func:`sys.addaudithook`) refuses any Python-level open of that
   database, ``-wal``, ``-shm`` or ``-journal`` (``open``, ``os.open``, ``pathlib``,
   ``zipfile``, Pillow, ``shutil`` all raise the ``open`` audit event) with
   :class:`ProtectedFileError`, *before* the file is opened, whatever code asks. An
   ``O_CREAT | O_EXCL`` open (create a new file, never opens an existing one) is let
   through.

Which projects: :func:`protected_dbs` is every database :func:`protect` registered and not
yet garbage-collected, plus those the caller names (the store an import writes into, via
:func:`importing`).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import threading
import weakref
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from annotation.store import Store

#: Files SQLite keeps beside a database (WAL mode: -wal and -shm; rollback mode: -journal).
SIDECARS = ("-wal", "-shm", "-journal")


class ProtectedFileError(PermissionError):
    """An ordinary open of a project's own database file, refused before it happened."""


def media_dir(db: str | os.PathLike[str]) -> Path:
    """The media folder of the database ``db`` (as :attr:`annotation.store.Store.media_dir`)."""
    path = Path(db)
    return path.with_name(path.stem + "_media")


def db_names(db: str | os.PathLike[str]) -> list[Path]:
    """The absolute name of the database ``db`` and, when that is a symlink, the file it
    resolves to (SQLite names ``-wal`` and ``-shm`` after the real file)."""
    return list(dict.fromkeys((Path(os.path.abspath(db)), Path(os.path.realpath(db)))))


def sqlite_files(db: str | os.PathLike[str]) -> list[Path]:
    """The database file and its ``-wal``, ``-shm`` and ``-journal`` (existing or not),
    under each of :func:`db_names`."""
    return [base.with_name(base.name + suffix)
            for base in db_names(db) for suffix in ("", *SIDECARS)]


# ------------------------------------------------------------------ which projects
_lock = threading.Lock()
_stores: weakref.WeakSet[Any] = weakref.WeakSet()
_protected: tuple[str, ...] = ()  # absolute database paths the audit hook guards
_protected_files: tuple[Path, ...] = ()  # their sqlite_files, for the hook
_hook_installed = False
_importing: ContextVar[tuple[str, ...]] = ContextVar("judge_audit_importing", default=())


def _refresh() -> None:
    global _protected, _protected_files
    with _lock:
        dbs = tuple(sorted({os.path.abspath(s.path) for s in list(_stores)}))
        _protected_files = tuple(f for db in dbs for f in sqlite_files(db))
        _protected = dbs


def protect(store: Store) -> None:
    """Guard ``store``'s database, ``-wal``, ``-shm`` and ``-journal`` against ordinary opens in
    this process for as long as ``store`` lives (the app calls this for each store it
    opens). Installs the audit hook on first use; idempotent."""
    global _hook_installed
    with _lock:
        if store not in _stores:
            _stores.add(store)
            weakref.finalize(store, _refresh)
        if not _hook_installed:
            sys.addaudithook(_audit)
            _hook_installed = True
    _refresh()


def protected_dbs(extra: Iterable[str | os.PathLike[str]] = ()) -> list[Path]:
    """The databases guarded in this process: those :func:`protect` registered, those of
    the imports under way in this context (:func:`importing`) and ``extra``."""
    names = [*_protected, *_importing.get(), *(os.fspath(e) for e in extra)]
    return [Path(os.path.abspath(n)) for n in dict.fromkeys(names)]


@contextlib.contextmanager
def importing(*dbs: str | os.PathLike[str]) -> Iterator[None]:
    """Within the block, :func:`file_problem` also guards ``dbs`` (the store being written)."""
    token = _importing.set((*_importing.get(), *(os.path.abspath(d) for d in dbs)))
    try:
        yield
    finally:
        _importing.reset(token)


# ------------------------------------------------------------------ the audit hook
def _identity(path: Any) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError, TypeError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Refuse the ``open`` audit event for a guarded database file (see :func:`protect`)."""
    files = _protected_files
    if event != "open" or not files:
        return
    path, _mode, flags = args
    if path is None or isinstance(path, int):
        return
    if isinstance(flags, int) and flags & os.O_CREAT and flags & os.O_EXCL:
        return  # creates a new file or fails: never opens an existing one
    target = _identity(path)
    if target is None:
        return
    for candidate in files:
        if _identity(candidate) == target:
            raise ProtectedFileError(
                f"{os.fsdecode(path)}: refused to open {candidate.name}, a database file of "
                "the project this process serves, with an ordinary read (closing it would "
                "drop SQLite's locks: see annotation/store/guard.py)")


# ------------------------------------------------------------------ checks for importers
def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def source_problem(path: str | os.PathLike[str],
                   dbs: Iterable[str | os.PathLike[str]] = ()) -> str | None:
    """Why the import source ``path`` must not be read (``None``: it may).

    Refused: a path that is (after resolving symlinks and ``..``, or by inode) the database
    of a guarded project (:func:`protected_dbs` plus ``dbs``) or its ``-wal``, ``-shm`` or
    ``-journal``; a folder that contains one of them or the media folder; and anything
    inside the media folder. Only ``stat`` and ``realpath`` are used: nothing is opened.
    """
    given = Path(os.path.abspath(os.path.expanduser(os.fspath(path))))
    real = Path(os.path.realpath(given))
    for db in protected_dbs(dbs):
        files = sqlite_files(db)
        for file in files:
            if real == file or given == file or _same(given, file):
                return (f"this is the project's own database file ({file.name}): judge-audit "
                        "never reads it as import input")
        for file in db_names(db):
            if _inside(file, real):
                return (f"this folder contains the project's own database {file}: import a "
                        "folder that holds only the data to import")
        for folder in dict.fromkeys(media_dir(name) for name in db_names(db)):
            folder_real = Path(os.path.realpath(folder))
            if _inside(real, folder_real) or _inside(given, folder):
                return ("this is inside the project's own media folder: judge-audit never "
                        "reads it as import input")
            if _inside(folder_real, real):
                return (f"this folder contains the project's own media folder {folder}: "
                        "import a folder that holds only the data to import")
    return None


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def file_problem(path: str | os.PathLike[str]) -> str | None:
    """Why an importer must not open the file ``path`` (``None``: it may): it is, by inode,
    a guarded database file (a hard link or a symlink to it). One ``stat`` per guarded file;
    nothing is opened."""
    dbs = protected_dbs()
    if not dbs:
        return None
    target = _identity(path)
    if target is None:
        return None
    for db in dbs:
        for candidate in sqlite_files(db):
            if _identity(candidate) == target:
                return (f"this file is the project's own database file {candidate.name} (a "
                        "link to it): judge-audit never reads it as import input")
    return None
