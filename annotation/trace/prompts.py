"""What to send a generator for each node of a diagnostic tree: its prompt, its text
downgrades and the reference images it keeps.

"TRACE-Bench: Decomposing and Diagnosing Multi-Reference Image Generation" (Wang et al.
2026), Sec. 3.5 "Diagnostic Tree Analysis" and Appendix C.2, generates one image per node:
Rule 1 drops a global reference, Rule 2 keeps one branch of a composition and turns the
other branches into "ordinary textual context", Rule 3 turns a referenced relation into a
text relation, Rule 4 drops added attributes. Sec. 3.5 ("Our formula-based construction
explicitly grounds each referenced term to its source image") ties every reference term
(an anchor ``f``, an attribute ``g``) to an input image. So a node

* **keeps the images** of the reference terms still in its formula, in the task's input
  order, renumbered ``Image_0``, ``Image_1``, ... for the node's generator call;
* **downgrades to text** the terms of its ``downgrades`` (Rule 2 branches, Rule 3
  relations): they stay in the scene, described in words, without their image;
* has a **prompt**: the one given in ``meta.tree_nodes[].prompt`` (``prompt_source``
  ``meta.tree_nodes``), the task's instruction at the root (``task instruction``), else a
  **draft** written from the root instruction and the lists above (``draft``), to be
  rewritten into natural language before generation (the paper realizes each formula as
  a prompt with a VLM, Sec. 3.4).

Which image grounds which term: the task's ``meta.references``, ``{term: image index or
list of indexes}`` (``{"f1": 0, "g1": 1, "g_style": 2}``; indexes into the task's
``images``, ``Image_<index>``). Without it, when the root formula has exactly as many
distinct reference terms as the task has reference images, the terms are matched to the
reference images in order of first appearance (``images_source`` ``formula order``); else
every node keeps every image (``all images``), and says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotation.trace.formula import (
    Attribute,
    Entity,
    Expr,
    FormulaError,
    parse,
    parse_target,
    to_text,
    walk,
)

if TYPE_CHECKING:
    from annotation.trace.trees import Tree

__all__ = [
    "ALL_IMAGES", "DRAFT", "FORMULA_ORDER", "FROM_META", "FROM_NODES", "FROM_TASK",
    "NodePrompt", "draft_prompt", "node_prompts", "reference_problems", "reference_terms",
    "term_images",
]

#: ``images_source``: where the term -> image map came from
FROM_META = "meta.references"
FORMULA_ORDER = "formula order"
ALL_IMAGES = "all images"
#: ``prompt_source``
FROM_NODES = "meta.tree_nodes"
FROM_TASK = "task instruction"
DRAFT = "draft"


def reference_terms(expr: Expr | str) -> list[str]:
    """The reference terms of a formula (anchors ``f`` and attributes ``g``: what an image
    grounds, Sec. 3.2), as text, distinct, in order of first appearance."""
    node = parse(expr) if isinstance(expr, str) else expr
    terms = [to_text(n) for n in walk(node) if isinstance(n, Entity | Attribute)]
    return list(dict.fromkeys(terms))


def reference_problems(meta: Mapping[str, Any], n_images: int) -> list[tuple[str, str]]:
    """Problems of a task's ``meta.references`` as ``(field, message)``: a mapping from a
    reference term (``f1``, ``g_style``) to an image index or a non-empty list of them,
    each a whole number ``0..n_images-1``."""
    refs = meta.get("references")
    if refs is None:
        return []
    if not isinstance(refs, Mapping):
        return [("meta.references", "expected an object {term: image index}, e.g. "
                 f'{{"f1": 0, "g1": 1}}, got {type(refs).__name__}')]
    found = []
    for term, value in refs.items():
        fld = f"meta.references.{term}"
        try:
            node = parse_target(str(term))
        except FormulaError:
            node = None
        if not isinstance(node, Entity | Attribute):
            found.append((fld, "the key must be one reference term of the formula (an "
                          "anchor like f1 or an attribute like g1, g_style)"))
            continue
        values = value if isinstance(value, list) else [value]
        if not values or not all(isinstance(v, int) and not isinstance(v, bool)
                                 and 0 <= v < n_images for v in values):
            found.append((fld, f"expected an image index 0..{n_images - 1} (or a list of "
                          f"them), got {value!r}"))
    return found


def term_images(meta: Mapping[str, Any], formula: Expr | str,
                images: Sequence[Mapping[str, Any]]) -> tuple[dict[str, tuple[int, ...]], str]:
    """Term -> the indexes of the task images that ground it, and where that came from
    (:data:`FROM_META`, :data:`FORMULA_ORDER` or :data:`ALL_IMAGES`: the module
    docstring). ``images``: the task's images in input order (dicts with ``role``).

    Raises ValueError naming the field for a malformed ``meta.references``.
    """
    problems = reference_problems(meta, len(images))
    if problems:
        raise ValueError("; ".join(f"{f}: {m}" for f, m in problems))
    refs = meta.get("references")
    terms = reference_terms(formula)
    if isinstance(refs, Mapping):
        out = {}
        for term, value in refs.items():
            key = to_text(parse_target(str(term)))
            out[key] = tuple(value if isinstance(value, list) else [value])
        return out, FROM_META
    references = [i for i, im in enumerate(images) if im.get("role", "reference") == "reference"]
    if terms and len(terms) == len(references):
        return {t: (i,) for t, i in zip(terms, references, strict=True)}, FORMULA_ORDER
    every = tuple(range(len(images)))
    return {t: every for t in terms}, ALL_IMAGES


@dataclass(frozen=True)
class NodePrompt:
    """What one node's generator call needs: ``images`` are task image indexes in the
    order the node's generator sees them (``Image_0`` first); ``downgrades`` the terms
    given as text only, ``removed`` what the node's rule removed."""

    node: str
    parent: str | None
    rule: int | None
    formula: str
    prompt: str
    prompt_source: str
    images: tuple[int, ...]
    terms: dict[int, tuple[str, ...]]  # task image index -> the terms it grounds here
    downgrades: tuple[str, ...]
    downgrade_terms: tuple[str, ...]
    removed: tuple[str, ...]
    images_source: str


