"""The bundle format: the documented example imports as documented; export round-trips."""

from __future__ import annotations

import shutil
from dataclasses import asdict
from pathlib import Path

import pytest
from bundles import db_checksum, read_jsonl

from annotation.bundle import write_bundle
from annotation.cli import main
from annotation.importers import import_path
from annotation.records import ImportRefused
from annotation.store import Store


def test_doc_example_imports_with_the_documented_content(store, example_bundle):
    summary = import_path(store, example_bundle)
    counts = store.counts()
    assert (counts["tasks"], counts["images"], counts["questions"]) == (1, 3, 3)
    assert (counts["outputs"], counts["missing_outputs"], counts["judgments"]) == (2, 1, 5)
    assert counts["annotations"] == 3 and counts["current_annotations"] == 2
    assert [str(w) for w in summary.warnings] == ["outputs.jsonl:2: output 't1/modelB' is missing"]
    images = store.images_df("t1")
    assert list(images.idx) == [0, 1, 2]
    assert list(images.role) == ["reference", "reference", "visual_instruction"]
    assert list(images.kind) == ["main", "main", "layout"]
    assert (images.width == 64).all() and (images.height == 48).all()
    questions = store.questions_df().set_index("question_id")
    assert questions.loc["t1.q3", "pass_answer"] == "no"
    assert questions.loc["t1.q2", "depends_on"] == '["t1.q1"]'
    current = store.annotations_df()
    q2 = current[current.question_id == "t1.q2"].iloc[0]
    assert q2.answer == "no" and q2.note.startswith("looked again")
    judges = store.judges_df().set_index("name")
    assert (judges.loc["clipscore", "scale_min"], judges.loc["clipscore", "scale_max"]) == (0, 1)
    for row in images.itertuples():  # bytes copied into the media folder, by hash
        assert store.file_path(row.sha256).is_file()


def test_importing_the_same_bundle_twice_changes_nothing_but_the_log(store, example_bundle,
                                                                      db_path):
    import_path(store, example_bundle)
    before = store.counts()
    summary = import_path(store, example_bundle)
    after = store.counts()
    assert {k: v for k, v in after.items() if k != "imports"} == \
        {k: v for k, v in before.items() if k != "imports"}
    assert summary.unchanged["judgments"] == 5 and summary.unchanged["tasks"] == 1
    assert sum(summary.written.values()) == 0


def _content(store: Store, *, import_times: bool = True) -> dict:
    """Everything the store holds, without the local media paths.

    ``import_times=False`` also drops the times stamped on annotations at import (lines
    without ``created_at``), which differ between two imports of the same file.
    """
    project = store.read_project()
    content = asdict(project)
    if not import_times:
        for row in content["annotations"]:
            if not row["created_at"].startswith("2026-11-02"):
                row["created_at"] = None
    for key in ("source", "format"):
        content.pop(key)
    for kind in ("images", "outputs"):
        for row in content[kind]:
            if row["file"]:
                row["file"].pop("source")
    return content


def test_export_then_import_reproduces_the_same_content(store, example_bundle, tmp_path):
    import_path(store, example_bundle)
    store.record_annotation(
        __import__("annotation.records", fromlist=["Annotation"]).Annotation(
            "ann2", "t1/modelA", criterion="visual_quality", score=9, note="=cmd|' /C calc'!A0"))
    out = tmp_path / "exported"
    assert main(["export", "--db", str(store.path), "--out", str(out), "--quiet"]) == 0
    with Store.open(tmp_path / "copy.db") as copy:
        import_path(copy, out)
        assert _content(copy) == _content(store)
        assert copy.counts()["annotations"] == store.counts()["annotations"]
        history = copy.annotations_df(history=True)
        assert history.supersedes.notna().sum() == 1  # the documented history survived
    # exporting the copy gives byte-identical files
    out2 = tmp_path / "exported2"
    with Store.open(tmp_path / "copy.db") as copy:
        write_bundle(copy.read_project(), out2)
    for name in ("bundle.json", "tasks.jsonl", "outputs.jsonl", "judgments.jsonl",
                 "annotations.jsonl"):
        assert (out / name).read_bytes() == (out2 / name).read_bytes(), name


@pytest.mark.parametrize("source", ["demo", "vif-release"])
def test_round_trip_of_the_demo_and_a_vif_release(source, tmp_path):
    """Export of another format's import, re-imported, gives the same content."""
    from annotation.project_files import DEMO_BUNDLE

    if source == "demo":
        path = DEMO_BUNDLE
    else:
        from vif_fixture import make_vif_release

        path = tmp_path / "vif"
        make_vif_release(path)
    with Store.open(tmp_path / "a.db") as a, Store.open(tmp_path / "b.db") as b:
        import_path(a, path)
        write_bundle(a.read_project(), tmp_path / "out")
        import_path(b, tmp_path / "out")
        assert _content(a) == _content(b)
        assert a.counts() == b.counts()


def test_zip_bundle_imports_like_the_folder(tmp_path, example_bundle):
    archive = shutil.make_archive(str(tmp_path / "example"), "zip", example_bundle)
    with Store.open(tmp_path / "a.db") as a, Store.open(tmp_path / "b.db") as b:
        import_path(a, example_bundle)
        import_path(b, Path(archive))
        assert _content(a, import_times=False) == _content(b, import_times=False)


def test_zip_with_a_top_folder_imports(tmp_path, example_bundle):
    archive = shutil.make_archive(str(tmp_path / "nested"), "zip", tmp_path, "example")
    with Store.open(tmp_path / "n.db") as store:
        import_path(store, Path(archive))
        assert store.counts()["tasks"] == 1


def test_shared_checklist_between_tasks(store, example_bundle):
    """TIIF short/long prompts: two tasks, one question list."""
    tasks = read_jsonl(example_bundle / "tasks.jsonl")
    twin = dict(tasks[0], task_id="t1-long", instruction="A longer prompt.", checklist_id="t1")
    twin.pop("questions")
    tasks[0]["checklist_id"] = "t1"
    from bundles import write_jsonl

    write_jsonl(example_bundle / "tasks.jsonl", [tasks[0], twin])
    outputs = read_jsonl(example_bundle / "outputs.jsonl")
    outputs.append({"output_id": "t1-long/modelA", "task_id": "t1-long", "generator": "modelA",
                    "path": outputs[0]["path"]})
    write_jsonl(example_bundle / "outputs.jsonl", outputs)
    judgments = read_jsonl(example_bundle / "judgments.jsonl")
    judgments.append({"judge": "gpt-5", "output_id": "t1-long/modelA", "question_id": "t1.q1",
                      "answer": "no"})
    write_jsonl(example_bundle / "judgments.jsonl", judgments)
    import_path(store, example_bundle)
    assert store.counts()["questions"] == 3
    assert set(store.tasks_df().checklist_id) == {"t1"}
    # the long prompt's judgment refers to a question of the shared checklist
    judged = store.judgments_df()
    assert list(judged[judged.output_id == "t1-long/modelA"].question_id) == ["t1.q1"]
    # and a question outside the shared checklist is refused for the long prompt
    judgments.append({"judge": "gpt-5", "output_id": "t1-long/modelA", "question_id": "t1.q9",
                      "answer": "no"})
    write_jsonl(example_bundle / "judgments.jsonl", judgments)
    before = db_checksum(store.path)
    with pytest.raises(ImportRefused, match="unknown question 't1.q9'"):
        import_path(store, example_bundle)
    assert db_checksum(store.path) == before
