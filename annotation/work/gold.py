"""Gold items, qualification and speed flags: the rules (issue #16, item 2).

A *gold item* is an output with known answers (:mod:`annotation.store.gold`): an admin
marks it on *Assignment & progress* (typing the answers, or taking the current human
majority and mean) or imports a file (:func:`import_file`). The annotation workflow's
router (:class:`annotation.work.engine.Router`, the one place that decides) mixes gold
items into every annotator's queue, as the crowdsourcing platforms do (Label Studio's
ground truth, Potato's and Prodigy's quality-control items; the practice is older:
"CrowdFlower" test questions, Oleson et al., "Programmatic gold", HCOMP 2011):

* **Rate** (``gold_every = k``): one gold item at a random position in each block of
  ``k`` items an annotator is given (:func:`gold_due`; the position is a SHA-256 of the
  seed, the person and the block, so nobody can count their way to it). Gold items ignore
  the overlap (every annotator gets each once) and are never offered as real items.
* **Qualification** (``qualification_items = N``, ``qualification_pass``): an annotator's
  first N gold items come before any real item; who answers less than the pass share of
  their gold answers correctly gets no real item until an admin resets them (audited:
  ``gold.qualification_reset``; a reset admits the annotator). When fewer than N gold
  items exist, the qualification is judged on those the annotator answered.
* **Feedback** (``gold_feedback``): ``training``: after submitting a gold item the
  annotator sees which answers differed from the gold answers; ``test``: nothing.

Correct means: the same checklist answer (``cant_tell`` against a yes/no gold answer is
wrong), or a score within ``gold_tolerance`` of the gold score; a gold question the
annotator did not answer (gated off) is not compared. Only submissions made after the
output was first marked gold count (answers given to it as a real item are not a test), and
an item is judged on the answers it had when submitted (a change made afterwards, e.g.
after the training feedback, does not count).

Nothing the browser receives tells a gold item from another: the item, its answer panel,
its widget keys and images are built the same way, and the progress counts gold items
like the others (:func:`planned_gold`). Statistics never see gold answers, and the
annotators' answers on gold items are kept out of every judge-vs-human and agreement
table (gold items are chosen, not sampled: :func:`annotation.results.study.load_study`).

**Speed flags** (:func:`speed_flags`): a submitted item whose active time is below
``fast_share`` (1/3) of the annotator's own median item time, or below
``fast_floor_seconds`` per answer target (question or criterion), is flagged; computed
from the stored active time, never stored (items without a recorded time, e.g. imported
answers, are not flagged).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotation.store import gold as gold_rows

if TYPE_CHECKING:
    from annotation.store import Store

FEEDBACK_MODES = ("test", "training")
#: the columns a gold file may have (CSV header, JSONL keys)
FILE_FIELDS = ("output_id", "question_id", "criterion", "answer", "score", "note")
ANSWERS = ("yes", "no", "cant_tell")
RESET_ACTION = "gold.qualification_reset"


# ------------------------------------------------------------------------ pure rules
def block_offset(person: str, block: int, every: int, seed: int = 0) -> int:
    """Where in block ``block`` (of ``every`` items) the person's gold item goes."""
    digest = hashlib.sha256(f"gold:{seed}:{person}:{block}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % every


def gold_due(sequence: Sequence[bool], every: int, person: str, seed: int = 0) -> bool:
    """Whether the next item should be a gold one: ``sequence`` tells which of the items
    the person was given (after any qualification) were gold. One gold item per block
    of ``every`` items, at :func:`block_offset` (``every`` < 2: never)."""
    if every < 2:
        return False
    n = len(sequence)
    block = n // every
    start = block * every
    if any(sequence[start:]):
        return False
    return n - start >= block_offset(person, block, every, seed)


def planned_gold(sequence: Sequence[bool], every: int, person: str, seed: int,
                 real_left: int, gold_left: int) -> int:
    """How many gold items the router will still mix in while ``real_left`` real items
    remain and ``gold_left`` gold items are unseen: the progress counts them, so that
    its total does not move when a gold item is submitted (nor when a real one is)."""
    seq = list(sequence)
    planned = 0
    while real_left > 0:
        if gold_left > 0 and gold_due(seq, every, person, seed):
            seq.append(True)
            gold_left -= 1
            planned += 1
        else:
            seq.append(False)
            real_left -= 1
    return planned


@dataclass(frozen=True)
class Qualification:
    """An annotator's qualification: ``state`` ``off`` (none asked), ``pending`` (gold
    items to go), ``passed``, ``failed`` or ``reset`` (admitted by an admin); ``done`` of
    ``needed`` gold items, ``share`` of their gold answers correct."""

    state: str
    done: int = 0
    needed: int = 0
    share: float | None = None

    @property
    def admits(self) -> bool:
        """Whether real items may be offered."""
        return self.state in ("off", "passed", "reset")


def qualification(records: Sequence[tuple[int, int]], needed: int, threshold: float,
                  unseen: int, reset: bool = False) -> Qualification:
    """The qualification state from the person's gold items in order, each as
    (answers compared, answers correct): judged on the first ``needed`` items (or all of
    them when no unseen gold item is left), passed when the share correct reaches
    ``threshold``."""
    if needed <= 0:
        return Qualification("off")
    if reset:
        return Qualification("reset", min(len(records), needed), needed)
    first = list(records[:needed])
    if len(first) < needed and unseen > 0:
        return Qualification("pending", len(first), needed)
    compared = sum(c for c, _ in first)
    if not first or compared == 0:
        return Qualification("off" if not first else "passed", len(first), needed)
    share = sum(k for _, k in first) / compared
    return Qualification("passed" if share >= threshold else "failed", len(first), needed,
                         share)


def compare(gold: Sequence[dict[str, Any]], answers: dict[str, str],
            scores: dict[str, float], tolerance: float) -> list[dict[str, Any]]:
    """Each gold answer against the annotator's (``key``, ``gold``, ``given``,
    ``correct``), gold questions the annotator did not answer left out."""
    out = []
    for g in gold:
        if g.get("question_id"):
            key = g["question_id"]
            if key not in answers:
                continue
            given: Any = answers[key]
            ok = given == g["answer"]
            expected: Any = g["answer"]
        else:
            key = g["criterion"]
            if key not in scores or scores[key] is None:
                continue
            given, expected = scores[key], g["score"]
            ok = abs(float(given) - float(expected)) <= tolerance + 1e-9
        out.append({"key": key, "gold": expected, "given": given, "correct": bool(ok)})
    return out


def wilson(correct: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson's score interval of a proportion (Wilson 1927, "Probable inference, the
    law of succession, and statistical inference", JASA 22:209), 95% by default."""
    if n == 0:
        return (math.nan, math.nan)
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


def speed_flags(times: pd.DataFrame, targets: dict[str, int], share: float,
                floor_seconds: float) -> pd.DataFrame:
    """Per (annotator, output_id) of ``times`` (``active_seconds`` of submitted items):
    ``fast_own`` (below ``share`` of the annotator's own median item time) and
    ``fast_floor`` (below ``floor_seconds`` per answer target, ``targets[output_id]``)."""
    if times.empty:
        return times.assign(fast_own=pd.Series(dtype=bool), fast_floor=pd.Series(dtype=bool))
    medians = times.groupby("annotator").active_seconds.transform("median")
    need = times.output_id.map(lambda o: targets.get(o, 0) * floor_seconds)
    return times.assign(fast_own=times.active_seconds < share * medians,
                        fast_floor=times.active_seconds < need)


# ------------------------------------------------------------------------ the store
def gold_units(store: Store) -> list[str]:
    """The gold items that can be offered (image at hand, not a tree node)."""
    from annotation.store import items

    offered = set(items.annotatable_outputs(store).output_id)
    return [o for o in gold_rows.gold_outputs(store) if o in offered]


def _gold_by_output(store: Store) -> dict[str, list[dict[str, Any]]]:
    by: dict[str, list[dict[str, Any]]] = {}
    for r in gold_rows.gold_df(store).to_dict("records"):
        r = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
        by.setdefault(r["output_id"], []).append(r)
    return by


_mine = gold_rows.person_answers


def item_feedback(store: Store, person: str, output_id: str,
                  tolerance: float) -> list[dict[str, Any]] | None:
    """``person``'s answers on ``output_id`` against its gold answers (:func:`compare`);
    None when it is not a gold item."""
    gold = _gold_by_output(store).get(output_id)
    if not gold:
        return None
    return compare(gold, *_mine(store, person, output_id), tolerance)


def records(store: Store, person: str, tolerance: float) -> list[dict[str, Any]]:
    """``person``'s submitted gold items, in submission order (only those submitted after
    the output was first marked gold): output_id, compared, correct, judged on the answers
    as they were at the submission (going back to change them afterwards, e.g. after the
    training feedback, does not change the record)."""
    gold = _gold_by_output(store)
    marked = gold_rows.first_marked(store)
    out = []
    for unit, at in gold_rows.submissions(store, person):
        if unit not in gold or at < marked.get(unit, ""):
            continue
        diff = compare(gold[unit], *_mine(store, person, unit, at), tolerance)
        out.append({"output_id": unit, "compared": len(diff),
                    "correct": sum(d["correct"] for d in diff)})
    return out


def was_reset(store: Store, person: str) -> bool:
    """Whether an admin reset ``person``'s qualification (audit log)."""
    return gold_rows.was_audited(store, person, RESET_ACTION)


def reset_qualification(store: Store, actor: str, person: str, note: str | None = None) -> None:
    """An admin admits ``person`` to real items after a failed qualification (audited)."""
    gold_rows.audit_reset(store, actor, person, RESET_ACTION, note)


# ------------------------------------------------------------------------ marking
class GoldFileError(ValueError):
    """A gold file or form with problems (each ``FILE:LINE: field: message``); nothing
    was written."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


def check_rows(store: Store, rows: Sequence[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Check gold rows, each with where it came from (``FILE:LINE``): a known output, one
    of question_id (of the output's checklist, with ``answer`` yes/no/cant_tell) and
    criterion (with a numeric ``score`` on its scale). Raise :class:`GoldFileError` with
    every problem; return the clean rows."""
    outputs, questions, criteria = gold_rows.targets(store)
    problems: list[str] = []
    clean = []
    seen: dict[tuple[str, str], str] = {}
    for where, raw in rows:
        r = {k: (v.strip() if isinstance(v, str) else v) for k, v in raw.items()}
        r = {k: (None if v in ("", None) else v) for k, v in r.items()}
        extra = sorted(set(r) - set(FILE_FIELDS))
        if extra:
            problems.append(f"{where}: {extra[0]}: unknown field (fields: "
                            f"{', '.join(FILE_FIELDS)})")
            continue
        out = r.get("output_id")
        if out is None:
            problems.append(f"{where}: output_id: missing")
            continue
        if out not in outputs:
            problems.append(f"{where}: output_id: no output {out!r} in the project")
            continue
        qid, crit = r.get("question_id"), r.get("criterion")
        if (qid is None) == (crit is None):
            problems.append(f"{where}: question_id: give exactly one of question_id and "
                            "criterion")
            continue
        row: dict[str, Any] = {"output_id": out, "question_id": qid, "criterion": crit,
                               "answer": None, "score": None, "note": r.get("note")}
        if qid is not None:
            if questions.get(qid) != outputs[out]:
                problems.append(f"{where}: question_id: {qid!r} is not a question of "
                                f"output {out!r}'s checklist")
                continue
            if r.get("answer") not in ANSWERS:
                problems.append(f"{where}: answer: must be one of {', '.join(ANSWERS)}, not "
                                f"{r.get('answer')!r}")
                continue
            if r.get("score") is not None:
                problems.append(f"{where}: score: a question's gold row has no score")
                continue
            row["answer"] = r["answer"]
        else:
            if crit not in criteria:
                problems.append(f"{where}: criterion: no criterion {crit!r} in the project")
                continue
            try:
                score = float(r.get("score"))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                problems.append(f"{where}: score: a number is needed, not {r.get('score')!r}")
                continue
            lo, hi = criteria[crit]
            if not (lo <= score <= hi) or math.isnan(score):
                problems.append(f"{where}: score: {score:g} is outside {crit}'s scale "
                                f"{lo:g}-{hi:g}")
                continue
            if r.get("answer") is not None:
                problems.append(f"{where}: answer: a criterion's gold row has no answer")
                continue
            row["score"] = score
        key = (out, qid or f"criterion:{crit}")
        if key in seen:
            problems.append(f"{where}: {'question_id' if qid else 'criterion'}: {key[1]!r} "
                            f"of {out!r} is already given at {seen[key]}")
            continue
        seen[key] = where
        clean.append(row)
    if problems:
        raise GoldFileError(problems)
    return clean


def read_file(path: str | Path) -> list[tuple[str, dict[str, Any]]]:
    """The rows of a gold file with where each came from: a CSV with a header of
    :data:`FILE_FIELDS` (``.csv``), or JSON Lines (``.jsonl``), one object per line,
    either flat (the same fields) or grouped: ``{"output_id": ..., "answers":
    {question_id: answer}, "scores": {criterion: score}}``."""
    path = Path(path)
    name = path.name
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise GoldFileError([f"{name}: cannot read: {exc}"]) from exc
    rows: list[tuple[str, dict[str, Any]]] = []
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        if not reader.fieldnames or "output_id" not in reader.fieldnames:
            raise GoldFileError([f"{name}:1: output_id: the header needs output_id (fields: "
                                 f"{', '.join(FILE_FIELDS)})"])
        for record in reader:
            rows.append((f"{name}:{reader.line_num}", dict(record)))
        return rows
    if path.suffix.lower() != ".jsonl":
        raise GoldFileError([f"{name}: a gold file is .csv or .jsonl"])
    problems = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{name}:{i}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: (line): not JSON: {exc.msg}")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{where}: (line): a JSON object is needed")
            continue
        if "answers" in obj or "scores" in obj:
            base = {k: v for k, v in obj.items() if k not in ("answers", "scores")}
            for field_name in ("answers", "scores"):
                if not isinstance(obj.get(field_name, {}), dict):
                    problems.append(f"{where}: {field_name}: an object is needed")
            if problems and problems[-1].startswith(where):
                continue
            for qid, answer in (obj.get("answers") or {}).items():
                rows.append((where, base | {"question_id": qid, "answer": answer}))
            for crit, score in (obj.get("scores") or {}).items():
                rows.append((where, base | {"criterion": crit, "score": score}))
        else:
            rows.append((where, obj))
    if problems:
        raise GoldFileError(problems)
    return rows


def import_file(store: Store, path: str | Path, actor: str) -> int:
    """Import a gold file (:func:`read_file`, :func:`check_rows`) in one transaction;
    any problem raises :class:`GoldFileError` and writes nothing. Returns rows written."""
    rows = check_rows(store, read_file(path))
    return gold_rows.write_rows(store, rows, actor=actor, source=f"import:{Path(path).name}")


def mark(store: Store, actor: str, output_id: str, answers: Mapping[str, str | None],
         scores: Mapping[str, float | None], *, source: str = "typed",
         note: str | None = None) -> int:
    """Mark ``output_id`` gold with these answers and scores (checked as a file's rows
    would be; an answer or score of None withdraws that gold answer). Returns rows written."""
    rows: list[tuple[str, dict[str, Any]]] = [
        (f"{output_id}: question {q}", {"output_id": output_id, "question_id": q,
                                          "answer": a, "note": note})
            for q, a in answers.items() if a is not None]
    rows += [(f"{output_id}: criterion {c}", {"output_id": output_id, "criterion": c,
                                            "score": s, "note": note})
             for c, s in scores.items() if s is not None]
    clean = check_rows(store, rows)
    withdrawn = [{"output_id": output_id, "question_id": q} for q, a in answers.items()
                 if a is None] + [{"output_id": output_id, "criterion": c}
                                  for c, s in scores.items() if s is None]
    return gold_rows.write_rows(store, clean + withdrawn, actor=actor, source=source)


def unmark(store: Store, actor: str, output_id: str) -> int:
    """Withdraw every gold answer of ``output_id`` (it is a normal item again)."""
    current = gold_rows.gold_df(store)
    current = current[current.output_id == output_id]
    rows = [{"output_id": output_id,
             "question_id": r.question_id if isinstance(r.question_id, str) else None,
             "criterion": r.criterion if isinstance(r.criterion, str) else None}
            for r in current.itertuples()]
    return gold_rows.write_rows(store, rows, actor=actor, source="withdrawn")


def human_reference(store: Store, output_id: str) -> tuple[dict[str, str], dict[str, float]]:
    """The current human answers of ``output_id`` as a gold proposal: per question the
    strict majority answer (ties left out), per criterion the mean score."""
    answers: dict[str, str] = {}
    scores: dict[str, float] = {}
    df = gold_rows.output_answers_df(store, output_id)
    for qid, group in df[df.question_id.notna()].groupby("question_id"):
        counts = group.answer.value_counts()
        if len(counts) and (len(counts) == 1 or counts.iloc[0] > counts.iloc[1]):
            answers[str(qid)] = str(counts.index[0])
    for crit, group in df[df.criterion.notna()].groupby("criterion"):
        if group.score.notna().any():
            scores[str(crit)] = float(group.score.mean())
    return answers, scores


def gold_table(store: Store) -> pd.DataFrame:
    """One row per gold item: output_id, gold answers, scores, sources, who marked it
    and when (newest row)."""
    df = gold_rows.gold_df(store)
    if df.empty:
        return pd.DataFrame(columns=["output_id", "answers", "scores", "source", "by", "at"])
    return df.groupby("output_id").agg(
        answers=("answer", "count"), scores=("score", "count"),
        source=("source", lambda s: ", ".join(sorted(set(s)))),
        by=("created_by", "last"), at=("created_at", "max")).reset_index()
