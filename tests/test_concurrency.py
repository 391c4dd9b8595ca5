"""Issue #7, part 1: no answer is lost when many annotators write at the same time.

Twenty annotator processes write 200 answers each into one real SQLite file (WAL), through
the code path of the annotation page (``workflow.AnnotationSession`` calls these
functions): ``workflow.next_item`` -> ``start_visit`` / ``load_item`` / ``my_answers`` ->
``give_answer`` for each question and criterion (one answer corrected, superseding the
first) -> ``submit``; when nothing is left to annotate, ``previous_item`` (the page's
``B``) and changed answers that supersede. Every acknowledged answer (the id
``give_answer`` returned) goes to a per-process file. While they run, the test watches the
overlap rule from outside; afterwards it checks that the database holds exactly the
acknowledged answers, with the supersede chains the processes saw, and passes
``PRAGMA integrity_check``.

The twenty processes are forked from a ``multiprocessing`` fork server. This file is also
a worker script (``python tests/test_concurrency.py worker ...``), which
``tests/test_crash.py`` and ``tests/test_backup.py`` run as subprocesses.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sqlite3
import sys
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).resolve()
ANSWERS = ("yes", "no", "cant_tell")

N_WORKERS = 20
ANSWERS_PER_WORKER = 200
OVERLAP = 3
N_TASKS = 50
GENERATORS = ("gen_a", "gen_b", "gen_c", "gen_d")  # 50 x 4 = 200 outputs
N_QUESTIONS = 3


# --------------------------------------------------------------------- the project
def make_bundle(root: Path, n_tasks: int = N_TASKS, generators: tuple[str, ...] = GENERATORS,
                n_questions: int = N_QUESTIONS) -> Path:
    """A bundle of ``n_tasks`` tasks x ``generators`` outputs, each with a real PNG (a
    distinct colour, so distinct content hashes), ``n_questions`` questions per task and
    one 1-10 criterion."""
    from PIL import Image

    root.mkdir(parents=True, exist_ok=True)
    (root / "bundle.json").write_text(json.dumps({
        "name": "concurrency", "benchmark": "synthetic",
        "criteria": [{"name": "visual_quality", "label": "Visual Quality", "min": 1,
                      "max": 10, "step": 1}],
        "judges": [],
    }), encoding="utf-8")
    tasks, outputs = [], []
    for t in range(n_tasks):
        ref = root / "images" / f"t{t}.png"
        ref.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (16, 16), (t % 256, 0, 255 - t % 256)).save(ref)
        tasks.append({
            "task_id": f"t{t}", "instruction": f"Draw scene {t}.",
            "images": [{"path": f"images/t{t}.png", "role": "reference"}],
            "questions": [{"question_id": f"t{t}.q{q}", "text": f"Question {q}?",
                           "pass_answer": "yes"} for q in range(n_questions)],
        })
        for g, gen in enumerate(generators):
            out = root / "outputs" / gen / f"t{t}.png"
            out.parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (16, 16), (t % 256, 1 + g, (t // 256) % 256)).save(out)
            outputs.append({"output_id": f"t{t}/{gen}", "task_id": f"t{t}", "generator": gen,
                            "path": f"outputs/{gen}/t{t}.png"})
    for name, rows in (("tasks.jsonl", tasks), ("outputs.jsonl", outputs)):
        (root / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root


def make_project(tmp: Path, location: str | None = None, **bundle_options: Any) -> Path | str:
    """A project database (WAL) built from :func:`make_bundle`, overlap set to 3: a SQLite
    file in ``tmp``, or the PostgreSQL database of the URL ``location``."""
    from annotation.formats.importers import import_path
    from annotation.store import Store
    from annotation.work import workflow

    db: Path | str = location or tmp / "project.db"
    with Store.open(db) as store:
        import_path(store, make_bundle(tmp / "bundle", **bundle_options), user="test")
        workflow.set_settings(store, "admin", overlap=OVERLAP)
    return db


# --------------------------------------------------------------------- the worker
def annotate_loop(db: Path | str, annotator: str, n_answers: int, seed: int, out: IO[str],
                  go: Path | None = None, stop: Path | None = None) -> int:
    """Annotate like the page does until ``n_answers`` answers are acknowledged (forever
    when ``n_answers`` is 0) or the file ``stop`` exists. Each acknowledged answer is
    written to ``out`` as one JSON line, flushed, after ``give_answer`` returned: ``id``,
    the key and value, and ``prev``, the id this process last acknowledged for the same key
    (what the row should supersede). Returns the number of answers written."""
    from annotation.store import Store
    from annotation.work import workflow

    rng = random.Random(seed)
    store = Store.open(db)
    if go is not None:  # start together with the others: maximal contention
        out.write(json.dumps({"ready": annotator}) + "\n")
        out.flush()
        while not go.exists():
            time.sleep(0.01)
    last: dict[tuple[str, str], int] = {}
    written = 0
    review_cursor: str | None = None

    def more() -> bool:
        return (n_answers <= 0 or written < n_answers) and not (stop and stop.exists())

    def answer(output_id: str, visit: int, question_id: str | None = None,
               criterion: str | None = None, lo: float = 1, hi: float = 10) -> None:
        nonlocal written
        mine = workflow.my_answers(store, annotator, output_id)
        value: dict[str, Any]
        if question_id is not None:
            choices = [a for a in ANSWERS if a != mine.answers.get(question_id)]
            value = {"answer": rng.choice(choices)}
        else:
            current = mine.scores.get(criterion or "")
            choices = [s for s in range(int(lo), int(hi) + 1) if s != current]
            value = {"score": float(rng.choice(choices))}
        key = (output_id, question_id or criterion or "")
        ack = workflow.give_answer(store, annotator, output_id, question_id=question_id,
                                   criterion=criterion, active=(visit, 0.5), **value)
        out.write(json.dumps({"id": ack, "annotator": annotator, "output_id": output_id,
                              "question_id": question_id, "criterion": criterion,
                              "prev": last.get(key), **value}) + "\n")
        out.flush()
        last[key] = ack
        written += 1

    try:
        while more():
            output_id = workflow.next_item(store, annotator)
            reviewing = output_id is None
            if reviewing:  # all done: go back (B) through the submitted items, changing
                output_id = workflow.previous_item(store, annotator, review_cursor)
                if output_id is None:
                    output_id = workflow.previous_item(store, annotator, None)
                if output_id is None:
                    raise RuntimeError(f"{annotator}: nothing to annotate and nothing done")
                review_cursor = output_id
            visit = workflow.start_visit(store, annotator, output_id)
            item = workflow.load_item(store, output_id)
            targets: list[dict[str, Any]] = [{"question_id": q.question_id}
                                             for q in item.questions]
            targets += [{"criterion": c.name, "lo": c.min, "hi": c.max} for c in item.criteria]
            if reviewing:
                targets = [rng.choice(targets)]
            else:  # answer everything, then correct one answer (a superseding row)
                targets.append(rng.choice(targets[:len(item.questions)] or targets))
            for target in targets:
                if not more():
                    break
                answer(output_id, visit, **target)
            else:
                if not reviewing:
                    workflow.submit(store, annotator, output_id)
    finally:
        store.close()
    return written


def _worker_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="one annotator writing answers")
    parser.add_argument("db", help="a SQLite file or a postgresql:// URL")
    parser.add_argument("annotator")
    parser.add_argument("--answers", type=int, default=ANSWERS_PER_WORKER,
                        help="stop after this many (0: until killed)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="-", help="acknowledgement file ('-': stdout)")
    parser.add_argument("--go", type=Path, help="wait for this file before writing")
    parser.add_argument("--stop", type=Path, help="stop once this file exists")
    args = parser.parse_args(argv)
    options = {"go": args.go, "stop": args.stop}
    if args.out == "-":
        annotate_loop(args.db, args.annotator, args.answers, args.seed, sys.stdout, **options)
    else:
        with open(args.out, "w", encoding="utf-8") as out:
            annotate_loop(args.db, args.annotator, args.answers, args.seed, out, **options)
    return 0


def _annotator_process(db: str, annotator: str, seed: int, ack_path: str, go: str) -> None:
    """One of the twenty annotators (a process forked by the fork server): acknowledgements
    to ``ack_path``; an exception's traceback to ``ack_path + '.err'`` and exit code 1."""
    try:
        with open(ack_path, "w", encoding="utf-8") as out:
            annotate_loop(db, annotator, ANSWERS_PER_WORKER, seed, out, Path(go))
    except BaseException:
        Path(ack_path + ".err").write_text(traceback.format_exc(), encoding="utf-8")
        raise SystemExit(1) from None


