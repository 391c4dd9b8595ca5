"""Deterministic drawings of VIF-Bench style visual-instruction (VI) images.

VIF-Bench gives a generator its visual instructions as ordinary images ("VIF-Bench:
Evaluating Visual Instruction Following in Multi-Reference Image Generation", Appendix
C.5). This module redraws the same kinds, so the demo bundle and the annotation pages can
show (or overlay) them:

* **layout** (:func:`draw_layout`): one coloured box per main subject on a white canvas
  (1024x1024 in VIF-Bench), each box outlined and labelled in its subject's colour;
* **orientation** (:func:`draw_orientation`, :func:`draw_orientations`): a 3D square
  pyramid per subject, in perspective, on a black background with gray faces and a
  yellow-green outline. As in VIF-Bench, the square **base is the front** of the subject
  and the apex its back; the base is filled with a distinct colour so the facing direction
  reads at a glance. Angles: yaw 0 = facing the camera, +90 = screen-right, -90 =
  screen-left, 180 = back; pitch > 0 = up;
* **wind / light arrows** (:func:`draw_arrows`): a 2D directed arrow per instruction,
  cyan for wind and yellow for light, from the start (the source) to the end (where the
  wind blows or the light falls); both kinds may share one image;
* **pose** (:func:`draw_pose`): an OpenPose-like stick skeleton on black.

:func:`draw_from_meta` draws the layout, orientation and arrow images of a task from the
documented shapes of its ``meta`` (``docs/bundle-format.md``), for bundles that give the
specification instead of the image.

Every function is pure: it returns a new RGB :class:`PIL.Image.Image` and depends only on
its arguments (no randomness, no system fonts: text uses Pillow's bundled default font),
so the same call gives the same pixels on every run. Coordinates are normalized to the
canvas: ``(0, 0)`` is the top-left corner, ``(1, 1)`` the bottom-right.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from PIL import Image, ImageDraw, ImageFont

#: Subject colours, in order: subject ``i`` gets ``PALETTE[i % len(PALETTE)]``. Cyan and
#: yellow are left out because they mean wind and light.
PALETTE: tuple[str, ...] = (
    "#E6194B",  # red
    "#4363D8",  # blue
    "#3CB44B",  # green
    "#F58231",  # orange
    "#911EB4",  # purple
    "#F032E6",  # magenta
    "#808000",  # olive
    "#9A6324",  # brown
)

#: Arrow colours by kind.
ARROW_COLORS: dict[str, str] = {"wind": "#00E5FF", "light": "#FFD400"}

PYRAMID_BACKGROUND = "#000000"
PYRAMID_OUTLINE = "#9ACD32"  # yellow-green, as in VIF-Bench
PYRAMID_FRONT = "#FF8C1A"  # fill of the square base = the subject's front

Point = tuple[float, float]
Vec3 = tuple[float, float, float]


def subject_color(i: int) -> str:
    """Return the fixed colour (``"#RRGGBB"``) of subject number ``i`` (0-based).

    The palette cycles after :data:`PALETTE` is exhausted; negative ``i`` is refused.
    """
    if i < 0:
        raise ValueError(f"subject index must be >= 0, got {i}")
    return PALETTE[i % len(PALETTE)]


def _rgb(color: str) -> tuple[int, int, int]:
    """``"#RRGGBB"`` -> ``(r, g, b)``."""
    value = color.lstrip("#")
    if len(value) != 6:
        raise ValueError(f"colour must be '#RRGGBB', got {color!r}")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def _font(px: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's bundled font at ``px`` pixels (no dependency on installed fonts)."""
    return ImageFont.load_default(size=max(8, px))


def _check_unit(name: str, values: Sequence[float]) -> None:
    for v in values:
        if not (isinstance(v, (int, float)) and math.isfinite(v) and -0.5 <= v <= 1.5):
            raise ValueError(f"{name}: normalized coordinates expected, got {list(values)!r}")


# --------------------------------------------------------------------------- layout


