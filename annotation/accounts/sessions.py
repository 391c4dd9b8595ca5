"""Signed-in sessions: random, server-side, revocable tokens (table ``sessions``, schema 5).

Being signed in is tied to a secret the browser holds apart from Streamlit's session id:
a 256-bit random token in the ``ja_session`` cookie (HttpOnly, SameSite=Strict, set by the
server: see :mod:`annotation.ui.web_session`). The database keeps only its SHA-256, so a copy
of the database does not sign anyone in.

* :func:`create` starts a session at sign-in. For a browser it returns a one-time
  *handoff code* (valid :data:`HANDOFF_SECONDS`, single use) that the browser exchanges,
  in the body of one POST, for the cookie (:func:`redeem`): the token itself is made then
  and only ever travels in ``Set-Cookie`` and ``Cookie`` headers.
* :func:`check` is **the** check of every human write: :meth:`annotation.store.Store.
  transaction` calls it inside its ``BEGIN IMMEDIATE`` transaction. The session must exist,
  not be revoked, be at most :data:`IDLE_MINUTES` idle and :data:`MAX_HOURS` old; its
  account must be enabled and still have the role the session began with (and the role
  the write needs); the write must be made under the session's own name.
* :func:`sign_out` (:func:`revoke`, logged as ``logout``) and :func:`revoke_user`
  (disable, role change, new password) end sessions at once.

The rows are read and written through :class:`annotation.store.accounts.AccountRows`
(the tables live there); this module holds the rules, and no Streamlit.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from annotation.timestamps import parse_utc, utc_iso

if TYPE_CHECKING:
    from annotation.store.accounts import AccountRows

COOKIE_NAME = "ja_session"
TOKEN_BYTES = 32  # 256 bits
IDLE_MINUTES = 60
MAX_HOURS = 12
HANDOFF_SECONDS = 60
#: last_seen is written at most this often by reads (every write refreshes it anyway)
TOUCH_EVERY = timedelta(seconds=30)

#: What the app tells someone whose session was refused, by reason.
MESSAGES = {
    "no_session": "You are not signed in.",
    "unknown": "You were signed out.",
    "revoked": "You were signed out.",
    "expired": "Your session expired. Please sign in again.",
    "disabled": "You were signed out: your account was disabled.",
    "role": "You were signed out: your role changed.",
    "forbidden": "You were signed out: this needs another role.",
    "other_user": "You were signed out: this browser is signed in as someone else.",
}


class SignedOut(PermissionError):
    """A write (or a page) was refused: no live session for it. ``reason`` is a key of
    :data:`MESSAGES`; nothing of the refused write was committed."""

    def __init__(self, reason: str):
        super().__init__(MESSAGES.get(reason, MESSAGES["unknown"]))
        self.reason = reason

    @property
    def message(self) -> str:
        return MESSAGES.get(self.reason, MESSAGES["unknown"])


@dataclass(frozen=True)
class SessionInfo:
    """A live session: whose, with which role, since when."""

    session_id: int
    user: str
    role: str
    created_at: str
    last_seen: str


def new_secret() -> str:
    """A fresh 256-bit random secret, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def digest(secret: str) -> str:
    """SHA-256 (hex) of a token or handoff code: what the database keeps."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _now(now: datetime | None) -> datetime:
    return now if now is not None else datetime.now(UTC)


def session_valid(
    started_at_iso: str,
    last_seen_iso: str,
    now: datetime | str,
    idle_minutes: float = IDLE_MINUTES,
    max_hours: float = MAX_HOURS,
) -> bool:
    """Whether a session begun at ``started_at_iso`` and last active at ``last_seen_iso``
    is still valid at ``now``: idle for at most ``idle_minutes`` and at most ``max_hours``
    old. Naive times count as UTC; unparsable times or times in the future (beyond one
    minute of clock skew) make it invalid. Pure: no clock, no database.
    """
    try:
        started = parse_utc(started_at_iso)
        seen = parse_utc(last_seen_iso)
        current = parse_utc(now)
    except (TypeError, ValueError):
        return False
    skew = timedelta(minutes=1)
    if started > current + skew or seen > current + skew or seen < started:
        return False
    return (
        current - seen <= timedelta(minutes=idle_minutes)
        and current - started <= timedelta(hours=max_hours)
    )


# ------------------------------------------------------------------ starting and ending
def create(rows: AccountRows, user: str, role: str, *, handoff: bool,
           user_agent: str | None = None, now: datetime | None = None) -> str:
    """Start a session for ``user`` (in the transaction of ``rows``); return its secret.

    ``handoff=True`` (a browser): the secret is a one-time code for :func:`redeem`, valid
    :data:`HANDOFF_SECONDS`; the session has no token until then. ``handoff=False`` (the
    test seam of :mod:`annotation.ui.app_state`): the secret is the session token itself.
    """
    moment = _now(now)
    secret = new_secret()
    token_hash, handoff_hash, handoff_expires = (
        (None, digest(secret), utc_iso(moment + timedelta(seconds=HANDOFF_SECONDS)))
        if handoff else (digest(secret), None, None))
    rows.insert_session(token_hash=token_hash, handoff_hash=handoff_hash,
                        handoff_expires_at=handoff_expires, user=user, role=role,
                        created_at=utc_iso(moment), user_agent=(user_agent or "")[:256] or None)
    return secret


def redeem(rows: AccountRows, code: str, *, now: datetime | None = None) -> str | None:
    """Exchange a handoff code for the session token (in the transaction of ``rows``).

    The code works once, within :data:`HANDOFF_SECONDS`, for a session neither revoked
    nor redeemed; the token is made here, its hash stored, the code's hash cleared (a
    rotation: a new token at every sign-in). None when the code is not good.
    """
    if not isinstance(code, str) or not 20 <= len(code) <= 128:
        return None
    moment = _now(now)
    wanted = digest(code)
    row = rows.pending_handoff(wanted)
    if row is None or not hmac.compare_digest(row.handoff_hash, wanted):
        return None
    if parse_utc(row.handoff_expires_at) < moment:
        return None
    token = new_secret()
    rows.set_token(row.session_id, digest(token), utc_iso(moment))
    return token


def revoke(rows: AccountRows, token: str | None, *,
           now: datetime | None = None) -> str | None:
    """End the session of ``token`` (sign-out); return its user, or None if none was live."""
    if not token:
        return None
    live = rows.live_session_user(digest(token))
    if live is None:
        return None
    rows.revoke_session(live[0], utc_iso(_now(now)))
    return live[1]


def sign_out(rows: AccountRows, token: str | None, *,
             now: datetime | None = None) -> str | None:
    """End the session of ``token``, log ``logout`` for its user and give their
    reservations (of every workflow) back to the queue, all in the caller's transaction (a
    sign-out, from the app or the cookie route); return the user, or None (and do nothing)
    if none was live."""
    user = revoke(rows, token, now=now)
    if user is not None:
        rows.audit(actor=user, action="logout", subject=user)
        rows.release_reservations_of(user)
    return user


def revoke_user(rows: AccountRows, user: str, *, now: datetime | None = None) -> int:
    """End every session of ``user`` at once (disable, role change, new password); return
    how many were live."""
    return rows.revoke_sessions_of(user, utc_iso(_now(now)))


def stale(last_seen: str, now: datetime | None = None) -> bool:
    """Whether ``last_seen`` is older than :data:`TOUCH_EVERY` (time to move it)."""
    try:
        return _now(now) - parse_utc(last_seen) >= TOUCH_EVERY
    except (TypeError, ValueError):
        return True


# ------------------------------------------------------------------ the check
def check(rows: AccountRows, token: str | None, *, user: str | None = None,
          role: str | tuple[str, ...] | None = None, now: datetime | None = None,
          touch: bool = True) -> SessionInfo:
    """The session of ``token``, if it may act now; else raise :class:`SignedOut`.

    Call it inside the write's transaction (``rows`` from
    :func:`annotation.store.accounts.writing`; :func:`annotation.store.accounts.reading`
    for a look outside one). ``user``: the write is made under this name
    (it must be the session's). ``role``: the write needs this role (``admin``), or one
    of these roles (``("adjudicator", "admin")``); None: any role. ``touch`` moves
    ``last_seen`` to now (at most every :data:`TOUCH_EVERY`).
    """
    if not token:
        raise SignedOut("no_session")
    moment = _now(now)
    wanted = digest(token)
    row = rows.session(wanted)
    if row is None or not hmac.compare_digest(row.token_hash, wanted):
        raise SignedOut("unknown")
    # the most telling reason first (disabling and role changes also revoke)
    if row.account_role is None or row.disabled:
        raise SignedOut("disabled")
    if row.account_role != row.role:
        raise SignedOut("role")
    if row.revoked_at is not None:
        raise SignedOut("revoked")
    if not session_valid(row.created_at, row.last_seen, moment):
        raise SignedOut("expired")
    if role is not None and row.account_role not in ((role,) if isinstance(role, str)
                                                     else role):
        raise SignedOut("forbidden")
    if user is not None and user != row.user:
        raise SignedOut("other_user")
    seen = row.last_seen
    if touch and stale(seen, moment):
        seen = utc_iso(moment)
        rows.touch_session(row.session_id, seen)
    return SessionInfo(row.session_id, str(row.user), str(row.account_role),
                       str(row.created_at), str(seen))
