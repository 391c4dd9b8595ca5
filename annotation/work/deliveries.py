"""Answers from the browser's outbox: every key press written once, in order, or refused
visibly.

The answer panel (:mod:`annotation.ui.answer_panel`) shows an answer the moment its key is
pressed and keeps the press in an *outbox* (in the browser's memory and ``localStorage``)
until the server acknowledges it; it sends the outbox, oldest first, to ``POST
/_ja/answers`` and sends again after a network error, a server error or a reload. This
module is what the server does with one delivery (:func:`deliver`):

* each entry names the **visit** it was typed in (``queue_visits``: whose, which
  workflow, which unit), the **target** by its position in the panel
  (:mod:`annotation.work.panel`), the value, and the press's own ``client_id`` and
  ``seq`` (:class:`annotation.store.answers.Delivery`). A visit of another person is
  refused; the unit's answer is written through the workflow's own writer, with the
  engine's right to the unit (:meth:`annotation.work.engine.Router.claim`);
* a press delivered twice is written once, a press older than a stored one of the same
  target is not written (the store's receipts);
* ``seen``: the answer row the panel showed for the target (None: none). When the stored
  row is another one, written by another tab, nothing is written and the receipt says
  ``changed`` with the stored value: never a silent replace. Rows written by earlier
  entries of the same delivery count as seen;
* ``seconds``: the active time the browser measured since the panel's previous press
  (capped at :data:`annotation.work.engine.IDLE_CAP_SECONDS`), added to the visit when a
  row was written.

Every entry gets a :class:`Receipt`; ``ok`` and ``refused`` ones are final (the panel
drops them from its outbox and shows the stored value), an error of the server is not (the
whole delivery is answered with an error and sent again).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from annotation.store import Store
from annotation.store import queue as queues
from annotation.store.answers import Delivery, DeliveryConflict
from annotation.work import checklist, compare, panel, verification, workflow
from annotation.work.engine import ACTIVE_CLOCK, IDLE_CAP_SECONDS, ChangedElsewhere, ItemTaken

#: at most this many entries in one delivery (the panel sends the rest next)
MAX_ENTRIES = 50
_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-:")


class BadDelivery(ValueError):
    """A delivery that is not what the panel sends; the message names the entry and
    field. Nothing of it is written."""


@dataclass(frozen=True)
class Entry:
    """One key press from the outbox (see the module docstring)."""

    visit: int
    target: int
    value: Any
    client_id: str
    seq: int
    seen: int | None
    seconds: float


@dataclass(frozen=True)
class Receipt:
    """What became of one entry: ``status`` ``ok`` (``outcome``: written, unchanged,
    stale, duplicate) or ``refused`` (``reason``: changed, taken, not_yours, closed,
    invalid); ``row`` the target's stored row now and ``value`` its stored value."""

    client_id: str
    status: str
    outcome: str | None = None
    reason: str | None = None
    row: int | None = None
    value: Any = None
    message: str | None = None


#: integers and numbers in a delivery stay below this (JavaScript's exact integers; SQLite)
LIMIT = 2**53


def _int(raw: Any, where: str, low: int = 0) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or not low <= raw < LIMIT:
        raise BadDelivery(f"{where}: must be an integer from {low} to 2^53, got "
                          f"{str(raw)[:20]!r}")
    return raw


