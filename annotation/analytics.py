"""The report tables in the layouts of the seed papers, and the drill-down of the analytics page.

Pure pandas (no Streamlit), so the admin page (``pages/analytics.py``) stays layout only:

* :func:`vif_table`: VIF-Bench Table 7, judges (and the human leave-one-out baseline) by
  PLCC / SRCC per criterion and on the average, from ``ratings.csv``;
* :func:`trace_table`: TRACE-Bench's judge table, Pearson / Spearman / MAE of the case
  scores (operator ``all``) and % agreement of the decisions with the human majority, from
  ``operators.csv`` and ``checklist.csv``;
* :func:`confusion`: the 2x2 table of one row of ``checklist.csv``;
* :func:`disagreements`, :func:`item_answers`, :func:`judge_texts`: the items where a judge
  is furthest from the humans, and what the judge and every annotator said on one of them;
* :func:`data_stamp` and :func:`csv_bytes`: a cache key that changes with the data, and a
  CSV download with formula cells neutralized.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from annotation.checklist_agreement import ENSEMBLE as CHECKLIST_ENSEMBLE
from annotation.ratings import AVERAGE, HUMAN_LOO, with_average
from annotation.ratings import ENSEMBLE as RATINGS_ENSEMBLE
from annotation.report import neutralize_table
from annotation.stats.agreement import majority, normalize_label
from annotation.store import Store
from annotation.study import StudyData

#: Row label of the human baseline in :func:`vif_table` (Table 7's "Human-Human").
HUMAN_ROW = "Human (leave-one-out)"
#: The ``target`` of :func:`disagreements` for checklist questions (else a criterion).
CHECKLIST = "checklist"
HUMAN_MEAN = "human mean"
LOO_MEAN = "leave-one-out mean"
HUMAN_MAJORITY = "human majority"
_ENSEMBLES = (RATINGS_ENSEMBLE, CHECKLIST_ENSEMBLE)


def judge_order(judges: list[str]) -> list[str]:
    """Judges sorted by name, ensembles after the single judges (as in the papers)."""
    return sorted(dict.fromkeys(judges), key=lambda j: (j in _ENSEMBLES, j))


# ---------------------------------------------------------------------------- seed tables
def vif_table(ratings: pd.DataFrame, *, reference: str = HUMAN_MEAN, group: str = "all",
              ci: bool = False, labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """VIF-Bench Table 7 from ``ratings.csv``: one row per judge, then :data:`HUMAN_ROW`.

    Columns: ``judge``, then ``<criterion> PLCC`` and ``<criterion> SRCC`` for every
    criterion and ``average`` in the order of ``ratings`` (``<criterion>`` through
    ``labels`` when given); with ``ci``, each is followed by ``... lo`` and ``... hi`` (the
    95% intervals of the report). Judges are compared with ``reference``: ``"human mean"``
    (the mean of all annotators, as the paper) or ``"leave-one-out mean"`` (the same
    pairs as the human row: like for like). The human row is always the leave-one-out
    baseline. Only rows of ``group`` (``all`` or ``<by>=<value>``) are used.
    """
    rows = ratings[ratings.group == group]
    judges = rows[(rows.reference == reference) & (rows.judge != HUMAN_LOO)]
    human = rows[(rows.judge == HUMAN_LOO) & (rows.reference == LOO_MEAN)]
    both = pd.concat([judges, human.assign(judge=HUMAN_ROW)], ignore_index=True)
    order = [*judge_order(list(judges.judge)), *([HUMAN_ROW] if len(human) else [])]
    criteria = list(dict.fromkeys(rows.criterion))
    names = labels or {}
    columns: dict[str, pd.Series] = {}
    for criterion in criteria:
        mine = both[both.criterion == criterion].set_index("judge").reindex(order)
        label = names.get(criterion, criterion)
        for stat in ("plcc", "srcc"):
            columns[f"{label} {stat.upper()}"] = mine[stat]
            if ci:
                columns[f"{label} {stat.upper()} lo"] = mine[f"{stat}_lo"]
                columns[f"{label} {stat.upper()} hi"] = mine[f"{stat}_hi"]
    table = pd.DataFrame(columns, index=pd.Index(order, name="judge"))
    return table.reset_index()


def trace_table(operators: pd.DataFrame, checklist: pd.DataFrame, *,
                reference: str = HUMAN_MAJORITY) -> pd.DataFrame:
    """TRACE-Bench's judge table from ``operators.csv`` and ``checklist.csv``.

    One row per judge: ``n_items``, ``Pearson``, ``Spearman``, ``MAE`` between the judge's
    and the humans' case scores (operator ``all``: the mean over the output's operator
    instances), and ``n_decisions``, ``Agreement`` (with ``Agreement lo`` / ``hi``, Wilson)
    of the judge's yes/no decisions with ``reference`` (group ``all``). A judge found in
    only one of the tables (the VLM majority ensemble has no operator scores) has NaN in
    the other's columns.
    """
    ops = operators[operators.operator == "all"].set_index("judge")
    agree = checklist[(checklist.group == "all") & (checklist.reference == reference)]
    agree = agree.set_index("judge")
    order = judge_order([*ops.index, *agree.index])
    table = pd.DataFrame({
        "n_items": ops.n_items.reindex(order).astype("Int64"),
        "Pearson": ops.pearson.reindex(order),
        "Spearman": ops.spearman.reindex(order),
        "MAE": ops.mae.reindex(order),
        "n_decisions": agree.n_decisions.reindex(order).astype("Int64"),
        "Agreement": agree.agreement.reindex(order),
        "Agreement lo": agree.agreement_lo.reindex(order),
        "Agreement hi": agree.agreement_hi.reindex(order),
    }, index=pd.Index(order, name="judge"))
    return table.reset_index()


def confusion(checklist_row: Mapping[str, object] | pd.Series) -> pd.DataFrame:
    """The 2x2 table of one ``checklist.csv`` row: judge yes/no by reference yes/no.

    ``checklist.csv`` keeps the off-diagonal cells and the reference's yes rate; the
    diagonal follows (both yes = reference yes - judge no/reference yes). The four cells
    sum to ``n_decisions``.
    """
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
    rows = checklist[checklist.reference == reference]
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
    """Per (output, question) the judge answered: its answer, each annotator's (text) and
    the human majority (None on a tie or without a yes/no vote)."""
    mine = study.judge_answers[study.judge_answers.judge == judge]
    mine = mine.assign(judge_answer=mine.answer.map(normalize_label))
    humans = study.human_answers.sort_values(["output_id", "question_id", "annotator"])
    if humans.empty:
        return mine.assign(majority=None, humans="")[
            ["output_id", "question_id", "judge_answer", "majority", "humans"]]
    key = humans.output_id + "\x1f" + humans.question_id
    vote = majority(humans.assign(item=key), item_col="item", value_col="answer")
    said = humans.groupby(key).answer.agg(lambda a: ", ".join(map(str, a)))
    mine_key = mine.output_id + "\x1f" + mine.question_id
    return pd.DataFrame({
        "output_id": mine.output_id.to_numpy(), "question_id": mine.question_id.to_numpy(),
        "judge_answer": mine.judge_answer.to_numpy(),
        "majority": vote.reindex(mine_key).to_numpy(),
        "humans": said.reindex(mine_key).fillna("").to_numpy(),
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
    answered: ``question`` (``texts[question_id]`` when given), ``judge``, one column per
    annotator, ``majority`` and ``disagree``. Every cell is data: show it as text.
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
    questions = study.questions.question_id
    asked = set(answers.question_id) | set(mine.question_id)
    order = [q for q in questions if q in asked] + sorted(asked - set(questions))
    wide = answers.pivot_table(index="question_id", columns="annotator", values="answer",
                               aggfunc="last").reindex(order)
    wide.insert(0, "judge", mine.groupby("question_id").answer.last().reindex(order))
    vote = majority(answers, item_col="question_id", value_col="answer") \
        if len(answers) else pd.Series(dtype=object)
    wide["majority"] = vote.reindex(order)
    judge_said = wide.judge.map(normalize_label)
    wide["disagree"] = wide.majority.notna() & judge_said.notna() & (judge_said != wide.majority)
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
    rows = store.query_df(
        f"SELECT {column} AS about, raw, parse_status FROM judgments"
        f" WHERE judge = ? AND output_id = ? AND {column} IS NOT NULL ORDER BY judgment_id",
        [judge, output_id])
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
    """Columns of the outputs a report can be grouped by: ``generator``, ``meta.<key>``."""
    return [c for c in study.outputs.columns if c == "generator" or c.startswith("meta.")]


def csv_bytes(table: pd.DataFrame) -> bytes:
    """``table`` as UTF-8 CSV; text cells and column names a spreadsheet would run as a
    formula (= + - @ tab CR first) get a ``'`` (:func:`annotation.report.neutralize_table`)."""
    return neutralize_table(table).to_csv(index=False).encode("utf-8")


def float_columns(table: pd.DataFrame) -> list[str]:
    """The float columns of ``table`` (formatted to 3 decimals on the page)."""
    return [c for c in table.columns if pd.api.types.is_float_dtype(table[c].dtype)]
