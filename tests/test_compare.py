"""Annotating pairs and rankings (issue #17, *Compare outputs*): the workflow on a real
SQLite file and on PostgreSQL, the deliveries of the answer panel, and what the panel is
told (blind)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from annotation.formats import pairs as pair_format
from annotation.formats.bundle import write_bundle
from annotation.formats.importers import import_path
from annotation.records import ImportRefused, Problems, ProjectData
from annotation.store import Store
from annotation.store import answers as answer_rows
from annotation.store import pairs as pair_rows
from annotation.work import compare, deliveries, engine, panel
from annotation.work.engine import ItemTaken
from tests.helpers.compare_fixture import compare_db, outputs_of_ranking, pair_and_ranking_ids
from tests.helpers.exposure import leaks, secrets_of


@pytest.fixture
def db(tmp_path: Path, engine_db: str) -> str:
    """The compare project, on SQLite and on PostgreSQL (``engine_db``, tests/conftest.py)."""
    return str(compare_db(tmp_path, engine_db))


@pytest.fixture
def store(db: str) -> Iterator[Store]:
    with Store.open(db) as s:
        yield s


def _entry(visit: int, target: int, value: Any, n: int, seen: int | None = None,
           panel_id: str = "panel-one") -> deliveries.Entry:
    return deliveries.Entry(visit, target, value, f"{panel_id}:{n}", n, seen, 0.0)


# ------------------------------------------------------------------ pure rules
def test_the_side_is_stable_per_person_and_pair_and_about_half_each_way():
    pairs = [f"p{i}" for i in range(400)]
    sides = [compare.shown_first("ann", p) for p in pairs]
    assert sides == [compare.shown_first("ann", p) for p in pairs]  # a reload: the same
    assert 150 < sides.count("a") < 250
    assert [compare.shown_first("bob", p) for p in pairs] != sides  # per person


@pytest.mark.parametrize(("pressed", "first", "stored"), [
    ("left", "a", "a"), ("right", "a", "b"), ("left", "b", "b"), ("right", "b", "a"),
    ("tie", "b", "tie"), ("both_bad", "a", "both_bad")])
def test_a_press_is_stored_in_terms_of_output_a_and_b(pressed, first, stored):
    assert compare.to_stored(pressed, first) == stored
    assert compare.to_shown(stored, first) == pressed


def test_places_make_the_bundle_order_best_first_with_ties_as_lists():
    outputs = ["o1", "o2", "o3", "o4"]
    assert compare.order_of({"o1": 2, "o2": 1, "o3": 3}, outputs) is None  # o4 unplaced
    assert compare.order_of({"o1": 2, "o2": 1, "o3": 4, "o4": 2}, outputs) == [
        "o2", ["o1", "o4"], "o3"]
    assert compare.order_of({o: 1 for o in outputs}, outputs) == [outputs]


def test_the_shown_order_of_a_ranking_is_a_stable_per_person_shuffle():
    outputs = [f"o{i}" for i in range(9)]
    mine = compare.shown_order("ann", "r1", outputs)
    assert sorted(mine) == outputs and mine == compare.shown_order("ann", "r1", outputs)
    assert any(compare.shown_order(p, "r1", outputs) != mine for p in ("b", "c", "d"))


# ------------------------------------------------------------------ the workflow
def test_a_left_press_with_output_b_on_the_left_stores_b_with_its_side(store):
    person = next(p for p in (f"ann{i}" for i in range(50))
                  if compare.shown_first(p, "pt1xy") == "b")
    compare.PAIRS.next(store, person)
    compare.give_preference(store, person, "pt1xy", "left")
    row = compare.my_preference(store, person, "pt1xy")
    assert (row["preference"], row["shown_first"]) == ("b", "b")
    view = compare.load_pair(store, person, "pt1xy")
    a, b, _ = compare.pair_outputs(store, "pt1xy")
    sha = dict(store.conn.execute("SELECT output_id, sha256 FROM outputs"))
    assert (view.left, view.right) == (sha[b], sha[a])


def test_a_changed_preference_supersedes_and_an_equal_one_writes_nothing(store):
    s = compare.session_for(store, "carol", {})
    assert isinstance(s, compare.PairSession)
    first = s.press("left")
    assert s.press("left") == first
    second = s.press("tie")
    rows = store.conn.execute("SELECT pair_annotation_id, preference, supersedes FROM"
                              " pair_annotations WHERE annotator = 'carol'").fetchall()
    assert [r[2] for r in rows] == [None, first] and rows[-1][:2] == (second, "tie")


def test_overlap_and_reservations_as_the_other_workflows(store):
    compare.PAIRS.set_settings(store, "boss", overlap=1)
    units = {compare.PAIRS.next(store, p) for p in ("p1", "p2", "p3")}
    assert len(units) == 3 and None not in units  # nobody gets another's reserved pair
    unit = compare.PAIRS.next(store, "p1")  # resume: the same one
    assert unit in units
    # a stale tab of p4 on p1's pair (overlap 1, reserved by p1) may not answer it
    with pytest.raises(ItemTaken):
        compare.give_preference(store, "p4", unit, "left", slot=True)
    assert compare.my_preference(store, "p4", unit) is None


def test_submitting_needs_an_answer_and_moves_to_the_next_unit(store):
    state: dict[str, Any] = {}
    s = compare.session_for(store, "dora", state)
    assert isinstance(s, compare.PairSession)
    unit = s.unit
    s.command({"name": "submit", "n": 1, "visit": s.state["visit_id"], "seconds": 0})
    assert s.unit == unit and "not answered" in s.state.pop("notice")
    s.press("right")
    s.command({"name": "submit", "n": 2, "visit": s.state["visit_id"], "seconds": 0})
    assert s.unit != unit and compare.PAIRS.is_submitted(store, "dora", unit)
    s.command({"name": "back", "n": 3, "visit": s.state["visit_id"], "seconds": 0})
    assert s.unit == unit and s.state["reviewing"]
    assert s.panel().values == {0: "right"}  # the stored answer, in screen terms


def test_the_previous_pair_reopens_for_review_after_the_last_one(store):
    state: dict[str, Any] = {}
    assert not compare.review_previous(store, "fay", state, "pairs")  # nothing submitted
    units = []
    while isinstance(s := compare.session_for(store, "fay", state), compare.PairSession):
        units.append(s.unit)
        s.press("left")
        s.command({"name": "submit", "n": len(units), "visit": s.state["visit_id"],
                   "seconds": 0})
    assert compare.review_previous(store, "fay", state, "pairs")
    again = compare.session_for(store, "fay", state)
    assert isinstance(again, compare.PairSession) and again.unit == units[-1]
    assert again.state["reviewing"] and again.panel().values == {0: "left"}


def test_rankings_follow_the_pairs_on_the_page(db):
    with Store.open(db) as store:
        compare.PAIRS.set_settings(store, "boss", overlap=1)
        state: dict[str, Any] = {}
        for pair in compare.pair_units(store):  # someone else did every pair
            compare.give_preference(store, "other", pair, "tie")
            compare.PAIRS.submit(store, "other", pair)
        s = compare.session_for(store, "erin", state)
        assert isinstance(s, compare.RankingSession) and state["mode"] == "rankings"


def test_places_write_one_row_per_press_and_the_order_once_complete(db):
    with Store.open(db) as store:
        s = compare.RankingSession(store, "fay", {})
        unit = s.unit
        assert unit is not None
        outputs = outputs_of_ranking(db, unit)
        shown = compare.shown_order("fay", unit, outputs)
        s.place(0, 2)
        s.place(1, 2)
        assert compare.my_order(store, "fay", unit) is None and not s.complete()
        s.place(2, 1)
        assert compare.my_order(store, "fay", unit) == [shown[2], sorted(
            shown[:2], key=outputs.index)]
        s.place(1, 3)  # a change: the order again, superseding the first
        assert compare.my_order(store, "fay", unit) == [shown[2], shown[0], shown[1]]
        history = store.conn.execute(
            "SELECT ranked, supersedes FROM ranking_annotations WHERE annotator = 'fay'"
            " ORDER BY ranking_annotation_id").fetchall()
        assert len(history) == 2 and history[1][1] is not None
        assert store.conn.execute("SELECT count(*) FROM ranking_places WHERE annotator ="
                                  " 'fay'").fetchone()[0] == 4
        with pytest.raises(ValueError, match="place"):
            s.place(0, len(outputs) + 1)
        # the stored order is a valid bundle answer (the import's own check)
        data = ProjectData("x", "b", "s", "f")
        pair_rows.read_into(store, data)
        problems = Problems()
        stored = {"pairs": {"rankings": {unit: {"outputs": json.dumps(outputs),
                                                "task_id": None}}}}
        answers = [a for a in data.ranking_answers if a.who == "fay"]
        check_data = ProjectData("x", "b", "s", "f")
        check_data.ranking_answers = answers
        pair_format.check(problems, check_data, stored, {}, set(), {})
        assert not problems.errors


# ------------------------------------------------------------------ the panel's deliveries
def test_a_delivered_pair_press_is_written_once_in_output_terms(store):
    s = compare.session_for(store, "gus", {})
    assert isinstance(s, compare.PairSession)
    visit, unit = s.state["visit_id"], s.unit
    first = compare.shown_first("gus", unit)
    receipts = deliveries.deliver(store, "gus", [_entry(visit, 0, "left", 1)])
    again = deliveries.deliver(store, "gus", [_entry(visit, 0, "left", 1)])
    assert receipts[0].status == "ok" and again[0].outcome == "duplicate"
    rows = store.conn.execute("SELECT preference, shown_first FROM pair_annotations"
                              " WHERE annotator = 'gus'").fetchall()
    assert rows == [(first, first)]
    bad = deliveries.deliver(store, "gus", [_entry(visit, 0, "a", 2)])
    assert bad[0].reason == "invalid" and bad[0].value == "left"  # screen terms


def test_a_burst_of_digit_presses_is_stored_in_order(store):
    s = compare.RankingSession(store, "hal", {})
    unit = s.unit
    visit = s.state["visit_id"]
    k = len(compare.ranking_outputs(store, unit)[0])
    burst = [_entry(visit, i, float(p), n + 1) for n, (i, p) in
             enumerate([(0, 3), (1, 1), (2, 2), (0, 2), (0, 1)])]
    receipts = deliveries.deliver(store, "hal", burst)
    assert [r.status for r in receipts] == ["ok"] * 5
    assert compare.shown_places(store, "hal", unit) == {
        0: (1, receipts[4].row), 1: (1, receipts[1].row), 2: (2, receipts[2].row)}
    assert k == 3
    shown = compare.shown_order("hal", unit, compare.ranking_outputs(store, unit)[0])
    assert compare.my_order(store, "hal", unit)[0] == sorted(
        [shown[0], shown[1]], key=compare.ranking_outputs(store, unit)[0].index)
    # a press typed over no answer, arriving after these: refused, the stored place shown
    late = deliveries.Entry(visit, 0, 3.0, "panel-two:1", 1, None, 0.0)
    refused = deliveries.deliver(store, "hal", [late])
    assert (refused[0].reason, refused[0].value) == ("changed", 1.0)


def test_what_the_panel_is_told_names_no_output_pair_or_side(db):
    secrets = secrets_of(db) + pair_and_ranking_ids(db) + ["output_a", "output_b",
                                                          "shown_first"]
    with Store.open(db) as store:
        texts = []
        for person in ("ivy", "jo"):
            state: dict[str, Any] = {}
            s = compare.session_for(store, person, state)
            assert isinstance(s, compare.PairSession)
            s.press("left")
            texts.append(json.dumps(panel.spec(s.panel())))
            r = compare.RankingSession(store, person, {})
            r.place(0, 1)
            texts.append(json.dumps(panel.spec(r.panel())))
    assert leaks(texts, secrets) == []
    # the stored answer in screen terms, whichever side output A was on for the person
    assert [json.loads(t)["targets"][0]["value"] for t in texts[::2]] == ["left", "left"]
    with Store.open(db) as store:
        rows = store.conn.execute("SELECT preference, shown_first FROM pair_annotations"
                                  " WHERE annotator IN ('ivy', 'jo')").fetchall()
    assert len(rows) == 2 and all(pref == side for pref, side in rows)


def test_the_side_counts_of_an_annotator_are_recorded_for_position_bias(store):
    compare.PAIRS.set_settings(store, "boss", overlap=5)
    s = compare.session_for(store, "kim", {})
    while isinstance(s, compare.PairSession) and s.unit is not None:
        s.press("left")
        s.command({"name": "submit", "n": s.state.get("handled", 0) + 1,
                   "visit": s.state["visit_id"], "seconds": 0})
    rows = store.conn.execute("SELECT preference, shown_first FROM current_pair_annotations"
                              " WHERE annotator = 'kim'").fetchall()
    assert len(rows) == len(compare.pair_units(store))
    assert all(pref == side for pref, side in rows)  # always left = the side shown left
    assert set(Counter(side for _, side in rows)) == {"a", "b"}


def test_pairs_and_rankings_run_on_the_one_engine():
    assert {compare.PAIRS.kind.name, compare.RANKINGS.kind.name} == {"pairs", "rankings"}
    assert all(isinstance(r, engine.Router) for r in (compare.PAIRS, compare.RANKINGS))
    assert issubclass(compare.PairSession, engine.Controller)
    assert issubclass(compare.RankingSession, engine.Controller)
    assert {"pairs", "rankings"} <= set(deliveries.WRITERS)


def test_answers_given_here_export_and_import_with_their_history(db, tmp_path):
    with Store.open(db) as store:
        s = compare.session_for(store, "quin", {})
        assert isinstance(s, compare.PairSession)
        pair = s.unit
        s.press("left")
        s.press("both_bad")
        r = compare.RankingSession(store, "quin", {})
        ranking = r.unit
        for i, place in enumerate((1, 1, 2)):
            r.place(i, place)
        write_bundle(store.read_project(), tmp_path / "out")
        order = compare.my_order(store, "quin", ranking)
    copy = tmp_path / "copy.db"
    with Store.open(copy) as store:
        import_path(store, tmp_path / "out")
        rows = store.conn.execute(
            "SELECT preference, shown_first, supersedes IS NOT NULL FROM pair_annotations"
            " WHERE annotator = 'quin' AND pair_id = ? ORDER BY pair_annotation_id",
            [pair]).fetchall()
        side = compare.shown_first("quin", pair)
        assert rows == [(side, side, 0), ("both_bad", side, 1)]
        assert compare.my_order(store, "quin", ranking) == order


def test_a_submission_naming_an_unknown_pair_is_refused_naming_file_line_and_field(
        db, tmp_path):
    with Store.open(db) as store:
        s = compare.session_for(store, "ria", {})
        assert isinstance(s, compare.PairSession)
        s.press("tie")
        s.command({"name": "submit", "n": 1, "visit": s.state["visit_id"], "seconds": 0})
        write_bundle(store.read_project(), tmp_path / "out")
    path = tmp_path / "out" / "submissions.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    n = next(i for i, x in enumerate(lines, 1) if x["kind"] == "pairs")
    lines[n - 1]["unit"] = "no-such-pair"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    copy = tmp_path / "copy.db"
    with Store.open(copy) as store:
        before = store.conn.execute("SELECT count(*) FROM pairs").fetchone()[0]
        with pytest.raises(ImportRefused, match=rf"submissions.jsonl:{n}: unit: unknown pair"):
            import_path(store, tmp_path / "out")
        assert store.conn.execute("SELECT count(*) FROM pairs").fetchone()[0] == before


def test_an_imported_order_shows_as_places_and_one_press_changes_it(db):
    with Store.open(db) as store:
        ranking = compare.ranking_units(store)[0]
        outputs, _ = compare.ranking_outputs(store, ranking)
        with store.transaction(user=None) as conn:  # as an import writes it
            answer_rows.supersede(conn, "ranking", {
                "annotator": "sam", "ranking_id": ranking,
                "ranked": json.dumps([outputs[0], [outputs[1], outputs[2]]]),
                "source": "import:1"})
        assert compare.places_of([outputs[0], [outputs[1], outputs[2]]]) == {
            outputs[0]: 1, outputs[1]: 2, outputs[2]: 2}
        shown = compare.shown_order("sam", ranking, outputs)
        given = compare.shown_places(store, "sam", ranking)
        assert {shown[i]: p for i, (p, _) in given.items()} == {
            outputs[0]: 1, outputs[1]: 2, outputs[2]: 2}
        compare.RANKINGS.next(store, "sam")
        compare.give_place(store, "sam", ranking, shown.index(outputs[2]), 3)
        assert compare.my_order(store, "sam", ranking) == outputs
