"""Annotating pairs and rankings (issue #17): the *Compare outputs* workflows.

Two workflows of the one engine (:mod:`annotation.work.engine`), queue kinds ``pairs``
(units: pair ids) and ``rankings`` (units: ranking ids), with overlap, reservations,
resume and active time like the other workflows (settings :class:`CompareSettings`, one
per kind; no gold items or qualification).

**A pair** ("GenAI Arena: An Open Evaluation Platform for Generative Models", Sec. 4: "A is
better, B is better, tie, both are bad"): the two outputs side by side; the annotator
presses ``A`` (left), ``B`` (right), ``T`` (both good, stored ``tie``) or ``X`` (both bad,
stored ``both_bad``). The side output A appears on is drawn per annotator and pair
(:func:`shown_first`: a hash of both, stable across reloads and machines) and stored with
the answer (``pair_annotations.shown_first``) so that position bias can be measured; the
stored preference is always in terms of output A / B (:func:`to_stored`). The browser only
ever hears of *left* and *right* (:data:`PAIR_OPTIONS`), never which one is output A.

**A ranking** ("TIIF-Bench: How Does Your T2I Model Follow Your Instructions?", Sec. 4.2,
the human ranking of several models' outputs): the k outputs in a per-annotator order
(:func:`shown_order`), labelled "Output 1".."Output k"; each is a target with the places
``1``..``k`` (digit keys; equal places are ties). Each press is one ``ranking_places`` row
(append-only); once every output has a place, the order they make (:func:`order_of`, best
first, ties as nested lists: the bundle's format) is written to ``ranking_annotations`` in
the same transaction. A unit is complete when it has that order.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from annotation.formats.pairs import dumps_order
from annotation.records import RankOrder
from annotation.store import Store, items
from annotation.store import answers as answer_rows
from annotation.store import pairs as pair_rows
from annotation.store import project as project_rows
from annotation.store.answers import Delivery
from annotation.work.engine import (
    DEFAULT_RESERVATION_MINUTES,
    UNCHECKED,
    Controller,
    ItemTaken,
    Kind,
    Router,
    personal_order,
)
from annotation.work.panel import Command, Option, Panel, PanelTarget
from annotation.work.workflow import ItemImage

#: what the browser may press on a pair: (value sent, label, key); positions, not outputs
PAIR_OPTIONS = (("left", "Left", "A"), ("right", "Right", "B"), ("tie", "Both good", "T"),
                ("both_bad", "Both bad", "X"))
PRESSED = tuple(v for v, _, _ in PAIR_OPTIONS)
#: the most outputs of a ranking that digit keys can place (1..9)
MAX_KEYED = 9
#: Back is Backspace here: ``B`` answers "Right" on a pair
COMMANDS = (Command("submit", "Submit", "Enter", primary=True),
            Command("back", "Back", "Backspace"))


@dataclass(frozen=True)
class CompareSettings:
    """Overlap (people per unit), reservation timeout and the seed of the personal order."""

    overlap: int = 1
    reservation_minutes: int = DEFAULT_RESERVATION_MINUTES
    seed: int = 0


pair_units = pair_rows.pair_ids
ranking_units = pair_rows.ranking_ids
#: (output_a, output_b, task_id) of a pair, (outputs, task_id) of a ranking: server side only
pair_outputs = pair_rows.pair_outputs
ranking_outputs = pair_rows.ranking_outputs


#: the pairwise workflow's router (queue kind ``pairs``)
PAIRS: Router[CompareSettings] = Router(Kind(
    name="pairs", units=pair_units, answers=("pair",), settings=CompareSettings,
    salt="pairs", submit_action="pair.submit", settings_action="pair.settings"))
#: the ranking workflow's router (queue kind ``rankings``)
RANKINGS: Router[CompareSettings] = Router(Kind(
    name="rankings", units=ranking_units, answers=("ranking_place",),
    settings=CompareSettings, salt="rankings", submit_action="ranking.submit",
    settings_action="ranking.settings"))


def has_items(store: Store) -> bool:
    """Whether the project has any pair or ranking (the page is then in the menu)."""
    return bool(pair_units(store) or ranking_units(store))


# ------------------------------------------------------------------------ pure rules
def shown_first(person: str, pair_id: str) -> str:
    """Which output of ``pair_id`` ``person`` sees on the left: ``a`` or ``b``, from the
    first byte of SHA-256 of ``"side:<person>:<pair_id>"`` (the same on every reload and
    machine; about half of a person's pairs each way, so a position bias of the humans, as
    of the judges, can be measured and removed)."""
    digest = hashlib.sha256(f"side:{person}\x1f{pair_id}".encode()).digest()
    return "a" if digest[0] % 2 == 0 else "b"


def to_stored(pressed: str, first: str) -> str:
    """The preference to store (in terms of output A / B) for a press in terms of the
    screen (``left``, ``right``, ``tie``, ``both_bad``) when output ``first`` is on the
    left."""
    if pressed not in PRESSED:
        raise ValueError(f"a preference is one of {', '.join(PRESSED)}")
    if pressed in ("tie", "both_bad"):
        return pressed
    other = "b" if first == "a" else "a"
    return first if pressed == "left" else other


def to_shown(preference: str | None, first: str | None) -> str | None:
    """The inverse of :func:`to_stored`: a stored preference as the screen shows it."""
    if preference is None or preference in ("tie", "both_bad"):
        return preference
    return "left" if preference == (first or "a") else "right"


def shown_order(person: str, ranking_id: str, outputs: Sequence[str]) -> list[str]:
    """The order ``person`` sees a ranking's outputs in ("Output 1".."Output k"): a seeded
    shuffle (:func:`annotation.work.engine.personal_order` salted with the ranking id),
    stable across reloads, different per person, so the listed order biases nobody alike."""
    return personal_order(outputs, person, 0, f"ranking:{ranking_id}")


def order_of(places: Mapping[str, int], outputs: Sequence[str]) -> RankOrder | None:
    """The order (best first) the places make, in the bundle's format (an output id per
    place, a list of tied ids where several share a place, listed in the ranking's order);
    None until every output of ``outputs`` has a place."""
    if any(o not in places for o in outputs):
        return None
    out: RankOrder = []
    for place in sorted({places[o] for o in outputs}):
        tied = [o for o in outputs if places[o] == place]
        out.append(tied[0] if len(tied) == 1 else tied)
    return out


def places_of(order: RankOrder) -> dict[str, int]:
    """The place (1 = best) of each output of an order: the inverse of :func:`order_of`
    (an order imported from a bundle, or written before the places, shown as places)."""
    return {o: i + 1 for i, place in enumerate(order)
            for o in (place if isinstance(place, list) else [place])}


# ------------------------------------------------------------------------ items
@dataclass(frozen=True)
class TaskInputs:
    """What the annotator sees of a task once: its text instruction and input images."""

    task_id: str
    instruction: str
    images: tuple[ItemImage, ...]


@dataclass(frozen=True)
class PairView:
    """A pair as one annotator sees it: the inputs and the two images, left and right.
    No output id, generator or judge answer (the page gets nothing else)."""

    inputs: TaskInputs
    left: str | None
    right: str | None


@dataclass(frozen=True)
class RankingView:
    """A ranking as one annotator sees it: the inputs and the images in the person's
    order (``images[i]`` is "Output i+1")."""

    inputs: TaskInputs
    images: tuple[str | None, ...]


def _inputs(store: Store, task_id: str) -> TaskInputs:
    task = project_rows.task(store, task_id)
    if task is None:
        raise KeyError(task_id)
    images = tuple(ItemImage(r.idx, r.role, r.kind, r.label, r.sha256, r.width, r.height)
                   for r in store.images_df(task_id).itertuples())
    return TaskInputs(task_id, task.instruction, images)


def load_pair(store: Store, person: str, pair_id: str) -> PairView:
    """The pair as ``person`` sees it (:func:`shown_first` decides the sides)."""
    a, b, task_id = pair_outputs(store, pair_id)
    task_a, sha_a = items.output_task(store, a)
    _, sha_b = items.output_task(store, b)
    left, right = (sha_a, sha_b) if shown_first(person, pair_id) == "a" else (sha_b, sha_a)
    return PairView(_inputs(store, task_id or task_a), left, right)


def load_ranking(store: Store, person: str, ranking_id: str) -> RankingView:
    """The ranking as ``person`` sees it (:func:`shown_order`)."""
    outputs, task_id = ranking_outputs(store, ranking_id)
    shown = shown_order(person, ranking_id, outputs)
    found = [items.output_task(store, o) for o in shown]
    return RankingView(_inputs(store, task_id or found[0][0]),
                       tuple(sha for _, sha in found))


# ------------------------------------------------------------------------ answers
def give_preference(store: Store, person: str, pair_id: str, pressed: str, *,
                    now: datetime | None = None, active: tuple[int, float] | None = None,
                    expected: int | None | object = UNCHECKED, slot: bool | None = None,
                    delivery: Delivery | None = None, note: str | None = None) -> int:
    """Record ``person``'s press on a pair (``left``/``right``/``tie``/``both_bad``, in
    screen terms) as a preference in terms of output A / B with the side output A was
    shown on; appended, superseding a different earlier answer (an equal one writes
    nothing); the claim check and the write are one transaction
    (:meth:`annotation.work.engine.Router.answering`). ``expected``, ``slot`` and
    ``delivery`` as :func:`annotation.work.workflow.give_answer`. Returns the current row."""
    first = shown_first(person, pair_id)
    preference = to_stored(pressed, first)
    pair_outputs(store, pair_id)  # KeyError for an unknown pair
    with PAIRS.answering(store, person, pair_id, slot=slot, now=now, active=active) as act:
        current = act.current("pair", {"pair_id": pair_id})
        act.check_seen("pair", current, expected, delivery)
        return act.supersede("pair", {
            "annotator": person, "pair_id": pair_id, "preference": preference,
            "shown_first": first, "note": note, "created_at": act.stamp, "source": "app"},
            same=("preference", "shown_first"), previous=current, delivery=delivery)


def my_preference(store: Store, person: str, pair_id: str) -> dict[str, Any] | None:
    """``person``'s current answer row on the pair, or None."""
    rows = answer_rows.current_rows(store, "pair", person, pair_id)
    return rows[-1] if rows else None


