"""Conflict-label verification (VIF-Bench): what a verifier sees, reads and decides.

VIF-Bench labels a task a reference / visual-instruction *conflict* from VLM pre-labels of
the reference images and simple rules ("VIF-Bench: Evaluating Visual Instruction Following in
Multi-Reference Image Generation", Section 3.2 and Appendix C.4; the rules are
:mod:`annotation.vif.conflicts`). "We first automatically label the reference-specific
attributes ... with VLMs, then manually verify and correct them": this module is that
verification, stored beside the annotations and with the same guarantees:

* **Readings** (``prelabel_readings``): the verifier's own value of each pre-label the
  task's rules use (``yaw`` and ``yaw_reliable`` of an oriented subject,
  ``light_distinctive`` / ``wind_responsive`` of every reference when the task has a light /
  wind arrow, ``pose_distinctive`` of the person a pose reference is attached to). A
  reading is of the image, not of the task: the paper pre-labels each image of the
  reference pool once and links tasks to it by content hash (Appendix C.4), so a reading
  carries the image's hash and the verifier's current reading of an image is their newest
  one for that hash, in whichever task they gave it. A task whose images this verifier
  already read elsewhere shows those readings as read (editable: an edit is a new row
  that supersedes the old one and applies in every task showing the image) and asks only
  for the rest. Readings are shared per verifier, never between verifiers: another
  verifier's reading is their answer, which blind verification keeps from this one.
* **Verdicts** (``conflict_verdicts``): per conflict type, agree or disagree with the
  automatic label, the verified label and a note. The automatic label is the published one
  (``meta.conflicts``) when present, else the rules' decision on the pre-labels; it is stored
  with the verdict, with whether the admin's *blind mode* hid it until the readings were
  given.
* Both tables are append-only: a changed reading or verdict is a new row that supersedes
  the old one, so the whole history is kept.
* **Routing** is the engine's (:mod:`annotation.work.engine`, queue kind ``verify``):
  overlap (default 2 verifiers per task), reservations renewed by every answer, the
  verifier's own unfinished task first, then tasks others started, then a per-verifier
  seeded order; one ``BEGIN IMMEDIATE`` transaction per choice.

What a unit is: a task with at least one conflict type to verify. What an answer is: a
reading or a verdict. When a unit is complete: every needed pre-label read
(:func:`readings_complete`) and a verdict per conflict type (:func:`verdicts_complete`).
A :class:`VerifyItem` holds what the page shows; the automatic decision is in it, and the
page decides (by :func:`reveal_automatic`) when to show it. :class:`VerifySession` is the
page's controller.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd

from annotation.store import Store, items
from annotation.store import answers as answer_rows
from annotation.store import conflicts as conflict_rows
from annotation.store import project as project_rows
from annotation.store import queue as queues
from annotation.store.answers import Delivery
from annotation.vif.conflicts import (  # the rules' own spellings of each pre-label
    CONFLICT_KEYS,
    LIGHT_KEYS,
    POSE_KEYS,
    RELIABLE_KEYS,
    WIND_KEYS,
    Decision,
    reference_names,
    task_conflicts,
    task_prelabels,
)
from annotation.vif.readouts import readouts
from annotation.work.engine import (
    DEFAULT_RESERVATION_MINUTES,
    UNCHECKED,
    Controller,
    ItemTaken,
    Kind,
    Router,
)
from annotation.work.panel import Command, Option, Panel, PanelTarget
from annotation.work.workflow import ItemImage

#: The conflict types a verifier judges (layout never conflicts).
CONFLICT_TYPES = ("orientation", "light", "wind", "pose")
CONFLICT_TITLES = {"orientation": "Orientation", "light": "Light", "wind": "Wind",
                   "pose": "Pose"}
#: Pre-label attributes, and the conflict type whose rule reads each.
ATTRIBUTE_TYPE = {
    "yaw": "orientation",
    "yaw_reliable": "orientation",
    "light_distinctive": "light",
    "wind_responsive": "wind",
    "pose_distinctive": "pose",
}
#: How a page names each attribute.
ATTRIBUTE_LABELS = {
    "yaw": "Facing direction (yaw, degrees)",
    "yaw_reliable": "Facing direction is clear",
    "light_distinctive": "Distinctive lighting",
    "wind_responsive": "Wind-responsive elements",
    "pose_distinctive": "Clear, non-neutral pose",
}
#: Accepted spellings of a pre-label attribute in ``meta.prelabel``.
_ALIASES = {"light_distinctive": LIGHT_KEYS, "wind_responsive": WIND_KEYS,
            "pose_distinctive": POSE_KEYS, "yaw_reliable": RELIABLE_KEYS}
DEFAULT_OVERLAP = 2


# ------------------------------------------------------------------------ settings
@dataclass(frozen=True)
class VerifySettings:
    """``blind``: hide the automatic decision until the verifier gave their readings."""

    overlap: int = DEFAULT_OVERLAP
    reservation_minutes: int = DEFAULT_RESERVATION_MINUTES
    blind: bool = True
    seed: int = 0


def get_settings(store: Store) -> VerifySettings:
    return ROUTER.settings(store)


def resolve_label(store: Store, task_id: str, conflict: str, label: bool, note: str, *,
                  actor: str) -> int:
    """An admin's decision on a conflict label the verifiers left tied, with a note
    (:func:`annotation.store.conflicts.resolve`: append-only, the acting admin re-checked
    in the write's transaction); it is the verified label from then on
    (:func:`annotation.results.conflicts.verified_labels`)."""
    return conflict_rows.resolve(store, task_id, conflict, label, note, actor=actor)


def set_settings(store: Store, actor: str, **changes: Any) -> VerifySettings:
    """Change the verification settings (overlap and reservation >= 1); audited."""
    return ROUTER.set_settings(store, actor, **changes)


# ------------------------------------------------------------------------ the task
def _task_record(store: Store, task_id: str) -> dict[str, Any]:
    """The task as a tasks.jsonl-like record (meta, images with role/meta), for the rules."""
    task = project_rows.task(store, task_id)
    if task is None:
        raise KeyError(task_id)
    return {"task_id": task_id, "instruction": task.instruction, "meta": task.meta,
            "images": items.task_images(store, task_id)}


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
    return [task_id for task_id, meta in items.task_metas(store) if conflict_types(meta)]


# ------------------------------------------------------------------------ routing
#: the verification workflow's router (queue kind ``verify``)
ROUTER: Router[VerifySettings] = Router(Kind(
    name="verify", units=verifiable_tasks, answers=("reading", "verdict"),
    settings=VerifySettings, salt="verify", submit_action="verify.submit",
    settings_action="verify.settings"))


def next_task(store: Store, verifier: str, now: datetime | None = None) -> str | None:
    """Choose (and reserve) the task ``verifier`` should verify now; None when done
    (:meth:`annotation.work.engine.Router.next`)."""
    return ROUTER.next(store, verifier, now)


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


def give_reading(
    store: Store, verifier: str, task_id: str, image_idx: int, attribute: str, value: Any,
    *, now: datetime | None = None, active: tuple[int, float] | None = None,
    slot: bool | None = None,
) -> int:
    """Record the verifier's reading of one pre-label (appended; supersedes a different
    earlier reading; an equal reading writes nothing) and renew the reservation (``slot``:
    see :meth:`annotation.work.engine.Router.claim`)."""
    value = _check_value(attribute, value)
    # the store adds the image's content hash: the reading applies in every task showing
    # that image, and supersedes the verifier's newest reading of it, wherever given
    with ROUTER.answering(store, verifier, task_id, slot=slot, now=now,
                          active=active) as act:
        return act.supersede("reading", {
            "verifier": verifier, "task_id": task_id, "image_idx": image_idx,
            "attribute": attribute, "value": json.dumps(value), "created_at": act.stamp},
            same=("value",))


def my_readings(store: Store, verifier: str, task_id: str) -> dict[tuple[int, str], Any]:
    """The verifier's current readings of the task's images (never anyone else's), by
    ``(image index, attribute)``: each image's newest reading by this verifier, given in
    this task or in any other task showing the same image (VIF-Bench verifies the pool's
    images once and matches them to tasks by content hash, Appendix C.4)."""
    return {(int(r["image_idx"]), r["attribute"]): json.loads(r["value"])
            for r in conflict_rows.task_readings(store, verifier, task_id)}


def readings_elsewhere(store: Store, verifier: str,
                       task_id: str) -> dict[tuple[int, str], str]:
    """The verifier's current readings of the task's images that were given in another
    task: ``(image index, attribute)`` -> that task's id (the page shows them as already
    read there; an edit here is a new row that supersedes it, in every task)."""
    return {(int(r["image_idx"]), r["attribute"]): str(r["read_in"])
            for r in conflict_rows.task_readings(store, verifier, task_id)
            if r["read_in"] != task_id}


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
    slot: bool | None = None, expected: Any = UNCHECKED, delivery: Delivery | None = None,
) -> int:
    """Record the verified label of one conflict type (appended; supersedes a different
    earlier verdict). ``agrees`` is derived: the verified label equals ``automatic``.
    ``slot``: see :meth:`annotation.work.engine.Router.claim`; ``expected`` and
    ``delivery``: as for :func:`annotation.work.workflow.give_answer`."""
    if conflict not in CONFLICT_TYPES:
        raise ValueError(f"conflict must be one of {', '.join(CONFLICT_TYPES)}")
    if not isinstance(label, bool):
        raise ValueError("label must be true or false")
    agrees = None if automatic is None else int(label == automatic)
    auto = None if automatic is None else int(automatic)
    note = (note or "").strip() or None
    with ROUTER.answering(store, verifier, task_id, slot=slot, now=now,
                          active=active) as act:
        current = act.current("verdict", {"conflict": conflict})
        act.check_seen("verdict", current, expected, delivery)
        return act.supersede("verdict", {
            "verifier": verifier, "task_id": task_id, "conflict": conflict,
            "automatic": auto, "agrees": agrees, "label": int(label), "note": note,
            "blind": int(blind), "created_at": act.stamp},
            same=("label", "note", "automatic"), previous=current, delivery=delivery)


def label_text(value: object) -> str:
    """``conflict`` / ``no conflict`` / ``undecided`` for a label (True / False / None)."""
    return {True: "conflict", False: "no conflict"}.get(value, "undecided")  # type: ignore


def verdict_label(automatic: bool | None, agree: bool) -> tuple[bool, bool | None]:
    """``(label, automatic)`` of an agree / disagree press: the verified label follows
    the automatic one; with no automatic label, *agree* means *conflict*."""
    return (agree if automatic is None else (automatic if agree else not automatic)),\
        automatic


def verdict_targets(item: VerifyItem) -> list[PanelTarget]:
    """The answer panel's targets of a task: one verdict per conflict type, ``A`` agree
    and ``D`` disagree with the automatic label (with none: conflict / no conflict)."""
    out = []
    for check in item.checks:
        auto = check.automatic
        if auto is None:
            options = (Option("agree", "Conflict", "A"), Option("disagree", "No conflict", "D"))
            caption = "No automatic label: give the label yourself"
        else:
            source = "published label" if check.published is not None else "rules"
            options = (Option("agree", f"Agree: {label_text(auto)}", "A"),
                       Option("disagree", f"Disagree: {label_text(not auto)}", "D"))
            caption = f"Automatic label ({source}): {label_text(auto)}"
        out.append(PanelTarget("v", check.conflict, CONFLICT_TITLES[check.conflict], options,
                               caption=caption))
    return out


def verdict_values(item: VerifyItem, verdicts: Mapping[str, Verdict]) -> dict[int, str]:
    """The panel's value (``agree`` / ``disagree``) of each verdict given, by position."""
    out = {}
    for i, check in enumerate(item.checks):
        v = verdicts.get(check.conflict)
        if v is not None:
            agree = v.label if check.automatic is None else bool(v.agrees)
            out[i] = "agree" if agree else "disagree"
    return out


