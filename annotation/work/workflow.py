"""Annotate outputs: the checklist and ratings workflow on the engine.

What a unit is: an output an annotator can work on (an image at hand, not missing, not a
diagnostic-tree node, in the sample when the admin drew one: uniform with a seed, or
stratified by generator). What an answer is: a yes / no / can't-tell answer to a checklist
question or a score of a criterion, with an optional note (``annotations``, append-only).
When a unit is complete: every applicable question answered (DSG gating,
:mod:`annotation.work.checklist`) and every criterion scored.

Routing, reservations, resume, overlap (default 3), the stale-tab claim and active time
are the engine's (:mod:`annotation.work.engine`). Answers go through the one answer writer
(:mod:`annotation.store.answers`); submissions, flags and settings also go to the audit
log. Annotators never see pass answers, judges' outputs or generator names: the item they
get is an :class:`AnnotatorItem`, which has no field for them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd

from annotation.store import Store, items
from annotation.store import answers as answer_rows
from annotation.store import gold as gold_rows
from annotation.store import project as project_rows
from annotation.store import queue as queues
from annotation.store.answers import Delivery
from annotation.work import checklist, gold, sampling
from annotation.work import panel as panels
from annotation.work.checklist import QuestionView, Target
from annotation.work.engine import (
    DEFAULT_RESERVATION_MINUTES,
    IDLE_CAP_SECONDS,
    UNCHECKED,
    ChangedElsewhere,
    Controller,
    ItemTaken,
    Kind,
    Router,
    active_increment,
)
from annotation.work.engine import personal_order as engine_order

__all__ = ["ChangedElsewhere", "ItemTaken", "active_increment", "IDLE_CAP_SECONDS"]

DEFAULT_OVERLAP = 3
#: the annotation page's commands in the answer panel (README: keys)
COMMANDS = (panels.Command("submit", "Submit item", "Enter", primary=True),
            panels.Command("back", "Back", "B"), panels.Command("flag", "Flag", "F"),
            panels.Command("enlarge", "Enlarge", "E"))
FLAG_REASONS = ("broken_image", "ambiguous_question", "other")
SAMPLE_MODES = ("all", "uniform", "stratified")


# ------------------------------------------------------------------------ settings
@dataclass(frozen=True)
class Settings:
    overlap: int = DEFAULT_OVERLAP
    reservation_minutes: int = DEFAULT_RESERVATION_MINUTES
    seed: int = 0
    #: offer outputs whose judges disagree (with each other, or with the humans so far)
    #: first (:func:`annotation.work.sampling.output_disagreement`)
    disagreement_first: bool = False
    #: gold items (:mod:`annotation.work.gold`): one in every ``gold_every`` items (0: none)
    gold_every: int = 0
    #: ``test`` (silent) or ``training`` (the differences are shown after a gold item)
    gold_feedback: str = "test"
    #: gold items before any real item (0: no qualification), and the share correct to pass
    qualification_items: int = 0
    qualification_pass: float = 0.8
    #: a score within this many points of the gold score is correct
    gold_tolerance: float = 1.0
    #: speed flags: below this share of the annotator's median item time, or below this
    #: many seconds per question or criterion
    fast_share: float = 1 / 3
    fast_floor_seconds: float = 1.0

    def __post_init__(self) -> None:
        if self.gold_feedback not in gold.FEEDBACK_MODES:
            raise ValueError(f"gold_feedback must be one of {', '.join(gold.FEEDBACK_MODES)}")
        if self.gold_every < 0 or self.gold_every == 1:
            raise ValueError("gold_every must be 0 (no gold items) or at least 2")
        if self.qualification_items < 0 or not 0 <= self.qualification_pass <= 1:
            raise ValueError("qualification_items must be >= 0 and qualification_pass "
                             "between 0 and 1")


# ------------------------------------------------------------------------ the units
def annotatable_outputs(store: Store) -> pd.DataFrame:
    """Outputs an annotator can work on: image at hand, not missing, not a diagnostic-tree
    node (``meta.node``: those are reviewed on the tree page); the sample is ignored."""
    return items.annotatable_outputs(store)


def eligible_outputs(store: Store) -> pd.DataFrame:
    """Annotatable outputs, restricted to the sample when one is drawn."""
    outputs = annotatable_outputs(store)
    sample = items.sample_ids(store)
    return outputs[outputs.output_id.isin(sample)] if sample else outputs


def _units(store: Store) -> list[str]:
    return list(eligible_outputs(store).output_id)


#: the annotation workflow's router (queue kind ``annotate``)
ROUTER: Router[Settings] = Router(Kind(
    name="annotate", units=_units, answers=("annotation",), settings=Settings, salt=None,
    submit_action="item.submit", settings_action="workflow.settings",
    priority=lambda store: sampling.output_disagreement(store), gold=True))


def get_settings(store: Store) -> Settings:
    return ROUTER.settings(store)


def set_settings(store: Store, actor: str, **changes: Any) -> Settings:
    """Change workflow settings (overlap >= 1, reservation_minutes >= 1); audited."""
    return ROUTER.set_settings(store, actor, **changes)


def draw_sample(
    store: Store, actor: str, mode: str, size: int | None = None, seed: int = 0
) -> list[str]:
    """Restrict annotation to a sample of the annotatable outputs; return its ids.

    ``uniform``: ``size`` outputs drawn uniformly at random (``random.Random(seed)``);
    ``stratified``: ``size`` split over generators in proportion to their outputs (largest
    remainders), drawn uniformly within each; ``all``: no restriction. Every design,
    with more options, is :func:`annotation.work.sampling.draw`.
    """
    if mode not in SAMPLE_MODES:
        raise ValueError(f"mode must be one of {', '.join(SAMPLE_MODES)}")
    return sampling.draw(store, actor, mode, size=size, seed=seed)


# ------------------------------------------------------------------------ routing
def personal_order(output_ids: list[str], annotator: str, seed: int = 0) -> list[str]:
    """The annotator's own shuffle of the outputs, stable across sessions and machines."""
    return engine_order(output_ids, annotator, seed)


