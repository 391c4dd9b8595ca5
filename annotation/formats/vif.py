"""Importer for the public VIF-Bench release layout.

VIF-Bench (seed paper 000) gives each task 1-7 reference images, 1-6 visual-instruction
(VI) images and a text instruction; images are addressed as ``Image_0..Image_N`` in input
order. A VLM judge scores every generated image 1-10 on six criteria. The release layout
read here::

    metadata.jsonl                          one task per line (below)
    tasks/<task_id>/Image_k.*               input images (old ids: tasks/v6/n2_00/...)
    tasks/<task_id>/instruction.txt         used when the metadata row has no instruction
    tasks/<task_id>/{layout,hierarchy,orientations,arrows}.json   kept in task meta (below)
    labels/vi_conflicts.jsonl               optional: conflict labels and pre-labels (below)
    generations/<model>/<task_id>.{png,jpg,jpeg,webp}
    results/<model>/<judge>/scores.jsonl    six snake_case criteria + ``average``
    results/<model>/<judge>/responses/<task_id>.txt   the judge's raw text

Task ids come in two forms: older ``v6/n2_00`` and newer ``v6_n2_00``. Both are accepted
everywhere (metadata, folder names, file names, scores rows); the task id stored is the
newer underscore form and the metadata row's original spelling is kept in task meta
``vif_id``.

Image roles (:func:`classify_image`), first rule that decides wins:

1. a boolean ``is_visual_instruction`` (or ``is_vi``) field;
2. a ``role`` field: ``visual_instruction``/``vi``/``visual-instruction``/... give
   ``visual_instruction``; ``reference``/``ref``/``main``/``sub``/``scene``/... give
   ``reference``;
3. a ``type`` or ``kind`` field naming a VI kind (``layout``, ``orientation``, ``wind``,
   ``light``, ``light+wind``, ``pose``, ``arrow``, ...) gives ``visual_instruction``; one
   naming a reference kind (``main``, ``sub``, ``scene``, ...) gives ``reference``;
4. the file name: a stem word (split on anything but letters, digits and ``+``) that is a VI
   kind word (``layout``, ``orientation``, ``pyramid``, ``arrow``, ``wind``, ``light``,
   ``pose``, ``vi``) gives ``visual_instruction``;
5. otherwise ``reference``.

The image ``kind`` is the ``kind`` field, else ``type``, else a reference sub-role given as
``role`` (``main``, ``sub``, ``scene``...), else the kind read from the file name. Every key
of an image entry other than ``file``, ``index``, ``role``, ``kind`` and ``label`` is kept in
the image's meta.

Per-task JSON files (their contents are unpublished): ``hierarchy.json`` and
``orientations.json`` are kept, parsed, as they are in ``meta.hierarchy`` and
``meta.orientations``. When their content is recognizable, ``layout.json``,
``arrows.json`` and ``orientations.json`` are *also* mapped into the documented shapes of
``meta.layout`` (``[{subject, box, image?}]``, normalized ``[x0, y0, x1, y1]``),
``meta.arrows`` (``[{kind, start, end}]``) and ``meta.orientation`` (``[{subject, yaw,
pitch?}]``), so the conflict rules, the readouts and the overlays read them
(:func:`map_layout`, :func:`map_arrows`, :func:`map_orientations`; pixel coordinates are
divided by the canvas size, 1024 unless the file names one). The file content itself is
then kept in ``meta.layout_raw`` / ``meta.arrows_raw`` when it differs from the mapped
form. Unrecognizable content is kept only there (``meta.orientations`` for orientations),
with a warning; it never fails the import.

``labels/vi_conflicts.jsonl`` (optional, shape unpublished): one JSON object per line,
keyed by the task ``id`` (or ``task_id``). ``*_conflict`` booleans (top level or in a
``conflicts`` object) fill the task's ``meta.conflicts`` where ``metadata.jsonl`` gives no
value; ``metadata.jsonl`` stays the published label, and a disagreement is a warning.
Per-reference pre-label fields (``yaw``, ``yaw_reliable``, ``light_distinctive`` or
``lighting_distinctive``, ``wind_responsive``, ``pose_distinctive``, with ``notes`` and
``source``) are taken into that image's ``meta.prelabel`` when they sit in an object
keyed by ``Image_k`` (or ``k``), or in a list of objects naming their ``index`` /
``image``. Everything else of the record (including the ``*_conflict`` values) is kept in
``meta.conflict_labels``. A value that does not fit its field is left there, with a
warning. Bad JSON, unknown task ids, duplicate rows and image indices the task does not
have are located errors.

Judge scores: a value in ``scores.jsonl`` wins and the raw text is kept beside it; a value
missing there is read from the raw text with :func:`parse_vif_scores`; when neither gives a
score, the judgment is kept with ``score=None`` and ``parse_status="unparsed"`` and a warning
is issued. ``average`` is derived and never stored, but a warning is issued when it differs
from the mean of the six criteria by more than :data:`AVERAGE_TOLERANCE`.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from annotation.formats.images import BadImage, BadPath, ImageProber, resolve_inside
from annotation.formats.validate import CONFLICT_LABEL_KEYS, prelabel_problems, task_meta_problems
from annotation.records import (
    NOT_UTF8,
    Criterion,
    ImageFile,
    ImportRefused,
    Judge,
    Judgment,
    NonFiniteNumber,
    Output,
    Problem,
    Problems,
    ProjectData,
    Task,
    TaskImage,
    loads_finite,
    printable,
    undecodable,
)

FORMAT = "vif-bench"
BENCHMARK = "VIF-Bench"
METADATA = "metadata.jsonl"
CONFLICT_LABELS = "labels/vi_conflicts.jsonl"

#: The six criteria, in the paper's order: (name, label).
CRITERIA: tuple[tuple[str, str], ...] = (
    ("text_instruction_following", "Text Instruction Following"),
    ("reference_consistency", "Reference Consistency"),
    ("visual_instruction_adherence", "Visual Instruction Adherence"),
    ("visual_instruction_cleanliness", "Visual Instruction Cleanliness"),
    ("scene_coherence", "Scene Coherence"),
    ("visual_quality", "Visual Quality"),
)
CRITERION_NAMES: tuple[str, ...] = tuple(name for name, _ in CRITERIA)
SCORE_MIN = 1
SCORE_MAX = 10

#: Names a judge may write for each criterion. The public judge prompt says "Vision
#: Instruction Adherence" and "Visual Instruction Residue" (higher = cleaner).
CRITERION_ALIASES: dict[str, tuple[str, ...]] = {
    "text_instruction_following": ("Text Instruction Following",),
    "reference_consistency": ("Reference Consistency",),
    "visual_instruction_adherence": (
        "Visual Instruction Adherence",
        "Vision Instruction Adherence",
    ),
    "visual_instruction_cleanliness": (
        "Visual Instruction Cleanliness",
        "Visual Instruction Residue",
    ),
    "scene_coherence": ("Scene Coherence",),
    "visual_quality": ("Visual Quality",),
}

GENERATION_EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp")
TASK_JSON_FILES = ("layout", "hierarchy", "orientations", "arrows")
KNOWN_ROW_KEYS = frozenset(
    {"id", "instruction", "images", "visual_instruction_types", "conflicts",
     "in_vi_vs_ti_experiment"}
)
IMAGE_FIELDS = frozenset({"file", "index", "role", "kind", "label"})
SCORE_ID_KEYS = ("id", "task_id")
MAX_TEXT_BYTES = 1_000_000
AVERAGE_TOLERANCE = 0.05

VI_ROLE_WORDS = frozenset(
    {"visual_instruction", "visual-instruction", "visual instruction", "vi",
     "instruction", "visual_instructions"}
)
REFERENCE_ROLE_WORDS = frozenset(
    {"reference", "ref", "main", "sub", "scene", "scene_context", "scene context", "context",
     "subject"}
)
VI_KIND_WORDS = frozenset(
    {"layout", "orientation", "wind", "light", "light+wind", "wind+light", "pose", "arrow",
     "arrows", "vi", "visual_instruction"}
)
#: File-name words that mark a VI image, and the kind each one names.
VI_NAME_WORDS: dict[str, str | None] = {
    "layout": "layout",
    "orientation": "orientation",
    "pyramid": "orientation",
    "pose": "pose",
    "wind": "wind",
    "light": "light",
    "light+wind": "light+wind",
    "arrow": None,
    "arrows": None,
    "vi": None,
}


# --------------------------------------------------------------------------- parsing


def _name_regex(names: tuple[str, ...]) -> re.Pattern[str]:
    """Regex for ``Name: <1-10>`` tolerating ``**`` around the name and/or the number."""
    alternatives = "|".join(r"\s+".join(re.escape(w) for w in n.split()) for n in names)
    return re.compile(
        rf"(?<![A-Za-z_])(?:{alternatives})[ \t*]*:[ \t*]*(10|[1-9])(?![0-9]|\.[0-9])",
        re.IGNORECASE,
    )


_SCORE_PATTERNS: dict[str, re.Pattern[str]] = {
    name: _name_regex(aliases) for name, aliases in CRITERION_ALIASES.items()
}


def parse_vif_scores(text: str) -> dict[str, int | None]:
    """Read the six criterion scores from a VIF-Bench judge's raw text.

    The benchmark's judge writes a ``Reasoning:`` block, then one line per criterion,
    ``Name: <1-10>.``. For each criterion the **last** match of ``Name: <score>`` wins
    (reasoning may mention a score before the final line). Matching is case-insensitive,
    tolerates markdown ``**`` around the name and/or the number (``**Visual Quality:** 7``,
    ``**Visual Quality**: **7**``) and an optional trailing period. Only whole integers
    1..10 count: ``7.5``, ``0`` or ``11`` do not match. Aliases: "Vision Instruction
    Adherence" -> ``visual_instruction_adherence``; "Visual Instruction Residue" ->
    ``visual_instruction_cleanliness``.

    Returns a dict with the six criterion names as keys; ``None`` where nothing matched.
    """
    result: dict[str, int | None] = {}
    for name, pattern in _SCORE_PATTERNS.items():
        last: int | None = None
        for match in pattern.finditer(text):
            last = int(match.group(1))
        result[name] = last
    return result


def normalize_task_id(raw_id: str) -> str:
    """The newer underscore form of a VIF-Bench id: ``v6/n2_00`` -> ``v6_n2_00``."""
    return raw_id.strip().strip("/").replace("/", "_")


def classify_image(entry: dict[str, Any]) -> tuple[str, str | None]:
    """Role and kind of one ``images`` entry of a metadata row (rule in the module doc)."""
    kind_field = _text(entry.get("kind"))
    type_field = _text(entry.get("type"))
    role_field = _text(entry.get("role"))
    name_kind, name_is_vi = _kind_from_file_name(entry.get("file"))

    role: str | None = None
    for key in ("is_visual_instruction", "is_vi"):
        flag = entry.get(key)
        if isinstance(flag, bool):
            role = "visual_instruction" if flag else "reference"
            break
    if role is None and role_field:
        lowered = role_field.lower()
        if lowered in VI_ROLE_WORDS:
            role = "visual_instruction"
        elif lowered in REFERENCE_ROLE_WORDS:
            role = "reference"
    if role is None:
        for value in (kind_field, type_field):
            if not value:
                continue
            lowered = value.lower()
            if lowered in VI_KIND_WORDS:
                role = "visual_instruction"
                break
            if lowered in REFERENCE_ROLE_WORDS:
                role = "reference"
                break
    if role is None:
        role = "visual_instruction" if name_is_vi else "reference"

    kind = kind_field or type_field
    if kind is None and role_field and role_field.lower() in REFERENCE_ROLE_WORDS - {
        "reference", "ref"
    }:
        kind = role_field
    if kind is None and role == "visual_instruction" and name_is_vi:
        kind = name_kind
    return role, kind


def _text(value: Any) -> str | None:
    """A stripped non-empty string, else None."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _kind_from_file_name(file: Any) -> tuple[str | None, bool]:
    """(VI kind, is VI) read from the words of a file name's stem."""
    if not isinstance(file, str):
        return None, False
    stem = PurePosixPath(file).stem.lower()
    words = [w for w in re.split(r"[^a-z0-9+]+", stem) if w]
    hits = [w for w in words if w in VI_NAME_WORDS]
    if not hits:
        return None, False
    kinds = {VI_NAME_WORDS[w] for w in hits} - {None}
    if {"light", "wind"} <= kinds:
        return "light+wind", True
    for word in hits:
        if VI_NAME_WORDS[word]:
            return VI_NAME_WORDS[word], True
    return ("arrow" if any(w.startswith("arrow") for w in hits) else None), True


