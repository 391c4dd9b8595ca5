"""Reference / visual-instruction conflict rules of VIF-Bench, as pure functions.

Source: "VIF-Bench: Evaluating Visual Instruction Following in Multi-Reference Image
Generation", Section 3.2 "Conflict Detection" and Appendix C.4. A *conflict* means a
reference image already carries a salient state of the attribute a visual instruction (VI)
controls:

* orientation: only judged when the reference (``source``) yaw estimate is reliable; then a
  conflict when the minimum angular difference to the pyramid's (``target``) yaw is
  >= 60 degrees, or when the two yaws have opposite signs (a left/right flip; the paper's
  example: 30 vs -20 is only 50 degrees apart but flipped);
* light: distinctive lighting in the reference and a light arrow in the task;
* wind: wind-responsive elements (hair, fabric, fur, smoke, ...) and a wind arrow;
* pose: a clear non-neutral pose and a pose reference attached to that person;
* layout: never (Section 3.2 / C.4: a layout is about the scene, not a reference attribute).

Conventions chosen here (the paper leaves them open):

* Yaw is in degrees, any finite real (``-180..180`` as in the paper, or ``0..360``); it is
  reduced to ``(-180, 180]``, so 350 and -10 are the same yaw.
* *Sign* (the left/right side) of a reduced yaw: ``+1`` on ``(0, 180)`` (facing screen-right),
  ``-1`` on ``(-180, 0)`` (screen-left), ``0`` for exactly 0 (the camera) and 180 (the
  back), which face neither side. Signs are *opposite* only for ``+1`` vs ``-1``: a subject
  facing exactly front or back never conflicts by sign, only by the 60 degree rule.
* An unreliable source yaw gives ``Decision(False, ...)``, not ``None``: C.4 says the judgment
  is entered only when the estimate is reliable, and a task is labelled a conflict only
  when a condition is met, so the released labels count such a subject as no conflict.
  ``None`` is kept for data that is missing (unknown reliability, yaw or target).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Minimum yaw difference (degrees) that makes an orientation conflict (C.4).
YAW_CONFLICT_DEG = 60.0

#: Keys of a task's ``meta["conflicts"]`` in the VIF-Bench release, per decision name.
CONFLICT_KEYS = {
    "orientation": "orientation_conflict",
    "light": "light_conflict",
    "wind": "wind_conflict",
    "pose": "pose_conflict",
}

#: Accepted spellings of the pre-label fields of one reference image.
LIGHT_KEYS = ("lighting_distinctive", "light_distinctive", "distinctive_lighting")
WIND_KEYS = ("wind_responsive", "wind_responsiveness")
POSE_KEYS = ("pose_distinctive", "distinctive_pose")
RELIABLE_KEYS = ("yaw_reliable", "yaw_reliability", "reliable")


@dataclass(frozen=True)
class Decision:
    """One conflict decision: ``conflict`` True/False, or None when it cannot be decided.

    ``rule`` names the rule that fired (human-readable); ``values`` holds the inputs used.
    """

    conflict: bool | None
    rule: str
    values: dict[str, Any] = field(default_factory=dict, hash=False, compare=True)


# ------------------------------------------------------------------------- orientation


def _finite(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def normalize_yaw(yaw: float) -> float:
    """``yaw`` in degrees reduced to ``(-180, 180]`` (350 -> -10, -180 -> 180)."""
    v = _finite(yaw)
    if v is None:
        raise ValueError(f"yaw must be a finite number of degrees, got {yaw!r}")
    r = math.fmod(v, 360.0)
    if r > 180.0:
        r -= 360.0
    elif r <= -180.0:
        r += 360.0
    return r


def yaw_side(yaw: float) -> int:
    """Left/right side of a yaw: +1 screen-right, -1 screen-left, 0 for front (0) / back (180)."""
    r = normalize_yaw(yaw)
    if r == 0.0 or r == 180.0:
        return 0
    return 1 if r > 0 else -1


def yaw_difference(a: float, b: float) -> float:
    """Minimum angular difference of two yaws on the circle, in ``[0, 180]`` degrees.

    Examples: 170 vs -170 -> 20; 0 vs 180 -> 180; 350 vs 10 -> 20 (C.4 "minimum angular
    difference"). Raises ValueError for a non-finite or non-numeric yaw.
    """
    d = abs(normalize_yaw(a) - normalize_yaw(b))
    return 360.0 - d if d > 180.0 else d


def orientation_conflict(
    ref_yaw: float | None, yaw_reliable: bool | None, target_yaw: float | None
) -> Decision:
    """Orientation conflict of one subject (Section 3.2, Appendix C.4).

    ``ref_yaw`` is the yaw estimated from the reference image (source), ``yaw_reliable``
    whether that estimate is reliable, ``target_yaw`` the yaw of the VI pyramid.
    Unreliable -> ``False`` (not judged, see module doc); unknown reliability, a missing or
    non-numeric yaw -> ``None``.
    """
    values: dict[str, Any] = {
        "source_yaw": ref_yaw,
        "yaw_reliable": yaw_reliable,
        "target_yaw": target_yaw,
    }
    if yaw_reliable is False:
        return Decision(False, "source yaw unreliable: not judged", values)
    if yaw_reliable is not True:
        return Decision(None, "reliability of the source yaw unknown", values)
    src, tgt = _finite(ref_yaw), _finite(target_yaw)
    if src is None:
        return Decision(None, "source yaw missing", values)
    if tgt is None:
        return Decision(None, "target yaw missing", values)
    diff = yaw_difference(src, tgt)
    s_side, t_side = yaw_side(src), yaw_side(tgt)
    values.update(difference=diff, source_side=s_side, target_side=t_side)
    big = diff >= YAW_CONFLICT_DEG
    flipped = s_side * t_side == -1
    if big and flipped:
        return Decision(True, "yaw difference >= 60 and opposite yaw signs", values)
    if big:
        return Decision(True, "yaw difference >= 60", values)
    if flipped:
        return Decision(True, "opposite yaw signs (left/right flip)", values)
    return Decision(False, "yaw difference < 60 and no left/right flip", values)


# ------------------------------------------------------------------ light, wind, pose


def _presence_rule(
    name: str, attribute: str, salient: bool | None, has_vi: bool | None
) -> Decision:
    values = {attribute: salient, f"has_{name}": has_vi}
    if has_vi is False:
        return Decision(False, f"no {name} in the task", values)
    if salient is False:
        return Decision(False, f"reference not {attribute.replace('_', ' ')}", values)
    if has_vi is None or salient is None:
        return Decision(None, "pre-label or visual instruction unknown", values)
    return Decision(True, f"{attribute.replace('_', ' ')} reference and a {name}", values)


def light_conflict(light_distinctive: bool | None, has_light_arrow: bool | None) -> Decision:
    """Light conflict (C.4): distinctive lighting in the reference AND a light arrow.

    Distinctive = clearly unlike ordinary daylight / uniform indoor light (neon, moonlight,
    spotlights, strong backlight, coloured light, ...). ``None`` inputs give ``None`` unless
    the other input already rules the conflict out.
    """
    return _presence_rule("light arrow", "light_distinctive", light_distinctive, has_light_arrow)


def wind_conflict(wind_responsive: bool | None, has_wind_arrow: bool | None) -> Decision:
    """Wind conflict (C.4): wind-responsive elements (hair, fabric, smoke, ...) AND a wind arrow."""
    return _presence_rule("wind arrow", "wind_responsive", wind_responsive, has_wind_arrow)


def pose_conflict(
    pose_distinctive: bool | None, has_pose_reference_for_that_person: bool | None
) -> Decision:
    """Pose conflict (C.4): the person's reference pose is clear and non-neutral AND a pose
    reference is attached to that same person."""
    return _presence_rule(
        "pose reference", "pose_distinctive", pose_distinctive, has_pose_reference_for_that_person
    )


def layout_conflict(*_: Any) -> Decision:
    """Layout never conflicts (Section 3.2, C.4): it arranges the scene, not a reference."""
    return Decision(False, "layout never conflicts", {})


# ------------------------------------------------------------------------- one task


def _flag(label: Mapping[str, Any], keys: Iterable[str]) -> bool | None:
    for k in keys:
        v = label.get(k)
        if isinstance(v, bool):
            return v
    return None


def _any(flags: list[bool | None]) -> bool | None:
    """True if any True; else None if any unknown (or none given); else False."""
    if any(f is True for f in flags):
        return True
    if not flags or any(f is None for f in flags):
        return None
    return False


def _named_items(raw: Any, value_key: str | None = None) -> list[dict[str, Any]]:
    """A list of dicts with ``subject`` from a list of dicts or a ``{subject: ...}`` dict."""
    if isinstance(raw, Mapping):
        if "subject" in raw:
            return [dict(raw)]
        out = []
        for name, v in raw.items():
            if isinstance(v, Mapping):
                out.append({"subject": name, **v})
            elif value_key is not None:
                out.append({"subject": name, value_key: v})
        return out
    if isinstance(raw, str):
        return [{"subject": raw}]
    if isinstance(raw, (list, tuple)):
        return [
            dict(x) if isinstance(x, Mapping) else {"subject": x}
            for x in raw
            if isinstance(x, (Mapping, str))
        ]
    return []


def _arrow_kinds(targets: Mapping[str, Any]) -> set[str] | None:
    """Arrow kinds in the task, from ``arrows`` and/or ``visual_instruction_types``."""
    kinds: set[str] = set()
    known = False
    arrows = targets.get("arrows")
    if arrows is not None:
        known = True
        items = arrows if isinstance(arrows, (list, tuple)) else [arrows]
        for a in items:
            if isinstance(a, Mapping):
                kind = str(a.get("kind") or a.get("type") or "").lower()
                kinds.update(k for k in ("wind", "light") if k in kind)
                if not kind:
                    kinds.update(k for k in ("wind", "light") if k in a)
    types = targets.get("visual_instruction_types")
    if isinstance(types, (list, tuple)):
        known = True
        for t in types:
            kinds.update(k for k in ("wind", "light") if k in str(t).lower())
    return kinds if known else None


def task_conflicts(prelabels: Mapping[str, Any], targets: Mapping[str, Any]) -> dict[str, Decision]:
    """Conflict decisions of one task: keys ``orientation``, ``light``, ``wind``, ``pose``,
    ``layout`` (see :data:`CONFLICT_KEYS` for the release's ``meta.conflicts`` names).

    ``prelabels``: ``{reference name: pre-label dict}`` for the task's reference images; a
    main subject's entry is keyed by its subject name (as in the layout). A pre-label dict
    may hold ``yaw`` (degrees), ``yaw_reliable`` (bool), ``lighting_distinctive`` (or
    ``light_distinctive``), ``wind_responsive`` and ``pose_distinctive`` (bools). Light and
    wind look at every reference given (a scene reference can carry neon light); orientation
    and pose at the subject's own entry. Build it from a task record with
    :func:`task_prelabels`.

    ``targets``: the task's meta (or the same shape): ``orientation`` a list of
    ``{subject, yaw, pitch}`` (or ``{subject: {yaw, ...}}``), ``arrows`` a list of
    ``{kind: wind|light, ...}`` and/or ``visual_instruction_types`` (``light+wind`` counts
    for both), ``pose`` a ``{subject, ...}`` dict, a subject name or a list of either.

    Missing information gives ``None`` decisions (never an exception). When a kind of VI is
    absent the decision is ``False``; with several subjects the task decision is True if
    any subject conflicts, else None if any is undecidable (details in ``values``).
    """
    pre = {str(k): v for k, v in prelabels.items() if isinstance(v, Mapping)}
    out: dict[str, Decision] = {}

    # orientation: one decision per oriented subject
    per: dict[str, Decision] = {}
    for item in _named_items(targets.get("orientation"), "yaw"):
        subject = str(item.get("subject"))
        label = pre.get(subject)
        if label is None:
            per[subject] = Decision(None, "no pre-label for this subject", {"subject": subject})
            continue
        per[subject] = orientation_conflict(
            label.get("yaw"), _flag(label, RELIABLE_KEYS), item.get("yaw")
        )
    if not per:
        out["orientation"] = Decision(False, "no orientation instruction in the task", {})
    else:
        verdict = _any([d.conflict for d in per.values()])
        fired = [f"{s}: {d.rule}" for s, d in per.items() if d.conflict is verdict]
        out["orientation"] = Decision(
            verdict, "; ".join(fired), {"subjects": {s: d for s, d in per.items()}}
        )

    # light and wind: any reference with the salient attribute, plus the arrow
    kinds = _arrow_kinds(targets)
    for name, keys, rule in (
        ("light", LIGHT_KEYS, light_conflict),
        ("wind", WIND_KEYS, wind_conflict),
    ):
        flags = {ref: _flag(label, keys) for ref, label in pre.items()}
        has = None if kinds is None else name in kinds
        decision = rule(_any(list(flags.values())), has)
        out[name] = Decision(
            decision.conflict, decision.rule, {**decision.values, "references": flags}
        )

    # pose: the person who has a pose reference
    pose_items = _named_items(targets.get("pose"))
    if targets.get("pose") is None:
        out["pose"] = pose_conflict(None, False)
    elif not pose_items:
        out["pose"] = Decision(None, "pose reference without a person", {})
    else:
        per_pose = {}
        for item in pose_items:
            subject = str(item.get("subject"))
            label = pre.get(subject, {})
            per_pose[subject] = pose_conflict(_flag(label, POSE_KEYS), True)
        verdict = _any([d.conflict for d in per_pose.values()])
        fired = [f"{s}: {d.rule}" for s, d in per_pose.items() if d.conflict is verdict]
        out["pose"] = Decision(verdict, "; ".join(fired), {"subjects": per_pose})

    out["layout"] = layout_conflict()
    return out


def reference_names(task: Mapping[str, Any]) -> dict[int, str]:
    """``{image index: name}`` of a task record's reference images, as the rules key them.

    A reference named by a layout entry's ``image`` index is called by that entry's
    ``subject`` (so orientation and pose targets, which name subjects, find it); the others
    are called ``Image_<index>``.
    """
    raw_meta = task.get("meta")
    meta = raw_meta if isinstance(raw_meta, Mapping) else {}
    names: dict[int, str] = {}
    for item in _named_items(meta.get("layout")):
        idx = item.get("image")
        if isinstance(idx, int) and not isinstance(idx, bool) and item.get("subject"):
            names[idx] = str(item["subject"])
    images = task.get("images")
    out: dict[int, str] = {}
    for i, img in enumerate(images if isinstance(images, list) else []):
        if isinstance(img, Mapping) and img.get("role", "reference") == "reference":
            out[i] = names.get(i, f"Image_{i}")
    return out


def task_prelabels(task: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``{reference name: pre-label}`` from a tasks.jsonl record (as the demo writes it).

    Reference images are ``images`` entries with ``role == "reference"``; their pre-label is
    ``meta.prelabel`` (or ``prelabel``), named by :func:`reference_names`.
    """
    out: dict[str, dict[str, Any]] = {}
    images: Any = task.get("images")  # a list wherever reference_names finds a reference
    for i, name in reference_names(task).items():
        img = images[i]
        img_meta = img.get("meta") if isinstance(img.get("meta"), Mapping) else {}
        label = img_meta.get("prelabel", img.get("prelabel"))
        if isinstance(label, Mapping):
            out[name] = dict(label)
    return out
