"""The bundle format: the documented example imports as documented; export round-trips."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest

from annotation.cli import main
from annotation.formats.bundle import write_bundle
from annotation.formats.importers import import_path
from annotation.records import ImportRefused
from annotation.store import Store
from tests.helpers.bundles import db_checksum, read_jsonl

#: the tests that use ``store`` run on SQLite and on PostgreSQL (tests/conftest.py)
STORE_ENGINES = ("sqlite", "postgresql")


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
    without ``created_at``) and on their submissions, which differ between two imports of
    the same file.
    """
    project = store.read_project()
    content = asdict(project)
    if not import_times:
        for row in content["annotations"]:
            if not row["created_at"].startswith("2026-11-02"):
                row["created_at"] = None
        # annotations made elsewhere count as submitted at the time of the import
        for row in content["work"].get("submissions.jsonl", []):
            row["values"]["submitted_at"] = None
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
    assert main(["export", "--db", store.location, "--out", str(out), "--quiet"]) == 0
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


@pytest.mark.slow
@pytest.mark.parametrize("source", ["demo", "vif-release"])
def test_round_trip_of_the_demo_and_a_vif_release(source, tmp_path, make_engine_db):
    """Export of another format's import, re-imported, gives the same content."""
    from annotation.project_files import DEMO_BUNDLE

    if source == "demo":
        path = DEMO_BUNDLE
    else:
        from tests.helpers.vif_fixture import make_vif_release

        path = tmp_path / "vif"
        make_vif_release(path)
    with Store.open(make_engine_db("a.db")) as a, Store.open(make_engine_db("b.db")) as b:
        import_path(a, path)
        write_bundle(a.read_project(), tmp_path / "out")
        import_path(b, tmp_path / "out")
        assert _content(a) == _content(b)
        assert a.counts() == b.counts()


def test_zip_bundle_imports_like_the_folder(tmp_path, example_bundle, make_engine_db):
    archive = shutil.make_archive(str(tmp_path / "example"), "zip", example_bundle)
    with Store.open(make_engine_db("a.db")) as a, Store.open(make_engine_db("b.db")) as b:
        import_path(a, example_bundle)
        import_path(b, Path(archive))
        assert _content(a, import_times=False) == _content(b, import_times=False)


def test_zip_with_a_top_folder_imports(tmp_path, example_bundle, make_engine_db):
    archive = shutil.make_archive(str(tmp_path / "nested"), "zip", tmp_path, "example")
    with Store.open(make_engine_db("n.db")) as store:
        import_path(store, Path(archive))
        assert store.counts()["tasks"] == 1


def test_shared_checklist_between_tasks(store, example_bundle):
    """TIIF short/long prompts: two tasks, one question list."""
    tasks = read_jsonl(example_bundle / "tasks.jsonl")
    twin = dict(tasks[0], task_id="t1-long", instruction="A longer prompt.", checklist_id="t1")
    twin.pop("questions")
    tasks[0]["checklist_id"] = "t1"
    from tests.helpers.bundles import write_jsonl

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
    before = db_checksum(store.location)
    with pytest.raises(ImportRefused, match="unknown question 't1.q9'"):
        import_path(store, example_bundle)
    assert db_checksum(store.location) == before


# ------------------------------------------------------------------ refusals of the reader
def _refused(db: str | Path, bundle: Path) -> list[str]:
    """Import must be refused and leave ``db`` unchanged; the problems as text."""
    Store.open(db).close()
    before = db_checksum(db)
    with Store.open(db) as store, pytest.raises(ImportRefused) as caught:
        import_path(store, bundle)
    assert db_checksum(db) == before
    return [str(p) for p in caught.value.problems]


def _rewrite(path: Path, change) -> None:
    from tests.helpers.bundles import write_jsonl

    rows = read_jsonl(path)
    change(rows)
    write_jsonl(path, rows)


BIG = 1_000_001  # one character over the limit of a text field


