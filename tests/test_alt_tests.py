"""alt_test.csv and alt_test_annotators.csv (annotation.results.alt_tests): ranks for judges on
their own scale, checklist on gated decisions, one run for both tables.

Every expected number is re-derived here over plain dicts (the procedure of Calderon,
Reichart & Dror 2025, Sec. 3, written out), with scipy's t-test and statsmodels'
Benjamini-Yekutieli correction, never taken from the code under test.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from annotation.results.alt_tests import (
    ANNOTATOR_COLUMNS,
    CHECKLIST,
    COLUMNS,
    alt_test_annotators_table,
    alt_test_table,
    run_alt_tests,
)
from annotation.results.decisions import human_decisions, judge_decisions
from annotation.results.study import StudyData, load_study
from annotation.store import Store

# ------------------------------------------------------------------ helpers


def _study(human_scores: pd.DataFrame, judge_scores: pd.DataFrame, judges: pd.DataFrame, *,
           human_answers: pd.DataFrame | None = None,
           judge_answers: pd.DataFrame | None = None,
           questions: pd.DataFrame | None = None,
           outputs: list[str] | None = None) -> StudyData:
    crit = sorted(set(human_scores.criterion)) if len(human_scores) else []
    criteria = pd.DataFrame({"name": crit, "label": crit, "min": 1.0, "max": 10.0,
                             "step": 1.0, "level": "interval", "rubric": "",
                             "position": range(len(crit))})
    if outputs is None:
        outputs = sorted(set(human_scores.output_id) | set(judge_scores.output_id))
    out = pd.DataFrame({"output_id": outputs, "task_id": [o.split("/")[0] for o in outputs],
                        "generator": "g", "missing": 0,
                        "checklist_id": [o.split("/")[0] for o in outputs]})
    empty_answers = pd.DataFrame(columns=["output_id", "annotator", "question_id", "answer"])
    return StudyData(
        human_scores=human_scores, judge_scores=judge_scores,
        human_answers=empty_answers if human_answers is None else human_answers,
        judge_answers=(pd.DataFrame(columns=["output_id", "judge", "question_id", "answer"])
                       if judge_answers is None else judge_answers),
        questions=(pd.DataFrame(columns=["question_id", "checklist_id", "operator", "target",
                                         "pass_answer", "depends_on"])
                   if questions is None else questions),
        outputs=out, criteria=criteria, judges=judges)


def _reference(humans: dict, judge: dict, epsilon: float, score, q: float = 0.05) -> dict:
    """The alt-test over dicts: humans[annotator][item] = value, judge[item] = value."""
    annotators_of: dict = {}
    for h, labels in humans.items():
        for i in labels:
            annotators_of.setdefault(i, []).append(h)
    usable = {i for i, hs in annotators_of.items() if len(hs) >= 2 and i in judge}
    per = {}
    for h, labels in humans.items():
        mine = [i for i in labels if i in usable]
        if len(mine) < 30:
            per[h] = None
            continue
        wj, wh = [], []
        for i in mine:
            rest = [humans[o][i] for o in annotators_of[i] if o != h]
            s_h, s_j = score(labels[i], rest), score(judge[i], rest)
            wj.append(int(s_j >= s_h))
            wh.append(int(s_h >= s_j))
        d = np.array(wh) - np.array(wj)
        with warnings.catch_warnings():  # d constant: scipy warns (and returns NaN)
            warnings.simplefilter("ignore")
            p = stats.ttest_1samp(d, epsilon, alternative="less").pvalue
        per[h] = {"n": len(mine), "rho_judge": np.mean(wj), "rho_human": np.mean(wh),
                  "mean_d": d.mean(), "p": p}
    tested = [h for h in humans if per[h] is not None]
    p_by = multipletests([per[h]["p"] for h in tested], alpha=q, method="fdr_by")[1] \
        if tested else []
    for h, p in zip(tested, p_by, strict=True):
        per[h]["p_by"] = p
        per[h]["wins"] = p <= q
    wins = [per[h]["wins"] for h in tested]
    return {"n_items": len(usable), "per": per,
            "winning_rate": np.mean(wins) if tested else np.nan,
            "advantage_prob": np.mean([per[h]["rho_judge"] for h in tested])
            if tested else np.nan}


def _neg_rmse(pred, rest) -> float:
    return -float(np.sqrt(np.mean([(pred - r) ** 2 for r in rest])))


def _accuracy(pred, rest) -> float:
    return float(np.mean([pred == r for r in rest]))


def _hazen(values: dict) -> dict:
    """Normalized mid-ranks (rank - 0.5) / n of one rater, by scipy.stats.rankdata."""
    keys = list(values)
    ranks = stats.rankdata([values[k] for k in keys], method="average")
    return {k: (r - 0.5) / len(keys) for k, r in zip(keys, ranks, strict=True)}


def _ratings_study(seed: int, *, holes: float = 0.0) -> tuple[StudyData, dict, dict]:
    """4 annotators rate 60 outputs on 1-10; judge "metric" (0-1 scale) = 0.1 x the human
    mean, judge "vlm" (humans' scale) = the rounded truth plus noise."""
    rng = np.random.default_rng(seed)
    n = 60
    items = [f"t{i:02d}/g" for i in range(n)]
    truth = rng.uniform(2, 9, n)
    humans: dict[str, dict[str, float]] = {}
    for a in range(4):
        seen = rng.uniform(size=n) >= holes
        scores = np.clip(np.round(truth + rng.normal(0, 1.3, n)), 1, 10)
        humans[f"a{a}"] = {items[i]: float(scores[i]) for i in np.flatnonzero(seen)}
    hs = pd.DataFrame([(i, a, "quality", v) for a, d in humans.items() for i, v in d.items()],
                      columns=["output_id", "annotator", "criterion", "score"])
    mean = hs.groupby("output_id").score.mean()
    metric = {i: 0.1 * float(mean[i]) for i in mean.index}
    vlm_values = np.clip(np.round(truth + rng.normal(0, 1.0, n)), 1, 10)
    vlm = {items[i]: float(vlm_values[i]) for i in range(n)}
    js = pd.DataFrame([(i, j, "quality", v) for j, d in (("metric", metric), ("vlm", vlm))
                       for i, v in d.items()],
                      columns=["output_id", "judge", "criterion", "score"])
    judges = pd.DataFrame({"name": ["metric", "vlm"], "kind": ["metric", "vlm"],
                           "scale_min": [0.0, None], "scale_max": [1.0, None]})
    return _study(hs, js, judges), humans, {"metric": metric, "vlm": vlm}


# ------------------------------------------------------------ ranks across scales


@pytest.mark.parametrize("seed", [0, 1])
def test_judge_on_its_own_scale_runs_on_ranks_and_passes(seed: int) -> None:
    """A judge = 0.1 x the human mean on a 0-1 scale is a perfect (linear) map of the humans:
    on ranks it passes. The old table scored it by RMSE of 0-1 against 1-10 and failed it
    (re-derived here: winning rate 0)."""
    study, humans, judged = _ratings_study(seed)
    table = alt_test_table(study, epsilon=0.2)
    row = table[(table.judge == "metric") & (table.criterion == "quality")].iloc[0]
    assert row.scoring == "neg_rmse (ranks)"
    assert "own scale (0-1)" in row.note and "1-10" in row.note and "mid-ranks" in row.note

    ranked_humans = {a: _hazen(v) for a, v in humans.items()}  # all rated every output
    ref = _reference(ranked_humans, _hazen(judged["metric"]), 0.2, _neg_rmse)
    assert row.passed and ref["winning_rate"] >= 0.5
    assert row.winning_rate == ref["winning_rate"]
    assert row.advantage_prob == pytest.approx(ref["advantage_prob"], abs=1e-12)
    assert row.n_items == ref["n_items"] == 60 and row.n_annotators == 4

    raw = _reference(humans, judged["metric"], 0.2, _neg_rmse)  # what the old code did
    assert raw["winning_rate"] == 0 and raw["advantage_prob"] < 0.05

    per = alt_test_annotators_table(study, epsilon=0.2)
    per = per[(per.judge == "metric")].set_index("annotator")
    for a, expected in ref["per"].items():
        assert per.loc[a, "p"] == pytest.approx(expected["p"], rel=1e-12)
        assert per.loc[a, "p_by"] == pytest.approx(expected["p_by"], rel=1e-12)
        assert per.loc[a, "judge_win_rate"] == pytest.approx(expected["rho_judge"], abs=1e-12)
        assert per.loc[a, "human_win_rate"] == pytest.approx(expected["rho_human"], abs=1e-12)
        assert per.loc[a, "judge_wins"] == expected["wins"]
    assert (per.scoring == "neg_rmse (ranks)").all()


def test_same_scale_judge_keeps_raw_neg_rmse() -> None:
    study, humans, judged = _ratings_study(2)
    table = alt_test_table(study, epsilon=0.15)
    row = table[table.judge == "vlm"].iloc[0]
    assert row.scoring == "neg_rmse" and row.note == ""
    ref = _reference(humans, judged["vlm"], 0.15, _neg_rmse)
    assert row.winning_rate == ref["winning_rate"]
    assert row.advantage_prob == pytest.approx(ref["advantage_prob"], abs=1e-12)
    per = alt_test_annotators_table(study, epsilon=0.15)
    per = per[per.judge == "vlm"].set_index("annotator")
    for a, expected in ref["per"].items():
        assert per.loc[a, "p"] == pytest.approx(expected["p"], rel=1e-12)


def test_a_declared_scale_equal_to_the_criterions_is_the_humans_scale() -> None:
    study, humans, judged = _ratings_study(3)
    judges = study.judges.assign(scale_min=[1.0, 1.0], scale_max=[10.0, 10.0])
    study = StudyData(**{**study.__dict__, "judges": judges})
    row = alt_test_table(study).set_index("judge").loc["vlm"]
    assert row.scoring == "neg_rmse"


def test_ranks_when_annotators_rated_different_item_sets() -> None:
    """Each annotator ranked over their own items; the note says the sets differ."""
    study, humans, judged = _ratings_study(4, holes=0.15)
    row = alt_test_table(study).set_index("judge").loc["metric"]
    assert "different item sets" in row.note
    counts: dict = {}
    for d in humans.values():
        for i in d:
            counts[i] = counts.get(i, 0) + 1
    used = {i for i, c in counts.items() if c >= 2}
    ranked = {a: _hazen({i: v for i, v in d.items() if i in used}) for a, d in humans.items()}
    judge = _hazen({i: v for i, v in judged["metric"].items() if i in used})
    ref = _reference(ranked, judge, 0.2, _neg_rmse)
    assert row.n_items == ref["n_items"]
    assert row.winning_rate == ref["winning_rate"]
    assert row.advantage_prob == pytest.approx(ref["advantage_prob"], abs=1e-12)


# ---------------------------------------------------------- checklist on decisions


def _checklist_study(seed: int) -> tuple[StudyData, dict, dict]:
    """40 outputs x 3 questions: q1 (pass yes), q2 depends on q1 (pass yes), q3 (pass no).
    Humans never answer q2 after a "no" to q1 (the page hides it) and sometimes say
    cant_tell; the judge answers every question, q2 often "yes" after its own "no" to q1,
    and leaves the last four outputs unanswered."""
    rng = np.random.default_rng(seed)
    n = 40
    outputs = [f"t{i:02d}/g" for i in range(n)]
    qs = []
    for o in outputs:
        task = o.split("/")[0]
        qs += [(f"{task}.q1", task, "yes", []), (f"{task}.q2", task, "yes", [f"{task}.q1"]),
               (f"{task}.q3", task, "no", [])]
    questions = pd.DataFrame(qs, columns=["question_id", "checklist_id", "pass_answer",
                                          "depends_on"]).assign(operator="", target="")
    truth = {o: {1: rng.uniform() < 0.7, 2: rng.uniform() < 0.6, 3: rng.uniform() < 0.3}
             for o in outputs}
    flip = {"yes": "no", "no": "yes"}
    rows = []
    for a in range(4):
        for o in outputs:
            task = o.split("/")[0]
            ans = {k: ("yes" if v else "no") for k, v in truth[o].items()}
            ans = {k: flip[v] if rng.uniform() < 0.15 else v for k, v in ans.items()}
            for k in (1, 2, 3):
                if k == 2 and ans[1] == "no":
                    continue  # hidden by the page
                value = "cant_tell" if rng.uniform() < 0.05 else ans[k]
                rows.append((o, f"a{a}", f"{task}.q{k}", value))
    human_answers = pd.DataFrame(rows, columns=["output_id", "annotator", "question_id",
                                                "answer"])
    jrows = []
    for o in outputs[:-4]:
        task = o.split("/")[0]
        ans = {k: ("yes" if v else "no") for k, v in truth[o].items()}
        ans = {k: flip[v] if rng.uniform() < 0.1 else v for k, v in ans.items()}
        if ans[1] == "no" and rng.uniform() < 0.7:
            ans[2] = "yes"  # a stale or careless yes under a failed parent
        jrows += [(o, "judge", f"{task}.q{k}", ans[k]) for k in (1, 2, 3)]
    judge_answers = pd.DataFrame(jrows, columns=["output_id", "judge", "question_id",
                                                 "answer"])
    empty = pd.DataFrame(columns=["output_id", "annotator", "criterion", "score"])
    judges = pd.DataFrame({"name": ["judge"], "kind": ["vlm"], "scale_min": [None],
                           "scale_max": [None]})
    study = _study(empty, pd.DataFrame(columns=["output_id", "judge", "criterion", "score"]),
                   judges, human_answers=human_answers, judge_answers=judge_answers,
                   questions=questions, outputs=outputs)
    return study, _gate_by_hand(human_answers, "annotator"), _gate_by_hand(judge_answers,
                                                                           "judge")


def _gate_by_hand(answers: pd.DataFrame, who: str) -> dict:
    """The gating rule of Cho et al. (2024) written out: a "no" to q1 fails q2 (its failing
    answer is "no", its pass answer being "yes"); cant_tell is no label."""
    out: dict = {}
    for (name, o), g in answers.groupby([who, "output_id"]):
        got = {q.rsplit(".", 1)[1]: a for q, a in zip(g.question_id, g.answer, strict=True)}
        task = o.split("/")[0]
        if got.get("q1") == "no":
            got["q2"] = "no"
        for k, a in got.items():
            if a in ("yes", "no"):
                out.setdefault(name, {})[f"{o} / {task}.{k}"] = a
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_checklist_runs_on_gated_decisions(seed: int) -> None:
    study, humans, judges = _checklist_study(seed)
    table = alt_test_table(study, epsilon=0.2)
    row = table[table.criterion == CHECKLIST].iloc[0]
    ref = _reference(humans, judges["judge"], 0.2, _accuracy)
    assert row.scoring == "accuracy"
    assert row.n_items == ref["n_items"]
    assert row.winning_rate == ref["winning_rate"]
    assert row.advantage_prob == pytest.approx(ref["advantage_prob"], abs=1e-12)
    per = alt_test_annotators_table(study, epsilon=0.2).set_index("annotator")
    for a, expected in ref["per"].items():
        assert per.loc[a, "n_items"] == expected["n"]
        assert per.loc[a, "p"] == pytest.approx(expected["p"], rel=1e-12)
        assert per.loc[a, "p_by"] == pytest.approx(expected["p_by"], rel=1e-12)
        assert per.loc[a, "mean_d"] == pytest.approx(expected["mean_d"], abs=1e-12)
    # the old table read the raw answers: other items and other numbers on this study
    raw_h = study.human_answers[study.human_answers.answer.isin(("yes", "no"))]
    raw_humans: dict = {}
    for a, o, q, v in zip(raw_h.annotator, raw_h.output_id, raw_h.question_id, raw_h.answer,
                          strict=True):
        raw_humans.setdefault(a, {})[f"{o} / {q}"] = v
    ja = study.judge_answers
    raw_judge = dict(zip(ja.output_id + " / " + ja.question_id, ja.answer, strict=True))
    old = _reference(raw_humans, raw_judge, 0.2, _accuracy)
    assert old["n_items"] < row.n_items
    assert old["advantage_prob"] != pytest.approx(row.advantage_prob, abs=1e-6)


def test_checklist_unanswered_fail_scores_the_missing_outputs_as_failed() -> None:
    study, humans, judges = _checklist_study(5)
    judged = dict(judges["judge"])
    for o in [f"t{i:02d}/g" for i in range(36, 40)]:  # never answered: failing answers
        task = o.split("/")[0]
        judged.update({f"{o} / {task}.q1": "no", f"{o} / {task}.q2": "no",
                       f"{o} / {task}.q3": "yes"})
    omit = alt_test_table(study).set_index("criterion").loc[CHECKLIST]
    fail = alt_test_table(study, unanswered="fail").set_index("criterion").loc[CHECKLIST]
    ref = _reference(humans, judged, 0.2, _accuracy)
    assert fail.n_items == ref["n_items"] > omit.n_items
    assert fail.advantage_prob == pytest.approx(ref["advantage_prob"], abs=1e-12)
    assert "unanswered scored as failed" in fail.note


# ------------------------------------------------------------- shapes and one run


@pytest.mark.slow
def test_columns_rows_and_one_run_on_the_demo_project(tmp_path, engine_demo) -> None:
    db = engine_demo
    with Store.open(db) as store:
        study = load_study(store)
    run = run_alt_tests(study, epsilon=0.1)
    summary, per = run.summary, run.annotators
    assert list(summary.columns) == COLUMNS and list(per.columns) == ANNOTATOR_COLUMNS
    pd.testing.assert_frame_equal(summary, alt_test_table(study, epsilon=0.1))
    pd.testing.assert_frame_equal(per, alt_test_annotators_table(study, epsilon=0.1))
    criteria = [*study.criteria.name, CHECKLIST]
    assert list(pd.unique(summary.criterion)) == criteria
    for _, g in summary.groupby("criterion", sort=False):
        assert list(g.judge) == sorted(g.judge)
    # every summary row is the aggregate of its annotator rows
    for _, row in summary.iterrows():
        rows = per[(per.criterion == row.criterion) & (per.judge == row.judge)]
        assert row.n_annotators == rows.tested.sum()
        assert row.n_skipped == (~rows.tested).sum()
        if row.n_annotators:
            assert row.winning_rate == rows.judge_wins.sum() / rows.tested.sum()
            assert row.advantage_prob == pytest.approx(
                rows[rows.tested].judge_win_rate.mean(), abs=1e-15)
    # demo annotators rate under 30 outputs: the rating rows are not tested, and say so
    ratings = summary[summary.criterion != CHECKLIST]
    assert (ratings.n_annotators == 0).all() and ratings.note.str.contains("not tested").all()
    # the checklist row against the re-derivation on the decisions
    decided = human_decisions(study)
    humans: dict = {}
    for a, o, q, v in zip(decided.annotator, decided.output_id, decided.question_id,
                          decided.answer, strict=True):
        if v in ("yes", "no"):
            humans.setdefault(a, {})[f"{o} / {q}"] = v
    jd = judge_decisions(study)
    for judge, g in jd.groupby("judge"):
        judged = {f"{o} / {q}": v for o, q, v in zip(g.output_id, g.question_id, g.answer,
                                                      strict=True) if v in ("yes", "no")}
        ref = _reference(humans, judged, 0.1, _accuracy)
        row = summary[(summary.criterion == CHECKLIST) & (summary.judge == judge)].iloc[0]
        assert row.n_items == ref["n_items"]
        assert row.winning_rate == ref["winning_rate"]
        assert row.advantage_prob == pytest.approx(ref["advantage_prob"], abs=1e-12)


def test_empty_study_gives_empty_tables_with_columns() -> None:
    empty = pd.DataFrame(columns=["output_id", "annotator", "criterion", "score"])
    study = _study(empty, pd.DataFrame(columns=["output_id", "judge", "criterion", "score"]),
                   pd.DataFrame(columns=["name", "kind", "scale_min", "scale_max"]),
                   outputs=[])
    assert list(alt_test_table(study).columns) == COLUMNS
    assert list(alt_test_annotators_table(study).columns) == ANNOTATOR_COLUMNS
    assert alt_test_table(study).empty


@pytest.mark.slow
@pytest.mark.parametrize("unanswered", ["omit", "fail"])
def test_the_reports_decisions_give_the_same_run(tmp_path, engine_demo, unanswered) -> None:
    """The report hands its checklist decisions (with their majority ensemble) to the
    alt-test: the run is the one that scores them itself."""
    from annotation.results.checklist import study_decisions

    db = engine_demo
    with Store.open(db) as store:
        study = load_study(store)
    own = run_alt_tests(study, unanswered=unanswered)
    shared = run_alt_tests(study, unanswered=unanswered,
                           decided=study_decisions(study, unanswered))
    assert (own.summary.criterion == CHECKLIST).any()
    pd.testing.assert_frame_equal(own.summary, shared.summary)
    pd.testing.assert_frame_equal(own.annotators, shared.annotators)