def give_place(store: Store, person: str, ranking_id: str, position: int, place: int, *,
               now: datetime | None = None, active: tuple[int, float] | None = None,
               expected: int | None | object = UNCHECKED, slot: bool | None = None,
               delivery: Delivery | None = None) -> int:
    """Give "Output ``position + 1``" of ``person``'s view of the ranking the place
    ``place`` (1 = best; equal places tie): one ``ranking_places`` row (appended,
    superseding); when every output then has a place, the order they make
    (:func:`order_of`) is written as the person's ranking answer in the same transaction
    (superseding a different one). Returns the place row."""
    outputs, _ = ranking_outputs(store, ranking_id)
    shown = shown_order(person, ranking_id, outputs)
    if not 0 <= position < len(shown):
        raise ValueError("this ranking has no such output")
    if isinstance(place, bool) or not isinstance(place, int) or not 1 <= place <= len(shown):
        raise ValueError(f"a place is a whole number from 1 to {len(shown)}")
    output_id = shown[position]
    with RANKINGS.answering(store, person, ranking_id, slot=slot, now=now,
                            active=active) as act:
        key = {"output_id": output_id}
        current = act.current("ranking_place", key)
        act.check_seen("ranking_place", current, expected, delivery)
        row = act.supersede("ranking_place", {
            "annotator": person, "ranking_id": ranking_id, "output_id": output_id,
            "place": place, "created_at": act.stamp, "source": "app"},
            same=("place",), previous=current, delivery=delivery)
        places = {r["output_id"]: int(r["place"]) for r in act.current_rows("ranking_place")}
        stored = act.current("ranking", {"ranking_id": ranking_id})
        if stored is not None:  # an order without places (imported): its places count
            places = places_of(json.loads(stored["ranked"])) | places
        order = order_of(places, outputs)
        if order is not None:
            act.supersede("ranking", {
                "annotator": person, "ranking_id": ranking_id, "ranked": dumps_order(order),
                "created_at": act.stamp, "source": "app"}, same=("ranked",))
        return row