@pytest.mark.parametrize(("name", "change", "expected"), [
    ("tasks.jsonl", lambda r: r[0]["meta"].update(notes="x" * BIG),
     f"tasks.jsonl:1: meta.notes: text of {BIG} characters, more than 1 MB"),
    ("tasks.jsonl", lambda r: r[0]["meta"].update(notes={"log": [1, {"text": "x" * BIG}]}),
     f"tasks.jsonl:1: meta.notes.log[1].text: text of {BIG} characters, more than 1 MB"),
    ("tasks.jsonl", lambda r: r[0]["meta"]["layout"].update({"x" * BIG: [0, 0, 1, 1]}),
     f"tasks.jsonl:1: meta.layout.{'x' * 60}...: key of {BIG} characters, more than 1 MB"),
    ("tasks.jsonl", lambda r: r[0]["images"][1].update(meta={"source": "x" * BIG}),
     f"tasks.jsonl:1: images[1].meta.source: text of {BIG} characters, more than 1 MB"),
    ("tasks.jsonl", lambda r: r[0]["questions"][2].update(meta={"why": ["x" * BIG]}),
     f"tasks.jsonl:1: questions[2].meta.why[0]: text of {BIG} characters, more than 1 MB"),
    ("outputs.jsonl", lambda r: r[1].update(meta={"seed": "x" * BIG}),
     f"outputs.jsonl:2: meta.seed: text of {BIG} characters, more than 1 MB"),
], ids=["task", "nested", "key", "image", "question", "output"])
def test_text_over_1_mb_inside_meta_is_refused_with_its_path(tmp_path, example_bundle, name,
                                                             change, expected, make_engine_db):
    _rewrite(example_bundle / name, change)
    assert expected in _refused(make_engine_db("p.db"), example_bundle)


def test_text_over_1_mb_inside_the_bundle_meta_is_refused(tmp_path, example_bundle, make_engine_db):
    import json

    header = json.loads((example_bundle / "bundle.json").read_text())
    header["meta"] = {"about": {"readme": "x" * BIG}}
    (example_bundle / "bundle.json").write_text(json.dumps(header))
    assert _refused(make_engine_db("p.db"), example_bundle) == [
        f"bundle.json: meta.about.readme: text of {BIG} characters, more than 1 MB"]


def test_meta_text_of_exactly_1_mb_is_kept(store, example_bundle):
    _rewrite(example_bundle / "tasks.jsonl", lambda r: r[0]["meta"].update(notes="x" * (BIG - 1)))
    import_path(store, example_bundle)
    assert len(store.tasks_df().meta[0]) > BIG - 1


@pytest.mark.parametrize(("name", "old", "new", "expected"), [
    ("tasks.jsonl", "Put the cat", "Put \\ud800 the cat",
     "tasks.jsonl:1: instruction: contains a lone surrogate U+D800"),
    ("tasks.jsonl", '"layout": {"cat"', '"layout": {"c\\udfffat"',
     "tasks.jsonl:1: meta.layout.c\\udfffat: contains a lone surrogate U+DFFF"),
    ("tasks.jsonl", '"label": "cat"', '"label": "cat \\ud83d"',
     "tasks.jsonl:1: images[0].label: contains a lone surrogate U+D83D"),
    ("judgments.jsonl", '"raw": "no, the cat', '"raw": "\\uDC00no, the cat',
     "judgments.jsonl:2: raw: contains a lone surrogate U+DC00"),
    ("bundle.json", '"Cat and microwave"', '"Cat \\udbff and microwave"',
     "bundle.json: name: contains a lone surrogate U+DBFF"),
], ids=["instruction", "meta-key", "image-label", "raw", "project-name"])
def test_lone_surrogates_are_refused_at_their_field(tmp_path, example_bundle, name, old, new,
                                                    expected, make_engine_db):
    path = example_bundle / name
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))
    problems = _refused(make_engine_db("p.db"), example_bundle)
    assert any(p.startswith(expected) for p in problems), problems
    assert all(p.encode("utf-8") for p in problems)  # printable: no surrogate in a message


def test_a_pair_of_surrogate_escapes_is_a_valid_character(store, example_bundle):
    path = example_bundle / "tasks.jsonl"
    path.write_text(path.read_text().replace("Put the cat", "Put the \\ud83d\\udc31 cat", 1))
    import_path(store, example_bundle)
    assert "\U0001f431" in store.tasks_df().instruction[0]


