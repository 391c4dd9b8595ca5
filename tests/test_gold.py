"""Gold items, qualification, training feedback and speed flags (issue #16, item 2): the
router's rules on a real demo database, the gold store (append-only), the import (good and
bad files, the database unchanged on error) and the statistics kept free of gold items."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from statsmodels.stats.proportion import proportion_confint

from annotation.results.annotators import annotators_table
from annotation.results.study import load_study
from annotation.store import Store
from annotation.store import gold as gold_rows
from annotation.work import gold, workflow
from annotation.work.workflow import load_item

PERSON = "p1"  # nobody of the demo: no answers yet


@pytest.fixture
def demo(engine_demo: str) -> Store:
    """The demo project, on SQLite and on PostgreSQL (issue #18)."""
    store = Store.open(engine_demo)
    yield store
    store.close()


def answer_all(store: Store, person: str, output_id: str, answer: str = "yes",
               score: float = 5.0) -> None:
    """Answer every question (``answer``: all applicable when yes) and criterion, submit."""
    item = load_item(store, output_id)
    for q in item.questions:
        workflow.give_answer(store, person, output_id, question_id=q.question_id,
                             answer=answer)
    for c in item.criteria:
        workflow.give_answer(store, person, output_id, criterion=c.name, score=score)
    workflow.submit(store, person, output_id)


def mark_gold(store: Store, output_id: str, answer: str = "yes", score: float = 5.0) -> None:
    item = load_item(store, output_id)
    gold.mark(store, "admin", output_id, {q.question_id: answer for q in item.questions},
              {c.name: score for c in item.criteria})


def some_outputs(store: Store, n: int) -> list[str]:
    return list(workflow.eligible_outputs(store).output_id)[:n]


def work_through(store: Store, person: str, limit: int = 200) -> list[str]:
    """Take and complete items until none is left; return them in order."""
    seen = []
    for _ in range(limit):
        unit = workflow.next_item(store, person)
        if unit is None:
            break
        answer_all(store, person, unit)
        seen.append(unit)
    return seen


# ------------------------------------------------------------------------ pure rules
def test_gold_due_puts_one_gold_item_in_each_block():
    for person in ("a", "b", "c", "d"):
        seq: list[bool] = []
        for _ in range(50):
            seq.append(gold.gold_due(seq, 10, person))
        assert [sum(seq[i:i + 10]) for i in range(0, 50, 10)] == [1] * 5
    offsets = {gold.block_offset(p, 0, 10) for p in "abcdefghijklmnop"}
    assert len(offsets) > 3  # not the same position for everyone


def test_wilson_matches_statsmodels():
    for k, n in ((0, 5), (3, 10), (17, 20), (20, 20), (48, 61)):
        lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
        assert gold.wilson(k, n) == pytest.approx((lo, hi), abs=1e-12)


def test_qualification_rule():
    assert gold.qualification([], 0, 0.8, 5).state == "off"
    assert gold.qualification([(5, 5)], 3, 0.8, 4).state == "pending"
    assert gold.qualification([(5, 5), (5, 4), (5, 3)], 3, 0.8, 4).state == "passed"
    failed = gold.qualification([(5, 2), (5, 4), (5, 3)], 3, 0.8, 4)
    assert failed.state == "failed" and failed.share == pytest.approx(0.6)
    assert not failed.admits
    assert gold.qualification([(5, 2)], 3, 0.8, 0).state == "failed"  # pool ran out
    assert gold.qualification([(5, 2)], 3, 0.8, 0, reset=True).admits


# ------------------------------------------------------------------------ routing
def test_gold_rate_every_annotator_gets_gold_ignoring_overlap(demo):
    gold_ids = some_outputs(demo, 3)
    for o in gold_ids:
        mark_gold(demo, o)
    workflow.set_settings(demo, "admin", gold_every=4, overlap=10)
    seen = work_through(demo, PERSON)
    real = [u for u in seen if u not in gold_ids]
    flags = [u in gold_ids for u in seen]
    # one gold item per block of 4 while gold items last, then only real ones
    assert sum(flags) == 3
    assert all(sum(flags[i:i + 4]) == 1 for i in range(0, 12, 4))
    assert len(real) == len(workflow.eligible_outputs(demo)) - 3
    # every annotator gets the gold items, whatever the overlap (3 submitted each already)
    workflow.set_settings(demo, "admin", overlap=5)
    other = work_through(demo, "p2")
    assert set(gold_ids) <= set(other)
    # gold submissions do not count toward the overall progress
    done, needed = workflow.overall_progress(demo)
    assert needed == (len(workflow.eligible_outputs(demo)) - 3) * 5


def test_progress_moves_the_same_after_gold_and_real_items(demo):
    gold_ids = some_outputs(demo, 4)
    for o in gold_ids:
        mark_gold(demo, o)
    workflow.set_settings(demo, "admin", gold_every=3, overlap=10)
    totals = []
    for _ in range(12):
        unit = workflow.next_item(demo, PERSON)
        done, total = workflow.personal_progress(demo, PERSON)
        totals.append((done, total, unit in gold_ids))
        answer_all(demo, PERSON, unit)
    assert any(g for _, _, g in totals) and not all(g for _, _, g in totals)
    assert len({t for _, t, _ in totals}) == 1  # the total never moves
    assert [d for d, _, _ in totals] == list(range(12))


def test_qualification_gate_failure_and_reset(demo):
    gold_ids = some_outputs(demo, 3)
    for o in gold_ids:
        mark_gold(demo, o, answer="yes", score=8.0)
    workflow.set_settings(demo, "admin", qualification_items=2, qualification_pass=0.8)
    first = workflow.next_item(demo, PERSON)
    assert first in gold_ids
    assert workflow.qualification(demo, PERSON).state == "pending"
    answer_all(demo, PERSON, first, answer="no", score=2.0)  # all wrong
    second = workflow.next_item(demo, PERSON)
    assert second in gold_ids and second != first
    answer_all(demo, PERSON, second, answer="no", score=2.0)
    assert workflow.qualification(demo, PERSON).state == "failed"
    assert workflow.next_item(demo, PERSON) is None  # no real item
    assert workflow.personal_progress(demo, PERSON) == (2, 2)
    # a good annotator passes and gets real items
    for _ in range(2):
        answer_all(demo, "p2", workflow.next_item(demo, "p2"), answer="yes", score=8.0)
    assert workflow.qualification(demo, "p2").state == "passed"
    assert workflow.next_item(demo, "p2") not in gold_ids
    # the admin's reset admits alice, and it is in the audit log
    gold.reset_qualification(demo, "admin", PERSON, note="talked it through")
    assert workflow.qualification(demo, PERSON).admits
    assert workflow.next_item(demo, PERSON) not in (None, *gold_ids)
    row = demo.conn.execute("SELECT actor, detail FROM audit_log WHERE action = ?",
                            [gold.RESET_ACTION]).fetchone()
    assert row[0] == "admin" and "talked" in row[1]


def test_training_feedback_after_a_gold_item_and_none_in_test_mode(demo):
    gold_id = some_outputs(demo, 1)[0]
    item = load_item(demo, gold_id)
    mark_gold(demo, gold_id, answer="yes", score=8.0)
    for mode in ("training", "test"):
        workflow.set_settings(demo, "admin", qualification_items=1, gold_feedback=mode)
        person = "p2" if mode == "training" else "p3"
        state: dict = {}
        session = workflow.AnnotationSession(demo, person, state)
        assert session.output_id == gold_id
        for q in item.questions:
            session.answer_question(q.question_id, "yes")
        while session.current is not None and not session.current.is_question:
            session.score(3.0 if session.current.key == item.criteria[0].name else 8.0)
            if session.complete():
                break
        assert session.submit()
        if mode == "training":
            fb = state["feedback"]
            assert [d["key"] for d in fb["differed"]] == [item.criteria[0].name]
            assert fb["differed"][0]["gold"] == 8.0 and fb["differed"][0]["given"] == 3.0
        else:
            assert "feedback" not in state


# ------------------------------------------------------------------------ the store
def test_gold_answers_are_append_only_with_history(demo):
    o = some_outputs(demo, 1)[0]
    q = load_item(demo, o).questions[0].question_id
    gold.mark(demo, "admin", o, {q: "yes"}, {})
    gold.mark(demo, "admin2", o, {q: "no"}, {})
    gold.mark(demo, "admin", o, {}, {"visual_quality": 6.0})
    hist = gold_rows.gold_df(demo, history=True)
    assert list(hist.answer[:2]) == ["yes", "no"]
    assert hist.supersedes.iloc[1] == hist.gold_id.iloc[0]
    assert list(hist.created_by) == ["admin", "admin2", "admin"]
    assert list(gold_rows.gold_df(demo).answer[:1]) == ["no"]
    with pytest.raises(sqlite3.IntegrityError):
        demo.conn.execute("UPDATE gold_answers SET answer = 'yes'")
    gold.unmark(demo, "admin", o)
    assert gold_rows.gold_outputs(demo) == []
    assert len(gold_rows.gold_df(demo, history=True)) == 5  # two withdrawals appended


def test_human_reference_is_the_majority_and_mean(demo):
    o = demo.query_df("SELECT output_id FROM current_annotations GROUP BY output_id"
                      " HAVING count(DISTINCT annotator) = 3").output_id.iloc[0]
    answers, scores = gold.human_reference(demo, o)
    rows = demo.query_df("SELECT * FROM current_annotations WHERE output_id = ?", [o])
    for qid, group in rows[rows.question_id.notna()].groupby("question_id"):
        counts = group.answer.value_counts()
        if counts.iloc[0] * 2 > len(group):
            assert answers[qid] == counts.index[0]
    for crit, group in rows[rows.criterion.notna()].groupby("criterion"):
        assert scores[crit] == pytest.approx(group.score.mean())


# ------------------------------------------------------------------------ import
def _dump(store: Store) -> list:
    return list(store.conn.execute("SELECT * FROM gold_answers ORDER BY gold_id")) + list(
        store.conn.execute("SELECT action FROM audit_log WHERE action LIKE 'gold.%'"))


def test_import_csv_and_jsonl(demo, tmp_path):
    o1, o2 = some_outputs(demo, 2)
    q1 = load_item(demo, o1).questions[0].question_id
    q2 = load_item(demo, o2).questions[0].question_id
    csv_file = tmp_path / "gold.csv"
    csv_file.write_text(f"output_id,question_id,criterion,answer,score\n"
                        f"{o1},{q1},,yes,\n{o1},,visual_quality,,7\n", encoding="utf-8")
    assert gold.import_file(demo, csv_file, "admin") == 2
    jl = tmp_path / "gold.jsonl"
    jl.write_text(json.dumps({"output_id": o2, "answers": {q2: "no"},
                              "scores": {"scene_coherence": 4}}) + "\n", encoding="utf-8")
    assert gold.import_file(demo, jl, "admin") == 2
    assert gold_rows.gold_outputs(demo) == sorted([o1, o2])
    assert set(gold_rows.gold_df(demo).source) == {"import:gold.csv", "import:gold.jsonl"}


@pytest.mark.parametrize(("text", "message"), [
    ("output_id,question_id,criterion,answer,score\n{o},{q},,yes,\nnope,{q},,yes,\n",
     "gold.csv:3: output_id: no output 'nope'"),
    ("output_id,question_id,criterion,answer,score\n{o},{q},,yes,\n{o},{q},,maybe,\n",
     "gold.csv:3: answer: must be one of"),
    ("output_id,question_id,criterion,answer,score\n{o},,visual_quality,,11\n",
     "gold.csv:2: score: 11 is outside visual_quality's scale 1-10"),
    ("output_id,question_id,criterion,answer,score\n{o},,visual_quality,,high\n",
     "gold.csv:2: score: a number is needed"),
    ("output_id,question_id,criterion,answer,score\n{o},{q},visual_quality,yes,\n",
     "gold.csv:2: question_id: give exactly one"),
    ("output_id,question_id,criterion,answer,score\n{o},{q},,yes,\n{o},{q},,no,\n",
     "gold.csv:3: question_id: '{q}' of '{o}' is already given at gold.csv:2"),
    ("task,answer\nx,yes\n", "gold.csv:1: output_id: the header needs output_id"),
])
def test_bad_csv_names_file_line_field_and_writes_nothing(demo, tmp_path, text, message):
    o = some_outputs(demo, 1)[0]
    q = load_item(demo, o).questions[0].question_id
    mark_gold(demo, some_outputs(demo, 2)[1])
    before = _dump(demo)
    path = tmp_path / "gold.csv"
    path.write_text(text.format(o=o, q=q), encoding="utf-8")
    with pytest.raises(gold.GoldFileError) as err:
        gold.import_file(demo, path, "admin")
    assert message.format(o=o, q=q) in str(err.value)
    assert _dump(demo) == before


def test_bad_jsonl_names_the_line(demo, tmp_path):
    o = some_outputs(demo, 1)[0]
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps({"output_id": o, "scores": {"visual_quality": 5}}) +
                    "\n{not json\n" + json.dumps({"output_id": o, "answers": ["yes"]}) +
                    "\n", encoding="utf-8")
    with pytest.raises(gold.GoldFileError) as err:
        gold.import_file(demo, path, "admin")
    assert "g.jsonl:2: (line): not JSON" in str(err.value)
    assert "g.jsonl:3: answers: an object is needed" in str(err.value)
    assert gold_rows.gold_df(demo, history=True).empty


