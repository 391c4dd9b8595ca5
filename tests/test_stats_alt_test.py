"""annotation.stats.alt_test: the published synthetic example and a dict-based re-derivation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from annotation.stats import alt_test as alt_test_module
from annotation.stats.alt_test import alignment, alt_test, normalized_ranks

VECTORS = Path(__file__).resolve().parents[2] / "shared" / "stats" / "test_vectors.json"


@pytest.fixture(scope="module")
def vec() -> dict:
    if not VECTORS.exists():
        pytest.skip(f"{VECTORS} not present")
    return json.loads(VECTORS.read_text())["alt_test_synthetic"]


def _long(humans: dict[str, list]) -> pd.DataFrame:
    return pd.DataFrame(
        [(i, h, v) for h, values in humans.items() for i, v in enumerate(values)],
        columns=["item", "annotator", "value"],
    )


@pytest.mark.parametrize("epsilon", ["0.0", "0.1", "0.2"])
def test_synthetic_vector(vec: dict, epsilon: str) -> None:
    assert vec["scoring"] == "accuracy" and vec["fdr"] == "Benjamini-Yekutieli"
    expected = vec["expected_by_epsilon"][epsilon]
    res = alt_test(
        _long(vec["humans"]), pd.Series(vec["judge"]), epsilon=float(epsilon),
        q=vec["q_fdr"], scoring=vec["scoring"],
    )  # fmt: skip
    table = res.annotators
    assert list(table["annotator"]) == list(vec["humans"])
    assert table["tested"].all()
    np.testing.assert_allclose(table["p"], expected["p_raw"], rtol=1e-12, atol=0)
    if "p_by" in expected:
        np.testing.assert_allclose(table["p_by"], expected["p_by"], rtol=1e-12, atol=0)
    assert res.winning_rate == expected["winning_rate"]
    assert res.advantage_prob == pytest.approx(expected["advantage_prob"], abs=1e-15)
    assert res.passed == (expected["winning_rate"] >= 0.5)
    summary = res.summary.iloc[0]
    assert summary["n_annotators"] == 3 and summary["n_items"] == 40
    assert summary["epsilon"] == float(epsilon)


def test_judge_as_dataframe_and_column_names(vec: dict) -> None:
    humans = _long(vec["humans"]).rename(columns={"item": "image", "annotator": "who",
                                                  "value": "answer"})  # fmt: skip
    judge = pd.DataFrame({"image": range(40), "answer": vec["judge"]})
    res = alt_test(humans, judge, epsilon=0.2, item_col="image", annotator_col="who",
                   value_col="answer", judge_name="gpt")  # fmt: skip
    assert res.winning_rate == 1.0 and res.summary["judge"].iloc[0] == "gpt"


# ------------------------------------------------- independent dict-based re-derivation


def _reference(humans: dict, judge: dict, epsilon: float, q: float, score) -> tuple:
    """The procedure of Calderon et al. (2025, Sec. 3) written out over plain dicts."""
    annotators_of: dict = {}
    for h, labels in humans.items():
        for i in labels:
            annotators_of.setdefault(i, []).append(h)
    usable = {i for i, hs in annotators_of.items() if len(hs) >= 2 and i in judge}
    pvals, rhos = [], []
    for h, labels in humans.items():
        mine = [i for i in labels if i in usable]
        if len(mine) < 30:
            continue
        d, wj = [], []
        for i in mine:
            rest = [humans[o][i] for o in annotators_of[i] if o != h]
            s_h, s_j = score(labels[i], rest), score(judge[i], rest)
            wj.append(int(s_j >= s_h))
            d.append(int(s_h >= s_j) - int(s_j >= s_h))
        pvals.append(stats.ttest_1samp(d, epsilon, alternative="less").pvalue)
        rhos.append(np.mean(wj))
    m = len(pvals)
    order = np.argsort(pvals)
    cm = sum(1 / k for k in range(1, m + 1))
    last = -1
    for rank, idx in enumerate(order, start=1):
        if pvals[idx] <= rank / m * q / cm:
            last = rank
    return (max(last, 0) / m, float(np.mean(rhos)), pvals)


def _neg_rmse(pred, rest) -> float:
    return -float(np.sqrt(np.mean([(pred - r) ** 2 for r in rest])))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("epsilon", [0.1, 0.2])
def test_matches_reference_on_ratings_with_gaps(seed: int, epsilon: float) -> None:
    rng = np.random.default_rng(seed)
    n_items = 70
    truth = rng.integers(1, 6, n_items)
    humans: dict[str, dict[int, int]] = {}
    for a in range(5):
        labels = np.clip(truth + rng.integers(-1, 2, n_items), 1, 5)
        seen = rng.uniform(size=n_items) < (0.85 if a < 4 else 0.3)  # a4: too few items
        humans[f"a{a}"] = {int(i): int(labels[i]) for i in np.flatnonzero(seen)}
    judge_values = np.clip(truth + rng.integers(-1, 2, n_items), 1, 5)
    judge = {int(i): int(judge_values[i]) for i in range(n_items) if i != 3}  # one unjudged
    long = pd.DataFrame(
        [(i, h, v) for h, lab in humans.items() for i, v in lab.items()],
        columns=["item", "annotator", "value"],
    )
    res = alt_test(long, pd.Series(judge), epsilon=epsilon, scoring="neg_rmse")
    wr, rho, pvals = _reference(humans, judge, epsilon, 0.05, _neg_rmse)
    tested = res.annotators[res.annotators["tested"]]
    np.testing.assert_allclose(tested["p"], pvals, rtol=1e-12)
    assert res.winning_rate == wr
    assert res.advantage_prob == pytest.approx(rho, abs=1e-15)
    skipped = res.annotators[~res.annotators["tested"]]
    assert list(skipped["annotator"]) == ["a4"] and skipped["p"].isna().all()
    assert res.summary["n_skipped"].iloc[0] == 1 and res.summary["n_annotators"].iloc[0] == 4


def test_majority_judge_wins_and_contrarian_loses() -> None:
    rng = np.random.default_rng(7)
    n = 60
    truth = rng.integers(0, 2, n)
    humans = {f"h{a}": np.where(rng.uniform(size=n) < 0.8, truth, 1 - truth) for a in range(4)}
    long = _long({h: list(v) for h, v in humans.items()})
    votes = np.mean(list(humans.values()), axis=0)
    majority = pd.Series((votes >= 0.5).astype(int))
    good = alt_test(long, majority, epsilon=0.1)
    bad = alt_test(long, 1 - majority, epsilon=0.1)
    assert good.advantage_prob > 0.9 and good.passed
    assert bad.advantage_prob < 0.4 and bad.winning_rate == 0 and not bad.passed
    assert (good.annotators["rho_judge"] >= good.annotators["rho_human"]).all()


def test_neg_mae_and_custom_scoring() -> None:
    humans = pd.DataFrame(
        [(i, h, float((i * (k + 1)) % 5)) for i in range(35) for k, h in enumerate("abc")],
        columns=["item", "annotator", "value"],
    )
    judge = pd.Series([float(i % 5) for i in range(35)])
    mae = alt_test(humans, judge, scoring="neg_mae")
    custom = alt_test(humans, judge, scoring=lambda p, o: -float(np.mean(np.abs(p - o))))
    pd.testing.assert_frame_equal(mae.annotators, custom.annotators)
    assert custom.summary["scoring"].iloc[0] == "<lambda>"


def test_invalid_input() -> None:
    humans = pd.DataFrame({"item": [1, 1, 2], "annotator": ["a", "a", "b"], "value": [1, 0, 1]})
    with pytest.raises(ValueError, match="several values"):
        alt_test(humans, pd.Series({1: 1, 2: 0}))
    ok = humans.drop_duplicates(["item", "annotator"])
    with pytest.raises(ValueError, match="several values"):
        alt_test(ok, pd.Series([1, 0], index=[1, 1]))
    with pytest.raises(ValueError, match="scoring"):
        alt_test(ok, pd.Series({1: 1, 2: 0}), scoring="f1")
    with pytest.raises(KeyError):
        alt_test(ok.rename(columns={"value": "label"}), pd.Series({1: 1}))
    # nobody has 30 items: nothing tested, no verdict
    res = alt_test(ok, pd.Series({1: 1, 2: 0}))
    assert np.isnan(res.winning_rate) and not res.passed


# ------------------------------------- vectorized built-in scorings vs the per-item path


def _random_study(seed: int, values: str) -> tuple[pd.DataFrame, pd.Series]:
    """Annotators who skip items, missing values, an unjudged item and a NaN judge value."""
    rng = np.random.default_rng(seed)
    n_items, n_annotators = int(rng.integers(40, 90)), int(rng.integers(3, 11))
    items = [f"img{i}" for i in range(n_items)]

    def draw(n: int) -> np.ndarray:
        if values == "yes/no":
            return rng.choice(["yes", "no"], n)
        if values == "ratings":
            return rng.integers(1, 11, n)
        return rng.normal(size=n) * 2.5  # non-integer: the order of the sums matters

    frames = []
    for a in range(n_annotators):
        seen = rng.uniform(size=n_items) < rng.uniform(0.5, 1.0)
        frames.append(pd.DataFrame({"item": np.array(items)[seen], "annotator": f"a{a}",
                                    "value": draw(int(seen.sum()))}))  # fmt: skip
    humans = pd.concat(frames, ignore_index=True).sample(frac=1.0, random_state=seed)
    humans["value"] = humans["value"].astype(object)
    humans.loc[rng.uniform(size=len(humans)) < 0.1, "value"] = None
    if values != "yes/no":
        humans["value"] = humans["value"].astype(float)
    judge = pd.Series(draw(n_items), index=items).drop(items[3])
    if values != "yes/no":
        judge = judge.astype(float)
        judge.iloc[5] = np.nan
    return humans, judge


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    ("scoring", "values"),
    [("accuracy", "yes/no"), ("accuracy", "ratings"), ("neg_rmse", "ratings"),
     ("neg_rmse", "scores"), ("neg_mae", "ratings"), ("neg_mae", "scores")],
)  # fmt: skip
def test_fast_path_matches_callable_path(seed: int, scoring: str, values: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    humans, judge = _random_study(seed, values)
    per_item = alignment(scoring)
    kw = {"epsilon": 0.1, "min_items": 20}
    slow = alt_test(humans, judge, scoring=lambda p, o: per_item(p, o), **kw)

    def never(pred, others):
        raise AssertionError("the built-in scoring went item by item")

    monkeypatch.setitem(alt_test_module._SCORINGS, scoring, never)
    fast = alt_test(humans, judge, scoring=scoring, **kw)
    assert fast.annotators["tested"].sum() >= 2
    pd.testing.assert_frame_equal(fast.annotators, slow.annotators, check_exact=True)
    same = ["n_items", "n_annotators", "n_skipped", "winning_rate", "advantage_prob", "passed"]
    pd.testing.assert_frame_equal(fast.summary[same], slow.summary[same], check_exact=True)
    assert fast.summary["scoring"].iloc[0] == scoring


# ------------------------------------------------ cant_tell, None and NaN are no label


def test_cant_tell_none_and_nan_are_missing(vec: dict) -> None:
    """A "cant_tell" (any case), None or NaN is no label, for the humans and the judge: the
    test equals the test on the same data with those rows removed (before the fix, each
    "cant_tell" counted as a label that agreed with every other "cant_tell")."""
    long = _long(vec["humans"]).astype({"value": object})
    judge = pd.Series(vec["judge"], dtype=object)
    rng = np.random.default_rng(11)
    gaps = rng.choice(len(long), 8, replace=False)
    tokens = ["cant_tell", " Cant_Tell ", None, np.nan]
    for k, row in enumerate(gaps):
        long.loc[row, "value"] = tokens[k % len(tokens)]
    judge.iloc[[2, 5, 9]] = "cant_tell"
    res = alt_test(long, judge, epsilon=0.1)
    assert res.annotators["tested"].all()
    kept = long[~long["value"].isin(["cant_tell", " Cant_Tell "]) & long["value"].notna()]
    ref = alt_test(kept.astype({"value": int}), judge.drop([2, 5, 9]).astype(int), epsilon=0.1)
    pd.testing.assert_frame_equal(res.annotators, ref.annotators)
    pd.testing.assert_frame_equal(res.summary, ref.summary)
    # and against the dict-based re-derivation on the kept labels
    humans = {h: dict(zip(g["item"], g["value"], strict=True))
              for h, g in kept.astype({"value": int}).groupby("annotator")}
    judged = {i: v for i, v in enumerate(vec["judge"]) if i not in (2, 5, 9)}
    wr, rho, pvals = _reference(humans, judged, 0.1, 0.05,
                                lambda p, rest: float(np.mean([p == r for r in rest])))
    np.testing.assert_allclose(res.annotators["p"], pvals, rtol=1e-12)
    assert res.winning_rate == wr and res.advantage_prob == pytest.approx(rho, abs=1e-15)
    # a human's two rows for one item, one of them cant_tell, are one label (no error)
    twice = pd.concat([long, long.iloc[[0]].assign(value="cant_tell")])
    assert alt_test(twice.iloc[::-1], judge, epsilon=0.1).summary.equals(res.summary)


def test_cant_tell_rows_on_a_numeric_column_of_ratings() -> None:
    """Ratings stored as objects with "cant_tell" in between run on the numbers only."""
    rng = np.random.default_rng(3)
    rows = [(i, f"a{a}", float(rng.integers(1, 11))) for i in range(40) for a in range(3)]
    long = pd.DataFrame(rows, columns=["item", "annotator", "value"]).astype({"value": object})
    long.loc[[1, 7, 50], "value"] = "cant_tell"
    judge = pd.Series(rng.integers(1, 11, 40).astype(float))
    res = alt_test(long, judge, scoring="neg_rmse")
    ref = alt_test(long.drop([1, 7, 50]).astype({"value": float}), judge, scoring="neg_rmse")
    pd.testing.assert_frame_equal(res.annotators, ref.annotators)


# ------------------------------------------------------------------ normalized ranks


def test_normalized_ranks_by_hand() -> None:
    """Mid-ranks per rater over the items the test keeps, as (rank - 0.5) / n."""
    humans = pd.DataFrame({
        "item": [1, 2, 3, 4, 1, 2, 3, 4, 5, 5],
        "annotator": ["a"] * 4 + ["b"] * 4 + ["a", "c"],
        "value": [3, 7, 7, 1, 10, 2, 5, "cant_tell", 4, 6],
    })  # fmt: skip
    judge = pd.Series({1: 0.9, 2: 0.1, 3: 0.5, 4: 0.5, 5: 0.2, 6: 0.7})
    h, j = normalized_ranks(humans, judge)
    # item 4: b said cant_tell, a alone -> dropped; item 5: a and c; item 6: nobody
    assert sorted(j.index) == [1, 2, 3, 5]
    # judge over items 1, 2, 3, 5: values .9 .1 .5 .2 -> ranks 4 1 3 2
    assert j.to_dict() == {1: 3.5 / 4, 2: 0.5 / 4, 3: 2.5 / 4, 5: 1.5 / 4}
    a = h[h.annotator == "a"].set_index("item")["value"].to_dict()
    # a over items 1, 2, 3, 5: 3 7 7 4 -> ranks 1, 3.5, 3.5, 2
    assert a == {1: 0.5 / 4, 2: 3.0 / 4, 3: 3.0 / 4, 5: 1.5 / 4}
    b = h[h.annotator == "b"].set_index("item")["value"].to_dict()
    assert b == {1: 2.5 / 3, 2: 0.5 / 3, 3: 1.5 / 3}
    assert h[h.annotator == "c"]["value"].tolist() == [0.5]
