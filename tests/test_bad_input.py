"""Every class of bad input is refused with file, line and field, and writes nothing."""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from annotation.cli import main
from annotation.formats.bundle import write_bundle
from annotation.formats.importers import import_path
from annotation.records import ImportRefused
from annotation.store import Store
from tests.helpers.bundles import (
    db_checksum,
    make_image,
    read_jsonl,
    write_doc_example,
    write_jsonl,
)

STORE_ENGINES = ("sqlite", "postgresql")


def edit_jsonl(name: str, line: int, change: Callable[[dict], object]):
    """A mutation that edits record ``line`` (1-based) of a JSONL file of the bundle."""
    def mutate(root: Path) -> None:
        rows = read_jsonl(root / name)
        change(rows[line - 1])
        write_jsonl(root / name, rows)
    return mutate


def set_field(path: list, value):
    def change(row: dict) -> None:
        target = row
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


def drop_field(path: list):
    def change(row: dict) -> None:
        target = row
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return change


def replace_text(name: str, old: str, new: str):
    def mutate(root: Path) -> None:
        text = (root / name).read_text(encoding="utf-8")
        assert old in text, old
        (root / name).write_text(text.replace(old, new, 1), encoding="utf-8")
    return mutate


def image_file(writer: Callable[[Path], None]):
    """Replace the first reference image of t1 with what ``writer`` writes."""
    def mutate(root: Path) -> None:
        writer(root / "images/t1/cat.png")
    return mutate


def truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def bomb(path: Path) -> None:
    Image.new("1", (9000, 9000)).save(path)  # 81 Mpx, a few KB on disk


def symlink_out(root: Path) -> None:
    outside = make_image(root.parent / "outside.png")
    target = root / "images/t1/cat.png"
    target.unlink()
    os.symlink(outside, target)