def test_a_lone_surrogate_in_the_project_name_is_refused_on_re_import(tmp_path,
                                                                      example_bundle,
                                                                      make_engine_db):
    p_db = make_engine_db("p.db")
    with Store.open(p_db) as store:
        import_path(store, example_bundle)
    path = example_bundle / "bundle.json"
    path.write_text(path.read_text().replace('"Cat and', '"Cat \\ud800 and'))
    assert _refused(p_db, example_bundle) == [
        "bundle.json: name: contains a lone surrogate U+D800 (a \\ud800 escape without its "
        "pair): not valid Unicode text"]


def test_resolve_inside_refuses_paths_the_file_system_cannot_take(tmp_path):
    from annotation.formats.images import BadPath, resolve_inside

    (tmp_path / "ok.png").write_bytes(b"x")
    assert resolve_inside(tmp_path, "ok.png") == (tmp_path / "ok.png").resolve()
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for rel, message in [
        ("a\udc00.png", "path is not valid Unicode text (lone surrogate U+DC00 at character 1)"),
        ("a" * 256 + ".png", "path component of 260 bytes, more than 255"),
        ("é" * 128, "path component of 256 bytes, more than 255"),
        ("/".join(["d" * 250] * 20), "cannot use the path (File name too long)"),
        ("loop/x.png", "cannot use the path"),
    ]:
        with pytest.raises(BadPath) as caught:
            resolve_inside(tmp_path, rel)
        assert str(caught.value).startswith(message), str(caught.value)
        assert len(str(caught.value)) < 200
    assert resolve_inside(tmp_path, "ok.png")  # 255 bytes is the limit, not less
    (tmp_path / ("b" * 255)).write_bytes(b"x")
    assert resolve_inside(tmp_path, "b" * 255).name == "b" * 255


@pytest.mark.parametrize("name", ["Visual_Quality", "VQ", "qualité", "ｖｑ", "vq\n", "٣vq"])
def test_criterion_names_outside_a_z_0_9_are_refused_from_any_importer(tmp_path, name,
                                                                       make_engine_db):
    """The reader refuses them in bundle.json, and check_project for every format."""
    from annotation.formats.importers import import_project
    from annotation.records import Criterion, ProjectData

    db = make_engine_db("p.db")
    Store.open(db).close()
    before = db_checksum(db)
    project = ProjectData("p", "b", "here", "vif-bench",
                          criteria=[Criterion(name, "L", 1, 10, origin=("results", None))])
    with Store.open(db) as store, pytest.raises(ImportRefused) as caught:
        import_project(store, project)
    assert str(caught.value.problems[0]).startswith(f"results: criteria[{name}].name: use "
                                                    "lowercase letters a-z, digits and '_'")
    assert db_checksum(db) == before


def test_unparsed_judgments_with_a_value_are_refused_from_any_importer(tmp_path, example_bundle,
                                                                       make_engine_db):
    from annotation.formats import bundle
    from annotation.formats.importers import import_project
    from annotation.records import Judgment

    db = make_engine_db("p.db")
    Store.open(db).close()
    before = db_checksum(db)
    project = bundle.read_bundle_dir(example_bundle)
    project.judgments.append(Judgment("gpt-5", "t1/modelA", criterion="visual_quality",
                                      score=None, parse_status="unparsed", origin=("r", 7)))
    project.judgments[0].parse_status = "unparsed"  # with its answer "yes"
    with Store.open(db) as store, pytest.raises(ImportRefused) as caught:
        import_project(store, project)
    assert [str(p) for p in caught.value.problems] == [
        "judgments.jsonl:1: parse_status: 'unparsed' means the judge's text could not be read: "
        "'answer' must then be null",
        "r:7: output_id: a second answer of this judge for the same output and criterion"]
    assert db_checksum(db) == before


