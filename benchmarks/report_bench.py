"""Report speed and memory: ``judge-audit report`` against a minimal numpy/scipy script.

    python benchmarks/report_bench.py [--outputs 5000] [--bootstrap 1000]

Generates a project of ``--outputs`` outputs x 12 checklist questions x 4 judges and 6 rating
criteria, with 3 annotators on 600 outputs (answers correlated with a hidden truth), imports
it, then runs, each in a fresh child process (so peak memory is that run's own):

* **judge-audit**: ``judge-audit report --bootstrap N`` (every table of the report: ratings
  with Fisher and cluster-bootstrap intervals for PLCC/SRCC/Kendall, the leave-one-out
  baseline, the ensemble, checklist agreement against the majority, each annotator and
  each other judge, operators, reliability with a bootstrap interval, judge comparisons,
  system level, alt-test, report.html);
* **baseline**: a minimal script reading the same database with ``sqlite3`` + pandas and
  computing the core numbers: per judge and criterion Pearson with its Fisher interval,
  Spearman and Kendall with N-resample percentile bootstrap intervals (vectorized Pearson
  and Spearman; Kendall with scipy per resample), MAE and bias; per judge checklist
  agreement and Cohen's kappa against the human majority; Krippendorff's alpha per
  criterion (the ``krippendorff`` package, no interval).

Prints wall time, CPU time and peak resident memory of both, and their ratio. Each child
reports its own peak (``VmHWM`` of its address space at exit, :func:`run_child`), so neither
inherits the other's. Goal (issue #18): judge-audit at most 2x the baseline's time, under
1 GiB at ``--outputs 25000``; ``--outputs 100000`` finishes under 2 GiB. ``--keep DIR``
keeps the project to profile it (``py-spy record -- python -m annotation.cli report --db
DIR/study.db ...``).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

JUDGES = ["judge-a", "judge-b", "judge-c", "judge-d"]
CRITERIA = ["c1", "c2", "c3", "c4", "c5", "c6"]
ANNOTATORS = ["h1", "h2", "h3"]
QUESTIONS = 12


def make_bundle(root: Path, n_outputs: int, n_annotated: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / "bundle.json").write_text(json.dumps({
        "name": "report bench", "benchmark": "synthetic",
        "criteria": [{"name": c, "label": c, "min": 1, "max": 10, "step": 1} for c in CRITERIA],
        "judges": [{"name": j, "kind": "vlm"} for j in JUDGES]}))
    generators = ["g1", "g2", "g3", "g4", "g5"]
    n_tasks = n_outputs // len(generators)
    ops = ["f", "g", "⊕", "C"]
    with (root / "tasks.jsonl").open("w") as tasks, \
            (root / "outputs.jsonl").open("w") as outs, \
            (root / "judgments.jsonl").open("w") as judg, \
            (root / "annotations.jsonl").open("w") as ann:
        k = 0
        for t in range(n_tasks):
            qs = [{"question_id": f"t{t}.q{i}", "text": f"question {i}",
                   "pass_answer": "yes" if i % 4 else "no", "operator": ops[i % 4],
                   "target": f"{ops[i % 4]}{i // 4}"} for i in range(QUESTIONS)]
            tasks.write(json.dumps({"task_id": f"t{t}", "instruction": "x", "questions": qs})
                        + "\n")
            for g in generators:
                oid = f"t{t}/{g}"
                outs.write(json.dumps({"output_id": oid, "task_id": f"t{t}", "generator": g,
                                       "path": None}) + "\n")
                quality = rng.gauss(5.5 + generators.index(g) * 0.3, 2)
                truth = [rng.random() < 0.7 for _ in qs]
                for j, judge in enumerate(JUDGES):
                    for q, ok in zip(qs, truth):
                        flip = rng.random() < 0.12 + 0.02 * j
                        said = ok != flip
                        answer = q["pass_answer"] if said else ("no" if q["pass_answer"] ==
                                                                "yes" else "yes")
                        judg.write(json.dumps({"judge": judge, "output_id": oid,
                                               "question_id": q["question_id"],
                                               "answer": answer}) + "\n")
                    for c in CRITERIA:
                        s = min(10, max(1, round(quality + rng.gauss(0.3 * j, 1.5))))
                        judg.write(json.dumps({"judge": judge, "output_id": oid,
                                               "criterion": c, "score": s}) + "\n")
                if k < n_annotated:
                    for h in ANNOTATORS:
                        for q, ok in zip(qs, truth):
                            said = ok != (rng.random() < 0.08)
                            answer = q["pass_answer"] if said else (
                                "no" if q["pass_answer"] == "yes" else "yes")
                            ann.write(json.dumps({"annotator": h, "output_id": oid,
                                                  "question_id": q["question_id"],
                                                  "answer": answer}) + "\n")
                        for c in CRITERIA:
                            s = min(10, max(1, round(quality + rng.gauss(0, 1.2))))
                            ann.write(json.dumps({"annotator": h, "output_id": oid,
                                                  "criterion": c, "score": s}) + "\n")
                k += 1


BASELINE = r'''
import sqlite3, sys
import numpy as np, pandas as pd, krippendorff
from scipy import stats
db, n_boot = sys.argv[1], int(sys.argv[2])
conn = sqlite3.connect(db)
hs = pd.read_sql("SELECT output_id, annotator, criterion, score FROM current_annotations"
                 " WHERE criterion IS NOT NULL", conn)
js = pd.read_sql("SELECT output_id, judge, criterion, score FROM judgments"
                 " WHERE criterion IS NOT NULL", conn)
ha = pd.read_sql("SELECT output_id, annotator, question_id, answer FROM current_annotations"
                 " WHERE question_id IS NOT NULL", conn)
ja = pd.read_sql("SELECT output_id, judge, question_id, answer FROM judgments"
                 " WHERE question_id IS NOT NULL", conn)
rng = np.random.default_rng(0)
rows = []
mean = hs.groupby(["criterion", "output_id"]).score.mean()
for (judge, crit), g in js.groupby(["judge", "criterion"]):
    h = mean[crit]
    x = g.set_index("output_id").score.reindex(h.index).to_numpy(float)
    y = h.to_numpy(float)
    r = stats.pearsonr(x, y)
    lo, hi = r.confidence_interval()
    idx = rng.integers(0, len(x), (n_boot, len(x)))
    rx, ry = stats.rankdata(x[idx], axis=1), stats.rankdata(y[idx], axis=1)
    rx -= rx.mean(1, keepdims=True); ry -= ry.mean(1, keepdims=True)
    sp = (rx * ry).sum(1) / np.sqrt((rx ** 2).sum(1) * (ry ** 2).sum(1))
    kb = [stats.kendalltau(x[i], y[i])[0] for i in idx]
    rows.append((judge, crit, r[0], lo, hi, stats.spearmanr(x, y)[0],
                 *np.percentile(sp, [2.5, 97.5]), stats.kendalltau(x, y)[0],
                 *np.nanpercentile(kb, [2.5, 97.5]), np.abs(x - y).mean(), (x - y).mean()))
votes = ha.groupby(["output_id", "question_id"]).answer.agg(lambda s: s.mode()[0]
                                                             if len(s.mode()) == 1 else None)
for judge, g in ja.groupby("judge"):
    m = g.set_index(["output_id", "question_id"]).answer.to_frame().join(votes.rename("h"),
                                                                         how="inner").dropna()
    a, b = (m.answer == "yes").to_numpy(), (m.h == "yes").to_numpy()
    po = (a == b).mean(); pe = a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean())
    rows.append((judge, "checklist", po, (po - pe) / (1 - pe)))
for crit, g in hs.groupby("criterion"):
    wide = g.pivot(index="annotator", columns="output_id", values="score")
    rows.append((crit, krippendorff.alpha(wide.to_numpy(float), level_of_measurement="interval")))
print(len(rows))
'''


PEAK = r'''
import atexit, resource, runpy, sys
out = sys.argv.pop(1)


def _peak():
    """This process's own high-water RSS in KiB: VmHWM of the address space exec gave it
    (ru_maxrss would carry the parent's peak over a vfork/fork + exec)."""
    try:
        with open("/proc/self/status") as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    use = resource.getrusage(resource.RUSAGE_SELF)
    with open(out, "w") as f:
        f.write(f"{kib} {use.ru_utime + use.ru_stime}")


atexit.register(_peak)
if sys.argv[1] == "-m":
    sys.argv = [sys.argv[2], *sys.argv[3:]]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
'''


class Run(NamedTuple):
    wall: float  # seconds
    peak: float  # MiB, the child's own high-water resident memory
    cpu: float  # seconds of CPU (user + system) of the child itself


def run_child(args: list[str], *, stdout: int | None = subprocess.DEVNULL) -> Run:
    """Wall seconds, peak resident memory (MiB) and CPU seconds of ``python <args>`` (a
    script and its arguments, or ``-m module ...``) in a fresh child process. On a shared
    machine the CPU seconds move less than the wall time.

    The peak is the child's own: it writes the high-water RSS of its address space
    (``VmHWM`` in ``/proc/self/status``) when it exits. ``RUSAGE_CHILDREN`` would give the
    largest child so far, so a second child would inherit the first one's peak."""
    with tempfile.TemporaryDirectory(prefix="judge-audit-peak-") as tmp:
        out = Path(tmp) / "peak"
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", PEAK, str(out), *args], check=True,
                       stdout=stdout)
        wall = time.perf_counter() - start
        kib, cpu = out.read_text().split()
        return Run(wall, int(kib) / 1024, float(cpu))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--outputs", type=int, default=5000)
    parser.add_argument("--annotated", type=int, default=600)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep the generated project (bundle, study.db, report) in DIR and "
                             "reuse it when DIR already holds one of the same size (to profile "
                             "`judge-audit report --db DIR/study.db` afterwards)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="judge-audit-report-bench-") as tmp:
        root = args.keep if args.keep is not None else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        db = root / "study.db"
        size = f"{args.outputs} {args.annotated}"
        stamp = root / "size.txt"
        if db.exists() and stamp.exists() and stamp.read_text() == size:
            print(f"project: reusing {db}")
        else:
            db.unlink(missing_ok=True)
            make_bundle(root / "bundle", args.outputs, args.annotated)
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "annotation.cli", "import",
                            str(root / "bundle"), "--db", str(db), "--quiet"], check=True)
            stamp.write_text(size)
            print(f"imported in {time.perf_counter() - start:.1f} s")
        print(f"project: {args.outputs:,} outputs x {QUESTIONS} questions x {len(JUDGES)} "
              f"judges, {len(CRITERIA)} criteria, {len(ANNOTATORS)} annotators on "
              f"{args.annotated} outputs")
        (root / "baseline.py").write_text(BASELINE)
        base = run_child([str(root / "baseline.py"), str(db), str(args.bootstrap)])
        ours = run_child(["-m", "annotation.cli", "report", "--db", str(db), "--out",
                          str(root / "report"), "--bootstrap", str(args.bootstrap), "--quiet"])
        for name, run in (("baseline (numpy/scipy core numbers):", base),
                          ("judge-audit report:                 ", ours)):
            print(f"{name} {run.wall:6.1f} s  (CPU {run.cpu:6.1f} s)  peak {run.peak:6.0f} MiB")
        ratio = ours.wall / base.wall
        limit = 1024 if args.outputs <= 25000 else 2048
        print(f"time ratio {ratio:.2f} (goal <= 2: {'met' if ratio <= 2 else 'NOT met'}; CPU "
              f"ratio {ours.cpu / base.cpu:.2f}); peak {'under' if ours.peak < limit else 'OVER'}"
              f" {limit // 1024} GiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
