"""Pre-label readings are of the image, not of the task (issue #15, item 2).

VIF-Bench pre-labels each image of its reference pool once and links tasks to it by content
hash ("VIF-Bench: Evaluating Visual Instruction Following in Multi-Reference Image
Generation", Appendix C.4). The fixture's ``c1`` and ``c4`` show the same dog image (one
file, one hash); ``c4``'s pyramid (+40) does not conflict with the pre-label (yaw 30) but
does with a dog read as facing -40.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import circmean
from statsmodels.stats.proportion import proportion_confint

from annotation.cli.main import main
from annotation.formats.importers import import_path
from annotation.results import conflicts as cr
from annotation.store import Store, schema
from annotation.ui.widget_keys import widget_key
from annotation.work import verification as vf
from tests.helpers import panel
from tests.helpers.apptest import signed_in
from tests.helpers.bundles import ensure_account
from tests.helpers.conflict_fixture import open_task_as, write_shared_reference_bundle
from tests.test_annotate_page import all_text

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "conflicts.py")


@pytest.fixture
def sdb(tmp_path, monkeypatch, engine_db: str) -> str:
    """The shared-reference bundle imported, on SQLite and on PostgreSQL (``engine_db``);
    the pages open it."""
    path = engine_db
    with Store.open(path) as store:
        import_path(store, write_shared_reference_bundle(tmp_path / "bundle"))
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(path))
    return path


def dog(store: Store) -> str:
    return store.conn.execute(
        "SELECT sha256 FROM images WHERE task_id = 'c1' AND idx = 0").fetchone()[0]


def reading_rows(store: Store, attribute: str = "yaw") -> list[tuple]:
    return store.conn.execute(
        "SELECT reading_id, verifier, task_id, value, supersedes, image_sha256"
        " FROM prelabel_readings WHERE attribute = ? ORDER BY reading_id",
        [attribute]).fetchall()


def open_as(store: Store, who: str, task: str) -> vf.VerifySession:
    """:func:`open_task_as`, also for a task the routing already reserved for ``who``."""
    store.conn.execute("DELETE FROM queue_reservations WHERE kind = 'verify' AND unit = ?"
                       " AND person = ?", [task, who])
    return open_task_as(store, who, task)


def count(store: Store) -> int:
    return store.conn.execute("SELECT count(*) FROM prelabel_readings").fetchone()[0]


def finish(session: vf.VerifySession) -> None:
    for check in session.item.checks:
        session.set_verdict(check.conflict, agree=True)
    session.submit()


# ------------------------------------------------------------------ asked once
def test_the_same_image_in_two_tasks_is_asked_once(sdb):
    with Store.open(sdb) as store:
        assert dog(store) == store.conn.execute(
            "SELECT sha256 FROM images WHERE task_id = 'c4' AND idx = 0").fetchone()[0]
        open_task_as(store, "ann1", "c1")  # reads every pre-label of c1 (the dog's too)
        written = count(store)
        c4 = open_as(store, "ann1", "c4")  # confirming again writes nothing
        assert count(store) == written == 4  # dog: yaw, yaw_reliable, light; street: light
        assert c4.readings() == {(0, "yaw"): 30.0, (0, "yaw_reliable"): True,
                                 (0, "light_distinctive"): False}
        assert c4.read_elsewhere() == {(0, "yaw"): "c1", (0, "yaw_reliable"): "c1",
                                       (0, "light_distinctive"): "c1"}
        # nothing left to read: blind mode shows the verdicts at once
        assert vf.readings_complete(c4.item, c4.readings())
        assert c4.revealed() and c4.panel().targets
        # blind per verifier: another verifier is asked for the dog again and sees nothing
        fresh = vf.VerifySession(store, "ann2", {})
        fresh._open("c4")
        assert fresh.readings() == {} and fresh.read_elsewhere() == {}
        assert not fresh.revealed() and fresh.panel().enter == "confirm"


def test_a_correction_in_one_task_changes_the_label_in_the_other(sdb):
    """Fails on the old code: a reading was keyed by task and image index, so c4 kept the
    pre-label's decision."""
    with Store.open(sdb) as store:
        c4 = vf.load_verify_item(store, "c4")
        assert c4.checks[0].automatic is False  # the rules on the pre-label (30 vs +40)
        c1 = open_task_as(store, "ann1", "c1")
        first = c1.set_reading(0, "yaw", -40)  # the dog faces screen-left: a correction
        mine = vf.my_readings(store, "ann1", "c4")
        assert mine[(0, "yaw")] == -40.0
        decided = vf.decisions_on(c4, mine)["orientation"]
        assert decided.conflict is True and "opposite yaw signs" in decided.rule
        finish(c1)
        published = cr.conflict_tables(store)["published_vs_rules"].set_index(
            ["task_id", "conflict"])
        assert published.loc[("c4", "orientation"), "rules_on_readings"] is True
        assert published.loc[("c4", "orientation"), "rules"] is False  # pre-label: kept
        # corrected again from c4: applies in c1 too, and supersedes the c1 row
        again = open_as(store, "ann1", "c4")
        second = again.set_reading(0, "yaw", 25)
        assert vf.my_readings(store, "ann1", "c1")[(0, "yaw")] == 25.0
        assert vf.readings_elsewhere(store, "ann1", "c1")[(0, "yaw")] == "c4"
        rows = reading_rows(store)
        assert [r[0] for r in rows][-2:] == [first, second]
        sha = dog(store)
        # history keeps both rows: the c1 correction, then the c4 one superseding it
        assert rows[-2][1:] == ("ann1", "c1", "-40.0", rows[-3][0], sha)
        assert rows[-1][1:] == ("ann1", "c4", "25.0", first, sha)
        history = cr.conflict_tables(store)["reading_history"]
        yaw = history[(history["attribute"] == "yaw")]
        assert list(yaw["task_id"]) == ["c1", "c1", "c4"]
        assert list(yaw["value"]) == [30.0, -40.0, 25.0]
        current = store.conn.execute(
            "SELECT reading_id FROM current_image_readings WHERE attribute = 'yaw'"
        ).fetchall()
        assert current == [(second,)]
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            store.conn.execute("UPDATE prelabel_readings SET image_sha256 = NULL")