@pytest.mark.parametrize(("line", "change", "expected"), [
    (2, lambda j: j.update(parse_status="unparsed"), "judgments.jsonl:2: parse_status: "
     "'unparsed' means the judge's text could not be read: 'answer' must then be null"),
    (5, lambda j: j.update(parse_status="unparsed"), "judgments.jsonl:5: parse_status: "
     "'unparsed' means the judge's text could not be read: 'score' must then be null"),
])
def test_unparsed_judgment_lines_with_a_value_are_refused(tmp_path, example_bundle, line,
                                                          change, expected, make_engine_db):
    _rewrite(example_bundle / "judgments.jsonl", lambda rows: change(rows[line - 1]))
    assert _refused(make_engine_db("p.db"), example_bundle) == [expected]


def test_unparsed_judgment_lines_without_a_value_are_kept(store, example_bundle):
    def change(rows):
        rows[1].update(parse_status="unparsed", answer=None)
        rows[3].update(parse_status="unparsed")
        del rows[3]["score"]
    _rewrite(example_bundle / "judgments.jsonl", change)
    summary = import_path(store, example_bundle)
    assert [str(w) for w in summary.warnings][1:] == [
        "judgments.jsonl:2: raw: judge 'gpt-5': text not parsed, kept as raw",
        "judgments.jsonl:4: raw: judge 'gpt-5': text not parsed, kept as raw"]


@pytest.mark.parametrize(("deps", "expected"), [
    ({0: ["t1.q2"]}, "t1.q1 -> t1.q2 -> t1.q1"),
    ({0: ["t1.q3"], 2: ["t1.q2"]}, "t1.q1 -> t1.q3 -> t1.q2 -> t1.q1"),
    ({1: ["t1.q1", "t1.q3"], 2: ["t1.q2"]}, "t1.q2 -> t1.q3 -> t1.q2"),
], ids=["two", "three", "beside-a-valid-one"])
def test_dependency_cycles_are_refused_and_named(tmp_path, example_bundle, deps, expected,
                                                 make_engine_db):
    def change(rows):
        for i, parents in deps.items():
            rows[0]["questions"][i]["depends_on"] = parents
    _rewrite(example_bundle / "tasks.jsonl", change)
    first = expected.split(" ")[0]
    assert _refused(make_engine_db("p.db"), example_bundle) == [
        f"tasks.jsonl:1: questions[{first}].depends_on: dependency cycle: {expected} (each "
        "depends on the next)"]


def test_a_dependency_chain_without_a_cycle_is_kept(store, example_bundle):
    _rewrite(example_bundle / "tasks.jsonl",
             lambda rows: rows[0]["questions"][2].update(depends_on=["t1.q2", "t1.q1"]))
    import_path(store, example_bundle)
    assert store.counts()["questions"] == 3


def test_bundle_json_through_a_symlink_out_of_the_bundle_is_refused(tmp_path, example_bundle,
                                                                    make_engine_db):
    import os

    outside = tmp_path / "elsewhere.json"
    shutil.move(example_bundle / "bundle.json", outside)
    os.symlink(outside, example_bundle / "bundle.json")
    assert _refused(make_engine_db("p.db"), example_bundle) == [
        "bundle.json: path leaves the bundle (symlink): 'bundle.json'"]
    # a symlink that stays inside the bundle is fine
    (example_bundle / "bundle.json").unlink()
    shutil.move(outside, example_bundle / "header.json")
    os.symlink(example_bundle / "header.json", example_bundle / "bundle.json")
    with Store.open(make_engine_db("ok.db")) as store:
        import_path(store, example_bundle)


def test_the_reader_itself_refuses_criterion_names_and_unparsed_values(example_bundle):
    """Located at the bundle's own place (criteria[0], the judgment's line) before any
    cross-record check."""
    from annotation.formats.bundle import read_bundle_dir

    for name in ("bundle.json", "judgments.jsonl", "annotations.jsonl"):
        path = example_bundle / name
        path.write_text(path.read_text().replace("visual_quality", "Visual_Quality"))
    _rewrite(example_bundle / "judgments.jsonl",
             lambda rows: rows[0].update(parse_status="unparsed"))
    with pytest.raises(ImportRefused) as caught:
        read_bundle_dir(example_bundle)
    assert [str(p) for p in caught.value.problems] == [
        "judgments.jsonl:1: parse_status: 'unparsed' means the judge's text could not be "
        "read: 'answer' must then be null"]  # the criterion's case is no longer an error


