"""Images for the annotation pages: what the browser gets, VI overlays.

Pure functions over Pillow images plus a disk cache beside the project's media folder; no
Streamlit here, so the page code stays thin and everything is testable without a browser.

**What a browser gets** (:func:`browser_image`). Every image any page shows (the strip of
references and visual instructions, the output large, the enlarge view, overlays,
the verification and tree pages) comes from this one function, as bytes for ``st.image``.
It never hands out the imported file: the image is decoded and **re-encoded from its
pixels**, at any size, small images included, so no byte of the original reaches a browser:

* no EXIF (camera make, model, software), XMP, ICC profile, PNG text chunks (``tEXt``,
  ``iTXt``, ``zTXt``), JPEG comments, nor anything appended after the image data (HTML after
  ``IEND``): the encoder is given a fresh image made of pixels only;
* the EXIF orientation is applied before, so what is seen is what the camera meant; an
  embedded ICC profile is converted to sRGB (then dropped), so colours stay right;
* **PNG** when the source has transparency or a palette (mode ``RGBA``, ``LA``, ``P``,
  ``PA``, ``1`` or a ``transparency`` entry), so edges and alpha stay exact; **JPEG** quality
  88 otherwise (95 for the large views, 1024 px and more, where quality is judged);
* **generated outputs** (``generated=True``: the output large, the enlarge view, tree nodes,
  overlays) are all served alike, whatever the generator wrote: JPEG (alpha flattened on
  white), the longer side exactly ``max_side`` (scaled up when smaller), so neither the
  file format nor the resolution of the bytes can tell one generator from another in a
  blind study (:func:`generated_thumbnail`); only the aspect ratio, which is part of the
  picture itself, stays;
* an image that cannot be read (a moved media folder, a damaged file, an unknown image)
  becomes a drawn placeholder, "image unavailable", for that image only; the error, with
  its paths, goes to the server log (logger ``annotation.ui.render``), never to the page.

**The cache** (:func:`thumbnail`, :func:`thumbnail_bytes`). A page shows up to 7 references
and 6 visual instructions (256 px), the output large (1024 px) and an enlarge view (2048
px); decoding 14 full-size images on every rerun is what makes a page slow, so each
(image, size) is re-encoded once and kept in ``<media_dir>/served/<max_side>/<sha256>.<ext>``:

* the key is the SHA-256 of the imported file and the size, so a cached file never goes
  stale (media files are content-addressed and never change). The name is never shown to
  a browser: pages pass the bytes to ``st.image``, whose URL is a hash of the re-encoded
  bytes, and errors are logged, not displayed; so the name, like the media file's own
  name, reveals nothing to annotators. It is derived from content only, never from task,
  output or generator ids;
* a cache hit is two ``stat`` calls: the original is not opened;
* aspect is kept and images are never upscaled (LANCZOS);
* files are written to a unique temporary name in the same folder and moved into place
  with :func:`os.replace`, so concurrent sessions see either no file or a whole one.

(``served/`` replaced the ``thumbs/`` folder of earlier versions, whose small images were
the originals and whose copies kept JPEG comments and PNG ICC profiles: it is not read, and
may be deleted.)

**Memory** (:func:`decode_for_display`). One image costs at most its decoded pixels (4
bytes a pixel, 256 MB at the 64-megapixel import limit :data:`annotation.formats.images.MAX_PIXELS`;
larger files are refused before decoding) plus a reduced copy: JPEGs are decoded at reduced
scale (``Image.draft``: 1/2 to 1/8) when they are larger than needed; other formats are
decoded once, reduced by an integer factor (``Image.reduce``), and any conversion (a
palette to RGBA, alpha premultiplied for resampling) is done strip by strip on the reduced
rows, never on a full-size copy; only the reduced image is resampled, oriented and
converted to sRGB. ``benchmarks/image_memory.py`` measures it against a bare Pillow decode.

Tip for the page: pass ``output_format`` (the image's :attr:`BrowserImage.format`) to
``st.image``, or it re-encodes an RGB PNG to JPEG; it also shrinks anything wider than
1460 px (from the clean bytes, so nothing comes back).

**Overlays** (:func:`overlay_layers`, :func:`draw_overlay`, :func:`overlay_png`). VIF-Bench
visual instructions (layout boxes, wind/light arrows) are read from a task's ``meta`` and
drawn over a copy of the output, so an annotator sees at once whether a subject landed in
its box. Coordinates are normalized (0..1) to the image; a shape with a coordinate > 1.5
is read as pixels on the layout canvas (1024x1024 in VIF-Bench, or ``canvas_size`` /
``canvas`` / ``image_size`` in the meta). Orientation pyramids are not overlaid: a yaw has
no honest 2D drawing on top of the output; the VI strip shows the pyramid itself.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import logging
import math
import os
import re
import uuid
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PIL import Image, ImageColor, ImageDraw, ImageFont

from annotation.formats.images import MAX_PIXELS, BadImage
from annotation.vif.draw import ARROW_COLORS, subject_color

if TYPE_CHECKING:
    from annotation.store import Store

_LOG = logging.getLogger(__name__)

#: Sizes (longer side, px) the annotation page asks for: the reference strip, the output,
#: the output enlarged.
STRIP_SIZE, LARGE_SIZE, ENLARGE_SIZE = 256, 1024, 2048
#: Sizes the verification page (an image of a conflict check) and the tree review page (a
#: node's image) ask for.
CHECK_SIZE, NODE_SIZE = 384, 512
#: Cache folders under the media folder (re-encoded images; overlays).
THUMBS_DIR = "served"
OVERLAYS_DIR = "served-overlays"
JPEG_QUALITY = 88
JPEG_QUALITY_LARGE = 95
#: ``Image.reduce`` first by an integer factor, leaving at least this much to LANCZOS.
REDUCING_GAP = 2.0
#: Rows converted at a time when a mode change is needed (about this many bytes a strip).
STRIP_BYTES = 8 * 1024 * 1024
#: Side of the VIF-Bench layout canvas, for pixel coordinates.
CANVAS_SIZE = 1024
#: A coordinate above this is a pixel coordinate, not a normalized one.
PIXEL_THRESHOLD = 1.5
#: Bumped when the drawing changes, so cached overlays of the old drawing are not reused.
OVERLAY_VERSION = 2

_SHA256 = re.compile(r"[0-9a-f]{64}")
_ALPHA_MODES = frozenset({"RGBA", "LA", "PA", "RGBa", "La"})
_PREMULTIPLIED = {"RGBA": "RGBa", "LA": "La"}
_ORIENTATION = 0x0112
_TRANSPOSE = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}


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


def _has_alpha(im: Image.Image) -> bool:
    """Whether ``im`` has an alpha band or a transparent colour."""
    return im.mode in _ALPHA_MODES or "transparency" in im.info


def _keeps_png(im: Image.Image) -> bool:
    """Transparency or a palette: served as PNG, so edges and alpha stay exact."""
    return _has_alpha(im) or im.mode in ("P", "1")


def _display_mode(im: Image.Image) -> str:
    """The mode an image is shown in: RGBA or LA with transparency, else RGB or L."""
    if _has_alpha(im):
        return "LA" if im.mode in ("L", "LA", "La") else "RGBA"
    if im.mode in ("RGB", "L"):
        return im.mode
    return "L" if im.mode == "1" else "RGB"


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
    """Where the ``max_side`` re-encoded copy of ``sha256`` is cached, for extension ``ext``."""
    return store.media_dir / THUMBS_DIR / str(max_side) / f"{sha256}.{ext}"


def _target_size(width: int, height: int, max_side: int) -> tuple[int, int]:
    """``(width, height)`` scaled so the longer side is at most ``max_side`` (never up)."""
    scale = min(max_side / width, max_side / height, 1.0)
    return max(1, round(width * scale)), max(1, round(height * scale))


def _reduced(im: Image.Image, mode: str, factor: int) -> Image.Image:
    """``im`` converted to ``mode`` and reduced by ``factor`` (box average), strip by strip:
    a strip of rows is converted, reduced and pasted, so no full-size converted copy is ever
    made. The same pixels as ``im.convert(mode).reduce(factor)``."""
    width, height = im.size
    out = Image.new(mode, (-(-width // factor), -(-height // factor)))
    rows = max(factor, STRIP_BYTES // (4 * width) // factor * factor)
    for top in range(0, height, rows):
        strip = im.crop((0, top, width, min(height, top + rows)))
        if strip.mode != mode:
            direct = mode if mode not in ("RGBa", "La") else {"RGBa": "RGBA", "La": "LA"}[mode]
            strip = strip.convert(direct)
            if strip.mode != mode:
                strip = strip.convert(mode)
        if factor > 1:
            strip = strip.reduce(factor)
        out.paste(strip, (0, top // factor))
    return out


def _shrink(im: Image.Image, max_side: int) -> Image.Image:
    """``im`` (loaded) at most ``max_side`` on its longer side, in its display mode.

    Without a mode change: reduced by an integer factor leaving :data:`REDUCING_GAP` to
    LANCZOS (what ``Image.thumbnail`` does). With one (palette, alpha, ...): converted and
    reduced strip by strip (:func:`_reduced`), as far as an integer factor goes, then
    LANCZOS on the reduced image. Alpha is resampled premultiplied.
    """
    shown = _display_mode(im)
    work = _PREMULTIPLIED.get(shown, shown)
    size = _target_size(im.width, im.height, max_side)
    ratio = min(im.width / size[0], im.height / size[1])
    if im.mode == work:
        factor = int(ratio / REDUCING_GAP)
        small = im.reduce(factor) if factor >= 2 else im
    else:
        small = _reduced(im, work, max(1, int(ratio)))
    if small.size != size:
        small = small.resize(size, Image.Resampling.LANCZOS)
    return small.convert(shown) if small.mode != shown else small


def _to_srgb(im: Image.Image, icc: bytes | None) -> Image.Image:
    """``im`` converted from its embedded ICC profile to sRGB (unchanged without one, or
    when the profile does not fit the image)."""
    if not icc:
        return im
    try:
        from PIL import ImageCms

        source = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        srgb = ImageCms.createProfile("sRGB")
        converted = ImageCms.profileToProfile(im, source, srgb, outputMode=im.mode)
        return converted if converted is not None else im
    except Exception as exc:  # a broken or unsupported profile: keep the pixels as they are
        _LOG.debug("ICC profile not applied: %s", exc)
        return im


def decode_for_display(source: Path, max_side: int) -> Image.Image:
    """The pixels of the image file ``source``, at most ``max_side`` on the longer side,
    oriented (EXIF), in sRGB, mode RGB, RGBA, L or LA, and nothing else: a fresh image
    without ``info`` (no EXIF, ICC, text, comment), without a palette.

    Memory: the decoded pixels (JPEG at reduced scale via ``draft``) plus the reduced image;
    see the module docstring. Raises :class:`annotation.formats.images.BadImage` for an image over
    :data:`annotation.formats.images.MAX_PIXELS` (checked from the header), and whatever Pillow
    raises for a file it cannot read.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        with Image.open(source) as im:
            if im.width * im.height > MAX_PIXELS:
                raise BadImage(f"{im.width}x{im.height} pixels, over the limit of {MAX_PIXELS}")
            # JPEG: decode at the smallest of 1/2..1/8 scale still at least max_side (the
            # scaled inverse DCT is itself a proper low-pass filter)
            im.draft(None, (max_side, max_side))
            im.load()
            orientation = im.getexif().get(_ORIENTATION, 1)
            icc = im.info.get("icc_profile")
            small = _shrink(im, max_side)
    small = _to_srgb(small, icc)
    if orientation in _TRANSPOSE:
        small = small.transpose(_TRANSPOSE[orientation])
    return Image.frombytes(small.mode, small.size, small.tobytes())  # pixels only


