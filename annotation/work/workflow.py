"""The annotation workflow: who annotates which output next, and what they gave.

This module is the workflow part of the storage layer (with :mod:`annotation.store` and
:mod:`annotation.accounts.auth`, the only modules that speak SQL). Rules, in the spirit of Label
Studio's and Prodigy's task routing with overlap:

* **Eligible outputs**: an image at hand, not missing, and in the sample when the admin drew
  one (uniform with a seed, or stratified by generator).
* **Overlap**: each output needs ``overlap`` distinct annotators (default 3). An output is
  offered to an annotator who has not submitted it while fewer than ``overlap`` others have
  submitted it or hold a live reservation on it.
* **Order**: first the annotator's own unfinished item (resume, on any machine), then items
  already started by others (so overlaps complete), then the annotator's own seeded order
  (a per-annotator shuffle, so annotators do not all start with the same items).
* **Reservations** expire after ``reservation_minutes`` without activity; every answer
  renews them.
* Answers are appended (:meth:`Store.record_annotation`); submissions, flags and active time
  are recorded with who and when; flags, submissions and settings also go to the audit log.
* Annotators never see pass answers, judges' outputs or generator names: the item they get
  is an :class:`AnnotatorItem`, which has no field for them.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd

from annotation.records import Annotation
from annotation.store import Store, append_audit, dumps, now_iso
from annotation.work.checklist import QuestionView
from annotation.work.routing import (
    ChangedElsewhere,
    ItemTaken,  # noqa: F401  (raised by claim: for the pages)
    Tables,
    claim,
)

DEFAULT_OVERLAP = 3
DEFAULT_RESERVATION_MINUTES = 30
IDLE_CAP_SECONDS = 120.0
FLAG_REASONS = ("broken_image", "ambiguous_question", "other")
SAMPLE_MODES = ("all", "uniform", "stratified")
#: where annotation keeps reservations and submissions (for :func:`annotation.work.routing.claim`)
TABLES = Tables(reservations="reservations", submissions="submissions", unit="output_id",
                person="annotator", answers=("annotations",))
#: ``expected`` of :func:`give_answer` when the caller does not check for other tabs
ANY: Any = object()


# ------------------------------------------------------------------------ settings
@dataclass(frozen=True)
class Settings:
    overlap: int = DEFAULT_OVERLAP
    reservation_minutes: int = DEFAULT_RESERVATION_MINUTES
    seed: int = 0


def get_settings(store: Store) -> Settings:
    info = store.project_info()
    raw = json.loads(info.get("workflow", "{}"))
    return Settings(**{k: v for k, v in raw.items() if k in Settings.__dataclass_fields__})


def set_settings(store: Store, actor: str, **changes: int) -> Settings:
    """Change workflow settings (overlap >= 1, reservation_minutes >= 1); audited."""
    current = get_settings(store).__dict__ | changes
    settings = Settings(**current)
    if settings.overlap < 1 or settings.reservation_minutes < 1:
        raise ValueError("overlap and reservation_minutes must be at least 1")
    with store.transaction(user=actor, role="admin") as conn:
        conn.execute(
            "INSERT INTO project (key, value) VALUES ('workflow', ?) ON CONFLICT(key)"
            " DO UPDATE SET value = excluded.value",
            [dumps(settings.__dict__)],
        )
        _audit(conn, actor, "workflow.settings", None, changes)
    return settings


def _audit(conn: Any, actor: str | None, action: str, subject: str | None,
           detail: dict[str, Any] | None = None) -> None:
    append_audit(conn, actor=actor, action=action, subject=subject, detail=detail)


# ------------------------------------------------------------------------ sample
def annotatable_outputs(store: Store) -> pd.DataFrame:
    """Outputs an annotator can work on: image at hand, not missing, not a diagnostic-tree
    node (``meta.node``: those are reviewed on the tree page); the sample is ignored."""
    return store.query_df(
        "SELECT output_id, task_id, generator FROM outputs"
        " WHERE missing = 0 AND sha256 IS NOT NULL"
        " AND IFNULL(json_extract(meta, '$.node'), 'N0') = 'N0' ORDER BY rowid"
    )


def eligible_outputs(store: Store) -> pd.DataFrame:
    """Annotatable outputs, restricted to the sample when one is drawn."""
    outputs = annotatable_outputs(store)
    sample = {r[0] for r in store.conn.execute("SELECT output_id FROM sample")}
    return outputs[outputs.output_id.isin(sample)] if sample else outputs


def draw_sample(
    store: Store, actor: str, mode: str, size: int | None = None, seed: int = 0
) -> list[str]:
    """Restrict annotation to a sample of the annotatable outputs; return its ids.

    ``uniform``: ``size`` outputs drawn uniformly at random (``random.Random(seed)``);
    ``stratified``: ``size`` split over generators in proportion to their outputs (largest
    remainders), drawn uniformly within each; ``all``: no restriction.
    """
    if mode not in SAMPLE_MODES:
        raise ValueError(f"mode must be one of {', '.join(SAMPLE_MODES)}")
    outputs = annotatable_outputs(store)
    if mode == "all":
        chosen: list[str] = []
    else:
        if size is None or size < 1:
            raise ValueError("a sample needs a size of at least 1")
        size = min(size, len(outputs))
        rng = random.Random(seed)
        if mode == "uniform":
            chosen = rng.sample(list(outputs.output_id), size)
        else:
            chosen = _stratified(outputs, size, rng)
    with store.transaction(user=actor, role="admin") as conn:
        conn.execute("DELETE FROM sample")
        conn.executemany("INSERT INTO sample (output_id) VALUES (?)", [(o,) for o in chosen])
        _audit(
            conn,
            actor,
            "workflow.sample",
            None,
            {"mode": mode, "size": size, "seed": seed, "drawn": len(chosen)},
        )
    return chosen


def _stratified(outputs: pd.DataFrame, size: int, rng: random.Random) -> list[str]:
    groups = {g: sorted(df.output_id) for g, df in outputs.groupby("generator", sort=True)}
    total = len(outputs)
    quotas = {g: size * len(ids) / total for g, ids in groups.items()}
    counts = {g: int(q) for g, q in quotas.items()}
    left = size - sum(counts.values())
    for g in sorted(quotas, key=lambda g: (-(quotas[g] - counts[g]), g))[:left]:
        counts[g] += 1
    chosen = []
    for g, ids in groups.items():
        chosen.extend(rng.sample(ids, counts[g]))
    return chosen


# ------------------------------------------------------------------------ routing
def personal_order(output_ids: list[str], annotator: str, seed: int = 0) -> list[str]:
    """The annotator's own shuffle of the outputs, stable across sessions and machines."""
    key = int.from_bytes(hashlib.sha256(f"{seed}:{annotator}".encode()).digest()[:8], "big")
    order = list(output_ids)
    random.Random(key).shuffle(order)
    return order


