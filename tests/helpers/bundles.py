"""Test helpers: real bundles on disk, made with Pillow, and a checksum of a database."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from tests.helpers import ROOT as REPO

DOC = REPO / "docs" / "bundle-format.md"


def doc_example() -> dict[str, str]:
    """The files of the 'complete small example' of docs/bundle-format.md, as text."""
    text = DOC.read_text(encoding="utf-8").split("## A complete small example", 1)[1]
    files = {}
    for name, body in re.findall(r"`([a-z]+\.jsonl?)`:\s*```json\n(.*?)```", text, re.S):
        files[name] = body
    return files


def make_image(path: Path, size: tuple[int, int] = (64, 48), color: str = "red",
               fmt: str = "PNG", text: str = "") -> Path:
    """Write a small real image with a shape on it (distinct colors give distinct hashes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    im = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(im)
    draw.ellipse([4, 4, size[0] - 4, size[1] - 4], fill=color)
    if text:
        draw.text((2, 2), text, fill="black")
    im.save(path, fmt)
    return path


def write_doc_example(root: Path) -> Path:
    """Write the documented example bundle with real images at every referenced path."""
    root.mkdir(parents=True, exist_ok=True)
    palette = iter(["red", "blue", "green", "orange", "purple", "brown", "pink", "gray"])
    for name, body in doc_example().items():
        (root / name).write_text(body, encoding="utf-8")
    for line in (root / "tasks.jsonl").read_text().splitlines():
        for image in json.loads(line).get("images", []):
            make_image(root / image["path"], color=next(palette))
    for line in (root / "outputs.jsonl").read_text().splitlines():
        out = json.loads(line)
        if out.get("path"):
            make_image(root / out["path"], size=(96, 96), color=next(palette))
    return root


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")


def ensure_account(db_path: Path, name: str, role: str = "annotator") -> None:
    """Create the account ``name`` in the project at ``db_path`` if it does not exist."""
    from annotation.accounts import auth
    from annotation.store import Store

    with Store.open(db_path) as store:
        if auth.get_user(store, name) is None:
            auth.add_user(store, name, role, f"pw-{name}-123", actor="test")


def db_checksum(db_path: Path | str) -> str:
    """SHA-256 over every row of every table (opened read-only), to prove 'unchanged'; a
    ``postgresql://`` URL: over its tables the same way."""
    from annotation.store import pg

    if pg.is_url(str(db_path)):
        return _pg_checksum(str(db_path))
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        digest = hashlib.sha256()
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for table in tables:
            digest.update(table.encode())
            for row in conn.execute(f"SELECT * FROM {table} ORDER BY rowid"):
                digest.update(repr(row).encode())
        digest.update(repr(conn.execute("PRAGMA user_version").fetchone()).encode())
        return digest.hexdigest()
    finally:
        conn.close()


def _pg_checksum(url: str) -> str:
    from annotation.store import Store

    with Store.open(url, migrate=False) as store:
        digest = hashlib.sha256()
        tables = [r[0] for r in store.conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            " AND table_type = 'BASE TABLE' AND table_name <> 'judge_audit_schema'"
            " ORDER BY table_name")]
        for table in tables:
            digest.update(table.encode())
            for row in store.conn.execute(f"SELECT * FROM {table} ORDER BY rowid"):
                digest.update(repr(row).encode())
        digest.update(repr(store.conn.execute("PRAGMA user_version").fetchone()).encode())
        return digest.hexdigest()
