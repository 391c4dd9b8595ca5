"""Question ids unique only within their checklist (DSG numbers them 1..n per prompt).

Issue #15, item 11: a converter that numbers each prompt's questions 1..n, with
``depends_on`` naming those numbers, must import; every reference resolves inside the
checklist of the question's task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.formats.bundle import write_bundle
from annotation.formats.importers import import_path
from annotation.records import ImportRefused
from annotation.store import Store
from tests.helpers.bundles import make_image, read_jsonl, write_jsonl

PROMPTS = {
    "p1": ("A red cat on a blue mat.", ["Is there a cat?", "Is the cat red?",
                                       "Is the cat on the mat?"]),
    "p2": ("A dog under a table.", ["Is there a dog?", "Is there a table?",
                                     "Is the dog under the table?"]),
}

#: the tests that use ``store`` run on SQLite and on PostgreSQL (tests/conftest.py)
STORE_ENGINES = ("sqlite", "postgresql")


def _dsg_bundle(root: Path, *, judge_answers: dict[str, list[str]] | None = None,
                prompts: dict = PROMPTS, color_shift: int = 0) -> Path:
    """A bundle as a DSG converter writes it: every prompt's questions numbered 1..n,
    questions 2.. depending on question 1, judgments and annotations by those numbers."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "bundle.json").write_text(json.dumps({
        "name": "dsg", "benchmark": "TIFA", "judges": [{"name": "vqa", "kind": "vlm"}]}))
    tasks, outputs, judgments, annotations = [], [], [], []
    colors = ["red", "blue", "green", "orange", "purple", "brown"]
    for k, (task_id, (text, questions)) in enumerate(prompts.items()):
        tasks.append({"task_id": task_id, "instruction": text, "questions": [
            {"question_id": str(i + 1), "text": q, "pass_answer": "yes",
             **({"depends_on": ["1"]} if i else {})} for i, q in enumerate(questions)]})
        out = f"{task_id}/sd"
        make_image(root / "outputs" / f"{task_id}.png", color=colors[(k + color_shift) % 6])
        outputs.append({"output_id": out, "task_id": task_id, "generator": "sd",
                        "path": f"outputs/{task_id}.png"})
        answers = (judge_answers or {}).get(task_id, ["yes"] * len(questions))
        judgments += [{"judge": "vqa", "output_id": out, "question_id": str(i + 1),
                       "answer": a} for i, a in enumerate(answers)]
        annotations.append({"annotator": "h1", "output_id": out, "question_id": "3",
                            "answer": "no" if task_id == "p2" else "yes"})
    write_jsonl(root / "tasks.jsonl", tasks)
    write_jsonl(root / "outputs.jsonl", outputs)
    write_jsonl(root / "judgments.jsonl", judgments)
    write_jsonl(root / "annotations.jsonl", annotations)
    return root


def _questions(store: Store) -> dict[str, tuple[str, str, list[str]]]:
    return {r["question_id"]: (r["checklist_id"], r["text"], json.loads(r["depends_on"]))
            for r in store.db.query("SELECT * FROM questions")}


def test_numbers_repeated_across_prompts_import_in_their_own_checklist(store, tmp_path):
    summary = import_path(store, _dsg_bundle(tmp_path / "b", judge_answers={
        "p1": ["yes", "yes", "no"], "p2": ["yes", "no", "no"]}))
    questions = _questions(store)
    assert questions["p1/3"] == ("p1", "Is the cat on the mat?", ["p1/1"])
    assert questions["p2/2"] == ("p2", "Is there a table?", ["p2/1"])
    assert len(questions) == 6
    judged = {(r["output_id"], r["question_id"]): r["answer"]
              for r in store.db.query("SELECT * FROM judgments")}
    assert judged[("p1/sd", "p1/3")] == "no" and judged[("p2/sd", "p2/2")] == "no"
    human = {r["output_id"]: (r["question_id"], r["answer"])
             for r in store.db.query("SELECT * FROM annotations")}
    assert human == {"p1/sd": ("p1/3", "yes"), "p2/sd": ("p2/3", "no")}
    [warning] = [str(w) for w in summary.warnings if "another checklist" in str(w)]
    assert "tasks.jsonl:1: question_id:" in warning and "'p1/1'" in warning


def test_re_importing_the_same_bundle_adds_nothing(store, tmp_path):
    bundle = _dsg_bundle(tmp_path / "b")
    import_path(store, bundle)
    before = {k: v for k, v in store.counts().items() if k != "imports"}
    summary = import_path(store, bundle)
    assert {k: v for k, v in store.counts().items() if k != "imports"} == before
    assert summary.unchanged["questions"] == 6


