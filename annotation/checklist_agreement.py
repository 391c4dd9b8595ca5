"""Judges against humans on checklist questions: the rows of ``checklist.csv``.

A decision is one (output, question). For every judge (and the majority of the VLM
judges, ``ensemble (majority of VLM judges)``) the judge's yes/no is compared
(:func:`annotation.stats.agreement.binary_agreement`: % agreement with a Wilson interval,
Cohen's kappa, Gwet's AC1, yes-recall, no-recall, the 2x2 confusion cells) against:

* ``human majority``: the majority answer of the annotators per decision (ties and
  ``cant_tell`` give no reference; pooled over decisions, as TRACE-Bench's Agreement);
* each annotator: ``annotator:<name>`` (the pairwise view, like for like with humans);
* ``expected answer``: the question's pass answer, where a benchmark gives expected
  answers (TIIF-Bench): then agreement is the judge's accuracy against them;
* every other judge: ``judge:<name>`` (judge-judge agreement, e.g. GPT-4o vs QwenVL).

``group`` is ``all`` or ``<by>=<value>`` for a column of the outputs (e.g. ``generator``).
``agreement`` pools decisions; ``agreement_per_item`` is the mean over outputs of each
output's share of agreeing decisions (``n_items`` outputs), the other denominator in use.
"""

from __future__ import annotations

import itertools

import pandas as pd

from annotation.stats.agreement import binary_agreement, majority
from annotation.study import StudyData

ENSEMBLE = "ensemble (majority of VLM judges)"
COLUMNS = ["judge", "group", "reference", "n_decisions", "agreement", "agreement_lo",
           "agreement_hi", "kappa", "ac1", "yes_recall", "no_recall", "judge_yes_human_no",
           "judge_no_human_yes", "prevalence_yes", "n_items", "agreement_per_item"]


def _key(df: pd.DataFrame) -> pd.Series:
    return df.output_id + "\x1f" + df.question_id


def _ensemble(judge_answers: pd.DataFrame, vlm: list[str]) -> pd.DataFrame:
    votes = judge_answers[judge_answers.judge.isin(vlm)].assign(item=_key)
    if len(vlm) < 2 or votes.empty:
        return judge_answers.iloc[0:0]
    winner = majority(votes, item_col="item", value_col="answer").dropna()
    output_id, question_id = zip(*(k.split("\x1f") for k in winner.index)) if len(winner) \
        else ((), ())
    return pd.DataFrame({"output_id": output_id, "judge": ENSEMBLE, "question_id": question_id,
                         "answer": winner.to_numpy()})


def checklist_table(study: StudyData, *, by: str | None = None,
                    per_annotator: bool = True) -> pd.DataFrame:
    """The ``checklist.csv`` table (see the module docstring)."""
    judges = study.judges.set_index("name")
    vlm = [j for j in judges.index if judges.loc[j, "kind"] == "vlm"]
    answers = pd.concat([study.judge_answers, _ensemble(study.judge_answers, vlm)],
                        ignore_index=True).assign(item=_key)
    humans = study.human_answers.assign(item=_key)
    references: dict[str, pd.Series] = {}
    if not humans.empty:
        references["human majority"] = majority(humans, item_col="item", value_col="answer")
        if per_annotator:
            for name, mine in humans.groupby("annotator", sort=True):
                references[f"annotator:{name}"] = mine.set_index("item").answer
    expected = answers[["item", "question_id"]].drop_duplicates().merge(
        study.questions[["question_id", "pass_answer"]], on="question_id")
    if not expected.empty:
        references["expected answer"] = expected.set_index("item").pass_answer
    for name, theirs in study.judge_answers.assign(item=_key).groupby("judge", sort=True):
        references[f"judge:{name}"] = theirs.set_index("item").answer
    groups: list[tuple[str, set[str] | None]] = [("all", None)]
    if by is not None:
        if by not in study.outputs.columns:
            raise KeyError(f"--by {by}: not a column of the outputs")
        for value, df in study.outputs.groupby(by, dropna=True, sort=True):
            groups.append((f"{by}={value}", set(df.output_id)))
    rows = []
    for judge, mine in answers.groupby("judge", sort=True):
        for group, members in groups:
            g = mine if members is None else mine[mine.output_id.isin(members)]
            judged = g.set_index("item").answer
            for reference, ref in references.items():
                if reference == f"judge:{judge}":
                    continue
                common = judged.index.intersection(ref.dropna().index)
                if not len(common):
                    continue
                stats = binary_agreement(judged[common], ref[common]).iloc[0]
                if stats["n_decisions"] == 0:
                    continue
                row = {"judge": judge, "group": group, "reference": reference}
                row.update({c: stats.get(c) for c in COLUMNS[3:-2]})
                a, b = judged[common], ref[common]
                decided = a.isin(("yes", "no")) & b.isin(("yes", "no"))
                same = (a[decided] == b[decided]).groupby(
                    a[decided].index.str.split("\x1f").str[0]).mean()
                row["n_items"] = len(same)
                row["agreement_per_item"] = same.mean() if len(same) else float("nan")
                rows.append(row)
    table = pd.DataFrame(rows, columns=COLUMNS)
    counts = ["n_decisions", "judge_yes_human_no", "judge_no_human_yes", "n_items"]
    return table.astype({c: "int64" for c in counts}) if not table.empty else table


def mcnemar_table(study: StudyData) -> pd.DataFrame:
    """Pairs of judges on the same decisions, each right or wrong against a reference
    (``human majority``, and ``expected answer`` where questions have one): accuracy of
    both and the exact McNemar test (:func:`annotation.stats.agreement.mcnemar_exact`)."""
    from annotation.stats.agreement import mcnemar_exact

    answers = study.judge_answers.assign(item=_key)
    references: dict[str, pd.Series] = {}
    humans = study.human_answers.assign(item=_key)
    if not humans.empty:
        references["human majority"] = majority(humans, item_col="item",
                                                value_col="answer").dropna()
    expected = answers[["item", "question_id"]].drop_duplicates().merge(
        study.questions[["question_id", "pass_answer"]], on="question_id")
    if not expected.empty:
        references["expected answer"] = expected.set_index("item").pass_answer
    by_judge = {j: g.set_index("item").answer for j, g in answers.groupby("judge", sort=True)}
    rows = []
    for reference, ref in references.items():
        for a, b in itertools.combinations(sorted(by_judge), 2):
            common = by_judge[a].index.intersection(by_judge[b].index).intersection(ref.index)
            if not len(common):
                continue
            right_a = by_judge[a][common] == ref[common]
            right_b = by_judge[b][common] == ref[common]
            test = mcnemar_exact(right_a.to_numpy(), right_b.to_numpy())
            rows.append({"reference": reference, "judge_a": a, "judge_b": b,
                         "n_decisions": test.n, "accuracy_a": right_a.mean(),
                         "accuracy_b": right_b.mean(), "a_right_b_wrong": test.b,
                         "a_wrong_b_right": test.c, "mcnemar_p": test.p})
    return pd.DataFrame(rows, columns=["reference", "judge_a", "judge_b", "n_decisions",
                                       "accuracy_a", "accuracy_b", "a_right_b_wrong",
                                       "a_wrong_b_right", "mcnemar_p"])
