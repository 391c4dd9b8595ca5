"""Pairwise and ranking items and their answers in the store (schema 10, issue #17).

Tables ``pairs``, ``rankings``; the judges' answers ``pair_judgments`` and
``ranking_judgments`` (one per judge and item); the humans' answers ``pair_annotations``
and ``ranking_annotations``, append-only: they are written through the one answer writer
(:func:`annotation.store.answers.supersede`) with the kinds ``pair`` and ``ranking``, so
a changed answer supersedes the current one. This module writes an import's checked
records (inside its transaction), reads them back for export, and reads them as tidy
frames for the statistics (:func:`pair_frames`).
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotation.formats.pairs import dumps_order
from annotation.records import Pair, PairAnswer, ProjectData, Ranking, RankingAnswer
from annotation.store import answers, dumps, now_iso

if TYPE_CHECKING:
    from annotation.store import Store

#: a person's preference on a pair, a person's order of a ranking's outputs
PAIR_KIND = answers.ITEM_KINDS["pair"]
RANKING_KIND = answers.ITEM_KINDS["ranking"]

def _rows(conn: sqlite3.Connection, sql: str) -> list[dict[str, Any]]:
    cur = conn.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def stored(store: Store) -> dict[str, Any]:
    """What :func:`annotation.formats.pairs.check` compares an import with: items by id,
    judge answers by (judge, item), human histories by (annotator, item), oldest first."""
    conn = store.conn
    out: dict[str, Any] = {
        "pairs": {r["pair_id"]: r for r in _rows(conn, "SELECT * FROM pairs")},
        "rankings": {r["ranking_id"]: r for r in _rows(conn, "SELECT * FROM rankings")},
        "pair_judgments": {(r["judge"], r["pair_id"]): r
                           for r in _rows(conn, "SELECT * FROM pair_judgments")},
        "ranking_judgments": {(r["judge"], r["ranking_id"]): r
                              for r in _rows(conn, "SELECT * FROM ranking_judgments")},
        "pair_annotations": {}, "ranking_annotations": {},
    }
    for table, item, row_id in (("pair_annotations", "pair_id", "pair_annotation_id"),
                                ("ranking_annotations", "ranking_id",
                                 "ranking_annotation_id")):
        for r in _rows(conn, f"SELECT * FROM {table} ORDER BY {row_id}"):
            out[table].setdefault((r["annotator"], r[item]), []).append(r)
    return out


def write(conn: sqlite3.Connection, p: ProjectData, import_id: int) -> None:
    """Write an import's checked pairs, rankings and answers (inside its transaction); the
    human answers in history order (``created_at``, then file order) through the answer
    writer, each superseding the person's current answer on the item."""
    conn.executemany(
        "INSERT INTO pairs (pair_id, output_a, output_b, task_id, meta, import_id)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [(x.pair_id, x.output_a, x.output_b, x.task_id, dumps(x.meta), import_id)
         for x in p.pairs])
    conn.executemany(
        "INSERT INTO rankings (ranking_id, outputs, task_id, import_id) VALUES (?, ?, ?, ?)",
        [(r.ranking_id, json.dumps(r.outputs, ensure_ascii=False), r.task_id, import_id)
         for r in p.rankings])
    conn.executemany(
        "INSERT INTO pair_judgments (judge, pair_id, preference, raw, import_id)"
        " VALUES (?, ?, ?, ?, ?)",
        [(a.who, a.pair_id, a.preference, a.raw, import_id)
         for a in p.pair_answers if a.is_judge])
    conn.executemany(
        "INSERT INTO ranking_judgments (judge, ranking_id, ranked, raw, import_id)"
        " VALUES (?, ?, ?, ?, ?)",
        [(a.who, a.ranking_id, dumps_order(a.order), a.raw, import_id)
         for a in p.ranking_answers if a.is_judge])
    stamp = now_iso()
    source = f"import:{import_id}"
    humans: list[PairAnswer | RankingAnswer] = [
        *(a for a in p.pair_answers if not a.is_judge),
        *(a for a in p.ranking_answers if not a.is_judge)]
    for a in sorted(humans, key=lambda a: a.created_at or stamp):
        row: dict[str, Any] = {"annotator": a.who, "note": a.note,
                               "created_at": a.created_at or stamp,
                               "source": a.source or source, "import_id": import_id}
        if isinstance(a, PairAnswer):
            row |= {"pair_id": a.pair_id, "preference": a.preference,
                    "shown_first": a.shown_first}
            answers.supersede(conn, PAIR_KIND, row)
        else:
            row |= {"ranking_id": a.ranking_id, "ranked": dumps_order(a.order)}
            answers.supersede(conn, RANKING_KIND, row)


