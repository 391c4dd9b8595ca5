"""Rebuild the synthetic demo bundle: ``python scripts/make_demo.py [--out data/demo]``.

Deletes the output folder and writes it again with
:func:`scripts.demo.build` (the package ``scripts/demo``). The build is deterministic, and
``tests/test_demo.py`` checks that the committed ``data/demo`` equals a fresh build, so run
this script (and commit its result) after every change to ``scripts/demo/`` or
``annotation/vif/draw.py``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # ``python scripts/make_demo.py``: the checkout's root
    sys.path.insert(0, str(ROOT))

from scripts.demo import build  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "data" / "demo",
        help="folder to (re)create (default: data/demo of the repository)",
    )
    args = parser.parse_args(argv)
    out: Path = args.out
    if out.exists():
        if not out.is_dir():
            parser.error(f"{out} exists and is not a folder")
        shutil.rmtree(out)
    build(out)
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    files = sum(1 for p in out.rglob("*") if p.is_file())
    print(f"wrote {out} ({files} files, {total / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
