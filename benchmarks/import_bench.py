"""Import speed: judge-audit's import against a raw ``sqlite3.executemany`` of the same rows.

    python benchmarks/import_bench.py [--judgments 100000] [--repeats 3]

Generates a bundle with ``--judgments`` judge answers (checklist answers and criterion
scores, outputs without images), then, ``--repeats`` times in alternation, into fresh
database files:

* **judge-audit**: ``import_path`` (read, validate every field and reference, write in one
  transaction, with the import log);
* **baseline**: the same files read with ``json.loads`` line by line and written with
  ``sqlite3.executemany`` into the same schema, in one transaction, with no validation.

Both start from a database file with the schema already made (not timed). Prints rows/s
for both (median of the repeats), the ratio, and the ratio of CPU seconds (steadier than
wall time on a shared machine). The goal (issue #18) is a ratio of at least 0.8: every
check of the import costs at most a quarter of the bare writes. Figures are ratios
measured in the same run, so a slow or busy machine slows both alike.

    python benchmarks/import_bench.py --tiif ../shared/fixtures/tiif-bench [--repeats 3]

instead times reading a TIIF-Bench folder (``annotation.formats.tiif.read``: every prompt,
evaluation and result file, checked) against ``json.loads`` of the same JSON and JSONL files,
and prints both and their ratio (no goal: it used to be a test's "under 10 s").
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from annotation.formats.importers import import_path
from annotation.store import Store

JUDGES = ["gpt-5", "gemini-2.5-pro", "qwen3-vl", "gpt-4o", "claude"]
CRITERIA = ["text_instruction_following", "reference_consistency", "visual_quality"]
GOAL = 0.8  # issue #18: validation included, at least 0.8x the speed of the bare writes


def make_bundle(root: Path, n_judgments: int, seed: int = 0) -> dict[str, int]:
    """Write a bundle with ``n_judgments`` judgments over 5 judges; return row counts."""
    rng = random.Random(seed)
    questions_per_task, generators = 7, ["gen-a", "gen-b"]
    per_output = len(JUDGES) * (questions_per_task + len(CRITERIA))
    n_outputs = -(-n_judgments // per_output)
    n_tasks = -(-n_outputs // len(generators))
    root.mkdir(parents=True, exist_ok=True)
    (root / "bundle.json").write_text(json.dumps({
        "name": "bench", "benchmark": "synthetic",
        "criteria": [{"name": c, "label": c, "min": 1, "max": 10, "step": 1} for c in CRITERIA],
        "judges": [{"name": j, "kind": "vlm"} for j in JUDGES],
    }))
    written = 0
    with (root / "tasks.jsonl").open("w") as tasks, (root / "outputs.jsonl").open("w") as outs, \
            (root / "judgments.jsonl").open("w") as judg:
        for t in range(n_tasks):
            task_id = f"task-{t:06d}"
            questions = [{"question_id": f"{task_id}.q{k}", "text": f"Is thing {k} there?",
                          "pass_answer": "yes" if k % 3 else "no", "operator": "f",
                          "target": f"f{k}"} for k in range(questions_per_task)]
            tasks.write(json.dumps({"task_id": task_id, "instruction": f"Draw scene {t}.",
                                    "questions": questions}) + "\n")
            for g in generators:
                output_id = f"{task_id}/{g}"
                outs.write(json.dumps({"output_id": output_id, "task_id": task_id,
                                       "generator": g, "path": None}) + "\n")
                for judge in JUDGES:
                    for q in questions:
                        if written >= n_judgments:
                            break
                        judg.write(json.dumps({
                            "judge": judge, "output_id": output_id,
                            "question_id": q["question_id"],
                            "answer": rng.choice(("yes", "no")),
                            "raw": "yes, it is visible" if rng.random() < 0.5 else None,
                        }) + "\n")
                        written += 1
                    for c in CRITERIA:
                        if written >= n_judgments:
                            break
                        judg.write(json.dumps({"judge": judge, "output_id": output_id,
                                               "criterion": c,
                                               "score": rng.randint(1, 10)}) + "\n")
                        written += 1
    return {"tasks": n_tasks, "outputs": n_tasks * len(generators), "judgments": written}


def run_ours(bundle: Path, db: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``import_path`` into a fresh project (schema made first,
    not timed, as for the baseline)."""
    with Store.open(db):  # create the schema (not timed)
        pass
    start, cpu = time.perf_counter(), time.process_time()
    with Store.open(db) as store:
        import_path(store, bundle)
    return time.perf_counter() - start, time.process_time() - cpu


