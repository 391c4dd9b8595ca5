"""Human review of diagnostic trees (TRACE-Bench): where does each failure originate?

For each operator instance that fails at the root of a tree (by the chosen judge), the
reviewer marks the node where the failure originates (or ``persistent``: it fails
everywhere, or ``not_a_failure``: the judge was wrong at the root), a failure reason from
the paper's vocabulary ("TRACE-Bench: Decomposing and Diagnosing Multi-Reference Image Generation",
Sec. 4.4 and the case tables of Appendix C: identity
inconsistency, attribute mismatch, duplication, source leakage -> mis-binding, missing
carrier, other), optionally a box on a node image, and a note. Reviews are append-only
(``tree_reviews``: a change supersedes the previous row, through the one answer writer);
routing, overlap, reservations, resume and active time are the engine's
(:mod:`annotation.work.engine`, queue kind ``trees``).

**False passes**: with ``passed_share`` > 0 a sample of the instances the judge *passes*
at the root is mixed into the list, alike and in checklist order
(:func:`review_instances`), so the reviewer cannot tell them apart; marking one failed
(an origin, a reason, optionally a box) records a false pass of the judge, answering
``not_a_failure`` agrees with it.

What a unit is: a root output with a diagnostic tree. What an answer is: the review of one
listed instance. When a unit is complete: every failing instance localized, with a reason
unless it is not a failure (:func:`reviews_complete`). The automatic localization
(:func:`annotation.trace.trees.automatic_localization`) is for the page to reveal only once the
reviewer has answered every failing instance (:func:`reveal_automatic`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd

from annotation.store import Store, dumps
from annotation.store import answers as answer_rows
from annotation.trace.localize import STABLE_SUCCESS
from annotation.trace.trees import (
    TreeItem,
    automatic_localization,
    default_judge,
    instance_key,
    instance_table,
    load_tree_item,
    tree_units,
)
from annotation.work.engine import (
    DEFAULT_RESERVATION_MINUTES,
    Controller,
    ItemTaken,
    Kind,
    Router,
)
from annotation.work.panel import Command, Panel

#: Failure reasons (TRACE-Bench paper, Sec. 4.4 / Appendix C case tables), stored names -> labels.
REASONS = {
    "identity_inconsistency": "Identity inconsistency",
    "attribute_mismatch": "Attribute mismatch",
    "duplication": "Duplication",
    "source_leakage": "Source leakage → mis-binding",
    "missing_carrier": "Missing carrier",
    "other": "Other",
}
PERSISTENT = "persistent"
NOT_A_FAILURE = "not_a_failure"
DEFAULT_OVERLAP = 1


@dataclass(frozen=True)
class TreeSettings:
    """``judge``: whose node answers define pass/fail (None: :func:`default_judge`).
    ``passed_share``: the share (0..1) of the operator instances the judge *passes* at the
    root that are mixed into each tree's list for the reviewer (:func:`review_instances`),
    so that false passes can be found; 0 lists the failing instances only."""

    overlap: int = DEFAULT_OVERLAP
    reservation_minutes: int = DEFAULT_RESERVATION_MINUTES
    seed: int = 0
    judge: str | None = None
    passed_share: float = 0.0


#: the tree-review workflow's router (queue kind ``trees``)
ROUTER: Router[TreeSettings] = Router(Kind(
    name="trees", units=tree_units, answers=("review",), settings=TreeSettings, salt="tree",
    submit_action="tree.submit", settings_action="tree.settings"))


def get_settings(store: Store) -> TreeSettings:
    return ROUTER.settings(store)


def set_settings(store: Store, actor: str, **changes: Any) -> TreeSettings:
    """Change the tree-review settings (overlap and reservation >= 1, judge,
    passed_share in 0..1); audited."""
    share = changes.get("passed_share", 0.0)
    if not isinstance(share, int | float) or isinstance(share, bool) or not 0 <= share <= 1:
        raise ValueError(f"passed_share must be a number in 0..1, not {share!r}")
    if "passed_share" in changes:
        changes["passed_share"] = float(share)
    return ROUTER.set_settings(store, actor, **changes)


def judge_for(store: Store) -> str | None:
    return get_settings(store).judge or default_judge(store)


# ------------------------------------------------------------------------ what to review
@dataclass(frozen=True)
class FailingInstance:
    key: str
    operator: str
    target: str


def failing_instances(store: Store, item: TreeItem, judge: str) -> list[FailingInstance]:
    """Operator instances the judge fails at the root, in checklist order."""
    table = instance_table(store, item, judge)
    root = table[(table.node == item.tree.nodes[0].id) & ~table.passed.astype(bool)]
    return [FailingInstance(instance_key(op, t), op, t)
            for op, t in root[["operator", "target"]].itertuples(index=False)]


def sampled(seed: int, output_id: str, key: str, share: float) -> bool:
    """Whether the instance ``key`` of the tree ``output_id`` is in the passed-instance
    sample: a uniform number in [0, 1) drawn from a hash of (seed, output, instance) is
    below ``share``. The same for every reviewer and every visit."""
    if share <= 0:
        return False
    digest = hashlib.sha256(f"{seed}\x1f{output_id}\x1f{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64 < share


def review_instances(store: Store, item: TreeItem, judge: str,
                     settings: TreeSettings | None = None) -> list[FailingInstance]:
    """What the reviewer answers on a tree: every operator instance the judge fails at
    the root and the sampled share (``settings.passed_share``, :func:`sampled`) of those it
    passes, all in checklist order and alike, so that nothing on the page tells which the
    judge passed (blind review). For a passed one the reviewer says ``not_a_failure`` or
    marks it failed (origin, reason, box): a false pass of the judge."""
    settings = settings or get_settings(store)
    table = instance_table(store, item, judge)
    root = table[table.node == item.tree.nodes[0].id]
    out = []
    for op, target, passed in root[["operator", "target", "passed"]].itertuples(index=False):
        key = instance_key(op, target)
        if not bool(passed) or sampled(settings.seed, item.root_output_id, key,
                                       settings.passed_share):
            out.append(FailingInstance(key, op, target))
    return out


def next_tree(store: Store, reviewer: str, now: datetime | None = None) -> str | None:
    """Choose (and reserve) the root output ``reviewer`` should review now; None when done."""
    return ROUTER.next(store, reviewer, now)


# ------------------------------------------------------------------------ answers
@dataclass(frozen=True)
class Review:
    instance: str
    origin: str
    reason: str | None
    box: dict[str, Any] | None
    note: str | None


def give_review(store: Store, reviewer: str, output_id: str, instance: str, origin: str, *,
                reason: str | None = None, box: Mapping[str, Any] | None = None,
                note: str | None = None, now: datetime | None = None,
                active: tuple[int, float] | None = None, slot: bool | None = None) -> int:
    """Record the reviewer's localization of one failing instance (appended; supersedes a
    different earlier review; an identical one writes nothing), renew the reservation and
    add ``active = (visit_id, seconds)`` of active time. ``box``: ``{"node": id,
    "box": [x0, y0, x1, y1]}`` in 0..1 image coordinates. ``slot``: see
    :meth:`annotation.work.engine.Router.claim` (None: when the store acts for a signed-in
    person)."""
    if not origin:
        raise ValueError("origin must be a node id, 'persistent' or 'not_a_failure'")
    if reason is not None and reason not in REASONS:
        raise ValueError(f"reason must be one of {', '.join(REASONS)}")
    box_text = None
    if box is not None:
        coords = box.get("box")
        if (not isinstance(coords, (list, tuple)) or len(coords) != 4
                or not all(isinstance(v, (int, float)) and 0 <= v <= 1 for v in coords)
                or not (coords[0] < coords[2] and coords[1] < coords[3])):
            raise ValueError("box must be [x0, y0, x1, y1] within 0..1 with x0 < x1, y0 < y1")
        box_text = dumps({"node": str(box.get("node")), "box": [float(v) for v in coords]})
    note = (note or "").strip() or None
    with ROUTER.answering(store, reviewer, output_id, slot=slot, now=now,
                          active=active) as act:
        return act.supersede("review", {
            "reviewer": reviewer, "output_id": output_id, "instance": instance,
            "origin": origin, "reason": reason, "box": box_text, "note": note,
            "created_at": act.stamp}, same=("origin", "reason", "box", "note"))


def my_reviews(store: Store, reviewer: str, output_id: str) -> dict[str, Review]:
    return {
        r["instance"]: Review(r["instance"], r["origin"], r["reason"],
                              None if r["box"] is None else json.loads(r["box"]), r["note"])
        for r in answer_rows.current_rows(store, "review", reviewer, output_id)
    }


def reviews_complete(failing: list[FailingInstance], reviews: Mapping[str, Review]) -> bool:
    """Every failing instance localized, with a reason unless it is not a failure."""
    for f in failing:
        r = reviews.get(f.key)
        if r is None or (r.origin != NOT_A_FAILURE and r.reason is None):
            return False
    return True


def reveal_automatic(failing: list[FailingInstance], reviews: Mapping[str, Review]) -> bool:
    """The automatic localization may be shown once every failing instance is answered."""
    return reviews_complete(failing, reviews)


def submit_tree(store: Store, reviewer: str, output_id: str, *, slot: bool | None = None,
                now: datetime | None = None) -> None:
    """Mark the tree reviewed (idempotent); release the reservation. ``slot``: first check
    the right to submit (:meth:`annotation.work.engine.Router.claim`)."""
    ROUTER.submit(store, reviewer, output_id, slot=slot, now=now)


def previous_tree(store: Store, reviewer: str, current: str | None) -> str | None:
    """The tree submitted just before ``current`` (or the last submitted one)."""
    return ROUTER.previous(store, reviewer, current)


def personal_progress(store: Store, reviewer: str) -> tuple[int, int]:
    """(trees this reviewer submitted, trees still open to them + submitted)."""
    return ROUTER.personal_progress(store, reviewer)


def overall_progress(store: Store) -> tuple[int, int]:
    """(reviews counted toward overlap, tree units x overlap)."""
    return ROUTER.overall_progress(store)


def review_table(item: TreeItem, failing: list[FailingInstance], reviews: Mapping[str, Review],
                 instances: pd.DataFrame) -> pd.DataFrame:
    """The paper's per-case review table: Element | Operator | Result | Failure reason
    (Result: the judge's pass/fail at the root; reason: the reviewer's, with the origin)."""
    root = instances[instances.node == item.tree.nodes[0].id]
    rows = []
    for op, target, passed in root[["operator", "target", "passed"]].itertuples(index=False):
        key = instance_key(op, target)
        r = reviews.get(key)
        reason = ""
        if r is not None:
            where = {PERSISTENT: "persistent", NOT_A_FAILURE: "not a failure"}.get(
                r.origin, f"originates at {r.origin}")
            reason = f"{REASONS.get(r.reason or '', '')} ({where})".strip()
        rows.append({"Element": target or op, "Operator": op,
                     "Result": "pass" if passed else "fail", "Failure reason": reason})
    return pd.DataFrame(rows, columns=["Element", "Operator", "Result", "Failure reason"])


__all__ = [
    "NOT_A_FAILURE", "PERSISTENT", "REASONS", "FailingInstance", "Review", "TreeSettings",
    "automatic_localization", "failing_instances", "get_settings", "give_review",
    "judge_for", "my_reviews", "next_tree", "overall_progress", "personal_progress",
    "previous_tree", "review_instances", "sampled",
    "reveal_automatic", "review_table", "reviews_complete", "set_settings", "submit_tree",
]


def origin_options(item: TreeItem, instances: pd.DataFrame, failing: FailingInstance
                   ) -> list[str]:
    """Where a failure can be said to originate: every non-root node where the instance
    was judged (it retains its questions), in tree order, then persistent / not a failure."""
    judged = set(instances[(instances.operator == failing.operator)
                           & (instances.target == failing.target)].node)
    nodes = [n.id for n in item.tree.nodes[1:] if n.id in judged]
    return nodes + [PERSISTENT, NOT_A_FAILURE]


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def tree_dot(item: TreeItem, passes: pd.DataFrame, selected: str | None = None) -> str:
    """The tree as Graphviz DOT: each node with its id, formula and judged passes; each
    edge with the rule applied and what it removed (TRACE-Bench paper, Figure 10's drawing)."""
    lines = ['digraph tree {', 'rankdir=TB;',
             'node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
             'edge [fontname="Helvetica", fontsize=9];']
    for n in item.tree.nodes:
        mine = passes[passes.node == n.id]
        ok, total = int(mine.passed.sum()), len(mine)
        fill = "#fde2e1" if total and ok < total else "#e3f4e1" if total else "#f2f2f2"
        pen = ', penwidth=3, color="#1f6feb"' if n.id == selected else ""
        label = f"{n.id}\n{n.formula}\n{ok}/{total} pass" if total else f"{n.id}\n{n.formula}"
        lines.append(f'"{_dot_text(n.id)}" [label="{_dot_text(label)}", fillcolor="{fill}"'
                     f'{pen}];')
    for n in item.tree.nodes:
        if n.parent is not None:
            removed = ", ".join(n.removed)
            edge = f"Rule {n.rule}" + (f": −{removed}" if removed else "")
            lines.append(f'"{_dot_text(n.parent)}" -> "{_dot_text(n.id)}" '
                         f'[label="{_dot_text(edge)}"];')
    lines.append("}")
    return "\n".join(lines)


# ------------------------------------------------------------------------ the page's controller
def box_from_pixels(xs: list[float], ys: list[float], width: int, height: int
                    ) -> list[float] | None:
    """A box selection in image pixels (plotly's ``x`` and ``y`` ranges) as
    ``[x0, y0, x1, y1]`` in 0..1, clipped to the image; None when it has no area."""
    box = [max(0.0, min(xs) / width), max(0.0, min(ys) / height),
           min(1.0, max(xs) / width), min(1.0, max(ys) / height)]
    return box if box[0] < box[2] and box[1] < box[3] else None


def compare_with_automatic(automatic: pd.DataFrame, failing: list[FailingInstance],
                           reviews: Mapping[str, Review]) -> list[dict[str, Any]]:
    """Per reviewed instance the reviewer answered: element, the automatic category and
    origin (``first_pass`` node, ``persistent``, or ``not_a_failure`` for an instance the
    judge passes at the root: a Stable Success), the reviewer's origin, and ``same``."""
    auto = automatic.set_index("key")
    rows = []
    for f in failing:
        if f.key not in reviews or f.key not in auto.index:
            continue
        a = auto.loc[f.key]
        origin = (NOT_A_FAILURE if a.category == STABLE_SUCCESS  # the judge passed it
                  else a.first_pass if a.first_pass else PERSISTENT)
        mine = reviews[f.key].origin
        rows.append({"element": f.target or f.operator, "category": str(a.category),
                     "automatic": str(origin), "yours": mine, "same": origin == mine})
    return rows


class TreeSession(Controller):
    """One reviewer working through trees (:class:`annotation.work.engine.Controller`);
    ``state`` (a plain dict) survives Streamlit reruns. Every change is written at once
    (append-only), so a reload resumes; active time is recorded as on the other pages."""

    router = ROUTER
    UNIT = "output_id"
    PERSON = "reviewer"
    NOUN = "tree"
    FIELDS = ("origin", "reason", "box", "note")

    def __init__(self, store: Store, reviewer: str, state: MutableMapping[str, Any],
                 clock: Callable[[], float] = time.monotonic):
        super().__init__(store, reviewer, state, clock)

    @property
    def reviewer(self) -> str:
        return self.person

    @property
    def output_id(self) -> str | None:
        return self.unit

    def reviews(self) -> dict[str, Review]:
        assert self.output_id is not None
        return my_reviews(self.store, self.reviewer, self.output_id)

    def failing(self) -> list[FailingInstance]:
        """The failing instances of the open tree by the review's judge (none: no judge)."""
        judge = judge_for(self.store)
        if self.output_id is None or judge is None:
            return []
        return review_instances(self.store, load_tree_item(self.store, self.output_id), judge)

    def complete(self) -> bool:
        """Every failing instance localized, with a reason unless it is not a failure."""
        return reviews_complete(self.failing(), self.reviews())

    def set_field(self, instance: str, field: str, value: Any) -> int | None:
        """Change one field of the review of ``instance``, keeping the others as stored now
        (read again here: two widgets changed in one rerun must not undo each other).
        Nothing is written before an origin is chosen."""
        if field not in self.FIELDS:
            raise ValueError(f"field must be one of {', '.join(self.FIELDS)}")
        if self._moved:
            return None
        old = self.reviews().get(instance)
        values = {f: getattr(old, f) if old else None for f in self.FIELDS} | {field: value}
        if values["origin"] is None:
            return None
        assert self.output_id is not None
        try:
            return give_review(self.store, self.reviewer, self.output_id, instance,
                               values["origin"], reason=values["reason"], box=values["box"],
                               note=values["note"], active=self._active(), slot=True)
        except ItemTaken as exc:
            self._taken(exc)
            return None

    def set_box_pixels(self, instance: str, node: str, xs: list[float], ys: list[float],
                       width: int, height: int) -> int | None:
        box = box_from_pixels(xs, ys, width, height)
        if box is None:
            return None
        return self.set_field(instance, "box", {"node": node, "box": box})

    def panel(self, complete: bool) -> Panel:
        """What the answer panel shows: Submit on Enter (once ``complete``: the reviews
        are the page's fields) and Back (``B``)."""
        return Panel(visit=int(self.state["visit_id"]),
                     commands=(Command("submit", "Submit tree", "Enter", primary=True),
                               Command("back", "Back", "B")),
                     submit="submit", ready=complete,
                     reviewing=bool(self.state.get("reviewing")),
                     handled=int(self.state.get("handled", 0)),
                     hint=None if complete else "Choose a node and a reason for every "
                     "failure to submit; the automatic localization is shown after that.")

    def command(self, command: dict[str, Any]) -> None:
        """Act on a command of the answer panel, once: Enter submits a complete tree (else
        a notice), B goes back."""
        name = self.take_command(command, ("submit", "back"))
        if name is None or self.output_id is None:
            return
        if name == "back":
            self.back()
        elif self.complete():
            self.submit()
        else:
            self.state["notice"] = ("Choose a node and a reason for every failure before you "
                                    "submit.")

    def submit(self) -> None:
        """Submit the tree and open the next one (nothing if it went to someone else)."""
        if self._moved:
            return
        assert self.output_id is not None
        self._submit()
