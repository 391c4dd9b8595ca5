"""Images for the annotation pages: cached thumbnails, VI overlays, side-by-side compare.

Pure functions over Pillow images plus a disk cache beside the project's media folder; no
Streamlit here, so the page code stays thin and everything is testable without a browser.

**Thumbnails** (:func:`thumbnail`, :func:`thumbnail_bytes`). A page shows up to 7
references and 6 visual instructions in a strip (256 px), the output large (1024 px) and an
enlarge view (2048 px). Decoding and resizing 14 full-size images on every rerun of a
Streamlit script is what makes a page slow, so each (image, size) is resized once and kept
in ``<media_dir>/thumbs/<max_side>/<sha256>.<ext>``:

* the key is the content hash and the size, so a cached file never goes stale (media files
  are content-addressed and never change);
* a cache hit is two ``stat`` calls: the original is not opened;
* aspect is kept and images are never upscaled (LANCZOS). An image whose longer side is
  already ``<= max_side`` is not copied: its media path is returned, unless it is a BMP or
  TIFF (browsers do not show those), which is converted;
* format: **PNG** when the source has transparency or a palette (mode ``RGBA``, ``LA``,
  ``P``, ``PA`` or a ``transparency`` entry), so edges and alpha stay exact; **JPEG quality
  88** otherwise (fast to encode and decode, ~10x smaller than PNG for photos, and shown by
  ``st.image`` without re-encoding). The EXIF orientation is applied;
* files are written to a unique temporary name in the same folder and moved into place
  with :func:`os.replace`, so concurrent sessions see either no file or a whole one; two
  sessions racing on the same thumbnail both write identical bytes.

Tip for the page: ``st.image`` re-encodes an RGB **PNG** to JPEG unless it is given
``output_format="PNG"``, and shrinks anything wider than 1460 px; JPEG thumbnails pass
through untouched.

**Overlays** (:func:`overlay_layers`, :func:`draw_overlay`, :func:`overlay_png`). VIF-Bench
visual instructions (layout boxes, wind/light arrows) are read from a task's ``meta`` and
drawn over a copy of the output, so an annotator sees at once whether a subject landed in
its box. Coordinates are normalized (0..1) to the image; a shape with a coordinate > 1.5
is read as pixels on the layout canvas (1024x1024 in VIF-Bench, or ``canvas_size`` /
``canvas`` / ``image_size`` in the meta). Orientation pyramids are not overlaid: a yaw has
no honest 2D drawing on top of the output; the VI strip shows the pyramid itself.

**Compare** (:func:`side_by_side`): two images at one height with a white gap, for a
single image to download or show; the page may equally use two ``st.columns``.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import math
import os
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PIL import Image, ImageColor, ImageDraw, ImageFont, ImageOps

from annotation.vi_draw import ARROW_COLORS, subject_color

if TYPE_CHECKING:
    from annotation.store import Store

#: Sizes (longer side, px) the annotation page asks for.
STRIP_SIZE, LARGE_SIZE, ENLARGE_SIZE = 256, 1024, 2048
THUMBS_DIR = "thumbs"
OVERLAYS_DIR = "overlays"
JPEG_QUALITY = 88
JPEG_QUALITY_LARGE = 95
#: Formats every browser shows; smaller images in these formats are served as they are.
BROWSER_FORMATS = frozenset({"PNG", "JPEG", "MPO", "WEBP", "GIF"})
#: Side of the VIF-Bench layout canvas, for pixel coordinates.
CANVAS_SIZE = 1024
#: A coordinate above this is a pixel coordinate, not a normalized one.
PIXEL_THRESHOLD = 1.5
#: Bumped when the drawing changes, so cached overlays of the old drawing are not reused.
OVERLAY_VERSION = 1

_SHA256 = re.compile(r"[0-9a-f]{64}")
_ALPHA_MODES = frozenset({"RGBA", "LA", "PA", "RGBa", "La"})


# =============================================================================== thumbnails


def _check_sha(sha256: str) -> None:
    if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
        raise ValueError(f"not a lowercase hex SHA-256: {sha256!r}")


def _check_size(max_side: int) -> None:
    if isinstance(max_side, bool) or not isinstance(max_side, int) or max_side < 1:
        raise ValueError(f"max_side must be a positive int, got {max_side!r}")


def _cached(path: Path) -> bool:
    """A cache file that exists and is not empty (an empty one is treated as missing)."""
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


@functools.lru_cache(maxsize=4096)
def _header(path: str) -> tuple[str, int, int, bool]:
    """``(format, width, height, keeps_png)`` from the header of an image (no pixel
    decoding); ``keeps_png``: transparency or a palette, which a thumbnail keeps as PNG.

    Cached per process: media files are content-addressed, so their header never changes.
    """
    with Image.open(path) as im:
        keeps_png = _has_alpha(im) or im.mode in ("P", "1")
        return str(im.format), im.width, im.height, keeps_png


def _has_alpha(im: Image.Image) -> bool:
    """Whether ``im`` has an alpha band or a transparent colour."""
    return im.mode in _ALPHA_MODES or "transparency" in im.info


def _atomic_write(target: Path, write: Any) -> Path:
    """Call ``write(binary_file)`` on a unique temporary file, then move it to ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        with tmp.open("xb") as fh:
            write(fh)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def thumbnail_path(store: Store, sha256: str, max_side: int, ext: str) -> Path:
    """Where the ``max_side`` thumbnail of ``sha256`` is cached, for extension ``ext``."""
    return store.media_dir / THUMBS_DIR / str(max_side) / f"{sha256}.{ext}"


