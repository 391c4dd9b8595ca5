"""Tests of the TIIF-Bench importer (:mod:`annotation.formats.tiif`).

Two kinds of tests:

* on the real public files in ``<shared>/fixtures/tiif-bench`` (``<shared>`` is the
  ``JUDGE_AUDIT_SHARED`` environment variable, else the ``shared`` folder beside the
  repository); they are skipped when the folder is absent. Every expected figure is
  computed here from the raw files, independently of the importer;
* on tiny synthetic layouts written in ``tmp_path`` (bad inputs, images, testmini mapping).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from annotation.formats import tiif
from annotation.formats.importers import import_path
from annotation.records import ImportRefused, ProjectData
from annotation.store import Store

SHARED = Path(
    os.environ.get("JUDGE_AUDIT_SHARED") or Path(__file__).resolve().parents[2] / "shared"
)
FIXTURE = SHARED / "fixtures" / "tiif-bench"
RESULTS = FIXTURE / "eval-results"
JUDGES = ("GPT-4o", "QwenVL")

needs_fixture = pytest.mark.skipif(
    not (FIXTURE / "data" / "test_prompts").is_dir(),
    reason=f"TIIF-Bench fixture not found at {FIXTURE} (set JUDGE_AUDIT_SHARED)",
)


# --------------------------------------------------------------------------- helpers


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _test_rows(dim: str, kind: str = "prompts", split: str = "test") -> list[dict[str, Any]]:
    folder = "prompts" if kind == "prompts" else "eval_prompts"
    return _jsonl(FIXTURE / "data" / f"{split}_{folder}" / f"{dim}_{folder}.jsonl")


def _result_files() -> list[tuple[str, str, str, str, int, Path]]:
    """``(judge, model, dim, variant, line_idx, path)`` of every result file, by walking."""
    found = []
    for judge_dir in sorted(RESULTS.glob("*/*")):
        judge = judge_dir.name.rsplit("_", 1)[1]
        for path in judge_dir.glob("*/*/*/*.json"):
            model, dim, variant = path.parts[-4:-1]
            found.append((judge, model, dim, variant, int(path.stem), path))
    return found


def _by_id(items: list[Any], attr: str) -> dict[str, Any]:
    return {getattr(item, attr): item for item in items}


@pytest.fixture(scope="module")
def real() -> ProjectData:
    """The fixture read once in ``auto`` mode."""
    if not (FIXTURE / "data" / "test_prompts").is_dir():
        pytest.skip(f"TIIF-Bench fixture not found at {FIXTURE}")
    return tiif.read(FIXTURE)


@pytest.fixture(scope="module")
def results() -> list[tuple[str, str, str, str, int, Path]]:
    """Every result file of the fixture, found by walking the folders."""
    if not RESULTS.is_dir():
        pytest.skip(f"TIIF-Bench fixture not found at {FIXTURE}")
    return _result_files()


# --------------------------------------------------------------------------- real fixture


@needs_fixture
def test_detect(tmp_path: Path) -> None:
    """The fixture is detected; an empty or absent folder is not."""
    assert tiif.detect(FIXTURE)
    assert not tiif.detect(tmp_path)
    assert not tiif.detect(tmp_path / "nowhere")


@pytest.mark.slow
@needs_fixture
def test_real_counts(real: ProjectData, results: list[tuple]) -> None:
    """Tasks, questions, outputs and judgments match counts taken from the raw files."""
    referenced = {(dim, idx) for _j, _m, dim, _v, idx, _p in results}
    assert len(referenced) == 277
    n_questions = sum(
        len(_test_rows(dim, "eval")[idx]["yn_question_list"]) for dim, idx in referenced
    )
    assert len(real.tasks) == 554
    assert len(real.questions) == n_questions
    assert {t.task_id for t in real.tasks} == {
        f"{dim}/{idx}/{v}" for dim, idx in referenced for v in ("short", "long")
    }
    assert sorted(j.name for j in real.judges) == list(JUDGES)
    assert all(j.kind == "vlm" for j in real.judges)

    per_model = Counter(m for j, m, *_rest in results if j == "GPT-4o")
    assert per_model == {"DALLE3": 464, "GPT-4o": 519, "Janus-Pro": 554, "sd35": 554}
    assert len(real.outputs) == 4 * 554
    missing = Counter(o.generator for o in real.outputs if o.missing)
    assert missing == {"DALLE3": 90, "GPT-4o": 35}
    assert all(o.path is None and o.file is None for o in real.outputs)
    missing_warnings = [w for w in real.warnings if "output missing" in w.message]
    assert len(missing_warnings) == 125

    expected_judgments = Counter()
    for judge, *_rest, path in results:
        expected_judgments[judge] += len(json.loads(path.read_text())["questions"])
    assert Counter(j.judge for j in real.judgments) == expected_judgments
    counts = real.counts()
    assert counts["missing_outputs"] == 125
    assert counts["judgments"] == sum(expected_judgments.values())


@pytest.mark.slow
@needs_fixture
@pytest.mark.parametrize("dim", ["style", "real_world"])
def test_line_idx_indexes_full_test_file(real: ProjectData, results: list[tuple], dim: str) -> None:
    """Task ids and instructions use the full test file row named by ``line_idx``."""
    test_rows = _test_rows(dim)
    mini_rows = _test_rows(dim, split="testmini")
    tasks = [t for t in real.tasks if t.meta["dimension"] == dim]
    assert len(tasks) == 2 * len(mini_rows)
    stems = {idx for _j, _m, d, _v, idx, _p in results if d == dim}
    assert {t.meta["line_idx"] for t in tasks} == stems
    for task in tasks:
        idx = task.meta["line_idx"]
        assert task.task_id == f"{dim}/{idx}/{task.meta['variant']}"
        assert task.instruction == test_rows[idx][f"{task.meta['variant']}_description"]
        assert task.meta["splits"] == ["test", "testmini"]
    # The testmini file is not a prefix of the test file here: position != line_idx.
    assert mini_rows[0] != test_rows[0]
    assert any(t.meta["line_idx"] >= len(mini_rows) for t in tasks)
    if dim == "real_world":
        assert all(t.meta["corrspond_idx"] == t.meta["line_idx"] for t in tasks)


@pytest.mark.slow
@needs_fixture
def test_questions_stripped_and_pass_answers_lowercased(real: ProjectData) -> None:
    """Questions are stripped and expected answers lowercased, one checklist per prompt."""
    answers = Counter(q.pass_answer for q in real.questions)
    assert set(answers) == {"yes", "no"}
    assert all(q.text == q.text.strip() and q.text for q in real.questions)
    questions = _by_id(real.questions, "question_id")
    saw_trailing = saw_mixed_case = False
    for task in real.tasks:
        dim, idx = task.meta["dimension"], task.meta["line_idx"]
        row = _test_rows(dim, "eval")[idx]
        for k, (text, answer) in enumerate(
            zip(row["yn_question_list"], row["yn_answer_list"], strict=True)
        ):
            q = questions[f"{dim}/{idx}/q{k}"]
            assert q.checklist_id == task.checklist_id == f"{dim}/{idx}"
            assert q.position == k
            assert q.text == text.strip()
            assert q.pass_answer == answer.strip().lower()
            saw_trailing |= text != text.strip()
            saw_mixed_case |= answer != answer.lower()
    assert saw_trailing and saw_mixed_case


@pytest.mark.slow
@needs_fixture
def test_duplicated_prompt_text_gives_distinct_tasks() -> None:
    """Prompts are keyed by line index, so a repeated prompt text gives two tasks."""
    project = tiif.read(FIXTURE, split="test")
    by_text: dict[str, list[str]] = {}
    for task in project.tasks:
        by_text.setdefault(task.instruction, []).append(task.task_id)
    duplicated = {text: ids for text, ids in by_text.items() if len(ids) > 1}
    # Independently: the duplicated short prompts of the test files.
    expected = Counter()
    for path in sorted((FIXTURE / "data" / "test_prompts").glob("*_prompts.jsonl")):
        for row in _jsonl(path):
            expected[row["short_description"]] += 1
            if row["long_description"] != row["short_description"]:
                expected[row["long_description"]] += 1
    # real_world rows repeat the same text in short and long: two tasks, one prompt text.
    assert {t for t, n in expected.items() if n > 1} <= set(duplicated)
    assert "text/174/short" in duplicated[_test_rows("text")[174]["short_description"]]
    assert "text/193/short" in duplicated[_test_rows("text")[193]["short_description"]]
    assert len({t.task_id for t in project.tasks}) == len(project.tasks) == 2 * 2538


@pytest.mark.slow
@needs_fixture
def test_splits(real: ProjectData) -> None:
    """``testmini`` gives the same tasks as the results; an unknown split is refused."""
    mini = tiif.read(FIXTURE, split="testmini")
    assert [t.task_id for t in mini.tasks] == [t.task_id for t in real.tasks]
    assert len(mini.judgments) == len(real.judgments)
    with pytest.raises(ValueError):
        tiif.read(FIXTURE, split="train")


@pytest.mark.slow
@needs_fixture
def test_judgments_match_files(real: ProjectData, results: list[tuple]) -> None:
    """Each judgment carries the file's answer and its line of ``model_output``."""
    by_key = {(j.judge, j.output_id, j.question_id): j for j in real.judgments}
    assert len(by_key) == len(real.judgments)
    whole_text = 0
    for judge, model, dim, variant, idx, path in results:
        data = json.loads(path.read_text())
        lines = [line for line in data["model_output"].split("\n") if line.strip()]
        for k, pred in enumerate(data["model_pred"]):
            j = by_key[(judge, f"{dim}/{idx}/{variant}/{model}", f"{dim}/{idx}/q{k}")]
            assert j.answer == pred.strip().lower()
            assert j.parse_status == "ok"
            if len(lines) == len(data["questions"]):
                assert j.raw == lines[k]
            else:
                assert j.raw == data["model_output"]
                whole_text += 1
    assert whole_text > 0


