"""A small pairwise + ranking bundle on disk (issue #17), with real images made by Pillow:
three generators on four tasks, pairs (one of them also in the swapped order), two judges
(one with an unparsed answer), two annotators (one changed answer: a history), and one
ranking item per task answered by two annotators and a judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers.bundles import make_image, write_jsonl

GENERATORS = ("gen_x", "gen_y", "gen_z")
TASKS = ("t1", "t2", "t3", "t4")
COLORS = ("red", "blue", "green", "orange", "purple", "brown", "pink", "gray", "olive",
          "navy", "teal", "maroon", "gold", "cyan", "lime", "black")

#: pair -> (output_a, output_b)
PAIRS = {f"p{t}{a[-1]}{b[-1]}": (f"{t}/{a}", f"{t}/{b}") for t in TASKS
         for a, b in (("gen_x", "gen_y"), ("gen_y", "gen_z"), ("gen_x", "gen_z"))}
PAIRS["pt1swap"] = ("t1/gen_y", "t1/gen_x")  # the first pair of t1 in the other order


def pair_bundle(root: Path, *, extra_judgments: list[dict[str, Any]] | None = None,
                extra_annotations: list[dict[str, Any]] | None = None) -> Path:
    """Write the bundle at ``root``; return it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "bundle.json").write_text(json.dumps({
        "format": "judge-audit-bundle/1", "name": "pairs", "benchmark": "pairwise",
        "criteria": [], "judges": [{"name": "judge_1", "kind": "vlm"},
                                   {"name": "judge_2", "kind": "vlm"}]}), encoding="utf-8")
    write_jsonl(root / "tasks.jsonl", [{"task_id": t, "instruction": f"draw {t}", "images": []}
                                       for t in TASKS])
    colors = iter(COLORS)
    outputs = []
    for t in TASKS:
        for g in GENERATORS:
            path = f"outputs/{t}_{g}.png"
            make_image(root / path, size=(32, 32), color=next(colors), text=t)
            outputs.append({"output_id": f"{t}/{g}", "task_id": t, "generator": g,
                            "path": path})
    write_jsonl(root / "outputs.jsonl", outputs)
    write_jsonl(root / "pairs.jsonl", [
        {"pair_id": pid, "output_a": a, "output_b": b, "task_id": a.split("/")[0]}
        for pid, (a, b) in PAIRS.items()])
    # humans: gen_x > gen_y > gen_z mostly
    human = {pid: ("a" if a < b else "b") for pid, (a, b) in PAIRS.items()}
    human["pt2yz"] = "tie"
    human["pt3xz"] = "both_bad"
    judgments = []
    for pid, pref in human.items():
        j1 = pref
        j2 = "a"  # judge_2 always prefers the first-shown output
        if pid == "pt4xy":
            j1 = "b"
        judgments.append({"judge": "judge_1", "pair_id": pid, "preference": j1,
                          "raw": f"verdict {j1}"})
        if pid == "pt3yz":
            judgments.append({"judge": "judge_2", "pair_id": pid, "preference": None,
                              "raw": "I cannot decide"})
        else:
            judgments.append({"judge": "judge_2", "pair_id": pid, "preference": j2})
    annotations = []
    for pid, pref in human.items():
        annotations.append({"annotator": "ann1", "pair_id": pid, "preference": pref,
                            "created_at": "2026-01-01T10:00:00+00:00", "shown_first": "a"})
        annotations.append({"annotator": "ann2", "pair_id": pid, "preference": pref,
                            "created_at": "2026-01-01T11:00:00+00:00", "shown_first": "b"})
    # ann1 first answered t1's first pair 'b', then changed it to 'a': a history
    annotations.insert(0, {"annotator": "ann1", "pair_id": "pt1xy",
                           "preference": "b", "created_at": "2026-01-01T09:00:00+00:00",
                           "note": "misclicked"})
    rankings, ranking_answers, ranking_judgments = [], [], []
    for t in TASKS:
        rankings.append({"ranking_id": f"r{t}", "outputs": [f"{t}/{g}" for g in GENERATORS],
                         "task_id": t})
        ranking_answers.append({"annotator": "ann1", "ranking_id": f"r{t}",
                                "order": [f"{t}/gen_x", f"{t}/gen_y", f"{t}/gen_z"],
                                "created_at": "2026-01-02T10:00:00+00:00"})
        ranking_answers.append({"annotator": "ann2", "ranking_id": f"r{t}",
                                "order": [f"{t}/gen_x", [f"{t}/gen_y", f"{t}/gen_z"]],
                                "created_at": "2026-01-02T11:00:00+00:00"})
        ranking_judgments.append({"judge": "judge_1", "ranking_id": f"r{t}",
                                  "order": [f"{t}/gen_y", f"{t}/gen_x", f"{t}/gen_z"]})
    write_jsonl(root / "rankings.jsonl", rankings)
    write_jsonl(root / "judgments.jsonl",
                judgments + ranking_judgments + list(extra_judgments or []))
    write_jsonl(root / "annotations.jsonl",
                annotations + ranking_answers + list(extra_annotations or []))
    return root
