"""Conflict-label verification (VIF-Bench): what a verifier sees, reads and decides.

VIF-Bench labels a task a reference / visual-instruction *conflict* from VLM pre-labels of
the reference images and simple rules (seed 000, Section 3.2 and Appendix C.4; the rules are
:mod:`annotation.vif.conflicts`). "We first automatically label the reference-specific
attributes ... with VLMs, then manually verify and correct them": this module is that
verification, stored beside the annotations and with the same guarantees:

* **Readings** (``prelabel_readings``): the verifier's own value of each pre-label the
  task's rules use (``yaw`` and ``yaw_reliable`` of an oriented subject,
  ``light_distinctive`` / ``wind_responsive`` of every reference when the task has a light /
  wind arrow, ``pose_distinctive`` of the person a pose reference is attached to).
* **Verdicts** (``conflict_verdicts``): per conflict type, agree or disagree with the
  automatic label, the verified label and a note. The automatic label is the published one
  (``meta.conflicts``) when present, else the rules' decision on the pre-labels; it is stored
  with the verdict, with whether the admin's *blind mode* hid it until the readings were
  given.
* Both tables are append-only: a changed reading or verdict is a new row that supersedes
  the old one, so the whole history is kept.
* **Routing** as for annotation (:mod:`annotation.work.workflow`): overlap (default 2 verifiers
  per task), reservations renewed by every answer, the verifier's own unfinished task
  first, then tasks others started, then a per-verifier seeded order; one ``BEGIN
  IMMEDIATE`` transaction per choice.

A :class:`VerifyItem` holds what the page shows; the automatic decision is in it, and the
page decides (by :func:`reveal_automatic`) when to show it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from annotation.store import Store, append_audit, now_iso
from annotation.vif.conflicts import (  # the rules' own spellings of each pre-label
    _LIGHT_KEYS,
    _POSE_KEYS,
    _RELIABLE_KEYS,
    _WIND_KEYS,
    CONFLICT_KEYS,
    Decision,
    reference_names,
    task_conflicts,
    task_prelabels,
)
from annotation.vif.readouts import readouts
from annotation.work import routing
from annotation.work.routing import Tables, choose_next
from annotation.work.workflow import ItemImage

#: The conflict types a verifier judges (layout never conflicts).
CONFLICT_TYPES = ("orientation", "light", "wind", "pose")
#: Pre-label attributes, and the conflict type whose rule reads each.
ATTRIBUTE_TYPE = {
    "yaw": "orientation",
    "yaw_reliable": "orientation",
    "light_distinctive": "light",
    "wind_responsive": "wind",
    "pose_distinctive": "pose",
}
ATTRIBUTES = tuple(ATTRIBUTE_TYPE)
#: How a page names each attribute.
ATTRIBUTE_LABELS = {
    "yaw": "Facing direction (yaw, degrees)",
    "yaw_reliable": "Facing direction is clear",
    "light_distinctive": "Distinctive lighting",
    "wind_responsive": "Wind-responsive elements",
    "pose_distinctive": "Clear, non-neutral pose",
}
#: Accepted spellings of a pre-label attribute in ``meta.prelabel``.
_ALIASES = {"light_distinctive": _LIGHT_KEYS, "wind_responsive": _WIND_KEYS,
            "pose_distinctive": _POSE_KEYS, "yaw_reliable": _RELIABLE_KEYS}
DEFAULT_OVERLAP = 2
DEFAULT_RESERVATION_MINUTES = 30


# ------------------------------------------------------------------------ settings
@dataclass(frozen=True)
class VerifySettings:
    """``blind``: hide the automatic decision until the verifier gave their readings."""

    overlap: int = DEFAULT_OVERLAP
    reservation_minutes: int = DEFAULT_RESERVATION_MINUTES
    blind: bool = True
    seed: int = 0


_SETTINGS_KEY = "conflict_verification"


def get_settings(store: Store) -> VerifySettings:
    return routing.read_settings(store, _SETTINGS_KEY, VerifySettings)


def set_settings(store: Store, actor: str, **changes: Any) -> VerifySettings:
    """Change the verification settings (overlap and reservation >= 1); audited."""
    return routing.write_settings(store, _SETTINGS_KEY, VerifySettings, actor,
                                  "verify.settings", changes)


# ------------------------------------------------------------------------ the task
def _task_record(store: Store, task_id: str) -> dict[str, Any]:
    """The task as a tasks.jsonl-like record (meta, images with role/meta), for the rules."""
    row = store.conn.execute(
        "SELECT instruction, meta FROM tasks WHERE task_id = ?", [task_id]).fetchone()
    if row is None:
        raise KeyError(task_id)
    images = [
        {"role": r[0], "kind": r[1], "label": r[2], "meta": json.loads(r[3])}
        for r in store.conn.execute(
            "SELECT role, kind, label, meta FROM images WHERE task_id = ? ORDER BY idx",
            [task_id])
    ]
    return {"task_id": task_id, "instruction": row[0], "meta": json.loads(row[1]),
            "images": images}


def conflict_types(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """The conflict types a task can have: those of its visual instructions (orientation
    targets, wind / light arrows, a pose reference), and any its published labels call a
    conflict (a published conflict without its visual instruction is worth a look too)."""
    types: set[str] = set()
    vi = " ".join(str(t).lower() for t in meta.get("visual_instruction_types") or ())
    for kind in CONFLICT_TYPES:
        if kind in vi:
            types.add(kind)
    if meta.get("orientation"):
        types.add("orientation")
    if meta.get("pose"):
        types.add("pose")
    for a in meta.get("arrows") or ():
        if isinstance(a, Mapping):
            types.update(k for k in ("wind", "light") if k in str(a.get("kind", "")).lower())
    published = meta.get("conflicts")
    if isinstance(published, Mapping):
        types.update(k for k, key in CONFLICT_KEYS.items() if published.get(key) is True)
    return tuple(t for t in CONFLICT_TYPES if t in types)


def _subjects(raw: Any) -> set[str]:
    items = raw if isinstance(raw, list) else [raw]
    out = set()
    for x in items:
        if isinstance(x, Mapping) and x.get("subject") is not None:
            out.add(str(x["subject"]))
        elif isinstance(x, str):
            out.add(x)
    return out


def prelabel_value(prelabel: Mapping[str, Any], attribute: str) -> Any:
    """The pre-label's value of ``attribute`` (aliases accepted); None when absent."""
    for key in _ALIASES.get(attribute, (attribute,)):
        if key in prelabel:
            return prelabel[key]
    return None


