"""The storage boundary (issue #13, item 2): all SQL lives in ``annotation/store/``.

Nothing outside that package runs a statement (``execute``, ``executemany``, a query),
opens a connection, opens a transaction of the store, reaches for its connection or its
sqlite-utils handle, or writes a SQL statement; the rest of the code asks the store for
records and DataFrames. The test reads the source of the product (``annotation/``,
``pages/``, ``app.py``, ``server.py``) and lists every line that crosses the boundary.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: what only the storage package may do
FORBIDDEN = re.compile(
    r"\.execute\(|executemany|\.query\(|sqlite3\.connect|\.transaction\("
    r"|\.rows_where\(|\bstore\.db\b|\.conn\b|\bquery_df\(|read_sql"
    # a SQL statement written as a string literal
    r"|[\"'](?:SELECT|INSERT INTO|INSERT OR|UPDATE \w+ SET|DELETE FROM|CREATE TABLE)\b"
)

STORAGE = "annotation/store/"


def product_sources() -> list[Path]:
    """Every Python source file of the product (not the tests, benchmarks or scripts)."""
    files = sorted((ROOT / "annotation").rglob("*.py")) + sorted((ROOT / "pages").rglob("*.py"))
    return files + [ROOT / name for name in ("app.py", "server.py") if (ROOT / name).is_file()]


def crossings(files: list[Path]) -> list[str]:
    """``path:line: text`` of each line outside the storage package that does storage."""
    found = []
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(STORAGE):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if FORBIDDEN.search(line):
                found.append(f"{rel}:{number}: {line.strip()}")
    return found


def test_no_sql_outside_the_storage_package():
    files = product_sources()
    assert len(files) > 50 and any(p.name == "app.py" for p in files)
    found = crossings(files)
    assert not found, "storage outside annotation/store/:\n" + "\n".join(found)


def test_the_scan_sees_each_kind_of_crossing(tmp_path):
    """The pattern is not vacuous: each way of crossing the boundary that the issue names
    is caught, and the storage package itself is not."""
    samples = [
        'row = store.conn.execute("SELECT meta FROM tasks WHERE task_id = ?", [t])',
        "with store.transaction(public=True) as conn:",
        "conn.executemany(sql, rows)",
        "conn = sqlite3.connect(path)",
        "df = store.query_df(sql)",
        "rows = store.db.query(sql)",
        "sql = 'UPDATE users SET role = ? WHERE name = ?'",
    ]
    for sample in samples:
        assert FORBIDDEN.search(sample), sample
    for fine in ("df = store.outputs_df()", "user = auth.get_user(store, name)",
                 '"Select the node where the failure starts"'):
        assert not FORBIDDEN.search(fine), fine
