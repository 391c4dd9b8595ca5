"""The *Compare outputs* page (issue #17) through streamlit.testing.v1.AppTest: the menu entry
only in a project with pairs or rankings, a pair shown once with "Left" / "Right", answers
through the panel's route stored in terms of output A / B, Enter and Back, then the
rankings; nothing on the page names an output, a generator, a judge or a pair."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation.formats.importers import import_path
from annotation.store import Store
from annotation.work import compare
from tests.helpers import panel
from tests.helpers.apptest import signed_in
from tests.helpers.bundles import write_doc_example
from tests.helpers.compare_fixture import compare_db, pair_and_ranking_ids
from tests.helpers.exposure import leaks, secrets_of


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine_db: str) -> str | Path:
    """The compare project, on SQLite and on PostgreSQL (``engine_db``)."""
    path = compare_db(tmp_path, engine_db)
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(path))
    return path


def _texts(at) -> list[str]:
    """Every text the page shows (markdown, captions, headers, alerts)."""
    out = []
    for kind in ("markdown", "caption", "subheader", "title", "text", "success", "info",
                 "warning"):
        out += [str(e.value) for e in at.get(kind)]
    return out


def _menu(at) -> list[str]:
    return [e.proto.label for e in at.get("page_link")]


@pytest.fixture
def plain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine_db: str) -> str:
    """A project without pairs or rankings (the documented example bundle), on each
    engine."""
    path = engine_db
    with Store.open(path) as store:
        import_path(store, write_doc_example(tmp_path / "doc"))
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(path))
    return path


def test_the_menu_has_no_compare_outputs_without_pairs_or_rankings(plain):
    at = signed_in("app.py", "ann_menu").run()
    assert "Annotate outputs" in _menu(at) and "Compare outputs" not in _menu(at)


def test_the_menu_lists_compare_outputs_in_a_project_with_pairs(db):
    at = signed_in("app.py", "ann_menu2").run()
    assert "Compare outputs" in _menu(at)


def test_a_pair_is_shown_left_and_right_and_answered_through_the_panel(db):
    at = signed_in("compare.py", "lee").run()
    assert not at.exception
    state = at.session_state["compare"]
    pair = state["pairs"]["pair_id"]
    texts = _texts(at)
    assert "**Left**" in texts and "**Right**" in texts
    assert any("Text instruction" in t for t in texts)
    assert any("Reference images" in t for t in texts)
    assert len(at.get("image")) == 3  # the reference once, the two outputs
    data = panel.spec(at)
    assert [o[1] for o in data["targets"][0]["options"]] == [
        "Left", "Right", "Both good", "Both bad"]
    assert [o[2] for o in data["targets"][0]["options"]] == ["a", "b", "t", "x"]
    receipt = panel.answer(at, 0, "right")
    assert receipt["status"] == "ok"
    first = compare.shown_first("lee", pair)
    with Store.open(db) as store:
        row = compare.my_preference(store, "lee", pair)
    assert (row["preference"], row["shown_first"]) == ("a" if first == "b" else "b", first)
    assert panel.spec(at)["targets"][0]["value"] == "right"
    panel.command(at, "submit")
    assert at.session_state["compare"]["pairs"]["pair_id"] != pair
    panel.command(at, "back")
    assert at.session_state["compare"]["pairs"]["pair_id"] == pair
    assert panel.spec(at)["reviewing"] is True
    # what the page holds names no output, generator, judge, pair or ranking
    secrets = secrets_of(db) + pair_and_ranking_ids(db)
    assert leaks(_texts(at) + [str(panel.spec(at))], secrets) == []


def test_enter_on_an_unanswered_pair_submits_nothing_and_says_why(db):
    at = signed_in("compare.py", "mo").run()
    pair = at.session_state["compare"]["pairs"]["pair_id"]
    panel.command(at, "submit")
    assert at.session_state["compare"]["pairs"]["pair_id"] == pair
    assert any("not answered yet" in str(w.value) for w in at.warning)


def test_rankings_come_after_the_pairs_and_take_places(tmp_path, monkeypatch, engine_db):
    db = compare_db(tmp_path, engine_db, rankings_only=True)
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    at = signed_in("compare.py", "nia").run()
    assert not at.exception
    ranking = at.session_state["compare"]["rankings"]["ranking_id"]
    texts = _texts(at)
    assert [t for t in texts if t.startswith("**Output")] == [
        "**Output 1**", "**Output 2**", "**Output 3**"]
    data = panel.spec(at)
    assert [t["text"] for t in data["targets"]] == ["Output 1", "Output 2", "Output 3"]
    assert [o[2] for o in data["targets"][0]["options"]] == ["1", "2", "3"]
    for target, place in ((0, 2), (1, 1), (2, 2)):
        assert panel.answer(at, target, float(place))["status"] == "ok"
    with Store.open(db) as store:
        order = compare.my_order(store, "nia", ranking)
        outputs, _ = compare.ranking_outputs(store, ranking)
    shown = compare.shown_order("nia", ranking, outputs)
    assert order == [shown[1], sorted([shown[0], shown[2]], key=outputs.index)]
    panel.command(at, "submit")
    assert at.session_state["compare"]["rankings"]["ranking_id"] != ranking


def test_a_project_without_pairs_says_so(plain):
    at = signed_in("compare.py", "olga").run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Nothing to compare"]


def test_the_admin_sets_the_overlap_of_pairs_and_rankings_on_the_assignment_page(db):
    at = signed_in("assignment.py", "boss", "admin").run()
    assert not at.exception
    assert "Pairs and rankings" in [s.value for s in at.subheader]
    field = next(n for n in at.number_input if n.label == "Distinct annotators per pair")
    field.set_value(3)
    form_button = [b for b in at.get("button") if "pairs-settings" in str(b.proto.form_id)]
    assert form_button
    form_button[0].click()
    at.run()
    with Store.open(db) as store:
        assert compare.PAIRS.settings(store).overlap == 3
        assert compare.RANKINGS.settings(store).overlap == 1


def test_the_guidelines_are_in_the_sidebar(db):
    at = signed_in("compare.py", "pat").run()
    assert not at.exception
    assert [e.label for e in at.sidebar.expander] == ["Guidelines"]
    assert "follows the instruction" in at.sidebar.expander[0].markdown[0].value