def test_a_criterion_spelled_with_capitals_is_stored_lowercase_with_a_warning(tmp_path,
                                                                              example_bundle,
                                                                              make_engine_db):
    """Issue #15, item 11: ``Visual Quality`` (a converter's spelling) is read as
    ``visual_quality`` everywhere in the bundle, its label kept, and the import says so;
    a name with no letter or digit is still refused, with how to fix it."""
    from annotation.formats.bundle import criterion_key, read_bundle_dir
    from annotation.formats.importers import import_path

    assert criterion_key(" Visual Quality ") == "visual_quality"
    assert criterion_key("Text-Instruction/Following") == "text_instruction_following"
    assert criterion_key("Qualité") == "qualite"
    doc = json.loads((example_bundle / "bundle.json").read_text())
    doc["criteria"][0]["name"] = "Visual Quality"
    del doc["criteria"][0]["label"]
    (example_bundle / "bundle.json").write_text(json.dumps(doc))
    path = example_bundle / "judgments.jsonl"  # the declared spelling
    path.write_text(path.read_text().replace('"visual_quality"', '"Visual Quality"'))
    project = read_bundle_dir(example_bundle)
    assert [c.name for c in project.criteria] == ["visual_quality"]
    assert project.criteria[0].label == "Visual Quality"
    warnings = [str(w) for w in project.warnings]
    assert sum("'Visual Quality' stored as 'visual_quality'" in w for w in warnings) == 1
    # a spelling that is neither the declared one nor the stored name is not guessed at
    path.write_text(path.read_text().replace('"Visual Quality"', '"VISUAL_QUALITY"'))
    with (pytest.raises(ImportRefused, match="unknown criterion 'VISUAL_QUALITY'"),
          Store.open(make_engine_db("u.db")) as store):
        import_path(store, example_bundle, user="test")
    path.write_text(path.read_text().replace('"VISUAL_QUALITY"', '"Visual Quality"'))
    with Store.open(make_engine_db("c.db")) as store:
        import_path(store, example_bundle, user="test")
        assert {r[0] for r in store.conn.execute(
            "SELECT criterion FROM judgments WHERE criterion IS NOT NULL")} == {"visual_quality"}
        assert store.conn.execute("SELECT count(*) FROM annotations WHERE criterion ="
                                  " 'visual_quality'").fetchone()[0] >= 1
    doc["criteria"][0]["name"] = "***"
    (example_bundle / "bundle.json").write_text(json.dumps(doc))
    with pytest.raises(ImportRefused) as caught:
        read_bundle_dir(example_bundle)
    assert "criteria[0].name: '***' has no letter a-z or digit: name the criterion" in str(
        caught.value)


def test_a_zip_member_the_file_system_cannot_take_is_refused(tmp_path, example_bundle,
                                                             make_engine_db):
    import zipfile

    archive = tmp_path / "long.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(example_bundle.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(example_bundle).as_posix())
        zf.writestr("images/" + "a" * 300 + ".png", b"x")
    problems = _refused(make_engine_db("p.db"), archive)
    assert problems == [f"long.zip: images/{'a' * 293}...: cannot extract the member: "
                        "File name too long"]


def test_judgments_share_one_string_per_output_judge_and_question(example_bundle):
    """A full benchmark run repeats each output's id on every question of every judge:
    the records hold one str object per distinct id (issue #18: an import's memory)."""
    from annotation.formats.bundle import read_bundle_dir

    project = read_bundle_dir(example_bundle)
    by_value: dict[str, set[int]] = {}
    for j in project.judgments:
        for value in (j.judge, j.output_id, j.question_id, j.criterion, j.answer):
            if value is not None:
                by_value.setdefault(value, set()).add(id(value))
    assert len(project.judgments) >= 5 and len(by_value) < 5 * len(project.judgments)
    assert {v: ids for v, ids in by_value.items() if len(ids) > 1} == {}