def _loads(text: str) -> Any:
    """Parse JSON, refusing non-finite numbers (:func:`annotation.records.loads_finite`)."""
    return loads_finite(text)


def _json_error(exc: ValueError) -> str:
    """A short message for a JSON parse error."""
    if isinstance(exc, json.JSONDecodeError):
        return f"bad JSON: {exc.msg} (column {exc.colno})"
    return f"bad JSON: {exc}"


def _read_text(
    root: Path, rel: str, problems: Problems, max_bytes: int | None = None
) -> str | None:
    """UTF-8 text of ``root/rel`` (inside the root), or None after recording an error.

    ``max_bytes`` refuses larger files before reading them (judge texts, instructions).
    """
    try:
        path = resolve_inside(root, rel)
        if max_bytes is not None and path.stat().st_size > max_bytes:
            problems.add(rel, None, None, f"text over {max_bytes // 1_000_000} MB")
            return None
        return path.read_text(encoding="utf-8-sig")
    except BadPath as exc:
        problems.add(rel, None, None, str(exc))
    except UnicodeDecodeError as exc:
        problems.add(rel, None, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})")
    except OSError as exc:
        problems.add(rel, None, None, f"cannot read: {exc.strerror or exc}")
    return None


def _read_jsonl(root: Path, rel: str, problems: Problems) -> list[tuple[int, dict[str, Any]]]:
    """JSON objects of a ``.jsonl`` file with their 1-based line numbers; blank lines skipped."""
    text = _read_text(root, rel, problems)
    if text is None:
        return []
    rows: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        try:
            value = _loads(line)
        except NonFiniteNumber as exc:
            problems.add(rel, number, exc.field, exc.message)
            continue
        except ValueError as exc:
            problems.add(rel, number, None, _json_error(exc))
            continue
        if not isinstance(value, dict):
            problems.add(rel, number, None, f"expected a JSON object, got {_type(value)}")
            continue
        rows.append((number, value))
    return rows


