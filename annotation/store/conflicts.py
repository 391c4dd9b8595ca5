"""Conflict-verification rows (VIF-Bench): reads of the verdicts and pre-label readings
for the results (:mod:`annotation.results.conflicts`), and an admin's resolutions.

The verification workflow writes the verdicts and readings
(:mod:`annotation.work.verification`); this module hands them out as DataFrames. It also
writes :func:`resolve`: an admin's decision on a conflict label that the verifiers left
tied or undecided, with a note (append-only: a new decision supersedes the previous one).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotation.store import answers, now_iso
from annotation.store.adjudications import ROLES as ADJUDICATING
from annotation.store.queue import Queue
from annotation.vif.conflicts import CONFLICT_KEYS

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


#: a task's images joined to each verifier's current reading of their content (schema 9)
_TASK_READINGS = (
    "SELECT i.task_id, r.verifier, i.idx AS image_idx, r.attribute, r.value, r.created_at,"
    " i.sha256 AS image_sha256, r.task_id AS read_in, r.reading_id"
    " FROM images i JOIN current_image_readings r ON r.image_sha256 = i.sha256")


def readings_df(store: Store) -> pd.DataFrame:
    """Current pre-label readings as they apply to each task: per task image, each
    verifier's current reading of that image's content (VIF-Bench verifies pool images
    once, Appendix C.4), wherever it was given: task_id, verifier, image_idx, attribute,
    value (JSON text), created_at, image_sha256, read_in (the task it was given in),
    reading_id; by task, verifier, image and attribute."""
    return store.query_df(
        _TASK_READINGS + " ORDER BY i.task_id, r.verifier, i.idx, r.attribute")


def task_readings(source: Store | sqlite3.Connection, verifier: str,
                  task_id: str) -> list[dict[str, Any]]:
    """``verifier``'s current readings of the images of ``task_id`` (never anyone
    else's), given in this task or in another one showing the same image; the columns of
    :func:`readings_df`."""
    conn = source if isinstance(source, sqlite3.Connection) else source.conn
    cur = conn.execute(_TASK_READINGS + " WHERE i.task_id = ? AND r.verifier = ?"
                       " ORDER BY i.idx, r.attribute", [task_id, verifier])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def image_readings_df(store: Store, *, history: bool = False) -> pd.DataFrame:
    """Per verifier, image content and attribute, the current reading (or, with
    ``history``, every reading row ever written): image_sha256, verifier, attribute,
    value (JSON text), task_id (where it was given), created_at, reading_id, supersedes,
    and ``confirmed`` (1 when the verifier submitted a task showing that image; their
    reading is then a result, not work in progress)."""
    view = "prelabel_readings" if history else "current_image_readings"
    return store.query_df(
        "SELECT r.image_sha256, r.verifier, r.attribute, r.value, r.task_id, r.created_at,"
        " r.reading_id, r.supersedes, EXISTS (SELECT 1 FROM images i JOIN"
        " queue_submissions s ON s.kind = 'verify' AND s.unit = i.task_id"
        " AND s.person = r.verifier WHERE i.sha256 = r.image_sha256) AS confirmed"
        f" FROM {view} r ORDER BY r.image_sha256, r.verifier, r.attribute, r.reading_id")


def record_reading(conn: sqlite3.Connection, row: Mapping[str, Any]) -> answers.Written:
    """Append one pre-label reading made elsewhere (an import: ``verifier, task_id,
    image_idx, attribute, value`` as JSON text, ``created_at``, ``source``) inside the
    caller's transaction, superseding the verifier's current reading of that pre-label
    (:func:`annotation.store.answers.supersede`)."""
    return answers.supersede(conn, "reading", row)


def resolutions_df(store: Store, *, history: bool = False) -> pd.DataFrame:
    """Current resolutions (or, with ``history``, every one written): task_id, conflict,
    label (0/1), note, decided_by, created_at, resolution_id, supersedes."""
    view = "conflict_resolutions" if history else "current_conflict_resolutions"
    return store.query_df(
        f"SELECT task_id, conflict, label, note, decided_by, created_at, resolution_id,"
        f" supersedes FROM {view} ORDER BY task_id, conflict, resolution_id")


def resolve(store: Store, task_id: str, conflict: str, label: bool, note: str, *,
            actor: str) -> int:
    """Record ``actor``'s decision that ``task_id`` has (``label`` True) or has not the
    ``conflict``, with a ``note`` saying why (required); it supersedes an earlier decision
    on the same label (an admin's or an adjudicator's: the session's role is checked in
    the write's transaction). Returns the new row id. ``ValueError`` for an unknown task or
    conflict type or an empty note."""
    with store.transaction(user=actor, role=ADJUDICATING) as conn:
        return insert_resolution(conn, task_id, conflict, label, note, actor=actor)


def insert_resolution(tx: Queue | sqlite3.Connection, task_id: str, conflict: str, label: bool,
                      note: str, *, actor: str) -> int:
    """:func:`resolve`'s row, inside the caller's open write transaction (a queue of
    :mod:`annotation.store.queue` or its connection; the transaction has checked
    the session): the adjudication queue writes it and the unit's submission at once."""
    conn = tx.connection if isinstance(tx, Queue) else tx
    if conflict not in CONFLICT_KEYS:
        raise ValueError(f"conflict must be one of {', '.join(CONFLICT_KEYS)}, not "
                         f"{conflict!r}")
    if not note or not note.strip():
        raise ValueError("a decision needs a note saying why (it stays in the history)")
    if conn.execute("SELECT 1 FROM tasks WHERE task_id = ?", [task_id]).fetchone() is None:
        raise ValueError(f"no task {task_id!r}")
    old = conn.execute("SELECT resolution_id FROM current_conflict_resolutions"
                       " WHERE task_id = ? AND conflict = ?", [task_id, conflict]
                       ).fetchone()
    cursor = conn.execute(
        "INSERT INTO conflict_resolutions (task_id, conflict, label, note, decided_by,"
        " created_at, supersedes) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [task_id, conflict, int(bool(label)), note.strip(), actor, now_iso(),
         old[0] if old else None])
    return int(cursor.lastrowid or 0)
