"""Automatic failure localization on TRACE-Bench diagnostic trees.

Follows "TRACE-Bench: Decomposing and Diagnosing Multi-Reference Image Generation" (Wang
et al. 2026), Sec. 4.4 "Aggregate Diagnostic Patterns" (Table 3) and Appendix C.3
(Figure 11):

* An **operator instance** is one ``(operator, target)`` of the checklist (the grouping of
  :mod:`annotation.results.operators`). At a node it **passes** when every applicable question
  of the instance that the node retains passes (:func:`instance_results`).
* For each instance that fails at the root, every root-to-leaf path is walked and the first
  node where the instance passes is found; the failure is attributed to the component
  removed by the step into that node: **Global Reference** (Rule 1), **Joint Composition**
  (Rule 2), **Relation / Attribute** (Rules 3 and 4). When paths disagree, the shallowest
  such node wins (ties: tree order). An instance that passes at the root is a **Stable
  Success**; one that passes nowhere is a **Persistent Failure** (Sec. 4.4: outcomes
  "unchanged throughout the tree"). A root success that fails deeper is still a Stable
  Success; the ``unstable`` column flags it (the unstable cases of Appendix C.4).
* **Relative depth** (C.3): on each root-to-leaf path a node's depth divided by the
  leaf's depth (0 = root, 1 = leaf); an instance's is the smallest over the paths of the
  relative depth of its first passing node (0 for a root success, NaN when it never
  passes). The **cumulative pass rate** at depth ``d`` is the share of all instances whose
  relative depth is at most ``d``: persistent failures stay in the denominator, so the
  curves end below 100 % (Figure 11).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from annotation.trace.decompose import DiagnosticNode, normalize_operator, paths
from annotation.trace.formula import to_text

__all__ = [
    "CATEGORIES", "GLOBAL_REFERENCE", "JOINT_COMPOSITION", "OPERATORS", "OVERALL",
    "PERSISTENT_FAILURE", "RELATION_ATTRIBUTE", "RULE_CATEGORY", "STABLE_SUCCESS",
    "cumulative_pass_rate", "distribution", "distribution_table", "instance_results",
    "localize",
]

STABLE_SUCCESS = "Stable Success"
PERSISTENT_FAILURE = "Persistent Failure"
GLOBAL_REFERENCE = "Global Reference"
JOINT_COMPOSITION = "Joint Composition"
RELATION_ATTRIBUTE = "Relation / Attribute"
CATEGORIES = (STABLE_SUCCESS, PERSISTENT_FAILURE, GLOBAL_REFERENCE, JOINT_COMPOSITION,
              RELATION_ATTRIBUTE)  # the row order of Table 3
RULE_CATEGORY = {1: GLOBAL_REFERENCE, 2: JOINT_COMPOSITION, 3: RELATION_ATTRIBUTE,
                 4: RELATION_ATTRIBUTE}
OPERATORS = ("f", "g", "⊕", "C")  # the column order of Table 3
OVERALL = "Overall"

COLUMNS = ["instance", "operator", "target", "category", "root_passed", "first_pass",
           "rule", "removed", "path", "depth", "rel_depth", "unstable"]


def instance_results(retained: Mapping[str, Iterable[str]], question_passed: pd.DataFrame,
                     questions: pd.DataFrame) -> pd.DataFrame:
    """Per (node, operator, target): ``passed`` when all its decided, retained questions
    pass (Sec. 3.5, C.2).

    ``retained``: node id -> question ids the node keeps
    (:func:`annotation.trace.decompose.retained_questions`). ``question_passed``: node,
    question_id, passed (bool; NaN = no decision, left out). ``questions``: question_id,
    operator, target.
    """
    keep = pd.DataFrame([(node, qid) for node, qids in retained.items() for qid in qids],
                        columns=["node", "question_id"])
    answers = question_passed.dropna(subset=["passed"])
    merged = answers.merge(keep, on=["node", "question_id"]).merge(
        questions[["question_id", "operator", "target"]], on="question_id")
    if merged.empty:
        return pd.DataFrame(columns=["node", "operator", "target", "passed"])
    merged["operator"] = merged["operator"].map(normalize_operator)
    merged["target"] = merged["target"].fillna("")
    merged["passed"] = merged["passed"].astype(bool)
    out = merged.groupby(["node", "operator", "target"], sort=False).passed.all()
    return out.reset_index()


def localize(nodes: Sequence[DiagnosticNode], results: pd.DataFrame) -> pd.DataFrame:
    """One row per operator instance evaluated at the root: its Table 3 category.

    ``results``: node, operator, target, passed (one row per instance evaluated at a
    node; e.g. from :func:`instance_results`). Columns: instance, operator, target,
    category, root_passed, first_pass (node id), rule, removed (``; ``-separated), path
    (``N0 > N1``),
    depth, rel_depth, unstable.
    """
    by_id = {n.id: n for n in nodes}
    order = {n.id: i for i, n in enumerate(nodes)}
    roots = [n.id for n in nodes if n.parent is None]
    if len(roots) != 1:
        raise ValueError(f"a diagnostic tree has one root, not {len(roots)}")
    root = roots[0]
    all_paths = paths(nodes)
    table = results.assign(operator=results["operator"].map(normalize_operator),
                           target=results["target"].fillna(""))
    outcome: dict[tuple[str, str], dict[str, bool]] = {}
    for node, op, target, passed in table[["node", "operator", "target", "passed"]].itertuples(
            index=False):
        outcome.setdefault((op, target), {})[node] = bool(passed)
    rows = []
    for (op, target), at in outcome.items():
        if root not in at:
            continue
        row = {"instance": target or op, "operator": op, "target": target,
               "root_passed": at[root], "first_pass": None, "rule": pd.NA, "removed": "",
               "path": "", "depth": np.nan, "rel_depth": np.nan,
               "unstable": at[root] and not all(at.values())}
        if at[root]:
            row.update(category=STABLE_SUCCESS, first_pass=root, path=root, depth=0,
                       rel_depth=0.0)
            rows.append(row)
            continue
        firsts: list[tuple[int, int, str, tuple[str, ...]]] = []
        rel = np.inf
        for path in all_paths:
            for k, node_id in enumerate(path[1:], start=1):
                if at.get(node_id):
                    firsts.append((k, order[node_id], node_id, path[:k + 1]))
                    rel = min(rel, k / (len(path) - 1))
                    break
        if not firsts:
            row["category"] = PERSISTENT_FAILURE
            rows.append(row)
            continue
        depth, _order, node_id, path = min(firsts)
        node = by_id[node_id]
        rule = _rule(node)
        row.update(category=RULE_CATEGORY[rule], first_pass=node_id, rule=rule,
                   removed="; ".join(to_text(r) for r in node.removed),
                   path=" > ".join(path), depth=depth, rel_depth=float(rel))
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def _rule(node: DiagnosticNode) -> int:
    try:
        rule = int(node.rule)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        rule = 0
    if rule not in RULE_CATEGORY:
        raise ValueError(f"tree node {node.id}: rule {node.rule!r} is not one of 1-4 "
                         "(Appendix C.2), so a failure that first passes there has no source")
    return rule


def distribution(localized: pd.DataFrame) -> pd.DataFrame:
    """Table 3 in long form: operator (f, g, ⊕, C, then Overall), category, n, percent
    (of that operator's instances; every category listed, zeros included)."""
    rows = []
    groups = [(op, localized[localized.operator == op]) for op in OPERATORS]
    others = sorted(set(localized.operator) - set(OPERATORS))
    groups += [(op, localized[localized.operator == op]) for op in others]
    groups.append((OVERALL, localized))
    for op, part in groups:
        if op != OVERALL and part.empty:
            continue
        counts = part.category.value_counts()
        total = len(part)
        for category in CATEGORIES:
            n = int(counts.get(category, 0))
            rows.append({"operator": op, "category": category, "n": n,
                         "percent": 100.0 * n / total if total else np.nan})
    return pd.DataFrame(rows, columns=["operator", "category", "n", "percent"])


def distribution_table(localized: pd.DataFrame) -> pd.DataFrame:
    """Table 3 as printed: one row per outcome, one column per operator and Overall (%)."""
    long = distribution(localized)
    wide = long.pivot(index="category", columns="operator", values="percent")
    columns = [c for c in (*OPERATORS, *sorted(set(long.operator) - {*OPERATORS, OVERALL}),
                           OVERALL) if c in wide.columns]
    return wide.reindex(index=list(CATEGORIES), columns=columns).rename_axis(
        index="Outcome / Source", columns=None)


def cumulative_pass_rate(localized: pd.DataFrame,
                         depths: Sequence[float] | None = None) -> pd.DataFrame:
    """Figure 11: per operator (and Overall), the share of instances already passing at
    relative depth ``<= d``. ``depths``: default the observed relative depths with 0 and 1.

    Columns: operator, rel_depth, pass_rate, n (instances of that operator).
    """
    if depths is None:
        seen = localized.rel_depth.dropna().tolist()
        depths = sorted({0.0, 1.0, *seen})
    rows = []
    ops = [op for op in OPERATORS if (localized.operator == op).any()]
    ops += sorted(set(localized.operator) - set(OPERATORS))
    for op in [*ops, OVERALL]:
        part = localized if op == OVERALL else localized[localized.operator == op]
        n = len(part)
        rel = part.rel_depth.to_numpy(dtype=float)
        for d in depths:
            passed = int(np.sum(rel <= d + 1e-12))  # NaN (persistent) never counts
            rows.append({"operator": op, "rel_depth": float(d),
                         "pass_rate": passed / n if n else np.nan, "n": n})
    return pd.DataFrame(rows, columns=["operator", "rel_depth", "pass_rate", "n"])
