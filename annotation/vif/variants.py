"""Text-variant tasks of VIF-Bench: the visual instructions (VIs) replaced by their text.

"VIF-Bench: Evaluating Visual Instruction Following in Multi-Reference Image Generation",
Sec. 4.4 ("How Should Visual Constraints Be Specified?") and Appendix C.5 ("Converting
Visual Instructions into Text Instructions"): for a subset of tasks "sampled with a fixed
seed from tasks containing at least one non-layout VI and stratified to 50 tasks per
subject count (n=1-4)", each TI condition (TI Dense, TI Medium, TI Sparse) removes "the
corresponding VI images, re-index[es] the remaining reference images, and remove[s] the
trailing clause asking the model to erase visual markings"; only the wording of the
converted VI clauses differs between the three levels. "The judge is always given the
original task with the original VI images and instruction": an output generated from a
variant is judged against its original task.

In judge-audit:

* a **variant task** has the id ``<task>~text-<level>`` and the meta ``variant_of`` (the
  original task), ``variant`` (``text-dense`` / ``text-medium`` / ``text-sparse``),
  ``image_map`` (the original index of each of its images: ``image_map[k]`` is the
  original ``Image_k``), ``readouts`` (the text that replaced each VI) and
  ``subject_count``; :func:`variant_project` writes them (``judge-audit variants``);
* an **output of a variant** is an output of the *original* task with ``meta.text_variant``;
  :func:`link_variant_outputs` turns the outputs a bundle gives for a variant task into
  those, and drops the variant tasks (they are never stored: the original's images,
  checklist and criteria are what the output is judged against);
* the subject count is the number of layout boxes (one per main subject, Sec. 3), else the
  number of ``main`` reference images.

Instruction rewriting (deterministic): every ``Image_k`` of a kept image becomes its new
number; a mention of a removed VI image becomes "the text below" (where the readouts
are); trailing sentences that ask not to draw (or to remove) the boxes, arrows, pyramids
or other marks are removed; then the readouts follow as one paragraph.
Layout, orientation and arrow readouts come from :mod:`annotation.vif.readouts` (the
paper's templates); a pose reference has text only when the task's ``meta.pose`` entry
carries it (``text: {dense, medium, sparse}``: the paper asks a VLM, once per pose image).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from annotation.records import Problems, ProjectData, Task, TaskImage
from annotation.vif.readouts import readouts

LEVELS = ("dense", "medium", "sparse")
#: The original condition, then one per level, in the paper's order (Fig. 6 right).
VI = "vi"
VARIANTS = tuple(f"text-{level}" for level in LEVELS)
CONDITIONS = (VI, *VARIANTS)
SEPARATOR = "~"
#: Tasks per subject count (Appendix C.5).
PER_COUNT = 50

_REF = re.compile(r"\bImage_(\d+)\b")
_ERASE = re.compile(
    r"^\s*(?:do\s+not|don't|never|avoid)\s+(?:draw|show|render|keep|leave|include|reproduce|"
    r"add|copy)\b|^\s*(?:remove|erase|delete)\s+(?:all\s+|the\s+|every\s+|any\s+)*(?:\w+\s+)?"
    r"(?:box|boxes|arrow|arrows|pyramid|pyramids|mark|marks|markings|visual|guides?|"
    r"overlays?|lines?)\b", re.IGNORECASE)
_SENTENCES = re.compile(r"((?<=[.!?])\s+|\n+)")


class VariantError(ValueError):
    """The variant tasks cannot be made; the message names the level or the tasks."""


def variant_name(level: str) -> str:
    """``text-<level>`` for ``dense``, ``medium`` or ``sparse``; :class:`VariantError`
    (naming the levels there are) for anything else."""
    if level not in LEVELS:
        raise VariantError(f"unknown level {level!r}: choose one of {', '.join(LEVELS)}")
    return f"text-{level}"


def variant_task_id(task_id: str, level: str) -> str:
    """``<task>~text-<level>``."""
    return f"{task_id}{SEPARATOR}{variant_name(level)}"


def output_variant(meta: Mapping[str, Any] | str | None) -> str | None:
    """The text variant an output was generated from (``meta.text_variant``, a mapping or the
    stored JSON text), None for an output of the original task (the ``vi`` condition)."""
    if isinstance(meta, str):
        if '"text_variant"' not in meta:
            return None
        meta = json.loads(meta)
    value = meta.get("text_variant") if isinstance(meta, Mapping) else None
    return value if isinstance(value, str) and value else None


def variant_suffix(meta: Mapping[str, Any] | str | None) -> str:
    """``~text-<level>`` for an output of a variant, ``""`` otherwise: what tells the one
    output per task and generator of each condition apart."""
    variant = output_variant(meta)
    return f"{SEPARATOR}{variant}" if variant else ""


# ------------------------------------------------------------------------ the subset


def _kinds(kind: str | None) -> list[str]:
    return [p.strip().lower() for p in str(kind or "").split("+") if p.strip()]


def subject_count(meta: Mapping[str, Any], images: Sequence[TaskImage]) -> int | None:
    """Main subjects of a task: its layout boxes, else its ``main`` reference images."""
    boxes = sum(1 for r in readouts(meta) if r["kind"] == "layout")
    if boxes:
        return boxes
    mains = sum(1 for i in images if i.role == "reference" and (i.kind or "").lower() == "main")
    return mains or None


def has_non_layout_vi(meta: Mapping[str, Any], images: Sequence[TaskImage]) -> bool:
    """At least one visual instruction other than layout (the subset's condition, C.5);
    VI images of no kind fall back on ``meta.visual_instruction_types``."""
    vis = [i for i in images if i.role == "visual_instruction"]
    kinds = {k for i in vis for k in _kinds(i.kind)}
    if any(i.kind is None for i in vis):
        declared = meta.get("visual_instruction_types") or ()
        if isinstance(declared, list | tuple):
            kinds |= {k for d in declared if isinstance(d, str) for k in _kinds(d)}
    return bool(kinds - {"layout"})


def stratified_sample(counts: Mapping[str, int | None], per_count: int = PER_COUNT,
                      seed: int = 0) -> list[str]:
    """``per_count`` task ids per subject count (all of a smaller stratum), drawn with
    ``random.Random(seed)`` from each stratum's ids in sorted order, strata by increasing
    count (tasks without a count form no stratum); returned in (count, task id) order."""
    if per_count < 1:
        raise VariantError(f"--per-count must be at least 1, got {per_count}")
    rng = random.Random(seed)
    strata: dict[int, list[str]] = {}
    for task_id, n in counts.items():
        if n is not None:
            strata.setdefault(n, []).append(task_id)
    chosen: list[str] = []
    for n in sorted(strata):
        ids = sorted(strata[n])
        chosen.extend(sorted(rng.sample(ids, min(per_count, len(ids)))))
    return chosen


# ----------------------------------------------------------------- one variant task


def strip_erase_clause(text: str) -> str:
    """``text`` without its trailing sentences asking not to draw (or to remove) the
    boxes, arrows, pyramids or other marks of the visual instructions (C.5)."""
    pieces = _SENTENCES.split(text.rstrip())
    while pieces and _ERASE.match(pieces[-1]):
        pieces = pieces[:-2]
    return "".join(pieces).rstrip()


def renumber(text: str, new_index: Mapping[int, int], removed: Mapping[int, str]) -> str:
    """``Image_k`` of a kept image -> ``Image_<new k>``; of a removed VI -> "the text
    below" (capitalized at the start of a sentence); other numbers (no such image) are
    left as written."""
    def one(m: re.Match[str]) -> str:
        k = int(m.group(1))
        if k in new_index:
            return f"Image_{new_index[k]}"
        if k not in removed:
            return m.group(0)
        before = text[:m.start()].rstrip("`*_ ")
        start = not before or before.endswith((".", "!", "?", "\n", ":"))
        return "The text below" if start else "the text below"
    return _REF.sub(one, text)


def _pose_texts(meta: Mapping[str, Any]) -> list[tuple[int | None, str | None, Any]]:
    raw = meta.get("pose")
    items = [raw] if isinstance(raw, Mapping) else raw if isinstance(raw, list) else []
    out = []
    for item in items:
        if isinstance(item, Mapping):
            image = item.get("image")
            subject = item.get("subject")
            out.append((image if isinstance(image, int) else None,
                        subject if isinstance(subject, str) else None, item.get("text")))
    return out


def _subject(name: str | None, image: int | None, new_index: Mapping[int, int],
             removed: Mapping[int, str]) -> str:
    if name is None:
        return "The subject"
    if _REF.fullmatch(name.strip()):
        return "The subject of " + renumber(name.strip(), new_index, removed)
    phrase = f"The {name}"
    if image is not None and image in new_index:
        phrase += f" of Image_{new_index[image]}"
    return phrase


@dataclass(frozen=True)
class Variant:
    """One variant task (its records) and what the listing says of it."""

    task: Task
    images: list[TaskImage]
    original: str
    subject_count: int | None
    removed: dict[int, str]  # original index -> VI kind


def make_variant(task: Task, images: Sequence[TaskImage], level: str) -> Variant:
    """The ``level`` variant of one task (see the module docstring); :class:`VariantError`
    naming the task and the image when a visual instruction has no text."""
    name = variant_name(level)
    ordered = sorted(images, key=lambda i: i.index)
    removed = {i.index: (i.kind or "").lower() for i in ordered if i.role == "visual_instruction"}
    kept = [i for i in ordered if i.role != "visual_instruction"]
    new_index = {i.index: n for n, i in enumerate(kept)}
    meta = task.meta
    found = readouts(meta)
    layout_images: dict[str, int] = {}
    raw_layout = meta.get("layout")
    for entry in raw_layout if isinstance(raw_layout, list) else []:
        if isinstance(entry, Mapping) and isinstance(entry.get("subject"), str) and isinstance(
                entry.get("image"), int):
            layout_images.setdefault(entry["subject"], entry["image"])
    poses = _pose_texts(meta)
    missing: list[str] = []
    for index, kind in removed.items():
        parts = _kinds(kind)
        if not parts:
            missing.append(f"Image_{index} is a visual instruction of no kind (give its kind)")
        for part in parts:
            if part == "pose":
                texts = [t for img, _s, t in poses if img in (index, None)]
                if not any(isinstance(t, Mapping) and isinstance(t.get(level), str)
                           and t[level].strip() for t in texts):
                    missing.append(f"Image_{index} (pose) has no {level} text: give "
                                   f"meta.pose[].text.{level} (the paper asks a VLM once per "
                                   "pose image)")
            elif part in ("layout", "orientation", "wind", "light"):
                if not any(r["kind"] == part for r in found):
                    key = {"layout": "meta.layout", "orientation": "meta.orientation"}.get(
                        part, "meta.arrows")
                    missing.append(f"Image_{index} ({part}) has no readout: {key} has no "
                                   f"{part} entry")
            else:
                missing.append(f"Image_{index} is a visual instruction of kind {part!r}, "
                               "which has no text form")
    if missing:
        raise VariantError(f"task {task.task_id!r}: " + "; ".join(missing))
    sentences = []
    for r in found:
        if r["kind"] in ("layout", "orientation"):
            subject = _subject(r["subject"], layout_images.get(r["subject"] or ""), new_index,
                               removed)
            sentences.append(f"{subject} is {r[level]}.")
        else:
            sentences.append(f"The scene has {r[level]}.")
    for _image, subject_name, text in poses:
        if isinstance(text, Mapping) and isinstance(text.get(level), str):
            subject = _subject(subject_name, layout_images.get(subject_name or ""), new_index,
                               removed)
            sentences.append(f"{subject} takes this pose: {text[level].strip().rstrip('.')}.")
    body = renumber(strip_erase_clause(task.instruction), new_index, removed)
    instruction = "\n\n".join(p for p in (body, " ".join(sentences)) if p)
    vid = variant_task_id(task.task_id, level)
    count = subject_count(meta, ordered)
    variant_meta: dict[str, Any] = {
        "variant_of": task.task_id, "text_variant": name, "image_map": [i.index for i in kept],
        "readouts": [{"kind": r["kind"], "subject": r["subject"], "text": r[level]}
                     for r in found] + [
            {"kind": "pose", "subject": s, "text": t[level]} for _i, s, t in poses
            if isinstance(t, Mapping) and isinstance(t.get(level), str)],
        "subject_count": count}
    new_images = [replace(i, task_id=vid, index=n, origin=i.origin) for n, i in enumerate(kept)]
    return Variant(Task(vid, instruction, vid, variant_meta), new_images, task.task_id,
                   count, removed)


def variant_project(project: ProjectData, level: str, *, per_count: int = PER_COUNT,
                    seed: int = 0, published: bool = False
                    ) -> tuple[ProjectData, list[Variant]]:
    """The bundle ``judge-audit variants`` writes: the ``level`` variants of the stratified
    subset of ``project`` (a store's :meth:`~annotation.store.Store.read_project`), with
    its criteria and judges and no outputs, and the variants in subset order.
    ``published``: instead of drawing the subset, take the tasks the VIF-Bench release
    marks ``in_vi_vs_ti_experiment`` (its own subset), in (subject count, id) order.

    :class:`VariantError`: an unknown level, a project without VIF-Bench tasks (no task
    has a visual-instruction image), none with a non-layout VI (or none marked, with
    ``published``), or chosen tasks whose visual instructions have no text (each named)."""
    variant_name(level)
    images: dict[str, list[TaskImage]] = {}
    for image in project.images:
        images.setdefault(image.task_id, []).append(image)
    vif = [t for t in project.tasks
           if any(i.role == "visual_instruction" for i in images.get(t.task_id, []))]
    if not vif:
        raise VariantError("no VIF-Bench tasks in this project: no task has a "
                           "visual-instruction image")
    eligible = {t.task_id: subject_count(t.meta, images.get(t.task_id, [])) for t in vif
                if has_non_layout_vi(t.meta, images.get(t.task_id, []))}
    if not eligible:
        raise VariantError(f"none of the {len(vif)} VIF-Bench task(s) has a visual "
                           "instruction other than layout (the subset's condition)")
    if published:
        marked = {t.task_id for t in vif if t.meta.get("in_vi_vs_ti_experiment") is True}
        if not marked:
            raise VariantError("no task is marked in_vi_vs_ti_experiment (the VIF-Bench "
                               "release's subset): leave out --published to draw one")
        counts = {t: eligible.get(t) for t in marked}
        chosen = sorted(marked, key=lambda t: (counts[t] is None, counts[t] or 0, t))
    else:
        chosen = stratified_sample(eligible, per_count, seed)
    tasks = {t.task_id: t for t in project.tasks}
    made: list[Variant] = []
    problems: list[str] = []
    for task_id in chosen:
        try:
            made.append(make_variant(tasks[task_id], images.get(task_id, []), level))
        except VariantError as exc:
            problems.append(str(exc))
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise VariantError("cannot write the text of every visual instruction:\n"
                           + "\n".join(problems[:5]) + more)
    out = ProjectData(
        name=f"{project.name} ({variant_name(level)} variants)", benchmark=project.benchmark,
        source=project.source, format="bundle", criteria=list(project.criteria),
        judges=list(project.judges),
        meta={"variants": {"of": project.name, "level": level, "variant": variant_name(level),
                           "per_count": None if published else per_count,
                           "seed": None if published else seed, "published": published,
                           "tasks": [v.original for v in made]}})
    out.tasks = [v.task for v in made]
    out.images = [i for v in made for i in v.images]
    return out, made


def listing(variants: Iterable[Variant]) -> list[dict[str, Any]]:
    """One row per variant task: ``task_id`` (the original), ``variant_task_id``,
    ``variant``, ``subject_count``, ``images`` (kept), ``removed`` (the VI images, as
    ``Image_k:kind``)."""
    return [{"task_id": v.original, "variant_task_id": v.task.task_id,
             "variant": v.task.meta["text_variant"], "subject_count": v.subject_count,
             "images": len(v.images),
             "removed": " ".join(f"Image_{k}:{kind}" for k, kind in v.removed.items())}
            for v in variants]


# ------------------------------------------------------------------------- importing


def link_variant_outputs(project: ProjectData, problems: Problems) -> int:
    """Attach the outputs of variant tasks to their original tasks, in place; return how
    many variant tasks the bundle holds (and say so in a warning).

    A task with ``meta.variant_of`` is a variant task: it is taken out of ``project``
    (tasks and images), and each output naming it becomes an output of ``variant_of``
    with ``meta.text_variant``. Errors (located): a ``variant`` that is not ``text-dense``,
    ``text-medium`` or ``text-sparse``, a ``variant_of`` that is not a task id or is
    itself a variant, questions on a variant task, an output whose ``meta.text_variant``
    differs from its variant task's or that also names a tree node. The original must be
    in the bundle or the database (checked with the other references)."""
    variants: dict[str, tuple[str, str]] = {}
    for t in project.tasks:
        if "variant_of" not in t.meta:
            continue
        of, name = t.meta.get("variant_of"), t.meta.get("text_variant")
        if not isinstance(of, str) or not of.strip() or of == t.task_id:
            problems.at(t.origin, "meta.variant_of", f"expected the id of the original task, "
                        f"got {json.dumps(of)}")
            continue
        if name not in VARIANTS:
            problems.at(t.origin, "meta.text_variant", f"expected one of {', '.join(VARIANTS)}, "
                        f"got {json.dumps(name)}")
            continue
        variants[t.task_id] = (of, str(name))
    for task_id, (of, _name) in variants.items():
        if of in variants:
            origin = next(t.origin for t in project.tasks if t.task_id == task_id)
            problems.at(origin, "meta.variant_of", f"{of!r} is itself a variant task; name "
                        "the original task")
    variant_checklists = {t.checklist_id for t in project.tasks if t.task_id in variants}
    for q in project.questions:
        if q.checklist_id in variant_checklists:
            problems.at(q.origin, "questions", "a variant task has no questions of its own: "
                        "its outputs are judged with the original task's checklist")
            break
    for o in project.outputs:
        given = o.meta.get("text_variant")
        if given is not None and given not in VARIANTS:
            problems.at(o.origin, "meta.text_variant", f"expected one of {', '.join(VARIANTS)}, "
                        f"got {json.dumps(given)}")
            continue
        if o.task_id in variants:
            of, name = variants[o.task_id]
            if given is not None and given != name:
                problems.at(o.origin, "meta.text_variant", f"{given!r}, but task {o.task_id!r} is "
                            f"its {name!r} variant")
                continue
            o.task_id = of
            o.meta = {**o.meta, "text_variant": name}
        if o.meta.get("text_variant") is not None and o.meta.get("node") is not None:
            problems.at(o.origin, "meta.node", "an output of a text variant is not a node of "
                        "a diagnostic tree")
    if variants:
        project.tasks = [t for t in project.tasks if t.task_id not in variants]
        project.images = [i for i in project.images if i.task_id not in variants]
        linked = sum(1 for o in project.outputs if o.meta.get("text_variant") is not None)
        problems.warn("tasks.jsonl", None, None, f"{len(variants)} text-variant task(s) "
                      f"(meta.variant_of) are not stored as tasks: the {linked} output(s) of "
                      "text variants are stored with their original tasks (meta.text_variant)")
    return len(variants)