def my_verdicts(store: Store, verifier: str, task_id: str) -> dict[str, Verdict]:
    return {
        r[0]: Verdict(r[0], None if r[1] is None else bool(r[1]),
                      None if r[2] is None else bool(r[2]), bool(r[3]), r[4], bool(r[5]))
        for r in ((v["conflict"], v["automatic"], v["agrees"], v["label"], v["note"],
                   v["blind"])
                  for v in answer_rows.current_rows(store, "verdict", verifier, task_id))
    }


def verdicts_complete(item: VerifyItem, verdicts: Mapping[str, Verdict]) -> bool:
    return all(c.conflict in verdicts for c in item.checks)


def submit_task(store: Store, verifier: str, task_id: str, *, slot: bool | None = None,
                now: datetime | None = None) -> None:
    """Mark the task verified by this verifier (idempotent); release the reservation.
    ``slot``: first check the right to submit (:meth:`annotation.work.engine.Router.claim`)."""
    ROUTER.submit(store, verifier, task_id, slot=slot, now=now)


def is_submitted(store: Store, verifier: str, task_id: str) -> bool:
    return ROUTER.is_submitted(store, verifier, task_id)


def previous_task(store: Store, verifier: str, current: str | None) -> str | None:
    """The task submitted just before ``current`` (or the last submitted one)."""
    return ROUTER.previous(store, verifier, current)