def next_item(store: Store, annotator: str, now: datetime | None = None) -> str | None:
    """Choose (and reserve) the output ``annotator`` should work on now; None when done
    (:meth:`annotation.work.engine.Router.next`)."""
    return ROUTER.next(store, annotator, now)


def release(store: Store, annotator: str, output_id: str) -> None:
    """Give a reservation back."""
    ROUTER.release(store, annotator, output_id)


# ------------------------------------------------------------------------ the item
@dataclass(frozen=True)
class ItemImage:
    index: int
    role: str
    kind: str | None
    label: str | None
    sha256: str
    width: int
    height: int

    @property
    def short_caption(self) -> str:
        """``Image_k · label`` (or kind): what fits under a thumbnail."""
        name = self.label or self.kind
        return f"Image_{self.index} · {name}" if name else f"Image_{self.index}"

    @property
    def caption(self) -> str:
        parts = [f"Image_{self.index}", self.role.replace("_", " ")]
        if self.kind:
            parts.append(self.kind)
        if self.label:
            parts.append(self.label)
        return " · ".join(parts)


@dataclass(frozen=True)
class CriterionView:
    name: str
    label: str
    min: float
    max: float
    step: float | None
    rubric: str | None


@dataclass(frozen=True)
class AnnotatorItem:
    """Everything an annotator may see of one output. By construction it holds no pass
    answers, no judge output and no generator name."""

    output_id: str
    task_id: str
    instruction: str
    images: tuple[ItemImage, ...]
    output_sha256: str | None
    task_meta: dict[str, Any] = field(default_factory=dict)
    questions: tuple[QuestionView, ...] = ()
    criteria: tuple[CriterionView, ...] = ()


def load_item(store: Store, output_id: str) -> AnnotatorItem:
    task_id, sha = items.output_task(store, output_id)
    task = project_rows.task(store, task_id)
    if task is None:
        raise KeyError(task_id)
    images = tuple(
        ItemImage(r.idx, r.role, r.kind, r.label, r.sha256, r.width, r.height)
        for r in store.images_df(task_id).itertuples()
    )
    questions = tuple(QuestionView(q[0], q[1], q[2], q[3], tuple(q[4]))
                      for q in items.checklist_questions(store, task.checklist_id))
    criteria = tuple(CriterionView(*r) for r in items.criteria_rows(store))
    return AnnotatorItem(output_id, task_id, task.instruction, images, sha, task.meta,
                         questions, criteria)


@dataclass
class MyAnswers:
    """One annotator's current answers on one output; ``ids``: the row of each (by
    question id or criterion), what a tab sends back as ``expected``."""

    answers: dict[str, str] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    ids: dict[str, int] = field(default_factory=dict)


def my_answers(store: Store, annotator: str, output_id: str) -> MyAnswers:
    """The annotator's current answers on one output (never anyone else's)."""
    mine = MyAnswers()
    for r in answer_rows.current_rows(store, "annotation", annotator, output_id):
        qid, crit = r["question_id"], r["criterion"]
        key = qid or crit
        mine.ids[key] = int(r["annotation_id"])
        if qid:
            mine.answers[qid] = r["answer"]
        else:
            mine.scores[crit] = r["score"]
        if r["note"]:
            mine.notes[key] = r["note"]
    return mine


