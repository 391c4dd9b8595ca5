"""``judge-audit validation-set``: draw TIIF-Bench's balanced judge-validation set.

    judge-audit validation-set --db DB [--images 300] [--questions 560] [--seed 0]
                               [--balance expected|human] [--out FILE.csv]

Draws ``--questions`` checklist questions over exactly ``--images`` outputs, half with
expected answer "yes" and half "no" ("TIIF-Bench: How Does Your T2I Model Follow Your
Instructions?", Key Design 4: 560 questions over 300 images, 280 / 280), makes those
outputs the annotation sample (as *Assignment & progress* does; annotators answer their
whole checklists) and keeps the questions: ``judge-audit report`` then writes
``validation_set.csv`` (each judge's accuracy and balanced accuracy on the set against
the humans). ``--out`` also writes the set (output_id, question_id, pass_answer, and
with ``--balance human`` the human majority it was balanced on).

``--balance human`` balances on the majority of the human answers already given instead
of the expected answers: for a benchmark whose expected answers are nearly all "yes"
(TIIF-Bench's public testmini files expect "no" for 34 of 1,446 questions), annotate a
larger pool first, then draw the balanced set from it.

Exit codes: 0 drawn; 1 no such database, or the project cannot give such a set (the
message says what is short).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from annotation.results.export import write_csv
from annotation.store import Store
from annotation.work.validation_set import draw_validation_set


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``validation-set`` on the subcommands of the judge-audit parser."""
    p = sub.add_parser("validation-set", help="draw the balanced judge-validation set "
                                              "(TIIF-Bench: 560 questions over 300 images)")
    p.add_argument("--db", required=True)
    p.add_argument("--images", type=int, default=300, help="outputs in the set (300)")
    p.add_argument("--questions", type=int, default=560,
                   help="questions, half 'yes' and half 'no' by expected answer (560)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--balance", choices=("expected", "human"), default="expected",
                   help="balance on the expected answers (default, before annotation) or on "
                        "the human majority of answers already given (a second stage)")
    p.add_argument("--out", help="also write the set to this CSV file")
    p.set_defaults(func=cmd_validation_set)
    return p


def cmd_validation_set(args: argparse.Namespace) -> int:
    from annotation.cli.main import _cli_actor

    if not Path(args.db).exists():
        print(f"{args.db}: no such database", file=sys.stderr)
        return 1
    with Store.open(args.db) as store:
        try:
            table = draw_validation_set(store, _cli_actor(), images=args.images,
                                        questions=args.questions, seed=args.seed,
                                        balance=args.balance)
        except ValueError as exc:
            print(f"validation-set: {exc}", file=sys.stderr)
            return 1
    if args.out:
        write_csv(table, args.out)
    on = "pass_answer" if args.balance == "expected" else "human_majority"
    counts = table[on].value_counts()
    print(f"validation set: {len(table)} questions over {table.output_id.nunique()} images "
          f"({counts.get('yes', 0)} 'yes' / {counts.get('no', 0)} 'no' by "
          f"{'expected answer' if on == 'pass_answer' else 'human majority'}); those images "
          "are now the annotation sample")
    return 0
