"""``judge-audit adjudicate``: the adjudication queue from the command line.

    judge-audit adjudicate list --db DB [--json]
    judge-audit adjudicate decide --db DB --unit UNIT --decision D --note TEXT [--as NAME]

``list`` prints every disputed decision (:func:`annotation.work.adjudication.disputes`):
its unit (the JSON list ``["<kind>", "<item>", "<target>"]``), whether and how it was
decided, and the decisions it offers. ``decide`` records a decision with its required
note, as the *Adjudicate* page does (append-only; a conflict label through
``conflict_resolutions``); the decision is the CLI user's (``cli:<OS user>``) unless
``--as`` names an adjudicator or admin account. Human answers are never printed: the
page shows them with names hidden as configured.

Exit codes: 0 done; 1 no such database, unknown unit, or a decision the unit does not
offer (the message says what it offers).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from annotation.store import Store
from annotation.store.pg import database_exists
from annotation.work import adjudication


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``adjudicate`` on the subcommands of the judge-audit parser."""
    p = sub.add_parser("adjudicate", help="list the disputed decisions, or decide one")
    actions = p.add_subparsers(dest="adjudicate_command", required=True)
    a = actions.add_parser("list", help="every disputed decision and its state")
    a.add_argument("--db", required=True)
    a.add_argument("--json", action="store_true", help="machine-readable output")
    a = actions.add_parser("decide", help="record a decision with its note")
    a.add_argument("--db", required=True)
    a.add_argument("--unit", required=True, help='as listed: ["kind", "item", "target"]')
    a.add_argument("--decision", required=True)
    a.add_argument("--note", required=True, help="why (kept in the history)")
    a.add_argument("--as", dest="person", help="the account deciding (default: the CLI user)")
    p.set_defaults(func=cmd_adjudicate)
    return p


def cmd_adjudicate(args: argparse.Namespace) -> int:
    from annotation.cli.main import cli_actor

    if not database_exists(args.db):
        print(f"{args.db}: no such database", file=sys.stderr)
        return 1
    with Store.open(args.db) as store:
        if args.adjudicate_command == "list":
            decided = adjudication.current_decisions(store)
            rows: list[dict[str, Any]] = []
            for d in adjudication.disputes(store):
                options = [v for v, _ in adjudication.load_item(store, d.unit).options]
                done = decided.get(d.unit)
                rows.append({"unit": d.unit, "kind": d.kind, "item": d.item,
                             "target": d.target, "options": options,
                             "decision": done[0] if done else None,
                             "decided_by": done[2] if done else None})
            if args.json:
                print(json.dumps(rows, ensure_ascii=False, indent=1))
            else:
                for r in rows:
                    state = (f"decided {r['decision']!r} by {r['decided_by']}" if r["decision"]
                             else "open")
                    print(f"{r['unit']}  {state}  (offers: {', '.join(r['options'])})")
                print(f"{len(rows)} disputed decisions, "
                      f"{sum(1 for r in rows if r['decision'])} decided")
            return 0
        if args.person is not None:
            from annotation.accounts import auth
            from annotation.store.adjudications import ROLES

            account = auth.get_user(store, args.person)
            if account is None or account.role not in ROLES:
                print(f"adjudicate: --as {args.person}: not an account with the role "
                      f"{' or '.join(ROLES)}", file=sys.stderr)
                return 1
        try:
            row = adjudication.decide(store, args.person or cli_actor(), args.unit,
                                      args.decision, args.note, slot=False)
        except (ValueError, KeyError) as exc:
            print(f"adjudicate: {exc.args[0] if exc.args else exc}", file=sys.stderr)
            return 1
    print(f"decided {args.decision!r} on {args.unit} (row {row})")
    return 0
