"""Diagnostic trees in bundles (TRACE-Bench): ``meta.formula``, ``meta.tree_nodes`` and node
outputs (``meta.node``) are checked at import, located by file, line and field, and a
refused import leaves the database exactly as it was (docs/bundle-format.md, "TRACE-Bench
diagnostic trees").

Every case starts from the tree fixture (``tests/helpers/tree_fixture.py``: task ``tr1`` with the
formula ``C(f1⊕g1, f2)⊕g_style``, node outputs N1, N2a, N2b, N3a1 of generator ``m``, and a
task ``plain`` without a tree), written with real PNG images, and changes one thing.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from annotation.formats.importers import import_path
from annotation.records import ImportRefused
from annotation.store import Store
from annotation.trace import trees
from tests.helpers.bundles import (
    DOC,
    db_checksum,
    make_image,
    read_jsonl,
    write_doc_example,
    write_jsonl,
)
from tests.helpers.tree_fixture import FORMULA, write_tree_bundle

TSK, OUT = "tasks.jsonl", "outputs.jsonl"
#: outputs.jsonl of the fixture: line -> node (line 1 is the root output, 6 the plain task's)
OUTPUT_LINES = {"N0": 1, "N1": 2, "N2a": 3, "N2b": 4, "N3a1": 5}


# ------------------------------------------------------------------ helpers
def _edit(root: Path, name: str, change: Callable[[list[dict[str, Any]]], None]) -> None:
    rows = read_jsonl(root / name)
    change(rows)
    write_jsonl(root / name, rows)


def _tree(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The explicit tree_nodes of task tr1 (line 1)."""
    return rows[0]["meta"]["tree_nodes"]


@pytest.fixture
def loaded_db(tmp_path: Path, engine_db: str) -> str:
    """A project that already holds something (the documented example), so that
    'unchanged' means more than 'still empty'; on each engine (``engine_db``)."""
    db = engine_db
    with Store.open(db) as store:
        import_path(store, write_doc_example(tmp_path / "doc"))
    return db


def refused(db: str | Path, bundle: Path) -> list[str]:
    """Import ``bundle`` into ``db``: it must be refused and leave ``db`` unchanged; return
    the problems as ``file:line: field: message``."""
    Store.open(db).close()  # a new project is made (migrated) first
    before = db_checksum(db)
    with Store.open(db) as store, pytest.raises(ImportRefused) as caught:
        import_path(store, bundle)
    assert db_checksum(db) == before
    return [str(p) for p in caught.value.problems]


def assert_refused(db: str | Path, bundle: Path, expected: str) -> list[str]:
    """Refused, with a problem that starts with ``expected`` (file:line: field: message...)."""
    problems = refused(db, bundle)
    assert any(p.startswith(expected) for p in problems), (expected, problems)
    return problems


# ------------------------------------------------------------------ valid trees import
@pytest.mark.parametrize("explicit", [False, True], ids=["computed", "explicit"])
def test_the_tree_fixture_imports_with_its_node_outputs(tmp_path, explicit, make_engine_db):
    root = write_tree_bundle(tmp_path / "b", explicit_nodes=explicit)
    with Store.open(make_engine_db("p.db")) as store:
        summary = import_path(store, root)
        assert summary.written["outputs"] == 6
        assert trees.node_output_ids(store) == {"tr1/m/N1", "tr1/m/N2a", "tr1/m/N2b",
                                                "tr1/m/N3a1"}
        assert trees.tree_units(store) == ["tr1/m"]


def test_explicit_nodes_with_formulas_prompts_questions_and_extra_keys(tmp_path, loaded_db):
    root = write_tree_bundle(tmp_path / "b", explicit_nodes=True)

    def change(rows):
        nodes = _tree(rows)
        nodes[1].update(formula="C(f1⊕g1, f2)", questions=["tr1.q1", "tr1.q4", "tr1.q6"],
                        depth=1, rule_name="global-reference stripping")
        nodes[4].update(formula="f1", questions=[], downgrades=[])
    _edit(root, TSK, change)
    with Store.open(loaded_db) as store:
        import_path(store, root)
        tree = trees.load_tree(store, "tr1")
    assert tree is not None
    assert tree.node("N1").questions == ("tr1.q1", "tr1.q4", "tr1.q6")
    assert tree.node("N3a1").formula == "f1" and tree.node("N2a").prompt == "the dog with the hat"


