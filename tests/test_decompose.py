"""Diagnostic trees (TRACE-Bench paper, Sec. 3.5, Sec. 4.4, Appendix C.2, Figures 5 and
10, Table 6): Rules 1-4, node names, text downgrades, node-to-question mapping."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from annotation.trace.decompose import (
    children,
    decompose,
    node_record,
    normalize_operator,
    paths,
    retained_questions,
    steps,
    target_refs,
)
from annotation.trace.formula import (
    Apply,
    Attribute,
    Compose,
    Entity,
    FormulaError,
    SceneRef,
    TextEntity,
    anchors,
    parse,
    slot_count,
    to_text,
)
from tests.test_formula import EQ5, EXPRS, TEMPLATES


def _by_id(nodes):
    return {n.id: n for n in nodes}


# ----------------------------------------------------------------------------- Figure 10
def test_figure_10_rule_sequence():
    """Appendix C.2, Figure 10, on the formula of Eq. (5): "we first apply Rule 1 to strip
    the global reference term g_global, yielding N1. We then apply Rule 2 to flatten the
    outer composition, which separates the left relational subscene N2a from the right
    attribute-transfer branch N2b. On the left branch, Rule 3 removes the relation term
    g_rel, and Rule 2 is applied again to flatten the remaining inner composition into two
    simpler nodes, N4a and N4b. On the right branch, Rule 4 removes one or more transferred
    attributes, producing the simplified nodes N3b1, N3b2, and N3b3." """
    nodes = decompose(EQ5)
    assert [(n.id, n.parent, n.rule) for n in nodes] == [
        ("N0", None, None),
        ("N1", "N0", 1),
        ("N2a", "N1", 2), ("N2b", "N1", 2),
        ("N3a", "N2a", 3),
        ("N3b1", "N2b", 4), ("N3b2", "N2b", 4), ("N3b3", "N2b", 4),
        ("N4a", "N3a", 2), ("N4b", "N3a", 2),
    ]
    t = {n.id: to_text(n.formula) for n in nodes}
    node = _by_id(nodes)
    assert node["N1"].removed == (Attribute("global"),)
    assert t["N1"] == "C(C(f1, T_e⊕g1)⊕g_rel, f2⊕g2⊕g3)"
    assert t["N2a"] == "C(f1, T_e⊕g1)⊕g_rel"  # the left relational subscene
    assert t["N2b"] == "f2⊕g2⊕g3"  # the right attribute-transfer branch
    assert node["N3a"].removed == (Attribute("rel"),)
    assert t["N3a"] == "C(f1, T_e⊕g1)⊕T_rel"  # the relation survives as text (Rule 3)
    assert {t["N4a"], t["N4b"]} == {"f1", "T_e⊕g1"}
    # the three Rule 4 nodes keep the carrier f2 and remove one or more of g2, g3
    removed = []
    for name in ("N3b1", "N3b2", "N3b3"):
        assert anchors(node[name].formula) == [Entity(2)]
        assert node[name].removed and set(node[name].removed) <= {Attribute(None, 2),
                                                                   Attribute(None, 3)}
        removed.append(frozenset(node[name].removed))
    assert len(set(removed)) == 3
    assert [t[n] for n in ("N3b1", "N3b2", "N3b3")] == ["f2⊕g2", "f2⊕g3", "f2"]


def test_figure_10_leaves_and_text_downgrades():
    nodes = decompose(EQ5)
    node = _by_id(nodes)
    # Sec. 3.5: the left branch ends in "a single anchored entity f or an atomic attribute
    # transfer Te⊕g"; the right branch in the Rule 4 variants of f2
    leaves = [p[-1] for p in paths(nodes)]
    assert leaves == ["N4a", "N4b", "N3b1", "N3b2", "N3b3"]
    assert node["N4a"].formula == Entity(1)
    assert node["N4b"].formula == Apply(TextEntity(), (Attribute(None, 1),))
    # C.2: "Removed reference content is not simply deleted; ... it is downgraded to an
    # ordinary text-only description"
    assert [to_text(d) for d in node["N2a"].downgrades] == ["f2⊕g2⊕g3"]
    assert [to_text(d) for d in node["N2b"].downgrades] == ["C(f1, T_e⊕g1)⊕g_rel"]
    assert [to_text(d) for d in node["N4a"].downgrades] == ["f2⊕g2⊕g3", "g_rel", "T_e⊕g1"]
    assert [to_text(d) for d in node["N4b"].downgrades] == ["f2⊕g2⊕g3", "g_rel", "f1"]
    assert node["N1"].downgrades == () and node["N3b1"].downgrades == node["N2b"].downgrades
    assert [c.id for c in children(nodes, "N2b")] == ["N3b1", "N3b2", "N3b3"]


