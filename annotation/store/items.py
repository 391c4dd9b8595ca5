"""What the workflows read of a project's items: outputs to annotate, tasks to verify, the
checklist and criteria an annotator sees, the sample, and flags.

Part of the storage layer (the workflows in :mod:`annotation.work` never speak SQL).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotation.store import append_audit, now_iso
from annotation.trace.nodes import ROOT, output_node
from annotation.vif.variants import output_variant

if TYPE_CHECKING:
    from annotation.store import Store


def annotatable_outputs(store: Store) -> pd.DataFrame:
    """``output_id, task_id, generator`` of outputs with an image, not missing, not a
    diagnostic-tree node (``meta.node`` other than the root) and not generated from a
    VIF-Bench text variant (``meta.text_variant``), in import order."""
    df = store.query_df(
        "SELECT output_id, task_id, generator, meta FROM outputs"
        " WHERE missing = 0 AND sha256 IS NOT NULL ORDER BY rowid")
    root = [output_node(m) == ROOT and output_variant(m) is None for m in df["meta"]]
    return df[root].drop(columns="meta").reset_index(drop=True)


def sample_ids(store: Store) -> set[str]:
    """The outputs of the drawn sample (empty: no sample)."""
    return {r[0] for r in store.conn.execute("SELECT output_id FROM sample")}


def replace_sample(store: Store, actor: str, chosen: Sequence[str],
                   detail: dict[str, Any]) -> None:
    """Make ``chosen`` the sample (empty: none), audited as ``workflow.sample``."""
    with store.transaction(user=actor, role="admin") as conn:
        conn.execute("DELETE FROM sample")
        conn.executemany("INSERT INTO sample (output_id) VALUES (?)", [(o,) for o in chosen])
        append_audit(conn, actor=actor, action="workflow.sample", subject=None, detail=detail)


def output_task(store: Store, output_id: str) -> tuple[str, str | None]:
    """``(task_id, sha256)`` of an output; KeyError when there is none."""
    row = store.conn.execute(
        "SELECT task_id, sha256 FROM outputs WHERE output_id = ?", [output_id]).fetchone()
    if row is None:
        raise KeyError(output_id)
    return row[0], row[1]


def checklist_questions(store: Store, checklist_id: str) -> list[tuple[Any, ...]]:
    """``(question_id, text, operator, target, depends_on list)`` of a checklist, in order
    (never the pass answers)."""
    return [(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in store.conn.execute(
        "SELECT question_id, text, operator, target, depends_on FROM questions"
        " WHERE checklist_id = ? ORDER BY position", [checklist_id])]


def criteria_rows(store: Store) -> list[tuple[Any, ...]]:
    """``(name, label, min, max, step, rubric)`` of every criterion, in order."""
    return list(store.conn.execute(
        "SELECT name, label, min, max, step, rubric FROM criteria ORDER BY position"))


def task_images(store: Store, task_id: str) -> list[dict[str, Any]]:
    """``role, kind, label, meta`` (parsed) of a task's images in input order."""
    return [{"role": r[0], "kind": r[1], "label": r[2], "meta": json.loads(r[3])}
            for r in store.conn.execute(
                "SELECT role, kind, label, meta FROM images WHERE task_id = ? ORDER BY idx",
                [task_id])]


def task_metas(store: Store) -> list[tuple[str, dict[str, Any]]]:
    """``(task_id, meta)`` of every task, in import order."""
    return [(t, json.loads(m)) for t, m in store.conn.execute(
        "SELECT task_id, meta FROM tasks ORDER BY rowid")]


def add_flag(store: Store, annotator: str, output_id: str, reason: str,
             note: str | None, question_id: str | None) -> int:
    """Record a flag (audited as ``item.flag``); return its id."""
    with store.transaction(user=annotator) as conn:
        cur = conn.execute(
            "INSERT INTO flags (annotator, output_id, reason, question_id, note, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [annotator, output_id, reason, question_id, note, now_iso()])
        append_audit(conn, actor=annotator, action="item.flag", subject=output_id,
                     detail={"reason": reason, "note": note, "question_id": question_id})
        return int(cur.lastrowid or 0)


def flags_df(store: Store) -> pd.DataFrame:
    """Every flag, newest first."""
    return store.query_df(
        "SELECT flag_id, created_at, annotator, output_id, reason, question_id, note"
        " FROM flags ORDER BY flag_id DESC")
