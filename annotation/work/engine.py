"""The one workflow engine: a router and a controller base that every workflow uses.

A workflow (annotate outputs, verify conflict labels, review diagnostic trees, adjudicate
disputed decisions) is one module that gives a :class:`Router` its :class:`Kind`: what a
unit is (the eligible units), which answer kinds mark a unit as started, and its
settings; its controller subclasses :class:`Controller` and says what an answer is and
when a unit is complete. Everything
stored goes through :mod:`annotation.store.queue` and :mod:`annotation.store.answers`.

**Routing** (in the spirit of Label Studio's and Prodigy's task routing with overlap):

* **Overlap**: a unit is offered to a person who has not submitted it while fewer than
  ``overlap`` others have submitted it or hold a live reservation on it.
* **Order**: first the person's own unfinished unit (answers given, or a live reservation,
  not submitted: resume on any machine, even after the reservation lapsed), unless others
  filled its overlap meanwhile; then units others started (the most taken first, so
  overlaps complete); then the person's own seeded order (:func:`personal_order`, a
  per-person shuffle, so people do not all start with the same units).
* **Reservations** expire ``reservation_minutes`` after the last activity; every answer
  renews them; a submission and a sign-out release them. The choice and its reservation
  are one ``BEGIN IMMEDIATE`` transaction, so two people asking at once cannot both take
  the last open slot.
* **Stale tabs** (:meth:`Router.claim`): answering and submitting need a live reservation,
  or the person's own started unit while its overlap is not full; a unit the person has
  submitted may be reviewed and changed at any time. Otherwise nothing is written and
  :class:`ItemTaken` is raised; the check and the renewal happen in the write's own
  transaction, so no unit ever gets more than ``overlap`` submissions.

**Controllers** keep a plain dict ``state`` (Streamlit's session state) and write every
change at once, so a reload, a closed tab or another machine resumes where the person was.
Active time is the gap between two interactions, capped at :data:`IDLE_CAP_SECONDS`
(:func:`active_increment`), added to the visit of the open unit.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Generic, TypeVar

from annotation.store import Store
from annotation.store import answers as answer_rows
from annotation.store import queue as queues
from annotation.store.answers import Delivery
from annotation.timestamps import parse_utc
from annotation.work import gold as golds
from annotation.work import panel

IDLE_CAP_SECONDS = 120.0
#: ``seen`` of :meth:`Answering.check_seen` (and the workflows' writers) when the caller
#: does not check for other tabs
UNCHECKED: Any = object()
DEFAULT_RESERVATION_MINUTES = 30

S = TypeVar("S")


class StaleItem(RuntimeError):
    """A tab acted on what it showed, and the project has moved on meanwhile; nothing
    was written. The message is for the person."""


class ItemTaken(StaleItem):
    """The person's reservation lapsed and the unit cannot be theirs any more: without an
    answer of theirs on it, or with its overlap filled by others."""


class ChangedElsewhere(StaleItem):
    """The answer changed (in another tab of the same person) since this tab showed it."""


# ------------------------------------------------------------------------ pure rules
def personal_order(units: Sequence[str], person: str, seed: int = 0,
                   salt: str | None = None) -> list[str]:
    """The person's own shuffle of the units, stable across sessions and machines: a
    ``random.Random`` shuffle keyed by SHA-256 of ``"<salt>:<seed>:<person>"`` (without a
    salt, ``"<seed>:<person>"``: the annotation workflow's key since schema 2)."""
    text = f"{seed}:{person}" if salt is None else f"{salt}:{seed}:{person}"
    key = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    order = list(units)
    random.Random(key).shuffle(order)
    return order


def active_increment(last: float, now: float, cap: float = IDLE_CAP_SECONDS) -> float:
    """Seconds of active time between two interactions: the gap, capped at ``cap`` so a
    coffee break does not count (the convention of Label Studio's lead time)."""
    return max(0.0, min(now - last, cap))


class ActiveClock:
    """How much of the active time a browser reports may be credited to a visit: never more
    than the wall-clock time since the visit's last credit (or its start), so a browser
    cannot claim more time than has passed (red-team finding: 50 presses claiming 120 s
    each credited 100 minutes in one second). One per server process; a visit is known by
    its id and start (ids of different projects may be equal)."""

    def __init__(self, keep: int = 50_000):
        self._last: dict[tuple[int, str], float] = {}
        self._keep = keep
        self._lock = threading.Lock()

    def allowed(self, visit_id: int, started_at: str, seconds: float,
                now: float | None = None) -> float:
        """At most ``seconds`` (and :data:`IDLE_CAP_SECONDS`), at most the time since the
        last credit of the visit (first: since ``started_at``, ISO UTC)."""
        moment = time.time() if now is None else now
        with self._lock:
            last = self._last.get((visit_id, started_at))
        if last is None:
            try:
                last = parse_utc(started_at).timestamp()
            except (TypeError, ValueError):
                last = moment
        return max(0.0, min(seconds, IDLE_CAP_SECONDS, moment - last))

    def spent(self, visit_id: int, started_at: str, now: float | None = None) -> None:
        """The time up to ``now`` has been credited to the visit."""
        with self._lock:
            if len(self._last) >= self._keep:
                for old in list(self._last)[: self._keep // 2]:
                    del self._last[old]
            self._last[(visit_id, started_at)] = time.time() if now is None else now


#: the server process's clock of credited active time (the answer panel's presses and
#: commands)
ACTIVE_CLOCK = ActiveClock()


def choose(units: Sequence[str], started: Sequence[str], submitted: dict[str, int],
           others: dict[str, int], mine_done: set[str], overlap: int,
           order: Sequence[str]) -> str | None:
    """The routing rule on plain data: the first started unit still open (not done by
    me, fewer than ``overlap`` others on it), else the open unit most taken by others,
    ties by ``order``."""
    eligible = set(units)
    for u in started:
        if u in eligible and u not in mine_done and submitted.get(u, 0) + others.get(u, 0) \
                < overlap:
            return u
    rank = {u: i for i, u in enumerate(order)}
    best = min(((-(submitted.get(u, 0) + others.get(u, 0)), rank[u], u) for u in units
                if u not in mine_done and submitted.get(u, 0) + others.get(u, 0) < overlap),
               default=None)
    return None if best is None else best[2]


def _now(now: datetime | None) -> datetime:
    return now or datetime.now(UTC)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


# ------------------------------------------------------------------------ the router
@dataclass(frozen=True)
class Kind(Generic[S]):
    """What the router needs to know of a workflow.

    ``name``: the queue kind; ``units``: the eligible units in their stable order;
    ``answers``: the answer kinds (:data:`annotation.store.answers.ANSWER_KINDS`) whose
    first row marks a unit as started; ``settings``: a dataclass with ``overlap``,
    ``reservation_minutes`` and ``seed``; ``salt`` of :func:`personal_order`; the audit
    actions of a submission and a settings change."""

    name: str
    units: Callable[[Store], list[str]]
    answers: tuple[str, ...]
    settings: type[S]
    salt: str | None
    submit_action: str
    settings_action: str
    #: per unit, how urgently it should be offered (higher first) when the settings say
    #: ``disagreement_first``; None: the kind has no such order
    priority: Callable[[Store], Mapping[str, float]] | None = None
    #: gold items, qualification and feedback (:mod:`annotation.work.gold`; the settings
    #: then have ``gold_every``, ``qualification_items``, ``qualification_pass`` and
    #: ``gold_tolerance``)
    gold: bool = False


@dataclass(frozen=True)
class GoldState:
    """What the router knows of one person's gold items (:meth:`Router.gold_state`):
    the gold units, those the person has not been given yet (in their own order), whether
    a gold item is due (:func:`annotation.work.gold.gold_due`), the ``sequence`` of the
    person's items after the qualification (True: gold) and the qualification."""

    units: frozenset[str]
    unseen: tuple[str, ...]
    due: bool
    sequence: tuple[bool, ...]
    qualification: golds.Qualification


class Router(Generic[S]):
    """The one router: overlap, reservations with timeout and renewal, resume on any
    machine, units others started first, a seeded personal order, the stale-tab claim,
    previous unit and progress, for one :class:`Kind`; with gold items (``Kind.gold``)
    also the gold mix, the qualification gate and the progress counting gold items."""

    def __init__(self, kind: Kind[S]):
        self.kind = kind

    # ------------------------------------------------------------ settings
    def settings(self, store: Store) -> S:
        """The stored settings (unknown fields ignored, missing ones at their defaults)."""
        raw = queues.reader(store, self.kind.name).settings()
        names = {f.name for f in fields(self.kind.settings)}  # type: ignore[arg-type]
        return self.kind.settings(**{k: v for k, v in raw.items() if k in names})

    def set_settings(self, store: Store, actor: str, **changes: Any) -> S:
        """Change the settings (``overlap`` and ``reservation_minutes`` at least 1); the
        change goes to the audit log."""
        settings = self.kind.settings(**(self.settings(store).__dict__ | changes))
        if settings.overlap < 1 or settings.reservation_minutes < 1:  # type: ignore[attr-defined]
            raise ValueError("overlap and reservation_minutes must be at least 1")
        with queues.writing(store, self.kind.name, user=actor, role="admin") as q:
            q.write_settings(settings.__dict__)
            q.audit(actor, self.kind.settings_action, None, changes)
        return settings

    def order(self, units: Sequence[str], person: str, seed: int) -> list[str]:
        """``person``'s own order of ``units`` (:func:`personal_order` with the kind's salt)."""
        return personal_order(units, person, seed, self.kind.salt)

    def ranked(self, store: Store, units: Sequence[str], person: str, settings: Any
               ) -> list[str]:
        """:meth:`order`, with the units of higher :attr:`Kind.priority` first when the
        settings have ``disagreement_first`` on (equal priority keeps the personal order)."""
        order = self.order(units, person, settings.seed)
        if self.kind.priority is None or not getattr(settings, "disagreement_first", False):
            return order
        urgency = self.kind.priority(store)
        rank = {u: i for i, u in enumerate(order)}
        return sorted(order, key=lambda u: (-float(urgency.get(u, 0.0)), rank[u]))

    # ------------------------------------------------------------ choosing
    def next(self, store: Store, person: str, now: datetime | None = None) -> str | None:
        """Choose (and reserve) the unit ``person`` should work on now; None when done."""
        moment = _now(now)
        stamp = _iso(moment)
        settings: Any = self.settings(store)
        units = self.kind.units(store)
        order = self.ranked(store, units, person, settings)  # reads, outside the write lock
        with queues.writing(store, self.kind.name, user=person) as q:
            gold = self.gold_state(store, person, settings) if self.kind.gold else None
            if gold is not None:
                units = [u for u in units if u not in gold.units]
            submitted = q.submission_counts()
            mine_done = set(q.submitted(person))
            others: dict[str, int] = {}
            for unit, who in q.live_reservations(stamp):
                if who != person:
                    others[unit] = others.get(unit, 0) + 1
            started = q.started(person, self.kind.answers, stamp)
            if gold is None:
                choice = choose(units, started, submitted, others, mine_done,
                                settings.overlap, order)
            else:
                choice = self._choose_gold(gold, units, started, submitted, others,
                                           mine_done, settings, order)
            if choice is not None:
                q.reserve(person, choice, stamp,
                          _iso(moment + timedelta(minutes=settings.reservation_minutes)))
        return choice

    # ------------------------------------------------------------ gold items
    def gold_state(self, store: Store, person: str, settings: Any) -> GoldState:
        """``person``'s gold items and qualification now (:mod:`annotation.work.gold`)."""
        units = frozenset(golds.gold_units(store))
        done = queues.reader(store, self.kind.name).submitted(person)
        done_set = set(done)
        unseen = tuple(u for u in personal_order(sorted(units), person, settings.seed,
                                                 "gold") if u not in done_set)
        tolerance = float(getattr(settings, "gold_tolerance", 1.0))
        needed = int(getattr(settings, "qualification_items", 0))
        recs = golds.records(store, person, tolerance) if needed > 0 else []
        qual = golds.qualification(
            [(r["compared"], r["correct"]) for r in recs], needed,
            float(getattr(settings, "qualification_pass", 0.8)), len(unseen),
            golds.was_reset(store, person) if needed > 0 else False)
        skip = {r["output_id"] for r in recs[:needed]}
        sequence = tuple(u in units for u in done if u not in skip)
        due = golds.gold_due(sequence, int(getattr(settings, "gold_every", 0)), person,
                             settings.seed)
        return GoldState(units, unseen, due, sequence, qual)

    def _choose_gold(self, gold: GoldState, units: list[str], started: list[str],
                     submitted: dict[str, int], others: dict[str, int], mine_done: set[str],
                     settings: Any, order: Sequence[str]) -> str | None:
        """The routing rule with gold items: an unfinished gold item first; during the
        qualification only gold items, after a failed one nothing; else the real choice
        (:func:`choose`), or a gold item in its place when one is due and the person is
        not resuming a started real unit."""
        for u in started:
            if u in gold.units and u not in mine_done:
                return u
        qual = gold.qualification
        if qual.state == "pending":
            return gold.unseen[0] if gold.unseen else None
        if not qual.admits:
            return None
        real = choose(units, started, submitted, others, mine_done, settings.overlap, order)
        if real is None or real in started:
            return real
        return gold.unseen[0] if gold.due and gold.unseen else real

    def _gate(self, store: Store, q: queues.Queue, person: str, unit: str,
              settings: Any) -> None:
        """The qualification gate of a write (inside its transaction): a real unit the
        person has not submitted may not be answered while their qualification is pending
        or failed (e.g. a tab opened before the admin asked for one); :class:`ItemTaken`."""
        if not self.kind.gold or int(getattr(settings, "qualification_items", 0)) <= 0:
            return
        if q.is_gold(unit) or q.is_submitted(person, unit):
            return
        if not self.gold_state(store, person, settings).qualification.admits:
            raise ItemTaken("Real items wait until you have passed the qualification: "
                            "nothing was saved, and the page now shows the item that is "
                            "yours.")

    def claim(self, q: queues.Queue, person: str, unit: str, settings: Any,
              now: datetime) -> None:
        """Make sure ``person`` may still answer or submit ``unit`` now (inside ``q``'s
        write transaction) and renew their reservation; raise :class:`ItemTaken` otherwise.

        Allowed: a unit ``person`` already submitted (reviewing it changes answers, not the
        overlap); else only while fewer than ``overlap`` others have submitted it or hold
        a live reservation on it, and ``person`` holds a live reservation or has already
        answered on it (their own started unit keeps its right to be finished after the
        reservation lapsed, as long as nobody took the slot).
        """
        stamp = _iso(now)
        if q.is_submitted(person, unit):
            return
        if not q.holds(person, unit, stamp) and not q.has_answered(person, unit,
                                                                   self.kind.answers):
            raise ItemTaken("Your reservation of this item had expired before your first "
                            "answer (it may have gone to someone else): nothing was saved, "
                            "and the page now shows the item that is yours.")
        if self.kind.gold and q.is_gold(unit):
            pass  # every person gets each gold item: no overlap
        elif q.others_taking(person, unit, stamp) >= settings.overlap:
            raise ItemTaken("This item went to someone else while it was open here (your "
                            "reservation had expired and enough people have it now). Your "
                            "earlier answers are kept; the page now shows the item that is "
                            "yours.")
        q.reserve(person, unit, stamp,
                  _iso(now + timedelta(minutes=settings.reservation_minutes)))

    @contextmanager
    def answering(self, store: Store, person: str, unit: str, *, slot: bool | None = None,
                  now: datetime | None = None,
                  active: tuple[int, float] | None = None) -> Iterator[Answering]:
        """One answer's transaction: with ``slot`` (None: whenever the store acts for a
        signed-in person, as in the app) first :meth:`claim` the unit, else just renew
        the reservation; the caller writes through the yielded :class:`Answering`, and
        ``active = (visit_id, seconds)`` is added when it appended a row."""
        moment = _now(now)
        settings: Any = self.settings(store)
        with queues.writing(store, self.kind.name, user=person) as q:
            if slot or (slot is None and store.guard is not None):
                self._gate(store, q, person, unit, settings)
                self.claim(q, person, unit, settings, moment)
            else:
                q.renew(person, unit,
                        _iso(moment + timedelta(minutes=settings.reservation_minutes)))
            act = Answering(q, person, unit, _iso(moment))
            yield act
            if act.appended and active is not None:
                q.add_time(*active, person=person)

    def submit(self, store: Store, person: str, unit: str, *, slot: bool | None = None,
               now: datetime | None = None) -> None:
        """Mark the unit done for ``person`` (idempotent), release the reservation, audit.
        ``slot``: first :meth:`claim` the right to submit (a stale tab whose unit went to
        someone else gets :class:`ItemTaken`); None: whenever the store acts for a
        signed-in person."""
        with queues.writing(store, self.kind.name, user=person) as q:
            if slot or (slot is None and store.guard is not None):
                settings = self.settings(store)
                self._gate(store, q, person, unit, settings)
                self.claim(q, person, unit, settings, _now(now))
            q.submit(person, unit)
            q.audit(person, self.kind.submit_action, unit)

    def release(self, store: Store, person: str, unit: str) -> None:
        """Give a reservation back."""
        with queues.writing(store, self.kind.name, user=person) as q:
            q.release(person, unit)

    # ------------------------------------------------------------ reading
    def is_submitted(self, store: Store, person: str, unit: str) -> bool:
        return queues.reader(store, self.kind.name).is_submitted(person, unit)

    def previous(self, store: Store, person: str, current: str | None) -> str | None:
        """The unit ``person`` submitted just before ``current`` (or their last one): where
        the Back key goes."""
        done = queues.reader(store, self.kind.name).submitted(person)
        if current in done:
            i = done.index(current)
            return done[i - 1] if i > 0 else None
        return done[-1] if done else None

    def has_started(self, store: Store, person: str) -> bool:
        """Whether ``person`` ever answered on a unit of this workflow."""
        return queues.reader(store, self.kind.name).has_any_answer(person, self.kind.answers)

    def submission_counts(self, store: Store) -> dict[str, int]:
        """Distinct people who submitted each unit."""
        return queues.reader(store, self.kind.name).submission_counts()

    def personal_progress(self, store: Store, person: str) -> tuple[int, int]:
        """(units ``person`` submitted, those + the units still open to them). With gold
        items both count the gold items too (those given, and those the router will still
        mix in: :func:`annotation.work.gold.planned_gold`), so that the counts move the
        same way after a gold item as after any other."""
        settings: Any = self.settings(store)
        overlap = settings.overlap
        units = self.kind.units(store)
        q = queues.reader(store, self.kind.name)
        counts = q.submission_counts()
        mine = set(q.submitted(person))
        gold = self.gold_state(store, person, settings) if self.kind.gold else None
        real = [u for u in units if gold is None or u not in gold.units]
        done = sum(1 for u in real if u in mine)
        open_to_me = sum(1 for u in real if u not in mine and counts.get(u, 0) < overlap)
        if gold is None:
            return done, done + open_to_me
        qual = gold.qualification
        done += sum(1 for u in gold.units if u in mine)
        if qual.state == "pending":
            return done, done + min(qual.needed - qual.done, len(gold.unseen))
        if not qual.admits:
            return done, done
        planned = golds.planned_gold(gold.sequence, int(getattr(settings, "gold_every", 0)),
                                     person, settings.seed, open_to_me, len(gold.unseen))
        return done, done + open_to_me + planned

    def overall_progress(self, store: Store) -> tuple[int, int]:
        """(submissions counted toward overlap, eligible units x overlap); gold items are
        not counted."""
        overlap = self.settings(store).overlap  # type: ignore[attr-defined]
        units = self.kind.units(store)
        if self.kind.gold:
            gold = set(golds.gold_units(store))
            units = [u for u in units if u not in gold]
        counts = self.submission_counts(store)
        return sum(min(counts.get(u, 0), overlap) for u in units), len(units) * overlap

    # ------------------------------------------------------------ time
    def start_visit(self, store: Store, person: str, unit: str) -> int:
        """Open a visit of the unit (its active time is added to it); return its id."""
        with queues.writing(store, self.kind.name, user=person) as q:
            return q.start_visit(person, unit)

    def add_active_time(self, store: Store, visit_id: int, seconds: float,
                        person: str | None = None) -> None:
        """Add ``seconds`` of active time to the visit (written for ``person``)."""
        if seconds <= 0:
            return
        with queues.writing(store, self.kind.name, user=person) as q:
            q.add_time(visit_id, seconds, person)


class Answering:
    """The write side of one answer's transaction (:meth:`Router.answering`): read the
    current answer, append a new one through the one answer writer."""

    def __init__(self, q: queues.Queue, person: str, unit: str, stamp: str):
        self._q, self.person, self.unit, self.stamp = q, person, unit, stamp
        self.appended = False

    def current(self, kind: str, key: dict[str, Any]) -> dict[str, Any] | None:
        return self._q.current_answer(kind, self.person, self.unit, key)

    def current_rows(self, kind: str) -> list[dict[str, Any]]:
        """Every current row of this kind of the person on the unit (inside the write's
        transaction, so rows just appended count)."""
        return self._q.current_rows(kind, self.person, self.unit)

    def check_seen(self, kind: str, current: dict[str, Any] | None, seen: Any,
                   delivery: Delivery | None = None) -> None:
        """Raise :class:`ChangedElsewhere` when the current answer is not the row the
        caller showed (``seen``: its id, None for no answer; :data:`UNCHECKED`: do not
        check): another tab or window of the same person answered meanwhile. A press
        delivered before (a retry) is not checked again: its own write moved the row."""
        if seen is UNCHECKED:
            return
        if delivery is not None and self._q.delivered(delivery.client_id):
            return
        row_id = (answer_rows.ANSWER_KINDS | answer_rows.ITEM_KINDS)[kind].row_id
        if (current[row_id] if current else None) != seen:
            raise ChangedElsewhere(
                "This answer was changed in another tab or window meanwhile: reloaded. "
                "Nothing was overwritten; check it and answer again if needed.")

    def supersede(self, kind: str, row: dict[str, Any], *, same: Sequence[str] | None,
                  previous: dict[str, Any] | None | bool = True,
                  delivery: Delivery | None = None) -> int:
        """Append ``row`` (person and unit added) superseding the current answer, unless
        it equals it on ``same``; return the current row's id. ``delivery``: the key press
        it came from (written once; never over a later press of the same question)."""
        written = self._q.supersede(kind, row, same=same, previous=previous,
                                    delivery=delivery)
        self.appended = self.appended or written.appended
        return written.row_id


# ------------------------------------------------------------------------ the controller
class Controller:
    """The base of every workflow's page controller, independent of Streamlit.

    ``state`` (a plain dict kept in ``st.session_state``) holds the open unit under
    :attr:`UNIT`, whose it is under :attr:`PERSON`, ``reviewing`` (opened by Back), the
    open visit (``visit_id``, ``last_ts``) and ``notice`` (a message for the page after a
    stale tab was refused). Subclasses set :attr:`router` and say what an answer is and
    when a unit is complete."""

    router: ClassVar[Router[Any]]
    UNIT: ClassVar[str] = "unit"
    PERSON: ClassVar[str] = "person"
    #: what the person calls a unit, in messages
    NOUN: ClassVar[str] = "item"

    def __init__(self, store: Store, person: str, state: MutableMapping[str, Any],
                 clock: Callable[[], float] = time.monotonic):
        self.store = store
        self.person = person
        self.state = state
        self.clock = clock
        self._moved = False  # this interaction found the unit gone: do nothing more
        if state.get(self.PERSON) != person:
            state.clear()
            state[self.PERSON] = person

    # ------------------------------------------------------------ the unit
    @property
    def unit(self) -> str | None:
        """The open unit (the router's choice when none is open yet); None when done."""
        if self.UNIT not in self.state:
            self._open(self.router.next(self.store, self.person))
        return self.state[self.UNIT]

    def _open(self, unit: str | None, reviewing: bool = False) -> None:
        """Open ``unit`` (count the active time of the one before), start its visit."""
        self._tick()
        self.state[self.UNIT] = unit
        self.state["reviewing"] = reviewing
        self.state.pop("visit_id", None)
        self._opened()
        if unit is not None:
            self.state["visit_id"] = self.router.start_visit(self.store, self.person, unit)
            self.state["last_ts"] = self.clock()
            self._entered()

    def _opened(self) -> None:
        """Hook: forget what was loaded of the previous unit."""

    def _entered(self) -> None:
        """Hook: the new unit is open (e.g. place a cursor)."""

    def complete(self) -> bool:
        """Whether the open unit has every answer it needs (each workflow says when)."""
        raise NotImplementedError

    def has_started(self) -> bool:
        """Whether the person ever answered in this workflow (a first visit shows the
        guidelines; a reload mid-item does not)."""
        return self.router.has_started(self.store, self.person)

    def progress(self) -> tuple[int, int]:
        """(units submitted, units submitted + still open to the person)."""
        return self.router.personal_progress(self.store, self.person)

    # ------------------------------------------------------------ active time
    def _active(self) -> tuple[int, float] | None:
        """(visit, active seconds since the last interaction), restarting the count."""
        if self.state.get("visit_id") is None:
            return None
        now = self.clock()
        seconds = active_increment(self.state.get("last_ts", now), now)
        self.state["last_ts"] = now
        return self.state["visit_id"], seconds

    def _tick(self) -> None:
        """Add the active time since the last interaction to the open visit."""
        elapsed = self._active()
        if elapsed is not None:
            self.router.add_active_time(self.store, *elapsed, person=self.person)

    # ------------------------------------------------------------ moving on
    def _taken(self, exc: ItemTaken) -> None:
        """A stale tab: the unit went to someone else. Say so and open the next one."""
        self._moved = True
        self.state["notice"] = str(exc)
        self.state.pop("visit_id", None)
        self._open(self.router.next(self.store, self.person))

    def _submit(self) -> bool:
        """Submit the open unit (checking the right to it) and open the next one; False
        when it went to someone else meanwhile (then the next one is open)."""
        unit = self.unit
        if unit is None:
            return False
        self._tick()
        try:
            self.router.submit(self.store, self.person, unit, slot=True)
        except ItemTaken as exc:
            self._taken(exc)
            return False
        self._open(self.router.next(self.store, self.person))
        return True

    def panel_command(self, seconds: float, cursor: int | None = None) -> None:
        """A command from the answer panel (:mod:`annotation.ui.answer_panel`) is about to
        run: add the ``seconds`` the panel measured since its last press (capped) to the
        open visit, and restart the server's own count from now (the panel's presses
        carried their own time); ``cursor``: where the panel's cursor is (a flag of an
        ambiguous question names the question there)."""
        if cursor is not None and cursor >= 0:
            self.state["cursor"] = cursor
        visit = self.state.get("visit_id")
        if visit is not None and seconds > 0:
            row = queues.visit(self.store, int(visit))
            credit = ACTIVE_CLOCK.allowed(row.visit_id, row.started_at, seconds) if row else 0
            if row is not None and credit > 0:
                self.router.add_active_time(self.store, visit, credit, person=self.person)
                ACTIVE_CLOCK.spent(row.visit_id, row.started_at)
        self.state["last_ts"] = self.clock()

    def take_command(self, command: dict[str, Any], names: tuple[str, ...]) -> str | None:
        """The name of the answer panel's ``command`` when it is new, one of ``names`` and
        typed on the open visit (:func:`annotation.work.panel.take_command`: each command
        is acted on once); its active time is credited first."""
        name = panel.take_command(self.state, command, names)
        if name is not None:
            self.panel_command(command["seconds"], command.get("cursor"))
        return name

    def give_up(self, notice: str | None = None) -> None:
        """The open unit can no longer be answered here (the panel's answer was refused:
        it went to someone else): say so and open the router's next unit."""
        self._taken(ItemTaken(notice or (
            f"This {self.NOUN} went to someone else while it was open here: the page now "
            f"shows the {self.NOUN} that is yours. Your earlier answers are kept.")))

    def back(self) -> bool:
        """Reopen the previously submitted unit to review it (answers can be changed,
        history kept); False when there is none."""
        previous = self.router.previous(self.store, self.person, self.state.get(self.UNIT))
        if previous is None:
            return False
        self._open(previous, reviewing=True)
        return True
