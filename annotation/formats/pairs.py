"""Pairwise and ranking items of a bundle and their answers (``docs/bundle-format.md``,
*Pairs and rankings*; issue #17).

* ``pairs.jsonl``: ``{pair_id, output_a, output_b, task_id?, meta?}``: two outputs compared,
  ``output_a`` shown left / first (the pairwise protocol of GenAI-Arena's judge benchmark,
  "GenAI Arena: An Open Evaluation Platform for Generative Models", Sec. 4: "A is better,
  B is better, tie, both are bad").
* ``rankings.jsonl``: ``{ranking_id, outputs: [output_id, ...], task_id?}``: outputs to be
  ordered best first (the human ranking of TIIF-Bench, "TIIF-Bench: How Does Your T2I Model
  Follow Your Instructions?", Sec. 4.2).
* In ``judgments.jsonl`` a line with ``pair_id`` is a judge's preference
  ``{judge, pair_id, preference, raw?}`` (``preference`` one of :data:`PREFERENCES`, or null
  with ``raw`` when the judge's text could not be parsed); a line with ``ranking_id`` is a
  judge's order ``{judge, ranking_id, order, raw?}``. In ``annotations.jsonl`` the same
  with ``annotator`` (and ``note``, ``created_at``, ``source``; a pair answer may say
  ``shown_first``: ``a`` or ``b``, the output the person saw on the left). Human answers
  are append-only histories like the other annotations: several lines of one person on one
  item are that answer's history, oldest first.

This module reads each line (errors naming file, line and field), checks the records
against each other and the database (:func:`check`), and turns records back into lines
(:func:`pair_line`, :func:`ranking_line`, :func:`answer_line`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from annotation.formats.human_work import Reader, optional_time
from annotation.records import (
    PREFERENCES,
    Pair,
    PairAnswer,
    Problems,
    ProjectData,
    Ranking,
    RankingAnswer,
    RankOrder,
)

FILES = ("pairs.jsonl", "rankings.jsonl")
PAIR_KEYS = {"pair_id", "output_a", "output_b", "task_id", "meta"}
RANKING_KEYS = {"ranking_id", "outputs", "task_id"}
#: the fields of a pair / ranking answer line, for judges and for people
JUDGE_PAIR_KEYS = {"judge", "pair_id", "preference", "raw"}
JUDGE_RANKING_KEYS = {"judge", "ranking_id", "order", "raw"}
HUMAN_PAIR_KEYS = {"annotator", "pair_id", "preference", "shown_first", "note", "created_at",
                   "source"}
HUMAN_RANKING_KEYS = {"annotator", "ranking_id", "order", "note", "created_at", "source"}
SIDES = ("a", "b")


def is_answer(obj: Mapping[str, Any]) -> bool:
    """A judgments.jsonl / annotations.jsonl line that answers a pair or a ranking."""
    return "pair_id" in obj or "ranking_id" in obj


# --------------------------------------------------------------------------- reading
def read_pair(rd: Reader, obj: dict, where: tuple[str, int | None]) -> Pair | None:
    """One line of ``pairs.jsonl``."""
    rd.keys(obj, PAIR_KEYS, where)
    pair_id = rd.text(obj, "pair_id", where)
    a = rd.text(obj, "output_a", where)
    b = rd.text(obj, "output_b", where)
    task_id = rd.text(obj, "task_id", where, required=False)
    meta = obj.get("meta", {})
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        rd.add(*where, "meta", "must be an object")
        return None
    if a is not None and a == b:
        rd.add(*where, "output_b", f"the same output as output_a ({a!r}): a pair compares "
               "two outputs")
        return None
    if pair_id is None or a is None or b is None:
        return None
    return Pair(pair_id, a, b, task_id, meta, origin=where)


def _ids(rd: Reader, value: Any, where: tuple[str, int | None], fld: str, *,
         nested: bool) -> RankOrder | None:
    """A list of output ids (with ``nested``: an id or a list of tied ids per place)."""
    if not isinstance(value, list) or not value:
        rd.add(*where, fld, "missing" if value is None else
               "must be a non-empty list of output ids")
        return None
    out: RankOrder = []
    for i, item in enumerate(value):
        if nested and isinstance(item, list):
            if not item or not all(isinstance(x, str) and x for x in item):
                rd.add(*where, f"{fld}[{i}]", "a tie is a non-empty list of output ids")
                return None
            out.append(list(item))
        elif isinstance(item, str) and item:
            out.append(item)
        else:
            rd.add(*where, f"{fld}[{i}]", "must be an output id"
                   + (" or a list of tied output ids" if nested else ""))
            return None
    return out


def read_ranking(rd: Reader, obj: dict, where: tuple[str, int | None]) -> Ranking | None:
    """One line of ``rankings.jsonl``."""
    rd.keys(obj, RANKING_KEYS, where)
    ranking_id = rd.text(obj, "ranking_id", where)
    task_id = rd.text(obj, "task_id", where, required=False)
    outputs = _ids(rd, obj.get("outputs"), where, "outputs", nested=False)
    if outputs is None or ranking_id is None:
        return None
    flat = [str(o) for o in outputs]
    repeated = [o for o, n in Counter(flat).items() if n > 1]
    if repeated:
        rd.add(*where, "outputs", f"output {repeated[0]!r} is listed twice")
        return None
    if len(flat) < 2:
        rd.add(*where, "outputs", "a ranking orders at least two outputs")
        return None
    return Ranking(ranking_id, flat, task_id, origin=where)


def read_answer(rd: Reader, obj: dict, where: tuple[str, int | None], project: ProjectData,
                *, judge: bool, normalize_time: Callable[[str], str]) -> None:
    """One line of judgments.jsonl (``judge``) or annotations.jsonl answering a pair or a
    ranking (:func:`is_answer`), appended to ``project`` when it is valid."""
    who_key = "judge" if judge else "annotator"
    is_pair = "pair_id" in obj
    if is_pair and "ranking_id" in obj:
        rd.add(*where, "ranking_id", "give one of 'pair_id' and 'ranking_id'")
        return
    allowed = ((JUDGE_PAIR_KEYS if judge else HUMAN_PAIR_KEYS) if is_pair
               else (JUDGE_RANKING_KEYS if judge else HUMAN_RANKING_KEYS))
    unknown = obj.keys() - allowed
    if unknown:
        rd.add(*where, sorted(unknown)[0], f"unknown field in a {'pair' if is_pair else 'ranking'}"
               f" answer (allowed: {', '.join(sorted(allowed))})")
        return
    who = rd.text(obj, who_key, where)
    item = rd.text(obj, "pair_id" if is_pair else "ranking_id", where)
    raw = rd.text(obj, "raw", where, required=False, nonempty=False) if judge else None
    note = None if judge else rd.text(obj, "note", where, required=False, nonempty=False)
    created = source = None
    if not judge:
        good, created = optional_time(rd, obj, "created_at", where, normalize_time)
        if not good:
            return
        source = rd.text(obj, "source", where, required=False)
    if is_pair:
        if "preference" not in obj:
            rd.add(*where, "preference", "missing" + (" (null: the judge's text could not be "
                                                      "parsed)" if judge else ""))
            return
        preference = obj["preference"]
        if preference is None and not judge:
            rd.add(*where, "preference", f"must be one of {', '.join(PREFERENCES)}")
            return
        if preference is not None and preference not in PREFERENCES:
            rd.add(*where, "preference", f"must be one of {', '.join(PREFERENCES)}"
                   f"{' or null' if judge else ''}, not {preference!r}")
            return
        shown = None if judge else rd.enum(obj, "shown_first", SIDES, where, required=False)
        if not judge and obj.get("shown_first") is not None and shown is None:
            return
        if who is None or item is None:
            return
        project.pair_answers.append(PairAnswer(who, item, preference, judge, raw, note,
                                               created, source, shown, origin=where))
        return
    order_value = obj.get("order")
    if "order" not in obj:
        rd.add(*where, "order", "missing" + (" (null: the judge's text could not be parsed)"
                                             if judge else ""))
        return
    order = None
    if order_value is not None or not judge:
        order = _ids(rd, order_value, where, "order", nested=True)
        if order is None:
            return
    if who is None or item is None:
        return
    project.ranking_answers.append(RankingAnswer(who, item, order, judge, raw, note, created,
                                                 source, origin=where))


# -------------------------------------------------------------------------- checking
def flat(order: RankOrder) -> list[str]:
    """The output ids of an order, in order (ties in their listed order)."""
    return [x for place in order for x in (place if isinstance(place, list) else [place])]


def dumps_order(order: RankOrder | None) -> str | None:
    """An order as stored (JSON text)."""
    return None if order is None else json.dumps(order, ensure_ascii=False)


def check(pr: Problems, project: ProjectData, existing: Mapping[str, Any],
          output_task: Mapping[str, str], tasks: Mapping[str, str] | set[str],
          judges: Mapping[str, Any]) -> tuple[ProjectData, Counter[str]]:
    """Check the pairs, rankings and their answers of ``project`` against each other and the
    database (``existing["pairs"]``, :func:`annotation.store.pairs.stored`): known outputs,
    tasks, judges and items; unique ids; an order that lists each of its ranking's outputs
    exactly once; a judge's answer or an item stored differently is refused, one stored
    identically is dropped and counted as unchanged (as is a human answer already in the
    stored history). Returns the records to write and the unchanged counts."""
    stored = existing.get("pairs", {})
    unchanged: Counter[str] = Counter()
    out = ProjectData(project.name, project.benchmark, project.source, project.format)
    pair_outputs: dict[str, tuple[str, str]] = {
        k: (r["output_a"], r["output_b"]) for k, r in stored.get("pairs", {}).items()}
    ranking_outputs: dict[str, list[str]] = {
        k: json.loads(r["outputs"]) for k, r in stored.get("rankings", {}).items()}
    seen: set[str] = set()
    for p in project.pairs:
        if p.pair_id in seen:
            pr.at(p.origin, "pair_id", f"pair {p.pair_id!r} appears twice")
            continue
        seen.add(p.pair_id)
        for fld, oid in (("output_a", p.output_a), ("output_b", p.output_b)):
            if oid not in output_task:
                pr.at(p.origin, fld, f"unknown output {oid!r}")
        if p.task_id is not None and p.task_id not in tasks:
            pr.at(p.origin, "task_id", f"unknown task {p.task_id!r}")
        old = stored.get("pairs", {}).get(p.pair_id)
        if old is not None:
            new = {"output_a": p.output_a, "output_b": p.output_b, "task_id": p.task_id,
                   "meta": json.dumps(p.meta, sort_keys=True, ensure_ascii=False)}
            diff = next((k for k in new if new[k] != old[k]), None)
            if diff:
                pr.at(p.origin, diff, f"pair {p.pair_id!r} is stored with another {diff}: "
                      "stored items are never rewritten")
            unchanged["pairs"] += 1
            continue
        pair_outputs[p.pair_id] = (p.output_a, p.output_b)
        out.pairs.append(p)
    seen = set()
    for r in project.rankings:
        if r.ranking_id in seen:
            pr.at(r.origin, "ranking_id", f"ranking {r.ranking_id!r} appears twice")
            continue
        seen.add(r.ranking_id)
        for i, oid in enumerate(r.outputs):
            if oid not in output_task:
                pr.at(r.origin, f"outputs[{i}]", f"unknown output {oid!r}")
        if r.task_id is not None and r.task_id not in tasks:
            pr.at(r.origin, "task_id", f"unknown task {r.task_id!r}")
        old = stored.get("rankings", {}).get(r.ranking_id)
        if old is not None:
            if json.loads(old["outputs"]) != r.outputs or old["task_id"] != r.task_id:
                pr.at(r.origin, "outputs", f"ranking {r.ranking_id!r} is stored with other "
                      "outputs or task: stored items are never rewritten")
            unchanged["rankings"] += 1
            continue
        ranking_outputs[r.ranking_id] = r.outputs
        out.rankings.append(r)
    judged: set[tuple[str, str]] = set()
    for a in project.pair_answers:
        if a.pair_id not in pair_outputs:
            pr.at(a.origin, "pair_id", f"unknown pair {a.pair_id!r} (list it in pairs.jsonl)")
            continue
        if a.is_judge:
            if a.who not in judges:
                pr.at(a.origin, "judge", f"unknown judge {a.who!r} (declare it in bundle.json)")
                continue
            if (a.who, a.pair_id) in judged:
                pr.at(a.origin, "pair_id", "a second answer of this judge for the same pair")
                continue
            judged.add((a.who, a.pair_id))
            old = stored.get("pair_judgments", {}).get((a.who, a.pair_id))
            if old is not None:
                if old["preference"] != a.preference or old["raw"] != a.raw:
                    field = "preference" if old["preference"] != a.preference else "raw"
                    pr.at(a.origin, field, "differs from this judge's answer already in the "
                          "database")
                unchanged["pair_answers"] += 1
                continue
        else:
            history = stored.get("pair_annotations", {}).get((a.who, a.pair_id), [])
            if any((a.created_at is None or h["created_at"] == a.created_at)
                   and h["preference"] == a.preference and h["note"] == a.note
                   and h["shown_first"] == a.shown_first for h in history):
                unchanged["pair_answers"] += 1
                continue
        out.pair_answers.append(a)
    judged = set()
    for r_ans in project.ranking_answers:
        outputs = ranking_outputs.get(r_ans.ranking_id)
        if outputs is None:
            pr.at(r_ans.origin, "ranking_id", f"unknown ranking {r_ans.ranking_id!r} (list it "
                  "in rankings.jsonl)")
            continue
        if r_ans.order is not None:
            listed = flat(r_ans.order)
            counts = Counter(listed)
            twice = [o for o, n in counts.items() if n > 1]
            extra = [o for o in listed if o not in outputs]
            absent = [o for o in outputs if o not in counts]
            if twice or extra or absent:
                pr.at(r_ans.origin, "order", (f"output {twice[0]!r} is placed twice" if twice
                      else f"output {extra[0]!r} is not in ranking {r_ans.ranking_id!r}"
                      if extra else f"output {absent[0]!r} of the ranking is not placed")
                      + ": an order places each of the ranking's outputs exactly once")
                continue
        if r_ans.is_judge:
            if r_ans.who not in judges:
                pr.at(r_ans.origin, "judge", f"unknown judge {r_ans.who!r} (declare it in "
                      "bundle.json)")
                continue
            if (r_ans.who, r_ans.ranking_id) in judged:
                pr.at(r_ans.origin, "ranking_id", "a second answer of this judge for the same "
                      "ranking")
                continue
            judged.add((r_ans.who, r_ans.ranking_id))
            old = stored.get("ranking_judgments", {}).get((r_ans.who, r_ans.ranking_id))
            if old is not None:
                if old["ranked"] != dumps_order(r_ans.order) or old["raw"] != r_ans.raw:
                    pr.at(r_ans.origin, "order", "differs from this judge's answer already in "
                          "the database")
                unchanged["ranking_answers"] += 1
                continue
        else:
            history = stored.get("ranking_annotations", {}).get(
                (r_ans.who, r_ans.ranking_id), [])
            if any((r_ans.created_at is None or h["created_at"] == r_ans.created_at)
                   and h["ranked"] == dumps_order(r_ans.order) and h["note"] == r_ans.note
                   for h in history):
                unchanged["ranking_answers"] += 1
                continue
        out.ranking_answers.append(r_ans)
    return out, unchanged


# --------------------------------------------------------------------------- writing
def _drop_none(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if v is not None}


def pair_line(p: Pair) -> dict[str, Any]:
    """The ``pairs.jsonl`` line of a pair."""
    return _drop_none({"pair_id": p.pair_id, "output_a": p.output_a, "output_b": p.output_b,
                       "task_id": p.task_id, "meta": p.meta or None})


def ranking_line(r: Ranking) -> dict[str, Any]:
    """The ``rankings.jsonl`` line of a ranking."""
    return _drop_none({"ranking_id": r.ranking_id, "outputs": r.outputs, "task_id": r.task_id})


def answer_line(a: PairAnswer | RankingAnswer) -> dict[str, Any]:
    """The judgments.jsonl (a judge's) or annotations.jsonl line of an answer; a judge's
    unparsed answer keeps its null ``preference`` / ``order``."""
    row: dict[str, Any] = {"judge" if a.is_judge else "annotator": a.who}
    if isinstance(a, PairAnswer):
        row |= {"pair_id": a.pair_id, "preference": a.preference}
        if not a.is_judge and a.shown_first is not None:
            row["shown_first"] = a.shown_first
    else:
        row |= {"ranking_id": a.ranking_id, "order": a.order}
    if a.is_judge:
        if a.raw is not None:
            row["raw"] = a.raw
    else:
        row |= _drop_none({"note": a.note, "created_at": a.created_at, "source": a.source})
    return row
