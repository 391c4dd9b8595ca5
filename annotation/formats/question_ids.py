"""Question ids that are unique only within their checklist, made unique in the project.

Converters of real benchmark data number questions per prompt: the Davidsonian Scene
Graph questions of TIFA-style and DSG-style checklists ("Davidsonian Scene Graph:
Improving Reliability in Fine-Grained Evaluation for Text-to-Image Generation", Sec. 3)
are ``1..n`` in every prompt, and ``depends_on`` names those numbers. The store keys a
question by one id across the project (answers, judgments and tree nodes name it), so an
import stores the questions of a checklist whose ids another checklist also uses (in the
same import or already stored) as ``<checklist_id>/<question_id>``, and rewrites every
reference to them: the
checklist's ``depends_on``, the judgments and annotations of outputs of that checklist's
tasks, and the ``questions`` of a diagnostic tree's nodes (``meta.tree_nodes``).

The rule is deterministic and idempotent: a question already stored keeps its stored id
(whether plain or qualified), so importing the same bundle twice, or a later bundle with
judgments only, resolves to the same rows. A reference may use the id as the bundle
numbered it or the stored (qualified) id. Ids unique across the project are never
changed, so bundles that worked before import exactly as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from annotation.records import Annotation, Judgment, Problem, ProjectData, Task

SEPARATOR = "/"
"""Between the checklist id and the bundle's question id in a qualified id."""


def qualified_id(checklist_id: str, question_id: str) -> str:
    """The project-wide id of question ``question_id`` of checklist ``checklist_id``."""
    return f"{checklist_id}{SEPARATOR}{question_id}"


def question_id_map(project: ProjectData, stored: Mapping[str, str]
                    ) -> dict[tuple[str, str], str]:
    """(checklist, id as the bundle wrote it) -> the id to store or to resolve to, for
    every id that is not stored as written. ``stored`` maps each stored question id to its
    checklist. Empty when every id is unique across the project (the usual case).

    A checklist with a new question whose id another checklist also uses (in ``project``
    or stored) has all its new questions stored qualified, so a checklist's ids follow one
    pattern; questions already stored keep their stored id."""
    used_by: dict[str, set[str]] = {}
    for q in project.questions:
        used_by.setdefault(q.question_id, set()).add(q.checklist_id)
    renamed: dict[tuple[str, str], str] = {}
    for qid, checklist in stored.items():  # stored qualified questions, by their number
        prefix = checklist + SEPARATOR
        if qid.startswith(prefix) and stored.get(qid[len(prefix):]) != checklist:
            renamed[(checklist, qid[len(prefix):])] = qid
    new = [q for q in project.questions if stored.get(q.question_id) != q.checklist_id
           and (q.checklist_id, q.question_id) not in renamed]
    clashing = {q.checklist_id for q in new
                if used_by[q.question_id] - {q.checklist_id}
                or stored.get(q.question_id, q.checklist_id) != q.checklist_id}
    for q in new:
        if q.checklist_id in clashing:
            renamed[(q.checklist_id, q.question_id)] = qualified_id(q.checklist_id,
                                                                   q.question_id)
    return renamed


def qualify_question_ids(project: ProjectData, stored: Mapping[str, str],
                         stored_tasks: Mapping[str, str] | None = None,
                         stored_outputs: Mapping[str, str] | None = None) -> ProjectData:
    """``project`` with question ids unique across the project (see the module text).

    ``stored`` maps stored question ids to their checklist, ``stored_tasks`` stored tasks
    to their checklist and ``stored_outputs`` stored outputs to their task (answers may
    name outputs and tasks imported before).
    Returns ``project`` itself when nothing needs renaming; otherwise a copy with the
    questions, their ``depends_on``, the answers' ``question_id`` and the tree nodes'
    ``questions`` rewritten, and one warning that says how ids were stored.
    """
    renamed = question_id_map(project, stored)
    if not renamed:
        return project
    bundle_keys = {(q.checklist_id, q.question_id) for q in project.questions}
    new_questions = [key for key in renamed if key in bundle_keys
                     and stored.get(renamed[key]) is None]

    def ref(checklist: str | None, qid: str) -> str:
        return qid if checklist is None else renamed.get((checklist, qid), qid)

    def answer_ref(output_id: str, qid: str | None) -> str | None:
        if qid is None:
            return None
        task = output_task.get(output_id)
        return ref(task_checklist.get(task) if task is not None else None, qid)

    task_checklist = {**(stored_tasks or {}),
                      **{t.task_id: t.checklist_id for t in project.tasks}}
    output_task = {**(stored_outputs or {}), **{o.output_id: o.task_id for o in project.outputs}}
    questions = [
        replace(q, question_id=ref(q.checklist_id, q.question_id),
                depends_on=[ref(q.checklist_id, d) for d in q.depends_on])
        for q in project.questions
    ]
    judgments = [_answer(j, answer_ref(j.output_id, j.question_id)) for j in project.judgments]
    annotations = [_answer(a, answer_ref(a.output_id, a.question_id))
                   for a in project.annotations]
    tasks = [_tree_questions(t, ref) for t in project.tasks]
    warnings = list(project.warnings)
    if new_questions:
        wanted = set(new_questions)
        first = next(q for q in project.questions
                     if (q.checklist_id, q.question_id) in wanted)
        example = renamed[(first.checklist_id, first.question_id)]
        file, line = first.origin
        warnings.append(Problem(
            file, line, "question_id",
            f"{len(new_questions):,} question ids are also used by another checklist: each "
            f"is stored as '<checklist_id>{SEPARATOR}<question_id>' (e.g. {example!r}); "
            "depends_on, judgments and annotations may name it either way"))
    return replace(project, questions=questions, judgments=judgments,
                   annotations=annotations, tasks=tasks, warnings=warnings)


def _answer(record: Judgment | Annotation, qid: str | None) -> Any:
    return record if qid == record.question_id else replace(record, question_id=qid)


def _tree_questions(task: Task, ref: Any) -> Task:
    """``task`` with the question ids of its ``meta.tree_nodes`` resolved in its checklist
    (anything malformed is left for the validator to report)."""
    nodes = task.meta.get("tree_nodes")
    if not isinstance(nodes, list):
        return task
    changed = False
    out = []
    for node in nodes:
        ids = node.get("questions") if isinstance(node, dict) else None
        if isinstance(ids, list) and all(isinstance(q, str) for q in ids):
            new = [ref(task.checklist_id, q) for q in ids]
            if new != ids:
                node = {**node, "questions": new}
                changed = True
        out.append(node)
    return replace(task, meta={**task.meta, "tree_nodes": out}) if changed else task