def read_into(store: Store, p: ProjectData) -> None:
    """Every pair, ranking and answer (superseded human answers included, in row order)
    into ``p``, for export."""
    conn = store.conn
    p.pairs = [Pair(r["pair_id"], r["output_a"], r["output_b"], r["task_id"],
                    json.loads(r["meta"]))
               for r in _rows(conn, "SELECT * FROM pairs ORDER BY rowid")]
    p.rankings = [Ranking(r["ranking_id"], json.loads(r["outputs"]), r["task_id"])
                  for r in _rows(conn, "SELECT * FROM rankings ORDER BY rowid")]
    p.pair_answers = [
        PairAnswer(r["judge"], r["pair_id"], r["preference"], True, r["raw"])
        for r in _rows(conn, "SELECT * FROM pair_judgments ORDER BY pair_judgment_id")]
    p.pair_answers += [
        PairAnswer(r["annotator"], r["pair_id"], r["preference"], False, None, r["note"],
                   r["created_at"], r["source"], r["shown_first"])
        for r in _rows(conn, "SELECT * FROM pair_annotations ORDER BY pair_annotation_id")]
    p.ranking_answers = [
        RankingAnswer(r["judge"], r["ranking_id"],
                      None if r["ranked"] is None else json.loads(r["ranked"]), True, r["raw"])
        for r in _rows(conn, "SELECT * FROM ranking_judgments ORDER BY ranking_judgment_id")]
    p.ranking_answers += [
        RankingAnswer(r["annotator"], r["ranking_id"], json.loads(r["ranked"]), False, None,
                      r["note"], r["created_at"], r["source"])
        for r in _rows(conn, "SELECT * FROM ranking_annotations"
                       " ORDER BY ranking_annotation_id")]


def pair_frames(store: Store) -> dict[str, pd.DataFrame]:
    """The pairwise and ranking data of the statistics, tidy (current human answers only):

    * ``pairs``: pair_id, output_a, output_b, task_id (the pair's, else output A's),
      generator_a, generator_b;
    * ``pair_answers``: pair_id, rater, kind (``judge``/``human``), preference (None: a
      judge's unparsed answer), shown_first (a person's left output, when recorded);
    * ``rankings``: ranking_id, outputs (list), task_id;
    * ``ranking_answers``: ranking_id, rater, kind, order (list; None: unparsed);
    * ``generators``: output_id -> generator.
    """
    conn = store.conn
    pairs = pd.read_sql_query(
        "SELECT p.pair_id, p.output_a, p.output_b, COALESCE(p.task_id, oa.task_id) AS task_id,"
        " oa.generator AS generator_a, ob.generator AS generator_b FROM pairs p"
        " JOIN outputs oa ON oa.output_id = p.output_a"
        " JOIN outputs ob ON ob.output_id = p.output_b ORDER BY p.rowid", conn)
    pair_answers = pd.read_sql_query(
        "SELECT pair_id, judge AS rater, 'judge' AS kind, preference, NULL AS shown_first"
        " FROM pair_judgments UNION ALL SELECT pair_id, annotator, 'human', preference,"
        " shown_first FROM current_pair_annotations",
        conn)
    rankings = pd.read_sql_query("SELECT ranking_id, outputs, task_id FROM rankings"
                                 " ORDER BY rowid", conn)
    rankings["outputs"] = rankings["outputs"].map(json.loads)
    ranking_answers = pd.read_sql_query(
        "SELECT ranking_id, judge AS rater, 'judge' AS kind, ranked FROM ranking_judgments"
        " UNION ALL SELECT ranking_id, annotator, 'human', ranked"
        " FROM current_ranking_annotations", conn)
    ranking_answers["order"] = ranking_answers.pop("ranked").map(
        lambda t: None if t is None else json.loads(t))
    generators = dict(conn.execute("SELECT output_id, generator FROM outputs"))
    return {"pairs": pairs, "pair_answers": pair_answers, "rankings": rankings,
            "ranking_answers": ranking_answers,
            "generators": pd.DataFrame({"output_id": list(generators),
                                        "generator": list(generators.values())})}


# ------------------------------------------------------------------ for the workflows
def pair_ids(store: Store) -> list[str]:
    """Every pair id, in import order (the units of the ``pairs`` workflow)."""
    return [r[0] for r in store.conn.execute("SELECT pair_id FROM pairs ORDER BY rowid")]


def ranking_ids(store: Store) -> list[str]:
    """Every ranking id, in import order (the units of the ``rankings`` workflow)."""
    return [r[0] for r in store.conn.execute("SELECT ranking_id FROM rankings ORDER BY rowid")]


def pair_outputs(store: Store, pair_id: str) -> tuple[str, str, str | None]:
    """(output_a, output_b, task_id) of a pair; KeyError when there is none."""
    row = store.conn.execute("SELECT output_a, output_b, task_id FROM pairs WHERE pair_id = ?",
                             [pair_id]).fetchone()
    if row is None:
        raise KeyError(pair_id)
    return str(row[0]), str(row[1]), row[2]


def ranking_outputs(store: Store, ranking_id: str) -> tuple[list[str], str | None]:
    """(outputs, task_id) of a ranking; KeyError when there is none."""
    row = store.conn.execute("SELECT outputs, task_id FROM rankings WHERE ranking_id = ?",
                             [ranking_id]).fetchone()
    if row is None:
        raise KeyError(ranking_id)
    return list(json.loads(row[0])), row[1]