def _type(value: Any) -> str:
    """A JSON type name for error messages."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _is_number(value: Any) -> bool:
    """True for int and float, not bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _id_problem(raw_id: str) -> str | None:
    """Why an id cannot name files inside the release, or None if it can."""
    if "\\" in raw_id or "\x00" in raw_id:
        return "id may not contain a backslash or NUL"
    parts = raw_id.strip().strip("/").split("/")
    if not parts or any(p in ("", ".", "..") for p in parts):
        return f"not a usable task id: {raw_id!r}"
    return None


def _rel_key(rel: str) -> str:
    """Task id named by a file path relative to its folder, extension removed."""
    path = PurePosixPath(rel)
    return normalize_task_id(str(path.with_suffix("")))


def _walk_files(folder: Path) -> list[str]:
    """Relative posix paths of regular files under ``folder`` (no hidden, no link dirs)."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        base = Path(dirpath)
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            found.append((base / name).relative_to(folder).as_posix())
    return found


def _subdirs(folder: Path, problems: Problems | None = None, rel: str = "") -> list[str]:
    """Names of the visible sub-folders of ``folder``, sorted. A name that is not UTF-8
    (it would become a generator or judge id) is left out and reported to ``problems``
    as ``rel/<name>``."""
    if not folder.is_dir():
        return []
    names = []
    for p in folder.iterdir():
        if not p.is_dir() or p.name.startswith("."):
            continue
        if undecodable(p.name):
            if problems is not None:
                problems.add(f"{rel}/{p.name}", None, None, NOT_UTF8)
            continue
        names.append(p.name)
    return sorted(names)


# ------------------------------------------------- per-task JSON files -> documented meta

#: Canvas side that pixel coordinates refer to when a file names none (Appendix C.3).
CANVAS_SIZE = 1024
#: A coordinate above this is a pixel coordinate, not a normalized one.
PIXEL_THRESHOLD = 1.5
_CANVAS_KEYS = ("canvas_size", "canvas", "image_size")
_LIST_KEYS = ("boxes", "items", "subjects", "objects", "entries", "layout", "arrows",
              "orientations", "orientation")
_BOX_KEYS = ("box", "bbox", "bounding_box", "xyxy", "rect", "region")
_NAME_KEYS = ("subject", "name", "label", "object", "entity")
_INDEX_KEYS = ("image", "index", "image_index", "image_idx")
_START_KEYS = ("start", "from", "source", "tail", "p0")
_END_KEYS = ("end", "to", "target", "head", "p1")
_IMAGE_NAME = re.compile(r"image[_ -]?(\d+)(?:\.[a-z0-9]+)?", re.IGNORECASE)
_COLOR = re.compile(r"#[0-9A-Fa-f]{6}")


def _num(value: Any) -> float | None:
    """A finite JSON number as float (booleans and strings are not numbers), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    v = float(value)
    return v if math.isfinite(v) else None


def _nums(value: Any, n: int) -> list[float] | None:
    if not isinstance(value, list | tuple) or len(value) != n:
        return None
    out = [_num(v) for v in value]
    return None if any(v is None for v in out) else out  # type: ignore[return-value]


