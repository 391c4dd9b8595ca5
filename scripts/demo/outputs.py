"""Drawing the generators' outputs of the demo tasks, with the flaws their specs name."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from PIL import Image, ImageDraw, ImageFilter

from annotation.vif import draw as vi_draw
from scripts.demo.drawing import (
    fit_sprite,
    glow_layer,
    scene,
    sprite_cat,
    sprite_mug,
    sprite_person,
    sprite_tree,
)
from scripts.demo.spec import DANCER_POSE, POSE_TARGET, SEED, SIZE, SUBJECTS, TaskSpec
from scripts.demo.trees import TREE_TASK, render_tree_node
from scripts.demo.truth import kind_of


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
        img = Image.alpha_composite(img, glow_layer(size, light["start"], "#FFE9A8", 0.75))
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
        content, x, y = fit_sprite(sprite, box, size)
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
        if kind_of(tag) == "residue":
            subject = tag.split(":", 1)[1]
            box = boxes[subject]
            color = vi_draw.subject_color([s for s, _ in spec.layout].index(subject))
            ImageDraw.Draw(img).rectangle([round(v * size) for v in box], outline=color, width=3)
    out = img.convert("RGB")
    if "blur" in defects:
        out = out.filter(ImageFilter.GaussianBlur(2.2))
    return out
