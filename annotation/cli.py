"""The ``judge-audit`` command: argument parsing only; the work is done by the library.

    judge-audit import SOURCE --db DB [--format F] [--quiet]
    judge-audit export --db DB --out DIR [--zip]
    judge-audit demo --db DB
    judge-audit serve [--db DB] [--port P]
    judge-audit info --db DB [--json]

Exit codes: 0 success, 1 refused input (nothing written), 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from annotation import project_files
from annotation.importers import FORMATS, import_path
from annotation.records import ImportRefused
from annotation.store import SchemaTooNew, Store


def _progress_stages(quiet: bool):
    """A 3-stage progress bar (read, check, write) on stderr, or nothing with --quiet."""
    if quiet or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=3, desc="import", unit="stage", file=sys.stderr, leave=False)


def cmd_import(args: argparse.Namespace) -> int:
    with Store.open(args.db) as store:
        bar = _progress_stages(args.quiet)
        try:
            options = {k: v for k, v in (("split", args.split), ("images", args.images)) if v}
            summary = import_path(store, Path(args.source), fmt=args.format, user=args.user,
                                  progress=bar.update if bar else None, **options)
        except ImportRefused as exc:
            if bar:
                bar.close()
            print(f"import refused, nothing was written to {args.db}:", file=sys.stderr)
            print(exc.report(), file=sys.stderr)
            if len(exc.problems) >= 20:
                print("(stopped after 20 errors)", file=sys.stderr)
            return 1
        if bar:
            bar.close()
    if not args.quiet:
        print(summary.text())
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    out = Path(args.out)
    with Store.open(args.db) as store:
        project = store.read_project()
    from annotation.bundle import write_bundle

    if args.zip:
        with tempfile.TemporaryDirectory() as tmp:
            counts = write_bundle(project, Path(tmp) / "bundle")
            archive = shutil.make_archive(str(out.with_suffix("")), "zip", Path(tmp) / "bundle")
            target = archive
    else:
        counts = write_bundle(project, out)
        target = str(out)
    if not args.quiet:
        print(f"exported to {target}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    summary = project_files.build_demo_db(Path(args.db))
    if not args.quiet:
        print(summary)
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    if not Path(args.db).exists():
        print(f"{args.db}: no such database", file=sys.stderr)
        return 1
    with Store.open(args.db) as store:
        info = {
            "database": str(Path(args.db).resolve()),
            "schema_version": store.schema_version(),
            "project": store.project_info(),
            "counts": store.counts(),
            "imports": store.import_log().to_dict("records"),
        }
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False, default=str))
        return 0
    project = info["project"]
    print(f"{project.get('name', '(empty project)')} [{project.get('benchmark', '')}]")
    print(f"database {info['database']} (schema v{info['schema_version']})")
    for table, count in info["counts"].items():
        print(f"  {table:<20} {count:>10,}")
    print("imports:")
    for row in info["imports"]:
        counts = ", ".join(f"{k} {v}" for k, v in row["counts"].items() if v)
        print(f"  #{row['import_id']} {row['started_at'][:19]} {row['format']:<10} "
              f"{row['source']}  ({counts}; {len(row['warnings'])} warnings)")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    db = Path(args.db) if args.db else project_files.default_demo_db()
    if not args.db and not db.exists():
        print(f"building the demo project at {db} ...", file=sys.stderr)
        project_files.build_demo_db(db)
    app = project_files.app_path()
    env = dict(os.environ, JUDGE_AUDIT_DB=str(db.resolve()))
    cmd = [sys.executable, "-m", "streamlit", "run", str(app),
           "--server.port", str(args.port), "--server.headless", "true",
           "--browser.gatherUsageStats", "false", "--client.toolbarMode", "minimal"]
    print(f"judge-audit: serving {db} on http://localhost:{args.port}", file=sys.stderr)
    return subprocess.call(cmd, env=env)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="judge-audit",
        description="Audit the VLM judges of image-generation benchmarks against humans.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("import", help="import a bundle, a TIIF-Bench or a VIF-Bench folder")
    p.add_argument("source", help="bundle folder or .zip, TIIF-Bench root, VIF-Bench release")
    p.add_argument("--db", required=True, help="project database (created if missing)")
    p.add_argument("--format", choices=FORMATS, help="skip auto-detection")
    p.add_argument("--user", help="who runs the import (kept in the import log)")
    p.add_argument("--split", choices=("auto", "test", "testmini"),
                   help="TIIF-Bench: which prompts (auto: those the eval results use)")
    p.add_argument("--images", type=Path,
                   help="TIIF-Bench: folder of generated images (default: SOURCE/output)")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("export", help="write the project as a bundle")
    p.add_argument("--db", required=True)
    p.add_argument("--out", required=True, help="bundle folder to write (or .zip with --zip)")
    p.add_argument("--zip", action="store_true", help="write a .zip instead of a folder")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("demo", help="build the demo project database")
    p.add_argument("--db", required=True)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("serve", help="start the app (the demo project without --db)")
    p.add_argument("--db", help="project database (default: the demo project)")
    p.add_argument("--port", type=int, default=8501)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("info", help="counts per table and the import log")
    p.add_argument("--db", required=True)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_info)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except SchemaTooNew as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
