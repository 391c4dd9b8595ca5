"""Importers: every source format becomes :class:`~annotation.records.ProjectData`.

``import_path`` detects the format of a folder or zip, reads it into records, validates
them against the store (:func:`annotation.formats.validate.check_project`) and writes them in one
transaction (:meth:`annotation.store.Store.write`). A new format is one new module here
with ``detect(path) -> bool`` and ``read(path) -> ProjectData``, added to ``FORMATS``.

Before anything is opened, a source that is, contains or lies inside the project's own
files (database, ``-wal``, ``-shm``, media folder) is refused (:mod:`annotation.store.guard`):
reading the database with an ordinary read would drop SQLite's locks in this process.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from annotation.formats import bundle, question_ids, validate
from annotation.records import ImportRefused, Problem, ProjectData, RecordProgress, printable
from annotation.store import Store, guard

FORMATS = ("bundle", "tiif-bench", "vif-bench")


@dataclass
class ImportSummary:
    """What one import did: rows written, rows already present, warnings."""

    import_id: int
    source: str
    format: str
    written: dict[str, int]
    unchanged: dict[str, int] = field(default_factory=dict)
    warnings: list[Problem] = field(default_factory=list)

    def text(self, max_warnings: int = 20) -> str:
        parts = [f"import #{self.import_id} of {self.source} ({self.format})"]
        parts.append("  written: " + ", ".join(f"{k} {v}" for k, v in self.written.items() if v))
        if any(self.unchanged.values()):
            parts.append("  already in the database, unchanged: "
                         + ", ".join(f"{k} {v}" for k, v in self.unchanged.items() if v))
        if self.warnings:
            parts.append(f"  {len(self.warnings)} warning(s):")
            parts.extend(f"    {w}" for w in self.warnings[:max_warnings])
            if len(self.warnings) > max_warnings:
                parts.append(f"    ... and {len(self.warnings) - max_warnings} more "
                             "(all are in the import log: judge-audit info)")
        return "\n".join(parts)


def check_source(path: Path, *dbs: str | Path) -> None:
    """Raise ImportRefused if ``path`` is, contains or lies inside a file of the project being
    written (``dbs``) or of any project this process serves (:func:`annotation.store.guard.
    source_problem`). Nothing is opened."""
    problem = guard.source_problem(path, dbs)
    if problem is not None:
        raise ImportRefused([Problem(str(path), None, None, problem)])


def detect(path: Path) -> str:
    """Name the format of ``path`` (one of :data:`FORMATS`) or raise ImportRefused."""
    from annotation.formats import tiif, vif

    check_source(path)
    if not path.exists():
        raise ImportRefused([Problem(str(path), None, None, "no such file or folder")])
    if bundle.is_bundle(path):
        return "bundle"
    if path.is_dir() and vif.detect(path):
        return "vif-bench"
    if path.is_dir() and tiif.detect(path):
        return "tiif-bench"
    raise ImportRefused([Problem(str(path), None, None,
                                 "not a judge-audit bundle (bundle.json), a VIF-Bench release "
                                 "(metadata.jsonl) or a TIIF-Bench folder (data/*_prompts)")])


@contextmanager
def load(path: Path, fmt: str | None = None, *, record_progress: RecordProgress = None,
         **options: object) -> Iterator[ProjectData]:
    """Read ``path`` into records (format auto-detected unless ``fmt`` is given).

    ``options`` go to the format's reader: for TIIF-Bench ``split`` ("auto", "test",
    "testmini") and ``images`` (the folder of generated images, ``output/`` by default).
    ``record_progress`` is told the lines read of each file of a bundle (the TIIF-Bench
    and VIF-Bench readers do not call it).
    """
    from annotation.formats import tiif, vif

    path = Path(path)
    check_source(path)
    if isinstance(options.get("images"), str | Path):
        check_source(Path(options["images"]))  # type: ignore[arg-type]
    fmt = fmt or detect(path)
    if options and fmt != "tiif-bench":
        raise ValueError(f"options {sorted(options)} apply to TIIF-Bench imports only")
    if fmt == "bundle":
        with bundle.open_bundle(path, record_progress) as project:
            yield project
    elif fmt == "tiif-bench":
        yield tiif.read(path, **options)  # type: ignore[arg-type]
    elif fmt == "vif-bench":
        yield vif.read(path)
    else:
        raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")


_pauses = 0
_pauses_lock = threading.Lock()
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off inside the block (on again after the last of
    several nested or concurrent blocks, if it was on before the first).

    An import builds one record object per line and keeps them all until it has written
    them: with the collector on, each of its passes walks every one of these objects,
    though none of them is part of a cycle (reference counting frees them), and the
    passes grow with the import. They took about 40% of the time to read a bundle of
    100,000 judgments (``benchmarks/import_bench.py``)."""
    global _pauses, _was_enabled
    with _pauses_lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pauses_lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                gc.enable()


Progress = Callable[[int], object] | None
"""Called with 1 after each stage (read, check, write): e.g. ``tqdm.update``."""


def import_project(store: Store, project: ProjectData, *, user: str | None = None,
                   progress: Progress = None, record_progress: RecordProgress = None
                   ) -> ImportSummary:
    """Validate records against the store and write them in one transaction.

    Question ids unique only within their checklist are made unique first
    (:mod:`annotation.formats.question_ids`). ``progress`` is told each stage done (check,
    write), ``record_progress`` the rows written (:meth:`Store.write`)."""
    with collector_paused():
        project = question_ids.qualify_question_ids(project, *store.question_checklists())
        existing = store.existing_rows(project)
        existing.update(validate.existing_tree_rows(store, project))
        checked = validate.check_project(project, existing)
        if progress:
            progress(1)
        import_id = store.write(checked.project, user=user, progress=record_progress)
        if progress:
            progress(1)
        return ImportSummary(import_id, project.source, project.format,
                             checked.project.counts(), checked.unchanged, project.warnings)


def import_path(store: Store, path: str | Path, *, fmt: str | None = None,
                user: str | None = None, progress: Progress = None,
                record_progress: RecordProgress = None, **options: object) -> ImportSummary:
    """Detect, read, validate and write ``path``; raise ImportRefused (nothing written).

    ``path`` (and a TIIF-Bench ``images`` folder) must not be, contain or lie inside the
    files of ``store``: that is checked before anything is opened. ``progress`` is told
    each of the three stages done (read, check, write); ``record_progress`` (see
    :data:`annotation.records.RecordProgress`) the lines read of each file of a bundle and
    the rows written."""
    check_source(Path(path), store.path)
    if isinstance(options.get("images"), str | Path):
        check_source(Path(options["images"]), store.path)  # type: ignore[arg-type]
    with collector_paused(), guard.importing(store.path), \
            load(Path(path), fmt, record_progress=record_progress, **options) as project:
        project.source = printable(str(Path(path).resolve()))  # a folder name not UTF-8
        if progress:
            progress(1)
        summary = import_project(store, project, user=user, progress=progress,
                                 record_progress=record_progress)
        # the records freed while the collector is still off: else its first pass after
        # it is back on walks every one of them just before they are freed anyway (30-90
        # ms of collection at 100,000 judgments, timed with gc.callbacks; 0.4 ms so)
        del project
    return summary