@dataclass(frozen=True)
class ReferenceView:
    """One reference image and the pre-labels the task's rules read from it."""

    index: int
    name: str
    label: str | None
    kind: str | None
    attributes: tuple[str, ...]
    prelabel: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ConflictCheck:
    """One conflict type of a task: the references and visual instructions involved, the
    targets in words, and the automatic decision (kept from the page until revealed)."""

    conflict: str
    references: tuple[int, ...]
    instructions: tuple[int, ...]
    targets: tuple[str, ...]
    published: bool | None
    rule: Decision

    @property
    def automatic(self) -> bool | None:
        """The published label when there is one, else the rules' decision."""
        return self.published if self.published is not None else self.rule.conflict


@dataclass(frozen=True)
class VerifyItem:
    task_id: str
    instruction: str
    images: tuple[ItemImage, ...]
    references: tuple[ReferenceView, ...]
    checks: tuple[ConflictCheck, ...]
    meta: dict[str, Any] = field(default_factory=dict)

    def needed(self) -> list[tuple[int, str]]:
        """Every ``(image index, attribute)`` a verifier must read."""
        return [(r.index, a) for r in self.references for a in r.attributes]

    def reference(self, index: int) -> ReferenceView:
        return next(r for r in self.references if r.index == index)


def _targets_in_words(meta: Mapping[str, Any], conflict: str) -> tuple[str, ...]:
    words = []
    for r in readouts(meta):
        if r["kind"] == conflict:
            who = f"{r['subject']}: " if r.get("subject") else ""
            words.append(f"{who}{r['dense']}")
    if conflict == "pose":
        for s in sorted(_subjects(meta.get("pose"))):
            words.append(f"a pose reference is attached to the {s}")
    return tuple(words)


