"""Dawid-Skene (issue #16 item 4): the EM implementation against crowd-kit's DawidSkene and
against simulated annotators with known confusion matrices; the ``human Dawid-Skene``
reference of checklist.csv, human_labels.csv, annotator_confusion.csv and the verified
conflict labels' ``dawid_skene`` column on real databases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annotation.results import aggregation
from annotation.results import conflicts as cr
from annotation.results.checklist import checklist_table, study_decisions
from annotation.results.report import TABLES, build_report
from annotation.results.study import load_study
from annotation.stats.dawid_skene import dawid_skene
from annotation.store import Store

# crowd-kit (the reference) warns about pandas keywords it still uses
pytestmark = pytest.mark.filterwarnings("ignore::Warning:crowdkit")


def _simulate(confusions: list[np.ndarray], priors: list[float], n_items: int, *,
              seed: int, answer_rate: float = 1.0) -> tuple[pd.DataFrame, np.ndarray]:
    """Annotators answering items of known classes through known confusion matrices
    (``confusion[true, answer]``)."""
    rng = np.random.default_rng(seed)
    k = len(priors)
    truth = rng.choice(k, n_items, p=priors)
    rows = []
    for i, true in enumerate(truth):
        for w, confusion in enumerate(confusions):
            if rng.random() < answer_rate:
                rows.append((f"t{i:05d}", f"w{w}", int(rng.choice(k, p=confusion[true]))))
    return pd.DataFrame(rows, columns=["task", "worker", "label"]), truth


def _symmetric(k: int, accuracy: float) -> np.ndarray:
    off = (1 - accuracy) / (k - 1)
    return np.full((k, k), off) + np.eye(k) * (accuracy - off)


def _crowdkit_ds():
    return pytest.importorskip("crowdkit.aggregation").DawidSkene


@pytest.mark.parametrize("k", [2, 3])
def test_every_em_round_matches_crowd_kit(k):
    DawidSkene = _crowdkit_ds()
    confusions = [_symmetric(k, a) for a in (0.9, 0.8, 0.7, 0.55, 0.45)]
    data, _ = _simulate(confusions, list(np.linspace(2, 1, k) / np.linspace(2, 1, k).sum()),
                        150, seed=k, answer_rate=0.7)
    for rounds in (1, 3, 25):
        ref = DawidSkene(n_iter=rounds, tol=-1.0).fit(data)  # no early stop: same rounds
        fit = dawid_skene(data.task, data.worker, data.label, max_iter=rounds, tol=-1.0)
        assert fit.n_iter == rounds
        mine = fit.items.set_index("item")[[f"p_{c}" for c in range(k)]]
        theirs = ref.probas_[list(range(k))].loc[mine.index]
        np.testing.assert_allclose(mine.to_numpy(), theirs.to_numpy(), atol=1e-9)
        np.testing.assert_allclose(fit.priors.to_numpy(), ref.priors_[list(range(k))],
                                   atol=1e-9)
        # crowd-kit's errors_: rows (worker, answer), columns the true class
        errors = ref.errors_[list(range(k))]
        for row in fit.confusion.itertuples():
            if (row.annotator, row.answer) in errors.index:
                assert row.probability == pytest.approx(
                    errors.loc[(row.annotator, row.answer), row.true], abs=1e-9)
        labels = fit.items.set_index("item").label
        assert (labels == ref.labels_.loc[labels.index]).all()


def test_converged_fit_matches_crowd_kit_on_yes_no_answers():
    DawidSkene = _crowdkit_ds()
    # each with its own stopping rule (crowd-kit: its evidence lower bound; here: the
    # log-likelihood), both at the same fixed point on a well-identified study
    confusions = [np.array([[0.95, 0.05], [0.10, 0.90]]), np.array([[0.8, 0.2], [0.15, 0.85]]),
                  np.array([[0.75, 0.25], [0.3, 0.7]]), np.array([[0.85, 0.15], [0.2, 0.8]])]
    data, _ = _simulate(confusions, [0.3, 0.7], 300, seed=11)
    data["label"] = data.label.map({0: "no", 1: "yes"})
    ref = DawidSkene(n_iter=2000, tol=1e-12).fit(data)
    fit = dawid_skene(data.task, data.worker, data.label, max_iter=2000, tol=1e-12)
    assert fit.converged and fit.classes == ("no", "yes")
    mine = fit.items.set_index("item")
    np.testing.assert_allclose(mine.p_yes, ref.probas_.loc[mine.index, "yes"], atol=1e-4)


def test_known_confusion_matrices_are_recovered():
    # two careful annotators, a yes-sayer, a coin and a middling one: the model recovers
    # each matrix (three annotators with a coin among them identify it too weakly)
    truth_conf = [np.array([[0.95, 0.05], [0.05, 0.95]]), np.array([[0.9, 0.1], [0.15, 0.85]]),
                  np.array([[0.4, 0.6], [0.05, 0.95]]), np.array([[0.5, 0.5], [0.5, 0.5]]),
                  np.array([[0.8, 0.2], [0.3, 0.7]])]
    data, truth = _simulate(truth_conf, [0.4, 0.6], 3000, seed=3)
    fit = dawid_skene(data.task, data.worker, data.label)
    assert fit.converged and fit.n_iter < 100
    for w, confusion in enumerate(truth_conf):
        mine = fit.confusion[fit.confusion.annotator == f"w{w}"]
        estimated = mine.pivot(index="true", columns="answer", values="probability")
        np.testing.assert_allclose(estimated.to_numpy(), confusion, atol=0.04)
    np.testing.assert_allclose(fit.priors.to_numpy(), [0.4, 0.6], atol=0.04)
    # and labels items better than the majority of the five
    labels = fit.items.set_index("item").label.loc[sorted(set(data.task))].to_numpy()
    votes = data.groupby("task").label.mean().loc[sorted(set(data.task))].to_numpy()
    majority = (votes > 0.5).astype(int)
    assert (labels == truth).mean() > (majority == truth).mean() + 0.03
    assert (labels == truth).mean() > 0.93


def test_empty_and_bad_input():
    fit = dawid_skene([], [], [], classes=("no", "yes"))
    assert fit.items.empty and fit.confusion.empty and fit.n_iter == 0
    with pytest.raises(ValueError, match="not in classes"):
        dawid_skene(["a"], ["w"], ["maybe"], classes=("no", "yes"))


def _human(rows: list[tuple[str, str, str, str]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["annotator", "output_id", "question_id", "answer"])
    return frame.assign(key=frame.output_id + aggregation.SEP + frame.question_id)


def test_a_tie_goes_to_the_reliable_annotator():
    # r and s agree on 40 decisions; u agrees with them on half only. On the last decision
    # only r and u answered and disagree: no majority, but Dawid-Skene sides with r.
    rng = np.random.default_rng(0)
    rows = []
    for i in range(40):
        answer = "yes" if i % 3 else "no"
        rows += [("r", f"o{i}", "q1", answer), ("s", f"o{i}", "q1", answer),
                 ("u", f"o{i}", "q1", answer if rng.random() < 0.5 else
                  ("no" if answer == "yes" else "yes"))]
    rows += [("r", "tie", "q1", "no"), ("u", "tie", "q1", "yes")]
    human = _human(rows)
    fit = aggregation.checklist_fit(human)
    table = aggregation.human_labels_table(human, fit).set_index("output_id")
    assert table.loc["tie", "majority"] is None
    assert table.loc["tie", "dawid_skene"] == "no"
    assert table.loc["tie", "posterior_yes"] < 0.5
    confusion = aggregation.confusion_table(fit, "checklist").set_index(["annotator", "true",
                                                                         "answer"])
    assert confusion.loc[("r", "yes", "yes"), "probability"] > 0.95
    accuracy = confusion.groupby("annotator").annotator_accuracy.first()
    assert accuracy["r"] > accuracy["u"] + 0.3


def test_verified_labels_gain_the_dawid_skene_column():
    # a and b are always right; c always says "conflict". On t9 only a and c answered.
    rows = []
    for i in range(9):
        label = i % 2 == 0
        rows += [(f"t{i}", "a", label), (f"t{i}", "b", label), (f"t{i}", "c", True)]
    rows += [("t9", "a", False), ("t9", "c", True)]
    verdicts = pd.DataFrame(rows, columns=["task_id", "verifier", "label"]).assign(
        conflict="wind", automatic=True, agrees=None, note=None, blind=True,
        created_at=[str(i) for i in range(len(rows))])
    labels = cr.verified_labels(verdicts).set_index("task_id")
    assert labels.loc["t9", "verified"] is None  # 1 vs 1
    assert labels.loc["t9", "dawid_skene"] is False  # c's "conflict" says little
    assert labels.loc["t9", "dawid_skene_posterior"] < 0.5
    assert labels.loc["t0", "dawid_skene"] is True and labels.loc["t1", "dawid_skene"] is False
    # the existing columns are unchanged and first
    assert list(labels.reset_index().columns[:9]) == [
        "task_id", "conflict", "n_verifiers", "votes_conflict", "verified", "automatic",
        "majority", "resolved_by", "resolution_note"]


@pytest.mark.slow
def test_demo_report_rows_tables_and_crowd_kit(tmp_path, engine_demo):
    db = engine_demo
    with Store.open(db) as store:
        study = load_study(store)
    decided = study_decisions(study)
    table = checklist_table(study, n_boot=50, decided=decided)
    ds_rows = table[table.reference == aggregation.DAWID_SKENE]
    assert len(ds_rows) and set(ds_rows.judge) >= set(study.judges.name)
    # the existing rows are exactly the rows without the new reference
    before = checklist_table(study, n_boot=50, decided=decided, dawid_skene=False)
    pd.testing.assert_frame_equal(
        table[table.reference != aggregation.DAWID_SKENE].reset_index(drop=True), before)
    assert {"annotator_confusion", "human_labels"} <= set(TABLES)
    tables = build_report(study)
    labels = tables["human_labels"]
    confusion = tables["annotator_confusion"]
    assert set(confusion.source) == {"checklist"}
    assert set(confusion.annotator) == set(decided.human.annotator)
    # the same decisions through crowd-kit give the same labels
    DawidSkene = _crowdkit_ds()
    answers = decided.human[decided.human.answer.isin(("yes", "no"))]
    rounds = decided.dawid_skene.n_iter  # the same rounds (the stopping rules differ)
    assert decided.dawid_skene.converged
    ref = DawidSkene(n_iter=rounds, tol=-1.0).fit(pd.DataFrame(
        {"task": answers.key, "worker": answers.annotator, "label": answers.answer}))
    keyed = labels.assign(key=labels.output_id + aggregation.SEP + labels.question_id)
    keyed = keyed.set_index("key")
    np.testing.assert_allclose(keyed.posterior_yes, ref.probas_.loc[keyed.index, "yes"],
                               atol=1e-8)
    decided_both = keyed[keyed.majority.notna()]
    assert (decided_both.majority == decided_both.dawid_skene).mean() > 0.9


@pytest.mark.slow
def test_conflicts_command_writes_the_verifiers_confusion(tmp_path, make_engine_db):
    from annotation.cli import main
    from annotation.formats.importers import import_path
    from annotation.work.verification import VerifySession
    from tests.helpers.conflict_fixture import write_conflict_bundle

    db = make_engine_db("p.db")
    with Store.open(db) as store:
        import_path(store, write_conflict_bundle(tmp_path / "b"))
        for who in ("ann1", "ann2"):
            session = VerifySession(store, who, {})
            while session.task_id is not None:
                session.confirm_readings({})
                for check in session.item.checks:
                    session.set_verdict(check.conflict,
                                        agree=not (who == "ann2" and check.conflict == "pose"))
                session.submit()
    out = tmp_path / "out"
    assert main(["conflicts", "--db", str(db), "--out", str(out), "--quiet"]) == 0
    confusion = pd.read_csv(out / "annotator_confusion.csv")
    assert set(confusion.source) == {"conflict"}
    assert set(confusion.annotator) == {"ann1", "ann2"}
    sums = confusion.groupby(["annotator", "true"]).probability.sum()
    np.testing.assert_allclose(sums, 1.0)
    labels = pd.read_csv(out / "verified_labels.csv")
    assert {"dawid_skene", "dawid_skene_posterior"} <= set(labels.columns)
    assert labels.dawid_skene.notna().all()
    # one verifier on each side of the pose tie: the majority is undecided there
    pose = labels[labels.conflict == "pose"]
    assert pose.majority.isna().all()


@pytest.mark.slow
def test_judge_validation_page_shows_the_annotators_confusion(served_demo):
    from pathlib import Path

    from tests.helpers.apptest import signed_in

    page = str(Path(__file__).resolve().parents[1] / "pages" / "analytics.py")
    at = signed_in(page, "admin", "admin", db=served_demo, timeout=120)
    at.session_state["an_n_boot"] = 20
    at.run()
    assert not at.exception
    assert "Annotators' confusion (Dawid-Skene)" in [s.value for s in at.subheader]
    shown = next(df.value for df in at.dataframe
                 if {"annotator", "true", "answer", "probability"} <= set(df.value.columns))
    assert set(shown.true) == {"no", "yes"} and shown.probability.between(0, 1).all()
