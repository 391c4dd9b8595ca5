"""Converters from the public fixtures in ../shared/fixtures to judge-audit bundles (tests only).

The fixtures are test data, never copied into the product: these functions write a bundle
in a temporary folder from them, so the product's own import and report paths are what the
published figures are checked against.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import SHARED

TIFA = SHARED / "fixtures" / "tifa" / "human_annotations_with_scores.json"
TIFA_METRICS = ("meteor", "bleu", "rouge", "spice", "clipscore_vitb32", "tifa_vilt",
                "tifa_git-large", "tifa_ofa-large", "tifa_blip2-flant5xl", "tifa_mplug-large")


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")


def write_tifa_bundle(root: Path) -> Path:
    """TIFA v1.0: 800 images (160 prompts x 5 generators), two 1-5 human ratings each, and
    ten automatic metrics as judges of kind "metric". Raters are positional (``rater1``,
    ``rater2``), as PUBLISHED.md says; images are not at hand (``path: null``)."""
    records = json.loads(TIFA.read_text(encoding="utf-8"))
    items = list(records.values()) if isinstance(records, dict) else records
    root.mkdir(parents=True, exist_ok=True)
    (root / "bundle.json").write_text(json.dumps({
        "name": "TIFA v1.0 human judgments", "benchmark": "TIFA",
        "criteria": [{"name": "overall", "label": "Overall match (1-5)", "min": 1, "max": 5,
                      "step": 1, "level": "ordinal"}],
        "judges": [{"name": m, "kind": "metric",
                    "scale": [0, 100] if m.startswith("clipscore") else [0, 1]}
                   for m in TIFA_METRICS],
    }), encoding="utf-8")
    tasks, outputs, judgments, annotations = {}, [], [], []
    for item in items:
        tasks.setdefault(item["text_id"], {"task_id": item["text_id"],
                                           "instruction": item["text"]})
        output_id = item["image_path"]
        generator = output_id.removeprefix(item["text_id"] + "_").rsplit(".", 1)[0]
        outputs.append({"output_id": output_id, "task_id": item["text_id"],
                        "generator": generator, "path": None})
        for metric in TIFA_METRICS:
            judgments.append({"judge": metric, "output_id": output_id, "criterion": "overall",
                              "score": item[metric]})
        for k, score in enumerate(item["human_scores"], start=1):
            annotations.append({"annotator": f"rater{k}", "output_id": output_id,
                                "criterion": "overall", "score": score})
    _jsonl(root / "tasks.jsonl", list(tasks.values()))
    _jsonl(root / "outputs.jsonl", outputs)
    _jsonl(root / "judgments.jsonl", judgments)
    _jsonl(root / "annotations.jsonl", annotations)
    return root
