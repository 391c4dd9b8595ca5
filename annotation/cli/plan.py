"""``judge-audit plan``: how many more items a target interval width needs.

    judge-audit plan [--db DB] [--target-width W] [--measure plcc|srcc|agreement|kappa|
                     alpha|leaderboard] [--criterion C] [--judge J] [--assume-r R]
                     [--assume-p P] [--assume-kappa K] [--assume-prevalence Q]
                     [--questions K] [--assume-icc ICC] [--assume-icc-raters ICC]
                     [--assume-sd SD] [--outputs N] [--bootstrap 200] [--out FILE.csv]

From the study in ``--db`` (its current intervals, :mod:`annotation.results.planning`) and
from the stated ``--assume-*`` values (when there is no data yet, or to compare): per
judge, criterion (or generator), the current n and 95% interval width, and the n needed
for ``--target-width`` (``n_needed``, ``n_more``). Formulas and their sources:
:mod:`annotation.stats.planning`.

Exit codes: 0 planned (the table is printed, and written with ``--out``); 1 no such
database; 2 nothing to plan from (no data for the measure and no assumption stated).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pandas as pd

from annotation.results.export import write_csv
from annotation.results.planning import MEASURES, Assumptions, plan_table
from annotation.store import Store
from annotation.store.pg import database_exists

__all__ = ["add_parser", "cmd_plan"]

SHOWN = ["measure", "judge", "criterion", "generator", "basis", "estimate", "n_now",
         "width_now", "annotators_per_item", "n_needed", "n_more", "annotations_needed", "note"]


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``plan`` on the subcommands of the judge-audit parser."""
    p = sub.add_parser("plan", help="items (and annotators per item) needed for a target "
                                    "95%% interval width")
    p.add_argument("--db", help="the study (without: from the --assume-* values only)")
    p.add_argument("--target-width", type=float, default=0.1,
                   help="the 95%% interval's full width (0.1)")
    p.add_argument("--measure", choices=MEASURES, default="plcc")
    p.add_argument("--criterion", help="only this criterion (leaderboard: this measure)")
    p.add_argument("--judge", help="only this judge")
    p.add_argument("--assume-r", type=float, help="plcc/srcc/leaderboard: the judge-human "
                   "correlation (plcc with --assume-icc-raters: with the true score)")
    p.add_argument("--assume-p", type=float, help="agreement: the share of agreeing "
                   "decisions")
    p.add_argument("--assume-kappa", type=float, help="kappa: Cohen's kappa")
    p.add_argument("--assume-prevalence", type=float, help="kappa: the yes rate")
    p.add_argument("--questions", type=float, default=1.0,
                   help="agreement/kappa: decisions (questions) per output (1)")
    p.add_argument("--assume-icc", type=float, default=0.0,
                   help="agreement/kappa: correlation between an output's decisions (0)")
    p.add_argument("--assume-icc-raters", type=float,
                   help="plcc: ICC(A,1) of the annotators (default: reliability.csv's); "
                        "gives a row per number of annotators per output")
    p.add_argument("--assume-sd", type=float, help="leaderboard: sd of the human score")
    p.add_argument("--outputs", type=int, help="leaderboard: outputs per generator")
    p.add_argument("--bootstrap", type=int, default=200,
                   help="resamples of the report intervals planned from (200)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="also write the plan to this CSV file")
    p.set_defaults(func=cmd_plan)
    return p


def cmd_plan(args: argparse.Namespace) -> int:
    assume = Assumptions(r=args.assume_r, p=args.assume_p, kappa=args.assume_kappa,
                         prevalence=args.assume_prevalence, questions=args.questions,
                         icc=args.assume_icc, icc_raters=args.assume_icc_raters,
                         sd=args.assume_sd, outputs=args.outputs)
    study = None
    if args.db:
        if not database_exists(args.db):
            print(f"{args.db}: no such database", file=sys.stderr)
            return 1
        from annotation.results.study import load_study

        with Store.open(args.db) as store:
            study = load_study(store)
    try:
        table = plan_table(study, args.measure, args.target_width, criterion=args.criterion,
                           judge=args.judge, assume=assume, n_boot=args.bootstrap,
                           seed=args.seed)
    except ValueError as exc:
        print(f"plan: {exc}", file=sys.stderr)
        return 2
    if table.empty:
        need = {"plcc": "--assume-r", "srcc": "--assume-r", "agreement": "--assume-p",
                "kappa": "--assume-kappa and --assume-prevalence",
                "alpha": "annotations of a pilot (alpha has no closed form)",
                "leaderboard": "--assume-r, --assume-sd and --outputs"}[args.measure]
        print(f"plan: nothing to plan {args.measure} from: "
              f"{'no data for it in ' + args.db if args.db else 'no --db'}; state {need}",
              file=sys.stderr)
        return 2
    if args.out:
        write_csv(table, args.out)
    shown = table[SHOWN].astype(object)
    shown = shown.where(shown.notna(), "")
    with pd.option_context("display.width", 200, "display.max_columns", 20,
                           "display.max_colwidth", 48):
        print(f"target 95% interval width {args.target_width:g} ({args.measure}):")
        print(shown.to_string(index=False, float_format="{:.3f}".format))
    print("methods (docs/planning.md): " + "; ".join(dict.fromkeys(table.method.dropna())))
    return 0
