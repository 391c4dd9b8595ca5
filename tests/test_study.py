"""Study data read from the store: current answers only, parsed judgments only."""

from __future__ import annotations

from annotation.records import Annotation
from annotation.results.study import load_study
from annotation.store import Store
from annotation.trace.trees import node_output_ids


def test_load_study_on_the_demo(tmp_path, engine_demo):
    db = engine_demo
    with Store.open(db) as store:
        counts = store.counts()
        study = load_study(store)
        judgments = store.judgments_df()
        nodes = node_output_ids(store)
        # a changed answer: only the new value is in the study
        row = study.human_scores.iloc[0]
        store.record_annotation(Annotation(row.annotator, row.output_id,
                                           criterion=row.criterion, score=1))
        after = load_study(store)
    assert len(study.human_scores) + len(study.human_answers) == counts["current_annotations"]
    unparsed = (judgments.parse_status == "unparsed").sum()
    assert unparsed >= 1
    # the judge's answers on diagnostic-tree nodes (demo-10) are not study items
    on_nodes = judgments.output_id.isin(nodes)
    assert on_nodes.sum() > 0
    assert len(study.judge_scores) + len(study.judge_answers) == (
        len(judgments) - on_nodes.sum() - unparsed)
    assert study.judge_scores.score.notna().all()
    assert set(study.outputs.generator) == {"nano-banana", "gpt-image-1", "qwen-image-edit"}
    assert isinstance(study.questions.depends_on[0], list)
    changed = after.human_scores[(after.human_scores.annotator == row.annotator)
                                 & (after.human_scores.output_id == row.output_id)
                                 & (after.human_scores.criterion == row.criterion)]
    assert list(changed.score) == [1]
    assert len(after.human_scores) == len(study.human_scores)


def test_judge_frames_equal_the_filtered_judgments(tmp_path, engine_demo):
    """The study reads scores and answers apart (issue #18: half the cells of one read of
    every judgment); the frames are what a plain filter of every judgment gives: parsed,
    not on tree nodes or VIF variants, the same columns, order, values and dtypes."""
    import pandas as pd

    db = engine_demo
    with Store.open(db) as store:
        study = load_study(store)
        every = store.judgments_df()
        excluded = node_output_ids(store) | set(study.variant_outputs.output_id)
    parsed = every[every.parse_status == "ok"]
    assert (every.parse_status != "ok").any() and every.output_id.isin(excluded).any()
    for got, column, value, variants in (
            (study.judge_scores, "criterion", "score", study.variant_scores),
            (study.judge_answers, "question_id", "answer", study.variant_answers)):
        rows = parsed[parsed[column].notna()]
        cols = ["output_id", "judge", column, value]
        want = rows.loc[~rows.output_id.isin(excluded), cols].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want)
        want_variants = rows.loc[rows.output_id.isin(study.variant_outputs.output_id), cols]
        pd.testing.assert_frame_equal(variants, want_variants.reset_index(drop=True))
    assert study.judge_scores.score.dtype == "float64"
