"""The verification page's controller: what each click or key does, without Streamlit.

The page keeps a :class:`VerifySession`'s ``state`` (a plain dict) in ``st.session_state``;
every reading and verdict is written to the store at once, so a reload or another machine
resumes at the same task (:func:`annotation.work.verification.next_task` hands the verifier's
own unfinished task back first).

A stale tab (its reservation lapsed and the task went to someone else:
:func:`annotation.work.routing.claim`) writes nothing: the session leaves a message in
``state["notice"]`` and opens the verifier's next task; the rest of that interaction does
nothing more.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from annotation.store import Store
from annotation.work import verification as vf
from annotation.work.routing import ItemTaken
from annotation.work.workflow import active_increment


class VerifySession:
    """One verifier working through tasks. ``state`` survives Streamlit reruns."""

    def __init__(self, store: Store, verifier: str, state: MutableMapping[str, Any],
                 clock: Callable[[], float] = time.monotonic):
        self.store = store
        self.verifier = verifier
        self.state = state
        self.clock = clock
        self._moved = False  # this interaction found the task gone: do nothing more
        if state.get("verifier") != verifier:
            state.clear()
            state["verifier"] = verifier

    def _taken(self, exc: ItemTaken) -> None:
        self._moved = True
        self.state["notice"] = str(exc)
        self.state.pop("notes", None)
        self._open(vf.next_task(self.store, self.verifier))

    # ------------------------------------------------------------------ the task
    @property
    def task_id(self) -> str | None:
        if "task_id" not in self.state:
            self._open(vf.next_task(self.store, self.verifier))
        return self.state["task_id"]

    def _open(self, task_id: str | None, reviewing: bool = False) -> None:
        self.state.update(task_id=task_id, reviewing=reviewing)
        self.state.pop("item", None)
        if task_id is not None:
            self.state["visit_id"] = vf.start_visit(self.store, self.verifier, task_id)
            self.state["last_ts"] = self.clock()

    @property
    def item(self) -> vf.VerifyItem:
        if self.state.get("item") is None or self.state["item"].task_id != self.task_id:
            assert self.task_id is not None
            self.state["item"] = vf.load_verify_item(self.store, self.task_id)
        return self.state["item"]

    @property
    def settings(self) -> vf.VerifySettings:
        return vf.get_settings(self.store)

    def readings(self) -> dict[tuple[int, str], Any]:
        assert self.task_id is not None
        return vf.my_readings(self.store, self.verifier, self.task_id)

    def verdicts(self) -> dict[str, vf.Verdict]:
        assert self.task_id is not None
        return vf.my_verdicts(self.store, self.verifier, self.task_id)

    def revealed(self) -> bool:
        """Whether the automatic decisions may be shown now (see blind mode)."""
        return vf.reveal_automatic(self.item, self.readings(), self.settings.blind)

    def reading_value(self, index: int, attribute: str) -> Any:
        """The verifier's reading if given, else the pre-label (what a field starts at)."""
        readings = self.readings()
        if (index, attribute) in readings:
            return readings[(index, attribute)]
        return self.item.reference(index).prelabel.get(attribute)

    def current_check(self) -> str | None:
        """The first conflict type without a verdict (keyboard shortcuts act on it)."""
        verdicts = self.verdicts()
        return next((c.conflict for c in self.item.checks if c.conflict not in verdicts), None)

    # ------------------------------------------------------------------ actions
    def _active(self) -> tuple[int, float]:
        now = self.clock()
        seconds = active_increment(self.state.get("last_ts", now), now)
        self.state["last_ts"] = now
        return self.state["visit_id"], seconds

    def set_reading(self, index: int, attribute: str, value: Any) -> int | None:
        """Record one reading at once (history kept); None when nothing was written."""
        if self._moved:
            return None
        assert self.task_id is not None
        try:
            return vf.give_reading(self.store, self.verifier, self.task_id, index, attribute,
                                   value, active=self._active(), slot=True)
        except ItemTaken as exc:
            self._taken(exc)
            return None

    def confirm_readings(self, values: Mapping[tuple[int, str], Any]) -> None:
        """Record every needed reading: ``values`` where the verifier set a field, else the
        value the field shows (the pre-label): confirming a pre-label is a reading too."""
        item = self.item
        for index, attribute in item.needed():
            if self._moved:
                return
            value = values.get((index, attribute), self.reading_value(index, attribute))
            if attribute != "yaw" and value is None:
                value = False
            self.set_reading(index, attribute, value)

    def set_verdict(self, conflict: str, agree: bool, note: str | None = None) -> int | None:
        """Agree or disagree with the automatic label; the verified label follows. With no
        automatic label, ``agree`` means *conflict* (the page labels the buttons so)."""
        if self._moved:
            return None
        check = next(c for c in self.item.checks if c.conflict == conflict)
        automatic = check.automatic
        label = agree if automatic is None else (automatic if agree else not automatic)
        if note is None:
            old = self.verdicts().get(conflict)
            note = old.note if old else self.pending_note(conflict)
        assert self.task_id is not None
        # blind: the automatic label was hidden until the verifier had read something
        blind = self.settings.blind and bool(self.item.needed())
        try:
            return vf.give_verdict(self.store, self.verifier, self.task_id, conflict, label,
                                   automatic, note=note, blind=blind, active=self._active(),
                                   slot=True)
        except ItemTaken as exc:
            self._taken(exc)
            return None

    def set_note(self, conflict: str, note: str) -> int | None:
        """Change the note of a verdict already given (a new row, history kept)."""
        if self._moved:
            return None
        verdict = self.verdicts().get(conflict)
        if verdict is None:
            self.state.setdefault("notes", {})[conflict] = note
            return None
        check = next(c for c in self.item.checks if c.conflict == conflict)
        assert self.task_id is not None
        try:
            return vf.give_verdict(self.store, self.verifier, self.task_id, conflict,
                                   verdict.label, check.automatic, note=note,
                                   blind=verdict.blind, active=self._active(), slot=True)
        except ItemTaken as exc:
            self._taken(exc)
            return None

    def pending_note(self, conflict: str) -> str | None:
        return self.state.get("notes", {}).get(conflict)

    def can_submit(self) -> bool:
        return vf.readings_complete(self.item, self.readings()) and vf.verdicts_complete(
            self.item, self.verdicts())

    def submit(self) -> None:
        """Submit the task and open the next one (or go back to where review started).
        Nothing when this interaction found the task gone (see ``state["notice"]``)."""
        if self._moved:
            return
        assert self.task_id is not None
        if not self.can_submit():
            raise ValueError("give a reading of every pre-label and a verdict per conflict "
                             "type first")
        try:
            vf.submit_task(self.store, self.verifier, self.task_id, slot=True)
        except ItemTaken as exc:
            self._taken(exc)
            return
        self.state.pop("notes", None)
        self._open(vf.next_task(self.store, self.verifier))

    def back(self) -> bool:
        """Reopen the previously submitted task to review it; False when there is none."""
        previous = vf.previous_task(self.store, self.verifier, self.state.get("task_id"))
        if previous is None:
            return False
        self._open(previous, reviewing=True)
        return True

    def progress(self) -> tuple[int, int]:
        return vf.personal_progress(self.store, self.verifier)
