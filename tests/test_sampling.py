"""Sampling designs and disagreement first (issue #16, item 1), on real projects."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from annotation.cli import main
from annotation.formats.importers import import_path
from annotation.results.checklist import study_decisions
from annotation.results.design import design_table
from annotation.results.leaderboard import leaderboard_table
from annotation.results.study import load_study
from annotation.store import Store, items
from annotation.work import sampling, workflow
from tests.helpers.bundles import make_image, write_jsonl
from tests.test_leaderboard import _annotate, _bundle

# the page test's demo (served_demo) on both engines (issue #18)
SERVED_ENGINES = ("sqlite", "postgresql")


@pytest.fixture
def project(tmp_path: Path, make_engine_db) -> tuple[Path, dict[str, float], Path]:
    root, truth = _bundle(tmp_path / "bundle", n_tasks=30)
    tasks = [json.loads(line) for line in (root / "tasks.jsonl").read_text().splitlines()]
    for k, task in enumerate(tasks):  # a nested meta key to stratify on
        task["meta"] = {"prompt": {"dimension": ["color", "shape", "count"][k % 3]}}
    write_jsonl(root / "tasks.jsonl", tasks)
    db = make_engine_db("p.db")
    with Store.open(db) as store:
        import_path(store, root)
    return db, truth, root


def _events(store: Store) -> list[dict]:
    return [json.loads(r["detail"]) for r in store.db.query(
        "SELECT detail FROM audit_log WHERE action = 'workflow.sample' ORDER BY event_id")]


def test_uniform_and_generator_strata_draw_what_they_always_drew(project):
    """Same seed, same sample as before the designs were one module: uniform is
    ``random.Random(seed).sample`` of the outputs in import order."""
    db, _, _ = project
    with Store.open(db) as store:
        ids = list(items.annotatable_outputs(store).output_id)
        assert workflow.draw_sample(store, "admin", "uniform", 7, seed=3) == random.Random(
            3).sample(ids, 7)
        chosen = sampling.draw(store, "admin", "stratified", size=9, seed=5)
        assert pd.Series([c.split("/")[1] for c in chosen]).value_counts().to_dict() == {
            "alpha": 3, "beta": 3, "gamma": 3}
        assert _events(store)[-1] == {"mode": "stratified", "size": 9, "seed": 5,
                                      "by": ["generator"], "per_stratum": None, "drawn": 9}


def test_paired_takes_every_generator_of_the_same_tasks(project):
    db, _, _ = project
    with Store.open(db) as store:
        chosen = sampling.draw(store, "admin", "paired", size=8, seed=1,
                               generators=["alpha", "gamma"])
        tasks = pd.Series([c.split("/")[0] for c in chosen])
        assert len(chosen) == 16 and (tasks.value_counts() == 2).all()
        assert {c.split("/")[1] for c in chosen} == {"alpha", "gamma"}
        assert _events(store)[-1]["tasks"] == 8
        with pytest.raises(ValueError, match="no annotatable outputs of generator"):
            sampling.draw(store, "admin", "paired", size=2, generators=["delta"])


def test_paired_leaves_out_tasks_without_every_generator(tmp_path, make_engine_db):
    root, _ = _bundle(tmp_path / "bundle", n_tasks=6)
    outputs = [json.loads(line) for line in (root / "outputs.jsonl").read_text().splitlines()]
    write_jsonl(root / "outputs.jsonl", [o for o in outputs if o["output_id"] != "t2/beta"])
    judgments = [json.loads(line) for line in (root / "judgments.jsonl").read_text()
                 .splitlines()]
    write_jsonl(root / "judgments.jsonl", [j for j in judgments if j["output_id"] != "t2/beta"])
    with Store.open(make_engine_db("p.db")) as store:
        import_path(store, root)
        chosen = sampling.draw(store, "admin", "paired", size=100, seed=0)
        assert {c.split("/")[0] for c in chosen} == {"t0", "t1", "t3", "t4", "t5"}


def test_strata_of_a_nested_meta_key_in_proportion_or_equal(project):
    db, _, _ = project
    with Store.open(db) as store:
        chosen = sampling.draw(store, "admin", "stratified", size=30, seed=2,
                               by=["meta.prompt.dimension"])
        dims = pd.Series([["color", "shape", "count"][int(c.split("/")[0][1:]) % 3]
                          for c in chosen])
        assert dims.value_counts().to_dict() == {"color": 10, "shape": 10, "count": 10}
        chosen = sampling.draw(store, "admin", "stratified", per_stratum=2, seed=2,
                               by=["meta.prompt.dimension", "generator"])
        assert len(chosen) == 18  # 3 dimensions x 3 generators x 2
        with pytest.raises(KeyError, match="meta.nope: not a column of the outputs"):
            sampling.draw(store, "admin", "stratified", size=3, by=["meta.nope"])


def test_allocation_is_proportional_by_largest_remainders():
    assert sampling.allocate({"a": 50, "b": 30, "c": 20}, 10) == {"a": 5, "b": 3, "c": 2}
    # quotas 1.5, .75, .75: floors 1, 0, 0, the two largest remainders (b, c) get one more
    assert sampling.allocate({"a": 2, "b": 1, "c": 1}, 3) == {"a": 1, "b": 1, "c": 1}
    assert sampling.allocate({"a": 1, "b": 9}, 50) == {"a": 1, "b": 9}  # never more than


def test_the_balanced_design_is_the_validation_set(project):
    db, _, _ = project
    with Store.open(db) as store:
        chosen = sampling.draw(store, "admin", "balanced", size=20, questions=24,
                               balance="judge:vlm", seed=1)
        pairs = items.validation_pairs(store)
        assert len(chosen) == 20 and len(pairs) == 24
        answers = store.query_df("SELECT output_id, question_id, answer FROM judgments"
                                 " WHERE question_id IS NOT NULL")
        both = pairs.merge(answers, on=["output_id", "question_id"])
        assert both.answer.value_counts().to_dict() == {"yes": 12, "no": 12}
        with pytest.raises(ValueError, match="judge 'nobody' answered no checklist question"):
            sampling.draw(store, "admin", "balanced", size=20, questions=24,
                          balance="judge:nobody")


# ------------------------------------------------------------------ disagreement first
def test_disagreement_scores_on_hand_made_answers():
    judge_answers = pd.DataFrame({
        "output_id": ["a", "a", "b", "b", "c"], "judge": ["j1", "j2", "j1", "j2", "j1"],
        "question_id": ["q", "q", "q", "q", "q"], "answer": ["yes", "no", "yes", "yes", "no"]})
    judge_scores = pd.DataFrame({"output_id": ["d", "d"], "judge": ["j1", "j2"],
                                 "criterion": ["x", "x"], "score": [2.0, 8.0]})
    humans = pd.DataFrame({"output_id": ["c", "c"], "annotator": ["h1", "h2"],
                           "question_id": ["q", "q"], "answer": ["yes", "yes"]})
    scores = sampling.disagreement_scores(judge_answers, judge_scores, humans,
                                          pd.DataFrame(columns=["output_id", "criterion",
                                                                "score"]), {"x": 9.0})
    assert scores.to_dict() == {"a": 1.0, "b": 0.0, "c": 1.0, "d": pytest.approx(6 / 9)}


def _disagreeing_project(tmp_path: Path, make_engine_db: Callable[[str], str]) -> str:
    """Two judges on 12 outputs; they disagree on the checklist of t7/m only."""
    root = tmp_path / "b"
    root.mkdir()
    (root / "bundle.json").write_text(json.dumps({
        "name": "d", "benchmark": "x", "judges": [{"name": "j1", "kind": "vlm"},
                                                  {"name": "j2", "kind": "vlm"}]}))
    tasks, outputs, judgments = [], [], []
    for t in range(12):
        tasks.append({"task_id": f"t{t}", "instruction": "x", "questions": [
            {"question_id": f"t{t}.q", "text": "?", "pass_answer": "yes"}]})
        make_image(root / f"{t}.png", size=(30 + t, 30))
        outputs.append({"output_id": f"t{t}/m", "task_id": f"t{t}", "generator": "m",
                        "path": f"{t}.png"})
        for judge in ("j1", "j2"):
            answer = "no" if (t == 7 and judge == "j2") else "yes"
            judgments.append({"judge": judge, "output_id": f"t{t}/m",
                              "question_id": f"t{t}.q", "answer": answer})
    write_jsonl(root / "tasks.jsonl", tasks)
    write_jsonl(root / "outputs.jsonl", outputs)
    write_jsonl(root / "judgments.jsonl", judgments)
    db = make_engine_db("d.db")
    with Store.open(db) as store:
        import_path(store, root)
    return db


def test_disagreement_first_offers_the_disputed_output_first(tmp_path, make_engine_db):
    db = _disagreeing_project(tmp_path, make_engine_db)
    people = [f"ann{k}" for k in range(6)]
    with Store.open(db) as store:
        off = [workflow.next_item(store, p) for p in people]
        for p, unit in zip(people, off, strict=True):
            workflow.release(store, p, unit)
        assert off.count("t7/m") <= 2  # the personal orders, nothing favoured
        workflow.set_settings(store, "admin", disagreement_first=True)
        assert workflow.next_item(store, "zoe") == "t7/m"
        design = items.sample_design(store)
        assert design["disagreement_first"] and design["disagreement_first_ever"]
        workflow.set_settings(store, "admin", disagreement_first=False)
        assert items.sample_design(store)["disagreement_first_ever"]


def test_the_report_says_when_the_annotated_outputs_are_not_a_uniform_sample(tmp_path,
                                                                             make_engine_db):
    root, truth = _bundle(tmp_path / "bundle", n_tasks=20)
    with Store.open(make_engine_db("p.db")) as store:
        import_path(store, root)
        workflow.set_settings(store, "admin", disagreement_first=True)
        chosen = sampling.draw(store, "admin", "uniform", size=30, seed=1)
        _annotate(root, store, chosen[:20], truth)  # a third of the sample still open
        study = load_study(store)
    row = design_table(study).iloc[0]
    assert (row.design, row.n_sample, row.n_annotated, row.uniform) == ("uniform", 30, 20,
                                                                        False)
    assert "disagreement first" in row.note
    board = leaderboard_table(study, study_decisions(study))
    assert board.estimate.isna().all() and board.note.str.contains("disagreement").all()


def test_the_cli_draws_a_design_and_switches_disagreement_first(project, capsys):
    db, _, _ = project
    assert main(["sample", "--db", str(db), "--design", "stratified", "--by",
                 "meta.prompt.dimension", "--per-stratum", "4", "--seed", "3",
                 "--disagreement-first", "on"]) == 0
    assert "12 outputs" in capsys.readouterr().out
    with Store.open(db) as store:
        assert len(items.sample_ids(store)) == 12
        assert workflow.get_settings(store).disagreement_first
    assert main(["sample", "--db", str(db), "--design", "paired", "--size", "3",
                 "--generators", "alpha,zeta"]) == 1
    assert "no annotatable outputs of generator(s) zeta" in capsys.readouterr().err


def test_the_strata_picker_offers_only_keys_the_outputs_have(served_demo):
    from annotation.results.study import output_table

    with Store.open(served_demo) as store:
        keys = sampling.stratum_keys(store)
        columns = set(output_table(store).columns)
    assert keys[0] == "generator" and "task.vi_type" in keys and "conflict.any" in keys
    assert set(keys) <= columns


def test_the_design_sentence_says_when_the_annotated_outputs_are_not_uniform(tmp_path,
                                                                             make_engine_db):
    from annotation.results.design import design_sentence

    root, truth = _bundle(tmp_path / "bundle", n_tasks=10)
    with Store.open(make_engine_db("p.db")) as store:
        import_path(store, root)
        chosen = sampling.draw(store, "admin", "uniform", size=12, seed=4)
        _annotate(root, store, chosen[:6], truth)
        plain = design_sentence(design_table(load_study(store)))
        workflow.set_settings(store, "admin", disagreement_first=True)
        flagged = design_sentence(design_table(load_study(store)))
    assert plain == ("How the items were chosen: a uniform random sample, seed 4. 6 of 12 "
                     "outputs offered have human answers.")
    assert flagged.endswith("They are NOT a uniform sample of the benchmark's outputs.")
    assert "over-represent disagreements" in flagged