def _make_thumbnail(source: Path, store: Store, sha256: str, max_side: int) -> Path:
    with Image.open(source) as opened:
        opened.draft(None, (2 * max_side, 2 * max_side))  # JPEG: decode at a reduced scale
        as_png = _has_alpha(opened) or opened.mode in ("P", "1")
        im: Image.Image = opened
        ImageOps.exif_transpose(im, in_place=True)  # no copy: the file is ours to change
        if _has_alpha(im):
            im = im.convert("LA" if im.mode in ("L", "LA", "La") else "RGBA")
        elif im.mode not in ("RGB", "L"):
            im = im.convert("RGB")
        im.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)  # never upscales
    if as_png:
        target = thumbnail_path(store, sha256, max_side, "png")
        return _atomic_write(target, lambda fh: im.save(fh, "PNG", compress_level=3))
    target = thumbnail_path(store, sha256, max_side, "jpg")
    # the large views are what quality is judged on: a near-lossless JPEG there
    quality = JPEG_QUALITY_LARGE if max_side >= 1024 else JPEG_QUALITY
    return _atomic_write(target, lambda fh: im.save(fh, "JPEG", quality=quality))


def thumbnail(store: Store, sha256: str, max_side: int) -> Path:
    """Path of a copy of stored image ``sha256`` whose longer side is at most ``max_side``.

    Returns the cached file when there is one (without opening the original), else the
    original media path when it is already small enough and browser-viewable, else makes,
    caches and returns the thumbnail. Raises :class:`KeyError` for an unknown image.
    """
    _check_sha(sha256)
    _check_size(max_side)
    for ext in ("jpg", "png"):
        cached = thumbnail_path(store, sha256, max_side, ext)
        if _cached(cached):
            return cached
    source = store.file_path(sha256)
    fmt, width, height, keeps_png = _header(str(source))
    # Served as it is only when the browser would get these bytes anyway: a JPEG, or a
    # PNG/GIF/WebP with transparency or a palette. An opaque PNG would be re-encoded to
    # JPEG by st.image on every page run (~30 ms for 1024x1024): cache that JPEG once.
    if max(width, height) <= max_side and (fmt == "JPEG"
                                           or (fmt in BROWSER_FORMATS and keeps_png)):
        return source
    return _make_thumbnail(source, store, sha256, max_side)


def thumbnail_bytes(store: Store, sha256: str, max_side: int) -> bytes:
    """The bytes of :func:`thumbnail` (ready for ``st.image``)."""
    return thumbnail(store, sha256, max_side).read_bytes()


# ================================================================================= shapes


@dataclass(frozen=True)
class Box:
    """A layout box: ``box`` is normalized ``(x0, y0, x1, y1)``; ``color`` ``"#RRGGBB"``."""

    subject: str
    box: tuple[float, float, float, float]
    color: str