# --------------------------------------------------------------------------- synthetic


def _write_jsonl(path: Path, rows: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


PROMPTS = [
    {"type": "foo", "short_description": "A cat.", "long_description": "A small grey cat."},
    {"type": "foo", "short_description": "A red ball.", "long_description": "A shiny red ball."},
]
EVALS = [
    {"type": "foo", "yn_question_list": ["Is there a cat? "], "yn_answer_list": ["Yes"]},
    {
        "type": "foo",
        "yn_question_list": ["Is the ball red?", "Is the ball blue?"],
        "yn_answer_list": ["yes", "No"],
    },
]
JUDGE_DIR = "eval-results/runs/runs_eval_results_J1"


def _result(dim: str, idx: int, variant: str, preds: list[str], output: str) -> dict[str, Any]:
    row = EVALS[idx]
    return {
        "attribute": dim,
        "desc": f"{variant}_description",
        "jsonl_file": f"{dim}_eval_prompts.jsonl",
        "line_idx": idx,
        "questions": row["yn_question_list"],
        "gt_answers": row["yn_answer_list"],
        "model_pred": preds,
        "model_output": output,
    }


def _write_result(root: Path, model: str, variant: str, idx: int, data: Any) -> Path:
    path = root / JUDGE_DIR / model / "foo" / variant / f"{idx}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _tiny(root: Path, *, results: bool = True) -> Path:
    """Write two prompts of dimension ``foo`` and a few results of judge J1.

    J1 judged M1 on row 1 (both variants) and M2 on row 1 short only.
    """
    _write_jsonl(root / "data/test_prompts/foo_prompts.jsonl", PROMPTS)
    _write_jsonl(root / "data/test_eval_prompts/foo_eval_prompts.jsonl", EVALS)
    if results:
        out = "yes\nthe ball is red\nno\nnot blue"
        _write_result(root, "M1", "short", 1, _result("foo", 1, "short", ["Yes", "no"], out))
        _write_result(root, "M1", "long", 1, _result("foo", 1, "long", ["yes", "no"], "yes\nno"))
        _write_result(root, "M2", "short", 1, _result("foo", 1, "short", ["no", "maybe"], "?"))
    return root


def _refused(root: Path, **kwargs: Any) -> ImportRefused:
    with pytest.raises(ImportRefused) as info:
        tiif.read(root, **kwargs)
    return info.value


def test_synthetic_import(tmp_path: Path) -> None:
    """Ids, pass answers, missing outputs and unparsed answers on a tiny layout."""
    project = tiif.read(_tiny(tmp_path))
    assert tiif.detect(tmp_path)
    assert project.format == "tiif-bench" and project.benchmark == "TIIF-Bench"
    assert [t.task_id for t in project.tasks] == ["foo/1/short", "foo/1/long"]
    assert [q.question_id for q in project.questions] == ["foo/1/q0", "foo/1/q1"]
    assert [q.pass_answer for q in project.questions] == ["yes", "no"]
    assert [j.name for j in project.judges] == ["J1"]
    outputs = _by_id(project.outputs, "output_id")
    assert set(outputs) == {"foo/1/short/M1", "foo/1/long/M1", "foo/1/short/M2", "foo/1/long/M2"}
    assert outputs["foo/1/long/M2"].missing
    assert not outputs["foo/1/short/M2"].missing and outputs["foo/1/short/M2"].path is None
    assert any("M2" in w.message and "foo/1/long" in w.message for w in project.warnings)
    judgments = {(j.output_id, j.question_id): j for j in project.judgments}
    assert len(judgments) == 6
    first = judgments["foo/1/short/M1", "foo/1/q0"]
    assert (first.answer, first.raw) == ("yes", "yes\nthe ball is red\nno\nnot blue")
    assert judgments["foo/1/long/M1", "foo/1/q1"].raw == "no"
    bad = judgments["foo/1/short/M2", "foo/1/q1"]
    assert (bad.answer, bad.parse_status, bad.raw) == (None, "unparsed", "?")
    assert any(w.field == "model_pred[1]" for w in project.warnings)
    assert any(w.field == "model_output" for w in project.warnings)


def test_synthetic_without_results_reads_test(tmp_path: Path) -> None:
    """Without results or testmini, every test prompt is imported."""
    project = tiif.read(_tiny(tmp_path, results=False))
    assert [t.task_id for t in project.tasks] == [
        "foo/0/short",
        "foo/0/long",
        "foo/1/short",
        "foo/1/long",
    ]
    assert project.questions[0].text == "Is there a cat?"
    assert project.outputs == [] and project.judgments == []


def test_bad_json_in_eval_file_names_file_and_line(tmp_path: Path) -> None:
    """Bad JSON in an eval file is reported with its file and line."""
    _tiny(tmp_path)
    path = tmp_path / "data/test_eval_prompts/foo_eval_prompts.jsonl"
    lines = path.read_text().splitlines()
    path.write_text(lines[0] + "\n{not json\n")
    error = _refused(tmp_path)
    problem = error.problems[0]
    assert (problem.file, problem.line) == ("data/test_eval_prompts/foo_eval_prompts.jsonl", 2)
    assert "data/test_eval_prompts/foo_eval_prompts.jsonl:2" in str(error)


def test_expected_answer_maybe_names_field(tmp_path: Path) -> None:
    """An expected answer other than yes/no names the field."""
    _tiny(tmp_path, results=False)
    evals = [dict(EVALS[0], yn_answer_list=["maybe"]), EVALS[1]]
    _write_jsonl(tmp_path / "data/test_eval_prompts/foo_eval_prompts.jsonl", evals)
    problem = _refused(tmp_path).problems[0]
    assert (problem.line, problem.field) == (1, "yn_answer_list[0]")
    assert "maybe" in problem.message


def test_line_count_mismatch(tmp_path: Path) -> None:
    """Prompt and eval files of different lengths are refused."""
    _tiny(tmp_path, results=False)
    _write_jsonl(tmp_path / "data/test_eval_prompts/foo_eval_prompts.jsonl", EVALS[:1])
    assert "pair line by line" in str(_refused(tmp_path))


def test_bad_result_files(tmp_path: Path) -> None:
    """Broken, inconsistent or out-of-range result files name the file and field."""
    _tiny(tmp_path)
    rel = f"{JUDGE_DIR}/M1/foo/long/1.json"
    _write_result(tmp_path, "M1", "long", 1, "{broken")
    problems = _refused(tmp_path).problems
    assert [(p.file, p.line) for p in problems] == [(rel, None)]
    assert "invalid JSON" in problems[0].message

    wrong = _result("foo", 1, "long", ["yes", "no"], "")
    wrong["questions"] = ["Is the ball green?", "Is the ball blue?"]
    wrong["gt_answers"] = ["yes", "yes"]
    _write_result(tmp_path, "M1", "long", 1, wrong)
    fields = {(p.file, p.field) for p in _refused(tmp_path).problems}
    assert fields == {(rel, "questions"), (rel, "gt_answers")}

    _write_result(tmp_path, "M1", "long", 1, _result("foo", 1, "long", ["yes", "no"], "x"))
    far = _result("foo", 1, "long", ["yes"], "")
    far["line_idx"] = 7
    _write_result(tmp_path, "M1", "long", 7, far)
    problem = _refused(tmp_path).problems[0]
    assert (problem.file, problem.field) == (f"{JUDGE_DIR}/M1/foo/long/7.json", "line_idx")
    assert "out of range" in problem.message

    (tmp_path / JUDGE_DIR / "M1/foo/long/7.json").unlink()
    missing = _result("foo", 1, "long", ["yes", "no"], "")
    del missing["model_pred"]
    _write_result(tmp_path, "M1", "long", 1, missing)
    problem = _refused(tmp_path).problems[0]
    assert (problem.file, problem.field, problem.message) == (rel, "model_pred", "missing")


def _png(path: Path, color: str = "red") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 6), color).save(path)


