"""Human review of diagnostic trees (TRACE-Bench): where does each failure originate?

For each operator instance that fails at the root of a tree (by the chosen judge), the
reviewer marks the node where the failure originates (or ``persistent``: it fails
everywhere, or ``not_a_failure``: the judge was wrong at the root), a failure reason from
the paper's vocabulary (seed 002, Sec. 4.4 and the case tables of Appendix C: identity
inconsistency, attribute mismatch, duplication, source leakage -> mis-binding, missing
carrier, other), optionally a box on a node image, and a note. Reviews are append-only
(``tree_reviews``: a change supersedes the previous row); routing, overlap, reservations
and resume are those of :mod:`annotation.work.routing`. The automatic localization
(:func:`annotation.trace.trees.automatic_localization`) is for the page to reveal only once the
reviewer has answered every failing instance (:func:`reveal_automatic`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from annotation.store import Store, append_audit, dumps, now_iso
from annotation.trace.trees import (
    TreeItem,
    automatic_localization,
    default_judge,
    instance_key,
    instance_table,
    tree_units,
)
from annotation.work import routing
from annotation.work.routing import Tables, choose_next

#: Failure reasons (seed 002, Sec. 4.4 / Appendix C case tables), stored names -> labels.
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
DEFAULT_RESERVATION_MINUTES = 30
_SETTINGS_KEY = "tree_review"
#: where tree review keeps reservations and submissions (used by tree_results too)
_TABLES = Tables(reservations="tree_reservations", submissions="tree_submissions",
                 unit="output_id", person="reviewer", answers=("tree_reviews",))


@dataclass(frozen=True)
class TreeSettings:
    """``judge``: whose node answers define pass/fail (None: :func:`default_judge`)."""

    overlap: int = DEFAULT_OVERLAP
    reservation_minutes: int = DEFAULT_RESERVATION_MINUTES
    seed: int = 0
    judge: str | None = None


def get_settings(store: Store) -> TreeSettings:
    return routing.read_settings(store, _SETTINGS_KEY, TreeSettings)


def set_settings(store: Store, actor: str, **changes: Any) -> TreeSettings:
    """Change the tree-review settings (overlap and reservation >= 1, judge); audited."""
    return routing.write_settings(store, _SETTINGS_KEY, TreeSettings, actor, "tree.settings",
                                  changes)


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


def _stamp(now: datetime | None) -> datetime:
    return now or datetime.now(UTC)


def next_tree(store: Store, reviewer: str, now: datetime | None = None) -> str | None:
    """Choose (and reserve) the root output ``reviewer`` should review now; None when done."""
    settings = get_settings(store)
    return choose_next(store, _TABLES, reviewer, tree_units(store), overlap=settings.overlap,
                       reservation_minutes=settings.reservation_minutes, seed=settings.seed,
                       salt="tree", now=_stamp(now))


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
                slot: bool | None = None) -> int:
    """Record the reviewer's localization of one failing instance (appended; supersedes a
    different earlier review; an identical one writes nothing). ``box``: ``{"node": id,
    "box": [x0, y0, x1, y1]}`` in 0..1 image coordinates. ``slot``: see
    :func:`annotation.work.routing.claim` (None: when the store acts for a signed-in person)."""
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
    settings = get_settings(store)
    stamp = _stamp(now)
    checked = slot or (slot is None and store.guard is not None)
    with store.transaction(user=reviewer) as conn:
        if checked:
            routing.claim(conn, _TABLES, reviewer, output_id, overlap=settings.overlap,
                          minutes=settings.reservation_minutes, now=stamp)
        current = conn.execute(
            "SELECT review_id, origin, reason, box, note FROM current_tree_reviews"
            " WHERE reviewer = ? AND output_id = ? AND instance = ?",
            [reviewer, output_id, instance]).fetchone()
        if current is not None and tuple(current[1:]) == (origin, reason, box_text, note):
            return int(current[0])
        cur = conn.execute(
            "INSERT INTO tree_reviews (reviewer, output_id, instance, origin, reason, box,"
            " note, created_at, supersedes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [reviewer, output_id, instance, origin, reason, box_text, note,
             stamp.isoformat(timespec="microseconds"),
             None if current is None else current[0]])
        if not checked:
            routing.renew(conn, _TABLES, reviewer, output_id, stamp,
                          settings.reservation_minutes)
        return int(cur.lastrowid or 0)


def my_reviews(store: Store, reviewer: str, output_id: str) -> dict[str, Review]:
    return {
        r[0]: Review(r[0], r[1], r[2], None if r[3] is None else json.loads(r[3]), r[4])
        for r in store.conn.execute(
            "SELECT instance, origin, reason, box, note FROM current_tree_reviews"
            " WHERE reviewer = ? AND output_id = ?", [reviewer, output_id])
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
    the right to submit (:func:`annotation.work.routing.claim`)."""
    with store.transaction(user=reviewer) as conn:
        if slot or (slot is None and store.guard is not None):
            settings = get_settings(store)
            routing.claim(conn, _TABLES, reviewer, output_id, overlap=settings.overlap,
                          minutes=settings.reservation_minutes, now=_stamp(now))
        conn.execute("INSERT OR IGNORE INTO tree_submissions (reviewer, output_id,"
                     " submitted_at) VALUES (?, ?, ?)", [reviewer, output_id, now_iso()])
        conn.execute("DELETE FROM tree_reservations WHERE output_id = ? AND reviewer = ?",
                     [output_id, reviewer])
        append_audit(conn, actor=reviewer, action="tree.submit", subject=output_id)


