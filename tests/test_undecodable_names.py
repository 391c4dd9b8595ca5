"""File and folder names that are not UTF-8 (bytes Python hands over as lone surrogates,
PEP 383). The TIIF-Bench and VIF-Bench readers turn folder names into generator and judge
ids; such a name used to reach the database write and end the import with a
``UnicodeEncodeError`` traceback. It is now refused at its path, shown with its bytes as
``\\xNN``, before anything is written; a bundle in such a folder imports, its import log
naming the folder the same way."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from annotation.formats.importers import import_path
from annotation.records import ImportRefused, Problem, printable
from annotation.store import Store
from tests.helpers.bundles import write_doc_example
from tests.helpers.vif_fixture import make_vif_release
from tests.test_import_tiif import _result, _tiny, _write_result

pytestmark = pytest.mark.skipif(sys.platform != "linux" or sys.getfilesystemencoding() != "utf-8",
                                reason="file names as bytes, decoded as UTF-8 (Linux)")
BAD = os.fsdecode(b"gen-\xff\xfe")  # "gen-\udcff\udcfe" in Python
SHOWN = "gen-\\xff\\xfe"


def _refused(store: Store, source: Path) -> list[str]:
    with pytest.raises(ImportRefused) as refused:
        import_path(store, source)
    problems = [str(p) for p in refused.value.problems]
    for text in problems:
        text.encode("utf-8")  # printable: no lone surrogate left
    assert store.counts()["judgments"] == 0 and store.counts()["outputs"] == 0
    return problems


def test_printable_names_the_bytes_and_leaves_good_text_alone():
    assert printable(BAD) == SHOWN
    assert printable("été 😀") == "été 😀"
    assert printable("\ud800x") == "\\ud800x"  # a lone surrogate not from a file name
    assert str(Problem(BAD, 3, None, f"about {BAD}")) == f"{SHOWN}:3: about {SHOWN}"


def test_a_tiif_generator_folder_that_is_not_utf8_is_refused_at_its_path(tmp_path, engine_db):
    root = _tiny(tmp_path / "tiif")
    _write_result(root, BAD, "short", 1, _result("foo", 1, "short", ["yes", "no"], "yes"))
    with Store.open(engine_db) as store:
        problems = _refused(store, root)
    assert problems == [f"eval-results/runs/runs_eval_results_J1/{SHOWN}/foo/short/1.json:"
                        " the file or folder name is not valid UTF-8 (its bytes are shown as"
                        " \\xNN): rename it"]


def test_a_tiif_image_folder_that_is_not_utf8_is_refused(tmp_path, engine_db):
    root = _tiny(tmp_path / "tiif")
    (root / "output" / "foo" / BAD / "short_description").mkdir(parents=True)
    with Store.open(engine_db) as store:
        problems = _refused(store, root)
    assert len(problems) == 1 and f"output/foo/{SHOWN}: the file or folder name" in problems[0]


def test_a_vif_generator_or_judge_folder_that_is_not_utf8_is_refused(tmp_path, engine_db):
    root = tmp_path / "vif"
    make_vif_release(root)
    shutil.copytree(root / "generations" / "model-a", root / "generations" / BAD)
    judge = next(p for p in (root / "results" / "model-a").iterdir() if p.is_dir())
    shutil.copytree(judge, root / "results" / "model-a" / BAD)
    with Store.open(engine_db) as store:
        problems = _refused(store, root)
    assert sorted(problems) == [
        f"generations/{SHOWN}: the file or folder name is not valid UTF-8 (its bytes are"
        " shown as \\xNN): rename it",
        f"results/model-a/{SHOWN}: the file or folder name is not valid UTF-8 (its bytes are"
        " shown as \\xNN): rename it"]


def test_a_bundle_in_a_folder_that_is_not_utf8_imports_and_is_logged_by_its_bytes(
        tmp_path, engine_db):
    source = write_doc_example(tmp_path / BAD)
    with Store.open(engine_db) as store:
        summary = import_path(store, source)
        assert summary.written["judgments"] > 0
        (logged,) = [r[0] for r in store.conn.execute("SELECT source FROM imports")]
    assert logged.endswith(SHOWN) and SHOWN in summary.text()
