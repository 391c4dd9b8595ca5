"""checklist.csv rows: judges vs human majority, annotators and expected answers."""

from __future__ import annotations

import json

import pytest

from annotation.formats.importers import import_path
from annotation.results.checklist import ENSEMBLE, checklist_table
from annotation.results.study import load_study
from annotation.store import Store
from tests.helpers.fixture_bundles import SHARED
from tests.helpers.gating_reference import gated_answers

TIIF = SHARED / "fixtures" / "tiif-bench"


@pytest.mark.slow
def test_demo_rows_against_hand_counts(tmp_path, engine_demo):
    db = engine_demo
    with Store.open(db) as store:
        study = load_study(store)
    table = checklist_table(study, by="generator")
    # hand count: gpt-5 vs the human majority, pooled over decisions, both gated (DSG)
    humans = gated_answers(study.human_answers, study.questions, "annotator")
    humans = humans[humans.answer != "cant_tell"]
    votes = humans.groupby(["output_id", "question_id"]).answer.agg(list)
    majority = {k: ("yes" if v.count("yes") > v.count("no") else "no")
                for k, v in votes.items() if v.count("yes") != v.count("no")}
    judge = gated_answers(study.judge_answers, study.questions, "judge")
    judge = judge[judge.judge == "gpt-5"]
    pairs = [(a, majority[(o, q)]) for o, q, a in zip(judge.output_id, judge.question_id,
                                                       judge.answer) if (o, q) in majority]
    agree = sum(a == h for a, h in pairs) / len(pairs)
    lenient = sum(a == "yes" and h == "no" for a, h in pairs)
    row = table[(table.judge == "gpt-5") & (table.group == "all")
                & (table.reference == "human majority")].iloc[0]
    assert row.n_decisions == len(pairs)
    assert row.agreement == pytest.approx(agree)
    assert row.judge_yes_human_no == lenient
    assert row.agreement_lo < row.agreement < row.agreement_hi
    assert {"annotator:ann1", "expected answer"} <= set(table.reference)
    assert ENSEMBLE in set(table.judge)
    assert any(g.startswith("generator=") for g in table.group)


@pytest.mark.slow
@pytest.mark.skipif(not TIIF.exists(), reason="../shared/fixtures/tiif-bench is not at hand")
def test_tiif_judges_per_generator_and_accuracy_against_expected(tmp_path, make_engine_db):
    with Store.open(make_engine_db("tiif.db")) as store:
        import_path(store, TIIF)
        study = load_study(store)
    table = checklist_table(study, by="generator")
    # no human answers in the fixture: the expected answers and the other judge
    assert set(table.reference) == {"expected answer", "judge:GPT-4o", "judge:QwenVL"}
    both = table[(table.judge == "GPT-4o") & (table.reference == "judge:QwenVL")]
    assert both[both.group == "all"].iloc[0].agreement == pytest.approx(9085 / 10864)
    assert len(both) == 5  # all + the four generators
    gpt = table[(table.judge == "GPT-4o") & (table.group == "all")].iloc[0]
    # independent count straight from the JSON files
    hits = total = 0
    root = TIIF / "eval-results" / "testmini_subset_eval_results"
    for path in (root / "testmini_subset_eval_results_GPT-4o").rglob("*.json"):
        data = json.loads(path.read_text())
        for pred, gold in zip(data["model_pred"], data["gt_answers"]):
            pred, gold = pred.strip().lower(), gold.strip().lower()
            if pred in ("yes", "no"):
                total += 1
                hits += pred == gold
    assert gpt.n_decisions == total
    assert gpt.agreement == pytest.approx(hits / total)
    per_generator = table[(table.judge == "GPT-4o") & table.group.str.startswith("generator=")]
    assert set(per_generator.group) == {f"generator={g}" for g in
                                        ("DALLE3", "GPT-4o", "Janus-Pro", "sd35")}


@pytest.mark.slow
@pytest.mark.skipif(not TIIF.exists(), reason="../shared/fixtures/tiif-bench is not at hand")
def test_tiif_mcnemar_between_the_two_judges(tmp_path, make_engine_db):
    from scipy.stats import binomtest

    from annotation.results.checklist import mcnemar_table

    with Store.open(make_engine_db("tiif.db")) as store:
        import_path(store, TIIF)
        study = load_study(store)
    row = mcnemar_table(study).iloc[0]
    assert (row.reference, row.judge_a, row.judge_b) == ("expected answer", "GPT-4o", "QwenVL")
    b, c = int(row.a_right_b_wrong), int(row.a_wrong_b_right)
    assert row.mcnemar_p == pytest.approx(binomtest(b, b + c, 0.5).pvalue)
    assert row.n_decisions == 10864  # decisions both judges answered (see the import test)


@pytest.mark.slow
def test_agreement_per_item_is_the_mean_of_per_output_shares(tmp_path, engine_demo):
    db = engine_demo
    with Store.open(db) as store:
        study = load_study(store)
    table = checklist_table(study)
    row = table[(table.judge == "gpt-5") & (table.reference == "annotator:ann1")].iloc[0]
    judge = gated_answers(study.judge_answers, study.questions, "judge")
    judge = judge[judge.judge == "gpt-5"]
    ann = gated_answers(study.human_answers, study.questions, "annotator")
    ann = ann[(ann.annotator == "ann1") & ann.answer.isin(["yes", "no"])]
    merged = judge.merge(ann, on=["output_id", "question_id"], suffixes=("_j", "_h"))
    per_output = (merged.answer_j == merged.answer_h).groupby(merged.output_id).mean()
    assert row.n_items == len(per_output)
    assert row.agreement_per_item == pytest.approx(per_output.mean())
    assert row.agreement == pytest.approx((merged.answer_j == merged.answer_h).mean())
