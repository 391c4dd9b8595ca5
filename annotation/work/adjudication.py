"""Adjudicate disputed human answers: the adjudication queue on the workflow engine.

Annotation platforms settle what their annotators leave disputed by an adjudicator who
sees every answer and decides (Label Studio's and Prodigy's review step; Potato's
adjudication). Here a unit is one **disputed decision** of the study:

* ``checklist``: an (output, question) whose human decisions (on submitted items, gated as
  every table scores them, :func:`annotation.results.decisions.decisions`) tie (as many
  *yes* as *no*, at least one each: the strict majority gives no reference) or, with the
  setting
  ``disputes = "disagreements"``, disagree at all (at least one *yes* and one *no*);
* ``conflict``: a conflict label ("VIF-Bench: Evaluating Visual Instruction Following in
  Multi-Reference Image Generation", Sec. 3.2, Appendix C.4) whose verifiers tie (the
  undecided labels of
  :func:`annotation.results.conflicts.undecided_labels`; ties only, whatever the setting:
  a majority label is already the verified label);
* ``tree``: an operator instance of a diagnostic tree ("TRACE-Bench: Decomposing and
  Diagnosing Multi-Reference Image Generation", Sec. 4.4, Appendix C.3: humans identify
  the node at which each failure originates) whose reviewers (of submitted trees) give no
  strict majority origin or, with ``disagreements``, name different origins.

What an answer is: the decision (``yes`` / ``no``; ``conflict`` / ``no_conflict``; an origin
node, ``persistent`` or ``not_a_failure``) with a required note, written append-only.
Checklist and tree decisions go to ``adjudications`` (:mod:`annotation.store.adjudications`);
a conflict decision goes through :func:`annotation.work.verification.resolve_label` into
``conflict_resolutions``, the one path of every conflict-label decision, so the verified
labels have one source of truth. When a unit is complete: once decided (one decision per
unit, overlap 1 by default).

The adjudicator (role ``adjudicator``, or an admin) sees the item (instruction, images,
question) and every human answer with its note, the names hidden ("Annotator 1", ...) or
shown as the setting ``show_names`` says (hidden by default); never a judge's answer, an
automatic label, a generator or a pass answer. Routing, reservations and the stale-tab
claim are the engine's (:mod:`annotation.work.engine`, queue kind ``adjudicate``).
A decided unit leaves the queue (a decision made elsewhere, such as an admin's on the
*Conflict labels* page, counts too), and stays reachable with Back.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from annotation.store import Store, items
from annotation.store import adjudications as decision_rows
from annotation.store import conflicts as conflict_rows
from annotation.store import project as project_rows
from annotation.store import queue as queues
from annotation.work.engine import (
    DEFAULT_RESERVATION_MINUTES,
    Controller,
    ItemTaken,
    Kind,
    Router,
)
from annotation.work.workflow import ItemImage

KINDS = ("checklist", "conflict", "tree")
DISPUTE_MODES = ("ties", "disagreements")
KIND_TITLES = {"checklist": "Checklist question", "conflict": "Conflict label",
               "tree": "Tree localization"}
#: who gave the answers of each kind, when the names are hidden
ANSWERER = {"checklist": "Annotator", "conflict": "Verifier", "tree": "Reviewer"}
CONFLICT_OPTIONS = (("conflict", "Conflict"), ("no_conflict", "No conflict"))
CHECKLIST_OPTIONS = (("yes", "Yes"), ("no", "No"))
ANSWER_TEXT = {"yes": "Yes", "no": "No", "cant_tell": "Can't tell"}


# ------------------------------------------------------------------------ settings
@dataclass(frozen=True)
class AdjudicationSettings:
    """``disputes``: ``ties`` (only what the strict majority leaves open) or
    ``disagreements`` (any decision the humans disagree on); ``show_names``: show the
    answerers' names to the adjudicator (hidden by default)."""

    overlap: int = 1
    reservation_minutes: int = DEFAULT_RESERVATION_MINUTES
    seed: int = 0
    disputes: str = "ties"
    show_names: bool = False