def load_verify_item(store: Store, task_id: str) -> VerifyItem:
    """What the verification page shows of one task."""
    record = _task_record(store, task_id)
    meta = record["meta"]
    images = tuple(
        ItemImage(r.idx, r.role, r.kind, r.label, r.sha256, r.width, r.height)
        for r in store.images_df(task_id).itertuples()
    )
    names = reference_names(record)
    types = conflict_types(meta)
    oriented = _subjects(meta.get("orientation"))
    posed = _subjects(meta.get("pose"))
    refs = []
    for idx, name in names.items():
        attrs: list[str] = []
        if "orientation" in types and name in oriented:
            attrs += ["yaw", "yaw_reliable"]
        if "light" in types:
            attrs.append("light_distinctive")
        if "wind" in types:
            attrs.append("wind_responsive")
        if "pose" in types and name in posed:
            attrs.append("pose_distinctive")
        pre = record["images"][idx]["meta"].get("prelabel") or {}
        refs.append(ReferenceView(
            idx, name, record["images"][idx]["label"], record["images"][idx]["kind"],
            tuple(attrs), {a: prelabel_value(pre, a) for a in attrs}))
    decisions = task_conflicts(task_prelabels(record), meta)
    published = meta.get("conflicts") if isinstance(meta.get("conflicts"), Mapping) else {}
    pose_images = {p.get("image") for p in (meta.get("pose") if isinstance(
        meta.get("pose"), list) else [meta.get("pose")]) if isinstance(p, Mapping)}
    checks = []
    for kind in types:
        attr_refs = tuple(r.index for r in refs
                          if any(ATTRIBUTE_TYPE[a] == kind for a in r.attributes))
        vis = tuple(
            im.index for im in images
            if im.role == "visual_instruction"
            and (kind in str(im.kind or "").lower() or (kind == "pose" and im.index in
                                                         pose_images))
        )
        value = published.get(CONFLICT_KEYS[kind])
        checks.append(ConflictCheck(
            kind, attr_refs, vis, _targets_in_words(meta, kind),
            value if isinstance(value, bool) else None, decisions[kind]))
    return VerifyItem(task_id, record["instruction"], images, tuple(refs), tuple(checks), meta)


def decisions_on(item: VerifyItem, readings: Mapping[tuple[int, str], Any]) -> dict[str, Decision]:
    """The rules' decisions (C.4) on the verifier's readings, pre-labels where none given."""
    prelabels: dict[str, dict[str, Any]] = {}
    for r in item.references:
        label = dict(r.prelabel)
        label.update({a: readings[(r.index, a)] for a in r.attributes
                      if (r.index, a) in readings})
        prelabels[r.name] = label
    return task_conflicts(prelabels, item.meta)


# ------------------------------------------------------------------------ eligible tasks
def verifiable_tasks(store: Store) -> list[str]:
    """Tasks with at least one conflict type to verify, in import order."""
    return [
        task_id for task_id, meta in store.conn.execute(
            "SELECT task_id, meta FROM tasks ORDER BY rowid")
        if conflict_types(json.loads(meta))
    ]


# ------------------------------------------------------------------------ routing
_TABLES = Tables(reservations="verify_reservations", submissions="verify_submissions",
                 unit="task_id", person="verifier",
                 answers=("prelabel_readings", "conflict_verdicts"))


def _stamp(now: datetime | None) -> datetime:
    return now or datetime.now(UTC)


def next_task(store: Store, verifier: str, now: datetime | None = None) -> str | None:
    """Choose (and reserve) the task ``verifier`` should verify now; None when done.

    Same rules as :func:`annotation.work.workflow.next_item` (see :mod:`annotation.work.routing`).
    """
    settings = get_settings(store)
    return choose_next(store, _TABLES, verifier, verifiable_tasks(store),
                       overlap=settings.overlap,
                       reservation_minutes=settings.reservation_minutes, seed=settings.seed,
                       salt="verify", now=_stamp(now))


# ------------------------------------------------------------------------ answers
def _check_value(attribute: str, value: Any) -> Any:
    if attribute not in ATTRIBUTE_TYPE:
        raise ValueError(f"unknown pre-label attribute {attribute!r}")
    if value is None:
        return None
    if attribute == "yaw":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"yaw must be a number of degrees, got {value!r}")
        if not -360 <= float(value) <= 360:
            raise ValueError(f"yaw must be within -360..360 degrees, got {value!r}")
        return float(value)
    if not isinstance(value, bool):
        raise ValueError(f"{attribute} must be true or false, got {value!r}")
    return value


def _renew(store: Store, conn: Any, verifier: str, task_id: str, now: datetime,
           slot: bool | None) -> None:
    """Renew the reservation; with ``slot`` (None: when the store acts for a signed-in
    person) first check the verifier may still work on the task (:func:`routing.claim`)."""
    settings = get_settings(store)
    if slot or (slot is None and store.guard is not None):
        routing.claim(conn, _TABLES, verifier, task_id, overlap=settings.overlap,
                      minutes=settings.reservation_minutes, now=now)
    else:
        routing.renew(conn, _TABLES, verifier, task_id, now, settings.reservation_minutes)