def my_places(store: Store, person: str, ranking_id: str) -> dict[str, tuple[int, int]]:
    """Per output id, (place, row id) of ``person``'s current places on the ranking."""
    return {r["output_id"]: (int(r["place"]), int(r["place_id"]))
            for r in answer_rows.current_rows(store, "ranking_place", person, ranking_id)}


def my_order(store: Store, person: str, ranking_id: str) -> RankOrder | None:
    """``person``'s current complete order of the ranking (best first), or None."""
    rows = answer_rows.current_rows(store, "ranking", person, ranking_id)
    return json.loads(rows[-1]["ranked"]) if rows else None


def shown_places(store: Store, person: str, ranking_id: str
                 ) -> dict[int, tuple[int, int | None]]:
    """Per position of ``person``'s view, (place, row id) of the places given; an output
    without a place row takes its place in the person's stored order, if any (row None)."""
    outputs, _ = ranking_outputs(store, ranking_id)
    mine: dict[str, tuple[int, int | None]] = dict(my_places(store, person, ranking_id))
    order = my_order(store, person, ranking_id)
    if order is not None:
        mine = {o: (p, None) for o, p in places_of(order).items()} | mine
    return {i: mine[o] for i, o in enumerate(shown_order(person, ranking_id, outputs))
            if o in mine}


