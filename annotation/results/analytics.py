"""What the Judge validation page shows, as pure pandas (no Streamlit), so the page
(``pages/analytics.py``) stays layout only and shows the report's own numbers:

* :func:`vif_view`, :func:`trace_view`: ``vif_table.csv`` and ``trace_table.csv`` (built
  by :mod:`annotation.results.paper_tables` inside
  :func:`annotation.results.report.build_report`) as the page displays them: one block, labelled
  columns, intervals optional;
* :func:`confusion`: the 2x2 table of one row of ``checklist.csv``;
* :func:`disagreements`, :func:`item_answers`, :func:`judge_texts`: the items where a judge
  is furthest from the humans, and what the judge and every annotator said on one of them
  (checklist answers scored by the one gating rule of :mod:`annotation.results.decisions`);
* :func:`data_stamp` and :func:`csv_bytes`: a cache key that changes with the data, and a
  CSV download with formula cells neutralized.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from annotation.results.decisions import decisions, majority_of
from annotation.results.export import csv_text
from annotation.results.paper_tables import VIF_STATS, judge_order
from annotation.results.ratings import AVERAGE, HUMAN_LOO, HUMAN_MEAN, LOO_MEAN, with_average
from annotation.results.study import StudyData
from annotation.store import Store
from annotation.store import project as project_rows

__all__ = ["CHECKLIST", "HUMAN_MAJORITY", "HUMAN_MEAN", "HUMAN_ROW", "LOO_MEAN",
           "abbreviate", "agreement_by_group", "ci_text", "confusion", "csv_bytes",
           "data_stamp", "disagreements", "float_columns", "group_options", "human_label",
           "item_answers", "judge_order", "judge_texts", "score_pairs", "trace_view",
           "two_level", "vif_view"]

#: Row label of the human baseline in :func:`vif_view` (Table 7's "Human-Human").
HUMAN_ROW = "Human (leave-one-out)"
#: The ``target`` of :func:`disagreements` for checklist questions (else a criterion).
CHECKLIST = "checklist"
HUMAN_MAJORITY = "human majority"


def human_label(paired_judge: object) -> str:
    """The display name of a human baseline row: :data:`HUMAN_ROW`, or with the judge
    whose outputs it was computed on."""
    if isinstance(paired_judge, str) and paired_judge:
        return f"{HUMAN_ROW} on {paired_judge}'s outputs"
    return HUMAN_ROW


# ---------------------------------------------------------------------------- seed tables
def vif_view(vif: pd.DataFrame, *, reference: str = HUMAN_MEAN, group: str = "all",
             ci: bool = False, labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """VIF-Bench Table 7 as the page shows it, from ``vif_table.csv``.

    One row per judge (against ``reference``: ``"human mean"`` as the paper, or
    ``"leave-one-out mean"``, like for like), then the human baseline rows (always the
    leave-one-out ones; one per judge whose outputs differ, labelled by
    :func:`human_label`). Columns ``judge`` then ``<label> PLCC`` and ``<label> SRCC`` per
    criterion (``labels[criterion]`` or the name), each followed by ``... lo``/``... hi``
    with ``ci``. Only rows of ``group``.
    """
    rows = vif[vif.group == group]
    judges = rows[(rows.reference == reference) & (rows.judge != HUMAN_LOO)]
    human = rows[(rows.judge == HUMAN_LOO) & (rows.reference == LOO_MEAN)]
    both = pd.concat([judges, human], ignore_index=True)
    names = [human_label(p) if j == HUMAN_LOO else j
             for j, p in zip(both.judge, both.paired_judge, strict=True)]
    criteria = [c[: -len("_plcc")] for c in vif.columns if c.endswith("_plcc")]
    tags = labels or {}
    columns: dict[str, list[object]] = {"judge": names}
    for criterion in criteria:
        label = tags.get(criterion, criterion)
        for stat in VIF_STATS:
            suffixes = ("", "_lo", "_hi") if ci else ("",)
            for suffix in suffixes:
                name = f"{label} {stat.upper()}{suffix.replace('_', ' ')}"
                columns[name] = list(pd.to_numeric(both[f"{criterion}_{stat}{suffix}"],
                                                   errors="coerce").astype(float))
    return pd.DataFrame(columns)


TRACE_LABELS = {"pearson": "Pearson", "pearson_lo": "Pearson lo", "pearson_hi": "Pearson hi",
                "spearman": "Spearman", "spearman_lo": "Spearman lo",
                "spearman_hi": "Spearman hi", "mae": "MAE", "agreement": "Agreement",
                "agreement_lo": "Agreement lo", "agreement_hi": "Agreement hi"}


def trace_view(trace: pd.DataFrame, *, unit: str = "output x operator") -> pd.DataFrame:
    """TRACE-Bench Table 7 as the page shows it, from ``trace_table.csv``: the rows of one
    ``unit``, columns ``judge``, ``n_items``, ``n_pairs``, ``Pearson``, ``Spearman``,
    ``MAE``, ``n_decisions``, ``Agreement`` (each with ``lo``/``hi``) and ``note``."""
    rows = trace[trace.unit == unit]
    keep = ["judge", "n_items", "n_pairs", *TRACE_LABELS, "n_decisions", "note"]
    shown = rows[[c for c in keep if c in rows.columns]].rename(columns=TRACE_LABELS)
    shown = shown.assign(judge=[HUMAN_ROW if j == HUMAN_LOO else j for j in shown.judge])
    return shown.reset_index(drop=True)


def confusion(checklist_row: Mapping[str, object] | pd.Series) -> pd.DataFrame:
    """The 2x2 table of one ``checklist.csv`` row: judge yes/no by reference yes/no."""
    row = pd.Series(checklist_row)
    n = int(row["n_decisions"])
    b, c = int(row["judge_yes_human_no"]), int(row["judge_no_human_yes"])
    if "both_yes" in row and pd.notna(row["both_yes"]):
        a = int(row["both_yes"])
    else:
        a = int(round(float(row["prevalence_yes"]) * n)) - c
    d = n - a - b - c
    return pd.DataFrame([[a, b], [c, d]], index=["judge: yes", "judge: no"],
                        columns=["reference: yes", "reference: no"])


def agreement_by_group(checklist: pd.DataFrame,
                       reference: str = HUMAN_MAJORITY) -> pd.DataFrame:
    """% agreement with ``reference``: one row per judge, one column per group."""
    rows = checklist[(checklist.reference == reference)
                     & (checklist.paired_judge.fillna("") == "")]
    if rows.empty:
        return pd.DataFrame(columns=["judge"])
    wide = rows.pivot_table(index="judge", columns="group", values="agreement")
    groups = ["all", *sorted(g for g in wide.columns if g != "all")]
    wide = wide.reindex(index=judge_order(list(wide.index)), columns=groups)
    wide.columns.name = None
    return wide.rename_axis("judge").reset_index()


def ci_text(table: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """For display: every ``X`` with ``X lo`` and ``X hi`` columns as ``"v [lo, hi]"``."""
    out = table.copy()
    for col in [c for c in table.columns if f"{c} lo" in table.columns
                and f"{c} hi" in table.columns]:
        def fmt(v: float, lo: float, hi: float) -> str:
            if pd.isna(v):
                return ""
            if pd.isna(lo) or pd.isna(hi):
                return f"{v:.{digits}f}"
            return f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"
        out[col] = [fmt(v, lo, hi) for v, lo, hi in
                    zip(table[col], table[f"{col} lo"], table[f"{col} hi"], strict=True)]
        out = out.drop(columns=[f"{col} lo", f"{col} hi"])
    return out


def abbreviate(label: str, width: int = 18) -> str:
    """A column header that fits: while ``label`` is longer than ``width``, its longest
    unshortened word of 7+ letters is cut after its first 5 letters and any consonants
    that follow (at most 7 letters) and gets a period, as VIF-Bench's "Text Instr.
    Follow.". Labels that fit are returned unchanged."""
    words = label.split(" ")
    while len(" ".join(words)) > width:
        long = [i for i, w in enumerate(words) if len(w) >= 7 and not w.endswith(".")]
        if not long:
            break
        i = max(long, key=lambda k: len(words[k]))
        word, cut = words[i], 5
        while cut < min(len(word) - 1, 7) and word[cut].lower() not in "aeiouy":
            cut += 1
        words[i] = word[:cut] + "."
    return " ".join(words)


