"""The bundle's human-work files: every verification, tree review, flag, submission and
visit, with its history (``docs/bundle-format.md``, *Human work*).

``judge-audit export`` writes them and an import reads them back, so that a project moved
through a bundle keeps all the human work it holds, superseded rows included:

* ``prelabel_readings.jsonl``: a verifier's reading of a reference image's pre-label
  ("VIF-Bench: Evaluating Visual Instruction Following in Multi-Reference Image
  Generation", App. C.4: the human verification of the VLM pre-labels);
* ``conflict_verdicts.jsonl``: a verifier's verdict on a conflict label (same section);
* ``conflict_resolutions.jsonl``: an admin's decision on a tied or undecided label;
* ``tree_reviews.jsonl``: a reviewer's localization of a failing operator instance
  ("TRACE-Bench: Decomposing and Diagnosing Multi-Reference Image Generation", App. C.2:
  the diagnostic trees);
* ``adjudications.jsonl``: an adjudicator's decision on a disputed checklist decision or
  tree localization; ``gold_answers.jsonl``: an admin's known answers of gold items
  (issue #16);
* ``flags.jsonl``, ``submissions.jsonl`` (every workflow kind), ``visits.jsonl`` (active
  time).

The six answer files are append-only histories like the ``annotations`` table: each line
has its own ``id`` (unique within the file) and ``supersedes`` names the ``id`` of the
line it replaces, which must come earlier in the file and be the current answer to the
same question by the same person. Images are named by ``task_id`` + ``image_index``.

This module reads each line (:func:`read_file`, errors naming file, line and field),
checks the rows against each other and against the database (:func:`check`: known tasks,
outputs, questions and images, the ``supersedes`` chains; rows already stored are counted
as unchanged, a history that differs from the stored one is refused) and turns stored rows
back into lines (:func:`line`). The store writes the checked rows
(:mod:`annotation.store.human_work`).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from annotation.records import Problems, WorkRow
from annotation.timestamps import parse_utc, utc_iso
from annotation.vif.conflicts import CONFLICT_KEYS

#: the pre-label attributes a verifier reads (the ``prelabel_readings.attribute`` values)
ATTRIBUTES = ("yaw", "yaw_reliable", "light_distinctive", "wind_responsive",
              "pose_distinctive")
#: the failure reasons of a tree review (TRACE-Bench's vocabulary, ``tree_reviews.reason``)
REASONS = ("identity_inconsistency", "attribute_mismatch", "duplication", "source_leakage",
           "missing_carrier", "other")
FLAG_REASONS = ("broken_image", "ambiguous_question", "other")
#: the workflow kinds of ``submissions.jsonl`` and ``visits.jsonl`` and what their unit is
QUEUE_UNITS = {"annotate": "output", "verify": "task", "trees": "output",
               "adjudicate": "dispute", "pairs": "pair", "rankings": "ranking"}
#: what an adjudication decides (``adjudications.kind``: issue #16)
ADJUDICATION_KINDS = ("checklist", "tree")
#: a gold answer's checklist answer (``gold_answers.answer``)
GOLD_ANSWERS = ("yes", "no", "cant_tell")
#: the longest line id (``id``, ``supersedes``)
MAX_ID = 200


class Reader(Protocol):
    """What :func:`read_file` needs of the bundle reader (``annotation.formats.bundle``)."""

    def add(self, file: str, line: int | None, field: str | None, message: str) -> None: ...

    def text(self, obj: dict, key: str, where: tuple[str, int | None], prefix: str = "",
             required: bool = True, nonempty: bool = True) -> str | None: ...

    def number(self, obj: dict, key: str, where: tuple[str, int | None], prefix: str = "",
               required: bool = True) -> float | None: ...

    def enum(self, obj: dict, key: str, allowed: tuple[str, ...], where: tuple[str, int | None],
             prefix: str = "", required: bool = True, default: str | None = None
             ) -> str | None: ...

    def keys(self, obj: dict, allowed: set[str], where: tuple[str, int | None],
             prefix: str = "") -> None: ...


@dataclass(frozen=True)
class WorkFile:
    """One human-work file: its table, the columns that say which answer a row is
    (``key``: the person, the unit and the question of the unit), the columns compared
    to find a row already stored (``content``), and whether rows form ``supersedes``
    histories (``chain``)."""

    name: str
    table: str
    key: tuple[str, ...]
    content: tuple[str, ...]
    chain: bool
    fields: frozenset[str]


def _spec(name: str, table: str, key: tuple[str, ...], content: tuple[str, ...],
          chain: bool, fields: Iterable[str]) -> WorkFile:
    extra = ("id", "supersedes") if chain else ()
    return WorkFile(name, table, key, content, chain, frozenset((*fields, *extra)))


FILES: dict[str, WorkFile] = {f.name: f for f in (
    _spec("prelabel_readings.jsonl", "prelabel_readings",
          ("verifier", "task_id", "image_idx", "attribute"), ("value", "created_at"), True,
          ("verifier", "task_id", "image_index", "attribute", "value", "created_at",
           "source")),
    _spec("conflict_verdicts.jsonl", "conflict_verdicts", ("verifier", "task_id", "conflict"),
          ("automatic", "label", "note", "blind", "created_at"), True,
          ("verifier", "task_id", "conflict", "automatic", "label", "note", "blind",
           "created_at", "source")),
    _spec("conflict_resolutions.jsonl", "conflict_resolutions", ("task_id", "conflict"),
          ("label", "note", "decided_by", "created_at"), True,
          ("task_id", "conflict", "label", "note", "decided_by", "created_at")),
    _spec("tree_reviews.jsonl", "tree_reviews", ("reviewer", "output_id", "instance"),
          ("origin", "reason", "box", "note", "created_at"), True,
          ("reviewer", "output_id", "instance", "origin", "reason", "box", "note",
           "created_at", "source")),
    _spec("adjudications.jsonl", "adjudications", ("kind", "item", "target"),
          ("decision", "note", "decided_by", "created_at"), True,
          ("kind", "item", "target", "decision", "note", "decided_by", "created_at")),
    _spec("gold_answers.jsonl", "gold_answers", ("output_id", "question_id", "criterion"),
          ("answer", "score", "source", "note", "created_by", "created_at"), True,
          ("output_id", "question_id", "criterion", "answer", "score", "source", "note",
           "created_by", "created_at")),
    _spec("flags.jsonl", "flags",
          ("annotator", "output_id", "reason", "question_id", "note", "created_at"), (), False,
          ("annotator", "output_id", "reason", "question_id", "note", "created_at")),
    _spec("submissions.jsonl", "queue_submissions", ("kind", "person", "unit"),
          ("submitted_at",), False, ("kind", "person", "unit", "submitted_at")),
    _spec("visits.jsonl", "queue_visits", ("kind", "person", "unit", "started_at"),
          ("active_seconds",), False,
          ("kind", "person", "unit", "started_at", "active_seconds")),
)}


# --------------------------------------------------------------------------- reading
def _time(rd: Reader, obj: dict, key: str, where: tuple[str, int | None],
          normalize: Callable[[str], str]) -> str | None:
    text = rd.text(obj, key, where)
    if text is None:
        return None
    try:
        return normalize(text)
    except ValueError:
        rd.add(*where, key, f"not an ISO 8601 time: {text!r}")
        return None


def optional_time(rd: Reader, obj: dict, key: str, where: tuple[str, int | None],
                  normalize: Callable[[str], str]) -> tuple[bool, str | None]:
    """``(ok, the time normalized or None)`` of an optional ISO 8601 field (an answer's
    ``created_at``); a value that is no time is reported at its field."""
    text = rd.text(obj, key, where, required=False)
    if text is None:
        return obj.get(key) is None, None
    try:
        return True, normalize(text)
    except ValueError:
        rd.add(*where, key, f"not an ISO 8601 time: {text!r}")
        return False, None


def _flag(rd: Reader, obj: dict, key: str, where: tuple[str, int | None], *,
          nullable: bool, default: bool | None = None) -> tuple[bool, int | None]:
    """``(ok, 0/1 or None)`` of a true/false field."""
    value = obj.get(key, default)
    if value is None and nullable:
        return True, None
    if not isinstance(value, bool):
        rd.add(*where, key, "missing" if value is None and key not in obj
               else f"must be true or false{' or null' if nullable else ''}, not {value!r}")
        return False, None
    return True, int(value)


def _record_id(rd: Reader, obj: dict, key: str, where: tuple[str, int | None],
               required: bool) -> tuple[bool, str | None]:
    value = obj.get(key)
    if value is None:
        if required:
            rd.add(*where, key, "missing: every line needs its own id (unique in the file)")
            return False, None
        return True, None
    if isinstance(value, bool) or not isinstance(value, int | str) or value == "":
        rd.add(*where, key, f"must be a non-empty string or an integer, not {value!r}")
        return False, None
    if len(str(value)) > MAX_ID:
        rd.add(*where, key, f"an id of {len(str(value)):,} characters: at most {MAX_ID}")
        return False, None
    return True, str(value)


def _reading_value(rd: Reader, obj: dict, attribute: str | None,
                   where: tuple[str, int | None]) -> tuple[bool, str | None]:
    """The reading's value as stored (JSON text): degrees for ``yaw``, true/false for the
    others, null for *not readable*."""
    if "value" not in obj:
        rd.add(*where, "value", "missing (null: the verifier could not read it)")
        return False, None
    value = obj["value"]
    if value is None or attribute is None:
        return True, json.dumps(None)
    if attribute == "yaw":
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value) or not -360 <= value <= 360:
            rd.add(*where, "value", f"a yaw is a number of degrees within -360..360, "
                   f"not {value!r}")
            return False, None
        return True, json.dumps(float(value))
    if not isinstance(value, bool):
        rd.add(*where, "value", f"{attribute} is true or false, not {value!r}")
        return False, None
    return True, json.dumps(value)


def _box(rd: Reader, obj: dict, where: tuple[str, int | None]) -> tuple[bool, str | None]:
    """A review's box as stored: ``{"node": id, "box": [x0, y0, x1, y1]}`` in 0..1."""
    box = obj.get("box")
    if box is None:
        return True, None
    coords = box.get("box") if isinstance(box, dict) else None
    if (not isinstance(box, dict) or set(box) != {"node", "box"}
            or not isinstance(box["node"], str)
            or not isinstance(coords, list) or len(coords) != 4
            or not all(isinstance(v, int | float) and not isinstance(v, bool)
                       and 0 <= v <= 1 for v in coords)
            or not (coords[0] < coords[2] and coords[1] < coords[3])):
        rd.add(*where, "box", "must be {\"node\": node id, \"box\": [x0, y0, x1, y1]} with "
               "0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1 (fractions of the node image)")
        return False, None
    return True, json.dumps({"node": box["node"], "box": [float(v) for v in coords]},
                            ensure_ascii=False, sort_keys=True)


