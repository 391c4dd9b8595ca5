"""Accounts storage: the ``users``, ``audit_log`` (sign-in events) and ``sessions`` tables.

The rules (password hashing and policy, the sign-in rate limit, the session check, token
generation) are in :mod:`annotation.accounts.auth` and :mod:`annotation.accounts.sessions`;
this module only reads and writes their rows. Both modules work on an :class:`AccountRows`:

* :func:`writing` opens one ``BEGIN IMMEDIATE`` transaction (:meth:`annotation.store.Store.
  transaction`, session check included) and yields the rows inside it, so a read, its check
  and the write that follows are atomic (an account change and its audit row; a sign-in
  attempt, the failure count it depends on and its audit row; a session check and its
  ``last_seen``).
* :func:`reading` gives the rows for reads outside a transaction.

Nothing here decides anything: a caller asks for records and says what to write.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from annotation.store import Store


@dataclass(frozen=True)
class AccountRow:
    """One row of ``users`` (the password hash included: for the accounts module only)."""

    name: str
    role: str
    password_hash: str | None
    email: str | None
    disabled: bool


@dataclass(frozen=True)
class SessionRow:
    """One row of ``sessions`` found by its token hash, with its account's current role
    and state (``account_role`` None: the account no longer exists)."""

    session_id: int
    token_hash: str
    user: str
    role: str
    created_at: str
    last_seen: str
    revoked_at: str | None
    account_role: str | None
    disabled: bool


@dataclass(frozen=True)
class HandoffRow:
    """A session waiting for its handoff code to be exchanged for a token."""

    session_id: int
    handoff_hash: str
    handoff_expires_at: str


_USER_COLUMNS = "name, role, password_hash, email, disabled"


def _account(row: Any) -> AccountRow | None:
    return None if row is None else AccountRow(row[0], row[1], row[2], row[3], bool(row[4]))


class AccountRows:
    """The accounts tables on one connection (inside a transaction when made by
    :func:`writing`)."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def release_reservations_of(self, person: str) -> int:
        """Give back every reservation ``person`` holds, of every workflow (sign-out)."""
        from annotation.store.queue import release_person

        return release_person(self._conn, person)

    # ------------------------------------------------------------- users
    def user(self, name: str) -> AccountRow | None:
        """The account named exactly ``name``, or None."""
        return _account(self._conn.execute(
            f"SELECT {_USER_COLUMNS} FROM users WHERE name = ?", [name]).fetchone())

    def user_ignoring_case(self, name: str) -> AccountRow | None:
        """The account named ``name`` ignoring case (the exact spelling first), or None."""
        return _account(self._conn.execute(
            f"SELECT {_USER_COLUMNS} FROM users"
            " WHERE name = ? COLLATE NOCASE ORDER BY name = ? DESC LIMIT 1",
            [name, name]).fetchone())

    def users_with_email(self, email: str) -> list[AccountRow]:
        """The accounts whose e-mail is ``email`` ignoring case (0, 1 or, by accident, more)."""
        rows = self._conn.execute(
            f"SELECT {_USER_COLUMNS} FROM users WHERE email = ? COLLATE NOCASE", [email])
        return [AccountRow(r[0], r[1], r[2], r[3], bool(r[4])) for r in rows]

    def name_taken(self, name: str) -> str | None:
        """The existing name equal to ``name`` ignoring case, or None."""
        row = self._conn.execute(
            "SELECT name FROM users WHERE name = ? COLLATE NOCASE", [name]).fetchone()
        return None if row is None else str(row[0])

    def email_owner(self, email: str, *, other_than: str | None = None) -> str | None:
        """The account (other than ``other_than``) whose e-mail is ``email`` ignoring case."""
        row = self._conn.execute(
            "SELECT name FROM users WHERE email = ? COLLATE NOCASE AND name IS NOT ?",
            [email, other_than]).fetchone()
        return None if row is None else str(row[0])

    def enabled_admins(self) -> set[str]:
        """Names of the enabled admin accounts."""
        return {r[0] for r in self._conn.execute(
            "SELECT name FROM users WHERE role = 'admin' AND disabled = 0")}

    def users_df(self) -> pd.DataFrame:
        """All accounts: ``name, role, disabled`` (bool), ``created_at, email``; no hashes."""
        df = pd.read_sql_query(
            "SELECT name, role, disabled, created_at, email FROM users ORDER BY created_at, name",
            self._conn)
        df["disabled"] = df["disabled"].astype(bool)
        return df

    def insert_user(self, name: str, role: str, password_hash: str | None, email: str | None,
                    created_at: str) -> None:
        """Add an enabled account."""
        self._conn.execute(
            "INSERT INTO users (name, role, password_hash, email, disabled, created_at)"
            " VALUES (?, ?, ?, ?, 0, ?)", [name, role, password_hash, email, created_at])

    def set_disabled(self, name: str, disabled: bool) -> None:
        self._conn.execute("UPDATE users SET disabled = ? WHERE name = ?", [int(disabled), name])

    def set_role(self, name: str, role: str) -> None:
        self._conn.execute("UPDATE users SET role = ? WHERE name = ?", [role, name])

    def set_password_hash(self, name: str, password_hash: str) -> None:
        self._conn.execute("UPDATE users SET password_hash = ? WHERE name = ?",
                           [password_hash, name])

    def set_email(self, name: str, email: str | None) -> None:
        self._conn.execute("UPDATE users SET email = ? WHERE name = ?", [email, name])

    # ------------------------------------------------------------- audit
    def audit(self, *, actor: str | None, action: str, subject: str | None,
              detail: dict[str, Any] | None = None, at: str | None = None) -> None:
        """Append one event to ``audit_log`` (:func:`annotation.store.append_audit`)."""
        from annotation.store import append_audit

        append_audit(self._conn, actor=actor, action=action, subject=subject, detail=detail,
                     at=at)

    def last_event_at(self, subject: str, actions: tuple[str, ...], until: str) -> str | None:
        """The time of the latest event of ``subject`` among ``actions`` at or before
        ``until``, or None."""
        marks = ", ".join("?" * len(actions))
        row = self._conn.execute(
            f"SELECT MAX(at) FROM audit_log WHERE subject = ? AND at <= ?"
            f" AND action IN ({marks})", [subject, until, *actions]).fetchone()
        return None if row[0] is None else str(row[0])

    def count_events(self, subject: str, action: str, after: str, until: str) -> int:
        """Events ``action`` of ``subject`` in (``after``, ``until``]."""
        return int(self._conn.execute(
            "SELECT count(*) FROM audit_log WHERE subject = ? AND action = ?"
            " AND at > ? AND at <= ?", [subject, action, after, until]).fetchone()[0])

    # ------------------------------------------------------------- sessions
    def insert_session(self, *, token_hash: str | None, handoff_hash: str | None,
                       handoff_expires_at: str | None, user: str, role: str, created_at: str,
                       user_agent: str | None) -> int:
        """Add a session (``last_seen`` = ``created_at``); return its id."""
        cur = self._conn.execute(
            "INSERT INTO sessions (token_hash, handoff_hash, handoff_expires_at, user, role,"
            " created_at, last_seen, user_agent) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [token_hash, handoff_hash, handoff_expires_at, user, role, created_at, created_at,
             user_agent])
        return int(cur.lastrowid or 0)

    def pending_handoff(self, handoff_hash: str) -> HandoffRow | None:
        """The live, not yet redeemed session of a handoff code's hash, or None."""
        row = self._conn.execute(
            "SELECT session_id, handoff_hash, handoff_expires_at FROM sessions"
            " WHERE handoff_hash = ? AND token_hash IS NULL AND revoked_at IS NULL",
            [handoff_hash]).fetchone()
        return None if row is None else HandoffRow(int(row[0]), row[1], row[2])

    def set_token(self, session_id: int, token_hash: str, last_seen: str) -> None:
        """Give a session its token hash; its handoff code is cleared."""
        self._conn.execute(
            "UPDATE sessions SET token_hash = ?, handoff_hash = NULL, handoff_expires_at = NULL,"
            " last_seen = ? WHERE session_id = ?", [token_hash, last_seen, session_id])

    def live_session_user(self, token_hash: str) -> tuple[int, str] | None:
        """``(session_id, user)`` of the unrevoked session of ``token_hash``, or None."""
        row = self._conn.execute(
            "SELECT session_id, user FROM sessions WHERE token_hash = ? AND revoked_at IS NULL",
            [token_hash]).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def session(self, token_hash: str) -> SessionRow | None:
        """The session of ``token_hash`` (revoked or not) with its account's state."""
        row = self._conn.execute(
            "SELECT s.session_id, s.token_hash, s.user, s.role, s.created_at, s.last_seen,"
            " s.revoked_at, u.role, u.disabled FROM sessions s"
            " LEFT JOIN users u ON u.name = s.user WHERE s.token_hash = ?",
            [token_hash]).fetchone()
        if row is None:
            return None
        return SessionRow(int(row[0]), row[1], row[2], row[3], row[4], row[5], row[6], row[7],
                          bool(row[8]))

    def revoke_session(self, session_id: int, at: str) -> None:
        self._conn.execute("UPDATE sessions SET revoked_at = ? WHERE session_id = ?",
                           [at, session_id])

    def revoke_sessions_of(self, user: str, at: str) -> int:
        """Revoke every live session of ``user``; return how many there were."""
        cur = self._conn.execute(
            "UPDATE sessions SET revoked_at = ? WHERE user = ? AND revoked_at IS NULL",
            [at, user])
        return int(cur.rowcount or 0)

    def touch_session(self, session_id: int, last_seen: str) -> None:
        self._conn.execute("UPDATE sessions SET last_seen = ? WHERE session_id = ?",
                           [last_seen, session_id])


@contextmanager
def writing(store: Store, *, user: str | None = None, role: str | None = None,
            public: bool = False) -> Iterator[AccountRows]:
    """The accounts tables inside one transaction of ``store`` (committed at the end,
    rolled back on an exception); ``user``, ``role``, ``public`` as for
    :meth:`annotation.store.Store.transaction`."""
    with store.transaction(user=user, role=role, public=public) as conn:
        yield AccountRows(conn)


def reading(store: Store) -> AccountRows:
    """The accounts tables of ``store`` for reads outside a transaction."""
    return AccountRows(store.conn)