# ------------------------------------------------------------------------ units
def unit_id(kind: str, item: str, target: str) -> str:
    """The queue's name of a disputed decision: ``["<kind>", "<item>", "<target>"]`` (JSON,
    so that no id can be mistaken for another)."""
    return json.dumps([kind, item, target], ensure_ascii=False)


def parse_unit(unit: str) -> tuple[str, str, str]:
    """(kind, item, target) of :func:`unit_id`; ``ValueError`` for anything else."""
    try:
        kind, item, target = json.loads(unit)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not an adjudication unit: {unit!r}") from exc
    if kind not in KINDS:
        raise ValueError(f"not an adjudication unit: {unit!r}")
    return str(kind), str(item), str(target)


def vote_dispute(n_yes: int, n_no: int, mode: str) -> bool:
    """Whether a binary decision with these votes is disputed: a tie (``n_yes == n_no >=
    1``) or, with ``disagreements``, any split (both at least 1)."""
    if mode == "ties":
        return n_yes == n_no >= 1
    return n_yes >= 1 and n_no >= 1


def origin_dispute(origins: list[str], mode: str) -> bool:
    """Whether reviewers' origins of one instance are disputed: two or more reviewers and
    no strict majority origin (``ties``) or not all the same (``disagreements``)."""
    if len(origins) < 2:
        return False
    if mode == "disagreements":
        return len(set(origins)) > 1
    top = max(origins.count(o) for o in set(origins))
    return top * 2 <= len(origins)


def human_checklist_decisions(store: Store) -> pd.DataFrame:
    """The annotators' gated decisions on the study's outputs: the current answers of the
    items each annotator submitted (imported answers count as submitted; an item still
    being answered is work in progress, not a dispute yet), tree nodes left out."""
    from annotation.results.decisions import decisions
    from annotation.trace.trees import node_output_ids

    answers = store.annotations_df()
    submitted = queues.reader(store, "annotate").submissions_df()
    done = set(zip(submitted.person, submitted.unit, strict=True))
    answers = answers[answers.question_id.notna()
                      & ~answers.output_id.isin(node_output_ids(store))
                      & pd.Series([(a, o) in done for a, o in zip(
                          answers.annotator, answers.output_id, strict=True)],
                          index=answers.index, dtype=bool)]
    questions = store.questions_df()[["question_id", "checklist_id", "pass_answer",
                                      "depends_on"]].copy()
    questions["depends_on"] = questions["depends_on"].map(json.loads)
    return decisions(answers[["output_id", "annotator", "question_id", "answer"]],
                     questions, "annotator")


def checklist_disputes(store: Store, mode: str = "ties") -> list[tuple[str, str]]:
    """(output, question) pairs whose human decisions are disputed (:func:`vote_dispute`)."""
    decided = human_checklist_decisions(store)
    if decided.empty:
        return []
    votes = decided.assign(n_yes=(decided.answer == "yes").astype(int),
                           n_no=(decided.answer == "no").astype(int))
    counts = votes.groupby(["output_id", "question_id"], sort=True)[["n_yes", "n_no"]].sum()
    return [(str(o), str(q)) for (o, q), r in counts.iterrows()
            if vote_dispute(int(r.n_yes), int(r.n_no), mode)]


def conflict_disputes(store: Store) -> list[tuple[str, str]]:
    """(task, conflict type) labels whose verifiers (of submitted tasks) tie."""
    from annotation.results.conflicts import verified_labels

    labels = verified_labels(conflict_rows.verdicts_df(store))
    tied = labels[labels.majority.map(lambda v: v is None) & (labels.n_verifiers > 0)]
    return [(str(t), str(c)) for t, c in tied[["task_id", "conflict"]].itertuples(index=False)]


