"""Accounts: passwords, roles, sign-in with rate limiting, and the audit trail of both.

The rules of accounts; their rows (tables ``users`` and ``audit_log`` of schema migration
2) are read and written through :mod:`annotation.store.accounts`. No Streamlit import at
module level.

* Passwords are hashed with scrypt (:func:`hash_password`): ``scrypt$n$r$p$salt$hash``
  with a random 16-byte salt; neither a password nor a hash is ever written to the log.
* Every account change (``user.add``, ``user.disable``, ``user.enable``, ``user.role``,
  ``user.password``, ``user.email``) is appended to ``audit_log`` in the same transaction
  as the change, with the actor and the time.
* :func:`authenticate` logs ``login.ok`` / ``login.fail`` and, after
  :data:`MAX_FAILURES` failures for one name within :data:`LOCK_WINDOW`, refuses every
  attempt (``login.locked``), the right password included, until the failures age out.
* Signed-in sessions are in :mod:`annotation.accounts.sessions`; disabling an account, changing
  its role or its password revokes its sessions in the same transaction.
* Passwords follow a policy (:func:`check_password_strength`: length and the zxcvbn
  strength estimator); only the demo builder bypasses it, explicitly.
* Optional single sign-on through Streamlit's OIDC support: :func:`oidc_configured` and
  :func:`user_from_oidc` (see ``docs/accounts.md``).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import re
import secrets
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pandas as pd

from annotation.accounts import sessions
from annotation.accounts.sessions import session_valid  # noqa: F401  (re-exported: auth.session_valid)
from annotation.store import Store, now_iso, process_user
from annotation.store import accounts as accounts_store
from annotation.store.accounts import AccountRow, AccountRows
from annotation.store.adjudications import ROLES as adjudication_roles
from annotation.timestamps import parse_utc, utc_iso

ROLES = ("annotator", "adjudicator", "admin")
#: the roles that may decide disputed answers (issue #16): the adjudications store's
ADJUDICATING = adjudication_roles
MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 1024
#: zxcvbn score a password needs (0-4; 3: "safely unguessable", over 10^8 guesses)
MIN_STRENGTH = 3
_ZXCVBN_MAX = 72
#: words an attacker of this app would try first
PROJECT_WORDS = ("judge-audit", "judge", "audit", "annotator", "admin", "demo", "study")
NAME_RE = re.compile(r"[A-Za-z0-9._@-]{1,64}", re.ASCII)
EMAIL_RE = re.compile(r"[^@\s]+@[^@\s]+", re.ASCII)

SCRYPT_N = 2**14
SCRYPT_R = 8
SCRYPT_P = 1
SCRYPT_DKLEN = 32
SALT_BYTES = 16

MAX_FAILURES = 5
LOCK_WINDOW = timedelta(minutes=5)


class AccountError(ValueError):
    """An account operation was refused; the message says why, for the user."""


class WeakPassword(AccountError):
    """The password is too short (or too long)."""


class UnknownUser(AccountError):
    """No account has that name."""


class DuplicateUser(AccountError):
    """An account with that name (ignoring case) or e-mail already exists."""


@dataclass(frozen=True)
class User:
    """A signed-in (or signed-in-able) account: what the app needs to know about it."""

    name: str
    role: str
    email: str | None = None


# ---------------------------------------------------------------- passwords
def _pw_bytes(password: str) -> bytes:
    return unicodedata.normalize("NFC", password).encode("utf-8")


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int, dklen: int) -> bytes:
    return hashlib.scrypt(
        _pw_bytes(password), salt=salt, n=n, r=r, p=p, dklen=dklen,
        maxmem=256 * n * r * p + 2**20,
    )


def hash_password(password: str) -> str:
    """scrypt-hash ``password``: ``scrypt$n$r$p$salt_b64$hash_b64`` (fresh 16-byte salt).

    No strength check here: see :func:`check_password_strength`.
    """
    salt = secrets.token_bytes(SALT_BYTES)
    digest = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P, SCRYPT_DKLEN)
    return "$".join(
        [
            "scrypt", str(SCRYPT_N), str(SCRYPT_R), str(SCRYPT_P),
            base64.b64encode(salt).decode("ascii"), base64.b64encode(digest).decode("ascii"),
        ]
    )


def verify_password(password: str, encoded: str | None) -> bool:
    """Whether ``password`` matches ``encoded`` (from :func:`hash_password`).

    A malformed or missing hash, or one with absurd scrypt parameters, never matches.
    """
    if not encoded or not isinstance(password, str):
        return False
    parts = encoded.split("$")
    if len(parts) != 6 or parts[0] != "scrypt":
        return False
    try:
        n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
        salt = base64.b64decode(parts[4], validate=True)
        expected = base64.b64decode(parts[5], validate=True)
    except ValueError:
        return False
    if not (2 <= n <= 2**20 and n & (n - 1) == 0 and 1 <= r <= 32 and 1 <= p <= 16):
        return False
    if not salt or not 16 <= len(expected) <= 64:
        return False
    digest = _scrypt(password, salt, n, r, p, len(expected))
    return hmac.compare_digest(digest, expected)


@functools.cache
def _dummy_hash() -> str:
    """A hash to verify against when the name is unknown, so that costs the same time."""
    return hash_password(secrets.token_urlsafe(16))


def check_password_strength(password: str, user_inputs: Iterable[str] = ()) -> None:
    """Raise :class:`WeakPassword` unless ``password`` follows the policy.

    8 to 1024 characters, and hard to guess: zxcvbn (Dropbox's strength estimator, with
    its lists of common passwords, names, words, keyboard patterns, dates and repeats)
    must score it at least :data:`MIN_STRENGTH` of 4, i.e. more than 10^8 guesses, with
    the account's name and e-mail and the project's own words counted as known. Only the
    first 72 characters are estimated (zxcvbn's limit; a longer password is at least as
    strong). The message says why, never the password.
    """
    if not isinstance(password, str):
        raise WeakPassword("the password must be text")
    if len(password) < MIN_PASSWORD_LENGTH:
        raise WeakPassword(
            f"password too short: use at least {MIN_PASSWORD_LENGTH} characters"
        )
    if len(password) > MAX_PASSWORD_LENGTH:
        raise WeakPassword(f"password too long: at most {MAX_PASSWORD_LENGTH} characters")
    from zxcvbn import zxcvbn

    known = [w for w in (*user_inputs, *PROJECT_WORDS) if isinstance(w, str) and w]
    known += [part for w in known for part in re.split(r"[@._-]+", w) if len(part) >= 3]
    result = zxcvbn(password[:_ZXCVBN_MAX], user_inputs=known)
    if result["score"] < MIN_STRENGTH:
        warning = (result.get("feedback") or {}).get("warning") or ""
        hint = f" ({warning.rstrip('.')})" if warning else ""
        raise WeakPassword(
            f"password too easy to guess{hint}: use a longer one, e.g. four or five random "
            "words, not a common password, a name, a date or a keyboard pattern")


# ---------------------------------------------------------------- helpers
def check_name(name: str) -> str:
    """Return ``name`` if it is a valid account name, else raise :class:`AccountError`."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise AccountError(
            f"invalid user name {name!r}: use 1-64 letters, digits, '.', '_', '-' or '@'"
        )
    return name


