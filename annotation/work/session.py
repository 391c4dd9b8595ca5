"""The annotation page's controller: what each key press does, independent of Streamlit.

The page keeps an :class:`AnnotationSession`'s ``state`` (a plain dict) in
``st.session_state`` and maps buttons to its methods; everything it does is written to the
store at once, so a reload, a closed tab or another machine resumes where the annotator was.

A tab can be stale: each answer carries the id of the answer row this tab showed
(``expected``), and answers and submissions need the right to the item
(:func:`annotation.work.routing.claim`). When the project moved on, nothing is written; the
session reloads (another tab's answer) or moves to the next item (the item went to
someone else) and leaves a message in ``state["notice"]`` for the page.
"""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping
from typing import Any

from annotation.store import Store
from annotation.work import checklist, workflow
from annotation.work.checklist import Target
from annotation.work.routing import ChangedElsewhere, ItemTaken
from annotation.work.workflow import AnnotatorItem, MyAnswers


class AnnotationSession:
    """One annotator working through items. ``state`` survives Streamlit reruns."""

    def __init__(
        self,
        store: Store,
        annotator: str,
        state: MutableMapping[str, Any],
        clock: Callable[[], float] = time.monotonic,
    ):
        self.store = store
        self.annotator = annotator
        self.state = state
        self.clock = clock
        self._memo: dict[str, Any] = {}  # answers, targets, gate: valid until a write
        if state.get("annotator") != annotator:
            state.clear()
            state["annotator"] = annotator

    # ------------------------------------------------------------------ the item
    @property
    def output_id(self) -> str | None:
        if "output_id" not in self.state:
            self._open(workflow.next_item(self.store, self.annotator))
        return self.state["output_id"]

    def _open(self, output_id: str | None, reviewing: bool = False) -> None:
        self._tick()
        self.state["output_id"] = output_id
        self.state["reviewing"] = reviewing
        self.state.pop("item", None)
        self._memo.clear()
        if output_id is None:
            return
        self.state["visit_id"] = workflow.start_visit(self.store, self.annotator, output_id)
        self.state["last_ts"] = self.clock()
        mine = self.answers()
        all_targets = self.targets()
        open_now = checklist.open_targets(
            self.item.questions, self._criteria(), mine.answers, mine.scores
        )
        self.state["cursor"] = all_targets.index(open_now[0]) if open_now else 0

    @property
    def item(self) -> AnnotatorItem:
        """The open item, loaded once per item (kept in ``state``)."""
        item = self.state.get("item")
        if item is None or item.output_id != self.output_id:
            if self.output_id is None:
                raise LookupError("no item")
            item = self.state["item"] = workflow.load_item(self.store, self.output_id)
        return item

    def _criteria(self) -> list[str]:
        return [c.name for c in self.item.criteria]

    def targets(self) -> list[Target]:
        if "targets" not in self._memo:
            self._memo["targets"] = checklist.targets(self.item.questions, self._criteria())
        return self._memo["targets"]

    def answers(self) -> MyAnswers:
        """This annotator's current answers on the open item (one query per change)."""
        if "answers" not in self._memo:
            self._memo["answers"] = workflow.my_answers(self.store, self.annotator,
                                                        self.output_id or "")
        return self._memo["answers"]

    @property
    def cursor(self) -> int:
        return int(self.state.get("cursor", 0))

    @property
    def current(self) -> Target | None:
        all_targets = self.targets()
        return all_targets[min(self.cursor, len(all_targets) - 1)] if all_targets else None

    def applicable(self) -> dict[str, bool]:
        if "gate" not in self._memo:
            self._memo["gate"] = checklist.applicable(self.item.questions,
                                                      self.answers().answers)
        return self._memo["gate"]

    def remaining(self) -> list[Target]:
        """Applicable targets still without an answer."""
        mine = self.answers()
        return checklist.open_targets(
            self.item.questions, self._criteria(), mine.answers, mine.scores
        )

    def complete(self) -> bool:
        mine = self.answers()
        return checklist.is_complete(
            self.item.questions, self._criteria(), mine.answers, mine.scores
        )

    def progress(self) -> tuple[int, int]:
        return workflow.personal_progress(self.store, self.annotator)

    # ------------------------------------------------------------------ actions
    def _elapsed(self) -> tuple[int, float] | None:
        """(visit, active seconds since the last interaction), restarting the count."""
        if self.state.get("visit_id") is None:
            return None
        now = self.clock()
        seconds = workflow.active_increment(self.state.get("last_ts", now), now)
        self.state["last_ts"] = now
        return self.state["visit_id"], seconds

    def _tick(self) -> None:
        """Add the active time since the last interaction to the current visit."""
        elapsed = self._elapsed()
        if elapsed is not None:
            workflow.add_active_time(self.store, *elapsed, annotator=self.annotator)

    def _write(self, **answer: Any) -> bool:
        """One answer, its reservation renewal and active time: one transaction. False
        when a stale tab's answer was refused (nothing written; see ``state["notice"]``)."""
        key: str = answer.get("question_id") or answer["criterion"]
        seen = self.answers().ids.get(key)  # the row this tab showed (None: no answer)
        try:
            workflow.give_answer(self.store, self.annotator, self.item.output_id,
                                 active=self._elapsed(), expected=seen, slot=True, **answer)
        except ChangedElsewhere as exc:  # the memo is cleared below: show what is stored now
            self.state["notice"] = str(exc)
            return False
        except ItemTaken as exc:
            self._moved_on(exc)
            return False
        finally:
            self._memo.clear()
        return True

    def _moved_on(self, exc: ItemTaken) -> None:
        """The open item is no longer this annotator's: say so and open the next one."""
        self.state["notice"] = str(exc)
        self.state.pop("visit_id", None)
        self._open(workflow.next_item(self.store, self.annotator))

    def answer(self, value: str) -> None:
        """Y / N / U on the current question, then advance to the next open target."""
        target = self.current
        if target is None or not target.is_question or not self.applicable().get(target.key):
            return
        if self._write(question_id=target.key, answer=value):
            self._advance()

    def score(self, value: float) -> None:
        """A digit on the current criterion (the page maps 0 to 10), then advance."""
        target = self.current
        if target is None or target.is_question:
            return
        crit = next(c for c in self.item.criteria if c.name == target.key)
        if not crit.min <= value <= crit.max:
            return
        if self._write(criterion=target.key, score=value):
            self._advance()

    def answer_question(self, question_id: str, value: str) -> None:
        """A click on a question's own Yes / No / Can't tell control (mouse path)."""
        index = next((i for i, t in enumerate(self.targets()) if t.key == question_id), None)
        if index is not None:
            self.state["cursor"] = index
            self.answer(value)

    def note(self, text: str) -> None:
        """Attach a note to the current answer (kept in the history like the answer)."""
        target = self.current
        mine = self.answers()
        if target is None:
            return
        if target.is_question and target.key in mine.answers:
            self._write(question_id=target.key, answer=mine.answers[target.key], note=text)
        elif not target.is_question and target.key in mine.scores:
            self._write(criterion=target.key, score=mine.scores[target.key], note=text)

    def _advance(self) -> None:
        mine = self.answers()
        self.state["cursor"] = checklist.next_target(
            self.targets(), self.cursor, self.item.questions, mine.answers, mine.scores
        )

    def move(self, delta: int) -> None:
        """J / K: the next or previous applicable target (no wrap)."""
        all_targets = self.targets()
        gate = self.applicable()
        i = self.cursor
        while 0 <= i + delta < len(all_targets):
            i += delta
            t = all_targets[i]
            if not t.is_question or gate.get(t.key, True):
                self.state["cursor"] = i
                return

    def go_to(self, index: int) -> None:
        if 0 <= index < len(self.targets()):
            self.state["cursor"] = index

    def submit(self) -> bool:
        """Enter: submit a complete item and open the next one. False if incomplete, or
        when the item went to someone else meanwhile (then the next one is open)."""
        if self.output_id is None or not self.complete():
            return False
        self._tick()
        try:
            workflow.submit(self.store, self.annotator, self.output_id, slot=True)
        except ItemTaken as exc:
            self._moved_on(exc)
            return False
        self._open(workflow.next_item(self.store, self.annotator))
        return True

    def back(self) -> bool:
        """B: reopen the previously submitted item (answers can be changed; history kept)."""
        previous = workflow.previous_item(self.store, self.annotator, self.state.get("output_id"))
        if previous is None:
            return False
        self._open(previous, reviewing=True)
        return True

    def flag(self, reason: str, note: str | None = None) -> int:
        """F: flag the item (broken image, ambiguous question, other + note)."""
        target = self.current
        question = target.key if target is not None and target.is_question else None
        return workflow.flag_item(
            self.store,
            self.annotator,
            self.item.output_id,
            reason,
            note,
            question if reason == "ambiguous_question" else None,
        )