def give_reading(
    store: Store, verifier: str, task_id: str, image_idx: int, attribute: str, value: Any,
    *, now: datetime | None = None, active: tuple[int, float] | None = None,
    slot: bool | None = None,
) -> int:
    """Record the verifier's reading of one pre-label (appended; supersedes a different
    earlier reading; an equal reading writes nothing) and renew the reservation (``slot``:
    see :func:`annotation.work.routing.claim`)."""
    value = _check_value(attribute, value)
    text = json.dumps(value)
    with store.transaction(user=verifier) as conn:
        _renew(store, conn, verifier, task_id, _stamp(now), slot)
        current = conn.execute(
            "SELECT reading_id, value FROM current_prelabel_readings WHERE verifier = ?"
            " AND task_id = ? AND image_idx = ? AND attribute = ?",
            [verifier, task_id, image_idx, attribute]).fetchone()
        if current is not None and current[1] == text:
            return int(current[0])
        cur = conn.execute(
            "INSERT INTO prelabel_readings (verifier, task_id, image_idx, attribute, value,"
            " created_at, supersedes) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [verifier, task_id, image_idx, attribute, text,
             _stamp(now).isoformat(timespec="microseconds"),
             None if current is None else current[0]])
        _add_time(conn, active)
        return int(cur.lastrowid or 0)


def my_readings(store: Store, verifier: str, task_id: str) -> dict[tuple[int, str], Any]:
    """The verifier's current readings on a task (never anyone else's)."""
    return {
        (int(idx), attr): json.loads(value)
        for idx, attr, value in store.conn.execute(
            "SELECT image_idx, attribute, value FROM current_prelabel_readings"
            " WHERE verifier = ? AND task_id = ?", [verifier, task_id])
    }


def readings_complete(item: VerifyItem, readings: Mapping[tuple[int, str], Any]) -> bool:
    """True when every pre-label the task's rules read has a reading (a yaw may be skipped
    when the verifier read the facing direction as not clear)."""
    for idx, attr in item.needed():
        if (idx, attr) in readings:
            continue
        if attr == "yaw" and readings.get((idx, "yaw_reliable")) is False:
            continue
        return False
    return True


def reveal_automatic(item: VerifyItem, readings: Mapping[tuple[int, str], Any],
                     blind: bool) -> bool:
    """Whether the page may show the automatic decision: always when not blind; in blind
    mode once the verifier's readings are complete."""
    return not blind or readings_complete(item, readings)


@dataclass(frozen=True)
class Verdict:
    conflict: str
    automatic: bool | None
    agrees: bool | None
    label: bool
    note: str | None
    blind: bool


def give_verdict(
    store: Store, verifier: str, task_id: str, conflict: str, label: bool,
    automatic: bool | None, *, note: str | None = None, blind: bool = True,
    now: datetime | None = None, active: tuple[int, float] | None = None,
    slot: bool | None = None,
) -> int:
    """Record the verified label of one conflict type (appended; supersedes a different
    earlier verdict). ``agrees`` is derived: the verified label equals ``automatic``.
    ``slot``: see :func:`annotation.work.routing.claim`."""
    if conflict not in CONFLICT_TYPES:
        raise ValueError(f"conflict must be one of {', '.join(CONFLICT_TYPES)}")
    if not isinstance(label, bool):
        raise ValueError("label must be true or false")
    agrees = None if automatic is None else int(label == automatic)
    auto = None if automatic is None else int(automatic)
    note = (note or "").strip() or None
    with store.transaction(user=verifier) as conn:
        _renew(store, conn, verifier, task_id, _stamp(now), slot)
        current = conn.execute(
            "SELECT verdict_id, label, note, automatic FROM current_conflict_verdicts"
            " WHERE verifier = ? AND task_id = ? AND conflict = ?",
            [verifier, task_id, conflict]).fetchone()
        if current is not None and (current[1], current[2], current[3]) == (
                int(label), note, auto):
            return int(current[0])
        cur = conn.execute(
            "INSERT INTO conflict_verdicts (verifier, task_id, conflict, automatic, agrees,"
            " label, note, blind, created_at, supersedes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [verifier, task_id, conflict, auto, agrees, int(label), note, int(blind),
             _stamp(now).isoformat(timespec="microseconds"),
             None if current is None else current[0]])
        _add_time(conn, active)
        return int(cur.lastrowid or 0)


