"""The demo's human work beyond annotations: conflict verifications (VIF-Bench), tree
reviews (TRACE-Bench) and the submissions of every workflow, written as the bundle's
human-work files (``docs/bundle-format.md``, *Human work*) so that the admin pages
*Conflict labels* and *Tree localization* show real tables on first start.

The work is done through the product's own workflows
(:mod:`annotation.work.verification`, :mod:`annotation.work.tree_review`) on a temporary
import of the bundle written so far, at fixed times, and the rows are read back as the
export writes them: what a verifier and a reviewer would have left in the app.

The story (the accounts of :data:`scripts.demo.spec.ACCOUNTS`; ``alice`` does nothing):

* ``ann2`` verifies demo-03, demo-06 and demo-07, ``ann3`` demo-03 and demo-07 (the
  workflow's overlap of 2). On demo-07 ``ann2`` first confirmed the tabby's pre-label
  ``wind_responsive: false``, then corrected it (a superseded reading): its long fur moves
  in the wind (the pre-label is wrong on purpose, :data:`scripts.demo.spec.
  WRONG_PRELABELS`), and so ``ann2`` disagrees with the automatic *no wind conflict*.
  ``ann3`` kept the pre-label and agreed: a tie, which ``admin`` decided (*conflict*, with
  a note; ``conflict_resolutions.jsonl``). Every other label both agree with. The other
  wrong pre-label (demo-08) is left for the visitor to find.
* ``ann1`` and ``ann2`` review the trees of nano-banana and qwen-image-edit (demo-10), as
  :mod:`scripts.demo.trees` designed them (gpt-image-1's tree is left for the visitor):
  they mark gpt-5's second cat under the neon sign *not a failure*, and for
  qwen-image-edit they say the shirt's failure is persistent where the automatic
  localization says N2a (gpt-5 wrongly saw the stripes there). ``ann1`` first put it at
  N1, then changed it (a superseded review).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from annotation.formats import human_work
from annotation.formats.importers import import_path
from annotation.store import Store
from annotation.store import human_work as stored_work
from annotation.work import tree_review as tr
from annotation.work import verification as vf

#: (verifier, task): the verifications of the demo, in the order they were made
VERIFICATIONS: tuple[tuple[str, str], ...] = (
    ("ann2", "demo-03"), ("ann2", "demo-06"), ("ann2", "demo-07"),
    ("ann3", "demo-03"), ("ann3", "demo-07"),
)
#: (task, image index, attribute) -> what the verifiers read where the pre-label is wrong
CORRECTED: dict[tuple[str, int, str], Any] = {("demo-07", 0, "wind_responsive"): True}
#: the verifier who first confirmed the wrong pre-label, then corrected it
CORRECTED_BY = "ann2"
DISAGREE_NOTE = "the tabby's long fur moves in the wind: the pre-label is wrong"
#: the admin's decision on the tie the correction left (conflict_resolutions.jsonl)
RESOLUTION = {"task_id": "demo-07", "conflict": "wind", "label": True,
              "note": "the fur does move in the wind (see ann2's reading): a wind conflict",
              "decided_by": "admin"}

ROOT = "demo-10"
#: (reviewer, generator) -> instance -> (origin, reason, note); in review order
REVIEWS: tuple[tuple[str, str, dict[str, tuple[str, str | None, str | None]]], ...] = (
    ("ann1", "nano-banana", {
        "f|f2": ("N1", "attribute_mismatch", "the neon light turns the red cat magenta"),
        "C|C, duplication": ("not_a_failure", None, "there is one cat only"),
    }),
    ("ann1", "qwen-image-edit", {
        "f|f1": ("persistent", "identity_inconsistency", "hair and scarf drift everywhere"),
        "⊕|f1⊕g1": ("persistent", "attribute_mismatch", "the shirt is never striped"),
    }),
    ("ann2", "nano-banana", {
        "f|f2": ("N1", "attribute_mismatch", None),
        "C|C, duplication": ("not_a_failure", None, None),
    }),
    ("ann2", "qwen-image-edit", {
        "f|f1": ("persistent", "identity_inconsistency", None),
        "⊕|f1⊕g1": ("persistent", "attribute_mismatch", "no stripes at N2a either"),
    }),
)
#: ann1's first answer on qwen-image-edit's shirt, changed later
FIRST_THOUGHT = ("ann1", "qwen-image-edit", "⊕|f1⊕g1", "N1")
#: the box ann1 draws around the recoloured cat on the root image
BOX = ("ann1", "nano-banana", "f|f2", {"node": "N0", "box": [0.55, 0.45, 0.95, 0.95]})

FILES = ("prelabel_readings.jsonl", "conflict_verdicts.jsonl", "tree_reviews.jsonl")


class _Clock:
    """The fixed times of the demo's work: a step per answer."""

    def __init__(self, start: datetime) -> None:
        self.at = start

    def tick(self, seconds: int) -> datetime:
        self.at += timedelta(seconds=seconds)
        return self.at


def _verify(store: Store, clock: _Clock) -> None:
    for verifier, task_id in VERIFICATIONS:
        item = vf.load_verify_item(store, task_id)
        readings: dict[tuple[int, str], Any] = {}
        for idx, attribute in item.needed():
            value = item.reference(idx).prelabel.get(attribute)
            if (task_id, idx, attribute) in CORRECTED and verifier == CORRECTED_BY:
                # confirmed first, corrected a moment later
                vf.give_reading(store, verifier, task_id, idx, attribute, value,
                                now=clock.tick(9))
                value = CORRECTED[(task_id, idx, attribute)]
            vf.give_reading(store, verifier, task_id, idx, attribute, value,
                            now=clock.tick(11))
            readings[(idx, attribute)] = value
        decisions = vf.decisions_on(item, readings)
        for check in item.checks:
            label = bool(decisions[check.conflict].conflict)
            note = DISAGREE_NOTE if label != check.automatic else None
            vf.give_verdict(store, verifier, task_id, check.conflict, label,
                            check.automatic, note=note, now=clock.tick(7))
        clock.tick(60)


