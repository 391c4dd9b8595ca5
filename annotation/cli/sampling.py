"""``judge-audit sample`` and ``judge-audit validation-set``: which outputs humans annotate.

    judge-audit sample --db DB --design all|uniform|stratified|paired|balanced
                       [--size N] [--seed S] [--by KEY ...] [--per-stratum N]
                       [--generators A,B] [--questions Q] [--balance expected|human|judge:NAME]
                       [--disagreement-first on|off]
    judge-audit validation-set --db DB [--images 300] [--questions 560] [--seed 0]
                               [--balance expected|human|judge:NAME] [--out FILE.csv]

``sample`` draws a sampling design (:mod:`annotation.work.sampling`: uniform, stratified
by any ``--by`` key, paired tasks across generators, balanced questions), makes it the
annotation sample and records it (seed, parameters) in the history; the report shows
which design its numbers come from. ``--disagreement-first on`` makes the router offer
outputs whose judges disagree first (a setting; the annotated items are then not a
uniform sample until the sample is complete, and the report says so).

``validation-set`` draws ``--questions`` checklist questions over exactly ``--images``
outputs, half with answer "yes" and half "no" ("TIIF-Bench: How Does Your T2I Model
Follow Your Instructions?", Key Design 4: 560 questions over 300 images, 280 / 280),
makes those outputs the annotation sample (annotators answer their whole checklists)
and keeps the questions: ``judge-audit report`` then writes ``validation_set.csv`` (each
judge's accuracy and balanced accuracy on the set against the humans). ``--out`` also
writes the set (output_id, question_id, pass_answer, and the answer it was balanced on).

``--balance`` balances on the expected answers (default, before annotation), on a
judge's answers (``judge:NAME``) or on the majority of the human answers already given
(``human``): for a benchmark whose expected answers are nearly all "yes" (TIIF-Bench's
public testmini files expect "no" for 34 of 1,446 questions), annotate a larger pool
first, then draw the balanced set from it.

Exit codes: 0 drawn; 1 no such database, or the project cannot give such a sample (the
message says what to change).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from annotation.results.export import write_csv
from annotation.store import Store
from annotation.store.pg import database_exists
from annotation.work import sampling, workflow
from annotation.work.validation_set import balance_column, draw_validation_set


def add_parsers(sub: Any) -> None:
    """Register ``sample`` and ``validation-set`` on the subcommands of the judge-audit
    parser."""
    p = sub.add_parser("sample", help="draw a sampling design (uniform, stratified, paired, "
                                      "balanced) and make it the annotation sample")
    p.add_argument("--db", required=True)
    p.add_argument("--design", required=True, choices=sampling.DESIGNS)
    p.add_argument("--size", type=int, help="outputs (paired: tasks) to draw")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--by", action="append", metavar="KEY",
                   help="stratified: the strata (default generator; any key of the report's "
                        "--by); repeat for their combinations")
    p.add_argument("--per-stratum", type=int, help="stratified: this many from each stratum "
                                                    "instead of --size in proportion")
    p.add_argument("--generators", help="paired: the generators, comma-separated (default all)")
    p.add_argument("--questions", type=int, help="balanced: questions (half yes, half no)")
    p.add_argument("--balance", default="expected", metavar="expected|human|judge:NAME",
                   help="balanced: what the halves are of (default: expected answers)")
    p.add_argument("--disagreement-first", choices=("on", "off"),
                   help="offer outputs whose judges disagree first (a setting)")
    p.set_defaults(func=cmd_sample)
    p = sub.add_parser("validation-set", help="draw the balanced judge-validation set "
                                              "(TIIF-Bench: 560 questions over 300 images)")
    p.add_argument("--db", required=True)
    p.add_argument("--images", type=int, default=300, help="outputs in the set (300)")
    p.add_argument("--questions", type=int, default=560,
                   help="questions, half 'yes' and half 'no' by expected answer (560)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--balance", default="expected", metavar="expected|human|judge:NAME",
                   help="balance on the expected answers (default, before annotation), on a "
                        "judge's answers, or on the human majority of answers already given")
    p.add_argument("--out", help="also write the set to this CSV file")
    p.set_defaults(func=cmd_validation_set)


def cmd_sample(args: argparse.Namespace) -> int:
    from annotation.cli.main import cli_actor

    if not database_exists(args.db):
        print(f"{args.db}: no such database", file=sys.stderr)
        return 1
    actor = cli_actor()
    with Store.open(args.db) as store:
        try:
            chosen = sampling.draw(
                store, actor, args.design, size=args.size, seed=args.seed,
                by=tuple(args.by or ()), per_stratum=args.per_stratum,
                generators=[g.strip() for g in args.generators.split(",") if g.strip()]
                if args.generators else None,
                questions=args.questions, balance=args.balance)
            if args.disagreement_first:
                workflow.set_settings(store, actor,
                                      disagreement_first=args.disagreement_first == "on")
        except (ValueError, KeyError) as exc:
            print(f"sample: {exc.args[0] if exc.args else exc}", file=sys.stderr)
            return 1
    what = "no restriction: every annotatable output" if args.design == "all" else (
        f"{len(chosen)} outputs")
    print(f"sample ({args.design}, seed {args.seed}): {what}"
          + (f"; disagreement first {args.disagreement_first}" if args.disagreement_first
             else ""))
    return 0


def cmd_validation_set(args: argparse.Namespace) -> int:
    from annotation.cli.main import cli_actor

    if not database_exists(args.db):
        print(f"{args.db}: no such database", file=sys.stderr)
        return 1
    with Store.open(args.db) as store:
        try:
            table = draw_validation_set(store, cli_actor(), images=args.images,
                                        questions=args.questions, seed=args.seed,
                                        balance=args.balance)
        except ValueError as exc:
            print(f"validation-set: {exc}", file=sys.stderr)
            return 1
    if args.out:
        write_csv(table, args.out)
    on = balance_column(args.balance)
    counts = table[on].value_counts()
    print(f"validation set: {len(table)} questions over {table.output_id.nunique()} images "
          f"({counts.get('yes', 0)} 'yes' / {counts.get('no', 0)} 'no' by "
          f"{on.replace('_', ' ')}); those images are now the annotation sample")
    return 0
