"""A small TRACE-style bundle with a diagnostic tree, node outputs and judge answers.

Task ``tr1``: ``C(f1⊕g1, f2)⊕g_style`` (dog f1 wearing hat g1, cat f2, style g_style).
The tree (Appendix C.2): N0 -> N1 (Rule 1 strips g_style) -> N2a ``f1⊕g1`` and N2b ``f2``
(Rule 2) -> N3a1 ``f1`` (Rule 4). The judge ``gpt-5`` fails at the root: g1, f1⊕g1 and f2.
f2 passes at N1 (Global Reference), g1 and f1⊕g1 pass at N2a (Joint Composition).
Generator ``m``; task ``plain`` has no tree.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.bundles import make_image, write_jsonl

FORMULA = "C(f1⊕g1, f2)⊕g_style"
QUESTIONS = [
    ("tr1.q1", "f", "f1", "yes", "Is the dog of Image_0 in the image?"),
    ("tr1.q2", "g", "g1", "yes", "Does the dog wear the hat of Image_1?"),
    ("tr1.q3", "⊕", "f1⊕g1", "yes", "Is the hat on the dog, not on the cat?"),
    ("tr1.q4", "f", "f2", "yes", "Is the cat of Image_2 in the image?"),
    ("tr1.q5", "g", "g_style", "yes", "Is the picture in the style of Image_3?"),
    ("tr1.q6", "C", "C, duplication", "no", "Does any animal appear more than once?"),
]
#: the judge's answers per node (question number -> answer)
ANSWERS = {
    "N0": {1: "yes", 2: "no", 3: "no", 4: "no", 5: "yes", 6: "no"},
    "N1": {1: "yes", 2: "no", 3: "no", 4: "yes", 6: "no"},
    "N2a": {1: "yes", 2: "yes", 3: "yes"},
    "N2b": {4: "yes"},
    "N3a1": {1: "yes"},
}
EXPECTED = {"g|g1": "N2a", "⊕|f1⊕g1": "N2a", "f|f2": "N1"}

BUNDLE_JSON = """{"name": "Tree fixture", "benchmark": "TRACE-Bench",
 "judges": [{"name": "gpt-5", "kind": "vlm"}]}"""


def write_tree_bundle(root: Path, *, explicit_nodes: bool = False) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "bundle.json").write_text(BUNDLE_JSON, encoding="utf-8")
    colors = iter(["red", "blue", "green", "orange", "purple", "brown", "pink", "gray",
                   "cyan", "yellow", "olive", "navy", "teal"])
    images = []
    for name in ("dog", "hat", "cat", "style"):
        path = f"images/{name}.png"
        make_image(root / path, size=(80, 80), color=next(colors))
        images.append({"path": path, "role": "reference", "label": name})
    meta: dict = {"formula": FORMULA}
    if explicit_nodes:
        meta["tree_nodes"] = [
            {"id": "N0", "parent": None, "rule": None, "removed": [], "prompt": "all"},
            {"id": "N1", "parent": "N0", "rule": 1, "removed": ["g_style"],
             "prompt": "the dog with the hat and the cat, no style"},
            {"id": "N2a", "parent": "N1", "rule": 2, "removed": ["f2"],
             "prompt": "the dog with the hat"},
            {"id": "N2b", "parent": "N1", "rule": 2, "removed": ["f1⊕g1"],
             "prompt": "the cat"},
            {"id": "N3a1", "parent": "N2a", "rule": 4, "removed": ["g1"],
             "prompt": "the dog"},
        ]
    tasks = [
        {"task_id": "tr1", "instruction": "The dog of Image_0 wearing the hat of Image_1 next to "
         "the cat of Image_2, in the style of Image_3.", "images": images,
         "questions": [{"question_id": q, "operator": op, "target": t, "pass_answer": p,
                        "text": text} for q, op, t, p, text in QUESTIONS],
         "meta": meta},
        {"task_id": "plain", "instruction": "A dog.", "images": images[:1],
         "questions": [{"question_id": "plain.q1", "text": "Is there a dog?",
                        "pass_answer": "yes"}]},
    ]
    write_jsonl(root / "tasks.jsonl", tasks)
    outputs, judgments = [], []
    for node, answers in ANSWERS.items():
        oid = "tr1/m" if node == "N0" else f"tr1/m/{node}"
        path = f"outputs/{node}.png"
        make_image(root / path, size=(96, 96), color=next(colors), text=node)
        out = {"output_id": oid, "task_id": "tr1", "generator": "m", "path": path}
        if node != "N0":
            out["meta"] = {"node": node}
        outputs.append(out)
        for n, answer in answers.items():
            judgments.append({"judge": "gpt-5", "output_id": oid,
                              "question_id": f"tr1.q{n}", "answer": answer})
    make_image(root / "outputs/plain.png", size=(96, 96), color=next(colors))
    outputs.append({"output_id": "plain/m", "task_id": "plain", "generator": "m",
                    "path": "outputs/plain.png"})
    write_jsonl(root / "outputs.jsonl", outputs)
    write_jsonl(root / "judgments.jsonl", judgments)
    return root
