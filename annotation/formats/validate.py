"""Cross-record validation of an import, against itself and against the store.

The readers (:mod:`annotation.formats.bundle`, :mod:`annotation.formats.importers`) check each
record on its own (types, enums, paths, images). :func:`check_project` then checks what needs the
whole import and the database: unique ids, references between files, scores on their
scale, checklists shared consistently, and re-imports. A row already stored *identically*
is dropped from the import (so importing the same bundle twice is harmless); a row stored
*differently* is an error, because silently replacing a task, a question or a judge's
answer would change results already computed on them.

It also holds the checks of the *reserved* meta keys of VIF-Bench visual instructions and
conflict pre-labels (:func:`task_meta_problems`, :func:`prelabel_problems`), which every
reader calls on each record it reads so the errors name the record's own file and line
(``docs/bundle-format.md``, "VIF-Bench visual instructions and conflict pre-labels"), and
of TRACE-Bench diagnostic trees (:func:`tree_problems`: a task's ``meta.formula`` and
``meta.tree_nodes``; an output's ``meta.node``), which :func:`check_project` runs because a
node's questions and a node output's task may come from elsewhere in the import or from the
database (``docs/bundle-format.md``, "TRACE-Bench diagnostic trees").
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from annotation.formats import human_work, pairs
from annotation.records import (
    HUMAN_ANSWERS,
    YES_NO,
    Annotation,
    Criterion,
    Judge,
    Judgment,
    Output,
    Problems,
    ProjectData,
    Question,
    Task,
    TaskImage,
)
from annotation.store import Store, dumps
from annotation.trace.decompose import decompose
from annotation.trace.formula import FormulaError, parse
from annotation.trace.nodes import ROOT, output_node
from annotation.trace.prompts import reference_problems
from annotation.vif.conflicts import CONFLICT_KEYS
from annotation.vif.variants import variant_suffix

#: criterion names, the keys of judgments and annotations (docs: ``[a-z0-9_]+``)
CRITERION_NAME = re.compile(r"[a-z0-9_]+")


@dataclass
class CheckResult:
    """What :func:`check_project` kept, and how many rows were already stored as they are."""

    project: ProjectData
    unchanged: dict[str, int] = field(default_factory=dict)


def _criterion_row(c: Criterion) -> dict[str, Any]:
    return {"label": c.label, "min": float(c.min), "max": float(c.max),
            "step": None if c.step is None else float(c.step), "level": c.level,
            "rubric": c.rubric}


def _judge_row(j: Judge) -> dict[str, Any]:
    lo, hi = j.scale if j.scale else (None, None)
    return {"kind": j.kind, "scale_min": None if lo is None else float(lo),
            "scale_max": None if hi is None else float(hi)}


def _task_row(t: Task) -> dict[str, Any]:
    return {"instruction": t.instruction, "checklist_id": t.checklist_id, "meta": dumps(t.meta)}


def _image_row(i: TaskImage) -> dict[str, Any]:
    return {"role": i.role, "kind": i.kind, "label": i.label, "path": i.path,
            "sha256": i.file.sha256, "meta": dumps(i.meta)}


def _question_row(q: Question) -> dict[str, Any]:
    return {"checklist_id": q.checklist_id, "position": q.position, "text": q.text,
            "pass_answer": q.pass_answer, "operator": q.operator, "target": q.target,
            "depends_on": dumps(q.depends_on), "meta": dumps(q.meta)}


def _output_row(o: Output) -> dict[str, Any]:
    return {"task_id": o.task_id, "generator": o.generator, "path": o.path,
            "sha256": o.file.sha256 if o.file else None, "missing": int(o.missing),
            "meta": dumps(o.meta)}


def _judgment_row(j: Judgment) -> dict[str, Any]:
    return {"answer": j.answer, "score": None if j.score is None else float(j.score),
            "raw": j.raw, "parse_status": j.parse_status}


def _first_difference(new: dict[str, Any], old: dict[str, Any]) -> str | None:
    for key, value in new.items():
        if old.get(key) != value:
            return key
    return None


def _on_scale(score: float, lo: float, hi: float, step: float | None) -> str | None:
    if not math.isfinite(score):
        return "must be a finite number"
    if score < lo or score > hi:
        return f"{score:g} is outside the scale {lo:g}..{hi:g}"
    if step:
        k = (score - lo) / step
        if abs(k - round(k)) > 1e-9:
            return f"{score:g} is not on the scale's step of {step:g} from {lo:g}"
    return None


def check_project(project: ProjectData, existing: dict[str, Any]) -> CheckResult:
    """Validate ``project`` against itself and ``existing`` (from ``Store.existing_rows``,
    updated with :func:`existing_tree_rows` for the diagnostic-tree checks of node outputs).

    One check per kind of record, in this order (each reads what the ones before it
    kept): criteria, judges, tasks and their images, questions, diagnostic trees, outputs,
    judgments, annotations. Returns the rows to write; raises :class:`ImportRefused`
    listing up to 20 problems.
    """
    ck = _Check(existing, replace(project, criteria=[], judges=[], tasks=[], images=[],
                                  questions=[], outputs=[], judgments=[], annotations=[]))
    criteria = _check_criteria(ck, project.criteria)
    judges = _check_judges(ck, project.judges)
    task_checklist = _check_tasks(ck, project.tasks, project.images)
    question_checklist = _check_questions(ck, project.questions)
    tree_nodes = _check_trees(ck, project.tasks, question_checklist)
    output_task, missing_outputs = _check_outputs(ck, project.outputs, task_checklist,
                                                  tree_nodes)
    targets = _Targets(output_task, task_checklist, question_checklist, criteria)
    _check_judgments(ck, project.judgments, targets, judges)
    _check_annotations(ck, project.annotations, targets, missing_outputs)
    if project.work:
        _check_work(ck, project, targets)
    if project.pairs or project.rankings or project.pair_answers or project.ranking_answers:
        _check_pairs(ck, project, targets, judges)
    ck.pr.raise_if_any()
    return CheckResult(ck.out, dict(ck.unchanged))


@dataclass
class _Check:
    """One run of :func:`check_project`: the stored rows, the rows kept so far, how many
    were already stored as they are, and the problems found."""

    existing: dict[str, Any]
    out: ProjectData
    unchanged: Counter[str] = field(default_factory=Counter)
    pr: Problems = field(default_factory=Problems)


@dataclass(frozen=True)
class _Targets:
    """What an answer (judgment or annotation) may name: output -> task, task ->
    checklist, question -> checklist, criterion -> its scale."""

    output_task: dict[str, str]
    task_checklist: dict[str, str]
    question_checklist: dict[str, str]
    criteria: dict[str, dict[str, Any]]


def _check_criteria(ck: _Check, records: list[Criterion]) -> dict[str, dict[str, Any]]:
    """Criteria: unique, well-named, min < max, same as a stored one. Returns every
    criterion (stored and new) -> ``{min, max, step}``."""
    pr = ck.pr
    criteria: dict[str, dict[str, Any]] = dict(ck.existing.get("all_criteria", {}))
    seen: set[str] = set()
    for c in records:
        if c.name in seen:
            pr.at(c.origin, "criteria.name", f"duplicate criterion {c.name!r}")
            continue
        seen.add(c.name)
        if not CRITERION_NAME.fullmatch(c.name):
            pr.at(c.origin, f"criteria[{c.name}].name", "use lowercase letters a-z, digits "
                  f"and '_' only ([a-z0-9_]+): {c.name!r}")
        if c.min >= c.max:
            pr.at(c.origin, f"criteria[{c.name}].max", "max must be greater than min")
        old = ck.existing["criteria"].get(c.name)
        if old is not None:
            diff = _first_difference(_criterion_row(c), old)
            if diff:
                pr.at(c.origin, f"criteria[{c.name}].{diff}",
                      "differs from the criterion already in the database")
            ck.unchanged["criteria"] += 1
            continue
        criteria[c.name] = {"min": c.min, "max": c.max, "step": c.step}
        ck.out.criteria.append(c)
    return criteria


def _check_judges(ck: _Check, records: list[Judge]) -> dict[str, dict[str, Any]]:
    """Judges: unique, same as a stored one. Returns every judge -> its row."""
    pr = ck.pr
    judges: dict[str, dict[str, Any]] = dict(ck.existing.get("all_judges", {}))
    seen = set()
    for j in records:
        if j.name in seen:
            pr.at(j.origin, "judges.name", f"duplicate judge {j.name!r}")
            continue
        seen.add(j.name)
        old = ck.existing["judges"].get(j.name)
        if old is not None:
            diff = _first_difference(_judge_row(j), old)
            if diff:
                pr.at(j.origin, f"judges[{j.name}].{diff}",
                      "differs from the judge already in the database")
            ck.unchanged["judges"] += 1
            continue
        judges[j.name] = _judge_row(j)
        ck.out.judges.append(j)
    return judges


def _check_tasks(ck: _Check, tasks: list[Task], images: list[TaskImage]) -> dict[str, str]:
    """Tasks and their images: unique, same as a stored task (images too), no image of
    an unknown task. Returns every task -> its checklist."""
    pr = ck.pr
    task_checklist: dict[str, str] = dict(ck.existing.get("task_checklists", {}))
    images_by_task: dict[str, list[TaskImage]] = {}
    for image in images:
        images_by_task.setdefault(image.task_id, []).append(image)
    seen = set()
    for t in tasks:
        if t.task_id in seen:
            pr.at(t.origin, "task_id", f"duplicate task_id {t.task_id!r}")
            continue
        seen.add(t.task_id)
        mine = images_by_task.get(t.task_id, [])
        old = ck.existing["tasks"].get(t.task_id)
        if old is not None:
            diff = _first_difference(_task_row(t), old)
            if diff is None:
                old_images = {k[1]: v for k, v in ck.existing["images"].items()
                              if k[0] == t.task_id}
                if len(old_images) != len(mine):
                    diff = "images"
                for image in mine:
                    o = old_images.get(image.index)
                    if o is None or _first_difference(_image_row(image), o):
                        diff = f"images[{image.index}]"
                        break
            if diff:
                pr.at(t.origin, diff, f"differs from task {t.task_id!r} already in the database")
            ck.unchanged["tasks"] += 1
            continue
        task_checklist[t.task_id] = t.checklist_id
        ck.out.tasks.append(t)
        ck.out.images.extend(mine)
    for task_id in images_by_task:
        if task_id not in seen:
            image = images_by_task[task_id][0]
            pr.at(image.origin, "images", f"image of unknown task {task_id!r}")
    return task_checklist


def _check_questions(ck: _Check, questions: list[Question]) -> dict[str, str]:
    """Questions: unique, a yes/no pass answer, dependencies inside the checklist and
    without cycles, same as a stored one. Returns every question -> its checklist."""
    pr = ck.pr
    question_checklist: dict[str, str] = dict(ck.existing.get("all_questions", {}))
    by_checklist: dict[str, list[Question]] = {}
    for q in questions:
        by_checklist.setdefault(q.checklist_id, []).append(q)
    seen = set()
    for checklist_id, listed in by_checklist.items():
        ids = {q.question_id for q in listed}
        for q in listed:
            if q.question_id in seen:
                pr.at(q.origin, "question_id", f"duplicate question_id {q.question_id!r}")
                continue
            seen.add(q.question_id)
            if q.pass_answer not in YES_NO:
                pr.at(q.origin, f"questions[{q.question_id}].pass_answer",
                      f"must be 'yes' or 'no', not {q.pass_answer!r}")
            for parent in q.depends_on:
                if parent == q.question_id:
                    pr.at(q.origin, f"questions[{q.question_id}].depends_on",
                          "a question cannot depend on itself")
                elif parent not in ids and question_checklist.get(parent) != checklist_id:
                    pr.at(q.origin, f"questions[{q.question_id}].depends_on",
                          f"unknown question {parent!r} (must be in the same checklist)")
            old = ck.existing["questions"].get(q.question_id)
            if old is not None:
                diff = _first_difference(_question_row(q), old)
                if diff:
                    pr.at(q.origin, f"questions[{q.question_id}].{diff}",
                          "differs from the question already in the database")
                ck.unchanged["questions"] += 1
                continue
            question_checklist[q.question_id] = checklist_id
            ck.out.questions.append(q)
    for q, cycle in _dependency_cycles(questions):
        pr.at(q.origin, f"questions[{q.question_id}].depends_on",
              "dependency cycle: " + " -> ".join(cycle) + " (each depends on the next)")
    return question_checklist


def _check_trees(ck: _Check, tasks: list[Task], question_checklist: dict[str, str]
                 ) -> dict[str, frozenset[str] | None]:
    """Diagnostic trees (TRACE-Bench): each task's ``meta.formula`` and
    ``meta.tree_nodes`` (:func:`tree_problems`). Returns task -> its node ids (None: no
    tree), for the new tasks and the stored ones that node outputs name."""
    pr = ck.pr
    tree_nodes: dict[str, frozenset[str] | None] = {}  # task -> node ids (None: no tree)
    for t in tasks:
        if t.task_id in tree_nodes:
            continue
        found, nodes = tree_problems(t.meta, t.checklist_id, question_checklist)
        for fld, message in found:
            pr.at(t.origin, fld, message)
        tree_nodes[t.task_id] = nodes
    for task_id, (checklist_id, meta) in ck.existing.get("task_meta", {}).items():
        if task_id not in tree_nodes:  # a task already stored: its tree, without reports
            tree_nodes[task_id] = tree_problems(meta, checklist_id, question_checklist)[1]
    return tree_nodes


def _check_outputs(ck: _Check, outputs: list[Output], task_checklist: dict[str, str],
                   tree_nodes: dict[str, frozenset[str] | None]
                   ) -> tuple[dict[str, str], set[str]]:
    """Outputs: unique, of a known task, a missing one without a path, a node of its
    task's tree, one per task, generator and node, same as a stored one. Returns every
    output -> its task, and the outputs marked missing."""
    pr = ck.pr
    output_task: dict[str, str] = dict(ck.existing.get("all_output_ids", {}))
    new_outputs: set[str] = set()
    # (task, generator, node) -> output id: the stored outputs of the tasks, then the new ones
    slots: dict[tuple[str, str, str], str] = dict(ck.existing.get("output_slots", {}))
    stored_slots = set(slots)
    for o in outputs:
        if o.output_id in new_outputs:
            pr.at(o.origin, "output_id", f"duplicate output_id {o.output_id!r}")
            continue
        new_outputs.add(o.output_id)
        if o.task_id not in task_checklist:
            variant = o.meta.get("text_variant")
            pr.at(o.origin, "task_id", f"unknown task {o.task_id!r}" + (
                f" (the original of its {variant} variant: import the original tasks first, "
                "or in the same bundle)" if variant else ""))
            continue
        if o.missing and o.path is not None:
            pr.at(o.origin, "path", "an output marked missing cannot have a path")
        node = _node_problem(pr, o, tree_nodes)
        if node is not None:
            slot = (o.task_id, o.generator, node + variant_suffix(o.meta))
            holder = slots.setdefault(slot, o.output_id)
            if holder != o.output_id:
                where = (f" (output {holder!r}, already in the database)" if slot in stored_slots
                         else f" (output {holder!r})")
                if o.meta.get("text_variant") is not None:
                    pr.at(o.origin, "meta.text_variant", f"a second output of {o.generator!r} for "
                          f"the {o.meta['text_variant']} variant of task {o.task_id!r}{where}")
                elif o.meta.get("node") is None:
                    pr.at(o.origin, "generator", f"a second output of {o.generator!r} for "
                          f"task {o.task_id!r}{where}")
                else:
                    pr.at(o.origin, "meta.node", f"a second output of {o.generator!r} for "
                          f"node {node!r} of task {o.task_id!r}{where}")
        old = ck.existing["outputs"].get(o.output_id)
        if old is not None:
            diff = _first_difference(_output_row(o), old)
            if diff:
                pr.at(o.origin, diff,
                      f"differs from output {o.output_id!r} already in the database")
            ck.unchanged["outputs"] += 1
            continue
        output_task[o.output_id] = o.task_id
        ck.out.outputs.append(o)
    missing_outputs = {o.output_id for o in outputs if o.missing}
    missing_outputs |= {k for k, v in ck.existing["outputs"].items() if v.get("missing")}
    return output_task, missing_outputs


def _check_judgments(ck: _Check, judgments: list[Judgment], targets: _Targets,
                     judges: dict[str, dict[str, Any]]) -> None:
    """Judgments: one per judge, output and question or criterion; a known target and
    judge; the parse status agrees with the answer; a yes/no answer or a score on the
    judge's (else the criterion's) scale; same as a stored one.

    The hot path of big imports: a judgment that passes every check on its face (new, of
    a known judge, a yes/no answer to a question of its output's checklist or a score
    inside its scale) is kept at once; any other goes through :func:`_check_judgment`,
    which finds what is wrong and says so."""
    pr = ck.pr
    old_judgments = ck.existing.get("judgments", {})
    seen_keys: set[tuple[Any, ...]] = set()
    seen, keep = seen_keys.add, ck.out.judgments.append
    question_checklist, criteria = targets.question_checklist, targets.criteria
    task_checklist = targets.task_checklist
    output_checklist = {o: task_checklist.get(t) for o, t in targets.output_task.items()}
    scales: dict[tuple[str, str], tuple[float, float] | None] = {}
    for j in judgments:
        key = (j.judge, j.output_id, j.question_id, j.criterion)
        if (key not in seen_keys and (not old_judgments or key not in old_judgments)
                and j.parse_status == "ok" and j.judge in judges):
            qid, crit, score = j.question_id, j.criterion, j.score
            if qid is not None:
                checklist = question_checklist.get(qid)
                if (crit is None and score is None and j.answer in YES_NO
                        and checklist is not None
                        and checklist == output_checklist.get(j.output_id)):
                    seen(key)
                    keep(j)
                    continue
            elif (crit is not None and j.answer is None and score is not None
                  and crit in criteria and j.output_id in output_checklist):
                pair = (j.judge, crit)
                if pair not in scales:
                    found = _judgment_scale(judges[j.judge], crit, criteria[crit])
                    scales[pair] = None if found is None else found[:2]
                scale = scales[pair]
                if scale is None or scale[0] <= float(score) <= scale[1]:
                    seen(key)
                    keep(j)
                    continue
        if pr.full:
            break
        if key in seen_keys:
            pr.at(j.origin, "output_id", "a second answer of this judge for the same output and "
                  f"{'question' if j.question_id else 'criterion'}")
            continue
        seen(key)
        _check_judgment(ck, j, targets, judges.get(j.judge))
        old = old_judgments.get(key)
        if old is not None:
            diff = _first_difference(_judgment_row(j), old)
            if diff:
                pr.at(j.origin, diff, "differs from this judge's answer already in the database")
            ck.unchanged["judgments"] += 1
            continue
        keep(j)


def _judgment_scale(judge: Mapping[str, Any], name: str, criterion: Mapping[str, Any] | None
                    ) -> tuple[float, float, str] | None:
    """The scale a judge's score on criterion ``name`` must lie on, and how to fix one
    outside it: the judge's declared scale, else none for an automatic metric (its own
    units), else the criterion's (``criterion`` None: unknown, reported elsewhere)."""
    if judge.get("scale_min") is not None:
        return judge["scale_min"], judge["scale_max"], "the judge's declared scale"
    if judge.get("kind") == "metric" or criterion is None:
        return None
    return (criterion["min"], criterion["max"],
            f"criterion {name!r}'s scale; if this judge scores on another scale, declare it "
            "in bundle.json (judges[].scale: [min, max]), or give an automatic metric kind "
            "\"metric\" (its own units)")


