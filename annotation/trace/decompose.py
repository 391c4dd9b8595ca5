"""TRACE-Bench diagnostic trees: decompose a formula by Rules 1-4, map questions to nodes.

Follows "TRACE-Bench: Decomposing and Diagnosing Multi-Reference Image Generation" (Wang
et al. 2026), Sec. 3.5 "Diagnostic Tree Analysis" and Appendix C.2 "Complete Diagnostic
Tree Rules". From the root formula ``N0``:

* **Rule 1, global-reference stripping**: the global terms are removed one by one.
  A global term is an attribute bound to a scene (``C(...)⊕g_style``, ``⊕g_layout``,
  ``⊕g_bg``: every ``g`` on a composition except a relation ``g_rel``), or any ``g_global``.
  One child per step; the rightmost (outermost, last applied) term goes first.
* **Rule 3, relation simplification** (before the branches are separated, C.2): a
  referenced relation ``g_rel`` on a composition becomes the text relation ``T_rel``.
* **Rule 2, composition flattening**: a composition with two or more reference-conditioned
  branches gives one child per such branch; the child's formula is that branch, the other
  branches are downgraded to text (``downgrades``). A composition with a single
  reference-conditioned branch (the cacao-pod case ``C(f1⊕g1)``, Table 6) is not flattened:
  the scene is kept and the rules go on inside that branch (``C(f1⊕g1)`` -> ``C(f1)``).
* **Rule 4, attribute removal**: for ``E⊕g1⊕...⊕gk`` the added attributes are removed
  while the carrier ``E`` is kept. With ``k >= 2``, one child keeps each single attribute
  (``E⊕gi``), and, when ``E`` is an anchor ``f``, one child keeps the bare carrier: the
  three nodes N3b1-N3b3 of ``f2⊕g2⊕g3`` in Figure 10 ("removes one or more transferred
  attributes"). With ``k = 1``, ``f⊕g`` gives ``f``; ``T_e⊕g`` is already a leaf (an
  "atomic attribute transfer", Sec. 3.5). Rule 4 children are leaves: every simpler
  variant of the carrier is already one of their siblings.
* **Stopping criterion** (C.2): a node is a leaf when no rule applies: a single anchor
  ``f``, a single attribute transfer ``T_e⊕g``, a Rule 4 variant, or a scene without
  reference content left to separate.

Rules are tried in the order 1, 3, 2, 4 at the outermost level where one applies, which
reproduces the rule sequence of Figure 10 on the formula of Eq. (5).

**Node names** follow the paper (Figure 10: N0, N1, N2a, N2b, N3b1-N3b3, N4a, N4b; Figure
12: N3a2): ``N<depth><branch>``. A single child keeps its parent's branch; the children of
Rule 2 get fresh letters (a, b, ...) not yet used at their depth; the children of Rule 4
append 1, 2, ... to the parent's branch (fresh letters when the parent has no branch yet).

**Node-to-question mapping** (C.2: "each diagnostic node is evaluated only with the
checklist items that correspond to the retained operator targets in that node"): the root
keeps every question. Elsewhere a question's ``target`` is split on top-level commas and
each piece that is formula syntax is a reference (``f1``; ``g1``; ``f1⊕g1``; ``T_e⊕g1``;
``C`` or ``C⊕g_vfx`` for the composition); free text (``IP on cacao_pod_A``,
``exclusivity``, ``layout f1``) and the bare operator symbol ``⊕`` are ignored. The node
keeps the question when every reference is present in its formula: an anchor or attribute
occurs in it, a binding ``X⊕g`` is an :class:`Apply` of that carrier holding that attribute,
``C`` is any composition. An unnumbered ``f``/``g``/``C`` matches any numbered one.
Without any reference the question is kept when the node still has its operator (an anchor
for ``f``, an attribute for ``g``, a binding for ``⊕``, a composition for ``C``).
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from annotation.trace.formula import (
    Apply,
    Attribute,
    Compose,
    Entity,
    Expr,
    FormulaError,
    Node,
    SceneRef,
    TextEntity,
    TextRelation,
    is_reference,
    parse,
    parse_target,
    to_text,
    walk,
)
from annotation.trace.nodes import ROOT

__all__ = [
    "RULES", "DiagnosticNode", "Step", "children", "decompose", "node_record",
    "normalize_operator", "paths", "retained_questions", "retains", "steps",
    "target_refs",
]

RULES: dict[int, str] = {
    1: "global-reference stripping",
    2: "composition flattening",
    3: "relation simplification",
    4: "attribute removal",
}


@dataclass(frozen=True)
class Step:
    """One simplification of a formula (Appendix C.2): the rule, what it removed, the
    child formula, the components it downgraded to text, and whether the child is final."""

    rule: int
    removed: tuple[Node, ...]
    formula: Expr
    downgraded: tuple[Node, ...] = ()
    final: bool = False


@dataclass(frozen=True)
class DiagnosticNode:
    """A node of the diagnostic tree (Sec. 3.5, Appendix C.2).

    ``removed``: what the step from ``parent`` removed (a global term, the branches left
    out, the relation, the attributes). ``downgrades``: every reference component that is
    present only as text at this node, accumulated from the root (Rule 2 branches, Rule 3
    relations, which the formula shows as ``T_rel``).
    """

    id: str
    parent: str | None
    depth: int
    rule: int | None
    removed: tuple[Node, ...]
    formula: Expr
    downgrades: tuple[Node, ...] = ()


# ----------------------------------------------------------------------------- rules
def _is_relation(attr: Node) -> bool:
    return isinstance(attr, Attribute) and attr.kind == "rel"


def _without(attrs: tuple[Attribute | TextRelation, ...], position: int,
             carrier: Expr | SceneRef, replacement: TextRelation | None = None) -> Expr:
    kept = attrs[:position] + ((replacement,) if replacement else ()) + attrs[position + 1:]
    return Apply(carrier, kept) if kept else carrier  # type: ignore[arg-type,return-value]


def _last(attrs: tuple[Attribute | TextRelation, ...], wanted) -> int | None:
    for position in range(len(attrs) - 1, -1, -1):
        if wanted(attrs[position]):
            return position
    return None


def steps(expr: Expr) -> list[Step]:
    """The children of ``expr`` by Rules 1-4 of Appendix C.2 (module docstring), in order;
    ``[]`` for a leaf."""
    if isinstance(expr, Apply):
        carrier, attrs = expr.carrier, expr.attrs
        scene = isinstance(carrier, Compose)

        def is_global(a: Node) -> bool:
            if not isinstance(a, Attribute) or _is_relation(a):
                return False
            return scene or a.kind == "global"

        position = _last(attrs, is_global)
        if position is not None:  # Rule 1
            return [Step(1, (attrs[position],), _without(attrs, position, carrier))]
        position = _last(attrs, _is_relation) if scene else None
        if position is not None:  # Rule 3
            relation = attrs[position]
            text = TextRelation(relation.index)  # type: ignore[union-attr]
            return [Step(3, (relation,), _without(attrs, position, carrier, text),
                         (relation,))]
        if scene:  # only text relations on the scene: simplify the scene itself
            out = []
            for step in steps(carrier):  # type: ignore[arg-type]
                child = step.formula
                if isinstance(child, Compose):
                    child = Apply(child, attrs)
                out.append(replace(step, formula=child))
            return out
        return _rule4(carrier, attrs)  # type: ignore[arg-type]
    if isinstance(expr, Compose):
        branches = [i for i, part in enumerate(expr.parts) if is_reference(part)]
        if len(branches) >= 2:  # Rule 2
            out = []
            for i in branches:
                others = tuple(expr.parts[j] for j in branches if j != i)
                out.append(Step(2, others, expr.parts[i], others))
            return out
        if len(branches) == 1:  # one branch: keep the scene, simplify inside it
            i = branches[0]
            return [replace(step, formula=Compose(
                expr.index, expr.parts[:i] + (step.formula,) + expr.parts[i + 1:]))
                for step in steps(expr.parts[i])]
    return []


def _rule4(carrier: Entity | TextEntity,
           attrs: tuple[Attribute | TextRelation, ...]) -> list[Step]:
    texts = tuple(a for a in attrs if isinstance(a, TextRelation))
    added = [a for a in attrs if isinstance(a, Attribute)]

    def bound(kept: tuple[Attribute, ...]) -> Expr:
        return Apply(carrier, kept + texts) if kept + texts else carrier

    out = []
    if len(added) >= 2:
        for i, keep in enumerate(added):
            others = tuple(added[:i] + added[i + 1:])
            out.append(Step(4, others, bound((keep,)), final=True))
    if added and isinstance(carrier, Entity):
        out.append(Step(4, tuple(added), bound(()), final=True))
    return out


# ----------------------------------------------------------------------------- the tree
def _fresh_names(used: set[str]) -> Iterable[str]:
    firsts = {name[0] for name in used if name}
    for size in itertools.count(1):
        for letters in itertools.product(string.ascii_lowercase, repeat=size):
            name = "".join(letters)
            if name[0] not in firsts and name not in used:
                yield name


def decompose(formula: str | Expr) -> tuple[DiagnosticNode, ...]:
    """The diagnostic tree of ``formula`` (Appendix C.2), nodes in breadth-first order.

    Raises :class:`annotation.trace.formula.FormulaError` for malformed text.
    """
    expr = parse(formula) if isinstance(formula, str) else formula
    root = DiagnosticNode(ROOT, None, 0, None, (), expr, ())
    nodes = [root]
    frontier: list[tuple[DiagnosticNode, str, bool]] = [(root, "", False)]
    depth = 0
    while frontier:
        depth += 1
        pending: list[tuple[DiagnosticNode, str, Step, int, int]] = []
        for parent, branch, final in frontier:
            if final:
                continue
            found = steps(parent.formula)
            pending += [(parent, branch, s, j, len(found)) for j, s in enumerate(found)]
        names: list[str | None] = []
        for _parent, branch, step, j, count in pending:
            if count == 1 and (step.rule != 4 or not branch):
                names.append(branch)
            elif step.rule == 4 and branch:
                names.append(f"{branch}{j + 1}")
            else:
                names.append(None)
        fresh = iter(_fresh_names({n for n in names if n is not None}))
        names = [n if n is not None else next(fresh) for n in names]
        if len(set(names)) != len(names):  # pragma: no cover - guarded by construction
            raise AssertionError(f"duplicate node names at depth {depth}: {names}")
        frontier = []
        for (parent, _branch, step, _j, _count), name in zip(pending, names):
            node = DiagnosticNode(f"N{depth}{name}", parent.id, depth, step.rule,
                                  step.removed, step.formula,
                                  parent.downgrades + step.downgraded)
            nodes.append(node)
            frontier.append((node, name, step.final))  # type: ignore[arg-type]
    return tuple(nodes)


def children(nodes: Sequence[DiagnosticNode], node_id: str) -> list[DiagnosticNode]:
    """The direct children of ``node_id``, in tree order."""
    return [n for n in nodes if n.parent == node_id]


def paths(nodes: Sequence[DiagnosticNode]) -> list[tuple[str, ...]]:
    """Every root-to-leaf path as a tuple of node ids (Appendix C.3), in tree order."""
    kids: dict[str, list[str]] = {}
    for n in nodes:
        if n.parent is not None:
            kids.setdefault(n.parent, []).append(n.id)
    out: list[tuple[str, ...]] = []

    def visit(path: tuple[str, ...]) -> None:
        below = kids.get(path[-1], [])
        if not below:
            out.append(path)
        for child in below:
            visit(path + (child,))

    roots = [n.id for n in nodes if n.parent is None]
    for root in roots:
        visit((root,))
    return out


def node_record(node: DiagnosticNode, *, ascii: bool = False) -> dict[str, Any]:
    """A JSON-ready dict: id, parent, depth, rule, rule_name, removed, formula, downgrades."""
    return {
        "id": node.id,
        "parent": node.parent,
        "depth": node.depth,
        "rule": node.rule,
        "rule_name": RULES.get(node.rule) if node.rule else None,
        "removed": [to_text(r, ascii) for r in node.removed],
        "formula": to_text(node.formula, ascii),
        "downgrades": [to_text(d, ascii) for d in node.downgrades],
    }


# ----------------------------------------------------------------------------- questions
_OPERATORS = {"f": "f", "g": "g", "⊕": "⊕", "(+)": "⊕", "+": "⊕", "\\oplus": "⊕", "C": "C",
              "apply": "⊕", "anchor": "f", "disentangle": "g", "compose": "C"}


def normalize_operator(operator: str | None) -> str:
    """``f``, ``g``, ``⊕`` or ``C`` (``(+)``/``+`` are ``⊕``; the names of Table 1 too);
    ``""`` for anything else."""
    text = (operator or "").strip()
    return _OPERATORS.get(text, _OPERATORS.get(text.lower(), ""))


def _split_top(text: str) -> list[str]:
    pieces, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "({":
            depth += 1
        elif char in ")}":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    return [p.strip() for p in pieces if p.strip()]


def target_refs(target: str | None) -> tuple[Node, ...]:
    """The formula references of a checklist target (Table 6): ``"⊕, f1⊕g1, fit"`` ->
    ``(Apply(f1, g1),)``; ``"C, duplication"`` -> ``(SceneRef(),)``; free text ignored."""
    refs: list[Node] = []
    for piece in _split_top(target or ""):
        if normalize_operator(piece) == "⊕":
            continue
        try:
            refs.append(parse_target(piece))
        except FormulaError:
            continue
    return tuple(refs)


def _same_index(a: int | None, b: int | None) -> bool:
    return a is None or b is None or a == b


def _matches(ref: Node, node: Node) -> bool:
    if isinstance(ref, Entity):
        return isinstance(node, Entity) and _same_index(ref.index, node.index)
    if isinstance(ref, TextEntity):
        return (isinstance(node, TextEntity) and ref.label == node.label
                and _same_index(ref.index, node.index))
    if isinstance(ref, Attribute):
        if not isinstance(node, Attribute):
            return False
        if ref.kind is None and ref.index is None:
            return True
        return ref.kind == node.kind and _same_index(ref.index, node.index)
    if isinstance(ref, TextRelation):
        return isinstance(node, TextRelation) and _same_index(ref.index, node.index)
    if isinstance(ref, SceneRef):
        return isinstance(node, Compose) and _same_index(ref.index, node.index)
    if isinstance(ref, Compose):
        return ref == node
    if isinstance(ref, Apply):
        return (isinstance(node, Apply) and _matches(ref.carrier, node.carrier)
                and all(any(_matches(a, b) for b in node.attrs) for a in ref.attrs))
    return False


def _has_operator(formula: Expr, operator: str) -> bool:
    tests = {
        "f": lambda n: isinstance(n, Entity),
        "g": lambda n: isinstance(n, Attribute),
        "⊕": lambda n: isinstance(n, Apply) and any(isinstance(a, Attribute)
                                                    for a in n.attrs),
        "C": lambda n: isinstance(n, Compose),
    }
    test = tests.get(operator)
    return test is not None and any(test(n) for n in walk(formula))


def retains(formula: Expr, operator: str | None, target: str | None) -> bool:
    """True when a node with ``formula`` keeps the question (operator, target): the
    matching rule of the module docstring (the root keeps every question: see
    :func:`retained_questions`)."""
    refs = target_refs(target)
    if not refs:
        return _has_operator(formula, normalize_operator(operator))
    nodes = list(walk(formula))
    return all(any(_matches(ref, n) for n in nodes) for ref in refs)


def retained_questions(node: DiagnosticNode,
                       questions: Iterable[tuple[str, str | None, str | None]]) -> list[str]:
    """The ids of the questions ``(question_id, operator, target)`` that ``node`` keeps
    (Appendix C.2, node-to-question mapping), in the given order; the root keeps all."""
    if node.parent is None:
        return [qid for qid, _op, _target in questions]
    return [qid for qid, op, target in questions if retains(node.formula, op, target)]
