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
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from annotation.store import Store
from annotation.ui import answer_panel
from annotation.work import checklist
from annotation.work import panel as panels
from annotation.work.checklist import QuestionView
from tests.helpers import ROOT, panel
from tests.helpers.apptest import signed_in

#: the tests on ``served_demo`` run on SQLite and on PostgreSQL (tests/conftest.py)
SERVED_ENGINES = ("sqlite", "postgresql")


@pytest.fixture
def db(served_demo: Path) -> Path:
    return served_demo


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
    late = panel.entry(data, target, "no", seq=2_000, seen=None, cid="panel-one:2")
    row = panel.deliver(at, late)[1]["receipts"][0]["row"]
    # an earlier press of the same panel arriving after it: not written
    early = panel.entry(data, target, "yes", seq=1_000, seen=row, cid="panel-one:1")
    receipt = panel.deliver(at, early)[1]["receipts"][0]
    assert receipt["status"] == "ok" and receipt["outcome"] == "stale"
    assert receipt["value"] == "no"  # the panel is told what is stored
    # a press of another panel that did not see the stored answer: refused, not written
    other = panel.entry(data, target, "yes", seq=1_000, seen=None, cid="panel-two:1")
    receipt = panel.deliver(at, other)[1]["receipts"][0]
    assert receipt["status"] == "refused" and receipt["reason"] == "changed"
    assert receipt["value"] == "no"
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


def visit_seconds(db: Path, visit: int) -> float:
    with Store.open(db) as store:
        return store.conn.execute("SELECT active_seconds FROM queue_visits WHERE"
                                  " visit_id = ?", [visit]).fetchone()[0]


def test_the_time_a_press_took_counts_once_and_never_beyond_the_clock(db):
    at = annotate_as("alice")
    data = panel.spec(at)
    with Store.open(db) as store:  # the item was opened 30 s ago
        store.conn.execute("UPDATE queue_visits SET started_at = ? WHERE visit_id = ?",
                           [(datetime.now(UTC) - timedelta(seconds=30)).isoformat(),
                            data["visit"]])
        store.conn.commit()
    target = panel.open_targets(data)[0]
    press = panel.entry(data, target, "yes", seconds=7.5)
    row = panel.deliver(at, press)[1]["receipts"][0]["row"]
    panel.deliver(at, press)  # a retry adds nothing
    panel.deliver(at, panel.entry(data, target, "yes", seconds=3.0, seen=None))  # unchanged
    assert visit_seconds(db, data["visit"]) == pytest.approx(7.5)
    # a browser claiming 120 s per press gets no more than the time that has passed
    flood = [panel.entry(data, target, v, seconds=120.0, seen=row)
             for v in ["no", "yes"] * 20]  # the next ones are chained by the server
    status, body = panel.deliver(at, *flood)
    assert status == 200 and {r["outcome"] for r in body["receipts"]} == {"written"}
    assert visit_seconds(db, data["visit"]) <= 31.0


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
    assert panels.take_command(state, {"name": "submit", "n": 3, "visit": 5},
                                     ("submit",)) is None  # already handled
    assert panels.take_command(state, {"name": "submit", "n": 4, "visit": 6},
                                     ("submit",)) is None  # another visit
    assert state["handled"] == 4  # ... but marked, so it is never acted on later
    assert panels.take_command(state, {"name": "evil", "n": 5, "visit": 5},
                                     ("submit",)) is None
    assert panels.take_command(state, {"name": "submit", "n": 6, "visit": 5},
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
    assert set(data) == {"v", "visit", "item", "owner", "targets", "commands", "submit",
                         "enter", "ready", "reviewing", "handled", "notice", "hint"}
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



# ------------------------------------------------------------------ the route (red-team)
def call_route(headers: dict[str, str], chunks: list[bytes], *,
               read_guard: bool = False) -> tuple[int, dict]:
    """``POST /_ja/answers`` through the real route (Starlette, raw ASGI, no network);
    ``read_guard``: fail the test if the route reads the body at all."""
    import asyncio

    from starlette.applications import Starlette

    app = Starlette(routes=answer_panel.routes())
    sent: list[dict] = []
    queue = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
             for i, c in enumerate(chunks)] or [{"type": "http.request", "body": b""}]

    async def receive() -> dict:
        assert not read_guard, "the route read a body it should have refused unread"
        return queue.pop(0) if queue else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": answer_panel.ROUTE_ANSWERS,
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
             "query_string": b"", "scheme": "http", "server": ("127.0.0.1", 8501),
             "client": ("127.0.0.1", 5000), "root_path": ""}
    asyncio.run(app(scope, receive, send))
    status = sent[0]["status"]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return status, json.loads(body) if body else {}


SAME = {"Origin": "http://127.0.0.1:8501", "Host": "127.0.0.1:8501"}


def test_the_route_refuses_without_a_cookie_before_reading_the_body():
    status, body = call_route(SAME, [b"x" * 10], read_guard=True)
    assert status == 401 and body["keep"] is True