def draw_layout(
    boxes: Sequence[Mapping[str, Any]],
    size: int = 1024,
    *,
    fill_alpha: float = 0.18,
) -> Image.Image:
    """Draw a VIF layout: one coloured box per main subject on a white ``size`` canvas.

    Each item of ``boxes`` is a mapping with

    * ``box``: normalized ``[x0, y0, x1, y1]`` (top-left and bottom-right corners);
    * ``subject``: the subject's name (used as the label when ``label`` is absent);
    * ``color``: ``"#RRGGBB"`` (default: :func:`subject_color` of the item's position);
    * ``label`` (optional): the caption written in the box, e.g. ``"Image_0: cat"``.

    Boxes are drawn in the given order (later ones on top), each with a light tint of its
    colour, a thick outline and its label at the top-left corner inside the box, written
    in the box's colour on a white tab so it stays readable where boxes overlap.
    """
    base = Image.new("RGB", (size, size), "white")
    tint = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    tint_draw = ImageDraw.Draw(tint)
    width = max(2, round(size / 170))
    rects: list[tuple[tuple[int, int, int, int], tuple[int, int, int], str]] = []
    for i, item in enumerate(boxes):
        x0, y0, x1, y1 = (float(v) for v in item["box"])
        _check_unit("box", (x0, y0, x1, y1))
        if not (x0 < x1 and y0 < y1):
            raise ValueError(f"box must have x0 < x1 and y0 < y1, got {item['box']!r}")
        rgb = _rgb(str(item.get("color") or subject_color(i)))
        rect = (round(x0 * size), round(y0 * size), round(x1 * size), round(y1 * size))
        label = str(item.get("label") or item.get("subject") or f"subject {i}")
        tint_draw.rectangle(rect, fill=(*rgb, round(255 * fill_alpha)))
        rects.append((rect, rgb, label))
    base = Image.alpha_composite(base.convert("RGBA"), tint).convert("RGB")
    draw = ImageDraw.Draw(base)
    font = _font(round(size / 26))
    for rect, rgb, _label in rects:
        draw.rectangle(rect, outline=rgb, width=width)
    for rect, rgb, label in rects:
        pad = width + max(2, size // 200)
        left, top, right, bottom = draw.textbbox((0, 0), label, font=font)
        tab: tuple[float, float, float, float] = (
            rect[0] + width,
            rect[1] + width,
            rect[0] + width + (right - left) + 2 * pad,
            rect[1] + width + (bottom - top) + 2 * pad,
        )
        if tab[2] > size:  # keep a label that is wider than its box inside the canvas
            shift = tab[2] - size
            tab = (tab[0] - shift, tab[1], tab[2] - shift, tab[3])
        draw.rectangle(tab, fill="white")
        draw.text((tab[0] + pad - left, tab[1] + pad - top), label, fill=rgb, font=font)
    return base


# ---------------------------------------------------------------------- orientation


def _sub(a: Vec3, b: Vec3) -> Vec3:
    return a[0] - b[0], a[1] - b[1], a[2] - b[2]


def _add(a: Vec3, b: Vec3) -> Vec3:
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


def _mul(a: Vec3, k: float) -> Vec3:
    return a[0] * k, a[1] * k, a[2] * k


def _dot(a: Vec3, b: Vec3) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a: Vec3, b: Vec3) -> Vec3:
    return a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]


def _unit(a: Vec3) -> Vec3:
    n = math.sqrt(_dot(a, a))
    return _mul(a, 1.0 / n)


def facing_vector(yaw_deg: float, pitch_deg: float) -> Vec3:
    """Unit vector a subject faces, in camera space (x right, y up, z toward the camera).

    yaw 0 gives ``(0, 0, 1)`` (toward the camera), yaw +90 ``(1, 0, 0)`` (screen-right),
    yaw 180 ``(0, 0, -1)`` (away); pitch +90 gives ``(0, 1, 0)`` (up).
    """
    yaw, pitch = math.radians(yaw_deg), math.radians(pitch_deg)
    return (
        math.sin(yaw) * math.cos(pitch),
        math.sin(pitch),
        math.cos(yaw) * math.cos(pitch),
    )


