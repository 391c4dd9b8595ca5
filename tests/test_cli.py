"""The judge-audit command: import, export, demo, info, serve (as a real process)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from annotation.cli import main
from annotation.store import Store


def test_import_info_export(tmp_path, example_bundle, capsys, make_engine_db):
    db = make_engine_db("study.db")
    assert main(["import", str(example_bundle), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "written: tasks 1, images 3, questions 3, criteria 1, judges 2, outputs 2" in out
    assert "outputs.jsonl:2: output 't1/modelB' is missing" in out
    assert main(["info", "--db", str(db), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["counts"]["judgments"] == 5
    assert info["imports"][0]["format"] == "bundle"
    assert info["imports"][0]["source"] == str(example_bundle.resolve())
    assert main(["info", "--db", str(db)]) == 0
    assert "judgments" in capsys.readouterr().out
    assert main(["export", "--db", str(db), "--out", str(tmp_path / "x"), "--zip"]) == 0
    assert "exported to" in capsys.readouterr().out
    assert (tmp_path / "x.zip").is_file()
    assert main(["import", str(tmp_path / "x.zip"), "--db", str(tmp_path / "y.db"),
                 "--quiet"]) == 0
    assert capsys.readouterr().out == ""


def test_info_of_a_missing_database(tmp_path, capsys):
    # SQLite-only by nature: a missing database file is refused and no file is made
    assert main(["info", "--db", str(tmp_path / "nope.db")]) == 1
    assert "no such database" in capsys.readouterr().err
    assert not (tmp_path / "nope.db").exists()


def test_import_of_an_unknown_folder(tmp_path, capsys):
    (tmp_path / "random").mkdir()
    assert main(["import", str(tmp_path / "random"), "--db", str(tmp_path / "p.db")]) == 1
    assert "not a judge-audit bundle" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_builds_a_complete_project(tmp_path, capsys, make_engine_db):
    db = make_engine_db("demo.db")
    assert main(["demo", "--db", str(db), "--quiet"]) == 0
    with Store.open(db) as store:
        counts = store.counts()
        assert counts["tasks"] >= 4 and counts["criteria"] == 6 and counts["judges"] >= 2
        assert counts["missing_outputs"] >= 1 and counts["annotators"] == 3
        assert counts["annotations"] > counts["current_annotations"]  # some history
        generators = set(store.outputs_df().generator)
        assert len(generators) == 3
        assert store.questions_df().operator.notna().all()
        assert (store.images_df().role == "visual_instruction").any()
    # building twice is harmless
    assert main(["demo", "--db", str(db), "--quiet"]) == 0
    with Store.open(db) as store:
        assert store.counts()["annotations"] == counts["annotations"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_serve_starts_the_app_on_the_demo_project(tmp_path):
    """`judge-audit serve` with no --db builds the demo project and answers over HTTP."""
    port = _free_port()
    env = dict(os.environ, JUDGE_AUDIT_HOME=str(tmp_path / "home"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "annotation.cli", "serve", "--port", str(port)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.time() + 60
        health = None
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                            timeout=2) as r:
                    health = r.read().decode()
                    break
            except OSError:
                time.sleep(0.5)
        assert health == "ok"
        assert (tmp_path / "home" / "demo.db").is_file()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
            assert b"<div id=\"root\">" in r.read()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.slow
def test_console_script_is_installed():
    """The README's first command relies on the `judge-audit` entry point."""
    result = subprocess.run(["judge-audit", "--help"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0
    for command in ("import", "export", "demo", "serve", "info"):
        assert command in result.stdout
    assert Path(__file__).resolve().parents[1].joinpath("app.py").is_file()