def _check_judgment(ck: _Check, j: Judgment, targets: _Targets,
                    judge: Mapping[str, Any] | None) -> None:
    """Every check of one judgment on its own (the target, the judge, the parse status,
    the answer or the score on its scale), each problem reported."""
    pr = ck.pr
    _check_target(pr, j, targets, "judge")
    if judge is None:
        pr.at(j.origin, "judge", f"unknown judge {j.judge!r} (declare it in bundle.json)")
    if j.parse_status not in ("ok", "unparsed"):
        pr.at(j.origin, "parse_status", f"must be 'ok' or 'unparsed', not {j.parse_status!r}")
    elif j.parse_status == "unparsed" and (j.answer is not None or j.score is not None):
        pr.at(j.origin, "parse_status", "'unparsed' means the judge's text could not be "
              f"read: '{'answer' if j.answer is not None else 'score'}' must then be null")
    if j.question_id is not None:
        if j.score is not None:
            pr.at(j.origin, "score", "a question is answered with 'answer', not 'score'")
        if j.answer is None and j.parse_status == "ok":
            pr.at(j.origin, "answer", "missing (or set parse_status to 'unparsed')")
        elif j.answer is not None and j.answer not in YES_NO:
            pr.at(j.origin, "answer", f"must be 'yes' or 'no', not {j.answer!r}")
    elif j.criterion is not None:
        if j.answer is not None:
            pr.at(j.origin, "answer", "a criterion is scored with 'score', not 'answer'")
        if j.score is None:
            if j.parse_status == "ok":
                pr.at(j.origin, "score", "missing (or set parse_status to 'unparsed')")
        else:
            scale = _judgment_scale(judge or {}, j.criterion, targets.criteria.get(j.criterion))
            if scale is not None:
                msg = _on_scale(float(j.score), scale[0], scale[1], None)
                if msg:
                    pr.at(j.origin, "score", f"{msg} ({scale[2]})")


