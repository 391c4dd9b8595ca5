"""Image files: safe path resolution inside a bundle, and checked decoding.

Two rules protect the store from hostile or broken bundles:

* a path named by a bundle must stay inside the bundle folder: no absolute paths, no
  ``..`` components, no symlink that resolves outside, and never a link to the project's
  own database files (:func:`resolve_inside`, :func:`annotation.store.guard.file_problem`);
* a file is accepted as an image only if Pillow decodes it completely, it is one of the
  formats in :data:`FORMATS`, and it has at most :data:`MAX_PIXELS` pixels, checked from
  the header *before* decoding, so a decompression bomb is refused without being
  expanded (:func:`probe_image`).
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path, PurePosixPath

from PIL import Image

from annotation.records import ImageFile
from annotation.store import guard

MAX_PIXELS = 64_000_000
MAX_IMAGE_BYTES = 256 * 1024 * 1024
MAX_NAME_BYTES = 255  # one path component (NAME_MAX on Linux, macOS and Windows)
FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP", "TIFF")
class BadPath(ValueError):
    """A path that is not allowed or not found; the message says which."""


class BadImage(ValueError):
    """A file that is not an acceptable image; the message says why."""


def resolve_inside(root: Path, relative: str) -> Path:
    """Return ``root/relative`` if it is a file that stays inside ``root``.

    Refuses absolute paths, Windows drive paths, ``..`` components, backslashes, lone
    surrogates, components over :data:`MAX_NAME_BYTES` bytes, paths the operating system
    cannot look up, and symlinks (at any level) that resolve outside ``root``; every
    refusal is a :class:`BadPath`.
    """
    if not isinstance(relative, str) or not relative.strip():
        raise BadPath("empty path")
    if "\x00" in relative:
        raise BadPath("path contains a NUL character")
    if relative.startswith(("/", "\\")) or (len(relative) > 1 and relative[1] == ":"):
        raise BadPath(f"absolute path not allowed: {relative!r}")
    if "\\" in relative:
        raise BadPath(f"use '/' as the path separator: {relative!r}")
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: no file system can name it
        raise BadPath(f"path is not valid Unicode text (lone surrogate "
                      f"U+{ord(relative[exc.start]):04X} at character {exc.start}): "
                      f"{_short(relative)}") from None
    parts = PurePosixPath(relative).parts
    if ".." in parts:
        raise BadPath(f"path leaves the bundle: {relative!r}")
    for part in parts:
        size = len(part.encode("utf-8"))
        if size > MAX_NAME_BYTES:
            raise BadPath(f"path component of {size} bytes, more than {MAX_NAME_BYTES}: "
                          f"{_short(part)}")
    try:
        root_real = root.resolve()
        candidate = root.joinpath(*parts)
        real = candidate.resolve()
        if real != root_real and root_real not in real.parents:
            raise BadPath(f"path leaves the bundle (symlink): {relative!r}")
        if not real.is_file():
            raise BadPath(f"file not found: {relative!r}")
        protected = guard.file_problem(real)
        if protected is not None:
            raise BadPath(f"{protected}: {relative!r}")
    except (OSError, RuntimeError) as exc:  # name too long, symlink loop, permissions
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise BadPath(f"cannot use the path ({reason}): {_short(relative)}") from None
    return real


def _short(text: str, limit: int = 60) -> str:
    """``text`` for a message: repr (lone surrogates escaped), cut to ``limit`` characters."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} chars)"


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def probe_image(path: Path, max_pixels: int = MAX_PIXELS) -> ImageFile:
    """Check that ``path`` is a complete, acceptable image and describe it.

    The pixel count is read from the header and checked against ``max_pixels`` before
    any decoding; then the image is decoded once, so truncated or damaged files are
    refused. A JPEG is decoded at 1/8 scale (``Image.draft``): every byte of its data is
    still decoded (a truncated or damaged file fails the same way), for 1/64 of the memory.
    """
    size = path.stat().st_size
    if size > MAX_IMAGE_BYTES:
        raise BadImage(f"file is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MiB")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                fmt = im.format or ""
                width, height = im.size
                if fmt not in FORMATS:
                    raise BadImage(f"unsupported image format {fmt or 'unknown'}")
                if width * height > max_pixels:
                    raise BadImage(
                        f"image has {width}x{height} pixels, over the limit of {max_pixels}"
                        " (decompression bomb?)"
                    )
                if fmt == "JPEG":
                    im.draft(None, (max(1, width // 8), max(1, height // 8)))
                im.load()
    except BadImage:
        raise
    except Image.DecompressionBombError as exc:
        raise BadImage(f"image over the pixel limit (decompression bomb?): {exc}") from None
    except Image.DecompressionBombWarning as exc:
        raise BadImage(f"image over the pixel limit (decompression bomb?): {exc}") from None
    except Exception as exc:  # Pillow raises many types for broken files
        raise BadImage(f"not a decodable image ({type(exc).__name__}: {exc})") from None
    return ImageFile(
        sha256=sha256_file(path),
        width=width,
        height=height,
        format=fmt,
        size_bytes=size,
        source=path,
    )


class ImageProber:
    """Memoizes :func:`probe_image` per real path within one import."""

    def __init__(self, max_pixels: int = MAX_PIXELS):
        self.max_pixels = max_pixels
        self._seen: dict[Path, ImageFile] = {}

    def __call__(self, path: Path) -> ImageFile:
        if path not in self._seen:
            self._seen[path] = probe_image(path, self.max_pixels)
        return self._seen[path]
