"""The recovery commands of ``judge-audit`` (issue #7): audit trail, backup, restore.

    judge-audit history --db DB [--annotator A] [--item I] [--csv FILE]
    judge-audit backup  --db DB --out FILE
    judge-audit restore --from FILE --db DB [--force]

DB is a SQLite file or a ``postgresql://`` URL (FILE is then a ``pg_dump`` archive).

:func:`add_parsers` registers them on the main parser's subcommands
(:func:`annotation.cli.build_parser`). Exit codes: 0 success, 1 refused (nothing
replaced), 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from annotation.store.backup import RecoveryError, backup, restore
from annotation.store.pg import database_exists


def cmd_history(args: argparse.Namespace) -> int:
    """Print (or write as CSV) every change with who and when."""
    from annotation.store import Store
    from annotation.store.history import history

    if not database_exists(args.db, file=True):
        print(f"{args.db}: no such database", file=sys.stderr)
        return 1
    with Store.open(args.db) as store:
        df = history(store, annotator=args.annotator, item=args.item)
    if args.csv:
        from annotation.results.export import write_csv

        write_csv(df, args.csv)  # formula cells neutralized (annotator names, notes, ids)
        if not args.quiet:
            print(f"{len(df):,} events written to {args.csv}")
        return 0
    if df.empty:
        print("no events")
        return 0
    shown = df[["at", "who", "event", "item", "question_id", "criterion", "answer", "score",
                "previous_answer", "previous_score", "subject", "detail"]]
    shown = shown.dropna(axis=1, how="all").astype(object)
    shown = shown.where(shown.notna(), "")
    print(shown.to_string(index=False, max_colwidth=60))
    return 0


def cmd_backup(args: argparse.Namespace) -> int:
    """Back up the database (online, safe while the app writes) and its media folder."""
    try:
        summary = backup(args.db, args.out)
    except RecoveryError as exc:
        print(f"judge-audit backup: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(summary.text())
    if summary.media_missing:
        print(f"judge-audit backup: the database was backed up, but {len(summary.media_missing)}"
              " image files were missing from its media folder", file=sys.stderr)
        return 1
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    """Restore a backup (checked first) as the project database."""
    try:
        summary = restore(args.source, args.db, force=args.force)
    except RecoveryError as exc:
        print(f"judge-audit restore: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(summary.text())
    return 0


def add_parsers(sub: Any) -> None:
    """Register ``history``, ``backup`` and ``restore`` on ``sub`` (the object returned by
    ``ArgumentParser.add_subparsers``)."""
    p = sub.add_parser("history", help="every answer, flag, role change, import and setting "
                                       "change, with who and when")
    p.add_argument("--db", required=True)
    p.add_argument("--annotator", help="only events by or about this annotator")
    p.add_argument("--item", help="only events about this output id")
    p.add_argument("--csv", type=Path, help="write the table to this CSV file")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_history)

    p = sub.add_parser("backup", help="copy the database (while the app runs) and its images")
    p.add_argument("--db", required=True)
    p.add_argument("--out", required=True,
                   help="backup file to write; images go to <its stem>_media/ beside it")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_backup)

    p = sub.add_parser("restore", help="restore a backup (checked first) as the database")
    p.add_argument("--from", dest="source", required=True, metavar="FILE",
                   help="backup file written by 'judge-audit backup'")
    p.add_argument("--db", required=True, help="project database to write")
    p.add_argument("--force", action="store_true", help="replace an existing database")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_restore)
