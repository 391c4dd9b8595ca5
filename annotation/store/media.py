"""Where a project's image bytes live: the media folder beside the database file.

Images are stored content-addressed, ``<db stem>_media/<sha256[:2]>/<sha256>.<ext>``; the
one rule for that path is here (the store, backups and ``judge-audit check`` all use it).
"""

from __future__ import annotations

import os
from pathlib import Path

#: Pillow format name -> the file extension of a stored image of that format
EXTENSIONS = {
    "PNG": "png", "JPEG": "jpg", "WEBP": "webp", "GIF": "gif", "BMP": "bmp", "TIFF": "tif",
}


def media_dir(db_path: str | os.PathLike[str]) -> Path:
    """The media folder of the database at ``db_path``."""
    db = Path(db_path)
    return db.with_name(db.stem + "_media")


def media_file(db_path: str | os.PathLike[str], sha256: str, fmt: str) -> Path:
    """Where the bytes of image ``sha256`` (Pillow format ``fmt``) live beside ``db_path``."""
    return media_dir(db_path) / sha256[:2] / f"{sha256}.{EXTENSIONS.get(fmt, 'bin')}"