# ------------------------------------------------------------------------ statistics
def test_gold_items_stay_out_of_the_statistics(demo):
    o = demo.query_df("SELECT output_id FROM current_annotations GROUP BY output_id"
                      " HAVING count(DISTINCT annotator) = 3").output_id.iloc[0]
    before = load_study(demo)
    assert o in set(before.human_answers.output_id)
    answers, scores = gold.human_reference(demo, o)
    gold.mark(demo, "admin", o, answers, scores, source="majority")
    after = load_study(demo)
    assert o not in set(after.human_answers.output_id)
    assert o not in set(after.human_scores.output_id)
    n_gold = len(before.human_answers[before.human_answers.output_id == o])
    assert len(after.human_answers) == len(before.human_answers) - n_gold
    # gold answers are no human answers: nothing of them in annotations
    assert demo.conn.execute("SELECT count(*) FROM annotations WHERE output_id = ?"
                             " AND annotator = 'admin'", [o]).fetchone()[0] == 0


def test_annotators_csv_gets_gold_accuracy_and_speed_columns(demo):
    old_columns = list(annotators_table(load_study(demo)).columns)
    gold_ids = some_outputs(demo, 2)
    for o in gold_ids:
        mark_gold(demo, o, answer="yes", score=5.0)
    workflow.set_settings(demo, "admin", qualification_items=2)
    answer_all(demo, PERSON, workflow.next_item(demo, PERSON), answer="yes", score=5.0)
    answer_all(demo, PERSON, workflow.next_item(demo, PERSON), answer="no", score=5.0)
    table = annotators_table(load_study(demo))
    assert list(table.columns)[:len(old_columns)] == old_columns
    row = table.set_index("annotator").loc[PERSON]
    n = row.gold_answers
    k = row.gold_correct
    items = [load_item(demo, o) for o in gold_ids]
    # item 1: every answer right; item 2: the root questions wrong (the rest gated off)
    assert row.n_gold_items == 2
    lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert (row.gold_accuracy_low, row.gold_accuracy_high) == pytest.approx((lo, hi))
    assert row.gold_accuracy == pytest.approx(k / n)
    assert k >= len(items[0].questions) + 6
    for column in ("n_fast_own", "n_fast_floor"):
        assert column in table.columns


