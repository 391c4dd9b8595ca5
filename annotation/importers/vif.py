"""Importer for the public VIF-Bench release layout.

VIF-Bench (seed paper 000) gives each task 1-7 reference images, 1-6 visual-instruction
(VI) images and a text instruction; images are addressed as ``Image_0..Image_N`` in input
order. A VLM judge scores every generated image 1-10 on six criteria. The release layout
read here::

    metadata.jsonl                          one task per line (below)
    tasks/<task_id>/Image_k.*               input images (old ids: tasks/v6/n2_00/...)
    tasks/<task_id>/instruction.txt         used when the metadata row has no instruction
    tasks/<task_id>/{layout,hierarchy,orientations,arrows}.json   opaque, kept in task meta
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

Judge scores: a value in ``scores.jsonl`` wins and the raw text is kept beside it; a value
missing there is read from the raw text with :func:`parse_vif_scores`; when neither gives a
score, the judgment is kept with ``score=None`` and ``parse_status="unparsed"`` and a warning
is issued. ``average`` is derived and never stored, but a warning is issued when it differs
from the mean of the six criteria by more than :data:`AVERAGE_TOLERANCE`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path, PurePosixPath
from typing import Any

from annotation.images import BadImage, BadPath, ImageProber, resolve_inside
from annotation.records import (
    Criterion,
    ImageFile,
    ImportRefused,
    Judge,
    Judgment,
    Output,
    Problem,
    ProjectData,
    Task,
    TaskImage,
)

FORMAT = "vif-bench"
BENCHMARK = "VIF-Bench"
METADATA = "metadata.jsonl"

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
MAX_PROBLEMS = 20
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


# --------------------------------------------------------------------------- problems


class _Problems:
    """Errors collected during one import."""

    def __init__(self) -> None:
        """Start with no problems."""
        self.items: list[Problem] = []

    def add(self, file: str, line: int | None, field: str | None, message: str) -> None:
        """Record one error."""
        self.items.append(Problem(file, line, field, message))

    @property
    def full(self) -> bool:
        """True once enough errors were found to stop costly work."""
        return len(self.items) >= MAX_PROBLEMS


def _reject_constant(name: str) -> Any:
    """Refuse NaN and Infinity while parsing JSON."""
    raise ValueError(f"{name} is not allowed (numbers must be finite)")


def _loads(text: str) -> Any:
    """Parse JSON, refusing non-finite numbers."""
    return json.loads(text, parse_constant=_reject_constant)


def _json_error(exc: ValueError) -> str:
    """A short message for a JSON parse error."""
    if isinstance(exc, json.JSONDecodeError):
        return f"bad JSON: {exc.msg} (column {exc.colno})"
    return f"bad JSON: {exc}"


def _read_text(
    root: Path, rel: str, problems: _Problems, max_bytes: int | None = None
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


def _read_jsonl(root: Path, rel: str, problems: _Problems) -> list[tuple[int, dict[str, Any]]]:
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


def _subdirs(folder: Path) -> list[str]:
    """Names of the visible sub-folders of ``folder``, sorted."""
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


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
        self.problems = _Problems()
        self.warnings: list[Problem] = []
        self.prober = ImageProber()
        self.tasks: list[Task] = []
        self.images: list[TaskImage] = []
        self.task_ids: set[str] = set()

    # ---- helpers

    def warn(self, file: str, line: int | None, field: str | None, message: str) -> None:
        """Record one warning (the import still succeeds)."""
        self.warnings.append(Problem(file, line, field, message))

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
        if conflicts is not None:
            if isinstance(conflicts, dict):
                meta["conflicts"] = conflicts
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
        if extra:
            meta["extra"] = extra
        if folder:
            self.read_task_json(folder, meta)

        self.read_images(line, row, task_id, folder)
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

    def read_task_json(self, folder: str, meta: dict[str, Any]) -> None:
        """Keep the parsed per-task JSON files found in ``folder`` as opaque meta."""
        for key in TASK_JSON_FILES:
            rel = f"{folder}/{key}.json"
            if not (self.root / rel).is_file():
                continue
            text = _read_text(self.root, rel, self.problems)
            if text is None:
                continue
            try:
                meta[key] = _loads(text)
            except ValueError as exc:
                self.problems.add(rel, None, None, _json_error(exc))

    def read_images(self, line: int, row: dict[str, Any], task_id: str, folder: str | None) -> None:
        """Read the row's ``images`` list: locate, probe and classify each image."""
        add = self.problems.add
        entries = row.get("images")
        if entries is None:
            add(METADATA, line, "images", "missing")
            return
        if not isinstance(entries, list):
            add(METADATA, line, "images", f"expected a list, got {_type(entries)}")
            return
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
            found.append(TaskImage(task_id, index, role, rel, image, kind, label, meta,
                                   origin=(METADATA, line)))
        indices = sorted(i.index for i in found)
        if len(found) == len(entries) and indices != list(range(len(found))):
            add(METADATA, line, "images",
                f"index values must be 0..{len(found) - 1}, each once (got {indices})")
            return
        self.images.extend(sorted(found, key=lambda i: i.index))

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

    # ---- generations

    def read_generations(self) -> dict[tuple[str, str], tuple[str, ImageFile]]:
        """(task_id, model) -> (path, image) for every generated image on disk."""
        found: dict[tuple[str, str], tuple[str, ImageFile]] = {}
        base = self.root / "generations"
        for model in _subdirs(base):
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
        for model in _subdirs(base):
            for judge in _subdirs(base / model):
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
        for line, row in _read_jsonl(self.root, rel, self.problems):
            key = next((k for k in SCORE_ID_KEYS if k in row), None)
            raw_id = row.get(key) if key else None
            if not isinstance(raw_id, str) or not raw_id.strip():
                self.problems.add(rel, line, key or "id", "missing" if raw_id is None
                                  else f"expected a string, got {_type(raw_id)}")
                continue
            task_id = normalize_task_id(raw_id)
            if task_id not in self.task_ids:
                self.problems.add(rel, line, key, f"no task {raw_id!r} in {METADATA}")
                continue
            if task_id in rows:
                self.problems.add(rel, line, key, f"duplicate row for task {task_id!r}"
                                  f" (first on line {rows[task_id][0]})")
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
        generations = self.read_generations() if not self.problems.full else {}
        judged = self.read_results() if not self.problems.full else {}
        if self.problems.items:
            raise ImportRefused(self.problems.items[:MAX_PROBLEMS])

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
            name=self.root.resolve().name,
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
            warnings=self.warnings,
        )


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
    "normalize_task_id",
    "parse_vif_scores",
    "read",
]