def read_line(spec: WorkFile, obj: dict, rd: Reader, where: tuple[str, int | None],
              normalize_time: Callable[[str], str]) -> WorkRow | None:
    """One line of ``spec``'s file as a :class:`WorkRow` (None, with the problems added to
    ``rd``, when it is not valid on its own)."""
    rd.keys(obj, set(spec.fields), where)
    ok = True
    values: dict[str, Any] = {}

    def text(key: str, column: str | None = None, *, required: bool = True,
             nonempty: bool = True) -> None:
        nonlocal ok
        value = rd.text(obj, key, where, required=required, nonempty=nonempty)
        if value is None and (required or obj.get(key) is not None):
            ok = False
        values[column or key] = value

    def enum(key: str, allowed: tuple[str, ...], *, required: bool = True) -> None:
        nonlocal ok
        value = rd.enum(obj, key, allowed, where, required=required)
        if value is None and (required or obj.get(key) is not None):
            ok = False
        values[key] = value

    def time(key: str) -> None:
        nonlocal ok
        values[key] = _time(rd, obj, key, where, normalize_time)
        ok = ok and values[key] is not None

    def flag(key: str, *, nullable: bool, default: bool | None = None) -> None:
        nonlocal ok
        good, values[key] = _flag(rd, obj, key, where, nullable=nullable, default=default)
        ok = ok and good

    name = spec.name
    if name == "prelabel_readings.jsonl":
        text("verifier")
        text("task_id")
        index = obj.get("image_index")
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            rd.add(*where, "image_index", "missing" if index is None else
                   f"must be the image's position in its task (0, 1, ...), not {index!r}")
            ok = False
        values["image_idx"] = index
        enum("attribute", ATTRIBUTES)
        good, values["value"] = _reading_value(rd, obj, values["attribute"], where)
        ok = ok and good
        time("created_at")
        text("source", required=False)
    elif name == "conflict_verdicts.jsonl":
        text("verifier")
        text("task_id")
        enum("conflict", tuple(CONFLICT_KEYS))
        flag("automatic", nullable=True)
        flag("label", nullable=False)
        text("note", required=False)
        flag("blind", nullable=False, default=True)
        time("created_at")
        text("source", required=False)
        if ok:
            auto = values["automatic"]
            values["agrees"] = None if auto is None else int(values["label"] == auto)
    elif name == "conflict_resolutions.jsonl":
        text("task_id")
        enum("conflict", tuple(CONFLICT_KEYS))
        flag("label", nullable=False)
        text("note")
        text("decided_by")
        time("created_at")
        if values.get("note") is not None:
            values["note"] = values["note"].strip()
    elif name == "tree_reviews.jsonl":
        text("reviewer")
        text("output_id")
        text("instance")
        text("origin")
        enum("reason", REASONS, required=False)
        good, values["box"] = _box(rd, obj, where)
        ok = ok and good
        text("note", required=False)
        time("created_at")
        text("source", required=False)
    elif name == "adjudications.jsonl":
        enum("kind", ADJUDICATION_KINDS)
        text("item")
        text("target")
        text("decision")
        text("note")
        text("decided_by")
        time("created_at")
        if values.get("note") is not None:
            values["note"] = values["note"].strip()
    elif name == "gold_answers.jsonl":
        text("output_id")
        text("question_id", required=False)
        text("criterion", required=False)
        if (values.get("question_id") is None) == (values.get("criterion") is None):
            rd.add(*where, "question_id", "give exactly one of 'question_id' and 'criterion'")
            ok = False
        enum("answer", GOLD_ANSWERS, required=False)
        score = obj.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)
                                  or not math.isfinite(score)):
            rd.add(*where, "score", f"must be a number or null, not {score!r}")
            ok = False
        values["score"] = None if score is None or not ok else float(score)
        text("source")
        text("note", required=False, nonempty=False)
        text("created_by")
        time("created_at")
    elif name == "flags.jsonl":
        text("annotator")
        text("output_id")
        enum("reason", FLAG_REASONS)
        text("question_id", required=False)
        text("note", required=False, nonempty=False)
        time("created_at")
    elif name == "submissions.jsonl":
        enum("kind", tuple(QUEUE_UNITS))
        text("person")
        text("unit")
        time("submitted_at")
    elif name == "visits.jsonl":
        enum("kind", tuple(QUEUE_UNITS))
        text("person")
        text("unit")
        time("started_at")
        seconds = rd.number(obj, "active_seconds", where)
        if seconds is not None and seconds < 0:
            rd.add(*where, "active_seconds", f"must not be negative, not {seconds:g}")
            seconds = None
        ok = ok and seconds is not None
        values["active_seconds"] = seconds
    record_id = supersedes = None
    if spec.chain:
        good, record_id = _record_id(rd, obj, "id", where, required=True)
        ok = ok and good
        good, supersedes = _record_id(rd, obj, "supersedes", where, required=False)
        ok = ok and good
    return WorkRow(values, record_id, supersedes, origin=where) if ok else None


