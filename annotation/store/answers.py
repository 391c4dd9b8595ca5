"""The one append-only writer of human answers, for every kind of answer.

A human answer is never updated or deleted: a changed answer is a new row whose
``supersedes`` names the row it replaces, and the ``current_<table>`` view shows the rows
no later row supersedes (the triggers and views are made by
:func:`annotation.store.schema.append_only_sql`). Four kinds of answer live in four tables:

* ``annotation``: a checklist answer or a rating (``annotations``; key: question or
  criterion of one output);
* ``reading``: a verifier's reading of a pre-label (``prelabel_readings``; key: image and
  attribute of one task). A reading is of the image's *content*: the writer fills its
  ``image_sha256`` from the task and image index, and the current reading is the
  verifier's newest row for that hash and attribute, in whichever task it was given
  (``current_image_readings``; schema 9, VIF-Bench's pool images verified once);
* ``verdict``: a verifier's verdict on a conflict label (``conflict_verdicts``; key: the
  conflict type of one task);
* ``review``: a reviewer's localization of one failing instance of a diagnostic tree
  (``tree_reviews``; key: the instance of one root output).

:func:`supersede` is the writer; :func:`current` and :func:`current_rows` read the live
rows.

**Deliveries.** A browser that retries an answer until the server acknowledges it may
deliver one key press twice, or an old press after a newer one. With a :class:`Delivery`
(the press's own ``client_id`` and its ``seq``, its panel's order of presses),
:func:`supersede` writes each press at most once and never lets an earlier press of a panel
replace a later one of the same panel and question: every delivery leaves a receipt
(``answer_receipts``, append-only) saying what became of it (``written``, ``unchanged``,
``stale``), and a second delivery of the same ``client_id`` is answered from its receipt.

The writer and the readers run inside the caller's transaction (a connection of
:meth:`annotation.store.Store.transaction`) or, for reads, on the store's connection.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from annotation.store import dumps, now_iso


@dataclass(frozen=True)
class AnswerKind:
    """Where one kind of answer is kept: its table, row id, whose and on which unit it
    is, and the columns that say which question of the unit it answers (``key``; with
    ``nullable_key`` a missing key column is compared as ``''``)."""

    table: str
    row_id: str
    person: str
    unit: str
    key: tuple[str, ...]
    nullable_key: bool = False
    #: a table whose ``(name, created_at)`` rows register the people who answered
    registry: str | None = None
    #: the columns that say what was answered across units, when one answer applies in
    #: every unit showing the same thing (readings: the image's content hash and the
    #: attribute); the current answer is then the person's newest row with these values
    #: in ``current_view``, whichever unit it was given in. None: ``(unit, key)``.
    scope: tuple[str, ...] | None = None
    current_view: str | None = None


ANSWER_KINDS: dict[str, AnswerKind] = {
    "annotation": AnswerKind("annotations", "annotation_id", "annotator", "output_id",
                             ("question_id", "criterion"), nullable_key=True,
                             registry="annotators"),
    "reading": AnswerKind("prelabel_readings", "reading_id", "verifier", "task_id",
                          ("image_idx", "attribute"), scope=("image_sha256", "attribute"),
                          current_view="current_image_readings"),
    "verdict": AnswerKind("conflict_verdicts", "verdict_id", "verifier", "task_id",
                          ("conflict",)),
    "review": AnswerKind("tree_reviews", "review_id", "reviewer", "output_id",
                         ("instance",)),
}

#: Issue #17: a person's preference on a pair and order of a ranking's outputs (one answer
#: per person and item: the key repeats the unit). Written by the same :func:`supersede`
#: (on import, and by the *Compare outputs* workflows, :mod:`annotation.work.compare`);
#: kept beside :data:`ANSWER_KINDS` (the answers of the four older workflows).
ITEM_KINDS: dict[str, AnswerKind] = {
    "pair": AnswerKind("pair_annotations", "pair_annotation_id", "annotator", "pair_id",
                       ("pair_id",), registry="annotators"),
    "ranking": AnswerKind("ranking_annotations", "ranking_annotation_id", "annotator",
                          "ranking_id", ("ranking_id",), registry="annotators"),
    #: the place given to one output of a ranking (schema 13: one row per key press on
    #: *Compare outputs*; the complete order is then written as a ``ranking`` answer)
    "ranking_place": AnswerKind("ranking_places", "place_id", "annotator", "ranking_id",
                                ("output_id",), registry="annotators"),
}


def _kind(kind: str | AnswerKind) -> AnswerKind:
    if isinstance(kind, str):
        return ANSWER_KINDS[kind] if kind in ANSWER_KINDS else ITEM_KINDS[kind]
    return kind


def _where_key(k: AnswerKind, key: Mapping[str, Any]) -> tuple[str, list[Any]]:
    if k.nullable_key:
        clauses = [f"IFNULL({c}, '') = ?" for c in k.key]
        params = [key.get(c) if key.get(c) is not None else "" for c in k.key]
    else:
        clauses = [f"{c} = ?" for c in k.key]
        params = [key[c] for c in k.key]
    return " AND ".join(clauses), params


def image_hash(conn: sqlite3.Connection, task_id: str, image_idx: int) -> str:
    """The content hash of image ``image_idx`` of ``task_id`` (what a reading reads);
    ``ValueError`` naming both when the task has no such image."""
    row = conn.execute("SELECT sha256 FROM images WHERE task_id = ? AND idx = ?",
                       [task_id, image_idx]).fetchone()
    if row is None:
        raise ValueError(f"task {task_id!r} has no image {image_idx!r}")
    return str(row[0])


def _scoped(conn: sqlite3.Connection, k: AnswerKind, values: dict[str, Any]) -> None:
    """Fill what a scoped answer needs from its unit and key: a reading's
    ``image_sha256`` from its task and image index (a given hash must be that one)."""
    if k.table != "prelabel_readings":
        return
    sha = image_hash(conn, values["task_id"], values["image_idx"])
    if values.get("image_sha256") not in (None, sha):
        raise ValueError(f"image_sha256 {values['image_sha256']!r} is not the hash of image "
                         f"{values['image_idx']} of task {values['task_id']!r} ({sha})")
    values["image_sha256"] = sha


def current(conn: sqlite3.Connection, kind: str | AnswerKind, person: str, unit: str,
            key: Mapping[str, Any]) -> dict[str, Any] | None:
    """The current row (as a dict) of ``person``'s answer to ``key`` on ``unit``, or None.
    For a kind with a ``scope`` (readings), the newest row of ``person`` with ``key``'s
    scope values, on any unit (``key`` without them is completed from ``unit``)."""
    k = _kind(kind)
    if k.scope is not None:
        values = {k.unit: unit, **key}
        if any(values.get(c) is None for c in k.scope):
            _scoped(conn, k, values)
        cur = conn.execute(
            f"SELECT * FROM {k.current_view} WHERE {k.person} = ? AND "
            + " AND ".join(f"{c} = ?" for c in k.scope),
            [person, *(values[c] for c in k.scope)])
    else:
        where, params = _where_key(k, key)
        cur = conn.execute(
            f"SELECT * FROM current_{k.table} WHERE {k.person} = ? AND {k.unit} = ?"
            f" AND {where}", [person, unit, *params])
    row = cur.fetchone()
    if row is None:
        return None
    return dict(zip([d[0] for d in cur.description], row, strict=True))


def _connection(source: Any) -> sqlite3.Connection:
    """The connection of a :class:`annotation.store.Store`, or ``source`` itself."""
    return getattr(source, "conn", source)


def current_rows(source: Any, kind: str | AnswerKind, person: str,
                 unit: str) -> list[dict[str, Any]]:
    """Every current row of ``person`` on ``unit`` (never anyone else's), oldest first;
    ``source``: a store or a connection."""
    k = _kind(kind)
    view = k.current_view or f"current_{k.table}"  # scoped: those given on this unit
    cur = _connection(source).execute(
        f"SELECT * FROM {view} WHERE {k.person} = ? AND {k.unit} = ?"
        f" ORDER BY {k.row_id}", [person, unit])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def has_answer(conn: sqlite3.Connection, kind: str | AnswerKind, person: str,
               unit: str) -> bool:
    """Whether ``person`` ever answered anything of this kind on ``unit``."""
    k = _kind(kind)
    return conn.execute(
        f"SELECT 1 FROM {k.table} WHERE {k.person} = ? AND {k.unit} = ? LIMIT 1",
        [person, unit]).fetchone() is not None


def has_any(conn: sqlite3.Connection, kind: str | AnswerKind, person: str) -> bool:
    """Whether ``person`` has any answer of this kind."""
    k = _kind(kind)
    return conn.execute(f"SELECT 1 FROM {k.table} WHERE {k.person} = ? LIMIT 1",
                        [person]).fetchone() is not None


def first_answers(conn: sqlite3.Connection, kind: str | AnswerKind,
                  person: str) -> dict[str, str]:
    """Per unit, when ``person`` first answered on it (their started units)."""
    k = _kind(kind)
    return dict(conn.execute(
        f"SELECT {k.unit}, MIN(created_at) FROM {k.table} WHERE {k.person} = ?"
        f" GROUP BY {k.unit}", [person]).fetchall())


@dataclass(frozen=True)
class Delivery:
    """One key press as the browser delivered it: ``client_id``, made by the browser once
    per press, ``<panel>:<n>`` (the panel's random id, then a counter), and ``seq``, that
    panel's order of presses (a later press of the panel has a larger number).

    ``seq`` is only compared between presses of the same panel: two machines' clocks (or
    one clock set back) say nothing about which press came last, so between panels (tabs,
    machines, reloads) the order is the one the panels saw, checked by the workflows with
    the row each press was typed over (:meth:`annotation.work.engine.Answering.check_seen`).
    """

    client_id: str
    seq: int

    @property
    def panel(self) -> str:
        """The panel the press was typed in: ``client_id`` up to its last ``:`` (an id
        without one is a panel of its own)."""
        head, sep, _ = self.client_id.rpartition(":")
        return head if sep else self.client_id


class DeliveryConflict(ValueError):
    """A ``client_id`` delivered again for another person, unit or question: not a retry
    of the same press. Nothing is written."""


@dataclass(frozen=True)
class Written:
    """What :func:`supersede` did: the current row's id, whether a row was appended, the
    row it superseded (None for a first answer), and ``outcome``: ``written``,
    ``unchanged`` (equal to the current answer), ``stale`` (a later press of the same
    question is already stored) or ``duplicate`` (this press was delivered before)."""

    row_id: int
    appended: bool
    previous: dict[str, Any] | None
    outcome: str = "written"


def kind_name(kind: str | AnswerKind) -> str:
    """The name of an answer kind in :data:`ANSWER_KINDS` (or :data:`ITEM_KINDS`)."""
    if isinstance(kind, str):
        return kind
    return next(name for name, k in (*ANSWER_KINDS.items(), *ITEM_KINDS.items())
                if k.table == kind.table)


def delivered(conn: sqlite3.Connection, client_id: str) -> bool:
    """Whether the press ``client_id`` was delivered before (it has a receipt)."""
    return conn.execute("SELECT 1 FROM answer_receipts WHERE client_id = ?",
                        [client_id]).fetchone() is not None


def _receipt(conn: sqlite3.Connection, name: str, values: Mapping[str, Any], target: str,
             delivery: Delivery, outcome: str, row_id: int | None, k: AnswerKind) -> None:
    conn.execute(
        "INSERT INTO answer_receipts (client_id, kind, person, unit, target, seq, outcome,"
        " row_id, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [delivery.client_id, name, values[k.person], values[k.unit], target, delivery.seq,
         outcome, row_id, now_iso()])


def _delivered(conn: sqlite3.Connection, name: str, values: Mapping[str, Any], target: str,
               delivery: Delivery, k: AnswerKind) -> Written | None:
    """The result for a press already delivered or older than a stored one (a receipt is
    written for the latter), or None when the press is new and the latest."""
    seen = conn.execute(
        "SELECT kind, person, unit, target, row_id FROM answer_receipts WHERE client_id = ?",
        [delivery.client_id]).fetchone()
    if seen is not None:
        if tuple(seen[:4]) != (name, values[k.person], values[k.unit], target):
            raise DeliveryConflict(
                f"client id {delivery.client_id!r} was delivered for another answer")
        # the row this press wrote (or found): not the current one, which may be another
        # tab's since; a later press typed over it is then checked against what it saw
        return Written(int(seen[4] or 0), False, None, "duplicate")
    # the panel's own receipts: ids from "<panel>:" up to "<panel>;" (':' + 1), found
    # through the primary key (so the cost follows one panel's presses, not the question's
    # whole history; "+kind" keeps SQLite from walking the target index instead)
    latest = conn.execute(
        "SELECT MAX(seq) FROM answer_receipts WHERE client_id >= ? AND client_id < ?"
        " AND +kind = ? AND person = ? AND unit = ? AND target = ?",
        [delivery.panel + ":", delivery.panel + ";", name, values[k.person], values[k.unit],
         target]).fetchone()[0]
    if latest is None or delivery.seq > int(latest):
        return None
    now = current(conn, k, values[k.person], values[k.unit], values)
    stored = None if now is None else int(now[k.row_id])
    _receipt(conn, name, values, target, delivery, "stale", stored, k)
    return Written(stored or 0, False, now, "stale")


def supersede(conn: sqlite3.Connection, kind: str | AnswerKind, row: Mapping[str, Any], *,
              same: Sequence[str] | None = None,
              previous: dict[str, Any] | None | bool = True,
              delivery: Delivery | None = None) -> Written:
    """Append ``row`` as ``row[person]``'s answer to its key on its unit, superseding the
    current answer; nothing is ever updated or deleted.

    ``same``: when the current answer already has ``row``'s values in these columns,
    nothing is written (the current row's id is returned). ``previous``: the current row
    when the caller has just read it (True: read it here). ``created_at`` defaults to now.
    ``delivery``: the key press this answer came from; a press delivered twice is written
    once, and a press older than one already stored for the same question is not written
    (see the module's *Deliveries*). Raises :class:`DeliveryConflict` for a reused id.
    """
    k = _kind(kind)
    values = dict(row)
    values.setdefault("created_at", now_iso())
    if k.scope is not None:
        _scoped(conn, k, values)
    name, target = kind_name(k), dumps({c: values.get(c) for c in k.key})
    if delivery is not None:
        done = _delivered(conn, name, values, target, delivery, k)
        if done is not None:
            return done
    old = (current(conn, k, values[k.person], values[k.unit], values) if previous is True
           else previous or None)
    if old is not None and same is not None and all(old[c] == values.get(c) for c in same):
        if delivery is not None:
            _receipt(conn, name, values, target, delivery, "unchanged", int(old[k.row_id]), k)
        return Written(int(old[k.row_id]), False, old, "unchanged")
    if k.registry is not None:
        conn.execute(f"INSERT OR IGNORE INTO {k.registry} (name, created_at) VALUES (?, ?)",
                     [values[k.person], now_iso()])
    values["supersedes"] = None if old is None else old[k.row_id]
    columns = list(values)
    cur = conn.execute(
        f"INSERT INTO {k.table} ({', '.join(columns)})"
        f" VALUES ({', '.join('?' for _ in columns)})", [values[c] for c in columns])
    row_id = int(cur.lastrowid or 0)
    if delivery is not None:
        _receipt(conn, name, values, target, delivery, "written", row_id, k)
    return Written(row_id, True, old)


def current_df(source: Any, kind: str | AnswerKind) -> Any:
    """Every current row of a kind, as a DataFrame in row order; ``source``: a store or a
    connection."""
    import pandas as pd

    k = _kind(kind)
    return pd.read_sql_query(f"SELECT * FROM current_{k.table} ORDER BY {k.row_id}",
                             _connection(source))
