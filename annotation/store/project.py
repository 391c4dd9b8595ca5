"""Project rows: reads of tasks, questions, outputs and judgments beyond the whole-table
frames of :class:`annotation.store.Store` (``tasks_df``, ``outputs_df``, ...).

Each function answers one question of a caller outside the store (the tree pages, the
results, the command line) with a record or a DataFrame, so that no SQL is written or
passed in elsewhere.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pandas as pd

from annotation.records import Task

if TYPE_CHECKING:
    from annotation.store import Store


def task(store: Store, task_id: str) -> Task | None:
    """The task ``task_id`` (``meta`` parsed; an empty meta is ``{}``), or None."""
    row = store.conn.execute(
        "SELECT task_id, instruction, checklist_id, meta FROM tasks WHERE task_id = ?",
        [task_id]).fetchone()
    if row is None:
        return None
    return Task(row[0], row[1], row[2], json.loads(row[3] or "{}"))


def task_questions_df(store: Store, task_id: str) -> pd.DataFrame:
    """The questions of the checklist of ``task_id``, in checklist order: question_id,
    text, operator, target, pass_answer."""
    return store.query_df(
        "SELECT q.question_id, q.text, q.operator, q.target, q.pass_answer"
        " FROM questions q JOIN tasks t ON t.checklist_id = q.checklist_id"
        " WHERE t.task_id = ? ORDER BY q.position", [task_id])


def checklist_targets(store: Store, checklist_id: str) -> list[tuple[str, str, str]]:
    """``(question_id, operator, target)`` of the checklist, by position then id."""
    return [tuple(r) for r in store.conn.execute(
        "SELECT question_id, operator, target FROM questions WHERE checklist_id = ?"
        " ORDER BY position, question_id", [checklist_id])]


def question_targets_df(store: Store) -> pd.DataFrame:
    """Every question's ``question_id, operator, target`` (stored order)."""
    return store.query_df("SELECT question_id, operator, target FROM questions")


def judge_checklist_answers_df(store: Store, judge: str) -> pd.DataFrame:
    """The checklist answers of ``judge`` with each question's pass answer: output_id,
    question_id, answer, pass_answer (answers that failed to parse are left out)."""
    return store.query_df(
        "SELECT j.output_id, j.question_id, j.answer, q.pass_answer FROM judgments j"
        " JOIN questions q ON q.question_id = j.question_id WHERE j.judge = ?"
        " AND j.answer IS NOT NULL", [judge])


def outputs_with_tasks_df(store: Store) -> pd.DataFrame:
    """Every output with its task's checklist and meta, in import order: output_id,
    task_id, generator, missing, checklist_id, meta (the task's, JSON text)."""
    return store.query_df(
        "SELECT o.output_id, o.task_id, o.generator, o.missing, t.checklist_id, t.meta"
        " FROM outputs o JOIN tasks t USING (task_id) ORDER BY o.rowid")


def judge_raw_df(store: Store, judge: str, output_id: str, about: str) -> pd.DataFrame:
    """The raw outputs of ``judge`` on ``output_id`` for checklist questions
    (``about="question_id"``) or criteria (``"criterion"``): about, raw, parse_status, in
    the order they were imported."""
    if about not in ("question_id", "criterion"):
        raise ValueError(f"about must be 'question_id' or 'criterion', not {about!r}")
    return store.query_df(
        f"SELECT {about} AS about, raw, parse_status FROM judgments"
        f" WHERE judge = ? AND output_id = ? AND {about} IS NOT NULL ORDER BY judgment_id",
        [judge, output_id])


def task_image_files(store: Store, task_id: str) -> list[dict[str, object]]:
    """The task's images in input order (``Image_<idx>``): idx, role, kind, label,
    sha256, format (of the stored file)."""
    return [dict(zip(("idx", "role", "kind", "label", "sha256", "format"), r, strict=True))
            for r in store.conn.execute(
                "SELECT i.idx, i.role, i.kind, i.label, i.sha256, f.format FROM images i"
                " JOIN files f ON f.sha256 = i.sha256 WHERE i.task_id = ? ORDER BY i.idx",
                [task_id])]
