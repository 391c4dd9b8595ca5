"""The integer-code paths of the operator tables and the leaderboard (issue #18) give the
floats of the straightforward string groupbys they replace, on small random inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annotation.results.checklist import ENSEMBLE as MAJORITY_ENSEMBLE
from annotation.results.checklist import StudyDecisions
from annotation.results.leaderboard import measure_scores
from annotation.results.operators import (
    ALL,
    ENSEMBLE,
    TABLE2_AVG,
    OperatorScores,
    compensated_means,
    generator_table,
    group_means,
    operator_scores,
    study_operator_scores,
)
from annotation.stats.membership import positions


def reference_operator_scores(passed: pd.DataFrame, questions: pd.DataFrame,
                              who: str) -> pd.DataFrame:
    """The groupby on the joined strings (the code before issue #18)."""
    q = questions.set_index("question_id")[["operator", "target"]].fillna("")
    merged = passed.join(q, on="question_id")
    merged["operator"] = merged["operator"].replace("", "(none)")
    instances = merged.groupby([who, "output_id", "operator", "target"]).passed.mean()
    per_operator = instances.groupby(level=[0, 1, 2]).mean().rename("score").reset_index()
    case = instances.groupby(level=[0, 1]).mean().rename("score").reset_index()
    case["operator"] = ALL
    return pd.concat([per_operator, case[[who, "output_id", "operator", "score"]]],
                     ignore_index=True)


def _random_questions(rng: np.random.Generator, n_q: int = 40) -> pd.DataFrame:
    """Questions with operators and targets, some missing or empty."""
    return pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n_q)],
        "operator": rng.choice(["f", "g", "⊕", "C", None, ""], n_q),
        "target": rng.choice(["t1", "t2", "t3", None], n_q)})


@pytest.mark.parametrize("seed", range(6))
def test_operator_scores_are_the_string_groupby(seed):
    rng = np.random.default_rng(seed)
    questions = _random_questions(rng)
    n = 600
    values = rng.choice([0.0, 1.0, 0.5, 1 / 3] if seed % 2 else [0.0, 1.0], n)
    passed = pd.DataFrame({
        "judge": rng.choice(["b", "a", "c"], n),
        "output_id": rng.choice([f"o{i}" for i in range(30)], n),
        "question_id": rng.choice([*questions.question_id, "unknown"], n),
        "passed": values}).drop_duplicates(["judge", "output_id", "question_id"])
    got = operator_scores(passed, questions, "judge")
    pd.testing.assert_frame_equal(got, reference_operator_scores(passed, questions, "judge"),
                                  check_exact=True)


