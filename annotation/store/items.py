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
from annotation.store.queue import settings_key
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
    root = pd.Series([output_node(m) == ROOT and output_variant(m) is None
                      for m in df["meta"]], index=df.index, dtype=bool)
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
        conn.execute("DELETE FROM project WHERE key = ?", [VALIDATION_KEY])
        append_audit(conn, actor=actor, action="workflow.sample", subject=None, detail=detail)


VALIDATION_KEY = "validation_set"
"""The project key holding the question-level validation set (JSON: detail and pairs)."""


def checklist_candidates(store: Store) -> pd.DataFrame:
    """``output_id, question_id, pass_answer`` of every checklist question of every
    annotatable output (:func:`annotatable_outputs`), in import and checklist order."""
    outputs = annotatable_outputs(store)
    pairs = store.query_df(
        "SELECT o.output_id, q.question_id, q.pass_answer FROM outputs o"
        " JOIN tasks t ON t.task_id = o.task_id"
        " JOIN questions q ON q.checklist_id = t.checklist_id"
        " ORDER BY o.rowid, q.position")
    return pairs[pairs.output_id.isin(set(outputs.output_id))].reset_index(drop=True)


def replace_validation_set(store: Store, actor: str, pairs: pd.DataFrame,
                           detail: dict[str, Any]) -> None:
    """Make the outputs of ``pairs`` (``output_id, question_id``) the sample and ``pairs``
    the validation set, in one transaction, audited as ``workflow.sample`` with
    ``detail``."""
    chosen = list(dict.fromkeys(pairs.output_id))
    value = json.dumps({**detail, "pairs": [[str(o), str(q)] for o, q in zip(
        pairs.output_id, pairs.question_id, strict=True)]})
    with store.transaction(user=actor, role="admin") as conn:
        conn.execute("DELETE FROM sample")
        conn.executemany("INSERT INTO sample (output_id) VALUES (?)", [(o,) for o in chosen])
        conn.execute("INSERT INTO project (key, value) VALUES (?, ?) ON CONFLICT(key)"
                     " DO UPDATE SET value = excluded.value", [VALIDATION_KEY, value])
        append_audit(conn, actor=actor, action="workflow.sample", subject=None,
                     detail={**detail, "drawn": len(chosen), "questions": len(pairs)})


def validation_pairs(store: Store) -> pd.DataFrame:
    """The validation set's ``output_id, question_id`` (empty when none was drawn)."""
    row = store.conn.execute("SELECT value FROM project WHERE key = ?",
                             [VALIDATION_KEY]).fetchone()
    pairs = json.loads(row[0])["pairs"] if row and row[0] else []
    return pd.DataFrame(pairs, columns=["output_id", "question_id"], dtype=object)


def sample_design(store: Store) -> dict[str, Any]:
    """How the current sample was drawn: the detail of the newest ``workflow.sample``
    event (``mode``, ``size``, ``seed``, ...), or ``{"mode": "none"}`` when no sample was
    ever drawn (annotators are offered every output); with ``disagreement_first`` (the
    annotation setting now) and ``disagreement_first_ever`` (on at any time)."""
    row = store.conn.execute(
        "SELECT detail FROM audit_log WHERE action = 'workflow.sample'"
        " ORDER BY event_id DESC LIMIT 1").fetchone()
    design = json.loads(row[0]) if row and row[0] else {"mode": "none"}
    settings = store.conn.execute("SELECT value FROM project WHERE key = ?",
                                  [settings_key("annotate")]).fetchone()
    now = bool(json.loads(settings[0]).get("disagreement_first")) if settings and settings[0] \
        else False
    ever = now or any(
        json.loads(d or "{}").get("disagreement_first") for (d,) in store.conn.execute(
            "SELECT detail FROM audit_log WHERE action = 'workflow.settings'"))
    return {**design, "disagreement_first": now, "disagreement_first_ever": ever}


def answer_fingerprint(store: Store) -> tuple[int, ...]:
    """Changes whenever a judgment or a human answer is added (row counts and the newest
    ids): what a cache of scores computed from them is keyed by."""
    row = store.conn.execute(
        "SELECT (SELECT COUNT(*) FROM judgments), (SELECT MAX(rowid) FROM judgments),"
        " (SELECT COUNT(*) FROM annotations), (SELECT MAX(annotation_id) FROM annotations)"
    ).fetchone()
    return tuple(int(v or 0) for v in row)


def has_prelabels(store: Store) -> bool:
    """Whether any image carries a conflict pre-label (``meta.prelabel``, VIF-Bench)."""
    return store.conn.execute(
        "SELECT 1 FROM images WHERE meta LIKE '%\"prelabel\"%' LIMIT 1").fetchone() is not None


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
