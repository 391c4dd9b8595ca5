"""Timestamps as the project database keeps them: UTC, ISO 8601 with microseconds, so that
they sort as text. One place for writing and reading them (accounts, sessions, the store)."""

from __future__ import annotations

from datetime import UTC, datetime


def now_iso() -> str:
    """The current time in UTC, ISO 8601 with microseconds (sorts as text)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def utc_iso(moment: datetime | None = None) -> str:
    """``moment`` (naive = UTC; None = now) as UTC ISO 8601 with microseconds."""
    if moment is None:
        return now_iso()
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def parse_utc(text: str | datetime) -> datetime:
    """A stored timestamp (or a datetime; naive = UTC) as an aware UTC datetime."""
    moment = text if isinstance(text, datetime) else datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