def check_role(role: str) -> str:
    """Return ``role`` if it is one of :data:`ROLES` (``annotator``, ``adjudicator``,
    ``admin``), else raise :class:`AccountError`."""
    if role not in ROLES:
        raise AccountError(f"invalid role {role!r}: use one of {', '.join(ROLES)}")
    return role


def _check_email(email: str | None) -> str | None:
    if email is None:
        return None
    email = email.strip()
    if not email:
        return None
    if len(email) > 254 or not EMAIL_RE.fullmatch(email):
        raise AccountError(f"invalid e-mail address {email!r}")
    return email


def _audit(
    rows: AccountRows,
    action: str,
    subject: str | None,
    actor: str | None,
    detail: dict[str, Any] | None = None,
    at: str | None = None,
) -> None:
    """Append one event to ``audit_log`` (inside the transaction of ``rows``). An account
    change whose caller named no actor is logged as made by :func:`process_user` (a failed
    sign-in keeps ``None``: nobody was identified)."""
    if actor is None and action.startswith("user."):
        actor = process_user()
    rows.audit(actor=actor, action=action, subject=subject, detail=detail, at=at)


def _require(rows: AccountRows, name: str) -> AccountRow:
    row = rows.user(name)
    if row is None:
        raise UnknownUser(f"no user named {name!r}")
    return row


