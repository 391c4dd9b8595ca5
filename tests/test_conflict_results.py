"""Results of conflict verification, against hand-computed values and the krippendorff
package; the `judge-audit conflicts` CLI and its JSONL export on a real database."""

from __future__ import annotations

import json
import math

import krippendorff
import numpy as np
import pandas as pd
import pytest

from annotation.cli import main
from annotation.formats.importers import import_path
from annotation.results import conflicts as cr
from annotation.store import Store
from annotation.work.verification import VerifySession, submit_task
from tests.helpers.apptest import signed_in
from tests.helpers.conflict_fixture import open_task_as, write_conflict_bundle


def _labels(pairs: list[tuple[bool | None, bool | None]], kind: str = "orientation"):
    return pd.DataFrame({
        "task_id": [f"t{i}" for i in range(len(pairs))], "conflict": kind,
        "n_verifiers": 1, "votes_conflict": 0,
        "automatic": [a for a, _ in pairs], "verified": [v for _, v in pairs]}).astype(
        {"automatic": object, "verified": object})


def test_precision_recall_and_kappa_by_hand():
    # TP 4, FP 2, FN 1, TN 3: precision 4/6, recall 4/5; p_o = 7/10,
    # p_e = 0.6 * 0.5 + 0.4 * 0.5 = 0.5, kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    pairs = [(True, True)] * 4 + [(True, False)] * 2 + [(False, True)] + [(False, False)] * 3
    table = cr.automatic_vs_verified(_labels(pairs + [(True, None)]))
    row = table.set_index("conflict").loc["orientation"]
    assert (row.tp, row.fp, row.fn, row.tn, row.n_tasks, row.n_undecided) == (4, 2, 1, 3, 10, 1)
    assert row.precision == pytest.approx(4 / 6)
    assert row.recall == pytest.approx(4 / 5)
    assert row.agreement == pytest.approx(0.7)
    assert row.kappa == pytest.approx(0.4)
    assert row.agreement_lo < 0.7 < row.agreement_hi
    assert table.set_index("conflict").loc["all"].n_tasks == 10
    assert table.set_index("conflict").loc["light"].n_tasks == 0


def test_verified_label_is_the_strict_majority():
    verdicts = pd.DataFrame({
        "task_id": ["t1"] * 3 + ["t2"] * 2, "conflict": "wind",
        "verifier": ["a", "b", "c", "a", "b"], "automatic": True, "agrees": None,
        "label": [True, False, True, True, False], "note": None, "blind": True,
        "created_at": ["1", "2", "3", "4", "5"]})
    labels = cr.verified_labels(verdicts).set_index("task_id")
    assert labels.loc["t1", "verified"] is True and labels.loc["t1", "votes_conflict"] == 2
    assert labels.loc["t2", "verified"] is None  # 1 vs 1: undecided


def test_verifier_alpha_matches_the_krippendorff_package():
    rng = np.random.default_rng(7)
    rows = []
    for t in range(30):
        truth = rng.random() < 0.4
        for v in ("a", "b", "c"):
            if rng.random() < 0.2:
                continue  # not every verifier saw every task
            label = truth if rng.random() < 0.8 else not truth
            rows.append({"task_id": f"t{t}", "conflict": "light", "verifier": v,
                         "label": label})
    verdicts = pd.DataFrame(rows)
    table = cr.verifier_agreement(verdicts).set_index("conflict")
    wide = verdicts.assign(value=verdicts.label.astype(int)).pivot(
        index="task_id", columns="verifier", values="value")
    expected = krippendorff.alpha(reliability_data=wide.to_numpy(dtype=float).T,
                                  level_of_measurement="nominal")
    assert table.loc["light", "alpha"] == pytest.approx(expected)
    # pairwise agreement by hand
    multi = wide[wide.notna().sum(axis=1) >= 2]
    pairs = agree = 0
    for _, row in multi.iterrows():
        vals = list(row.dropna())
        for i in range(len(vals)):
            for j in range(i + 1, len(vals)):
                pairs += 1
                agree += vals[i] == vals[j]
    assert table.loc["light", "pairwise_agreement"] == pytest.approx(agree / pairs)
    assert table.loc["light", "n_tasks_multi"] == len(multi)
    assert math.isnan(table.loc["pose", "alpha"])


def test_conflict_statistics_like_section_3_2():
    # 5 tasks: t0-t2 have an orientation instruction (t0, t1 automatic conflicts), t3 has a
    # light arrow (automatic no conflict), t4 only a layout.
    tasks = pd.DataFrame({
        "task_id": ["t0", "t1", "t2", "t3", "t4"],
        "conflict": ["orientation", "orientation", "orientation", "light", None],
        "automatic": [True, True, False, False, None]}).astype(object)
    # verified: t0 confirmed, t1 overturned, t3 overturned (a light conflict after all)
    labels = pd.DataFrame({
        "task_id": ["t0", "t1", "t3"], "conflict": ["orientation", "orientation", "light"],
        "verified": [True, False, True], "automatic": [True, True, False]}).astype(object)
    stats = cr.conflict_statistics(tasks, labels).set_index("conflict")
    o = stats.loc["orientation"]
    assert (o.tasks_with_instruction, o.automatic_conflicts) == (3, 2)
    assert o.automatic_share == pytest.approx(2 / 3)
    assert (o.verified_tasks, o.automatic_conflicts_on_verified, o.verified_conflicts) == (2, 2, 1)
    assert o.verified_share == pytest.approx(0.5)
    a = stats.loc["any"]
    assert (a.tasks_with_instruction, a.automatic_conflicts) == (5, 2)  # of all tasks
    # t2 is not verified: 'any' counts t0, t1, t3 (every type they have is decided)
    assert (a.verified_tasks, a.verified_conflicts) == (3, 2)
    assert stats.loc["wind"].tasks_with_instruction == 0


