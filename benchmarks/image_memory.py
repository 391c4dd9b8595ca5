"""Peak memory of one large image: import, and each served size, against a bare Pillow decode.

    python benchmarks/image_memory.py [--side 8000] [--cases png,rgba,jpeg,palette]

Writes, in a temporary folder, one ``--side`` x ``--side`` image per case (8000 x 8000 =
64 Mpx, the import pixel limit :data:`annotation.formats.images.MAX_PIXELS`): an opaque RGB PNG, an
RGBA PNG, a JPEG (quality 90) and a palette PNG, each as the one output of a small bundle.
Then every measurement runs in a **child process of its own**, which reports its own peak
resident memory (``resource.getrusage(RUSAGE_SELF).ru_maxrss``) before and after the work,
and the time the work took:

* ``decode`` (the **baseline**): ``Image.open(path).load()``, nothing else: what any
  program that looks at the image's pixels once has to pay;
* ``import``: :func:`annotation.formats.importers.import_path` of the bundle into a fresh project
  (reading, checking and decoding the image, copying it into the media folder);
* ``served-256``, ``served-1024``, ``served-2048``: the bytes an annotator's browser gets
  at the strip, large and enlarge sizes, cold (nothing cached):
  :func:`annotation.ui.render.browser_image` (on code older than that function,
  :func:`annotation.ui.render.thumbnail_bytes`, so the same script measures both).

Printed per case and step: peak RSS of the child, its growth during the step (peak after
minus peak before: the interpreter and imports excluded), that growth divided by the
baseline decode's growth and minus it ("over MB": what judge-audit adds to the decoded
pixels), and the time, also as a ratio to the decode's time. Goal: at most 1.35 times the
decode, or at most 100 MB over it (a palette image decodes to 1 byte a pixel, so the RGB
copies it is shown from weigh more against it). Both sides run
on the same machine in the same run, so the ratios carry over between machines; the
absolute figures do not. Nothing here asserts: it prints.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ("png", "rgba", "jpeg", "palette")
STEPS = ("decode", "import", "served-256", "served-1024", "served-2048")


def _peak_mb() -> float:
    """This process's peak resident memory so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_image(case: str, side: int, path: Path) -> None:
    """A ``side`` x ``side`` image of the kind ``case``: smooth areas, shapes, some detail.

    Cheap to make at 64 Mpx (drawn at 1/8 of the side and enlarged, then detailed), and
    not trivially compressible, so decoding does real work.
    """
    from PIL import Image, ImageDraw

    small = side // 8
    base = Image.linear_gradient("L").resize((small, small))
    im = Image.merge("RGB", (base, base.rotate(90), base.rotate(180)))
    draw = ImageDraw.Draw(im)
    for i in range(40):
        x, y, r = (i * 97) % small, (i * 61) % small, small // 12 + (i * 13) % (small // 8)
        draw.ellipse((x - r, y - r, x + r, y + r), fill=((i * 40) % 256, (i * 90) % 256, 128))
    im = im.resize((side, side), Image.Resampling.BILINEAR)
    draw = ImageDraw.Draw(im)
    for i in range(0, side, 37):
        draw.line((i, 0, side - i, side), fill=(255 - i % 256, i % 256, 60), width=3)
    path.parent.mkdir(parents=True, exist_ok=True)
    if case == "png":
        im.save(path, "PNG", compress_level=1)
    elif case == "rgba":
        alpha = Image.linear_gradient("L").resize((side, side))
        im.putalpha(alpha)
        im.save(path, "PNG", compress_level=1)
    elif case == "jpeg":
        im.save(path, "JPEG", quality=90)
    elif case == "palette":
        im.quantize(64).save(path, "PNG", compress_level=1)
    else:
        raise ValueError(case)


