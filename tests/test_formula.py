"""TRACE-Bench formulas (TRACE-Bench paper, Sec. 3.2-3.4, Table 5): parsing, printing,
slot counts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.trace.formula import (
    Apply,
    Attribute,
    Compose,
    Entity,
    FormulaError,
    SceneRef,
    TextEntity,
    TextRelation,
    anchors,
    attributes,
    parse,
    parse_target,
    slot_count,
    to_text,
)

# Table 5 of the paper ("Example formula templates across different slot levels"), copied
# from the paper's text as extracted (subscripts flattened: Te = T_e, grel = g_rel).
TABLE_5 = {
    1: ["Te⊕g", "f"],
    2: ["C(f,Te⊕g)", "f⊕g", "Te⊕g⊕g", "C(f,f)"],
    3: ["f⊕g⊕g", "C(f,Te⊕g)⊕gglobal", "C(f,f)⊕gglobal", "C(f,Te⊕g,Te⊕g)"],
    4: ["C(Te⊕g,f,f)⊕gglobal", "C(Te⊕g,Te⊕g,f)⊕gglobal", "C(f,f⊕g)⊕gglobal"],
    5: ["C(Te⊕g,f,f,f)⊕gglobal", "C(C(Te⊕g,f)⊕grel,f)⊕gglobal",
        "C(C(Te⊕g,Te⊕g)⊕grel,f)⊕gglobal"],
    6: ["C(C(f,f)⊕grel,Te⊕g⊕g)⊕gglobal", "C(Te⊕g,f,f⊕g⊕g)⊕gglobal"],
    7: ["C(C(f,f,f)⊕grel,f⊕g)⊕gglobal", "C(C(Te⊕g,f,f)⊕grel,f⊕g)⊕gglobal"],
    8: ["C(C(Te⊕g,f⊕g)⊕grel,Te⊕g,f⊕g)⊕gglobal",
        "C(C(f,f)⊕grel,Te⊕g,Te⊕g,f)⊕gglobal⊕gglobal"],
}
TEMPLATES = [(slot, formula) for slot, formulas in TABLE_5.items() for formula in formulas]

# Sec. 3.3 and Eq. (5): the running example, printed in the paper as
# F = C(C(f1, Te⊕g1)⊕grel, f2⊕g2⊕g3)⊕gglobal
EQ5 = "C(C(f1,Te⊕g1)⊕grel,f2⊕g2⊕g3)⊕gglobal"
EQ5_TREE = Apply(
    Compose(None, (
        Apply(Compose(None, (Entity(1), Apply(TextEntity("e"), (Attribute(None, 1),)))),
              (Attribute("rel"),)),
        Apply(Entity(2), (Attribute(None, 2), Attribute(None, 3))),
    )),
    (Attribute("global"),),
)


@pytest.mark.parametrize(("slot", "formula"), TEMPLATES)
def test_every_table_5_template_has_its_slot_level(slot, formula):
    # Eq. (2): slot(F) = |f| + |g|; Table 5 lists each template under its slot level
    assert slot_count(parse(formula)) == slot


def test_table_5_covers_slots_1_to_8_and_text_entities_do_not_count():
    assert sorted(TABLE_5) == list(range(1, 9))
    # "Te⊕g" is a slot-1 template: the text carrier is not a slot, its g is
    te_g = parse("Te⊕g")
    assert te_g == Apply(TextEntity("e"), (Attribute(),))
    assert (len(anchors(te_g)), len(attributes(te_g))) == (0, 1)


def test_the_slot_4_example_of_section_3_4():
    # "formula C(f1, Te⊕g1⊕g2)⊕gglobal is a slot-4 case"
    expr = parse("C(f1,Te⊕g1⊕g2)⊕gglobal")
    assert slot_count(expr) == 4
    assert expr == Apply(Compose(None, (Entity(1), Apply(TextEntity(), (Attribute(None, 1),
                                                                        Attribute(None, 2))))),
                         (Attribute("global"),))


def test_equation_5_tree_and_canonical_text():
    assert parse(EQ5) == EQ5_TREE
    assert to_text(EQ5_TREE) == "C(C(f1, T_e⊕g1)⊕g_rel, f2⊕g2⊕g3)⊕g_global"
    assert to_text(EQ5_TREE, ascii=True) == "C(C(f1, T_e(+)g1)(+)g_rel, f2(+)g2(+)g3)(+)g_global"
    # inner composition (f1, Te⊕g1) under g_rel, outer with f2⊕g2⊕g3, then the global term
    outer = EQ5_TREE.carrier
    assert [to_text(p) for p in outer.parts] == ["C(f1, T_e⊕g1)⊕g_rel", "f2⊕g2⊕g3"]
    assert slot_count(EQ5_TREE) == 7  # f1, f2 + g1, g_rel, g2, g3, g_global


def test_other_formulas_of_the_paper():
    # Sec. 3.2: C(f1, Te⊕g1)⊕g_rel; Table 6: the cacao-pod case C(f1⊕g1), one part
    assert to_text(parse("C(f_1,T_e⊕g_1)⊕g_rel")) == "C(f1, T_e⊕g1)⊕g_rel"
    cacao = parse("C(f1⊕g1)")
    assert cacao == Compose(None, (Apply(Entity(1), (Attribute(None, 1),)),))
    assert slot_count(cacao) == 2
    # Eq. (3) virtual try-on f(person)⊕g_{attach,1}⊕g_{attach,2} (with an indexed anchor)
    try_on = parse("f1⊕g_{attach,1}⊕g_{attach,2}")
    assert try_on == Apply(Entity(1), (Attribute("attach", 1), Attribute("attach", 2)))
    assert to_text(try_on) == "f1⊕g_attach1⊕g_attach2"
    # Eq. (4) group photo C(f1, ..., fn)⊕g_layout, for n = 3: the slot-4 Figure 5 shape
    assert slot_count(parse("C(f1,f2,f3)⊕g_layout")) == 4
    # the relation given by text, T_rel (Sec. 3.2), is not a slot
    with_text = parse("C(f1, f2)⊕T_rel")
    assert with_text == Apply(Compose(None, (Entity(1), Entity(2))), (TextRelation(),))
    assert slot_count(with_text) == 2


def test_demo_formulas_parse():
    from scripts.demo.spec import TASKS

    formulas = [task.formula for task in TASKS]
    assert formulas
    for formula in formulas:
        expr = parse(formula)
        assert slot_count(expr) >= 1 and parse(to_text(expr)) == expr


@pytest.mark.parametrize("spelling", [
    "C(C(f1,Te⊕g1)⊕grel,f2⊕g2⊕g3)⊕gglobal",
    "C ( C ( f_1 , T_e ⊕ g_1 ) ⊕ g_rel , f_2⊕g_2⊕g_3 ) ⊕ g_global",
    "C(C(f_{1},T_{e}(+)g_{1})(+)g_{rel},f2 + g2 + g3)(+)g_{global}",
    r"C(C(f_1,\;T_e \oplus g_1) \oplus g_{rel},\,f_2 \oplus g_2 \oplus g_3) \oplus g_{global}",
    "C(C(f1,\n\tTe⊕g1)⊕g_REL,f2⊕g2⊕g3)⊕g_Global",
])
def test_spellings_and_whitespace(spelling):
    assert parse(spelling) == EQ5_TREE


def test_subscript_spellings():
    assert parse("f1") == parse("f_1") == parse("f_{1}") == Entity(1)
    assert parse("T_s1") == parse("Ts1") == parse("T_{s,1}") == parse("T_s_1") == TextEntity(
        "s", 1)
    assert parse_target("g_rel1") == parse_target("g_{rel,1}") == parse_target("grel_1") \
        == Attribute("rel", 1)
    assert parse_target("g_{12}") == Attribute(None, 12)
    assert parse("C_1(f1)") == parse("C1(f1)") == parse("C_{1}(f1)") == Compose(1, (Entity(1),))
    assert to_text(Compose(2, (Entity(1),))) == "C2(f1)"
    assert parse("f1⊕T_rel") == parse("f1⊕Trel") == Apply(Entity(1), (TextRelation(),))


@pytest.mark.parametrize(("text", "position", "expected", "found"), [
    ("C(f1, f2 ⊕ f3)", 11, ('"g"', '"T_rel"'), '"f3"'),
    ("C(f1 f2)", 5, ('"⊕"', '","', '")"'), '"f2"'),
    ("C(f1, f2", 8, ('"⊕"', '","', '")"'), "end of formula"),
    ("f1 ⊕", 4, ('"g"', '"T_rel"'), "end of formula"),
    ("C f1", 2, ('"("',), '"f1"'),
    ("C(f1))", 5, ('"⊕"', "end of formula"), '")"'),
    ("g1", 0, ('"f"', '"T_e"', '"C("'), '"g1"'),
    ("T_rel⊕g1", 0, ('"f"', '"T_e"', '"C("'), '"T_rel"'),
    ("C()", 2, ('"f"', '"T_e"', '"C("'), '")"'),
    ("f1⊕g_", 3, ('"g"', '"T_rel"'), '"g_"'),
    ("f1 ⊗ g1", 3, ('"⊕"', "end of formula"), '"⊗"'),
    ("C(f1,, f2)", 5, ('"f"', '"T_e"', '"C("'), '","'),
    ("", 0, ('"f"', '"T_e"', '"C("'), "end of formula"),
    ("C(f1, fit)", 6, ('"f"', '"T_e"', '"C("'), '"fit"'),
])
def test_errors_name_position_expected_and_found(text, position, expected, found):
    with pytest.raises(FormulaError) as info:
        parse(text)
    err = info.value
    assert (err.position, err.expected, err.found) == (position, expected, found)
    assert isinstance(err, ValueError)
    if found != "end of formula":
        assert text[err.position:].startswith(found.strip('"'))


def test_error_message_format():
    with pytest.raises(FormulaError) as info:
        parse("C(f1, f2 ⊕ f3)")
    assert str(info.value) == 'at 11: expected "g" or "T_rel", found "f3"'
    with pytest.raises(FormulaError) as info:
        parse("C(f1 f2)")
    assert str(info.value) == 'at 5: expected "⊕", "," or ")", found "f2"'


def test_not_text_and_invalid_trees():
    with pytest.raises(TypeError):
        parse(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Compose(None, ())
    with pytest.raises(ValueError):
        Apply(Apply(Entity(1), (Attribute(),)), (Attribute(),))  # chains are flat
    with pytest.raises(ValueError):
        Apply(Entity(1), ())
    with pytest.raises(ValueError):
        TextEntity("rel")
    with pytest.raises(ValueError):
        Entity(-1)
    with pytest.raises(ValueError):
        Attribute("Rel")


def test_targets_allow_a_lone_attribute_and_a_bare_composition():
    # Table 6 targets: "g1, IP on cacao_pod_A" and "C, duplication"; demo: "C⊕g_vfx"
    assert parse_target("g1") == Attribute(None, 1)
    assert parse_target("C") == SceneRef()
    assert parse_target("C⊕g_vfx") == Apply(SceneRef(), (Attribute("vfx"),))
    assert parse_target("f1⊕g1") == Apply(Entity(1), (Attribute(None, 1),))
    with pytest.raises(FormulaError):
        parse("C⊕g_vfx")  # a formula needs the parts of its composition


# ----------------------------------------------------------------------------- properties
INDEX = st.none() | st.integers(min_value=0, max_value=40)
WORD = st.sampled_from(["rel", "global", "attach", "ip", "style", "bg", "layout", "color",
                        "pattern", "vfx", "view", "e", "s"]) | st.from_regex(r"[a-z]{1,6}",
                                                                            fullmatch=True)
ENTITY = st.builds(Entity, INDEX)
TEXT_ENTITY = st.builds(TextEntity, WORD.filter(lambda w: w != "rel"), INDEX)
ATTR = st.builds(Attribute, st.none() | WORD, INDEX) | st.builds(TextRelation, INDEX)


def _extend(inner):
    compose = st.builds(Compose, INDEX, st.lists(inner, min_size=1, max_size=4).map(tuple))
    carrier = ENTITY | TEXT_ENTITY | compose
    return compose | st.builds(Apply, carrier, st.lists(ATTR, min_size=1, max_size=3).map(tuple))


EXPRS = st.recursive(ENTITY | TEXT_ENTITY, _extend, max_leaves=12)
SPACE = st.sampled_from(["", "", " ", "  ", "\t", "\n", "\\,", " \\; "])
APPLY = st.sampled_from(["⊕", "(+)", "+", "\\oplus "])


def _number(draw, index, braces_ok=True):
    if index is None:
        return [""]
    i = str(index)
    return [i, "_" + i] + (["_{" + i + "}"] if braces_ok else [])


def _spell(draw, node) -> str:
    """A random legal spelling of ``node``: subscript styles, operators, whitespace."""
    pick = lambda options: draw(st.sampled_from(options))  # noqa: E731
    ws = lambda: draw(SPACE)  # noqa: E731
    if isinstance(node, Entity):
        return "f" + pick(_number(draw, node.index))
    if isinstance(node, TextEntity):
        i = "" if node.index is None else str(node.index)
        forms = ["T" + node.label + i, "T_" + node.label + i, "T_{" + node.label + i + "}"]
        if i:
            forms += ["T_" + node.label + "_" + i, "T_{" + node.label + "," + i + "}"]
        return pick(forms)
    if isinstance(node, TextRelation):
        i = "" if node.index is None else str(node.index)
        return pick(["T_rel" + i, "Trel" + i, "T_{rel" + i + "}", "T_REL" + i])
    if isinstance(node, Attribute):
        i = "" if node.index is None else str(node.index)
        if node.kind is None:
            return "g" + pick(_number(draw, node.index))
        k = node.kind
        forms = ["g_" + k + i, "g" + k + i, "g_" + k.upper() + i, "g_{" + k + i + "}"]
        if i:
            forms += ["g_" + k + "_" + i, "g_{" + k + "," + i + "}"]
        return pick(forms)
    if isinstance(node, Compose):
        head = "C" + pick(_number(draw, node.index))
        sep = ws() + "," + ws()
        return head + ws() + "(" + ws() + sep.join(_spell(draw, p) for p in node.parts) \
            + ws() + ")"
    assert isinstance(node, Apply)
    text = _spell(draw, node.carrier)
    for attr in node.attrs:
        text += ws() + draw(APPLY) + ws() + _spell(draw, attr)
    return text


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(EXPRS)
def test_parse_of_print_is_identity(expr):
    assert parse(to_text(expr)) == expr
    assert parse(to_text(expr, ascii=True)) == expr


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_legal_spelling_parses_to_its_tree_and_printing_is_idempotent(data):
    expr = data.draw(EXPRS)
    text = _spell(data.draw, expr)
    parsed = parse(text)
    assert parsed == expr
    canonical = to_text(parsed)
    assert to_text(parse(canonical)) == canonical
    assert to_text(parse(to_text(parsed, ascii=True)), ascii=True) == to_text(parsed,
                                                                              ascii=True)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.lists(EXPRS, min_size=1, max_size=4), st.lists(ATTR, min_size=1, max_size=3))
def test_slot_count_is_additive(parts, attrs):
    scene = Compose(None, tuple(parts))
    assert slot_count(scene) == sum(slot_count(p) for p in parts)
    n_g = sum(isinstance(a, Attribute) for a in attrs)
    assert slot_count(Apply(scene, tuple(attrs))) == slot_count(scene) + n_g
    assert slot_count(Apply(Entity(1), tuple(attrs))) == 1 + n_g
    assert slot_count(Apply(TextEntity(), tuple(attrs))) == n_g
