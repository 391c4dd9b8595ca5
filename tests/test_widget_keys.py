"""Issue #12, item 1: no widget key or element id of an annotator page gives a generator,
a judge or an output id away, verbatim or as a hash an attacker can recompute.

The attack: output ids are ``<task>/<generator>``, the task id is on the page, so
``sha256("demo-06/qwen-image-edit")[:12]`` for each candidate generator is tested against
the widget keys the browser receives. Each annotator page (annotate, verify conflict
labels, review diagnostic trees) runs through AppTest on the real demo project; every
widget key, element id and other string of every rendered element is searched for the
project's generators, judges and output ids and for any sha256 / sha1 / md5 prefix of them
(``tests/helpers/exposure.py``). The browser side (websocket frames, DOM) is
``tests/test_served.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from annotation.ui.widget_keys import SECRET_STATE_KEY, opaque, widget_key
from tests.helpers import panel
from tests.helpers.apptest import signed_in
from tests.helpers.bundles import ensure_account
from tests.helpers.exposure import leaks, secrets_of
from tests.helpers.module_demo import ENGINES, module_demo
from tests.test_hostile_input import rendered_strings

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", params=ENGINES)
def demo_db(request, tmp_path_factory) -> str:
    """The demo project the module's tests share, on SQLite and on PostgreSQL."""
    return module_demo(request, tmp_path_factory, "keys")


def ids_and_keys(at: AppTest) -> list[str]:
    """Every widget key and every string of every rendered element (ids included), and the
    answer panel's JSON decoded (its element's ``json`` string, read on its own)."""
    found = [text for _, _, text in rendered_strings(at)]
    found += [json.dumps(json.loads(e.proto.json), ensure_ascii=False)
              for e in at.get("bidi_component") if e.proto.component_name == panel.NAME]

    def walk(node) -> None:
        key = getattr(node, "key", None)
        if isinstance(key, str):
            found.append(key)
        children = getattr(node, "children", None)
        if children:
            for child in (children.values() if isinstance(children, dict) else children):
                walk(child)

    walk(at._tree)
    return found


def element_ids(at: AppTest) -> list[str]:
    return [text for _, field, text in rendered_strings(at) if field.rsplit(".", 1)[-1] == "id"]


def page(db: str | Path, name: str, file: str, monkeypatch) -> AppTest:
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    ensure_account(db, name)
    at = signed_in(str(ROOT / "pages" / file), name)
    return at


def test_the_checker_finds_the_attack_of_the_issue(demo_db):
    """A key like the old ``q-<sha256(output_id)[:12]>-...`` is a leak; an HMAC key is not."""
    import hashlib

    secrets = secrets_of(demo_db)
    assert "demo-06/qwen-image-edit" in secrets and "gpt-5" in secrets
    old = f"q-{hashlib.sha256(b'demo-06/qwen-image-edit').hexdigest()[:12]}-demo-06.q1-None"
    assert leaks([old], secrets)
    assert leaks([f"$$ID-{hashlib.md5(b'qwen-image-edit').hexdigest()}-x"], secrets)
    assert leaks(["c-ab-demo-06/qwen-image-edit"], secrets)
    state: dict = {}
    assert leaks([widget_key("q", "demo-06/qwen-image-edit", "demo-06.q1", None,
                             state=state)], secrets) == []


