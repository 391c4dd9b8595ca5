"""The work queues of every workflow, keyed by workflow kind (schema 6).

One set of tables serves every workflow (:data:`annotation.store.schema.QUEUE_KINDS`):

* ``queue_reservations``: who holds which unit until when (a live reservation counts
  toward the unit's overlap);
* ``queue_submissions``: who submitted which unit, in order (``submission_id``);
* ``queue_visits``: each opening of a unit by a person and its active seconds;
* settings: one JSON value per kind in the ``project`` table (:data:`SETTINGS_KEYS`,
  the keys of schema 2-4, so settings made before schema 6 stay in force).

The workflow engine (:mod:`annotation.work.engine`) asks the questions and makes the
decisions; this module only reads and writes. A :class:`Queue` is one kind's queue on
one connection: inside a write transaction (:func:`writing`, so a choice and its
reservation are one ``BEGIN IMMEDIATE``), or for reading (:func:`reader`). It never
hands its connection out.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotation.store import answers as answer_rows
from annotation.store import append_audit, dumps, now_iso

if TYPE_CHECKING:
    from annotation.store import Store

#: Where each kind keeps its settings in the ``project`` table.
SETTINGS_KEYS = {"annotate": "workflow", "verify": "conflict_verification",
                 "trees": "tree_review"}


def settings_key(kind: str) -> str:
    """The ``project`` key of a kind's settings (a new kind: ``queue.<kind>``)."""
    return SETTINGS_KEYS.get(kind, f"queue.{kind}")


