"""Study data read from the store: current answers only, parsed judgments only."""

from __future__ import annotations

from annotation.records import Annotation
from annotation.results.study import load_study
from annotation.store import Store
from annotation.trace.trees import node_output_ids


def test_load_study_on_the_demo(tmp_path, make_demo_db):
    db = tmp_path / "demo.db"
    make_demo_db(db)
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
