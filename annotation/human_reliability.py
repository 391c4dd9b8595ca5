"""Humans among themselves: the rows of ``reliability.csv``.

One row per rating criterion and one for the checklist (``checklist (yes/no)``, nominal),
from :func:`annotation.stats.reliability.alpha_table`: Krippendorff's alpha at the interval,
ordinal and nominal levels, its bootstrap interval at the criterion's own level of
measurement (``level`` in the bundle: interval by default), pairwise % agreement, Gwet's
AC1, Fleiss' kappa where every item has the same number of annotators, and ICC(A,1) /
ICC(A,k) where the design is complete. A decision of the checklist is one (output,
question); ``cant_tell`` is missing.
"""

from __future__ import annotations

import pandas as pd

from annotation.stats.reliability import alpha_table
from annotation.study import StudyData

CHECKLIST = "checklist (yes/no)"
COLUMNS = ["criterion", "group", "n_items", "n_annotators", "alpha_interval", "alpha_ordinal",
           "alpha_nominal", "alpha_lo", "alpha_hi", "ci_level", "pct_agreement", "ac1",
           "fleiss_kappa", "icc_a1", "icc_ak"]


def reliability_table(study: StudyData, *, n_boot: int = 1000, seed: int = 0,
                      by: str | None = None) -> pd.DataFrame:
    """The ``reliability.csv`` table (see the module docstring)."""
    levels = dict(zip(study.criteria.name, study.criteria.level))
    sources: list[tuple[str, str, pd.DataFrame]] = []
    for criterion, df in study.human_scores.groupby("criterion", sort=False):
        sources.append((criterion, levels.get(criterion, "interval"),
                        df.assign(item=df.output_id, value=df.score)))
    answers = study.human_answers
    if not answers.empty:
        decisions = answers.assign(item=answers.output_id + " / " + answers.question_id,
                                   value=answers.answer)
        sources.append((CHECKLIST, "nominal", decisions))
    groups: list[tuple[str, set[str] | None]] = [("all", None)]
    if by is not None:
        for value, df in study.outputs.groupby(by, dropna=True, sort=True):
            groups.append((f"{by}={value}", set(df.output_id)))
    rows = []
    for criterion, level, data in sources:
        for group, members in groups:
            part = data if members is None else data[data.output_id.isin(members)]
            if part.annotator.nunique() < 2:
                continue
            stats = alpha_table(part, item_col="item", rater_col="annotator", value_col="value",
                                n_boot=n_boot, seed=seed, ci_level=level).iloc[0]
            row = {"criterion": criterion, "group": group}
            row.update({c: stats.get(c) for c in COLUMNS[2:]})
            rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)
