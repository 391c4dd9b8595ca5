"""TRACE-Bench compositional formulas: parse, print and count slots.

Follows "TRACE-Bench: Decomposing and Diagnosing Multi-Reference Image Generation" (Wang
et al. 2026): the four operators of Sec. 3.2, the local-to-global formula levels of
Sec. 3.3 and Appendix B.3, the slot count of Eq. (2).

* **Anchor** ``f``, ``f1``, ``f_1``, ``f_{12}``: an entity kept from a reference image.
* **Text entity** ``T_e``, ``Te``, ``T_s1``, ``T_{e2}``: a carrier named in the text only.
* **Disentangle** ``g``, ``g1``, ``g_rel``, ``g_global``, ``g_attach``, ``g_ip``,
  ``g_style``, ``g_rel1``, ``g_{attach,1}`` (Eq. 3 writes ``g_{attach,1}``): an attribute
  extracted from a reference; the word is its kind, the number its index. The flattened
  spellings of the paper's extracted text (``grel``, ``gglobal``, ``Te``) are accepted.
* **Text relation** ``T_rel``: a relation given in the text (Sec. 3.2), not a reference.
* **Apply** ``⊕`` (also ``(+)``, ``+``, ``\\oplus``): binds attributes to a carrier;
  ``f2⊕g2⊕g3`` is one :class:`Apply` with two attributes (the paper's ``E⊕g`` chains).
* **Compose** ``C(E1, ..., En)``, optionally indexed ``C_1(...)``, ``C1(...)``: a scene;
  it may carry a relation or a global term, ``C(f1, f2)⊕g_rel``, and nest
  (``C(C(f1, Te⊕g1)⊕g_rel, f2⊕g2⊕g3)⊕g_global``, Sec. 3.3).

Grammar (whitespace, and the LaTeX spaces ``\\,`` ``\\;`` ``\\:`` ``\\!``, between tokens
are ignored)::

    formula := expr END
    expr    := primary ( APPLY attr )*
    primary := ANCHOR | TEXT_ENTITY | COMPOSE "(" expr ( "," expr )* ")"
    attr    := ATTRIBUTE | TEXT_RELATION

The tree is immutable (frozen dataclasses, tuples) and canonical: a chain of ``⊕`` is one
:class:`Apply`, never an ``Apply`` of an ``Apply``. :func:`to_text` prints ``f1``, ``T_e``,
``g1``, ``g_rel``, ``g_attach1``, ``T_rel``, ``C1(...)``, parts separated by ``", "`` and
``⊕`` (``(+)`` with ``ascii=True``) without spaces, so ``parse(to_text(x)) == x``.

:func:`slot_count` is Eq. (2), ``slot(F) = |f| + |g|``: anchors and disentangled attributes
(relation and global terms included, as every ``g`` is); text entities and text relations
do not count. Checked against every template of Table 5 (slots 1-8) and the slot-4 example
``C(f1, Te⊕g1⊕g2)⊕g_global`` of Sec. 3.4.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "Apply", "Attribute", "Compose", "Entity", "Expr", "FormulaError", "Node", "SceneRef",
    "TextEntity", "TextRelation", "attributes", "anchors", "is_reference", "parse",
    "parse_target", "slot_count", "to_text", "walk",
]

APPLY = "⊕"
APPLY_ASCII = "(+)"
_WORD = re.compile(r"[a-z]+")


def _check_index(index: int | None) -> None:
    if index is not None and (not isinstance(index, int) or isinstance(index, bool)
                              or index < 0):
        raise ValueError(f"index must be a non-negative int or None, not {index!r}")


def _check_word(word: str, what: str) -> None:
    if not isinstance(word, str) or not _WORD.fullmatch(word):
        raise ValueError(f"{what} must be lowercase letters, not {word!r}")


@dataclass(frozen=True)
class Entity:
    """Anchor ``f`` (Sec. 3.2): an entity kept from a reference image; ``f1`` has index 1."""

    index: int | None = None

    def __post_init__(self) -> None:
        _check_index(self.index)


@dataclass(frozen=True)
class TextEntity:
    """A carrier given by text only, ``T_e`` (Sec. 3.2); ``T_s1`` has label ``s``, index 1."""

    label: str = "e"
    index: int | None = None

    def __post_init__(self) -> None:
        _check_word(self.label, "label")
        if self.label == "rel":
            raise ValueError("T_rel is a TextRelation, not a TextEntity")
        _check_index(self.index)


@dataclass(frozen=True)
class Attribute:
    """Disentangle ``g`` (Sec. 3.2): ``g1`` (index 1), ``g_rel`` (kind ``rel``), ``g_ip2``."""

    kind: str | None = None
    index: int | None = None

    def __post_init__(self) -> None:
        if self.kind is not None:
            _check_word(self.kind, "kind")
        _check_index(self.index)


@dataclass(frozen=True)
class TextRelation:
    """``T_rel`` (Sec. 3.2): a relation specified in the text, not taken from an image."""

    index: int | None = None

    def __post_init__(self) -> None:
        _check_index(self.index)


@dataclass(frozen=True)
class Compose:
    """Compose ``C(E1, ..., En)`` (Sec. 3.3), with an optional index (``C_1``)."""

    index: int | None
    parts: tuple[Expr, ...]

    def __post_init__(self) -> None:
        _check_index(self.index)
        if isinstance(self.parts, list):
            object.__setattr__(self, "parts", tuple(self.parts))
        if not isinstance(self.parts, tuple) or not self.parts:
            raise ValueError("a composition needs at least one part")
        for part in self.parts:
            if not isinstance(part, Entity | TextEntity | Compose | Apply):
                raise ValueError(f"not an entity or scene expression: {part!r}")


@dataclass(frozen=True)
class Apply:
    """Apply ``E⊕g1⊕g2`` (Sec. 3.2-3.3): attributes (or a text relation) bound to a carrier."""

    carrier: Entity | TextEntity | Compose | SceneRef
    attrs: tuple[Attribute | TextRelation, ...]

    def __post_init__(self) -> None:
        if isinstance(self.attrs, list):
            object.__setattr__(self, "attrs", tuple(self.attrs))
        if not isinstance(self.carrier, Entity | TextEntity | Compose | SceneRef):
            raise ValueError(f"not a carrier: {self.carrier!r} (chains of ⊕ are flat)")
        if not isinstance(self.attrs, tuple) or not self.attrs:
            raise ValueError("⊕ needs at least one attribute")
        for attr in self.attrs:
            if not isinstance(attr, Attribute | TextRelation):
                raise ValueError(f"not an attribute: {attr!r}")


@dataclass(frozen=True)
class SceneRef:
    """A bare ``C`` (or ``C_1``) in a checklist target (``C, duplication``, ``C⊕g_vfx``):
    "the composition", without its parts. Only :func:`parse_target` produces it."""

    index: int | None = None

    def __post_init__(self) -> None:
        _check_index(self.index)


Expr = Entity | TextEntity | Compose | Apply
Node = Entity | TextEntity | Attribute | TextRelation | Compose | Apply | SceneRef


class FormulaError(ValueError):
    """A malformed formula: ``at 14: expected ")" or ",", found "⊕"``.

    ``position`` is the 0-based offset in the text (``text[position]`` is the offending
    character; ``len(text)`` at the end), ``expected`` what the grammar allowed there,
    ``found`` the text met (``end of formula`` at the end).
    """

    def __init__(self, position: int, expected: tuple[str, ...], found: str):
        self.position = position
        self.expected = tuple(expected)
        self.found = found
        super().__init__(f"at {position}: expected {_alternatives(self.expected)}, "
                         f"found {found}")


def _alternatives(items: tuple[str, ...]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


# ----------------------------------------------------------------------------- lexer
_SPACE = re.compile(r"(?:\s|\\[,;:! ])+")
_TOKENS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("APPLY", re.compile(r"⊕|⨁|\\oplus(?![A-Za-z])|\(\+\)|\+")),
    ("(", re.compile(r"\(")),
    (")", re.compile(r"\)")),
    (",", re.compile(r",")),
    ("C", re.compile(r"C(?:_\{(?P<b>\d+)\}|_?(?P<i>\d+))?(?![A-Za-z0-9_{])")),
    ("f", re.compile(r"f(?:_\{(?P<b>\d+)\}|_?(?P<i>\d+))?(?![A-Za-z0-9_{])")),
    ("T", re.compile(r"T(?:_\{(?P<bl>[A-Za-z]+)(?:[_,]?(?P<bi>\d+))?\}"
                     r"|_?(?P<l>[A-Za-z]+)(?:_?(?P<i>\d+))?)(?![A-Za-z0-9_{])")),
    ("g", re.compile(r"g(?:_\{(?:(?P<bk>[A-Za-z]+)(?:[_,]?(?P<bi>\d+))?|(?P<bn>\d+))\}"
                     r"|_?(?P<k>[A-Za-z]+)(?:_?(?P<i>\d+))?|_?(?P<n>\d+))?"
                     r"(?![A-Za-z0-9_{])")),
)
_JUNK = re.compile(r"[^\s,()⊕+]+|.")


@dataclass(frozen=True)
class _Token:
    kind: str  # APPLY ( ) , C f T g END JUNK
    text: str
    pos: int
    value: Node | int | None = None


def _index(text: str | None) -> int | None:
    return None if text is None else int(text)


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    pos = 0
    while True:
        space = _SPACE.match(text, pos)
        if space:
            pos = space.end()
        if pos >= len(text):
            out.append(_Token("END", "", len(text)))
            return out
        for kind, pattern in _TOKENS:
            m = pattern.match(text, pos)
            if m and m.end() > pos:
                out.append(_Token(kind, m.group(), pos, _value(kind, m)))
                pos = m.end()
                break
        else:
            junk = _JUNK.match(text, pos)
            assert junk is not None
            out.append(_Token("JUNK", junk.group(), pos))
            pos = junk.end()


def _value(kind: str, m: re.Match[str]) -> Node | int | None:
    g = m.groupdict()
    if kind in ("C", "f"):
        index = _index(g["b"] or g["i"])
        return index if kind == "C" else Entity(index)
    if kind == "T":
        label = (g["bl"] or g["l"]).lower()
        index = _index(g["bi"] or g["i"])
        return TextRelation(index) if label == "rel" else TextEntity(label, index)
    if kind == "g":
        word = g["bk"] or g["k"]
        number = g["bi"] or g["bn"] or g["i"] or g["n"]
        return Attribute(word.lower() if word else None, _index(number))
    return None


# ----------------------------------------------------------------------------- parser
_PRIMARY = ('"f"', '"T_e"', '"C("')
_ATTR = ('"g"', '"T_rel"')


class _Parser:
    def __init__(self, text: str, *, target: bool = False):
        self.tokens = _tokens(text)
        self.i = 0
        self.target = target  # checklist targets: a lone attribute or a bare C is allowed

    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def fail(self, expected: tuple[str, ...]) -> FormulaError:
        tok = self.tok
        found = "end of formula" if tok.kind == "END" else f'"{tok.text}"'
        return FormulaError(tok.pos, expected, found)

    def take(self) -> _Token:
        tok = self.tok
        self.i += 1
        return tok

    def formula(self) -> Node:
        if self.target and self.tok.kind in ("g", "T") and isinstance(self.tok.value,
                                                                        Attribute | TextRelation):
            node: Node = self.take().value  # type: ignore[assignment]
        else:
            node = self.expr()
        if self.tok.kind != "END":
            raise self.fail(('"⊕"', "end of formula"))
        return node

    def expr(self) -> Node:
        carrier = self.primary()
        attrs: list[Attribute | TextRelation] = []
        while self.tok.kind == "APPLY":
            self.take()
            tok = self.tok
            if tok.kind in ("g", "T") and isinstance(tok.value, Attribute | TextRelation):
                attrs.append(self.take().value)  # type: ignore[arg-type]
            else:
                raise self.fail(_ATTR)
        return Apply(carrier, tuple(attrs)) if attrs else carrier  # type: ignore[arg-type]

    def primary(self) -> Node:
        tok = self.tok
        if tok.kind == "f" or (tok.kind == "T" and isinstance(tok.value, TextEntity)):
            return self.take().value  # type: ignore[return-value]
        if tok.kind == "C":
            self.take()
            if self.tok.kind != "(":
                if self.target:
                    return SceneRef(tok.value)  # type: ignore[arg-type]
                raise self.fail(('"("',))
            self.take()
            parts = [self.expr()]
            while self.tok.kind == ",":
                self.take()
                parts.append(self.expr())
            if self.tok.kind != ")":
                raise self.fail(('"⊕"', '","', '")"'))
            self.take()
            return Compose(tok.value, tuple(parts))  # type: ignore[arg-type]
        raise self.fail(_PRIMARY)


def parse(text: str) -> Expr:
    """Parse a formula (Sec. 3.3) into its immutable tree; raise :class:`FormulaError`.

    >>> to_text(parse("C(C(f_1,T_e(+)g_1)(+)g_{rel}, f2 + g2 + g3) ⊕ gglobal"))
    'C(C(f1, T_e⊕g1)⊕g_rel, f2⊕g2⊕g3)⊕g_global'
    """
    if not isinstance(text, str):
        raise TypeError(f"a formula is text, not {type(text).__name__}")
    return _Parser(text).formula()  # type: ignore[return-value]


def parse_target(text: str) -> Node:
    """Parse the formula part of a checklist target (Appendix B.5, Table 6): a formula, a
    lone attribute (``g1``, ``g_bg``) or a bare composition ``C`` / ``C⊕g_vfx``."""
    return _Parser(text, target=True).formula()


# ----------------------------------------------------------------------------- printing
def _idx(index: int | None) -> str:
    return "" if index is None else str(index)


def to_text(node: Node, ascii: bool = False) -> str:
    """Canonical spelling of ``node``; ``ascii=True`` writes ``(+)`` for ``⊕``.

    ``parse(to_text(x)) == x`` for every formula tree ``x``.
    """
    if isinstance(node, Entity):
        return "f" + _idx(node.index)
    if isinstance(node, TextEntity):
        return f"T_{node.label}{_idx(node.index)}"
    if isinstance(node, Attribute):
        return ("g" if node.kind is None else f"g_{node.kind}") + _idx(node.index)
    if isinstance(node, TextRelation):
        return "T_rel" + _idx(node.index)
    if isinstance(node, SceneRef):
        return "C" + _idx(node.index)
    if isinstance(node, Compose):
        inner = ", ".join(to_text(p, ascii) for p in node.parts)
        return f"C{_idx(node.index)}({inner})"
    if isinstance(node, Apply):
        op = APPLY_ASCII if ascii else APPLY
        return to_text(node.carrier, ascii) + "".join(op + to_text(a, ascii)
                                                      for a in node.attrs)
    raise TypeError(f"not a formula node: {node!r}")


# ----------------------------------------------------------------------------- queries
def walk(node: Node) -> Iterator[Node]:
    """Every node of the tree, pre-order (a carrier before its attributes)."""
    yield node
    if isinstance(node, Compose):
        for part in node.parts:
            yield from walk(part)
    elif isinstance(node, Apply):
        yield from walk(node.carrier)
        yield from node.attrs


def anchors(node: Node) -> list[Entity]:
    """The anchored entities ``f`` of the formula, in reading order (``|f|`` of Eq. 2)."""
    return [n for n in walk(node) if isinstance(n, Entity)]


def attributes(node: Node) -> list[Attribute]:
    """The disentangled terms ``g`` of the formula, in reading order (``|g|`` of Eq. 2)."""
    return [n for n in walk(node) if isinstance(n, Attribute)]


def slot_count(node: Node) -> int:
    """Eq. (2) of Sec. 3.4: ``slot(F) = |f| + |g|``; text entities and relations count 0.

    >>> slot_count(parse("C(f1, Te⊕g1⊕g2)⊕g_global"))  # the slot-4 example of Sec. 3.4
    4
    """
    return len(anchors(node)) + len(attributes(node))


def is_reference(node: Node) -> bool:
    """True when the expression holds reference-conditioned content (a slot, Eq. 2)."""
    return slot_count(node) > 0
