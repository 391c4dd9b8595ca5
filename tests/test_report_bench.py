"""The report benchmark's memory figure is each child's own peak (issue #18 item 1):
``RUSAGE_CHILDREN`` gives the largest child so far, so the second of two children used to
print the first one's peak. Not a timed test: it only checks the measuring function."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MIB = 1 << 20


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("report_bench",
                                                  ROOT / "benchmarks" / "report_bench.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["report_bench"] = module
    spec.loader.exec_module(module)
    return module


def _allocating(tmp_path: Path, mib: int) -> Path:
    script = tmp_path / f"alloc_{mib}.py"
    # bytes written, so every page is resident (a zero-filled buffer may not be)
    script.write_text(f"block = b'\\x01' * ({mib} * {MIB})\nprint(len(block))\n")
    return script


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
@pytest.mark.parametrize("order", [(400, 40), (40, 400)])
def test_each_child_reports_its_own_peak(bench, tmp_path, order):
    base = bench.run_child([str(_allocating(tmp_path, 1))]).peak  # the interpreter alone
    peaks = {}
    for mib in order:
        wall, peak, cpu = bench.run_child([str(_allocating(tmp_path, mib))])
        assert wall > 0 and cpu > 0
        peaks[mib] = peak
    assert peaks[400] >= base + 400 * 0.95
    # the small child, before or after the big one, shows its own peak only
    assert base + 40 * 0.9 <= peaks[40] < base + 40 + 60


def test_run_child_runs_a_module_and_passes_arguments(bench, tmp_path):
    wall, peak, _ = bench.run_child(["-m", "json.tool", "--help"])
    assert wall > 0 and peak > 1
    script = tmp_path / "argv.py"
    out = tmp_path / "argv.txt"
    script.write_text(f"import sys\nopen({str(out)!r}, 'w').write(' '.join(sys.argv[1:]))\n")
    bench.run_child([str(script), "a", "b c"])
    assert out.read_text() == "a b c"