def _first(item: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if item.get(key) is not None:
            return item[key]
    return None


def image_number(value: Any) -> int | None:
    """The ``k`` of ``Image_k`` (also ``image_k``, ``Image_k.png``) or of a whole number."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value >= 0 else None
    if isinstance(value, str):
        m = _IMAGE_NAME.fullmatch(value.strip())
        if m:
            return int(m.group(1))
        if value.strip().isdigit():
            return int(value.strip())
    return None


def _canvas(container: Any) -> tuple[float, float]:
    if isinstance(container, Mapping):
        value = _first(container, _CANVAS_KEYS)
        if isinstance(value, Mapping):
            value = [value.get("width", value.get("w")), value.get("height", value.get("h"))]
        side = _num(value)
        wh = [side, side] if side else _nums(value, 2)
        if wh and wh[0] > 0 and wh[1] > 0:
            return wh[0], wh[1]
    return float(CANVAS_SIZE), float(CANVAS_SIZE)


def _normalized(values: list[float], canvas: tuple[float, float]) -> list[float]:
    """Pixel coordinates (any above :data:`PIXEL_THRESHOLD`) divided by the canvas size."""
    if max(abs(v) for v in values) <= PIXEL_THRESHOLD:
        return values
    return [round(v / canvas[i % 2], 6) for i, v in enumerate(values)]


def _entries(raw: Any) -> Iterator[tuple[str | None, Any]]:
    """``(name from the key, item)`` of a list, or of a dict keyed by name; a dict holding
    its list under ``boxes``/``items``/... is opened."""
    if isinstance(raw, list | tuple):
        for item in raw:
            yield None, item
    elif isinstance(raw, Mapping):
        for key in _LIST_KEYS:
            if isinstance(raw.get(key), list | tuple | Mapping):
                yield from _entries(raw[key])
                return
        for key, item in raw.items():
            if key not in _CANVAS_KEYS:
                yield str(key), item


def _point(value: Any) -> list[float] | None:
    if isinstance(value, Mapping):
        value = [value.get("x"), value.get("y")]
    return _nums(value, 2)


def _rect(value: Any) -> list[float] | None:
    """``[x0, y0, x1, y1]``, two corner points, or a dict of corners or of x/y/w/h."""
    if isinstance(value, list | tuple) and len(value) == 2:
        a, b = _point(value[0]), _point(value[1])
        return [*a, *b] if a and b else None
    if isinstance(value, list | tuple):
        return _nums(value, 4)
    if isinstance(value, Mapping):
        for keys in (("x0", "y0", "x1", "y1"), ("xmin", "ymin", "xmax", "ymax"),
                     ("left", "top", "right", "bottom")):
            r = _nums([value.get(k) for k in keys], 4)
            if r:
                return r
        xywh = _nums([value.get("x"), value.get("y"), value.get("w", value.get("width")),
                      value.get("h", value.get("height"))], 4)
        if xywh:
            return [xywh[0], xywh[1], round(xywh[0] + xywh[2], 6),
                    round(xywh[1] + xywh[3], 6)]
    return None


def _valid(key: str, mapped: list[dict[str, Any]], n_images: int) -> bool:
    return bool(mapped) and not task_meta_problems({key: mapped}, n_images)


def map_layout(raw: Any, n_images: int) -> list[dict[str, Any]] | None:
    """``layout.json`` content as ``meta.layout`` entries ``{subject, box, image?, color?}``,
    or None when it is not recognizable (then nothing is mapped, never partly).

    Read: ``{name: box}``, a list of objects with a box under ``box``/``bbox``/... and a
    name under ``subject``/``name``/``label`` (or an image index), or either under a
    ``boxes``/``items``/... key; a box is ``[x0, y0, x1, y1]``, two corners, or a dict of
    corners or x/y/w/h; pixel coordinates are divided by the canvas (``canvas_size``, else
    1024). A name ``Image_k`` (or an ``image``/``index`` field) links the box to the
    reference ``Image_k``.
    """
    canvas = _canvas(raw)
    if isinstance(raw, Mapping) and _first(raw, _BOX_KEYS) is not None:
        raw = [raw]
    out: list[dict[str, Any]] = []
    for hint, item in _entries(raw):
        if isinstance(item, Mapping):
            box = _rect(_first(item, _BOX_KEYS)) or _rect(item)
            name = _first(item, _NAME_KEYS)
            name = name if isinstance(name, str) and name.strip() else hint
            explicit = _first(item, _INDEX_KEYS)
            index = image_number(explicit) if explicit is not None else image_number(name)
            color = item.get("color")
        else:
            box, name, explicit, color = _rect(item), hint, None, None
            index = image_number(name)
        if box is None:
            return None
        if index is not None and not 0 <= index < n_images:
            if explicit is not None:
                return None
            index = None
        subject = name if name else (f"Image_{index}" if index is not None else None)
        if subject is None:
            return None
        entry: dict[str, Any] = {"subject": subject, "box": _normalized(box, canvas)}
        if index is not None:
            entry["image"] = index
        if isinstance(color, str) and _COLOR.fullmatch(color):
            entry["color"] = color
        out.append(entry)
    return out if _valid("layout", out, n_images) else None


def _arrow_kind(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    kinds = [k for k in ("wind", "light") if k in value.lower()]
    return kinds[0] if len(kinds) == 1 else None


def _one_arrow(item: Any, hint: str | None) -> dict[str, Any] | None:
    if isinstance(item, Mapping):
        kind = _arrow_kind(_first(item, ("kind", "type", "name"))) or _arrow_kind(hint)
        start, end = _point(_first(item, _START_KEYS)), _point(_first(item, _END_KEYS))
        points = _first(item, ("points", "line"))
        if (start is None or end is None) and isinstance(points, list) and len(points) == 2:
            start, end = _point(points[0]), _point(points[1])
    else:
        kind = _arrow_kind(hint)
        flat = _rect(item) if isinstance(item, list | tuple) else None
        start, end = (flat[:2], flat[2:]) if flat else (None, None)
    if kind is None or start is None or end is None:
        return None
    return {"kind": kind, "start": start, "end": end}


def map_arrows(raw: Any) -> list[dict[str, Any]] | None:
    """``arrows.json`` content as ``meta.arrows`` entries ``{kind, start, end}``, or None.

    Read: a list of objects with ``kind``/``type`` (a word containing wind or light) and
    ``start``/``from`` and ``end``/``to`` (or ``points``), one such object, a dict keyed by
    kind (``{"wind": [[x, y], [x, y]], "light": {...}}``, a value may also be a list of
    arrows of that kind), or a list under ``arrows``; pixel coordinates are divided by the
    canvas size.
    """
    canvas = _canvas(raw)
    if isinstance(raw, Mapping) and _first(raw, ("kind", "type")) is not None:
        raw = [raw]
    out: list[dict[str, Any]] = []
    for hint, item in _entries(raw):
        arrow = _one_arrow(item, hint)
        if arrow is not None:
            out.append(arrow)
        elif (_arrow_kind(hint) and isinstance(item, list | tuple) and item
              and all(isinstance(x, Mapping | list | tuple) for x in item)):
            many = [_one_arrow(x, hint) for x in item]
            if any(a is None for a in many):
                return None
            out.extend(a for a in many if a is not None)
        else:
            return None
    for arrow in out:
        xy = _normalized([*arrow["start"], *arrow["end"]], canvas)
        arrow["start"], arrow["end"] = xy[:2], xy[2:]
    return out if _valid("arrows", out, 0) else None


def map_orientations(raw: Any, n_images: int) -> list[dict[str, Any]] | None:
    """``orientations.json`` content as ``meta.orientation`` entries ``{subject, yaw,
    pitch?, anchor?}``, or None.

    Read: ``{name: {yaw, pitch}}`` (or ``{name: yaw}``), a list of objects with ``yaw``
    (and ``pitch``) and a name under ``subject``/``name``/``label`` or an image index (then
    the subject is ``Image_k``), one such object, or either under an ``orientations`` /
    ``items``/... key.
    """
    if isinstance(raw, Mapping) and "yaw" in raw:
        raw = [raw]
    out: list[dict[str, Any]] = []
    for hint, item in _entries(raw):
        if isinstance(item, Mapping):
            yaw, pitch = item.get("yaw"), item.get("pitch")
            name = _first(item, _NAME_KEYS)
            name = name if isinstance(name, str) and name.strip() else hint
            explicit = _first(item, _INDEX_KEYS)
            if not name and explicit is not None:
                index = image_number(explicit)
                name = f"Image_{index}" if index is not None and index < n_images else None
            anchor = _point(item.get("anchor")) if item.get("anchor") is not None else None
        else:
            yaw, pitch, name, anchor = item, None, hint, None
        if _num(yaw) is None or (pitch is not None and _num(pitch) is None) or not name:
            return None
        entry: dict[str, Any] = {"subject": name, "yaw": yaw}
        if pitch is not None:
            entry["pitch"] = pitch
        if anchor is not None:
            entry["anchor"] = anchor
        out.append(entry)
    return out if _valid("orientation", out, n_images) else None


#: Pre-label field names a ``vi_conflicts.jsonl`` record may use, and the canonical name.
PRELABEL_ALIASES: dict[str, str] = {
    "yaw": "yaw",
    "yaw_reliable": "yaw_reliable",
    "yaw_reliability": "yaw_reliable",
    "reliable": "yaw_reliable",
    "light_distinctive": "light_distinctive",
    "lighting_distinctive": "light_distinctive",
    "distinctive_lighting": "light_distinctive",
    "wind_responsive": "wind_responsive",
    "wind_responsiveness": "wind_responsive",
    "pose_distinctive": "pose_distinctive",
    "distinctive_pose": "pose_distinctive",
}
_PRELABEL_TEXT = ("notes", "source")


def _entry_index(obj: Mapping[str, Any]) -> int | None:
    for key in (*_INDEX_KEYS, "file", "name", "reference"):
        if key in obj:
            return image_number(obj[key])
    return None


def _reference_objects(record: Mapping[str, Any]
                       ) -> list[tuple[tuple[Any, ...], int, Mapping[str, Any]]]:
    """``(path in the record, image index, object)`` of every per-reference object that
    holds a pre-label field: ``{"Image_0": {...}}``, ``{"refs": {"Image_0" or "0": {...}}}``
    or ``{"refs": [{"index": 0, ...}]}``."""
    found: list[tuple[tuple[Any, ...], int, Mapping[str, Any]]] = []

    def has_fields(obj: Any) -> bool:
        return isinstance(obj, Mapping) and any(k in PRELABEL_ALIASES for k in obj)

    for key, value in record.items():
        index = image_number(key) if not str(key).strip().isdigit() else None
        if index is not None and has_fields(value):
            found.append(((key,), index, value))
        elif isinstance(value, Mapping) and value:
            for sub, obj in value.items():
                k = image_number(sub)
                if k is not None and has_fields(obj):
                    found.append(((key, sub), k, obj))
        elif isinstance(value, list):
            for n, obj in enumerate(value):
                if has_fields(obj):
                    k = _entry_index(obj)
                    if k is not None:
                        found.append(((key, n), k, obj))
    return found


def _path_text(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p))
                   for i, p in enumerate(path))


def _fits(canonical: str, value: Any) -> bool:
    if canonical == "yaw":
        return value is None or (_num(value) is not None and abs(value) <= 360)
    return value is None or isinstance(value, bool)


# --------------------------------------------------------------------------- the reader


def detect(root: Path) -> bool:
    """True when ``root`` looks like a VIF-Bench release (``metadata.jsonl`` + ``tasks/``
    or ``generations/``)."""
    root = Path(root)
    return (
        root.is_dir()
        and (root / METADATA).is_file()
        and ((root / "tasks").is_dir() or (root / "generations").is_dir())
    )


class _Reader:
    """One import of one release folder."""

    def __init__(self, root: Path):
        """Prepare to read the release at ``root``."""
        self.root = root
        self.problems = Problems()
        self.prober = ImageProber()
        self.tasks: list[Task] = []
        self.images: list[TaskImage] = []
        self.task_ids: set[str] = set()
        self.task_images: dict[str, list[TaskImage]] = {}

    # ---- helpers

    def warn(self, file: str, line: int | None, field: str | None, message: str) -> None:
        """Record one warning (the import still succeeds)."""
        self.problems.warn(file, line, field, message)

    def probe(self, real: Path) -> ImageFile:
        """Probe an image file; read errors become :class:`BadImage`."""
        try:
            return self.prober(real)
        except OSError as exc:
            raise BadImage(f"cannot read: {exc.strerror or exc}") from None

    def task_dir(self, raw_id: str, task_id: str) -> str | None:
        """``tasks/...`` folder of a task, in whichever id form is on disk."""
        forms = [task_id, raw_id.strip().strip("/"), task_id.replace("_", "/", 1)]
        root_real = self.root.resolve()
        for form in dict.fromkeys(forms):
            candidate = self.root / "tasks" / Path(*form.split("/"))
            if candidate.is_dir() and root_real in candidate.resolve().parents:
                return f"tasks/{form}"
        return None

    # ---- metadata

    def read_metadata(self) -> None:
        """Read every row of ``metadata.jsonl`` into tasks and images."""
        for line, row in _read_jsonl(self.root, METADATA, self.problems):
            self.read_row(line, row)

    def read_row(self, line: int, row: dict[str, Any]) -> None:
        """Read one metadata row: id, instruction, meta, task JSON files, images."""
        add = self.problems.add
        raw_id = row.get("id")
        if raw_id is None:
            add(METADATA, line, "id", "missing")
            return
        if not isinstance(raw_id, str) or not raw_id.strip():
            add(METADATA, line, "id", f"expected a non-empty string, got {_type(raw_id)}")
            return
        why = _id_problem(raw_id)
        if why:
            add(METADATA, line, "id", why)
            return
        task_id = normalize_task_id(raw_id)
        if task_id in self.task_ids:
            add(METADATA, line, "id", f"duplicate task id {task_id!r} (from {raw_id!r})")
            return
        self.task_ids.add(task_id)
        folder = self.task_dir(raw_id, task_id)
        meta: dict[str, Any] = {"vif_id": raw_id}

        instruction = self.read_instruction(line, row, folder, meta)

        types = row.get("visual_instruction_types")
        if types is not None:
            if isinstance(types, list) and all(isinstance(t, str) for t in types):
                meta["visual_instruction_types"] = types
            else:
                add(METADATA, line, "visual_instruction_types", "expected a list of strings")
        conflicts = row.get("conflicts")
        unknown_conflicts: dict[str, Any] = {}
        if conflicts is not None:
            if isinstance(conflicts, dict):
                meta["conflicts"] = {}
                for key, value in conflicts.items():
                    if key not in CONFLICT_LABEL_KEYS:
                        unknown_conflicts[key] = value
                    elif value is None or isinstance(value, bool):
                        meta["conflicts"][key] = value
                    else:
                        add(METADATA, line, f"conflicts.{key}",
                            f"expected true, false or null, got {_type(value)}")
                if unknown_conflicts:
                    self.warn(METADATA, line, "conflicts",
                              f"unknown conflict labels kept in meta.extra.conflicts: "
                              f"{', '.join(sorted(unknown_conflicts))}")
            else:
                add(METADATA, line, "conflicts", f"expected an object, got {_type(conflicts)}")
        experiment = row.get("in_vi_vs_ti_experiment")
        if experiment is not None:
            if isinstance(experiment, bool):
                meta["in_vi_vs_ti_experiment"] = experiment
            else:
                add(METADATA, line, "in_vi_vs_ti_experiment",
                    f"expected a boolean, got {_type(experiment)}")
        extra = {k: v for k, v in row.items() if k not in KNOWN_ROW_KEYS}
        if unknown_conflicts:
            extra["conflicts"] = unknown_conflicts
        if extra:
            meta["extra"] = extra
        files = self.read_task_json(folder) if folder else {}

        n_images = self.read_images(line, row, task_id, folder)
        self.map_task_json(files, meta, n_images)
        if instruction is not None:
            self.tasks.append(Task(task_id, instruction, checklist_id=task_id, meta=meta,
                                   origin=(METADATA, line)))

    def read_instruction(
        self, line: int, row: dict[str, Any], folder: str | None, meta: dict[str, Any]
    ) -> str | None:
        """The row's instruction, else the task folder's ``instruction.txt``."""
        value = row.get("instruction")
        if value is not None and not isinstance(value, str):
            self.problems.add(METADATA, line, "instruction",
                              f"expected a string, got {_type(value)}")
            return None
        if value is not None and value.strip():
            instruction = value
        else:
            rel = f"{folder}/instruction.txt" if folder else None
            if rel is None or not (self.root / rel).exists():
                where = f" and no {rel}" if rel else " and no task folder under tasks/"
                self.problems.add(METADATA, line, "instruction", f"missing{where}")
                return None
            text = _read_text(self.root, rel, self.problems, MAX_TEXT_BYTES)
            if text is None:
                return None
            instruction = text.strip()
            meta["instruction_source"] = rel
        if len(instruction.encode("utf-8")) > MAX_TEXT_BYTES:
            self.problems.add(METADATA, line, "instruction", "text over 1 MB")
            return None
        return instruction

    def read_task_json(self, folder: str) -> dict[str, tuple[str, Any]]:
        """The parsed per-task JSON files found in ``folder``: name -> (path, content)."""
        found: dict[str, tuple[str, Any]] = {}
        for key in TASK_JSON_FILES:
            rel = f"{folder}/{key}.json"
            if not (self.root / rel).is_file():
                continue
            text = _read_text(self.root, rel, self.problems)
            if text is None:
                continue
            try:
                found[key] = (rel, _loads(text))
            except ValueError as exc:
                self.problems.add(rel, None, None, _json_error(exc))
        return found

    def map_task_json(self, files: dict[str, tuple[str, Any]], meta: dict[str, Any],
                      n_images: int) -> None:
        """Keep the per-task JSON files in meta, mapped where recognizable (module doc)."""
        for key, (rel, raw) in files.items():
            if key == "hierarchy":
                meta["hierarchy"] = raw
                continue
            if key == "orientations":
                meta["orientations"] = raw
                mapped = map_orientations(raw, n_images)
                if mapped is None:
                    self.warn(rel, None, None, "not recognized as orientations ({subject, yaw, "
                              "pitch}); kept as is in meta.orientations only")
                else:
                    meta["orientation"] = mapped
                continue
            mapped = map_layout(raw, n_images) if key == "layout" else map_arrows(raw)
            if mapped is None:
                meta[f"{key}_raw"] = raw
                what = ("layout boxes ({subject, box})" if key == "layout"
                        else "wind/light arrows ({kind, start, end})")
                self.warn(rel, None, None,
                          f"not recognized as {what}; kept as is in meta.{key}_raw only")
                continue
            meta[key] = mapped
            if mapped != raw:
                meta[f"{key}_raw"] = raw

    def read_images(self, line: int, row: dict[str, Any], task_id: str, folder: str | None
                    ) -> int:
        """Read the row's ``images`` list: locate, probe and classify each image.

        Returns the number of image entries of the row."""
        add = self.problems.add
        entries = row.get("images")
        if entries is None:
            add(METADATA, line, "images", "missing")
            return 0
        if not isinstance(entries, list):
            add(METADATA, line, "images", f"expected a list, got {_type(entries)}")
            return 0
        found: list[TaskImage] = []
        for position, entry in enumerate(entries):
            where = f"images[{position}]"
            if not isinstance(entry, dict):
                add(METADATA, line, where, f"expected an object, got {_type(entry)}")
                continue
            file = entry.get("file")
            if not isinstance(file, str) or not file.strip():
                add(METADATA, line, f"{where}.file", "missing" if file is None
                    else f"expected a non-empty string, got {_type(file)}")
                continue
            index = entry.get("index", position)
            if not isinstance(index, int) or isinstance(index, bool) or index < 0:
                add(METADATA, line, f"{where}.index", "expected a whole number >= 0")
                continue
            label = entry.get("label")
            if label is not None and not isinstance(label, str):
                add(METADATA, line, f"{where}.label", f"expected a string, got {_type(label)}")
                continue
            located = self.locate_image(file, folder, line, f"{where}.file")
            if located is None:
                continue
            rel, image = located
            role, kind = classify_image(entry)
            meta = {k: v for k, v in entry.items() if k not in IMAGE_FIELDS}
            if "prelabel" in meta:
                problems = prelabel_problems(meta["prelabel"], f"{where}.prelabel")
                for fld, message in problems:
                    add(METADATA, line, fld, message)
                if problems:
                    continue
            found.append(TaskImage(task_id, index, role, rel, image, kind, label, meta,
                                   origin=(METADATA, line)))
        indices = sorted(i.index for i in found)
        if len(found) == len(entries) and indices != list(range(len(found))):
            add(METADATA, line, "images",
                f"index values must be 0..{len(found) - 1}, each once (got {indices})")
            return len(entries)
        ordered = sorted(found, key=lambda i: i.index)
        self.images.extend(ordered)
        self.task_images[task_id] = ordered
        return len(entries)

    def locate_image(
        self, file: str, folder: str | None, line: int, field: str
    ) -> tuple[str, ImageFile] | None:
        """Find an image named by a metadata row: in the task folder, else from the root."""
        candidates = [f"{folder}/{file}"] if folder else []
        candidates.append(file)
        for rel in dict.fromkeys(candidates):
            try:
                real = resolve_inside(self.root, rel)
            except BadPath as exc:
                if str(exc).startswith("file not found"):
                    continue
                self.problems.add(METADATA, line, field, str(exc))
                return None
            try:
                return rel, self.probe(real)
            except BadImage as exc:
                self.problems.add(METADATA, line, field, f"{rel}: {exc}")
                return None
        looked = " or ".join(repr(c) for c in dict.fromkeys(candidates))
        self.problems.add(METADATA, line, field, f"file not found: {looked}")
        return None

    # ---- labels/vi_conflicts.jsonl

    def row_task(self, rel: str, line: int, row: dict[str, Any], seen: dict[str, int]
                 ) -> tuple[str | None, str | None]:
        """``(id key, task id)`` of a per-task row (``id`` / ``task_id`` ...), or a located
        problem and ``(key, None)``: missing or non-string id, a task not in the metadata,
        a second row for a task already ``seen`` (task id -> first line)."""
        key = next((k for k in SCORE_ID_KEYS if k in row), None)
        raw_id = row.get(key) if key else None
        if not isinstance(raw_id, str) or not raw_id.strip():
            self.problems.add(rel, line, key or "id", "missing" if raw_id is None
                              else f"expected a string, got {_type(raw_id)}")
            return key, None
        task_id = normalize_task_id(raw_id)
        if task_id not in self.task_ids:
            self.problems.add(rel, line, key, f"no task {raw_id!r} in {METADATA}")
            return key, None
        if task_id in seen:
            self.problems.add(rel, line, key, f"duplicate row for task {task_id!r}"
                              f" (first on line {seen[task_id]})")
            return key, None
        return key, task_id

    def read_conflict_labels(self) -> None:
        """Merge ``labels/vi_conflicts.jsonl`` (when present) into task and image meta."""
        rel = CONFLICT_LABELS
        if not (self.root / rel).exists():
            return
        tasks = {t.task_id: t for t in self.tasks}
        seen: dict[str, int] = {}
        for line, row in _read_jsonl(self.root, rel, self.problems):
            key, task_id = self.row_task(rel, line, row, seen)
            if task_id is None:
                continue
            seen[task_id] = line
            if task_id not in tasks:  # its metadata row had errors, already reported
                continue
            record = {k: v for k, v in row.items() if k != key}
            self.merge_conflict_record(rel, line, tasks[task_id], record)

    def merge_conflict_record(self, rel: str, line: int, task: Task,
                              record: dict[str, Any]) -> None:
        """One record of ``vi_conflicts.jsonl``: labels, pre-labels, and the rest kept."""
        rest = copy.deepcopy(record)
        labels: dict[str, Any] = {}
        nested = record.get("conflicts")
        for fld, key, value in [
            *((k, k, v) for k, v in record.items() if k.endswith("_conflict")),
            *((f"conflicts.{k}", k, v) for k, v in
              (nested.items() if isinstance(nested, Mapping) else ())),
        ]:
            if value is not None and not isinstance(value, bool):
                self.warn(rel, line, fld, f"{task.task_id}: expected true, false or null, got "
                          f"{_type(value)}; kept in meta.conflict_labels only")
            elif key in CONFLICT_LABEL_KEYS:
                labels[key] = value
        published = task.meta.get("conflicts")
        if isinstance(published, dict):
            for key, value in labels.items():
                if key not in published:
                    published[key] = value
                elif published[key] != value:
                    self.warn(rel, line, key,
                              f"{task.task_id}: says {json.dumps(value)} but {METADATA} says "
                              f"{json.dumps(published[key])}; {METADATA} is kept as the "
                              "published label (this one is in meta.conflict_labels)")
        elif labels:
            task.meta["conflicts"] = labels

        images = {i.index: i for i in self.task_images.get(task.task_id, [])}
        n_images = len(images)
        emptied: list[tuple[Any, ...]] = []
        for path, index, obj in _reference_objects(record):
            where = _path_text(path)
            image = images.get(index)
            if image is None:
                self.problems.add(rel, line, where, f"Image_{index} does not exist: task "
                                  f"{task.task_id!r} has {n_images} image(s)")
                continue
            current = image.meta.get("prelabel")
            prelabel = dict(current) if isinstance(current, Mapping) else {}
            if "lighting_distinctive" in prelabel and "light_distinctive" not in prelabel:
                prelabel["light_distinctive"] = prelabel.pop("lighting_distinctive")
            taken: list[str] = []
            for name, value in obj.items():
                canonical = PRELABEL_ALIASES.get(name, name if name in _PRELABEL_TEXT else None)
                if canonical is None:
                    continue
                ok = isinstance(value, str) if name in _PRELABEL_TEXT else _fits(canonical,
                                                                                  value)
                if not ok:
                    self.warn(rel, line, f"{where}.{name}",
                              f"{task.task_id}: {_type(value)} does not fit {canonical}; "
                              "kept in meta.conflict_labels only")
                elif canonical in prelabel and prelabel[canonical] != value:
                    self.warn(rel, line, f"{where}.{name}",
                              f"{task.task_id}: Image_{index} says {json.dumps(value)} but "
                              f"{METADATA} says {json.dumps(prelabel[canonical])}; "
                              f"{METADATA} is kept (this one is in meta.conflict_labels)")
                else:
                    prelabel[canonical] = value
                    taken.append(name)
            if taken:
                image.meta["prelabel"] = prelabel
                left = _lookup(rest, path)
                for name in taken:
                    left.pop(name, None)
                if not set(left) - {*_INDEX_KEYS, "file", "name", "reference"}:
                    emptied.append(path)
        # last first, so list positions still hold while entries are removed
        for path in sorted(emptied, key=lambda p: [(0, x) if isinstance(x, int) else (1, str(x))
                                                  for x in p], reverse=True):
            _remove(rest, path)
        if rest:
            task.meta["conflict_labels"] = rest

    # ---- generations

    def read_generations(self) -> dict[tuple[str, str], tuple[str, ImageFile]]:
        """(task_id, model) -> (path, image) for every generated image on disk."""
        found: dict[tuple[str, str], tuple[str, ImageFile]] = {}
        base = self.root / "generations"
        for model in _subdirs(base, self.problems, "generations"):
            for sub in _walk_files(base / model):
                if PurePosixPath(sub).suffix.lower() not in GENERATION_EXTENSIONS:
                    continue
                rel = f"generations/{model}/{sub}"
                task_id = _rel_key(sub)
                if task_id not in self.task_ids:
                    self.problems.add(rel, None, None,
                                      f"no task {task_id!r} in {METADATA}")
                    continue
                if (task_id, model) in found:
                    self.problems.add(rel, None, None, f"second generation for task {task_id!r}"
                                      f" (first: {found[(task_id, model)][0]})")
                    continue
                if self.problems.full:
                    continue
                try:
                    image = self.probe(resolve_inside(self.root, rel))
                except (BadPath, BadImage) as exc:
                    self.problems.add(rel, None, None, str(exc))
                    continue
                found[(task_id, model)] = (rel, image)
        return found

    # ---- results

    def read_results(self) -> dict[tuple[str, str], list[Judgment]]:
        """(task_id, model) -> the judgments of every judge for that output."""
        judged: dict[tuple[str, str], list[Judgment]] = {}
        base = self.root / "results"
        for model in _subdirs(base, self.problems, "results"):
            for judge in _subdirs(base / model, self.problems, f"results/{model}"):
                folder = f"results/{model}/{judge}"
                for task_id, judgments in self.read_judge(model, judge, folder).items():
                    judged.setdefault((task_id, model), []).extend(judgments)
        return judged

    def read_scores(self, folder: str) -> dict[str, tuple[int, dict[str, Any]]]:
        """task_id -> (line, row) of ``scores.jsonl``; values are checked here."""
        rel = f"{folder}/scores.jsonl"
        rows: dict[str, tuple[int, dict[str, Any]]] = {}
        if not (self.root / rel).exists():
            return rows
        unknown: dict[str, int] = {}
        first_line: dict[str, int] = {}  # task id -> line of its accepted row
        for line, row in _read_jsonl(self.root, rel, self.problems):
            key, task_id = self.row_task(rel, line, row, first_line)
            if task_id is None:
                continue
            ok = True
            for name in (*CRITERION_NAMES, "average"):
                value = row.get(name)
                if value is None:
                    continue
                if not _is_number(value):
                    self.problems.add(rel, line, name, f"expected a number, got {_type(value)}")
                    ok = False
                elif not SCORE_MIN <= value <= SCORE_MAX:
                    self.problems.add(rel, line, name,
                                      f"score {value} outside {SCORE_MIN}..{SCORE_MAX}")
                    ok = False
            for name in row:
                if name not in CRITERION_NAMES and name not in SCORE_ID_KEYS and name != "average":
                    unknown.setdefault(name, line)
            if ok:
                rows[task_id] = (line, row)
                first_line[task_id] = line
        if unknown:
            first = min(unknown.values())
            self.warn(rel, first, None, "fields ignored: " + ", ".join(sorted(unknown)))
        return rows

    def read_responses(self, folder: str) -> dict[str, tuple[str, str]]:
        """task_id -> (path, raw text) of ``responses/``."""
        texts: dict[str, tuple[str, str]] = {}
        base = self.root / folder / "responses"
        if not base.is_dir():
            return texts
        for sub in _walk_files(base):
            if PurePosixPath(sub).suffix.lower() != ".txt":
                continue
            rel = f"{folder}/responses/{sub}"
            task_id = _rel_key(sub)
            if task_id not in self.task_ids:
                self.problems.add(rel, None, None, f"no task {task_id!r} in {METADATA}")
                continue
            if task_id in texts:
                self.problems.add(rel, None, None, f"second response for task {task_id!r}"
                                  f" (first: {texts[task_id][0]})")
                continue
            text = _read_text(self.root, rel, self.problems, MAX_TEXT_BYTES)
            if text is None:
                continue
            texts[task_id] = (rel, text)
        return texts

    def read_judge(self, model: str, judge: str, folder: str) -> dict[str, list[Judgment]]:
        """Judgments of one judge on one model's outputs, by task id."""
        scores = self.read_scores(folder)
        texts = self.read_responses(folder)
        order = {t.task_id: n for n, t in enumerate(self.tasks)}
        task_ids = sorted(set(scores) | set(texts), key=lambda t: (order.get(t, len(order)), t))
        result: dict[str, list[Judgment]] = {}
        for task_id in task_ids:
            line, row = scores.get(task_id, (None, {}))
            text_rel, raw = texts.get(task_id, (None, None))
            parsed = parse_vif_scores(raw) if raw is not None else dict.fromkeys(CRITERION_NAMES)
            output_id = f"{task_id}/{model}"
            scores_rel = f"{folder}/scores.jsonl"
            judgments: list[Judgment] = []
            unparsed: list[str] = []
            origin = (scores_rel, line) if line is not None else (text_rel or folder, None)
            for name in CRITERION_NAMES:
                given, read = row.get(name), parsed[name]
                if given is not None:
                    if read is not None and read != given:
                        self.warn(scores_rel, line, name,
                                  f"{output_id}: scores.jsonl says {given:g} but the response "
                                  f"text says {read}; keeping {given:g}")
                    judgments.append(Judgment(judge, output_id, criterion=name,
                                              score=given, raw=raw, origin=origin))
                elif read is not None:
                    judgments.append(Judgment(judge, output_id, criterion=name,
                                              score=read, raw=raw, origin=origin))
                else:
                    unparsed.append(name)
                    judgments.append(Judgment(judge, output_id, criterion=name, score=None,
                                              raw=raw, parse_status="unparsed", origin=origin))
            if unparsed:
                source = text_rel or scores_rel
                how = "response text could not be parsed" if raw is not None else "no response text"
                self.warn(source, None if text_rel else line, None,
                          f"{output_id}: no score for {', '.join(unparsed)} ({how}); kept as "
                          "unparsed")
            average = row.get("average")
            final = [j.score for j in judgments]
            if average is not None and all(s is not None for s in final):
                mean = sum(s for s in final if s is not None) / len(final)
                if abs(average - mean) > AVERAGE_TOLERANCE:
                    self.warn(scores_rel, line, "average",
                              f"{output_id}: average {average:g} differs from the mean of the "
                              f"six criteria ({mean:.3f})")
            result[task_id] = judgments
        return result

    # ---- everything

    def read(self) -> ProjectData:
        """Read everything; raise :class:`ImportRefused` if any error was found."""
        if not (self.root / METADATA).is_file():
            raise ImportRefused([Problem(METADATA, None, None, "file not found")])
        self.read_metadata()
        if not self.problems.full:
            self.read_conflict_labels()
        generations = self.read_generations() if not self.problems.full else {}
        judged = self.read_results() if not self.problems.full else {}
        self.problems.raise_if_any()

        models = sorted({m for _, m in generations} | {m for _, m in judged}
                        | set(_subdirs(self.root / "generations")))
        judges = sorted({j.judge for js in judged.values() for j in js}
                        | {j for m in _subdirs(self.root / "results")
                           for j in _subdirs(self.root / "results" / m)})
        outputs: list[Output] = []
        judgments: list[Judgment] = []
        no_image: dict[str, list[str]] = {}
        for task in self.tasks:
            for model in models:
                output_id = f"{task.task_id}/{model}"
                key = (task.task_id, model)
                if key in generations:
                    rel, image = generations[key]
                    outputs.append(Output(output_id, task.task_id, model, rel, image,
                                          origin=(rel, None)))
                elif key in judged:
                    outputs.append(Output(output_id, task.task_id, model, None,
                                          origin=(f"results/{model}", None)))
                    no_image.setdefault(model, []).append(task.task_id)
                else:
                    outputs.append(Output(output_id, task.task_id, model, None, missing=True,
                                          origin=(f"generations/{model}", None)))
                    self.warn(f"generations/{model}", None, None,
                              f"{output_id}: no generated image and no judge result; "
                              "marked missing")
                judgments.extend(judged.get(key, []))
        for model, task_ids in no_image.items():
            self.warn(f"generations/{model}", None, None,
                      f"{len(task_ids)} judged output(s) have no image here "
                      f"(kept without image): {', '.join(task_ids[:5])}"
                      + (" ..." if len(task_ids) > 5 else ""))
        return ProjectData(
            name=printable(self.root.resolve().name),
            benchmark=BENCHMARK,
            source=str(self.root),
            format=FORMAT,
            meta={"generators": models},
            criteria=[Criterion(name, label, SCORE_MIN, SCORE_MAX, 1, origin=("results", None))
                      for name, label in CRITERIA],
            judges=[Judge(name, "vlm", origin=("results", None)) for name in judges],
            tasks=self.tasks,
            images=self.images,
            outputs=outputs,
            judgments=judgments,
            warnings=self.problems.warnings,
        )


def _lookup(record: Any, path: tuple[Any, ...]) -> dict[str, Any]:
    for part in path:
        record = record[part]
    return record


def _remove(record: dict[str, Any], path: tuple[Any, ...]) -> None:
    """Remove the object at ``path``, and its container when that becomes empty."""
    container = _lookup(record, path[:-1]) if len(path) > 1 else record
    del container[path[-1]]
    if len(path) > 1 and not container:
        del record[path[0]]


def read(root: Path) -> ProjectData:
    """Read a VIF-Bench release folder into validated records.

    Raises :class:`ImportRefused` with up to 20 located problems when anything is wrong;
    warnings (missing outputs, unparsed judge text, scores that disagree with the raw text
    or with ``average``) are returned in ``ProjectData.warnings``.
    """
    return _Reader(Path(root)).read()


__all__ = [
    "CRITERIA",
    "CRITERION_ALIASES",
    "CRITERION_NAMES",
    "classify_image",
    "detect",
    "image_number",
    "map_arrows",
    "map_layout",
    "map_orientations",
    "normalize_task_id",
    "parse_vif_scores",
    "read",
]