def _refuse_last_admin(rows: AccountRows, name: str) -> None:
    if rows.enabled_admins() == {name}:
        raise AccountError(
            f"{name!r} is the last enabled admin: add or enable another admin first"
        )


# ---------------------------------------------------------------- account changes
def add_user(
    store: Store,
    name: str,
    role: str,
    password: str | None,
    *,
    actor: str | None = None,
    email: str | None = None,
    allow_weak: bool = False,
) -> User:
    """Create an account; log ``user.add``. Return it.

    ``password=None`` makes an account that can sign in only through OIDC (its e-mail).
    ``allow_weak`` skips the password policy (:func:`check_password_strength`): for the
    demo accounts only, whose passwords are public anyway. Raises
    :class:`DuplicateUser` when the name (ignoring case) or the e-mail is taken,
    :class:`WeakPassword` or :class:`AccountError` on bad input.
    """
    check_name(name)
    check_role(role)
    email = _check_email(email)
    if password is not None and not allow_weak:
        check_password_strength(password, user_inputs=[name, *([email] if email else [])])
    if password is None and email is None:
        raise AccountError("an account without a password needs an e-mail (for OIDC sign-in)")
    encoded = hash_password(password) if password is not None else None
    with accounts_store.writing(store, user=actor, role="admin") as rows:
        clash = rows.name_taken(name)
        if clash:
            raise DuplicateUser(f"a user named {clash!r} already exists")
        if email is not None:
            clash = rows.email_owner(email)
            if clash:
                raise DuplicateUser(f"user {clash!r} already has the e-mail {email!r}")
        stamp = now_iso()
        rows.insert_user(name, role, encoded, email, stamp)
        _audit(rows, "user.add", name, actor,
               {"role": role, "email": email, "password": encoded is not None}, stamp)
    return User(name, role, email)


def list_users(store: Store) -> pd.DataFrame:
    """All accounts: ``name, role, disabled`` (bool), ``created_at, email``; never hashes."""
    return accounts_store.reading(store).users_df()


def get_user(store: Store, name: str) -> User | None:
    """The enabled account ``name`` (exact), or None (unknown or disabled).

    The app calls this on each page to notice an account disabled mid-session.
    """
    row = accounts_store.reading(store).user(name)
    if row is None or row.disabled:
        return None
    return User(row.name, row.role, row.email)


def _set_disabled(store: Store, name: str, actor: str | None, disabled: bool) -> bool:
    with accounts_store.writing(store, user=actor, role="admin") as rows:
        row = _require(rows, name)
        if row.disabled == disabled:
            return False
        if disabled and row.role == "admin":
            _refuse_last_admin(rows, name)
        rows.set_disabled(name, disabled)
        if disabled:
            sessions.revoke_user(rows, name)  # signed out at once, every open tab
        _audit(rows, "user.disable" if disabled else "user.enable", name, actor)
    return True


def disable_user(store: Store, name: str, actor: str | None) -> bool:
    """Disable ``name`` (it can no longer sign in; its sessions are revoked at once, so
    an open tab writes nothing more); log ``user.disable``.

    Returns False (and logs nothing) when it was already disabled. Refuses to disable the
    last enabled admin.
    """
    return _set_disabled(store, name, actor, True)


def enable_user(store: Store, name: str, actor: str | None) -> bool:
    """Enable ``name`` again; log ``user.enable``. False when it was already enabled."""
    return _set_disabled(store, name, actor, False)


