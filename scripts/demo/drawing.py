"""Drawing the demo's pictures with Pillow: sprites (cat, mug, tree, person), reference
images, scenes, and helpers to place a sprite in a box or light it."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from PIL import Image, ImageChops, ImageDraw, ImageFilter

from annotation.vif import draw as vi_draw
from scripts.demo.spec import SIZE

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


# ------------------------------------------------------------------- placing a sprite


def fit_sprite(sprite: Image.Image, box: Sequence[float], size: int
               ) -> tuple[Image.Image, int, int]:
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


def glow_layer(size: int, center: Sequence[float], color: str, strength: float) -> Image.Image:
    """An RGBA radial glow centred at ``center`` (normalized)."""
    grad = Image.radial_gradient("L").resize((size * 2, size * 2), Image.Resampling.BILINEAR)
    cx, cy = round(center[0] * size), round(center[1] * size)
    alpha = grad.crop((size - cx, size - cy, 2 * size - cx, 2 * size - cy))
    alpha = alpha.point(lambda v: round(max(0.0, 1.0 - v / 190.0) * 255 * strength))
    layer = Image.new("RGBA", (size, size), (*_hex(color), 0))
    layer.putalpha(alpha)
    return layer
