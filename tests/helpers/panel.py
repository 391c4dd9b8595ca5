"""The answer panel from AppTest: read what the browser gets, deliver answers as its outbox
does, and send it commands.

AppTest runs no JavaScript, so these helpers play the browser's part with the server's own
entry points: :func:`deliver` posts a delivery body to
:func:`annotation.ui.answer_panel.deliver_body` (what ``POST /_ja/answers`` runs) with the
session token the AppTest session holds, and :func:`command` sends the component state the
panel sets for a command (``{"command": {name, n, visit, ...}}``) with the next run, as the
browser's widget state would. The keys themselves are exercised in Chromium
(``tests/test_answer_panel_browser.py``).
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from typing import Any

from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest

from annotation.ui import answer_panel
from annotation.ui.app_state import TEST_TOKEN_KEY

NAME = "judge_audit_answer_panel"
_seq = itertools.count(int(time.time() * 1000) * 1000)


def element(at: AppTest) -> Any:
    """The panel's element (the first answer panel on the page)."""
    found = [e for e in at.get("bidi_component") if e.proto.component_name == NAME]
    assert found, "no answer panel on the page"
    return found[0]


def spec(at: AppTest) -> dict[str, Any]:
    """The JSON the browser gets."""
    return json.loads(element(at).proto.json)


def open_targets(data: dict[str, Any]) -> list[int]:
    """Positions of the applicable targets without an answer (the panel's own rule)."""
    values = {i: t["value"] for i, t in enumerate(data["targets"])}
    off: set[int] = set()
    for i, t in enumerate(data["targets"]):
        if any(values.get(p) == "no" or p in off for p in t["parents"]):
            off.add(i)
    return [i for i, t in enumerate(data["targets"]) if i not in off and t["value"] is None]


def entry(data: dict[str, Any], target: int, value: Any, *, seen: Any = "stored",
          cid: str | None = None, seq: int | None = None, seconds: float = 1.0) -> dict:
    """One outbox entry for ``target`` of the panel ``data`` (``seen``: the stored row
    the panel shows, unless given)."""
    return {"visit": data["visit"], "target": target, "value": value,
            "cid": cid or f"{uuid.uuid4()}:1", "seq": seq if seq is not None else next(_seq),
            "seen": data["targets"][target]["row"] if seen == "stored" else seen,
            "seconds": seconds}


def deliver(at: AppTest, *entries: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """POST the entries as the panel does, with the AppTest session's token."""
    body = json.dumps({"entries": list(entries)}).encode()
    return answer_panel.deliver_body(at.session_state[TEST_TOKEN_KEY], body)


def answer(at: AppTest, target: int, value: Any, **kw: Any) -> dict[str, Any]:
    """Deliver one answer on the page's panel, then rerun the page; the receipt."""
    status, body = deliver(at, entry(spec(at), target, value, **kw))
    assert status == 200, body
    at.run()
    return body["receipts"][0]


def complete(at: AppTest, question: str = "yes", score: float = 7) -> None:
    """Answer every open target (questions and verdicts ``question``, criteria
    ``score``)."""
    for _ in range(60):
        data = spec(at)
        left = open_targets(data)
        if not left:
            return
        i = left[0]
        kind = data["targets"][i]["kind"]
        receipt = answer(at, i, score if kind == "c" else question)
        assert receipt["status"] == "ok", receipt
    raise AssertionError("the item never became complete")


def command(at: AppTest, name: str, *, seconds: float = 0.0, cursor: int | None = None,
            n: int | None = None, visit: int | None = None) -> AppTest:
    """Send the panel's command ``name`` with the next run (as its state value), run."""
    data = spec(at)
    el = element(at)
    payload = {"command": {"name": name, "n": n if n is not None else next(_seq),
                           "visit": data["visit"] if visit is None else visit,
                           "seconds": seconds, "cursor": cursor, "tries": 1}}
    states = at._tree.get_widget_states()
    states.widgets.append(WidgetState(id=el.proto.id, json_value=json.dumps(payload)))
    assert at._tree._runner is not None
    at._tree._runner._run(states, timeout=at.default_timeout)
    return at