def _number(raw: Any) -> bool:
    """A JSON number a delivery may carry: finite and within +-2^53."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return False
    if isinstance(raw, int):
        return -LIMIT < raw < LIMIT
    return math.isfinite(raw) and abs(raw) < LIMIT


def parse(payload: Any) -> list[Entry]:
    """The entries of a delivery (``{"entries": [...]}``), checked field by field."""
    if not isinstance(payload, dict) or not isinstance(payload.get("entries"), list):
        raise BadDelivery('a delivery is {"entries": [...]}')
    raw_entries = payload["entries"]
    if len(raw_entries) > MAX_ENTRIES:
        raise BadDelivery(f"at most {MAX_ENTRIES} entries per delivery, got "
                          f"{len(raw_entries)}")
    entries = []
    for n, raw in enumerate(raw_entries):
        where = f"entry {n}"
        if not isinstance(raw, dict):
            raise BadDelivery(f"{where}: must be an object")
        cid = raw.get("cid")
        if not isinstance(cid, str) or not 8 <= len(cid) <= 80 or not set(cid) <= _ID_CHARS:
            raise BadDelivery(f"{where}, field cid: 8-80 characters of a-z, 0-9, '-', ':'")
        value = raw.get("value")
        if not ((isinstance(value, str) and len(value) <= 40) or _number(value)):
            raise BadDelivery(f"{where}, field value: a short text or a finite number")
        seen = raw.get("seen")
        seconds = raw.get("seconds", 0)
        if not _number(seconds):
            raise BadDelivery(f"{where}, field seconds: must be a finite number")
        entries.append(Entry(
            _int(raw.get("visit"), f"{where}, field visit", 1),
            _int(raw.get("target"), f"{where}, field target"),
            value, cid, _int(raw.get("seq"), f"{where}, field seq"),
            None if seen is None else _int(seen, f"{where}, field seen", 1),
            max(0.0, min(float(seconds), IDLE_CAP_SECONDS))))
    return entries


# ------------------------------------------------------------------ the workflows
#: writes one entry on a unit; returns the id of the row now current
Writer = Callable[[Store, str, str, int, Entry, tuple[int, float]], int]

def _annotate(store: Store, person: str, unit: str, target: int, entry: Entry,
              active: tuple[int, float]) -> int:
    targets = panel.output_targets(store, unit)
    if target >= len(targets):
        raise ValueError("this item has no such question")
    t = targets[target]
    delivery = Delivery(entry.client_id, entry.seq)
    if t.kind == "q":
        if entry.value not in panel.ANSWER_TEXT:
            raise ValueError(f"an answer is one of {', '.join(panel.ANSWER_TEXT)}")
        if t.parents:  # DSG gating on the stored answers
            mine = workflow.my_answers(store, person, unit)
            questions = [checklist.QuestionView(x.key, x.text, depends_on=tuple(
                targets[p].key for p in x.parents)) for x in targets if x.kind == "q"]
            if not checklist.applicable(questions, mine.answers).get(t.key, True):
                raise ValueError("this question does not apply: a question it depends on "
                                 "was answered no")
        row = workflow.give_answer(store, person, unit, question_id=t.key,
                                   answer=str(entry.value), active=active,
                                   expected=entry.seen, slot=True, delivery=delivery)
    else:
        score = entry.value
        allowed = {o.value for o in t.options}
        if isinstance(score, str) or float(score) not in allowed:
            raise ValueError("a score must be one of the criterion's values")
        row = workflow.give_answer(store, person, unit, criterion=t.key, score=float(score),
                                   active=active, expected=entry.seen, slot=True,
                                   delivery=delivery)
    return row


def _stored_annotation(store: Store, person: str, unit: str, t: panel.PanelTarget) -> Any:
    mine = workflow.my_answers(store, person, unit)
    return mine.answers.get(t.key) if t.kind == "q" else mine.scores.get(t.key)


def _verify(store: Store, person: str, unit: str, target: int, entry: Entry,
            active: tuple[int, float]) -> int:
    item = verification.load_verify_item(store, unit)
    if target >= len(item.checks):
        raise ValueError("this task has no such conflict type")
    if entry.value not in ("agree", "disagree"):
        raise ValueError("a verdict is agree or disagree")
    settings = verification.get_settings(store)
    readings = verification.my_readings(store, person, unit)
    if not verification.reveal_automatic(item, readings, settings.blind):
        raise ValueError("confirm your reading of the pre-labels first (Enter)")
    check = item.checks[target]
    old = verification.my_verdicts(store, person, unit).get(check.conflict)
    row = verification.give_verdict(
        store, person, unit, check.conflict,
        *verification.verdict_label(check.automatic, entry.value == "agree"),
        note=old.note if old else None,
        blind=settings.blind and bool(item.needed()), active=active, expected=entry.seen,
        slot=True, delivery=Delivery(entry.client_id, entry.seq))
    return row


def _pair(store: Store, person: str, unit: str, target: int, entry: Entry,
          active: tuple[int, float]) -> int:
    """A press on a pair: ``left`` / ``right`` / ``tie`` / ``both_bad`` (screen terms; the
    workflow stores it in terms of output A / B)."""
    if target != 0:
        raise ValueError("a pair has one question")
    if entry.value not in compare.PRESSED:
        raise ValueError(f"a preference is one of {', '.join(compare.PRESSED)}")
    return compare.give_preference(store, person, unit, str(entry.value), active=active,
                                   expected=entry.seen, slot=True,
                                   delivery=Delivery(entry.client_id, entry.seq))


def _ranking(store: Store, person: str, unit: str, target: int, entry: Entry,
             active: tuple[int, float]) -> int:
    """A place (1..k) given to the output shown at position ``target`` of a ranking."""
    value = entry.value
    if isinstance(value, str) or float(value) != int(value):
        raise ValueError("a place is a whole number")
    return compare.give_place(store, person, unit, target, int(value), active=active,
                              expected=entry.seen, slot=True,
                              delivery=Delivery(entry.client_id, entry.seq))


#: per queue kind, the writer of a panel entry
WRITERS: dict[str, Writer] = {"annotate": _annotate, "verify": _verify, "pairs": _pair,
                              "rankings": _ranking}


# ------------------------------------------------------------------ delivering
def _receipt_for(store: Store, person: str, entry: Entry,
                 chained: dict[tuple[int, int], int]) -> Receipt:
    visit = queues.visit(store, entry.visit)
    if visit is None or visit.person != person:
        return Receipt(entry.client_id, "refused", reason="not_yours",
                       message="This answer was typed for another person's item: not "
                               "saved.")
    writer = WRITERS.get(visit.kind)
    if writer is None:
        return Receipt(entry.client_id, "refused", reason="invalid",
                       message="This page takes no answers from the panel.")
    seen = chained.get((entry.visit, entry.target), entry.seen)
    entry = Entry(entry.visit, entry.target, entry.value, entry.client_id, entry.seq, seen,
                  entry.seconds)
    before = queues.reader(store, visit.kind).delivered(entry.client_id)
    seconds = ACTIVE_CLOCK.allowed(visit.visit_id, visit.started_at, entry.seconds)
    try:
        row = writer(store, person, visit.unit, entry.target, entry,
                     (entry.visit, seconds))
    except ChangedElsewhere as exc:
        return Receipt(entry.client_id, "refused", reason="changed", message=str(exc),
                       value=_current(store, person, visit, entry.target))
    except ItemTaken as exc:
        return Receipt(entry.client_id, "refused", reason="taken", message=str(exc))
    except KeyError:  # the item or its task left the project (the key is an id: not said)
        return Receipt(entry.client_id, "refused", reason="invalid",
                       message="This item is no longer in the project.")
    except ValueError as exc:  # DeliveryConflict is a ValueError
        text = str(exc.args[0]) if exc.args else str(exc)
        if isinstance(exc, DeliveryConflict):
            text = "This key press was already delivered for another answer."
        return Receipt(entry.client_id, "refused", reason="invalid", message=text,
                       value=_current(store, person, visit, entry.target))
    chained[(entry.visit, entry.target)] = row
    outcome = ("duplicate" if before
               else queues.reader(store, visit.kind).receipt_outcome(entry.client_id))
    if outcome == "written" and seconds > 0:
        ACTIVE_CLOCK.spent(visit.visit_id, visit.started_at)
    if outcome in ("written", "unchanged"):
        value = entry.value  # what was pressed is what is stored
    else:
        value = _current(store, person, visit, entry.target)
    return Receipt(entry.client_id, "ok", outcome=outcome or "written", row=row, value=value)


def _current(store: Store, person: str, visit: queues.Visit, target: int) -> Any:
    try:
        if visit.kind == "annotate":
            targets = panel.output_targets(store, visit.unit)
            return (_stored_annotation(store, person, visit.unit, targets[target])
                    if target < len(targets) else None)
        if visit.kind == "pairs":
            row = compare.my_preference(store, person, visit.unit)
            return None if row is None else compare.to_shown(row["preference"],
                                                              row["shown_first"])
        if visit.kind == "rankings":
            given = compare.shown_places(store, person, visit.unit).get(target)
            return None if given is None else float(given[0])
        item = verification.load_verify_item(store, visit.unit)
        return verification.verdict_values(item, verification.my_verdicts(
            store, person, visit.unit)).get(target)
    except (KeyError, IndexError, ValueError):
        return None


def deliver(store: Store, person: str, entries: Sequence[Entry]) -> list[Receipt]:
    """Write ``person``'s entries in their order; one :class:`Receipt` each. Each entry
    is its own transaction (an entry refused does not undo the ones before it)."""
    chained: dict[tuple[int, int], int] = {}
    return [_receipt_for(store, person, e, chained) for e in entries]


def receipts_json(receipts: Sequence[Receipt]) -> dict[str, Any]:
    """The response body of a delivery."""
    return {"receipts": [{k: v for k, v in asdict(r).items() if v is not None}
                         for r in receipts]}