def _now(now: datetime | None) -> datetime:
    return now or datetime.now(UTC)


def next_item(store: Store, annotator: str, now: datetime | None = None) -> str | None:
    """Choose (and reserve) the output ``annotator`` should work on now; None when done.

    Runs in one ``BEGIN IMMEDIATE`` transaction, so two annotators asking at the same time
    cannot both take the last open slot of an output.
    """
    moment = _now(now)
    stamp = moment.isoformat(timespec="microseconds")
    settings = get_settings(store)
    eligible = eligible_outputs(store)
    eligible_ids = list(eligible.output_id)
    with store.transaction(user=annotator) as conn:
        submitted = {
            r[0]: r[1]
            for r in conn.execute("SELECT output_id, count(*) FROM submissions GROUP BY output_id")
        }
        mine_done = {
            r[0]
            for r in conn.execute(
                "SELECT output_id FROM submissions WHERE annotator = ?", [annotator]
            )
        }
        reserved_by_others: dict[str, int] = {}
        for output_id, who in conn.execute(
            "SELECT output_id, annotator FROM reservations WHERE expires_at > ?", [stamp]
        ):
            if who != annotator:
                reserved_by_others[output_id] = reserved_by_others.get(output_id, 0) + 1
        # 1. my own unfinished work: answers given (resumed even after the reservation
        # expired: the work exists) or a live reservation held; not submitted
        started = [
            r[0]
            for r in conn.execute(
                "SELECT output_id FROM (SELECT output_id, MIN(created_at) AS t FROM annotations"
                " WHERE annotator = ? GROUP BY output_id"
                " UNION ALL SELECT output_id, reserved_at FROM reservations"
                " WHERE annotator = ? AND expires_at > ?)"
                " GROUP BY output_id ORDER BY MIN(t)",
                [annotator, annotator, stamp],
            )
        ]
        eligible_set = set(eligible_ids)
        # ... unless others filled its overlap meanwhile (its answers stay in the history)
        choice = next((o for o in started if o in eligible_set and o not in mine_done
                       and submitted.get(o, 0) + reserved_by_others.get(o, 0)
                       < settings.overlap), None)
        if choice is None:
            order = personal_order(eligible_ids, annotator, settings.seed)
            rank = {o: i for i, o in enumerate(order)}
            open_items = []
            for o in eligible_ids:
                if o in mine_done:
                    continue
                taken = submitted.get(o, 0) + reserved_by_others.get(o, 0)
                if taken < settings.overlap:
                    open_items.append((-min(taken, settings.overlap), rank[o], o))
            choice = min(open_items)[2] if open_items else None
        if choice is not None:
            expires = (moment + timedelta(minutes=settings.reservation_minutes)).isoformat(
                timespec="microseconds"
            )
            conn.execute(
                "INSERT INTO reservations (output_id, annotator, reserved_at, expires_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT(output_id, annotator)"
                " DO UPDATE SET expires_at = excluded.expires_at",
                [choice, annotator, stamp, expires],
            )
    return choice