# ------------------------------------------------------------------------ time, progress
def start_visit(store: Store, verifier: str, task_id: str) -> int:
    """Open a visit of the task (its active time is added to it); return its id."""
    return ROUTER.start_visit(store, verifier, task_id)


def personal_progress(store: Store, verifier: str) -> tuple[int, int]:
    """(tasks this verifier submitted, tasks still open to them + submitted)."""
    return ROUTER.personal_progress(store, verifier)


def overall_progress(store: Store) -> tuple[int, int]:
    """(verifications counted toward overlap, verifiable tasks x overlap)."""
    return ROUTER.overall_progress(store)


def progress_by_verifier(store: Store) -> pd.DataFrame:
    """Per verifier: tasks submitted, verdicts given, disagreements, median active s/task."""
    q = queues.reader(store, "verify")
    subs = q.submissions_df().rename(columns={"person": "verifier"}).groupby(
        "verifier").size().rename("submitted").reset_index()
    current = answer_rows.current_df(store, "verdict")
    verdicts = current.assign(dis=current["agrees"] == 0).groupby("verifier").agg(
        verdicts=("verdict_id", "size"), disagreements=("dis", "sum")).reset_index()
    times = q.visit_seconds_df().rename(columns={"person": "verifier"})
    med = times.groupby("verifier")["active_seconds"].median().rename(
        "median seconds/task").reset_index()
    table = subs.merge(verdicts, how="outer", on="verifier").merge(med, how="left",
                                                                   on="verifier")
    table = table.fillna({"submitted": 0, "verdicts": 0, "disagreements": 0})
    return table.astype({"submitted": int, "verdicts": int, "disagreements": int}
                        ).sort_values("verifier").reset_index(drop=True)


