"""A synthetic, deterministic demo bundle: VIF-Bench style tasks with TRACE-style checklists.

:func:`build_demo_bundle` writes a complete bundle (``docs/bundle-format.md``) so every page
of the app has something real to show without any download: ten multi-reference tasks with
drawn reference images and visual instructions (:mod:`annotation.vif.draw`), outputs of three
generators with deliberate flaws, the scores and yes/no answers of three VLM judges (with
VIF-style raw text) and the answers of three human annotators, including corrected answers.

One task (``demo-10``, :data:`TREE_TASK`) carries a TRACE-Bench diagnostic tree
(``meta.tree_nodes``, :data:`TREE_NODES`): every generator has an output per node
(``meta.node``), drawn to show what the node keeps, and gpt-5 (:data:`TREE_JUDGE`) answers
each node's retained questions, with two mistakes for a reviewer to catch
(:data:`TREE_MISTAKES`). The designed localizations are described above :data:`TREE_TASK`.

Every reference carries VIF-Bench conflict pre-labels (``meta.prelabel``: yaw and its
reliability, ``light_distinctive``, ``wind_responsive``, ``pose_distinctive``, ``notes``,
``source``), and every task its published labels ``meta.conflicts``, computed here with the
rules of :mod:`annotation.vif.conflicts` from those pre-labels, as the benchmark's pipeline did.
Together the tasks make every rule fire, with the borderline cases of Appendix C.4 (see
:data:`SUBJECTS` and the tasks ``demo-07`` to ``demo-09``). Two pre-labels are wrong on
purpose, so a verifier has something to correct (:data:`WRONG_PRELABELS`).

Everything is synthetic. Each output has hidden "true" scores derived from the flaws drawn
into it (``meta.defects`` names them); judges and annotators see that truth through seeded
noise, biases and occasionally missed flaws, so agreement statistics are plausible but
not perfect. The build is byte-for-byte deterministic: fixed seeds
(:class:`random.Random` only), JSON with sorted keys, PNGs without metadata.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from PIL import Image, ImageChops, ImageDraw, ImageFilter

from annotation.vif import draw as vi_draw
from annotation.vif.conflicts import CONFLICT_KEYS, task_conflicts, task_prelabels

SEED = 20260302
SIZE = 512  # every image of the bundle is SIZE x SIZE
GENERATORS = ("nano-banana", "gpt-image-1", "qwen-image-edit")
JUDGES = ("gpt-5", "gemini-2.5-pro", "qwen3-vl")
ANNOTATORS = ("ann1", "ann2", "ann3")

# --------------------------------------------------------------------------- criteria

CRITERIA: tuple[dict[str, Any], ...] = (
    {
        "name": "text_instruction_following",
        "label": "Text Instruction Following",
        "prompt": "Text Instruction Following",
        "rubric": "Does the image do what the **text instruction** asks: the requested "
        "subjects, their relations, the scene and every explicit detail? 10: every part "
        "of the instruction is satisfied. 5: the main request is met but several details "
        "are wrong or missing. 1: the image ignores the instruction.",
    },
    {
        "name": "reference_consistency",
        "label": "Reference Consistency",
        "prompt": "Reference Consistency",
        "rubric": "Do the subjects keep the **identity of their reference images** "
        "(shape, colours, distinctive marks, clothing, surface)? Compare each subject "
        "with its `Image_k`. 10: every subject is clearly the same one. 5: recognisable "
        "but with visible changes. 1: the references were replaced or lost.",
    },
    {
        "name": "visual_instruction_adherence",
        "label": "Visual Instruction Adherence",
        "prompt": "Vision Instruction Adherence",
        "rubric": "Does the image satisfy the **visual instructions**: each subject inside "
        "its layout box, facing as its orientation pyramid shows (the orange base is the "
        "front), wind blowing and light falling along the cyan / yellow arrows (from the "
        "round tail to the head), the pose of a pose reference? 10: every visual "
        "instruction is met. 1: none is.",
    },
    {
        "name": "visual_instruction_cleanliness",
        "label": "Visual Instruction Cleanliness",
        "prompt": "Visual Instruction Residue",
        "rubric": "Higher = cleaner. Are the instruction **marks themselves** absent from "
        "the output: no layout boxes or their labels, no arrows, no pyramids, no "
        "skeleton lines? 10: no trace at all. 5: a faint but visible mark. 1: the "
        "instruction image is pasted into the output. (The judge prompt calls this "
        "criterion *Visual Instruction Residue*.)",
    },
    {
        "name": "scene_coherence",
        "label": "Scene Coherence",
        "prompt": "Scene Coherence",
        "rubric": "Does everything form **one plausible scene**: consistent scale, ground "
        "plane, lighting and shadows, no duplicated or floating subjects, no collage "
        "look? 10: a single natural picture. 1: unrelated cut-outs.",
    },
    {
        "name": "visual_quality",
        "label": "Visual Quality",
        "prompt": "Visual Quality",
        "rubric": "Perceptual quality regardless of the instructions: sharpness, clean "
        "edges, no artefacts, distortions or noise. 10: flawless. 5: usable with visible "
        "flaws. 1: unusable.",
    },
)
CRITERION_NAMES = tuple(c["name"] for c in CRITERIA)

GUIDELINES = """\
# How to annotate

You see everything the generator saw: the **reference images** and the **visual
instructions** (`Image_0`, `Image_1`, ... in input order), the **text instruction** and
the **generated output**. Judge the output only.

## Yes / No questions
- Answer what you **see** in the output, not what the instruction says should be there.
- Read negative questions carefully: "Does any subject appear more than once?" is
  answered **No** when the image is fine.
- Choose **Can't tell** only when the image really does not allow a decision (too
  small, hidden, ambiguous), not when you are unsure of the rule: then read the
  question's target and the rubric again.