def test_node_record():
    n1 = _by_id(decompose(EQ5))["N1"]
    assert node_record(n1) == {
        "id": "N1", "parent": "N0", "depth": 1, "rule": 1,
        "rule_name": "global-reference stripping", "removed": ["g_global"],
        "formula": "C(C(f1, T_e⊕g1)⊕g_rel, f2⊕g2⊕g3)", "downgrades": [],
    }
    assert node_record(n1, ascii=True)["formula"] == "C(C(f1, T_e(+)g1)(+)g_rel, f2(+)g2(+)g3)"


# ----------------------------------------------------------------------------- Figure 5
def test_figure_5_slot_4_case():
    """Sec. 4.4 on Figure 5 (slot 4): f2 is correct in N1 and N2b but not in N0 (the global
    style is the culprit); f1 changes in N2a (f1 alone) but is preserved in N1."""
    formula = "C(f1,f2,f3)⊕g_style"
    assert slot_count(parse(formula)) == 4
    nodes = decompose(formula)
    node = _by_id(nodes)
    assert [n.id for n in nodes] == ["N0", "N1", "N2a", "N2b", "N2c"]
    assert node["N1"].rule == 1 and node["N1"].removed == (Attribute("style"),)
    assert node["N1"].formula == Compose(None, (Entity(1), Entity(2), Entity(3)))
    assert node["N2a"].rule == 2 and node["N2a"].formula == Entity(1)
    assert node["N2b"].rule == 2 and node["N2b"].formula == Entity(2)
    assert node["N2a"].downgrades == (Entity(2), Entity(3))  # the others become text


# ----------------------------------------------------------------------------- the rules
def test_rule_1_strips_global_terms_one_by_one():
    # Table 5, slot 8: two global terms, removed one by one (C.2 Rule 1)
    nodes = decompose("C(C(f,f)⊕grel,Te⊕g,Te⊕g,f)⊕gglobal⊕gglobal")
    assert [(n.id, n.rule) for n in nodes[:3]] == [("N0", None), ("N1", 1), ("N2", 1)]
    assert to_text(nodes[2].formula) == "C(C(f, f)⊕g_rel, T_e⊕g, T_e⊕g, f)"
    # distinct scene-level terms: the last applied goes first
    nodes = decompose("C(f1⊕g_view)⊕g_bg⊕g_light")
    assert [(n.id, n.rule, [to_text(r) for r in n.removed]) for n in nodes] == [
        ("N0", None, []), ("N1", 1, ["g_light"]), ("N2", 1, ["g_bg"]),
        ("N3", 4, ["g_view"])]
    assert to_text(nodes[-1].formula) == "C(f1)"


def test_rule_3_comes_before_flattening_and_after_global_stripping():
    nodes = decompose("C(f1, f2)⊕g_rel⊕g_global")
    assert [(n.id, n.rule, to_text(n.formula)) for n in nodes] == [
        ("N0", None, "C(f1, f2)⊕g_rel⊕g_global"),
        ("N1", 1, "C(f1, f2)⊕g_rel"),
        ("N2", 3, "C(f1, f2)⊕T_rel"),
        ("N3a", 2, "f1"), ("N3b", 2, "f2"),
    ]
    assert nodes[2].downgrades == (Attribute("rel"),)


