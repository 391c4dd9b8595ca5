"""The short soak (issue #14): 3 annotators typing for 30 s against ``judge-audit serve``,
with bursts faster than the server; not one key press lost, duplicated or left pending.

It runs ``benchmarks/soak.py`` as a user would and reads its JSON figures. Speed targets
are the benchmark's business (README); this test only fails on lost, duplicated or pending
input, submissions that did not happen and server errors.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import ROOT
from tests.helpers.browser import shots  # noqa: F401  (skips without Chromium / Playwright)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_short_soak_loses_and_duplicates_nothing(tmp_path):
    out = tmp_path / "soak.json"
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "soak.py"),
                          "--annotators", "3", "--minutes", "0.5", "--json", str(out)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    figures = json.loads(out.read_text()) if out.exists() else {}
    report = run.stdout + run.stderr[-3000:]
    assert figures, report
    assert figures["presses"] >= 30 and figures["bursts"] >= 5, report  # it did type
    assert figures["submits"] >= 1, report
    assert (figures["lost"], figures["duplicated"], figures["pending"],
            figures["submits_lost"]) == (0, 0, 0, 0), report
    assert figures["rows"] >= figures["presses"] // 2, report
    assert (figures["tracebacks"], figures["http_5xx"], figures["integrity"]) == (0, 0, "ok")
    assert run.returncode == 0, report


def test_two_servers_on_one_postgresql_lose_and_duplicate_nothing(tmp_path, pg_cluster):
    """Issue #18, item 4: 4 annotators split between two ``judge-audit serve`` processes on
    one PostgreSQL database (sessions, reservations and answers shared through it)."""
    url = pg_cluster.url(pg_cluster.create_database(), media=tmp_path / "media")
    out = tmp_path / "soak.json"
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "soak.py"),
                          "--annotators", "4", "--minutes", "0.5", "--servers", "2",
                          "--db", url, "--json", str(out)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    figures = json.loads(out.read_text()) if out.exists() else {}
    report = run.stdout + run.stderr[-3000:]
    assert figures, report
    assert (figures["servers"], figures["engine"]) == (2, "postgresql")
    assert figures["presses"] >= 30 and figures["submits"] >= 1, report
    assert (figures["lost"], figures["duplicated"], figures["pending"],
            figures["submits_lost"]) == (0, 0, 0, 0), report
    assert (figures["tracebacks"], figures["http_5xx"], figures["integrity"]) == (0, 0, "ok")
    assert run.returncode == 0, report