CASES = {
    "bad json": (replace_text("tasks.jsonl", '{"task_id"', '{task_id"'),
                 "tasks.jsonl:1: invalid JSON"),
    "not an object": (replace_text("judgments.jsonl", '{"judge": "gpt-5", "output_id": '
                                   '"t1/modelA", "question_id": "t1.q1", "answer": "yes"}',
                                   '["gpt-5"]'),
                      "judgments.jsonl:1: each line must be a JSON object"),
    "not utf-8": (lambda r: (r / "outputs.jsonl").write_bytes(b'{"output_id": "\xff"}\n'),
                  "outputs.jsonl:1: not UTF-8"),
    "missing field": (edit_jsonl("tasks.jsonl", 1, drop_field(["instruction"])),
                      "tasks.jsonl:1: instruction: missing"),
    "wrong type": (edit_jsonl("tasks.jsonl", 1, set_field(["images"], "cat.png")),
                   "tasks.jsonl:1: images: must be a list, not a string"),
    "unknown field": (edit_jsonl("tasks.jsonl", 1, lambda r: r["questions"][0].update(
        pass_anwser="yes")), "tasks.jsonl:1: questions[0].pass_anwser: unknown field"),
    "bad enum role": (edit_jsonl("tasks.jsonl", 1, set_field(["images", 1, "role"], "ref")),
                      "tasks.jsonl:1: images[1].role: must be one of reference, "
                      "visual_instruction, not 'ref'"),
    "bad pass answer": (edit_jsonl("tasks.jsonl", 1, set_field(["questions", 2, "pass_answer"],
                                                               "No")),
                        "tasks.jsonl:1: questions[2].pass_answer: must be one of yes, no"),
    "duplicate output id": (edit_jsonl("outputs.jsonl", 2, set_field(["output_id"],
                                                                      "t1/modelA")),
                            "outputs.jsonl:2: output_id: duplicate output_id 't1/modelA'"),
    "unknown task": (edit_jsonl("outputs.jsonl", 1, set_field(["task_id"], "t9")),
                     "outputs.jsonl:1: task_id: unknown task 't9'"),
    "unknown output": (edit_jsonl("judgments.jsonl", 1, set_field(["output_id"], "zz")),
                       "judgments.jsonl:1: output_id: unknown output 'zz'"),
    "unknown question": (edit_jsonl("judgments.jsonl", 2, set_field(["question_id"], "t1.q9")),
                         "judgments.jsonl:2: question_id: unknown question 't1.q9'"),
    "unknown criterion": (edit_jsonl("judgments.jsonl", 4, set_field(["criterion"], "beauty")),
                          "judgments.jsonl:4: criterion: unknown criterion 'beauty'"),
    "undeclared judge": (edit_jsonl("judgments.jsonl", 3, set_field(["judge"], "claude")),
                         "judgments.jsonl:3: judge: unknown judge 'claude'"),
    "duplicate judgment": (edit_jsonl("judgments.jsonl", 3, set_field(["question_id"], "t1.q1")),
                           "judgments.jsonl:3: output_id: a second answer of this judge"),
    "score out of range": (edit_jsonl("judgments.jsonl", 4, set_field(["score"], 11)),
                           "judgments.jsonl:4: score: 11 is outside the scale 1..10"),
    "metric off its scale": (edit_jsonl("judgments.jsonl", 5, set_field(["score"], 3.5)),
                             "judgments.jsonl:5: score: 3.5 is outside the scale 0..1"),
    "NaN score": (replace_text("judgments.jsonl", '"score": 8', '"score": NaN'),
                  "judgments.jsonl:4: score: NaN is not allowed (numbers must be finite)"),
    "infinite score": (replace_text("judgments.jsonl", '"score": 8', '"score": 1e400'),
                       "judgments.jsonl:4: score: number inf out of range"),
    "huge integer": (replace_text("judgments.jsonl", '"score": 8', '"score": ' + "9" * 400),
                     "judgments.jsonl:4: score: number too large"),
    "boolean score": (edit_jsonl("judgments.jsonl", 4, set_field(["score"], True)),
                      "judgments.jsonl:4: score: must be a number, not a boolean"),
    "both question and criterion": (
        edit_jsonl("judgments.jsonl", 1, set_field(["criterion"], "visual_quality")),
        "judgments.jsonl:1: question_id: give exactly one of"),
    "annotation off the step": (edit_jsonl("annotations.jsonl", 3, set_field(["score"], 7.5)),
                                "annotations.jsonl:3: score: 7.5 is not on the scale's step"),
    "annotation of a missing output": (
        edit_jsonl("annotations.jsonl", 1, set_field(["output_id"], "t1/modelB")),
        "annotations.jsonl:1: output_id: output 't1/modelB' is missing"),
    "bad annotation time": (edit_jsonl("annotations.jsonl", 1, set_field(["created_at"],
                                                                         "yesterday")),
                            "annotations.jsonl:1: created_at: not an ISO 8601 time"),
    "bad human answer": (edit_jsonl("annotations.jsonl", 1, set_field(["answer"], "maybe")),
                         "annotations.jsonl:1: answer: must be one of yes, no, cant_tell"),
    "unknown dependency": (edit_jsonl("tasks.jsonl", 1, set_field(
        ["questions", 1, "depends_on"], ["t1.q7"])),
        "tasks.jsonl:1: questions[t1.q2].depends_on: unknown question 't1.q7'"),
    "missing with a path": (edit_jsonl("outputs.jsonl", 2, set_field(["path"],
                                                                      "outputs/modelA/t1.png")),
                            "outputs.jsonl:2: path: an output marked missing cannot have a path"),
    "path traversal": (edit_jsonl("tasks.jsonl", 1, set_field(["images", 0, "path"],
                                                              "../outside.png")),
                       "tasks.jsonl:1: images[0].path: path leaves the bundle"),
    "absolute path": (edit_jsonl("tasks.jsonl", 1, set_field(["images", 0, "path"],
                                                             "/etc/passwd")),
                      "tasks.jsonl:1: images[0].path: absolute path not allowed"),
    "symlink out of the bundle": (symlink_out,
                                  "tasks.jsonl:1: images[0].path: path leaves the bundle "
                                  "(symlink)"),
    "file not found": (edit_jsonl("outputs.jsonl", 1, set_field(["path"], "outputs/nope.png")),
                       "outputs.jsonl:1: path: file not found"),
    "not an image": (image_file(lambda p: p.write_text("<html>hello</html>")),
                     "tasks.jsonl:1: images[0].path: not a decodable image"),
    "truncated image": (image_file(truncated),
                        "tasks.jsonl:1: images[0].path: not a decodable image"),
    "decompression bomb": (image_file(bomb),
                           "tasks.jsonl:1: images[0].path: image has 9000x9000 pixels, over "
                           "the limit"),
    "huge text": (edit_jsonl("judgments.jsonl", 2, set_field(["raw"], "x" * 1_000_001)),
                  "judgments.jsonl:2: raw: text of 1,000,001 characters is over the limit"),
    "no bundle.json": (lambda r: (r / "bundle.json").unlink(), "bundle.json: file not found"),
    "empty bundle.json": (lambda r: (r / "bundle.json").write_text(""),
                          "bundle.json:1: invalid JSON: Expecting value"),
    "criterion without step": (
        replace_text("bundle.json", '"step": 1,', ''),
        "bundle.json: criteria[0].step: missing (use null for a continuous scale)"),
    "bad judge kind": (replace_text("bundle.json", '"kind": "vlm"', '"kind": "human"'),
                       "bundle.json: judges[0].kind: must be one of vlm, metric"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_bundle_is_refused_and_nothing_is_written(case, tmp_path, example_bundle,
                                                      engine_db):
    # a database that already holds a project: it must stay exactly as it was
    db = engine_db
    with Store.open(db) as store:
        import_path(store, write_doc_example(tmp_path / "other"))
    before = db_checksum(db)
    mutate, expected = CASES[case]
    mutate(example_bundle)
    with Store.open(db) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, example_bundle)
    messages = [str(p) for p in refused.value.problems]
    assert any(expected in m for m in messages), messages
    assert db_checksum(db) == before


def test_a_conflicting_reimport_is_refused(example_bundle, engine_db):
    db = engine_db
    with Store.open(db) as store:
        import_path(store, example_bundle)
    before = db_checksum(db)
    edit_jsonl("tasks.jsonl", 1, set_field(["instruction"], "Something else."))(example_bundle)
    edit_jsonl("judgments.jsonl", 2, set_field(["answer"], "yes"))(example_bundle)
    with Store.open(db) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, example_bundle)
    messages = [str(p) for p in refused.value.problems]
    assert "tasks.jsonl:1: instruction: differs from task 't1' already in the database" in messages
    assert ("judgments.jsonl:2: answer: differs from this judge's answer already in the "
            "database") in messages
    assert db_checksum(db) == before