def write_bundle(root: Path, case: str, side: int) -> Path:
    """A bundle whose one output is the case's image; returns the image's path."""
    ext = "jpg" if case == "jpeg" else "png"
    rel = f"outputs/big.{ext}"
    make_image(case, side, root / rel)
    (root / "bundle.json").write_text(json.dumps({"name": "memory", "benchmark": "bench"}))
    (root / "tasks.jsonl").write_text(json.dumps(
        {"task_id": "t1", "instruction": "A big image."}) + "\n")
    (root / "outputs.jsonl").write_text(json.dumps(
        {"output_id": "t1/gen", "task_id": "t1", "generator": "gen", "path": rel}) + "\n")
    return root / rel


def child(step: str, bundle: Path, image: Path, db: Path) -> dict[str, float]:
    """Run one step in this process and return its figures (called in the child)."""
    if step.startswith("make-"):
        write_bundle(bundle, step.split("-", 1)[1], int(db.name))
        return {}
    if step == "decode":
        from PIL import Image

        Image.MAX_IMAGE_PIXELS = None  # the baseline only decodes: no limit in the way
        before = _peak_mb()
        start = time.perf_counter()
        with Image.open(image) as im:
            im.load()
        seconds = time.perf_counter() - start
        return {"before": before, "peak": _peak_mb(), "seconds": seconds}
    from annotation.formats.importers import import_path
    from annotation.store import Store
    from annotation.ui import render

    if step == "import":
        before = _peak_mb()
        start = time.perf_counter()
        with Store.open(db) as store:
            import_path(store, bundle)
        seconds = time.perf_counter() - start
        return {"before": before, "peak": _peak_mb(), "seconds": seconds}
    side = int(step.split("-")[1])
    with Store.open(db) as store:
        sha = str(store.outputs_df()["sha256"].iloc[0])
        serve = getattr(render, "browser_image", None)
        before = _peak_mb()
        start = time.perf_counter()
        data = serve(store, sha, side).data if serve else render.thumbnail_bytes(store, sha, side)
        seconds = time.perf_counter() - start
        assert data
    return {"before": before, "peak": _peak_mb(), "seconds": seconds}


def run_child(step: str, bundle: Path, image: Path, db: Path) -> dict[str, float]:
    """One step in a fresh interpreter (its peak memory is its own)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(
        [sys.executable, __file__, "--child", step, str(bundle), str(image), str(db)],
        capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{step} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--side", type=int, default=8000)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--child", nargs=4, metavar=("STEP", "BUNDLE", "IMAGE", "DB"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        step, bundle, image, db = args.child
        print(json.dumps(child(step, Path(bundle), Path(image), Path(db))))
        return 0
    print(f"{args.side}x{args.side} images ({args.side * args.side / 1e6:.0f} Mpx); "
          "peak = child's ru_maxrss; growth = peak after - peak before the step")
    print(f"{'case':<8} {'step':<12} {'peak MB':>8} {'growth MB':>10} {'x decode':>9} "
          f"{'over MB':>8} {'seconds':>8} {'x decode':>9}")
    with tempfile.TemporaryDirectory(prefix="judge-audit-memory-") as tmp:
        for case in args.cases.split(","):
            root = Path(tmp) / case
            # made in a child too: this process stays small, and a child's ru_maxrss
            # starts from the memory of the process that started it (Linux keeps the
            # high-water mark across exec)
            run_child(f"make-{case}", root / "bundle", root, Path(str(args.side)))
            image = next((root / "bundle" / "outputs").iterdir())
            db = root / "p.db"
            base: dict[str, float] = {}
            for step in STEPS:
                fig = run_child(step, root / "bundle", image, db)
                growth = fig["peak"] - fig["before"]
                if step == "decode":
                    base = {"growth": growth, "seconds": fig["seconds"]}
                print(f"{case:<8} {step:<12} {fig['peak']:8.0f} {growth:10.0f} "
                      f"{growth / max(base['growth'], 1):9.2f} "
                      f"{growth - base['growth']:8.0f} {fig['seconds']:8.2f} "
                      f"{fig['seconds'] / max(base['seconds'], 1e-6):9.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