def test_speed_flags_against_own_median_and_floor():
    import pandas as pd

    times = pd.DataFrame({"annotator": ["a"] * 5, "output_id": list("vwxyz"),
                          "active_seconds": [30.0, 33.0, 36.0, 9.0, 40.0]})
    flagged = gold.speed_flags(times, dict.fromkeys("vwxyz", 10) | {"z": 50}, 1 / 3, 1.0)
    assert list(flagged.fast_own) == [False, False, False, True, False]  # 9 < 33 / 3
    assert list(flagged.fast_floor) == [False, False, False, True, True]


def test_a_database_of_the_previous_schema_migrates(tmp_path, monkeypatch, example_bundle):
    # SQLite-only by nature: the migration of an old SQLite project file
    from annotation.formats.importers import import_path
    from annotation.store import schema

    index = next(i for i, m in enumerate(schema.MIGRATIONS) if "TABLE gold_answers" in m)
    path = tmp_path / "old.db"
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:index])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", index)
    with Store.open(path) as old:
        import_path(old, example_bundle)
        before = old.conn.execute("SELECT count(*) FROM annotations").fetchone()[0]
        assert old.schema_version() == index
    monkeypatch.undo()
    with Store.open(path) as new:
        assert new.schema_version() == schema.SCHEMA_VERSION > index
        assert new.conn.execute("SELECT count(*) FROM annotations").fetchone()[0] == before
        out = new.query_df("SELECT output_id FROM outputs WHERE sha256 IS NOT NULL"
                           ).output_id.iloc[0]
        crit = new.criteria_df().iloc[0]
        assert gold.mark(new, "admin", out, {}, {crit["name"]: float(crit["max"])}) == 1
        assert gold_rows.gold_outputs(new) == [out]
        with pytest.raises(sqlite3.IntegrityError):
            new.conn.execute("DELETE FROM gold_answers")
    assert Path(path).exists()