def _shade(gray: int, normal: Vec3) -> tuple[int, int, int]:
    """Lambert-shade a gray face lit from the upper-left front."""
    light = _unit((-0.45, 0.6, 0.65))
    k = 0.45 + 0.55 * max(0.0, _dot(normal, light))
    v = max(0, min(255, round(gray * k)))
    return v, v, v


def draw_orientations(
    items: Sequence[Mapping[str, Any]],
    size: int = 512,
) -> Image.Image:
    """Draw several orientation pyramids on one black ``size`` canvas.

    Each item is a mapping with ``yaw`` and ``pitch`` (degrees), and optionally
    ``anchor`` (normalized ``[x, y]`` of the pyramid's centre, e.g. the centre of the
    subject's layout box; default the canvas centre), ``scale`` (pyramid height as a
    share of the canvas, default 0.4), ``front_color`` (fill of the square base, the
    subject's front; default :data:`PYRAMID_FRONT`) and ``label`` (a short caption under
    the pyramid, optional).

    The pyramid is projected in perspective from a camera on the +z axis; faces turned
    away from the camera are hidden, side faces are gray with a simple shading, the base
    is filled with ``front_color`` and every visible edge is outlined in yellow-green.
    """
    img = Image.new("RGB", (size, size), PYRAMID_BACKGROUND)
    draw = ImageDraw.Draw(img)
    for item in items:
        _draw_pyramid(draw, size, item)
    return img


def _draw_pyramid(draw: ImageDraw.ImageDraw, size: int, item: Mapping[str, Any]) -> None:
    yaw, pitch = float(item["yaw"]), float(item["pitch"])
    ax, ay = (float(v) for v in item.get("anchor") or (0.5, 0.5))
    _check_unit("anchor", (ax, ay))
    scale = float(item.get("scale") or 0.4)
    front_rgb = _rgb(str(item.get("front_color") or PYRAMID_FRONT))
    outline = _rgb(PYRAMID_OUTLINE)

    d = facing_vector(yaw, pitch)
    up = (0.0, 1.0, 0.0) if abs(d[1]) < 0.99 else (0.0, 0.0, -1.0)
    right = _unit(_cross(up, d))
    upv = _unit(_cross(d, right))
    height, half = 1.6, 0.5  # a tall pyramid, so the apex shows beside a frontal base
    base_c = _mul(d, height / 2)  # the base is the subject's front
    apex = _mul(d, -height / 2)  # the apex is its back
    corners = [
        _add(base_c, _add(_mul(right, sx * half), _mul(upv, sy * half)))
        for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1))
    ]
    camera: Vec3 = (0.0, 0.0, 8.0)  # far away: mild perspective
    focal = scale * size * 8.0  # the base side spans about `scale` of the canvas

    def project(p: Vec3) -> Point:
        depth = camera[2] - p[2]
        return ax * size + focal * p[0] / depth, ay * size - focal * p[1] / depth

    centroid = _mul(_add(base_c, apex), 0.5)
    faces: list[tuple[list[Vec3], bool]] = [(corners, True)]
    for i in range(4):
        faces.append(([corners[i], corners[(i + 1) % 4], apex], False))
    visible: list[tuple[float, list[Vec3], bool, Vec3]] = []
    for pts, is_base in faces:
        normal = _unit(_cross(_sub(pts[1], pts[0]), _sub(pts[2], pts[0])))
        center = _mul(
            (sum(p[0] for p in pts), sum(p[1] for p in pts), sum(p[2] for p in pts)),
            1.0 / len(pts),
        )
        if _dot(normal, _sub(center, centroid)) < 0:  # make the normal point outward
            normal = _mul(normal, -1.0)
        if _dot(normal, _sub(camera, center)) > 1e-9:
            visible.append((center[2], pts, is_base, normal))
    visible.sort(key=lambda v: v[0])  # far faces first (convex: no overlap anyway)
    line_w = max(2, round(size / 150))
    for _z, pts, is_base, normal in visible:
        poly = [project(p) for p in pts]
        fill = front_rgb if is_base else _shade(150, normal)
        draw.polygon(poly, fill=fill)
    base_edges: set[tuple[int, int]] = set()
    for _z, pts, _is_base, _normal in visible:
        poly = [project(p) for p in pts]
        draw.line([*poly, poly[0]], fill=outline, width=line_w, joint="curve")
        for a, b in zip(pts, pts[1:] + pts[:1], strict=True):
            if a in corners and b in corners:
                i, j = sorted((corners.index(a), corners.index(b)))
                base_edges.add((i, j))
    # When the base is hidden (seen from behind or edge-on), its visible edges are drawn in
    # the front colour, so the front stays identifiable at every angle.
    base_visible = any(is_base for _z, _pts, is_base, _n in visible)
    for i, j in [] if base_visible else sorted(base_edges):
        draw.line([project(corners[i]), project(corners[j])], fill=front_rgb, width=line_w + 1)
    label = item.get("label")
    if label:
        font = _font(round(size / 22))
        left, top, right_, bottom = draw.textbbox((0, 0), str(label), font=font)
        x = ax * size - (right_ - left) / 2
        y = min(size - (bottom - top) - 4, ay * size + scale * size * 0.95)
        draw.text((x - left, y - top), str(label), fill=outline, font=font)


