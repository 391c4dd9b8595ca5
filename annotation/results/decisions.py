"""Checklist decisions as every table scores them: one gating rule, one policy for gaps.

A *decision* is one (answerer, output, question). Every report table that looks at
checklist answers (``checklist.csv``, ``operators.csv``, ``leniency.csv``,
``checklist_comparisons.csv``, the alt-test, ``--pair checklist:CRITERION``, the
annotators' table and the Judge validation page) reads them through :func:`decisions`, so
a judge and a human are always scored by the same rule:

* **Gating** (Cho et al., "Davidsonian Scene Graph: Improving Reliability in Fine-Grained
  Evaluation for Text-to-Image Generation", ICLR 2024, Sec. 3): when a parent question is
  answered "no" (the entity it asks about is absent), its dependent questions are scored
  as **failed, whatever their own answer**: the answerer's own "yes" on a child of a
  failed parent does not count, and a child the annotation page never asked (it hides
  gated questions, :func:`annotation.work.checklist.applicable`) is failed too. The rule is
  transitive (a child of a gated question is gated), and a parent answered "can't tell"
  does not gate. The parent's *own* answer triggers the gate, as on the annotation page,
  which never knows a question's pass answer; bundles document it the same way
  (``depends_on``: "when a parent is answered 'no', the question is not applicable").
  A gated question's decision is its failing answer (the opposite of its pass answer).
  This also retires stale answers: a human who first said "yes" to a child and then
  changed the parent to "no" is scored as failing the child.
* **Unanswered questions.** By default a question the answerer gave no answer to (and
  that no gate fills) is no decision: outputs a judge never answered are left out, and
  the tables count them (``n_unanswered``). With ``unanswered="fail"`` every question of
  every output in ``universe`` that is still without a decision is scored as failed
  (``imputed``), the DSG authors' convention for unanswerable or unparsed VQA outputs, so
  their published figures can be reproduced.
* ``cant_tell`` is kept as an answer with no decision (``passed`` is NaN); statistics
  treat it as missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

from annotation.stats.membership import positions

if TYPE_CHECKING:
    from annotation.results.study import StudyData

Unanswered = Literal["omit", "fail"]
UNANSWERED: tuple[str, ...] = ("omit", "fail")
COLUMNS = ["output_id", "question_id", "answer", "passed", "own_answer", "gated", "imputed"]


def failing_answer(pass_answer: pd.Series) -> pd.Series:
    """The answer that fails each question: "no" where "yes" passes, and the reverse."""
    return pass_answer.map({"yes": "no", "no": "yes"})


def decisions(answers: pd.DataFrame, questions: pd.DataFrame, who: str, *,
              unanswered: Unanswered = "omit",
              universe: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every decision of every answerer after gating (see the module docstring).

    ``answers``: ``output_id``, ``who`` (``"annotator"`` or ``"judge"``), ``question_id``,
    ``answer`` (``yes``/``no``/``cant_tell``), one current answer per decision.
    ``questions``: ``question_id``, ``checklist_id``, ``pass_answer``, ``depends_on``
    (lists of parent ids). ``universe`` (needed for ``unanswered="fail"``): ``output_id``,
    ``checklist_id`` of the outputs on which every answerer of ``answers`` owes an answer
    to every question of the checklist.

    Returns one row per decision: ``who``, ``output_id``, ``question_id``, ``answer`` (the
    scored answer: the failing answer when gated or imputed), ``passed`` (1.0, 0.0, or NaN
    for ``cant_tell``), ``own_answer`` (what the answerer said, None if nothing), ``gated``
    and ``imputed`` flags. Vectorized: the gate is propagated level by level over the
    dependency edges.
    """
    if unanswered not in UNANSWERED:
        raise ValueError(f"unanswered must be one of {UNANSWERED}, got {unanswered!r}")
    columns = [who, *COLUMNS]
    q = questions[["question_id", "checklist_id", "pass_answer"]]
    given = _with_question(answers[[who, "output_id", "question_id", "answer"]], q)
    given = given.rename(columns={"answer": "own_answer"})
    edges = questions[["question_id", "checklist_id", "depends_on"]].explode("depends_on")
    edges = edges.dropna(subset=["depends_on"]).rename(columns={"question_id": "child",
                                                                "depends_on": "parent"})
    key = [who, "output_id", "question_id"]
    gated = pd.DataFrame(columns=key)
    if not edges.empty and not given.empty:
        sessions = given[[who, "output_id", "checklist_id"]].drop_duplicates()
        candidates = sessions.merge(edges, on="checklist_id")
        said_no = given.loc[given.own_answer == "no", [who, "output_id", "question_id"]]
        found = candidates.merge(said_no.rename(columns={"question_id": "parent"}),
                                 on=[who, "output_id", "parent"])[[who, "output_id", "child"]]
        found = found.drop_duplicates()
        while True:  # a child of a gated question is gated too
            grown = candidates.merge(found.rename(columns={"child": "parent"}),
                                     on=[who, "output_id", "parent"])
            grown = pd.concat([found, grown[[who, "output_id", "child"]]]).drop_duplicates()
            if len(grown) == len(found):
                break
            found = grown
        gated = found.rename(columns={"child": "question_id"})
    table = _mark_gated(given, gated, edges.child, q, key)
    table["imputed"] = False
    if unanswered == "fail":
        if universe is None:
            raise ValueError('unanswered="fail" needs the universe of outputs to score')
        owed = universe[["output_id", "checklist_id"]].merge(q, on="checklist_id")
        names = pd.DataFrame({who: pd.unique(answers[who])})
        owed = names.merge(owed, how="cross")
        missing = owed.merge(table[key], on=key, how="left", indicator=True)
        missing = missing[missing["_merge"] == "left_only"].drop(columns="_merge")
        if len(missing):
            table = pd.concat([table, missing.assign(own_answer=None, gated=False,
                                                     imputed=True)], ignore_index=True)
    del given, gated
    forced = table.gated | table.imputed
    # the failing answers of the forced decisions only (a column of 4.8 million at 100,000
    # outputs when made for every row, issue #18); where() aligns them on the index
    table["answer"] = table.own_answer.where(
        ~forced, failing_answer(table.pass_answer[forced.to_numpy()]))
    decided = table.answer.isin(("yes", "no"))
    table["passed"] = np.where(decided, (table.answer == table.pass_answer).astype(float),
                               np.nan)
    del forced, decided
    table["own_answer"] = _shared_objects(table.own_answer)
    return _sorted(table, key, columns)