def two_level(table: pd.DataFrame) -> pd.DataFrame:
    """For display: ``<criterion> PLCC`` columns under a two-level header
    (criterion, statistic), as the papers print them; other columns keep an empty top."""
    pairs = []
    for col in table.columns:
        head, _, stat = str(col).rpartition(" ")
        pairs.append((head, stat) if stat in ("PLCC", "SRCC") else ("", col))
    out = table.copy()
    out.columns = pd.MultiIndex.from_tuples(pairs)
    return out


# ---------------------------------------------------------------------------- drill-down
def _outputs(study: StudyData) -> pd.DataFrame:
    return study.outputs.set_index("output_id")[["task_id", "generator"]]


def _short(question_id: str, checklist_id: object) -> str:
    prefix = f"{checklist_id}."
    return question_id[len(prefix):] if question_id.startswith(prefix) else question_id


def _num(value: float) -> str:
    """A score as people write it: ``7`` or ``6.83``."""
    return f"{value:g}" if float(value).is_integer() else f"{value:.2f}"


def score_pairs(study: StudyData, judge: str, criterion: str) -> pd.DataFrame:
    """Per output both scored: ``output_id``, ``task_id``, ``generator``, ``judge`` (the
    judge's score), ``human_mean``, ``humans`` (each annotator's score, as text) and
    ``gap`` = judge - human mean. ``criterion`` may be ``average``."""
    criteria = list(study.criteria.name)
    humans = with_average(study.human_scores, "annotator", criteria)
    humans = humans[humans.criterion == criterion].sort_values(["output_id", "annotator"])
    judged = with_average(study.judge_scores[study.judge_scores.judge == judge], "judge",
                           criteria)
    scores = judged[judged.criterion == criterion].groupby("output_id").score.mean()
    grouped = humans.groupby("output_id")
    human_mean = grouped.score.mean()
    text = grouped.apply(lambda g: " · ".join(f"{a}: {_num(s)}" for a, s in
                                              zip(g.annotator, g.score, strict=True)),
                         include_groups=False) if len(humans) else pd.Series(dtype=str)
    common = scores.index.intersection(human_mean.index)
    frame = _outputs(study).reindex(common)
    frame["judge"] = scores[common]
    frame["human_mean"] = human_mean[common]
    frame["humans"] = text.reindex(common)
    frame["gap"] = frame.judge - frame.human_mean
    return frame.rename_axis("output_id").reset_index()


