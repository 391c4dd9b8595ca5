"""A small checklist study with known ties, for the adjudication queue (issue #16, item 3).

Four outputs ``o1``..``o4`` of one task (output ids ``t/model-alpha`` .. ``t/model-delta``:
:data:`OUTPUT`, generators ``model-alpha`` ..), three independent questions ``q1``..``q3``
(pass answer yes), annotators ``ann_a`` and ``ann_b`` on every decision, the judge
``judge-x``:

=====  ==========================  ==========================
       humans (A / B)              judge
=====  ==========================  ==========================
o1     q1 y/n (tie), q2 y, q3 y    y, y, n
o2     q1 n, q2 y/n (tie), q3 y    n, y, y
o3     q1 y, q2 n, q3 y/n (tie)    y, y, n
o4     q1 y, q2 y, q3 n            y, y, n
=====  ==========================  ==========================

and ``ann_c`` on ``o4.q1`` only, answering no (a 2-1 split: a disagreement, not a tie).
Against the human majority (the 9 agreed decisions; o4.q1 is yes 2-1) the judge agrees on
7 of 9. With the ties adjudicated o1.q1 yes, o2.q2 no, o3.q3 no it agrees on 9 of 12:
both-yes 6, judge-yes-human-no 2, judge-no-human-yes 1, both-no 3, so Cohen's kappa is
(0.75 - 76/144) / (1 - 76/144) = 8/17.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.bundles import make_image, write_jsonl

OUTPUT = {"o1": "t/model-alpha", "o2": "t/model-beta", "o3": "t/model-gamma",
          "o4": "t/model-delta"}
JUDGE_NAME = "judge-x"
HUMANS = {
    "o1": {"q1": ("yes", "no"), "q2": ("yes", "yes"), "q3": ("yes", "yes")},
    "o2": {"q1": ("no", "no"), "q2": ("yes", "no"), "q3": ("yes", "yes")},
    "o3": {"q1": ("yes", "yes"), "q2": ("no", "no"), "q3": ("yes", "no")},
    "o4": {"q1": ("yes", "yes"), "q2": ("yes", "yes"), "q3": ("no", "no")},
}
JUDGE = {"o1": ("yes", "yes", "no"), "o2": ("no", "yes", "yes"),
         "o3": ("yes", "yes", "no"), "o4": ("yes", "yes", "no")}
TIES = [(OUTPUT["o1"], "q1"), (OUTPUT["o2"], "q2"), (OUTPUT["o3"], "q3")]
DECISIONS = {TIES[0]: "yes", TIES[1]: "no", TIES[2]: "no"}
QUESTION_TEXT = {"q1": "Is there a dog?", "q2": "Is the dog red?", "q3": "Is it sunny?"}


def write_tie_bundle(root: Path) -> Path:
    """Write the bundle (real PNG images) and return its folder."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "bundle.json").write_text(json.dumps(
        {"name": "Ties", "benchmark": "TIIF-Bench",
         "judges": [{"name": JUDGE_NAME, "kind": "vlm"}]}), encoding="utf-8")
    make_image(root / "images" / "ref.png", color="red")
    write_jsonl(root / "tasks.jsonl", [{
        "task_id": "t", "instruction": "A red dog in the sun.",
        "images": [{"path": "images/ref.png", "role": "reference", "kind": "main"}],
        "questions": [{"question_id": q, "text": text, "pass_answer": "yes"}
                      for q, text in QUESTION_TEXT.items()]}])
    colors = iter(["blue", "green", "orange", "purple"])
    outputs, judgments, annotations = [], [], []
    for o in HUMANS:
        make_image(root / "outputs" / f"{o}.png", size=(96, 96), color=next(colors))
        outputs.append({"output_id": OUTPUT[o], "task_id": "t",
                        "generator": OUTPUT[o].split("/")[1], "path": f"outputs/{o}.png"})
        for q, answer in zip(QUESTION_TEXT, JUDGE[o], strict=True):
            judgments.append({"judge": JUDGE_NAME, "output_id": OUTPUT[o], "question_id": q,
                              "answer": answer})
        for q, (a, b) in HUMANS[o].items():
            annotations.append({"annotator": "ann_a", "output_id": OUTPUT[o], "question_id": q,
                                "answer": a, "note": f"A's note on {q}"})
            annotations.append({"annotator": "ann_b", "output_id": OUTPUT[o], "question_id": q,
                                "answer": b})
    annotations.append({"annotator": "ann_c", "output_id": OUTPUT["o4"], "question_id": "q1",
                        "answer": "no"})
    write_jsonl(root / "outputs.jsonl", outputs)
    write_jsonl(root / "judgments.jsonl", judgments)
    write_jsonl(root / "annotations.jsonl", annotations)
    return root
