"""Failure localization on diagnostic trees (TRACE-Bench paper, Sec. 4.4, Table 3,
Appendix C.3, Figure 11), on hand-built trees covering every outcome category."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from annotation.trace.decompose import decompose, retained_questions
from annotation.trace.localize import (
    CATEGORIES,
    GLOBAL_REFERENCE,
    JOINT_COMPOSITION,
    PERSISTENT_FAILURE,
    RELATION_ATTRIBUTE,
    STABLE_SUCCESS,
    cumulative_pass_rate,
    distribution,
    distribution_table,
    instance_results,
    localize,
)
from tests.test_formula import EQ5


def _results(rows: dict[tuple[str, str], dict[str, bool]]) -> pd.DataFrame:
    """{(operator, target): {node: passed}} -> the tidy results table."""
    return pd.DataFrame([{"node": node, "operator": op, "target": target, "passed": passed}
                         for (op, target), at in rows.items() for node, passed in at.items()])


def _row(table: pd.DataFrame, target: str) -> pd.Series:
    found = table[table.target == target]
    assert len(found) == 1
    return found.iloc[0]


def test_table_3_categories_in_the_paper_order():
    assert CATEGORIES == ("Stable Success", "Persistent Failure", "Global Reference",
                          "Joint Composition", "Relation / Attribute")


def test_figure_5_both_anchors_fail_at_the_root_and_pass_once_the_style_is_stripped():
    """Sec. 4.4: "For f2, the woman is correct in N1 and N2b, but becomes inconsistent in
    N0 ... For f1, the vintage car already changes in N2a ... Yet it is preserved in N1".
    Both fail at the root (Fig. 1: the case "fails on the woman and the vintage car") and
    first pass at N1, the Rule 1 step that strips g_style: Global Reference."""
    nodes = decompose("C(f1,f2,f3)⊕g_style")
    results = _results({
        ("f", "f1"): {"N0": False, "N1": True, "N2a": False},
        ("f", "f2"): {"N0": False, "N1": True, "N2b": True},
        ("f", "f3"): {"N0": True, "N1": True, "N2c": True},
    })
    table = localize(nodes, results)
    f1, f2, f3 = (_row(table, t) for t in ("f1", "f2", "f3"))
    for row in (f1, f2):
        assert row.category == GLOBAL_REFERENCE
        assert (row.first_pass, row.rule, row.removed, row.path) == ("N1", 1, "g_style",
                                                                      "N0 > N1")
        assert row.depth == 1 and not row.root_passed
    assert f3.category == STABLE_SUCCESS and f3.first_pass == "N0" and f3.rel_depth == 0
    assert not f3.unstable


def test_every_category_on_the_figure_10_tree():
    nodes = decompose(EQ5)
    results = _results({
        # fails with the global term only: Global Reference (Rule 1)
        ("g", "g_rel"): {"N0": False, "N1": True, "N2a": True},
        # fails until the scene is flattened: Joint Composition (Rule 2)
        ("f", "f2"): {"N0": False, "N1": False, "N2b": True, "N3b1": True, "N3b2": True,
                      "N3b3": True},
        # passes once the referenced relation is text: Relation / Attribute (Rule 3)
        ("f", "f1"): {"N0": False, "N1": False, "N2a": False, "N3a": True, "N4a": True},
        # passes only without one of the added attributes: Relation / Attribute (Rule 4)
        ("g", "g2"): {"N0": False, "N1": False, "N2b": False, "N3b1": True},
        # never passes: Persistent Failure
        ("g", "g3"): {"N0": False, "N1": False, "N2b": False, "N3b2": False},
        # passes at the root: Stable Success, though unstable below it
        ("⊕", "⊕, Te⊕g1, fit"): {"N0": True, "N1": True, "N2a": False, "N3a": True,
                                 "N4b": True},
        ("C", "C, duplication"): {"N0": True, "N1": True, "N2a": True, "N3a": True},
    })
    table = localize(nodes, results).set_index("target")
    assert table.loc["g_rel", "category"] == GLOBAL_REFERENCE
    assert table.loc["f2", "category"] == JOINT_COMPOSITION
    assert (table.loc["f2", "first_pass"], table.loc["f2", "path"]) == ("N2b", "N0 > N1 > N2b")
    assert table.loc["f2", "removed"] == "C(f1, T_e⊕g1)⊕g_rel"  # the branch made text
    assert table.loc["f1", "category"] == RELATION_ATTRIBUTE
    assert (table.loc["f1", "first_pass"], table.loc["f1", "rule"]) == ("N3a", 3)
    assert table.loc["f1", "removed"] == "g_rel"
    assert table.loc["g2", "category"] == RELATION_ATTRIBUTE
    assert (table.loc["g2", "first_pass"], table.loc["g2", "rule"]) == ("N3b1", 4)
    assert table.loc["g2", "removed"] == "g3"
    assert table.loc["g3", "category"] == PERSISTENT_FAILURE
    assert pd.isna(table.loc["g3", "first_pass"]) and math.isnan(table.loc["g3", "rel_depth"])
    assert table.loc["⊕, Te⊕g1, fit", "category"] == STABLE_SUCCESS
    assert table.loc["⊕, Te⊕g1, fit", "unstable"]
    assert not table.loc["C, duplication", "unstable"]
    # relative depth (C.3): paths N0-N1-N2a-N3a-N4x have 4 steps, N0-N1-N2b-N3bx have 3
    assert table.loc["g_rel", "rel_depth"] == pytest.approx(1 / 4)  # N1, best over paths
    assert table.loc["f2", "rel_depth"] == pytest.approx(2 / 3)
    assert table.loc["f1", "rel_depth"] == pytest.approx(3 / 4)
    assert table.loc["g2", "rel_depth"] == pytest.approx(1.0)


def test_paths_that_disagree_take_the_shallowest_first_pass():
    # an instance on both branches (a binding of any carrier): it passes at N2b (depth 2,
    # Rule 2) and at N3a (depth 3, Rule 3): the first step where it passes is N1 -> N2b
    nodes = decompose(EQ5)
    results = _results({("⊕", ""): {"N0": False, "N1": False, "N2a": False, "N2b": True,
                                     "N3a": True}})
    row = localize(nodes, results).iloc[0]
    assert (row.first_pass, row.category) == ("N2b", JOINT_COMPOSITION)
    assert row.instance == "⊕"


def test_instances_not_evaluated_at_the_root_are_left_out():
    nodes = decompose("C(f1,f2,f3)⊕g_style")
    results = _results({("f", "f1"): {"N1": True}, ("f", "f2"): {"N0": True}})
    assert localize(nodes, results).target.tolist() == ["f2"]


def test_trees_without_a_rule_or_a_root_are_refused():
    nodes = decompose("C(f1,f2,f3)⊕g_style")
    results = _results({("f", "f1"): {"N0": False, "N1": True}})
    stored = [replace(n, rule=str(n.rule)) if n.rule else n for n in nodes]  # JSON "1"
    assert localize(stored, results).iloc[0].category == GLOBAL_REFERENCE
    unruled = [replace(n, rule=None) for n in nodes]
    with pytest.raises(ValueError, match="N1: rule None is not one of 1-4"):
        localize(unruled, results)
    with pytest.raises(ValueError, match="one root, not 0"):
        localize(nodes[1:], results)


def test_instance_results_from_question_answers():
    """Sec. 3.5/C.2: an instance is scored at a node with the questions that node keeps;
    here it passes when all of them pass (no decision = left out)."""
    checklist = [("q1", "f", "f1"), ("q2", "f", "f1"), ("q3", "g", "g1, IP on cacao_pod_A"),
                 ("q4", "(+)", "⊕, f1⊕g1, fit"), ("q5", "C", "C, duplication")]
    nodes = decompose("C(f1⊕g1)")
    retained = {n.id: retained_questions(n, checklist) for n in nodes}
    questions = pd.DataFrame(checklist, columns=["question_id", "operator", "target"])
    passed = pd.DataFrame([
        ("N0", "q1", True), ("N0", "q2", False), ("N0", "q3", False), ("N0", "q4", True),
        ("N0", "q5", np.nan),
        ("N1", "q1", True), ("N1", "q2", True), ("N1", "q3", True),  # q3 is not kept at N1
        ("N1", "q5", True),
    ], columns=["node", "question_id", "passed"])
    inst = instance_results(retained, passed, questions)
    got = {(r.node, r.operator, r.target): r.passed for r in inst.itertuples()}
    assert got == {
        ("N0", "f", "f1"): False, ("N0", "g", "g1, IP on cacao_pod_A"): False,
        ("N0", "⊕", "⊕, f1⊕g1, fit"): True,
        ("N1", "f", "f1"): True, ("N1", "C", "C, duplication"): True,
    }
    table = localize(nodes, inst).set_index("target")
    # f1 fails in the full case and passes once g1 is removed (Rule 4)
    assert table.loc["f1", "category"] == RELATION_ATTRIBUTE
    assert table.loc["g1, IP on cacao_pod_A", "category"] == PERSISTENT_FAILURE
    assert table.loc["⊕, f1⊕g1, fit", "category"] == STABLE_SUCCESS
    assert "C, duplication" not in table.index  # no decision at the root


def _localized() -> pd.DataFrame:
    """Two cases: 4 f instances (1 SS, 1 PF, 2 GR), 2 g (1 JC, 1 R/A), 1 C (SS)."""
    case_a = localize(decompose("C(f1,f2,f3)⊕g_style"), _results({
        ("f", "f1"): {"N0": True},
        ("f", "f2"): {"N0": False, "N1": False, "N2b": False},
        ("f", "f3"): {"N0": False, "N1": True},
        ("C", "C, duplication"): {"N0": True},
    }))
    case_b = localize(decompose(EQ5), _results({
        ("f", "f1"): {"N0": False, "N1": True},
        ("g", "g1"): {"N0": False, "N1": False, "N2a": True},
        ("g", "g2"): {"N0": False, "N1": False, "N2b": False, "N3b1": True},
    }))
    return pd.concat([case_a.assign(case="a"), case_b.assign(case="b")], ignore_index=True)


def test_distribution_as_in_table_3():
    dist = distribution(_localized())
    assert list(dist.operator.unique()) == ["f", "g", "C", "Overall"]
    got = {(r.operator, r.category): (r.n, r.percent) for r in dist.itertuples()}
    assert got[("f", STABLE_SUCCESS)] == (1, 25.0)
    assert got[("f", PERSISTENT_FAILURE)] == (1, 25.0)
    assert got[("f", GLOBAL_REFERENCE)] == (2, 50.0)
    assert got[("f", JOINT_COMPOSITION)] == (0, 0.0)
    assert got[("g", JOINT_COMPOSITION)] == (1, 50.0)
    assert got[("g", RELATION_ATTRIBUTE)] == (1, 50.0)
    assert got[("C", STABLE_SUCCESS)] == (1, 100.0)
    assert got[("Overall", STABLE_SUCCESS)] == (2, pytest.approx(200 / 7))
    assert got[("Overall", GLOBAL_REFERENCE)] == (2, pytest.approx(200 / 7))
    # each column of Table 3 sums to 100 %
    assert dist.groupby("operator").percent.sum().tolist() == pytest.approx([100.0] * 4)
    wide = distribution_table(_localized())
    assert list(wide.index) == list(CATEGORIES)
    assert list(wide.columns) == ["f", "g", "C", "Overall"]
    assert wide.loc[GLOBAL_REFERENCE, "f"] == 50.0


def test_cumulative_pass_rate_as_in_figure_11():
    """C.3: "The cumulative pass rate at a given depth is the proportion of requirements
    that are already successful at the root or first become successful by that point";
    persistent failures never enter the count, so the endpoints stay below 100 %."""
    curve = cumulative_pass_rate(_localized())
    f = curve[curve.operator == "f"].set_index("rel_depth").pass_rate
    # f: SS at 0; f3 passes at N1 of a 2-step path (1/2); f1 of case b at N1 (min 1/4);
    # f2 persistent
    assert f.loc[0.0] == 0.25
    assert f.loc[0.25] == 0.5
    assert f.loc[0.5] == 0.75
    assert f.loc[1.0] == 0.75  # below 100 %: one persistent failure
    g = curve[curve.operator == "g"].set_index("rel_depth").pass_rate
    # g1 at N2a: 2/4 on the left paths; g2 at N3b1: 3/3
    assert (g.loc[0.0], g.loc[0.5], g.loc[1.0]) == (0.0, 0.5, 1.0)
    for _op, part in curve.groupby("operator"):
        assert np.all(np.diff(part.pass_rate.to_numpy()) >= 0)
    grid = cumulative_pass_rate(_localized(), depths=[0.0, 0.5, 1.0])
    overall = grid[grid.operator == "Overall"]
    assert overall.rel_depth.tolist() == [0.0, 0.5, 1.0]
    assert overall.pass_rate.tolist() == pytest.approx([2 / 7, 5 / 7, 6 / 7])
    assert set(overall.n) == {7}
