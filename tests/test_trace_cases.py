"""TRACE-Bench per-case tables (Fig. 1/4: Element | Operator | Result | Failure reason, with
the reviewers' boxes drawn on the node images) and operator scores per generator in the
layout of Table 2 (real SQLite, real images with Pillow)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from annotation.cli import main
from annotation.formats.importers import import_path
from annotation.results.operators import TABLE2_AVG, generator_table
from annotation.results.report import build_report, paper_sections
from annotation.results.study import load_study
from annotation.results.trace_cases import RED, case_name, draw_boxes
from annotation.store import Store
from annotation.work import tree_review as tr
from tests.helpers.bundles import make_image, write_jsonl
from tests.helpers.tree_fixture import write_tree_bundle


@pytest.fixture
def reviewed(tmp_path, make_engine_db) -> Path:
    db = make_engine_db("trees.db")
    with Store.open(db) as store:
        import_path(store, write_tree_bundle(tmp_path / "b"))
        tr.give_review(store, "r1", "tr1/m", "g|g1", "N2a", reason="attribute_mismatch",
                       box={"node": "N0", "box": [0.1, 0.2, 0.5, 0.6]})
        tr.give_review(store, "r1", "tr1/m", "f|f2", "N1", reason="identity_inconsistency",
                       box={"node": "N1", "box": [0.5, 0.5, 0.9, 0.9]},
                       note="<script>alert(1)</script>")
        tr.give_review(store, "r2", "tr1/m", "f|f2", tr.PERSISTENT, reason="missing_carrier")
    return db


def test_draw_boxes_draws_red_rectangles_at_the_normalized_place():
    image = Image.new("RGB", (201, 101), "white")
    drawn = draw_boxes(image, [(1, [0.5, 0.5, 1.0, 1.0])])
    assert image.getpixel((100, 50)) == (255, 255, 255)  # the original is untouched
    assert drawn.getpixel((100, 75)) == RED  # the left edge at x = 0.5 * 200
    assert drawn.getpixel((150, 100)) == RED  # the bottom edge
    assert drawn.getpixel((150, 75)) == (255, 255, 255)  # inside stays as it was
    assert drawn.getpixel((50, 25)) == (255, 255, 255)  # outside too


def test_trees_writes_cases_csv_images_and_pages(reviewed, tmp_path):
    out = tmp_path / "out"
    assert main(["trees", "--db", str(reviewed), "--out", str(out), "--quiet"]) == 0
    with (out / "cases.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["Element"], r["Operator"], r["Result"], r["reviewer"]) for r in rows] == [
        ("f1", "f", "pass", ""), ("g1", "g", "fail", "r1"), ("f1⊕g1", "⊕", "fail", ""),
        ("f2", "f", "fail", "r1"), ("f2", "f", "fail", "r2"), ("g_style", "g", "pass", ""),
        ("C, duplication", "C", "pass", "")]
    by = {(r["Element"], r["reviewer"]): r for r in rows}
    assert by[("g1", "r1")]["Failure reason"] == "Attribute mismatch (originates at N2a)"
    assert by[("f2", "r2")]["Failure reason"] == "Missing carrier (persistent)"
    assert by[("f2", "r2")]["box_no"] == ""
    case = case_name("tr1/m")
    assert by[("g1", "r1")]["image"] == f"cases/{case}/N0.png"
    assert by[("f2", "r1")]["image"] == f"cases/{case}/N1.png"
    # the boxes, in red on the node images (the fixture's node images are 96 x 96)
    root = Image.open(out / f"cases/{case}/N0.png").convert("RGB")
    assert root.size == (96, 96)
    assert root.getpixel((round(0.1 * 95), round(0.4 * 95))) == RED  # left edge of box 1
    n1 = Image.open(out / f"cases/{case}/N1.png").convert("RGB")
    assert n1.getpixel((round(0.7 * 95), round(0.9 * 95))) == RED  # bottom edge of box 2
    assert not (out / f"cases/{case}/N2a.png").exists()  # no box there
    page = (out / f"cases/{case}.html").read_text(encoding="utf-8")
    assert "<th>Element</th><th>Operator</th><th>Result</th><th>Failure reason</th>" in page
    assert f'src="{case}/N0.png"' in page and f'src="{case}/N1.png"' in page
    assert "Identity inconsistency (originates at N1)" in page
    assert "<script>" not in page
    index = (out / "cases.html").read_text(encoding="utf-8")
    assert f"href='cases/{case}.html'" in index


def test_case_names_are_file_names_and_distinct():
    assert case_name("tr1/m") != case_name("tr1_m")
    assert "/" not in case_name("../../etc/passwd") and not case_name("..").startswith(".")


# ------------------------------------------------------------------ Table 2
def _generator_bundle(root: Path) -> Path:
    """Two tasks of slots 2 and 3, two generators, one judge, two annotators."""
    root.mkdir(parents=True)
    (root / "bundle.json").write_text(json.dumps({
        "name": "t2", "benchmark": "TRACE-Bench", "judges": [{"name": "j", "kind": "vlm"}]}))
    tasks = [
        {"task_id": "a", "instruction": "A.", "meta": {"formula": "C(f1, f2)"},
         "questions": [{"question_id": "a.f1", "text": "f1?", "pass_answer": "yes",
                        "operator": "f", "target": "f1"},
                       {"question_id": "a.f2", "text": "f2?", "pass_answer": "yes",
                        "operator": "f", "target": "f2"},
                       {"question_id": "a.c", "text": "dup?", "pass_answer": "no",
                        "operator": "C", "target": "C, duplication"}]},
        {"task_id": "b", "instruction": "B.", "meta": {"formula": "C(f1⊕g1, f2)"},
         "questions": [{"question_id": f"b.{n}", "text": f"{n}?", "pass_answer": "yes",
                        "operator": op, "target": t}
                       for n, op, t in (("f1", "f", "f1"), ("g1", "g", "g1"),
                                        ("b1", "⊕", "f1⊕g1"), ("c", "C", "C, relation"))]},
    ]
    write_jsonl(root / "tasks.jsonl", tasks)
    outputs = []
    for i, (task, gen) in enumerate([("a", "m1"), ("a", "m2"), ("b", "m1"), ("b", "m2")]):
        make_image(root / f"o/{task}{gen}.png", color=["red", "blue", "green", "gray"][i])
        outputs.append({"output_id": f"{task}/{gen}", "task_id": task, "generator": gen,
                        "path": f"o/{task}{gen}.png"})
    write_jsonl(root / "outputs.jsonl", outputs)
    judge = {  # output -> question -> answer
        "a/m1": {"a.f1": "yes", "a.f2": "no", "a.c": "no"},
        "a/m2": {"a.f1": "yes", "a.f2": "yes", "a.c": "yes"},
        "b/m1": {"b.f1": "yes", "b.g1": "no", "b.b1": "no", "b.c": "yes"},
        "b/m2": {"b.f1": "no", "b.g1": "yes", "b.b1": "yes", "b.c": "yes"},
    }
    write_jsonl(root / "judgments.jsonl", [
        {"judge": "j", "output_id": o, "question_id": q, "answer": a}
        for o, qs in judge.items() for q, a in qs.items()])
    human = {"h1": {"a/m1": {"a.f1": "yes", "a.f2": "yes", "a.c": "no"},
                    "b/m1": {"b.f1": "yes", "b.g1": "yes", "b.b1": "no", "b.c": "yes"}},
             "h2": {"a/m1": {"a.f1": "no", "a.f2": "yes", "a.c": "no"},
                    "b/m1": {"b.f1": "yes", "b.g1": "no", "b.b1": "no", "b.c": "no"}}}
    write_jsonl(root / "annotations.jsonl", [
        {"annotator": h, "output_id": o, "question_id": q, "answer": a}
        for h, outs in human.items() for o, qs in outs.items() for q, a in qs.items()])
    return root


def test_table2_layout_averages_over_slot_levels(tmp_path, make_engine_db):
    db = make_engine_db("t2.db")
    with Store.open(db) as store:
        import_path(store, _generator_bundle(tmp_path / "b"))
        study = load_study(store)
    table = generator_table(study).set_index(["scorer", "generator"])
    assert list(table.columns) == ["Anchor (f)", "Disentangle (g)", "Apply (⊕)",
                                   "Compose (C)", "Avg.", "n_outputs", "n_slots"]
    j1 = table.loc[("j", "m1")]
    # f: slot 2 (task a) 1/2 (f1 pass, f2 fail); slot 3 (task b) 1/1 -> mean of the slots
    assert j1["Anchor (f)"] == pytest.approx((0.5 + 1.0) / 2)
    assert j1["Disentangle (g)"] == pytest.approx(0.0)  # only slot 3 has g
    assert j1["Compose (C)"] == pytest.approx((1.0 + 1.0) / 2)
    # Avg.: per case the mean of its own operators: a (f 0.5, C 1) = 0.75; b (f 1, g 0,
    # ⊕ 0, C 1) = 0.5; then over the slots
    assert j1[TABLE2_AVG] == pytest.approx((0.75 + 0.5) / 2)
    assert (j1.n_outputs, j1.n_slots) == (2, 2)
    j2 = table.loc[("j", "m2")]
    assert j2["Anchor (f)"] == pytest.approx((1.0 + 0.0) / 2)
    assert j2["Compose (C)"] == pytest.approx((0.0 + 1.0) / 2)  # "yes" to duplication fails
    # the humans: per output the mean of the two annotators' operator scores
    h = table.loc[("human mean", "m1")]
    assert h["Anchor (f)"] == pytest.approx(((1.0 + 0.5) / 2 + 1.0) / 2)
    assert h["Disentangle (g)"] == pytest.approx(0.5)
    assert h["Compose (C)"] == pytest.approx((1.0 + 0.5) / 2)
    assert ("human mean", "m2") not in table.index  # nobody annotated m2
    assert list(dict.fromkeys(s for s, _ in table.index)) == ["j", "human mean"]


def test_table2_is_in_the_report_and_its_html(tmp_path, make_engine_db):
    db = make_engine_db("t2.db")
    with Store.open(db) as store:
        import_path(store, _generator_bundle(tmp_path / "b"))
    out = tmp_path / "report"
    assert main(["report", "--db", str(db), "--out", str(out), "--bootstrap", "50",
                 "--quiet"]) == 0
    table = pd.read_csv(out / "trace_generators.csv")
    assert set(table.scorer) == {"j", "human mean"}
    assert "TRACE-Bench Table 2 layout" in (out / "report.html").read_text(encoding="utf-8")
    with Store.open(db) as store:
        tables = build_report(load_study(store))
    titles = [t for t, _ in paper_sections(tables)]
    assert any(t.startswith("TRACE-Bench Table 2") for t in titles)
    assert not math.isnan(tables["trace_generators"]["Avg."].iloc[0])