# ------------------------------------------------------------------------ the controller
class VerifySession(Controller):
    """The verification page's controller: what each click or key does, without
    Streamlit (:class:`annotation.work.engine.Controller`). Every reading and verdict is
    written at once, so a reload or another machine resumes at the same task. A stale
    tab (the task went to someone else) writes nothing: ``state["notice"]`` says so, the
    next task opens, and the rest of that interaction does nothing more."""

    router = ROUTER
    UNIT = "task_id"
    PERSON = "verifier"
    NOUN = "task"

    def __init__(self, store: Store, verifier: str, state: MutableMapping[str, Any],
                 clock: Callable[[], float] = time.monotonic):
        super().__init__(store, verifier, state, clock)

    @property
    def verifier(self) -> str:
        return self.person

    def _taken(self, exc: ItemTaken) -> None:
        self.state.pop("notes", None)
        super()._taken(exc)

    # ------------------------------------------------------------------ the task
    @property
    def task_id(self) -> str | None:
        return self.unit

    def _opened(self) -> None:
        self.state.pop("item", None)

    @property
    def item(self) -> VerifyItem:
        if self.state.get("item") is None or self.state["item"].task_id != self.task_id:
            assert self.task_id is not None
            self.state["item"] = load_verify_item(self.store, self.task_id)
        return self.state["item"]

    @property
    def settings(self) -> VerifySettings:
        return get_settings(self.store)

    def readings(self) -> dict[tuple[int, str], Any]:
        assert self.task_id is not None
        return my_readings(self.store, self.verifier, self.task_id)

    def verdicts(self) -> dict[str, Verdict]:
        assert self.task_id is not None
        return my_verdicts(self.store, self.verifier, self.task_id)

    def revealed(self) -> bool:
        """Whether the automatic decisions may be shown now (see blind mode)."""
        return reveal_automatic(self.item, self.readings(), self.settings.blind)

    def read_elsewhere(self) -> dict[tuple[int, str], str]:
        """This verifier's readings of the task's images given in another task (where)."""
        assert self.task_id is not None
        return readings_elsewhere(self.store, self.verifier, self.task_id)

    def reading_value(self, index: int, attribute: str) -> Any:
        """The verifier's reading if given, else the pre-label (what a field starts at)."""
        readings = self.readings()
        if (index, attribute) in readings:
            return readings[(index, attribute)]
        return self.item.reference(index).prelabel.get(attribute)

    def current_check(self) -> str | None:
        """The first conflict type without a verdict (keyboard shortcuts act on it)."""
        verdicts = self.verdicts()
        return next((c.conflict for c in self.item.checks if c.conflict not in verdicts), None)

    # ------------------------------------------------------------------ actions
    def set_reading(self, index: int, attribute: str, value: Any) -> int | None:
        """Record one reading at once (history kept); None when nothing was written."""
        if self._moved:
            return None
        assert self.task_id is not None
        try:
            return give_reading(self.store, self.verifier, self.task_id, index, attribute,
                                value, active=self._active(), slot=True)
        except ItemTaken as exc:
            self._taken(exc)
            return None

    def confirm_readings(self, values: Mapping[tuple[int, str], Any]) -> None:
        """Record every needed reading: ``values`` where the verifier set a field, else the
        value the field shows (the pre-label): confirming a pre-label is a reading too."""
        item = self.item
        for index, attribute in item.needed():
            if self._moved:
                return
            value = values.get((index, attribute), self.reading_value(index, attribute))
            if attribute != "yaw" and value is None:
                value = False
            self.set_reading(index, attribute, value)

    def set_verdict(self, conflict: str, agree: bool, note: str | None = None) -> int | None:
        """Agree or disagree with the automatic label; the verified label follows. With no
        automatic label, ``agree`` means *conflict* (the page labels the buttons so)."""
        if self._moved:
            return None
        check = next(c for c in self.item.checks if c.conflict == conflict)
        label, automatic = verdict_label(check.automatic, agree)
        if note is None:
            old = self.verdicts().get(conflict)
            note = old.note if old else self.pending_note(conflict)
        assert self.task_id is not None
        # blind: the automatic label was hidden until the verifier had read something
        blind = self.settings.blind and bool(self.item.needed())
        try:
            return give_verdict(self.store, self.verifier, self.task_id, conflict, label,
                                automatic, note=note, blind=blind, active=self._active(),
                                slot=True)
        except ItemTaken as exc:
            self._taken(exc)
            return None

    def set_note(self, conflict: str, note: str) -> int | None:
        """Change the note of a verdict already given (a new row, history kept)."""
        if self._moved:
            return None
        verdict = self.verdicts().get(conflict)
        if verdict is None:
            self.state.setdefault("notes", {})[conflict] = note
            return None
        check = next(c for c in self.item.checks if c.conflict == conflict)
        assert self.task_id is not None
        try:
            return give_verdict(self.store, self.verifier, self.task_id, conflict,
                                verdict.label, check.automatic, note=note,
                                blind=verdict.blind, active=self._active(), slot=True)
        except ItemTaken as exc:
            self._taken(exc)
            return None

    def keep_pending_notes(self, verdicts: Mapping[str, Verdict]) -> bool:
        """Write the notes typed before their verdict (the verdict came through the answer
        panel since); True when one was written."""
        pending = self.state.get("notes", {})
        wrote = False
        for conflict in [c for c in pending if c in verdicts]:
            note = pending.pop(conflict)
            if note and note != verdicts[conflict].note:
                wrote = self.set_note(conflict, note) is not None or wrote
        return wrote

    def pending_note(self, conflict: str) -> str | None:
        return self.state.get("notes", {}).get(conflict)

    def panel(self) -> Panel:
        """What the answer panel shows: before the reading is confirmed (blind mode) only
        *Confirm my reading* on Enter; then one verdict per conflict type (``A`` / ``D``),
        Submit on Enter; Back (``B``) always."""
        assert self.task_id is not None
        common: dict[str, Any] = {"visit": int(self.state["visit_id"]),
                                  "reviewing": bool(self.state.get("reviewing")),
                                  "handled": int(self.state.get("handled", 0))}
        back = Command("back", "Back", "B")
        if not reveal_automatic(self.item, self.readings(), self.settings.blind):
            return Panel(commands=(Command("confirm", "Confirm my reading", "Enter",
                                           primary=True), back), enter="confirm",
                         hint="Check each pre-label against the images, correct it where "
                              "it is wrong, then confirm your reading (Enter).", **common)
        item = self.item
        ids = {r["conflict"]: int(r["verdict_id"]) for r in answer_rows.current_rows(
            self.store, "verdict", self.verifier, self.task_id)}
        rows = {i: ids[c.conflict] for i, c in enumerate(item.checks) if c.conflict in ids}
        return Panel(targets=tuple(verdict_targets(item)),
                     values=verdict_values(item, self.verdicts()), rows=rows,
                     commands=(Command("submit", "Submit task", "Enter", primary=True), back),
                     submit="submit", **common)

    def command(self, command: dict[str, Any],
                fields: Callable[[], Mapping[tuple[int, str], Any]]) -> None:
        """Act on a command of the answer panel, once: ``confirm`` records the reading the
        fields show (``fields()``), ``submit`` does too (not blind: the fields are the
        reading) then submits, or leaves a notice while a verdict is missing; ``back``;
        ``reload`` gives up a task that went to someone else."""
        name = self.take_command(command, ("confirm", "submit", "back", "reload"))
        if name is None or self.task_id is None:
            return
        if name in ("confirm", "submit"):
            self.confirm_readings(fields())
        if name == "submit":
            if self.can_submit():
                self.submit()
            elif not self.state.get("notice"):
                self.state["notice"] = "A verdict is still needed for every conflict type."
        elif name == "back":
            self.back()
        elif name == "reload":
            self.give_up()

    def complete(self) -> bool:
        """Every needed pre-label read and a verdict per conflict type."""
        return self.can_submit()

    def can_submit(self) -> bool:
        return readings_complete(self.item, self.readings()) and verdicts_complete(
            self.item, self.verdicts())

    def submit(self) -> None:
        """Submit the task and open the next one (or go back to where review started).
        Nothing when this interaction found the task gone (see ``state["notice"]``)."""
        if self._moved:
            return
        assert self.task_id is not None
        if not self.can_submit():
            raise ValueError("give a reading of every pre-label and a verdict per conflict "
                             "type first")
        self.state.pop("notes", None)
        self._submit()
