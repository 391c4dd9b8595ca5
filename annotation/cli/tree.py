"""``judge-audit tree``: the diagnostic tree of a TRACE-Bench formula (Appendix C.2).

    judge-audit tree FORMULA [--json] [--ascii]
    judge-audit tree --db DB --task T --out DIR [--json] [--ascii]

The first form prints the tree of FORMULA (indented text, or with ``--json`` a JSON list of
nodes ``{id, parent, depth, rule, rule_name, removed, formula, downgrades}``). The second
reads the task's ``meta.formula`` and its checklist from the project (read only), prints
the tree the same way and writes ``DIR/nodes.jsonl`` and ``DIR/nodes.csv``: per node its
id, parent, rule, removed components, formula, slot count, text downgrades and the
questions it keeps (ids and targets, Appendix C.2 node-to-question mapping).

Exit codes: 0 success; 1 refused input (no such database or task, a task without a
formula, a malformed stored formula); 2 usage error, including a malformed FORMULA (the
message gives the position and a caret under it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from annotation.results.export import write_csv
from annotation.trace.decompose import (
    RULES,
    DiagnosticNode,
    decompose,
    node_record,
    retained_questions,
)
from annotation.trace.formula import FormulaError, slot_count, to_text

__all__ = ["add_parser", "cmd_tree", "format_error", "format_tree", "node_rows"]


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``tree`` on the ``add_subparsers()`` object of the judge-audit parser."""
    p = sub.add_parser("tree", help="diagnostic tree of a TRACE-Bench formula (Rules 1-4)",
                       description="Decompose a TRACE-Bench formula into its diagnostic tree "
                                   "(TRACE-Bench Appendix C.2).")
    p.add_argument("formula", nargs="?",
                   help="e.g. 'C(C(f1, Te⊕g1)⊕g_rel, f2⊕g2⊕g3)⊕g_global' ((+) for ⊕)")
    p.add_argument("--json", action="store_true", help="a JSON list of nodes")
    p.add_argument("--ascii", action="store_true", help="write (+) for ⊕")
    p.add_argument("--db", help="project database: take the formula of --task")
    p.add_argument("--task", help="task id whose meta.formula is decomposed")
    p.add_argument("--out", help="folder for nodes.jsonl and nodes.csv (with --db)")
    p.set_defaults(func=cmd_tree)
    return p


def format_error(formula: str, error: FormulaError) -> str:
    """The error message and the formula with a caret under the offending position."""
    return f"{error}\n  {formula}\n  {' ' * error.position}^"


def format_tree(nodes: tuple[DiagnosticNode, ...], *, ascii: bool = False) -> str:
    """Indented text, depth first: one line per node, two spaces per level, then the rule
    and what its step removed (Rule 2 and 3: what became text)."""
    kids: dict[str | None, list[DiagnosticNode]] = {}
    for node in nodes:
        kids.setdefault(node.parent, []).append(node)
    lines: list[str] = []

    def visit(node: DiagnosticNode) -> None:
        text = f"{'  ' * node.depth}{node.id}  {to_text(node.formula, ascii)}"
        if node.rule is not None:
            removed = ", ".join(to_text(r, ascii) for r in node.removed)
            what = "as text" if node.rule in (2, 3) else "removed"
            text += f"    [rule {node.rule} {RULES[node.rule]}; {what}: {removed}]"
        lines.append(text)
        for child in kids.get(node.id, []):
            visit(child)

    for root in kids.get(None, []):
        visit(root)
    return "\n".join(lines)


def node_rows(nodes: tuple[DiagnosticNode, ...],
              questions: list[tuple[str, str | None, str | None]], *,
              ascii: bool = False) -> list[dict[str, Any]]:
    """One dict per node: :func:`annotation.trace.decompose.node_record`, slot, the retained
    question ids and their distinct targets."""
    targets = {qid: target or "" for qid, _op, target in questions}
    rows = []
    for node in nodes:
        row = node_record(node, ascii=ascii)
        row["slot"] = slot_count(node.formula)
        kept = retained_questions(node, questions)
        row["question_ids"] = kept
        row["targets"] = list(dict.fromkeys(targets[q] for q in kept))
        rows.append(row)
    return rows


def _cell(value: Any) -> Any:
    """A list as ``a; b``; the CSV writer neutralizes formulas
    (:mod:`annotation.results.export`)."""
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return value


def _write(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "nodes.jsonl"
    jsonl.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                     encoding="utf-8")
    table = write_csv(pd.DataFrame([{k: _cell(v) for k, v in r.items()} for r in rows],
                                   columns=list(rows[0])), out / "nodes.csv")
    return [jsonl, table]


def _from_db(args: argparse.Namespace) -> tuple[str, list[tuple[str, Any, Any]]] | int:
    from annotation.store import Store
    from annotation.store import project as project_rows

    if not Path(args.db).is_file():
        print(f"{args.db}: no such database", file=sys.stderr)
        return 1
    with Store.open(args.db, migrate=False) as store:
        task = project_rows.task(store, args.task)
        if task is None:
            print(f"{args.db}: no task {args.task!r}", file=sys.stderr)
            return 1
        questions = project_rows.checklist_targets(store, task.checklist_id)
    meta = task.meta
    formula = meta.get("formula") if isinstance(meta, dict) else None
    if not isinstance(formula, str) or not formula.strip():
        print(f"task {args.task!r} has no meta.formula", file=sys.stderr)
        return 1
    return formula, list(questions)


def cmd_tree(args: argparse.Namespace) -> int:
    """Print the diagnostic tree; with --db, also write nodes.jsonl and nodes.csv."""
    if args.db is None:
        if args.formula is None or args.task or args.out:
            print("judge-audit tree: give FORMULA, or --db DB --task T --out DIR",
                  file=sys.stderr)
            return 2
        formula, questions, refused = args.formula, None, 2
    else:
        if args.formula is not None or not args.task or not args.out:
            print("judge-audit tree: --db needs --task and --out, and no FORMULA",
                  file=sys.stderr)
            return 2
        loaded = _from_db(args)
        if isinstance(loaded, int):
            return loaded
        (formula, questions), refused = loaded, 1
    try:
        nodes = decompose(formula)
    except FormulaError as exc:
        where = f"task {args.task!r}: " if args.db else ""
        print(f"judge-audit tree: {where}{format_error(formula, exc)}", file=sys.stderr)
        return refused
    if args.json:
        records = (node_rows(nodes, questions, ascii=args.ascii) if questions is not None
                   else [node_record(n, ascii=args.ascii) for n in nodes])
        print(json.dumps(records, ensure_ascii=args.ascii, indent=2))
    else:
        print(format_tree(nodes, ascii=args.ascii))
    if questions is not None:
        written = _write(node_rows(nodes, questions, ascii=args.ascii), Path(args.out))
        print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 0
