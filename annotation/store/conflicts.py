"""Conflict-verification rows (VIF-Bench): reads of the verdicts and pre-label readings
for the results (:mod:`annotation.results.conflicts`).

The verification workflow writes these rows (:mod:`annotation.work.verification`); this
module only hands them out as DataFrames.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from annotation.store import Store


def verdicts_df(store: Store, *, history: bool = False) -> pd.DataFrame:
    """Current verdicts of submitted tasks or, with ``history``, every verdict row ever
    written (with ``verdict_id, supersedes``): task_id, conflict, verifier, automatic,
    agrees, label, note, blind (0/1 or None), created_at; by task, conflict, verifier,
    time."""
    view = "conflict_verdicts" if history else "current_conflict_verdicts"
    extra = ", verdict_id, supersedes" if history else ""
    submitted = "" if history else (
        " WHERE EXISTS (SELECT 1 FROM queue_submissions s WHERE s.kind = 'verify'"
        " AND s.person = v.verifier AND s.unit = v.task_id)")
    return store.query_df(
        f"SELECT task_id, conflict, verifier, automatic, agrees, label, note, blind,"
        f" created_at{extra} FROM {view} v{submitted}"
        " ORDER BY task_id, conflict, verifier, created_at")


def readings_df(store: Store) -> pd.DataFrame:
    """Current pre-label readings: task_id, verifier, image_idx, attribute, value (JSON
    text), created_at; by task, verifier, image and attribute."""
    return store.query_df(
        "SELECT task_id, verifier, image_idx, attribute, value, created_at"
        " FROM current_prelabel_readings ORDER BY task_id, verifier, image_idx, attribute")
