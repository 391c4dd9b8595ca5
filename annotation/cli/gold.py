"""``judge-audit gold``: gold items (issue #16, item 2).

    judge-audit gold import --db DB FILE      # .csv or .jsonl, one transaction
    judge-audit gold list --db DB [--history] [--out FILE.csv]
    judge-audit gold reset --db DB --annotator NAME [--note TEXT]

A gold file gives known answers of outputs: a CSV with the header ``output_id,
question_id, criterion, answer, score[, note]`` (one answer per row: a question with
``answer`` yes/no/cant_tell, or a criterion with ``score``), or JSON Lines with the same
fields per line, or grouped per output: ``{"output_id": ..., "answers": {question_id:
answer}, "scores": {criterion: score}}``. Every problem is reported as
``FILE:LINE: field: message`` and nothing is written. ``reset`` admits an annotator who
failed the qualification (audited). See docs/gold.md.

Exit codes: 0 done; 1 no such database, or a file with problems (nothing written).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from annotation.results.export import write_csv
from annotation.store import Store
from annotation.store import gold as gold_rows
from annotation.store.pg import database_exists
from annotation.work import gold


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``gold`` on the subcommands of the judge-audit parser."""
    p = sub.add_parser("gold", help="gold items: import known answers, list them, reset a "
                                    "failed qualification")
    actions = p.add_subparsers(dest="gold_command", required=True)
    g = actions.add_parser("import", help="import gold answers from a .csv or .jsonl file")
    g.add_argument("--db", required=True)
    g.add_argument("file")
    g.set_defaults(func=cmd_import)
    g = actions.add_parser("list", help="the current gold answers (or their history)")
    g.add_argument("--db", required=True)
    g.add_argument("--history", action="store_true",
                   help="every gold row ever written, withdrawn and superseded ones too")
    g.add_argument("--out", help="write the table to this CSV file instead")
    g.set_defaults(func=cmd_list)
    g = actions.add_parser("reset", help="admit an annotator who failed the qualification")
    g.add_argument("--db", required=True)
    g.add_argument("--annotator", required=True)
    g.add_argument("--note")
    g.set_defaults(func=cmd_reset)
    return p


def _missing(db: str) -> bool:
    if not database_exists(db):
        print(f"{db}: no such database", file=sys.stderr)
        return True
    return False


def cmd_import(args: argparse.Namespace) -> int:
    from annotation.cli.main import cli_actor

    if _missing(args.db):
        return 1
    with Store.open(args.db) as store:
        try:
            written = gold.import_file(store, args.file, cli_actor())
        except gold.GoldFileError as exc:
            for problem in exc.problems:
                print(problem, file=sys.stderr)
            print(f"gold import: {len(exc.problems)} problem(s); nothing was written",
                  file=sys.stderr)
            return 1
        items = len(gold_rows.gold_outputs(store))
    print(f"gold import: {written} gold answer(s) written; {items} gold item(s) now")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    if _missing(args.db):
        return 1
    with Store.open(args.db) as store:
        table = gold_rows.gold_df(store, history=args.history)
    if args.out:
        write_csv(table, args.out)
        print(f"{len(table)} row(s) written to {args.out}")
    elif table.empty:
        print("no gold answers")
    else:
        print(table.to_string(index=False))
    return 0


def cmd_reset(args: argparse.Namespace) -> int:
    from annotation.cli.main import cli_actor

    if _missing(args.db):
        return 1
    with Store.open(args.db) as store:
        gold.reset_qualification(store, cli_actor(), args.annotator, args.note)
    print(f"{args.annotator}: qualification reset (admitted to real items)")
    return 0