# ------------------------------------------------------------------------- checking
@dataclass(frozen=True)
class Known:
    """What the rows may name, the bundle's and the database's alike: output -> task,
    task -> number of images, task -> checklist, question -> checklist."""

    output_task: Mapping[str, str]
    task_images: Mapping[str, int]
    task_checklist: Mapping[str, str]
    question_checklist: Mapping[str, str]
    #: (task id, image index) -> content hash: a reading is of the image, whichever task
    #: showed it (schema 9), so its history is the image's
    image_hashes: Mapping[tuple[str, int], str] = field(default_factory=dict)
    #: the criteria a gold score may name (None: not checked)
    criteria: frozenset[str] | None = None
    #: the pairs and rankings a submission or visit of *Compare outputs* may name (issue
    #: #17; None: not checked)
    pair_ids: frozenset[str] | None = None
    ranking_ids: frozenset[str] | None = None

    def answer_key(self, spec: WorkFile, values: Mapping[str, Any]) -> tuple[Any, ...]:
        """Which answer a row is: ``spec.key``, except that a pre-label reading is keyed
        by (verifier, image content, attribute): a correction given in another task
        showing the same image supersedes it."""
        if spec.name == "prelabel_readings.jsonl":
            image = values.get("image_sha256") or self.image_hashes.get(
                (values.get("task_id"), values.get("image_idx")))  # type: ignore[arg-type]
            if image is not None:
                return (values.get("verifier"), image, values.get("attribute"))
        return tuple(_norm(c, values.get(c)) for c in spec.key)


