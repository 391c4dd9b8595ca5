"""docs/schema.md documents every table and view of the current schema."""

from __future__ import annotations

import re
from pathlib import Path

from annotation.store import Store, pg

DOC = Path(__file__).resolve().parents[1] / "docs" / "schema.md"


def schema_objects(location: str) -> dict[str, str]:
    """name -> type (``table``/``view``) of a freshly created project database (``location``
    on SQLite or PostgreSQL)."""
    with Store.open(location) as store:
        if store.engine == "postgresql":
            return {name: "view" if kind == "VIEW" else "table" for name, kind in
                    store.conn.execute(
                        "SELECT table_name, table_type FROM information_schema.tables"
                        " WHERE table_schema = current_schema() AND table_name <> ?",
                        [pg.VERSION_TABLE])}  # PRAGMA user_version's stand-in: no table
        return dict(store.conn.execute(
            "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')"
            " AND name NOT LIKE 'sqlite_%'"))


def test_every_table_has_a_row_in_the_table_of_tables(engine_db):
    text = DOC.read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([a-z_]+)` \|", text, flags=re.M))
    tables = {name for name, kind in schema_objects(engine_db).items() if kind == "table"}
    assert tables - rows == set(), "tables missing from docs/schema.md"
    assert rows - tables == set(), "docs/schema.md documents tables the schema lacks"


def test_every_view_is_named(engine_db):
    text = DOC.read_text(encoding="utf-8")
    views = {name for name, kind in schema_objects(engine_db).items() if kind == "view"}
    missing = sorted(v for v in views if f"`{v}`" not in text)
    assert not missing, f"views missing from docs/schema.md: {missing}"


def test_the_table_of_tables_is_one_markdown_table():
    """A blank line inside it would split it, and the second half would render as text."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| table |"))
    end = start
    while end + 1 < len(lines) and lines[end + 1].startswith("|"):
        end += 1
    inside = {m for m in re.findall(r"^\| `([a-z_]+)` \|", "\n".join(lines), flags=re.M)}
    block = {m for m in re.findall(r"^\| `([a-z_]+)` \|", "\n".join(lines[start:end + 1]),
                                   flags=re.M)}
    assert inside == block