def run_baseline(bundle: Path, db: Path) -> tuple[float, float]:
    """json.loads + executemany of the same rows into the same schema, no checks: wall
    and CPU seconds."""
    with Store.open(db):  # create the schema (not timed)
        pass
    start, cpu = time.perf_counter(), time.process_time()
    store = Store.open(db, migrate=False)
    conn = store.conn

    def rows(name: str):
        with (bundle / name).open() as fh:
            for line in fh:
                yield json.loads(line)

    header = json.loads((bundle / "bundle.json").read_text())
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO criteria (name, label, min, max, step, position)"
                     " VALUES (?, ?, ?, ?, ?, ?)",
                     [(c["name"], c["label"], c["min"], c["max"], c["step"], i)
                      for i, c in enumerate(header["criteria"])])
    conn.executemany("INSERT INTO judges (name, kind) VALUES (?, ?)",
                     [(j["name"], j["kind"]) for j in header["judges"]])
    tasks = list(rows("tasks.jsonl"))
    conn.executemany("INSERT INTO tasks (task_id, instruction, checklist_id) VALUES (?, ?, ?)",
                     [(t["task_id"], t["instruction"], t["task_id"]) for t in tasks])
    conn.executemany("INSERT INTO questions (question_id, checklist_id, position, text,"
                     " pass_answer, operator, target) VALUES (?, ?, ?, ?, ?, ?, ?)",
                     [(q["question_id"], t["task_id"], i, q["text"], q["pass_answer"],
                       q["operator"], q["target"])
                      for t in tasks for i, q in enumerate(t["questions"])])
    conn.executemany("INSERT INTO outputs (output_id, task_id, generator, path)"
                     " VALUES (?, ?, ?, ?)",
                     [(o["output_id"], o["task_id"], o["generator"], o["path"])
                      for o in rows("outputs.jsonl")])
    conn.executemany("INSERT INTO judgments (judge, output_id, question_id, criterion, answer,"
                     " score, raw) VALUES (?, ?, ?, ?, ?, ?, ?)",
                     ((j["judge"], j["output_id"], j.get("question_id"), j.get("criterion"),
                       j.get("answer"), j.get("score"), j.get("raw"))
                      for j in rows("judgments.jsonl")))
    conn.execute("COMMIT")
    store.close()
    return time.perf_counter() - start, time.process_time() - cpu


def tiif_read(folder: Path, repeats: int) -> int:
    """Median seconds of ``tiif.read(folder)`` against ``json.loads`` of its JSON files."""
    from annotation.formats import tiif

    files = sorted(p for p in folder.rglob("*") if p.suffix in (".json", ".jsonl"))

    def baseline() -> float:
        start = time.perf_counter()
        for path in files:
            text = path.read_text(encoding="utf-8")
            if path.suffix == ".jsonl":
                for line in text.splitlines():
                    if line:
                        json.loads(line)
            else:
                json.loads(text)
        return time.perf_counter() - start

    def ours() -> float:
        start = time.perf_counter()
        tiif.read(folder)
        return time.perf_counter() - start

    base, mine = [], []
    for _ in range(repeats):
        base.append(baseline())
        mine.append(ours())
    t_base, t_ours = statistics.median(base), statistics.median(mine)
    print(f"TIIF-Bench folder {folder}: {len(files):,} JSON/JSONL files; median of {repeats}")
    print(f"baseline json.loads: {t_base:7.3f} s")
    print(f"judge-audit tiif.read: {t_ours:7.3f} s  (ratio {t_ours / t_base:.1f}x the baseline)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judgments", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tiif", type=Path, help="time reading this TIIF-Bench folder instead")
    args = parser.parse_args(argv)
    if args.tiif is not None:
        return tiif_read(args.tiif, args.repeats)
    with tempfile.TemporaryDirectory(prefix="judge-audit-bench-") as tmp:
        tmp_path = Path(tmp)
        counts = make_bundle(tmp_path / "bundle", args.judgments)
        rows = counts["tasks"] + counts["outputs"] + counts["judgments"]
        ours, base = [], []
        for r in range(args.repeats):
            base.append(run_baseline(tmp_path / "bundle", tmp_path / f"base{r}.db"))
            ours.append(run_ours(tmp_path / "bundle", tmp_path / f"ours{r}.db"))
            with Store.open(tmp_path / f"ours{r}.db") as store:
                assert store.counts()["judgments"] == counts["judgments"]
        t_ours, t_base = (statistics.median(t for t, _ in ours),
                          statistics.median(t for t, _ in base))
        c_ours, c_base = (statistics.median(c for _, c in ours),
                          statistics.median(c for _, c in base))
        print(f"bundle: {counts['judgments']:,} judgments, {counts['outputs']:,} outputs, "
              f"{counts['tasks']:,} tasks ({rows:,} rows); median of {args.repeats} runs")
        print(f"baseline executemany: {t_base:7.3f} s  {rows / t_base:>10,.0f} rows/s"
              f"  (CPU {c_base:.3f} s)")
        print(f"judge-audit import:   {t_ours:7.3f} s  {rows / t_ours:>10,.0f} rows/s"
              f"  (CPU {c_ours:.3f} s)")
        ratio = t_base / t_ours
        print(f"ratio (judge-audit / baseline speed): {ratio:.2f}  (goal >= {GOAL:.2f}: "
              f"{'met' if ratio >= GOAL else 'NOT met'}); CPU time only: {c_base / c_ours:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