def test_the_route_never_holds_more_than_its_limit():
    cookie = {"Cookie": "ja_session=whatever"}
    declared = SAME | cookie | {"Content-Length": str(answer_panel.MAX_BODY + 1)}
    assert call_route(declared, [b"x"], read_guard=True)[0] == 413
    chunk = b"x" * 16_000
    streamed = [chunk] * (answer_panel.MAX_BODY // len(chunk) + 2)  # no Content-Length
    assert call_route(SAME | cookie, streamed)[0] == 413


def test_an_answer_does_not_wait_for_a_full_worker_pool():
    """While every thread of Starlette's shared worker pool is busy (a few browsers loading
    the app: each static-file read is a job there), the answer route still answers: it
    has threads of its own. On the shared pool it would wait for the slow jobs."""
    import threading

    import anyio
    import anyio.to_thread
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import Response
    from starlette.routing import Route

    release = threading.Event()

    async def slow(request) -> Response:  # a static file read that takes its time
        await run_in_threadpool(release.wait, 30)
        return Response()

    app = Starlette(routes=[Route("/slow", slow, methods=["POST"]), *answer_panel.routes()])

    async def post(path: str, headers: dict[str, str], body: bytes) -> int:
        sent: list[dict] = []
        done = False

        async def receive() -> dict:
            nonlocal done
            if not done:
                done = True
                return {"type": "http.request", "body": body, "more_body": False}
            await anyio.sleep_forever()
            return {}  # pragma: no cover

        async def send(message: dict) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "POST", "path": path, "query_string": b"",
                 "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
                 "scheme": "http", "server": ("127.0.0.1", 8501),
                 "client": ("127.0.0.1", 5000), "root_path": ""}
        await app(scope, receive, send)
        return int(sent[0]["status"])

    async def main() -> int:
        pool = anyio.to_thread.current_default_thread_limiter()
        async with anyio.create_task_group() as tg:
            for _ in range(int(pool.total_tokens) + 5):
                tg.start_soon(post, "/slow", {}, b"")
            with anyio.fail_after(20):
                while pool.borrowed_tokens < pool.total_tokens:
                    await anyio.sleep(0.01)
            try:
                with anyio.fail_after(10):
                    return await post(answer_panel.ROUTE_ANSWERS,
                                      SAME | {"Cookie": "ja_session=x"}, b"not json")
            finally:
                release.set()

    assert anyio.run(main) == 400  # answered (a body that is not a delivery)


def test_the_route_refuses_a_malformed_origin_and_other_sites():
    for origin in ("http://[::1", "http://evil.example", "null", ""):
        status, _ = call_route({"Origin": origin, "Host": "127.0.0.1:8501",
                                "Cookie": "ja_session=x"}, [b"{}"], read_guard=True)
        assert status == 403, origin


@pytest.mark.parametrize("body", [
    b"[" * 5000 + b"]" * 5000,  # nesting beyond the parser
    b'{"entries": [{"value": ' + b"9" * 5000 + b"}]}",  # an integer beyond Python's limit
])
def test_bodies_beyond_reason_are_a_clear_400(db, body):
    at = annotate_as("alice")
    token = at.session_state["_ja_test_token"]
    status, payload = answer_panel.deliver_body(token, body)
    assert status == 400 and "not JSON" in payload["error"]


@pytest.mark.parametrize(("field", "value"), [
    ("seconds", 10**400), ("seq", 2**63), ("visit", 2**63), ("value", 10**400),
    ("seen", 2**60),
])
def test_numbers_beyond_reason_are_a_clear_400(db, field, value):
    at = annotate_as("alice")
    press = panel.entry(panel.spec(at), 0, "yes") | {field: value}
    status, payload = panel.deliver(at, press)
    assert status == 400 and f"field {field}" in payload["error"]


def test_an_error_behind_the_route_is_an_incident_not_a_traceback(db, monkeypatch, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="judge_audit.incidents")
    at = annotate_as("alice")
    body = json.dumps({"entries": [panel.entry(panel.spec(at), 0, "yes")]}).encode()

    def broken(*args, **kwargs):
        raise OSError("disk on fire at /srv/secret/project.db")

    monkeypatch.setattr(answer_panel, "deliver_body", broken)
    status, payload = call_route(SAME | {"Cookie": "ja_session=x",
                                         "Content-Length": str(len(body))}, [body])
    assert status == 500 and payload["incident"] in payload["error"]
    assert "/srv/secret" not in json.dumps(payload)
    assert payload["incident"] in caplog.text  # the log has it, with the traceback


def test_enter_on_an_incomplete_item_submits_nothing_and_says_why(db):
    at = annotate_as("alice")
    output = at.session_state["annotate"]["output_id"]
    panel.answer(at, panel.open_targets(panel.spec(at))[0], "yes")
    panel.command(at, "submit")
    assert at.session_state["annotate"]["output_id"] == output
    assert any("not complete yet" in w.value for w in at.warning)
    with Store.open(db) as store:
        assert not store.conn.execute("SELECT 1 FROM queue_submissions WHERE person = 'alice'"
                                      " AND unit = ?", [output]).fetchone()