def release(store: Store, annotator: str, output_id: str) -> None:
    """Give a reservation back (e.g. on logout)."""
    with store.transaction(user=annotator) as conn:
        conn.execute(
            "DELETE FROM reservations WHERE output_id = ? AND annotator = ?", [output_id, annotator]
        )


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
    out = store.conn.execute(
        "SELECT task_id, sha256 FROM outputs WHERE output_id = ?", [output_id]
    ).fetchone()
    if out is None:
        raise KeyError(output_id)
    task_id, sha = out
    task = store.conn.execute(
        "SELECT instruction, checklist_id, meta FROM tasks WHERE task_id = ?", [task_id]
    ).fetchone()
    images = tuple(
        ItemImage(r.idx, r.role, r.kind, r.label, r.sha256, r.width, r.height)
        for r in store.images_df(task_id).itertuples()
    )
    questions = tuple(
        QuestionView(r[0], r[1], r[2], r[3], tuple(json.loads(r[4])))
        for r in store.conn.execute(
            "SELECT question_id, text, operator, target, depends_on FROM questions"
            " WHERE checklist_id = ? ORDER BY position",
            [task[1]],
        )
    )
    criteria = tuple(
        CriterionView(r[0], r[1], r[2], r[3], r[4], r[5])
        for r in store.conn.execute(
            "SELECT name, label, min, max, step, rubric FROM criteria ORDER BY position"
        )
    )
    return AnnotatorItem(
        output_id, task_id, task[0], images, sha, json.loads(task[2]), questions, criteria
    )


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
    for qid, crit, answer, score, note, row_id in store.conn.execute(
        "SELECT question_id, criterion, answer, score, note, annotation_id"
        " FROM current_annotations WHERE annotator = ? AND output_id = ?",
        [annotator, output_id],
    ):
        key = qid or crit
        mine.ids[key] = int(row_id)
        if qid:
            mine.answers[qid] = answer
        else:
            mine.scores[crit] = score
        if note:
            mine.notes[key] = note
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
    expected: int | None | object = ANY,
    slot: bool | None = None,
) -> int:
    """Record one answer (appended; supersedes a different earlier one), renew the
    reservation and add ``active = (visit_id, seconds)`` of active time, in one
    transaction. An answer equal to the current one writes nothing and returns its id.

    ``expected``: the id of the current answer row the caller last showed for this
    question or criterion (None: it showed none). When the row is another by now (a second
    tab of the same annotator answered meanwhile) nothing is written and
    :class:`ChangedElsewhere` is raised, with the current answer: never a silent replace.
    Omitted: not checked. ``slot``: also require the right to answer the item now
    (:func:`annotation.work.routing.claim`, else :class:`ItemTaken`); None: whenever the store
    acts for a signed-in person (the app).
    """
    settings = get_settings(store)
    moment = _now(now)
    with store.transaction(user=annotator) as conn:
        if slot or (slot is None and store.guard is not None):
            claim(conn, TABLES, annotator, output_id, overlap=settings.overlap,
                  minutes=settings.reservation_minutes, now=moment)
        current = conn.execute(
            "SELECT annotation_id, answer, score, note FROM current_annotations"
            " WHERE annotator = ? AND output_id = ? AND IFNULL(question_id, '') = ?"
            " AND IFNULL(criterion, '') = ?",
            [annotator, output_id, question_id or "", criterion or ""],
        ).fetchone()
        if expected is not ANY and (current[0] if current else None) != expected:
            raise ChangedElsewhere(
                "This answer was changed in another tab or window meanwhile: reloaded. "
                "Nothing was overwritten; check it and answer again if needed.")
        if (
            current
            and current[1] == answer
            and current[2] == score
            and (note is None or current[3] == note)
        ):
            return int(current[0])
        if not (slot or (slot is None and store.guard is not None)):
            expires = (moment + timedelta(minutes=settings.reservation_minutes)).isoformat(
                timespec="microseconds")
            conn.execute(
                "UPDATE reservations SET expires_at = ? WHERE output_id = ? AND annotator = ?",
                [expires, output_id, annotator])
        annotation_id = store.append_annotation(
            conn, Annotation(annotator, output_id, question_id, criterion, answer, score, note))
        if active is not None and active[1] > 0:
            conn.execute(
                "UPDATE item_time SET active_seconds = active_seconds + ? WHERE visit_id = ?",
                [active[1], active[0]])
        return annotation_id