def _check_annotations(ck: _Check, annotations: list[Annotation], targets: _Targets,
                       missing_outputs: set[str]) -> None:
    """Annotations: a known target that is not missing, an allowed answer or a score on
    the criterion's scale; one already stored (same time, answer, score and note) is
    counted as unchanged."""
    pr = ck.pr
    old_annotations = ck.existing.get("annotations", {})
    for a in annotations:
        if pr.full:
            break
        _check_target(pr, a, targets, "annotator")
        if a.output_id in missing_outputs:
            pr.at(a.origin, "output_id", f"output {a.output_id!r} is missing: nothing to annotate")
        if a.question_id is not None:
            if a.answer not in HUMAN_ANSWERS:
                pr.at(a.origin, "answer", f"must be one of {', '.join(HUMAN_ANSWERS)}, "
                      f"not {a.answer!r}")
            if a.score is not None:
                pr.at(a.origin, "score", "a question is answered with 'answer', not 'score'")
        elif a.criterion is not None:
            crit = targets.criteria.get(a.criterion)
            if a.score is None:
                pr.at(a.origin, "score", "missing")
            elif crit is not None:
                msg = _on_scale(float(a.score), crit["min"], crit["max"], crit["step"])
                if msg:
                    pr.at(a.origin, "score", msg)
        key = (a.annotator, a.output_id, a.question_id, a.criterion)
        history = old_annotations.get(key, [])
        if any(
            (a.created_at is None or h["created_at"] == a.created_at)
            and h["answer"] == a.answer
            and h["score"] == (None if a.score is None else float(a.score)) and h["note"] == a.note
            for h in history
        ):
            ck.unchanged["annotations"] += 1
            continue
        ck.out.annotations.append(a)