def worker_command(db: Path | str, annotator: str, *, answers: int = ANSWERS_PER_WORKER,
                   seed: int = 0, out: str | Path = "-", go: Path | None = None,
                   stop: Path | None = None) -> list[str]:
    """The command line of one worker process."""
    cmd = [sys.executable, str(SCRIPT), "worker", str(db), annotator, "--answers",
           str(answers), "--seed", str(seed), "--out", str(out)]
    return cmd + (["--go", str(go)] if go else []) + (["--stop", str(stop)] if stop else [])


def worker_env() -> dict[str, str]:
    """The environment of a worker: the checkout importable, output unbuffered."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return dict(os.environ, PYTHONPATH=path, PYTHONUNBUFFERED="1")


def read_acks(text: str) -> list[dict[str, Any]]:
    """The acknowledgement lines of a worker (complete lines only; no ``ready`` lines)."""
    lines = text.split("\n")[:-1]  # a line cut by a kill has no newline: not acknowledged
    return [row for row in map(json.loads, lines) if "id" in row]


# --------------------------------------------------------------------- checks
def is_url(db: Path | str) -> bool:
    from annotation.store.pg import is_url

    return is_url(str(db))


@contextmanager
def reader(db: Path | str) -> Iterator[Any]:
    """A connection to ``db`` for the checks: :func:`sqlite3.connect` for a file, the
    store's own connection (same SQL dialect) for a PostgreSQL URL."""
    if is_url(db):
        from annotation.store import Store

        with Store.open(str(db), migrate=False) as store:
            yield store.conn
        return
    conn = sqlite3.connect(db, timeout=30, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


def integrity(db: Path | str) -> tuple[str, list[Any]]:
    """``PRAGMA integrity_check`` and ``PRAGMA foreign_key_check`` of the file at ``db``.
    PostgreSQL checks foreign keys on every write and has no such pragmas: there, every
    row of every table is read (a damaged page fails the read)."""
    if is_url(db):
        with reader(db) as conn:
            tables = [r[0] for r in conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = 'public' AND table_type = 'BASE TABLE'")]
            for table in tables:
                conn.execute(f"SELECT * FROM {table}").fetchall()
        return "ok", []
    conn = sqlite3.connect(db, timeout=30)
    try:
        ok = conn.execute("PRAGMA integrity_check").fetchone()[0]
        return ok, conn.execute("PRAGMA foreign_key_check").fetchall()
    finally:
        conn.close()


def assert_acks_stored(db: Path | str, acks: list[dict[str, Any]], *,
                       exact: bool = True) -> None:
    """Every acknowledged answer is stored once, as acknowledged. ``exact``: and nothing
    else was written by the app, with the supersede chain each process saw."""
    ids = Counter(a["id"] for a in acks)
    assert [i for i, n in ids.items() if n > 1] == [], "one id acknowledged twice"
    with reader(db) as conn:
        rows = {r[0]: tuple(r) for r in conn.execute(
            "SELECT annotation_id, annotator, output_id, question_id, criterion, answer, score,"
            " supersedes FROM annotations WHERE source = 'app'")}
    missing = [a["id"] for a in acks if a["id"] not in rows]
    assert missing == [], f"{len(missing)} acknowledged answers are not in the database"
    for a in acks:
        row = rows[a["id"]]
        assert row[1:7] == (a["annotator"], a["output_id"], a["question_id"], a["criterion"],
                            a.get("answer"), a.get("score")), (a, row)
        if exact:
            assert row[7] == a["prev"], ("supersede chain differs", a, row)
    if exact:
        assert set(rows) == set(ids), "rows written that no process acknowledged"


def overlap_snapshot(conn: sqlite3.Connection) -> dict[str, int]:
    """Per output, submissions + live reservations, read in one snapshot."""
    stamp = datetime.now(UTC).isoformat(timespec="microseconds")
    conn.execute("BEGIN")
    try:
        return dict(conn.execute(
            "SELECT output_id, count(*) FROM (SELECT output_id FROM submissions"
            " UNION ALL SELECT output_id FROM reservations WHERE expires_at > ?)"
            " GROUP BY output_id", [stamp]).fetchall())
    finally:
        conn.execute("COMMIT")


# --------------------------------------------------------------------- the test
def _errors(procs: list[tuple[Path, Any]]) -> list[tuple[str, int | None, str]]:
    """(acknowledgement file, exit code, traceback) of each worker that failed."""
    failed = []
    for ack_file, proc in procs:
        err = ack_file.with_name(ack_file.name + ".err")
        text = err.read_text(encoding="utf-8") if err.exists() else ""
        if text or proc.exitcode not in (0, None):
            failed.append((ack_file.name, proc.exitcode, text))
    return failed


@pytest.mark.slow  # ~20 s on 2 idle cores; the default configuration runs slow tests
@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_twenty_annotators_lose_no_answer(tmp_path: Path, engine: str,
                                          request: pytest.FixtureRequest) -> None:
    """On SQLite (one file, WAL) and on PostgreSQL (issue #18: the same processes, each with
    its own connection to one server)."""
    db = make_project(tmp_path, request.getfixturevalue("pg_url")
                      if engine == "postgresql" else None)
    go = tmp_path / "go"
    # Twenty processes forked from a fork server that imported judge-audit once: separate
    # interpreters and SQLite connections, without paying twenty interpreter start-ups.
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["annotation.work.workflow"])
    procs = []
    for i in range(N_WORKERS):
        ack_file = tmp_path / f"acks-{i:02d}.jsonl"
        proc = ctx.Process(target=_annotator_process,
                           args=(str(db), f"ann{i:02d}", i, str(ack_file), str(go)))
        proc.start()
        procs.append((ack_file, proc))
    readers = ExitStack()
    monitor = readers.enter_context(reader(db))
    peaks: dict[str, int] = {}
    snapshots = 0
    started = time.monotonic()
    try:
        while not all(f.exists() and f.read_text().count("\n") >= 1 for f, _ in procs):
            assert all(p.is_alive() for _, p in procs), _errors(procs)
            assert time.monotonic() - started < 120, "workers did not start"
            time.sleep(0.05)
        go.touch()
        while any(p.is_alive() for _, p in procs):
            for output_id, taken in overlap_snapshot(monitor).items():
                peaks[output_id] = max(peaks.get(output_id, 0), taken)
            snapshots += 1
            assert time.monotonic() - started < 300, "workers did not finish"
            time.sleep(0.02)
        for output_id, taken in overlap_snapshot(monitor).items():  # and once at the end
            peaks[output_id] = max(peaks.get(output_id, 0), taken)
    finally:
        for _, p in procs:
            if p.is_alive():
                p.kill()
            p.join()
        readers.close()
    assert _errors(procs) == []

    acks = [a for f, _ in procs for a in read_acks(f.read_text())]
    assert len(acks) == N_WORKERS * ANSWERS_PER_WORKER
    assert_acks_stored(db, acks)

    # the overlap rule, seen from outside while they ran, and at the end
    assert snapshots > 10
    assert max(peaks.values()) == OVERLAP  # the limit was reached: the check is not vacuous
    assert {o: n for o, n in peaks.items() if n > OVERLAP} == {}
    with reader(db) as conn:
        per_output = Counter(r[0] for r in conn.execute("SELECT output_id FROM submissions"))
        assert {o: n for o, n in per_output.items() if n > OVERLAP} == {}
        n_outputs = conn.execute("SELECT count(*) FROM outputs").fetchone()[0]
        # 4,000 answers exceed 200 outputs x 3 x 5 answers: every output reached its overlap
        assert sum(per_output.values()) == n_outputs * OVERLAP
        # a submission follows a complete set of that annotator's answers
        needed = N_QUESTIONS + 1
        incomplete = conn.execute(
            "SELECT s.annotator, s.output_id FROM submissions s WHERE (SELECT count(*) FROM"
            " current_annotations a WHERE a.annotator = s.annotator"
            " AND a.output_id = s.output_id) != ?", [needed]).fetchall()
        assert incomplete == []
        audited = conn.execute(
            "SELECT count(*) FROM audit_log WHERE action = 'item.submit'").fetchone()[0]
        assert audited == sum(per_output.values())
        changed = conn.execute(
            "SELECT count(*) FROM annotations WHERE supersedes IS NOT NULL").fetchone()[0]
        assert changed >= N_WORKERS * 20  # corrections and reviews superseded earlier rows
    assert integrity(db) == ("ok", [])


def test_the_checks_see_a_lost_answer(tmp_path: Path) -> None:
    """The acknowledgement check fails on a database that misses an acknowledged answer,
    on a wrong value and on rows nobody acknowledged (so the test above can fail)."""
    db = make_project(tmp_path, n_tasks=2, generators=("g",))
    ack_file = tmp_path / "acks.jsonl"
    with open(ack_file, "w", encoding="utf-8") as out:
        assert annotate_loop(db, "solo", 6, 1, out) == 6
    acks = read_acks(ack_file.read_text())
    assert_acks_stored(db, acks)
    with pytest.raises(AssertionError, match="not in the database"):
        assert_acks_stored(db, acks + [dict(acks[0], id=10_000)])
    with pytest.raises(AssertionError):
        assert_acks_stored(db, [dict(acks[0], answer="other", score=None)] + acks[1:])
    with pytest.raises(AssertionError, match="no process acknowledged"):
        assert_acks_stored(db, acks[:-1])


if __name__ == "__main__" and sys.argv[1:2] == ["worker"]:
    raise SystemExit(_worker_main(sys.argv[2:]))
