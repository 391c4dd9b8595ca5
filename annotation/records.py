"""Validated records: what every importer produces and what the store writes.

Every source format (the bundle, TIIF-Bench, VIF-Bench) is turned into one
:class:`ProjectData` made of these records, so there is one validation path
(:mod:`annotation.formats.validate`) and one write path (:meth:`annotation.store.Store.write`).
Field meanings are documented in ``docs/bundle-format.md``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROLES = ("reference", "visual_instruction")
JUDGE_KINDS = ("vlm", "metric")
LEVELS = ("interval", "ordinal", "nominal")
YES_NO = ("yes", "no")
HUMAN_ANSWERS = ("yes", "no", "cant_tell")
PARSE_STATUSES = ("ok", "unparsed")
#: a preference on a pair (issue #17): output A better, B better, both good, both bad
PREFERENCES = ("a", "b", "tie", "both_bad")

RecordProgress = Callable[[str, int, int], object] | None
"""Told ``(what, done, total)`` while an import goes through its records: ``what`` is the
file being read (``"judgments.jsonl"``: lines read so far and lines in the file) or the
table being written (``"judgments"``: rows written and rows to write). Called every
thousand records or so and once at the end of each (``done == total``)."""

Origin = tuple[str, int | None]
"""Where a record came from: (file relative to the source, 1-based line or None)."""
NO_ORIGIN: Origin = ("", None)


def printable(text: str) -> str:
    """``text`` as it can be printed and stored: unchanged when it is valid Unicode; else
    each byte of a file name that was not UTF-8 (which Python hands over as a lone
    surrogate, PEP 383) written as ``\\xNN``, any other lone surrogate as ``\\udNNN``."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
        return raw.decode("utf-8", "backslashreplace")


#: the problem of a file or folder whose name would become (part of) an id but is not UTF-8
NOT_UTF8 = "the file or folder name is not valid UTF-8 (its bytes are shown as \\xNN): rename it"


