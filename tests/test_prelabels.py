"""VIF-Bench reserved meta keys in bundles: visual-instruction targets, conflict labels,
reference pre-labels, and visual instructions drawn from the task meta at import.

Every refusal names file, line and field and leaves the database as it was (checked with a
checksum over every row); images drawn at import are checked by their decoded pixels.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from annotation.formats.bundle import rendered_path, write_bundle
from annotation.formats.importers import import_path
from annotation.formats.validate import prelabel_problems, task_meta_problems
from annotation.records import ImportRefused
from annotation.store import Store
from annotation.vif import draw as vi_draw
from annotation.vif.conflicts import task_conflicts
from tests.helpers.bundles import (
    DOC,
    db_checksum,
    make_image,
    read_jsonl,
    write_doc_example,
    write_jsonl,
)

CYAN = (0, 0xE5, 0xFF)
YELLOW = (0xFF, 0xD4, 0x00)
STORE_ENGINES = ("sqlite", "postgresql")


# --------------------------------------------------------------------------- helpers


def edit_task(root: Path, change) -> None:
    """Apply ``change`` to the only task (t1) of the documented example bundle."""
    rows = read_jsonl(root / "tasks.jsonl")
    change(rows[0])
    write_jsonl(root / "tasks.jsonl", rows)


def refused(store: Store, root: Path) -> list[str]:
    """Import ``root`` into ``store``: it must be refused and change nothing."""
    before = db_checksum(store.location)
    with pytest.raises(ImportRefused) as info:
        import_path(store, root)
    assert db_checksum(store.location) == before, "a refused import changed the database"
    return [str(p) for p in info.value.problems]


@pytest.fixture
def loaded(store: Store, example_bundle: Path, tmp_path: Path) -> tuple[Store, Path]:
    """A store that already holds a project, and a second bundle (task v1) to import."""
    import_path(store, example_bundle)
    other = write_doc_example(tmp_path / "second")
    rows = read_jsonl(other / "tasks.jsonl")
    rows[0]["task_id"] = "v1"
    rows[0]["checklist_id"] = "v1"
    for q in rows[0]["questions"]:
        q["question_id"] = q["question_id"].replace("t1.", "v1.")
        q["depends_on"] = [d.replace("t1.", "v1.") for d in q.get("depends_on", [])]
    write_jsonl(other / "tasks.jsonl", rows)
    write_jsonl(other / "outputs.jsonl", [])
    (other / "judgments.jsonl").unlink()
    (other / "annotations.jsonl").unlink()
    return store, other


def prelabel(**fields: Any) -> dict[str, Any]:
    return {"yaw": -35, "yaw_reliable": True, "light_distinctive": False,
            "wind_responsive": True, "pose_distinctive": False, "notes": "facing left",
            "source": "gpt-5", **fields}


# --------------------------------------------------------------------- valid content


def test_valid_prelabels_and_targets_import_and_keep_everything(loaded) -> None:
    store, root = loaded

    def change(task: dict) -> None:
        task["images"][0]["meta"] = {"prelabel": prelabel(), "category": "animal"}
        task["images"][1]["meta"] = {"prelabel": {"yaw": None, "yaw_reliable": None,
                                                  "lighting_distinctive": True}}
        task["meta"] = {
            "layout": [{"subject": "cat", "image": 0, "box": [0.1, 0.6, 0.5, 0.95],
                        "color": "#E6194B", "label": "Image_0: cat", "extra": 1},
                       {"subject": "microwave", "image": 1, "box": [0, 0, 1, 0.5]}],
            "orientation": [{"subject": "cat", "yaw": 40, "pitch": 10,
                             "anchor": [0.3, 0.77]}],
            "arrows": [{"kind": "wind", "start": [0, 0.5], "end": [1, 0.5]},
                       {"kind": "light", "start": [0.9, 0.1], "end": [0.5, 0.6]}],
            "pose": [{"subject": "cat", "image": 2}],
            "visual_instruction_types": ["layout", "light+wind"],
            "conflicts": {"orientation_conflict": True, "light_conflict": None},
            "anything": {"else": ["is", "free"]},
        }

    edit_task(root, change)
    import_path(store, root)
    images = store.images_df("v1")
    meta0 = json.loads(images.meta.iloc[0])
    assert meta0["prelabel"] == prelabel() and meta0["category"] == "animal"
    assert json.loads(images.meta.iloc[1])["prelabel"]["lighting_distinctive"] is True
    task = store.tasks_df().set_index("task_id").loc["v1"]
    assert json.loads(task.meta)["anything"] == {"else": ["is", "free"]}


def test_the_documented_compact_layout_form_is_accepted() -> None:
    assert task_meta_problems({"layout": {"cat": [0.1, 0.6, 0.5, 0.95]}}, 3) == []
    assert task_meta_problems({"layout": {"cat": [0.5, 0.6, 0.1, 0.95]}}, 3) == [
        ("meta.layout.cat",
         "needs x0 < x1 and y0 < y1 (top-left, then bottom-right), got [0.5, 0.6, 0.1, 0.95]")]


def test_keys_are_checked_only_when_present() -> None:
    assert task_meta_problems({}, 0) == []
    assert task_meta_problems({"layouts": "free", "arrow": 3, "conflict": "x"}, 0) == []
    assert prelabel_problems({}) == []


# ---------------------------------------------------------------------- refusals


BAD_TASK_META = [
    ({"conflicts": {"wind": True}}, "meta.conflicts.wind", "unknown conflict label"),
    ({"conflicts": {"wind_conflict": "yes"}}, "meta.conflicts.wind_conflict",
     'expected true, false or null, got "yes"'),
    ({"conflicts": ["wind"]}, "meta.conflicts", "expected an object"),
    ({"orientation": [{"yaw": 30}]}, "meta.orientation[0].subject",
     "expected a non-empty string, got null"),
    ({"orientation": [{"subject": "cat", "yaw": "left"}]}, "meta.orientation[0].yaw",
     'expected a number of degrees, got "left"'),
    ({"orientation": [{"subject": "cat", "yaw": 30, "pitch": "up"}]},
     "meta.orientation[0].pitch", 'expected a number of degrees, got "up"'),
    ({"orientation": {"subject": "cat", "yaw": 30}}, "meta.orientation",
     "expected a list of objects"),
    ({"arrows": [{"kind": "rain", "start": [0, 0], "end": [1, 1]}]}, "meta.arrows[0].kind",
     'expected "wind" or "light", got "rain"'),
    ({"arrows": [{"kind": "wind", "start": [0, 1.2], "end": [1, 1]}]}, "meta.arrows[0].start",
     "expected [x, y], two numbers in 0..1, got [0, 1.2]"),
    ({"arrows": [{"kind": "wind", "start": [0.5, 0.5], "end": [0.5, 0.5]}]},
     "meta.arrows[0].end", "must differ from start"),
    ({"arrows": [{"kind": "light", "start": [0.1, 0.1]}]}, "meta.arrows[0].end",
     "expected [x, y], two numbers in 0..1, got null"),
    ({"layout": [{"subject": "cat", "box": [0.5, 0.1, 0.2, 0.9]}]}, "meta.layout[0].box",
     "needs x0 < x1 and y0 < y1"),
    ({"layout": [{"subject": "cat", "box": [10, 10, 500, 900]}]}, "meta.layout[0].box",
     "coordinates are normalized: each must be in 0..1"),
    ({"layout": [{"subject": "cat", "box": [0.1, 0.2, 0.3]}]}, "meta.layout[0].box",
     "expected [x0, y0, x1, y1], four numbers in 0..1, got [0.1, 0.2, 0.3]"),
    ({"layout": [{"subject": "cat", "box": [0.1, 0.2, 0.3, 0.4], "image": 7}]},
     "meta.layout[0].image", "Image_7 does not exist: the task has 3 images"),
    ({"layout": [{"subject": "cat", "box": [0.1, 0.2, 0.3, 0.4], "color": "red"}]},
     "meta.layout[0].color", 'expected "#RRGGBB", got "red"'),
    ({"pose": {"subject": "cat"}}, "meta.pose.image", "missing: the index of the pose"),
    ({"pose": {"subject": "cat", "image": 3}}, "meta.pose.image",
     "Image_3 does not exist: the task has 3 images"),
    ({"pose": [{"subject": "cat", "image": True}]}, "meta.pose[0].image",
     "expected an image index (a whole number), got true"),
    ({"visual_instruction_types": "layout"}, "meta.visual_instruction_types",
     'expected a list of strings, got "layout"'),
]


@pytest.mark.parametrize(("meta", "fld", "message"), BAD_TASK_META,
                         ids=[f for _m, f, _x in BAD_TASK_META])
def test_bad_task_meta_is_refused_with_file_line_and_field(loaded, meta, fld, message):
    store, root = loaded

    def change(task: dict) -> None:
        task["meta"] = {"formula": "kept", **meta}

    edit_task(root, change)
    problems = refused(store, root)
    assert any(p.startswith(f"tasks.jsonl:1: {fld}: {message}") for p in problems), problems


BAD_PRELABELS = [
    ({"yaw": "left"}, "yaw", 'expected a number of degrees, got "left"'),
    ({"yaw": 400}, "yaw", "400 degrees is outside -360..360"),
    ({"yaw": True}, "yaw", "expected a number of degrees, got true"),
    ({"yaw_reliable": "yes"}, "yaw_reliable", 'expected true, false or null, got "yes"'),
    ({"light_distinctive": 1}, "light_distinctive", "expected true, false or null, got 1"),
    ({"wind_responsive": [True]}, "wind_responsive", "expected true, false or null, got [true]"),
    ({"pose_distinctive": {}}, "pose_distinctive", "expected true, false or null, got an obj"),
    ({"notes": 3}, "notes", "expected a string, got 3"),
    ({"source": None}, "source", "expected a string, got null"),
    ({"lighting_distinctive": True}, "lighting_distinctive", "disagrees with light_distinct"),
    ({"yaw_reliabel": True}, "yaw_reliabel", "unknown pre-label field (allowed: yaw, "),
]


@pytest.mark.parametrize(("fields", "fld", "message"), BAD_PRELABELS,
                         ids=[f for _m, f, _x in BAD_PRELABELS])
def test_bad_prelabels_are_refused_with_file_line_and_field(loaded, fields, fld, message):
    store, root = loaded
    edit_task(root, lambda t: t["images"][1].update(meta={"prelabel": prelabel(**fields)}))
    problems = refused(store, root)
    start = f"tasks.jsonl:1: images[1].meta.prelabel.{fld}: {message}"
    assert any(p.startswith(start) for p in problems), problems


def test_the_documented_error_message(loaded) -> None:
    store, root = loaded
    rows = read_jsonl(root / "tasks.jsonl")
    rows = [dict(json.loads(json.dumps(rows[0])), task_id=f"v{n}", checklist_id="v1")
            for n in (1, 2, 3)]
    for row in rows[1:]:
        row.pop("questions")
    rows[2]["images"][1]["meta"] = {"prelabel": {"yaw": "left"}}
    write_jsonl(root / "tasks.jsonl", rows)
    problems = refused(store, root)
    assert problems == [
        'tasks.jsonl:3: images[1].meta.prelabel.yaw: expected a number of degrees, got "left"'
    ]


def test_prelabel_must_be_an_object(loaded) -> None:
    store, root = loaded
    edit_task(root, lambda t: t["images"][0].update(meta={"prelabel": "left, reliable"}))
    assert refused(store, root) == [
        'tasks.jsonl:1: images[0].meta.prelabel: expected an object, got "left, reliable"'
    ]


# ------------------------------------------------------- drawing VI images from specs


SPEC_META = {
    "layout": [{"subject": "cat", "image": 0, "box": [0.1, 0.4, 0.5, 0.95]},
               {"subject": "microwave", "image": 1, "box": [0.55, 0.1, 0.95, 0.5]}],
    "orientation": [{"subject": "cat", "yaw": 40, "pitch": 10}],
    "arrows": [{"kind": "wind", "start": [0.1, 0.3], "end": [0.8, 0.35]},
               {"kind": "light", "start": [0.9, 0.1], "end": [0.5, 0.7]}],
}


def _spec_task(task: dict) -> None:
    task["images"][2] = {"role": "visual_instruction", "kind": "layout", "label": "boxes"}
    task["images"].append({"role": "visual_instruction", "kind": "orientation"})
    task["images"].append({"role": "visual_instruction", "kind": "light+wind", "path": None,
                           "meta": {"note": "kept"}})
    task["meta"] = dict(SPEC_META)


def _pixels(store: Store, sha: str) -> Image.Image:
    with Image.open(store.file_path(sha)) as im:
        return im.convert("RGB")


def _where(img: Image.Image, rgb: tuple[int, int, int], tol: int = 12) -> list[tuple[int, int]]:
    """Every (x, y) whose decoded colour is ``rgb`` (within ``tol`` per channel)."""
    pixels = np.asarray(img, dtype=np.int16)
    ys, xs = np.nonzero((np.abs(pixels - np.array(rgb)) <= tol).all(axis=2))
    return list(zip(xs.tolist(), ys.tolist(), strict=True))


def _count(img: Image.Image, rgb: tuple[int, int, int], tol: int = 12) -> int:
    return len(_where(img, rgb, tol))


@pytest.mark.slow
def test_visual_instructions_are_drawn_from_the_task_meta(store, example_bundle, tmp_path):
    edit_task(example_bundle, _spec_task)
    import_path(store, example_bundle)
    images = store.images_df("t1").set_index("idx")
    assert list(images.kind) == ["main", "main", "layout", "orientation", "light+wind"]
    assert list(images.path[2:]) == [rendered_path("t1", 2, "layout"),
                                     "rendered/t1/Image_3_orientation.png",
                                     "rendered/t1/Image_4_light_wind.png"]
    metas = [json.loads(m) for m in images.meta]
    assert [m.get("rendered_from") for m in metas] == [
        None, None, "meta.layout", "meta.orientation", "meta.arrows"]
    assert metas[4]["note"] == "kept"
    assert images.label[2] == "boxes"
    assert (images.width[2:] == 1024).all() and (images.height[2:] == 1024).all()

    layout = _pixels(store, images.sha256[2])
    assert layout.getpixel((3, 3)) == (255, 255, 255)
    red, blue = vi_draw._rgb(vi_draw.PALETTE[0]), vi_draw._rgb(vi_draw.PALETTE[1])
    assert layout.getpixel((round(0.1 * 1024) + 1, round(0.8 * 1024))) == red
    assert layout.getpixel((round(0.95 * 1024) - 1, round(0.3 * 1024))) == blue

    arrows = _pixels(store, images.sha256[4])
    assert _count(arrows, CYAN) > 2000 and _count(arrows, YELLOW) > 2000
    assert arrows.getpixel((3, 3)) == (0, 0, 0)
    # the cyan wind arrow runs along y ~ 0.3..0.35, the yellow light arrow does not
    assert arrows.getpixel((round(0.45 * 1024), round(0.325 * 1024))) == CYAN

    pyramid = _pixels(store, images.sha256[3])
    front = _where(pyramid, vi_draw._rgb(vi_draw.PYRAMID_FRONT), tol=0)
    assert len(front) > 2000
    # anchored on the centre of the cat's layout box (0.3, 0.675), not the canvas centre,
    # with its base (the front) turned to screen-right of it (yaw 40)
    cx = sum(x for x, _y in front) / len(front) / 1024
    cy = sum(y for _x, y in front) / len(front) / 1024
    assert 0.3 < cx < 0.6 and 0.55 < cy < 0.8, (cx, cy)
    assert pyramid.getpixel((3, 3)) == (0, 0, 0)

    # the files are written by export, and the exported bundle imports to the same content
    out = tmp_path / "exported"
    write_bundle(store.read_project(), out)
    exported = read_jsonl(out / "tasks.jsonl")[0]["images"]
    assert exported[4]["path"] == "rendered/t1/Image_4_light_wind.png"
    assert exported[4]["meta"] == {"note": "kept", "rendered_from": "meta.arrows"}
    assert (out / exported[4]["path"]).is_file()
    with Store.open(tmp_path / "copy.db") as copy:  # a SQLite file, from either engine
        import_path(copy, out)
        assert list(copy.images_df("t1").sha256) == list(images.sha256)
        assert list(copy.images_df("t1").meta) == list(images.meta)
    # importing the original bundle again: the same drawing, nothing changes
    before = db_checksum(store.location)
    summary = import_path(store, example_bundle)
    assert summary.unchanged["tasks"] == 1 and sum(summary.written.values()) == 0
    assert store.counts()["images"] == 5
    assert db_checksum(store.location) != before  # only the import log grew
    assert store.counts()["imports"] == 2


def test_drawn_images_from_a_zip_bundle(tmp_path, example_bundle, engine_db):
    edit_task(example_bundle, _spec_task)
    archive = shutil.make_archive(str(tmp_path / "spec"), "zip", example_bundle)
    with Store.open(engine_db) as store:
        import_path(store, Path(archive))
        images = store.images_df("t1")
        assert images.meta.str.contains("rendered_from").sum() == 3
        for sha in images.sha256:
            assert store.file_path(sha).is_file()


@pytest.mark.parametrize(("kind", "meta", "message"), [
    ("wind", {"arrows": [{"kind": "light", "start": [0, 0], "end": [1, 1]}]},
     "missing, and the task's meta.arrows has no wind arrow to draw it from"),
    ("light+wind", {"arrows": [{"kind": "light", "start": [0, 0], "end": [1, 1]}]},
     "missing, and the task's meta.arrows has no wind arrow to draw it from"),
    ("orientation", {"layout": {"cat": [0.1, 0.1, 0.5, 0.5]}},
     "missing, and the task has no meta.orientation to draw it from"),
    ("layout", {"layout": []},
     "missing, and the task's meta.layout has no box to draw it from"),
    ("pose", {"pose": {"subject": "cat", "image": 2}}, "missing"),
])
def test_missing_spec_is_a_located_error(loaded, kind, meta, message):
    store, root = loaded

    def change(task: dict) -> None:
        task["images"][2] = {"role": "visual_instruction", "kind": kind}
        task["meta"] = meta

    edit_task(root, change)
    assert refused(store, root) == [f"tasks.jsonl:1: images[2].path: {message}"]


def test_a_reference_without_path_is_still_refused(loaded):
    store, root = loaded
    edit_task(root, lambda t: t["images"][0].pop("path"))
    assert refused(store, root) == ["tasks.jsonl:1: images[0].path: missing"]


def test_bad_spec_refuses_once_and_draws_nothing(loaded):
    store, root = loaded

    def change(task: dict) -> None:
        task["images"][2] = {"role": "visual_instruction", "kind": "wind"}
        task["meta"] = {"arrows": [{"kind": "wind", "start": [0, 0], "end": [2, 2]}]}

    edit_task(root, change)
    assert refused(store, root) == [
        "tasks.jsonl:1: meta.arrows[0].end: expected [x, y], two numbers in 0..1, got [2, 2]"
    ]


def test_rendered_paths_are_safe_and_distinct() -> None:
    assert rendered_path("v6_n2_00", 3, "light+wind") == "rendered/v6_n2_00/Image_3_light_wind.png"
    odd = rendered_path("../a b/c", 1, "layout")
    assert odd.startswith("rendered/a_b_c-") and ".." not in odd
    assert rendered_path("a/b", 1, "layout") != rendered_path("a_b", 1, "layout")


# ------------------------------------------------------------ the documented example


def test_the_documented_section_example_imports_and_its_labels_follow_the_rules(tmp_path,
                                                                                 engine_db):
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## VIF-Bench visual instructions and conflict pre-labels", 1)[1]
    block = re.search(r"```json\n(.*?)```", section, re.S)
    assert block
    task = json.loads(block.group(1))
    root = write_doc_example(tmp_path / "doc")
    make_image(root / "refs" / "cat.png", color="orange")
    write_jsonl(root / "tasks.jsonl", [dict(task, questions=[])])
    write_jsonl(root / "outputs.jsonl", [])
    (root / "judgments.jsonl").unlink()
    (root / "annotations.jsonl").unlink()
    with Store.open(engine_db) as store:
        import_path(store, root)
        assert store.counts()["images"] == 4
    pre = {"cat": task["images"][0]["meta"]["prelabel"]}
    decisions = task_conflicts(pre, task["meta"])
    assert {f"{k}_conflict": decisions[k].conflict
            for k in ("orientation", "light", "wind", "pose")} == task["meta"]["conflicts"]