def test_annotate_page_keys_and_ids_reveal_no_generator(demo_db, monkeypatch):
    secrets = secrets_of(demo_db)
    at = page(demo_db, "keys-annotator", "annotate.py", monkeypatch)
    at.session_state["annotate"] = {"annotator": "keys-annotator", "guidelines_seen": True}
    at.run()
    assert not at.exception
    output_id = at.session_state["annotate"]["output_id"]
    assert output_id in secrets
    strings = ids_and_keys(at)
    data = panel.spec(at)
    assert [t for t in data["targets"] if t["kind"] == "q"]  # the checklist is there
    assert panel.element(at).proto.id in element_ids(at)  # and the panel's id is scanned
    assert leaks(strings, secrets) == []
    assert leaks([json.dumps(data)], secrets) == []
    # after an answer (the panel then holds its value and row) and a comparison (a keyed
    # select box)
    assert panel.answer(at, panel.open_targets(data)[0], "yes")["status"] == "ok"
    at.selectbox(key=widget_key("compare", output_id, state=at.session_state)).set_value(0)
    at.run()
    assert not at.exception
    assert "yes" in [t["value"] for t in panel.spec(at)["targets"]]
    assert leaks(ids_and_keys(at), secrets) == []
    assert leaks([json.dumps(panel.spec(at))], secrets) == []


@pytest.mark.slow
def test_annotate_keys_differ_between_sessions_and_hold_across_reruns(demo_db, monkeypatch):
    """Per-session secrets: two sessions on the same item get different keys; one session
    keeps its keys from run to run (so widget state survives reruns). The keys built from
    the item are the comparison select box's (the answers are in the panel, by position,
    under one constant key); the panel's item token holds across reruns and is no id."""
    keys, outputs = [], []
    for _ in range(2):
        at = page(demo_db, "keys-twice", "annotate.py", monkeypatch)
        at.session_state["annotate"] = {"annotator": "keys-twice", "guidelines_seen": True}
        at.run()
        outputs.append(at.session_state["annotate"]["output_id"])
        first = sorted(k for k in ids_and_keys(at) if k.startswith("compare-"))
        token = panel.spec(at)["item"]
        at.run()
        assert sorted(k for k in ids_and_keys(at) if k.startswith("compare-")) == first
        assert panel.spec(at)["item"] == token
        assert leaks([token], secrets_of(demo_db)) == []  # no id, no hash of one
        keys.append(first)
        secret = at.session_state[SECRET_STATE_KEY]
        assert isinstance(secret, bytes) and len(secret) == 32
    assert outputs[0] == outputs[1]  # the same item in both sessions
    assert keys[0] and set(keys[0]).isdisjoint(keys[1])
    assert opaque(b"k" * 32, "a") != opaque(b"j" * 32, "a")


def test_conflicts_page_keys_and_ids_reveal_no_generator(demo_db, monkeypatch):
    secrets = secrets_of(demo_db)
    at = page(demo_db, "keys-verifier", "conflicts.py", monkeypatch).run()
    assert not at.exception
    assert at.session_state["verify"]["task_id"] is not None
    assert at.checkbox or at.slider  # the reading fields (keyed from the task) are there
    assert leaks(ids_and_keys(at), secrets) == []
    panel.command(at, "confirm")  # Confirm my reading
    assert not at.exception
    data = panel.spec(at)
    verdicts = [t for t in data["targets"] if t["kind"] == "v"]
    assert verdicts and all(t["options"][0][1].startswith(("Agree", "Conflict"))
                            for t in verdicts)  # the verdicts, by position in the panel
    assert at.text_input  # and the notes (keyed from the task and type)
    assert leaks(ids_and_keys(at), secrets) == []
    assert leaks([json.dumps(data)], secrets) == []


@pytest.mark.slow
def test_trees_page_keys_and_ids_reveal_no_generator(demo_db, monkeypatch):
    secrets = secrets_of(demo_db)
    at = page(demo_db, "keys-reviewer", "trees.py", monkeypatch).run()
    assert not at.exception
    output_id = at.session_state["trees"]["output_id"]
    assert output_id in secrets
    assert leaks(ids_and_keys(at), secrets) == []
    # choose an origin: the reason, note and box widgets (keyed from the instance) appear
    origin = next(s for s in at.selectbox if s.label.startswith("First node where"))
    origin.set_value(origin.options[0]).run()
    assert not at.exception
    assert at.get("plotly_chart")  # the box on the image: keyed from instance and node
    assert leaks(ids_and_keys(at), secrets) == []