def previous_tree(store: Store, reviewer: str, current: str | None) -> str | None:
    """The tree submitted just before ``current`` (or the last submitted one)."""
    return routing.previous_unit(store, _TABLES, reviewer, current)


def personal_progress(store: Store, reviewer: str) -> tuple[int, int]:
    """(trees this reviewer submitted, trees still open to them + submitted)."""
    return routing.personal_progress(store, _TABLES, reviewer, tree_units(store),
                                     get_settings(store).overlap)


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
    "judge_for", "my_reviews", "next_tree", "personal_progress", "previous_tree",
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
    edge with the rule applied and what it removed (seed 002, Figure 10's drawing)."""
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
    """Per failing instance the reviewer answered: element, the automatic category and
    origin (``first_pass`` node, or ``persistent``), the reviewer's origin, and ``same``."""
    auto = automatic.set_index("key")
    rows = []
    for f in failing:
        if f.key not in reviews or f.key not in auto.index:
            continue
        a = auto.loc[f.key]
        origin = a.first_pass if a.first_pass else PERSISTENT
        mine = reviews[f.key].origin
        rows.append({"element": f.target or f.operator, "category": str(a.category),
                     "automatic": str(origin), "yours": mine, "same": origin == mine})
    return rows


class TreeSession:
    """One reviewer working through trees; ``state`` (a plain dict) survives Streamlit
    reruns. Every change is written at once (append-only), so a reload resumes."""

    FIELDS = ("origin", "reason", "box", "note")

    def __init__(self, store: Store, reviewer: str, state: dict[str, Any]):
        self.store, self.reviewer, self.state = store, reviewer, state
        self._moved = False  # this interaction found the tree gone: do nothing more
        if state.get("reviewer") != reviewer:
            state.clear()
            state["reviewer"] = reviewer

    def _taken(self, exc: routing.ItemTaken) -> None:
        """A stale tab: the tree went to someone else. Say so, open the next one."""
        self._moved = True
        self.state["notice"] = str(exc)
        self.state.update(output_id=next_tree(self.store, self.reviewer), reviewing=False)

    @property
    def output_id(self) -> str | None:
        if "output_id" not in self.state:
            self.state.update(output_id=next_tree(self.store, self.reviewer), reviewing=False)
        return self.state["output_id"]

    def reviews(self) -> dict[str, Review]:
        assert self.output_id is not None
        return my_reviews(self.store, self.reviewer, self.output_id)

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
                               note=values["note"], slot=True)
        except routing.ItemTaken as exc:
            self._taken(exc)
            return None

    def set_box_pixels(self, instance: str, node: str, xs: list[float], ys: list[float],
                       width: int, height: int) -> int | None:
        box = box_from_pixels(xs, ys, width, height)
        if box is None:
            return None
        return self.set_field(instance, "box", {"node": node, "box": box})

    def submit(self) -> None:
        """Submit the tree and open the next one (nothing if it went to someone else)."""
        if self._moved:
            return
        assert self.output_id is not None
        try:
            submit_tree(self.store, self.reviewer, self.output_id, slot=True)
        except routing.ItemTaken as exc:
            self._taken(exc)
            return
        self.state.update(output_id=next_tree(self.store, self.reviewer), reviewing=False)

    def back(self) -> bool:
        previous = previous_tree(self.store, self.reviewer, self.state.get("output_id"))
        if previous is None:
            return False
        self.state.update(output_id=previous, reviewing=True)
        return True
