"""``judge-audit tree``: the diagnostic tree of a formula (TRACE-Bench paper, App. C.2)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

from annotation.cli import main
from annotation.store import Store
from tests.helpers.bundles import write_jsonl
from tests.helpers.project_state import project_state as _state
from tests.test_formula import EQ5

FIGURE_10_IDS = ["N0", "N1", "N2a", "N2b", "N3a", "N3b1", "N3b2", "N3b3", "N4a", "N4b"]


def test_tree_prints_the_indented_tree(capsys):
    assert main(["tree", EQ5]) == 0
    lines = capsys.readouterr().out.splitlines()
    # depth first, two spaces per level: N3a and its children under N2a, then N2b's
    ids = [line.split()[0] for line in lines]
    assert ids == ["N0", "N1", "N2a", "N3a", "N4a", "N4b", "N2b", "N3b1", "N3b2", "N3b3"]
    indents = [len(line) - len(line.lstrip()) for line in lines]
    assert indents == [0, 2, 4, 6, 8, 8, 4, 6, 6, 6]
    assert lines[0] == "N0  C(C(f1, T_e⊕g1)⊕g_rel, f2⊕g2⊕g3)⊕g_global"
    assert lines[1] == ("  N1  C(C(f1, T_e⊕g1)⊕g_rel, f2⊕g2⊕g3)    "
                        "[rule 1 global-reference stripping; removed: g_global]")
    assert lines[3].endswith("[rule 3 relation simplification; as text: g_rel]")
    assert lines[7] == "      N3b1  f2⊕g2    [rule 4 attribute removal; removed: g3]"


def test_tree_json(capsys):
    assert main(["tree", EQ5, "--json"]) == 0
    nodes = json.loads(capsys.readouterr().out)
    assert [n["id"] for n in nodes] == FIGURE_10_IDS
    for node in nodes:
        assert {"id", "parent", "rule", "removed", "formula"} <= set(node)
    assert nodes[0] == {"id": "N0", "parent": None, "depth": 0, "rule": None,
                        "rule_name": None, "removed": [],
                        "formula": "C(C(f1, T_e⊕g1)⊕g_rel, f2⊕g2⊕g3)⊕g_global",
                        "downgrades": []}
    by_id = {n["id"]: n for n in nodes}
    assert by_id["N1"]["removed"] == ["g_global"] and by_id["N1"]["rule"] == 1
    assert by_id["N3b3"] == {"id": "N3b3", "parent": "N2b", "depth": 3, "rule": 4,
                             "rule_name": "attribute removal", "removed": ["g2", "g3"],
                             "formula": "f2", "downgrades": ["C(f1, T_e⊕g1)⊕g_rel"]}


def test_tree_ascii_spelling(capsys):
    assert main(["tree", "C(f1 (+) g1) (+) g_style", "--ascii"]) == 0
    out = capsys.readouterr().out
    assert "⊕" not in out
    assert out.splitlines()[0] == "N0  C(f1(+)g1)(+)g_style"


def test_malformed_formula_exits_2_with_the_position(capsys):
    assert main(["tree", "C(f1, f2 ⊕ f3)"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        'judge-audit tree: at 11: expected "g" or "T_rel", found "f3"',
        "  C(f1, f2 ⊕ f3)",
        "             ^",
    ]


def test_usage_errors(capsys, tmp_path):
    # SQLite-only by nature: a missing database file is refused and no file is made
    assert main(["tree"]) == 2
    assert "give FORMULA" in capsys.readouterr().err
    assert main(["tree", "f1", "--db", str(tmp_path / "x.db"), "--task", "t",
                 "--out", str(tmp_path)]) == 2
    assert main(["tree", "--db", str(tmp_path / "x.db")]) == 2
    assert not (tmp_path / "x.db").exists()


# Table 6 of the paper: the cacao-pod case C(f1⊕g1) and its full checklist
CACAO_TARGETS = [
    ("f", "f1"), ("f", "f1"),
    ("g", "g1, IP on cacao_pod_A"), ("g", "g1, IP on cacao_pod_A"),
    ("g", "g1, IP on cacao_pod_A"), ("g", "g1, IP on cacao_pod_A"),
    ("⊕", "⊕, f1⊕g1, carrier"), ("⊕", "⊕, f1⊕g1, fit"), ("⊕", "⊕, f1⊕g1, fit"),
    ("⊕", "⊕, f1⊕g1, exclusivity"),
    ("C", "C, spatial"), ("C", "C, relation"), ("C", "C, duplication"), ("C", "C, leakage"),
    ("C", "C, leakage"),
]


def _trace_project(tmp_path: Path, make_engine_db: Callable[[str], str]) -> str:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "bundle.json").write_text(json.dumps({"name": "cacao", "benchmark": "TRACE-Bench"}))
    questions = [{"question_id": f"cacao.q{i}", "text": f"question {i}?",
                  "pass_answer": "no" if target == "C, duplication" else "yes",
                  "operator": op, "target": target}
                 for i, (op, target) in enumerate(CACAO_TARGETS, start=1)]
    write_jsonl(bundle / "tasks.jsonl", [
        {"task_id": "cacao", "instruction": "Generate a new scene.", "questions": questions,
         "meta": {"formula": "C(f1⊕g1)"}},
        {"task_id": "plain", "instruction": "No formula here.", "meta": {}},
    ])
    (bundle / "outputs.jsonl").write_text("")
    db = make_engine_db("trace.db")
    assert main(["import", str(bundle), "--db", str(db), "--quiet"]) == 0
    return db


def _add_broken_task(db: str) -> None:
    """A malformed formula can no longer be imported (the bundle check refuses it); a
    database written before that check may still hold one: write it directly."""
    with Store.open(db) as store:
        store.conn.execute("INSERT INTO tasks (task_id, instruction, checklist_id, meta)"
                           " VALUES ('broken', 'A bad formula.', 'broken', ?)",
                           [json.dumps({"formula": "C(f1,"})])
        store.conn.commit()


def test_tree_of_a_task_writes_nodes_with_their_questions(tmp_path, capsys, make_engine_db):
    db = _trace_project(tmp_path, make_engine_db)
    before = _state(db)
    out = tmp_path / "tree"
    assert main(["tree", "--db", str(db), "--task", "cacao", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "N0  C(f1⊕g1)", "  N1  C(f1)    [rule 4 attribute removal; removed: g1]"]
    assert "nodes.jsonl" in captured.err
    assert _state(db) == before  # read only
    rows = [json.loads(line) for line in (out / "nodes.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["N0", "N1"]
    every = [f"cacao.q{i}" for i in range(1, 16)]
    assert rows[0]["question_ids"] == every  # C.2: the root uses the full checklist
    # N1 keeps the anchor f1 (q1-q2) and the scene (q11-q15), not g1 nor f1⊕g1
    assert rows[1]["question_ids"] == ["cacao.q1", "cacao.q2", "cacao.q11", "cacao.q12",
                                       "cacao.q13", "cacao.q14", "cacao.q15"]
    assert rows[1]["targets"] == ["f1", "C, spatial", "C, relation", "C, duplication",
                                  "C, leakage"]
    assert (rows[1]["formula"], rows[1]["slot"], rows[1]["rule"]) == ("C(f1)", 1, 4)
    assert rows[1]["removed"] == ["g1"] and rows[1]["downgrades"] == []
    with (out / "nodes.csv").open(encoding="utf-8", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert [r["id"] for r in table] == ["N0", "N1"]
    assert table[1]["question_ids"] == "; ".join(rows[1]["question_ids"])
    assert table[0]["formula"] == "C(f1⊕g1)"


def test_tree_of_a_task_json(tmp_path, capsys, make_engine_db):
    db = _trace_project(tmp_path, make_engine_db)
    assert main(["tree", "--db", str(db), "--task", "cacao", "--out", str(tmp_path / "o"),
                 "--json"]) == 0
    nodes = json.loads(capsys.readouterr().out)
    assert [len(n["question_ids"]) for n in nodes] == [15, 7]


def test_tree_of_a_task_refusals(tmp_path, capsys, make_engine_db):
    db = _trace_project(tmp_path, make_engine_db)
    _add_broken_task(db)
    out = tmp_path / "o"
    assert main(["tree", "--db", str(db), "--task", "nope", "--out", str(out)]) == 1
    assert "no task 'nope'" in capsys.readouterr().err
    assert main(["tree", "--db", str(db), "--task", "plain", "--out", str(out)]) == 1
    assert "has no meta.formula" in capsys.readouterr().err
    assert main(["tree", "--db", str(db), "--task", "broken", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "task 'broken': at 5: expected" in err and "found end of formula" in err
    assert main(["tree", "--db", str(tmp_path / "none.db"), "--task", "cacao",
                 "--out", str(out)]) == 1
    assert not (tmp_path / "none.db").exists()
    assert not out.exists()
