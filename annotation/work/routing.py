"""Task routing shared by the verification and tree-review workflows.

The rules are those of :func:`annotation.work.workflow.next_item` (Label Studio / Prodigy style
overlap routing): a unit is offered to a person who has not submitted it while fewer than
``overlap`` others have submitted it or hold a live reservation; the person's own
unfinished unit comes first (resume on any machine), then units others started (so
overlaps complete), then the person's own seeded order. The choice and its reservation
are made in one ``BEGIN IMMEDIATE`` transaction, so two people asking at once cannot both
take the last open slot.

**Stale tabs** (:func:`claim`): answering and submitting need a live reservation, or the
person's own started unit (answers already given) while its overlap is not full; a unit
the person has submitted may be reviewed and changed at any time. Otherwise the write is
refused with :class:`ItemTaken` and the tab moves on. The check and the renewal of the
reservation happen in the write's own transaction, so no unit ever gets more than
``overlap`` submissions.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from annotation.store import Store, append_audit, dumps

S = TypeVar("S")


class StaleItem(RuntimeError):
    """A tab acted on what it showed, and the project has moved on meanwhile; nothing
    was written. The message is for the person."""


class ItemTaken(StaleItem):
    """The person's reservation lapsed and the unit cannot be theirs any more: without an
    answer of theirs on it, or with its overlap filled by others."""


class ChangedElsewhere(StaleItem):
    """The answer changed (in another tab of the same person) since this tab showed it."""


@dataclass(frozen=True)
class Tables:
    """Where a workflow keeps its reservations and submissions, and which tables hold a
    person's answers (their first answer time marks a unit as started)."""

    reservations: str
    submissions: str
    unit: str
    person: str
    answers: tuple[str, ...]


def personal_order(units: list[str], person: str, seed: int, salt: str) -> list[str]:
    """The person's own shuffle of the units, stable across sessions and machines."""
    key = int.from_bytes(
        hashlib.sha256(f"{salt}:{seed}:{person}".encode()).digest()[:8], "big")
    order = list(units)
    random.Random(key).shuffle(order)
    return order


def choose_next(store: Store, tables: Tables, person: str, eligible: list[str], *,
                overlap: int, reservation_minutes: int, seed: int, salt: str,
                now: datetime) -> str | None:
    """Choose and reserve the unit ``person`` should work on now (None when done)."""
    t = tables
    stamp = now.isoformat(timespec="microseconds")
    with store.transaction(user=person) as conn:
        submitted = dict(conn.execute(
            f"SELECT {t.unit}, count(*) FROM {t.submissions} GROUP BY {t.unit}").fetchall())
        mine_done = {r[0] for r in conn.execute(
            f"SELECT {t.unit} FROM {t.submissions} WHERE {t.person} = ?", [person])}
        others: dict[str, int] = {}
        for unit, who in conn.execute(
            f"SELECT {t.unit}, {t.person} FROM {t.reservations} WHERE expires_at > ?", [stamp]
        ):
            if who != person:
                others[unit] = others.get(unit, 0) + 1
        parts = [f"SELECT {t.unit}, MIN(created_at) AS t FROM {a} WHERE {t.person} = ?"
                 f" GROUP BY {t.unit}" for a in t.answers]
        parts.append(f"SELECT {t.unit}, reserved_at FROM {t.reservations}"
                     f" WHERE {t.person} = ? AND expires_at > ?")
        params: list[str] = [person] * len(t.answers) + [person, stamp]
        started = [r[0] for r in conn.execute(
            f"SELECT {t.unit} FROM ({' UNION ALL '.join(parts)})"
            f" GROUP BY {t.unit} ORDER BY MIN(t)", params)]
        eligible_set = set(eligible)
        # resume my own unfinished unit, unless others filled its overlap meanwhile
        choice = next((u for u in started if u in eligible_set and u not in mine_done
                       and submitted.get(u, 0) + others.get(u, 0) < overlap), None)
        if choice is None:
            rank = {u: i for i, u in enumerate(personal_order(eligible, person, seed, salt))}
            open_units = []
            for u in eligible:
                taken = submitted.get(u, 0) + others.get(u, 0)
                if u not in mine_done and taken < overlap:
                    open_units.append((-taken, rank[u], u))
            choice = min(open_units)[2] if open_units else None
        if choice is not None:
            expires = (now + timedelta(minutes=reservation_minutes)).isoformat(
                timespec="microseconds")
            conn.execute(
                f"INSERT INTO {t.reservations} ({t.unit}, {t.person}, reserved_at, expires_at)"
                f" VALUES (?, ?, ?, ?) ON CONFLICT({t.unit}, {t.person})"
                " DO UPDATE SET expires_at = excluded.expires_at",
                [choice, person, stamp, expires])
    return choice


def previous_unit(store: Store, tables: Tables, person: str, current: str | None
                  ) -> str | None:
    """The unit ``person`` submitted just before ``current`` (or their last one): where the
    Back key goes."""
    t = tables
    done = [r[0] for r in store.conn.execute(
        f"SELECT {t.unit} FROM {t.submissions} WHERE {t.person} = ?"
        " ORDER BY submitted_at, rowid", [person])]
    if current in done:
        i = done.index(current)
        return done[i - 1] if i > 0 else None
    return done[-1] if done else None