def test_cacao_case_keeps_its_scene():
    # Table 6: C(f1⊕g1) has one branch: nothing to flatten, Rule 4 removes g1 in the scene
    nodes = decompose("C(f1⊕g1)")
    assert [(n.id, n.parent, n.rule, to_text(n.formula)) for n in nodes] == [
        ("N0", None, None, "C(f1⊕g1)"), ("N1", "N0", 4, "C(f1)")]


def test_rule_4_on_text_carriers_and_single_attributes():
    # Te⊕g⊕g (Table 5, slot 2): each attribute alone; the bare text carrier is no test
    nodes = decompose("Te⊕g1⊕g2")
    assert [(n.id, to_text(n.formula)) for n in nodes] == [
        ("N0", "T_e⊕g1⊕g2"), ("N1a", "T_e⊕g1"), ("N1b", "T_e⊕g2")]
    # f⊕g: "whether the failure comes from the carrier anchor itself or from the added
    # attribute transfer" (Rule 4)
    assert [to_text(n.formula) for n in decompose("f1⊕g_ip")] == ["f1⊕g_ip", "f1"]
    assert [to_text(n.formula) for n in decompose("T_e⊕g1")] == ["T_e⊕g1"]  # a leaf
    assert [to_text(n.formula) for n in decompose("f1")] == ["f1"]
    assert steps(parse("f1")) == []


def test_node_names_stay_unique_when_branches_meet_at_one_depth():
    # at depth 2, N1a is flattened by Rule 2 while N1b's Rule 4 children are numbered b1-b3:
    # the fresh letters skip "b"
    nodes = decompose("C(C(f1, f2), f3⊕g1⊕g2)")
    ids = [n.id for n in nodes]
    assert ids == ["N0", "N1a", "N1b", "N2a", "N2c", "N2b1", "N2b2", "N2b3"]
    node = _by_id(nodes)
    assert (node["N2a"].formula, node["N2c"].formula) == (Entity(1), Entity(2))
    assert node["N2a"].parent == node["N2c"].parent == "N1a"


@pytest.mark.parametrize(("slot", "formula"), TEMPLATES)
def test_every_table_5_template_ends_in_single_units(slot, formula):
    """C.2 stopping criterion: "leaf nodes usually correspond to a single anchor, a single
    attribute transfer, or a minimally composed scene"; for the Table 5 templates every
    leaf is an anchor or one attribute bound to one carrier."""
    nodes = decompose(formula)
    assert nodes[0].formula == parse(formula) and slot_count(nodes[0].formula) == slot
    for path in paths(nodes):
        leaf = _by_id(nodes)[path[-1]].formula
        single_anchor = isinstance(leaf, Entity)
        single_transfer = (isinstance(leaf, Apply) and len(leaf.attrs) == 1
                           and isinstance(leaf.carrier, Entity | TextEntity))
        assert single_anchor or single_transfer, (formula, to_text(leaf))


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(EXPRS)
def test_tree_invariants(expr):
    nodes = decompose(expr)
    node = _by_id(nodes)
    assert len(node) == len(nodes) and nodes[0].id == "N0"
    root_anchors = set(anchors(expr))
    for n in nodes[1:]:
        parent = node[n.parent]
        assert n.depth == parent.depth + 1 and n.id.startswith(f"N{n.depth}")
        # every step removes reference-conditioned content (C.2 general principle)
        assert slot_count(n.formula) < slot_count(parent.formula)
        assert set(anchors(n.formula)) <= root_anchors
        assert n.rule in (1, 2, 3, 4) and n.removed


# ----------------------------------------------------------------------------- questions
# Table 6: the full checklist of the cacao-pod case C(f1⊕g1) (operator, target)
CACAO = [
    ("q1", "f", "f1"), ("q2", "f", "f1"),
    ("q3", "g", "g1, IP on cacao_pod_A"), ("q4", "g", "g1, IP on cacao_pod_A"),
    ("q5", "g", "g1, IP on cacao_pod_A"), ("q6", "g", "g1, IP on cacao_pod_A"),
    ("q7", "⊕", "⊕, f1⊕g1, carrier"), ("q8", "⊕", "⊕, f1⊕g1, fit"),
    ("q9", "⊕", "⊕, f1⊕g1, fit"), ("q10", "⊕", "⊕, f1⊕g1, exclusivity"),
    ("q11", "C", "C, spatial"), ("q12", "C", "C, relation"), ("q13", "C", "C, duplication"),
    ("q14", "C", "C, leakage"), ("q15", "C", "C, leakage"),
]