def test_cli_writes_the_labels_and_tables(tmp_path, make_engine_db):
    db = make_engine_db("p.db")
    with Store.open(db) as store:
        import_path(store, write_conflict_bundle(tmp_path / "b"))
        for who in ("ann1", "ann2"):
            session = VerifySession(store, who, {})
            while session.task_id is not None:
                session.confirm_readings({})
                for check in session.item.checks:
                    # ann2 overturns the published pose label of c2; both agree elsewhere
                    disagree = who == "ann2" and check.conflict == "pose"
                    session.set_verdict(check.conflict, agree=not disagree)
                session.submit()
        session = VerifySession(store, "ann1", {})
        assert session.back()
        session.set_verdict("pose", agree=False, note="=HYPERLINK(\"x\") neutral pose")
    out = tmp_path / "out"
    assert main(["conflicts", "--db", str(db), "--out", str(out), "--quiet"]) == 0
    records = {r["id"]: r for r in map(json.loads, (out / "verified_labels.jsonl")
                                       .read_text().splitlines())}
    assert set(records) == {"c1", "c2"}
    c2 = records["c2"]
    assert c2["pose_conflict"] is False and c2["wind_conflict"] is True
    assert c2["orientation_conflict"] is False  # no orientation instruction in c2
    assert c2["verifiers"] == ["ann1", "ann2"]
    assert any(n.startswith("ann1 (pose): =HYPERLINK") for n in c2["notes"])
    assert {"verifier", "conflict", "automatic", "agrees", "label", "note", "blind",
            "at"} <= set(c2["verdicts"][0])
    assert c2["readings"]["ann1"]["Image_0"]["pose_distinctive"] is False
    agreement = pd.read_csv(out / "conflict_agreement.csv").set_index("conflict")
    assert agreement.loc["pose", "fp"] == 1 and agreement.loc["wind", "tp"] == 1
    history = (out / "verdict_history.csv").read_text()
    assert "'=HYPERLINK" in history  # formula injection neutralized in CSV
    consistency = pd.read_csv(out / "published_vs_rules.csv")
    assert list(consistency[~consistency.consistent].conflict) == ["pose"]
    assert main(["conflicts", "--db", str(tmp_path / "none.db"), "--out", str(out)]) == 1


@pytest.mark.slow
def test_admin_page_shows_results_and_refuses_annotators(tmp_path, monkeypatch, make_engine_db):
    from pathlib import Path

    from tests.helpers.bundles import ensure_account

    db = make_engine_db("p.db")
    with Store.open(db) as store:
        import_path(store, write_conflict_bundle(tmp_path / "b"))
        session = VerifySession(store, "ann1", {})
        session.confirm_readings({})
        session.set_verdict(session.item.checks[0].conflict, agree=False)
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    page = str(Path(__file__).resolve().parents[1] / "pages" / "conflict_results.py")
    for name, role in (("boss", "admin"), ("ann1", "annotator")):
        ensure_account(db, name, role)
    at = signed_in(page, "boss", "admin")
    at.run()
    assert not at.exception
    assert at.title[0].value == "Conflict labels"
    assert len(at.dataframe) == 12  # per verifier + eleven result tables
    at.toggle[0].set_value(False)
    at.button[0].click().run()  # the settings form's Save
    with Store.open(db) as store:
        from annotation.work.verification import get_settings

        assert get_settings(store).blind is False
    refused = signed_in(page, "ann1")
    refused.run()
    assert [e.value for e in refused.error] == ["This page is for admins only."]
    assert not refused.dataframe


def test_unsubmitted_and_partial_work_is_not_a_verified_label(tmp_path, make_engine_db):
    db = make_engine_db("p.db")
    with Store.open(db) as store:
        import_path(store, write_conflict_bundle(tmp_path / "b"))
        session = VerifySession(store, "ann1", {})
        task = session.task_id
        session.confirm_readings({})
        first = session.item.checks[0].conflict
        session.set_verdict(first, agree=True)  # one verdict, task not submitted
        assert cr.labels_jsonl_rows(cr.verified_labels(cr.load_verdicts(store)),
                                    cr.load_verdicts(store)) == []
        other = open_task_as(store, "ann2", task)
        other.set_verdict(first, agree=True)
        submit_task(store, "ann2", task)  # submitted with one type judged only
        verdicts = cr.load_verdicts(store)
        rows = cr.labels_jsonl_rows(cr.verified_labels(verdicts), verdicts,
                                    tasks=cr.load_tasks(store))
    assert [r["verifiers"] for r in rows] == [["ann2"]]
    kinds = [c.conflict for c in session.item.checks]
    record = rows[0]
    for kind in kinds[1:]:
        assert record[f"{kind}_conflict"] is None  # the task has it, nobody decided it
    absent = {"orientation", "light", "wind", "pose"} - set(kinds)
    assert all(record[f"{k}_conflict"] is False for k in absent)