def _describe(spec: WorkFile, values: Mapping[str, Any]) -> str:
    return ", ".join(f"{c}={values.get(c)!r}" for c in spec.key)


def _references(pr: Problems, spec: WorkFile, row: WorkRow, known: Known) -> None:
    """Unknown tasks, images, outputs and questions named by ``row``."""
    v = row.values

    def task(task_id: str | None, fld: str = "task_id") -> bool:
        if task_id is not None and task_id not in known.task_checklist:
            pr.at(row.origin, fld, f"unknown task {task_id!r} (not in tasks.jsonl nor in "
                  "the database)")
            return False
        return True

    def output(output_id: str | None, fld: str = "output_id") -> None:
        if output_id is not None and output_id not in known.output_task:
            pr.at(row.origin, fld, f"unknown output {output_id!r} (not in outputs.jsonl nor "
                  "in the database)")

    if "task_id" in v and task(v["task_id"]) and "image_idx" in v:
        n = known.task_images.get(v["task_id"], 0)
        if v["image_idx"] >= n:
            pr.at(row.origin, "image_index", f"task {v['task_id']!r} has {n} image(s): "
                  f"no Image_{v['image_idx']}")
    if "output_id" in v:
        output(v["output_id"])
    if spec.name == "adjudications.jsonl":
        output(v.get("item"), "item")
    if spec.name == "gold_answers.jsonl" and v.get("criterion") is not None \
            and known.criteria is not None and v["criterion"] not in known.criteria:
        pr.at(row.origin, "criterion", f"unknown criterion {v['criterion']!r}")
    if spec.name in ("flags.jsonl", "gold_answers.jsonl") and v.get("question_id") is not None:
        qid = v["question_id"]
        checklist = known.question_checklist.get(qid)
        task_id = known.output_task.get(v["output_id"])
        if checklist is None:
            pr.at(row.origin, "question_id", f"unknown question {qid!r}")
        elif task_id is not None and known.task_checklist.get(task_id) != checklist:
            pr.at(row.origin, "question_id", f"question {qid!r} is not in the checklist of "
                  f"output {v['output_id']!r}")
    if "unit" in v:
        if QUEUE_UNITS[v["kind"]] in ("pair", "ranking"):
            what = QUEUE_UNITS[v["kind"]]
            ids = known.pair_ids if what == "pair" else known.ranking_ids
            if ids is not None and v["unit"] not in ids:
                pr.at(row.origin, "unit", f"unknown {what} {v['unit']!r} (list it in "
                      f"{what}s.jsonl)")
        elif QUEUE_UNITS[v["kind"]] == "task":
            task(v["unit"], "unit")
        elif QUEUE_UNITS[v["kind"]] == "dispute":  # ["<kind>", "<output>", "<target>"]
            try:
                kind, item, _ = json.loads(v["unit"])
            except (TypeError, ValueError):
                kind = item = None
            if kind not in ADJUDICATION_KINDS:
                pr.at(row.origin, "unit", "an adjudication unit is a JSON list [kind, "
                      f"output, target] with kind checklist or tree, not {v['unit']!r}")
            else:
                output(item, "unit")
        else:
            output(v["unit"], "unit")


