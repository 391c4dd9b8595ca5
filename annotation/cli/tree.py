"""``judge-audit tree``: the diagnostic tree of a TRACE-Bench formula (Appendix C.2).

    judge-audit tree FORMULA [--json] [--ascii]
    judge-audit tree --db DB --task T --out DIR [--json] [--ascii]

The first form prints the tree of FORMULA (indented text, or with ``--json`` a JSON list of
nodes ``{id, parent, depth, rule, rule_name, removed, formula, downgrades}``). The second
reads the task's ``meta.formula`` and its checklist from the project (read only), prints
the tree the same way and writes ``DIR/nodes.jsonl`` and ``DIR/nodes.csv``: per node its
id, parent, rule, removed components, formula, slot count, text downgrades and the
questions it keeps (ids and targets, Appendix C.2 node-to-question mapping). It also
writes what to send a generator for each node (:mod:`annotation.trace.prompts`):
``DIR/nodes/<node>/prompt.txt`` and the reference images the node keeps, copied as
``DIR/nodes/<node>/Image_<k>.<ext>`` in the order the generator sees them, and one
manifest ``DIR/prompts.jsonl`` (node, prompt, prompt_source, images with the files and
the task image each came from, downgrades, ...).

Exit codes: 0 success; 1 refused input (no such database or task, a task without a
formula, a malformed stored formula); 2 usage error, including a malformed FORMULA (the
message gives the position and a caret under it).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from annotation.results.export import write_csv
from annotation.store.media import EXTENSIONS
from annotation.store.pg import database_exists
from annotation.trace.decompose import (
    RULES,
    DiagnosticNode,
    decompose,
    node_record,
    retained_questions,
)
from annotation.trace.formula import FormulaError, slot_count, to_text
from annotation.trace.prompts import DRAFT, FROM_META, NodePrompt, node_prompts
from annotation.trace.trees import load_tree

__all__ = ["add_parser", "cmd_tree", "format_error", "format_tree", "node_rows",
           "prompt_record", "write_node_prompts"]


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
    p.add_argument("--out", help="folder for nodes.jsonl, nodes.csv, prompts.jsonl and "
                   "nodes/<node>/ (prompt.txt and images; with --db)")
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

    if not database_exists(args.db, file=True):
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


def prompt_record(p: NodePrompt, images: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``prompts.jsonl`` line of one node: node, parent, rule, formula, prompt,
    prompt_source, prompt_file, images (``file``, ``image``: the task image index,
    ``label``, ``terms``), images_source, downgrades, downgrade_terms, removed."""
    folder = f"nodes/{p.node}"
    files = []
    for k, i in enumerate(p.images):
        ext = EXTENSIONS.get(str(images[i]["format"]), "bin")
        files.append({"file": f"{folder}/Image_{k}.{ext}", "image": i,
                      "label": images[i]["label"], "terms": list(p.terms.get(i, ()))})
    return {"node": p.node, "parent": p.parent, "rule": p.rule, "formula": p.formula,
            "prompt": p.prompt, "prompt_source": p.prompt_source,
            "prompt_file": f"{folder}/prompt.txt", "images": files,
            "images_source": p.images_source, "downgrades": list(p.downgrades),
            "downgrade_terms": list(p.downgrade_terms), "removed": list(p.removed)}


def write_node_prompts(db: str, task_id: str, out: Path) -> list[Path]:
    """Write ``prompts.jsonl`` and ``nodes/<node>/`` (prompt.txt, Image_<k>.<ext>) for the
    task's tree (the project is only read). Raises ValueError for a malformed
    ``meta.references`` and :class:`FormulaError` for a malformed tree."""
    from annotation.store import Store
    from annotation.store import project as project_rows

    with Store.open(db, migrate=False) as store:
        task = project_rows.task(store, task_id)
        tree = load_tree(store, task_id)
        images = project_rows.task_image_files(store, task_id)
        sources = [store.media_path(str(im["sha256"]), str(im["format"])) for im in images]
    assert task is not None and tree is not None  # _from_db found its formula
    prompts = node_prompts(tree, task.instruction, task.meta, images)
    records = [prompt_record(p, images) for p in prompts]
    needed = {entry["image"] for record in records for entry in record["images"]}
    for i in sorted(needed):
        if not sources[i].is_file():
            raise ValueError(f"images[{i}]: the stored file {sources[i]} is missing "
                             "(judge-audit check --db DB lists what is lost)")
    for p, record in zip(prompts, records, strict=True):
        folder = out / "nodes" / p.node
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "prompt.txt").write_text(p.prompt.rstrip("\n") + "\n", encoding="utf-8")
        for entry in record["images"]:
            shutil.copyfile(sources[entry["image"]], out / entry["file"])
    manifest = out / "prompts.jsonl"
    manifest.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                        encoding="utf-8")
    drafts = [p.node for p in prompts if p.prompt_source == DRAFT]
    if drafts:
        print(f"{len(drafts)} node prompt(s) are drafts to rewrite before generating "
              f"({', '.join(drafts)}): give meta.tree_nodes[].prompt to use your own",
              file=sys.stderr)
    if prompts and prompts[0].images_source != FROM_META:
        print(f"task {task_id!r} has no meta.references: images matched to terms by "
              f"{prompts[0].images_source}", file=sys.stderr)
    return [manifest, out / "nodes"]


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
        try:  # first: a refused meta.references writes nothing
            prompts = write_node_prompts(args.db, args.task, Path(args.out))
        except (ValueError, FormulaError) as exc:
            print(f"judge-audit tree: task {args.task!r}: {exc}", file=sys.stderr)
            return 1
        written = _write(node_rows(nodes, questions, ascii=args.ascii), Path(args.out))
        written += prompts
        print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 0