class Queue:
    """One workflow kind's queue on one connection (see the module's docstring)."""

    def __init__(self, conn: sqlite3.Connection, kind: str):
        self._conn = conn
        self.kind = kind

    @property
    def connection(self) -> sqlite3.Connection:
        """The connection of the queue's open transaction, for the store modules that
        write a workflow's own rows with its submission (one transaction)."""
        return self._conn

    # ------------------------------------------------------------ submissions
    def submission_counts(self) -> dict[str, int]:
        """Distinct people who submitted each unit."""
        return dict(self._conn.execute(
            "SELECT unit, count(*) FROM queue_submissions WHERE kind = ? GROUP BY unit",
            [self.kind]).fetchall())

    def submitted(self, person: str) -> list[str]:
        """The units ``person`` submitted, in the order they did."""
        return [r[0] for r in self._conn.execute(
            "SELECT unit FROM queue_submissions WHERE kind = ? AND person = ?"
            " ORDER BY submitted_at, submission_id", [self.kind, person])]

    def is_submitted(self, person: str, unit: str) -> bool:
        return self._conn.execute(
            "SELECT 1 FROM queue_submissions WHERE kind = ? AND person = ? AND unit = ?",
            [self.kind, person, unit]).fetchone() is not None

    def submit(self, person: str, unit: str, at: str | None = None) -> None:
        """Record the submission (idempotent) and release the reservation."""
        self._conn.execute(
            "INSERT OR IGNORE INTO queue_submissions (kind, person, unit, submitted_at)"
            " VALUES (?, ?, ?, ?)", [self.kind, person, unit, at or now_iso()])
        self.release(person, unit)

    def submit_many(self, pairs: Iterable[tuple[str, str]], at: str) -> None:
        """Record ``(person, unit)`` submissions made elsewhere (an import), idempotent."""
        self._conn.executemany(
            "INSERT OR IGNORE INTO queue_submissions (kind, person, unit, submitted_at)"
            " VALUES (?, ?, ?, ?)", [(self.kind, p, u, at) for p, u in pairs])

    def submissions_df(self) -> pd.DataFrame:
        """Every submission: person, unit, submitted_at, in order."""
        return pd.read_sql_query(
            "SELECT person, unit, submitted_at FROM queue_submissions WHERE kind = ?"
            " ORDER BY submitted_at, submission_id", self._conn, params=[self.kind])

    # ------------------------------------------------------------ reservations
    def live_reservations(self, stamp: str) -> list[tuple[str, str]]:
        """``(unit, person)`` of every reservation that expires after ``stamp``."""
        return [(r[0], r[1]) for r in self._conn.execute(
            "SELECT unit, person FROM queue_reservations WHERE kind = ? AND expires_at > ?",
            [self.kind, stamp])]

    def live_reserved(self, person: str, stamp: str) -> dict[str, str]:
        """Per unit ``person`` holds live at ``stamp``: when they reserved it."""
        return dict(self._conn.execute(
            "SELECT unit, reserved_at FROM queue_reservations WHERE kind = ? AND person = ?"
            " AND expires_at > ?", [self.kind, person, stamp]).fetchall())

    def holds(self, person: str, unit: str, stamp: str) -> bool:
        """Whether ``person`` holds a live reservation of ``unit`` at ``stamp``."""
        return self._conn.execute(
            "SELECT 1 FROM queue_reservations WHERE kind = ? AND person = ? AND unit = ?"
            " AND expires_at > ?", [self.kind, person, unit, stamp]).fetchone() is not None

    def others_taking(self, person: str, unit: str, stamp: str) -> int:
        """People other than ``person`` who submitted ``unit`` or hold it live."""
        return int(self._conn.execute(
            "SELECT (SELECT count(*) FROM queue_submissions WHERE kind = ? AND unit = ?"
            " AND person <> ?) + (SELECT count(*) FROM queue_reservations WHERE kind = ?"
            " AND unit = ? AND person <> ? AND expires_at > ?)",
            [self.kind, unit, person, self.kind, unit, person, stamp]).fetchone()[0])

    def reserve(self, person: str, unit: str, stamp: str, expires: str) -> None:
        """Reserve ``unit`` for ``person`` until ``expires`` (an existing reservation
        keeps its ``reserved_at`` and gets the new expiry)."""
        self._conn.execute(
            "INSERT INTO queue_reservations (kind, unit, person, reserved_at, expires_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT(kind, unit, person)"
            " DO UPDATE SET expires_at = excluded.expires_at",
            [self.kind, unit, person, stamp, expires])

    def renew(self, person: str, unit: str, expires: str) -> None:
        """Move an existing reservation's expiry (none: nothing happens)."""
        self._conn.execute(
            "UPDATE queue_reservations SET expires_at = ? WHERE kind = ? AND unit = ?"
            " AND person = ?", [expires, self.kind, unit, person])

    def release(self, person: str, unit: str) -> None:
        """Give a reservation back."""
        self._conn.execute(
            "DELETE FROM queue_reservations WHERE kind = ? AND unit = ? AND person = ?",
            [self.kind, unit, person])

    def is_gold(self, unit: str) -> bool:
        """Whether ``unit`` is a gold item (:mod:`annotation.store.gold`)."""
        return self._conn.execute(
            "SELECT 1 FROM current_gold_answers WHERE output_id = ? AND (answer IS NOT NULL"
            " OR score IS NOT NULL) LIMIT 1", [unit]).fetchone() is not None

    # ------------------------------------------------------------ answers
    def started(self, person: str, answer_kinds: Sequence[str], stamp: str) -> list[str]:
        """The units ``person`` started: answered (any of ``answer_kinds``) or holds live
        at ``stamp``, oldest start first."""
        first: dict[str, str] = {}
        for kind in answer_kinds:
            for unit, t in answer_rows.first_answers(self._conn, kind, person).items():
                first[unit] = min(first.get(unit, t), t)
        for unit, t in self.live_reserved(person, stamp).items():
            first[unit] = min(first.get(unit, t), t)
        return [u for u, _ in sorted(first.items(), key=lambda x: (x[1], x[0]))]

    def has_any_answer(self, person: str, answer_kinds: Sequence[str]) -> bool:
        """Whether ``person`` has any answer of these kinds, on any unit."""
        return any(answer_rows.has_any(self._conn, k, person) for k in answer_kinds)

    def has_answered(self, person: str, unit: str, answer_kinds: Sequence[str]) -> bool:
        return any(answer_rows.has_answer(self._conn, k, person, unit) for k in answer_kinds)

    def current_answer(self, kind: str, person: str, unit: str,
                       key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The current answer row (see :func:`annotation.store.answers.current`)."""
        return answer_rows.current(self._conn, kind, person, unit, key)

    def supersede(self, kind: str, row: Mapping[str, Any], *,
                  same: Sequence[str] | None = None,
                  previous: dict[str, Any] | None | bool = True,
                  delivery: answer_rows.Delivery | None = None) -> answer_rows.Written:
        """Append an answer (see :func:`annotation.store.answers.supersede`)."""
        return answer_rows.supersede(self._conn, kind, row, same=same, previous=previous,
                                     delivery=delivery)

    def delivered(self, client_id: str) -> bool:
        """Whether the press ``client_id`` was delivered before."""
        return answer_rows.delivered(self._conn, client_id)

    def receipt_outcome(self, client_id: str) -> str | None:
        """What the first delivery of the press ``client_id`` did (written, unchanged,
        stale), or None."""
        row = self._conn.execute("SELECT outcome FROM answer_receipts WHERE client_id = ?",
                                 [client_id]).fetchone()
        return row[0] if row else None

    def current_rows(self, kind: str, person: str, unit: str) -> list[dict[str, Any]]:
        return answer_rows.current_rows(self._conn, kind, person, unit)

    # ------------------------------------------------------------ visits
    def start_visit(self, person: str, unit: str, at: str | None = None) -> int:
        """Open a visit of ``unit`` by ``person``; return its id."""
        cur = self._conn.execute(
            "INSERT INTO queue_visits (kind, person, unit, started_at) VALUES (?, ?, ?, ?)",
            [self.kind, person, unit, at or now_iso()])
        return int(cur.lastrowid or 0)

    def add_time(self, visit_id: int, seconds: float, person: str | None = None) -> None:
        """Add ``seconds`` (> 0) of active time to a visit of this queue's kind (and, with
        ``person``, only to one of theirs: nobody adds time to another person's visit)."""
        if seconds > 0:
            self._conn.execute(
                "UPDATE queue_visits SET active_seconds = active_seconds + ?"
                " WHERE visit_id = ? AND kind = ? AND (? IS NULL OR person = ?)",
                [seconds, visit_id, self.kind, person, person])

    def visit_seconds_df(self) -> pd.DataFrame:
        """Active seconds per (person, unit), summed over visits."""
        return pd.read_sql_query(
            "SELECT person, unit, SUM(active_seconds) AS active_seconds FROM queue_visits"
            " WHERE kind = ? GROUP BY person, unit ORDER BY person, unit", self._conn,
            params=[self.kind])

    # ------------------------------------------------------------ settings, audit
    def settings(self) -> dict[str, Any]:
        """The kind's stored settings ({} when none were ever set)."""
        row = self._conn.execute("SELECT value FROM project WHERE key = ?",
                                 [settings_key(self.kind)]).fetchone()
        return json.loads(row[0]) if row and row[0] else {}

    def write_settings(self, values: Mapping[str, Any]) -> None:
        self._conn.execute(
            "INSERT INTO project (key, value) VALUES (?, ?) ON CONFLICT(key)"
            " DO UPDATE SET value = excluded.value", [settings_key(self.kind), dumps(values)])

    def audit(self, actor: str | None, action: str, subject: str | None,
              detail: dict[str, Any] | None = None) -> None:
        append_audit(self._conn, actor=actor, action=action, subject=subject, detail=detail)


@contextmanager
def writing(store: Store, kind: str, *, user: str | None,
            role: str | tuple[str, ...] | None = None) -> Iterator[Queue]:
    """One write transaction (``BEGIN IMMEDIATE``, with the store's session check) on
    ``kind``'s queue."""
    with store.transaction(user=user, role=role) as conn:
        yield Queue(conn, kind)


def reader(store: Store, kind: str) -> Queue:
    """``kind``'s queue on the store's connection, for reading outside a transaction."""
    return Queue(store.conn, kind)


@dataclass(frozen=True)
class Visit:
    """One opening of a unit: which queue (``kind``), by whom, which unit."""

    visit_id: int
    kind: str
    person: str
    unit: str
    started_at: str


def visit(store: Store, visit_id: int) -> Visit | None:
    """The visit ``visit_id`` (of any kind), or None."""
    row = store.conn.execute("SELECT visit_id, kind, person, unit, started_at FROM"
                             " queue_visits WHERE visit_id = ?", [visit_id]).fetchone()
    return None if row is None else Visit(int(row[0]), row[1], row[2], row[3], row[4])


def release_person(conn: sqlite3.Connection, person: str) -> int:
    """Give back every reservation ``person`` holds, of every kind (sign-out), inside the
    caller's transaction; return how many there were."""
    cur = conn.execute("DELETE FROM queue_reservations WHERE person = ?", [person])
    return int(cur.rowcount or 0)


def reservations_df(store: Store, person: str | None = None) -> pd.DataFrame:
    """Every reservation (kind, unit, person, reserved_at, expires_at), or ``person``'s."""
    sql = "SELECT kind, unit, person, reserved_at, expires_at FROM queue_reservations"
    if person is None:
        return pd.read_sql_query(sql + " ORDER BY kind, unit, person", store.conn)
    return pd.read_sql_query(sql + " WHERE person = ? ORDER BY kind, unit", store.conn,
                             params=[person])