def _check_work(ck: _Check, project: ProjectData, targets: _Targets) -> None:
    """The human-work files (:func:`annotation.formats.human_work.check`): known targets,
    the ``supersedes`` histories, rows already stored counted as unchanged."""
    images = dict(ck.existing.get("task_images", {}))
    for task_id in {i.task_id for i in project.images}:
        images[task_id] = sum(1 for i in project.images if i.task_id == task_id)
    hashes = dict(ck.existing.get("image_hashes", {}))
    for image in project.images:
        hashes[(image.task_id, image.index)] = image.file.sha256
    stored = ck.existing.get("pairs", {})
    pair_ids = frozenset({*stored.get("pairs", {}), *(p.pair_id for p in project.pairs)})
    ranking_ids = frozenset({*stored.get("rankings", {}),
                             *(r.ranking_id for r in project.rankings)})
    known = human_work.Known(targets.output_task, images, targets.task_checklist,
                             targets.question_checklist, hashes, frozenset(targets.criteria),
                             pair_ids, ranking_ids)
    checked = human_work.check(ck.pr, project.work, ck.existing.get("work", {}), known)
    ck.out.work = checked.rows
    ck.unchanged.update(checked.unchanged)


def _check_pairs(ck: _Check, project: ProjectData, targets: _Targets,
                 judges: dict[str, dict[str, Any]]) -> None:
    """Pairs, rankings and their answers (:func:`annotation.formats.pairs.check`; issue
    #17): known outputs, tasks, judges and items, rows already stored counted as
    unchanged."""
    checked, unchanged = pairs.check(ck.pr, project, ck.existing, targets.output_task,
                                     set(targets.task_checklist), judges)
    ck.out.pairs = checked.pairs
    ck.out.rankings = checked.rankings
    ck.out.pair_answers = checked.pair_answers
    ck.out.ranking_answers = checked.ranking_answers
    ck.unchanged.update(unchanged)