def test_many_errors_are_reported_together_up_to_twenty(example_bundle, engine_db):
    rows = read_jsonl(example_bundle / "judgments.jsonl")
    write_jsonl(example_bundle / "judgments.jsonl",
                [dict(rows[0], answer="maybe") for _ in range(30)])
    with Store.open(engine_db) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, example_bundle)
    assert len(refused.value.problems) == 20
    assert str(refused.value.problems[4]).startswith("judgments.jsonl:5: answer:")


def _zip_with(tmp_path: Path, example_bundle: Path, extra: Callable[[zipfile.ZipFile], None]
              ) -> Path:
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(example_bundle.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(example_bundle).as_posix())
        extra(zf)
    return archive


def test_zip_slip_is_refused(tmp_path, example_bundle, engine_db):
    archive = _zip_with(tmp_path, example_bundle,
                        lambda zf: zf.writestr("../../evil.txt", "pwned"))
    with Store.open(engine_db) as store:
        with pytest.raises(ImportRefused) as refused:
            import_path(store, archive)
        assert store.counts()["imports"] == 0
    assert "member path leaves the archive (zip slip)" in str(refused.value)
    assert not (tmp_path.parent / "evil.txt").exists()


def test_symlink_in_zip_is_refused(tmp_path, example_bundle, engine_db):
    def add_link(zf: zipfile.ZipFile) -> None:
        info = zipfile.ZipInfo("images/link.png")
        info.external_attr = (0o120777 << 16)
        zf.writestr(info, "/etc/passwd")
    archive = _zip_with(tmp_path, example_bundle, add_link)
    with Store.open(engine_db) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, archive)
    assert "symbolic links are not allowed" in str(refused.value)