def _decisions(study: StudyData, judge: str) -> pd.DataFrame:
    """Per (output, question) the judge decided: its scored answer (DSG gating,
    :mod:`annotation.results.decisions`), each annotator's (text) and the human majority of the
    scored answers (None on a tie or without a yes/no vote)."""
    mine = decisions(study.judge_answers[study.judge_answers.judge == judge],
                     study.questions, "judge")
    humans = decisions(study.human_answers, study.questions, "annotator")
    columns = ["output_id", "question_id", "judge_answer", "majority", "humans"]
    if humans.empty:
        return mine.assign(judge_answer=mine.answer, majority=None, humans="")[columns]
    vote = majority_of(humans).set_index(["output_id", "question_id"]).answer
    said = humans.sort_values("annotator").groupby(["output_id", "question_id"]).answer.agg(
        lambda a: ", ".join(map(str, a)))
    key = pd.MultiIndex.from_frame(mine[["output_id", "question_id"]])
    return pd.DataFrame({
        "output_id": mine.output_id.to_numpy(), "question_id": mine.question_id.to_numpy(),
        "judge_answer": mine.answer.to_numpy(),
        "majority": vote.reindex(key).to_numpy(),
        "humans": said.reindex(key).fillna("").to_numpy(),
    })


def disagreements(study: StudyData, judge: str, criterion_or_checklist: str,
                  limit: int | None = 20) -> pd.DataFrame:
    """The outputs where ``judge`` is furthest from the humans, furthest first.

    For a rating criterion (or ``average``): the rows of :func:`score_pairs` sorted by
    ``|gap|`` = |judge - human mean| (ties by output id). For :data:`CHECKLIST`: one row
    per output with ``n_disagreements`` (decisions where the judge's yes/no differs from
    the human majority), ``n_decisions`` (decisions with a majority), ``judge`` and
    ``humans`` (the answers on the disagreeing questions, as text), sorted by
    ``n_disagreements`` then their share. ``limit``: keep that many rows (None: all).
    Outputs without a disagreement are kept at the end (the judge agrees there).
    """
    if criterion_or_checklist != CHECKLIST:
        pairs = score_pairs(study, judge, criterion_or_checklist)
        pairs = pairs.assign(_abs=pairs.gap.abs()).sort_values(
            ["_abs", "output_id"], ascending=[False, True], kind="stable")
        out = pairs.drop(columns="_abs").reset_index(drop=True)
        return out if limit is None else out.head(limit)
    decisions = _decisions(study, judge)
    checklists = study.outputs.set_index("output_id").checklist_id
    decided = decisions[decisions.majority.notna() & decisions.judge_answer.notna()]
    decided = decided.assign(
        disagree=decided.judge_answer != decided.majority,
        short=[_short(q, checklists.get(o)) for o, q in
               zip(decided.output_id, decided.question_id, strict=True)])
    rows = []
    for output_id, group in decided.groupby("output_id", sort=True):
        bad = group[group.disagree]
        rows.append({
            "output_id": output_id, "n_disagreements": int(len(bad)),
            "n_decisions": int(len(group)),
            "judge": " · ".join(f"{s}: {a}" for s, a in zip(bad.short, bad.judge_answer,
                                                             strict=True)),
            "humans": " · ".join(f"{s}: {h}" for s, h in zip(bad.short, bad.humans,
                                                              strict=True)),
        })
    columns = ["output_id", "task_id", "generator", "n_disagreements", "n_decisions", "judge",
               "humans"]
    if not rows:
        return pd.DataFrame(columns=columns)
    table = pd.DataFrame(rows).join(_outputs(study), on="output_id")
    table = table.assign(_share=table.n_disagreements / table.n_decisions).sort_values(
        ["n_disagreements", "_share", "output_id"], ascending=[False, False, True],
        kind="stable")
    out = table[columns].reset_index(drop=True)
    return out if limit is None else out.head(limit)