def test_the_store_derives_the_hash_and_the_table_refuses_a_wrong_one(sdb):
    with Store.open(sdb) as store:
        from annotation.store import answers

        with store.transaction() as conn:
            written = answers.supersede(conn, "reading", {
                "verifier": "imp", "task_id": "c4", "image_idx": 0, "attribute": "yaw",
                "value": "10.0"})
        assert reading_rows(store)[-1][0] == written.row_id
        assert reading_rows(store)[-1][-1] == dog(store)
        with pytest.raises(ValueError, match="task 'c4' has no image 9"), \
                store.transaction() as conn:
            answers.supersede(conn, "reading", {
                "verifier": "imp", "task_id": "c4", "image_idx": 9, "attribute": "yaw",
                "value": "10.0"})
        for bad in (None, "0" * 64):
            with pytest.raises(sqlite3.DatabaseError, match="content hash of image"):
                store.conn.execute(
                    "INSERT INTO prelabel_readings (verifier, task_id, image_idx, attribute,"
                    " value, created_at, image_sha256) VALUES ('x', 'c4', 0, 'yaw', '1',"
                    " 'now', ?)", [bad])


# ------------------------------------------------------------------ the page
def test_page_shows_a_reading_made_in_another_task_and_asks_only_the_verdicts(sdb):
    with Store.open(sdb) as store:
        c1 = open_task_as(store, "ann1", "c1")
        c1.set_reading(0, "yaw", -40)
        finish(c1)
        finish(open_as(store, "ann1", "c2"))
        before = count(store)
    ensure_account(os.environ["JUDGE_AUDIT_DB"], "ann1")
    at = signed_in(PAGE, "ann1").run()
    assert not at.exception
    assert at.subheader[0].value.endswith("c4")
    text = all_text(at)
    assert "read in task c1" in text and "only the verdicts are needed" in text
    assert "Automatic label" in text  # blind mode, but this verifier's reading is complete
    data = panel.spec(at)
    assert data["targets"] and data["submit"] == "submit" and not data["enter"]
    field = widget_key("r", "c4", 0, "yaw", state=at.session_state)
    assert at.slider(key=field).value == -40
    at.slider(key=field).set_value(-45).run()  # an edit: a new row, applies everywhere
    assert not at.exception
    with Store.open(sdb) as store:
        assert count(store) == before + 1
        assert reading_rows(store)[-1][2:4] == ("c4", "-45.0")
        assert vf.my_readings(store, "ann1", "c1")[(0, "yaw")] == -45.0
    panel.complete(at, question="agree")
    panel.command(at, "submit")
    assert not at.exception and at.title[0].value == "All done"