def _dependency_cycles(questions: list[Question]) -> list[tuple[Question, list[str]]]:
    """Each cycle of ``depends_on`` between questions of one checklist (a question that
    depends on itself is reported on its own): ``(first question, [q1, q2, ..., q1])``."""
    by_id: dict[str, Question] = {}
    for q in questions:
        by_id.setdefault(q.question_id, q)

    def parents(q: Question) -> list[str]:
        return [p for p in q.depends_on if p != q.question_id and p in by_id
                and by_id[p].checklist_id == q.checklist_id]

    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[tuple[Question, list[str]]] = []
    for start in by_id:
        if start in state:
            continue
        state[start] = 1
        path = [start]
        stack = [iter(parents(by_id[start]))]
        while stack:
            for parent in stack[-1]:
                if parent not in state:
                    state[parent] = 1
                    path.append(parent)
                    stack.append(iter(parents(by_id[parent])))
                    break
                if state[parent] == 1:
                    cycle = path[path.index(parent):] + [parent]
                    cycles.append((by_id[cycle[0]], cycle))
            else:
                state[path.pop()] = 2
                stack.pop()
    return cycles


def _node_problem(pr: Problems, o: Output, tree_nodes: dict[str, frozenset[str] | None]
                  ) -> str | None:
    """Check an output's ``meta.node`` against its task's tree; return the node it fills
    (:data:`ROOT` for an ordinary output), None when ``meta.node`` is not a string."""
    node = o.meta.get("node")
    if node is None:
        return ROOT
    if not isinstance(node, str) or not node.strip():
        pr.at(o.origin, "meta.node", f"expected a node id of the task's diagnostic tree (a "
              f"string), got {_got(node)}")
        return None
    if o.task_id not in tree_nodes:  # a stored task whose meta was not looked up
        return node
    nodes = tree_nodes[o.task_id]
    if nodes is None:
        pr.at(o.origin, "meta.node", f"task {o.task_id!r} has no diagnostic tree "
              "(meta.formula or meta.tree_nodes) for a node output")
    elif nodes and node not in nodes:
        listed = ", ".join(sorted(nodes)[:12]) + (", ..." if len(nodes) > 12 else "")
        pr.at(o.origin, "meta.node", f"{_got(node)} is not a node of the tree of task "
              f"{o.task_id!r} (its nodes: {listed})")
    return node


def existing_tree_rows(store: Store, project: ProjectData) -> dict[str, Any]:
    """What :func:`check_project` needs of the database for ``meta.node`` and for one
    output per task, generator and node, added to :meth:`Store.existing_rows`:
    ``output_slots`` ``{(task, generator, node): output_id}`` of the stored outputs of the
    tasks the import's outputs name, and ``task_meta`` ``{task: (checklist_id, meta)}`` of
    the stored tasks its node outputs name that it does not bring itself."""
    if not project.outputs:
        return {}
    tasks = {o.task_id for o in project.outputs}
    slots: dict[tuple[str, str, str], str] = {}
    stored = store.outputs_df()
    for output_id, task_id, generator, meta in zip(stored.output_id, stored.task_id,
                                                   stored.generator, stored.meta, strict=True):
        if task_id not in tasks:
            continue
        slot = (task_id, generator, output_node(meta) + variant_suffix(meta))
        slots.setdefault(slot, output_id)
    task_meta: dict[str, tuple[str, dict[str, Any]]] = {}
    wanted = ({o.task_id for o in project.outputs if o.meta.get("node") is not None}
              - {t.task_id for t in project.tasks})
    if wanted:
        stored = store.tasks_df()
        for task_id, checklist_id, meta in zip(stored.task_id, stored.checklist_id,
                                               stored.meta, strict=True):
            if task_id in wanted:
                task_meta[task_id] = (checklist_id, json.loads(meta) if meta else {})
    return {"output_slots": slots, "task_meta": task_meta}


