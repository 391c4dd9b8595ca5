"""leniency.csv, checklist_comparisons.csv and the checklist alt-test find the decisions they
need by integer codes and positions, not by joins on string keys (issue #18: a join of the
judges' 4.8 million decisions with the human majority cost ~1 GiB at 100,000 outputs). They
give the tables the joins gave, re-derived here with plain pandas, and the same tables
whatever the dtype of the decisions' columns (text, or categorical)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from annotation.results.alt_tests import run_alt_tests
from annotation.results.checklist import (
    ENSEMBLE,
    EXPECTED,
    StudyDecisions,
    _column_codes,
    _positions_in,
    judge_rows,
    leniency_table,
    mcnemar_table,
    study_decisions,
)
from annotation.results.study import StudyData
from annotation.stats.agreement import mcnemar_exact
from tests.helpers.plain_pairs import plain_pairs


def _study(seed: int = 0) -> StudyData:
    """60 outputs x 3 questions (q2 gated by q1; q3's pass answer "no"; a question category
    in the meta), 3 annotators on the first 30 outputs, 3 VLM judges; judge c skips the
    last 10 outputs and one of its answers is to a question not in the study's list."""
    rng = np.random.default_rng(seed)
    outputs = [f"t{i:02d}/g{i % 2}" for i in range(60)]
    questions = []
    for o in outputs:
        task = o.split("/")[0]
        questions += [(f"{task}.q1", task, "f", "yes", [], "colour"),
                      (f"{task}.q2", task, "g", "yes", [f"{task}.q1"], "shape"),
                      (f"{task}.q3", task, "C", "no", [], None)]
    questions_df = pd.DataFrame(questions, columns=["question_id", "checklist_id", "operator",
                                                    "pass_answer", "depends_on",
                                                    "meta.category"]).assign(target="")
    answers = ["yes", "no", "cant_tell"]
    human = [(o, f"h{a}", f"{o.split('/')[0]}.q{k}", rng.choice(answers, p=[.55, .4, .05]))
             for a in range(3) for o in outputs[:30] for k in (1, 2, 3)]
    judged = [(o, j, f"{o.split('/')[0]}.q{k}", rng.choice(["yes", "no"]))
              for j in ("judge-a", "judge-b", "judge-c") for o in outputs for k in (1, 2, 3)
              if not (j == "judge-c" and o in outputs[50:])]
    judged.append((outputs[0], "judge-c", "t00.q9", "yes"))  # no such question
    return StudyData(
        human_scores=pd.DataFrame(columns=["output_id", "annotator", "criterion", "score"]),
        judge_scores=pd.DataFrame(columns=["output_id", "judge", "criterion", "score"]),
        human_answers=pd.DataFrame(human, columns=["output_id", "annotator", "question_id",
                                                   "answer"]),
        judge_answers=pd.DataFrame(judged, columns=["output_id", "judge", "question_id",
                                                    "answer"]),
        questions=questions_df,
        outputs=pd.DataFrame({"output_id": outputs, "task_id": [o.split("/")[0]
                                                                  for o in outputs],
                              "generator": [o.split("/")[1] for o in outputs], "missing": 0}),
        criteria=pd.DataFrame(columns=["name", "label", "min", "max", "step", "level",
                                       "rubric", "position"]),
        judges=pd.DataFrame({"name": ["judge-a", "judge-b", "judge-c"], "kind": "vlm",
                             "scale_min": None, "scale_max": None}))


def _categorical(d: StudyDecisions) -> StudyDecisions:
    """The decisions with every text column of the judges' as categorical (a smaller
    resident :class:`StudyDecisions` may hold them so)."""
    columns = ["judge", "output_id", "question_id", "answer", "key"]
    return dataclasses.replace(d, judges=d.judges.astype({c: "category" for c in columns}))


def _plain_leniency(d: StudyDecisions, study: StudyData) -> pd.DataFrame:
    """The ``all`` and ``operator`` rows of leniency.csv by the join on string keys."""
    joined = d.judges[d.judges.answer.isin(("yes", "no"))].join(
        d.majority.answer.rename("human"), on="key", how="inner")
    operator = joined.question_id.map(study.questions.set_index("question_id").operator)
    groups = [((judge, "all"), "all", part) for judge, part in joined.groupby("judge")]
    groups += [(key, "operator", part)
               for key, part in joined.groupby(["judge", operator.to_numpy()])]
    rows = []
    for (judge, value), facet, part in groups:
        jy, hy = part.answer == "yes", part.human == "yes"
        rows.append({"judge": judge, "facet": facet, "value": value,
                     "n_items": part.output_id.nunique(), "both_yes": int((jy & hy).sum()),
                     "judge_yes_human_no": int((jy & ~hy).sum()),
                     "judge_no_human_yes": int((~jy & hy).sum()),
                     "both_no": int((~jy & ~hy).sum())})
    return pd.DataFrame(rows)