def _random_decisions(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    questions = _random_questions(rng)
    n = 900
    passed = pd.DataFrame({
        "judge": rng.choice(["jb", "ja", "jc", MAJORITY_ENSEMBLE], n),
        "output_id": rng.choice([f"o{i}" for i in range(30)], n),
        "question_id": rng.choice([*questions.question_id, "unknown"], n),
        "passed": rng.choice([0.0, 1.0, np.nan], n)}).drop_duplicates(
        ["judge", "output_id", "question_id"])
    return passed, questions


def _categorical(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """``frame`` with its text columns categorical, categories shuffled and one unused."""
    out = frame.copy()
    for column in ("judge", "annotator", "output_id", "question_id"):
        if column in out:
            values = [*pd.unique(out[column]), "zz unused"]
            out[column] = pd.Categorical(out[column], categories=list(rng.permutation(values)))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_study_operator_scores_are_the_string_groupbys_whatever_the_dtype(seed):
    """The judges' scores (and the mean ensemble's) of study_operator_scores are those of
    the string groupbys, on plain text columns of the decisions and on categorical ones
    (their categories in any order)."""
    passed, questions = _random_decisions(seed)
    human = passed[passed.judge == "ja"].rename(columns={"judge": "annotator"})
    human["annotator"] = np.where(np.arange(len(human)) % 2, "h1", "h2")

    class Study:  # the two frames study_operator_scores reads
        judges = pd.DataFrame({"name": ["ja", "jb", "jc"], "kind": ["vlm", "vlm", "human"]})

    study = Study()
    study.questions = questions  # type: ignore[attr-defined]
    single = passed[(passed.judge != MAJORITY_ENSEMBLE) & passed.passed.notna()]
    expected = reference_operator_scores(single, questions, "judge")
    vlm = expected[expected.judge.isin(["ja", "jb"])]
    grouped = vlm.groupby(["output_id", "operator"]).score.agg(["mean", "size"])
    grouped = grouped[grouped["size"] >= 2].reset_index()
    expected = pd.concat([expected, pd.DataFrame({
        "judge": ENSEMBLE, "output_id": grouped.output_id, "operator": grouped.operator,
        "score": grouped["mean"]})], ignore_index=True)
    expected_humans = reference_operator_scores(human[human.passed.notna()], questions,
                                                "annotator")
    rng = np.random.default_rng(seed)
    for judges, humans in ((passed, human), (_categorical(passed, rng), _categorical(human, rng))):
        decided = StudyDecisions(human=humans, judges=judges, majority=pd.DataFrame(),
                                 loo=pd.DataFrame())
        got = study_operator_scores(study, decided)  # type: ignore[arg-type]
        pd.testing.assert_frame_equal(got.humans, expected_humans, check_exact=True)
        assert all(isinstance(got.judges[c].dtype, pd.CategoricalDtype)
                   for c in ("judge", "output_id", "operator"))
        plain = got.judges.astype({c: "str" for c in ("judge", "output_id", "operator")})
        pd.testing.assert_frame_equal(plain, expected, check_exact=True)


def test_compensated_means_are_pandas_means_on_unsorted_ids():
    """pandas 3.1 sums a group with Kahan compensation only when the group ids are not
    sorted: compensated_means gives those floats on sorted ids too."""
    rng = np.random.default_rng(3)
    groups = np.sort(rng.integers(0, 40, 2000))
    groups = np.unique(groups, return_inverse=True)[1]
    values = rng.random(2000) / 3
    n = int(groups.max()) + 1
    reversed_ids = n - 1 - groups  # the same groups, the ids not sorted
    expected = pd.Series(values).groupby(reversed_ids).mean().to_numpy()[::-1]
    assert compensated_means(values, groups, n).tolist() == expected.tolist()


def test_table2_avg_does_not_depend_on_the_judges_names():
    """Avg. of trace_generators.csv averaged the rows of all scorers at once: pandas summed
    them with compensation where the judges' names sort after "human mean", without where
    they sort before, so the last digit of the same scores hung on a name."""
    scores = [0.5833333333333334, 0.41666666666666663, 1.0, 0.8333333333333333]  # C f g ⊕

    class Study:  # the frame generator_table reads
        outputs = pd.DataFrame({"output_id": ["o1"], "generator": ["m1"]})

    def avg(judge: str) -> float:
        rows = pd.DataFrame({"output_id": "o1", "operator": ["C", "f", "g", "⊕"],
                             "score": scores})
        shared = OperatorScores(humans=rows.assign(annotator="h")[
            ["annotator", "output_id", "operator", "score"]],
            judges=rows.assign(judge=judge)[["judge", "output_id", "operator", "score"]])
        table = generator_table(Study(), scores=shared)  # type: ignore[arg-type]
        return float(table.set_index("scorer").loc[judge, TABLE2_AVG])

    assert avg("a judge") == avg("the judge") == compensated_means(
        np.array(scores), np.zeros(4, dtype=np.intp), 1)[0]


def test_group_means_are_pandas_means():
    rng = np.random.default_rng(1)
    groups = np.sort(rng.integers(0, 50, 1000))
    groups = np.unique(groups, return_inverse=True)[1]
    for values in (rng.integers(0, 2, 1000).astype(float), rng.random(1000) / 3):
        expected = pd.Series(values).groupby(groups).mean().to_numpy()
        assert group_means(values, groups, groups.max() + 1).tolist() == expected.tolist()


@pytest.mark.parametrize("dtype", ["str", object])
def test_positions_are_get_indexer(dtype):
    values = pd.Index(["a", "b", None, "c", "é", "zz"], dtype=dtype)
    for candidates in (pd.Index(["a", "c", None, "é"], dtype=dtype), pd.Index([], dtype=dtype)):
        assert positions(values, candidates).tolist() == candidates.get_indexer(values).tolist()
    with pytest.raises(ValueError):
        positions(values, pd.Index(["a", "a"], dtype=dtype))


def test_measure_scores_are_the_per_criterion_groupbys():
    rng = np.random.default_rng(2)
    n = 500
    judge_scores = pd.DataFrame({
        "output_id": rng.choice([f"o{i}" for i in range(40)], n),
        "judge": rng.choice(["j2", "j1"], n),
        "criterion": rng.choice(["c1", "c2", "c3"], n),
        "score": rng.random(n) * 10})
    human_scores = judge_scores.rename(columns={"judge": "annotator"}).iloc[:200]

    class Study:  # the two frames and the criteria measure_scores reads
        criteria = pd.DataFrame({"name": ["c2", "c1", "c3"]})

    study = Study()
    study.judge_scores, study.human_scores = judge_scores, human_scores  # type: ignore[attr-defined]
    got = measure_scores(study, None)  # type: ignore[arg-type]
    assert [m for m, _, _ in got] == ["c2", "c1", "c3"]
    for measure, _, by_judge in got:
        sub = judge_scores[judge_scores.criterion == measure]
        expected = {str(j): g.groupby("output_id").score.mean() for j, g in sub.groupby("judge")}
        assert list(by_judge) == list(expected)
        for judge, series in expected.items():
            pd.testing.assert_series_equal(by_judge[judge], series, check_exact=True)
