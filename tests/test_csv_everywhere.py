"""Issue #12, item 3: every CSV every command writes is neutralized against formulas.

The attack: a task id, generator, judge, annotator name, question id or note that starts
with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (``=HYPERLINK(...)``,
``@SUM(1+1)``, ``-evil``, ``\\t=2+3``) becomes a formula when an admin opens the CSV in a
spreadsheet. ``judge-audit history --csv`` and ``nodes.csv`` of ``judge-audit tree`` wrote
such cells as they were. Here every subcommand of the CLI is classified (a new command
must be added below), each one that writes CSV is run on real projects whose user data is
hostile, and every cell and header of every CSV file found in its output is scanned: none
may start with a formula character unless it is a plain number.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import pytest

from annotation.accounts import auth
from annotation.cli import build_parser, main
from annotation.formats.importers import import_path
from annotation.store import Store
from annotation.work import tree_review as tr
from annotation.work import workflow
from annotation.work.verification import VerifySession
from tests.helpers.bundles import read_jsonl, write_jsonl
from tests.helpers.conflict_fixture import rename_tasks, write_conflict_bundle
from tests.helpers.tree_fixture import write_tree_bundle
from tests.test_hostile_input import _formula_cells, write_hostile_bundle

#: CLI commands that write CSV files, and those that write none (checked below).
WRITES_CSV = {"report", "conflicts", "trees", "history", "tree", "variants",
              "validation-set", "gold", "plan"}
NO_CSV = {"import", "export", "demo", "serve", "info", "user", "backup", "restore", "check",
          "sample", "adjudicate"}
EVIL = ['=HYPERLINK("http://evil.example","x")', "@SUM(1+1)", "-evil", "\t=2+3", "\r=1+1",
        "+cmd"]


def subcommands() -> set[str]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(action.choices)


def test_every_command_is_classified():
    commands = subcommands()
    assert commands - NO_CSV == WRITES_CSV, "classify the new command: WRITES_CSV or NO_CSV"


def csv_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() == ".csv")


def assert_neutral(paths: list[Path], must_contain: list[str]) -> None:
    """No formula cell in any file; the hostile values are there (neutralized)."""
    assert paths
    for path in paths:
        assert _formula_cells(path) == [], path.name
    cells = [cell for path in paths for cell in read_cells(path)]
    for value in must_contain:
        assert any(value in cell for cell in cells), value


def read_cells(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as fh:
        return [cell for row in csv.reader(fh) for cell in row]


# ------------------------------------------------------------------ hostile projects
@pytest.fixture
def hostile_db(tmp_path, make_engine_db) -> Path:
    """The hostile bundle of test_hostile_input, plus a flag, a failed sign-in and an
    account whose names and notes look like formulas."""
    db = make_engine_db("hostile.db")
    with Store.open(db) as store:
        import_path(store, write_hostile_bundle(tmp_path / "bundle"))
        auth.add_user(store, "@admin", "admin", "a-long-password-1", actor=EVIL[2])
        auth.authenticate(store, EVIL[0], "wrong password")
        output = store.outputs_df().output_id.iloc[0]
        workflow.flag_item(store, "+ann1", output, "other", EVIL[1])
    return db


@pytest.fixture
def conflict_db(tmp_path, make_engine_db) -> Path:
    root = write_conflict_bundle(tmp_path / "cbundle")
    renamed = {"c1": EVIL[0], "c2": EVIL[3], "c3": EVIL[2]}
    rename_tasks(root, renamed)
    db = make_engine_db("conflicts.db")
    with Store.open(db) as store:
        import_path(store, root)
        for verifier in ("@ver", "-ver2"):
            session = VerifySession(store, verifier, {})
            while session.task_id is not None:
                session.confirm_readings({(i, a): (-170 if a == "yaw" else True)
                                          for i, a in session.item.needed()})
                for check in session.item.checks:
                    session.set_verdict(check.conflict, agree=verifier == "@ver",
                                        note=EVIL[1] + " " + verifier)
                session.submit()
    return db


TREE_TASK = "=tr1"


@pytest.fixture
def tree_db(tmp_path, make_engine_db) -> Path:
    """The tree fixture with formula-like task, output, generator and question ids."""
    root = write_tree_bundle(tmp_path / "tbundle")
    qids = {f"tr1.q{n}": EVIL[n % len(EVIL)] + f".q{n}" for n in range(1, 7)}
    tasks = read_jsonl(root / "tasks.jsonl")
    for task in tasks:
        task["task_id"] = {"tr1": TREE_TASK, "plain": "@plain"}[task["task_id"]]
        for q in task["questions"]:
            q["question_id"] = qids.get(q["question_id"], "+" + q["question_id"])
    write_jsonl(root / "tasks.jsonl", tasks)

    def output_id(old: str) -> str:
        task, _, rest = old.partition("/")
        return {"tr1": TREE_TASK, "plain": "@plain"}[task] + "/" + rest.replace("m", "=m()", 1)

    outputs = read_jsonl(root / "outputs.jsonl")
    for output in outputs:
        output["task_id"] = {"tr1": TREE_TASK, "plain": "@plain"}[output["task_id"]]
        output["output_id"] = output_id(output["output_id"])
        output["generator"] = "=m()"
    write_jsonl(root / "outputs.jsonl", outputs)
    judgments = read_jsonl(root / "judgments.jsonl")
    for j in judgments:
        j["output_id"] = output_id(j["output_id"])
        j["question_id"] = qids[j["question_id"]]
    write_jsonl(root / "judgments.jsonl", judgments)
    db = make_engine_db("trees.db")
    with Store.open(db) as store:
        import_path(store, root)
        from annotation.trace.trees import load_tree_item

        tr.set_settings(store, "@admin", overlap=2)
        for reviewer in ("-rev", "@rev2"):
            root_output = tr.next_tree(store, reviewer)
            assert root_output is not None
            item = load_tree_item(store, root_output)
            judge = tr.judge_for(store)
            for failing in tr.failing_instances(store, item, judge):
                tr.give_review(store, reviewer, root_output, failing.key, tr.PERSISTENT,
                               reason="other", note=EVIL[0])
            tr.submit_tree(store, reviewer, root_output)
    return db


# ------------------------------------------------------------------ the commands
@pytest.mark.slow
def test_report_csvs(hostile_db, tmp_path):
    out = tmp_path / "report"
    assert main(["report", "--db", str(hostile_db), "--out", str(out), "--bootstrap", "10",
                 "--by", "generator", "--quiet"]) == 0
    assert_neutral(csv_files(out), ["'-judge-x", "'+metric-y"])


@pytest.mark.slow
def test_plan_csv(hostile_db, tmp_path):
    out = tmp_path / "plan.csv"
    assert main(["plan", "--db", str(hostile_db), "--measure", "srcc", "--bootstrap", "10",
                 "--out", str(out)]) == 0
    assert_neutral([out], ["'-judge-x"])


@pytest.mark.slow
@pytest.mark.parametrize("which", ["hostile", "conflicts", "trees"])
def test_history_csv(which, hostile_db, conflict_db, tree_db, tmp_path):
    db = {"hostile": hostile_db, "conflicts": conflict_db, "trees": tree_db}[which]
    out = tmp_path / "history"
    out.mkdir()
    assert main(["history", "--db", str(db), "--csv", str(out / "history.csv"),
                 "--quiet"]) == 0
    expected = {"hostile": ["'=HYPERLINK", "'@SUM(1+1)", "'+ann1", "'@admin", "'=1+1 NOTE",
                            "'-evil"],
                "conflicts": ["'@ver", "'-ver2", "'=HYPERLINK", "'\t=2+3"],
                "trees": ["'-rev", "'@rev2", "'=tr1/=m()"]}[which]
    assert_neutral(csv_files(out), expected)
    # numbers stay numbers: a reading of -170 is not prefixed
    if which == "conflicts":
        assert "-170.0" in read_cells(out / "history.csv")


def test_history_csv_filtered_by_item(hostile_db, tmp_path):
    out = tmp_path / "one"
    out.mkdir()
    item = '=HYPERLINK("http://evil","t1")/=gen(A)'
    assert main(["history", "--db", str(hostile_db), "--item", item, "--csv",
                 str(out / "h.csv"), "--quiet"]) == 0
    assert_neutral(csv_files(out), ["'" + item])


def test_tree_nodes_csv(tree_db, tmp_path, capsys):
    out = tmp_path / "nodes"
    assert main(["tree", "--db", str(tree_db), "--task", TREE_TASK, "--out", str(out)]) == 0
    capsys.readouterr()
    assert [p.name for p in csv_files(out)] == ["nodes.csv"]
    assert_neutral(csv_files(out), ["'\r=1+1.q4", "'@SUM(1+1).q1", "\t=2+3.q3"])
    # a carriage return inside a cell is quoted: it cannot start a row of its own
    rows = list(csv.reader((out / "nodes.csv").open(newline="", encoding="utf-8")))
    assert {len(row) for row in rows} == {len(rows[0])}


def test_trees_and_conflicts_csvs(tree_db, conflict_db, tmp_path):
    assert main(["trees", "--db", str(tree_db), "--out", str(tmp_path / "t"), "--quiet"]) == 0
    assert_neutral(csv_files(tmp_path / "t"), ["'-rev"])
    assert main(["conflicts", "--db", str(conflict_db), "--out", str(tmp_path / "c"),
                 "--quiet"]) == 0
    assert_neutral(csv_files(tmp_path / "c"), ["'@ver", "'-ver2"])


def test_validation_set_csv(tree_db, tmp_path):
    """``judge-audit validation-set --out``: output and question ids that look like
    formulas are neutralized."""
    out = tmp_path / "set.csv"
    assert main(["validation-set", "--db", str(tree_db), "--images", "2", "--questions", "2",
                 "--out", str(out)]) == 0
    assert_neutral([out], ["'=tr1/"])


def test_commands_without_csv_write_none(hostile_db, tmp_path):
    """export writes a bundle (JSON lines), backup a database: no CSV to neutralize."""
    assert main(["export", "--db", str(hostile_db), "--out", str(tmp_path / "x"),
                 "--quiet"]) == 0
    assert main(["backup", "--db", str(hostile_db), "--out", str(tmp_path / "b" / "b.db"),
                 "--quiet"]) == 0
    assert csv_files(tmp_path / "x") == [] and csv_files(tmp_path / "b") == []


def test_the_page_downloads_use_the_same_writer():
    """Every st.download_button of CSV in the pages is fed by analytics.csv_bytes, which is
    annotation.results.export.csv_text."""
    import re

    from annotation.results.analytics import csv_bytes

    root = Path(__file__).resolve().parents[1]
    calls = []
    for page in sorted((root / "pages").glob("*.py")):
        text = page.read_text(encoding="utf-8")
        calls += [(page.name, m.group(0)) for m in re.finditer(
            r"st\.download_button\((?:[^()]|\([^()]*\))*\)", text) if "csv" in m.group(0)]
    assert calls and all("csv_bytes(" in call for _, call in calls), calls
    import pandas as pd

    data = csv_bytes(pd.DataFrame({"@who": ["-evil", "\t=1", "-0.5"], "n": [-1.5, 2, 3]}))
    assert data.decode().splitlines() == ["'@who,n", "'-evil,-1.5", "'\t=1,2.0", "-0.5,3.0"]


def test_variant_tasks_csv(tmp_path, make_engine_db):
    """``judge-audit variants`` lists its tasks in variant_tasks.csv: hostile ids too."""
    from tests.helpers.variant_bundle import make_variant_source

    root = tmp_path / "vbundle"
    make_variant_source(root, {1: 1, 2: 1})
    tasks = read_jsonl(root / "tasks.jsonl")
    for task, evil in zip(tasks, (EVIL[0], EVIL[2]), strict=True):
        task["task_id"] = evil
        task["questions"][0]["question_id"] = evil + ".q1"
    write_jsonl(root / "tasks.jsonl", tasks)
    write_jsonl(root / "outputs.jsonl", [])
    write_jsonl(root / "judgments.jsonl", [])
    db = make_engine_db("variants.db")
    with Store.open(db) as store:
        import_path(store, root)
    out = tmp_path / "ti"
    assert main(["variants", "--db", str(db), "--level", "dense", "--out", str(out),
                 "--quiet"]) == 0
    assert [p.name for p in csv_files(out)] == ["variant_tasks.csv"]
    assert_neutral(csv_files(out), ["'=HYPERLINK", "'-evil~text-dense"])


def test_gold_list_neutralizes_formulas(hostile_db, tmp_path):
    """``judge-audit gold list --out``: a note typed like a formula is written as text."""
    from annotation.work import gold

    with Store.open(hostile_db) as store:
        output = store.query_df("SELECT output_id FROM outputs WHERE sha256 IS NOT NULL"
                                ).output_id.iloc[0]
        crit = store.criteria_df().iloc[0]
        gold.mark(store, EVIL[2], output, {}, {crit["name"]: float(crit["min"])},
                  note=EVIL[0])
    out = tmp_path / "gold.csv"
    assert main(["gold", "list", "--db", str(hostile_db), "--out", str(out)]) == 0
    assert_neutral([out], [EVIL[0], EVIL[2]])