def submitted_reviews(store: Store) -> pd.DataFrame:
    """Current tree reviews of submitted trees: reviewer, output_id, instance, origin,
    reason, note."""
    from annotation.store import trees as tree_rows

    df = tree_rows.current_reviews_df(store)
    return df[df.submitted.astype(bool)][["reviewer", "output_id", "instance", "origin",
                                          "reason", "note", "review_id"]]


def tree_disputes(store: Store, mode: str = "ties") -> list[tuple[str, str]]:
    """(root output, instance) pairs whose reviewers' origins are disputed
    (:func:`origin_dispute`)."""
    reviews = submitted_reviews(store)
    return [(str(o), str(i)) for (o, i), g in reviews.groupby(["output_id", "instance"],
                                                              sort=True)
            if origin_dispute([str(v) for v in g.origin], mode)]


@dataclass(frozen=True)
class Dispute:
    kind: str
    item: str
    target: str

    @property
    def unit(self) -> str:
        return unit_id(self.kind, self.item, self.target)


def disputes(store: Store, settings: AdjudicationSettings | None = None) -> list[Dispute]:
    """Every disputed decision of the project, checklist first, then conflicts, then
    trees (decided or not)."""
    mode = (settings or get_settings(store)).disputes
    return ([Dispute("checklist", o, q) for o, q in checklist_disputes(store, mode)]
            + [Dispute("conflict", t, c) for t, c in conflict_disputes(store)]
            + [Dispute("tree", o, i) for o, i in tree_disputes(store, mode)])


def current_decisions(store: Store) -> dict[str, tuple[str, str, str]]:
    """Per unit: (decision, note, decided_by) of its current decision, of every kind (the
    conflict ones from ``conflict_resolutions``)."""
    out = {unit_id(r.kind, r.item, r.target): (str(r.decision), str(r.note),
                                               str(r.decided_by))
           for r in decision_rows.decisions_df(store).itertuples(index=False)}
    for r in conflict_rows.resolutions_df(store).itertuples(index=False):
        out[unit_id("conflict", r.task_id, r.conflict)] = (
            "conflict" if int(r.label) else "no_conflict", str(r.note), str(r.decided_by))
    return out


def queue_units(store: Store) -> list[str]:
    """The eligible units: disputes without a decision, and those decided through this
    queue (so progress counts them)."""
    decided = current_decisions(store)
    submitted = set(queues.reader(store, "adjudicate").submission_counts())
    return [d.unit for d in disputes(store) if d.unit not in decided or d.unit in submitted]


#: the adjudication workflow's router (queue kind ``adjudicate``)
ROUTER: Router[AdjudicationSettings] = Router(Kind(
    name="adjudicate", units=queue_units, answers=(), settings=AdjudicationSettings,
    salt="adjudicate", submit_action="adjudicate.submit",
    settings_action="adjudicate.settings"))


def get_settings(store: Store) -> AdjudicationSettings:
    return ROUTER.settings(store)


def set_settings(store: Store, actor: str, **changes: Any) -> AdjudicationSettings:
    """Change the adjudication settings (``disputes`` one of :data:`DISPUTE_MODES`,
    ``show_names`` a bool, overlap and reservation >= 1); audited."""
    if "disputes" in changes and changes["disputes"] not in DISPUTE_MODES:
        raise ValueError(f"disputes must be one of {', '.join(DISPUTE_MODES)}, not "
                         f"{changes['disputes']!r}")
    if "show_names" in changes and not isinstance(changes["show_names"], bool):
        raise ValueError("show_names must be true or false")
    return ROUTER.set_settings(store, actor, **changes)


# ------------------------------------------------------------------------ the item
@dataclass(frozen=True)
class HumanAnswer:
    """One person's answer as the adjudicator sees it: ``who`` (a name, or "Annotator 2"
    when names are hidden), the answer in words and their note."""

    who: str
    answer: str
    note: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class AdjudicationItem:
    """Everything the adjudicator may see of one disputed decision: no judge's answer, no
    automatic label, no generator, no pass answer."""

    unit: str
    kind: str
    item: str
    target: str
    #: the task the item belongs to (what the page names: an output id can name its
    #: generator)
    task_id: str
    title: str
    question: str
    instruction: str
    images: tuple[ItemImage, ...]
    output_sha256: str | None
    options: tuple[tuple[str, str], ...]
    answers: tuple[HumanAnswer, ...]
    node_images: tuple[tuple[str, str, str | None], ...] = ()
    decision: tuple[str, str] | None = None
    task_meta: dict[str, Any] = field(default_factory=dict)