def test_leniency_counts_are_those_of_the_join_on_keys():
    study = _study()
    d = study_decisions(study)
    table = leniency_table(study, decided=d)
    plain = _plain_leniency(d, study)
    got = table[table.facet.isin(["all", "operator"])][list(plain.columns)]
    assert len(got) == len(plain) > 0
    key = ["judge", "facet", "value"]
    pd.testing.assert_frame_equal(got.sort_values(key).reset_index(drop=True),
                                  plain.sort_values(key).reset_index(drop=True),
                                  check_dtype=False)
    assert set(table.judge) == {"judge-a", "judge-b", "judge-c", ENSEMBLE}


def _plain_mcnemar(d: StudyDecisions, study: StudyData) -> pd.DataFrame:
    """checklist_comparisons.csv's counts by ``Index.intersection`` on the string keys."""
    rows = []
    for reference, a, b, common, right_a, right_b in plain_pairs(d, study):
        exact = mcnemar_exact(list(right_a), list(right_b))
        rows.append({"reference": reference, "judge_a": a, "judge_b": b,
                     "n_decisions": exact.n, "a_right_b_wrong": exact.b,
                     "a_wrong_b_right": exact.c, "mcnemar_p": exact.p,
                     "n_items": len({k.split("\x1f", 1)[0] for k in common})})
    return pd.DataFrame(rows)


def test_mcnemar_counts_are_those_of_the_alignment_on_keys():
    study = _study()
    d = study_decisions(study)
    table = mcnemar_table(study, decided=d, n_boot=50)
    plain = _plain_mcnemar(d, study)
    assert len(table) == len(plain) == 6
    pd.testing.assert_frame_equal(table[list(plain.columns)], plain, check_dtype=False)
    # judge-c answered a question the study does not list: no expected answer for it
    expected = table[(table.reference == EXPECTED) & (table.judge_b == "judge-c")]
    assert (expected.n_decisions == 150).all()


@pytest.mark.parametrize("seed", [0, 1])
def test_tables_are_the_same_on_categorical_decisions(seed):
    study = _study(seed)
    d = study_decisions(study)
    cat = _categorical(d)
    pd.testing.assert_frame_equal(leniency_table(study, decided=cat, by="generator"),
                                  leniency_table(study, decided=d, by="generator"))
    pd.testing.assert_frame_equal(mcnemar_table(study, decided=cat, n_boot=50),
                                  mcnemar_table(study, decided=d, n_boot=50))
    for got, want in zip(dataclasses.astuple(run_alt_tests(study, decided=cat)),
                         dataclasses.astuple(run_alt_tests(study, decided=d)), strict=True):
        pd.testing.assert_frame_equal(got, want)


def test_alt_test_on_the_reports_decisions_is_its_own_run():
    study = _study()
    own = run_alt_tests(study)
    shared = run_alt_tests(study, decided=study_decisions(study))
    assert list(own.summary.judge) == ["judge-a", "judge-b", "judge-c"]
    pd.testing.assert_frame_equal(own.summary, shared.summary)
    pd.testing.assert_frame_equal(own.annotators, shared.annotators)


@pytest.mark.parametrize("dtype", ["str", object, "category"])
def test_judge_rows_are_a_sorted_groupby(dtype):
    judges = pd.Series(["b", "a", None, "b", "c", "a"], dtype=dtype)
    keep = np.array([True, True, True, True, False, True])
    rows = judge_rows(judges, keep)
    assert list(rows) == ["a", "b"]  # c: no kept row; a missing name: no judge
    assert [r.tolist() for r in rows.values()] == [[1, 5], [0, 3]]
    assert list(judge_rows(judges)) == ["a", "b", "c"]
    assert judge_rows(judges.iloc[:0]) == {}


def test_positions_in_is_a_lookup_of_the_last_occurrence():
    among = np.array([5, -1, 9, 5, 2, 7])
    codes = np.array([5, 2, 3, -1, 7, 9, 5])
    last = {c: i for i, c in enumerate(among) if c >= 0}
    assert _positions_in(codes, among).tolist() == [last.get(c, -1) for c in codes]
    assert _positions_in(codes, among[:0]).tolist() == [-1] * len(codes)


@pytest.mark.parametrize("dtype", ["str", object, "category"])
def test_column_codes_code_equal_values_alike(dtype):
    # two pyarrow chunks, as a column concatenated from chunks of rows
    values = pd.concat([pd.Series(["b", "a", "c"]), pd.Series(["a", "d", "b"])],
                       ignore_index=True).astype(dtype)
    codes, uniques = _column_codes(values)
    assert list(uniques[codes]) == list(values)
    assert len(set(codes.tolist())) == len(uniques) == 4
    codes, uniques = _column_codes(pd.Series(["a", None, "a"], dtype=dtype))
    assert codes[1] == -1 and codes[0] == codes[2] >= 0
