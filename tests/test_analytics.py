"""annotation.results.analytics on the demo project: the seed layouts hold exactly the report's
numbers, the confusion table adds up, the drill-down is sorted and agrees with the tables."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from annotation.results import analytics
from annotation.results.ratings import ENSEMBLE, HUMAN_LOO
from annotation.results.report import ReportOptions, build_report
from annotation.results.study import load_study
from annotation.stats.agreement import majority, normalize_label
from annotation.store import Store
from annotation.work.workflow import give_answer
from tests.helpers.gating_reference import gated_answers
from tests.helpers.module_demo import ENGINES, module_demo


@pytest.fixture(scope="module", params=ENGINES)
def demo(request, tmp_path_factory):
    db = module_demo(request, tmp_path_factory, "analytics")
    store = Store.open(db)
    study = load_study(store)
    tables = build_report(study, ReportOptions(n_boot=50, seed=3, by="generator"))
    yield store, study, tables
    store.close()


def _rating(ratings, judge, criterion, reference, group="all"):
    row = ratings[(ratings.judge == judge) & (ratings.criterion == criterion)
                  & (ratings.reference == reference) & (ratings.group == group)]
    assert len(row) == 1, (judge, criterion, reference, group)
    return row.iloc[0]


# ------------------------------------------------------------------------------ vif_table
@pytest.mark.slow
def test_vif_table_holds_the_ratings_numbers(demo):
    _, study, tables = demo
    ratings, vif = tables["ratings"], tables["vif_table"]
    criteria = [*study.criteria.name, "average"]
    judges = [*sorted(study.judges.name), ENSEMBLE]
    block = vif[(vif.group == "all") & (vif.reference == analytics.LOO_MEAN)]
    assert list(block.judge)[:len(judges)] == judges
    assert set(block.judge[len(judges):]) == {HUMAN_LOO}
    assert list(vif[(vif.group == "all") & (vif.reference == analytics.HUMAN_MEAN)].judge) \
        == judges
    for _, row in vif.iterrows():
        for criterion in criteria:
            source = ratings[(ratings.judge == row.judge) & (ratings.criterion == criterion)
                             & (ratings.reference == row.reference)
                             & (ratings.group == row.group)
                             & (ratings.paired_judge.fillna("") == row.paired_judge)]
            if source.empty:
                assert pd.isna(row[f"{criterion}_plcc"])
                continue
            for stat in ("plcc", "plcc_lo", "plcc_hi", "srcc", "srcc_lo", "srcc_hi"):
                expected, got = source.iloc[0][stat], row[f"{criterion}_{stat}"]
                assert (pd.isna(expected) and pd.isna(got)) or expected == got


@pytest.mark.slow
def test_vif_view_reference_group_labels_and_intervals(demo):
    _, _, tables = demo
    ratings, vif = tables["ratings"], tables["vif_table"]
    loo = analytics.vif_view(vif, reference=analytics.LOO_MEAN)
    mean = analytics.vif_view(vif)
    gpt = loo.set_index("judge").loc["gpt-5"]
    assert gpt["visual_quality PLCC"] == _rating(ratings, "gpt-5", "visual_quality",
                                                 analytics.LOO_MEAN).plcc
    assert gpt["visual_quality PLCC"] != mean.set_index("judge").loc["gpt-5",
                                                                    "visual_quality PLCC"]
    # the human rows are the same leave-one-out baselines whatever the judges' reference
    humans = [j for j in loo.judge if j.startswith(analytics.HUMAN_ROW)]
    assert humans[0] == analytics.HUMAN_ROW
    pd.testing.assert_frame_equal(loo[loo.judge.isin(humans)].reset_index(drop=True),
                                  mean[mean.judge.isin(humans)].reset_index(drop=True))

    group = "generator=nano-banana"
    grouped = analytics.vif_view(vif, group=group).set_index("judge")
    assert grouped.loc["qwen3-vl", "average SRCC"] == _rating(
        ratings, "qwen3-vl", "average", analytics.HUMAN_MEAN, group).srcc

    ci = analytics.vif_view(vif, ci=True, labels={"average": "Average"})
    row = ci.set_index("judge").loc["gemini-2.5-pro"]
    source = _rating(ratings, "gemini-2.5-pro", "average", analytics.HUMAN_MEAN)
    assert (row["Average SRCC lo"], row["Average SRCC"], row["Average SRCC hi"]) == (
        source.srcc_lo, source.srcc, source.srcc_hi)
    text = analytics.ci_text(ci).set_index("judge").loc["gemini-2.5-pro", "Average SRCC"]
    assert text == f"{source.srcc:.3f} [{source.srcc_lo:.3f}, {source.srcc_hi:.3f}]"
    assert "Average SRCC lo" not in analytics.ci_text(ci).columns

    shown = analytics.two_level(mean)
    assert shown.columns[0] == ("", "judge")
    assert shown.columns[1] == ("text_instruction_following", "PLCC")


def test_abbreviate_fits_long_labels_only():
    assert analytics.abbreviate("Text Instruction Following") == "Text Instr. Follow."
    assert analytics.abbreviate("Scene Coherence") == "Scene Coherence"
    assert len(analytics.abbreviate("Reference Consistency")) <= 18


# ------------------------------------------------------------------------------ trace_table
@pytest.mark.slow
def test_trace_view_shows_the_trace_table(demo):
    _, study, tables = demo
    trace, checklist = tables["trace_table"], tables["checklist"]
    shown = analytics.trace_view(trace, unit="case").set_index("judge")
    judges = [*sorted(study.judges.name), "ensemble (mean of VLM judges)"]
    assert list(shown.index) == [*judges, analytics.HUMAN_ROW]
    for judge in study.judges.name:
        source = trace[(trace.judge == judge) & (trace.unit == "case")].iloc[0]
        agree = checklist[(checklist.judge == judge) & (checklist.group == "all")
                          & (checklist.reference == "human majority")].iloc[0]
        row = shown.loc[judge]
        assert (row.Pearson, row.Spearman, row.MAE) == (source.pearson, source.spearman,
                                                        source.mae)
        assert (row.Agreement, row.n_decisions) == (agree.agreement, agree.n_decisions)
        assert (row["Agreement lo"], row["Agreement hi"]) == (agree.agreement_lo,
                                                              agree.agreement_hi)
    # the ensemble averages the judges' scores: it has correlations (NaN before)
    assert np.isfinite(shown.loc["ensemble (mean of VLM judges)", "Pearson"])
    assert shown.loc["ensemble (mean of VLM judges)", "Agreement"] > 0


# ------------------------------------------------------------------------------ confusion
@pytest.mark.slow
def test_confusion_cells_add_up_to_the_decisions(demo):
    _, study, tables = demo
    checklist = tables["checklist"]
    assert len(checklist) > 10
    for _, row in checklist.iterrows():
        cells = analytics.confusion(row)
        assert cells.shape == (2, 2)
        assert int(cells.to_numpy().sum()) == row.n_decisions
        assert (cells.to_numpy() >= 0).all()
        a, b = cells.iloc[0]
        c, d = cells.iloc[1]
        assert b == row.judge_yes_human_no and c == row.judge_no_human_yes
        assert (a + d) / row.n_decisions == pytest.approx(row.agreement)
        if a + c:
            assert a / (a + c) == pytest.approx(row.yes_recall)
    # the diagonal recounted from the gated answers: gpt-5 against the human majority
    humans = gated_answers(study.human_answers, study.questions, "annotator")
    answers = humans.assign(item=humans.output_id + "/" + humans.question_id)
    vote = majority(answers, item_col="item", value_col="answer").dropna()
    judge = gated_answers(study.judge_answers, study.questions, "judge")
    judge = judge[judge.judge == "gpt-5"]
    said = pd.Series(judge.answer.map(normalize_label).to_numpy(),
                     index=judge.output_id + "/" + judge.question_id)
    common = said.index.intersection(vote.index)
    both_yes = int(((said[common] == "yes") & (vote[common] == "yes")).sum())
    row = checklist[(checklist.judge == "gpt-5") & (checklist.group == "all")
                    & (checklist.reference == "human majority")].iloc[0]
    assert analytics.confusion(row).iloc[0, 0] == both_yes


# ------------------------------------------------------------------------------ drill-down
@pytest.mark.slow
def test_rating_disagreements_sorted_by_distance_from_the_humans(demo):
    _, study, _ = demo
    table = analytics.disagreements(study, "qwen3-vl", "visual_quality", limit=None)
    gaps = table.gap.abs().to_numpy()
    assert len(table) > 5 and (np.diff(gaps) <= 0).all()
    assert gaps[0] > 0
    scores = study.judge_scores[(study.judge_scores.judge == "qwen3-vl")
                                & (study.judge_scores.criterion == "visual_quality")]
    humans = study.human_scores[study.human_scores.criterion == "visual_quality"]
    top = table.iloc[0]
    assert top.judge == scores.set_index("output_id").score[top.output_id]
    mine = humans[humans.output_id == top.output_id]
    assert top.human_mean == pytest.approx(mine.score.mean())
    assert top.gap == pytest.approx(top.judge - top.human_mean)
    for annotator, score in zip(mine.annotator, mine.score, strict=True):
        assert f"{annotator}: {score:g}" in top.humans
    outputs = study.outputs.set_index("output_id")
    assert (top.task_id, top.generator) == tuple(outputs.loc[top.output_id,
                                                             ["task_id", "generator"]])
    assert len(analytics.disagreements(study, "qwen3-vl", "visual_quality", limit=3)) == 3
    average = analytics.disagreements(study, "gpt-5", "average", limit=None)
    assert (np.diff(average.gap.abs().to_numpy()) <= 0).all()


@pytest.mark.slow
def test_checklist_disagreements_add_up_to_the_checklist_table(demo):
    _, study, tables = demo
    checklist = tables["checklist"]
    for judge in study.judges.name:
        table = analytics.disagreements(study, judge, analytics.CHECKLIST, limit=None)
        counts = table.n_disagreements.to_numpy()
        assert (np.diff(counts) <= 0).all()
        row = checklist[(checklist.judge == judge) & (checklist.group == "all")
                        & (checklist.reference == "human majority")].iloc[0]
        assert table.n_disagreements.sum() == row.judge_yes_human_no + row.judge_no_human_yes
        assert table.n_decisions.sum() == row.n_decisions
    table = analytics.disagreements(study, "qwen3-vl", analytics.CHECKLIST, limit=2)
    assert len(table) == 2 and table.n_disagreements.iloc[0] >= 1
    top = table.iloc[0]
    side = analytics.item_answers(study, "qwen3-vl", top.output_id, analytics.CHECKLIST)
    assert int(side.disagree.sum()) == top.n_disagreements
    for short in [part.split(":")[0] for part in top.judge.split(" · ")]:
        assert side.question_id.str.endswith("." + short).any()


@pytest.mark.slow
def test_item_answers_and_raw_text(demo):
    store, study, _ = demo
    output_id = study.judge_scores.output_id.iloc[0]
    side = analytics.item_answers(study, "gpt-5", output_id, "scene_coherence")
    row = side.set_index("criterion").loc["scene_coherence"]
    scores = study.judge_scores
    assert row.judge == scores[(scores.judge == "gpt-5") & (scores.output_id == output_id)
                               & (scores.criterion == "scene_coherence")].score.iloc[0]
    humans = study.human_scores[(study.human_scores.output_id == output_id)
                                & (study.human_scores.criterion == "scene_coherence")]
    for annotator, score in zip(humans.annotator, humans.score, strict=True):
        assert row[annotator] == score
    assert row["human mean"] == pytest.approx(humans.score.mean())
    assert list(side.criterion)[-1] == "average"

    judgments = store.judgments_df()
    mine = judgments[(judgments.judge == "gpt-5") & (judgments.output_id == output_id)]
    texts = analytics.judge_texts(store, "gpt-5", output_id, "scene_coherence")
    assert set(texts.raw) == set(mine[mine.criterion.notna()].raw)
    assert "scene_coherence" in ", ".join(texts.about)
    per_question = analytics.judge_texts(store, "gpt-5", output_id, analytics.CHECKLIST)
    expected = mine[mine.question_id.notna()]
    assert list(per_question.about) == list(expected.question_id)
    assert list(per_question.raw) == list(expected.raw)


# ------------------------------------------------------------------------------ helpers
def test_csv_bytes_neutralizes_formulas():
    table = pd.DataFrame({"a": ["=1+1", "-x", "ok", "@f"], "b": [1.5, 2.0, 3.0, 4.0]})
    back = pd.read_csv(io.BytesIO(analytics.csv_bytes(table)))
    assert list(back.a) == ["'=1+1", "'-x", "ok", "'@f"]
    assert list(back.b) == [1.5, 2.0, 3.0, 4.0]


def test_data_stamp_changes_with_an_answer(tmp_path, engine_demo):
    db = engine_demo
    with Store.open(db) as store:
        before = analytics.data_stamp(store)
        assert analytics.data_stamp(store) == before
        output_id = store.outputs_df().output_id.iloc[0]
        give_answer(store, "ann1", output_id, criterion="visual_quality", score=1.0)
        assert analytics.data_stamp(store) != before
        study = load_study(store)
    assert analytics.group_options(study)[0] == "generator"
    options = analytics.group_options(study)[1:]
    assert all(c.startswith(("meta.", "task.", "conflict.")) for c in options)
    assert {"meta.conflicts.orientation_conflict", "task.n_references", "task.vi_type",
            "conflict.any"} <= set(options)
    assert not any(c.endswith(".source") for c in options)