def test_tree_nodes_without_meta_formula_need_a_formula_on_every_node(tmp_path, loaded_db):
    root = write_tree_bundle(tmp_path / "b", explicit_nodes=True)
    formulas = {"N0": FORMULA, "N1": "C(f1⊕g1, f2)", "N2a": "f1⊕g1", "N2b": "f2",
                "N3a1": "f1"}

    def without_formula(rows):
        del rows[0]["meta"]["formula"]
    _edit(root, TSK, without_formula)
    assert_refused(loaded_db, root,
                   "tasks.jsonl:1: meta.tree_nodes[0].formula: missing, and the task has no "
                   "meta.formula to take it from")

    def with_node_formulas(rows):
        for node in _tree(rows):
            node["formula"] = formulas[node["id"]]
    _edit(root, TSK, with_node_formulas)
    with Store.open(loaded_db) as store:
        import_path(store, root)
        assert trees.load_tree(store, "tr1").node("N2b").formula == "f2"


def test_the_root_output_may_say_node_n0(tmp_path, make_engine_db):
    root = write_tree_bundle(tmp_path / "b")
    _edit(root, OUT, lambda rows: rows[0].update(meta={"node": "N0"}))
    with Store.open(make_engine_db("p.db")) as store:
        import_path(store, root)
        assert trees.tree_units(store) == ["tr1/m"]


def test_the_documented_example_imports(tmp_path, make_engine_db):
    """The example of the docs section, with real images: the docs cannot drift."""
    section = DOC.read_text(encoding="utf-8").split("## TRACE-Bench diagnostic trees", 1)[1]
    section = section.split("\n## ", 1)[0]
    files = dict(re.findall(r"`([a-z]+\.jsonl)`[^`]*?```json\n(.*?)```", section, re.S))
    assert sorted(files) == ["judgments.jsonl", "outputs.jsonl", "tasks.jsonl"]
    root = tmp_path / "doc-tree"
    root.mkdir()
    (root / "bundle.json").write_text(json.dumps({
        "name": "tree example", "benchmark": "TRACE-Bench",
        "judges": [{"name": "gpt-5", "kind": "vlm"}]}), encoding="utf-8")
    for name, body in files.items():
        (root / name).write_text(body, encoding="utf-8")
    colors = iter(["red", "blue", "green", "orange", "purple", "brown"])
    for row in read_jsonl(root / TSK):
        for image in row["images"]:
            make_image(root / image["path"], color=next(colors))
    outputs = read_jsonl(root / OUT)
    for row in outputs:
        make_image(root / row["path"], size=(96, 96), color=next(colors))
    assert [o.get("meta", {}).get("node") for o in outputs] == [None, "N1", "N2"]
    with Store.open(make_engine_db("p.db")) as store:
        summary = import_path(store, root)
        assert summary.written["judgments"] == 3
        assert trees.node_output_ids(store) == {"tr1/modelA/N1", "tr1/modelA/N2"}
        tree = trees.load_tree(store, "tr1")
        assert [n.id for n in tree.nodes] == ["N0", "N1", "N2"]
        assert tree.node("N2").questions == ("tr1.q1",)


# ------------------------------------------------------------------ refusals: the task's tree
def _set_formula(value: Any) -> Callable[[list[dict[str, Any]]], None]:
    return lambda rows: rows[0]["meta"].update(formula=value)


def _node(index: int, **changes: Any) -> Callable[[list[dict[str, Any]]], None]:
    def change(rows):
        node = _tree(rows)[index]
        for key, value in changes.items():
            if value is _DROP:
                node.pop(key, None)
            else:
                node[key] = copy.deepcopy(value)
    return change


_DROP = object()


def _nodes(value: Any) -> Callable[[list[dict[str, Any]]], None]:
    return lambda rows: rows[0]["meta"].update(tree_nodes=value)