def test_links_images(tmp_path: Path) -> None:
    """Generated images are linked, relative to the images folder."""
    _tiny(tmp_path)
    _png(tmp_path / "output/foo/M1/short_description/1.png")
    _png(tmp_path / "output/foo/M2/long_description/1.png", "blue")
    project = tiif.read(tmp_path)
    outputs = _by_id(project.outputs, "output_id")
    linked = outputs["foo/1/short/M1"]
    assert linked.path == "foo/M1/short_description/1.png"
    assert linked.file is not None and (linked.file.width, linked.file.height) == (8, 6)
    assert linked.file.format == "PNG"
    assert linked.file.source == (tmp_path / "output" / linked.path).resolve()
    assert outputs["foo/1/long/M1"].path is None  # judged, image not at hand
    # An image makes an output that has no result file present, not missing.
    assert not outputs["foo/1/long/M2"].missing
    assert outputs["foo/1/long/M2"].path == "foo/M2/long_description/1.png"

    elsewhere = tmp_path / "gen"
    _png(elsewhere / "foo/M1/long_description/1.jpg")
    project = tiif.read(tmp_path, images=elsewhere)
    outputs = _by_id(project.outputs, "output_id")
    assert outputs["foo/1/long/M1"].path == "foo/M1/long_description/1.jpg"
    assert outputs["foo/1/long/M1"].file.format == "JPEG"
    assert outputs["foo/1/short/M1"].path is None