def _text(value: Any) -> str | None:
    """A note as text (None for a missing one: None, NaN, blank)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return str(value).strip() or None


def _masked(unit: str, names: list[str], show: bool, noun: str) -> dict[str, str]:
    """Each answerer's label: their name, or ``<noun> <k>`` numbered in an order drawn from
    the unit (so "Annotator 1" is not the same person on every item)."""
    if show:
        return {n: n for n in names}
    order = sorted(set(names), key=lambda n: hashlib.sha256(f"{unit}\x1f{n}".encode())
                   .hexdigest())
    return {n: f"{noun} {i}" for i, n in enumerate(order, start=1)}


def _task_images(store: Store, task_id: str) -> tuple[ItemImage, ...]:
    return tuple(ItemImage(r.idx, r.role, r.kind, r.label, r.sha256, r.width, r.height)
                 for r in store.images_df(task_id).itertuples())


def load_item(store: Store, unit: str, settings: AdjudicationSettings | None = None
              ) -> AdjudicationItem:
    """What the adjudication page shows of ``unit``."""
    settings = settings or get_settings(store)
    kind, item, target = parse_unit(unit)
    decided = current_decisions(store).get(unit)
    decision = (decided[0], decided[1]) if decided else None
    if kind == "conflict":
        return _conflict_item(store, unit, item, target, settings, decision)
    task_id, sha = items.output_task(store, item)
    task = project_rows.task(store, task_id)
    if task is None:
        raise KeyError(task_id)
    common = {"unit": unit, "kind": kind, "item": item, "target": target, "task_id": task_id,
              "title": KIND_TITLES[kind], "instruction": task.instruction,
              "images": _task_images(store, task_id), "output_sha256": sha,
              "decision": decision, "task_meta": task.meta}
    if kind == "checklist":
        return _checklist_item(store, common, task.checklist_id, settings)
    return _tree_item(store, common, settings)


def _checklist_item(store: Store, common: dict[str, Any], checklist_id: str,
                    settings: AdjudicationSettings) -> AdjudicationItem:
    question = next((q for q in items.checklist_questions(store, checklist_id)
                     if q[0] == common["target"]), None)
    text = question[1] if question else common["target"]
    decided = human_checklist_decisions(store)
    mine = decided[(decided.output_id == common["item"])
                   & (decided.question_id == common["target"])]
    notes = {str(r.annotator): r.note for r in store.annotations_df().itertuples()
             if r.output_id == common["item"] and r.question_id == common["target"]}
    labels = _masked(common["unit"], [str(a) for a in mine.annotator], settings.show_names,
                     ANSWERER["checklist"])
    answers = []
    for r in mine.itertuples(index=False):
        gated = bool(r.gated)
        own = ANSWER_TEXT.get(str(r.own_answer), "no answer") if r.own_answer else "no answer"
        answers.append(HumanAnswer(
            labels[str(r.annotator)], ANSWER_TEXT.get(str(r.answer), str(r.answer)),
            _text(notes.get(str(r.annotator))),
            f"own answer {own}; a parent question was answered No" if gated else None))
    answers.sort(key=lambda a: a.who)
    return AdjudicationItem(question=text, options=CHECKLIST_OPTIONS,
                            answers=tuple(answers), **common)


def _tree_item(store: Store, common: dict[str, Any],
               settings: AdjudicationSettings) -> AdjudicationItem:
    from annotation.trace.trees import load_tree_item
    from annotation.work.tree_review import NOT_A_FAILURE, PERSISTENT

    tree = load_tree_item(store, common["item"])
    reviews = submitted_reviews(store)
    mine = reviews[(reviews.output_id == common["item"])
                   & (reviews.instance == common["target"])]
    labels = _masked(common["unit"], [str(r) for r in mine.reviewer], settings.show_names,
                     ANSWERER["tree"])
    formulas = {n.id: n.formula for n in tree.tree.nodes}
    words = {PERSISTENT: "Persistent: fails at every node",
             NOT_A_FAILURE: "Not a failure: the root image is fine"}

    def said(origin: str) -> str:
        return words.get(origin, f"{origin}: {formulas.get(origin, '?')}")

    answers = sorted((HumanAnswer(labels[str(r.reviewer)], said(str(r.origin)),
                                  _text(r.note),
                                  f"reason: {r.reason}" if _text(r.reason) else None)
                      for r in mine.itertuples(index=False)), key=lambda a: a.who)
    options = tuple((n.id, said(n.id)) for n in tree.tree.nodes[1:]) + tuple(
        (o, words[o]) for o in (PERSISTENT, NOT_A_FAILURE))
    named = {str(o) for o in mine.origin} & set(formulas)
    nodes = tuple((n.id, n.formula, tree.node_images.get(n.id)) for n in tree.tree.nodes
                  if n.id in named or n is tree.tree.nodes[0])
    operator, _, element = common["target"].partition("|")
    return AdjudicationItem(question=f"Where does the failure of {element or operator} "
                                     f"(operator {operator}) originate?",
                            options=options, answers=tuple(answers), node_images=nodes,
                            **common)


def _conflict_item(store: Store, unit: str, task_id: str, conflict: str,
                   settings: AdjudicationSettings,
                   decision: tuple[str, str] | None) -> AdjudicationItem:
    from annotation.work.verification import CONFLICT_TITLES

    task = project_rows.task(store, task_id)
    if task is None:
        raise KeyError(task_id)
    verdicts = conflict_rows.verdicts_df(store)
    mine = verdicts[(verdicts.task_id == task_id) & (verdicts.conflict == conflict)]
    labels = _masked(unit, [str(v) for v in mine.verifier], settings.show_names,
                     ANSWERER["conflict"])
    answers = sorted((HumanAnswer(labels[str(r.verifier)],
                                  "Conflict" if bool(r.label) else "No conflict",
                                  _text(r.note)) for r in mine.itertuples(index=False)),
                     key=lambda a: a.who)
    title = CONFLICT_TITLES.get(conflict, conflict)
    return AdjudicationItem(
        unit=unit, kind="conflict", item=task_id, target=conflict, task_id=task_id,
        title=KIND_TITLES["conflict"], question=f"Does this task have a {title.lower()} "
        "conflict (a reference contradicts the visual instruction)?",
        instruction=task.instruction, images=_task_images(store, task_id),
        output_sha256=None, options=CONFLICT_OPTIONS, answers=tuple(answers),
        decision=decision, task_meta=task.meta)


# ------------------------------------------------------------------------ deciding
def decide(store: Store, person: str, unit: str, decision: str, note: str, *,
           slot: bool | None = None, now: datetime | None = None) -> int:
    """Record ``person``'s decision on ``unit`` with its note (required) and submit the
    unit, in one write transaction: the claim on the unit
    (:meth:`annotation.work.engine.Router.claim`: a stale tab whose unit went to someone
    else gets :class:`ItemTaken`, nothing written), the decision (append-only; a conflict
    label as a row of ``conflict_resolutions``, the one source of the verified labels),
    the submission and its audit row: all of them or none. Returns the decision's row id.
    ``ValueError`` for a decision the unit does not offer or an empty note."""
    kind, item, target = parse_unit(unit)
    if not note or not note.strip():
        raise ValueError("a decision needs a note saying why (it stays in the history)")
    offered = [v for v, _ in load_item(store, unit).options]
    if decision not in offered:
        raise ValueError(f"decision must be one of {', '.join(offered)}, not {decision!r}")
    moment = now or datetime.now(UTC)
    settings = get_settings(store)
    with queues.writing(store, ROUTER.kind.name, user=person, role=decision_rows.ROLES) as q:
        if slot or (slot is None and store.guard is not None):
            ROUTER.claim(q, person, unit, settings, moment)
        if kind == "conflict":
            row = conflict_rows.insert_resolution(q, item, target, decision == "conflict",
                                                  note, actor=person)
        else:
            row = decision_rows.insert(q, kind, item, target, decision, note,
                                       actor=person)
        q.submit(person, unit)
        q.audit(person, ROUTER.kind.submit_action, unit,
                {"kind": kind, "item": item, "target": target, "decision": decision,
                 "note": note.strip(), "row_id": row})
    return row


def decision_history(store: Store) -> pd.DataFrame:
    """Every decision ever written, of every kind, oldest first: kind, item, target,
    decision, note, decided_by, created_at, row_id, supersedes, source (the table)."""
    rows = decision_rows.decisions_df(store, history=True).rename(
        columns={"adjudication_id": "row_id"}).assign(source="adjudications")
    res = conflict_rows.resolutions_df(store, history=True)
    res = pd.DataFrame({
        "kind": "conflict", "item": res.task_id, "target": res.conflict,
        "decision": res.label.map(lambda v: "conflict" if int(v) else "no_conflict"),
        "note": res.note, "decided_by": res.decided_by, "created_at": res.created_at,
        "row_id": res.resolution_id, "supersedes": res.supersedes,
        "source": "conflict_resolutions"})
    cols = ["kind", "item", "target", "decision", "note", "decided_by", "created_at",
            "row_id", "supersedes", "source"]
    parts = [p[cols] for p in (rows, res) if not p.empty]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True).sort_values(
        ["created_at", "source", "row_id"], kind="stable").reset_index(drop=True)


def queue_progress(store: Store) -> dict[str, int]:
    """Per kind: disputes, decided (by anyone), open."""
    decided = current_decisions(store)
    out: dict[str, int] = {}
    for d in disputes(store):
        out[f"{d.kind}_disputes"] = out.get(f"{d.kind}_disputes", 0) + 1
        if d.unit in decided:
            out[f"{d.kind}_decided"] = out.get(f"{d.kind}_decided", 0) + 1
    return out


# ------------------------------------------------------------------------ the controller
class AdjudicationSession(Controller):
    """The adjudication page's controller (:class:`annotation.work.engine.Controller`):
    the open unit, its item, the decision with its note, Back."""

    router = ROUTER
    UNIT = "unit"
    PERSON = "adjudicator"
    NOUN = "decision"

    def __init__(self, store: Store, person: str, state: MutableMapping[str, Any],
                 clock: Callable[[], float] = time.monotonic):
        super().__init__(store, person, state, clock)

    def _opened(self) -> None:
        self.state.pop("item", None)

    @property
    def item(self) -> AdjudicationItem:
        """The open unit's item (loaded once per unit, kept in ``state``)."""
        item = self.state.get("item")
        if item is None or item.unit != self.unit:
            if self.unit is None:
                raise LookupError("nothing to adjudicate")
            item = self.state["item"] = load_item(self.store, self.unit)
        return item

    def complete(self) -> bool:
        return self.unit is not None and self.item.decision is not None

    def decide(self, decision: str, note: str) -> bool:
        """Decide the open unit and open the next one. False (with ``state["notice"]``)
        when the note is missing or the unit went to someone else meanwhile."""
        unit = self.unit
        if unit is None:
            return False
        if not note or not note.strip():
            self.state["notice"] = "Write a note saying why: every decision needs one."
            return False
        self._tick()
        try:
            decide(self.store, self.person, unit, decision, note, slot=True)
        except ItemTaken as exc:
            self._taken(exc)
            return False
        self._open(self.router.next(self.store, self.person))
        return True
