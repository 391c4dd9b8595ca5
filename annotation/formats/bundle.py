"""The bundle format: read (with precise errors) and write. See ``docs/bundle-format.md``.

:func:`open_bundle` turns a bundle folder or ``.zip`` into records
(:class:`annotation.records.ProjectData`), checking each record on its own: JSON syntax,
field names and types, enum values, finite numbers, text sizes, paths that stay inside the
bundle, and images that decode within the pixel limit. Cross-record rules (unique ids,
references) are checked afterwards by :func:`annotation.formats.validate.check_project`, for every
source format alike. :func:`write_bundle` writes a store's content back as a bundle.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
import stat
import struct
import tempfile
import unicodedata
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, TypeGuard

from annotation.formats import human_work, jsonl, pairs
from annotation.formats.images import BadImage, BadPath, ImageProber, resolve_inside
from annotation.formats.validate import CRITERION_NAME, prelabel_problems, task_meta_problems
from annotation.records import (
    HUMAN_ANSWERS,
    JUDGE_KINDS,
    LEVELS,
    PARSE_STATUSES,
    ROLES,
    YES_NO,
    Annotation,
    Criterion,
    ImportRefused,
    Judge,
    Judgment,
    NonFiniteNumber,
    Output,
    PairAnswer,
    Problem,
    Problems,
    ProjectData,
    Question,
    RankingAnswer,
    RecordProgress,
    Task,
    TaskImage,
    WorkRow,
    loads_finite,
)
from annotation.vif import draw as vi_draw
from annotation.vif.variants import link_variant_outputs

FORMAT = "judge-audit-bundle/1"
MAX_TEXT = 1_000_000  # characters in one text field
MAX_NUMBER = 1e12
# Zip limits (docs/bundle-format.md, "Zip archives"), all checked from the archive's
# directory before anything is extracted. Bigger projects import as a folder, or in parts.
MAX_ZIP_MEMBERS = 50_000  # entries (files and folders)
MAX_ZIP_DIRECTORY_BYTES = 32 * 1024**2  # the central directory, read before it is parsed
MAX_ZIP_BYTES = 4 * 1024**3  # uncompressed, all members together
MAX_ZIP_RATIO = 20  # whole archive: uncompressed total / size of the .zip file ...
ZIP_RATIO_FREE_BYTES = 100 * 1024**2  # ... checked once the total is over this
MAX_ZIP_MEMBER_RATIO = 200  # one member: uncompressed / compressed ...
ZIP_MEMBER_RATIO_FREE_BYTES = 10 * 1024**2  # ... checked for members over this
# a JSON escape of a UTF-16 surrogate (\ud800-\udfff): only such a line can hold a lone one
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
#: lines between two calls of a reader's progress callback (and one at each file's end)
PROGRESS_EVERY = 1000

BUNDLE_KEYS = {"format", "name", "benchmark", "criteria", "judges", "guidelines", "meta"}
CRITERION_KEYS = {"name", "label", "min", "max", "step", "level", "rubric"}
JUDGE_KEYS = {"name", "kind", "scale"}
TASK_KEYS = {"task_id", "instruction", "images", "questions", "checklist_id", "meta"}
IMAGE_KEYS = {"path", "role", "kind", "label", "meta"}
QUESTION_KEYS = {"question_id", "text", "pass_answer", "operator", "target", "depends_on", "meta"}
OUTPUT_KEYS = {"output_id", "task_id", "generator", "path", "missing", "meta"}
JUDGMENT_KEYS = {"judge", "output_id", "question_id", "criterion", "answer", "score", "raw",
                 "parse_status"}
ANNOTATION_KEYS = {"annotator", "output_id", "question_id", "criterion", "answer", "score",
                   "note", "created_at", "source"}


def is_bundle(path: Path) -> bool:
    """A folder with ``bundle.json`` (or ``tasks.jsonl``: then bundle.json is reported
    missing), or a zip whose root (or single top folder) has one."""
    if path.is_dir():
        return (path / "bundle.json").is_file() or (path / "tasks.jsonl").is_file()
    if path.is_file() and zipfile.is_zipfile(path):
        if _directory_problem(path) is not None:
            return True  # a zip too big to list: open_bundle refuses it with the reason
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
        return any(n == "bundle.json" or n.count("/") == 1 and n.endswith("/bundle.json")
                   for n in names)
    return False


class _Stop(Exception):
    """Raised when the error cap is reached."""


class _Reader(Problems):
    """Collects problems while reading one source; every check names file, line, field.
    Reading stops (:class:`_Stop`) once :data:`annotation.records.MAX_PROBLEMS` errors were
    found."""

    def __init__(self) -> None:
        super().__init__()
        # the line being read is longer than MAX_TEXT: only then can a string inside a meta
        # object be too long, so only then are meta objects walked (set by the readers)
        self.long_line = False
        # criteria declared in another spelling -> the stored name (criterion_key)
        self.renamed: dict[str, str] = {}
        #: told the lines read of each .jsonl file (:func:`_jsonl`)
        self.progress: RecordProgress = None

    def add(self, file: str, line: int | None, field: str | None, message: str) -> None:
        """Record one error; stop reading at the limit."""
        super().add(file, line, field, message)
        if self.full:
            raise _Stop

    # typed getters: they report and return None on a bad value
    def text(self, obj: dict, key: str, where: tuple[str, int | None], prefix: str = "",
             required: bool = True, nonempty: bool = True) -> str | None:
        value = obj.get(key)
        fld = prefix + key
        if value is None:
            if required:
                self.add(*where, fld, "missing" if key not in obj else "must not be null")
            return None
        if not isinstance(value, str):
            self.add(*where, fld, f"must be a string, not {_type(value)}")
            return None
        if nonempty and not value.strip():
            self.add(*where, fld, "must not be empty")
            return None
        if len(value) > MAX_TEXT:
            self.add(*where, fld, f"text of {len(value):,} characters is over the limit of "
                     f"{MAX_TEXT:,}")
            return None
        if "\x00" in value:
            self.add(*where, fld, "contains a NUL character")
            return None
        return value

    def number(self, obj: dict, key: str, where: tuple[str, int | None], prefix: str = "",
               required: bool = True) -> float | None:
        value = obj.get(key)
        fld = prefix + key
        if value is None:
            if required:
                self.add(*where, fld, "missing" if key not in obj else "must not be null")
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.add(*where, fld, f"must be a number, not {_type(value)}")
            return None
        try:
            number = float(value)
        except OverflowError:
            self.add(*where, fld, "number too large")
            return None
        if not math.isfinite(number) or abs(number) > MAX_NUMBER:
            self.add(*where, fld, f"number {value!r} out of range")
            return None
        return number

    def enum(self, obj: dict, key: str, allowed: tuple[str, ...], where: tuple[str, int | None],
             prefix: str = "", required: bool = True, default: str | None = None) -> str | None:
        value = obj.get(key, default)
        fld = prefix + key
        if value is None:
            if required:
                self.add(*where, fld, "missing")
            return None
        if value not in allowed:
            self.add(*where, fld, f"must be one of {', '.join(allowed)}, not {value!r}")
            return None
        return value

    def meta(self, obj: dict, where: tuple[str, int | None], prefix: str = "") -> dict[str, Any]:
        value = obj.get("meta", {})
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.add(*where, prefix + "meta", f"must be an object, not {_type(value)}")
            return {}
        if self.long_line:
            self.meta_texts(value, where, prefix + "meta")
        return value

    def meta_texts(self, value: Any, where: tuple[str, int | None], fld: str) -> None:
        """Refuse strings (and keys) over :data:`MAX_TEXT` characters anywhere inside a meta
        object, named by their path (``meta.layout[0].label``)."""
        stack = [(fld, value)]
        while stack:
            path, item = stack.pop()
            if isinstance(item, str):
                if len(item) > MAX_TEXT:
                    self.add(*where, path, f"text of {len(item)} characters, more than 1 MB")
            elif isinstance(item, dict):
                for key, sub in reversed(item.items()):
                    name = key if len(key) <= 60 else f"{key[:60]}..."
                    if len(key) > MAX_TEXT:
                        self.add(*where, f"{path}.{name}",
                                 f"key of {len(key)} characters, more than 1 MB")
                    stack.append((f"{path}.{name}", sub))
            elif isinstance(item, list):
                stack.extend((f"{path}[{i}]", sub) for i, sub in reversed(list(enumerate(item))))

    def keys(self, obj: dict, allowed: set[str], where: tuple[str, int | None],
             prefix: str = "") -> None:
        unknown = obj.keys() - allowed
        if unknown:
            self.add(*where, prefix + sorted(unknown)[0],
                     f"unknown field (allowed: {', '.join(sorted(allowed))})")


def _type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", type(None): "null"}.get(type(value), "?")


def _surrogate(text: str) -> int | None:
    """The code point of the first lone surrogate in ``text`` (None: valid Unicode)."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return ord(text[exc.start])
    return None