def _encode(im: Image.Image, as_png: bool, max_side: int) -> tuple[bytes, str]:
    """``im`` (pixels only, see :func:`decode_for_display`) as PNG or JPEG bytes."""
    buffer = io.BytesIO()
    if as_png:
        im.save(buffer, "PNG", compress_level=3)
        return buffer.getvalue(), "png"
    # the large views are what quality is judged on: a near-lossless JPEG there
    quality = JPEG_QUALITY_LARGE if max_side >= LARGE_SIZE else JPEG_QUALITY
    im.save(buffer, "JPEG", quality=quality)
    return buffer.getvalue(), "jpg"


def _source_keeps_png(source: Path) -> bool:
    with Image.open(source) as im:  # the header only
        return _keeps_png(im)


def _make_thumbnail(source: Path, store: Store, sha256: str, max_side: int) -> Path:
    as_png = _source_keeps_png(source)
    data, ext = _encode(decode_for_display(source, max_side), as_png, max_side)
    target = thumbnail_path(store, sha256, max_side, ext)
    return _atomic_write(target, lambda fh: fh.write(data))


def thumbnail(store: Store, sha256: str, max_side: int) -> Path:
    """Path of the cached copy of stored image ``sha256``, re-encoded from its pixels, whose
    longer side is at most ``max_side``: never the imported file itself.

    Returns the cached file when there is one (without opening the original), else makes,
    caches and returns it. Raises :class:`KeyError` for an unknown image, and what
    :func:`decode_for_display` raises for one that cannot be read.
    """
    _check_sha(sha256)
    _check_size(max_side)
    for ext in ("jpg", "png"):
        cached = thumbnail_path(store, sha256, max_side, ext)
        if _cached(cached):
            return cached
    return _make_thumbnail(store.file_path(sha256), store, sha256, max_side)