def my_verdicts(store: Store, verifier: str, task_id: str) -> dict[str, Verdict]:
    return {
        r[0]: Verdict(r[0], None if r[1] is None else bool(r[1]),
                      None if r[2] is None else bool(r[2]), bool(r[3]), r[4], bool(r[5]))
        for r in store.conn.execute(
            "SELECT conflict, automatic, agrees, label, note, blind FROM current_conflict_verdicts"
            " WHERE verifier = ? AND task_id = ?", [verifier, task_id])
    }


def verdicts_complete(item: VerifyItem, verdicts: Mapping[str, Verdict]) -> bool:
    return all(c.conflict in verdicts for c in item.checks)


def submit_task(store: Store, verifier: str, task_id: str, *, slot: bool | None = None,
                now: datetime | None = None) -> None:
    """Mark the task verified by this verifier (idempotent); release the reservation.
    ``slot``: first check the right to submit (:func:`annotation.work.routing.claim`)."""
    with store.transaction(user=verifier) as conn:
        if slot or (slot is None and store.guard is not None):
            settings = get_settings(store)
            routing.claim(conn, _TABLES, verifier, task_id, overlap=settings.overlap,
                          minutes=settings.reservation_minutes, now=_stamp(now))
        conn.execute(
            "INSERT OR IGNORE INTO verify_submissions (verifier, task_id, submitted_at)"
            " VALUES (?, ?, ?)", [verifier, task_id, now_iso()])
        conn.execute("DELETE FROM verify_reservations WHERE task_id = ? AND verifier = ?",
                     [task_id, verifier])
        append_audit(conn, actor=verifier, action="verify.submit", subject=task_id)


def is_submitted(store: Store, verifier: str, task_id: str) -> bool:
    return store.conn.execute(
        "SELECT 1 FROM verify_submissions WHERE verifier = ? AND task_id = ?",
        [verifier, task_id]).fetchone() is not None


def previous_task(store: Store, verifier: str, current: str | None) -> str | None:
    """The task submitted just before ``current`` (or the last submitted one)."""
    return routing.previous_unit(store, _TABLES, verifier, current)


# ------------------------------------------------------------------------ time, progress
def start_visit(store: Store, verifier: str, task_id: str) -> int:
    """Open a visit of the task (its active time is added to it); return its id."""
    with store.transaction(user=verifier) as conn:
        cur = conn.execute(
            "INSERT INTO verify_time (verifier, task_id, started_at) VALUES (?, ?, ?)",
            [verifier, task_id, now_iso()])
        return int(cur.lastrowid or 0)


def _add_time(conn: Any, active: tuple[int, float] | None) -> None:
    if active is not None and active[1] > 0:
        conn.execute(
            "UPDATE verify_time SET active_seconds = active_seconds + ? WHERE visit_id = ?",
            [active[1], active[0]])


def personal_progress(store: Store, verifier: str) -> tuple[int, int]:
    """(tasks this verifier submitted, tasks still open to them + submitted)."""
    return routing.personal_progress(store, _TABLES, verifier, verifiable_tasks(store),
                                     get_settings(store).overlap)


def overall_progress(store: Store) -> tuple[int, int]:
    """(verifications counted toward overlap, verifiable tasks x overlap)."""
    return routing.overall_progress(store, _TABLES, verifiable_tasks(store),
                                    get_settings(store).overlap)


def progress_by_verifier(store: Store) -> pd.DataFrame:
    """Per verifier: tasks submitted, verdicts given, disagreements, median active s/task."""
    subs = store.query_df(
        "SELECT verifier, count(*) AS submitted FROM verify_submissions GROUP BY 1")
    verdicts = store.query_df(
        "SELECT verifier, count(*) AS verdicts, SUM(agrees = 0) AS disagreements"
        " FROM current_conflict_verdicts GROUP BY 1")
    times = store.query_df(
        "SELECT verifier, task_id, SUM(active_seconds) AS s FROM verify_time GROUP BY 1, 2")
    med = times.groupby("verifier")["s"].median().rename("median seconds/task").reset_index()
    table = subs.merge(verdicts, how="outer", on="verifier").merge(med, how="left",
                                                                   on="verifier")
    table = table.fillna({"submitted": 0, "verdicts": 0, "disagreements": 0})
    return table.astype({"submitted": int, "verdicts": int, "disagreements": int}
                        ).sort_values("verifier").reset_index(drop=True)
