"""Gold answers: an admin's known answers of gold items (schema 10, ``gold_answers``).

One row per output and question (a checklist answer) or criterion (a score), append-only:
a changed gold answer is a new row whose ``supersedes`` names the row it replaces, and a
row with neither answer nor score withdraws the gold answer of its question or criterion
(the history keeps who marked what, when, and what replaced it). An output with at least
one current gold answer is a *gold item* (:mod:`annotation.work.gold`). Gold answers are
never human answers: they live in their own table and never enter ``annotations``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotation.store import append_audit, now_iso

if TYPE_CHECKING:
    from annotation.store import Store

#: the columns of :func:`gold_df`
COLUMNS = ("output_id", "question_id", "criterion", "answer", "score", "source", "note",
           "created_by", "created_at", "gold_id", "supersedes")


def gold_df(store: Store, *, history: bool = False) -> pd.DataFrame:
    """The current gold answers (withdrawn ones left out) or, with ``history``, every
    row ever written (withdrawals included): :data:`COLUMNS`, by output and row."""
    view = "gold_answers" if history else "current_gold_answers"
    live = "" if history else " WHERE answer IS NOT NULL OR score IS NOT NULL"
    return store.query_df(f"SELECT {', '.join(COLUMNS)} FROM {view}{live}"
                          " ORDER BY output_id, gold_id")


def gold_outputs(source: Store | sqlite3.Connection) -> list[str]:
    """The gold items: outputs with at least one current gold answer, sorted."""
    conn = source if isinstance(source, sqlite3.Connection) else source.conn
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT output_id FROM current_gold_answers"
        " WHERE answer IS NOT NULL OR score IS NOT NULL ORDER BY output_id")]


def first_marked(store: Store) -> dict[str, str]:
    """When each output was first marked gold (its oldest gold row's ``created_at``)."""
    return dict(store.conn.execute(
        "SELECT output_id, MIN(created_at) FROM gold_answers GROUP BY output_id").fetchall())


def _current(conn: sqlite3.Connection, output_id: str, question_id: str | None,
             criterion: str | None) -> tuple[int, str | None, float | None] | None:
    row = conn.execute(
        "SELECT gold_id, answer, score FROM current_gold_answers WHERE output_id = ?"
        " AND question_id IS ? AND criterion IS ?", [output_id, question_id, criterion]
    ).fetchone()
    return None if row is None else (int(row[0]), row[1], row[2])


def write(conn: sqlite3.Connection, rows: Iterable[Mapping[str, Any]], *, actor: str,
          source: str) -> int:
    """Append ``rows`` (``output_id``, one of ``question_id``/``criterion``, ``answer``
    or ``score`` (both None: withdraw), optional ``note``) inside the caller's
    transaction, each superseding the current gold answer of its key unless equal to it;
    return how many rows were written. The caller checked the rows (:mod:`annotation.work.gold`)."""
    written = 0
    stamp = now_iso()
    for r in rows:
        qid, crit = r.get("question_id"), r.get("criterion")
        answer, score = r.get("answer"), r.get("score")
        old = _current(conn, r["output_id"], qid, crit)
        if old is None and answer is None and score is None:
            continue  # nothing to withdraw
        if old is not None and old[1] == answer and old[2] == score:
            continue
        conn.execute(
            "INSERT INTO gold_answers (output_id, question_id, criterion, answer, score,"
            " source, note, created_by, created_at, supersedes)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [r["output_id"], qid, crit, answer, score, source, r.get("note"), actor, stamp,
             old[0] if old else None])
        written += 1
    if written:
        append_audit(conn, actor=actor, action="gold.mark", subject=None,
                     detail={"source": source, "rows": written})
    return written


def write_rows(store: Store, rows: Iterable[Mapping[str, Any]], *, actor: str,
               source: str) -> int:
    """:func:`write` in its own transaction (an admin's write)."""
    with store.transaction(user=actor, role="admin") as conn:
        return write(conn, rows, actor=actor, source=source)


