"""``judge-audit report`` tells on stderr which table, and in per-judge loops which judge, it
is on, with the seconds elapsed (issue #18 item 1); stdout stays the list of files."""

from __future__ import annotations

import re

import pytest

from annotation.cli import main
from annotation.results.report import TABLES


@pytest.mark.slow
def test_report_progress_per_table_and_judge(tmp_path, capsys, engine_demo):
    db = engine_demo
    out = tmp_path / "report"
    assert main(["report", "--db", str(db), "--out", str(out), "--bootstrap", "20"]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines, "no progress on stderr"
    pattern = re.compile(r"^report: ([^(]+?)(?: \((.*)\))? \.\.\. (\d+\.\d) s$")
    parsed = [pattern.match(line) for line in lines]
    assert all(parsed), [line for line, m in zip(lines, parsed, strict=True) if not m]
    tables = [m.group(1) for m in parsed if m and not m.group(2)]
    assert sorted(t for t in tables if t in TABLES) == sorted(TABLES)  # each table once
    # per-judge lines inside the judge loops: "judge i of n: <judge>, ..."
    for table in ("ratings", "checklist", "alt_test"):
        details = [m.group(2) for m in parsed if m and m.group(1) == table and m.group(2)]
        assert details, table
        counted = [re.match(r"judge (\d+) of (\d+): (.+)", d) for d in details]
        assert all(counted), details
        assert all(1 <= int(c.group(1)) <= int(c.group(2)) for c in counted if c)
        assert any(c.group(1) == c.group(2) for c in counted if c), details  # reaches n
    seconds = [float(m.group(3)) for m in parsed if m]
    assert seconds == sorted(seconds)  # elapsed since the start
    assert lines[-1].startswith("report: done")
    # stdout: the files written, nothing else
    printed = captured.out.split()
    assert printed and all(p.startswith(str(out)) for p in printed)


def test_report_quiet_prints_no_progress(tmp_path, capsys, engine_demo):
    db = engine_demo
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "r"), "--bootstrap", "0",
                 "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