# ------------------------------------------------------------------ migration 8 -> 9
# SQLite only: a project file made with the SQLite schema 8, then migrated.
def test_a_schema_8_database_with_readings_gets_the_image_hash(tmp_path, monkeypatch):
    path = tmp_path / "v8.db"
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:8])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", 8)
    with Store.open(path) as old:
        import_path(old, write_shared_reference_bundle(tmp_path / "bundle"))
        # rows as the schema-8 code wrote them: per task and image index
        insert = ("INSERT INTO prelabel_readings (verifier, task_id, image_idx, attribute,"
                  " value, created_at, supersedes) VALUES (?, ?, ?, ?, ?, ?, ?)")
        rows = [("ann1", "c1", 0, "yaw", "30.0", "2026-01-01T10:00:00+00:00", None),
                ("ann1", "c1", 0, "yaw", "-40.0", "2026-01-01T10:01:00+00:00", 1),
                ("ann1", "c4", 0, "yaw", "35.0", "2026-01-02T10:00:00+00:00", None),
                ("ann1", "c1", 1, "light_distinctive", "true", "2026-01-01T10:02:00+00:00",
                 None),
                ("ann2", "c1", 0, "yaw", "20.0", "2026-01-03T10:00:00+00:00", None)]
        for row in rows:
            old.conn.execute(insert, row)
        assert old.schema_version() == 8
        street = old.conn.execute("SELECT sha256 FROM images WHERE task_id = 'c1'"
                                  " AND idx = 1").fetchone()[0]
    monkeypatch.undo()
    with Store.open(path) as new:
        assert new.schema_version() == schema.SCHEMA_VERSION >= 9
        sha = dog(new)
        assert new.conn.execute(
            "SELECT reading_id, image_sha256 FROM prelabel_readings ORDER BY 1").fetchall() \
            == [(1, sha), (2, sha), (3, sha), (4, street), (5, sha)]
        # every row kept; the newest reading of the dog per verifier is the current one
        assert new.conn.execute(
            "SELECT verifier, reading_id FROM current_image_readings"
            " WHERE attribute = 'yaw' ORDER BY 1").fetchall() == [("ann1", 3), ("ann2", 5)]
        assert vf.my_readings(new, "ann1", "c1")[(0, "yaw")] == 35.0
        # a new reading supersedes that newest row; old rows stay append-only
        session = open_task_as(new, "ann1", "c1")
        row = session.set_reading(0, "yaw", -10)
        assert new.conn.execute("SELECT supersedes, image_sha256 FROM prelabel_readings"
                                " WHERE reading_id = ?", [row]).fetchone() == (3, sha)
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            new.conn.execute("DELETE FROM prelabel_readings")


# ------------------------------------------------------------------ accuracy
def test_the_verified_yaw_is_the_circular_mean_as_scipy_computes_it():
    for angles in ([170, -170], [10, 30], [350, 20, 40], [-90, 80, 100]):
        expected = math.degrees(circmean(np.radians(angles), high=math.pi, low=-math.pi))
        got = cr.circular_mean(angles)
        assert got is not None
        assert min(abs(got - expected), 360 - abs(got - expected)) < 1e-9
    assert cr.circular_mean([0, 180]) is None and cr.circular_mean([]) is None