# ------------------------------------------------------------------------ the panel
def pair_targets() -> list[PanelTarget]:
    """The one target of a pair: Left / Right / Both good / Both bad (keys A / B / T / X)."""
    return [PanelTarget("p", "preference", "Your choice",
                        tuple(Option(v, label, key) for v, label, key in PAIR_OPTIONS),
                        caption="Which output follows the task better? Both good or both "
                                "bad if neither is")]


def ranking_targets(k: int) -> list[PanelTarget]:
    """One target per shown output ("Output 1".."Output k"), the places 1..k as options
    (digit keys up to :data:`MAX_KEYED`; the same place for two outputs is a tie)."""
    return [PanelTarget("r", str(i), f"Output {i + 1}",
                        tuple(Option(float(p), str(p), str(p) if p <= MAX_KEYED else None)
                              for p in range(1, k + 1)),
                        caption="Place: 1 = best; the same place for a tie")
            for i in range(k)]


def ranking_size(store: Store, ranking_id: str) -> int:
    return len(ranking_outputs(store, ranking_id)[0])


# ------------------------------------------------------------------------ controllers
class _CompareSession(Controller):
    """What the pair and ranking sessions share: the panel's commands (Enter submits a
    complete unit, Backspace goes back, ``reload`` gives up a unit that went to someone
    else)."""

    PERSON = "annotator"

    def __init__(self, store: Store, person: str, state: MutableMapping[str, Any],
                 clock: Callable[[], float] = time.monotonic):
        super().__init__(store, person, state, clock)

    def command(self, command: dict[str, Any]) -> None:
        """Act on a command of the answer panel, once."""
        name = self.take_command(command, ("submit", "back", "reload"))
        if name is None:
            return
        if name == "back":
            self.back()
        elif name == "reload":
            self.give_up()
        elif self.unit is not None:
            if not self.complete():
                self.state["notice"] = f"This {self.NOUN} is not answered yet."
            else:
                self._submit()

    def panel_for(self, targets: Sequence[PanelTarget], values: dict[int, Any],
                  rows: dict[int, int]) -> Panel:
        return Panel(visit=int(self.state["visit_id"]), targets=tuple(targets),
                     values=values, rows=rows, commands=COMMANDS, submit="submit",
                     reviewing=bool(self.state.get("reviewing")),
                     handled=int(self.state.get("handled", 0)))


