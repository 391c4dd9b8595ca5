"""``judge-audit variants``: VIF-Bench's text-variant tasks as a bundle to generate from.

    judge-audit variants --db DB --level dense|medium|sparse --out DIR [--per-count 50]
                         [--seed S] [--published]

Writes to DIR a bundle (``docs/bundle-format.md``, "VIF-Bench text variants") of the
``level`` variants of the stratified subset of the project's VIF-Bench tasks
(:mod:`annotation.vif.variants`: ``--per-count`` tasks per subject count among the tasks
with a non-layout visual instruction, drawn with ``--seed``; or with ``--published`` the
tasks a VIF-Bench release marks ``in_vi_vs_ti_experiment``), and ``variant_tasks.csv``
listing the chosen tasks (task_id, variant_task_id, variant, subject_count, images,
removed). Reads the database only.

Exit codes: 0 success; 1 refused input (no such database, an ``--out`` that is not a new
or empty folder, no VIF-Bench tasks, a chosen task whose visual instructions have no text:
each named); 2 usage error (an unknown level).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from annotation.results.export import write_csv
from annotation.store import Store
from annotation.store.pg import database_exists
from annotation.vif.variants import PER_COUNT, VariantError, listing, variant_name, variant_project

__all__ = ["add_parser", "cmd_variants"]


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``variants`` on the ``add_subparsers()`` object of the judge-audit parser."""
    p = sub.add_parser("variants", help="VIF-Bench text-variant tasks (VIs replaced by text) "
                                        "as a bundle to generate from",
                       description="Write the text variants (TI Dense / Medium / Sparse) of a "
                                   "stratified subset of the VIF-Bench tasks (VIF-Bench "
                                   "Sec. 4.4, App. C.5).")
    p.add_argument("--db", required=True, help="project database (read only)")
    p.add_argument("--level", required=True, help="dense, medium or sparse")
    p.add_argument("--out", required=True, help="bundle folder to write")
    p.add_argument("--per-count", type=int, default=PER_COUNT, metavar="N",
                   help=f"tasks per subject count (default {PER_COUNT}; all of a smaller "
                        "stratum)")
    p.add_argument("--seed", type=int, default=0, help="same seed, same subset")
    p.add_argument("--published", action="store_true",
                   help="take the release's own subset (tasks marked in_vi_vs_ti_experiment) "
                        "instead of drawing one")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_variants)
    return p


def cmd_variants(args: argparse.Namespace) -> int:
    from annotation.formats.bundle import write_bundle

    try:
        variant_name(args.level)
    except VariantError as exc:
        print(f"judge-audit variants: {exc}", file=sys.stderr)
        return 2
    if not database_exists(args.db):
        print(f"{args.db}: no such database", file=sys.stderr)
        return 1
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        print(f"judge-audit variants: {out} exists and is not an empty folder: give a new "
              "one (writing there would replace its tasks.jsonl and outputs.jsonl)",
              file=sys.stderr)
        return 1
    with Store.open(args.db) as store:
        project = store.read_project()
        try:
            bundle, made = variant_project(project, args.level, per_count=args.per_count,
                                           seed=args.seed, published=args.published)
        except VariantError as exc:
            print(f"judge-audit variants: {exc}", file=sys.stderr)
            return 1
        write_bundle(bundle, out)
    rows = listing(made)
    write_csv(pd.DataFrame(rows, columns=["task_id", "variant_task_id", "variant",
                                          "subject_count", "images", "removed"]),
              out / "variant_tasks.csv")
    if not args.quiet:
        strata = pd.Series([r["subject_count"] for r in rows]).value_counts().sort_index()
        per = ", ".join(f"{n} subject(s): {c}" for n, c in strata.items())
        print(f"wrote {len(rows)} {variant_name(args.level)} variant task(s) to {out} "
              f"({per}); the chosen tasks: {out / 'variant_tasks.csv'}")
    return 0