def draw_orientation(
    yaw_deg: float,
    pitch_deg: float,
    size: int = 512,
    *,
    anchor: Point = (0.5, 0.5),
    front_color: str = PYRAMID_FRONT,
    label: str | None = None,
) -> Image.Image:
    """Draw one VIF orientation pyramid for a subject facing ``(yaw_deg, pitch_deg)``.

    yaw 0 = facing the camera, +90 = screen-right, -90 = screen-left, 180 = back;
    pitch > 0 = up. The square base (filled with ``front_color``) is the subject's front
    and the apex its back, as in VIF-Bench; see :func:`draw_orientations`.
    """
    item = {
        "yaw": yaw_deg,
        "pitch": pitch_deg,
        "anchor": anchor,
        "front_color": front_color,
        "label": label,
    }
    return draw_orientations([item], size)


# --------------------------------------------------------------------------- arrows


def _arrow(
    draw: ImageDraw.ImageDraw, start: Point, end: Point, rgb: tuple[int, int, int], size: int
) -> None:
    sx, sy = start[0] * size, start[1] * size
    ex, ey = end[0] * size, end[1] * size
    length = math.hypot(ex - sx, ey - sy)
    if length < 1:
        raise ValueError("arrow start and end coincide")
    ux, uy = (ex - sx) / length, (ey - sy) / length
    width = max(3, round(size / 45))
    head_len = min(length * 0.45, size * 0.09)
    head_half = head_len * 0.6
    bx, by = ex - ux * head_len, ey - uy * head_len  # where the head begins
    draw.line([(sx, sy), (bx + ux * 2, by + uy * 2)], fill=rgb, width=width)
    r = width * 0.9  # a round tail marks the start (the source)
    draw.ellipse([sx - r, sy - r, sx + r, sy + r], fill=rgb)
    head = [
        (ex, ey),
        (bx - uy * head_half, by + ux * head_half),
        (bx + uy * head_half, by - ux * head_half),
    ]
    draw.polygon(head, fill=rgb)


def draw_arrows(
    arrows: Sequence[Mapping[str, Any]],
    size: int = 512,
    *,
    background: str = "#000000",
) -> Image.Image:
    """Draw VIF wind / light arrows on one ``size`` canvas (black by default).

    Each item is a mapping with ``kind`` (``"wind"``: cyan, ``"light"``: yellow), ``start``
    and ``end`` (normalized ``[x, y]``). The start is the source (wind source, light
    source) and is marked with a round tail; the end carries the arrow head (where the
    wind blows, where the light falls). Both kinds may share one image.
    """
    img = Image.new("RGB", (size, size), background)
    draw = ImageDraw.Draw(img)
    for item in arrows:
        kind = str(item["kind"])
        if kind not in ARROW_COLORS:
            raise ValueError(f"arrow kind must be one of {sorted(ARROW_COLORS)}, got {kind!r}")
        start = (float(item["start"][0]), float(item["start"][1]))
        end = (float(item["end"][0]), float(item["end"][1]))
        _check_unit("arrow", (*start, *end))
        _arrow(draw, start, end, _rgb(ARROW_COLORS[kind]), size)
    return img


