"""Thumbnails, VI overlays and side-by-side images (annotation.ui.render), on real files."""

from __future__ import annotations

import io
import json
import math
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from annotation.formats.importers import import_path
from annotation.store import Store
from annotation.ui import render
from annotation.ui.render import Arrow, Box
from annotation.vif.draw import ARROW_COLORS, subject_color
from tests.helpers.bundles import write_doc_example


def _rgb(color: str) -> tuple[int, int, int]:
    value = color.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def _close(a: tuple[int, ...], b: tuple[int, ...], tol: int = 3) -> bool:
    return all(abs(x - y) <= tol for x, y in zip(a[:3], b[:3], strict=True))


def _halves(size: tuple[int, int], left: str, right: str) -> Image.Image:
    """An RGB image, left half one colour, right half another (shows a swapped aspect)."""
    im = Image.new("RGB", size, left)
    ImageDraw.Draw(im).rectangle((size[0] // 2, 0, size[0], size[1]), fill=right)
    return im


@pytest.fixture
def project(tmp_path: Path, engine_db: str) -> dict[str, Any]:
    """The documented example bundle, with large images of several kinds, imported (on
    SQLite and on PostgreSQL: the images are read through the store)."""
    root = write_doc_example(tmp_path / "bundle")
    _halves((1200, 800), "red", "blue").save(root / "outputs/modelA/t1.png")
    cat = Image.new("RGBA", (600, 900), (0, 0, 0, 0))
    ImageDraw.Draw(cat).ellipse((100, 100, 500, 800), fill=(250, 120, 0, 255))
    cat.save(root / "images/t1/cat.png")
    _halves((800, 800), "white", "green").convert("P").save(root / "images/t1/layout.png")
    jpg = root / "outputs/modelC/t1.jpg"
    jpg.parent.mkdir(parents=True)
    _halves((2000, 1000), "yellow", "purple").save(jpg, quality=95)
    turned = root / "outputs/modelD/t1.jpg"  # stored 600x300, shown 300x600 (EXIF 6)
    turned.parent.mkdir(parents=True)
    exif = Image.Exif()
    exif[0x0112] = 6
    _halves((600, 300), "red", "blue").save(turned, quality=95, exif=exif)
    with (root / "outputs.jsonl").open("a", encoding="utf-8") as fh:
        for gen, rel in (("modelC", "outputs/modelC/t1.jpg"), ("modelD", "outputs/modelD/t1.jpg")):
            fh.write(json.dumps({"output_id": f"t1/{gen}", "task_id": "t1", "generator": gen,
                                 "path": rel}) + "\n")
    store = Store.open(engine_db)
    import_path(store, root)
    images = store.images_df("t1").set_index("idx")
    outputs = store.outputs_df().set_index("output_id")
    yield {
        "store": store,
        "png": outputs.loc["t1/modelA", "sha256"],
        "jpg": outputs.loc["t1/modelC", "sha256"],
        "turned": outputs.loc["t1/modelD", "sha256"],
        "rgba": images.loc[0, "sha256"],
        "small": images.loc[1, "sha256"],
        "palette": images.loc[2, "sha256"],
        "meta": store.tasks_df().set_index("task_id").loc["t1", "meta"],
    }
    store.close()


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


# =============================================================================== thumbnails


def test_thumbnail_keeps_aspect_and_content(project):
    store, sha = project["store"], project["png"]
    path = render.thumbnail(store, sha, 256)
    assert path == store.media_dir / render.THUMBS_DIR / "256" / f"{sha}.jpg"
    with Image.open(path) as im:
        assert im.format == "JPEG"
        assert im.size == (256, 171)  # 1200x800 -> 256 x 170.7
        assert _close(im.getpixel((20, 85)), (255, 0, 0), 12)  # left stays left
        assert _close(im.getpixel((236, 85)), (0, 0, 255), 12)


def test_jpeg_source_and_sizes_give_different_files(project):
    store, sha = project["store"], project["jpg"]
    small, large = render.thumbnail(store, sha, 256), render.thumbnail(store, sha, 1024)
    assert small != large
    assert small.parent.name == "256" and large.parent.name == "1024"
    with Image.open(small) as a, Image.open(large) as b:
        assert (a.size, b.size) == ((256, 128), (1024, 512))
        assert _close(b.getpixel((10, 256)), (255, 255, 0), 12)
        assert _close(b.getpixel((1000, 256)), (128, 0, 128), 12)
    assert render.thumbnail_bytes(store, sha, 1024) == large.read_bytes()


def test_exif_orientation_is_applied(project):
    with Image.open(render.thumbnail(project["store"], project["turned"], 256)) as im:
        assert im.size == (128, 256)  # 600x300 turned a quarter: 300x600
        assert _close(im.getpixel((64, 20)), (255, 0, 0), 12)  # red on top after turning
        assert _close(im.getpixel((64, 236)), (0, 0, 255), 12)


def test_never_upscaled_small_images_are_re_encoded_too(project):
    store = project["store"]
    # a small JPEG, and a small PNG with a palette: a re-encoded copy, never the original
    for key, suffix, size in (("jpg", ".jpg", (2000, 1000)), ("palette", ".png", (800, 800))):
        copy = render.thumbnail(store, project[key], 2048)
        assert copy != store.file_path(project[key]) and copy.suffix == suffix
        assert copy.read_bytes() != store.file_path(project[key]).read_bytes()
        with Image.open(copy) as im:
            assert im.size == size
    # an opaque PNG already within the size: a JPEG copy of the same size, never upscaled
    for side in (2048, 1200):
        copy = render.thumbnail(store, project["png"], side)
        assert copy != store.file_path(project["png"]) and copy.suffix == ".jpg"
        with Image.open(copy) as im:
            assert im.size == (1200, 800)
    with Image.open(render.thumbnail(store, project["png"], 1199)) as im:
        assert im.size == (1199, 799)


def test_transparency_and_palette_stay_png(project):
    store = project["store"]
    path = render.thumbnail(store, project["rgba"], 256)
    assert path.suffix == ".png"
    with Image.open(path) as im:
        assert im.mode == "RGBA" and im.size == (171, 256)
        assert im.getpixel((2, 2))[3] == 0  # transparent corner kept
        assert im.getpixel((85, 128))[3] == 255
    path = render.thumbnail(store, project["palette"], 256)
    assert path.suffix == ".png"
    with Image.open(path) as im:
        assert im.size == (256, 256)
        assert _close(im.convert("RGB").getpixel((250, 128)), (0, 128, 0), 3)


def test_cache_hit_does_not_open_the_source(project, monkeypatch):
    store, sha = project["store"], project["png"]
    first = render.thumbnail(store, sha, 256)
    data, mtime = first.read_bytes(), first.stat().st_mtime_ns
    store.file_path(sha).write_bytes(b"not an image any more")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the source was opened")

    monkeypatch.setattr(render.Image, "open", refuse)
    assert render.thumbnail(store, sha, 256) == first
    store.file_path(sha).unlink()
    assert render.thumbnail_bytes(store, sha, 256) == data
    assert first.stat().st_mtime_ns == mtime


def test_a_cache_miss_does_read_the_source(project):
    """The counterpart of the cache test: without a cached file a broken source fails."""
    store, sha = project["store"], project["png"]
    store.file_path(sha).write_bytes(b"not an image any more")
    with pytest.raises(OSError):
        render.thumbnail(store, sha, 256)


def test_empty_cache_file_is_remade(project):
    store, sha = project["store"], project["png"]
    path = render.thumbnail(store, sha, 256)
    path.write_bytes(b"")
    assert render.thumbnail(store, sha, 256) == path
    with Image.open(path) as im:
        assert im.size == (256, 171)


def test_writes_are_atomic_and_leave_no_temporary_files(project, monkeypatch):
    store = project["store"]
    for sha in (project["png"], project["jpg"], project["rgba"], project["palette"]):
        for side in (256, 1024):
            render.thumbnail(store, sha, side)
    render.overlay_png(store, project["png"], project["meta"], 256)
    files = (_files(store.media_dir / render.THUMBS_DIR)
             + _files(store.media_dir / render.OVERLAYS_DIR))
    # every image at 256 and 1024 (small ones re-encoded too), one overlay and the output
    # it is drawn on, served as every generated output is (generated_thumbnail)
    assert len(files) == 10
    assert not [p for p in files if p.name.startswith(".") or p.suffix == ".tmp"]

    def broken_save(self: Image.Image, fp: Any, *args: object, **kwargs: object) -> None:
        fp.write(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(Image.Image, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        render.thumbnail(store, project["jpg"], 512)
    folder = store.media_dir / render.THUMBS_DIR / "512"
    assert _files(folder) == []  # neither a half thumbnail nor its temporary file


def test_concurrent_first_views_all_get_a_whole_file(project):
    store, sha = project["store"], project["jpg"]
    with ThreadPoolExecutor(max_workers=8) as pool:
        paths = list(pool.map(lambda _i: render.thumbnail(store, sha, 300), range(16)))
    assert len(set(paths)) == 1
    with Image.open(paths[0]) as im:
        im.load()
        assert im.size == (300, 150)
    assert _files(paths[0].parent) == [paths[0]]


def test_bad_arguments(project):
    store = project["store"]
    with pytest.raises(KeyError):
        render.thumbnail(store, "0" * 64, 256)
    with pytest.raises(ValueError):
        render.thumbnail(store, "../../etc/passwd", 256)
    with pytest.raises(ValueError):
        render.thumbnail(store, project["png"], 0)


# ================================================================================= shapes

DEMO_META = {
    "layout": [
        {"subject": "cat", "image": 0, "box": [0.08, 0.40, 0.52, 0.92], "color": "#E6194B",
         "label": "Image_0: cat"},
        {"subject": "mug", "image": 1, "box": [0.56, 0.50, 0.88, 0.90], "color": "#4363D8",
         "label": "Image_1: mug"},
    ],
    "arrows": [
        {"kind": "wind", "start": [0.90, 0.30], "end": [0.35, 0.36]},
        {"kind": "light", "start": [0.88, 0.08], "end": [0.50, 0.60]},
    ],
    "orientation": [{"subject": "cat", "yaw": 40, "pitch": 10, "anchor": [0.3, 0.66]}],
}


def test_layers_of_the_demo_meta():
    shapes = render.overlay_layers(DEMO_META)
    assert shapes == [
        Box("cat", (0.08, 0.40, 0.52, 0.92), "#E6194B"),
        Box("mug", (0.56, 0.50, 0.88, 0.90), "#4363D8"),
        Arrow("wind", (0.90, 0.30), (0.35, 0.36)),
        Arrow("light", (0.88, 0.08), (0.50, 0.60)),
    ]
    assert render.overlay_layers(json.dumps(DEMO_META)) == shapes  # meta as stored


def test_layers_of_every_demo_task():
    """The demo bundle's task meta (what the app shows first) is read completely."""
    from annotation.project_files import DEMO_BUNDLE

    rows = [json.loads(line) for line in
            (DEMO_BUNDLE / "tasks.jsonl").read_text(encoding="utf-8").splitlines() if line]
    assert rows
    for row in rows:
        meta = row["meta"]
        shapes = render.overlay_layers(meta)
        boxes = [s for s in shapes if isinstance(s, Box)]
        arrows = [s for s in shapes if isinstance(s, Arrow)]
        assert [(b.subject, list(b.box), b.color) for b in boxes] == [
            (item["subject"], item["box"], item["color"]) for item in meta["layout"]
        ]
        assert [(a.kind, list(a.start), list(a.end)) for a in arrows] == [
            (a["kind"], a["start"], a["end"]) for a in meta.get("arrows", [])
        ]


def test_pixel_coordinates_on_the_1024_canvas_are_normalized():
    meta = {"layout": [{"name": "dog", "bbox": [102.4, 204.8, 409.6, 819.2]}],
            "arrows": {"wind": {"from": [0, 512], "to": [1024, 512]}}}
    (box, arrow) = render.overlay_layers(meta)
    assert box.subject == "dog" and box.color == subject_color(0)
    assert box.box == pytest.approx((0.1, 0.2, 0.4, 0.8))
    assert arrow == Arrow("wind", (0.0, 0.5), (1.0, 0.5))
    meta = {"canvas_size": [2000, 1000], "layout": {"cat": [200, 100, 1000, 900]}}
    assert render.overlay_layers(meta)[0].box == pytest.approx((0.1, 0.1, 0.5, 0.9))


def test_vif_release_and_other_variants():
    meta = {
        "layout": {"Image_0": [0.3, 0.2, 0.8, 0.9], "Image_1": {"x": 0.1, "y": 0.1, "w": 0.2,
                                                              "h": 0.3, "colour": "lime"}},
        "arrows": {"wind": [[0.1, 0.5], [0.8, 0.5]], "light": [[0.9, 0.1], [0.2, 0.8]]},
    }
    shapes = render.overlay_layers(meta)
    assert shapes[0] == Box("Image_0", (0.3, 0.2, 0.8, 0.9), subject_color(0))
    assert shapes[1].subject == "Image_1" and shapes[1].color == "#00FF00"
    assert shapes[1].box == pytest.approx((0.1, 0.1, 0.3, 0.4))
    assert shapes[2:] == [Arrow("wind", (0.1, 0.5), (0.8, 0.5)),
                          Arrow("light", (0.9, 0.1), (0.2, 0.8))]
    # labels and image indexes as names, a single arrow dict, "type" for the kind
    meta = {"layout": [{"label": "tree", "box": [0.5, 0.1, 0.9, 0.9]},
                       {"image": 2, "box": [[0.1, 0.1], [0.2, 0.2]]}],
            "arrows": {"type": "Light arrow", "points": [[0.1, 0.1], [0.5, 0.5]]}}
    shapes = render.overlay_layers(meta)
    assert [s.subject for s in shapes[:2]] == ["tree", "Image_2"]
    assert shapes[1].color == subject_color(1)
    assert shapes[2] == Arrow("light", (0.1, 0.1), (0.5, 0.5))


@pytest.mark.parametrize(
    "meta",
    [None, 5, "not json", "[1, 2]", [], {}, {"layout": 5}, {"layout": "x", "arrows": 3},
     {"layout": {"canvas_size": "big"}}, {"arrows": [[1, 2, 3]]}, {"layout": [[[]]]}],
)
def test_odd_meta_gives_no_shapes(meta):
    assert render.overlay_layers(meta) == []


def test_odd_items_are_skipped_and_good_ones_kept():
    meta = {
        "layout": [None, "x", 3, {"box": "abc"}, {"box": [0.5, 0.5, 0.5, 0.9]},
                   {"box": [0.1, math.nan, 0.2, 0.2]}, {"box": [True, 0, 1, 1]},
                   {"subject": "ok", "box": ["0.1", 0.1, 0.2, 0.2], "color": "not a colour"}],
        "arrows": [{"kind": "rain", "start": [0, 0], "end": [1, 1]}, {"kind": "wind"},
                   {"kind": "light+wind", "start": [0, 0], "end": [1, 1]},
                   {"kind": "wind", "start": [0.5, 0.5], "end": [0.5, 0.5]},
                   {"kind": "wind", "start": [0.2, 0.2], "end": {"x": 0.6, "y": 0.2}}],
    }
    shapes = render.overlay_layers(meta)
    assert shapes == [Box("ok", (0.1, 0.1, 0.2, 0.2), subject_color(0)),
                      Arrow("wind", (0.2, 0.2), (0.6, 0.2))]
    render.draw_overlay(Image.new("RGB", (50, 50)), shapes)


# ================================================================================ drawing


def test_boxes_are_tinted_outlined_and_labelled():
    white = Image.new("RGB", (400, 200), "white")
    red = "#E6194B"
    out = render.draw_overlay(white, [Box("cat", (0.1, 0.2, 0.4, 0.8), red)], alpha=0.35)
    assert white.getpixel((100, 100)) == (255, 255, 255)  # the input is not touched
    a = round(255 * 0.35) / 255
    tint = tuple(round(255 * (1 - a) + c * a) for c in _rgb(red))
    assert _close(out.getpixel((100, 120)), tint, 2)  # inside: x 40..160, y 40..160
    assert out.getpixel((200, 100)) == (255, 255, 255)  # right of the box
    assert out.getpixel((100, 180)) == (255, 255, 255)  # below it
    assert out.getpixel((40, 100)) == _rgb(red)  # the outline on the left edge
    assert out.getpixel((159, 100)) == _rgb(red)  # ... and on the right edge
    label = out.crop((42, 42, 80, 55))  # the tab at the top-left corner, inside
    colors = {c for _n, c in label.getcolors(4096)}
    assert (255, 255, 255) in colors and any(_close(c, _rgb(red), 8) for c in colors)
    stronger = render.draw_overlay(white, [Box("cat", (0.1, 0.2, 0.4, 0.8), red)], alpha=0.8)
    assert stronger.getpixel((100, 120))[1] < out.getpixel((100, 120))[1]


def test_arrows_are_cyan_or_yellow_along_their_line_with_a_head():
    shapes = [Arrow("wind", (0.1, 0.25), (0.9, 0.25)), Arrow("light", (0.1, 0.75), (0.9, 0.75))]
    out = render.draw_overlay(Image.new("RGB", (400, 400), "white"), shapes)
    cyan, yellow = _rgb(ARROW_COLORS["wind"]), _rgb(ARROW_COLORS["light"])
    assert out.getpixel((200, 100)) == cyan  # on the wind line
    assert out.getpixel((200, 300)) == yellow  # on the light line
    assert out.getpixel((200, 130)) == (255, 255, 255)  # away from both
    assert out.getpixel((200, 200)) == (255, 255, 255)
    assert out.getpixel((340, 110)) == cyan  # the head is wider than the line, at the end
    assert out.getpixel((150, 110)) == (255, 255, 255)  # ... not at the start
    assert out.getpixel((40, 100)) == cyan  # the round tail marks the start


def test_overlay_scales_to_the_image_and_keeps_transparency():
    shapes = render.overlay_layers({"layout": [{"subject": "a", "box": [0.5, 0.5, 1.0, 1.0],
                                                "color": "#0000FF"}]})
    rgba = Image.new("RGBA", (300, 100), (255, 255, 255, 255))
    out = render.draw_overlay(rgba, shapes)
    assert out.mode == "RGBA" and out.size == (300, 100)
    assert out.getpixel((100, 75))[:3] == (255, 255, 255)  # x < 150: outside
    assert out.getpixel((225, 75))[2] == 255 and out.getpixel((225, 75))[0] < 200


def test_overlay_png_is_cached_per_output_size_and_shapes(project):
    store, sha = project["store"], project["png"]
    meta = project["meta"]  # {"layout": {"cat": [0.1, 0.6, 0.5, 0.95]}}, as JSON text
    data = render.overlay_png(store, sha, meta, 256)
    with Image.open(io.BytesIO(data)) as im:
        assert im.format == "PNG" and im.size == (256, 171)
        inside, outside = im.getpixel((64, 140)), im.getpixel((200, 40))
    with Image.open(render.thumbnail(store, sha, 256)) as plain:
        assert _close(outside, plain.getpixel((200, 40)), 1)
        assert not _close(inside, plain.convert("RGB").getpixel((64, 140)), 10)
    cached = _files(store.media_dir / render.OVERLAYS_DIR)
    assert len(cached) == 1 and cached[0].read_bytes() == data
    store.file_path(sha).unlink()  # served from the overlay cache from now on
    shutil.rmtree(store.media_dir / render.THUMBS_DIR)
    assert render.overlay_png(store, sha, json.loads(meta), 256) == data
    assert not (store.media_dir / render.THUMBS_DIR).exists()
    store.file_path(sha).write_bytes(cached[0].read_bytes())  # any image: a new key reads it
    other = render.overlay_png(store, sha, {"layout": {"cat": [0.5, 0.1, 0.9, 0.5]}}, 256)
    assert other != data and len(_files(store.media_dir / render.OVERLAYS_DIR)) == 2
