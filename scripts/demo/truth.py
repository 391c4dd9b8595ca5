"""The hidden truth of the demo and how judges and annotators see it: true scores from the
drawn flaws, seeded noise and biases, the judges' raw text, the annotators' corrections."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from scripts.demo.spec import CRITERIA, CRITERION_NAMES, Q, TaskSpec

# ------------------------------------------------------------------------ hidden truth

BASE_QUALITY = {"nano-banana": 8.4, "gpt-image-1": 7.7, "qwen-image-edit": 6.6}

PENALTIES: dict[str, dict[str, float]] = {
    "residue": {"visual_instruction_cleanliness": -6.0, "visual_quality": -1.0},
    "misplaced": {
        "visual_instruction_adherence": -4.0,
        "text_instruction_following": -2.0,
        "scene_coherence": -1.0,
    },
    "identity": {"reference_consistency": -4.0, "text_instruction_following": -1.0},
    "missing": {
        "text_instruction_following": -4.0,
        "reference_consistency": -4.0,
        "visual_instruction_adherence": -2.0,
    },
    "duplicate": {
        "scene_coherence": -3.0,
        "text_instruction_following": -2.0,
        "reference_consistency": -1.0,
    },
    "no_wind": {"visual_instruction_adherence": -3.0, "text_instruction_following": -1.0},
    "no_light": {"visual_instruction_adherence": -3.0, "text_instruction_following": -1.0},
    "wrong_orientation": {"visual_instruction_adherence": -3.0, "text_instruction_following": -1.0},
    "wrong_pose": {"visual_instruction_adherence": -3.5, "text_instruction_following": -1.0},
    "pattern_leak": {
        "text_instruction_following": -2.0,
        "scene_coherence": -2.0,
        "reference_consistency": -1.0,
    },
    "no_pattern": {"text_instruction_following": -3.0, "reference_consistency": -2.0},
    "blur": {"visual_quality": -3.0, "scene_coherence": -0.5},
}

SENTENCES: dict[str, str] = {
    "residue": "A thin coloured rectangle from the layout image is still drawn around the {s}.",
    "misplaced": "The {s} is not inside its layout box; it sits too far to the right.",
    "identity": "The {s} does not match its reference: the colours changed.",
    "missing": "The {s} from the references is missing.",
    "duplicate": "The {s} appears twice.",
    "no_wind": "I see no wind effect along the cyan arrow.",
    "no_light": "The lighting does not follow the yellow arrow.",
    "wrong_orientation": "The {s} faces the opposite way from the pyramid.",
    "wrong_pose": "The pose does not match the pose reference: the arms are down.",
    "pattern_leak": "The pattern leaks onto the surroundings.",
    "no_pattern": "The requested surface pattern is not applied.",
    "blur": "The image is soft and slightly blurry.",
}

#: Per judge: score bias, score noise (sd), chance to notice a flaw, chance to flip a
#: yes/no answer, and flaws the judge tends to overlook.
JUDGE_PROFILE: dict[str, dict[str, Any]] = {
    "gpt-5": {"bias": 0.0, "sd": 1.0, "detect": 0.92, "flip": 0.05, "blind": ()},
    "gemini-2.5-pro": {"bias": 0.3, "sd": 1.2, "detect": 0.85, "flip": 0.07, "blind": ()},
    "qwen3-vl": {
        "bias": 0.7,
        "sd": 1.5,
        "detect": 0.75,
        "flip": 0.10,
        "blind": ("residue", "pattern_leak"),
    },
}
ANNOTATOR_PROFILE: dict[str, dict[str, Any]] = {
    "ann1": {"bias": 0.0, "sd": 0.6, "start": datetime(2026, 3, 2, 9, 0, tzinfo=UTC)},
    "ann2": {"bias": -0.3, "sd": 0.7, "start": datetime(2026, 3, 3, 13, 30, tzinfo=UTC)},
    "ann3": {"bias": 0.2, "sd": 0.8, "start": datetime(2026, 3, 4, 10, 15, tzinfo=UTC)},
}
#: Outputs (task, generator) each annotator did not get to: "most, not all".
ANNOTATOR_SKIPS: dict[str, set[tuple[str, str]]] = {
    "ann1": set(),
    "ann2": {("demo-05", "qwen-image-edit"), ("demo-06", "gpt-image-1")},
    "ann3": {
        ("demo-01", "qwen-image-edit"),
        ("demo-04", "nano-banana"),
        ("demo-05", "nano-banana"),
        ("demo-06", "qwen-image-edit"),
        ("demo-10", "nano-banana"),
    },
}
#: (annotator, task, generator, question number or criterion, first, corrected, note)
CORRECTIONS: tuple[tuple[str, str, str, int | str, Any, Any, str], ...] = (
    (
        "ann1",
        "demo-01",
        "gpt-image-1",
        5,
        "no",
        "yes",
        "looked again at full size: a faint red box outline is left around the cat",
    ),
    (
        "ann2",
        "demo-02",
        "nano-banana",
        "visual_instruction_adherence",
        8,
        4,
        "missed it first: the person stands outside the red layout box",
    ),
)
#: The judge text that could not be parsed: (judge, task, generator, criterion).
UNPARSED = ("qwen3-vl", "demo-04", "gpt-image-1", "visual_quality")


def clamp(v: float, lo: float = 1.0, hi: float = 10.0) -> float:
    """``v`` kept on the 1-10 scale (or ``lo``..``hi``)."""
    return max(lo, min(hi, v))


def kind_of(tag: str) -> str:
    """The kind of a defect tag: ``residue`` of ``residue:cat``."""
    return tag.split(":", 1)[0]


def true_scores(spec: TaskSpec, gen: str, rng: random.Random) -> dict[str, float]:
    """The hidden true score per criterion of ``gen``'s output: the generator's base
    quality with seeded noise, minus the penalties of the flaws drawn into it."""
    scores = {}
    for name in CRITERION_NAMES:
        v = BASE_QUALITY[gen] + rng.gauss(0.0, 0.5)
        for tag in spec.defects[gen]:
            v += PENALTIES.get(kind_of(tag), {}).get(name, 0.0)
        scores[name] = clamp(v)
    return scores


def perceived(
    spec: TaskSpec, gen: str, truth: Mapping[str, float], seen: set[str]
) -> dict[str, float]:
    """Truth as seen by someone who noticed only the flaws in ``seen``: unseen flaws
    weigh 30 % of their penalty."""
    out = dict(truth)
    for tag in spec.defects[gen]:
        if tag not in seen:
            for name, pen in PENALTIES.get(kind_of(tag), {}).items():
                out[name] = clamp(out[name] - 0.7 * pen)
    return out


def true_answer(q: Q, seen: set[str]) -> str:
    """The answer to ``q`` of someone who noticed the flaws in ``seen``: the pass answer
    unless one of them is a flaw the question fails on."""
    failed = any(t in seen for t in q.fails_on)
    if not failed:
        return q.pass_answer
    return "no" if q.pass_answer == "yes" else "yes"


def _sentence(tag: str) -> str:
    kind, _, subject = tag.partition(":")
    return SENTENCES[kind].format(s=subject or "subject")


def judge_text(
    spec: TaskSpec,
    gen: str,
    judge: str,
    scores: Mapping[str, int],
    seen: set[str],
    garble: str | None,
) -> str:
    """VIF judge format: a Reasoning block, then one ``Name: score.`` line per criterion."""
    subjects = ", ".join(s for s, _b in spec.layout)
    found = [_sentence(t) for t in spec.defects[gen] if t in seen]
    if found:
        body = " ".join(found)
        verdict = "These problems lower the affected criteria."
    else:
        body = (
            f"All subjects ({subjects}) are present and placed as the visual "
            "instructions ask, and no instruction marks remain."
        )
        verdict = "Overall the output follows the task well."
    opener = {
        "gpt-5": "I compared the output with every reference and visual instruction.",
        "gemini-2.5-pro": "Checking the references, the visual instructions and the text in order.",
        "qwen3-vl": "The image shows the requested scene.",
    }[judge]
    lines = [f"Reasoning: {opener} {body} {verdict}", ""]
    for c in CRITERIA:
        if c["name"] == garble:
            lines.append(f"{c['prompt']}: ei8ht/1O ~ (see ab0ve) ￼")
        else:
            lines.append(f"{c['prompt']}: {scores[c['name']]}.")
    return "\n".join(lines)