def give_answer(
    store: Store,
    annotator: str,
    output_id: str,
    *,
    question_id: str | None = None,
    criterion: str | None = None,
    answer: str | None = None,
    score: float | None = None,
    note: str | None = None,
    now: datetime | None = None,
    active: tuple[int, float] | None = None,
    expected: int | None | object = UNCHECKED,
    slot: bool | None = None,
    delivery: Delivery | None = None,
) -> int:
    """Record one answer (appended; supersedes a different earlier one), renew the
    reservation and add ``active = (visit_id, seconds)`` of active time, in one
    transaction. An answer equal to the current one writes nothing and returns its id.

    ``expected``: the id of the current answer row the caller last showed for this
    question or criterion (None: it showed none). When the row is another by now (a second
    tab of the same annotator answered meanwhile) nothing is written and
    :class:`ChangedElsewhere` is raised, with the current answer: never a silent replace.
    Omitted: not checked. ``slot``: also require the right to answer the item now
    (:meth:`annotation.work.engine.Router.claim`, else :class:`ItemTaken`); None: whenever
    the store acts for a signed-in person (the app). ``delivery``: the key press the answer
    came from (:class:`annotation.store.answers.Delivery`: written once, in order).
    """
    key = {"question_id": question_id, "criterion": criterion}
    with ROUTER.answering(store, annotator, output_id, slot=slot, now=now,
                          active=active) as act:
        current = act.current("annotation", key)
        act.check_seen("annotation", current, expected, delivery)
        same = ("answer", "score") if note is None else ("answer", "score", "note")
        return act.supersede("annotation", {
            "annotator": annotator, "output_id": output_id, **key, "answer": answer,
            "score": score, "note": note, "source": "app"}, same=same, previous=current,
            delivery=delivery)


def submit(store: Store, annotator: str, output_id: str, *, slot: bool | None = None,
           now: datetime | None = None) -> None:
    """Mark the item done for this annotator (idempotent) and release the reservation.

    ``slot``: first check the right to submit (a stale tab whose item went to someone
    else gets :class:`ItemTaken`, and the overlap is never exceeded); None: whenever the
    store acts for a signed-in person (the app).
    """
    ROUTER.submit(store, annotator, output_id, slot=slot, now=now)


def is_submitted(store: Store, annotator: str, output_id: str) -> bool:
    return ROUTER.is_submitted(store, annotator, output_id)


def previous_item(store: Store, annotator: str, current: str | None) -> str | None:
    """The item submitted just before ``current`` (or the last submitted one)."""
    return ROUTER.previous(store, annotator, current)


# ------------------------------------------------------------------------ time, flags
def start_visit(store: Store, annotator: str, output_id: str) -> int:
    """Open a visit of the item (its active time is added to it); return its id."""
    return ROUTER.start_visit(store, annotator, output_id)


def add_active_time(store: Store, visit_id: int, seconds: float,
                    annotator: str | None = None) -> None:
    """Add ``seconds`` of active time to the visit (written for ``annotator``)."""
    ROUTER.add_active_time(store, visit_id, seconds, annotator)


def flag_item(
    store: Store,
    annotator: str,
    output_id: str,
    reason: str,
    note: str | None = None,
    question_id: str | None = None,
) -> int:
    if reason not in FLAG_REASONS:
        raise ValueError(f"reason must be one of {', '.join(FLAG_REASONS)}")
    return items.add_flag(store, annotator, output_id, reason, note, question_id)


# ------------------------------------------------------------------------ progress
def submission_counts(store: Store) -> dict[str, int]:
    """Distinct annotators who submitted each output."""
    return ROUTER.submission_counts(store)


def personal_progress(store: Store, annotator: str) -> tuple[int, int]:
    """(items this annotator submitted, items still open to them + submitted)."""
    return ROUTER.personal_progress(store, annotator)


def overall_progress(store: Store) -> tuple[int, int]:
    """(submissions counted toward overlap, outputs x overlap) over the eligible outputs."""
    return ROUTER.overall_progress(store)


def gold_in_use(store: Store) -> bool:
    """Whether gold items are mixed in or a qualification is asked (the annotate page then
    shows no count of everyone's submissions, which would not move after a gold item)."""
    settings = get_settings(store)
    return settings.gold_every > 0 or settings.qualification_items > 0


def qualification(store: Store, annotator: str) -> gold.Qualification:
    """The annotator's qualification (:func:`annotation.work.gold.qualification`)."""
    return ROUTER.gold_state(store, annotator, get_settings(store)).qualification


