"""``judge-audit tree --db DB --task T --out DIR``: per node the prompt, its text
downgrades and the reference images it keeps (TRACE-Bench paper, Sec. 3.5, App. C.2)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from PIL import Image

from annotation.cli import main
from annotation.store import Store
from annotation.trace.prompts import (
    ALL_IMAGES,
    FORMULA_ORDER,
    FROM_META,
    reference_problems,
    reference_terms,
    term_images,
)
from tests.helpers.bundles import read_jsonl, write_jsonl
from tests.helpers.project_state import project_state as _state
from tests.helpers.tree_fixture import write_tree_bundle


def _project(tmp_path: Path, make_engine_db: Callable[[str], str], **meta_changes) -> str:
    bundle = write_tree_bundle(tmp_path / "bundle", explicit_nodes=meta_changes.pop(
        "explicit", False))
    if meta_changes:
        tasks = read_jsonl(bundle / "tasks.jsonl")
        tasks[0]["meta"].update(meta_changes)
        write_jsonl(bundle / "tasks.jsonl", tasks)
    db = make_engine_db("t.db")
    assert main(["import", str(bundle), "--db", str(db), "--quiet"]) == 0
    return db


def _colors(folder: Path) -> list[tuple[int, ...]]:
    """The colour of each Image_<k> of a node folder, in k order (the fixture's reference
    images are flat: dog red, hat blue, cat green, style orange)."""
    files = sorted(folder.glob("Image_*.png"), key=lambda p: int(p.stem.split("_")[1]))
    return [Image.open(f).convert("RGB").getpixel((40, 40)) for f in files]


RED, BLUE, GREEN, ORANGE = (255, 0, 0), (0, 0, 255), (0, 128, 0), (255, 165, 0)


def test_every_node_gets_its_prompt_and_the_images_it_keeps(tmp_path, capsys, make_engine_db):
    db = _project(tmp_path, make_engine_db, references={"f1": 0, "g1": 1, "f2": 2, "g_style": 3})
    before = _state(db)
    out = tmp_path / "out"
    assert main(["tree", "--db", str(db), "--task", "tr1", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "prompts.jsonl" in err and "4 node prompt(s) are drafts" in err
    assert _state(db) == before  # read only
    manifest = {r["node"]: r for r in read_jsonl(out / "prompts.jsonl")}
    assert list(manifest) == ["N0", "N1", "N2a", "N2b", "N3a1"]  # breadth first
    # the root: the task's own instruction and all four images, as the generator saw them
    root = manifest["N0"]
    assert root["prompt_source"] == "task instruction"
    assert (out / "nodes/N0/prompt.txt").read_text(encoding="utf-8").startswith(
        "The dog of Image_0 wearing the hat")
    assert _colors(out / "nodes/N0") == [RED, BLUE, GREEN, ORANGE]
    # Rule 1 drops the style reference
    assert [i["image"] for i in manifest["N1"]["images"]] == [0, 1, 2]
    assert manifest["N1"]["removed"] == ["g_style"]
    # Rule 2: N2b keeps the cat only, renumbered Image_0; the dog and hat become text
    n2b = manifest["N2b"]
    assert n2b["images"] == [{"file": "nodes/N2b/Image_0.png", "image": 2, "label": "cat",
                              "terms": ["f2"]}]
    assert _colors(out / "nodes/N2b") == [GREEN]
    assert n2b["downgrades"] == ["f1⊕g1"] and n2b["downgrade_terms"] == ["f1", "g1"]
    text = (out / n2b["prompt_file"]).read_text(encoding="utf-8")
    assert n2b["prompt_source"] == "draft"
    assert "Image_0 (was Image_2, cat; f2)" in text
    assert "without their reference image: f1 (dog); g1 (hat)" in text
    # Rule 4 leaf under N2a: the dog alone; the cat stays as text context (from Rule 2)
    assert [i["image"] for i in manifest["N3a1"]["images"]] == [0]
    assert _colors(out / "nodes/N3a1") == [RED]
    assert manifest["N3a1"]["downgrade_terms"] == ["f2"]
    assert "Leave out: g1." in manifest["N3a1"]["prompt"]
    # every file the manifest names exists
    for r in manifest.values():
        assert (out / r["prompt_file"]).is_file()
        for im in r["images"]:
            assert (out / im["file"]).is_file()
        assert r["images_source"] == FROM_META


def test_prompts_given_in_tree_nodes_are_used_verbatim(tmp_path, capsys, make_engine_db):
    db = _project(tmp_path, make_engine_db, explicit=True)
    out = tmp_path / "out"
    assert main(["tree", "--db", str(db), "--task", "tr1", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "drafts" not in err
    assert "no meta.references: images matched to terms by formula order" in err
    manifest = {r["node"]: r for r in read_jsonl(out / "prompts.jsonl")}
    assert manifest["N2b"]["prompt"] == "the cat"
    assert manifest["N2b"]["prompt_source"] == "meta.tree_nodes"
    assert (out / "nodes/N2b/prompt.txt").read_text(encoding="utf-8") == "the cat\n"
    assert manifest["N0"]["prompt"] == "all"
    assert _colors(out / "nodes/N2b") == [GREEN]  # formula order: f1 g1 f2 g_style


def test_a_bad_references_map_is_refused_at_import_and_names_the_field(tmp_path, capsys,
                                                                       make_engine_db):
    bundle = write_tree_bundle(tmp_path / "bundle")
    tasks = read_jsonl(bundle / "tasks.jsonl")
    tasks[0]["meta"]["references"] = {"f1": 7, "T_rel": 0}
    write_jsonl(bundle / "tasks.jsonl", tasks)
    db = make_engine_db("t.db")
    assert main(["import", str(bundle), "--db", str(db), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "tasks.jsonl:1: meta.references.f1: expected an image index 0..3" in err
    assert "tasks.jsonl:1: meta.references.T_rel: the key must be one reference term" in err


def test_term_images_sources():
    images = [{"role": "reference"}] * 3
    assert term_images({"references": {"f_1": [0, 2]}}, "f1⊕g1", images) == (
        {"f1": (0, 2)}, FROM_META)
    assert term_images({}, "C(f1, f2)⊕g_style", images) == (
        {"f1": (0,), "f2": (1,), "g_style": (2,)}, FORMULA_ORDER)
    assert term_images({}, "f1⊕g1", images) == ({"f1": (0, 1, 2), "g1": (0, 1, 2)}, ALL_IMAGES)
    assert reference_terms("C(C(f1, Te⊕g1)⊕g_rel, f2⊕g2⊕g3)⊕g_global") == [
        "f1", "g1", "g_rel", "f2", "g2", "g3", "g_global"]  # slot 7 of Eq. (5)
    assert reference_problems({"references": [0]}, 2)[0][0] == "meta.references"
    assert reference_problems({"references": {"g1": True}}, 2)[0][0] == "meta.references.g1"


def test_manifest_lines_are_json(tmp_path, make_engine_db):
    db = _project(tmp_path, make_engine_db)
    out = tmp_path / "out"
    assert main(["tree", "--db", str(db), "--task", "tr1", "--out", str(out)]) == 0
    for line in (out / "prompts.jsonl").read_text(encoding="utf-8").splitlines():
        assert set(json.loads(line)) >= {"node", "prompt", "prompt_source", "images",
                                         "downgrades", "prompt_file"}


def test_a_lost_media_file_is_named_and_nothing_is_written(tmp_path, capsys, make_engine_db):
    db = _project(tmp_path, make_engine_db)
    from annotation.store import project as project_rows

    with Store.open(db) as store:
        cat = project_rows.task_image_files(store, "tr1")[2]
        store.media_path(str(cat["sha256"]), str(cat["format"])).unlink()
    out = tmp_path / "out"
    assert main(["tree", "--db", str(db), "--task", "tr1", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "task 'tr1': images[2]: the stored file" in err and "is missing" in err
    assert not out.exists()