def item_answers(study: StudyData, judge: str, output_id: str, criterion_or_checklist: str,
                 *, texts: Mapping[str, str] | None = None) -> pd.DataFrame:
    """What ``judge`` and every annotator answered on one output, side by side.

    Ratings: one row per criterion (and ``average``): ``criterion``, ``judge``, one column
    per annotator, ``human mean``. Checklist: one row per question the judge or a human
    decided: ``question`` (``texts[question_id]`` when given), ``judge``, one column per
    annotator (the scored answers: a child of a parent answered "no" shows its failing
    answer, :mod:`annotation.results.decisions`), ``majority``, ``disagree`` and ``gated`` (who was
    gated on the question). Every cell is data: show it as text.
    """
    names = texts or {}
    if criterion_or_checklist != CHECKLIST:
        criteria = list(study.criteria.name)
        humans = with_average(study.human_scores[study.human_scores.output_id == output_id],
                               "annotator", criteria)
        judged = with_average(
            study.judge_scores[(study.judge_scores.output_id == output_id)
                               & (study.judge_scores.judge == judge)], "judge", criteria)
        order = [c for c in [*criteria, AVERAGE] if c in set(humans.criterion)
                 | set(judged.criterion)]
        wide = humans.pivot_table(index="criterion", columns="annotator", values="score")
        wide = wide.reindex(order)
        wide.insert(0, "judge", judged.groupby("criterion").score.mean().reindex(order))
        wide["human mean"] = humans.groupby("criterion").score.mean().reindex(order)
        wide.columns.name = None
        wide.index = [names.get(c, c) for c in wide.index]
        return wide.rename_axis("criterion").reset_index()
    answers = study.human_answers[study.human_answers.output_id == output_id]
    mine = study.judge_answers[(study.judge_answers.output_id == output_id)
                               & (study.judge_answers.judge == judge)]
    scored = decisions(answers, study.questions, "annotator")
    judged = decisions(mine, study.questions, "judge")
    questions = study.questions.question_id
    asked = set(scored.question_id) | set(judged.question_id)
    order = [q for q in questions if q in asked] + sorted(asked - set(questions))
    wide = scored.pivot_table(index="question_id", columns="annotator", values="answer",
                              aggfunc="last").reindex(order)
    wide.insert(0, "judge", judged.set_index("question_id").answer.reindex(order))
    vote = majority_of(scored).set_index("question_id").answer
    wide["majority"] = vote.reindex(order)
    wide["disagree"] = wide.majority.notna() & wide.judge.isin(("yes", "no")) & (
        wide.judge != wide.majority)
    gated = pd.concat([judged.assign(who="judge")[["question_id", "who", "gated"]],
                       scored.rename(columns={"annotator": "who"})[
                           ["question_id", "who", "gated"]]])
    gated = gated[gated.gated].groupby("question_id").who.agg(lambda w: ", ".join(w))
    wide["gated"] = gated.reindex(order).fillna("")
    wide.columns.name = None
    wide.insert(0, "question", [names.get(q, q) for q in order])
    return wide.rename_axis("question_id").reset_index()


