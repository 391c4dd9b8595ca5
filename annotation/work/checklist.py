"""Checklist logic for one item: grouping, dependency gating, completeness. Pure functions.

* Grouping follows "TRACE-Bench: Decomposing and Diagnosing Multi-Reference Image
  Generation" (Section 3.4): questions carry an operator (``f``, ``g``, ``⊕``, ``C``)
  and a target (``f1``, ``f1⊕g1, exclusivity``, ...); the annotator sees them grouped by
  operator and target, in first-appearance order. Checklists
  without operators (TIIF) stay one group in list order.
* Gating follows DSG (Cho et al., *Davidsonian Scene Graph*, ICLR 2024, Section 3): a
  question whose parent was answered "no" is not applicable (it is neither asked nor
  counted); the rule applies transitively. A parent answered "can't tell" does not gate.
* An item is complete for an annotator when every applicable question has an answer and
  every criterion has a score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """One thing to answer on an item: a question (``kind="q"``) or a criterion (``"c"``)."""

    kind: str
    key: str

    @property
    def is_question(self) -> bool:
        return self.kind == "q"


@dataclass(frozen=True)
class QuestionView:
    """What an annotator may see of a question: never its pass answer."""

    question_id: str
    text: str
    operator: str | None = None
    target: str | None = None
    depends_on: tuple[str, ...] = ()


def group_questions(
    questions: Sequence[QuestionView],
) -> list[tuple[str | None, list[QuestionView]]]:
    """Group by ``(operator, target)`` in first-appearance order; one group if none has them.

    Returns ``[(heading, questions), ...]``; the heading is ``"operator · target"`` (or
    ``None`` for an ungrouped checklist).
    """
    if not any(q.operator or q.target for q in questions):
        return [(None, list(questions))] if questions else []
    groups: dict[str, list[QuestionView]] = {}
    for q in questions:
        heading = " · ".join(part for part in (q.operator, q.target) if part) or "other"
        groups.setdefault(heading, []).append(q)
    return list(groups.items())


def applicable(questions: Sequence[QuestionView], answers: Mapping[str, str]) -> dict[str, bool]:
    """Which questions are applicable given the answers so far (DSG gating, transitive).

    A question is not applicable when any parent is answered ``"no"`` or is itself not
    applicable. Unknown parents are ignored (validated at import).
    """
    by_id = {q.question_id: q for q in questions}
    memo: dict[str, bool] = {}

    def visit(qid: str, trail: frozenset[str]) -> bool:
        if qid in memo:
            return memo[qid]
        ok = True
        for parent in by_id[qid].depends_on:
            if parent not in by_id or parent in trail:
                continue
            if answers.get(parent) == "no" or not visit(parent, trail | {qid}):
                ok = False
                break
        memo[qid] = ok
        return ok

    return {q.question_id: visit(q.question_id, frozenset()) for q in questions}


def targets(questions: Sequence[QuestionView], criteria: Sequence[str]) -> list[Target]:
    """Every target of an item in the order the annotator walks them: the questions
    (group by group, as displayed), then the criteria."""
    ordered = [q for _, group in group_questions(questions) for q in group]
    return [Target("q", q.question_id) for q in ordered] + [Target("c", c) for c in criteria]


def open_targets(
    questions: Sequence[QuestionView],
    criteria: Sequence[str],
    answers: Mapping[str, str],
    scores: Mapping[str, float],
) -> list[Target]:
    """Applicable targets that still lack an answer, in walking order."""
    gate = applicable(questions, answers)
    return [
        t
        for t in targets(questions, criteria)
        if (t.is_question and gate[t.key] and t.key not in answers)
        or (not t.is_question and t.key not in scores)
    ]


def is_complete(
    questions: Sequence[QuestionView],
    criteria: Sequence[str],
    answers: Mapping[str, str],
    scores: Mapping[str, float],
) -> bool:
    """True when every applicable question is answered and every criterion scored."""
    return not open_targets(questions, criteria, answers, scores)


def next_target(
    all_targets: Sequence[Target],
    current: int,
    questions: Sequence[QuestionView],
    answers: Mapping[str, str],
    scores: Mapping[str, float],
) -> int:
    """Index of the next open target after ``current`` (wrapping); ``current`` if none.

    Used for auto-advance after an answer: skips answered and not-applicable targets.
    """
    gate = applicable(questions, answers)
    n = len(all_targets)
    for step in range(1, n + 1):
        i = (current + step) % n
        t = all_targets[i]
        if t.is_question and gate.get(t.key, True) and t.key not in answers:
            return i
        if not t.is_question and t.key not in scores:
            return i
    return current