def set_role(store: Store, name: str, role: str, actor: str | None) -> bool:
    """Give ``name`` the role ``role``; log ``user.role`` with the old and new role. The
    account's sessions are revoked (it signs in again with its new role).

    Returns False when it already had that role. Refuses to demote the last enabled admin.
    """
    check_role(role)
    with accounts_store.writing(store, user=actor, role="admin") as rows:
        row = _require(rows, name)
        if row.role == role:
            return False
        if row.role == "admin" and not row.disabled:
            _refuse_last_admin(rows, name)
        rows.set_role(name, role)
        sessions.revoke_user(rows, name)
        _audit(rows, "user.role", name, actor, {"from": row.role, "to": role})
    return True


def set_password(
    store: Store, name: str, password: str, actor: str | None, *, allow_weak: bool = False
) -> None:
    """Replace the password of ``name``; log ``user.password`` (without any secret).

    A password change also clears a sign-in lock (failures before it no longer count) and
    revokes the account's sessions. The password must pass
    :func:`check_password_strength` (``allow_weak``: the demo builder only).
    """
    if not allow_weak:
        row = accounts_store.reading(store).user(name)
        known = [name, *([row.email] if row and row.email else [])]
        check_password_strength(password, user_inputs=known)
    encoded = hash_password(password)
    with accounts_store.writing(store, user=actor, role="admin") as rows:
        _require(rows, name)
        rows.set_password_hash(name, encoded)
        sessions.revoke_user(rows, name)
        _audit(rows, "user.password", name, actor)


def set_email(store: Store, name: str, email: str | None, actor: str | None) -> bool:
    """Set (or, with None, clear) the e-mail of ``name``; log ``user.email``.

    The e-mail is what links an OIDC sign-in to the account. False when unchanged.
    """
    email = _check_email(email)
    with accounts_store.writing(store, user=actor, role="admin") as rows:
        row = _require(rows, name)
        if row.email == email:
            return False
        if email is None and row.password_hash is None:
            raise AccountError(f"{name!r} has no password: it needs its e-mail to sign in")
        if email is not None:
            clash = rows.email_owner(email, other_than=name)
            if clash:
                raise DuplicateUser(f"user {clash!r} already has the e-mail {email!r}")
        rows.set_email(name, email)
        _audit(rows, "user.email", name, actor, {"from": row.email, "to": email})
    return True


# ---------------------------------------------------------------- signing in
#: events after which earlier failed sign-ins no longer count
_LOCK_RESETS = ("login.ok", "user.password", "user.enable")


def _failures(rows: AccountRows, subject: str, now: str, since: str) -> int:
    """Failed sign-ins for ``subject`` in (``since``, ``now``], after its last success."""
    reset = rows.last_event_at(subject, _LOCK_RESETS, now)
    start = max(since, reset) if reset else since
    return rows.count_events(subject, "login.fail", start, now)


def is_locked(store: Store, name: str, *, now: datetime | None = None) -> bool:
    """Whether sign-in for ``name`` is refused for too many recent failures."""
    name = (name or "").strip()
    rows = accounts_store.reading(store)
    row = rows.user_ignoring_case(name)
    subject = row.name if row else name[:128]
    moment = utc_iso(now)
    since = utc_iso(parse_utc(moment) - LOCK_WINDOW)
    return _failures(rows, subject, moment, since) >= MAX_FAILURES