def submission_counts(store: Store, tables: Tables) -> dict[str, int]:
    """Distinct people who submitted each unit."""
    t = tables
    return dict(store.conn.execute(
        f"SELECT {t.unit}, count(*) FROM {t.submissions} GROUP BY {t.unit}").fetchall())


def personal_progress(store: Store, tables: Tables, person: str, eligible: list[str],
                      overlap: int) -> tuple[int, int]:
    """(units ``person`` submitted, those + the units still open to them)."""
    t = tables
    counts = submission_counts(store, tables)
    mine = {r[0] for r in store.conn.execute(
        f"SELECT {t.unit} FROM {t.submissions} WHERE {t.person} = ?", [person])}
    done = sum(1 for u in eligible if u in mine)
    open_to_me = sum(1 for u in eligible if u not in mine and counts.get(u, 0) < overlap)
    return done, done + open_to_me


def overall_progress(store: Store, tables: Tables, eligible: list[str], overlap: int
                     ) -> tuple[int, int]:
    """(submissions counted toward overlap, eligible units x overlap)."""
    counts = submission_counts(store, tables)
    return (sum(min(counts.get(u, 0), overlap) for u in eligible), len(eligible) * overlap)


def claim(conn: Any, tables: Tables, person: str, unit: str, *, overlap: int,
          minutes: int, now: datetime) -> None:
    """Make sure ``person`` may still answer or submit ``unit`` now, inside the caller's
    write transaction, and renew their reservation; raise :class:`ItemTaken` otherwise.

    Allowed: a unit ``person`` already submitted (reviewing it changes answers, not the
    overlap); else only while fewer than ``overlap`` others have submitted it or hold a
    live reservation on it, and ``person`` holds a live reservation or has already
    answered on it (their own started unit keeps its right to be finished after the
    reservation lapsed, as long as nobody took the slot).
    """
    t = tables
    stamp = now.isoformat(timespec="microseconds")
    if conn.execute(f"SELECT 1 FROM {t.submissions} WHERE {t.person} = ? AND {t.unit} = ?",
                    [person, unit]).fetchone():
        return
    live = conn.execute(
        f"SELECT 1 FROM {t.reservations} WHERE {t.person} = ? AND {t.unit} = ?"
        " AND expires_at > ?", [person, unit, stamp]).fetchone() is not None
    if not live and not any(
            conn.execute(f"SELECT 1 FROM {a} WHERE {t.person} = ? AND {t.unit} = ? LIMIT 1",
                         [person, unit]).fetchone() for a in t.answers):
        raise ItemTaken("Your reservation of this item had expired before your first answer "
                        "(it may have gone to someone else): nothing was saved, and the page "
                        "now shows the item that is yours.")
    others = conn.execute(
        f"SELECT (SELECT count(*) FROM {t.submissions} WHERE {t.unit} = ? AND {t.person} <> ?)"
        f" + (SELECT count(*) FROM {t.reservations} WHERE {t.unit} = ? AND {t.person} <> ?"
        " AND expires_at > ?)", [unit, person, unit, person, stamp]).fetchone()[0]
    if others >= overlap:
        raise ItemTaken("This item went to someone else while it was open here (your "
                        "reservation had expired and enough people have it now). Your earlier "
                        "answers are kept; the page now shows the item that is yours.")
    expires = (now + timedelta(minutes=minutes)).isoformat(timespec="microseconds")
    conn.execute(
        f"INSERT INTO {t.reservations} ({t.unit}, {t.person}, reserved_at, expires_at)"
        f" VALUES (?, ?, ?, ?) ON CONFLICT({t.unit}, {t.person})"
        " DO UPDATE SET expires_at = excluded.expires_at", [unit, person, stamp, expires])


def renew(conn: Any, tables: Tables, person: str, unit: str, now: datetime,
          minutes: int) -> None:
    """Push ``person``'s reservation of ``unit`` to ``now + minutes`` (every answer renews
    it), inside the caller's transaction."""
    t = tables
    conn.execute(
        f"UPDATE {t.reservations} SET expires_at = ? WHERE {t.unit} = ? AND {t.person} = ?",
        [(now + timedelta(minutes=minutes)).isoformat(timespec="microseconds"), unit, person])


def read_settings(store: Store, key: str, cls: type[S]) -> S:
    """The settings dataclass ``cls`` stored as JSON under project key ``key`` (unknown
    fields ignored, missing ones at their defaults)."""
    raw = json.loads(store.project_info().get(key, "{}"))
    return cls(**{k: v for k, v in raw.items() if k in cls.__dataclass_fields__})  # type: ignore[attr-defined]


def write_settings(store: Store, key: str, cls: type[S], actor: str, action: str,
                   changes: dict[str, Any]) -> S:
    """Change stored settings (``overlap`` and ``reservation_minutes`` at least 1); the
    change goes to the audit log as ``action`` by ``actor``."""
    settings = cls(**(read_settings(store, key, cls).__dict__ | changes))
    if settings.overlap < 1 or settings.reservation_minutes < 1:  # type: ignore[attr-defined]
        raise ValueError("overlap and reservation_minutes must be at least 1")
    with store.transaction(user=actor, role="admin") as conn:
        conn.execute(
            "INSERT INTO project (key, value) VALUES (?, ?) ON CONFLICT(key)"
            " DO UPDATE SET value = excluded.value", [key, dumps(settings.__dict__)])
        append_audit(conn, actor=actor, action=action, subject=None, detail=changes)
    return settings
