"""A VIF-Bench bundle for the text-variant tests, written with Pillow.

Each task has main references and visual instructions *interleaved* in its input order
(``Image_0`` a main reference, ``Image_1`` the layout, then the other main references,
then an orientation pyramid and a wind arrow image, then a scene), so that removing the
VIs renumbers the references after them; its instruction names every image. Two
generators have an output of every task, one judge scores the six VIF-Bench criteria and
answers the task's one checklist question.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers.bundles import make_image, write_jsonl

CRITERIA = ("text_instruction_following", "reference_consistency",
            "visual_instruction_adherence", "visual_instruction_cleanliness",
            "scene_coherence", "visual_quality")
GENERATORS = ("gen-a", "gen-b")
JUDGE = "gpt-5"
ANIMALS = ("cat", "dog", "fox", "owl")
ERASE = "Do not draw the boxes, arrows, pyramids or any other mark of the visual instructions."


def score(task_n: int, generator: str, criterion: str, variant: str = "") -> int:
    """A deterministic 1..10 score that differs by task, generator, criterion and variant."""
    seed = task_n * 7 + sum(map(ord, generator)) * 3 + CRITERIA.index(criterion) * 5
    seed += {"": 0, "text-dense": 2, "text-medium": 4, "text-sparse": 9}[variant] * (
        1 + task_n % 3)
    return seed % 10 + 1


def task_row(task_id: str, n_subjects: int, task_n: int, root: Path) -> dict[str, Any]:
    """One task: ``n_subjects`` main references, a layout (Image_1), an orientation and a
    wind VI after the references, a scene reference last."""
    subjects = ANIMALS[:n_subjects]
    images: list[dict[str, Any]] = []
    refs: dict[str, int] = {}

    def add(kind: str, role: str, label: str) -> int:
        path = f"images/{task_id}/{len(images)}_{label}.png"
        make_image(root / path, color=["red", "blue", "green", "orange", "purple", "brown",
                                       "pink", "gray", "olive"][len(images) % 9],
                   text=f"{task_id} {label}")
        images.append({"path": path, "role": role, "kind": kind, "label": label})
        return len(images) - 1

    refs[subjects[0]] = add("main", "reference", subjects[0])
    layout = add("layout", "visual_instruction", "layout")
    for s in subjects[1:]:
        refs[s] = add("main", "reference", s)
    pyramid = add("orientation", "visual_instruction", "pyramid")
    wind = add("wind", "visual_instruction", "wind")
    scene = add("scene", "reference", "meadow")
    width = 1 / n_subjects
    layout_meta = [{"subject": s, "image": refs[s],
                    "box": [round(i * width + 0.02, 2), 0.4, round((i + 1) * width - 0.02, 2),
                            0.9]} for i, s in enumerate(subjects)]
    who = " and ".join(f"the {s} of Image_{refs[s]}" for s in subjects)
    instruction = (f"In the meadow of Image_{scene}, {who} sit in their boxes of "
                   f"Image_{layout}. The {subjects[0]} faces as the pyramid of "
                   f"Image_{pyramid} shows. The wind blows as the arrow of Image_{wind} "
                   f"shows. {ERASE}")
    return {
        "task_id": task_id, "instruction": instruction, "images": images,
        "questions": [{"question_id": f"{task_id}.q1", "pass_answer": "yes",
                       "text": f"Is the {subjects[0]} inside its box?"}],
        "meta": {"layout": layout_meta,
                 "orientation": [{"subject": subjects[0], "yaw": 40 + task_n, "pitch": 10}],
                 "arrows": [{"kind": "wind", "start": [0.1, 0.3], "end": [0.8, 0.35]}],
                 "visual_instruction_types": ["layout", "orientation", "wind"]},
    }


def make_variant_source(root: Path, per_count: dict[int, int]) -> dict[str, Any]:
    """Write the bundle at ``root`` with ``per_count[n]`` tasks of ``n`` subjects (task
    ids ``n<n>_<k>``); return ``{"tasks": {task_id: row}, "scores": {(task, generator,
    criterion): score}}``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "bundle.json").write_text(json.dumps({
        "name": "variants test", "benchmark": "VIF-Bench",
        "criteria": [{"name": c, "label": c.replace("_", " ").title(), "min": 1, "max": 10,
                      "step": 1} for c in CRITERIA],
        "judges": [{"name": JUDGE, "kind": "vlm"}]}), encoding="utf-8")
    tasks: dict[str, dict[str, Any]] = {}
    outputs, judgments = [], []
    scores: dict[tuple[str, str, str], int] = {}
    task_n = 0
    for n, k in sorted(per_count.items()):
        for i in range(k):
            task_id = f"n{n}_{i:02d}"
            tasks[task_id] = task_row(task_id, n, task_n, root)
            for gen in GENERATORS:
                path = f"outputs/{gen}/{task_id}.png"
                make_image(root / path, size=(40, 40), color="teal", text=f"{gen}{task_id}")
                oid = f"{task_id}/{gen}"
                outputs.append({"output_id": oid, "task_id": task_id, "generator": gen,
                                "path": path})
                judgments.append({"judge": JUDGE, "output_id": oid,
                                  "question_id": f"{task_id}.q1", "answer": "yes"})
                for c in CRITERIA:
                    s = score(task_n, gen, c)
                    scores[(task_id, gen, c)] = s
                    judgments.append({"judge": JUDGE, "output_id": oid, "criterion": c,
                                      "score": s})
            task_n += 1
    write_jsonl(root / "tasks.jsonl", list(tasks.values()))
    write_jsonl(root / "outputs.jsonl", outputs)
    write_jsonl(root / "judgments.jsonl", judgments)
    return {"tasks": tasks, "scores": scores, "order": list(tasks)}


def generate_variant_outputs(bundle: Path, scores_of: dict[str, int],
                             generators: tuple[str, ...] = GENERATORS) -> dict[
        tuple[str, str, str], int]:
    """Play the generator and the judge on a ``judge-audit variants`` bundle: one Pillow
    image per variant task and generator (``outputs.jsonl``, ``task_id`` the variant
    task's), the judge's scores of the six criteria and its answer to the original task's
    question (``judgments.jsonl``). ``scores_of``: original task id -> its index in the
    source; ``generators``: who generates. Returns ``{(original task, generator,
    criterion): score}``."""
    tasks = [json.loads(line) for line in (bundle / "tasks.jsonl").read_text().splitlines()]
    outputs, judgments = [], []
    given: dict[tuple[str, str, str], int] = {}
    for t in tasks:
        original, variant = t["meta"]["variant_of"], t["meta"]["text_variant"]
        for gen in generators:
            path = f"generated/{gen}/{t['task_id']}.png"
            make_image(bundle / path, size=(40, 40), color="navy", text=t["task_id"] + gen)
            oid = f"{t['task_id']}/{gen}"
            outputs.append({"output_id": oid, "task_id": t["task_id"], "generator": gen,
                            "path": path, "meta": {"seed": 1}})
            judgments.append({"judge": JUDGE, "output_id": oid,
                              "question_id": f"{original}.q1", "answer": "no"})
            for c in CRITERIA:
                s = score(scores_of[original], gen, c, variant)
                given[(original, gen, c)] = s
                judgments.append({"judge": JUDGE, "output_id": oid, "criterion": c,
                                  "score": s})
    write_jsonl(bundle / "outputs.jsonl", outputs)
    write_jsonl(bundle / "judgments.jsonl", judgments)
    return given