def judge_texts(store: Store, judge: str, output_id: str,
                criterion_or_checklist: str) -> pd.DataFrame:
    """The judge's raw outputs on one output (``judgments.raw``, parse failures included):
    ``about`` (the criteria or the question id it answered), ``raw``, ``parse_status``.

    A judge that scored every criterion in one response has one row (the identical raw
    text is not repeated); on the checklist, one row per question.
    """
    column = "question_id" if criterion_or_checklist == CHECKLIST else "criterion"
    rows = project_rows.judge_raw_df(store, judge, output_id, column)
    if column == "question_id" or rows.empty:
        return rows
    grouped = rows.groupby(["raw", "parse_status"], sort=False, dropna=False).about.agg(
        lambda a: ", ".join(a))
    return grouped.reset_index()[["about", "raw", "parse_status"]]


# ---------------------------------------------------------------------------- page helpers
def data_stamp(store: Store) -> tuple[int, ...]:
    """A cache key that changes when the data behind the report does: the number of
    imports, of annotation rows (history included, so any new answer counts), of current
    answers and of judgments."""
    counts = store.counts()
    return (counts["imports"], counts["annotations"], counts["current_annotations"],
            counts["judgments"])


def group_options(study: StudyData) -> list[str]:
    """Columns of the outputs a report can be grouped by: ``generator``, ``meta.<path>``,
    ``task.<feature>``, ``conflict.<type>`` (:mod:`annotation.results.features`), those
    with a value somewhere."""
    return [c for c in study.outputs.columns
            if (c == "generator" or c.startswith(("meta.", "task.", "conflict.")))
            and not c.endswith(".source") and study.outputs[c].notna().any()]


def csv_bytes(table: pd.DataFrame) -> bytes:
    """``table`` as UTF-8 CSV; text cells and column names a spreadsheet would run as a
    formula (= + - @ tab CR first) get a ``'`` (:func:`annotation.results.export.csv_text`)."""
    return csv_text(table).encode("utf-8")


def float_columns(table: pd.DataFrame) -> list[str]:
    """The float columns of ``table`` (formatted to 3 decimals on the page)."""
    return [c for c in table.columns if pd.api.types.is_float_dtype(table[c].dtype)]