def test_links_image_for_prompt_0(tmp_path: Path) -> None:
    """Images alone make outputs; the other variant of the prompt is missing."""
    _tiny(tmp_path, results=False)
    _png(tmp_path / "output/foo/M1/short_description/0.png")
    project = tiif.read(tmp_path)
    outputs = _by_id(project.outputs, "output_id")
    assert outputs["foo/0/short/M1"].path == "foo/M1/short_description/0.png"
    assert outputs["foo/0/long/M1"].missing  # covered task, nothing from M1
    assert "foo/1/short/M1" not in outputs  # nobody generated for prompt 1


def test_refuses_bad_images(tmp_path: Path) -> None:
    """Undecodable images and symlinks out of the images folder are refused."""
    _tiny(tmp_path)
    bad = tmp_path / "output/foo/M1/short_description/1.png"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not an image")
    problem = _refused(tmp_path).problems[0]
    assert problem.file == "output/foo/M1/short_description/1.png"
    assert "not a decodable image" in problem.message

    bad.unlink()
    outside = tmp_path.parent / f"{tmp_path.name}_outside.png"
    _png(outside)
    try:
        bad.symlink_to(outside)
    except OSError:
        pytest.skip("symlinks not supported")
    assert "leaves the bundle" in _refused(tmp_path).problems[0].message


