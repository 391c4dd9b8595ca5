"""The demo's diagnostic tree (TRACE-Bench): the nodes of task :data:`TREE_TASK`, the flaws
each generator's node outputs have, the judge's answers on them (with mistakes) and the
drawing of a node's output."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from PIL import Image, ImageChops, ImageDraw, ImageFilter

from scripts.demo.drawing import fit_sprite, scene, sprite_cat, sprite_person
from scripts.demo.spec import SEED, TASKS, Q, TaskSpec
from scripts.demo.truth import true_answer

# ---------------------------------------------------------------------- diagnostic tree
#
# TRACE-Bench ("TRACE-Bench: Decomposing and Diagnosing Multi-Reference Image Generation",
# Wang et al. 2026, Sec. 3.5 and Appendix C.2-C.3) decomposes a failing case into simpler
# cases, generates and judges each one again and localizes every failure at the first node
# where it passes. The demo carries one such tree, on TREE_TASK ``C(f1⊕g1, f2)⊕g_bg``: the
# person f1 wearing the striped shirt g1, the red cat f2, the night street g_bg.
#
#   N0    C(f1⊕g1, f2)⊕g_bg   the full case (the task's own outputs)
#   N1    C(f1⊕g1, f2)        Rule 1 strips the background: plain studio
#   N2a   f1⊕g1               Rule 2 keeps the person branch; the cat only as text
#   N2b   f2                  Rule 2 keeps the cat branch; the person only as text
#   N3a1  f1                  Rule 4 removes the shirt from N2a: the person as referenced
#
# Every generator has one output per node (``meta.node``), drawn at TREE_NODE_SIZE, and
# TREE_JUDGE answers each node's retained questions. With its answers the automatic
# localization (annotation.trace.trees.automatic_localization) gives:
#
# * nano-banana: at N0 the street's magenta neon light recolours the cat; on the plain
#   background of N1 it is red again: f2 -> Global Reference (N1). gpt-5 also claims a
#   second cat at N0 (a judge mistake: the reviewer answers "not a failure"), which passes
#   at N1 too, so the automatic localization calls it Global Reference.
# * gpt-image-1: the shirt's stripes leak onto the cat (source leakage) at N0 and N1; with
#   the cat only in the text (N2a) the stripes stay on the shirt, and the cat alone (N2b)
#   is red: the exclusivity of f1⊕g1 -> Joint Composition (N2a), f2 -> Joint Composition
#   (N2b).
# * qwen-image-edit: the person's hair and scarf drift at every node, down to the person
#   alone (N3a1): f1 -> Persistent Failure. The shirt is never striped either, but gpt-5
#   wrongly sees the stripes at N2a (a judge mistake), so the automatic localization says
#   Joint Composition (N2a) where the images show a persistent failure.
#
# Every other instance passes at the root: Stable Success.

TREE_TASK = "demo-10"
TREE_NODE_SIZE = 384
#: The tree of TREE_TASK as written into its ``meta.tree_nodes``: what
#: annotation.trace.decompose computes for the formula (tests/test_demo_tree.py checks it), with
#: the prompt a researcher sends the generator for each node (with the references the node
#: keeps, named as in the task). ``questions``: retained question numbers.
TREE_NODES: tuple[dict[str, Any], ...] = (
    {
        "id": "N0",
        "parent": None,
        "rule": None,
        "removed": [],
        "formula": "C(f1⊕g1, f2)⊕g_bg",
        "prompt": "The person of Image_0 wears the orange-and-white striped shirt of Image_1 "
        "and stands beside the red cat of Image_2 on the night street of Image_3, each in "
        "its box of Image_4.",
        "questions": [1, 2, 3, 4, 5, 6],
    },
    {
        "id": "N1",
        "parent": "N0",
        "rule": 1,
        "removed": ["g_bg"],
        "formula": "C(f1⊕g1, f2)",
        "prompt": "The person of Image_0 wears the orange-and-white striped shirt of Image_1 "
        "and stands on the left; the red cat of Image_2 sits on the right. Plain studio "
        "background.",
        "questions": [1, 2, 3, 4, 6],
    },
    {
        "id": "N2a",
        "parent": "N1",
        "rule": 2,
        "removed": ["f2"],
        "formula": "f1⊕g1",
        "prompt": "The person of Image_0 wears the orange-and-white striped shirt of Image_1 "
        "and stands on the left; a small cat sits on the right. Plain studio background.",
        "questions": [1, 2, 3],
    },
    {
        "id": "N2b",
        "parent": "N1",
        "rule": 2,
        "removed": ["f1⊕g1"],
        "formula": "f2",
        "prompt": "The red cat of Image_2 sits on the right; a person in a striped shirt "
        "stands on the left. Plain studio background.",
        "questions": [4],
    },
    {
        "id": "N3a1",
        "parent": "N2a",
        "rule": 4,
        "removed": ["g1"],
        "formula": "f1",
        "prompt": "The person of Image_0, dressed as in the photo, stands on the left; a "
        "small cat sits on the right. Plain studio background.",
        "questions": [1],
    },
)
#: What a node shows: (background, the person, the cat). ``reference`` = drawn from the
#: reference images; ``text`` = only described in the node prompt (a generic stand-in);
#: ``shirt`` = the person of Image_0 wearing the striped shirt.
TREE_SCENES: dict[str, tuple[str, str, str]] = {
    "N0": ("night_city", "shirt", "reference"),
    "N1": ("studio", "shirt", "reference"),
    "N2a": ("studio", "shirt", "text"),
    "N2b": ("studio", "text", "reference"),
    "N3a1": ("studio", "reference", "text"),
}
#: Flaws drawn into each non-root node output (the root's are TREE_TASK's ``defects``).
TREE_DEFECTS: dict[str, dict[str, list[str]]] = {
    "nano-banana": {"N1": [], "N2a": [], "N2b": [], "N3a1": []},
    "gpt-image-1": {"N1": ["pattern_leak", "identity:cat"], "N2a": [], "N2b": [], "N3a1": []},
    "qwen-image-edit": {
        "N1": ["identity:person", "no_pattern", "blur"],
        "N2a": ["identity:person", "no_pattern", "blur"],
        "N2b": ["blur"],
        "N3a1": ["identity:person", "blur"],
    },
}
#: The judge run on the tree: it answers every node output (and the root, as drawn), so
#: the tree pages pick it by default (the judge with the most node answers). The other
#: judges answer the root outputs only, as for every task.
TREE_JUDGE = "gpt-5"
#: Judge mistakes on the tree: (judge, generator, node, question number) -> (answer, raw).
TREE_MISTAKES: dict[tuple[str, str, str, int], tuple[str, str]] = {
    ("gpt-5", "nano-banana", "N0", 6): (
        "yes",
        "yes. a second cat seems to sit under the neon sign",
    ),
    ("gpt-5", "qwen-image-edit", "N2a", 2): (
        "yes",
        "yes. the person wears an orange shirt with white stripes",
    ),
}


def tree_defects(gen: str, node: str) -> list[str]:
    """The flaws drawn into ``gen``'s output of ``node`` of the demo tree."""
    if node == "N0":
        return next(s for s in TASKS if s.task_id == TREE_TASK).defects[gen]
    return TREE_DEFECTS[gen][node]