def _check_target(pr: Problems, rec: Judgment | Annotation, targets: _Targets, who: str
                  ) -> None:
    """The output, question and criterion of one answer exist and belong together."""
    output_task, task_checklist = targets.output_task, targets.task_checklist
    question_checklist, criteria = targets.question_checklist, targets.criteria
    task_id = output_task.get(rec.output_id)
    if task_id is None:
        pr.at(rec.origin, "output_id", f"unknown output {rec.output_id!r}")
    if (rec.question_id is None) == (rec.criterion is None):
        pr.at(rec.origin, "question_id", "give exactly one of 'question_id' and 'criterion'")
        return
    if rec.question_id is not None:
        checklist = question_checklist.get(rec.question_id)
        if checklist is None:
            pr.at(rec.origin, "question_id", f"unknown question {rec.question_id!r}")
        elif task_id is not None and task_checklist.get(task_id) != checklist:
            pr.at(rec.origin, "question_id",
                  f"question {rec.question_id!r} is not in the checklist of task {task_id!r}")
    elif rec.criterion not in criteria:
        pr.at(rec.origin, "criterion", f"unknown criterion {rec.criterion!r}")


# ======================================================================================
# Reserved meta keys: VIF-Bench visual instructions and conflict pre-labels
#
# Only these keys are checked, and only when present; every other meta key stays free.
# Each check returns ``[(field, message)]`` with the field relative to the record (e.g.
# ``meta.arrows[0].start``); the reader adds its file and line.

#: Fields of an image's ``meta.prelabel``. ``lighting_distinctive`` is an accepted alias
#: of the canonical ``light_distinctive`` (the rules in :mod:`annotation.vif.conflicts` read
#: both).
PRELABEL_FIELDS = ("yaw", "yaw_reliable", "light_distinctive", "lighting_distinctive",
                   "wind_responsive", "pose_distinctive", "notes", "source")
PRELABEL_FLAGS = ("yaw_reliable", "light_distinctive", "lighting_distinctive",
                  "wind_responsive", "pose_distinctive")
#: Keys of a task's ``meta.conflicts`` (the published automatic labels).
CONFLICT_LABEL_KEYS = tuple(CONFLICT_KEYS.values())
ARROW_KINDS = ("wind", "light")
MAX_YAW = 360.0
_COLOR = re.compile(r"#[0-9A-Fa-f]{6}")

Found = list[tuple[str, str]]


def _got(value: Any) -> str:
    """A value for an error message: JSON for scalars, the type for containers."""
    if isinstance(value, Mapping):
        return "an object"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if isinstance(value, list | tuple):
        return text if len(text) <= 40 else f"a list of {len(value)}"
    return text if len(text) <= 40 else text[:36] + "...\""


