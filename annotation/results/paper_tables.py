"""The seed papers' judge tables, from the report's own rows: ``vif_table.csv`` and
``trace_table.csv``.

* :func:`vif_table`: VIF-Bench Table 7 ("VIF-Bench", judge validation): per criterion and
  the criteria average, PLCC and SRCC of each judge and of the human baseline, with their
  intervals, read from ``ratings.csv`` (no number is computed here). Two blocks, told
  apart by ``reference``: ``leave-one-out mean`` (like for like: the judges against the
  same leave-one-out means as the human baseline ``human (leave-one-out)``, whose rows
  follow, one per ``paired_judge`` where a judge's outputs differ) and ``human mean``
  (the judges against the mean of all annotators, as the paper prints them; it flatters
  a judge next to a leave-one-out human).
* :func:`trace_table`: TRACE-Bench Table 7 ("TRACE-Bench: Decomposing and Diagnosing
  Multi-Reference Image Generation", App. C.1): per judge and the ensemble, Pearson,
  Spearman and MAE between the judge's and the humans' operator scores and Agreement on
  individual decisions (built in :mod:`annotation.results.operators`, which knows the
  operator scores).
"""

from __future__ import annotations

import pandas as pd

from annotation.results.operators import trace_table
from annotation.results.ratings import ENSEMBLE, HUMAN_LOO, HUMAN_MEAN, HUMAN_PAIRWISE, LOO_MEAN

__all__ = ["VIF_STATS", "judge_order", "trace_table", "vif_table"]

VIF_STATS = ("plcc", "srcc")


def judge_order(judges: list[str]) -> list[str]:
    """Judges sorted by name, ensembles after the single judges (as in the papers)."""
    return sorted(dict.fromkeys(judges), key=lambda j: (j.startswith("ensemble"), j))


def vif_table(ratings: pd.DataFrame) -> pd.DataFrame:
    """``vif_table.csv`` from ``ratings.csv`` (see the module docstring).

    Columns: ``group``, ``reference``, ``judge``, ``paired_judge``, then for every
    criterion and ``average`` (in the order of ``ratings``): ``<criterion>_n_items``,
    ``<criterion>_plcc`` with ``_plcc_lo``/``_plcc_hi``, ``<criterion>_srcc`` with
    ``_srcc_lo``/``_srcc_hi``. Per group (``all`` first, then the ``--by`` groups and the
    Fisher-z pool of the groups), the leave-one-out block then the human-mean block.
    """
    columns = ["group", "reference", "judge", "paired_judge"]
    if ratings.empty:
        return pd.DataFrame(columns=columns)
    rows = ratings[~ratings.judge.isin([HUMAN_PAIRWISE])
                   & ratings.reference.isin([LOO_MEAN, HUMAN_MEAN])
                   & ~ratings.criterion.str.contains(" ~ ", regex=False)]
    criteria = list(dict.fromkeys(rows.criterion))
    for criterion in criteria:
        columns.append(f"{criterion}_n_items")
        for stat in VIF_STATS:
            columns += [f"{criterion}_{stat}", f"{criterion}_{stat}_lo",
                        f"{criterion}_{stat}_hi"]
    out = []
    for group in dict.fromkeys(rows.group):
        mine = rows[rows.group == group]
        judges = judge_order([j for j in mine.judge if j != HUMAN_LOO])
        human = mine[mine.judge == HUMAN_LOO]
        paired = sorted(set(human.paired_judge.fillna("")) - {""},
                        key=lambda j: (j == ENSEMBLE, j))
        keys = [(LOO_MEAN, j, "") for j in judges]
        keys += [(LOO_MEAN, HUMAN_LOO, p) for p in ["", *paired]
                 if p == "" or p in set(human.paired_judge)]
        keys += [(HUMAN_MEAN, j, "") for j in judges]
        for reference, judge, pair in keys:
            found = mine[(mine.reference == reference) & (mine.judge == judge)
                         & (mine.paired_judge.fillna("") == pair)]
            if found.empty:
                continue
            row: dict[str, object] = {"group": group, "reference": reference, "judge": judge,
                                      "paired_judge": pair}
            by_criterion = found.set_index("criterion")
            for criterion in criteria:
                if criterion not in by_criterion.index:
                    continue
                source = by_criterion.loc[criterion]
                row[f"{criterion}_n_items"] = source["n_items"]
                for stat in VIF_STATS:
                    for suffix in ("", "_lo", "_hi"):
                        row[f"{criterion}_{stat}{suffix}"] = source[f"{stat}{suffix}"]
            out.append(row)
    table = pd.DataFrame(out, columns=columns)
    for column in (c for c in columns if c.endswith("_n_items")):
        table[column] = table[column].astype("Int64")
    return table