def lone_surrogate(obj: Any, prefix: str = "") -> tuple[str, int] | None:
    """``(field, code point)`` of the first string (value or object key) inside ``obj`` that
    holds a lone surrogate: JSON's ``\\ud800`` escape without its pair decodes to one, and no
    UTF-8 text (SQLite's, a file name's, a terminal's) can hold it. The field is safe to
    print: a key holding the surrogate is shown with it escaped."""
    stack: list[tuple[str, Any]] = [(prefix, obj)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            bad = _surrogate(item)
            if bad is not None:
                return path, bad
        elif isinstance(item, dict):
            for key, sub in reversed(item.items()):
                bad = _surrogate(key)
                if bad is not None:
                    key = key.encode("utf-8", "backslashreplace").decode("utf-8")
                    return (f"{path}.{key}" if path else key), bad
                stack.append((f"{path}.{key}" if path else key, sub))
        elif isinstance(item, list):
            stack.extend((f"{path}[{i}]", sub) for i, sub in reversed(list(enumerate(item))))
    return None


def _surrogate_message(code: int) -> str:
    return (f"contains a lone surrogate U+{code:04X} (a \\u{code:04x} escape without its "
            "pair): not valid Unicode text")


def _jsonl(root: Path, name: str, rd: _Reader, required: bool) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` of each line of ``name`` that is a JSON object; every other
    line is reported (file, line, field) and skipped. Lines that are exactly one object are
    parsed fast, mostly a block at a time (:func:`annotation.formats.jsonl.scan_blocks`),
    the others read here with every check; :attr:`_Reader.progress` is told every
    :data:`PROGRESS_EVERY` lines."""
    path = root / name
    if not path.exists():
        if required:
            rd.add(name, None, None, "file not found in the bundle")
        return
    try:
        real = resolve_inside(root, name)
    except BadPath as exc:
        rd.add(name, None, None, str(exc))
        return
    progress, total = rd.progress, 0
    if progress is not None:
        with real.open("rb") as fh:
            total = jsonl.count_lines(fh)
        progress(name, 0, total)
    every = PROGRESS_EVERY
    with real.open("rb") as fh:
        number = 0
        for number, objects, raw in jsonl.scan_blocks(fh):
            if objects is None:
                if progress is not None and number % every == 0:
                    progress(name, number, total)
                obj = _careful_line(rd, name, number, raw or b"")
                if obj is not None:
                    yield number, obj
                continue
            rd.long_line = False  # the fast paths take short lines only
            end = number + len(objects)
            if progress is None:
                yield from zip(range(number, end), objects)
                number = end - 1
                continue
            # told at each multiple of PROGRESS_EVERY, before its line (as line by line)
            start, mark = number, -(-number // every) * every
            while mark < end:
                yield from zip(range(start, mark), objects[start - number:mark - number])
                progress(name, mark, total)
                start, mark = mark, mark + every
            yield from zip(range(start, end), objects[start - number:])
            number = end - 1
        rd.long_line = False
        if progress is not None:
            progress(name, number, max(total, number))


def _careful_line(rd: _Reader, name: str, number: int, raw: bytes) -> dict | None:
    """One line the fast path left: the object, or None (blank, or reported)."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        rd.add(name, number, None, f"not UTF-8 ({exc.reason} at byte {exc.start})")
        return None
    if not line.strip():
        return None
    try:
        obj = loads_finite(line)
    except NonFiniteNumber as exc:
        rd.add(name, number, exc.field, exc.message)
        return None
    except (ValueError, RecursionError) as exc:
        rd.add(name, number, None, f"invalid JSON: {exc}")
        return None
    if not isinstance(obj, dict):
        rd.add(name, number, None, f"each line must be a JSON object, not {_type(obj)}")
        return None
    if b"\\u" in raw and _SURROGATE_ESCAPE.search(raw):
        found = lone_surrogate(obj)
        if found is not None:
            rd.add(name, number, found[0] or None, _surrogate_message(found[1]))
            return None
    rd.long_line = len(raw) > MAX_TEXT
    return obj


def normalize_time(value: str) -> str:
    """ISO 8601 -> UTC ISO 8601 with microseconds (naive times are taken as UTC)."""
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


# --------------------------------------------------------------------------- reading
def read_bundle_dir(root: Path, source: str | None = None,
                    work_dir: Path | None = None, progress: RecordProgress = None
                    ) -> ProjectData:
    """Read a bundle folder into records; raise :class:`ImportRefused` on any error.

    Visual instructions drawn from their task's meta (an image entry without ``path``) are
    written into ``work_dir``, which must outlive the records (:func:`open_bundle` passes a
    temporary folder); without one, a new temporary folder is made when needed.
    ``progress`` is told the lines read of each ``.jsonl`` file.
    """
    rd = _Reader()
    rd.progress = progress
    probe = ImageProber()
    project = ProjectData(name="", benchmark="", source=source or str(root), format="bundle")
    try:
        _read_header(root, rd, project)
        _read_tasks(root, rd, project, probe, _Renderer(work_dir))
        _read_outputs(root, rd, project, probe)
        _read_judgments(root, rd, project)
        _read_annotations(root, rd, project)
        link_variant_outputs(project, rd)  # VIF-Bench text variants: outputs to originals
        _read_work(root, rd, project)
        _read_pairs(root, rd, project)
    except _Stop:
        pass
    rd.raise_if_any()
    for o in project.outputs:
        if o.missing:
            rd.warn(o.origin[0], o.origin[1], None, f"output {o.output_id!r} is missing")
    unparsed = [j for j in project.judgments if j.parse_status == "unparsed"]
    for j in unparsed[:50]:
        rd.warn(j.origin[0], j.origin[1], "raw", f"judge {j.judge!r}: text not parsed, kept as raw")
    if len(unparsed) > 50:
        rd.warn("judgments.jsonl", None, None, f"{len(unparsed) - 50} more unparsed judgments")
    project.warnings.extend(rd.warnings)
    return project


def _read_header(root: Path, rd: _Reader, project: ProjectData) -> None:
    name = "bundle.json"
    where = (name, None)
    path = root / name
    if not path.is_file():
        rd.add(name, None, None, "file not found: a bundle needs bundle.json")
        raise _Stop
    try:
        real = resolve_inside(root, name)
    except BadPath as exc:  # a symlink out of the bundle, like the .jsonl files
        rd.add(name, None, None, str(exc))
        raise _Stop from None
    try:
        text = real.read_text(encoding="utf-8")
        obj = loads_finite(text)
    except NonFiniteNumber as exc:
        rd.add(name, None, exc.field, exc.message)
        raise _Stop from None
    except (ValueError, UnicodeDecodeError) as exc:
        rd.add(name, getattr(exc, "lineno", None), None, f"invalid JSON: {exc}")
        raise _Stop from None
    if not isinstance(obj, dict):
        rd.add(name, None, None, "must be a JSON object")
        raise _Stop
    found = lone_surrogate(obj)
    if found is not None:
        rd.add(name, None, found[0] or None, _surrogate_message(found[1]))
        raise _Stop
    rd.long_line = len(text) > MAX_TEXT
    rd.keys(obj, BUNDLE_KEYS, where)
    if obj.get("format", FORMAT) != FORMAT:
        rd.add(name, None, "format", f"unsupported format {obj.get('format')!r} "
               f"(this judge-audit reads {FORMAT})")
    project.name = rd.text(obj, "name", where) or ""
    project.benchmark = rd.text(obj, "benchmark", where) or ""
    project.guidelines = rd.text(obj, "guidelines", where, required=False, nonempty=False)
    project.meta = rd.meta(obj, where)
    for key, parse in (("criteria", _criterion), ("judges", _judge)):
        items = obj.get(key, [])
        if not isinstance(items, list):
            rd.add(name, None, key, f"must be a list, not {_type(items)}")
            continue
        for i, item in enumerate(items):
            prefix = f"{key}[{i}]."
            if not isinstance(item, dict):
                rd.add(name, None, prefix[:-1], f"must be an object, not {_type(item)}")
                continue
            record = parse(rd, item, where, prefix)
            if record is not None:
                getattr(project, key).append(record)


def criterion_key(name: str) -> str:
    """The stored name of a criterion spelled ``name``: lowercase, every run of other
    characters than a-z and 0-9 one ``_`` (``"Visual Quality"`` -> ``visual_quality``); the
    same rule for the criterion's declaration and every judgment and annotation naming it.
    Accents are dropped first (``Qualité`` -> ``qualite``)."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", name)
                    if not unicodedata.combining(c))
    return re.sub(r"[^a-z0-9]+", "_", plain.strip().lower()).strip("_")


def _criterion_ref(rd: _Reader, crit: str, where: tuple[str, int | None]) -> str:
    """A judgment's or annotation's ``criterion``: the stored name, or the spelling its
    declaration in bundle.json used (read as the stored name). Any other spelling is left
    as it is, to be refused as an unknown criterion (an invisible character or a typo must
    not match by accident)."""
    return rd.renamed.get(crit, crit)


def _criterion(rd: _Reader, obj: dict, where: tuple[str, int | None], prefix: str
               ) -> Criterion | None:
    rd.keys(obj, CRITERION_KEYS, where, prefix)
    name = rd.text(obj, "name", where, prefix)
    label = rd.text(obj, "label", where, prefix, required=False) or name
    if name is not None and not CRITERION_NAME.fullmatch(name):
        key = criterion_key(name)
        if not key:
            rd.add(*where, prefix + "name", f"{name!r} has no letter a-z or digit: name the "
                   "criterion with letters a-z, digits and '_' (e.g. visual_quality) and put "
                   "the name people read in 'label'")
        else:
            rd.warn(where[0], where[1], prefix + "name",
                    f"criterion {name!r} stored as {key!r} (its label stays {label!r}); "
                    "judgments and annotations may use either spelling")
            rd.renamed[name] = key
            name = key
    lo = rd.number(obj, "min", where, prefix)
    hi = rd.number(obj, "max", where, prefix)
    step = rd.number(obj, "step", where, prefix, required=False) if "step" in obj else 1.0
    if "step" not in obj:
        rd.add(*where, prefix + "step", "missing (use null for a continuous scale)")
    if step is not None and step <= 0:
        rd.add(*where, prefix + "step", "must be positive (or null)")
    level = rd.enum(obj, "level", LEVELS, where, prefix, default="interval")
    rubric = rd.text(obj, "rubric", where, prefix, required=False, nonempty=False)
    if lo is not None and hi is not None and lo >= hi:
        rd.add(*where, prefix + "max", "must be greater than min")
    if name is None or lo is None or hi is None or level is None:
        return None
    return Criterion(name, label or name, lo, hi, step, level, rubric, origin=where)


def _judge(rd: _Reader, obj: dict, where: tuple[str, int | None], prefix: str) -> Judge | None:
    rd.keys(obj, JUDGE_KEYS, where, prefix)
    name = rd.text(obj, "name", where, prefix)
    kind = rd.enum(obj, "kind", JUDGE_KINDS, where, prefix)
    scale = obj.get("scale")
    pair: tuple[float, float] | None = None
    if scale is not None:
        ok = (isinstance(scale, list) and len(scale) == 2
              and all(_finite(v) for v in scale) and scale[0] < scale[1])
        if not ok:
            rd.add(*where, prefix + "scale",
                   "must be [min, max], two finite numbers with min < max")
        else:
            pair = (float(scale[0]), float(scale[1]))
    if name is None or kind is None:
        return None
    return Judge(name, kind, pair, origin=where)


def _finite(value: Any) -> bool:
    """A JSON number that is a finite float (an integer too big for a float is not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _image_path(rd: _Reader, root: Path, probe: ImageProber, rel: Any,
                where: tuple[str, int | None], fld: str):
    if not isinstance(rel, str):
        rd.add(*where, fld, f"must be a string, not {_type(rel)}")
        return None
    try:
        return probe(resolve_inside(root, rel))
    except (BadPath, BadImage) as exc:
        rd.add(*where, fld, str(exc))
        return None


class _Renderer:
    """Draws visual instructions from their task's meta into a work folder (one import)."""

    def __init__(self, work_dir: Path | None) -> None:
        self.work_dir = work_dir
        self.count = 0

    def __call__(self, kind: str, meta: dict[str, Any], probe: ImageProber):
        image = vi_draw.draw_from_meta(kind, meta)
        if self.work_dir is None:
            self.work_dir = Path(tempfile.mkdtemp(prefix="judge-audit-render-"))
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.count += 1
        path = self.work_dir / f"vi-{self.count}.png"
        image.save(path, format="PNG")
        return probe(path)


def rendered_path(task_id: str, index: int, kind: str) -> str:
    """The path recorded for a visual instruction drawn from its task's meta (and written
    there by export): ``rendered/<task id>/Image_<index>_<kind>.png``. A task id that is not
    safe as a folder name is replaced by a safe form plus a short hash of the id."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", task_id).strip("._") or "task"
    if safe != task_id:
        safe = f"{safe[:80]}-{hashlib.sha256(task_id.encode()).hexdigest()[:8]}"
    return f"rendered/{safe}/Image_{index}_{kind.replace('+', '_')}.png"


def _read_tasks(root: Path, rd: _Reader, project: ProjectData, probe: ImageProber,
                render: _Renderer) -> None:
    name = "tasks.jsonl"
    checklists: dict[str, list[tuple]] = {}
    for number, obj in _jsonl(root, name, rd, required=True):
        where = (name, number)
        rd.keys(obj, TASK_KEYS, where)
        task_id = rd.text(obj, "task_id", where)
        instruction = rd.text(obj, "instruction", where, nonempty=False)
        checklist_id = rd.text(obj, "checklist_id", where, required=False) or task_id
        meta = rd.meta(obj, where)
        images = obj.get("images", [])
        if not isinstance(images, list):
            rd.add(*where, "images", f"must be a list, not {_type(images)}")
            images = []
        meta_problems = task_meta_problems(meta, len(images))
        for fld, message in meta_problems:
            rd.add(*where, fld, message)
        task_images = []
        for i, item in enumerate(images):
            prefix = f"images[{i}]."
            if not isinstance(item, dict):
                rd.add(*where, prefix[:-1], f"must be an object, not {_type(item)}")
                continue
            rd.keys(item, IMAGE_KEYS, where, prefix)
            role = rd.enum(item, "role", ROLES, where, prefix)
            kind = rd.text(item, "kind", where, prefix, required=False)
            label = rd.text(item, "label", where, prefix, required=False, nonempty=False)
            image_meta = rd.meta(item, where, prefix)
            if "prelabel" in image_meta:
                for fld, message in prelabel_problems(image_meta["prelabel"],
                                                      prefix + "meta.prelabel"):
                    rd.add(*where, fld, message)
            rel = item.get("path")
            if (rel is None and role == "visual_instruction" and kind in vi_draw.SPEC_KEYS
                    and task_id is not None):
                if meta_problems:  # reported above; nothing valid to draw from
                    continue
                key = vi_draw.SPEC_KEYS[kind]
                try:
                    file = render(kind, meta, probe)
                except vi_draw.MissingSpec as exc:
                    rd.add(*where, prefix + "path", f"missing, and {exc}")
                    continue
                except (ValueError, BadImage) as exc:
                    rd.add(*where, prefix + "path", f"cannot draw it from meta.{key}: {exc}")
                    continue
                rel = rendered_path(task_id, i, kind)
                image_meta = {**image_meta, "rendered_from": f"meta.{key}"}
            elif "path" not in item:
                rd.add(*where, prefix + "path", "missing")
                continue
            else:
                file = _image_path(rd, root, probe, rel, where, prefix + "path")
            if file is None or role is None or task_id is None:
                continue
            task_images.append(TaskImage(task_id, i, role, rel, file, kind, label,  # type: ignore[arg-type]
                                         image_meta, origin=where))
        questions = obj.get("questions")
        parsed: list[Question] = []
        if questions is not None:
            if not isinstance(questions, list):
                rd.add(*where, "questions", f"must be a list, not {_type(questions)}")
                questions = []
            for i, item in enumerate(questions):
                prefix = f"questions[{i}]."
                if not isinstance(item, dict):
                    rd.add(*where, prefix[:-1], f"must be an object, not {_type(item)}")
                    continue
                q = _question(rd, item, where, prefix, checklist_id or "", i)
                if q is not None:
                    parsed.append(q)
        if task_id is None or instruction is None or checklist_id is None:
            continue
        project.tasks.append(Task(task_id, instruction, checklist_id, meta, origin=where))
        project.images.extend(task_images)
        if questions is None:
            continue
        signature = [(q.question_id, q.text, q.pass_answer, q.operator, q.target,
                      q.depends_on, q.meta) for q in parsed]
        if checklist_id in checklists:
            if checklists[checklist_id] != signature:
                rd.add(*where, "questions", f"checklist {checklist_id!r} was defined "
                       "differently by an earlier task (tasks sharing a checklist_id must "
                       "repeat its questions identically, or omit them)")
            continue
        checklists[checklist_id] = signature
        project.questions.extend(parsed)


def _number_id(value: Any) -> Any:
    """A question id written as a whole number (DSG numbers questions 1..n) as its text;
    anything else unchanged (the checks that follow report what is wrong)."""
    return str(value) if type(value) is int else value


def _plain_text(value: Any) -> TypeGuard[str]:
    """``value`` passes :meth:`_Reader.text` with its defaults (a string, not blank, at
    most :data:`MAX_TEXT` characters, no NUL)."""
    return (type(value) is str and len(value) <= MAX_TEXT and not value.isspace()
            and value != "" and "\x00" not in value)


def _question(rd: _Reader, obj: dict, where: tuple[str, int | None], prefix: str,
              checklist_id: str, position: int) -> Question | None:
    """One question of a task's checklist. A question whose fields are all plain (text
    ids and texts, a yes/no pass answer, text ids it depends on, a short meta object) is
    read at once; any other goes through every check, which says what is wrong."""
    qid, text, operator, target = (obj.get("question_id"), obj.get("text"),
                                   obj.get("operator"), obj.get("target"))
    depends, meta = obj.get("depends_on"), obj.get("meta")
    pass_answer = obj.get("pass_answer")
    if (obj.keys() <= QUESTION_KEYS and _plain_text(qid) and _plain_text(text)
            and (pass_answer == "yes" or pass_answer == "no")
            and (operator is None or _plain_text(operator))
            and (target is None or _plain_text(target))
            and (depends is None or type(depends) is list
                 and all(type(d) is str for d in depends))
            and (meta is None or type(meta) is dict and not rd.long_line)):
        return Question(qid, checklist_id, position, text, pass_answer, operator, target,
                        list(depends or ()), meta if meta is not None else {}, origin=where)
    return _checked_question(rd, obj, where, prefix, checklist_id, position)


def _checked_question(rd: _Reader, obj: dict, where: tuple[str, int | None], prefix: str,
                      checklist_id: str, position: int) -> Question | None:
    """One question with every check, each problem reported (file, line, field)."""
    rd.keys(obj, QUESTION_KEYS, where, prefix)
    obj = {**obj, "question_id": _number_id(obj.get("question_id"))}
    qid = rd.text(obj, "question_id", where, prefix)
    text = rd.text(obj, "text", where, prefix)
    pass_answer = rd.enum(obj, "pass_answer", YES_NO, where, prefix)
    operator = rd.text(obj, "operator", where, prefix, required=False)
    target = rd.text(obj, "target", where, prefix, required=False)
    depends = obj.get("depends_on", [])
    if depends is None:
        depends = []
    if isinstance(depends, list):
        depends = [_number_id(d) for d in depends]
    if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
        rd.add(*where, prefix + "depends_on", "must be a list of question ids")
        depends = []
    meta = rd.meta(obj, where, prefix)
    if qid is None or text is None or pass_answer is None:
        return None
    return Question(qid, checklist_id, position, text, pass_answer, operator, target,
                    list(depends), meta, origin=where)


def _read_outputs(root: Path, rd: _Reader, project: ProjectData, probe: ImageProber) -> None:
    name = "outputs.jsonl"
    for number, obj in _jsonl(root, name, rd, required=True):
        where = (name, number)
        rd.keys(obj, OUTPUT_KEYS, where)
        output_id = rd.text(obj, "output_id", where)
        task_id = rd.text(obj, "task_id", where)
        generator = rd.text(obj, "generator", where)
        missing = obj.get("missing", False)
        if not isinstance(missing, bool):
            rd.add(*where, "missing", f"must be true or false, not {_type(missing)}")
            missing = False
        if "path" not in obj:
            rd.add(*where, "path", "missing (use null when the image is not at hand)")
            continue
        rel = obj["path"]
        file = None
        if rel is not None:
            if missing:
                rd.add(*where, "path", "an output marked missing cannot have a path")
                continue
            file = _image_path(rd, root, probe, rel, where, "path")
            if file is None:
                continue
        meta = rd.meta(obj, where)
        if output_id is None or task_id is None or generator is None:
            continue
        project.outputs.append(Output(output_id, task_id, generator, rel, file, missing, meta,
                                      origin=where))


#: the fields of the two commonest judgment lines, each read at once when its values pass
ANSWER_LINE_KEYS = frozenset({"judge", "output_id", "question_id", "answer", "raw"})
SCORE_LINE_KEYS = frozenset({"judge", "output_id", "criterion", "score", "raw"})


def _read_judgments(root: Path, rd: _Reader, project: ProjectData) -> None:
    """The hot path of big imports: checks are written out inline, not via helpers.

    A line with only the fields of a yes/no answer (:data:`ANSWER_LINE_KEYS`) or of a
    score (:data:`SCORE_LINE_KEYS`), each of the right type and in range, is read at
    once; every other line goes through every check below, which says what is wrong."""
    name = "judgments.jsonl"
    append = project.judgments.append
    renamed = rd.renamed
    # one str object per distinct judge, output and question id, not one per line: an
    # output's id recurs on every question of every judge (a third of the records' memory)
    shared: dict[str, str] = {}
    one = shared.setdefault
    for number, obj in _jsonl(root, name, rd, required=False):
        judge, output_id, raw = obj.get("judge"), obj.get("output_id"), obj.get("raw")
        if (type(judge) is str and type(output_id) is str and judge and output_id
                and (raw is None or type(raw) is str and len(raw) <= MAX_TEXT)):
            qid, answer = obj.get("question_id"), obj.get("answer")
            if (type(qid) is str and (answer == "yes" or answer == "no")
                    and obj.keys() <= ANSWER_LINE_KEYS):
                append(Judgment(one(judge, judge), one(output_id, output_id), one(qid, qid),
                                None, "yes" if answer == "yes" else "no", None, raw, "ok",
                                (name, number)))
                continue
            crit, score = obj.get("criterion"), obj.get("score")
            if (type(crit) is str and (type(score) is int or type(score) is float)
                    and -MAX_NUMBER <= score <= MAX_NUMBER and obj.keys() <= SCORE_LINE_KEYS):
                crit = renamed.get(crit, crit)
                append(Judgment(one(judge, judge), one(output_id, output_id), None,
                                one(crit, crit), None, float(score), raw, "ok", (name, number)))
                continue
        where = (name, number)
        if pairs.is_answer(obj):  # a preference on a pair, an order of a ranking (#17)
            pairs.read_answer(rd, obj, where, project, judge=True,
                              normalize_time=normalize_time)
            continue
        if not obj.keys() <= JUDGMENT_KEYS:
            rd.keys(obj, JUDGMENT_KEYS, where)
            continue
        judge = obj.get("judge")
        output_id = obj.get("output_id")
        if type(judge) is not str or type(output_id) is not str or not judge or not output_id:
            rd.text(obj, "judge", where)
            rd.text(obj, "output_id", where)
            continue
        status = obj.get("parse_status", "ok")
        if status not in PARSE_STATUSES:
            rd.enum(obj, "parse_status", PARSE_STATUSES, where)
            continue
        raw = obj.get("raw")
        if raw is not None and (type(raw) is not str or len(raw) > MAX_TEXT):
            rd.text(obj, "raw", where, required=False, nonempty=False)
            continue
        qid = _number_id(obj.get("question_id"))
        crit = obj.get("criterion")
        answer = obj.get("answer")
        score = obj.get("score")
        if status == "unparsed" and (answer is not None or score is not None):
            rd.add(*where, "parse_status", "'unparsed' means the judge's text could not be "
                   f"read: '{'answer' if answer is not None else 'score'}' must then be null")
            continue
        if qid is not None:
            if type(qid) is not str or crit is not None:
                rd.add(*where, "question_id",
                       "give exactly one of 'question_id' and 'criterion' as a string")
                continue
            if answer is not None and answer not in YES_NO:
                rd.add(*where, "answer", f"must be 'yes' or 'no', not {answer!r}")
                continue
            if score is not None:
                rd.add(*where, "score", "a question is answered with 'answer', not 'score'")
                continue
            if answer is None and status == "ok":
                rd.add(*where, "answer", "missing (or set parse_status to 'unparsed')")
                continue
            append(Judgment(judge, output_id, qid, None, answer, None, raw, status, where))
        elif crit is not None:
            if type(crit) is not str:
                rd.add(*where, "criterion", f"must be a string, not {_type(crit)}")
                continue
            crit = _criterion_ref(rd, crit, where)
            if answer is not None:
                rd.add(*where, "answer", "a criterion is scored with 'score', not 'answer'")
                continue
            if score is None:
                if status == "ok":
                    rd.add(*where, "score", "missing (or set parse_status to 'unparsed')")
                    continue
            else:
                score = rd.number(obj, "score", where)
                if score is None:
                    continue
            append(Judgment(judge, output_id, None, crit, None, score, raw, status, where))
        else:
            rd.add(*where, "question_id", "give exactly one of 'question_id' and 'criterion'")


def _read_annotations(root: Path, rd: _Reader, project: ProjectData) -> None:
    name = "annotations.jsonl"
    for number, obj in _jsonl(root, name, rd, required=False):
        where = (name, number)
        if pairs.is_answer(obj):  # a preference on a pair, an order of a ranking (#17)
            pairs.read_answer(rd, obj, where, project, judge=False,
                              normalize_time=normalize_time)
            continue
        rd.keys(obj, ANNOTATION_KEYS, where)
        if "question_id" in obj:
            obj = {**obj, "question_id": _number_id(obj["question_id"])}
        annotator = rd.text(obj, "annotator", where)
        output_id = rd.text(obj, "output_id", where)
        qid = rd.text(obj, "question_id", where, required=False)
        crit = rd.text(obj, "criterion", where, required=False)
        if crit is not None:
            crit = _criterion_ref(rd, crit, where)
        note = rd.text(obj, "note", where, required=False, nonempty=False)
        answer = score = None
        if (qid is None) == (crit is None):
            rd.add(*where, "question_id", "give exactly one of 'question_id' and 'criterion'")
            continue
        if qid is not None:
            answer = rd.enum(obj, "answer", HUMAN_ANSWERS, where)
            if "score" in obj:
                rd.add(*where, "score", "a question is answered with 'answer', not 'score'")
        else:
            score = rd.number(obj, "score", where)
            if "answer" in obj:
                rd.add(*where, "answer", "a criterion is scored with 'score', not 'answer'")
        good, created = human_work.optional_time(rd, obj, "created_at", where,
                                                 normalize_time)
        if not good:
            continue
        source = rd.text(obj, "source", where, required=False)
        if annotator is None or output_id is None or (answer is None and score is None):
            continue
        project.annotations.append(Annotation(annotator, output_id, qid, crit, answer, score,
                                              note, created, origin=where, source=source))


def _read_work(root: Path, rd: _Reader, project: ProjectData) -> None:
    """The optional human-work files (:data:`annotation.formats.human_work.FILES`): a file
    that is present gets a key in ``project.work``, even when it holds no line."""
    for name, spec in human_work.FILES.items():
        if not (root / name).exists():
            continue
        rows = project.work.setdefault(name, [])
        for number, obj in _jsonl(root, name, rd, required=False):
            row = human_work.read_line(spec, obj, rd, (name, number), normalize_time)
            if row is not None:
                rows.append(row)


def _read_pairs(root: Path, rd: _Reader, project: ProjectData) -> None:
    """The optional ``pairs.jsonl`` and ``rankings.jsonl`` (:mod:`annotation.formats.pairs`)."""
    for number, obj in _jsonl(root, "pairs.jsonl", rd, required=False):
        pair = pairs.read_pair(rd, obj, ("pairs.jsonl", number))
        if pair is not None:
            project.pairs.append(pair)
    for number, obj in _jsonl(root, "rankings.jsonl", rd, required=False):
        ranking = pairs.read_ranking(rd, obj, ("rankings.jsonl", number))
        if ranking is not None:
            project.rankings.append(ranking)


# ------------------------------------------------------------------------------ zips
def _mib(size: float) -> str:
    """A size for a message: ``3.0 GiB``, ``12.5 MiB``, ``900 bytes``."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:,.1f} {unit}"
    return f"{int(size)} bytes"


def _zip_directory(archive: Path) -> tuple[int, int] | None:
    """``(entries, directory bytes)`` declared by the zip's end-of-central-directory record
    (zip64 included), read from the end of the file without parsing the directory; ``None``
    when there is no such record (then :class:`zipfile.ZipFile` reports the damage)."""
    size = archive.stat().st_size
    with archive.open("rb") as fh:
        tail_size = min(size, 22 + 0xFFFF + 20)  # the record, a maximal comment, zip64 locator
        fh.seek(size - tail_size)
        tail = fh.read(tail_size)
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < 22:
            return None
        entries, directory = struct.unpack("<2xHL", tail[at + 8:at + 16])
        if entries == 0xFFFF or directory == 0xFFFFFFFF:
            locator = tail[at - 20:at] if at >= 20 else b""
            if locator[:4] == b"PK\x06\x07":
                (offset,) = struct.unpack("<Q", locator[8:16])
                fh.seek(offset)
                record = fh.read(56)
                if record[:4] == b"PK\x06\x06" and len(record) == 56:
                    entries, directory = struct.unpack("<QQ", record[32:48])
    return entries, directory


def _directory_problem(archive: Path) -> str | None:
    """Why the zip's directory alone is over the limits (too many entries, too big), or
    ``None``; checked before :class:`zipfile.ZipFile` builds one object per entry."""
    declared = _zip_directory(archive)
    if declared is None:
        return None
    entries, directory = declared
    if entries > MAX_ZIP_MEMBERS:
        return (f"{entries:,} members, more than the limit of {MAX_ZIP_MEMBERS:,}: import the "
                "bundle as a folder, or in several zips")
    if directory > MAX_ZIP_DIRECTORY_BYTES:
        return (f"a zip directory of {_mib(directory)}, more than the limit of "
                f"{_mib(MAX_ZIP_DIRECTORY_BYTES)}: import the bundle as a folder")
    return None


def check_zip(archive: Path, zf: zipfile.ZipFile) -> None:
    """Refuse (ImportRefused, naming the archive and the member) a zip that is over the
    limits or unsafe to extract, from its directory alone: nothing is extracted.

    Refused: more than :data:`MAX_ZIP_MEMBERS` members; members that leave the archive (zip
    slip), symbolic links, encrypted members; more than :data:`MAX_ZIP_BYTES` uncompressed
    in all; a whole-archive expansion (uncompressed total / size of the zip file) over
    :data:`MAX_ZIP_RATIO` once the total is over :data:`ZIP_RATIO_FREE_BYTES`; a member over
    :data:`ZIP_MEMBER_RATIO_FREE_BYTES` expanding more than :data:`MAX_ZIP_MEMBER_RATIO` times.
    Declared sizes cannot be exceeded: extraction stops at a member larger than declared.
    """
    name = archive.name
    members = zf.infolist()
    if len(members) > MAX_ZIP_MEMBERS:
        raise ImportRefused([Problem(name, None, None, f"{len(members):,} members, more than "
                                     f"the limit of {MAX_ZIP_MEMBERS:,}: import the bundle as "
                                     "a folder, or in several zips")])
    total = 0
    for info in members:
        member = _cut(info.filename)
        parts = PurePosixPath(info.filename).parts
        if (info.filename.startswith(("/", "\\")) or ".." in parts or "\\" in info.filename
                or (len(info.filename) > 1 and info.filename[1] == ":")):
            raise ImportRefused([Problem(name, None, member,
                                         "member path leaves the archive (zip slip)")])
        if stat.S_ISLNK(info.external_attr >> 16):
            raise ImportRefused([Problem(name, None, member,
                                         "symbolic links are not allowed in a bundle zip")])
        if info.flag_bits & 0x1:
            raise ImportRefused([Problem(name, None, member, "the member is encrypted: a "
                                         "bundle zip must be made without a password")])
        total += info.file_size
        if (info.file_size > ZIP_MEMBER_RATIO_FREE_BYTES
                and info.file_size > MAX_ZIP_MEMBER_RATIO * max(info.compress_size, 1)):
            raise ImportRefused([Problem(
                name, None, member, f"compression ratio too high: expands from "
                f"{_mib(info.compress_size)} to {_mib(info.file_size)}, more than "
                f"{MAX_ZIP_MEMBER_RATIO} times (zip bomb?)")])
    if total > MAX_ZIP_BYTES:
        raise ImportRefused([Problem(name, None, None, f"the archive expands to {_mib(total)}, "
                                     f"more than the limit of {_mib(MAX_ZIP_BYTES)} (zip bomb?):"
                                     " import the bundle as a folder, or in several zips")])
    packed = max(archive.stat().st_size, 1)
    if total > ZIP_RATIO_FREE_BYTES and total > MAX_ZIP_RATIO * packed:
        raise ImportRefused([Problem(
            name, None, None, f"{len(members):,} members expand to {_mib(total)} from a "
            f"{_mib(packed)} archive, {total / packed:,.0f} times its size; the limit is "
            f"{MAX_ZIP_RATIO} times above {_mib(ZIP_RATIO_FREE_BYTES)} (zip bomb?)")])


def _extract_zip(archive: Path, dest: Path) -> Path:
    """Extract a bundle zip safely; return the bundle root inside ``dest``.

    Everything :func:`check_zip` refuses is refused before the first member is written.
    """
    name = archive.name
    try:
        problem = _directory_problem(archive)
        if problem is not None:
            raise ImportRefused([Problem(name, None, None, problem)])
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError, struct.error) as exc:
        raise ImportRefused(
            [Problem(name, None, None, f"not a readable zip file: {exc}")]
        ) from None
    with zf:
        check_zip(archive, zf)
        members = zf.infolist()
        for info in members:
            target = dest.joinpath(*PurePosixPath(info.filename).parts)
            try:
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, target.open("wb") as dst:
                    written = 0
                    for block in iter(lambda: src.read(1 << 20), b""):
                        written += len(block)
                        if written > info.file_size:
                            raise ImportRefused([Problem(name, None, info.filename,
                                                         "member larger than declared")])
                        dst.write(block)
            except OSError as exc:  # a name component over 255 bytes, a file where a folder..
                raise ImportRefused([Problem(name, None, _cut(info.filename), "cannot extract "
                                             f"the member: {exc.strerror or exc}")]) from None
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError,
                    RuntimeError) as exc:
                raise ImportRefused([Problem(name, None, _cut(info.filename),
                                             f"damaged member: {exc}")]) from None
    if (dest / "bundle.json").is_file():
        return dest
    tops = [p for p in dest.iterdir() if p.is_dir() and (p / "bundle.json").is_file()]
    if len(tops) == 1:
        return tops[0]
    raise ImportRefused([Problem(name, None, None, "no bundle.json at the root of the zip")])


def _cut(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else f"{text[:limit]}..."


@contextmanager
def open_bundle(path: Path, progress: RecordProgress = None) -> Iterator[ProjectData]:
    """Read a bundle folder or zip; the records' image sources stay valid inside the block.
    ``progress`` is told the lines read of each ``.jsonl`` file."""
    with tempfile.TemporaryDirectory(prefix="judge-audit-render-") as drawn:
        if path.is_dir():
            yield read_bundle_dir(path, str(path), Path(drawn), progress)
            return
        with tempfile.TemporaryDirectory(prefix="judge-audit-zip-") as tmp:
            root = _extract_zip(path, Path(tmp))
            yield read_bundle_dir(root, str(path), Path(drawn), progress)


# ------------------------------------------------------------------------------ writing
def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True) + "\n"


def _drop_none(obj: dict[str, Any], keep: tuple[str, ...] = ()) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if v is not None or k in keep}


def write_bundle(project: ProjectData, out: Path) -> dict[str, int]:
    """Write ``project`` (e.g. :meth:`Store.read_project`) as a bundle folder at ``out``.

    Image files are copied to their recorded paths; two different files recorded under the
    same path (possible after imports from several sources) are written under
    ``media/<sha256>.<ext>`` instead. Returns counts of lines written per file.
    """
    out.mkdir(parents=True, exist_ok=True)
    for leftover in ("tasks.jsonl", "outputs.jsonl", "judgments.jsonl", "annotations.jsonl",
                     *human_work.FILES, *pairs.FILES):
        (out / leftover).unlink(missing_ok=True)
    placed: dict[str, str] = {}  # path -> sha256

    def place(path: str, file) -> str:
        if placed.get(path, file.sha256) != file.sha256:
            path = f"media/{file.sha256}.{file.source.suffix.lstrip('.')}"
        placed[path] = file.sha256
        target = out.joinpath(*PurePosixPath(path).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            shutil.copyfile(file.source, target)
        return path

    header: dict[str, Any] = {
        "format": FORMAT,
        "name": project.name,
        "benchmark": project.benchmark,
        "criteria": [
            _drop_none({"name": c.name, "label": c.label, "min": c.min, "max": c.max,
                        "step": c.step, "level": c.level, "rubric": c.rubric}, keep=("step",))
            for c in project.criteria
        ],
        "judges": [
            _drop_none({"name": j.name, "kind": j.kind,
                        "scale": list(j.scale) if j.scale else None})
            for j in project.judges
        ],
    }
    if project.guidelines is not None:
        header["guidelines"] = project.guidelines
    if project.meta:
        header["meta"] = project.meta
    (out / "bundle.json").write_text(json.dumps(header, ensure_ascii=False, indent=2,
                                                sort_keys=True) + "\n", encoding="utf-8")
    images: dict[str, list[TaskImage]] = {}
    for image in project.images:
        images.setdefault(image.task_id, []).append(image)
    questions: dict[str, list[Question]] = {}
    for q in project.questions:
        questions.setdefault(q.checklist_id, []).append(q)
    written_checklists: set[str] = set()
    counts = {"tasks": 0, "outputs": 0, "judgments": 0, "annotations": 0}
    with (out / "tasks.jsonl").open("w", encoding="utf-8") as fh:
        for t in project.tasks:
            row: dict[str, Any] = {"task_id": t.task_id, "instruction": t.instruction,
                                   "checklist_id": t.checklist_id}
            row["images"] = [
                _drop_none({"path": place(i.path, i.file), "role": i.role, "kind": i.kind,
                            "label": i.label, "meta": i.meta or None})
                for i in sorted(images.get(t.task_id, []), key=lambda i: i.index)
            ]
            if t.checklist_id in questions and t.checklist_id not in written_checklists:
                written_checklists.add(t.checklist_id)
                row["questions"] = [
                    _drop_none({"question_id": q.question_id, "text": q.text,
                                "pass_answer": q.pass_answer, "operator": q.operator,
                                "target": q.target, "depends_on": q.depends_on or None,
                                "meta": q.meta or None})
                    for q in sorted(questions[t.checklist_id], key=lambda q: q.position)
                ]
            if t.meta:
                row["meta"] = t.meta
            fh.write(_line(row))
            counts["tasks"] += 1
    with (out / "outputs.jsonl").open("w", encoding="utf-8") as fh:
        for o in project.outputs:
            row = {"output_id": o.output_id, "task_id": o.task_id, "generator": o.generator,
                   "path": place(o.path, o.file) if o.file and o.path else None}
            if o.missing:
                row["missing"] = True
            if o.meta:
                row["meta"] = o.meta
            fh.write(_line(row))
            counts["outputs"] += 1
    with (out / "judgments.jsonl").open("w", encoding="utf-8") as fh:
        for j in project.judgments:
            row = _drop_none({"judge": j.judge, "output_id": j.output_id,
                              "question_id": j.question_id, "criterion": j.criterion,
                              "answer": j.answer, "score": _plain(j.score), "raw": j.raw})
            if j.parse_status != "ok":
                row["parse_status"] = j.parse_status
            fh.write(_line(row))
            counts["judgments"] += 1
        item_answers: list[PairAnswer | RankingAnswer] = [*project.pair_answers,
                                                          *project.ranking_answers]
        for answer in item_answers:  # issue #17
            if answer.is_judge:
                fh.write(_line(pairs.answer_line(answer)))
                counts["judgments"] += 1
    everyone: list[PairAnswer | RankingAnswer] = [*project.pair_answers,
                                                  *project.ranking_answers]
    human_pairs = [a for a in everyone if not a.is_judge]
    if project.annotations or human_pairs:
        with (out / "annotations.jsonl").open("w", encoding="utf-8") as fh:
            for a in project.annotations:
                fh.write(_line(_drop_none({
                    "annotator": a.annotator, "output_id": a.output_id,
                    "question_id": a.question_id, "criterion": a.criterion,
                    "answer": a.answer, "score": _plain(a.score), "note": a.note,
                    "created_at": a.created_at, "source": a.source})))
                counts["annotations"] += 1
            for answer in human_pairs:
                fh.write(_line(pairs.answer_line(answer)))
                counts["annotations"] += 1
    for file_name, lines in (("pairs.jsonl", [pairs.pair_line(x) for x in project.pairs]),
                             ("rankings.jsonl",
                              [pairs.ranking_line(x) for x in project.rankings])):
        if lines:
            with (out / file_name).open("w", encoding="utf-8") as fh:
                fh.writelines(_line(line) for line in lines)
            counts[file_name.removesuffix(".jsonl")] = len(lines)
    for name, rows in project.work.items():
        _write_work(out / name, name, rows)
        counts[name.removesuffix(".jsonl")] = len(rows)
    return counts


def _write_work(path: Path, name: str, rows: list[WorkRow]) -> None:
    """One human-work file: lines numbered 1, 2, ... in row order (``id``), ``supersedes``
    naming the line of the row it replaces (never a database row id)."""
    number: dict[str | None, int] = {}
    with path.open("w", encoding="utf-8") as fh:
        for n, row in enumerate(rows, start=1):
            number[row.record_id] = n
            fh.write(_line(human_work.line(name, row.values, n, number.get(row.supersedes)
                                           if row.supersedes is not None else None)))


def _plain(score: float | None) -> float | int | None:
    """Write 7.0 as 7 so exported files read as people write them."""
    if score is None:
        return None
    return int(score) if float(score).is_integer() else score