def hand_made() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Six images. Yaw: pre-labels vs verified yaws with known circular errors 10, 20, 90,
    0, 20 on images whose facing direction is read as clear; ``f`` is read as unclear (its
    error is not counted). Light: 7 of 9 pre-labels right, one image tied."""
    pre, read = [], []

    def image(sha, attribute, prelabel, **readings):
        pre.append({"image_sha256": sha, "attribute": attribute, "prelabel": prelabel,
                    "tasks": f"t-{sha}"})
        read.extend({"image_sha256": sha, "verifier": who, "attribute": attribute,
                     "value": value} for who, value in readings.items())

    for sha, p, v in (("a", 30, 40), ("b", 350, 10), ("c", 90, 180), ("d", 0, 0),
                      ("e", 170, -170)):
        image(sha, "yaw", p, ann1=v)
        image(sha, "yaw_reliable", True, ann1=True)
    image("f", "yaw", 0, ann1=120)
    image("f", "yaw_reliable", True, ann1=False)
    # two verifiers on one image: their circular mean (350 and 30 -> 10) against 0
    image("g", "yaw", 0, ann1=350, ann2=30)
    image("g", "yaw_reliable", True, ann1=True, ann2=True)
    light = [(True, True), (False, False), (True, True), (False, True), (True, True),
             (False, False), (True, False), (False, False), (True, True)]
    for i, (p, v) in enumerate(light):
        image(f"L{i}", "light_distinctive", p, ann1=v)
    image("tie", "light_distinctive", True, ann1=True, ann2=False)
    image("unread", "light_distinctive", False)
    return pd.DataFrame(read), pd.DataFrame(pre)


def test_prelabel_accuracy_on_a_hand_made_example():
    readings, prelabels = hand_made()
    verified = cr.verified_prelabels(readings, prelabels)
    g = verified.set_index(["image_sha256", "attribute"]).loc[("g", "yaw")]
    assert g["n_verifiers"] == 2 and abs(g["verified"] - 10.0) < 1e-9
    table = cr.prelabel_accuracy(verified).set_index("attribute")
    yaw = table.loc["yaw"]
    errors = [10, 20, 90, 0, 20, 10]  # a..e, then g; f is unclear
    assert (yaw["n_images"], yaw["n"], yaw["n_undecided"]) == (7, 6, 1)
    assert yaw["median_error"] == pytest.approx(15.0)
    assert yaw["mean_error"] == pytest.approx(sum(errors) / 6)
    # sorted 0 10 10 20 20 90: the 90th percentile at 0.9 * 5 = 4.5 -> 20 + 0.5 * 70
    assert yaw["p90_error"] == pytest.approx(55.0)
    assert yaw["within_22_5"] == pytest.approx(5 / 6)
    assert yaw["within_45"] == pytest.approx(5 / 6)
    assert pd.isna(yaw["accuracy"])
    light = table.loc["light_distinctive"]
    assert (light["n_images"], light["n_unread"], light["n_undecided"]) == (11, 1, 1)
    assert (light["n"], light["correct"]) == (9, 7)
    assert light["accuracy"] == pytest.approx(7 / 9)
    lo, hi = proportion_confint(7, 9, alpha=0.05, method="wilson")
    assert (light["accuracy_lo"], light["accuracy_hi"]) == (pytest.approx(lo),
                                                            pytest.approx(hi))
    reliable = table.loc["yaw_reliable"]
    assert (reliable["n"], reliable["correct"]) == (7, 6)  # f: pre-label clear, read not
    lo, hi = proportion_confint(6, 7, alpha=0.05, method="wilson")
    assert reliable["accuracy_lo"] == pytest.approx(lo)
    assert table.loc["wind_responsive", "n"] == 0


def test_conflicts_command_writes_the_accuracy_table(sdb, tmp_path):
    with Store.open(sdb) as store:
        c1 = open_task_as(store, "ann1", "c1")
        c1.set_reading(0, "yaw", -40)  # 70 degrees from the pre-label's 30
        c1.set_reading(1, "light_distinctive", False)  # the VLM said distinctive: wrong
        finish(c1)
        finish(open_as(store, "ann1", "c4"))  # the dog: nothing more to read
        unfinished = open_as(store, "ann2", "c1")  # not submitted: not a result
        unfinished.set_reading(0, "yaw", 100)
    out = tmp_path / "out"
    assert main(["conflicts", "--db", str(sdb), "--out", str(out), "--quiet"]) == 0
    table = pd.read_csv(out / "prelabel_accuracy.csv").set_index("attribute")
    assert list(table.index) == ["yaw", "yaw_reliable", "light_distinctive",
                                 "wind_responsive", "pose_distinctive"]
    assert (table.loc["yaw", "n"], table.loc["yaw", "median_error"]) == (1, 70.0)
    assert table.loc["yaw", "within_45"] == 0.0
    light = table.loc["light_distinctive"]
    assert (light["n_images"], light["n"], light["correct"]) == (2, 2, 1)  # dog, street
    images = pd.read_csv(out / "verified_prelabels.csv")
    dog_yaw = images[(images.attribute == "yaw")].iloc[0]
    assert dog_yaw["tasks"] == "c1;c4" and json.loads(dog_yaw["readings"]) == {
        "ann1": -40.0}
    history = pd.read_csv(out / "reading_history.csv")
    assert set(history["verifier"]) == {"ann1", "ann2"}  # the history has everything
    labels = {r["id"]: r for r in map(json.loads, (out / "verified_labels.jsonl")
                                      .read_text().splitlines())}
    assert labels["c4"]["readings"]["ann1"]["Image_0"]["yaw"] == -40.0