def test_testmini_mapping(tmp_path: Path) -> None:
    """Testmini rows map by prefix, by corrspond_idx, or by results; never by text."""
    rows = [
        {"type": "foo", "short_description": f"s{i}", "long_description": f"l{i}"} for i in range(4)
    ]
    evals = [
        {"type": "foo", "yn_question_list": [f"q{i}?"], "yn_answer_list": ["yes"]} for i in range(4)
    ]
    data = tmp_path / "data"
    # foo: prefix; bar: corrspond_idx; baz: scattered, no index (like style).
    for dim in ("foo", "bar", "baz"):
        _write_jsonl(data / f"test_prompts/{dim}_prompts.jsonl", [dict(r, type=dim) for r in rows])
        _write_jsonl(
            data / f"test_eval_prompts/{dim}_eval_prompts.jsonl", [dict(e, type=dim) for e in evals]
        )
    _write_jsonl(data / "testmini_prompts/foo_prompts.jsonl", rows[:2])
    _write_jsonl(data / "testmini_eval_prompts/foo_eval_prompts.jsonl", evals[:2])
    bar = [dict(r, type="bar") for r in (rows[3], rows[1])]
    _write_jsonl(data / "testmini_prompts/bar_prompts.jsonl", bar)
    bar_evals = [
        dict(evals[3], type="bar", corrspond_idx=3),
        dict(evals[1], type="bar", corrspond_idx=1),
    ]
    _write_jsonl(data / "testmini_eval_prompts/bar_eval_prompts.jsonl", bar_evals)
    _write_jsonl(data / "testmini_prompts/baz_prompts.jsonl", [dict(rows[2], type="baz")])
    _write_jsonl(
        data / "testmini_eval_prompts/baz_eval_prompts.jsonl", [dict(evals[2], type="baz")]
    )

    project = tiif.read(tmp_path)  # auto: no results -> testmini
    ids = [t.task_id for t in project.tasks if t.meta["variant"] == "short"]
    assert ids == ["bar/1/short", "bar/3/short", "foo/0/short", "foo/1/short"]
    assert project.tasks[0].instruction == "s1"
    skipped = [w for w in project.warnings if w.file == "data/testmini_prompts/baz_prompts.jsonl"]
    assert len(skipped) == 1 and "never matched by text" in skipped[0].message

    # With a result file naming baz/2, the scattered subset is known.
    res = {
        "questions": ["q2?"],
        "gt_answers": ["yes"],
        "model_pred": ["yes"],
        "model_output": "yes",
        "line_idx": 2,
    }
    path = tmp_path / "eval-results/r_eval_results_J/M/baz/short/2.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(res))
    project = tiif.read(tmp_path, split="testmini")
    tasks = _by_id(project.tasks, "task_id")
    assert tasks["baz/2/short"].meta["splits"] == ["test", "testmini"]
    assert len(tasks) == 2 * 5

    project = tiif.read(tmp_path, split="test")
    splits = {t.task_id: t.meta["splits"] for t in project.tasks}
    assert splits["foo/1/short"] == ["test", "testmini"]
    assert splits["foo/2/short"] == ["test"]
    assert splits["bar/3/long"] == ["test", "testmini"]
    assert splits["bar/0/long"] == ["test"]

    # A corrspond_idx pointing at another prompt is refused.
    bad = [dict(bar_evals[0], corrspond_idx=0), bar_evals[1]]
    _write_jsonl(data / "testmini_eval_prompts/bar_eval_prompts.jsonl", bad)
    problem = _refused(tmp_path).problems[0]
    assert (problem.file, problem.line, problem.field) == (
        "data/testmini_eval_prompts/bar_eval_prompts.jsonl",
        1,
        "corrspond_idx",
    )