def test_a_later_bundle_names_stored_questions_by_their_number(store, tmp_path):
    import_path(store, _dsg_bundle(tmp_path / "b"))
    later = tmp_path / "later"
    later.mkdir()
    (later / "bundle.json").write_text(json.dumps({
        "name": "dsg", "benchmark": "TIFA", "judges": [{"name": "vqa2", "kind": "vlm"}]}))
    write_jsonl(later / "tasks.jsonl", [])
    make_image(later / "xl.png", color="pink")  # a new generator's output of a stored task
    write_jsonl(later / "outputs.jsonl", [
        {"output_id": "p1/xl", "task_id": "p1", "generator": "xl", "path": "xl.png"}])
    write_jsonl(later / "judgments.jsonl", [
        {"judge": "vqa2", "output_id": "p2/sd", "question_id": "2", "answer": "no"},
        {"judge": "vqa2", "output_id": "p1/sd", "question_id": "p1/2", "answer": "yes"},
        {"judge": "vqa2", "output_id": "p1/xl", "question_id": "3", "answer": "no"}])
    import_path(store, later)
    rows = {(r["output_id"], r["question_id"]): r["answer"] for r in store.db.query(
        "SELECT * FROM judgments WHERE judge = 'vqa2'")}
    assert rows == {("p2/sd", "p2/2"): "no", ("p1/sd", "p1/2"): "yes",
                    ("p1/xl", "p1/3"): "no"}


def test_a_new_checklist_reusing_a_stored_number_leaves_the_stored_one_as_it_is(store,
                                                                                 tmp_path):
    import_path(store, _dsg_bundle(tmp_path / "one", prompts={"p1": PROMPTS["p1"]}))
    assert set(_questions(store)) == {"1", "2", "3"}  # unique: stored as given
    import_path(store, _dsg_bundle(tmp_path / "both", color_shift=0))
    questions = _questions(store)
    assert set(questions) == {"1", "2", "3", "p2/1", "p2/2", "p2/3"}
    assert questions["p2/3"][2] == ["p2/1"] and questions["3"][2] == ["1"]
    assert store.counts()["judgments"] == 6


def test_export_and_import_keep_the_stored_ids(store, tmp_path):
    import_path(store, _dsg_bundle(tmp_path / "b"))
    write_bundle(store.read_project(), tmp_path / "export")
    with Store.open(tmp_path / "again.db") as again:
        import_path(again, tmp_path / "export")
        assert _questions(again) == _questions(store)
        assert again.counts()["judgments"] == store.counts()["judgments"]


def test_ids_unique_across_the_bundle_are_never_changed(store, example_bundle):
    summary = import_path(store, example_bundle)
    assert {"t1.q1", "t1.q2", "t1.q3"} <= set(_questions(store))
    assert not [w for w in summary.warnings if "another checklist" in str(w)]


def test_a_number_twice_in_one_checklist_is_still_refused(tmp_path, make_engine_db):
    bundle = _dsg_bundle(tmp_path / "b")
    tasks = read_jsonl(bundle / "tasks.jsonl")
    tasks[1]["questions"][2]["question_id"] = "2"
    write_jsonl(bundle / "tasks.jsonl", tasks)
    with Store.open(make_engine_db("p.db")) as store, pytest.raises(ImportRefused) as caught:
        import_path(store, bundle)
    assert "tasks.jsonl:2: question_id: duplicate question_id 'p2/2'" in [
        str(p) for p in caught.value.problems]


def test_depends_on_a_number_of_another_checklist_only_is_refused(tmp_path, make_engine_db):
    prompts = {"p1": PROMPTS["p1"], "p2": ("A dog.", ["Is there a dog?"])}
    bundle = _dsg_bundle(tmp_path / "b", prompts=prompts)
    tasks = read_jsonl(bundle / "tasks.jsonl")
    tasks[1]["questions"][0]["depends_on"] = ["3"]  # p2 has no question 3
    write_jsonl(bundle / "tasks.jsonl", tasks)
    with Store.open(make_engine_db("p.db")) as store, pytest.raises(ImportRefused) as caught:
        import_path(store, bundle)
    assert any("depends_on: unknown question '3' (must be in the same checklist)" in str(p)
               for p in caught.value.problems)


def test_question_ids_written_as_numbers_are_read_as_their_text(store, tmp_path):
    bundle = _dsg_bundle(tmp_path / "b")
    for name in ("tasks.jsonl", "judgments.jsonl", "annotations.jsonl"):
        text = (bundle / name).read_text()
        for n in (1, 2, 3):
            text = text.replace(f'"question_id": "{n}"', f'"question_id": {n}')
            text = text.replace(f'["{n}"]', f"[{n}]")
        (bundle / name).write_text(text)
    assert '"question_id": 1,' in (bundle / "tasks.jsonl").read_text()
    import_path(store, bundle)
    assert _questions(store)["p2/3"][2] == ["p2/1"]
    assert store.counts()["judgments"] == 6 and store.counts()["annotations"] == 2


def test_a_question_id_of_another_type_is_still_refused(tmp_path, make_engine_db):
    bundle = _dsg_bundle(tmp_path / "b")
    tasks = read_jsonl(bundle / "tasks.jsonl")
    tasks[0]["questions"][0]["question_id"] = 1.5
    write_jsonl(bundle / "tasks.jsonl", tasks)
    with Store.open(make_engine_db("p.db")) as store, pytest.raises(ImportRefused) as caught:
        import_path(store, bundle)
    assert any(str(p).startswith("tasks.jsonl:1: questions[0].question_id: must be a string")
               for p in caught.value.problems)