# ------------------------------------------------------------------------ the command
ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str):
    """The real ``judge-audit`` in a subprocess (this worktree's code)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "annotation.cli", *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


def test_cli_gold_import_list_and_reset(tmp_path, engine_demo):
    db = engine_demo
    with Store.open(db) as store:
        o = some_outputs(store, 1)[0]
        q = load_item(store, o).questions[0].question_id
    good = tmp_path / "gold.csv"
    good.write_text(f"output_id,question_id,criterion,answer,score,note\n{o},{q},,no,,seen\n",
                    encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"output_id": o, "scores": {"visual_quality": 5}}) + "\n" +
                   json.dumps({"output_id": o, "scores": {"visual_quality": 50}}) + "\n",
                   encoding="utf-8")
    result = cli("gold", "import", "--db", str(db), str(bad))
    assert result.returncode == 1
    assert "bad.jsonl:2: score: 50 is outside visual_quality's scale 1-10" in result.stderr
    assert "nothing was written" in result.stderr
    result = cli("gold", "list", "--db", str(db))
    assert result.returncode == 0 and "no gold answers" in result.stdout
    result = cli("gold", "import", "--db", str(db), str(good))
    assert result.returncode == 0, result.stderr
    assert "1 gold answer(s) written; 1 gold item(s) now" in result.stdout
    result = cli("gold", "list", "--db", str(db), "--out", str(tmp_path / "g.csv"))
    assert result.returncode == 0
    listed = (tmp_path / "g.csv").read_text(encoding="utf-8")
    assert o in listed and "import:gold.csv" in listed
    assert cli("gold", "reset", "--db", str(db), "--annotator", "p1").returncode == 0
    with Store.open(db) as store:
        assert gold.was_reset(store, "p1")
    assert cli("gold", "list", "--db", str(tmp_path / "none.db")).returncode == 1


def test_changing_answers_after_the_feedback_does_not_change_the_record(demo):
    gold_id = some_outputs(demo, 1)[0]
    mark_gold(demo, gold_id, answer="yes", score=8.0)
    workflow.set_settings(demo, "admin", qualification_items=1, gold_feedback="training",
                          qualification_pass=0.0)
    assert workflow.next_item(demo, PERSON) == gold_id
    answer_all(demo, PERSON, gold_id, answer="yes", score=2.0)
    before = gold.records(demo, PERSON, 1.0)
    item = load_item(demo, gold_id)
    for c in item.criteria:  # back to the item, scores fixed after seeing the feedback
        workflow.give_answer(demo, PERSON, gold_id, criterion=c.name, score=8.0)
    assert gold.records(demo, PERSON, 1.0) == before
    assert before[0]["compared"] - before[0]["correct"] == len(item.criteria)


def test_a_real_item_opened_before_the_qualification_was_asked_is_refused(demo):
    from annotation.work.engine import ItemTaken

    gold_ids = some_outputs(demo, 2)
    for o in gold_ids:
        mark_gold(demo, o)
    workflow.set_settings(demo, "admin", overlap=10)
    real = workflow.next_item(demo, PERSON)
    assert real not in gold_ids
    question = load_item(demo, real).questions[0].question_id
    workflow.give_answer(demo, PERSON, real, question_id=question, answer="yes", slot=True)
    workflow.set_settings(demo, "admin", qualification_items=1)
    with pytest.raises(ItemTaken, match="qualification"):
        workflow.give_answer(demo, PERSON, real, question_id=question, answer="no", slot=True)
    with pytest.raises(ItemTaken, match="qualification"):
        workflow.submit(demo, PERSON, real, slot=True)
    assert workflow.next_item(demo, PERSON) in gold_ids  # the qualification comes first
    answer_all(demo, PERSON, workflow.next_item(demo, PERSON))
    assert workflow.qualification(demo, PERSON).state == "passed"
    workflow.give_answer(demo, PERSON, real, question_id=question, answer="no", slot=True)
