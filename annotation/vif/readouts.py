"""Dense / Medium / Sparse text forms of VIF-Bench visual instructions (VIs).

Source: "VIF-Bench: Evaluating Visual Instruction Following in Multi-Reference Image
Generation", Appendix C.5 and Figure 8: each layout, orientation and arrow VI is turned into
text by templates at three granularities. The paper gives the content of each level and a
few phrases (a dense layout "within the rectangular region from (13%, 8%) to (87%, 92%) of
the canvas", an orientation "front-right, level" / "the viewer's right", arrows "blowing
from left to right" / "coming from the upper-left"); the templates here follow those
phrases.

Conventions (coordinates are normalized to the canvas, ``x`` to the right, ``y`` downward):

* Layout (C.5): dense = corner percentages; medium = the 3x3 grid cell holding the box
  centre + a size; sparse = the horizontal third of the centre. A centre exactly on a
  third line goes to the right / lower cell. Size by box area as a share of the canvas
  (the paper gives no thresholds): ``small`` below 1/9 (smaller than one grid cell),
  ``large`` from 1/3 of the canvas, ``medium`` between.
* Orientation (C.3 yaw convention: 0 = facing the camera/viewer, +90 = screen-right,
  -90 = screen-left, 180 = the back; pitch + = up): dense = yaw and pitch in degrees with
  that convention; medium = 8 facing directions (front, front-right, right, back-right,
  back, back-left, left, front-left; 45 degree sectors centred on multiples of 45) and 3
  pitch levels (``level`` when ``|pitch| < 15``, else ``tilted up`` / ``tilted down``;
  15 degrees is the paper's near-frontal bound of C.3); sparse = 4 directions (the viewer,
  the viewer's right, away from the viewer, the viewer's left) obtained by collapsing the 8
  as Figure 8 does ("front-right" -> "the viewer's right"): only front (|yaw| < 22.5) is
  "the viewer" and only back (|yaw| > 157.5) "away from the viewer". A yaw exactly on a
  sector boundary goes to the sector farther from the front (22.5 -> front-right).
* Arrows (C.3: start = source, end = where the wind blows / light falls): heading angle in
  degrees counter-clockwise from "toward the right" with **up = toward the top of the
  image** (decreasing ``y``): 0 right, 90 up, 180 left, 270 down. Medium = 8 compass
  directions (45 degree sectors), sparse = 4 (90 degree sectors); a heading exactly on a
  boundary goes to the counter-clockwise sector. Wind is worded by where it blows from
  and to; light by where it comes from (the side opposite to its heading).

Pose VIs are images only (the paper uses a VLM for their text), so they get no readout.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from annotation.ui.render import Arrow, Box, overlay_layers

SMALL_AREA = 1 / 9  #: below: "small" (less than one 3x3 grid cell)
LARGE_AREA = 1 / 3  #: from here: "large"
LEVEL_PITCH = 15.0  #: |pitch| below this is "level"

_ROWS = ("top", "middle", "bottom")
_COLS = ("left", "center", "right")
_THIRDS = ("left", "middle", "right")
YAW8 = ("front", "front-right", "right", "back-right", "back")
YAW4 = ("the viewer", "the viewer's right", "away from the viewer")
#: Counter-clockwise from "right", image up = top.
COMPASS8 = (
    "right",
    "upper-right",
    "top",
    "upper-left",
    "left",
    "lower-left",
    "bottom",
    "lower-right",
)
COMPASS4 = ("right", "top", "left", "bottom")
_EPS = 1e-9


def _pct(v: float) -> str:
    return f"{round(v * 100)}%"


def _cell(v: float) -> int:
    return min(max(math.floor(v * 3 + _EPS), 0), 2)


# ------------------------------------------------------------------------------ layout


def layout_dense(box: tuple[float, float, float, float]) -> str:
    """Corner coordinates as canvas percentages (C.5 TI Dense)."""
    x0, y0, x1, y1 = box
    return (
        f"within the rectangular region from ({_pct(x0)}, {_pct(y0)}) "
        f"to ({_pct(x1)}, {_pct(y1)}) of the canvas"
    )


def layout_size(box: tuple[float, float, float, float]) -> str:
    """``small`` / ``medium`` / ``large`` by the box area share (thresholds in module doc)."""
    x0, y0, x1, y1 = box
    area = abs(x1 - x0) * abs(y1 - y0)
    if area < SMALL_AREA:
        return "small"
    return "large" if area >= LARGE_AREA - _EPS else "medium"


def layout_cell(box: tuple[float, float, float, float]) -> str:
    """Name of the 3x3 grid cell holding the box centre: ``top-left`` ... ``center``."""
    x0, y0, x1, y1 = box
    row, col = _ROWS[_cell((y0 + y1) / 2)], _COLS[_cell((x0 + x1) / 2)]
    if row == "middle" and col == "center":
        return "center"
    return f"{row}-{col}"


def layout_medium(box: tuple[float, float, float, float]) -> str:
    """3x3 grid cell of the centre + size (C.5 TI Medium)."""
    return f"{layout_size(box)}, in the {layout_cell(box)} cell of a 3x3 grid over the image"


def layout_sparse(box: tuple[float, float, float, float]) -> str:
    """Horizontal third of the box centre only (C.5 TI Sparse)."""
    x0, _y0, x1, _y1 = box
    return f"in the {_THIRDS[_cell((x0 + x1) / 2)]} third of the image"


# ------------------------------------------------------------------------- orientation


def _yaw180(yaw: float) -> float:
    r = math.fmod(float(yaw), 360.0)
    if r > 180.0:
        r -= 360.0
    elif r <= -180.0:
        r += 360.0
    return r


def _num(v: float) -> str:
    return f"{v:g}"


def yaw_direction8(yaw: float) -> str:
    """One of 8 facing directions (front, front-right, ..., front-left)."""
    r = _yaw180(yaw)
    k = min(math.floor((abs(r) + 22.5) / 45 + _EPS), 4)
    name = YAW8[k]
    if 0 < k < 4 and r < 0:
        name = name.replace("right", "left")
    return name


def yaw_direction4(yaw: float) -> str:
    """One of 4 facing directions: the viewer, the viewer's right/left, away from the viewer.

    The 8 directions collapsed as in Figure 8 (front-right -> the viewer's right): any
    direction with a side becomes that side, front and back stay.
    """
    d8 = yaw_direction8(yaw)
    if d8 == "front":
        return YAW4[0]
    if d8 == "back":
        return YAW4[2]
    return "the viewer's right" if "right" in d8 else "the viewer's left"


def pitch_level(pitch: float) -> str:
    """``level`` if ``|pitch| < 15``, else ``tilted up`` / ``tilted down``."""
    if abs(pitch) < LEVEL_PITCH:
        return "level"
    return "tilted up" if pitch > 0 else "tilted down"


def orientation_dense(yaw: float, pitch: float) -> str:
    """Yaw and pitch in degrees with the sign convention (C.5 TI Dense)."""
    return (
        f"facing yaw {_num(yaw)}°, pitch {_num(pitch)}° (yaw 0° faces the viewer, +90° the "
        f"viewer's right, -90° the viewer's left, 180° away; positive pitch is up)"
    )


def orientation_medium(yaw: float, pitch: float) -> str:
    """8 facing directions + 3 pitch levels, e.g. ``facing front-right, level``."""
    return f"facing {yaw_direction8(yaw)}, {pitch_level(pitch)}"


def orientation_sparse(yaw: float) -> str:
    """4 facing directions, no pitch, e.g. ``facing the viewer's right``."""
    return f"facing {yaw_direction4(yaw)}"


# ------------------------------------------------------------------------------ arrows


def heading(start: tuple[float, float], end: tuple[float, float]) -> float:
    """Arrow heading in ``[0, 360)`` degrees, CCW from right, up = top of the image."""
    dx, dy = end[0] - start[0], end[1] - start[1]
    if abs(dx) < _EPS and abs(dy) < _EPS:
        raise ValueError("arrow has no length")
    angle = math.degrees(math.atan2(-dy, dx)) % 360.0
    return round(angle, 6) % 360.0


def compass8(angle: float) -> str:
    """8 compass directions of a heading (right, upper-right, top, ...)."""
    return COMPASS8[math.floor((angle + 22.5) / 45 + _EPS) % 8]


def compass4(angle: float) -> str:
    """4 cardinal directions of a heading (right, top, left, bottom)."""
    return COMPASS4[math.floor((angle + 45) / 90 + _EPS) % 4]


def _opposite(name: str, names: tuple[str, ...]) -> str:
    return names[(names.index(name) + len(names) // 2) % len(names)]


def _arrow_text(kind: str, to: str, names: tuple[str, ...]) -> str:
    src = _opposite(to, names)
    if kind == "wind":
        return f"wind blowing from {src} to {to}"
    return f"light coming from the {src}"


def arrow_dense(kind: str, start: tuple[float, float], end: tuple[float, float]) -> str:
    """Start and end in canvas percentages + heading angle (C.5 TI Dense)."""
    a, b = f"({_pct(start[0])}, {_pct(start[1])})", f"({_pct(end[0])}, {_pct(end[1])})"
    how = f"heading {round(heading(start, end))}° (0° = toward the right, 90° = toward the top)"
    if kind == "wind":
        return f"wind blowing from {a} toward {b} of the canvas, {how}"
    return f"light arriving from {a} and falling toward {b} of the canvas, {how}"


def arrow_medium(kind: str, start: tuple[float, float], end: tuple[float, float]) -> str:
    """8 compass directions, e.g. ``wind blowing from left to right`` (C.5 TI Medium)."""
    return _arrow_text(kind, compass8(heading(start, end)), COMPASS8)


def arrow_sparse(kind: str, start: tuple[float, float], end: tuple[float, float]) -> str:
    """4 cardinal directions, e.g. ``light coming from the top`` (C.5 TI Sparse)."""
    return _arrow_text(kind, compass4(heading(start, end)), COMPASS4)


# ------------------------------------------------------------------------- task meta


def _orientations(meta: Mapping[str, Any]) -> list[tuple[str | None, float, float]]:
    raw = meta.get("orientation", meta.get("orientations"))
    if isinstance(raw, Mapping):
        items = (
            [raw]
            if "yaw" in raw
            else [{"subject": k, **v} for k, v in raw.items() if isinstance(v, Mapping)]
        )
    elif isinstance(raw, (list, tuple)):
        items = [x for x in raw if isinstance(x, Mapping)]
    else:
        return []
    out = []
    for item in items:
        yaw, pitch = item.get("yaw"), item.get("pitch", 0)
        ok = all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in (yaw, pitch)
        )
        if ok:
            subject = item.get("subject", item.get("name"))
            out.append((None if subject is None else str(subject), float(yaw), float(pitch)))  # type: ignore[arg-type]
    return out


def readouts(task_meta: Any) -> list[dict[str, Any]]:
    """Text readouts of every layout box, orientation and arrow VI in a task's meta.

    ``task_meta``: the meta dict (or its JSON text); layout boxes and arrows are read by
    :func:`annotation.ui.render.overlay_layers` (same tolerant shapes), orientation from
    ``orientation`` as a list of ``{subject, yaw, pitch}`` or ``{subject: {yaw, pitch}}``.
    Returns ``[{kind, subject, dense, medium, sparse}]`` in the order layout, orientation,
    arrows; ``kind`` is ``layout``/``orientation``/``wind``/``light``; arrows have subject
    None. Unreadable entries (and zero-length arrows) are skipped, never raised.
    """
    try:
        meta = json.loads(task_meta) if isinstance(task_meta, (str, bytes)) else task_meta
    except ValueError:
        return []
    if not isinstance(meta, Mapping):
        return []
    shapes = overlay_layers(meta)
    out: list[dict[str, Any]] = []
    for b in (s for s in shapes if isinstance(s, Box)):
        out.append(
            {
                "kind": "layout",
                "subject": b.subject,
                "dense": layout_dense(b.box),
                "medium": layout_medium(b.box),
                "sparse": layout_sparse(b.box),
            }
        )
    for subject, yaw, pitch in _orientations(meta):
        out.append(
            {
                "kind": "orientation",
                "subject": subject,
                "dense": orientation_dense(yaw, pitch),
                "medium": orientation_medium(yaw, pitch),
                "sparse": orientation_sparse(yaw),
            }
        )
    for a in (s for s in shapes if isinstance(s, Arrow)):
        try:
            out.append(
                {
                    "kind": a.kind,
                    "subject": None,
                    "dense": arrow_dense(a.kind, a.start, a.end),
                    "medium": arrow_medium(a.kind, a.start, a.end),
                    "sparse": arrow_sparse(a.kind, a.start, a.end),
                }
            )
        except ValueError:
            continue
    return out