def tree_nodes_meta(spec: TaskSpec) -> list[dict[str, Any]]:
    """TREE_NODES as ``meta.tree_nodes`` entries (question ids instead of numbers)."""
    return [
        {**n, "questions": [f"{spec.task_id}.q{k}" for k in n["questions"]]} for n in TREE_NODES
    ]


def tree_answer(judge: str, gen: str, node: str, n: int, q: Q) -> tuple[str, str]:
    """A tree judge's answer to question ``n`` on ``gen``'s ``node`` output, and its text:
    what is drawn, except the TREE_MISTAKES."""
    mistake = TREE_MISTAKES.get((judge, gen, node, n))
    if mistake is not None:
        return mistake
    answer = true_answer(q, set(tree_defects(gen, node)))
    return answer, f"{answer}. {q.ok if answer == q.pass_answer else q.bad}"


def _banded(sprite: Image.Image, color: str = "white", every: float = 22.0) -> Image.Image:
    """The sprite with horizontal bands of ``color`` across its shape (a leaked pattern)."""
    s = sprite.width / 512
    bands = Image.new("RGBA", sprite.size, (0, 0, 0, 0))
    d = ImageDraw.Draw(bands)
    y = 6 * s
    while y < sprite.height:
        d.rectangle([0, y, sprite.width, y + 9 * s], fill=color)
        y += every * s
    out = sprite.copy()
    out.paste(bands, (0, 0), ImageChops.multiply(bands.getchannel("A"), sprite.getchannel("A")))
    return out