def _is_num(value: Any) -> bool:
    """A finite number (an integer too big for a float is not: ``float`` overflows)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _unit_point(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 2
            and all(_is_num(v) and 0.0 <= v <= 1.0 for v in value))


def _flag_problem(found: Found, fld: str, value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        found.append((fld, f"expected true, false or null, got {_got(value)}"))


def _yaw_problem(found: Found, fld: str, value: Any, *, nullable: bool) -> None:
    if value is None and nullable:
        return
    if not _is_num(value):
        found.append((fld, f"expected a number of degrees, got {_got(value)}"))
    elif abs(value) > MAX_YAW:
        found.append((fld, f"{value:g} degrees is outside -360..360"))


def _text_problem(found: Found, fld: str, value: Any, *, required: bool = True) -> None:
    if value is None and not required:
        return
    if not isinstance(value, str) or not value.strip():
        found.append((fld, f"expected a non-empty string, got {_got(value)}"))


def prelabel_problems(value: Any, prefix: str = "meta.prelabel") -> Found:
    """Problems of one image's ``meta.prelabel`` (``prefix`` names it in messages).

    Allowed: ``yaw`` (degrees, a finite number in -360..360, or null), ``yaw_reliable``,
    ``light_distinctive`` (alias ``lighting_distinctive``), ``wind_responsive``,
    ``pose_distinctive`` (true, false or null), ``notes`` and ``source`` (strings).
    """
    found: Found = []
    if not isinstance(value, Mapping):
        return [(prefix, f"expected an object, got {_got(value)}")]
    for key in value:
        if key not in PRELABEL_FIELDS:
            found.append((f"{prefix}.{key}", "unknown pre-label field (allowed: "
                          + ", ".join(PRELABEL_FIELDS) + ")"))
    if "yaw" in value:
        _yaw_problem(found, f"{prefix}.yaw", value["yaw"], nullable=True)
    for key in PRELABEL_FLAGS:
        if key in value:
            _flag_problem(found, f"{prefix}.{key}", value[key])
    for key in ("notes", "source"):
        if key in value and not isinstance(value[key], str):
            found.append((f"{prefix}.{key}", f"expected a string, got {_got(value[key])}"))
    if ("light_distinctive" in value and "lighting_distinctive" in value
            and value["light_distinctive"] != value["lighting_distinctive"]):
        found.append((f"{prefix}.lighting_distinctive",
                      "disagrees with light_distinctive (lighting_distinctive is an alias: "
                      "give only light_distinctive)"))
    return found


def _items(found: Found, fld: str, value: Any, *, single_ok: bool = False
           ) -> list[tuple[str, Mapping[str, Any]]]:
    """``(field, entry)`` of a list of objects (or one object when ``single_ok``)."""
    if single_ok and isinstance(value, Mapping):
        return [(fld, value)]
    if not isinstance(value, list):
        what = "an object or a list of objects" if single_ok else "a list of objects"
        found.append((fld, f"expected {what}, got {_got(value)}"))
        return []
    out = []
    for i, item in enumerate(value):
        if isinstance(item, Mapping):
            out.append((f"{fld}[{i}]", item))
        else:
            found.append((f"{fld}[{i}]", f"expected an object, got {_got(item)}"))
    return out


def _box_problem(found: Found, fld: str, box: Any) -> None:
    if not (isinstance(box, list) and len(box) == 4 and all(_is_num(v) for v in box)):
        found.append((fld, f"expected [x0, y0, x1, y1], four numbers in 0..1, got {_got(box)}"))
        return
    if not all(0.0 <= v <= 1.0 for v in box):
        found.append((fld, f"coordinates are normalized: each must be in 0..1, got {box}"))
    elif not (box[0] < box[2] and box[1] < box[3]):
        found.append((fld, f"needs x0 < x1 and y0 < y1 (top-left, then bottom-right), "
                     f"got {box}"))


def _index_problem(found: Found, fld: str, value: Any, n_images: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        found.append((fld, f"expected an image index (a whole number), got {_got(value)}"))
    elif not 0 <= value < n_images:
        found.append((fld, f"Image_{value} does not exist: the task has {n_images} "
                     f"image{'s' if n_images != 1 else ''}"))


def task_meta_problems(meta: Mapping[str, Any], n_images: int) -> Found:
    """Problems of the reserved keys of one task's ``meta`` (``n_images``: its image count).

    Checked when present: ``conflicts`` (the four ``*_conflict`` keys, true/false/null),
    ``orientation`` (``[{subject, yaw, pitch?, anchor?}]``), ``arrows`` (``[{kind: wind |
    light, start: [x, y], end: [x, y]}]``), ``layout`` (``[{box: [x0, y0, x1, y1], subject?,
    image?, color?, label?}]`` or ``{name: box}``), ``pose`` (``{subject, image}`` or a list
    of them) and ``visual_instruction_types`` (a list of strings). Coordinates are
    normalized to 0..1; ``image`` is an index into the task's own images. Other keys inside
    the entries are kept as they are. TRACE-Bench's ``references`` (term -> image index):
    :func:`annotation.trace.prompts.reference_problems`.
    """
    found: Found = []
    if "conflicts" in meta:
        value = meta["conflicts"]
        if not isinstance(value, Mapping):
            found.append(("meta.conflicts", f"expected an object, got {_got(value)}"))
        else:
            for key, flag in value.items():
                fld = f"meta.conflicts.{key}"
                if key not in CONFLICT_LABEL_KEYS:
                    found.append((fld, "unknown conflict label (allowed: "
                                  + ", ".join(CONFLICT_LABEL_KEYS) + ")"))
                else:
                    _flag_problem(found, fld, flag)
    if "orientation" in meta:
        for fld, item in _items(found, "meta.orientation", meta["orientation"]):
            _text_problem(found, f"{fld}.subject", item.get("subject"))
            _yaw_problem(found, f"{fld}.yaw", item.get("yaw"), nullable=False)
            if item.get("pitch") is not None and not _is_num(item["pitch"]):
                found.append((f"{fld}.pitch",
                              f"expected a number of degrees, got {_got(item['pitch'])}"))
            if item.get("anchor") is not None and not _unit_point(item["anchor"]):
                found.append((f"{fld}.anchor", "expected [x, y], two numbers in 0..1, got "
                              f"{_got(item['anchor'])}"))
    if "arrows" in meta:
        for fld, item in _items(found, "meta.arrows", meta["arrows"]):
            kind = item.get("kind")
            if kind not in ARROW_KINDS:
                found.append((f"{fld}.kind", f"expected \"wind\" or \"light\", got {_got(kind)}"))
            for end in ("start", "end"):
                if not _unit_point(item.get(end)):
                    found.append((f"{fld}.{end}", "expected [x, y], two numbers in 0..1, got "
                                  f"{_got(item.get(end))}"))
            if _unit_point(item.get("start")) and item.get("start") == item.get("end"):
                found.append((f"{fld}.end", "must differ from start (an arrow needs a length)"))
    if "layout" in meta:
        layout = meta["layout"]
        if isinstance(layout, Mapping):  # the compact {name: [x0, y0, x1, y1]} form
            for name, box in layout.items():
                _box_problem(found, f"meta.layout.{name}", box)
        else:
            for fld, item in _items(found, "meta.layout", layout):
                _box_problem(found, f"{fld}.box", item.get("box"))
                for key in ("subject", "label"):
                    if item.get(key) is not None and not isinstance(item[key], str):
                        found.append((f"{fld}.{key}",
                                      f"expected a string, got {_got(item[key])}"))
                if item.get("image") is not None:
                    _index_problem(found, f"{fld}.image", item["image"], n_images)
                color = item.get("color")
                if color is not None and not (isinstance(color, str)
                                              and _COLOR.fullmatch(color)):
                    found.append((f"{fld}.color", f"expected \"#RRGGBB\", got {_got(color)}"))
    if "pose" in meta:
        for fld, item in _items(found, "meta.pose", meta["pose"], single_ok=True):
            _text_problem(found, f"{fld}.subject", item.get("subject"))
            if "image" not in item:
                found.append((f"{fld}.image", "missing: the index of the pose reference image"))
            else:
                _index_problem(found, f"{fld}.image", item["image"], n_images)
    if "visual_instruction_types" in meta:
        types = meta["visual_instruction_types"]
        if not (isinstance(types, list) and all(isinstance(t, str) for t in types)):
            found.append(("meta.visual_instruction_types",
                          f"expected a list of strings, got {_got(types)}"))
    found += reference_problems(meta, n_images)  # TRACE-Bench: term -> image
    return found


# ======================================================================================
# Reserved meta keys: TRACE-Bench diagnostic trees (annotation/trace/trees.py)

MAX_TREE_RULE = 4


def _formula_problem(text: str) -> str | None:
    """Why ``text`` is not a formula (:func:`annotation.trace.formula.parse`), or None."""
    try:
        parse(text)
    except FormulaError as exc:
        return str(exc)
    except RecursionError:
        return "nested too deeply"
    return None


def tree_problems(meta: Mapping[str, Any], checklist_id: str,
                  question_checklist: Mapping[str, str]
                  ) -> tuple[Found, frozenset[str] | None]:
    """Problems of a task's ``meta.formula`` and ``meta.tree_nodes``, and its tree's node ids.

    ``meta.formula`` must parse. ``meta.tree_nodes``, a list of ``{id, parent, rule,
    removed, formula?, prompt?, questions?}``: ids unique non-empty strings; exactly one
    root (``parent`` null) whose id is ``N0``; every other parent an id of the list, and no
    cycle of parents; ``rule`` a whole number 1..4 (null for the root); ``removed`` a list of
    strings; ``formula``, when given, parses (when not, the node must be a node of the tree
    computed from ``meta.formula``, which supplies it); ``prompt`` a string; ``questions`` a
    list of question ids of the task's checklist (``question_checklist``: question id ->
    checklist id). Other keys of a node are kept as they are.

    The node ids are those of ``tree_nodes``, else of ``decompose(meta.formula)``; None
    when the task has no tree; an empty set when the tree is too broken to name its nodes.
    """
    found: Found = []
    computed: frozenset[str] | None = None
    formula = meta.get("formula")
    if formula is not None:
        if not isinstance(formula, str):
            found.append(("meta.formula", f"expected a formula (a string), got {_got(formula)}"))
        else:
            message = _formula_problem(formula)
            if message is not None:
                found.append(("meta.formula", message))
            else:
                try:
                    computed = frozenset(n.id for n in decompose(formula))
                except (ValueError, RecursionError) as exc:  # pragma: no cover - parse() passed
                    found.append(("meta.formula", f"cannot decompose it: {exc}"))
    entries = meta.get("tree_nodes")
    if entries is None:
        if formula is None:
            return found, None
        return found, computed if computed is not None else frozenset()
    if not isinstance(entries, list) or not entries:
        found.append(("meta.tree_nodes", "expected a non-empty list of nodes {id, parent, rule, "
                      f"removed, formula?, prompt?, questions?}}, got {_got(entries)}"))
        return found, frozenset()
    items = _items(found, "meta.tree_nodes", entries)
    ids: dict[str, str] = {}  # id -> its field
    named = len(items) == len(entries)
    for fld, entry in items:
        nid = entry.get("id")
        if not isinstance(nid, str) or not nid.strip():
            found.append((f"{fld}.id", f"expected a non-empty string, got {_got(nid)}"))
            named = False
        elif nid in ids:
            found.append((f"{fld}.id", f"duplicate node id {_got(nid)} (first: {ids[nid]})"))
            named = False
        else:
            ids[nid] = fld
    parent_of: dict[str, str] = {}
    roots: list[tuple[str, Any]] = []
    for fld, entry in items:
        nid = entry.get("id")
        parent = entry.get("parent")
        if "parent" not in entry:
            found.append((f"{fld}.parent", "missing: the id of the parent node (null for the "
                          "root)"))
        elif parent is None:
            roots.append((fld, nid))
        elif not isinstance(parent, str):
            found.append((f"{fld}.parent", f"expected a node id or null, got {_got(parent)}"))
        elif parent == nid:
            found.append((f"{fld}.parent", "a node cannot be its own parent"))
        elif parent not in ids:
            found.append((f"{fld}.parent", f"unknown node {_got(parent)}"))
        elif isinstance(nid, str):
            parent_of[nid] = parent
        rule = entry.get("rule")
        if "parent" in entry and parent is None:
            if rule is not None:
                found.append((f"{fld}.rule", f"must be null for the root, got {_got(rule)}"))
        elif not (isinstance(rule, int) and not isinstance(rule, bool)
                  and 1 <= rule <= MAX_TREE_RULE):
            found.append((f"{fld}.rule", "expected the rule that made the node, a whole number "
                          f"1..{MAX_TREE_RULE}, got {_got(rule)}"))
        removed = entry.get("removed")
        if not (isinstance(removed, list) and all(isinstance(r, str) for r in removed)):
            found.append((f"{fld}.removed", "expected a list of strings (what the rule removed; "
                          f"[] for the root), got "
                          f"{'nothing' if 'removed' not in entry else _got(removed)}"))
        node_formula = entry.get("formula")
        if node_formula is not None:
            if not isinstance(node_formula, str):
                found.append((f"{fld}.formula", f"expected a formula (a string), got "
                              f"{_got(node_formula)}"))
            elif (message := _formula_problem(node_formula)) is not None:
                found.append((f"{fld}.formula", message))
        elif isinstance(nid, str) and (computed is None or nid not in computed):
            source = ("the task has no meta.formula" if formula is None else
                      "the tree of meta.formula has no such node" if computed is not None else
                      "meta.formula does not parse")
            found.append((f"{fld}.formula", f"missing, and {source} to take it from"))
        prompt = entry.get("prompt")
        if prompt is not None and not isinstance(prompt, str):
            found.append((f"{fld}.prompt", f"expected a string, got {_got(prompt)}"))
        questions = entry.get("questions")
        if questions is not None:
            if not (isinstance(questions, list) and all(isinstance(q, str) for q in questions)):
                found.append((f"{fld}.questions", "expected a list of question ids, got "
                              f"{_got(questions)}"))
            else:
                for k, qid in enumerate(questions):
                    if question_checklist.get(qid) != checklist_id:
                        found.append((f"{fld}.questions[{k}]", f"{_got(qid)} is not a question "
                                      f"of the task's checklist {checklist_id!r}"))
    if len(roots) != 1:
        names = ", ".join(_got(nid) for _, nid in roots)
        found.append(("meta.tree_nodes", "expected exactly one root (a node whose parent is "
                      f"null), found {len(roots)}{': ' + names if roots else ''}"))
    elif roots[0][1] != ROOT:
        found.append((f"{roots[0][0]}.id", f"the root's id must be {ROOT!r} (outputs "
                      f"without meta.node are the root's), got {_got(roots[0][1])}"))
    done: set[str] = set()
    for start in ids:  # follow the parents up: a walk that comes back is a cycle
        path: list[str] = []
        on_path: dict[str, int] = {}
        cur: str | None = start
        while cur is not None and cur not in done and cur not in on_path:
            on_path[cur] = len(path)
            path.append(cur)
            cur = parent_of.get(cur)
        if cur is not None and cur in on_path:
            cycle = path[on_path[cur]:] + [cur]
            found.append((f"{ids[cur]}.parent", "cycle of parents: " + " -> ".join(cycle)
                          + " (each is the parent of the one before)"))
        done.update(path)
    return found, frozenset(ids) if named else frozenset()
