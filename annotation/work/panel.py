"""The answer panel's contract: what each workflow asks, and what the browser is told.

The annotator's answers are typed into one panel (:mod:`annotation.ui.answer_panel`, a
Streamlit component that handles the keys in the browser). The panel shows a list of
*targets*, each a question with a few options and a key per option: a checklist question
(``Y`` / ``N`` / ``U``) or a rating (``1``..``9``, ``0`` = 10) on *Annotate outputs*, the
verdict on one conflict type (``A`` / ``D``) on *Verify conflict labels*. The browser is
given each target by its **position** in the list and never by its id (question ids,
criteria and conflict types stay on the server), so nothing it holds names a judge, a
generator, a pass answer or another person's answer (``tests/test_answer_panel.py``).

:func:`output_targets` (checklist and ratings of an output) and
:func:`annotation.work.verification.verdict_targets` (a task's conflict types) build the
list: the page (to draw the panel) and :mod:`annotation.work.deliveries` (to turn a
delivered ``target`` position back into a question) call the same function, so the two
always agree.
:func:`spec` is the JSON the browser gets.

Gating (DSG, "Davidsonian Scene Graph", Cho et al., ICLR 2024, Sec. 3) is in the spec as
``parents`` (positions of the questions a question depends on): the browser strikes out a
question whose parent it has answered "no" at once; the server applies the same rule
(:func:`annotation.work.checklist.applicable`) before it writes.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from annotation.store import Store, items
from annotation.store import project as project_rows
from annotation.work import checklist
from annotation.work.checklist import QuestionView

ANSWER_TEXT = {"yes": "Yes", "no": "No", "cant_tell": "Can't tell"}
QUESTION_KEYS = (("yes", "Y"), ("no", "N"), ("cant_tell", "U"))
#: the kinds of target: a checklist question, a criterion (rating), a conflict verdict, a
#: pairwise preference, the place of one output of a ranking (:mod:`annotation.work.compare`)
KINDS = ("q", "c", "v", "p", "r")


@dataclass(frozen=True)
class Option:
    """One answer a target can take: its stored ``value``, the button's ``label`` and its
    key (None: no key)."""

    value: str | float
    label: str
    key: str | None


@dataclass(frozen=True)
class PanelTarget:
    """One thing to answer in the panel. ``key`` (a question id, criterion or conflict
    type) stays on the server; the browser gets the rest."""

    kind: str
    key: str
    text: str
    options: tuple[Option, ...]
    heading: str | None = None
    caption: str | None = None
    parents: tuple[int, ...] = ()
    rubric: str | None = None


@dataclass(frozen=True)
class Command:
    """An action that changes the page (Submit, Back, Flag, ...): ``name``, the button's
    ``label`` and its key. The panel sends it through Streamlit (a rerun), after every
    answer before it is acknowledged."""

    name: str
    label: str
    key: str | None
    primary: bool = False


@dataclass(frozen=True)
class Panel:
    """What one panel shows: the visit it answers on, the targets with their stored
    answers (``values``, ``rows``: by position), the commands; ``submit`` names the
    command on Enter when every applicable target is answered (``ready`` overrides that
    test for workflows whose answers are outside the panel), ``enter`` a command on Enter
    that needs no answers (*Confirm my reading*)."""

    visit: int
    targets: tuple[PanelTarget, ...] = ()
    values: Mapping[int, Any] = field(default_factory=dict)
    rows: Mapping[int, int] = field(default_factory=dict)
    commands: tuple[Command, ...] = ()
    submit: str | None = None
    enter: str | None = None
    ready: bool | None = None
    reviewing: bool = False
    handled: int = 0
    notice: str | None = None
    hint: str | None = None


def _heading(q: QuestionView) -> str | None:
    return " · ".join(p for p in (q.operator, q.target) if p) or None


def annotation_targets(questions: Sequence[QuestionView],
                       criteria: Sequence[tuple[Any, ...]]) -> list[PanelTarget]:
    """The targets of one output in walking order (:func:`annotation.work.checklist.targets`):
    its checklist questions, then the criteria (``(name, label, min, max, step, rubric)``
    rows). A criterion whose range is within 0..10 gets a digit per value (``0`` = 10)."""
    walk = checklist.targets(questions, [str(c[0]) for c in criteria])
    by_id = {q.question_id: q for q in questions}
    position = {t.key: i for i, t in enumerate(walk) if t.is_question}
    crits = {str(c[0]): c for c in criteria}
    out: list[PanelTarget] = []
    for t in walk:
        if t.is_question:
            q = by_id[t.key]
            out.append(PanelTarget(
                "q", q.question_id, q.text,
                tuple(Option(v, ANSWER_TEXT[v], k) for v, k in QUESTION_KEYS),
                heading=_heading(q),
                parents=tuple(position[p] for p in q.depends_on if p in position)))
            continue
        name, label, low, high, _step, rubric = crits[t.key][:6]
        values = range(int(low), int(high) + 1)
        keyed = len(values) <= 10 and low >= 0 and high <= 10
        out.append(PanelTarget(
            "c", name, label,
            tuple(Option(float(v), str(v), ("0" if v == 10 else str(v)) if keyed else None)
                  for v in values),
            caption=f"Rating {low:g}-{high:g}", rubric=rubric))
    return out


def output_targets(store: Store, output_id: str) -> list[PanelTarget]:
    """:func:`annotation_targets` of one output, read from the database."""
    task_id, _ = items.output_task(store, output_id)
    task = project_rows.task(store, task_id)
    if task is None:
        raise KeyError(task_id)
    questions = [QuestionView(q[0], q[1], q[2], q[3], tuple(q[4]))
                 for q in items.checklist_questions(store, task.checklist_id)]
    return annotation_targets(questions, items.criteria_rows(store))


def spec(panel: Panel) -> dict[str, Any]:
    """The JSON the browser gets for ``panel``: targets by position, no ids."""
    return {
        "v": 1,
        "visit": panel.visit,
        "targets": [{
            "kind": t.kind, "text": t.text, "heading": t.heading, "caption": t.caption,
            "parents": list(t.parents), "rubric": t.rubric,
            "options": [[o.value, o.label, o.key.lower() if o.key else None]
                        for o in t.options],
            "value": panel.values.get(i), "row": panel.rows.get(i),
        } for i, t in enumerate(panel.targets)],
        "commands": [[c.name, c.label, c.key.lower() if c.key else None, c.primary]
                     for c in panel.commands],
        "submit": panel.submit, "enter": panel.enter, "ready": panel.ready,
        "reviewing": panel.reviewing, "handled": panel.handled, "notice": panel.notice,
        "hint": panel.hint,
    }


def take_command(state: MutableMapping[str, Any], command: dict[str, Any],
                 names: tuple[str, ...]) -> str | None:
    """The command's name when it is one of ``names``, new (its ``n`` above the last one
    handled, kept in ``state["handled"]``) and typed on the open visit; None otherwise.
    Marks it handled either way, so a command is acted on at most once."""
    if command["n"] <= int(state.get("handled", 0)):
        return None
    state["handled"] = command["n"]
    if command["name"] not in names or command["visit"] != state.get("visit_id"):
        return None
    return str(command["name"])
