"""The throughput benchmark (``benchmarks/writers_bench.py``) as a user runs it, briefly, on
each engine: several processes writing answers at once, every answer the writers were told
was written stored exactly once. Its speed is the benchmark's business (README,
*PostgreSQL*); this test only checks that it runs and loses nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.slow


def test_concurrent_writers_store_every_answer_once(engine_db):
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "writers_bench.py"),
                          "--writers", "3", "--seconds", "1", "--db", engine_db],
                         capture_output=True, text=True, timeout=600)
    report = run.stdout + run.stderr[-3000:]
    assert run.returncode == 0, report
    line = run.stdout.strip().splitlines()[-1].split()
    assert line[0] == "3" and float(line[1]) > 0, report
    assert "True" in line, report
