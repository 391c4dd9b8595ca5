"""Diagnostic trees in a project: nodes, node outputs, judged passes, automatic localization.

"TRACE-Bench: Decomposing and Diagnosing Multi-Reference Image Generation" (Wang et al.
2026), Sec. 3.5 and Appendix C.2-C.3, decomposes a case's formula into a tree of simpler
cases; each node is generated and judged again with the checklist
questions it retains. In a judge-audit project:

* a task carries ``meta.formula`` and, optionally, ``meta.tree_nodes``: a list of
  ``{id, parent, rule, removed, formula?, prompt?, questions?, downgrades?}``
  (``questions``: the retained question ids; missing fields are computed from the formula
  when the node id is one of its computed tree). Without ``tree_nodes`` the tree is
  computed from the formula (:func:`annotation.trace.decompose.decompose`) and the questions
  mapped by
  :func:`annotation.trace.decompose.retained_questions`;
* a node's generated image is an ordinary output of the task whose ``meta.node`` is the
  node id (one per node and generator); the root's output has no ``meta.node`` (or
  ``"N0"``). Judges' answers on node outputs import like any judgment.

A *tree unit* is a root output (task x generator) with at least one node output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from annotation.store import Store
from annotation.store import project as project_rows
from annotation.trace.decompose import DiagnosticNode, decompose, node_record, retained_questions
from annotation.trace.formula import FormulaError, parse, parse_target
from annotation.trace.localize import instance_results, localize
from annotation.trace.nodes import ROOT, output_node


@dataclass(frozen=True)
class TreeNode:
    """One node as the review page shows it."""

    id: str
    parent: str | None
    depth: int
    rule: int | None
    removed: tuple[str, ...]
    formula: str
    prompt: str | None
    questions: tuple[str, ...]
    downgrades: tuple[str, ...] = ()


@dataclass(frozen=True)
class Tree:
    task_id: str
    formula: str
    nodes: tuple[TreeNode, ...]
    diagnostic: tuple[DiagnosticNode, ...] = field(default=(), repr=False)

    def node(self, node_id: str) -> TreeNode:
        return next(n for n in self.nodes if n.id == node_id)

    def retained(self) -> dict[str, list[str]]:
        return {n.id: list(n.questions) for n in self.nodes}


def _depths(entries: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    parent = {str(e["id"]): e.get("parent") for e in entries}
    depth: dict[str, int] = {}
    for node in parent:
        d, cur, seen = 0, node, set()
        while parent.get(cur) is not None and cur not in seen:
            seen.add(cur)
            cur = str(parent[cur])
            d += 1
        depth[node] = d
    return depth


def _as_list(v: Any) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, (list, tuple)):
        return tuple(str(x) for x in v)
    return (str(v),)


def tree_from_meta(task_id: str, meta: Mapping[str, Any],
                   questions: Sequence[tuple[str, str | None, str | None]]) -> Tree | None:
    """The task's tree from its meta (``tree_nodes`` or ``formula``); None without either.

    Raises :class:`annotation.trace.formula.FormulaError` for a malformed formula.
    """
    formula = meta.get("formula")
    entries = meta.get("tree_nodes")
    if isinstance(entries, list) and entries:
        depth = _depths(entries)
        computed: dict[str, DiagnosticNode] = {}
        if isinstance(formula, str):
            try:
                computed = {n.id: n for n in decompose(formula)}
            except FormulaError:
                computed = {}
        nodes = []
        diagnostic = []
        for e in entries:
            nid = str(e["id"])
            node_formula = e.get("formula") or (
                node_record(computed[nid])["formula"] if nid in computed else "")
            qids = e.get("questions")
            if qids is None and nid in computed:
                qids = retained_questions(computed[nid], questions)
            downgrades = e.get("downgrades")
            if downgrades is None and nid in computed:
                downgrades = node_record(computed[nid])["downgrades"]
            nodes.append(TreeNode(
                nid, None if e.get("parent") is None else str(e["parent"]), depth[nid],
                e.get("rule"), _as_list(e.get("removed")), str(node_formula),
                e.get("prompt"), _as_list(qids), _as_list(downgrades)))
            if _parses(node_formula):
                expr = parse(node_formula)
            elif nid in computed:
                expr = computed[nid].formula
            else:
                raise FormulaError(0, ("a formula for tree node " + nid,), str(node_formula))
            diagnostic.append(DiagnosticNode(
                nid, nodes[-1].parent, depth[nid], e.get("rule"),
                tuple(_target(r) for r in _as_list(e.get("removed")) if _target(r)), expr))
        return Tree(task_id, str(formula or nodes[0].formula), tuple(nodes), tuple(diagnostic))
    if not isinstance(formula, str) or not formula.strip():
        return None
    computed_nodes = decompose(formula)
    nodes = []
    for n in computed_nodes:
        rec = node_record(n)
        nodes.append(TreeNode(n.id, n.parent, n.depth, n.rule, tuple(rec["removed"]),
                              rec["formula"], None, tuple(retained_questions(n, questions)),
                              tuple(rec["downgrades"])))
    return Tree(task_id, formula, tuple(nodes), computed_nodes)


def _target(text: str) -> Any:
    try:
        return parse_target(text)
    except FormulaError:
        return None


def _parses(text: Any) -> bool:
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        parse(text)
    except FormulaError:
        return False
    return True


def task_questions(store: Store, task_id: str) -> pd.DataFrame:
    """The questions of the task's checklist, in order: question_id, text, operator,
    target, pass_answer."""
    return project_rows.task_questions_df(store, task_id)


def load_tree(store: Store, task_id: str) -> Tree | None:
    task = project_rows.task(store, task_id)
    if task is None:
        raise KeyError(task_id)
    q = task_questions(store, task_id)
    return tree_from_meta(task_id, task.meta,
                          list(q[["question_id", "operator", "target"]].itertuples(
                              index=False, name=None)))


def _outputs(store: Store) -> pd.DataFrame:
    """Outputs with their ``node``; outputs of a VIF-Bench text variant are no part of a
    tree (:mod:`annotation.vif.variants`)."""
    from annotation.vif.variants import output_variant

    df = store.outputs_df()[["output_id", "task_id", "generator", "sha256", "meta"]]
    df = df[df["meta"].map(output_variant).isna()].copy()
    df["node"] = [output_node(m) for m in df["meta"]]
    return df.drop(columns="meta")


def tree_units(store: Store) -> list[str]:
    """Root outputs (task x generator) that have node outputs, in import order."""
    df = _outputs(store)
    with_nodes = set(map(tuple, df[df.node != ROOT][["task_id", "generator"]].to_numpy()))
    roots = df[(df.node == ROOT) & df.sha256.notna()]
    return [o for o, t, g in roots[["output_id", "task_id", "generator"]].itertuples(
        index=False) if (t, g) in with_nodes]


def node_output_ids(store: Store) -> set[str]:
    """Outputs that are diagnostic-tree nodes (not the root): not annotated as items."""
    df = _outputs(store)
    return set(df[df.node != ROOT].output_id)


@dataclass(frozen=True)
class TreeItem:
    """What the review page shows of one root output (no generator name)."""

    root_output_id: str
    task_id: str
    instruction: str
    tree: Tree
    node_images: dict[str, str | None]  # node id -> sha256 (None: image not at hand)


def load_tree_item(store: Store, root_output_id: str) -> TreeItem:
    df = _outputs(store)
    root = df[df.output_id == root_output_id]
    if root.empty:
        raise KeyError(root_output_id)
    task_id, generator = root.iloc[0].task_id, root.iloc[0].generator
    tree = load_tree(store, task_id)
    if tree is None:
        raise ValueError(f"task {task_id} has no formula or tree nodes")
    mine = df[(df.task_id == task_id) & (df.generator == generator)]
    images = {n: (None if pd.isna(s) else s) for n, s in zip(mine.node, mine.sha256,
                                                              strict=True)}
    task = project_rows.task(store, task_id)
    assert task is not None  # load_tree found it
    return TreeItem(root_output_id, task_id, task.instruction, tree,
                    {n.id: images.get(n.id) for n in tree.nodes})


def vlm_judges(store: Store) -> list[str]:
    """The project's VLM judges, by name (the candidates for the tree pages' judge)."""
    judges = store.judges_df()
    return sorted(judges[judges.kind == "vlm"]["name"])


def default_judge(store: Store) -> str | None:
    """The VLM judge with the most answers on node outputs (ties: by name)."""
    nodes = node_output_ids(store)
    if not nodes:
        return None
    df = store.judgments_df()
    df = df[df.question_id.notna()][["judge", "output_id"]]
    df = df[df.output_id.isin(nodes)]
    if df.empty:
        return None
    counts = df.groupby("judge").size().reset_index(name="n")
    return str(counts.sort_values(["n", "judge"], ascending=[False, True]).iloc[0].judge)


def question_passes(store: Store, item: TreeItem, judge: str) -> pd.DataFrame:
    """Per node and question: the judge's answer and ``passed`` (answer == pass answer)."""
    df = _outputs(store)
    generator = df[df.output_id == item.root_output_id].iloc[0].generator
    mine = df[(df.task_id == item.task_id) & (df.generator == generator)]
    j = project_rows.judge_checklist_answers_df(store, judge)
    j = j.merge(mine[["output_id", "node"]], on="output_id")
    j["passed"] = j["answer"] == j["pass_answer"]
    return j[["node", "question_id", "answer", "passed"]]


def instance_table(store: Store, item: TreeItem, judge: str) -> pd.DataFrame:
    """Per (node, operator, target): passed (all retained, judged questions pass)."""
    q = task_questions(store, item.task_id)
    return instance_results(item.tree.retained(), question_passes(store, item, judge), q)


def automatic_localization(store: Store, item: TreeItem, judge: str) -> pd.DataFrame:
    """:func:`annotation.trace.localize.localize` on the judge's answers; adds ``key``."""
    table = localize(item.tree.diagnostic, instance_table(store, item, judge))
    table.insert(0, "key", instance_key(table["operator"], table["target"]))
    return table


def instance_key(operator: Any, target: Any) -> Any:
    """The stored name of an operator instance: ``<operator>|<target>``."""
    if isinstance(operator, pd.Series):
        return operator.astype(str) + "|" + target.fillna("").astype(str)
    return f"{operator}|{target or ''}"