def _sorted(table: pd.DataFrame, by: list[str], columns: list[str]) -> pd.DataFrame:
    """``table.sort_values(by, kind="stable").reset_index(drop=True)[columns]``, copying one
    column at a time: the rows are ordered by integer codes of ``by`` (``np.lexsort`` is
    stable, missing values last, as ``sort_values``), and each column of the unsorted
    ``table`` is let go once its sorted copy is made. Sorting the whole frame held two
    copies of every column at once: at 100,000 outputs (4.8 million judge decisions)
    that was the largest rise of the report's peak memory (issue #18). ``table`` is
    emptied."""
    codes = []
    for column in reversed(by):  # np.lexsort sorts by the last key first
        code, _ = pd.factorize(table[column], sort=True)
        codes.append(np.where(code < 0, code.max(initial=-1) + 1, code))
    order = np.lexsort(codes) if codes else np.arange(len(table))
    del codes
    out: dict[str, pd.Series] = {}
    for column in list(table.columns):
        if column in columns:
            out[column] = table[column].take(order).reset_index(drop=True)
        del table[column]
    return pd.DataFrame({c: out.pop(c) for c in columns}, index=pd.RangeIndex(len(order)),
                        copy=False)


def _shared_objects(values: pd.Series) -> pd.Series:
    """``values`` as an object column, None where missing, every equal value one shared
    Python object (a few answers over a million decisions: no string per row)."""
    codes, uniques = pd.factorize(values)
    table = np.append(np.asarray(uniques, dtype=object), np.array([None], dtype=object))
    return pd.Series(table[codes], index=values.index, dtype=object)  # -1: the None