# --------------------------------------------------------------------------- end to end


def _independent_agreement() -> tuple[float, int]:
    """Share of (output, question) decisions where GPT-4o and QwenVL agree, from the JSON."""
    preds: dict[str, dict[tuple[str, str, str, int, int], str]] = {j: {} for j in JUDGES}
    for judge, model, dim, variant, idx, path in _result_files():
        for k, pred in enumerate(json.loads(path.read_text())["model_pred"]):
            pred = str(pred).strip().lower()
            if pred in ("yes", "no"):
                preds[judge][model, dim, variant, idx, k] = pred
    both = preds["GPT-4o"].keys() & preds["QwenVL"].keys()
    equal = sum(preds["GPT-4o"][key] == preds["QwenVL"][key] for key in both)
    return equal / len(both), len(both)


@pytest.mark.slow
@needs_fixture
def test_end_to_end_store_and_judge_agreement(engine_db: str, results: list[tuple]) -> None:
    """Import into a project; judge agreement from the DB equals the one from the JSON."""
    store = Store.open(engine_db)
    try:
        import_path(store, FIXTURE)
        counts = store.counts()
        referenced = {(dim, idx) for _j, _m, dim, _v, idx, _p in results}
        n_questions = sum(
            len(_test_rows(dim, "eval")[idx]["yn_question_list"]) for dim, idx in referenced
        )
        n_judgments = sum(len(json.loads(p.read_text())["questions"]) for *_r, p in results)
        assert counts["tasks"] == 554
        assert counts["questions"] == n_questions
        assert counts["judges"] == 2
        assert counts["outputs"] == 4 * 554
        assert counts["missing_outputs"] == 90 + 35
        assert counts["judgments"] == n_judgments

        df = store.judgments_df()
        df = df[df["question_id"].notna() & df["answer"].notna()]
        wide = df.pivot_table(
            index=["output_id", "question_id"], columns="judge", values="answer", aggfunc="first"
        ).dropna()
        from_db = float((wide["GPT-4o"] == wide["QwenVL"]).mean())
    finally:
        store.close()

    expected, n_pairs = _independent_agreement()
    assert len(wide) == n_pairs
    assert from_db == pytest.approx(expected, abs=1e-12)
    print(f"GPT-4o vs QwenVL agreement on TIIF testmini: {from_db:.4f} over {n_pairs} decisions")