def undecodable(name: str) -> bool:
    """``name`` (of a file or folder) holds bytes that are not UTF-8: it cannot be an id."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


@dataclass(frozen=True)
class Problem:
    """One error or warning, located in a source file: ``file:line: field: message``.
    Its texts are kept :func:`printable` (a file name that is not UTF-8 is named, not a
    crash when the problem is printed or stored)."""

    file: str
    line: int | None
    field: str | None
    message: str

    def __post_init__(self) -> None:
        for name in ("file", "field", "message"):
            value = getattr(self, name)
            if isinstance(value, str):
                shown = printable(value)
                if shown is not value:
                    object.__setattr__(self, name, shown)

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        if self.field:
            return f"{where}: {self.field}: {self.message}"
        return f"{where}: {self.message}"


#: the most errors one import reports (the readers stop costly work once this many are found)
MAX_PROBLEMS = 20


class Problems:
    """The one collector of errors and warnings every reader uses (bundle, TIIF-Bench,
    VIF-Bench, :func:`annotation.formats.validate.check_project`).

    ``add`` records an error located by file, 1-based line (or None) and field; ``at`` the
    same from a record's :data:`Origin`; ``warn`` a warning (the import still succeeds);
    ``raise_if_any`` refuses the import with the first ``limit`` errors.
    """

    def __init__(self, limit: int = MAX_PROBLEMS) -> None:
        """Start with no problems; ``limit`` errors make the collector :attr:`full`."""
        self.errors: list[Problem] = []
        self.warnings: list[Problem] = []
        self.limit = limit

    def add(self, file: str, line: int | None, field: str | None, message: str) -> None:
        """Record one error."""
        self.errors.append(Problem(file, line, field, message))

    def at(self, origin: Origin, field: str | None, message: str) -> None:
        """Record one error of the record that came from ``origin`` (``?``: no file)."""
        self.add(origin[0] or "?", origin[1], field, message)

    def warn(self, file: str, line: int | None, field: str | None, message: str) -> None:
        """Record one warning."""
        self.warnings.append(Problem(file, line, field, message))

    def extend(self, problems: Iterable[Problem]) -> None:
        """Record errors found elsewhere."""
        self.errors.extend(problems)

    @property
    def full(self) -> bool:
        """True once ``limit`` errors were found: time to stop costly work."""
        return len(self.errors) >= self.limit

    def raise_if_any(self) -> None:
        """Raise :class:`ImportRefused` with the first ``limit`` errors, if there are any."""
        if self.errors:
            raise ImportRefused(self.errors[:self.limit])


class NonFiniteNumber(ValueError):
    """A JSON text holds NaN, Infinity or -Infinity: ``field`` is where (``score``,
    ``meta.layout[2]``), ``token`` what was written. (A number that overflows a float,
    ``1e999``, parses as inf: the field's own check refuses it.)"""

    def __init__(self, field: str, token: str):
        self.field = field
        self.token = token
        self.message = f"{token} is not allowed (numbers must be finite)"
        super().__init__(f"{field}: {self.message}")


class _Constant(str):
    """What ``json.loads`` makes of NaN / Infinity / -Infinity here, to be found later."""


def _non_finite(value: Any, where: str) -> tuple[str, str] | None:
    if isinstance(value, _Constant):
        return where, str(value)
    if isinstance(value, dict):
        for key, item in value.items():
            found = _non_finite(item, f"{where}.{key}" if where else str(key))
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _non_finite(item, f"{where}[{i}]")
            if found:
                return found
    return None


def loads_finite(text: str | bytes) -> Any:
    """``json.loads`` that refuses NaN, Infinity and -Infinity, raising
    :class:`NonFiniteNumber` with the field where one is."""
    value = json.loads(text, parse_constant=_Constant)
    found = _non_finite(value, "")
    if found:
        raise NonFiniteNumber(found[0] or "(value)", found[1])
    return value


class ImportRefused(Exception):
    """An import was refused; nothing was written. ``problems`` lists every error found."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        more = "" if len(problems) <= 1 else f" (and {len(problems) - 1} more)"
        super().__init__(str(problems[0]) + more if problems else "import refused")

    def report(self) -> str:
        return "\n".join(str(p) for p in self.problems)


@dataclass(frozen=True)
class ImageFile:
    """A decoded, checked image file on disk, identified by its content hash."""

    sha256: str
    width: int
    height: int
    format: str
    size_bytes: int
    source: Path  # where to read the bytes from during this import


@dataclass
class Criterion:
    name: str
    label: str
    min: float
    max: float
    step: float | None = 1
    level: str = "interval"
    rubric: str | None = None
    origin: Origin = field(default=NO_ORIGIN, compare=False, repr=False)


@dataclass
class Judge:
    name: str
    kind: str = "vlm"
    scale: tuple[float, float] | None = None
    origin: Origin = field(default=NO_ORIGIN, compare=False, repr=False)


@dataclass
class TaskImage:
    task_id: str
    index: int  # position in the generator's input: Image_<index>
    role: str
    path: str  # relative to the bundle root
    file: ImageFile
    kind: str | None = None
    label: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    origin: Origin = field(default=NO_ORIGIN, compare=False, repr=False)


@dataclass
class Question:
    question_id: str
    checklist_id: str
    position: int
    text: str
    pass_answer: str
    operator: str | None = None
    target: str | None = None
    depends_on: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    origin: Origin = field(default=NO_ORIGIN, compare=False, repr=False)


@dataclass
class Task:
    task_id: str
    instruction: str
    checklist_id: str
    meta: dict[str, Any] = field(default_factory=dict)
    origin: Origin = field(default=NO_ORIGIN, compare=False, repr=False)


@dataclass
class Output:
    output_id: str
    task_id: str
    generator: str
    path: str | None
    file: ImageFile | None = None
    missing: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    origin: Origin = field(default=NO_ORIGIN, compare=False, repr=False)


@dataclass(slots=True)  # an import holds one per judge answer: slots, no dict each
class Judgment:
    judge: str
    output_id: str
    question_id: str | None = None
    criterion: str | None = None
    answer: str | None = None
    score: float | None = None
    raw: str | None = None
    parse_status: str = "ok"
    origin: Origin = field(default=NO_ORIGIN, compare=False, repr=False)


@dataclass
class Annotation:
    annotator: str
    output_id: str
    question_id: str | None = None
    criterion: str | None = None
    answer: str | None = None
    score: float | None = None
    note: str | None = None
    created_at: str | None = None
    origin: Origin = field(default=NO_ORIGIN, compare=False, repr=False)
    #: where the answer was made (``app``, ``import:<id>``, ...); None: this import
    source: str | None = None


@dataclass
class Pair:
    """Two outputs compared (``pairs.jsonl``): ``output_a`` is shown left / first."""

    pair_id: str
    output_a: str
    output_b: str
    task_id: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    origin: Origin = field(default=NO_ORIGIN, compare=False, repr=False)


@dataclass
class Ranking:
    """Outputs to be ordered best first (``rankings.jsonl``)."""

    ranking_id: str
    outputs: list[str]
    task_id: str | None = None
    origin: Origin = field(default=NO_ORIGIN, compare=False, repr=False)


#: a ranking answer's order, best first: an output id, or a list of tied output ids
RankOrder = list[str | list[str]]


@dataclass
class PairAnswer:
    """A judge's (``judge``) or a person's (``annotator``) preference on a pair. A judge's
    ``preference`` is None when its text could not be parsed (``raw`` then holds it). A
    person's ``shown_first`` (``a``/``b``, None: not recorded) says which output they saw
    on the left."""

    who: str
    pair_id: str
    preference: str | None
    is_judge: bool
    raw: str | None = None
    note: str | None = None
    created_at: str | None = None
    source: str | None = None
    shown_first: str | None = None
    origin: Origin = field(default=NO_ORIGIN, compare=False, repr=False)


@dataclass
class RankingAnswer:
    """A judge's or a person's order of a ranking's outputs, best first (ties nested);
    a judge's ``order`` is None when its text could not be parsed."""

    who: str
    ranking_id: str
    order: RankOrder | None
    is_judge: bool
    raw: str | None = None
    note: str | None = None
    created_at: str | None = None
    source: str | None = None
    origin: Origin = field(default=NO_ORIGIN, compare=False, repr=False)


@dataclass
class WorkRow:
    """One row of a human-work file of a bundle (:mod:`annotation.formats.human_work`):
    ``values``, the table's columns as stored (no row id, no ``supersedes``); ``record_id``
    and ``supersedes``, the file's own record ids (portable, never a database row id)."""

    values: dict[str, Any]
    record_id: str | None = None
    supersedes: str | None = None
    origin: Origin = field(default=NO_ORIGIN, compare=False, repr=False)


@dataclass
class ProjectData:
    """Everything one import brings, validated and ready to write."""

    name: str
    benchmark: str
    source: str  # what was imported (path), for the import log
    format: str  # "bundle", "tiif-bench", "vif-bench"
    guidelines: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    criteria: list[Criterion] = field(default_factory=list)
    judges: list[Judge] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)
    images: list[TaskImage] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    outputs: list[Output] = field(default_factory=list)
    judgments: list[Judgment] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    #: human work beyond annotations (verifications, tree reviews, flags, submissions,
    #: visits): bundle file name -> rows in file order; a file that is present has a key
    #: (:mod:`annotation.formats.human_work`)
    work: dict[str, list[WorkRow]] = field(default_factory=dict)
    #: pairwise and ranking items and their answers (issue #17, :mod:`annotation.formats.pairs`)
    pairs: list[Pair] = field(default_factory=list)
    rankings: list[Ranking] = field(default_factory=list)
    pair_answers: list[PairAnswer] = field(default_factory=list)
    ranking_answers: list[RankingAnswer] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Rows per kind of record, as stored in the import log."""
        return {
            "tasks": len(self.tasks),
            "images": len(self.images),
            "questions": len(self.questions),
            "criteria": len(self.criteria),
            "judges": len(self.judges),
            "outputs": len(self.outputs),
            "missing_outputs": sum(o.missing for o in self.outputs),
            "judgments": len(self.judgments),
            "annotations": len(self.annotations),
            **{name.removesuffix(".jsonl"): len(rows) for name, rows in self.work.items()
               if rows},
            **{name: len(rows) for name, rows in (
                ("pairs", self.pairs), ("rankings", self.rankings),
                ("pair_answers", self.pair_answers),
                ("ranking_answers", self.ranking_answers)) if rows},
        }