def test_cacao_checklist_per_node():
    """C.2: "The root node uses the full checklist of the original case, while each child
    node uses the subset of questions that remains relevant after simplification"."""
    n0, n1 = decompose("C(f1⊕g1)")
    assert retained_questions(n0, CACAO) == [q for q, _o, _t in CACAO]
    # g1 removed by Rule 4: its g and ⊕ questions go, the anchor and the scene stay
    assert retained_questions(n1, CACAO) == ["q1", "q2", "q11", "q12", "q13", "q14", "q15"]


def test_target_refs():
    assert target_refs("f1") == (Entity(1),)
    assert target_refs("g1, IP on cacao_pod_A") == (Attribute(None, 1),)
    assert target_refs("⊕, f1⊕g1, exclusivity") == (Apply(Entity(1), (Attribute(None, 1),)),)
    assert target_refs("C, duplication") == (SceneRef(),)
    assert target_refs("C⊕g_vfx, wind direction") == (Apply(SceneRef(), (Attribute("vfx"),)),)
    assert target_refs("C, layout f1") == (SceneRef(),)  # free text is not a reference
    assert target_refs("⊕, C(f1, f2)⊕g_rel, fit") == (
        Apply(Compose(None, (Entity(1), Entity(2))), (Attribute("rel"),)),)
    assert target_refs("g_{attach,1}, shirt") == (Attribute("attach", 1),)
    assert target_refs("") == () and target_refs(None) == ()
    assert [normalize_operator(o) for o in ("f", "(+)", "+", "⊕", "C", "Apply", "?", None)] \
        == ["f", "⊕", "⊕", "⊕", "C", "⊕", "", ""]


# a checklist for the Eq. (5) case, one question per operator target of the formula
EQ5_QUESTIONS = [
    ("f1", "f", "f1"), ("f2", "f", "f2"),
    ("g1", "g", "g1, pose on the robot"), ("g2", "g", "g2"), ("g3", "g", "g3"),
    ("grel", "g", "g_rel"), ("gglobal", "g", "g_global, style"),
    ("b1", "⊕", "⊕, Te⊕g1, carrier"), ("b2", "⊕", "⊕, f2⊕g2, exclusivity"),
    ("b3", "⊕", "⊕, f2⊕g3, fit"), ("brel", "⊕", "C⊕g_rel"),
    ("dup", "C", "C, duplication"), ("free", "", "overall impression"),
]


def test_figure_10_node_to_question_mapping():
    nodes = decompose(EQ5)
    kept = {n.id: retained_questions(n, EQ5_QUESTIONS) for n in nodes}
    everything = [q for q, _o, _t in EQ5_QUESTIONS]
    assert kept["N0"] == everything
    assert kept["N1"] == [q for q in everything if q not in ("gglobal", "free")]
    assert kept["N2a"] == ["f1", "g1", "grel", "b1", "brel", "dup"]
    assert kept["N2b"] == ["f2", "g2", "g3", "b2", "b3"]
    assert kept["N3a"] == ["f1", "g1", "b1", "dup"]  # g_rel is text now (Rule 3)
    assert kept["N3b1"] == ["f2", "g2", "b2"]
    assert kept["N3b2"] == ["f2", "g3", "b3"]
    assert kept["N3b3"] == ["f2"]
    assert kept["N4a"] == ["f1"]
    assert kept["N4b"] == ["g1", "b1"]


def test_questions_without_a_reference_follow_their_operator():
    n0, n1 = decompose("C(f1⊕g1)")
    questions = [("a", "⊕", "⊕"), ("b", "C", ""), ("c", "f", "identity"), ("d", "g", None)]
    assert retained_questions(n1, questions) == ["b", "c"]
    assert retained_questions(n0, questions) == ["a", "b", "c", "d"]


def test_malformed_formula_is_refused():
    with pytest.raises(FormulaError):
        decompose("C(f1,")