# ----------------------------------------------------------------------------- pose

#: Skeleton joints (normalized x, y) of a neutral standing person, and the limbs joining
#: them with their OpenPose-like colours.
POSE_JOINTS: dict[str, Point] = {
    "head": (0.50, 0.17),
    "neck": (0.50, 0.27),
    "r_shoulder": (0.41, 0.29),
    "r_elbow": (0.38, 0.42),
    "r_wrist": (0.37, 0.55),
    "l_shoulder": (0.59, 0.29),
    "l_elbow": (0.62, 0.42),
    "l_wrist": (0.63, 0.55),
    "hip": (0.50, 0.55),
    "r_hip": (0.45, 0.56),
    "r_knee": (0.44, 0.72),
    "r_ankle": (0.44, 0.88),
    "l_hip": (0.55, 0.56),
    "l_knee": (0.56, 0.72),
    "l_ankle": (0.56, 0.88),
}
POSE_LIMBS: tuple[tuple[str, str, str], ...] = (
    ("head", "neck", "#FF0055"),
    ("neck", "r_shoulder", "#FF5500"),
    ("r_shoulder", "r_elbow", "#FFAA00"),
    ("r_elbow", "r_wrist", "#FFFF00"),
    ("neck", "l_shoulder", "#AAFF00"),
    ("l_shoulder", "l_elbow", "#55FF00"),
    ("l_elbow", "l_wrist", "#00FF00"),
    ("neck", "hip", "#00FF55"),
    ("hip", "r_hip", "#00FFAA"),
    ("r_hip", "r_knee", "#00FFFF"),
    ("r_knee", "r_ankle", "#00AAFF"),
    ("hip", "l_hip", "#0055FF"),
    ("l_hip", "l_knee", "#0000FF"),
    ("l_knee", "l_ankle", "#5500FF"),
)


def draw_pose(joints: Mapping[str, Sequence[float]] | None = None, size: int = 512) -> Image.Image:
    """Draw an OpenPose-like skeleton (coloured limbs, white joints) on black.

    ``joints`` overrides some of :data:`POSE_JOINTS` (normalized ``[x, y]``); the others
    keep their neutral standing position. "right"/"left" are the person's own sides.
    """
    pts = dict(POSE_JOINTS)
    for name, xy in (joints or {}).items():
        if name not in pts:
            raise ValueError(f"unknown joint {name!r}")
        pts[name] = (float(xy[0]), float(xy[1]))
    img = Image.new("RGB", (size, size), "black")
    draw = ImageDraw.Draw(img)
    width = max(3, round(size / 55))
    for a, b, color in POSE_LIMBS:
        pa, pb = pts[a], pts[b]
        draw.line(
            [(pa[0] * size, pa[1] * size), (pb[0] * size, pb[1] * size)],
            fill=_rgb(color),
            width=width,
        )
    r = width * 0.8
    for name, (x, y) in pts.items():
        rr = r * 2.2 if name == "head" else r
        draw.ellipse([x * size - rr, y * size - rr, x * size + rr, y * size + rr], fill="white")
    return img


# ----------------------------------------------------------------- drawing from specs

#: Visual-instruction kinds that can be drawn from a task's ``meta``, and the key each reads.
SPEC_KEYS: dict[str, str] = {
    "layout": "layout",
    "orientation": "orientation",
    "wind": "arrows",
    "light": "arrows",
    "light+wind": "arrows",
}
#: Side of an image drawn from a spec: the VIF-Bench canvas (Appendix C.3).
SPEC_SIZE = 1024


class MissingSpec(ValueError):
    """The task's meta does not hold what a visual instruction of that kind is drawn from."""


