"""annotators.csv (annotation.results.annotators): a simulated study in which one annotator answers
at random and fast, one straight-lines a criterion and one says cant_tell a lot; they are
flagged and the careful annotators are not. Every number is recomputed by hand with pandas,
scipy and scikit-learn."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from annotation.results.annotators import annotators_table
from annotation.results.study import StudyData, load_study
from annotation.store import Store

CRITERIA = ["sharpness", "adherence"]  # project order (not alphabetical)
GOOD = ["g1", "g2", "g3", "g4"]


def _simulated(seed: int = 0) -> StudyData:
    """60 outputs, 2 criteria on 1-10 and 3 checklist questions per output (q2 depends on
    q1; q3 passes on "no"). Careful annotators g1-g4: truth plus noise, 10% flipped answers,
    about 60 s per output. "rand": uniform scores and coin-flip answers in about 10 s.
    "flat": careful, but gives 7 on every sharpness. "unsure": careful, but cant_tell on a
    third of the questions."""
    rng = np.random.default_rng(seed)
    outputs = [f"t{i:02d}/g" for i in range(60)]
    truth = {(o, c): rng.uniform(1.5, 9.5) for o in outputs for c in CRITERIA}
    facts = {(o, k): rng.uniform() < p for o in outputs for k, p in ((1, .7), (2, .6), (3, .3))}
    scores, answers, times = [], [], []
    for a in [*GOOD, "rand", "flat", "unsure"]:
        for o in outputs:
            task = o.split("/")[0]
            if a in GOOD[2:] and rng.uniform() < 0.1:
                continue  # g3, g4 skip some outputs
            for c in CRITERIA:
                v = float(np.clip(round(truth[o, c] + rng.normal(0, 1)), 1, 10))
                if a == "rand":
                    v = float(rng.integers(1, 11))
                if a == "flat" and c == "sharpness":
                    v = 7.0
                scores.append((o, a, c, v))
            said = {}
            for k in (1, 2, 3):
                yes = facts[o, k] if rng.uniform() > 0.1 else not facts[o, k]
                if a == "rand":
                    yes = rng.uniform() < 0.5
                said[k] = "yes" if yes else "no"
            for k in (1, 2, 3):
                if k == 2 and said[1] == "no":
                    continue  # the page hides a question gated by a "no"
                v = "cant_tell" if (a == "unsure" and rng.uniform() < 1 / 3) else said[k]
                answers.append((o, a, f"{task}.q{k}", v))
            times.append((a, o, rng.lognormal(np.log(10 if a == "rand" else 60), 0.3)))
    questions = pd.DataFrame(
        [(f"{o.split('/')[0]}.q{k}", o.split("/")[0], "f", "", "no" if k == 3 else "yes",
          [f"{o.split('/')[0]}.q1"] if k == 2 else []) for o in outputs for k in (1, 2, 3)],
        columns=["question_id", "checklist_id", "operator", "target", "pass_answer",
                 "depends_on"])
    return StudyData(
        human_scores=pd.DataFrame(scores, columns=["output_id", "annotator", "criterion",
                                                   "score"]),
        judge_scores=pd.DataFrame(columns=["output_id", "judge", "criterion", "score"]),
        human_answers=pd.DataFrame(answers, columns=["output_id", "annotator", "question_id",
                                                     "answer"]),
        judge_answers=pd.DataFrame(columns=["output_id", "judge", "question_id", "answer"]),
        questions=questions,
        outputs=pd.DataFrame({"output_id": outputs, "task_id": [o.split("/")[0] for o in
                                                                 outputs],
                              "generator": "g", "missing": 0,
                              "checklist_id": [o.split("/")[0] for o in outputs]}),
        criteria=pd.DataFrame({"name": CRITERIA, "label": CRITERIA, "min": 1.0, "max": 10.0,
                               "step": 1.0, "level": "interval", "rubric": "",
                               "position": [0, 1]}),
        judges=pd.DataFrame(columns=["name", "kind", "scale_min", "scale_max"]),
        times=pd.DataFrame(times, columns=["annotator", "output_id", "active_seconds"]))


def _decisions_by_hand(answers: pd.DataFrame) -> pd.DataFrame:
    """Gating written out (Cho et al. 2024): a "no" to q1 fails q2 (failing answer "no");
    cant_tell is no decision."""
    rows = []
    for (a, o), g in answers.groupby(["annotator", "output_id"]):
        got = dict(zip(g.question_id, g.answer, strict=True))
        task = o.split("/")[0]
        if got.get(f"{task}.q1") == "no":
            got[f"{task}.q2"] = "no"
        rows += [(a, o, q, v) for q, v in got.items() if v in ("yes", "no")]
    return pd.DataFrame(rows, columns=["annotator", "output_id", "question_id", "answer"])


@pytest.fixture(scope="module")
def simulated() -> tuple[StudyData, pd.DataFrame]:
    study = _simulated()
    return study, annotators_table(study).set_index("annotator")


def test_columns_in_the_projects_order(simulated) -> None:
    _, table = simulated
    assert list(table.reset_index().columns) == [
        "annotator", "n_items", "n_scores", "n_decisions", "r_sharpness", "n_sharpness",
        "r_adherence", "n_adherence", "n_checklist", "checklist_agreement", "checklist_kappa",
        "median_active_seconds", "cant_tell_share", "flags", "note",
        # issue #16 item 2, appended (never renamed): gold accuracy and speed flags
        "n_gold_items", "gold_answers", "gold_correct", "gold_accuracy", "gold_accuracy_low",
        "gold_accuracy_high", "n_fast_own", "n_fast_floor"]
    assert list(table.index) == sorted(table.index)


def test_the_bad_annotators_are_flagged_and_the_careful_ones_not(simulated) -> None:
    _, table = simulated
    flags = table["flags"].str.split("; ").map(set)
    assert flags["rand"] == {"low_correlation:sharpness", "low_correlation:adherence",
                             "low_kappa", "fast"}
    assert flags["flat"] == {"straight_lining:sharpness"}
    assert np.isnan(table.loc["flat", "r_sharpness"])  # constant: no r
    assert "r_sharpness: constant scores" in table.loc["flat", "note"]
    assert flags["unsure"] == {"many_cant_tell"}
    for a in GOOD:
        assert table.loc[a, "flags"] == "", a


def test_numbers_by_hand(simulated) -> None:
    study, table = simulated
    scores = study.human_scores
    for a in table.index:
        own = scores[scores.annotator == a]
        answered = set(own.output_id) | set(
            study.human_answers[study.human_answers.annotator == a].output_id)
        assert table.loc[a, "n_items"] == len(answered)
        assert table.loc[a, "n_scores"] == len(own)
        for c in CRITERIA:
            wide = scores[scores.criterion == c].pivot(index="output_id", columns="annotator",
                                                       values="score")
            rest = wide.drop(columns=a).mean(axis=1)  # skips NaN: the others who scored it
            both = wide[a].notna() & rest.notna()
            assert table.loc[a, f"n_{c}"] == both.sum()
            if wide.loc[both, a].nunique() > 1:
                r = stats.pearsonr(wide.loc[both, a], rest[both]).statistic
                assert table.loc[a, f"r_{c}"] == pytest.approx(r, rel=1e-12)
    decided = _decisions_by_hand(study.human_answers)
    for a in table.index:
        mine = decided[decided.annotator == a].set_index(["output_id", "question_id"]).answer
        assert table.loc[a, "n_decisions"] == len(mine)
        others = decided[decided.annotator != a]
        votes = others.groupby(["output_id", "question_id"]).answer.agg(
            lambda v: (v == "yes").sum() - (v == "no").sum())
        majority = votes[votes != 0].map(lambda s: "yes" if s > 0 else "no")
        common = mine.index.intersection(majority.index)
        assert table.loc[a, "n_checklist"] == len(common)
        assert table.loc[a, "checklist_agreement"] == pytest.approx(
            (mine[common] == majority[common]).mean(), rel=1e-12)
        assert table.loc[a, "checklist_kappa"] == pytest.approx(
            cohen_kappa_score(mine[common], majority[common]), rel=1e-9)
        seconds = study.times[study.times.annotator == a].active_seconds
        assert table.loc[a, "median_active_seconds"] == pytest.approx(np.median(seconds))
        own = study.human_answers[study.human_answers.annotator == a].answer
        assert table.loc[a, "cant_tell_share"] == pytest.approx((own == "cant_tell").mean())


def test_relative_correlation_rule_and_thresholds() -> None:
    """r above 0.3 is still flagged when it is more than 0.2 below the others' median; an
    r of exactly the cut is not flagged (strict "below")."""
    rng = np.random.default_rng(5)
    outputs = [f"o{i}" for i in range(80)]
    truth = rng.normal(5, 2, 80)
    rows = []
    for a, noise in (("p1", 0.3), ("p2", 0.3), ("p3", 0.3), ("loose", 3.5)):
        rows += [(o, a, "q", float(v)) for o, v in
                 zip(outputs, truth + rng.normal(0, noise, 80), strict=True)]
    study = StudyData(
        human_scores=pd.DataFrame(rows, columns=["output_id", "annotator", "criterion",
                                                 "score"]),
        judge_scores=pd.DataFrame(columns=["output_id", "judge", "criterion", "score"]),
        human_answers=pd.DataFrame(columns=["output_id", "annotator", "question_id",
                                            "answer"]),
        judge_answers=pd.DataFrame(columns=["output_id", "judge", "question_id", "answer"]),
        questions=pd.DataFrame(columns=["question_id", "checklist_id", "operator", "target",
                                        "pass_answer", "depends_on"]),
        outputs=pd.DataFrame({"output_id": outputs, "task_id": outputs, "generator": "g",
                              "missing": 0, "checklist_id": outputs}),
        criteria=pd.DataFrame({"name": ["q"], "label": ["q"], "min": 1.0, "max": 10.0,
                               "step": 1.0, "level": "interval", "rubric": "",
                               "position": [0]}),
        judges=pd.DataFrame(columns=["name", "kind", "scale_min", "scale_max"]))
    table = annotators_table(study).set_index("annotator")
    loose = table.loc["loose", "r_q"]
    others = table.drop("loose").r_q
    assert 0.3 < loose < others.median() - 0.2  # flagged only by the relative rule
    assert table.loc["loose", "flags"] == "low_correlation:q"
    assert (table.drop("loose")["flags"] == "").all()
    assert table.note.str.contains("no active time recorded").all()
    assert np.isnan(table.checklist_kappa).all() and (table.n_checklist == 0).all()


def test_demo_project(tmp_path, engine_demo) -> None:
    db = engine_demo
    with Store.open(db) as store:
        study = load_study(store)
    table = annotators_table(study)
    assert len(table) == study.human_scores.annotator.nunique()
    assert [c for c in table.columns if c.startswith("r_")] == [
        f"r_{c}" for c in study.criteria.name]
    assert table.n_checklist.gt(0).all() and table.checklist_kappa.notna().all()