@dataclass(frozen=True)
class Arrow:
    """A VIF arrow: ``kind`` ``wind`` or ``light``, normalized ``start`` -> ``end``."""

    kind: str
    start: tuple[float, float]
    end: tuple[float, float]


Shape = Box | Arrow

_BOX_KEYS = ("box", "bbox", "bounding_box", "rect", "xyxy", "coords", "region")
_NAME_KEYS = ("subject", "name", "label", "object", "entity")
_CANVAS_KEYS = ("canvas_size", "canvas", "image_size")
_LIST_KEYS = ("boxes", "items", "subjects", "objects", "layout", "arrows")
_START_KEYS = ("start", "from", "source", "tail", "p0")
_END_KEYS = ("end", "to", "target", "head", "p1")


def _num(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        v = float(value)
    elif isinstance(value, str):
        try:
            v = float(value)
        except ValueError:
            return None
    else:
        return None
    return v if math.isfinite(v) else None


def _nums(values: Any, n: int) -> tuple[float, ...] | None:
    if not isinstance(values, (list, tuple)) or len(values) != n:
        return None
    out = tuple(_num(v) for v in values)
    return None if any(v is None for v in out) else out  # type: ignore[return-value]


def _first(item: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for key in keys:
        if key in item and item[key] is not None:
            return item[key]
    return None


def _point(value: Any) -> tuple[float, float] | None:
    if isinstance(value, Mapping):
        value = [value.get("x"), value.get("y")]
    p = _nums(value, 2)
    return (p[0], p[1]) if p else None


def _rect(value: Any) -> tuple[float, float, float, float] | None:
    """``[x0, y0, x1, y1]``, ``[[x0, y0], [x1, y1]]`` or a dict of corners / x, y, w, h."""
    r: tuple[float, ...] | None = None
    if isinstance(value, (list, tuple)) and len(value) == 2:
        a, b = _point(value[0]), _point(value[1])
        r = (*a, *b) if a and b else None
    elif isinstance(value, (list, tuple)):
        r = _nums(value, 4)
    elif isinstance(value, Mapping):
        for keys in (("x0", "y0", "x1", "y1"), ("xmin", "ymin", "xmax", "ymax"),
                     ("left", "top", "right", "bottom")):
            r = _nums([value.get(k) for k in keys], 4)
            if r:
                break
        else:
            xywh = _nums([value.get("x"), value.get("y"),
                          value.get("w", value.get("width")),
                          value.get("h", value.get("height"))], 4)
            if xywh:
                r = (xywh[0], xywh[1], xywh[0] + xywh[2], xywh[1] + xywh[3])
    if not r:
        return None
    x0, x1 = sorted((r[0], r[2]))
    y0, y1 = sorted((r[1], r[3]))
    return x0, y0, x1, y1


def _canvas(*containers: Any) -> tuple[float, float]:
    """The canvas size pixel coordinates refer to: the first one a container names."""
    for container in containers:
        if not isinstance(container, Mapping):
            continue
        value = _first(container, _CANVAS_KEYS)
        if value is None:
            continue
        if isinstance(value, Mapping):
            value = [value.get("width", value.get("w")), value.get("height", value.get("h"))]
        side = _num(value)
        wh = (side, side) if side else _nums(value, 2)
        if wh and wh[0] and wh[1] and wh[0] > 0 and wh[1] > 0:
            return float(wh[0]), float(wh[1])
    return float(CANVAS_SIZE), float(CANVAS_SIZE)


def _normalize(xy: Sequence[float], canvas: tuple[float, float]) -> tuple[float, ...]:
    """Pixel coordinates (any value > :data:`PIXEL_THRESHOLD`) to 0..1; others kept."""
    if max(abs(v) for v in xy) <= PIXEL_THRESHOLD:
        return tuple(xy)
    return tuple(v / canvas[i % 2] for i, v in enumerate(xy))


def _color(value: Any, index: int) -> str:
    if isinstance(value, str):
        try:
            rgb = ImageColor.getrgb(value.strip())
            return "#{:02X}{:02X}{:02X}".format(*rgb[:3])
        except ValueError:
            pass
    if isinstance(value, (list, tuple)) and len(value) in (3, 4):
        rgb = _nums(list(value[:3]), 3)
        if rgb and all(0 <= v <= 255 for v in rgb):
            return "#{:02X}{:02X}{:02X}".format(*(round(v) for v in rgb))
    return subject_color(index)


def _entries(raw: Any, hint: str | None = None) -> Iterator[tuple[str | None, Any]]:
    """``(name hint, item)`` pairs of a list, or of a dict keyed by name."""
    if isinstance(raw, (list, tuple)):
        for item in raw:
            yield hint, item
    elif isinstance(raw, Mapping):
        for key in _LIST_KEYS:
            if isinstance(raw.get(key), (list, tuple, Mapping)):
                yield from _entries(raw[key], hint)
                return
        for key, item in raw.items():
            if key not in _CANVAS_KEYS:
                yield str(key), item


def _layout(raw: Any, meta: Mapping[str, Any]) -> list[Box]:
    canvas = _canvas(raw, meta)
    boxes: list[Box] = []
    if isinstance(raw, Mapping) and _rect(_first(raw, _BOX_KEYS)) is not None:
        raw = [raw]  # one box given as a single item
    for hint, item in _entries(raw):
        try:
            if isinstance(item, Mapping):
                rect = _rect(_first(item, _BOX_KEYS)) or _rect(item)
                name = _first(item, _NAME_KEYS)
                if name is None and _num(item.get("image")) is not None:
                    name = f"Image_{int(item['image'])}"
                color = _first(item, ("color", "colour"))
            else:
                rect, name, color = _rect(item), None, None
            if rect is None:
                continue
            x0, y0, x1, y1 = _normalize(rect, canvas)
            if not (x1 > x0 and y1 > y0):
                continue
            label = str(name if name is not None else hint or f"subject {len(boxes)}")
            boxes.append(Box(label, (x0, y0, x1, y1), _color(color, len(boxes))))
        except (TypeError, ValueError, KeyError, OverflowError):
            continue
    return boxes


def _arrow_kind(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    word = value.strip().lower()
    kinds = [k for k in ARROW_COLORS if k in word]
    return kinds[0] if len(kinds) == 1 else None


def _one_arrow(item: Any, hint: str | None) -> tuple[str, tuple[float, ...]] | None:
    """``(kind, (sx, sy, ex, ey))`` of an arrow item, or None."""
    if isinstance(item, Mapping):
        kind = _arrow_kind(_first(item, ("kind", "type", "name"))) or _arrow_kind(hint)
        start, end = _point(_first(item, _START_KEYS)), _point(_first(item, _END_KEYS))
        if (start is None or end is None) and _first(item, ("points", "line")) is not None:
            pts = _first(item, ("points", "line"))
            if isinstance(pts, (list, tuple)) and len(pts) == 2:
                start, end = _point(pts[0]), _point(pts[1])
        if kind is None or start is None or end is None:
            return None
        return kind, (*start, *end)
    kind = _arrow_kind(hint)
    if kind is None or not isinstance(item, (list, tuple)):
        return None
    flat = _nums(item, 4)
    if flat is None and len(item) == 2:
        a, b = _point(item[0]), _point(item[1])
        flat = (*a, *b) if a and b else None
    return (kind, flat) if flat else None


def _arrows(raw: Any, meta: Mapping[str, Any]) -> list[Arrow]:
    canvas = _canvas(raw, meta)
    if isinstance(raw, Mapping) and _first(raw, ("kind", "type")) is not None:
        raw = [raw]  # a single arrow
    found: list[tuple[str, tuple[float, ...]]] = []
    for hint, item in _entries(raw):
        try:
            one = _one_arrow(item, hint)
            if one is not None:
                found.append(one)
            elif isinstance(item, (list, tuple)) and _arrow_kind(hint):
                # {"wind": [arrow, arrow, ...]}: several arrows of one kind
                found.extend(a for sub in item if (a := _one_arrow(sub, hint)) is not None)
        except (TypeError, ValueError, KeyError, OverflowError):
            continue
    arrows = []
    for kind, xy in found:
        sx, sy, ex, ey = _normalize(xy, canvas)
        if (sx, sy) != (ex, ey):
            arrows.append(Arrow(kind, (sx, sy), (ex, ey)))
    return arrows


def overlay_layers(task_meta: Any) -> list[Shape]:
    """The drawable VI guides of a task's ``meta``: layout :class:`Box` es, then :class:`Arrow` s.

    ``task_meta`` is the task's meta dict (or its JSON text, as stored). Read:

    * ``layout`` (or ``boxes``): a list of items with a box under ``box``/``bbox``/...
      (``[x0, y0, x1, y1]``, two corner points, or a dict of corners or x/y/w/h), a name
      under ``subject``/``name``/``label`` (else ``Image_<image>`` or the dict key) and an
      optional ``color``; or a dict ``{name: box}`` (the VIF-Bench ``layout.json`` form);
    * ``arrows`` (or ``arrow``): a list of ``{kind, start, end}`` (also ``type``,
      ``from``/``to``, ``points``), one such dict, or a dict keyed by kind
      (``{"wind": [[x, y], [x, y]], "light": {...}}``). Kinds other than wind and light are
      ignored.

    Missing colours follow :func:`annotation.vi_draw.subject_color` by box order. Anything
    unreadable is skipped; this function does not raise on odd meta.
    """
    try:
        meta = json.loads(task_meta) if isinstance(task_meta, (str, bytes)) else task_meta
    except ValueError:
        return []
    if not isinstance(meta, Mapping):
        return []
    shapes: list[Shape] = []
    for keys, reader in ((("layout", "boxes"), _layout), (("arrows", "arrow"), _arrows)):
        raw = _first(meta, keys)
        if raw is None:
            continue
        try:
            shapes.extend(reader(raw, meta))
        except Exception:  # odd meta must never break the page
            continue
    return shapes


# ================================================================================ drawing


def _rgb(color: str) -> tuple[int, int, int]:
    r, g, b = ImageColor.getrgb(color)[:3]
    return r, g, b


def _font(px: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=max(10, px))


def _draw_arrow(draw: ImageDraw.ImageDraw, arrow: Arrow, w: int, h: int) -> None:
    side = min(w, h)
    sx, sy = arrow.start[0] * w, arrow.start[1] * h
    ex, ey = arrow.end[0] * w, arrow.end[1] * h
    length = math.hypot(ex - sx, ey - sy)
    if length < 1:
        return
    ux, uy = (ex - sx) / length, (ey - sy) / length
    width = max(3, round(side / 120))
    border = max(1, width // 3)
    head_len = min(length * 0.45, side * 0.06)
    head_half = head_len * 0.6
    bx, by = ex - ux * head_len, ey - uy * head_len
    head = [
        (ex, ey),
        (bx - uy * head_half, by + ux * head_half),
        (bx + uy * head_half, by - ux * head_half),
    ]
    r = width * 0.9
    rgb = _rgb(ARROW_COLORS[arrow.kind])
    for fill, grow in (((0, 0, 0), border), (rgb, 0)):  # a dark rim, then the colour
        draw.line([(sx, sy), (bx + ux, by + uy)], fill=fill, width=width + 2 * grow)
        draw.ellipse([sx - r - grow, sy - r - grow, sx + r + grow, sy + r + grow], fill=fill)
        draw.polygon(head, fill=fill, outline=fill, width=max(1, 2 * grow))


def draw_overlay(image: Image.Image, shapes: Iterable[Shape], alpha: float = 0.35) -> Image.Image:
    """Draw ``shapes`` over a copy of ``image``; the input is left untouched.

    Boxes: filled with their colour at opacity ``alpha``, a solid outline, and the subject
    name on a small white tab in the box's top-left corner. Arrows: cyan (wind) or yellow
    (light) with a thin dark rim, a round tail at the start and a head at the end.
    Normalized coordinates are scaled to the image's width and height. The result is RGB,
    or RGBA when ``image`` has transparency.
    """
    shapes = list(shapes)
    keep_alpha = _has_alpha(image)
    out = image.convert("RGBA")
    w, h = out.size
    side = min(w, h)
    a = round(255 * min(1.0, max(0.0, float(alpha))))
    boxes = [s for s in shapes if isinstance(s, Box)]
    rects: list[tuple[tuple[int, int, int, int], tuple[int, int, int], str]] = []
    for box in boxes:
        x0, y0, x1, y1 = box.box
        rect = (
            min(max(round(x0 * w), 0), w),
            min(max(round(y0 * h), 0), h),
            min(max(round(x1 * w), 0), w),
            min(max(round(y1 * h), 0), h),
        )
        if rect[2] <= rect[0] or rect[3] <= rect[1]:
            continue
        rgb = _rgb(box.color)
        if a:
            tile = Image.new("RGBA", (rect[2] - rect[0], rect[3] - rect[1]), (*rgb, a))
            out.alpha_composite(tile, dest=(rect[0], rect[1]))
        rects.append((rect, rgb, box.subject))
    draw = ImageDraw.Draw(out)
    line_w = max(2, round(side / 256))
    for rect, rgb, _label in rects:
        draw.rectangle((rect[0], rect[1], rect[2] - 1, rect[3] - 1), outline=rgb, width=line_w)
    for arrow in shapes:
        if isinstance(arrow, Arrow) and arrow.kind in ARROW_COLORS:
            _draw_arrow(draw, arrow, w, h)
    font = _font(round(side / 40))
    pad = max(2, side // 256)
    for rect, rgb, label in rects:
        left, top, right, bottom = draw.textbbox((0, 0), label, font=font)
        tab_w, tab_h = right - left + 2 * pad, bottom - top + 2 * pad
        tx = min(rect[0] + line_w, max(0, w - tab_w))
        ty = rect[1] + line_w
        draw.rectangle((tx, ty, tx + tab_w, ty + tab_h), fill="white")
        draw.text((tx + pad - left, ty + pad - top), label, fill=rgb, font=font)
    return out if keep_alpha else out.convert("RGB")


def shapes_key(shapes: Iterable[Shape], alpha: float = 0.35) -> str:
    """A short stable hash of ``shapes`` (and the drawing version): the overlay cache key."""
    payload = json.dumps(
        {
            "v": OVERLAY_VERSION,
            "alpha": round(float(alpha), 4),
            "shapes": [[type(s).__name__, asdict(s)] for s in shapes],
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def overlay_png(
    store: Store,
    output_sha256: str,
    task_meta: Any,
    max_side: int = LARGE_SIZE,
    *,
    alpha: float = 0.35,
) -> bytes:
    """PNG bytes of the output ``output_sha256`` at ``max_side`` with the task's VI overlay.

    Cached in ``<media_dir>/overlays/<max_side>/<sha256>-<shapes_key>.png`` (written
    atomically), so a change of the task's layout or arrows gives a new file.
    """
    _check_sha(output_sha256)
    _check_size(max_side)
    shapes = overlay_layers(task_meta)
    target = (
        store.media_dir
        / OVERLAYS_DIR
        / str(max_side)
        / f"{output_sha256}-{shapes_key(shapes, alpha)}.png"
    )
    if _cached(target):
        return target.read_bytes()
    source = thumbnail(store, output_sha256, max_side)
    with Image.open(source) as opened:
        im = ImageOps.exif_transpose(opened)
        drawn = draw_overlay(im, shapes, alpha)
    buffer = io.BytesIO()
    drawn.save(buffer, "PNG", compress_level=3)
    data = buffer.getvalue()
    _atomic_write(target, lambda fh: fh.write(data))
    return data


# ================================================================================ compare


def _on_white(im: Image.Image) -> Image.Image:
    if _has_alpha(im):
        rgba = im.convert("RGBA")
        flat = Image.new("RGB", rgba.size, "white")
        flat.paste(rgba, mask=rgba.getchannel("A"))
        return flat
    return im.convert("RGB")


def side_by_side(
    left: Image.Image, right: Image.Image, height: int = 768, gap: int = 16
) -> Image.Image:
    """``left`` and ``right`` scaled to ``height`` (aspect kept, LANCZOS), a white gap between.

    Transparent areas are shown on white. Returns a new RGB image.
    """
    if height < 1 or gap < 0:
        raise ValueError(f"height must be >= 1 and gap >= 0, got {height}, {gap}")
    parts = []
    for im in (left, right):
        flat = _on_white(im)
        width = max(1, round(flat.width * height / flat.height))
        parts.append(flat.resize((width, height), Image.Resampling.LANCZOS))
    canvas = Image.new("RGB", (parts[0].width + gap + parts[1].width, height), "white")
    canvas.paste(parts[0], (0, 0))
    canvas.paste(parts[1], (parts[0].width + gap, 0))
    return canvas