def layout_entries(raw: Any) -> list[dict[str, Any]]:
    """The entries of a ``meta.layout``: a list of ``{box, subject?, image?, ...}`` as is, or
    the compact ``{name: [x0, y0, x1, y1]}`` form as ``[{subject: name, box}]``."""
    if isinstance(raw, Mapping):
        return [{"subject": str(name), "box": box} for name, box in raw.items()]
    if isinstance(raw, list | tuple):
        return [dict(item) for item in raw if isinstance(item, Mapping)]
    return []


def _box_centre(box: Sequence[float]) -> Point:
    return (float(box[0]) + float(box[2])) / 2, (float(box[1]) + float(box[3])) / 2


def draw_from_meta(kind: str, meta: Mapping[str, Any], size: int = SPEC_SIZE) -> Image.Image:
    """Draw the visual instruction of ``kind`` from a task's ``meta`` (Appendix C.3).

    * ``layout``: every box of ``meta.layout`` on a white canvas (:func:`draw_layout`); a box
      without ``color`` gets :func:`subject_color` of its position, without ``label`` the
      caption ``Image_<image>: <subject>`` (or the subject);
    * ``orientation``: one pyramid per ``meta.orientation`` entry on black
      (:func:`draw_orientations`), its centre at the entry's ``anchor``, else at the centre
      of the subject's layout box (as VIF-Bench anchors it), else spread left to right;
      several pyramids are drawn smaller and captioned with their subject;
    * ``wind`` / ``light`` / ``light+wind``: the arrows of those kinds of ``meta.arrows`` on
      one black image (:func:`draw_arrows`), cyan wind and yellow light.

    Raises :class:`MissingSpec` (a ValueError) naming what is missing, and ValueError for
    values the drawing functions refuse. The meta is expected to be valid
    (:func:`annotation.formats.validate.task_meta_problems`).
    """
    if kind not in SPEC_KEYS:
        raise MissingSpec(f"a {kind!r} visual instruction cannot be drawn from the task meta "
                          f"(drawable kinds: {', '.join(SPEC_KEYS)})")
    if meta.get(SPEC_KEYS[kind]) is None:
        raise MissingSpec(f"the task has no meta.{SPEC_KEYS[kind]} to draw it from")
    if kind == "layout":
        boxes = []
        for i, item in enumerate(layout_entries(meta.get("layout"))):
            subject = item.get("subject")
            image = item.get("image")
            label = item.get("label")
            if not label:
                if image is not None and subject:
                    label = f"Image_{image}: {subject}"
                else:
                    label = subject or (f"Image_{image}" if image is not None else None)
            boxes.append({"box": item["box"], "subject": subject, "label": label,
                          "color": item.get("color") or subject_color(i)})
        if not boxes:
            raise MissingSpec("the task's meta.layout has no box to draw it from")
        return draw_layout(boxes, size)
    if kind == "orientation":
        entries = [dict(o) for o in meta.get("orientation") or [] if isinstance(o, Mapping)]
        if not entries:
            raise MissingSpec("the task's meta.orientation has no entry to draw it from")
        centres = {str(e.get("subject")): _box_centre(e["box"])
                   for e in layout_entries(meta.get("layout")) if e.get("box")}
        several = len(entries) > 1
        items = []
        for k, entry in enumerate(entries):
            anchor = entry.get("anchor") or centres.get(str(entry.get("subject")))
            if anchor is None:
                anchor = ((k + 0.5) / len(entries), 0.5)
            items.append({
                "yaw": entry["yaw"],
                "pitch": entry.get("pitch") or 0.0,
                "anchor": anchor,
                "scale": 0.25 if several else 0.4,
                "label": entry.get("subject") if several else None,
            })
        return draw_orientations(items, size)
    wanted = ("light", "wind") if kind == "light+wind" else (kind,)
    arrows = [a for a in meta.get("arrows") or []
              if isinstance(a, Mapping) and a.get("kind") in wanted]
    lacking = [k for k in wanted if not any(a["kind"] == k for a in arrows)]
    if lacking:
        raise MissingSpec(f"the task's meta.arrows has no {' and no '.join(lacking)} arrow "
                          "to draw it from")
    return draw_arrows(arrows, size)
