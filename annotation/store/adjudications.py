"""Adjudication rows (schema 10, issue #16): decisions on disputed checklist answers and
tree localizations, append-only.

An adjudicator (or an admin) decides a unit of the adjudication queue
(:mod:`annotation.work.adjudication`) with a note saying why. Checklist and tree decisions
are rows of ``adjudications`` (``kind`` ``checklist``: ``item`` an output, ``target`` a
question id, ``decision`` ``yes`` / ``no``; ``kind`` ``tree``: ``item`` a root output,
``target`` an operator instance, ``decision`` the origin node, ``persistent`` or
``not_a_failure``). A new decision on the same (kind, item, target) supersedes the current
one, whoever made it: the decision is the unit's, and the history keeps every earlier one.

A decision on a tied conflict label is **not** kept here: it is a row of
``conflict_resolutions`` (:func:`annotation.store.conflicts.resolve`), the one source of
truth of the verified conflict labels.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import pandas as pd

from annotation.store import now_iso
from annotation.store.queue import Queue

if TYPE_CHECKING:
    from annotation.store import Store

#: the roles that may write a decision (the write's transaction checks the session's role)
ROLES = ("adjudicator", "admin")
#: the kinds of decision kept in ``adjudications``
KINDS = ("checklist", "tree")


def decisions_df(store: Store, *, history: bool = False, kind: str | None = None
                 ) -> pd.DataFrame:
    """Current decisions (or, with ``history``, every one ever written): adjudication_id,
    kind, item, target, decision, note, decided_by, created_at, supersedes; by kind, item,
    target and row id. ``kind``: only that kind."""
    table = "adjudications" if history else "current_adjudications"
    where, params = ("", []) if kind is None else (" WHERE kind = ?", [kind])
    return store.query_df(
        "SELECT adjudication_id, kind, item, target, decision, note, decided_by, created_at,"
        f" supersedes FROM {table}{where} ORDER BY kind, item, target, adjudication_id",
        params)


def record(store: Store, kind: str, item: str, target: str, decision: str, note: str, *,
           actor: str) -> int:
    """Append ``actor``'s decision on (``kind``, ``item``, ``target``) with its ``note``
    (required), superseding the current decision on it; the role (adjudicator or admin)
    is checked in the write's transaction. Returns the new row id. ``ValueError`` for an
    unknown kind or output, an empty decision or note."""
    with store.transaction(user=actor, role=ROLES) as conn:
        return insert(conn, kind, item, target, decision, note, actor=actor)


def insert(tx: Queue | sqlite3.Connection, kind: str, item: str, target: str, decision: str,
           note: str, *, actor: str) -> int:
    """:func:`record`'s row, inside the caller's open write transaction (a queue of
    :mod:`annotation.store.queue` or its connection; the transaction has checked
    the session): the adjudication queue writes the decision and the unit's submission in
    one transaction."""
    conn = tx.connection if isinstance(tx, Queue) else tx
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if not decision:
        raise ValueError("a decision is needed")
    if not note or not note.strip():
        raise ValueError("a decision needs a note saying why (it stays in the history)")
    if conn.execute("SELECT 1 FROM outputs WHERE output_id = ?", [item]).fetchone() is None:
        raise ValueError(f"no output {item!r}")
    old = conn.execute("SELECT adjudication_id FROM current_adjudications WHERE kind = ?"
                       " AND item = ? AND target = ?", [kind, item, target]).fetchone()
    cursor = conn.execute(
        "INSERT INTO adjudications (kind, item, target, decision, note, decided_by,"
        " created_at, supersedes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [kind, item, target, decision, note.strip(), actor, now_iso(),
         old[0] if old else None])
    return int(cursor.lastrowid or 0)
