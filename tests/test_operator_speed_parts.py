"""The integer-code paths of the operator tables and the leaderboard (issue #18) give the
floats of the straightforward string groupbys they replace, on small random inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annotation.results.leaderboard import measure_scores
from annotation.results.operators import ALL, group_means, operator_scores
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


@pytest.mark.parametrize("seed", range(6))
def test_operator_scores_are_the_string_groupby(seed):
    rng = np.random.default_rng(seed)
    n_q = 40
    questions = pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n_q)],
        "operator": rng.choice(["f", "g", "⊕", "C", None, ""], n_q),
        "target": rng.choice(["t1", "t2", "t3", None], n_q)})
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