def submit(store: Store, annotator: str, output_id: str, *, slot: bool | None = None,
           now: datetime | None = None) -> None:
    """Mark the item done for this annotator (idempotent) and release the reservation.

    ``slot``: first check the right to submit (:func:`annotation.work.routing.claim`: a stale
    tab whose item went to someone else gets :class:`ItemTaken`, and the overlap is never
    exceeded); None: whenever the store acts for a signed-in person (the app).
    """
    with store.transaction(user=annotator) as conn:
        if slot or (slot is None and store.guard is not None):
            settings = get_settings(store)
            claim(conn, TABLES, annotator, output_id, overlap=settings.overlap,
                  minutes=settings.reservation_minutes, now=_now(now))
        conn.execute(
            "INSERT OR IGNORE INTO submissions (annotator, output_id, submitted_at)"
            " VALUES (?, ?, ?)",
            [annotator, output_id, now_iso()],
        )
        conn.execute(
            "DELETE FROM reservations WHERE output_id = ? AND annotator = ?", [output_id, annotator]
        )
        _audit(conn, annotator, "item.submit", output_id)


def is_submitted(store: Store, annotator: str, output_id: str) -> bool:
    return (
        store.conn.execute(
            "SELECT 1 FROM submissions WHERE annotator = ? AND output_id = ?",
            [annotator, output_id],
        ).fetchone()
        is not None
    )


def previous_item(store: Store, annotator: str, current: str | None) -> str | None:
    """The item submitted just before ``current`` (or the last submitted one)."""
    done = [
        r[0]
        for r in store.conn.execute(
            "SELECT output_id FROM submissions WHERE annotator = ? ORDER BY submitted_at, rowid",
            [annotator],
        )
    ]
    if current in done:
        i = done.index(current)
        return done[i - 1] if i > 0 else None
    return done[-1] if done else None


# ------------------------------------------------------------------------ time, flags
def start_visit(store: Store, annotator: str, output_id: str) -> int:
    """Open a visit of the item (its active time is added to it); return its id."""
    with store.transaction(user=annotator) as conn:
        cur = conn.execute(
            "INSERT INTO item_time (annotator, output_id, started_at) VALUES (?, ?, ?)",
            [annotator, output_id, now_iso()],
        )
        return int(cur.lastrowid or 0)


def active_increment(last: float, now: float, cap: float = IDLE_CAP_SECONDS) -> float:
    """Seconds of active time between two interactions: the gap, capped at ``cap`` so a
    coffee break does not count (the convention of Label Studio's lead time)."""
    return max(0.0, min(now - last, cap))


