"""Diagnostic-tree review rows (TRACE-Bench): reads of ``tree_reviews`` and
``tree_submissions`` for the results (:mod:`annotation.results.trees`).

The review workflow writes these rows (:mod:`annotation.work.tree_review`); this module
only hands them out as DataFrames.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from annotation.store import Store


def current_reviews_df(store: Store) -> pd.DataFrame:
    """Every current tree review with its root output's task and generator: review_id,
    reviewer, output_id, task_id, generator, instance, origin, reason, box (JSON text or
    None), note, created_at, submitted (1 when the reviewer has submitted that tree), by
    output, instance and reviewer."""
    return store.query_df(
        "SELECT r.review_id, r.reviewer, r.output_id, o.task_id, o.generator, r.instance,"
        " r.origin, r.reason, r.box, r.note, r.created_at,"
        " EXISTS (SELECT 1 FROM queue_submissions s WHERE s.kind = 'trees'"
        "   AND s.person = r.reviewer AND s.unit = r.output_id) AS submitted"
        " FROM current_tree_reviews r JOIN outputs o ON o.output_id = r.output_id"
        " ORDER BY r.output_id, r.instance, r.reviewer")


def submissions_by_reviewer_df(store: Store) -> pd.DataFrame:
    """Per reviewer: ``submitted``, the number of trees submitted."""
    return store.query_df(
        "SELECT person AS reviewer, count(*) AS submitted FROM queue_submissions"
        " WHERE kind = 'trees' GROUP BY 1")


def reviews_by_reviewer_df(store: Store, *, persistent: str, not_a_failure: str
                           ) -> pd.DataFrame:
    """Per reviewer, over the current reviews: started (trees), reviews, persistent and
    not_a_failure (reviews whose origin is the value given), with_box, with_note,
    last_review (the latest ``created_at``)."""
    return store.query_df(
        "SELECT reviewer, count(DISTINCT output_id) AS started, count(*) AS reviews,"
        " SUM(origin = ?) AS persistent, SUM(origin = ?) AS not_a_failure,"
        " SUM(box IS NOT NULL) AS with_box, SUM(note IS NOT NULL) AS with_note,"
        " MAX(created_at) AS last_review FROM current_tree_reviews GROUP BY 1",
        [persistent, not_a_failure])


def review_data_counts(store: Store) -> tuple[int, ...]:
    """Rows of ``imports, judgments, outputs, tree_reviews`` (history included) and the
    tree-review submissions: what changes whenever the tree results may."""
    counts = [int(store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
              for table in ("imports", "judgments", "outputs", "tree_reviews")]
    counts.append(int(store.conn.execute(
        "SELECT count(*) FROM queue_submissions WHERE kind = 'trees'").fetchone()[0]))
    return tuple(counts)
