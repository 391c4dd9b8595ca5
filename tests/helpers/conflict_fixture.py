"""A small VIF-style bundle with conflict pre-labels and published labels (Pillow images).

* ``c1``: a dog facing 30 deg (reliable) with a pyramid at -20 deg: a conflict by sign only
  (the paper's own example); a night-street scene with distinctive light and a light
  arrow: a light conflict. Published: orientation True, light True.
* ``c2``: a person with a scarf (wind-responsive, neutral pose) with a wind arrow and a pose
  reference: wind conflict, no pose conflict. Published: wind True, pose **True** (a wrong
  published label, so a verifier has something to correct).
* ``c3``: layout only: nothing to verify.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.bundles import make_image, read_jsonl, write_jsonl

BUNDLE_JSON = """{"name": "Conflict fixture", "benchmark": "VIF-Bench",
 "criteria": [{"name": "visual_quality", "label": "Visual Quality", "min": 1, "max": 10,
               "step": 1}],
 "judges": [{"name": "gpt-5", "kind": "vlm"}]}"""


def _img(path: str, kind: str, label: str, role: str = "reference",
         prelabel: dict | None = None) -> dict:
    entry = {"path": path, "role": role, "kind": kind, "label": label}
    if prelabel is not None:
        entry["meta"] = {"prelabel": prelabel}
    return entry


def tasks() -> list[dict]:
    layout = [{"subject": "dog", "image": 0, "box": [0.1, 0.3, 0.5, 0.9]}]
    c1 = {
        "task_id": "c1", "instruction": "The dog of Image_0 on the street of Image_1.",
        "images": [
            _img("images/dog.png", "main", "dog",
                 prelabel={"yaw": 30, "yaw_reliable": True, "light_distinctive": False}),
            _img("images/street.png", "scene", "night street",
                 prelabel={"light_distinctive": True}),
            _img("images/c1_layout.png", "layout", "layout", "visual_instruction"),
            _img("images/c1_pyramid.png", "orientation", "pyramid", "visual_instruction"),
            _img("images/c1_light.png", "light", "light arrow", "visual_instruction"),
        ],
        "meta": {"layout": layout,
                 "orientation": [{"subject": "dog", "yaw": -20, "pitch": 10}],
                 "arrows": [{"kind": "light", "start": [0.1, 0.1], "end": [0.6, 0.6]}],
                 "visual_instruction_types": ["layout", "orientation", "light"],
                 "conflicts": {"orientation_conflict": True, "light_conflict": True,
                               "wind_conflict": False, "pose_conflict": False}},
    }
    c2 = {
        "task_id": "c2", "instruction": "The person of Image_0 in the pose of Image_2.",
        "images": [
            _img("images/person.png", "main", "person with scarf",
                 prelabel={"wind_responsive": True, "pose_distinctive": False}),
            _img("images/c2_layout.png", "layout", "layout", "visual_instruction"),
            _img("images/pose.png", "pose", "pose reference", "visual_instruction"),
            _img("images/c2_wind.png", "wind", "wind arrow", "visual_instruction"),
        ],
        "meta": {"layout": [{"subject": "person", "image": 0, "box": [0.2, 0.1, 0.7, 0.95]}],
                 "pose": {"subject": "person", "image": 2},
                 "arrows": [{"kind": "wind", "start": [0.9, 0.5], "end": [0.2, 0.5]}],
                 "visual_instruction_types": ["layout", "pose", "wind"],
                 "conflicts": {"orientation_conflict": False, "light_conflict": False,
                               "wind_conflict": True, "pose_conflict": True}},
    }
    c3 = {
        "task_id": "c3", "instruction": "The dog of Image_0, boxed as in Image_1.",
        "images": [_img("images/dog.png", "main", "dog"),
                   _img("images/c3_layout.png", "layout", "layout", "visual_instruction")],
        "meta": {"layout": layout, "visual_instruction_types": ["layout"]},
    }
    return [c1, c2, c3]


def write_conflict_bundle(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "bundle.json").write_text(BUNDLE_JSON, encoding="utf-8")
    rows = tasks()
    write_jsonl(root / "tasks.jsonl", rows)
    colors = iter(["red", "blue", "green", "orange", "purple", "brown", "pink", "gray",
                   "cyan", "yellow", "olive", "navy", "teal"])
    seen: set[str] = set()
    for task in rows:
        for image in task["images"]:
            if image["path"] not in seen:
                seen.add(image["path"])
                make_image(root / image["path"], size=(80, 80), color=next(colors))
    outputs = [{"output_id": f"{t['task_id']}/m", "task_id": t["task_id"], "generator": "m",
                "path": f"outputs/{t['task_id']}.png"} for t in rows]
    for o in outputs:
        make_image(root / o["path"], size=(96, 96), color=next(colors))
    write_jsonl(root / "outputs.jsonl", outputs)
    return root


def rename_tasks(root: Path, renamed: dict[str, str]) -> Path:
    """Give the tasks of a written conflict bundle new ids (``renamed``: old -> new); each
    task's output becomes ``<new id>/m``. Hostile-input tests use ids that look like
    spreadsheet formulas or markup."""
    tasks = read_jsonl(root / "tasks.jsonl")
    for task in tasks:
        task["task_id"] = renamed[task["task_id"]]
    write_jsonl(root / "tasks.jsonl", tasks)
    outputs = read_jsonl(root / "outputs.jsonl")
    for output in outputs:
        output["task_id"] = renamed[output["task_id"]]
        output["output_id"] = output["task_id"] + "/m"
    write_jsonl(root / "outputs.jsonl", outputs)
    return root


def open_task_as(store, who: str, task: str):
    """A verification session of ``who`` on ``task``, reserved as ``next_task`` would (a
    task is answered under a reservation, issue #12), pre-label readings confirmed."""
    from annotation.work.verification import VerifySession

    session = VerifySession(store, who, {})
    store.conn.execute("INSERT INTO queue_reservations (kind, unit, person, reserved_at,"
                       " expires_at) VALUES ('verify', ?, ?, datetime('now'), '9999')",
                       [task, who])
    session._open(task)
    session.confirm_readings({})
    return session


def write_shared_reference_bundle(root: Path) -> Path:
    """The conflict bundle plus ``c4``: the same dog image as ``c1`` (same file, same
    content hash, the pool's pre-label: yaw 30, reliable) with a pyramid at +40 deg: no
    conflict on the pre-label (10 deg apart, same side), but a conflict if the dog is read
    as facing -40 (80 deg apart and flipped). No published labels: the automatic label is
    the rules'. VIF-Bench pre-labels each pool image once and matches it to tasks by
    content hash (Appendix C.4); this is the case where that matters."""
    write_conflict_bundle(root)
    rows = read_jsonl(root / "tasks.jsonl")
    c4 = {
        "task_id": "c4", "instruction": "The dog of Image_0 turned as in Image_2.",
        "images": [
            _img("images/dog.png", "main", "dog",
                 prelabel={"yaw": 30, "yaw_reliable": True, "light_distinctive": False}),
            _img("images/c3_layout.png", "layout", "layout", "visual_instruction"),
            _img("images/c1_pyramid.png", "orientation", "pyramid", "visual_instruction"),
        ],
        "meta": {"layout": [{"subject": "dog", "image": 0, "box": [0.1, 0.3, 0.5, 0.9]}],
                 "orientation": [{"subject": "dog", "yaw": 40, "pitch": 0}],
                 "visual_instruction_types": ["layout", "orientation"]},
    }
    write_jsonl(root / "tasks.jsonl", [*rows, c4])
    outputs = read_jsonl(root / "outputs.jsonl")
    make_image(root / "outputs/c4.png", size=(96, 96), color="white")
    write_jsonl(root / "outputs.jsonl",
                [*outputs, {"output_id": "c4/m", "task_id": "c4", "generator": "m",
                            "path": "outputs/c4.png"}])
    return root