TREE_CASES: list[tuple[str, bool, Callable, str]] = [
    # (id, explicit tree_nodes?, change of tasks.jsonl, expected start of a problem)
    ("formula-unclosed", False, _set_formula("C(f1⊕g1, f2"),
     'tasks.jsonl:1: meta.formula: at 11: expected "⊕", "," or ")", found end of formula'),
    ("formula-junk", False, _set_formula("C(f1⊕x)"),
     'tasks.jsonl:1: meta.formula: at 5: expected "g" or "T_rel", found "x"'),
    ("formula-empty", False, _set_formula(""), "tasks.jsonl:1: meta.formula: at 0: expected"),
    ("formula-not-text", False, _set_formula(["f1"]),
     "tasks.jsonl:1: meta.formula: expected a formula (a string)"),
    ("formula-too-deep", False, _set_formula("C(" * 50_000 + "f1" + ")" * 50_000),
     "tasks.jsonl:1: meta.formula: nested too deeply"),
    ("nodes-not-a-list", True, _nodes({"N0": None}),
     "tasks.jsonl:1: meta.tree_nodes: expected a non-empty list of nodes"),
    ("nodes-empty", True, _nodes([]),
     "tasks.jsonl:1: meta.tree_nodes: expected a non-empty list of nodes"),
    ("node-not-an-object", True, lambda rows: _tree(rows).append("N4"),
     "tasks.jsonl:1: meta.tree_nodes[5]: expected an object"),
    ("id-duplicate", True, _node(3, id="N2a"),
     "tasks.jsonl:1: meta.tree_nodes[3].id: duplicate node id \"N2a\" (first: "
     "meta.tree_nodes[2])"),
    ("id-not-text", True, _node(4, id=7),
     "tasks.jsonl:1: meta.tree_nodes[4].id: expected a non-empty string, got 7"),
    ("id-missing", True, _node(4, id=_DROP),
     "tasks.jsonl:1: meta.tree_nodes[4].id: expected a non-empty string, got null"),
    ("two-roots", True, _node(2, parent=None, rule=None),
     'tasks.jsonl:1: meta.tree_nodes: expected exactly one root (a node whose parent is '
     'null), found 2: "N0", "N2a"'),
    ("no-root", True, _node(0, parent="N3a1"),
     "tasks.jsonl:1: meta.tree_nodes: expected exactly one root (a node whose parent is "
     "null), found 0"),
    ("root-not-n0", True, lambda rows: [n.update(id="R") if n["id"] == "N0" else
                                        n.update(parent="R") if n["parent"] == "N0" else None
                                        for n in _tree(rows)],
     "tasks.jsonl:1: meta.tree_nodes[0].id: the root's id must be 'N0'"),
    ("parent-unknown", True, _node(4, parent="N2c"),
     'tasks.jsonl:1: meta.tree_nodes[4].parent: unknown node "N2c"'),
    ("parent-itself", True, _node(4, parent="N3a1"),
     "tasks.jsonl:1: meta.tree_nodes[4].parent: a node cannot be its own parent"),
    ("parent-missing", True, _node(4, parent=_DROP),
     "tasks.jsonl:1: meta.tree_nodes[4].parent: missing"),
    ("parent-not-text", True, _node(4, parent=["N2a"]),
     "tasks.jsonl:1: meta.tree_nodes[4].parent: expected a node id or null"),
    ("parent-cycle", True, _node(1, parent="N2a"),
     "tasks.jsonl:1: meta.tree_nodes[1].parent: cycle of parents: N1 -> N2a -> N1"),
    ("rule-5", True, _node(1, rule=5),
     "tasks.jsonl:1: meta.tree_nodes[1].rule: expected the rule that made the node, a whole "
     "number 1..4, got 5"),
    ("rule-0", True, _node(2, rule=0), "tasks.jsonl:1: meta.tree_nodes[2].rule: expected"),
    ("rule-text", True, _node(2, rule="2"), "tasks.jsonl:1: meta.tree_nodes[2].rule: expected"),
    ("rule-bool", True, _node(2, rule=True), "tasks.jsonl:1: meta.tree_nodes[2].rule: expected"),
    ("rule-float", True, _node(2, rule=2.5), "tasks.jsonl:1: meta.tree_nodes[2].rule: expected"),
    ("rule-missing", True, _node(3, rule=_DROP),
     "tasks.jsonl:1: meta.tree_nodes[3].rule: expected the rule that made the node"),
    ("rule-on-the-root", True, _node(0, rule=1),
     "tasks.jsonl:1: meta.tree_nodes[0].rule: must be null for the root, got 1"),
    ("removed-text", True, _node(1, removed="g_style"),
     'tasks.jsonl:1: meta.tree_nodes[1].removed: expected a list of strings (what the rule '
     'removed; [] for the root), got "g_style"'),
    ("removed-numbers", True, _node(1, removed=[1]),
     "tasks.jsonl:1: meta.tree_nodes[1].removed: expected a list of strings"),
    ("removed-missing", True, _node(0, removed=_DROP),
     "tasks.jsonl:1: meta.tree_nodes[0].removed: expected a list of strings (what the rule "
     "removed; [] for the root), got nothing"),
    ("node-formula-bad", True, _node(2, formula="f1⊕"),
     'tasks.jsonl:1: meta.tree_nodes[2].formula: at 3: expected "g" or "T_rel", found end of '
     'formula'),
    ("node-formula-not-text", True, _node(2, formula=3),
     "tasks.jsonl:1: meta.tree_nodes[2].formula: expected a formula (a string), got 3"),
    ("node-not-in-the-computed-tree", True, lambda rows: (
        _node(4, id="N3x")(rows)),
     "tasks.jsonl:1: meta.tree_nodes[4].formula: missing, and the tree of meta.formula has no "
     "such node to take it from"),
    ("node-formula-and-meta-formula-bad", True, _set_formula("C(f1"),
     "tasks.jsonl:1: meta.tree_nodes[0].formula: missing, and meta.formula does not parse"),
    ("prompt-not-text", True, _node(1, prompt=["the dog"]),
     "tasks.jsonl:1: meta.tree_nodes[1].prompt: expected a string, got [\"the dog\"]"),
    ("questions-not-a-list", True, _node(1, questions="tr1.q1"),
     'tasks.jsonl:1: meta.tree_nodes[1].questions: expected a list of question ids, got '
     '"tr1.q1"'),
    ("question-unknown", True, _node(1, questions=["tr1.q1", "tr1.q9"]),
     "tasks.jsonl:1: meta.tree_nodes[1].questions[1]: \"tr1.q9\" is not a question of the "
     "task's checklist 'tr1'"),
    ("question-of-another-task", True, _node(2, questions=["plain.q1"]),
     "tasks.jsonl:1: meta.tree_nodes[2].questions[0]: \"plain.q1\" is not a question of the "
     "task's checklist 'tr1'"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("explicit", "change", "expected"),
                         [case[1:] for case in TREE_CASES], ids=[c[0] for c in TREE_CASES])
def test_a_bad_tree_is_refused_at_its_field(tmp_path, loaded_db, explicit, change, expected,
                                            make_engine_db):
    root = write_tree_bundle(tmp_path / "b", explicit_nodes=explicit)
    _edit(root, TSK, change)
    assert_refused(loaded_db, root, expected)
    # and into an empty project too
    assert_refused(make_engine_db("empty.db"), root, expected)


def test_a_tree_error_names_its_own_line(tmp_path, loaded_db):
    """The tree is on the fourth task line: the error says line 4."""
    root = write_tree_bundle(tmp_path / "b")

    def move(rows):
        tree_task = rows.pop(0)
        for k in range(2):
            rows.append({"task_id": f"extra{k}", "instruction": "Another task."})
        tree_task["meta"]["formula"] = "C(f1⊕g1, f2"
        rows.append(tree_task)
    _edit(root, TSK, move)
    assert_refused(loaded_db, root, 'tasks.jsonl:4: meta.formula: at 11: expected "⊕", "," or '
                   '")", found end of formula')


# ------------------------------------------------------------------ refusals: node outputs
def _output(node: str, **changes: Any) -> Callable[[list[dict[str, Any]]], None]:
    def change(rows):
        rows[OUTPUT_LINES[node] - 1].update(copy.deepcopy(changes))
    return change


def _append(row: dict[str, Any]) -> Callable[[list[dict[str, Any]]], None]:
    return lambda rows: rows.append(copy.deepcopy(row))


OUTPUT_CASES: list[tuple[str, bool, Callable, str]] = [
    ("node-unknown", False, _output("N2b", meta={"node": "N7"}),
     "outputs.jsonl:4: meta.node: \"N7\" is not a node of the tree of task 'tr1' (its nodes: "
     "N0, N1, N2a, N2b, N3a1)"),
    ("node-unknown-explicit", True, _output("N3a1", meta={"node": "N3a2"}),
     "outputs.jsonl:5: meta.node: \"N3a2\" is not a node of the tree of task 'tr1'"),
    ("node-case", False, _output("N1", meta={"node": "n1"}),
     "outputs.jsonl:2: meta.node: \"n1\" is not a node"),
    ("node-not-text", False, _output("N1", meta={"node": 1}),
     "outputs.jsonl:2: meta.node: expected a node id of the task's diagnostic tree (a string), "
     "got 1"),
    ("node-empty", False, _output("N1", meta={"node": " "}),
     "outputs.jsonl:2: meta.node: expected a node id"),
    ("node-of-a-task-without-tree", False,
     _append({"output_id": "plain/m/N1", "task_id": "plain", "generator": "m", "path": None,
              "meta": {"node": "N1"}}),
     "outputs.jsonl:7: meta.node: task 'plain' has no diagnostic tree (meta.formula or "
     "meta.tree_nodes) for a node output"),
    ("node-twice", False,
     _append({"output_id": "tr1/m/N1-again", "task_id": "tr1", "generator": "m", "path": None,
              "meta": {"node": "N1"}}),
     "outputs.jsonl:7: meta.node: a second output of 'm' for node 'N1' of task 'tr1' (output "
     "'tr1/m/N1')"),
    ("root-twice-via-n0", False,
     _append({"output_id": "tr1/m/root", "task_id": "tr1", "generator": "m", "path": None,
              "meta": {"node": "N0"}}),
     "outputs.jsonl:7: meta.node: a second output of 'm' for node 'N0' of task 'tr1' (output "
     "'tr1/m')"),
    ("root-twice", False,
     _append({"output_id": "tr1/m/root", "task_id": "tr1", "generator": "m", "path": None}),
     "outputs.jsonl:7: generator: a second output of 'm' for task 'tr1' (output 'tr1/m')"),
]


@pytest.mark.parametrize(("explicit", "change", "expected"),
                         [case[1:] for case in OUTPUT_CASES], ids=[c[0] for c in OUTPUT_CASES])
def test_a_bad_node_output_is_refused_at_its_field(tmp_path, loaded_db, explicit, change,
                                                   expected, make_engine_db):
    root = write_tree_bundle(tmp_path / "b", explicit_nodes=explicit)
    _edit(root, OUT, change)
    assert_refused(loaded_db, root, expected)
    assert_refused(make_engine_db("empty.db"), root, expected)


def test_the_same_node_of_another_generator_is_fine(tmp_path, make_engine_db):
    root = write_tree_bundle(tmp_path / "b")
    make_image(root / "outputs/other-N1.png", size=(96, 96), color="white")
    _edit(root, OUT, _append({"output_id": "tr1/other/N1", "task_id": "tr1",
                              "generator": "other", "path": "outputs/other-N1.png",
                              "meta": {"node": "N1"}}))
    with Store.open(make_engine_db("p.db")) as store:
        assert import_path(store, root).written["outputs"] == 7


# ------------------------------------------------------------------ node outputs imported later
def _split(tmp_path: Path) -> tuple[Path, Path]:
    """The fixture as two bundles: tasks with their root outputs, then the node outputs."""
    first = write_tree_bundle(tmp_path / "first")
    later = tmp_path / "later"
    later.mkdir()
    (later / "bundle.json").write_text((first / "bundle.json").read_text())
    (later / TSK).write_text("")
    outputs = read_jsonl(first / OUT)
    nodes = [o for o in outputs if o.get("meta", {}).get("node")]
    write_jsonl(first / OUT, [o for o in outputs if o not in nodes])
    write_jsonl(later / OUT, nodes)
    (later / "outputs").mkdir()
    for o in nodes:
        (later / o["path"]).write_bytes((first / o["path"]).read_bytes())
    judgments = read_jsonl(first / "judgments.jsonl")
    node_ids = {o["output_id"] for o in nodes}
    write_jsonl(first / "judgments.jsonl", [j for j in judgments if j["output_id"] not in node_ids])
    write_jsonl(later / "judgments.jsonl", [j for j in judgments if j["output_id"] in node_ids])
    return first, later


def test_node_outputs_of_a_stored_task_import_later(tmp_path, make_engine_db):
    first, later = _split(tmp_path)
    db = make_engine_db("p.db")
    with Store.open(db) as store:
        import_path(store, first)
        assert trees.tree_units(store) == []
        summary = import_path(store, later)
        assert summary.written["outputs"] == 4
        assert trees.tree_units(store) == ["tr1/m"]
        # importing them again is harmless
        assert sum(import_path(store, later).written.values()) == 0


@pytest.mark.parametrize(("change", "expected"), [
    (_output("N0", meta={"node": "N9"}),  # line 1 of the later bundle is N1
     "outputs.jsonl:1: meta.node: \"N9\" is not a node of the tree of task 'tr1'"),
    (lambda rows: rows.append(dict(rows[0], output_id="tr1/m/N1-bis")),
     "outputs.jsonl:5: meta.node: a second output of 'm' for node 'N1' of task 'tr1'"),
    (lambda rows: rows.append({"output_id": "tr1/m/again", "task_id": "tr1", "generator": "m",
                               "path": None}),
     "outputs.jsonl:5: generator: a second output of 'm' for task 'tr1' (output 'tr1/m', "
     "already in the database)"),
    (lambda rows: rows.append({"output_id": "plain/m/N1", "task_id": "plain", "generator": "m",
                               "path": None, "meta": {"node": "N1"}}),
     "outputs.jsonl:5: meta.node: task 'plain' has no diagnostic tree"),
], ids=["unknown-node", "node-twice", "root-twice", "task-without-tree"])
def test_node_outputs_of_a_stored_task_are_checked_against_it(tmp_path, change, expected,
                                                              make_engine_db):
    first, later = _split(tmp_path)
    db = make_engine_db("p.db")
    with Store.open(db) as store:
        import_path(store, first)
    _edit(later, OUT, change)
    assert_refused(db, later, expected)


def test_a_second_node_output_is_refused_against_the_database(tmp_path, make_engine_db):
    first, later = _split(tmp_path)
    db = make_engine_db("p.db")
    with Store.open(db) as store:
        import_path(store, first)
        import_path(store, later)
    _edit(later, OUT, lambda rows: [r.update(output_id=r["output_id"] + "-v2") for r in rows])
    write_jsonl(later / "judgments.jsonl", [])
    problems = assert_refused(db, later, "outputs.jsonl:1: meta.node: a second output of 'm' "
                              "for node 'N1' of task 'tr1' (output 'tr1/m/N1', already in the "
                              "database)")
    assert len(problems) == 4


# ------------------------------------------------------------------ one node rule
@pytest.mark.parametrize("meta, node", [
    ({}, "N0"), (None, "N0"), ("", "N0"), ("{}", "N0"), ({"node": None}, "N0"),
    ({"node": ""}, "N0"), ({"node": "N0"}, "N0"), ({"node": "N2a"}, "N2a"),
    ('{"node": "N3a1", "x": 1}', "N3a1"), ('{"note": "node"}', "N0"),
])
def test_output_node_reads_meta_or_its_stored_text(meta, node):
    from annotation.trace.nodes import ROOT, output_node

    assert ROOT == "N0"
    assert output_node(meta) == node


def test_every_reader_of_node_outputs_follows_the_one_rule(tmp_path, make_engine_db):
    """The tree units, the node outputs left out of the study, the annotation workflow's
    items and the import's one-output-per-node check all tell node outputs from ordinary
    ones by :func:`annotation.trace.nodes.output_node`."""
    from annotation.results.study import load_study
    from annotation.trace.nodes import ROOT, output_node
    from annotation.work.workflow import annotatable_outputs

    root = write_tree_bundle(tmp_path / "b")
    _edit(root, OUT, lambda rows: rows[0].update(meta={"node": "N0"}))
    with Store.open(make_engine_db("p.db")) as store:
        import_path(store, root)
        outputs = store.outputs_df()
        nodes = {o for o, m in zip(outputs.output_id, outputs.meta, strict=True)
                 if output_node(m) != ROOT}
        assert nodes and nodes < set(outputs.output_id)
        assert trees.node_output_ids(store) == nodes
        assert set(annotatable_outputs(store).output_id) == set(outputs.output_id) - nodes
        assert not nodes & set(load_study(store).outputs.output_id)
        assert trees.tree_units(store) == ["tr1/m"]
        assert import_path(store, root).unchanged["outputs"] == len(outputs)