def speed_flags_df(store: Store) -> pd.DataFrame:
    """Per submitted item: annotator, output_id, active_seconds, fast_own, fast_floor
    (:func:`annotation.work.gold.speed_flags` with the workflow's settings)."""
    settings = get_settings(store)
    q = queues.reader(store, "annotate")
    subs = q.submissions_df().rename(columns={"person": "annotator", "unit": "output_id"})
    times = q.visit_seconds_df().rename(columns={"person": "annotator", "unit": "output_id"})
    times = subs[["annotator", "output_id"]].merge(times, how="left",
                                                   on=["annotator", "output_id"])
    times = times[times.active_seconds.notna()]  # no time recorded (imported): no flag
    return gold.speed_flags(times, gold_rows.target_counts(store), settings.fast_share,
                            settings.fast_floor_seconds)


def gold_accuracy_df(store: Store) -> pd.DataFrame:
    """Per annotator: gold items submitted, gold answers compared and correct, accuracy
    and its 95% Wilson interval, qualification state."""
    settings = get_settings(store)
    rows = []
    names = gold_rows.annotation_people(store)
    for name in names:
        recs = gold.records(store, name, settings.gold_tolerance)
        n = sum(r["compared"] for r in recs)
        k = sum(r["correct"] for r in recs)
        lo, hi = gold.wilson(k, n)
        rows.append({"annotator": name, "gold_items": len(recs), "gold_answers": n,
                     "gold_correct": k, "gold_accuracy": k / n if n else float("nan"),
                     "gold_accuracy_low": lo, "gold_accuracy_high": hi,
                     "qualification": qualification(store, name).state})
    return pd.DataFrame(rows, columns=["annotator", "gold_items", "gold_answers",
                                       "gold_correct", "gold_accuracy", "gold_accuracy_low",
                                       "gold_accuracy_high", "qualification"])


def _count(df: pd.DataFrame, by: str, name: str) -> pd.DataFrame:
    return df.groupby(by).size().rename(name).reset_index()


def progress_by_annotator(store: Store) -> pd.DataFrame:
    """Per annotator: items submitted, answers given, flags, median active seconds/item."""
    q = queues.reader(store, "annotate")
    subs = _count(q.submissions_df().rename(columns={"person": "annotator"}), "annotator",
                  "submitted")
    answers = _count(answer_rows.current_df(store, "annotation"), "annotator", "answers")
    flags = _count(items.flags_df(store), "annotator", "flags")
    times = q.visit_seconds_df().rename(columns={"person": "annotator"})
    med = times.groupby("annotator")["active_seconds"].median().rename(
        "median seconds/item").reset_index()
    table = subs.merge(answers, how="outer", on="annotator")
    for extra in (flags, med):
        table = table.merge(extra, how="left", on="annotator")
    table = table.fillna({"submitted": 0, "answers": 0, "flags": 0})
    table = table.astype({"submitted": int, "answers": int, "flags": int})
    speed = speed_flags_df(store)
    fast = speed.groupby("annotator").agg(fast_own=("fast_own", "sum"),
                                          fast_floor=("fast_floor", "sum")).reset_index()
    fast = fast.rename(columns={"fast_own": "fast vs own median",
                                "fast_floor": "fast vs floor"})
    accuracy = gold_accuracy_df(store)[["annotator", "gold_items", "gold_accuracy",
                                        "qualification"]]
    table = table.merge(fast, how="left", on="annotator").merge(accuracy, how="left",
                                                                 on="annotator")
    table = table.fillna({"fast vs own median": 0, "fast vs floor": 0, "gold_items": 0})
    return table.astype({"fast vs own median": int, "fast vs floor": int,
                         "gold_items": int}).sort_values("annotator")


def progress_by_generator(store: Store) -> pd.DataFrame:
    """Per generator: eligible outputs, outputs complete (overlap reached), submissions."""
    settings = get_settings(store)
    eligible = eligible_outputs(store)
    counts = submission_counts(store)
    merged = eligible.assign(n=[counts.get(o, 0) for o in eligible.output_id])
    merged["complete"] = merged["n"] >= settings.overlap
    table = (
        merged.groupby("generator")
        .agg(outputs=("output_id", "size"), complete=("complete", "sum"), submissions=("n", "sum"))
        .reset_index()
    )
    return table.astype({"complete": int, "submissions": int})


def flags_df(store: Store) -> pd.DataFrame:
    return items.flags_df(store)


