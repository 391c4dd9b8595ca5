"""Tests of the VIF-Bench importer (annotation/formats/vif.py) on a written release."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from annotation.formats import importers, vif
from annotation.records import ImportRefused, ProjectData
from annotation.store import Store
from tests.helpers.vif_fixture import T1, T2, T3, make_vif_release

SIX = (
    "text_instruction_following",
    "reference_consistency",
    "visual_instruction_adherence",
    "visual_instruction_cleanliness",
    "scene_coherence",
    "visual_quality",
)


# --------------------------------------------------------------------------- helpers


@pytest.fixture(params=["new", "old"])
def release(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The fixture release in both id forms, with what an import must find."""
    root = tmp_path / "vif-release"
    return root, make_vif_release(root, id_form=request.param)


@pytest.fixture
def new_release(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The fixture release with new-form ids (and one old-form row)."""
    root = tmp_path / "vif-release"
    return root, make_vif_release(root)


def rows(root: Path) -> list[dict[str, Any]]:
    """The rows of metadata.jsonl."""
    lines = (root / "metadata.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def write_rows(root: Path, items: list[dict[str, Any]]) -> None:
    """Rewrite metadata.jsonl."""
    (root / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items))


def refused(root: Path) -> list[str]:
    """The problems of an import that must be refused, as text."""
    with pytest.raises(ImportRefused) as info:
        vif.read(root)
    assert info.value.problems, "ImportRefused without problems"
    return [str(p) for p in info.value.problems]


def judgment_map(data: ProjectData) -> dict[tuple[str, str, str], Any]:
    """Judgments by (judge, output_id, criterion)."""
    return {(j.judge, j.output_id, j.criterion or ""): j for j in data.judgments}


# --------------------------------------------------------------------------- detect


def test_detect(tmp_path: Path, new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    assert vif.detect(root)
    assert not vif.detect(tmp_path / "nothing-here")
    only_meta = tmp_path / "only-meta"
    only_meta.mkdir()
    (only_meta / "metadata.jsonl").write_text("")
    assert not vif.detect(only_meta)
    (only_meta / "generations").mkdir()
    assert vif.detect(only_meta)
    bundle_like = tmp_path / "bundle-like"
    (bundle_like / "tasks").mkdir(parents=True)
    (bundle_like / "tasks.jsonl").write_text("")
    assert not vif.detect(bundle_like)


# --------------------------------------------------------------------------- the fixture


def test_counts_and_project(release: tuple[Path, dict[str, Any]]) -> None:
    root, expected = release
    data = vif.read(root)
    counts = data.counts()
    assert counts == {k: expected[k] for k in counts}
    assert data.format == "vif-bench"
    assert data.benchmark == "VIF-Bench"
    assert data.meta["generators"] == expected["generators"]


def test_task_ids_are_normalized_and_original_kept(release: tuple[Path, dict[str, Any]]) -> None:
    root, expected = release
    data = vif.read(root)
    assert [t.task_id for t in data.tasks] == expected["task_ids"]
    assert [t.meta["vif_id"] for t in data.tasks] == expected["vif_ids"]
    assert all("/" not in t.task_id for t in data.tasks)
    assert [t.checklist_id for t in data.tasks] == expected["task_ids"]


def test_task_meta_and_instruction(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    tasks = {t.task_id: t for t in vif.read(root).tasks}
    t1, t2, t3 = tasks[T1], tasks[T2], tasks[T3]
    assert t1.instruction.startswith("Put the fox of Image_0")
    # T2 has no instruction in metadata.jsonl: instruction.txt is used, without its newline
    assert t2.instruction.startswith("Place the dog of Image_0")
    assert t2.instruction.endswith("Remove all boxes.")
    assert t2.meta["instruction_source"] == "tasks/v6_n2_00/instruction.txt"
    assert "instruction_source" not in t1.meta
    assert t2.meta["conflicts"]["orientation_conflict"] is True
    assert t1.meta["conflicts"]["orientation_conflict"] is False
    assert t2.meta["in_vi_vs_ti_experiment"] is True
    assert t2.meta["visual_instruction_types"] == ["layout", "orientation"]
    # per-task JSON files are kept, parsed, as they are ...
    assert t2.meta["orientations"] == {"Image_0": {"yaw": 90, "pitch": 0}}
    assert t2.meta["hierarchy"] == {"main": [0, 1], "sub": []}
    assert "layout" not in t2.meta and "layout_raw" not in t2.meta
    assert t1.meta["layout_raw"] == {"Image_0": [0.2, 0.3, 0.7, 0.9]}
    assert t3.meta["arrows_raw"]["wind"] == [[0.1, 0.5], [0.8, 0.5]]
    # ... and also mapped into the documented shapes the rules and overlays read
    assert t1.meta["layout"] == [{"subject": "Image_0", "box": [0.2, 0.3, 0.7, 0.9], "image": 0}]
    assert t2.meta["orientation"] == [{"subject": "Image_0", "yaw": 90, "pitch": 0}]
    assert t3.meta["arrows"] == [
        {"kind": "wind", "start": [0.1, 0.5], "end": [0.8, 0.5]},
        {"kind": "light", "start": [0.9, 0.1], "end": [0.2, 0.8]},
    ]
    # unknown row keys are not dropped
    assert t3.meta["extra"] == {"split": "test"}


def test_images_roles_kinds_and_order(release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = release
    data = vif.read(root)
    by_task: dict[str, list[tuple[int, str, str | None]]] = {}
    for image in data.images:
        by_task.setdefault(image.task_id, []).append((image.index, image.role, image.kind))
    assert by_task[T1] == [(0, "reference", "main"), (1, "visual_instruction", "layout")]
    assert by_task[T2] == [
        (0, "reference", "main"),
        (1, "reference", "main"),
        (2, "visual_instruction", "layout"),
        (3, "visual_instruction", "orientation"),
    ]
    # listed out of order in metadata.jsonl: the index decides Image_k
    assert by_task[T3] == [
        (0, "reference", None),
        (1, "visual_instruction", "layout"),
        (2, "visual_instruction", "light+wind"),
    ]
    images = {(i.task_id, i.index): i for i in data.images}
    assert images[(T2, 0)].label == "dog"
    assert images[(T2, 3)].meta == {"is_visual_instruction": True, "target": 0, "yaw": 90,
                                    "pitch": 0}
    assert images[(T1, 0)].meta == {"type": "main", "subject": "fox"}
    assert images[(T3, 2)].file.format == "WEBP"
    assert images[(T3, 0)].file.format == "JPEG"
    assert (images[(T3, 0)].file.width, images[(T3, 0)].file.height) == (40, 52)
    for image in data.images:
        assert (root / image.path).is_file()
        assert len(image.file.sha256) == 64


def test_image_paths_follow_the_id_form_on_disk(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    paths = {(i.task_id, i.index): i.path for i in vif.read(root).images}
    assert paths[(T1, 0)] == "tasks/v1_n1_00/Image_0.png"
    assert paths[(T2, 1)] == "tasks/v6_n2_00/Image_1.jpg"  # metadata id was 'v6/n2_00'
    assert paths[(T3, 2)] == "tasks/v3/n3_01/Image_2.webp"  # folder in the old nested form


def test_criteria_and_judges(release: tuple[Path, dict[str, Any]]) -> None:
    root, expected = release
    data = vif.read(root)
    assert [c.name for c in data.criteria] == list(SIX)
    assert [c.label for c in data.criteria] == [
        "Text Instruction Following",
        "Reference Consistency",
        "Visual Instruction Adherence",
        "Visual Instruction Cleanliness",
        "Scene Coherence",
        "Visual Quality",
    ]
    assert all((c.min, c.max, c.step) == (1, 10, 1) for c in data.criteria)
    assert "average" not in {j.criterion for j in data.judgments}
    assert [j.name for j in data.judges] == expected["judge_names"]
    assert {j.kind for j in data.judges} == {"vlm"}


def test_outputs(release: tuple[Path, dict[str, Any]]) -> None:
    root, expected = release
    data = vif.read(root)
    outputs = {o.output_id: o for o in data.outputs}
    assert set(outputs) == {f"{t}/{m}" for t in expected["task_ids"]
                            for m in expected["generators"]}
    for output_id in expected["missing_output_ids"]:
        assert outputs[output_id].missing is True
        assert outputs[output_id].path is None
    for output_id in expected["no_image_output_ids"]:
        assert outputs[output_id].missing is False
        assert outputs[output_id].path is None
        assert outputs[output_id].file is None
    others = set(outputs) - set(expected["missing_output_ids"]) - set(
        expected["no_image_output_ids"])
    assert len(others) == 4
    for output_id in others:
        output = outputs[output_id]
        assert output.file is not None and output.path is not None
        assert output.path.startswith(f"generations/{output.generator}/")
        assert (root / output.path).is_file()
    assert outputs[f"{T1}/model-b"].file is not None
    assert outputs[f"{T1}/model-b"].generator == "model-b"
    assert outputs[f"{T1}/model-b"].task_id == T1


def test_scores_from_jsonl_and_text(release: tuple[Path, dict[str, Any]]) -> None:
    root, expected = release
    data = vif.read(root)
    found = judgment_map(data)
    for key, score in expected["scores"].items():
        assert found[key].score == score, key
        assert found[key].parse_status == "ok"
    # the raw text is kept beside a score read from scores.jsonl
    j = found[("gpt-5", f"{T2}/model-a", "visual_quality")]
    assert j.raw is not None and "**Visual Quality:** 7" in j.raw
    # no responses folder: scores without raw text
    j = found[("gemini-2.5-flash", f"{T1}/model-b", "visual_quality")]
    assert j.raw is None and j.score == 6
    # one judgment per judge, output and criterion
    assert len(found) == len(data.judgments)


def test_last_match_wins_in_the_fixture(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    text = (root / "results/model-a/gpt-5/responses/v3/n3_01.txt").read_text()
    assert "Scene Coherence: 3" in text  # mentioned first in the reasoning
    # the scores.jsonl row lacks scene_coherence, so the text decides
    scores_row = json.loads(
        (root / "results/model-a/gpt-5/scores.jsonl").read_text().splitlines()[2])
    assert "scene_coherence" not in scores_row
    j = judgment_map(vif.read(root))[("gpt-5", f"{T3}/model-a", "scene_coherence")]
    assert j.score == 8


def test_unparsed_response_kept_with_warning(release: tuple[Path, dict[str, Any]]) -> None:
    root, expected = release
    data = vif.read(root)
    unparsed = [j for j in data.judgments if j.parse_status == "unparsed"]
    assert len(unparsed) == expected["unparsed_judgments"]
    assert {(j.output_id, j.judge) for j in unparsed} == set(expected["unparsed"])
    assert {j.criterion for j in unparsed} == set(SIX)
    for j in unparsed:
        assert j.score is None
        assert j.raw is not None and j.raw.startswith("I'm sorry")
    messages = [str(w) for w in data.warnings if "unparsed" in w.message]
    assert len(messages) == 1
    assert f"{T2}/model-b" in messages[0]
    assert "responses/" in messages[0]


def test_warnings(release: tuple[Path, dict[str, Any]]) -> None:
    root, expected = release
    data = vif.read(root)
    text = [str(w) for w in data.warnings]
    assert len(text) == expected["warnings"], text
    average = [w for w in data.warnings if w.field == "average"]
    assert len(average) == 1
    assert (average[0].file, average[0].line) == (
        "results/model-a/gemini-2.5-flash/scores.jsonl", 2)
    assert "7.5" in average[0].message and "5.5" in average[0].message
    disagree = [w for w in data.warnings if w.field == "reference_consistency"]
    assert len(disagree) == 1
    assert f"{T3}/model-a" in disagree[0].message
    assert "keeping 6" in disagree[0].message
    missing = [t for t in text if "marked missing" in t]
    assert len(missing) == 1 and f"{T3}/model-b" in missing[0]
    no_image = [t for t in text if "no image" in t]
    assert len(no_image) == 1 and T2 in no_image[0]
    # the criterion written twice in gpt-5's text on T3/model-a raises no disagreement
    assert not any(f"{T3}/model-a" in t and "scene_coherence" in t for t in text)


def test_both_id_forms_give_the_same_records(tmp_path: Path) -> None:
    new = vif.read(_made(tmp_path / "new", "new"))
    old = vif.read(_made(tmp_path / "old", "old"))

    def key(data: ProjectData) -> dict[str, Any]:
        """What must not depend on the id form."""
        return {
            "tasks": [(t.task_id, t.instruction) for t in data.tasks],
            "images": [(i.task_id, i.index, i.role, i.kind, i.file.sha256) for i in data.images],
            "outputs": [(o.output_id, o.missing, o.path is None,
                         o.file.sha256 if o.file else None) for o in data.outputs],
            "judgments": sorted((j.judge, j.output_id, j.criterion or "", j.score or 0,
                                 j.parse_status) for j in data.judgments),
        }

    assert key(new) == key(old)
    assert [t.meta["vif_id"] for t in old.tasks] == ["v1/n1_00", "v6/n2_00", "v3/n3_01"]


def _made(root: Path, form: str) -> Path:
    """Write the fixture in ``form`` and return its root."""
    make_vif_release(root, id_form=form)
    return root


# --------------------------------------------------------------------------- parsing


def test_parse_plain_lines() -> None:
    text = (
        "Reasoning:\nThe fox is in the box, the arrows are gone.\n\n"
        "Text Instruction Following: 8.\nReference Consistency: 7.\n"
        "Visual Instruction Adherence: 6.\nVisual Instruction Cleanliness: 10.\n"
        "Scene Coherence: 5.\nVisual Quality: 9.\n"
    )
    assert vif.parse_vif_scores(text) == dict(zip(SIX, (8, 7, 6, 10, 5, 9), strict=True))


@pytest.mark.parametrize(
    "line",
    [
        "**Visual Quality:** 7",
        "**Visual Quality**: 7",
        "Visual Quality: **7**",
        "**Visual Quality: 7**",
        "**Visual Quality:** **7**.",
        "Visual Quality: 7.",
        "visual quality: 7",
        "VISUAL QUALITY:7",
        "- **Visual Quality:** 7/10",
    ],
)
def test_parse_markdown_and_case(line: str) -> None:
    assert vif.parse_vif_scores(f"Reasoning: fine.\n{line}\n")["visual_quality"] == 7


def test_parse_prompt_aliases() -> None:
    text = "Vision Instruction Adherence: 4.\nVisual Instruction Residue: 9.\n"
    parsed = vif.parse_vif_scores(text)
    assert parsed["visual_instruction_adherence"] == 4
    assert parsed["visual_instruction_cleanliness"] == 9
    assert parsed["visual_quality"] is None
    bold = vif.parse_vif_scores("**Visual Instruction Residue:** 3\n")
    assert bold["visual_instruction_cleanliness"] == 3
    assert bold["visual_instruction_adherence"] is None


def test_parse_last_match_wins() -> None:
    text = (
        "Reasoning: I first thought Scene Coherence: 2 but the shadows agree.\n"
        "Scene Coherence: 8.\nVisual Quality: 6.\n...\nRevised Visual Quality: 5.\n"
    )
    parsed = vif.parse_vif_scores(text)
    assert parsed["scene_coherence"] == 8
    assert parsed["visual_quality"] == 5


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Visual Quality: 10.", 10),
        ("Visual Quality: 1", 1),
        ("Visual Quality: 11", None),
        ("Visual Quality: 0", None),
        ("Visual Quality: 7.5", None),
        ("Visual Quality: seven", None),
        ("Visual Quality - 7", None),
        ("NonVisual Quality: 7", None),
    ],
)
def test_parse_only_whole_scores_1_to_10(text: str, expected: int | None) -> None:
    assert vif.parse_vif_scores(text)["visual_quality"] == expected


def test_parse_nothing() -> None:
    for text in ("", "I cannot evaluate this image.", "Average: 7.2"):
        parsed = vif.parse_vif_scores(text)
        assert list(parsed) == list(SIX)
        assert set(parsed.values()) == {None}


def test_normalize_task_id() -> None:
    assert vif.normalize_task_id("v6/n2_00") == "v6_n2_00"
    assert vif.normalize_task_id("v6_n2_00") == "v6_n2_00"


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"file": "Image_0.png"}, ("reference", None)),
        ({"file": "Image_3.png", "is_visual_instruction": True}, ("visual_instruction", None)),
        ({"file": "layout.png", "is_visual_instruction": False}, ("reference", None)),
        ({"file": "Image_1.png", "role": "visual_instruction", "type": "pose"},
         ("visual_instruction", "pose")),
        ({"file": "Image_1.png", "role": "VI"}, ("visual_instruction", None)),
        ({"file": "Image_1.png", "role": "main"}, ("reference", "main")),
        ({"file": "Image_1.png", "role": "reference", "kind": "scene"}, ("reference", "scene")),
        ({"file": "Image_1.png", "type": "orientation"}, ("visual_instruction", "orientation")),
        ({"file": "Image_1.png", "kind": "Light+Wind"}, ("visual_instruction", "Light+Wind")),
        ({"file": "Image_1.png", "type": "sub"}, ("reference", "sub")),
        ({"file": "Image_1.png", "type": "clothes"}, ("reference", "clothes")),
        ({"file": "Image_2_layout.png"}, ("visual_instruction", "layout")),
        ({"file": "vi_wind_light_arrow.png"}, ("visual_instruction", "light+wind")),
        ({"file": "arrow.png"}, ("visual_instruction", "arrow")),
        ({"file": "lighthouse.png"}, ("reference", None)),
        ({"file": "wind_turbine.png", "role": "reference"}, ("reference", None)),
    ],
)
def test_classify_image(entry: dict[str, Any], expected: tuple[str, str | None]) -> None:
    assert vif.classify_image(entry) == expected


# --------------------------------------------------------------------------- bad input


def test_bad_json_line_is_located(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    lines = (root / "metadata.jsonl").read_text().splitlines()
    lines[1] = lines[1][:-5]  # cut the closing of line 2
    (root / "metadata.jsonl").write_text("\n".join(lines) + "\n")
    problems = refused(root)
    assert any(p.startswith("metadata.jsonl:2: bad JSON") for p in problems), problems


def test_non_object_and_nan_lines(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    text = (root / "metadata.jsonl").read_text()
    (root / "metadata.jsonl").write_text(text + "\n[1, 2]\n" + '{"id": "x", "n": NaN}\n')
    problems = refused(root)
    assert any(p.startswith("metadata.jsonl:5: expected a JSON object") for p in problems)
    assert "metadata.jsonl:6: n: NaN is not allowed (numbers must be finite)" in problems


def test_truncated_generation_is_refused(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    path = root / "generations/model-a/v1_n1_00.png"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    problems = refused(root)
    assert any(p.startswith("generations/model-a/v1_n1_00.png: not a decodable image")
               for p in problems), problems


def test_truncated_task_image_is_refused(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    path = root / "tasks/v6_n2_00/Image_1.jpg"
    path.write_bytes(path.read_bytes()[:200])
    problems = refused(root)
    assert any(p.startswith("metadata.jsonl:2: images[1].file: tasks/v6_n2_00/Image_1.jpg: "
                            "not a decodable image") for p in problems), problems


def test_path_leaving_the_release_is_refused(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    outside = root.parent / "outside.png"
    outside.write_bytes((root / "tasks/v1_n1_00/Image_0.png").read_bytes())
    items = rows(root)
    items[0]["images"][0]["file"] = "../../../outside.png"
    items[2]["images"][0]["file"] = "/etc/passwd"
    write_rows(root, items)
    problems = refused(root)
    assert any(p.startswith("metadata.jsonl:1: images[0].file: path leaves the bundle")
               for p in problems), problems
    assert any(p.startswith("metadata.jsonl:3: images[0].file: absolute path not allowed")
               for p in problems), problems


def test_symlink_out_of_the_release_is_refused(
    new_release: tuple[Path, dict[str, Any]],
) -> None:
    root, _ = new_release
    outside = root.parent / "secret.png"
    outside.write_bytes((root / "tasks/v1_n1_00/Image_0.png").read_bytes())
    link = root / "generations/model-b/v6_n2_00.png"
    link.symlink_to(outside)
    problems = refused(root)
    assert any(p.startswith("generations/model-b/v6_n2_00.png: path leaves the bundle")
               for p in problems), problems


def test_unknown_image_file(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    items = rows(root)
    items[1]["images"][2]["file"] = "Image_9.png"
    write_rows(root, items)
    problems = refused(root)
    assert any(p.startswith("metadata.jsonl:2: images[2].file: file not found") for p in problems)


def test_duplicate_ids_in_either_form(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    items = rows(root)
    copy = dict(items[0], id="v1/n1_00")  # the old form of the first task's id
    write_rows(root, [*items, copy])
    problems = refused(root)
    assert any(p.startswith("metadata.jsonl:4: id: duplicate task id 'v1_n1_00'")
               for p in problems), problems


def test_wrong_types_and_missing_fields(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    items = rows(root)
    items[0]["images"] = "Image_0.png"
    items[1]["id"] = 7
    items[2]["conflicts"] = ["wind"]
    items[2]["in_vi_vs_ti_experiment"] = "yes"
    items[2]["images"][1]["index"] = "0"
    write_rows(root, [*items, {"instruction": "no id"}])
    problems = refused(root)
    for start in (
        "metadata.jsonl:1: images: expected a list",
        "metadata.jsonl:2: id: expected a non-empty string",
        "metadata.jsonl:3: conflicts: expected an object",
        "metadata.jsonl:3: in_vi_vs_ti_experiment: expected a boolean",
        "metadata.jsonl:3: images[1].index: expected a whole number",
        "metadata.jsonl:4: id: missing",
    ):
        assert any(p.startswith(start) for p in problems), (start, problems)


def test_bad_image_indices(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    items = rows(root)
    items[0]["images"][1]["index"] = 0
    write_rows(root, items)
    problems = refused(root)
    assert any(p.startswith("metadata.jsonl:1: images: index values must be 0..1")
               for p in problems), problems


def test_missing_instruction(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    (root / "tasks/v6_n2_00/instruction.txt").unlink()
    problems = refused(root)
    assert any(p.startswith("metadata.jsonl:2: instruction: missing") for p in problems)


def test_bad_task_json(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    (root / "tasks/v3/n3_01/arrows.json").write_text("{not json")
    problems = refused(root)
    assert any(p.startswith("tasks/v3/n3_01/arrows.json: bad JSON") for p in problems), problems


def test_score_out_of_range_and_wrong_type(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    path = root / "results/model-a/gpt-5/scores.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[0]["visual_quality"] = 11
    lines[1]["scene_coherence"] = 0
    lines[2]["reference_consistency"] = "7"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    problems = refused(root)
    for start in (
        "results/model-a/gpt-5/scores.jsonl:1: visual_quality: score 11 outside 1..10",
        "results/model-a/gpt-5/scores.jsonl:2: scene_coherence: score 0 outside 1..10",
        "results/model-a/gpt-5/scores.jsonl:3: reference_consistency: expected a number",
    ):
        assert any(p.startswith(start) for p in problems), (start, problems)


def test_unknown_ids_in_results_and_generations(
    new_release: tuple[Path, dict[str, Any]],
) -> None:
    root, _ = new_release
    path = root / "results/model-b/gpt-5/scores.jsonl"
    path.write_text(path.read_text() + json.dumps({"id": "v9_n9_99", "visual_quality": 5})
                    + "\n" + json.dumps({"id": "v1/n1_00"}) + "\n")
    (root / "results/model-b/gpt-5/responses/v9_n9_98.txt").write_text("Visual Quality: 3.")
    gen = root / "generations/model-a"
    (gen / "v9_n9_97.png").write_bytes((gen / "v1_n1_00.png").read_bytes())
    (gen / "v1" / "n1_00.png").parent.mkdir()
    (gen / "v1" / "n1_00.png").write_bytes((gen / "v1_n1_00.png").read_bytes())
    problems = refused(root)
    for start in (
        "results/model-b/gpt-5/scores.jsonl:2: id: no task 'v9_n9_99'",
        "results/model-b/gpt-5/scores.jsonl:3: id: duplicate row for task 'v1_n1_00'",
        "results/model-b/gpt-5/responses/v9_n9_98.txt: no task 'v9_n9_98'",
        "generations/model-a/v9_n9_97.png: no task 'v9_n9_97'",
    ):
        assert any(p.startswith(start) for p in problems), (start, problems)
    assert any("second generation for task 'v1_n1_00'" in p for p in problems), problems


def test_unknown_score_fields_warn(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, expected = new_release
    path = root / "results/model-a/gpt-5/scores.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[1]["visual_qualty"] = 3  # a typo must not vanish silently
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    data = vif.read(root)
    ignored = [w for w in data.warnings if "fields ignored" in w.message]
    assert [(w.file, w.line) for w in ignored] == [("results/model-a/gpt-5/scores.jsonl", 2)]
    assert "visual_qualty" in ignored[0].message
    assert len(data.judgments) == expected["judgments"]


def test_oversized_response_is_refused(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    path = root / "results/model-a/gpt-5/responses/v1_n1_00.txt"
    path.write_text("Reasoning: " + "x" * 1_000_001 + "\nVisual Quality: 7.\n")
    problems = refused(root)
    assert problems == ["results/model-a/gpt-5/responses/v1_n1_00.txt: text over 1 MB"]


def test_problems_are_capped_at_20(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    text = (root / "metadata.jsonl").read_text()
    (root / "metadata.jsonl").write_text(text + "{broken\n" * 30)
    with pytest.raises(ImportRefused) as info:
        vif.read(root)
    assert len(info.value.problems) == 20
    assert str(info.value.problems[0]).startswith("metadata.jsonl:4: bad JSON")


def test_missing_metadata(tmp_path: Path) -> None:
    (tmp_path / "tasks").mkdir()
    problems = refused(tmp_path)
    assert problems == ["metadata.jsonl: file not found"]


# --------------------------------------------------------------------------- end to end


def test_import_into_a_project(tmp_path: Path, engine_db: str) -> None:
    """The fixture goes through detection, validation and the store like any import."""
    root = tmp_path / "vif-release"
    expected = make_vif_release(root)
    assert importers.detect(root) == "vif-bench"
    store = Store.open(engine_db)
    try:
        summary = importers.import_path(store, root)
        counts = store.counts()
        for key in ("tasks", "images", "criteria", "judges", "outputs", "missing_outputs",
                    "judgments", "questions", "annotations"):
            assert counts[key] == expected[key], key
        assert len(summary.warnings) == expected["warnings"]
        judgments = store.judgments_df()
        assert (judgments["parse_status"] == "unparsed").sum() == expected["unparsed_judgments"]
        # importing the same release again changes nothing
        importers.import_path(store, root)
        assert store.counts()["judgments"] == expected["judgments"]
        assert store.counts()["tasks"] == expected["tasks"]
    finally:
        store.close()


def test_refused_import_writes_nothing(tmp_path: Path, engine_db: str) -> None:
    root = tmp_path / "vif-release"
    make_vif_release(root)
    path = root / "generations/model-a/v1_n1_00.png"
    path.write_bytes(path.read_bytes()[:100])
    store = Store.open(engine_db)
    try:
        with pytest.raises(ImportRefused):
            importers.import_path(store, root)
        counts = store.counts()
        assert counts["tasks"] == counts["judgments"] == counts["outputs"] == 0
    finally:
        store.close()


# ------------------------------------------------- per-task JSON files -> documented meta


def test_layout_shapes_are_mapped() -> None:
    expected = [{"subject": "Image_0", "box": [0.2, 0.3, 0.7, 0.9], "image": 0}]
    assert vif.map_layout({"Image_0": [0.2, 0.3, 0.7, 0.9]}, 2) == expected
    assert vif.map_layout([{"image": 0, "bbox": {"x": 0.2, "y": 0.3, "w": 0.5, "h": 0.6}}],
                          1) == expected
    pixels = {"canvas": [1000, 500], "items": [
        {"subject": "dog", "index": 1, "box": [[100, 50], [600, 450]], "color": "#4363D8"}]}
    assert vif.map_layout(pixels, 2) == [
        {"subject": "dog", "box": [0.1, 0.1, 0.6, 0.9], "image": 1, "color": "#4363D8"}]
    # a name that is not an image of the task is kept as a name, without an index
    assert vif.map_layout({"Image_5": [0.1, 0.1, 0.5, 0.5]}, 2) == [
        {"subject": "Image_5", "box": [0.1, 0.1, 0.5, 0.5]}]
    # unrecognizable: never a partial mapping
    for raw in ({"Image_0": [0.2, 0.3, 0.7]}, {"Image_0": [0.7, 0.3, 0.2, 0.9]},
                [{"image": 3, "box": [0.1, 0.1, 0.2, 0.2]}], "boxes", [],
                {"Image_0": [0.1, 0.1, 0.5, 0.5], "Image_1": "left half"},
                [{"box": [0.1, 0.1, 0.5, 0.5]}]):
        assert vif.map_layout(raw, 2) is None, raw


def test_arrow_shapes_are_mapped() -> None:
    wind = {"kind": "wind", "start": [0.1, 0.5], "end": [0.8, 0.5]}
    light = {"kind": "light", "start": [0.9, 0.1], "end": [0.2, 0.8]}
    assert vif.map_arrows({"wind": [[0.1, 0.5], [0.8, 0.5]],
                           "light": [0.9, 0.1, 0.2, 0.8]}) == [wind, light]
    assert vif.map_arrows([{"type": "wind_arrow", "from": {"x": 0.1, "y": 0.5},
                            "to": [0.8, 0.5]}]) == [wind]
    assert vif.map_arrows({"kind": "light", "points": [[0.9, 0.1], [0.2, 0.8]]}) == [light]
    assert vif.map_arrows({"arrows": [wind, light]}) == [wind, light]
    assert vif.map_arrows({"wind": [{"start": [0.1, 0.5], "end": [0.8, 0.5]}] * 2}) == [wind] * 2
    assert vif.map_arrows({"wind": {"start": [102.4, 512], "end": [819.2, 512]}}) == [wind]
    for raw in ({"rain": [[0, 0], [1, 1]]}, {"wind": [[0.5, 0.5], [0.5, 0.5]]},
                [{"kind": "wind", "start": [0.1, 0.5]}], {"wind": "left to right"},
                [{"kind": "wind and light", "start": [0, 0], "end": [1, 1]}], None):
        assert vif.map_arrows(raw) is None, raw


def test_orientation_shapes_are_mapped() -> None:
    assert vif.map_orientations({"Image_0": {"yaw": 90, "pitch": 0}}, 2) == [
        {"subject": "Image_0", "yaw": 90, "pitch": 0}]
    assert vif.map_orientations({"dog": -30}, 2) == [{"subject": "dog", "yaw": -30}]
    assert vif.map_orientations({"orientations": [{"image": 1, "yaw": 20, "pitch": -10,
                                                   "anchor": [0.3, 0.6]}]}, 2) == [
        {"subject": "Image_1", "yaw": 20, "pitch": -10, "anchor": [0.3, 0.6]}]
    assert vif.map_orientations({"subject": "cat", "yaw": 45}, 1) == [
        {"subject": "cat", "yaw": 45}]
    for raw in ({"Image_0": {"yaw": "left"}}, {"Image_0": {"pitch": 10}}, [{"yaw": 10}],
                {"Image_0": {"yaw": 10, "pitch": "up"}}, {"dog": 720}):
        assert vif.map_orientations(raw, 2) is None, raw


def test_mapped_meta_feeds_the_conflict_rules(new_release: tuple[Path, dict[str, Any]]) -> None:
    from annotation.vif.conflicts import CONFLICT_KEYS, task_conflicts, task_prelabels

    root, _ = new_release
    data = vif.read(root)
    for task in data.tasks:
        images = [i for i in data.images if i.task_id == task.task_id]
        record = {"images": [{"role": i.role, "meta": i.meta} for i in images],
                  "meta": task.meta}
        decisions = task_conflicts(task_prelabels(record), task.meta)
        if task.task_id == T2:  # dog reference -60 (reliable) against the pyramid's 90
            assert decisions["orientation"].conflict is True
        if task.task_id == T3:  # a tree that wind moves, and a wind arrow
            assert decisions["wind"].conflict is True and decisions["light"].conflict is False
        for name, key in CONFLICT_KEYS.items():
            if decisions[name].conflict is not None:
                assert decisions[name].conflict is task.meta["conflicts"][key], (task, name)


def test_pixel_layout_is_normalized(new_release: tuple[Path, dict[str, Any]]) -> None:
    root, _ = new_release
    t3 = {t.task_id: t for t in vif.read(root).tasks}[T3]
    assert t3.meta["layout"] == [{"subject": "Image_0", "image": 0,
                                  "box": [0.299805, 0.200195, 0.799805, 0.900391]}]
    assert t3.meta["layout_raw"]["canvas_size"] == 1024


def test_unrecognizable_task_json_is_kept_and_warned(
    new_release: tuple[Path, dict[str, Any]], tmp_path: Path,
    make_engine_db: Callable[[str], str],
) -> None:
    root, expected = new_release
    (root / "tasks/v3/n3_01/arrows.json").write_text(json.dumps({"gusts": "strong"}))
    (root / "tasks/v6_n2_00/orientations.json").write_text(json.dumps(["front", "left"]))
    (root / "tasks/v1_n1_00/layout.json").write_text(json.dumps({"Image_0": "center"}))
    data = vif.read(root)
    tasks = {t.task_id: t for t in data.tasks}
    assert tasks[T3].meta["arrows_raw"] == {"gusts": "strong"} and "arrows" not in tasks[T3].meta
    assert tasks[T2].meta["orientations"] == ["front", "left"]
    assert "orientation" not in tasks[T2].meta
    assert tasks[T1].meta["layout_raw"] == {"Image_0": "center"} and "layout" not in tasks[T1].meta
    texts = [str(w) for w in data.warnings]
    for start in ("tasks/v3/n3_01/arrows.json: not recognized as wind/light arrows",
                  "tasks/v6_n2_00/orientations.json: not recognized as orientations",
                  "tasks/v1_n1_00/layout.json: not recognized as layout boxes"):
        assert any(w.startswith(start) for w in texts), (start, texts)
    assert len(data.warnings) == expected["warnings"] + 3
    # it imports, and its export imports again
    from annotation.formats.bundle import write_bundle

    with Store.open(make_engine_db("a.db")) as a, Store.open(make_engine_db("b.db")) as b:
        importers.import_path(a, root)
        write_bundle(a.read_project(), tmp_path / "out")
        importers.import_path(b, tmp_path / "out")
        assert a.counts()["tasks"] == b.counts()["tasks"] == 3


# ------------------------------------------------------------ labels/vi_conflicts.jsonl

LABELS = "labels/vi_conflicts.jsonl"


def label_rows(root: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (root / LABELS).read_text().splitlines() if x.strip()]


def write_labels(root: Path, items: list[dict[str, Any]]) -> None:
    (root / LABELS).write_text("".join(json.dumps(r) + "\n" for r in items))


def test_conflict_labels_and_prelabels_are_merged(
    release: tuple[Path, dict[str, Any]],
) -> None:
    root, expected = release
    data = vif.read(root)
    images = {(i.task_id, i.index): i for i in data.images}
    for key, pre in expected["prelabels"].items():
        assert images[key].meta["prelabel"] == pre, key
    assert all("prelabel" not in i.meta for k, i in images.items()
               if k not in expected["prelabels"])
    tasks = {t.task_id: t for t in data.tasks}
    for task_id, labels in expected["conflict_labels"].items():
        assert tasks[task_id].meta["conflict_labels"] == labels
    assert "conflict_labels" not in tasks[T1].meta
    # metadata.jsonl stays the published label (here they agree: no warning)
    assert tasks[T2].meta["conflicts"]["orientation_conflict"] is True
    assert not [w for w in data.warnings if w.file == LABELS]


def test_a_disagreement_keeps_metadata_and_warns(new_release: tuple[Path, dict[str, Any]]):
    root, _ = new_release
    items = label_rows(root)
    items[0]["orientation_conflict"] = False
    items[0]["references"]["Image_1"]["yaw"] = "left"
    items[1]["prelabels"][0]["wind_responsive"] = "very"
    write_labels(root, items)
    items = rows(root)
    items[1]["images"][0]["prelabel"] = {"yaw": -45, "source": "annotator"}
    write_rows(root, items)
    data = vif.read(root)
    tasks = {t.task_id: t for t in data.tasks}
    images = {(i.task_id, i.index): i for i in data.images}
    assert tasks[T2].meta["conflicts"]["orientation_conflict"] is True
    assert tasks[T2].meta["conflict_labels"]["orientation_conflict"] is False
    # metadata.jsonl's own pre-label wins; the disagreeing yaw stays in conflict_labels
    assert images[(T2, 0)].meta["prelabel"] == {"yaw": -45, "source": "annotator",
                                                "yaw_reliable": True, "wind_responsive": True}
    assert tasks[T2].meta["conflict_labels"]["references"]["Image_0"] == {
        "yaw": -60, "reason": "the dog looks to the left"}
    assert tasks[T2].meta["conflict_labels"]["references"]["Image_1"] == {"yaw": "left"}
    assert images[(T2, 1)].meta["prelabel"] == {"yaw_reliable": False,
                                                "light_distinctive": False}
    assert tasks[T3].meta["conflict_labels"]["prelabels"] == [
        {"index": 0, "wind_responsive": "very"}]
    warned = {(w.file, w.line, w.field) for w in data.warnings}
    assert {(LABELS, 1, "orientation_conflict"), (LABELS, 1, "references.Image_0.yaw"),
            (LABELS, 1, "references.Image_1.yaw"),
            (LABELS, 2, "prelabels[0].wind_responsive")} <= warned
    text = next(str(w) for w in data.warnings if w.field == "orientation_conflict")
    assert "says false but metadata.jsonl says true" in text


def test_labels_fill_conflicts_missing_from_metadata(new_release: tuple[Path, dict[str, Any]]):
    root, _ = new_release
    items = rows(root)
    del items[2]["conflicts"]
    write_rows(root, items)
    labels = label_rows(root)
    labels.append({"task_id": T1, "any_conflict": False, "pose_conflict": None})
    write_labels(root, labels)
    tasks = {t.task_id: t for t in vif.read(root).tasks}
    assert tasks[T3].meta["conflicts"] == {"wind_conflict": True}
    assert tasks[T1].meta["conflicts"]["pose_conflict"] is False  # metadata.jsonl's value
    assert tasks[T1].meta["conflict_labels"] == {"any_conflict": False, "pose_conflict": None}


def test_bad_conflict_label_lines_are_located_errors(tmp_path: Path, engine_db: str) -> None:
    root = tmp_path / "vif-release"
    make_vif_release(root)
    items = label_rows(root)
    items[0]["references"]["Image_7"] = {"yaw": 10}
    text = "".join(json.dumps(r) + "\n" for r in items)
    text += "{not json\n" + json.dumps({"id": "v9_n9_99"}) + "\n"
    text += json.dumps({"id": T3}) + "\n" + json.dumps({"wind_conflict": True}) + "\n"
    (root / LABELS).write_text(text)
    problems = refused(root)
    for start in (
        "labels/vi_conflicts.jsonl:1: references.Image_7: Image_7 does not exist",
        "labels/vi_conflicts.jsonl:3: bad JSON",
        "labels/vi_conflicts.jsonl:4: id: no task 'v9_n9_99'",
        "labels/vi_conflicts.jsonl:5: id: duplicate row for task 'v3_n3_01' (first on line 2)",
        "labels/vi_conflicts.jsonl:6: id: missing",
    ):
        assert any(p.startswith(start) for p in problems), (start, problems)
    # and the database is left as it was
    from tests.helpers.bundles import db_checksum

    with Store.open(engine_db) as store:
        before = db_checksum(store.location)
        with pytest.raises(ImportRefused):
            importers.import_path(store, root)
        assert db_checksum(store.location) == before


def test_reserved_keys_in_metadata_are_checked(new_release: tuple[Path, dict[str, Any]]):
    root, _ = new_release
    items = rows(root)
    items[0]["conflicts"]["wind_conflict"] = "no"
    items[1]["conflicts"]["layout_conflict"] = False
    items[2]["images"][1]["prelabel"] = {"yaw": "left", "tilt": 3}
    write_rows(root, items)
    problems = refused(root)
    for start in (
        "metadata.jsonl:1: conflicts.wind_conflict: expected true, false or null",
        'metadata.jsonl:3: images[1].prelabel.yaw: expected a number of degrees, got "left"',
        "metadata.jsonl:3: images[1].prelabel.tilt: unknown pre-label field",
    ):
        assert any(p.startswith(start) for p in problems), (start, problems)
    items[0]["conflicts"]["wind_conflict"] = False
    items[2]["images"][1].pop("prelabel")
    write_rows(root, items)
    data = vif.read(root)
    t2 = {t.task_id: t for t in data.tasks}[T2]
    assert t2.meta["extra"]["conflicts"] == {"layout_conflict": False}
    assert "layout_conflict" not in t2.meta["conflicts"]
    assert any(w.field == "conflicts" and "layout_conflict" in w.message for w in data.warnings)