class PairSession(_CompareSession):
    """One annotator working through pairs (:class:`annotation.work.engine.Controller`)."""

    router = PAIRS
    UNIT = "pair_id"
    NOUN = "pair"

    def view(self) -> PairView:
        assert self.unit is not None
        return load_pair(self.store, self.person, self.unit)

    def complete(self) -> bool:
        return self.unit is not None and my_preference(self.store, self.person,
                                                       self.unit) is not None

    def press(self, pressed: str) -> int | None:
        """A press outside the panel (tests, a retry): written with the claim check."""
        if self._moved or self.unit is None:
            return None
        try:
            return give_preference(self.store, self.person, self.unit, pressed,
                                   active=self._active(), slot=True)
        except ItemTaken as exc:
            self._taken(exc)
            return None

    def panel(self) -> Panel:
        """The panel of the open pair, with the stored answer in screen terms."""
        assert self.unit is not None
        row = my_preference(self.store, self.person, self.unit)
        values: dict[int, Any] = {}
        rows: dict[int, int] = {}
        if row is not None:
            values[0] = to_shown(row["preference"], row["shown_first"])
            rows[0] = int(row["pair_annotation_id"])
        return self.panel_for(pair_targets(), values, rows)


class RankingSession(_CompareSession):
    """One annotator working through rankings."""

    router = RANKINGS
    UNIT = "ranking_id"
    NOUN = "ranking"

    def view(self) -> RankingView:
        assert self.unit is not None
        return load_ranking(self.store, self.person, self.unit)

    def complete(self) -> bool:
        return self.unit is not None and my_order(self.store, self.person,
                                                  self.unit) is not None

    def place(self, position: int, place: int) -> int | None:
        """A place given outside the panel: written with the claim check."""
        if self._moved or self.unit is None:
            return None
        try:
            return give_place(self.store, self.person, self.unit, position, place,
                              active=self._active(), slot=True)
        except ItemTaken as exc:
            self._taken(exc)
            return None

    def panel(self) -> Panel:
        """The panel of the open ranking: a target per shown output, its place stored."""
        assert self.unit is not None
        given = shown_places(self.store, self.person, self.unit)
        return self.panel_for(ranking_targets(ranking_size(self.store, self.unit)),
                              {i: float(p) for i, (p, _) in given.items()},
                              {i: r for i, (_, r) in given.items() if r is not None})


def session_for(store: Store, person: str, state: MutableMapping[str, Any]
                ) -> PairSession | RankingSession | None:
    """The session the page shows: the person's open pair or ranking (``state["mode"]``
    remembers which), else the router's next pair, else the next ranking; None when
    nothing is waiting (``state`` keeps one sub-state per kind)."""
    pairs = PairSession(store, person, state.setdefault("pairs", {}))
    rankings = RankingSession(store, person, state.setdefault("rankings", {}))
    mode = state.get("mode")
    if mode == "rankings" and rankings.unit is not None:
        return rankings
    if pairs.unit is not None:
        state["mode"] = "pairs"
        return pairs
    if rankings.unit is not None:
        state["mode"] = "rankings"
        return rankings
    state.pop("mode", None)
    return None


def review_previous(store: Store, person: str, state: MutableMapping[str, Any],
                    kind: str) -> bool:
    """Reopen the person's last submitted pair (``kind="pairs"``) or ranking
    (``"rankings"``) from the "All done" screen; :func:`session_for` then shows it. False
    when there is none."""
    session = (PairSession if kind == "pairs" else RankingSession)(
        store, person, state.setdefault(kind, {}))
    if not session.back():
        return False
    state["mode"] = kind
    return True


__all__ = [
    "COMMANDS", "PAIRS", "PAIR_OPTIONS", "RANKINGS", "CompareSettings", "PairSession",
    "PairView", "RankingSession", "RankingView", "TaskInputs", "give_place",
    "give_preference", "has_items", "load_pair", "load_ranking", "my_order", "my_places",
    "review_previous",
    "my_preference", "order_of", "pair_targets", "places_of", "ranking_targets", "session_for",
    "shown_first", "shown_order", "shown_places", "to_shown", "to_stored",
]
