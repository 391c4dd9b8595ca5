"""Shared fixtures: a real SQLite project file (WAL) and real bundles made with Pillow."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bundles import write_doc_example  # noqa: E402

from annotation.store import Store  # noqa: E402
from annotation.ui.app_state import enable_test_sessions  # noqa: E402

# AppTest has no browser, hence no session cookie: sign_in() keeps the session token in
# session_state instead, in this process only (see annotation.ui.app_state).
enable_test_sessions()

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "project.db"


@pytest.fixture
def store(db_path: Path):
    s = Store.open(db_path)
    yield s
    s.close()


@pytest.fixture
def example_bundle(tmp_path: Path) -> Path:
    """The complete small example of docs/bundle-format.md, with real images."""
    return write_doc_example(tmp_path / "example")