@pytest.mark.slow
def test_zip_bomb_member_is_refused(tmp_path, example_bundle, engine_db):
    def add_bomb(zf: zipfile.ZipFile) -> None:
        zf.writestr(zipfile.ZipInfo("padding.bin"), b"\0" * (64 * 1024 * 1024),
                    compress_type=zipfile.ZIP_DEFLATED)
    archive = _zip_with(tmp_path, example_bundle, add_bomb)
    with Store.open(engine_db) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, archive)
    assert "compression ratio too high" in str(refused.value)


def test_cli_prints_the_located_error_and_exits_1(example_bundle, capsys, engine_db):
    edit_jsonl("tasks.jsonl", 1, set_field(["images", 2, "path"], "images/t1/nope.png"))(
        example_bundle)
    code = main(["import", str(example_bundle), "--db", engine_db])
    err = capsys.readouterr().err
    assert code == 1
    assert "nothing was written" in err
    assert "tasks.jsonl:1: images[2].path: file not found: 'images/t1/nope.png'" in err


def test_html_in_text_fields_is_stored_verbatim(store, example_bundle):
    """Text is data: stored as given (pages render it inert), never interpreted here."""
    payload = "<script>alert(1)</script> **bold** =HYPERLINK(\"x\")"
    edit_jsonl("tasks.jsonl", 1, set_field(["instruction"], payload))(example_bundle)
    import_path(store, example_bundle)
    assert store.tasks_df().instruction[0] == payload
    out = example_bundle.parent / "exported"
    write_bundle(store.read_project(), out)
    assert json.loads((out / "tasks.jsonl").read_text().splitlines()[0])["instruction"] == \
        payload  # exported verbatim, not escaped or rendered


def test_a_metric_judge_without_a_scale_keeps_its_own_units(example_bundle, engine_db):
    """A ``kind: "metric"`` judge that declares no scale (a converter of CLIPScore results
    rarely knows one): its 0.31 is stored as it is, not refused as off the criterion's
    1..10 (issue #15, item 11); the statistics then treat it as on its own scale."""
    from annotation.results.ratings import OWN_UNITS, own_scale
    from annotation.results.study import load_study

    doc = json.loads((example_bundle / "bundle.json").read_text())
    doc["judges"] = [j if j["name"] != "clipscore" else {"name": "clipscore", "kind": "metric"}
                     for j in doc["judges"]]
    (example_bundle / "bundle.json").write_text(json.dumps(doc))
    with Store.open(engine_db) as store:
        import_path(store, example_bundle, user="test")
        stored = store.conn.execute("SELECT score FROM judgments WHERE judge = 'clipscore'"
                                    ).fetchall()
        study = load_study(store)
    assert stored == [(0.31,)]
    assert own_scale(study, "clipscore", "visual_quality") == OWN_UNITS
    assert own_scale(study, "gpt-5", "visual_quality") is None
    from annotation.results.judge_bias import bland_altman_table
    from annotation.results.ratings import ratings_table

    rows = ratings_table(study, n_boot=0)
    mine = rows[rows.judge == "clipscore"]
    assert len(mine) and mine.mae.isna().all() and mine.bias.isna().all()
    limits = bland_altman_table(study)
    row = limits[limits.judge == "clipscore"].iloc[0]
    assert "own scale (own units)" in row.note and row[["mean_diff", "loa_lo"]].isna().all()


def test_a_vlm_score_off_the_scale_says_how_to_fix_it(example_bundle, engine_db):
    edit_jsonl("judgments.jsonl", 4, set_field(["score"], 11))(example_bundle)
    with Store.open(engine_db) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, example_bundle, user="test")
    text = str(refused.value)
    assert "judgments.jsonl:4: score: 11 is outside the scale 1..10" in text
    assert "judges[].scale" in text and '"metric"' in text