def _label(images: Sequence[Mapping[str, Any]], indexes: Sequence[int]) -> str:
    labels = [str(images[i].get("label")) for i in indexes if images[i].get("label")]
    return ", ".join(dict.fromkeys(labels))


def draft_prompt(instruction: str, node: NodePrompt,
                 images: Sequence[Mapping[str, Any]],
                 grounding: Mapping[str, tuple[int, ...]]) -> str:
    """A draft prompt for a node without one: the root instruction, then which images the
    node keeps (renumbered), which terms are text only (Rule 2/3 downgrades, with the
    labels of their images to describe them by) and what was left out."""
    lines = [instruction.strip(), "",
             f"[draft for diagnostic node {node.node}: {node.formula}; rewrite the text above "
             "to match before generating]"]
    if node.images:
        kept = []
        for k, i in enumerate(node.images):
            label = _label(images, [i])
            what = ", ".join(node.terms.get(i, ()))
            kept.append(f"Image_{k} (was Image_{i}" + (f", {label}" if label else "")
                        + (f"; {what}" if what else "") + ")")
        lines.append("Reference images of this node: " + "; ".join(kept) + ".")
    if node.downgrade_terms:
        described = []
        for term in node.downgrade_terms:
            label = _label(images, grounding.get(term, ()))
            described.append(f"{term} ({label})" if label else term)
        lines.append("Describe in words only, without their reference image: "
                     + "; ".join(described) + ".")
    if node.removed and node.rule in (1, 4):
        lines.append("Leave out: " + ", ".join(node.removed) + ".")
    return "\n".join(lines)


def node_prompts(tree: Tree, instruction: str, meta: Mapping[str, Any],
                 images: Sequence[Mapping[str, Any]]) -> list[NodePrompt]:
    """One :class:`NodePrompt` per node of ``tree``, in tree order (module docstring).

    Raises ValueError for a malformed ``meta.references``.
    """
    grounding, source = term_images(meta, tree.formula or tree.nodes[0].formula, images)
    explicit = {str(e.get("id")): e.get("prompt") for e in meta.get("tree_nodes") or []
                if isinstance(e, Mapping)}
    out = []
    exprs = {d.id: d.formula for d in tree.diagnostic}
    for node in tree.nodes:
        formula: Expr | str = exprs.get(node.id, node.formula)
        terms = reference_terms(formula)
        by_image: dict[int, list[str]] = {}
        for term in terms:
            for i in grounding.get(term, ()):
                by_image.setdefault(i, []).append(term)
        kept = tuple(sorted(by_image)) if node.parent is not None else tuple(range(len(images)))
        down_terms: list[str] = []
        for text in node.downgrades:
            try:
                down_terms += reference_terms(text)
            except FormulaError:
                continue
        item = NodePrompt(node.id, node.parent, node.rule, node.formula, "", DRAFT, kept,
                          {i: tuple(ts) for i, ts in by_image.items()}, node.downgrades,
                          tuple(t for t in dict.fromkeys(down_terms) if t not in terms),
                          node.removed, source)
        given = explicit.get(node.id) or node.prompt
        if isinstance(given, str) and given.strip():
            prompt, prompt_source = given, FROM_NODES
        elif node.parent is None:
            prompt, prompt_source = instruction, FROM_TASK
        else:
            prompt, prompt_source = draft_prompt(instruction, item, images, grounding), DRAFT
        out.append(NodePrompt(**{**item.__dict__, "prompt": prompt,
                                 "prompt_source": prompt_source}))
    return out