def _cycle(rows: Mapping[str, WorkRow], start: str) -> list[str] | None:
    """The ids of the ``supersedes`` cycle through ``start``, or None."""
    seen = [start]
    at = rows[start].supersedes
    while at is not None and at in rows:
        if at == start:
            return seen + [start]
        if at in seen:
            return None  # a cycle elsewhere: reported from its own rows
        seen.append(at)
        at = rows[at].supersedes
    return None


def _chains(pr: Problems, spec: WorkFile, rows: list[WorkRow],
            key_of: Callable[[Mapping[str, Any]], tuple[Any, ...]]
            ) -> dict[tuple[Any, ...], list[WorkRow]]:
    """The rows of a history file as one ordered chain per answer (``spec.key``), after
    checking the ``supersedes`` links: unique ids; no link to a missing id, to a later
    line, to another answer or to a row already superseded; no cycle; one first row per
    answer."""
    by_id: dict[str, WorkRow] = {}
    position: dict[str, int] = {}
    for i, row in enumerate(rows):
        assert row.record_id is not None
        if row.record_id in by_id:
            pr.at(row.origin, "id", f"id {row.record_id!r} is already used on line "
                  f"{by_id[row.record_id].origin[1]}: ids must be unique in the file")
            continue
        by_id[row.record_id] = row
        position[row.record_id] = i
    chains: dict[tuple[Any, ...], list[WorkRow]] = {}
    superseded_by: dict[str, WorkRow] = {}
    for i, row in enumerate(rows):
        if pr.full:
            break
        key = key_of(row.values)
        sup = row.supersedes
        chain = chains.setdefault(key, [])
        if sup is None:
            if chain:
                what = _describe(spec, row.values)
                pr.at(row.origin, "supersedes", f"a second first answer ({what}; the first "
                      f"is line {chain[0].origin[1]}): set supersedes to the id of the row "
                      f"this one replaces (id {chain[-1].record_id!r})")
                continue
            chain.append(row)
            continue
        target = by_id.get(sup)
        if target is None:
            pr.at(row.origin, "supersedes", f"no line of {spec.name} has the id {sup}")
            continue
        cycle = _cycle(by_id, row.record_id or "")
        if cycle is not None:
            pr.at(row.origin, "supersedes", "the supersedes links form a cycle: "
                  + " -> ".join(repr(c) for c in cycle))
            continue
        if position[sup] > i:
            pr.at(row.origin, "supersedes", f"record {sup!r} is on a later line "
                  f"({target.origin[1]}): a row must come after the row it supersedes")
            continue
        if key_of(target.values) != key:
            pr.at(row.origin, "supersedes", f"record {sup!r} (line {target.origin[1]}) is "
                  f"another answer ({_describe(spec, target.values)}): a row supersedes an "
                  "earlier answer of the same person to the same question")
            continue
        if sup in superseded_by:
            pr.at(row.origin, "supersedes", f"record {sup!r} is already superseded by line "
                  f"{superseded_by[sup].origin[1]}: supersede the current row "
                  f"(id {chain[-1].record_id!r})")
            continue
        superseded_by[sup] = row
        chain.append(row)
    return chains