def authenticate(
    store: Store, name: str, password: str, *, now: datetime | None = None
) -> User | None:
    """Check ``name`` and ``password``; return the :class:`User`, or None.

    None for an unknown name, a wrong password, a disabled account or an account without
    a password (OIDC only), each logged as ``login.fail`` with a ``reason``; a success is
    logged as ``login.ok``. After :data:`MAX_FAILURES` failures within
    :data:`LOCK_WINDOW` every attempt is refused and logged as ``login.locked``, until the
    failures are older than the window (or an admin sets a new password). Names match
    ignoring case. ``now`` (default: the clock) stamps the events and places the window.
    """
    name = (name or "").strip()
    password = password if isinstance(password, str) else ""
    moment = utc_iso(now)
    since = utc_iso(parse_utc(moment) - LOCK_WINDOW)
    outside = accounts_store.reading(store)
    row = outside.user_ignoring_case(name)
    subject = row.name if row else name[:128]
    if _failures(outside, subject, moment, since) >= MAX_FAILURES:
        with accounts_store.writing(store, public=True) as rows:
            _audit(rows, "login.locked", subject, subject, {}, moment)
        return None
    # the slow part, outside the write lock; the dummy hash makes unknown names as slow
    ok = verify_password(password, row.password_hash if row and row.password_hash
                         else _dummy_hash())
    reason = None
    if row is None:
        reason = "unknown_user"
    elif row.password_hash is None:
        reason = "no_password"
    elif not ok:
        reason = "bad_password"
    elif row.disabled:
        reason = "disabled"
    with accounts_store.writing(store, public=True) as rows:
        # a concurrent attempt may have completed the lock meanwhile
        if _failures(rows, subject, moment, since) >= MAX_FAILURES:
            _audit(rows, "login.locked", subject, subject, {}, moment)
            return None
        if reason is not None:
            _audit(rows, "login.fail", subject, subject, {"reason": reason}, moment)
            return None
        _audit(rows, "login.ok", subject, subject, {"method": "password"}, moment)
    assert row is not None
    return User(row.name, row.role, row.email)


# ---------------------------------------------------------------- OIDC
_AUTH_KEYS = ("redirect_uri", "cookie_secret", "client_id", "client_secret",
              "server_metadata_url")


def oidc_configured() -> bool:
    """Whether Streamlit's OIDC sign-in (``st.login()``) is configured.

    True when ``.streamlit/secrets.toml`` (or another Streamlit secrets source) has an
    ``[auth]`` section with non-empty ``redirect_uri``, ``cookie_secret``, ``client_id``,
    ``client_secret`` and ``server_metadata_url``. Streamlit is imported, and its secrets
    read, only here; no Streamlit, no secrets file or no ``[auth]`` section gives False.
    ``st.login()`` additionally needs ``Authlib`` installed (``pip install streamlit[auth]``).
    """
    try:
        import streamlit as st

        secrets_ = st.secrets
        if not secrets_.load_if_toml_exists():
            return False
        section = secrets_.get("auth")
        if section is None:
            return False
        return all(isinstance(section.get(k), str) and section.get(k) for k in _AUTH_KEYS)
    except Exception:  # any failure to read the secrets means "not configured"
        return False


def user_from_oidc(store: Store, email: str | None) -> User | None:
    """The enabled account whose e-mail is ``email`` (ignoring case), or None.

    ``email`` is the address the OIDC provider vouched for (``st.user.email``); an account
    is linked to it with ``judge-audit user add NAME --email E``. Logs ``login.ok``
    (``method: oidc``) or ``login.fail`` (reason ``no_account``, ``ambiguous`` or
    ``disabled``): call it once per sign-in, not on every rerun.
    """
    email = (email or "").strip()
    if not email:
        return None
    found = accounts_store.reading(store).users_with_email(email)
    enabled = [r for r in found if not r.disabled]
    with accounts_store.writing(store, public=True) as rows:
        if len(enabled) == 1:
            r = enabled[0]
            _audit(rows, "login.ok", r.name, r.name, {"method": "oidc", "email": email})
            return User(r.name, r.role, r.email)
        reason = "ambiguous" if enabled else ("disabled" if found else "no_account")
        subject = found[0].name if len(found) == 1 else None
        _audit(rows, "login.fail", subject, None,
               {"method": "oidc", "email": email, "reason": reason})
    return None


# ---------------------------------------------------------------- demo
def create_demo_accounts(store: Store, accounts: Iterable[tuple[str, str, str]]) -> list[str]:
    """Create the missing demo ``accounts`` ``(name, role, password)`` (idempotent; the
    demo's own list is :func:`annotation.project_files.demo_accounts`); return the names
    created. Their passwords are public, so the password policy is not applied.

    An existing account of the same name is left as it is.
    """
    created = []
    for name, role, password in accounts:
        if accounts_store.reading(store).name_taken(name):
            continue
        add_user(store, name, role, password, actor="demo", allow_weak=True)
        created.append(name)
    return created
