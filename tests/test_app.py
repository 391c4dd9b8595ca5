"""The app shell, driven through streamlit.testing.v1.AppTest against a real database."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bundles import ensure_account
from streamlit.testing.v1 import AppTest

from annotation.app_state import sign_in
from annotation.auth import User
from annotation.cli import main
from annotation.importers import import_path
from annotation.store import Store

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def app_as(name: str = "admin", role: str = "admin") -> AppTest:
    """The app with ``name`` signed in (as the sign-in page leaves the session)."""
    ensure_account(Path(os.environ["JUDGE_AUDIT_DB"]), name, role)
    at = AppTest.from_file(APP, default_timeout=60)
    sign_in(at.session_state, User(name, role))
    return at


@pytest.fixture
def demo_db(tmp_path, monkeypatch) -> Path:
    db = tmp_path / "demo.db"
    assert main(["demo", "--db", str(db), "--quiet"]) == 0
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    return db


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


def test_empty_project_says_how_to_import(tmp_path, monkeypatch):
    db = tmp_path / "empty.db"
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    at = app_as().run()
    assert not at.exception
    assert "judge-audit import" in at.info[0].value


@pytest.mark.parametrize("page,issue", [("pages/trees.py", 6)])
def test_placeholder_pages_say_what_is_not_built(demo_db, page, issue):
    at = app_as().run()
    at.switch_page(page).run()
    assert not at.exception
    assert f"issue #{issue}" in at.warning[0].value


def test_home_page_counts_follow_an_import(tmp_path, monkeypatch, example_bundle):
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        import_path(store, example_bundle)
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    at = app_as().run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Tasks"] == "1" and metrics["Outputs"] == "2"
    assert at.title[0].value == "Cat and microwave"


def test_import_page_imports_a_folder_and_shows_located_errors(tmp_path, monkeypatch,
                                                              example_bundle):
    db = tmp_path / "p.db"
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    ensure_account(db, "admin", "admin")
    at = AppTest.from_file(str(Path(APP).parent / "pages" / "import_data.py"),
                           default_timeout=60)
    sign_in(at.session_state, User("admin", "admin"))
    at.run()
    broken = tmp_path / "broken"
    import shutil

    shutil.copytree(example_bundle, broken)
    (broken / "outputs.jsonl").write_text('{"output_id": 5}\n')
    at.text_input[0].input(str(broken)).run()
    [b for b in at.button if b.label == "Import the folder"][0].click().run()
    assert "nothing was written" in at.error[0].value
    assert "outputs.jsonl:1: output_id: must be a string" in at.code[0].value
    with Store.open(db) as store:
        assert store.counts()["tasks"] == 0
    at.text_input[0].input(str(example_bundle)).run()
    [b for b in at.button if b.label == "Import the folder"][0].click().run()
    assert at.success[0].value.startswith("Import #")
    with Store.open(db) as store:
        assert store.counts()["tasks"] == 1
        assert store.import_log().user.tolist() == ["admin"]


def test_import_page_refuses_annotators(tmp_path, monkeypatch):
    db = tmp_path / "p.db"
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    ensure_account(db, "ann", "annotator")
    at = AppTest.from_file(str(Path(APP).parent / "pages" / "import_data.py"),
                           default_timeout=60)
    sign_in(at.session_state, User("ann", "annotator"))
    at.run()
    assert "admins only" in at.error[0].value
    assert not at.text_input


def test_verification_page_runs_on_the_demo(demo_db):
    at = app_as().run()
    at.switch_page("pages/conflicts.py").run()
    assert not at.exception
    assert at.subheader[0].value.startswith("Verify conflicts")
