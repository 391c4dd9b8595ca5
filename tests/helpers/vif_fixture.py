"""A small, realistic VIF-Bench release written to disk for tests.

:func:`make_vif_release` writes the layout read by :mod:`annotation.formats.vif`, with
real Pillow images (reference photos stand-ins, a layout canvas with colored boxes, an
orientation "pyramid", a cyan wind / yellow light arrow) and judge texts in the benchmark's
``Reasoning:`` + ``Name: <1-10>.`` form. It covers on purpose:

* three tasks; with ``id_form="new"`` one metadata row uses the older ``v6/n2_00`` id while
  its files use the newer form, and another task's folder uses the older nested form
  (``tasks/v3/n3_01/``) with root-relative ``file`` paths; with ``id_form="old"`` every id,
  folder and file name uses the older nested form;
* two generators: ``model-a`` has every image; ``model-b`` lacks the image of ``v6_n2_00``
  (judged anyway -> output without image) and of ``v3_n3_01`` (never judged -> missing);
* per-task JSON files in several shapes: ``layout.json`` as ``{name: box}`` (normalized)
  and as pixel boxes on a named canvas, ``arrows.json`` keyed by kind, ``orientations.json``
  keyed by image name; and ``labels/vi_conflicts.jsonl`` with conflict labels that agree
  with ``metadata.jsonl`` and per-reference pre-labels in two shapes (an object keyed by
  ``Image_k``, a list naming its ``index``), beside fields that are kept as they are;
* two judges, with: a response in markdown (``**Visual Quality:** 7``), a response where a
  criterion appears twice (the last one is the score), a ``scores.jsonl`` row lacking a
  value that the text supplies, a text that disagrees with ``scores.jsonl``, an ``average``
  that disagrees with the six, and an unparseable response with no ``scores.jsonl`` row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

CRITERIA = (
    "text_instruction_following",
    "reference_consistency",
    "visual_instruction_adherence",
    "visual_instruction_cleanliness",
    "scene_coherence",
    "visual_quality",
)
LABELS = (
    "Text Instruction Following",
    "Reference Consistency",
    "Vision Instruction Adherence",  # the public prompt's spelling
    "Visual Instruction Residue",  # the public prompt's name for cleanliness
    "Scene Coherence",
    "Visual Quality",
)
MODELS = ("model-a", "model-b")
JUDGES = ("gemini-2.5-flash", "gpt-5")

# New-form task ids, in metadata order.
T1, T2, T3 = "v1_n1_00", "v6_n2_00", "v3_n3_01"
OLD = {T1: "v1/n1_00", T2: "v6/n2_00", T3: "v3/n3_01"}


def _photo(path: Path, color: tuple[int, int, int], size: tuple[int, int] = (48, 40)) -> None:
    """A stand-in reference photo: a colored blob on a gradient."""
    img = Image.new("RGB", size)
    px = img.load()
    assert px is not None
    for x in range(size[0]):
        for y in range(size[1]):
            px[x, y] = (x * 4 % 256, y * 5 % 256, (x + y) % 256)
    ImageDraw.Draw(img).ellipse((8, 8, size[0] - 8, size[1] - 8), fill=color)
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path)


def _layout(path: Path, boxes: list[tuple[float, float, float, float]]) -> None:
    """A layout VI: one colored box per main subject on a white square canvas."""
    img = Image.new("RGB", (64, 64), "white")
    draw = ImageDraw.Draw(img)
    colors = ["red", "blue", "green", "orange"]
    for n, (x0, y0, x1, y1) in enumerate(boxes):
        draw.rectangle((x0 * 64, y0 * 64, x1 * 64, y1 * 64), outline=colors[n], width=2)
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path)


def _pyramid(path: Path) -> None:
    """An orientation VI: a square pyramid seen from the front-right."""
    img = Image.new("RGB", (64, 64), "white")
    draw = ImageDraw.Draw(img)
    draw.polygon([(32, 8), (12, 52), (44, 56)], fill=(200, 60, 60))
    draw.polygon([(32, 8), (44, 56), (56, 44)], fill=(120, 30, 30))
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path)


def _arrows(path: Path) -> None:
    """A wind (cyan) and light (yellow) arrow sharing one VI image."""
    img = Image.new("RGB", (64, 64), "white")
    draw = ImageDraw.Draw(img)
    draw.line((8, 32, 52, 32), fill=(0, 255, 255), width=3)
    draw.polygon([(52, 26), (60, 32), (52, 38)], fill=(0, 255, 255))
    draw.line((56, 8, 16, 52), fill=(255, 255, 0), width=3)
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path)


def _generation(path: Path, color: tuple[int, int, int]) -> None:
    """A generated output; format from the extension (png, jpg, webp)."""
    img = Image.new("RGB", (56, 56), color)
    ImageDraw.Draw(img).rectangle((10, 20, 40, 50), fill=(color[2], color[0], color[1]))
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path)


def response_text(scores: dict[str, int], *, bold: bool = False, reasoning: str = "") -> str:
    """A judge's raw text in the benchmark's form: ``Reasoning:`` then one line per criterion."""
    lines = ["Reasoning:", reasoning or "The subjects are present and mostly placed as boxed.", ""]
    for name, label in zip(CRITERIA, LABELS, strict=True):
        if name not in scores:
            continue
        if bold:
            lines.append(f"**{label}:** {scores[name]}")
        else:
            lines.append(f"{label}: {scores[name]}.")
    return "\n".join(lines) + "\n"


def _scores(values: tuple[int, ...]) -> dict[str, int]:
    """The six criteria with the given scores, in order."""
    return dict(zip(CRITERIA, values, strict=True))


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write one JSON object per line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def make_vif_release(root: Path, *, id_form: str = "new") -> dict[str, Any]:
    """Write a small VIF-Bench release under ``root`` and return what an import must find.

    ``id_form="new"`` mixes id forms as a release in transition would; ``id_form="old"``
    uses the older ``v6/n2_00`` form for every id and nested folders for every file.
    The returned dict holds the expected ``ProjectData.counts()`` under the same keys, plus
    ``task_ids``, ``generators``, ``judges``, ``missing_output_ids``, ``no_image_output_ids``,
    ``unparsed_output_ids`` (output, judge), ``warnings_min`` and a few expected scores under
    ``scores`` ({(judge, output_id, criterion): score}).
    """
    if id_form not in ("new", "old"):
        raise ValueError(f"id_form must be 'new' or 'old', not {id_form!r}")
    root.mkdir(parents=True, exist_ok=True)
    old = id_form == "old"

    def meta_id(task: str) -> str:
        """How the task id is spelled in metadata.jsonl."""
        return OLD[task] if old or task == T2 else task

    def disk(task: str) -> str:
        """How the task id is spelled in folder and file names."""
        return OLD[task] if old or task == T3 else task

    # ---- tasks
    t1 = f"tasks/{disk(T1)}"
    _photo(root / t1 / "Image_0.png", (220, 120, 40))
    _layout(root / t1 / "Image_1.png", [(0.2, 0.3, 0.7, 0.9)])
    (root / t1 / "layout.json").write_text(json.dumps({"Image_0": [0.2, 0.3, 0.7, 0.9]}))

    t2 = f"tasks/{disk(T2)}"
    _photo(root / t2 / "Image_0.png", (90, 60, 30))
    _photo(root / t2 / "Image_1.jpg", (30, 90, 160))
    _layout(root / t2 / "Image_2.png", [(0.1, 0.4, 0.5, 0.95), (0.55, 0.35, 0.9, 0.9)])
    _pyramid(root / t2 / "Image_3.png")
    (root / t2 / "instruction.txt").write_text(
        "Place the dog of Image_0 and the cat of Image_1 as boxed in Image_2; the dog faces "
        "as the pyramid of Image_3. Remove all boxes.\n",
        encoding="utf-8",
    )
    (root / t2 / "orientations.json").write_text(json.dumps({"Image_0": {"yaw": 90, "pitch": 0}}))
    (root / t2 / "hierarchy.json").write_text(json.dumps({"main": [0, 1], "sub": []}))

    t3 = f"tasks/{disk(T3)}"
    _photo(root / t3 / "Image_0.jpg", (40, 160, 60), size=(40, 52))
    _layout(root / t3 / "Image_1.png", [(0.3, 0.2, 0.8, 0.9)])
    _arrows(root / t3 / "Image_2.webp")
    (root / t3 / "arrows.json").write_text(
        json.dumps({"wind": [[0.1, 0.5], [0.8, 0.5]], "light": [[0.9, 0.1], [0.2, 0.8]]})
    )
    (root / t3 / "layout.json").write_text(json.dumps(
        {"canvas_size": 1024, "boxes": [{"name": "Image_0", "bbox": [307, 205, 819, 922]}]}
    ))

    no_conflict = {
        "orientation_conflict": False,
        "light_conflict": False,
        "wind_conflict": False,
        "pose_conflict": False,
    }
    metadata = [
        {
            "id": meta_id(T1),
            "instruction": "Put the fox of Image_0 where the red box of Image_1 is. "
            "Remove the box.",
            "images": [
                {"file": "Image_0.png", "index": 0, "type": "main", "subject": "fox"},
                {"file": "Image_1.png", "index": 1, "type": "layout"},
            ],
            "visual_instruction_types": ["layout"],
            "conflicts": no_conflict,
            "in_vi_vs_ti_experiment": False,
        },
        {
            # no instruction: tasks/<id>/instruction.txt is used
            "id": meta_id(T2),
            "images": [
                {"file": "Image_0.png", "index": 0, "role": "main", "label": "dog"},
                {"file": "Image_1.jpg", "index": 1, "role": "main", "label": "cat"},
                {"file": "Image_2.png", "index": 2, "is_visual_instruction": True,
                 "kind": "layout"},
                {"file": "Image_3.png", "index": 3, "is_visual_instruction": True,
                 "kind": "orientation", "target": 0, "yaw": 90, "pitch": 0},
            ],
            "visual_instruction_types": ["layout", "orientation"],
            "conflicts": {**no_conflict, "orientation_conflict": True},
            "in_vi_vs_ti_experiment": True,
        },
        {
            "id": meta_id(T3),
            "instruction": "Draw the tree of Image_0 in the box of Image_1 with wind and light "
            "as the arrows of Image_2 show. Remove the box and arrows.",
            # listed out of order on purpose: index decides Image_k
            "images": [
                {"file": f"{t3}/Image_2.webp", "index": 2, "role": "visual_instruction",
                 "type": "light+wind"},
                {"file": f"{t3}/Image_0.jpg", "index": 0},
                {"file": f"{t3}/Image_1.png", "index": 1, "role": "vi", "type": "layout"},
            ],
            "visual_instruction_types": ["layout", "light+wind"],
            "conflicts": {**no_conflict, "wind_conflict": True},
            "in_vi_vs_ti_experiment": False,
            "split": "test",
        },
    ]
    _write_jsonl(root / "metadata.jsonl", metadata)
    _write_jsonl(root / "labels" / "vi_conflicts.jsonl", [
        {
            "id": meta_id(T2),
            "orientation_conflict": True,
            "light_conflict": False,
            "wind_conflict": False,
            "pose_conflict": False,
            "model": "gpt-5",
            "references": {
                "Image_0": {"yaw": -60, "yaw_reliable": True, "wind_responsive": True,
                            "reason": "the dog looks to the left"},
                "Image_1": {"yaw": 10, "yaw_reliable": False, "lighting_distinctive": False},
            },
        },
        {
            "id": meta_id(T3),
            "conflicts": {"wind_conflict": True},
            "prelabels": [{"index": 0, "wind_responsive": True, "light_distinctive": False,
                           "notes": "leaves"}],
        },
    ])

    # ---- generations
    gen = root / "generations"
    _generation(gen / "model-a" / f"{disk(T1)}.png", (200, 50, 50))
    _generation(gen / "model-a" / f"{disk(T2)}.jpg", (50, 200, 50))
    _generation(gen / "model-a" / f"{disk(T3)}.webp", (50, 50, 200))
    _generation(gen / "model-b" / f"{disk(T1)}.png", (120, 120, 30))
    (gen / "model-b" / "README.txt").write_text("not an image: ignored\n")

    # ---- results
    def sid(task: str) -> str:
        """How the task id is spelled in scores.jsonl."""
        return OLD[task] if old else task

    res = root / "results"
    a_gpt = {
        T1: _scores((8, 7, 6, 9, 8, 8)),
        T2: _scores((6, 5, 7, 4, 6, 7)),
        T3: _scores((7, 6, 5, 8, 8, 9)),
    }
    rows = [{"id": sid(t), **s, "average": round(sum(s.values()) / 6, 2)} for t, s in a_gpt.items()]
    del rows[2]["scene_coherence"]  # the text gives it twice: the last one counts
    _write_jsonl(res / "model-a" / "gpt-5" / "scores.jsonl", rows)
    resp = res / "model-a" / "gpt-5" / "responses"
    (resp / f"{disk(T1)}.txt").parent.mkdir(parents=True, exist_ok=True)
    (resp / f"{disk(T1)}.txt").write_text(response_text(a_gpt[T1]))
    (resp / f"{disk(T2)}.txt").parent.mkdir(parents=True, exist_ok=True)
    (resp / f"{disk(T2)}.txt").write_text(response_text(a_gpt[T2], bold=True))
    (resp / f"{disk(T3)}.txt").parent.mkdir(parents=True, exist_ok=True)
    (resp / f"{disk(T3)}.txt").write_text(
        response_text(
            a_gpt[T3],
            reasoning="At first glance Scene Coherence: 3 seemed fair, but on a closer look "
            "the lighting matches the arrows.",
        )
    )

    a_gem = {
        T1: _scores((7, 7, 6, 8, 7, 6)),
        T2: _scores((5, 5, 6, 5, 6, 6)),
        T3: _scores((6, 6, 6, 7, 7, 8)),
    }
    rows = []
    for t, s in a_gem.items():
        row: dict[str, Any] = {"task_id": sid(t), **s, "average": round(sum(s.values()) / 6, 2)}
        if t == T1:
            del row["visual_quality"]  # the text supplies it
        if t == T2:
            row["average"] = 7.5  # disagrees with the mean (5.5)
        rows.append(row)
    _write_jsonl(res / "model-a" / "gemini-2.5-flash" / "scores.jsonl", rows)
    resp = res / "model-a" / "gemini-2.5-flash" / "responses"
    for t in (T1, T2, T3):
        text_scores = dict(a_gem[t])
        if t == T3:
            text_scores["reference_consistency"] = 4  # disagrees with scores.jsonl (6)
        (resp / f"{disk(t)}.txt").parent.mkdir(parents=True, exist_ok=True)
        (resp / f"{disk(t)}.txt").write_text(response_text(text_scores))

    b_gpt = _scores((4, 3, 2, 9, 5, 6))
    _write_jsonl(res / "model-b" / "gpt-5" / "scores.jsonl", [{"id": sid(T1), **b_gpt}])
    resp = res / "model-b" / "gpt-5" / "responses"
    (resp / f"{disk(T1)}.txt").parent.mkdir(parents=True, exist_ok=True)
    (resp / f"{disk(T1)}.txt").write_text(response_text(b_gpt))
    (resp / f"{disk(T2)}.txt").parent.mkdir(parents=True, exist_ok=True)
    (resp / f"{disk(T2)}.txt").write_text(
        "I'm sorry, I can't evaluate this image: the output appears to be blank.\n"
    )

    b_gem = _scores((5, 4, 3, 9, 6, 6))
    _write_jsonl(
        res / "model-b" / "gemini-2.5-flash" / "scores.jsonl",
        [{"id": sid(T1), **b_gem, "average": 5.5}],
    )

    def oid(task: str, model: str) -> str:
        """The output id the importer gives a (task, model) pair."""
        return f"{task}/{model}"

    return {
        "tasks": 3,
        "images": 2 + 4 + 3,
        "questions": 0,
        "criteria": 6,
        "judges": 2,
        "outputs": 6,
        "missing_outputs": 1,
        "judgments": 6 * (3 + 3 + 2 + 1),
        "annotations": 0,
        "task_ids": [T1, T2, T3],
        "vif_ids": [meta_id(T1), meta_id(T2), meta_id(T3)],
        "generators": list(MODELS),
        "judge_names": sorted(JUDGES),
        "missing_output_ids": [oid(T3, "model-b")],
        "no_image_output_ids": [oid(T2, "model-b")],
        "unparsed": [(oid(T2, "model-b"), "gpt-5")],
        "unparsed_judgments": 6,
        # average of a_gem T2, text vs jsonl of a_gem T3, unparsed b_gpt T2, missing
        # T3/model-b, judged-without-image T2/model-b
        "warnings": 5,
        # labels/vi_conflicts.jsonl, merged into image and task meta
        "prelabels": {
            (T2, 0): {"yaw": -60, "yaw_reliable": True, "wind_responsive": True},
            (T2, 1): {"yaw": 10, "yaw_reliable": False, "light_distinctive": False},
            (T3, 0): {"wind_responsive": True, "light_distinctive": False, "notes": "leaves"},
        },
        "conflict_labels": {
            T2: {"orientation_conflict": True, "light_conflict": False, "wind_conflict": False,
                 "pose_conflict": False, "model": "gpt-5",
                 "references": {"Image_0": {"reason": "the dog looks to the left"}}},
            T3: {"conflicts": {"wind_conflict": True}},
        },
        "scores": {
            ("gpt-5", oid(T2, "model-a"), "visual_quality"): 7,  # from **bold** text too
            ("gpt-5", oid(T3, "model-a"), "scene_coherence"): 8,  # twice in text: last wins
            ("gemini-2.5-flash", oid(T1, "model-a"), "visual_quality"): 6,  # text only
            ("gemini-2.5-flash", oid(T3, "model-a"), "reference_consistency"): 6,  # jsonl wins
            ("gpt-5", oid(T1, "model-b"), "visual_instruction_adherence"): 2,
            ("gemini-2.5-flash", oid(T1, "model-b"), "visual_instruction_cleanliness"): 9,
        },
    }