def _with_question(answers: pd.DataFrame, q: pd.DataFrame) -> pd.DataFrame:
    """``answers.merge(q, on="question_id")`` (inner, in the answers' order): by a lookup
    of the question's columns when ``q`` has one row per question, else by the merge."""
    if not q.question_id.is_unique:
        return answers.merge(q, on="question_id")
    # looked up by Arrow in C: Index.get_indexer made a Python string per decision
    # (4.8 million at 100,000 outputs, issue #18)
    at = positions(answers.question_id, pd.Index(q.question_id))
    known = at >= 0
    out = answers[known].reset_index(drop=True) if not known.all() \
        else answers.reset_index(drop=True)
    at = at[known]
    for column in q.columns.drop("question_id"):
        out[column] = q[column].take(at).reset_index(drop=True)
    return out


def _mark_gated(given: pd.DataFrame, gated: pd.DataFrame, children: pd.Series,
                q: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """``given`` with a ``gated`` flag from ``gated`` (rows of ``key``), plus a row for
    every gated decision nobody answered (``own_answer`` missing, the question's columns
    from ``q``): the rows of an outer merge on ``key``, in no particular order. Only the
    answers to a question that has parents (``children``) are looked up."""
    table = given.assign(gated=False)
    if gated.empty:
        return table
    maybe = np.flatnonzero(given.question_id.isin(children).to_numpy())
    hit = given.iloc[maybe][key].reset_index(drop=True).merge(
        gated.assign(_gated=True), on=key, how="left")["_gated"].notna().to_numpy()
    table.iloc[maybe[hit], table.columns.get_loc("gated")] = True
    unanswered = gated.merge(given.iloc[maybe][key], on=key, how="left", indicator=True)
    unanswered = unanswered.loc[unanswered["_merge"] == "left_only", key]
    if unanswered.empty:
        return table
    extra = unanswered.merge(q, on="question_id")
    extra = extra.assign(own_answer=pd.Series(np.nan, index=extra.index).astype(
        given.own_answer.dtype), gated=True)
    return pd.concat([table, extra[table.columns]], ignore_index=True)


def human_decisions(study: StudyData) -> pd.DataFrame:
    """The annotators' decisions of a :class:`annotation.results.study.StudyData` (gated; a
    question an annotator left open is no decision: humans are never imputed)."""
    return decisions(study.human_answers, study.questions, "annotator")


def judge_decisions(study: StudyData, unanswered: Unanswered = "omit") -> pd.DataFrame:
    """The judges' decisions of a :class:`annotation.results.study.StudyData` (gated; with
    ``unanswered="fail"`` every question of every output that exists is owed)."""
    outputs = study.outputs
    universe = outputs[outputs.missing.fillna(0).astype(int) == 0] \
        if "missing" in outputs.columns else outputs
    return decisions(study.judge_answers, study.questions, "judge", unanswered=unanswered,
                     universe=universe)


def majority_of(decided: pd.DataFrame) -> pd.DataFrame:
    """Per (output, question): the strict majority of the decided answers (``yes``/``no``;
    ``cant_tell`` is no vote; a tie gives no majority and no row), with ``n_yes``/``n_no``.

    ``decided``: rows of :func:`decisions`. Returns ``output_id``, ``question_id``,
    ``answer``, ``n_yes``, ``n_no``.
    """
    votes = decided.loc[decided.answer.isin(("yes", "no")), ["output_id", "question_id"]]
    votes = votes.assign(n_yes=(decided.answer == "yes").astype(int),
                         n_no=(decided.answer == "no").astype(int))
    counts = votes.groupby(["output_id", "question_id"], sort=True)[["n_yes", "n_no"]].sum()
    counts = counts.reset_index()
    counts = counts[counts.n_yes != counts.n_no]
    counts["answer"] = np.where(counts.n_yes > counts.n_no, "yes", "no")
    return counts[["output_id", "question_id", "answer", "n_yes", "n_no"]].reset_index(drop=True)
