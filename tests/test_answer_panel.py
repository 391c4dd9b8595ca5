"""The answer panel's server half (issue #14): every press written once and in order, or
refused visibly; commands acted on once; nothing in the payload names what must stay blind.

The deliveries go through :func:`annotation.ui.answer_panel.deliver_body`, what ``POST
/_ja/answers`` runs, on a real SQLite file, with the token of a real signed-in AppTest
session of the annotate page. The browser half (keys, outbox, retries) is in
``tests/test_answer_panel_browser.py``.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from annotation.store import Store
from annotation.ui import answer_panel
from annotation.work import checklist
from annotation.work.checklist import QuestionView
from tests.helpers import ROOT, panel
from tests.helpers.apptest import signed_in


@pytest.fixture
def db(tmp_path, monkeypatch, make_demo_db) -> Path:
    path = tmp_path / "demo.db"
    make_demo_db(path)
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(path))
    return path


def annotate_as(name: str):
    return signed_in("annotate.py", name, guidelines_seen=True).run()


def rows_of(db: Path, annotator: str, output: str):
    with Store.open(db) as store:
        history = store.annotations_df(history=True)
    return history[(history.annotator == annotator) & (history.output_id == output)]


def test_a_press_delivered_twice_is_one_answer(db):
    at = annotate_as("alice")
    output = at.session_state["annotate"]["output_id"]
    data = panel.spec(at)
    target = panel.open_targets(data)[0]
    press = panel.entry(data, target, "yes")
    first = panel.deliver(at, press)
    again = panel.deliver(at, press)  # the acknowledgement was lost: the panel sends again
    assert first[0] == again[0] == 200
    assert first[1]["receipts"][0]["outcome"] == "written"
    assert again[1]["receipts"][0]["outcome"] == "duplicate"
    assert again[1]["receipts"][0]["row"] == first[1]["receipts"][0]["row"]
    assert len(rows_of(db, "alice", output)) == 1


def test_a_late_retry_never_replaces_a_later_press(db):
    at = annotate_as("alice")
    output = at.session_state["annotate"]["output_id"]
    data = panel.spec(at)
    target = panel.open_targets(data)[0]
    late = panel.entry(data, target, "no", seq=2_000, seen=None)
    row = panel.deliver(at, late)[1]["receipts"][0]["row"]
    # an earlier press that arrives after it: not written, whatever row its panel knew
    for seen, status, outcome in ((row, "ok", "stale"), (None, "refused", None)):
        early = panel.entry(data, target, "yes", seq=1_000, seen=seen)
        receipt = panel.deliver(at, early)[1]["receipts"][0]
        assert receipt["status"] == status and receipt.get("outcome") == outcome
        assert receipt["value"] == "no"  # the panel is told what is stored
    assert list(rows_of(db, "alice", output).answer) == ["no"]


def test_presses_of_one_question_in_one_delivery_are_written_in_order(db):
    at = annotate_as("alice")
    output = at.session_state["annotate"]["output_id"]
    data = panel.spec(at)
    target = panel.open_targets(data)[0]
    presses = [panel.entry(data, target, v) for v in ("yes", "no", "cant_tell")]
    status, body = panel.deliver(at, *presses)  # all seen=None: the panel knew no row yet
    assert status == 200 and [r["outcome"] for r in body["receipts"]] == ["written"] * 3
    rows = rows_of(db, "alice", output)
    assert list(rows.answer) == ["yes", "no", "cant_tell"]
    assert rows.supersedes.iloc[1] == rows.annotation_id.iloc[0]


def test_an_answer_changed_in_another_tab_is_not_overwritten(db):
    tab1, tab2 = annotate_as("alice"), annotate_as("alice")  # same item, two tabs
    output = tab1.session_state["annotate"]["output_id"]
    assert tab2.session_state["annotate"]["output_id"] == output
    target = panel.open_targets(panel.spec(tab1))[0]
    assert panel.answer(tab1, target, "yes")["status"] == "ok"
    stale = panel.spec(tab2)  # drawn before tab 1 answered
    stale["targets"][target]["row"] = None
    status, body = panel.deliver(tab2, panel.entry(stale, target, "no"))
    receipt = body["receipts"][0]
    assert status == 200 and receipt["status"] == "refused" and receipt["reason"] == "changed"
    assert receipt["value"] == "yes" and "another tab" in receipt["message"]
    assert list(rows_of(db, "alice", output).answer) == ["yes"]


def test_an_entry_for_another_persons_visit_is_refused(db):
    alice, bob = annotate_as("alice"), annotate_as("bob")
    data = panel.spec(bob)
    target = panel.open_targets(data)[0]
    status, body = panel.deliver(alice, panel.entry(data, target, "yes"))
    assert status == 200 and body["receipts"][0]["reason"] == "not_yours"
    assert rows_of(db, "bob", bob.session_state["annotate"]["output_id"]).empty


@pytest.mark.parametrize(("change", "field"), [
    ({"visit": "1"}, "field visit"), ({"target": -1}, "field target"),
    ({"cid": "x"}, "field cid"), ({"cid": "<script>alert(1)</script>"}, "field cid"),
    ({"value": True}, "field value"), ({"value": [1]}, "field value"),
    ({"seq": 1.5}, "field seq"), ({"seconds": "NaN"}, "field seconds"),
])
def test_a_malformed_delivery_is_refused_whole_naming_entry_and_field(db, change, field):
    at = annotate_as("alice")
    output = at.session_state["annotate"]["output_id"]
    data = panel.spec(at)
    good = panel.entry(data, 0, "yes")
    bad = panel.entry(data, 1, "yes") | change
    status, body = panel.deliver(at, good, bad)
    assert status == 400 and f"entry 1, {field}" in body["error"]
    assert rows_of(db, "alice", output).empty  # not even the good entry


def test_values_outside_the_targets_options_are_refused(db):
    at = annotate_as("alice")
    data = panel.spec(at)
    question = panel.open_targets(data)[0]
    criterion = next(i for i, t in enumerate(data["targets"]) if t["kind"] == "c")
    for target, value in ((question, "maybe"), (criterion, 11), (criterion, "yes"),
                          (len(data["targets"]), "yes")):
        press = panel.entry(data, 0, value) | {"target": target}
        receipt = panel.deliver(at, press)[1]["receipts"][0]
        assert receipt["status"] == "refused", (target, value)
        assert receipt["reason"] == "invalid" and receipt["message"]


def test_without_a_session_nothing_is_written(db):
    at = annotate_as("alice")
    data = panel.spec(at)
    body = json.dumps({"entries": [panel.entry(data, 0, "yes")]}).encode()
    assert answer_panel.deliver_body(None, body)[0] == 401
    assert answer_panel.deliver_body("not-a-token", body)[0] == 401
    assert rows_of(db, "alice", at.session_state["annotate"]["output_id"]).empty


def test_the_time_a_press_took_counts_once(db):
    at = annotate_as("alice")
    data = panel.spec(at)
    target = panel.open_targets(data)[0]
    press = panel.entry(data, target, "yes", seconds=7.5)
    panel.deliver(at, press)
    panel.deliver(at, press)  # a retry adds nothing
    panel.deliver(at, panel.entry(data, target, "yes", seconds=3.0, seen=None))  # unchanged
    with Store.open(db) as store:
        seconds = store.conn.execute("SELECT active_seconds FROM queue_visits WHERE"
                                     " visit_id = ?", [data["visit"]]).fetchone()[0]
    assert seconds == pytest.approx(7.5)


def test_a_command_is_acted_on_once(db):
    at = annotate_as("alice")
    first = at.session_state["annotate"]["output_id"]
    panel.complete(at)
    panel.command(at, "submit", n=10**15)
    second = at.session_state["annotate"]["output_id"]
    assert second != first
    # the same command again (the panel resends until it sees it handled): nothing more
    panel.command(at, "submit", n=10**15, visit=panel.spec(at)["visit"])
    assert at.session_state["annotate"]["output_id"] == second
    assert panel.spec(at)["handled"] == 10**15
    # a command typed on the previous item's visit does nothing to this one
    panel.command(at, "back", visit=1)
    assert at.session_state["annotate"]["output_id"] == second
    with Store.open(db) as store:
        subs = store.conn.execute("SELECT count(*) FROM queue_submissions WHERE person ="
                                  " 'alice' AND kind = 'annotate'").fetchone()[0]
    assert subs == 1 + 0  # alice had none in the fresh demo session's queue


def test_take_command_rules():
    state = {"visit_id": 5, "handled": 3}
    assert answer_panel.take_command(state, {"name": "submit", "n": 3, "visit": 5},
                                     ("submit",)) is None  # already handled
    assert answer_panel.take_command(state, {"name": "submit", "n": 4, "visit": 6},
                                     ("submit",)) is None  # another visit
    assert state["handled"] == 4  # ... but marked, so it is never acted on later
    assert answer_panel.take_command(state, {"name": "evil", "n": 5, "visit": 5},
                                     ("submit",)) is None
    assert answer_panel.take_command(state, {"name": "submit", "n": 6, "visit": 5},
                                     ("submit",)) == "submit"


def test_the_panel_payload_names_no_id_judge_generator_or_pass_answer(db):
    at = annotate_as("alice")
    output = at.session_state["annotate"]["output_id"]
    text = json.dumps(panel.spec(at))
    with Store.open(db) as store:
        generators = set(store.outputs_df().generator)
        judges = set(store.judges_df().name)
        task = store.query_df("SELECT task_id, checklist_id FROM tasks WHERE task_id ="
                              " (SELECT task_id FROM outputs WHERE output_id = ?)", [output])
        questions = store.query_df("SELECT question_id, pass_answer FROM questions WHERE"
                                   " checklist_id = ?", [task.checklist_id[0]])
        criteria = list(store.query_df("SELECT name FROM criteria").name)
    for word in generators | judges | set(questions.question_id) | set(criteria) | {output}:
        assert word not in text, word
    data = panel.spec(at)  # and no field to carry more: these are all there is
    assert set(data) == {"v", "visit", "item", "targets", "commands", "submit", "enter",
                         "ready", "reviewing", "handled", "notice", "hint"}
    for t in data["targets"]:
        assert set(t) == {"kind", "text", "heading", "caption", "parents", "rubric",
                          "options", "value", "row"}


def test_the_item_token_is_stable_and_not_an_id():
    a = answer_panel.item_token("alice", "demo-01/flux")
    assert a == answer_panel.item_token("alice", "demo-01/flux")
    assert a != answer_panel.item_token("bob", "demo-01/flux")
    assert "demo" not in a and "flux" not in a and len(a) == 24


# ------------------------------------------------------------------ the browser's rules
@pytest.mark.skipif(shutil.which("node") is None, reason="no Node.js")
def test_the_browsers_gating_is_the_servers(tmp_path):
    """The panel's JavaScript rules (applicable, next open target) against
    annotation.work.checklist on random dependency graphs, run in Node.js."""
    rng = random.Random(14)
    cases = []
    for _ in range(300):
        n = rng.randint(1, 8)
        parents = [sorted(rng.sample(range(n), rng.randint(0, min(2, n)))) for _ in range(n)]
        values = {i: rng.choice([None, "yes", "no", "cant_tell"]) for i in range(n)}
        cases.append((parents, values, rng.randrange(n)))
    source = (ROOT / "annotation" / "ui" / "answer_panel.js").read_text()
    (tmp_path / "panel.mjs").write_text(source)
    script = tmp_path / "run.mjs"
    script.write_text(
        "import { applicable, nextOpen } from './panel.mjs';\n"
        "import { readFileSync } from 'fs';\n"
        "const cases = JSON.parse(readFileSync(process.argv[2], 'utf8'));\n"
        "const out = cases.map(([parents, values, cur]) => {\n"
        "  const targets = parents.map((p) => ({ parents: p }));\n"
        "  const v = {}; for (const [k, x] of Object.entries(values)) if (x !== null) v[k] = x;\n"
        "  return [applicable(targets, v), nextOpen(targets, v, cur)];\n"
        "});\n"
        "console.log(JSON.stringify(out));\n")
    data = tmp_path / "cases.json"
    data.write_text(json.dumps(cases))
    result = subprocess.run(["node", str(script), str(data)], capture_output=True, text=True,
                            check=True, timeout=60)
    for (parents, values, cur), (gate, nxt) in zip(cases, json.loads(result.stdout)):
        qs = [QuestionView(str(i), "", depends_on=tuple(str(p) for p in ps))
              for i, ps in enumerate(parents)]
        answers = {str(k): v for k, v in values.items() if v is not None}
        expected = checklist.applicable(qs, answers)
        assert gate == [expected[str(i)] for i in range(len(qs))], (parents, values)
        walk = checklist.targets(qs, [])
        assert [t.key for t in walk] == [str(i) for i in range(len(qs))]
        assert nxt == checklist.next_target(walk, cur, qs, answers, {}), (parents, values)

