"""Humans among themselves: the rows of ``reliability.csv``.

One row per rating criterion and one for the checklist (``checklist (yes/no)``, nominal),
from :func:`annotation.stats.reliability.alpha_table`: Krippendorff's alpha at the interval,
ordinal and nominal levels, its bootstrap interval at the criterion's own level of
measurement (``level`` in the bundle: interval by default), pairwise % agreement, Gwet's
AC1, Fleiss' kappa where every item has the same number of annotators, and ICC(A,1) /
ICC(A,k) (McGraw & Wong's two-way ANOVA for a complete design, Henderson III variance
components for an incomplete one). A decision of the checklist is one (output, question);
``cant_tell`` is missing. Bootstrap intervals resample **outputs**: a checklist replicate
keeps all questions of a drawn output together (Davison & Hinkley 1997, Bootstrap Methods
and their Application, sec. 3.8).

Columns after the original ones (appended, never reordered):

* ``n_outputs``: distinct outputs with at least one (non-missing) answer;
* ``prevalence_yes``: checklist row, share of "yes" among the yes/no human answers (alpha
  and kappa collapse on a skewed prevalence while agreement stays high); NaN for ratings;
* ``icc_method``: how icc_a1/icc_ak were computed ("" when not at all);
* ``icc_a1_lo``, ``icc_a1_hi``, ``icc_ak_lo``, ``icc_ak_hi``: their intervals (F-based for a
  complete design, a bootstrap over outputs for an incomplete one);
* ``judge_ceiling``: sqrt(ICC(A,k)), the bound on how well any judge can correlate with
  the mean of the human ratings; NaN when ICC(A,k) <= 0 or NaN;
* ``n_boot``: bootstrap replicates actually used for the alpha interval (0: no interval);
* ``note``: why a statistic is NaN, reasons joined by "; " ("" when nothing to say).

AC1 takes its categories from the criterion's scale (min, max, step: 1..10 step 1 is
q = 10 whatever the annotators used), ("yes", "no") for the checklist; a continuous
criterion (no step) has no AC1.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from annotation.results.study import GroupBy, StudyData, output_groups
from annotation.stats.reliability import LEVELS, alpha_table, is_missing_value

CHECKLIST = "checklist (yes/no)"
CHECKLIST_CATEGORIES = ("yes", "no")
COLUMNS = ["criterion", "group", "n_items", "n_annotators", "alpha_interval", "alpha_ordinal",
           "alpha_nominal", "alpha_lo", "alpha_hi", "ci_level", "pct_agreement", "ac1",
           "fleiss_kappa", "icc_a1", "icc_ak",
           # appended later: keep the ones above in place
           "n_outputs", "prevalence_yes", "icc_method", "icc_a1_lo", "icc_a1_hi", "icc_ak_lo",
           "icc_ak_hi", "judge_ceiling", "n_boot", "note"]
_FROM_ALPHA_TABLE = [c for c in COLUMNS[2:] if c not in ("n_outputs", "prevalence_yes", "note")]
_GRID_TOL = 1e-9  # as annotation.formats.validate: a score is on the scale's step within 1e-9 steps
MAX_CATEGORIES = 1001
"""Scales with more steps than this are treated as continuous for AC1 (a counts matrix of
items x categories would not fit in memory, and AC1 on so fine a grid means little)."""


def scale_categories(lo: float, hi: float, step: float | None,
                     observed: list[float]) -> tuple[list[float] | None, str]:
    """The categories of a criterion's scale for Gwet's AC1, and a note ("" if none).

    ``lo, lo + step, ..., hi``: in Gwet's AC1 q is the number of categories of the scale,
    not of the values the raters happened to use (Gwet 2008, "Computing inter-rater
    reliability and its variance in the presence of high agreement", Br J Math Stat
    Psychol 61:29). An observed score on the grid (within 1e-9 steps, the tolerance of the
    bundle validation) stands for its grid point as it is, so that exact comparison finds
    it; an observed score off the grid is added as a category of its own, with a note.
    ``None`` for a continuous scale (``step`` NULL or <= 0), or one of more than
    :data:`MAX_CATEGORIES` steps (with a note).
    """
    if step is None or not math.isfinite(step) or step <= 0:
        return None, ""
    n_steps = int(math.floor((hi - lo) / step + _GRID_TOL))
    if n_steps + 1 > MAX_CATEGORIES:
        return None, f"AC1: more than {MAX_CATEGORIES} scale steps, treated as continuous"
    grid: list[float] = [float(np.round(lo + i * step, 12)) for i in range(n_steps + 1)]
    taken: set[int] = set()
    off: list[float] = []
    for v in sorted(set(observed)):
        k = (v - lo) / step
        i = round(k)
        if abs(k - i) <= _GRID_TOL and 0 <= i <= n_steps and i not in taken:
            grid[i] = v
            taken.add(i)
        elif v not in grid:
            off.append(v)
    note = ""
    if off:
        note = (f"AC1: {len(off)} score value(s) off the criterion's min/max/step grid "
                "counted as extra categories")
    return sorted(grid + off), note


@dataclass(frozen=True)
class _Source:
    criterion: str
    level: str
    data: pd.DataFrame
    categories: Sequence[Hashable] | None = None
    continuous: bool = False
    note: str = ""


def _criterion_source(criterion: str, data: pd.DataFrame,
                      criteria: pd.DataFrame | None) -> _Source:
    if criteria is None or criterion not in criteria.index:
        return _Source(criterion, "interval", data,
                       note="AC1: criterion not defined, categories from the observed scores")
    spec = criteria.loc[criterion]
    level = spec.get("level")
    level = level if isinstance(level, str) and level in LEVELS else "interval"
    step = spec.get("step")
    step = None if step is None or pd.isna(step) else float(step)
    observed = [float(v) for v in data.value if not is_missing_value(v)]
    cats, note = scale_categories(float(spec["min"]), float(spec["max"]), step, observed)
    return _Source(criterion, level, data, cats, cats is None, note)


def reliability_table(study: StudyData, *, n_boot: int = 1000, seed: int = 0,
                      by: GroupBy = None) -> pd.DataFrame:
    """The ``reliability.csv`` table (see the module docstring).

    Groups (``by``) with fewer than two annotators get no row.
    """
    criteria = study.criteria.set_index("name") if "name" in study.criteria else None
    sources: list[_Source] = []
    for criterion, df in study.human_scores.groupby("criterion", sort=False):
        sources.append(_criterion_source(str(criterion), df.assign(item=df.output_id,
                                                                   value=df.score), criteria))
    answers = study.human_answers
    if not answers.empty:
        decisions = answers.assign(item=answers.output_id + " / " + answers.question_id,
                                   value=answers.answer)
        sources.append(_Source(CHECKLIST, "nominal", decisions, CHECKLIST_CATEGORIES))
    groups = output_groups(study, by)
    rows = []
    for src in sources:
        for group, members in groups:
            part = src.data if members is None else src.data[src.data.output_id.isin(members)]
            if part.annotator.nunique() < 2:
                continue
            stats = alpha_table(part, item_col="item", rater_col="annotator", value_col="value",
                                n_boot=n_boot, seed=seed,
                                ci_level=src.level,  # type: ignore[arg-type]
                                categories=src.categories, continuous=src.continuous,
                                cluster_col="output_id", cluster_noun="outputs").iloc[0]
            row: dict[str, object] = {"criterion": src.criterion, "group": group}
            row.update({c: stats.get(c) for c in _FROM_ALPHA_TABLE})
            answered = part[~part.value.map(is_missing_value).astype(bool)]
            row["n_outputs"] = int(answered.output_id.nunique())
            row["prevalence_yes"] = math.nan
            if src.criterion == CHECKLIST:
                yes_no = answered.value.astype(str).str.strip().str.lower()
                yes_no = yes_no[yes_no.isin(CHECKLIST_CATEGORIES)]
                if len(yes_no):
                    row["prevalence_yes"] = float((yes_no == "yes").mean())
            row["note"] = "; ".join(n for n in (stats.get("note"), src.note) if n)
            rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)