def _review(store: Store, clock: _Clock) -> None:
    for reviewer, generator, answers in REVIEWS:
        output_id = f"{ROOT}/{generator}"
        for instance, (origin, reason, note) in answers.items():
            if (reviewer, generator, instance) == FIRST_THOUGHT[:3]:
                tr.give_review(store, reviewer, output_id, instance, FIRST_THOUGHT[3],
                               reason=reason, now=clock.tick(25))
            box = BOX[3] if (reviewer, generator, instance) == BOX[:3] else None
            tr.give_review(store, reviewer, output_id, instance, origin, reason=reason,
                           box=box, note=note, now=clock.tick(40))
        clock.tick(90)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _compared(out_dir: Path) -> list[dict[str, Any]]:
    """The annotators' answers on pairs and rankings in ``annotations.jsonl`` (written
    before the human work), as rows with the Compare outputs queue's kind and unit."""
    rows = []
    with (out_dir / "annotations.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            for kind, unit in (("pairs", "pair_id"), ("rankings", "ranking_id")):
                if unit in r:
                    rows.append({"kind": kind, "annotator": r["annotator"],
                                 "unit": r[unit], "created_at": r["created_at"]})
    return rows


def _submissions(annotated: Iterable[tuple[str, str, str]],
                 work: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """``submissions.jsonl``: each annotated item (``(annotator, output, submitted_at)``)
    and each verified task, reviewed tree, answered pair and ranking, submitted 10 s
    after its last answer."""
    rows = [{"kind": "annotate", "person": a, "unit": o, "submitted_at": at}
            for a, o, at in annotated]
    last: dict[tuple[str, str, str], str] = {}
    for r in work["compared"]:
        key = (r["kind"], r["annotator"], r["unit"])
        last[key] = max(last.get(key, ""), r["created_at"])
    for name, kind, person, unit in (("conflict_verdicts.jsonl", "verify", "verifier",
                                      "task_id"),
                                     ("tree_reviews.jsonl", "trees", "reviewer",
                                      "output_id")):
        for r in work[name]:
            key = (kind, r[person], r[unit])
            last[key] = max(last.get(key, ""), r["created_at"])
    for (kind, person, unit), at in last.items():
        moment = datetime.fromisoformat(at) + timedelta(seconds=10)
        rows.append({"kind": kind, "person": person, "unit": unit,
                     "submitted_at": _iso(moment)})
    return sorted(rows, key=lambda r: (r["submitted_at"], r["kind"], r["person"], r["unit"]))


def _visits(work: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """``visits.jsonl``: one visit per verified task and reviewed tree, opened 30 s before
    its first answer and active until its last (whole seconds)."""
    spans: dict[tuple[str, str, str], list[str]] = {}
    for name, kind, person, unit in (("conflict_verdicts.jsonl", "verify", "verifier",
                                      "task_id"),
                                     ("prelabel_readings.jsonl", "verify", "verifier",
                                      "task_id"),
                                     ("tree_reviews.jsonl", "trees", "reviewer",
                                      "output_id")):
        for r in work[name]:
            spans.setdefault((kind, r[person], r[unit]), []).append(r["created_at"])
    rows = []
    for (kind, person, unit), times in spans.items():
        first, last = (datetime.fromisoformat(t) for t in (min(times), max(times)))
        rows.append({"kind": kind, "person": person, "unit": unit,
                     "started_at": _iso(first - timedelta(seconds=30)),
                     "active_seconds": int((last - first).total_seconds()) + 30})
    return sorted(rows, key=lambda r: (r["started_at"], r["kind"], r["person"], r["unit"]))


def write_human_work(out_dir: Path, annotated: Iterable[tuple[str, str, str]],
                     start: datetime) -> None:
    """Do the demo's verifications and tree reviews on a temporary import of the bundle in
    ``out_dir`` (written so far), starting at ``start``, and write their files (with the
    admin's decision of the tie, ``conflict_resolutions.jsonl``),
    ``submissions.jsonl`` (with ``annotated``'s items) and ``visits.jsonl`` (the
    verifiers' and reviewers' active time) into ``out_dir``."""
    with (tempfile.TemporaryDirectory(prefix="judge-audit-demo-") as tmp,
          Store.open(Path(tmp) / "demo.db") as store):
        import_path(store, out_dir, user="demo")
        clock = _Clock(start)
        _verify(store, clock)
        _review(store, clock)
        rows = stored_work.read_all(store)
    lines: dict[str, list[dict[str, Any]]] = {}
    for name in FILES:
        number: dict[str | None, int] = {}
        lines[name] = []
        for n, row in enumerate(rows[name], start=1):
            number[row.record_id] = n
            sup = None if row.supersedes is None else number[row.supersedes]
            lines[name].append(human_work.line(name, row.values, n, sup))
    for name in FILES:
        _write(out_dir / name, lines[name])
    decided = clock.tick(3600)
    _write(out_dir / "conflict_resolutions.jsonl", [
        {"id": 1, "supersedes": None, **RESOLUTION, "created_at": _iso(decided)}])
    values = {name: [r.values for r in rows[name]] for name in FILES}
    _write(out_dir / "submissions.jsonl",
           _submissions(annotated, {**values, "compared": _compared(out_dir)}))
    _write(out_dir / "visits.jsonl", _visits(values))


def _write(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
