"""The human-work rows of a bundle, read for export and written by an import.

Reads every row of ``prelabel_readings``, ``conflict_verdicts``, ``conflict_resolutions``,
``tree_reviews`` (superseded rows included, in row order), ``flags``, ``queue_submissions``
and ``queue_visits`` (every workflow kind) for :func:`annotation.formats.bundle.write_bundle`,
and writes the rows an import brings (checked by
:func:`annotation.formats.human_work.check`) inside the import's transaction, in history
order: the answers through the one answer writer (:func:`annotation.store.answers.supersede`;
the readings through :func:`annotation.store.conflicts.record_reading`), so a written row
supersedes the current answer exactly as in the app.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from annotation.records import WorkRow
from annotation.store import answers
from annotation.store.conflicts import record_reading

if TYPE_CHECKING:
    from annotation.store import Store

#: bundle file -> (table, row id column, columns read; the answer kind when it has one)
TABLES: dict[str, tuple[str, str, tuple[str, ...], str | None]] = {
    "prelabel_readings.jsonl": ("prelabel_readings", "reading_id", (
        "verifier", "task_id", "image_idx", "attribute", "value", "created_at", "source",
        "image_sha256"), "reading"),
    "conflict_verdicts.jsonl": ("conflict_verdicts", "verdict_id", (
        "verifier", "task_id", "conflict", "automatic", "agrees", "label", "note", "blind",
        "created_at", "source"), "verdict"),
    "conflict_resolutions.jsonl": ("conflict_resolutions", "resolution_id", (
        "task_id", "conflict", "label", "note", "decided_by", "created_at"), None),
    "tree_reviews.jsonl": ("tree_reviews", "review_id", (
        "reviewer", "output_id", "instance", "origin", "reason", "box", "note", "created_at",
        "source"), "review"),
    "adjudications.jsonl": ("adjudications", "adjudication_id", (
        "kind", "item", "target", "decision", "note", "decided_by", "created_at"), None),
    "gold_answers.jsonl": ("gold_answers", "gold_id", (
        "output_id", "question_id", "criterion", "answer", "score", "source", "note",
        "created_by", "created_at"), None),
    "flags.jsonl": ("flags", "flag_id", (
        "annotator", "output_id", "reason", "question_id", "note", "created_at"), None),
    "submissions.jsonl": ("queue_submissions", "submission_id", (
        "kind", "person", "unit", "submitted_at"), None),
    "visits.jsonl": ("queue_visits", "visit_id", (
        "kind", "person", "unit", "started_at", "active_seconds"), None),
}
_HISTORY = {"prelabel_readings.jsonl", "conflict_verdicts.jsonl",
            "conflict_resolutions.jsonl", "tree_reviews.jsonl", "adjudications.jsonl",
            "gold_answers.jsonl"}


def stored_rows(store: Store, names: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """The stored rows of the files ``names``, oldest first, each with its ``row_id`` (and
    ``supersedes`` for the history tables)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        table, row_id, columns, _ = TABLES[name]
        extra = ", supersedes" if name in _HISTORY else ""
        cur = store.conn.execute(f"SELECT {row_id} AS row_id, {', '.join(columns)}{extra}"
                                 f" FROM {table} ORDER BY {row_id}")
        names_ = [d[0] for d in cur.description]
        out[name] = [dict(zip(names_, r, strict=True)) for r in cur.fetchall()]
    return out


def image_hashes(store: Store) -> dict[tuple[str, int], str]:
    """(task id, image index) -> the image's content hash, for every stored input image."""
    return {(t, int(i)): h for t, i, h in store.conn.execute(
        "SELECT task_id, idx, sha256 FROM images")}


def image_counts(store: Store) -> dict[str, int]:
    """Task id -> number of stored input images."""
    return dict(store.conn.execute("SELECT task_id, count(*) FROM images GROUP BY task_id"))


def read_all(store: Store) -> dict[str, list[WorkRow]]:
    """Every human-work row for export, per bundle file (files without rows left out):
    ``record_id`` / ``supersedes`` are the database row ids as text (the writer numbers
    the lines anew)."""
    out: dict[str, list[WorkRow]] = {}
    for name, rows in stored_rows(store, TABLES).items():
        if not rows:
            continue
        if name == "prelabel_readings.jsonl":
            rows = _one_history_per_image(rows)
        out[name] = [
            WorkRow({k: v for k, v in r.items() if k not in ("row_id", "supersedes")},
                    str(r["row_id"]),
                    None if r.get("supersedes") is None else str(r["supersedes"]))
            for r in rows]
    return out


def _one_history_per_image(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Readings with one history per (verifier, image, attribute), as schema 9 keeps them:
    a project migrated from schema 8 can hold two first readings of one image given in
    two tasks (each task had its own); the later one is exported as superseding the
    earlier (the newer reading is the current one there too: ``current_image_readings``),
    so that the export imports."""
    last: dict[tuple[Any, ...], int] = {}
    out = []
    for r in rows:
        key = (r["verifier"], r["image_sha256"], r["attribute"])
        if r.get("supersedes") is None and key in last:
            r = {**r, "supersedes": last[key]}
        last[key] = r["row_id"]
        out.append(r)
    return out


def _insert(conn: sqlite3.Connection, table: str, values: Mapping[str, Any]) -> int:
    columns = list(values)
    cur = conn.execute(f"INSERT INTO {table} ({', '.join(columns)})"
                       f" VALUES ({', '.join('?' for _ in columns)})",
                       [values[c] for c in columns])
    return int(cur.lastrowid or 0)


def write(conn: sqlite3.Connection, work: Mapping[str, list[WorkRow]], import_id: int) -> None:
    """Write the checked rows of an import (inside its transaction), each file in file
    order. A history row's ``supersedes`` is ``db:<row id>`` or the file id of a row
    written before it; it must be the current answer, else nothing is written
    (``RuntimeError``: the check and the store disagree)."""
    source = f"import:{import_id}"
    for name, rows in work.items():
        table, _, _, kind = TABLES[name]
        written: dict[str, int] = {}
        for row in rows:
            values = dict(row.values)
            if name in _HISTORY:
                expected = None
                if row.supersedes is not None:
                    expected = (int(row.supersedes[3:]) if row.supersedes.startswith("db:")
                                else written[row.supersedes])
                if "source" in TABLES[name][2]:
                    values["source"] = values.get("source") or source
                if kind is None:  # resolutions, adjudications, gold: no answer kind
                    values["supersedes"] = expected
                    new_id = _insert(conn, table, values)
                else:
                    done = (record_reading(conn, values) if kind == "reading"
                            else answers.supersede(conn, kind, values, previous=True))
                    previous = None if done.previous is None else int(
                        done.previous[answers.ANSWER_KINDS[kind].row_id])
                    if previous != expected:
                        raise RuntimeError(f"{name}: row {row.record_id} superseded row "
                                           f"{previous}, not {expected}")
                    new_id = done.row_id
                assert row.record_id is not None
                written[row.record_id] = new_id
            else:
                _insert(conn, table, values)