- A question under another one (for example "Is the cat in its box?" under "Is there a
  cat?") does not apply when its parent is answered No; you may skip it.

## Scores 1-10
- Read the rubric of each criterion; use the whole scale. **10** = nothing to criticise,
  **7-8** = small flaws, **5** = clearly flawed but usable, **1-2** = failed.
- Score each criterion on its own: a blurry image can still follow the layout
  perfectly.
- Visual instruction marks: a pyramid's **orange base is the subject's front**; an
  arrow goes from its round tail (the source) to its head. A box, arrow or skeleton left
  in the output lowers **Visual Instruction Cleanliness**, not adherence.
- Add a note when you change an earlier answer or when something is unusual.
"""

# ------------------------------------------------------------------------------ drawing


def _hex(color: str) -> tuple[int, int, int]:
    c = color.lstrip("#")
    return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16)


def _vgradient(size: tuple[int, int], top: str, bottom: str) -> Image.Image:
    """A vertical gradient from ``top`` to ``bottom`` (RGB)."""
    w, h = size
    mask = Image.linear_gradient("L").resize((w, h), Image.Resampling.BILINEAR)
    return Image.composite(Image.new("RGB", size, bottom), Image.new("RGB", size, top), mask)


def _px(v: float, s: float) -> int:
    return round(v * s)


def sprite_cat(color: str = "#D62828", size: int = SIZE) -> Image.Image:
    """A cat silhouette facing screen-right, on a transparent background."""
    s = size / 512
    img = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    c = _hex(color)
    dark = tuple(max(0, int(v * 0.7)) for v in c)
    tail = [  # a quadratic Bezier curve from the rump up and back
        (
            _px((1 - t) ** 2 * 130 + 2 * (1 - t) * t * 30 + t * t * 80, s),
            _px((1 - t) ** 2 * 320 + 2 * (1 - t) * t * 330 + t * t * 160, s),
        )
        for t in (k / 16 for k in range(17))
    ]
    d.line(
        tail,
        fill=dark,
        width=_px(26, s),
        joint="curve",
    )
    for x0, x1 in ((140, 172), (190, 222), (285, 317), (330, 360)):
        d.rounded_rectangle(
            [_px(x0, s), _px(350, s), _px(x1, s), _px(455, s)], radius=_px(12, s), fill=dark
        )
    d.ellipse([_px(110, s), _px(245, s), _px(375, s), _px(405, s)], fill=c)
    d.polygon([(_px(x, s), _px(y, s)) for x, y in ((318, 185), (330, 92), (372, 160))], fill=c)
    d.polygon([(_px(x, s), _px(y, s)) for x, y in ((380, 156), (422, 90), (438, 182))], fill=c)
    d.ellipse([_px(305, s), _px(140, s), _px(445, s), _px(280, s)], fill=c)
    d.ellipse([_px(385, s), _px(188, s), _px(413, s), _px(216, s)], fill="#FFF4C2")
    d.ellipse([_px(396, s), _px(193, s), _px(410, s), _px(211, s)], fill="black")
    d.polygon(
        [(_px(x, s), _px(y, s)) for x, y in ((432, 226), (446, 232), (434, 240))], fill="#FF9EB5"
    )
    for dy in (-6, 6):
        d.line(
            [(_px(420, s), _px(240 + dy, s)), (_px(480, s), _px(236 + 2 * dy, s))],
            fill="white",
            width=max(1, _px(3, s)),
        )
    return img


def sprite_mug(color: str = "#1F5FBF", pattern: str | None = None, size: int = SIZE) -> Image.Image:
    """A mug with its handle on the screen-right side; ``pattern="dots"`` adds polka dots."""
    s = size / 512
    img = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    c = _hex(color)
    dark = tuple(max(0, int(v * 0.65)) for v in c)
    d.ellipse([_px(300, s), _px(215, s), _px(415, s), _px(345, s)], outline=c, width=_px(30, s))
    body = [_px(140, s), _px(170, s), _px(330, s), _px(420, s)]
    d.rounded_rectangle(body, radius=_px(24, s), fill=c)
    if pattern == "dots":
        dots = Image.new("RGBA", (size, size), (0, 0, 0, 0))
        dd = ImageDraw.Draw(dots)
        for row in range(7):
            for col in range(6):
                x = 150 + col * 34 + (17 if row % 2 else 0)
                y = 190 + row * 34
                dd.ellipse(
                    [_px(x - 9, s), _px(y - 9, s), _px(x + 9, s), _px(y + 9, s)], fill="white"
                )
        mask = Image.new("L", (size, size), 0)
        ImageDraw.Draw(mask).rounded_rectangle(body, radius=_px(24, s), fill=255)
        img.paste(dots, (0, 0), ImageChops.multiply(dots.getchannel("A"), mask))
        d = ImageDraw.Draw(img)
    d.ellipse([_px(140, s), _px(150, s), _px(330, s), _px(195, s)], fill=dark)
    d.ellipse([_px(156, s), _px(158, s), _px(314, s), _px(188, s)], fill="#4B2E1E")
    return img


def sprite_tree(color: str = "#2E9E3E", size: int = SIZE) -> Image.Image:
    """A round green tree on a brown trunk."""
    s = size / 512
    img = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    c = _hex(color)
    light = tuple(min(255, int(v * 1.25)) for v in c)
    d.polygon(
        [(_px(x, s), _px(y, s)) for x, y in ((228, 470), (240, 290), (275, 290), (290, 470))],
        fill="#7B4A21",
    )
    for cx, cy, r, col in (
        (185, 265, 85, c),
        (330, 260, 90, c),
        (257, 195, 115, c),
        (225, 170, 45, light),
        (300, 225, 40, light),
    ):
        d.ellipse([_px(cx - r, s), _px(cy - r, s), _px(cx + r, s), _px(cy + r, s)], fill=col)
    return img


def sprite_person(
    joints: Mapping[str, Sequence[float]] | None = None,
    shirt: str = "#F77F00",
    stripes: bool = False,
    hair: str = "#4A2C17",
    scarf: str | None = "#C1121F",
    wind: float = 0.0,
    size: int = SIZE,
) -> Image.Image:
    """A simple person (filled stick figure) in the pose of ``joints`` (see vi_draw).

    ``wind`` is the horizontal wind direction (-1: to the left, 1: to the right, 0: no
    wind): the scarf's loose end then streams sideways instead of hanging down.
    """
    pts = dict(vi_draw.POSE_JOINTS)
    for name, xy in (joints or {}).items():
        pts[name] = (float(xy[0]), float(xy[1]))

    def p(name: str) -> tuple[float, float]:
        return pts[name][0] * size, pts[name][1] * size

    s = size / 512
    img = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    skin, jeans = "#E8B58A", "#2B3A67"
    for a, b in (
        ("r_hip", "r_knee"),
        ("r_knee", "r_ankle"),
        ("l_hip", "l_knee"),
        ("l_knee", "l_ankle"),
    ):
        d.line([p(a), p(b)], fill=jeans, width=_px(30, s), joint="curve")
    for ankle in ("r_ankle", "l_ankle"):
        x, y = p(ankle)
        d.ellipse([x - _px(20, s), y - _px(8, s), x + _px(20, s), y + _px(12, s)], fill="#222")
    torso = [p("r_shoulder"), p("l_shoulder"), p("l_hip"), p("r_hip")]
    torso = [
        (torso[0][0] - 8 * s, torso[0][1]),
        (torso[1][0] + 8 * s, torso[1][1]),
        (torso[2][0] + 6 * s, torso[2][1] + 6 * s),
        (torso[3][0] - 6 * s, torso[3][1] + 6 * s),
    ]
    d.polygon(torso, fill=shirt)
    if stripes:
        layer = Image.new("RGBA", (size, size), (0, 0, 0, 0))
        ld = ImageDraw.Draw(layer)
        top, bottom = min(y for _, y in torso), max(y for _, y in torso)
        y = top + 6 * s
        while y < bottom:
            ld.rectangle([0, y, size, y + 9 * s], fill="white")
            y += 22 * s
        mask = Image.new("L", (size, size), 0)
        ImageDraw.Draw(mask).polygon(torso, fill=255)
        img.paste(layer, (0, 0), ImageChops.multiply(layer.getchannel("A"), mask))
        d = ImageDraw.Draw(img)
    for sh, el, wr in (("r_shoulder", "r_elbow", "r_wrist"), ("l_shoulder", "l_elbow", "l_wrist")):
        d.line([p(sh), p(el)], fill=shirt, width=_px(24, s), joint="curve")
        d.line([p(el), p(wr)], fill=skin, width=_px(18, s), joint="curve")
        x, y = p(wr)
        d.ellipse([x - _px(11, s), y - _px(11, s), x + _px(11, s), y + _px(11, s)], fill=skin)
    hx, hy = p("head")
    r = 44 * s
    d.ellipse([hx - r - 4 * s, hy - r - 8 * s, hx + r + 4 * s, hy + r * 0.6], fill=hair)
    d.ellipse([hx - r, hy - r, hx + r, hy + r], fill=skin)
    d.chord([hx - r - 2 * s, hy - r - 8 * s, hx + r + 2 * s, hy + r * 0.2], 180, 360, fill=hair)
    for ex in (-15, 15):
        d.ellipse([hx + ex * s - 5 * s, hy - 2 * s, hx + ex * s + 5 * s, hy + 8 * s], fill="#222")
    d.arc(
        [hx - 14 * s, hy + 6 * s, hx + 14 * s, hy + 24 * s],
        20,
        160,
        fill="#8A3B2E",
        width=max(1, _px(3, s)),
    )
    if scarf:
        nx, ny = p("neck")
        d.rounded_rectangle(
            [nx - 30 * s, ny - 8 * s, nx + 30 * s, ny + 12 * s], radius=_px(8, s), fill=scarf
        )
        if wind:
            k = 1 if wind > 0 else -1
            d.polygon(
                [
                    (nx + k * 20 * s, ny - 6 * s),
                    (nx + k * 60 * s, ny - 2 * s),
                    (nx + k * 100 * s, ny - 14 * s),
                    (nx + k * 96 * s, ny + 4 * s),
                    (nx + k * 60 * s, ny + 14 * s),
                    (nx + k * 20 * s, ny + 10 * s),
                ],
                fill=scarf,
            )
        else:
            d.polygon(
                [
                    (nx + 10 * s, ny + 4 * s),
                    (nx + 28 * s, ny + 4 * s),
                    (nx + 32 * s, ny + 70 * s),
                    (nx + 14 * s, ny + 68 * s),
                ],
                fill=scarf,
            )
    return img


def shirt_reference(size: int = SIZE) -> Image.Image:
    """A striped orange-and-white T-shirt laid flat on a pale background (RGB)."""
    s = size / 512
    img = _vgradient((size, size), "#F6F4EF", "#E6E1D8")
    shape = [
        (150, 110),
        (210, 95),
        (256, 125),
        (302, 95),
        (362, 110),
        (440, 190),
        (390, 240),
        (355, 210),
        (355, 430),
        (157, 430),
        (157, 210),
        (122, 240),
        (72, 190),
    ]
    poly = [(x * s, y * s) for x, y in shape]
    layer = Image.new("RGB", (size, size), "#F77F00")
    ld = ImageDraw.Draw(layer)
    for y in range(100, 440, 30):
        ld.rectangle([0, y * s, size, (y + 12) * s], fill="white")
    mask = Image.new("L", (size, size), 0)
    ImageDraw.Draw(mask).polygon(poly, fill=255)
    img.paste(layer, (0, 0), mask)
    ImageDraw.Draw(img).line([*poly, poly[0]], fill="#B35C00", width=max(1, _px(3, s)))
    return img


def dots_reference(size: int = SIZE) -> Image.Image:
    """A purple surface with white polka dots (a surface sub-reference, RGB)."""
    s = size / 512
    img = Image.new("RGB", (size, size), "#6A4C93")
    d = ImageDraw.Draw(img)
    for row in range(-1, 16):
        for col in range(-1, 16):
            x = col * 40 + (20 if row % 2 else 0)
            y = row * 36
            d.ellipse([(x - 10) * s, (y - 10) * s, (x + 10) * s, (y + 10) * s], fill="white")
    return img


def scene(kind: str, size: int = SIZE) -> Image.Image:
    """A background scene: ``studio``, ``meadow``, ``night_city`` or ``beach`` (RGB)."""
    s = size / 512
    if kind == "studio":
        img = _vgradient((size, size), "#F4F1EA", "#DCD6CA")
        img.paste(_vgradient((size, size - _px(330, s)), "#CBB89D", "#A8916F"), (0, _px(330, s)))
        return img
    if kind == "meadow":
        img = _vgradient((size, size), "#7FC3EE", "#DDF1FB")
        d = ImageDraw.Draw(img)
        d.ellipse([-80 * s, 250 * s, 300 * s, 420 * s], fill="#8CCB78")
        d.ellipse([220 * s, 240 * s, 620 * s, 430 * s], fill="#7DBF69")
        img.paste(_vgradient((size, size - _px(320, s)), "#6DB85A", "#3F8A34"), (0, _px(320, s)))
        d.ellipse([395 * s, 45 * s, 455 * s, 105 * s], fill="#FFE066")
        return img
    if kind == "night_city":
        img = _vgradient((size, size), "#0B1433", "#2A2F5A")
        d = ImageDraw.Draw(img)
        d.ellipse([60 * s, 40 * s, 105 * s, 85 * s], fill="#F1F1D8")
        rng = random.Random(7)
        x = 0
        while x < 512:
            w = rng.randint(50, 90)
            top = rng.randint(120, 260)
            d.rectangle([x * s, top * s, (x + w - 4) * s, 400 * s], fill="#15182B")
            for wy in range(top + 12, 380, 26):
                for wx in range(x + 8, x + w - 16, 18):
                    if rng.random() < 0.45:
                        d.rectangle([wx * s, wy * s, (wx + 8) * s, (wy + 12) * s], fill="#FFD45C")
            x += w
        d.rounded_rectangle(
            [300 * s, 200 * s, 420 * s, 235 * s],
            radius=_px(8, s),
            outline="#FF3FD2",
            width=_px(6, s),
        )
        img.paste(_vgradient((size, size - _px(400, s)), "#2B2B3A", "#14141C"), (0, _px(400, s)))
        return img
    if kind == "beach":
        img = _vgradient((size, size), "#8FD0F2", "#E8F6FD")
        img.paste(_vgradient((size, _px(90, s)), "#2A8FBD", "#55B8DA"), (0, _px(230, s)))
        img.paste(_vgradient((size, size - _px(320, s)), "#F3DFA2", "#E0BE76"), (0, _px(320, s)))
        d = ImageDraw.Draw(img)
        for y in (262, 290):
            d.line([(0, y * s), (size, (y + 4) * s)], fill="#BFE6F5", width=max(1, _px(3, s)))
        return img
    raise ValueError(f"unknown scene {kind!r}")


def reference_photo(sprite: Image.Image, flip: bool = False) -> Image.Image:
    """Put a subject sprite on a plain studio background with a soft shadow (RGB)."""
    size = sprite.width
    img = _vgradient((size, size), "#F7F7F5", "#E2E2DE")
    shadow = Image.new("L", (size, size), 0)
    ImageDraw.Draw(shadow).ellipse([size * 0.2, size * 0.86, size * 0.8, size * 0.95], fill=90)
    shadow = shadow.filter(ImageFilter.GaussianBlur(size / 60))
    img.paste(Image.new("RGB", (size, size), "#9A9A96"), (0, 0), shadow)
    img.paste(
        sprite.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if flip else sprite,
        (0, 0),
        sprite.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if flip else sprite,
    )
    return img


# ---------------------------------------------------------------------------- the tasks

POSE_TARGET: dict[str, list[float]] = {
    "r_elbow": [0.34, 0.20],
    "r_wrist": [0.31, 0.08],
    "l_knee": [0.60, 0.72],
    "l_ankle": [0.66, 0.87],
}
#: The dancer's own (distinctive) pose in its reference: arms spread up, right knee raised.
DANCER_POSE: dict[str, list[float]] = {
    "r_elbow": [0.30, 0.27],
    "r_wrist": [0.21, 0.19],
    "l_elbow": [0.70, 0.27],
    "l_wrist": [0.79, 0.19],
    "r_knee": [0.36, 0.65],
    "r_ankle": [0.46, 0.73],
}
SOURCE = "demo VLM"

#: Subjects: how to draw each one, which way its reference faces, its pre-labels.
#:
#: Yaw is the facing of the reference (the *source* of the orientation rule); the pyramid
#: targets of the tasks stay inside VIF-Bench's |yaw| < 60 (Appendix C.3). Borderline
#: cases of the rule (C.4): ``tabby`` (80) against targets 20 (exactly 60 apart: conflict,
#: demo-07) and 21 (59 apart, same side: none, demo-08); ``mug`` (30) against -20 (50 apart
#: but left/right flipped: conflict, the paper's own example, demo-07); ``dancer`` (350, a
#: 0-360 reading of -10) against 10 (20 apart across the front, opposite sides: conflict,
#: demo-09); ``kitten`` (unreliable: never a conflict, although -40 against 35 would flip,
#: demo-08).
SUBJECTS: dict[str, dict[str, Any]] = {
    "cat": {
        "file": "cat",
        "kind": "main",
        "category": "animal",
        "facing": "left",
        "prelabel": {
            "yaw": -35,
            "yaw_reliable": True,
            "light_distinctive": False,
            "wind_responsive": True,
            "pose_distinctive": False,
            "notes": "red cat in profile, facing left; fur",
        },
    },
    "mug": {
        "file": "mug",
        "kind": "main",
        "category": "object",
        "facing": "right",
        "prelabel": {
            "yaw": 30,
            "yaw_reliable": True,
            "light_distinctive": False,
            "wind_responsive": False,
            "pose_distinctive": False,
            "notes": "blue mug, handle on the right",
        },
    },
    "tree": {
        "file": "tree",
        "kind": "main",
        "category": "object",
        "facing": "right",
        "prelabel": {
            "yaw": None,
            "yaw_reliable": False,
            "light_distinctive": False,
            "wind_responsive": True,
            "pose_distinctive": False,
            "notes": "tree: no facing direction; leaves",
        },
    },
    "person": {
        "file": "person",
        "kind": "main",
        "category": "person",
        "facing": "right",
        "prelabel": {
            "yaw": 0,
            "yaw_reliable": True,
            "light_distinctive": False,
            "wind_responsive": True,
            "pose_distinctive": False,
            "notes": "person standing still, facing the camera; scarf, hair",
        },
    },
    "tabby": {
        "file": "tabby",
        "kind": "main",
        "category": "animal",
        "facing": "right",
        "prelabel": {
            "yaw": 80,
            "yaw_reliable": True,
            "light_distinctive": False,
            "wind_responsive": False,  # wrong on purpose: see WRONG_PRELABELS
            "pose_distinctive": False,
            "notes": "orange cat, turned to the right",
        },
    },
    "kitten": {
        "file": "kitten",
        "kind": "main",
        "category": "animal",
        "facing": "left",
        "prelabel": {
            "yaw": -40,
            "yaw_reliable": False,
            "light_distinctive": False,
            "wind_responsive": True,
            "pose_distinctive": False,
            "notes": "grey cat, photo out of focus",
        },
    },
    "dancer": {
        "file": "dancer",
        "kind": "main",
        "category": "person",
        "facing": "right",
        "prelabel": {
            "yaw": 350,
            "yaw_reliable": True,
            "light_distinctive": False,
            "wind_responsive": True,
            "pose_distinctive": True,
            "notes": "person dancing: arms spread up, one knee raised",
        },
    },
}
#: Pre-labels of the background scenes and sub-references (light and wind only).
SCENE_PRELABELS: dict[str, dict[str, Any]] = {
    "night_city": {"light_distinctive": True, "wind_responsive": False,
                   "notes": "night street, neon sign, lit windows"},
    "meadow": {"light_distinctive": False, "wind_responsive": False, "notes": "sunny meadow"},
    "beach": {"light_distinctive": True, "wind_responsive": False,  # wrong on purpose
              "notes": "beach, sea on the horizon"},
    "shirt": {"wind_responsive": True, "notes": "striped T-shirt laid flat"},
}
#: Pre-labels that are wrong on purpose, for verifiers to correct (their notes say nothing
#: of it): (reference, field, value the drawn image supports, tasks whose published label
#: the error flips). The tabby cat has fur, which wind moves: the published wind label of
#: demo-07 (a wind arrow) is False where the image supports True. The beach is lit by
#: ordinary daylight: the published light label of demo-08 (a light arrow) is True where
#: the image supports False.
WRONG_PRELABELS: tuple[tuple[str, str, Any, tuple[str, ...]], ...] = (
    ("tabby", "wind_responsive", True, ("demo-07",)),
    ("beach", "light_distinctive", False, ("demo-08",)),
)


@dataclass
class Q:
    """A checklist question with what makes its true answer differ from the pass answer."""

    text: str
    operator: str
    target: str
    ok: str  # what a judge says when the check passes
    bad: str  # ... and when it fails
    fails_on: tuple[str, ...] = ()
    pass_answer: str = "yes"
    depends_on: tuple[int, ...] = ()  # 1-based numbers of parent questions


@dataclass
class TaskSpec:
    task_id: str
    instruction: str
    refs: list[tuple[str, str]]  # (kind of reference: subject name or "scene:x"/"sub:x", label)
    layout: list[tuple[str, list[float]]]  # (subject, box) in subject order
    formula: str
    background: str
    questions: list[Q]
    defects: dict[str, list[str]]  # generator -> defect tags
    orientation: list[dict[str, Any]] = field(default_factory=list)
    arrows: list[dict[str, Any]] = field(default_factory=list)
    pose: str | None = None  # subject that has a pose reference
    extra_meta: dict[str, Any] = field(default_factory=dict)


NO_MARKS = "Do not draw the boxes, arrows, pyramids or any other mark of the visual instructions."

TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        task_id="demo-01",
        instruction="Make one natural photo: the red cat from Image_0 sits on the floor to "
        "the left of the blue mug from Image_1. Place each subject inside its box of the "
        f"layout in Image_2 (red box: cat, blue box: mug). {NO_MARKS}",
        refs=[("cat", "red cat"), ("mug", "blue mug")],
        layout=[("cat", [0.08, 0.40, 0.52, 0.92]), ("mug", [0.56, 0.50, 0.88, 0.90])],
        formula="C(f1, f2)",
        background="studio",
        questions=[
            Q(
                "Is there a red cat that matches the cat in Image_0?",
                "f",
                "f1",
                "a red cat like the reference is there",
                "the cat does not match Image_0",
                ("missing:cat", "identity:cat"),
            ),
            Q(
                "Is there a blue mug that matches the mug in Image_1?",
                "f",
                "f2",
                "the blue mug of Image_1 is there",
                "the mug differs from Image_1 (colour)",
                ("missing:mug", "identity:mug"),
            ),
            Q(
                "Is the cat inside the red layout box (left, lower part of the image)?",
                "C",
                "C, layout f1",
                "the cat sits in the left box",
                "the cat is outside its box",
                ("misplaced:cat", "missing:cat"),
                depends_on=(1,),
            ),
            Q(
                "Does any subject appear more times than intended?",
                "C",
                "C, duplication",
                "each subject appears once",
                "a subject is duplicated",
                ("duplicate:cat", "duplicate:mug"),
                pass_answer="no",
            ),
            Q(
                "Is any box outline or label of the layout (Image_2) visible in the output?",
                "C",
                "C, VI residue",
                "no instruction marks are left",
                "a box outline from the layout is still drawn",
                ("residue:cat",),
                pass_answer="no",
            ),
        ],
        defects={
            "nano-banana": [],
            "gpt-image-1": ["residue:cat"],
            "qwen-image-edit": ["identity:mug", "blur"],
        },
    ),
    TaskSpec(
        task_id="demo-02",
        instruction="The person from Image_0 stands in the sunny meadow of Image_2 next to "
        "the tree from Image_1. Follow the layout of Image_3 (red box: person, blue box: "
        "tree). A strong wind blows as the cyan arrow of Image_4 shows: the scarf and the "
        f"leaves must move with it. {NO_MARKS}",
        refs=[
            ("person", "person with red scarf"),
            ("tree", "green tree"),
            ("scene:meadow", "sunny meadow"),
        ],
        layout=[("person", [0.10, 0.22, 0.42, 0.92]), ("tree", [0.50, 0.10, 0.92, 0.88])],
        formula="C(f1, f2)⊕g_bg⊕g_vfx",
        background="meadow",
        arrows=[{"kind": "wind", "start": [0.10, 0.35], "end": [0.82, 0.45]}],
        questions=[
            Q(
                "Is the person from Image_0 present, with the orange shirt and red scarf?",
                "f",
                "f1",
                "the person of Image_0 is there",
                "the person differs from Image_0",
                ("missing:person", "identity:person"),
            ),
            Q(
                "Is there a green tree like the one in Image_1?",
                "f",
                "f2",
                "the tree is there",
                "the tree is missing or different",
                ("missing:tree",),
            ),
            Q(
                "Is the background a sunny meadow like Image_2?",
                "g",
                "g_bg",
                "the meadow background is used",
                "the background is not the meadow",
            ),
            Q(
                "Does the wind visibly blow from left to right (scarf, leaves), as the cyan "
                "arrow in Image_4 shows?",
                "⊕",
                "C⊕g_vfx, wind direction",
                "scarf and leaves move to the right",
                "no wind effect along the arrow",
                ("no_wind",),
                depends_on=(1,),
            ),
            Q(
                "Is the person on the left and the tree on the right, inside their boxes of "
                "Image_3?",
                "C",
                "C, layout",
                "both subjects are in their boxes",
                "the person is outside the red box",
                ("misplaced:person",),
            ),
        ],
        defects={
            "nano-banana": ["misplaced:person"],
            "gpt-image-1": [],
            "qwen-image-edit": ["no_wind"],
        },
    ),
    TaskSpec(
        task_id="demo-03",
        instruction="Show the red cat from Image_0 on the night street of Image_1, inside "
        "the box of Image_2. The cat faces screen-right and slightly up, as the pyramid "
        "of Image_3 shows (the orange base is its front). Light the cat from the upper "
        f"left as the yellow arrow of Image_4 shows. {NO_MARKS}",
        refs=[("cat", "red cat"), ("scene:night_city", "night street")],
        layout=[("cat", [0.25, 0.42, 0.80, 0.92])],
        formula="C(f1⊕g_view)⊕g_bg⊕g_light",
        background="night_city",
        orientation=[{"subject": "cat", "yaw": 40, "pitch": 10}],
        arrows=[{"kind": "light", "start": [0.12, 0.12], "end": [0.55, 0.62]}],
        questions=[
            Q(
                "Is the red cat from Image_0 present?",
                "f",
                "f1",
                "the red cat is there",
                "the cat is missing or different",
                ("missing:cat", "identity:cat"),
            ),
            Q(
                "Does the cat face screen-right (slightly up), as the pyramid in Image_3 shows?",
                "⊕",
                "f1⊕g_view",
                "the cat faces right",
                "the cat faces left, against the pyramid",
                ("wrong_orientation:cat",),
                depends_on=(1,),
            ),
            Q(
                "Is the scene the night street of Image_1?",
                "g",
                "g_bg",
                "the night street is kept",
                "the background changed",
            ),
            Q(
                "Is the cat lit from the upper left, as the yellow arrow in Image_4 shows?",
                "⊕",
                "C⊕g_light, direction",
                "a warm light comes from the upper left",
                "the light does not follow the arrow",
                ("no_light",),
            ),
            Q(
                "Does the cat appear more than once?",
                "C",
                "C, duplication",
                "a single cat",
                "there is a second cat",
                ("duplicate:cat",),
                pass_answer="no",
            ),
        ],
        defects={
            "nano-banana": ["wrong_orientation:cat"],
            "gpt-image-1": ["duplicate:cat"],
            "qwen-image-edit": ["no_light"],
        },
    ),
    TaskSpec(
        task_id="demo-04",
        instruction="Dress the person from Image_0 in the striped shirt of Image_1 and put "
        "them on the beach of Image_2, inside the box of Image_3. The person takes the pose "
        "of Image_4: right arm raised high, left leg stepping out. Only the shirt gets the "
        f"stripes. {NO_MARKS}",
        refs=[("person", "person"), ("sub:shirt", "striped shirt"), ("scene:beach", "beach")],
        layout=[("person", [0.28, 0.06, 0.72, 0.94])],
        formula="C(f1⊕g1⊕g_pose)⊕g_bg",
        background="beach",
        pose="person",
        questions=[
            Q(
                "Is the person from Image_0 present (same face, hair and scarf)?",
                "f",
                "f1",
                "the person of Image_0 is there",
                "the person's identity changed",
                ("missing:person", "identity:person"),
            ),
            Q(
                "Does the person wear the orange-and-white striped shirt of Image_1?",
                "g",
                "g1, clothes on f1",
                "the striped shirt is worn",
                "the shirt is not the striped one",
                ("no_pattern",),
                depends_on=(1,),
            ),
            Q(
                "Do the stripes also appear on anything other than the shirt?",
                "⊕",
                "f1⊕g1, exclusivity",
                "only the shirt is striped",
                "the stripes leak onto the surroundings",
                ("pattern_leak",),
                pass_answer="no",
            ),
            Q(
                "Is the person's right arm raised above the head, as in the pose of Image_4?",
                "⊕",
                "f1⊕g_pose",
                "the pose matches",
                "the pose does not match Image_4",
                ("wrong_pose",),
                depends_on=(1,),
            ),
            Q(
                "Is the background the beach of Image_2?",
                "g",
                "g_bg",
                "the beach is kept",
                "the background changed",
            ),
            Q(
                "Is the skeleton of Image_4 or a layout box drawn in the output?",
                "C",
                "C, VI residue",
                "no instruction marks are left",
                "instruction marks are left",
                ("residue:person",),
                pass_answer="no",
            ),
        ],
        defects={
            "nano-banana": ["wrong_pose"],
            "gpt-image-1": ["pattern_leak"],
            "qwen-image-edit": ["identity:person", "blur"],
        },
    ),
    TaskSpec(
        task_id="demo-05",
        instruction="In the meadow of Image_3, the red cat (Image_0) sits between the blue "
        "mug (Image_1, on a picnic blanket) and the tree (Image_2), each in its box of "
        "Image_4. Image_5 gives the wind (cyan: blowing to the left) and the light "
        f"(yellow: from the upper right). {NO_MARKS}",
        refs=[
            ("cat", "red cat"),
            ("mug", "blue mug"),
            ("tree", "green tree"),
            ("scene:meadow", "sunny meadow"),
        ],
        layout=[
            ("cat", [0.36, 0.50, 0.66, 0.90]),
            ("mug", [0.70, 0.62, 0.92, 0.92]),
            ("tree", [0.06, 0.08, 0.42, 0.86]),
        ],
        formula="C(f1, f2, f3)⊕g_bg⊕g_vfx⊕g_light",
        background="meadow",
        arrows=[
            {"kind": "wind", "start": [0.90, 0.30], "end": [0.35, 0.36]},
            {"kind": "light", "start": [0.88, 0.08], "end": [0.50, 0.60]},
        ],
        questions=[
            Q(
                "Is the red cat of Image_0 present?",
                "f",
                "f1",
                "the cat is there",
                "the cat is missing",
                ("missing:cat",),
            ),
            Q(
                "Is the blue mug of Image_1 present?",
                "f",
                "f2",
                "the mug is there",
                "the mug is missing",
                ("missing:mug",),
            ),
            Q(
                "Is the tree of Image_2 present?",
                "f",
                "f3",
                "the tree is there",
                "the tree is missing",
                ("missing:tree",),
            ),
            Q(
                "Are the cat, the mug and the tree each inside their own box of Image_4?",
                "C",
                "C, layout",
                "all three are in their boxes",
                "a subject is missing from its box",
                ("missing:mug", "misplaced:cat", "misplaced:tree"),
                depends_on=(1, 2, 3),
            ),
            Q(
                "Do the tree's leaves blow toward the left, as the cyan arrow shows?",
                "⊕",
                "C⊕g_vfx, wind",
                "leaves fly to the left",
                "no wind to the left",
                ("no_wind",),
            ),
            Q(
                "Does the light come from the upper right, as the yellow arrow shows?",
                "⊕",
                "C⊕g_light",
                "the light comes from the upper right",
                "the light does not follow the arrow",
                ("no_light",),
            ),
        ],
        defects={
            "nano-banana": ["missing:mug"],
            "gpt-image-1": ["refusal"],
            "qwen-image-edit": ["no_wind", "no_light"],
        },
    ),
    TaskSpec(
        task_id="demo-06",
        instruction="**Keep** the blue mug of Image_0, but cover its body with the polka "
        "dots of Image_1 — *only the body*, not the table.\n\n"
        "- place it in the box of Image_2\n"
        "- turn it as the pyramid of Image_3 shows (front toward the left, slightly "
        "down)\n\n"
        "<b>bold?</b> Tags like this one must show as plain text. `Image_3` is a pyramid, "
        f"not an object to draw. {NO_MARKS}",
        refs=[("mug", "blue mug"), ("sub:dots", "polka-dot surface")],
        layout=[("mug", [0.22, 0.30, 0.78, 0.88])],
        formula="C(f1⊕g1⊕g_view)",
        background="studio",
        orientation=[{"subject": "mug", "yaw": -40, "pitch": -15}],
        questions=[
            Q(
                "Is the mug from Image_0 present (same shape and handle)?",
                "f",
                "f1",
                "the mug of Image_0 is there",
                "the mug is missing or different",
                ("missing:mug",),
            ),
            Q(
                "Is the mug's body covered with the white-on-purple dots of Image_1?",
                "⊕",
                "f1⊕g1, surface",
                "the body has the polka dots",
                "the dots are not applied",
                ("no_pattern",),
                depends_on=(1,),
            ),
            Q(
                "Do the polka dots also appear outside the mug (table, wall)?",
                "⊕",
                "f1⊕g1, exclusivity",
                "the dots stay on the mug",
                "the dots leak onto the table",
                ("pattern_leak",),
                pass_answer="no",
            ),
            Q(
                "Does the mug face toward the left, as the pyramid of Image_3 shows?",
                "⊕",
                "f1⊕g_view",
                "the mug faces left",
                "the mug faces right, against the pyramid",
                ("wrong_orientation:mug",),
            ),
        ],
        defects={
            "nano-banana": [],
            "gpt-image-1": ["pattern_leak"],
            "qwen-image-edit": ["wrong_orientation:mug", "no_pattern"],
        },
    ),
    # demo-07..09: the borderline cases of the conflict rules (see SUBJECTS).
    TaskSpec(
        task_id="demo-07",
        instruction="On the night street of Image_2, the orange tabby cat of Image_0 sits "
        "beside the blue mug of Image_1, each in its box of Image_3 (red box: cat, blue box: "
        "mug). Turn them as the pyramids of Image_4 show (the orange base is the front): the "
        "cat faces screen-right, slightly up; the mug faces slightly left and down. A breeze "
        f"blows from the left, as the cyan arrow of Image_5 shows. {NO_MARKS}",
        refs=[("tabby", "orange tabby cat"), ("mug", "blue mug"),
              ("scene:night_city", "night street")],
        layout=[("tabby", [0.06, 0.44, 0.52, 0.92]), ("mug", [0.60, 0.56, 0.90, 0.90])],
        formula="C(f1⊕g_view1, f2⊕g_view2)⊕g_bg⊕g_vfx",
        background="night_city",
        orientation=[
            {"subject": "tabby", "yaw": 20, "pitch": 10},
            {"subject": "mug", "yaw": -20, "pitch": -15},
        ],
        arrows=[{"kind": "wind", "start": [0.08, 0.30], "end": [0.70, 0.38]}],
        questions=[
            Q(
                "Is the orange tabby cat of Image_0 present?",
                "f",
                "f1",
                "the tabby cat is there",
                "the cat is missing or different",
                ("missing:tabby", "identity:tabby"),
            ),
            Q(
                "Is the blue mug of Image_1 present?",
                "f",
                "f2",
                "the blue mug is there",
                "the mug is missing or different",
                ("missing:mug", "identity:mug"),
            ),
            Q(
                "Does the cat face screen-right, as its pyramid in Image_4 shows?",
                "⊕",
                "f1⊕g_view1",
                "the cat faces right",
                "the cat faces left, against its pyramid",
                ("wrong_orientation:tabby",),
                depends_on=(1,),
            ),
            Q(
                "Does the mug face toward the left (handle on the right), as its pyramid "
                "shows?",
                "⊕",
                "f2⊕g_view2",
                "the mug faces left",
                "the mug still faces right, like its reference",
                ("wrong_orientation:mug",),
                depends_on=(2,),
            ),
            Q(
                "Does the breeze visibly blow from left to right (fur, leaves), as the cyan "
                "arrow of Image_5 shows?",
                "⊕",
                "C⊕g_vfx, wind",
                "the breeze blows to the right",
                "no wind along the arrow",
                ("no_wind",),
            ),
        ],
        defects={
            "nano-banana": ["wrong_orientation:tabby"],
            "gpt-image-1": ["wrong_orientation:mug"],
            "qwen-image-edit": ["no_wind", "blur"],
        },
    ),
    TaskSpec(
        task_id="demo-08",
        instruction="On the beach of Image_2, the orange tabby cat of Image_0 and the grey "
        "cat of Image_1 sit in their boxes of Image_3 (red box: tabby, blue box: grey cat). "
        "Both face screen-right as the pyramids of Image_4 show. The light comes from the "
        f"upper left, as the yellow arrow of Image_5 shows. {NO_MARKS}",
        refs=[("tabby", "orange tabby cat"), ("kitten", "grey cat"), ("scene:beach", "beach")],
        layout=[("tabby", [0.06, 0.40, 0.48, 0.90]), ("kitten", [0.54, 0.50, 0.92, 0.90])],
        formula="C(f1⊕g_view1, f2⊕g_view2)⊕g_bg⊕g_light",
        background="beach",
        orientation=[
            {"subject": "tabby", "yaw": 21, "pitch": 10},
            {"subject": "kitten", "yaw": 35, "pitch": -10},
        ],
        arrows=[{"kind": "light", "start": [0.10, 0.08], "end": [0.55, 0.60]}],
        questions=[
            Q(
                "Are both cats present: the orange tabby of Image_0 and the grey cat of "
                "Image_1?",
                "f",
                "f1, f2",
                "both cats are there",
                "a cat is missing",
                ("missing:tabby", "missing:kitten"),
            ),
            Q(
                "Do both cats face screen-right, as the pyramids of Image_4 show?",
                "⊕",
                "f1⊕g_view1, f2⊕g_view2",
                "both cats face right",
                "the grey cat faces left, like its reference",
                ("wrong_orientation:kitten", "wrong_orientation:tabby"),
                depends_on=(1,),
            ),
            Q(
                "Does the light come from the upper left, as the yellow arrow of Image_5 "
                "shows?",
                "⊕",
                "C⊕g_light",
                "a warm light comes from the upper left",
                "the light does not follow the arrow",
                ("no_light",),
            ),
            Q(
                "Is the background the beach of Image_2?",
                "g",
                "g_bg",
                "the beach is kept",
                "the background changed",
            ),
        ],
        defects={
            "nano-banana": [],
            "gpt-image-1": ["no_light"],
            "qwen-image-edit": ["wrong_orientation:kitten"],
        },
    ),
    TaskSpec(
        task_id="demo-09",
        instruction="The dancer of Image_0 stands in the meadow of Image_1, inside the box of "
        "Image_2, turned slightly to screen-right and looking up as the pyramid of Image_3 "
        "shows. The dancer takes the pose of Image_4 instead of their own: right arm raised "
        f"high, left leg stepping out. {NO_MARKS}",
        refs=[("dancer", "dancer"), ("scene:meadow", "sunny meadow")],
        layout=[("dancer", [0.26, 0.06, 0.74, 0.94])],
        formula="C(f1⊕g_view⊕g_pose)⊕g_bg",
        background="meadow",
        orientation=[{"subject": "dancer", "yaw": 10, "pitch": 20}],
        pose="dancer",
        questions=[
            Q(
                "Is the dancer of Image_0 present (same hair, shirt and scarf)?",
                "f",
                "f1",
                "the dancer of Image_0 is there",
                "the dancer's identity changed",
                ("missing:dancer", "identity:dancer"),
            ),
            Q(
                "Is the dancer's right arm raised above the head, as in the pose of Image_4?",
                "⊕",
                "f1⊕g_pose",
                "the pose matches",
                "the dancer keeps the pose of the reference",
                ("wrong_pose",),
                depends_on=(1,),
            ),
            Q(
                "Is the background the meadow of Image_1?",
                "g",
                "g_bg",
                "the meadow is kept",
                "the background changed",
            ),
            Q(
                "Is the skeleton of Image_4 or a layout box drawn in the output?",
                "C",
                "C, VI residue",
                "no instruction marks are left",
                "instruction marks are left",
                ("residue:dancer",),
                pass_answer="no",
            ),
        ],
        defects={
            "nano-banana": ["wrong_pose"],
            "gpt-image-1": [],
            "qwen-image-edit": ["identity:dancer", "residue:dancer"],
        },
    ),
    # demo-10: the task with a diagnostic tree (see TREE_NODES below).
    TaskSpec(
        task_id="demo-10",
        instruction="Dress the person from Image_0 in the orange-and-white striped shirt of "
        "Image_1 and show them standing beside the red cat of Image_2 on the night street of "
        "Image_3. Place each subject inside its box of the layout in Image_4 (red box: "
        f"person, blue box: cat). Only the shirt gets the stripes. {NO_MARKS}",
        refs=[
            ("person", "person with red scarf"),
            ("sub:shirt", "striped shirt"),
            ("cat", "red cat"),
            ("scene:night_city", "night street"),
        ],
        layout=[("person", [0.06, 0.12, 0.46, 0.94]), ("cat", [0.54, 0.52, 0.94, 0.92])],
        formula="C(f1⊕g1, f2)⊕g_bg",
        background="night_city",
        questions=[
            Q(
                "Is the person from Image_0 present (same face, hair and red scarf)?",
                "f",
                "f1",
                "the person of Image_0 is there",
                "the person's hair and scarf differ from Image_0",
                ("missing:person", "identity:person"),
            ),
            Q(
                "Does the person wear the orange-and-white striped shirt of Image_1?",
                "⊕",
                "f1⊕g1",
                "the person wears the striped shirt",
                "the shirt has no stripes: it is not the shirt of Image_1",
                ("missing:person", "no_pattern"),
            ),
            Q(
                "Do the shirt's stripes also appear on anything other than the person's shirt "
                "(the cat, the ground)?",
                "⊕",
                "f1⊕g1, exclusivity",
                "only the shirt is striped",
                "the stripes leak onto the cat",
                ("pattern_leak",),
                pass_answer="no",
            ),
            Q(
                "Is the red cat from Image_2 present, with its red fur?",
                "f",
                "f2",
                "the red cat of Image_2 is there",
                "the cat's fur is not the red of Image_2",
                ("missing:cat", "identity:cat"),
            ),
            Q(
                "Is the background the night street of Image_3?",
                "g",
                "g_bg",
                "the night street is kept",
                "the background changed",
            ),
            Q(
                "Does any subject appear more times than intended?",
                "C",
                "C, duplication",
                "each subject appears once",
                "a subject is duplicated",
                ("duplicate:person", "duplicate:cat"),
                pass_answer="no",
            ),
        ],
        defects={  # the root (N0) of its tree; the nodes: TREE_DEFECTS
            "nano-banana": ["identity:cat"],  # the neon light of the street recolours the cat
            "gpt-image-1": ["pattern_leak", "identity:cat"],  # the stripes land on the cat
            "qwen-image-edit": ["identity:person", "no_pattern", "blur"],
        },
    ),
)

#: Outputs that exist and were judged but whose image is not in the bundle.
IMAGE_NOT_AT_HAND = {("demo-03", "qwen-image-edit")}

# ---------------------------------------------------------------------- diagnostic tree
#
# TRACE-Bench (seed 002, Sec. 3.5, Appendix C.2-C.3) decomposes a failing case into simpler
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


def _tree_answer(judge: str, gen: str, node: str, n: int, q: Q) -> tuple[str, str]:
    """A tree judge's answer to question ``n`` on ``gen``'s ``node`` output, and its text:
    what is drawn, except the TREE_MISTAKES."""
    mistake = TREE_MISTAKES.get((judge, gen, node, n))
    if mistake is not None:
        return mistake
    answer = _answer(q, set(tree_defects(gen, node)))
    return answer, f"{answer}. {q.ok if answer == q.pass_answer else q.bad}"

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


def _clamp(v: float, lo: float = 1.0, hi: float = 10.0) -> float:
    return max(lo, min(hi, v))


def _kind_of(tag: str) -> str:
    return tag.split(":", 1)[0]


def _true_scores(spec: TaskSpec, gen: str, rng: random.Random) -> dict[str, float]:
    scores = {}
    for name in CRITERION_NAMES:
        v = BASE_QUALITY[gen] + rng.gauss(0.0, 0.5)
        for tag in spec.defects[gen]:
            v += PENALTIES.get(_kind_of(tag), {}).get(name, 0.0)
        scores[name] = _clamp(v)
    return scores


def _perceived(
    spec: TaskSpec, gen: str, truth: Mapping[str, float], seen: set[str]
) -> dict[str, float]:
    """Truth as seen by someone who noticed only the flaws in ``seen``: unseen flaws
    weigh 30 % of their penalty."""
    out = dict(truth)
    for tag in spec.defects[gen]:
        if tag not in seen:
            for name, pen in PENALTIES.get(_kind_of(tag), {}).items():
                out[name] = _clamp(out[name] - 0.7 * pen)
    return out


def _answer(q: Q, seen: set[str]) -> str:
    failed = any(t in seen for t in q.fails_on)
    if not failed:
        return q.pass_answer
    return "no" if q.pass_answer == "yes" else "yes"


def _sentence(tag: str) -> str:
    kind, _, subject = tag.partition(":")
    return SENTENCES[kind].format(s=subject or "subject")


# ------------------------------------------------------------------------ output images


def _fit(sprite: Image.Image, box: Sequence[float], size: int) -> tuple[Image.Image, int, int]:
    """Scale the sprite's content to fit ``box`` (normalized), bottom-centred."""
    bbox = sprite.getchannel("A").getbbox()
    content = sprite.crop(bbox) if bbox else sprite
    bw, bh = (box[2] - box[0]) * size, (box[3] - box[1]) * size
    k = min(bw / content.width, bh / content.height)
    w, h = max(1, round(content.width * k)), max(1, round(content.height * k))
    content = content.resize((w, h), Image.Resampling.LANCZOS)
    x = round(box[0] * size + (bw - w) / 2)
    y = round(box[3] * size - h)
    return content, x, y


def _glow(size: int, center: Sequence[float], color: str, strength: float) -> Image.Image:
    """An RGBA radial glow centred at ``center`` (normalized)."""
    grad = Image.radial_gradient("L").resize((size * 2, size * 2), Image.Resampling.BILINEAR)
    cx, cy = round(center[0] * size), round(center[1] * size)
    alpha = grad.crop((size - cx, size - cy, 2 * size - cx, 2 * size - cy))
    alpha = alpha.point(lambda v: round(max(0.0, 1.0 - v / 190.0) * 255 * strength))
    layer = Image.new("RGBA", (size, size), (*_hex(color), 0))
    layer.putalpha(alpha)
    return layer


def _subject_sprite(
    spec: TaskSpec, subject: str, defects: Sequence[str], wind: float
) -> Image.Image:
    identity = f"identity:{subject}" in defects
    if subject == "cat":
        return sprite_cat("#C77D2A" if identity else "#D62828")
    if subject == "mug":
        dots = spec.task_id == "demo-06" and "no_pattern" not in defects
        return sprite_mug("#7A3FA0" if identity else "#1F5FBF", "dots" if dots else None)
    if subject == "tree":
        return sprite_tree()
    if subject == "tabby":
        return sprite_cat("#8F6A3A" if identity else "#E07A1F")
    if subject == "kitten":
        return sprite_cat("#5B4B8A" if identity else "#8A8A93")
    if subject == "dancer":
        own = POSE_TARGET if spec.pose == "dancer" and "wrong_pose" not in defects else None
        return sprite_person(
            joints=own or DANCER_POSE,
            shirt="#2A9D8F",
            hair="#D9B44A" if identity else "#1B1B1B",
            scarf="#2E7D32" if identity else "#F4A261",
            wind=wind,
        )
    if subject == "person":
        joints = POSE_TARGET if spec.pose == "person" and "wrong_pose" not in defects else None
        striped = spec.task_id == "demo-04" and "no_pattern" not in defects
        sprite = sprite_person(
            joints=joints,
            shirt="#F77F00",
            stripes=striped,
            hair="#D9B44A" if identity else "#4A2C17",
            scarf="#2E7D32" if identity else "#C1121F",
            wind=wind,
        )
        return sprite
    raise ValueError(subject)


def _facing(spec: TaskSpec, subject: str, defects: Sequence[str]) -> str:
    target = next((o for o in spec.orientation if o["subject"] == subject), None)
    if target is None:
        return SUBJECTS[subject]["facing"]
    facing = "right" if target["yaw"] > 0 else "left"
    if f"wrong_orientation:{subject}" in defects:
        facing = "left" if facing == "right" else "right"
    return facing


def render_output(spec: TaskSpec, gen: str, size: int = SIZE) -> Image.Image:
    """Compose a synthetic output of ``gen`` for ``spec``, with its defects drawn in."""
    if spec.task_id == TREE_TASK:
        return render_tree_node(spec, gen, "N0", size)
    defects = spec.defects[gen]
    rng = random.Random(f"{SEED}/{spec.task_id}/{gen}")
    img = scene(spec.background, size).convert("RGBA")
    d = ImageDraw.Draw(img)
    if "pattern_leak" in defects:  # the sub-reference's pattern spills onto the ground
        y0 = round(size * 0.70)
        if spec.task_id == "demo-06":
            for row in range(6):
                for col in range(14):
                    x = col * 38 + (19 if row % 2 else 0)
                    y = y0 + row * 28
                    d.ellipse([x - 7, y - 7, x + 7, y + 7], fill="white")
        else:  # a striped towel on the sand
            towel = [size * 0.04, size * 0.80, size * 0.34, size * 0.95]
            d.rectangle(towel, fill="#F77F00")
            for k in range(6):
                x = towel[0] + k * (towel[2] - towel[0]) / 6
                d.rectangle([x, towel[1], x + 12, towel[3]], fill="white")
    wind = next((a for a in spec.arrows if a["kind"] == "wind"), None)
    light = next((a for a in spec.arrows if a["kind"] == "light"), None)
    if light and "no_light" not in defects:
        img = Image.alpha_composite(img, _glow(size, light["start"], "#FFE9A8", 0.75))
    wind_on = bool(wind) and "no_wind" not in defects
    boxes = dict(spec.layout)
    for subject, box in spec.layout:
        if f"missing:{subject}" in defects:
            continue
        if f"misplaced:{subject}" in defects:
            shift = 0.42 if box[0] < 0.5 else -0.42
            box = [box[0] + shift, box[1] + 0.04, box[2] + shift, box[3] + 0.04]
        wind_dx = (wind["end"][0] - wind["start"][0]) if wind and wind_on else 0.0
        sprite = _subject_sprite(spec, subject, defects, wind_dx)
        if _facing(spec, subject, defects) == "left":
            sprite = sprite.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        content, x, y = _fit(sprite, box, size)
        shadow = Image.new("RGBA", (size, size), (0, 0, 0, 0))
        ImageDraw.Draw(shadow).ellipse(
            [
                x + content.width * 0.1,
                y + content.height - 10,
                x + content.width * 0.9,
                y + content.height + 8,
            ],
            fill=(0, 0, 0, 70),
        )
        img = Image.alpha_composite(img, shadow.filter(ImageFilter.GaussianBlur(4)))
        img.alpha_composite(content, (x, y))
        if f"duplicate:{subject}" in defects:
            small = content.resize(
                (content.width // 2, content.height // 2), Image.Resampling.LANCZOS
            )
            img.alpha_composite(
                small.transpose(Image.Transpose.FLIP_LEFT_RIGHT),
                (max(0, x - small.width // 2), y + content.height - small.height),
            )
    if wind_on:
        assert wind is not None
        sx, sy = wind["start"]
        ex, ey = wind["end"]
        ux, uy = ex - sx, ey - sy
        n = math.hypot(ux, uy)
        ux, uy = ux / n, uy / n
        layer = Image.new("RGBA", (size, size), (0, 0, 0, 0))
        ld = ImageDraw.Draw(layer)
        for _ in range(14):
            px, py = rng.uniform(0.05, 0.95) * size, rng.uniform(0.05, 0.75) * size
            length = rng.uniform(0.05, 0.12) * size
            ld.line(
                [(px, py), (px + ux * length, py + uy * length)], fill=(255, 255, 255, 150), width=2
            )
        for _ in range(10):
            px, py = rng.uniform(0.1, 0.9) * size, rng.uniform(0.1, 0.7) * size
            ld.ellipse([px - 5, py - 3, px + 5, py + 3], fill=(60, 150, 50, 230))
        img = Image.alpha_composite(img, layer)
    for tag in defects:
        if _kind_of(tag) == "residue":
            subject = tag.split(":", 1)[1]
            box = boxes[subject]
            color = vi_draw.subject_color([s for s, _ in spec.layout].index(subject))
            ImageDraw.Draw(img).rectangle([round(v * size) for v in box], outline=color, width=3)
    out = img.convert("RGB")
    if "blur" in defects:
        out = out.filter(ImageFilter.GaussianBlur(2.2))
    return out


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
        content, x, y = _fit(sprite, boxes[subject], size)
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


# ------------------------------------------------------------------------------ writing


def _save_png(img: Image.Image, path: Path) -> None:
    """Save without metadata (no text chunks, no timestamps): identical bytes every run."""
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path, format="PNG", compress_level=9)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True)


def _write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(_dumps(row) + "\n")


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat(timespec="seconds")


def _reference_image(kind: str) -> tuple[str, Image.Image, dict[str, Any]]:
    """(file stem, image, image entry fields) of a reference of ``kind``."""
    if kind.startswith("scene:"):
        name = kind.split(":", 1)[1]
        meta = {
            "category": "background",
            "prelabel": {**SCENE_PRELABELS[name], "source": SOURCE},
        }
        return name, scene(name), {"kind": "scene", "meta": meta}
    if kind == "sub:shirt":
        meta = {"category": "clothes", "prelabel": {**SCENE_PRELABELS["shirt"], "source": SOURCE}}
        return "shirt", shirt_reference(), {"kind": "sub", "meta": meta}
    if kind == "sub:dots":
        return "dots", dots_reference(), {"kind": "sub", "meta": {"category": "surface"}}
    info = SUBJECTS[kind]
    sprite = {
        "cat": sprite_cat,
        "mug": sprite_mug,
        "tree": sprite_tree,
        "person": sprite_person,
        "tabby": lambda: sprite_cat("#E07A1F"),
        "kitten": lambda: sprite_cat("#8A8A93"),
        "dancer": lambda: sprite_person(
            joints=DANCER_POSE, shirt="#2A9D8F", hair="#1B1B1B", scarf="#F4A261"
        ),
    }[kind]()
    img = reference_photo(sprite, flip=info["facing"] == "left")
    if kind == "kitten":  # out of focus: its facing cannot be read reliably
        img = img.filter(ImageFilter.GaussianBlur(9))
    meta = {"category": info["category"], "prelabel": {**info["prelabel"], "source": SOURCE}}
    return info["file"], img, {"kind": "main", "meta": meta}


def _task_records(spec: TaskSpec, out_dir: Path, written: set[str]) -> dict[str, Any]:
    """Draw the task's images into ``out_dir`` and return its tasks.jsonl record."""
    images: list[dict[str, Any]] = []
    for kind, label in spec.refs:
        stem, img, fields = _reference_image(kind)
        rel = f"images/refs/{stem}.png"
        if rel not in written:
            _save_png(img, out_dir / rel)
            written.add(rel)
        images.append({"path": rel, "role": "reference", "label": label, **fields})
    ref_index = {kind: i for i, (kind, _label) in enumerate(spec.refs)}

    layout = []
    for i, (subject, box) in enumerate(spec.layout):
        layout.append(
            {
                "subject": subject,
                "image": ref_index[subject],
                "box": box,
                "color": vi_draw.subject_color(i),
                "label": f"Image_{ref_index[subject]}: {subject}",
            }
        )
    vi: list[tuple[str, str, str, Image.Image]] = []  # (kind, file stem, label, image)
    big = vi_draw.draw_layout(layout, size=1024)
    vi.append(
        ("layout", "layout", "layout boxes", big.resize((SIZE, SIZE), Image.Resampling.LANCZOS))
    )
    orientation = []
    for o in spec.orientation:
        box = dict(spec.layout)[o["subject"]]
        anchor = [round((box[0] + box[2]) / 2, 3), round((box[1] + box[3]) / 2, 3)]
        orientation.append({**o, "anchor": anchor})
    if orientation:
        scale = 0.4 if len(orientation) == 1 else 0.22  # several pyramids: smaller
        img = vi_draw.draw_orientations([{**o, "scale": scale} for o in orientation], size=SIZE)
        vi.append(("orientation", "orientation", "orientation pyramid", img))
    if spec.arrows:
        kinds = sorted({a["kind"] for a in spec.arrows})
        kind = "+".join(sorted(kinds, key=["light", "wind"].index))
        vi.append(
            (
                kind,
                "arrows",
                f"{' and '.join(kinds)} arrow",
                vi_draw.draw_arrows(spec.arrows, size=SIZE),
            )
        )
    if spec.pose:
        vi.append(
            ("pose", "pose", f"pose for the {spec.pose}", vi_draw.draw_pose(POSE_TARGET, size=SIZE))
        )
    if len(vi) > 3:
        raise ValueError(f"{spec.task_id}: at most 3 visual instruction images in the demo")
    for kind, stem, label, img in vi:
        rel = f"images/{spec.task_id}/{stem}.png"
        _save_png(img, out_dir / rel)
        images.append({"path": rel, "role": "visual_instruction", "kind": kind, "label": label})

    questions = []
    for n, q in enumerate(spec.questions, start=1):
        row: dict[str, Any] = {
            "question_id": f"{spec.task_id}.q{n}",
            "text": q.text,
            "pass_answer": q.pass_answer,
            "operator": q.operator,
            "target": q.target,
        }
        if q.depends_on:
            row["depends_on"] = [f"{spec.task_id}.q{k}" for k in q.depends_on]
        questions.append(row)

    meta: dict[str, Any] = {
        "formula": spec.formula,
        "layout": layout,
        "visual_instruction_types": [k for k, _s, _l, _i in vi],
        "synthetic": True,
    }
    if orientation:
        meta["orientation"] = orientation
    if spec.arrows:
        meta["arrows"] = spec.arrows
    if spec.pose:
        meta["pose"] = {"subject": spec.pose, "image": len(spec.refs) + len(vi) - 1}
    if spec.task_id == TREE_TASK:
        meta["tree_nodes"] = tree_nodes_meta(spec)
    meta.update(spec.extra_meta)
    record = {
        "task_id": spec.task_id,
        "instruction": spec.instruction,
        "images": images,
        "questions": questions,
        "meta": meta,
    }
    meta["conflicts"] = published_conflicts(record)
    return record


def published_conflicts(record: Mapping[str, Any]) -> dict[str, bool]:
    """The task's ``meta.conflicts`` as the benchmark's pipeline publishes them: the rules of
    :mod:`annotation.vif.conflicts` applied to the pre-labels (wrong ones included)."""
    decisions = task_conflicts(task_prelabels(record), record["meta"])
    out = {}
    for name, key in CONFLICT_KEYS.items():
        conflict = decisions[name].conflict
        if conflict is None:
            raise ValueError(f"{record['task_id']}: {name} conflict undecidable from the "
                             f"pre-labels ({decisions[name].rule})")
        out[key] = conflict
    return out


def _judge_text(
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


def build_demo_bundle(out_dir: Path) -> None:
    """Write the synthetic demo bundle into ``out_dir`` (created if needed).

    The folder gets ``bundle.json``, ``tasks.jsonl``, ``outputs.jsonl``,
    ``judgments.jsonl``, ``annotations.jsonl`` and ``images/`` + ``outputs/``; existing
    files of the same names are overwritten (use an empty folder for a clean build).
    Same bytes on every run.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)

    bundle = {
        "format": "judge-audit-bundle/1",
        "name": "judge-audit demo",
        "benchmark": "VIF-Bench + TRACE-Bench (synthetic demo)",
        "criteria": [
            {k: v for k, v in c.items() if k != "prompt"} | {"min": 1, "max": 10, "step": 1}
            for c in CRITERIA
        ],
        "judges": [{"name": j, "kind": "vlm"} for j in JUDGES],
        "guidelines": GUIDELINES,
        "meta": {
            "synthetic": True,
            "generated_by": "scripts/make_demo.py",
            "seed": SEED,
            "judge_prompt_names": {c["name"]: c["prompt"] for c in CRITERIA},
        },
    }
    (out_dir / "bundle.json").write_text(
        json.dumps(bundle, ensure_ascii=False, sort_keys=True, indent=2) + "\n",
        encoding="utf-8",
        newline="\n",
    )

    written: set[str] = set()
    tasks = [_task_records(spec, out_dir, written) for spec in TASKS]
    _write_jsonl(out_dir / "tasks.jsonl", tasks)

    outputs: list[dict[str, Any]] = []
    judgments: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    clocks = {a: p["start"] for a, p in ANNOTATOR_PROFILE.items()}
    for spec in TASKS:
        for gen in GENERATORS:
            output_id = f"{spec.task_id}/{gen}"
            row: dict[str, Any] = {
                "output_id": output_id,
                "task_id": spec.task_id,
                "generator": gen,
            }
            defects = spec.defects[gen]
            if "refusal" in defects:
                row.update(
                    path=None,
                    missing=True,
                    meta={"reason": "refused: the request was flagged by the provider"},
                )
                outputs.append(row)
                continue
            if (spec.task_id, gen) in IMAGE_NOT_AT_HAND:
                row.update(path=None, meta={"defects": defects, "note": "image not at hand"})
            else:
                rel = f"outputs/{gen}/{spec.task_id}.png"
                _save_png(render_output(spec, gen), out_dir / rel)
                row.update(path=rel, meta={"defects": defects})
            outputs.append(row)
            truth = _true_scores(spec, gen, rng)

            for judge in JUDGES:
                prof = JUDGE_PROFILE[judge]
                seen = {
                    t
                    for t in defects
                    if _kind_of(t) not in prof["blind"] and rng.random() < prof["detect"]
                }
                # the tree judge answers the root as drawn (its mistakes aside): TREE_MISTAKES
                on_tree = spec.task_id == TREE_TASK and judge == TREE_JUDGE
                if on_tree:
                    seen = set(defects)
                view = _perceived(spec, gen, truth, seen)
                scores = {
                    n: round(_clamp(view[n] + prof["bias"] + rng.gauss(0.0, prof["sd"])))
                    for n in CRITERION_NAMES
                }
                garble = UNPARSED[3] if (judge, spec.task_id, gen) == UNPARSED[:3] else None
                text = _judge_text(spec, gen, judge, scores, seen, garble)
                for name in CRITERION_NAMES:
                    j: dict[str, Any] = {
                        "judge": judge,
                        "output_id": output_id,
                        "criterion": name,
                        "score": scores[name],
                        "raw": text,
                    }
                    if name == garble:
                        j.update(score=None, parse_status="unparsed")
                    judgments.append(j)
                for n, q in enumerate(spec.questions, start=1):
                    answer = _answer(q, seen)
                    hedge = ""
                    if rng.random() < prof["flip"]:
                        answer = "no" if answer == "yes" else "yes"
                        hedge = "hard to see; "
                    passed = answer == q.pass_answer
                    raw = f"{answer}. {hedge}{q.ok if passed else q.bad}"
                    if on_tree:
                        answer, raw = _tree_answer(judge, gen, "N0", n, q)
                    judgments.append(
                        {
                            "judge": judge,
                            "output_id": output_id,
                            "question_id": f"{spec.task_id}.q{n}",
                            "answer": answer,
                            "raw": raw,
                        }
                    )

            if spec.task_id == TREE_TASK:
                node_outputs, node_judgments = _tree_node_records(spec, gen, out_dir)
                outputs += node_outputs
                judgments += node_judgments

            if row["path"] is None:
                continue
            for ann in ANNOTATORS:
                if (spec.task_id, gen) in ANNOTATOR_SKIPS[ann]:
                    continue
                prof = ANNOTATOR_PROFILE[ann]
                seen = {t for t in defects if rng.random() < 0.95}
                view = _perceived(spec, gen, truth, seen)

                for n, q in enumerate(spec.questions, start=1):
                    r = rng.random()
                    answer = _answer(q, seen)
                    if r < 0.03:
                        answer = "cant_tell"
                    elif r < 0.06:
                        answer = "no" if answer == "yes" else "yes"
                    annotations.append(
                        {
                            "annotator": ann,
                            "output_id": output_id,
                            "question_id": f"{spec.task_id}.q{n}",
                            "answer": answer,
                            "created_at": _stamp(clocks, ann, rng),
                        }
                    )
                for name in CRITERION_NAMES:
                    score = round(_clamp(view[name] + prof["bias"] + rng.gauss(0.0, prof["sd"])))
                    a_row: dict[str, Any] = {
                        "annotator": ann,
                        "output_id": output_id,
                        "criterion": name,
                        "score": score,
                        "created_at": _stamp(clocks, ann, rng),
                    }
                    if name == "visual_quality" and "blur" in defects and ann == "ann1":
                        a_row["note"] = "slight blur"
                    annotations.append(a_row)

    _apply_corrections(annotations, clocks)
    _write_jsonl(out_dir / "outputs.jsonl", outputs)
    _write_jsonl(out_dir / "judgments.jsonl", judgments)
    _write_jsonl(out_dir / "annotations.jsonl", annotations)


def _tree_node_records(
    spec: TaskSpec, gen: str, out_dir: Path
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Draw ``gen``'s node outputs of the demo tree; return their outputs.jsonl records and
    TREE_JUDGE's answers to each node's retained questions (no criteria: the nodes are
    diagnostic, not annotation items)."""
    outputs: list[dict[str, Any]] = []
    judgments: list[dict[str, Any]] = []
    for node in TREE_NODES[1:]:
        nid = node["id"]
        output_id = f"{spec.task_id}/{gen}/{nid}"
        rel = f"outputs/{gen}/{spec.task_id}/{nid}.png"
        image = render_tree_node(spec, gen, nid)  # a 256-colour palette: half the bytes
        image = image.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        _save_png(image, out_dir / rel)
        outputs.append(
            {
                "output_id": output_id,
                "task_id": spec.task_id,
                "generator": gen,
                "path": rel,
                "meta": {"node": nid, "defects": tree_defects(gen, nid)},
            }
        )
        for n in node["questions"]:
            answer, raw = _tree_answer(TREE_JUDGE, gen, nid, n, spec.questions[n - 1])
            judgments.append(
                {
                    "judge": TREE_JUDGE,
                    "output_id": output_id,
                    "question_id": f"{spec.task_id}.q{n}",
                    "answer": answer,
                    "raw": raw,
                }
            )
    return outputs, judgments


def _stamp(clocks: dict[str, datetime], annotator: str, rng: random.Random) -> str:
    """Advance the annotator's clock by 15-75 s and return it as ISO-8601 UTC."""
    clocks[annotator] += timedelta(seconds=rng.randint(15, 75))
    return _iso(clocks[annotator])


def _apply_corrections(annotations: list[dict[str, Any]], clocks: dict[str, datetime]) -> None:
    """Turn some answers into a history: the first answer stays, a corrected one follows.

    The earlier line is set to the ``first`` value; the correction is appended at the end
    of the annotator's session (a later ``created_at``) with a note.
    """
    for ann, task_id, gen, key, first, corrected, note in CORRECTIONS:
        output_id = f"{task_id}/{gen}"
        field_name, value = (
            ("question_id", f"{task_id}.q{key}") if isinstance(key, int) else ("criterion", key)
        )
        matches = [
            a
            for a in annotations
            if a["annotator"] == ann and a["output_id"] == output_id and a.get(field_name) == value
        ]
        if len(matches) != 1:
            raise RuntimeError(f"correction target not found: {ann} {output_id} {value}")
        earlier = matches[0]
        answer_field = "answer" if field_name == "question_id" else "score"
        earlier[answer_field] = first
        clocks[ann] += timedelta(minutes=7)
        annotations.append(
            {
                "annotator": ann,
                "output_id": output_id,
                field_name: value,
                answer_field: corrected,
                "created_at": _iso(clocks[ann]),
                "note": note,
            }
        )