def person_answers(store: Store, person: str, output_id: str,
                   at: str | None = None) -> tuple[dict[str, str], dict[str, float]]:
    """``person``'s current checklist answers and scores of ``output_id`` or, with ``at``
    (ISO UTC), those that were current then (a later change, e.g. after seeing the
    training feedback, does not count)."""
    answers: dict[str, str] = {}
    scores: dict[str, float] = {}
    if at is None:
        sql = ("SELECT question_id, criterion, answer, score FROM current_annotations"
               " WHERE annotator = ? AND output_id = ?")
        params: list[Any] = [person, output_id]
    else:
        sql = ("SELECT question_id, criterion, answer, score FROM annotations a"
               " WHERE annotator = ? AND output_id = ? AND annotation_id = ("
               "SELECT MAX(b.annotation_id) FROM annotations b WHERE b.annotator ="
               " a.annotator AND b.output_id = a.output_id AND b.question_id IS"
               " a.question_id AND b.criterion IS a.criterion AND b.created_at <= ?)")
        params = [person, output_id, at]
    for qid, crit, answer, score in store.conn.execute(sql, params):
        if qid:
            answers[qid] = answer
        elif score is not None:
            scores[crit] = float(score)
    return answers, scores


def output_answers_df(store: Store, output_id: str) -> pd.DataFrame:
    """Every annotator's current answers of ``output_id``: question_id, criterion,
    answer, score."""
    return store.query_df("SELECT question_id, criterion, answer, score FROM"
                          " current_annotations WHERE output_id = ?", [output_id])


def submissions(store: Store, person: str) -> list[tuple[str, str]]:
    """(output_id, submitted_at) of ``person``'s annotation submissions, in order."""
    return [(r[0], r[1]) for r in store.conn.execute(
        "SELECT unit, submitted_at FROM queue_submissions WHERE kind = 'annotate'"
        " AND person = ? ORDER BY submitted_at, submission_id", [person])]


def annotation_people(store: Store) -> list[str]:
    """Everyone who submitted an annotation item, sorted."""
    return [r[0] for r in store.conn.execute(
        "SELECT DISTINCT person FROM queue_submissions WHERE kind = 'annotate'"
        " ORDER BY person")]


def targets(store: Store) -> tuple[dict[str, str], dict[str, str],
                                   dict[str, tuple[float, float]]]:
    """output -> checklist, question -> checklist, criterion -> (min, max)."""
    outputs = dict(store.conn.execute(
        "SELECT o.output_id, t.checklist_id FROM outputs o JOIN tasks t USING (task_id)"))
    questions = dict(store.conn.execute("SELECT question_id, checklist_id FROM questions"))
    criteria = {r[0]: (float(r[1]), float(r[2])) for r in store.conn.execute(
        "SELECT name, min, max FROM criteria")}
    return outputs, questions, criteria


def target_counts(store: Store) -> dict[str, int]:
    """Per output, its answer targets (checklist questions + criteria)."""
    crit = store.conn.execute("SELECT count(*) FROM criteria").fetchone()[0]
    return {o: n + crit for o, n in store.conn.execute(
        "SELECT o.output_id, count(q.question_id) FROM outputs o JOIN tasks t USING"
        " (task_id) LEFT JOIN questions q ON q.checklist_id = t.checklist_id"
        " GROUP BY o.output_id")}


def audit_reset(store: Store, actor: str, person: str, action: str,
                note: str | None) -> None:
    """Write an admin's qualification reset of ``person`` to the audit log."""
    with store.transaction(user=actor, role="admin") as conn:
        append_audit(conn, actor=actor, action=action, subject=person,
                     detail={"note": note} if note else {})


def was_audited(store: Store, person: str, action: str) -> bool:
    """Whether the audit log has ``action`` on ``person``."""
    return store.conn.execute("SELECT 1 FROM audit_log WHERE action = ? AND subject = ?",
                              [action, person]).fetchone() is not None
