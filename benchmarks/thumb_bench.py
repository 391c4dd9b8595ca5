"""Image speed of one annotation page: the thumbnail cache against resizing on every rerun.

    python benchmarks/thumb_bench.py [--repeats 7] [--size 1024]

Writes a bundle with one VIF-like task (7 references, 6 visual instructions, 1 output:
``--size`` square PNGs made with Pillow, photo-like: gradients, shapes and noise), imports
it into a fresh project, then times what a page needs to show them: the 13 inputs at 256 px
(the strip) and the output at 1024 px, as bytes ready for ``st.image``:

* **cold**: :func:`annotation.ui.render.thumbnail_bytes` with an empty cache (thumbnails are
  made and written), i.e. the first view of a task;
* **warm**: the same calls again (cache hits), i.e. every later rerun or session;
* **baseline**: no cache: every image opened, decoded, resized (LANCZOS) and encoded as
  JPEG quality 88 on every call, which is what a page without the cache does.

Also times the layout/arrow overlay of the output (:func:`annotation.ui.render.overlay_png`)
cold and warm. Prints the median of ``--repeats`` runs of each, and ratios; cold and
baseline alternate within the run, so a busy machine slows both alike. The OS file cache is
warm for all variants (the sources are read before timing starts).
"""

from __future__ import annotations

import argparse
import io
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter

from annotation.formats.importers import import_path
from annotation.store import Store
from annotation.ui import render

N_REFERENCES, N_VI = 7, 6


def photo_like(size: int, seed: int) -> Image.Image:
    """A size x size RGB image with smooth areas, shapes and fine noise (PNG ~ a photo)."""
    rng = random.Random(seed)
    top = tuple(rng.randrange(256) for _ in range(3))
    bottom = tuple(rng.randrange(256) for _ in range(3))
    ramp = Image.linear_gradient("L").resize((size, size))
    im = Image.composite(Image.new("RGB", (size, size), bottom),
                         Image.new("RGB", (size, size), top), ramp)
    draw = ImageDraw.Draw(im)
    for _ in range(12):
        x, y = rng.randrange(size), rng.randrange(size)
        r = rng.randrange(size // 20, size // 4)
        draw.ellipse((x - r, y - r, x + r, y + r), fill=tuple(rng.randrange(256) for _ in "rgb"))
    noise = Image.effect_noise((size, size), 24).convert("RGB")
    return Image.blend(im.filter(ImageFilter.GaussianBlur(2)), noise, 0.12)


def make_bundle(root: Path, size: int) -> None:
    """One task with 7 references, 6 VIs and one output, all ``size`` x ``size`` PNGs."""
    images = []
    for i in range(N_REFERENCES + N_VI):
        rel = f"images/t1/img{i}.png"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        photo_like(size, i).save(root / rel, compress_level=6)
        role = "reference" if i < N_REFERENCES else "visual_instruction"
        images.append({"path": rel, "role": role, "kind": "main" if i < N_REFERENCES else
                       "layout"})
    (root / "outputs").mkdir(parents=True, exist_ok=True)
    photo_like(size, 99).save(root / "outputs/t1.png", compress_level=6)
    (root / "bundle.json").write_text(json.dumps({"name": "bench", "benchmark": "VIF-Bench"}))
    meta = {"layout": [{"subject": "cat", "box": [0.1, 0.4, 0.5, 0.9], "color": "#E6194B"},
                       {"subject": "mug", "box": [0.55, 0.5, 0.9, 0.9], "color": "#4363D8"}],
            "arrows": [{"kind": "wind", "start": [0.9, 0.3], "end": [0.35, 0.36]}]}
    (root / "tasks.jsonl").write_text(json.dumps(
        {"task_id": "t1", "instruction": "Bench.", "images": images, "meta": meta}) + "\n")
    (root / "outputs.jsonl").write_text(json.dumps(
        {"output_id": "t1/gen", "task_id": "t1", "generator": "gen",
         "path": "outputs/t1.png"}) + "\n")


def baseline_bytes(path: Path, max_side: int) -> bytes:
    """No cache: open, decode, resize (never up) and encode JPEG q88, every time."""
    with Image.open(path) as im:
        im = im.convert("RGB")
        im.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    im.save(buffer, "JPEG", quality=render.JPEG_QUALITY)
    return buffer.getvalue()


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--size", type=int, default=1024)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_bundle(root / "bundle", args.size)
        store = Store.open(root / "p.db")
        import_path(store, root / "bundle")
        inputs = list(store.images_df("t1")["sha256"])
        output = str(store.outputs_df()["sha256"].iloc[0])
        meta = store.tasks_df()["meta"].iloc[0]
        page = [(sha, render.STRIP_SIZE) for sha in inputs] + [(output, render.LARGE_SIZE)]
        paths = [(store.file_path(sha), side) for sha, side in page]
        for path, _side in paths:  # warm the OS file cache for every variant alike
            path.read_bytes()

        def ours() -> None:
            for sha, side in page:
                render.thumbnail_bytes(store, sha, side)

        def baseline() -> None:
            for path, side in paths:
                baseline_bytes(path, side)

        def overlay() -> None:
            render.overlay_png(store, output, meta, render.LARGE_SIZE)

        def clear() -> None:
            for folder in (render.THUMBS_DIR, render.OVERLAYS_DIR):
                shutil.rmtree(store.media_dir / folder, ignore_errors=True)

        cold, warm, base, ov_cold, ov_warm = [], [], [], [], []
        for _ in range(args.repeats):
            clear()
            cold.append(timed(ours))
            warm.append(statistics.median(timed(ours) for _ in range(5)))
            base.append(timed(baseline))
            ov_cold.append(timed(overlay))
            ov_warm.append(statistics.median(timed(overlay) for _ in range(5)))
        store.close()

    med = {name: statistics.median(v) * 1000 for name, v in
           (("cold", cold), ("warm", warm), ("baseline", base),
            ("overlay cold", ov_cold), ("overlay warm", ov_warm))}
    n = len(page)
    print(f"page: {N_REFERENCES} references + {N_VI} VIs at {render.STRIP_SIZE} px, "
          f"1 output at {render.LARGE_SIZE} px; sources {args.size}x{args.size} PNG; "
          f"median of {args.repeats}")
    for name, ms in med.items():
        per = f"  ({ms / n:7.2f} ms/image)" if not name.startswith("overlay") else ""
        print(f"  {name:<13} {ms:9.2f} ms{per}")
    print(f"  warm speed-up over baseline: {med['baseline'] / med['warm']:.1f}x")
    print(f"  cold cost over baseline:     {med['cold'] / med['baseline']:.2f}x")
    print(f"  overlay warm speed-up over cold: {med['overlay cold'] / med['overlay warm']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
