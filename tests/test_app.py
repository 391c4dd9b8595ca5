"""The app shell, driven through streamlit.testing.v1.AppTest against a real database."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from annotation.store import Store
from tests.helpers.apptest import signed_in

APP = str(Path(__file__).resolve().parents[1] / "app.py")

#: the tests on ``served_demo`` run on SQLite and on PostgreSQL (tests/conftest.py)
SERVED_ENGINES = ("sqlite", "postgresql")


def app_as(name: str = "admin", role: str = "admin") -> AppTest:
    """The app with ``name`` signed in (as the sign-in page leaves the session)."""
    return signed_in(APP, name, role)


@pytest.fixture
def demo_db(served_demo: Path) -> Path:
    return served_demo


def test_home_page_shows_the_project(demo_db):
    at = app_as().run()
    assert not at.exception
    with Store.open(demo_db) as store:
        info, counts = store.project_info(), store.counts()
    assert at.title[0].value == info["name"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Tasks"] == str(counts["tasks"])
    assert metrics["Judge answers"] == f"{counts['judgments']:,}"
    assert metrics["Human answers"] == f"{counts['current_annotations']:,}"
    frames = [df.value for df in at.dataframe]
    generators = frames[0]
    assert sorted(generators["generator"]) == sorted(set(store_outputs(demo_db)))
    assert generators["missing"].sum() == counts["missing_outputs"]
    judges = frames[2] if len(frames) > 3 else frames[1]
    assert "judge" in judges.columns or "criterion" in judges.columns
    log = next(f for f in frames if "format" in f.columns)
    assert list(log["format"]) == ["bundle"]
    assert "2 import warning(s)" in [e.label for e in at.expander]
    warnings = next(f for f in frames if "warning" in f.columns)
    assert any("is missing" in w for w in warnings["warning"])


def store_outputs(db: Path) -> list[str]:
    with Store.open(db) as store:
        return list(store.outputs_df().generator)


def test_empty_project_says_how_to_import(engine_db, monkeypatch):
    db = engine_db
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    at = app_as().run()
    assert not at.exception
    assert "judge-audit import" in at.info[0].value


def test_verification_page_runs_on_the_demo(demo_db):
    at = app_as().run()
    at.switch_page("pages/conflicts.py").run()
    assert not at.exception
    assert at.subheader[0].value.startswith("Verify conflicts")