def add_active_time(store: Store, visit_id: int, seconds: float,
                    annotator: str | None = None) -> None:
    """Add ``seconds`` of active time to the visit (written for ``annotator``)."""
    if seconds <= 0:
        return
    with store.transaction(user=annotator) as conn:
        conn.execute(
            "UPDATE item_time SET active_seconds = active_seconds + ? WHERE visit_id = ?",
            [seconds, visit_id],
        )


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
    with store.transaction(user=annotator) as conn:
        cur = conn.execute(
            "INSERT INTO flags (annotator, output_id, reason, question_id, note, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [annotator, output_id, reason, question_id, note, now_iso()],
        )
        _audit(
            conn,
            annotator,
            "item.flag",
            output_id,
            {"reason": reason, "note": note, "question_id": question_id},
        )
        return int(cur.lastrowid or 0)


# ------------------------------------------------------------------------ progress
def submission_counts(store: Store) -> dict[str, int]:
    """Distinct annotators who submitted each output."""
    return dict(store.conn.execute(
        "SELECT output_id, count(*) FROM submissions GROUP BY output_id").fetchall())


def personal_progress(store: Store, annotator: str) -> tuple[int, int]:
    """(items this annotator submitted, items still open to them + submitted)."""
    settings = get_settings(store)
    eligible = list(eligible_outputs(store).output_id)
    submitted = submission_counts(store)
    mine = {
        r[0]
        for r in store.conn.execute(
            "SELECT output_id FROM submissions WHERE annotator = ?", [annotator]
        )
    }
    open_to_me = sum(
        1 for o in eligible if o not in mine and submitted.get(o, 0) < settings.overlap
    )
    done = sum(1 for o in eligible if o in mine)
    return done, done + open_to_me


def overall_progress(store: Store) -> tuple[int, int]:
    """(submissions counted toward overlap, outputs x overlap) over the eligible outputs."""
    settings = get_settings(store)
    eligible = list(eligible_outputs(store).output_id)
    submitted = submission_counts(store)
    return (
        sum(min(submitted.get(o, 0), settings.overlap) for o in eligible),
        len(eligible) * settings.overlap,
    )


def progress_by_annotator(store: Store) -> pd.DataFrame:
    """Per annotator: items submitted, answers given, flags, median active seconds/item."""
    subs = store.query_df("SELECT annotator, count(*) AS submitted FROM submissions GROUP BY 1")
    answers = store.query_df(
        "SELECT annotator, count(*) AS answers FROM current_annotations GROUP BY 1"
    )
    flags = store.query_df("SELECT annotator, count(*) AS flags FROM flags GROUP BY 1")
    times = store.query_df(
        "SELECT annotator, output_id, SUM(active_seconds) AS s FROM item_time GROUP BY 1, 2"
    )
    med = times.groupby("annotator")["s"].median().rename("median seconds/item").reset_index()
    table = subs.merge(answers, how="outer", on="annotator")
    for extra in (flags, med):
        table = table.merge(extra, how="left", on="annotator")
    table = table.fillna({"submitted": 0, "answers": 0, "flags": 0})
    return table.astype({"submitted": int, "answers": int, "flags": int}).sort_values("annotator")


def progress_by_generator(store: Store) -> pd.DataFrame:
    """Per generator: eligible outputs, outputs complete (overlap reached), submissions."""
    settings = get_settings(store)
    eligible = eligible_outputs(store)
    subs = store.query_df("SELECT output_id, count(*) AS n FROM submissions GROUP BY 1")
    merged = eligible.merge(subs, how="left", on="output_id").fillna({"n": 0})
    merged["complete"] = merged["n"] >= settings.overlap
    table = (
        merged.groupby("generator")
        .agg(outputs=("output_id", "size"), complete=("complete", "sum"), submissions=("n", "sum"))
        .reset_index()
    )
    return table.astype({"complete": int, "submissions": int})


def flags_df(store: Store) -> pd.DataFrame:
    return store.query_df(
        "SELECT flag_id, created_at, annotator, output_id, reason, question_id, note"
        " FROM flags ORDER BY flag_id DESC"
    )
