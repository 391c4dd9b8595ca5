"""The one timestamp format of the project database (annotation/timestamps.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from annotation.timestamps import now_iso, parse_utc, utc_iso


def test_naive_means_utc_and_other_zones_are_converted():
    naive = datetime(2026, 1, 2, 3, 4, 5, 6)
    assert utc_iso(naive) == "2026-01-02T03:04:05.000006+00:00"
    plus_two = datetime(2026, 1, 2, 5, 4, 5, 6, tzinfo=timezone(timedelta(hours=2)))
    assert utc_iso(plus_two) == "2026-01-02T03:04:05.000006+00:00"


def test_parse_reads_what_is_written_and_old_naive_text():
    moment = datetime(2026, 12, 1, 10, 0, 0, 123456, tzinfo=UTC)
    assert parse_utc(utc_iso(moment)) == moment
    assert parse_utc("2026-12-01T10:00:00.123456") == moment


def test_stamps_sort_as_text_in_time_order():
    early, late = datetime(2026, 1, 1, 9, 59, 59, 999999), datetime(2026, 1, 1, 10)
    assert utc_iso(early) < utc_iso(late)
    assert len(now_iso()) == len(utc_iso(late)) and parse_utc(now_iso()).tzinfo is not None