# ------------------------------------------------------------------------ the controller
class AnnotationSession(Controller):
    """The annotation page's controller: what each key press does, independent of
    Streamlit (:class:`annotation.work.engine.Controller`). A stale tab writes nothing:
    each answer carries the id of the answer row this tab showed (``expected``), and
    answers and submissions need the right to the item; the session then reloads
    (another tab's answer) or moves to the next item and leaves ``state["notice"]``."""

    router = ROUTER
    UNIT = "output_id"
    PERSON = "annotator"

    def __init__(self, store: Store, annotator: str, state: MutableMapping[str, Any],
                 clock: Callable[[], float] = time.monotonic):
        self._memo: dict[str, Any] = {}  # answers, targets, gate: valid until a write
        super().__init__(store, annotator, state, clock)

    @property
    def annotator(self) -> str:
        return self.person

    # ------------------------------------------------------------------ the item
    @property
    def output_id(self) -> str | None:
        return self.unit

    def _opened(self) -> None:
        self.state.pop("item", None)
        self._memo.clear()

    def _entered(self) -> None:
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
            item = self.state["item"] = load_item(self.store, self.output_id)
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
            self._memo["answers"] = my_answers(self.store, self.annotator,
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

    # ------------------------------------------------------------------ actions
    def _write(self, **answer: Any) -> bool:
        """One answer, its reservation renewal and active time: one transaction. False
        when a stale tab's answer was refused (nothing written; see ``state["notice"]``)."""
        key = str(answer.get("question_id") or answer.get("criterion"))
        seen = self.answers().ids.get(key)  # the row this tab showed (None: no answer)
        try:
            give_answer(self.store, self.annotator, self.item.output_id,
                        active=self._active(), expected=seen, slot=True, **answer)
        except ChangedElsewhere as exc:  # the memo is cleared below: show what is stored now
            self.state["notice"] = str(exc)
            return False
        except ItemTaken as exc:
            self._memo.clear()
            self._taken(exc)
            return False
        finally:
            self._memo.clear()
        return True

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
        item = self.item
        if not self._submit():
            return False
        settings = get_settings(self.store)
        if settings.gold_feedback == "training":
            diff = gold.item_feedback(self.store, self.annotator, item.output_id,
                                      settings.gold_tolerance)
            if diff is not None:  # a gold item: say which answers differed (after submit)
                names = {q.question_id: q.text for q in item.questions}
                names |= {c.name: c.label for c in item.criteria}
                self.state["feedback"] = {
                    "task": item.task_id, "compared": len(diff),
                    "differed": [{**d, "text": names.get(d["key"], d["key"])}
                                 for d in diff if not d["correct"]]}
        return True

    def panel(self) -> panels.Panel:
        """What the answer panel shows of the open item: its targets with this annotator's
        stored answers, and the page's commands (Submit on Enter, Back, Flag, Enlarge)."""
        item = self.item
        targets = panels.annotation_targets(item.questions, [
            (c.name, c.label, c.min, c.max, c.step, c.rubric) for c in item.criteria])
        mine = self.answers()
        values: dict[int, Any] = {}
        rows: dict[int, int] = {}
        for i, t in enumerate(targets):
            value = mine.answers.get(t.key) if t.kind == "q" else mine.scores.get(t.key)
            if value is not None:
                values[i], rows[i] = value, mine.ids[t.key]
        return panels.Panel(
            visit=int(self.state["visit_id"]), targets=tuple(targets), values=values,
            rows=rows, commands=COMMANDS, submit="submit",
            reviewing=bool(self.state.get("reviewing")),
            handled=int(self.state.get("handled", 0)))

    def command(self, command: dict[str, Any]) -> str | None:
        """Act on a command of the answer panel, once: Enter submits (on an incomplete item
        it leaves a notice), B goes back, ``reload`` gives up an item that went to someone
        else. Returns ``flag`` or ``enlarge``, the commands the page answers with a dialog."""
        name = self.take_command(command, tuple(c.name for c in COMMANDS) + ("reload",))
        if name == "submit":
            unit = self.output_id
            if not self.submit() and self.output_id == unit:
                self.state["notice"] = ("This item is not complete yet: "
                                        f"{len(self.remaining())} answer(s) left.")
        elif name == "back":
            self.back()
        elif name == "reload":
            self.give_up()
        return name if name in ("flag", "enlarge") else None

    def flag(self, reason: str, note: str | None = None) -> int:
        """F: flag the item (broken image, ambiguous question, other + note)."""
        target = self.current
        question = target.key if target is not None and target.is_question else None
        return flag_item(
            self.store,
            self.annotator,
            self.item.output_id,
            reason,
            note,
            question if reason == "ambiguous_question" else None,
        )