@dataclass
class Checked:
    """What :func:`check` keeps: per file the rows to write (a history row with the
    stored row id or the bundle id it supersedes) and how many were already stored."""

    rows: dict[str, list[WorkRow]]
    unchanged: Counter[str]


#: the time columns: compared as moments (a stored time in another ISO 8601 spelling is
#: the same time)
TIME_COLUMNS = frozenset({"created_at", "submitted_at", "started_at"})


def _norm(column: str, value: Any) -> Any:
    """``value`` as compared: a time in UTC ISO 8601 with microseconds."""
    if column in TIME_COLUMNS and isinstance(value, str):
        try:
            return utc_iso(parse_utc(value))
        except ValueError:
            return value
    return value


def _key(spec: WorkFile, values: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(_norm(c, values.get(c)) for c in spec.key)


def _same(spec: WorkFile, values: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    return all(_norm(c, values.get(c)) == _norm(c, stored.get(c))
               for c in (*spec.key, *spec.content))


def _first_difference(spec: WorkFile, values: Mapping[str, Any],
                      stored: Mapping[str, Any]) -> str:
    for c in spec.content:
        if _norm(c, values.get(c)) != _norm(c, stored.get(c)):
            return f"{c} is {values.get(c)!r} here, {stored.get(c)!r} in the database"
    return "it differs"


def check(pr: Problems, work: Mapping[str, list[WorkRow]],
          stored: Mapping[str, list[dict[str, Any]]], known: Known) -> Checked:
    """Check the human-work rows of a bundle (problems go to ``pr``) against each other,
    ``known`` and the ``stored`` rows (:func:`annotation.store.human_work.stored_rows`).

    Re-importing is idempotent by content: a row equal to a stored one (key columns,
    content columns and time; ``source`` aside) is counted as unchanged. A history is
    matched row by row with the stored history of the same answer: the bundle's rows past
    the stored ones are appended; a row that differs from the stored row at its place is
    refused (the stored history is never rewritten). A submission or a visit stored with
    another time (or other active seconds) is refused likewise.

    The rows kept for writing carry in ``supersedes`` either ``"db:<row id>"`` (a stored
    row) or the file's own id of a row written before them."""
    out = Checked({name: [] for name in work}, Counter())
    for name, rows in work.items():
        spec = FILES[name]
        for row in rows:
            if pr.full:
                return out
            _references(pr, spec, row, known)
        old = stored.get(name, [])
        kept = out.rows[name]
        if spec.chain:
            def key_of(values: Mapping[str, Any], spec: WorkFile = spec) -> tuple[Any, ...]:
                return known.answer_key(spec, values)

            old_chains: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
            for s in old:
                old_chains.setdefault(key_of(s), []).append(s)
            position = {row.record_id: n for n, row in enumerate(rows)}
            for key, chain in _chains(pr, spec, rows, key_of).items():
                history = old_chains.get(key, [])
                for i, row in enumerate(chain):
                    if i < len(history):
                        if not _same(spec, row.values, history[i]):
                            pr.at(row.origin, None, f"differs from the history stored for "
                                  f"this answer ({_describe(spec, row.values)}), row {i + 1}: "
                                  f"{_first_difference(spec, row.values, history[i])}; the "
                                  "stored history is never rewritten (import into a new "
                                  "database, or leave this line out)")
                            break
                        out.unchanged[name.removesuffix(".jsonl")] += 1
                        continue
                    sup = row.supersedes
                    if history and i == len(history):
                        sup = f"db:{history[-1]['row_id']}"
                    kept.append(WorkRow(row.values, row.record_id, sup, origin=row.origin))
            # history order across answers: file order
            kept.sort(key=lambda r: position[r.record_id])
            continue
        by_key: dict[tuple[Any, ...], dict[str, Any]] = {_key(spec, s): s for s in old}
        seen: dict[tuple[Any, ...], WorkRow] = {}
        for row in rows:
            key = _key(spec, row.values)
            if key in seen and spec.name != "flags.jsonl":
                pr.at(row.origin, None, f"the same {spec.name.removesuffix('s.jsonl')} as "
                      f"line {seen[key].origin[1]} ({_describe(spec, row.values)})")
                continue
            seen[key] = row
            stored_row = by_key.get(key)
            if stored_row is not None:
                if _same(spec, row.values, stored_row):
                    out.unchanged[name.removesuffix(".jsonl")] += 1
                    continue
                diff = _first_difference(spec, row.values, stored_row)
                pr.at(row.origin, spec.content[0], f"{diff} for {_describe(spec, row.values)}"
                      ": stored rows are never rewritten")
                continue
            kept.append(row)
    return out


# -------------------------------------------------------------------------- writing
def line(name: str, values: Mapping[str, Any], record_id: int | None = None,
         supersedes: int | None = None) -> dict[str, Any]:
    """The bundle line of a stored row of file ``name`` (``values``: its columns), with
    the file's record ids (export numbers the lines 1, 2, ...)."""
    v = values
    if name == "prelabel_readings.jsonl":
        out: dict[str, Any] = {"verifier": v["verifier"], "task_id": v["task_id"],
                               "image_index": v["image_idx"], "attribute": v["attribute"],
                               "value": json.loads(v["value"]), "created_at": v["created_at"],
                               "source": v.get("source")}
    elif name == "conflict_verdicts.jsonl":
        out = {"verifier": v["verifier"], "task_id": v["task_id"], "conflict": v["conflict"],
               "automatic": None if v["automatic"] is None else bool(v["automatic"]),
               "label": bool(v["label"]), "note": v["note"], "blind": bool(v["blind"]),
               "created_at": v["created_at"], "source": v.get("source")}
    elif name == "conflict_resolutions.jsonl":
        out = {"task_id": v["task_id"], "conflict": v["conflict"], "label": bool(v["label"]),
               "note": v["note"], "decided_by": v["decided_by"], "created_at": v["created_at"]}
    elif name == "tree_reviews.jsonl":
        out = {"reviewer": v["reviewer"], "output_id": v["output_id"],
               "instance": v["instance"], "origin": v["origin"], "reason": v["reason"],
               "box": None if v["box"] is None else json.loads(v["box"]), "note": v["note"],
               "created_at": v["created_at"], "source": v.get("source")}
    elif name == "adjudications.jsonl":
        out = {k: v[k] for k in ("kind", "item", "target", "decision", "note", "decided_by",
                                 "created_at")}
    elif name == "gold_answers.jsonl":
        out = {k: v[k] for k in ("output_id", "question_id", "criterion", "answer", "score",
                                 "source", "note", "created_by", "created_at")}
    elif name == "flags.jsonl":
        out = {k: v[k] for k in ("annotator", "output_id", "reason", "question_id", "note",
                                 "created_at")}
    elif name == "submissions.jsonl":
        out = {k: v[k] for k in ("kind", "person", "unit", "submitted_at")}
    elif name == "visits.jsonl":
        seconds = float(v["active_seconds"])
        out = {"kind": v["kind"], "person": v["person"], "unit": v["unit"],
               "started_at": v["started_at"],
               "active_seconds": int(seconds) if seconds.is_integer() else seconds}
    else:
        raise KeyError(name)
    if FILES[name].chain:
        out["id"] = record_id
        out["supersedes"] = supersedes
    return {k: val for k, val in out.items()
            if val is not None or k in ("value", "automatic", "supersedes")}