def uniform_output(im: Image.Image, max_side: int) -> Image.Image:
    """A generated output as every generator's is served: RGB (transparency flattened on
    white) with the longer side exactly ``max_side`` (LANCZOS, up or down), aspect kept."""
    if _has_alpha(im):
        rgba = im.convert("RGBA")
        flat = Image.new("RGB", rgba.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        im = flat
    elif im.mode != "RGB":
        im = im.convert("RGB")
    scale = max_side / max(im.size)
    size = (max(1, round(im.width * scale)), max(1, round(im.height * scale)))
    return im if size == im.size else im.resize(size, Image.Resampling.LANCZOS)


def generated_thumbnail(store: Store, sha256: str, max_side: int) -> Path:
    """Path of the cached copy of generated output ``sha256`` at ``max_side``, served alike
    for every generator (:func:`uniform_output`, always JPEG): never the imported file."""
    _check_sha(sha256)
    _check_size(max_side)
    target = thumbnail_path(store, sha256, max_side, "output.jpg")
    if _cached(target):
        return target
    pixels = uniform_output(decode_for_display(store.file_path(sha256), max_side), max_side)
    data, _ = _encode(pixels, False, max_side)
    return _atomic_write(target, lambda fh: fh.write(data))


def thumbnail_bytes(store: Store, sha256: str, max_side: int) -> bytes:
    """The bytes of :func:`thumbnail`."""
    return thumbnail(store, sha256, max_side).read_bytes()


@dataclass(frozen=True)
class BrowserImage:
    """Bytes for ``st.image``: ``format`` is ``"PNG"`` or ``"JPEG"`` (give it to ``st.image``
    as ``output_format``); ``available`` is False for the placeholder."""

    data: bytes
    format: str
    available: bool = True

    def pil(self) -> Image.Image:
        """The image, decoded (for a chart that needs pixels)."""
        with Image.open(io.BytesIO(self.data)) as im:
            im.load()
            return im.copy()


@functools.lru_cache(maxsize=32)
def placeholder_png(max_side: int) -> bytes:
    """A drawn "image unavailable" card (PNG), 4:3, at most ``max_side`` and 640 px wide."""
    width = max(64, min(max_side, 640))
    height = width * 3 // 4
    im = Image.new("RGB", (width, height), (236, 236, 236))
    draw = ImageDraw.Draw(im)
    edge = max(1, width // 160)
    draw.rectangle((0, 0, width - 1, height - 1), outline=(170, 170, 170), width=edge)
    draw.line((0, 0, width - 1, height - 1), fill=(210, 210, 210), width=edge)
    draw.line((0, height - 1, width - 1, 0), fill=(210, 210, 210), width=edge)
    font = _font(max(10, width // 14))
    text = "image unavailable"
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    x, y = (width - (right - left)) / 2 - left, (height - (bottom - top)) / 2 - top
    pad = width // 40
    draw.rectangle((x + left - pad, y + top - pad, x + right + pad, y + bottom + pad),
                   fill=(236, 236, 236))
    draw.text((x, y), text, fill=(90, 90, 90), font=font)
    buffer = io.BytesIO()
    im.save(buffer, "PNG")
    return buffer.getvalue()


_logged: set[tuple[str, int, str]] = set()


def browser_image(store: Store, sha256: str | None, max_side: int, *,
                  task_meta: Any = None, generated: bool = False) -> BrowserImage:
    """What a browser is given for stored image ``sha256`` at ``max_side``: re-encoded from
    its pixels (:func:`thumbnail`; a generated output, ``generated=True``, the same way for
    every generator: :func:`generated_thumbnail`), or with ``task_meta`` the output with its
    VI overlay drawn (:func:`overlay_png`). Never raises for an image that cannot be
    shown: that image becomes the placeholder (:func:`placeholder_png`,
    ``available=False``) and the error is logged on the server (once per image, size and
    kind of error and process)."""
    try:
        if sha256 is None:
            raise KeyError("no image")
        if task_meta is not None:
            return BrowserImage(overlay_png(store, sha256, task_meta, max_side), "PNG")
        if generated:
            return BrowserImage(generated_thumbnail(store, sha256, max_side).read_bytes(),
                                "JPEG")
        path = thumbnail(store, sha256, max_side)
        return BrowserImage(path.read_bytes(), "PNG" if path.suffix == ".png" else "JPEG")
    except Exception as exc:  # never let one image break the page
        key = (str(sha256), max_side, type(exc).__name__)
        level = logging.DEBUG if key in _logged else logging.WARNING
        _logged.add(key)
        _LOG.log(level, "image %s at %d px is unavailable, showing a placeholder: %s: %s",
                 sha256, max_side, type(exc).__name__, exc)
        return BrowserImage(placeholder_png(max_side), "PNG", available=False)


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
        nums = _nums(list(value[:3]), 3)
        if nums and all(0 <= v <= 255 for v in nums):
            return "#{:02X}{:02X}{:02X}".format(*(round(v) for v in nums))
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

    Missing colours follow :func:`annotation.vif.draw.subject_color` by box order. Anything
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

    Drawn on the re-encoded copy (:func:`thumbnail`) and encoded from pixels only, like
    every served image. Cached in ``<media_dir>/served-overlays/<max_side>/<sha256>-<shapes
    key>.png`` (written atomically), so a change of the task's layout or arrows gives a new
    file.
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
    source = generated_thumbnail(store, output_sha256, max_side)  # as every output is served
    with Image.open(source) as opened:
        drawn = draw_overlay(opened, shapes, alpha)
    clean = Image.frombytes(drawn.mode, drawn.size, drawn.tobytes())  # pixels only
    buffer = io.BytesIO()
    clean.save(buffer, "PNG", compress_level=3)
    data = buffer.getvalue()
    _atomic_write(target, lambda fh: fh.write(data))
    return data