def _tree_person(kind: str, defects: Sequence[str]) -> Image.Image:
    if kind == "text":  # "a person in a striped shirt": no reference, a generic person
        return sprite_person(shirt="#2F6DB5", stripes=True, hair="#1B1B1B", scarf=None)
    identity = "identity:person" in defects
    return sprite_person(
        shirt="#F77F00",
        stripes=kind == "shirt" and "no_pattern" not in defects,
        hair="#D9B44A" if identity else "#4A2C17",
        scarf="#2E7D32" if identity else "#C1121F",
    )


def _tree_cat(kind: str, defects: Sequence[str]) -> Image.Image:
    if kind == "text":  # "a small cat": no reference, a generic grey cat
        return sprite_cat("#9A9AA4")
    if "pattern_leak" in defects:  # the shirt's stripes land on the cat
        return _banded(sprite_cat("#F77F00"))
    if "identity:cat" in defects:  # recoloured by the magenta neon light of the street
        return sprite_cat("#8E3FA8")
    return sprite_cat("#D62828")


def render_tree_node(spec: TaskSpec, gen: str, node: str, size: int = TREE_NODE_SIZE
                     ) -> Image.Image:
    """``gen``'s output for ``node`` of the demo tree: what the node keeps (TREE_SCENES),
    with the flaws of :func:`tree_defects` drawn in."""
    defects = tree_defects(gen, node)
    background, person, cat = TREE_SCENES[node]
    rng = random.Random(f"{SEED}/{spec.task_id}/{gen}/{node}")
    s = size / 512
    img = scene(background, size).convert("RGBA")
    boxes = {}
    for subject, box in spec.layout:  # each generator places the subjects a little apart
        dx, dy = rng.uniform(-0.03, 0.03), rng.uniform(-0.02, 0.0)
        boxes[subject] = [box[0] + dx, box[1] + dy, box[2] + dx, box[3] + dy]
    if background == "night_city" and "identity:cat" in defects and "pattern_leak" not in defects:
        # a pool of the neon sign's magenta light around the cat, which it recolours
        x0, y0, x1, y1 = boxes["cat"]
        pool = Image.new("RGBA", (size, size), (255, 63, 210, 0))
        ImageDraw.Draw(pool).ellipse(
            [(x0 - 0.08) * size, (y0 - 0.16) * size, (x1 + 0.08) * size, (y1 + 0.04) * size],
            fill=(255, 63, 210, 120),
        )
        img = Image.alpha_composite(img, pool.filter(ImageFilter.GaussianBlur(size / 14)))
    for subject, sprite in (
        ("person", _tree_person(person, defects)),
        ("cat", _tree_cat(cat, defects)),
    ):
        content, x, y = fit_sprite(sprite, boxes[subject], size)
        shadow = Image.new("RGBA", (size, size), (0, 0, 0, 0))
        ImageDraw.Draw(shadow).ellipse(
            [
                x + content.width * 0.1,
                y + content.height - 10 * s,
                x + content.width * 0.9,
                y + content.height + 8 * s,
            ],
            fill=(0, 0, 0, 70),
        )
        img = Image.alpha_composite(img, shadow.filter(ImageFilter.GaussianBlur(4 * s)))
        img.alpha_composite(content, (x, y))
    if gen == "gpt-image-1":  # its warm, yellowish cast
        img = Image.alpha_composite(img, Image.new("RGBA", img.size, (255, 200, 80, 22)))
    out = img.convert("RGB")
    if "blur" in defects:
        out = out.filter(ImageFilter.GaussianBlur(2.2 * s))
    return out
