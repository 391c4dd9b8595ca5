"""Mean scores per group: ``group_scores.csv`` and VIF-Bench's conflict table
``vif_conflicts.csv``.

* :func:`group_scores_table`: per group (``all``, then the ``--by`` groups of
  :func:`annotation.results.study.output_groups`), generator, scorer (each judge, and the
  ``human mean``: the mean of the annotators' scores of an output) and criterion (plus the
  criteria ``average``): the number of outputs, the mean score, its standard deviation and
  Student-t interval (:func:`annotation.stats.means.mean_interval`; outputs are the units).
  The layout of "VIF-Bench: Evaluating Visual Instruction Following in Multi-Reference
  Image Generation", App. F.1-F.2 (Figs. 11-12: judge scores by number of references, of
  visual instructions and by VI type: ``--by task.n_references`` ...).
* :func:`conflict_scores_table`: the same paper's Sec. 4.3 (Fig. 6 left): per conflict type
  (``orientation``, ``light``, ``wind``, ``pose``, ``any``), generator, scorer and criterion,
  the mean score on tasks with the conflict and on tasks that have that instruction but no
  conflict, their difference (conflict minus no conflict) with Welch's interval
  (:func:`annotation.stats.means.welch_difference`), and how many of those tasks' labels
  are verified, published or the rules' (:mod:`annotation.results.features`: verified
  where verifiers decided, the published label otherwise).

Pure functions of a :class:`~annotation.results.study.StudyData`.
"""

from __future__ import annotations

import pandas as pd

from annotation.results.features import CONFLICTS, SOURCES
from annotation.results.paper_tables import judge_order
from annotation.results.ratings import AVERAGE, HUMAN_MEAN, with_average
from annotation.results.study import GroupBy, StudyData, output_groups
from annotation.stats.means import mean_interval, welch_difference

GROUP_COLUMNS = ["group", "generator", "scorer", "criterion", "n_outputs", "mean", "sd",
                 "mean_lo", "mean_hi"]
CONFLICT_COLUMNS = ["conflict", "generator", "scorer", "criterion", "n_conflict",
                    "mean_conflict", "n_no_conflict", "mean_no_conflict", "diff", "diff_lo",
                    "diff_hi", "df", "p", *(f"labels_{s}" for s in SOURCES)]


def output_scores(study: StudyData) -> pd.DataFrame:
    """One score per output, scorer and criterion: output_id, scorer, criterion, score.
    Judges as they scored; the humans as the mean of the annotators (``human mean``); both
    with the criteria ``average`` where an output has every criterion."""
    criteria = list(study.criteria.name)
    judges = with_average(study.judge_scores, "judge", criteria).rename(
        columns={"judge": "scorer"})
    humans = with_average(study.human_scores, "annotator", criteria)
    if len(humans):
        humans = (humans.groupby(["output_id", "criterion"], sort=False)["score"].mean()
                  .reset_index().assign(scorer=HUMAN_MEAN))
    frames = [f[["output_id", "scorer", "criterion", "score"]] for f in (judges, humans)
              if len(f)]
    if not frames:
        return pd.DataFrame(columns=["output_id", "scorer", "criterion", "score"])
    return pd.concat(frames, ignore_index=True)


def _order(scores: pd.DataFrame) -> tuple[list[str], list[str]]:
    present = set(scores.scorer.unique())
    scorers = judge_order(sorted(present - {HUMAN_MEAN})) + (
        [HUMAN_MEAN] if HUMAN_MEAN in present else [])
    order = list(scores.criterion.unique())  # in order of first appearance
    criteria = [c for c in order if c != AVERAGE] + ([AVERAGE] if AVERAGE in order else [])
    return scorers, criteria


def group_scores_table(study: StudyData, *, by: GroupBy = None) -> pd.DataFrame:
    """``group_scores.csv`` (see the module docstring)."""
    scores = output_scores(study)
    if scores.empty:
        return pd.DataFrame(columns=GROUP_COLUMNS)
    generator = study.outputs.set_index("output_id")["generator"]
    scores = scores.assign(generator=generator.reindex(scores.output_id).to_numpy())
    scorers, criteria = _order(scores)
    rows = []
    for group, members in output_groups(study, by):
        mine = scores if members is None else scores[scores.output_id.isin(members)]
        for (gen, scorer, criterion), g in mine.groupby(["generator", "scorer", "criterion"],
                                                       sort=False):
            stats = mean_interval(g.score).iloc[0]
            rows.append({"group": group, "generator": gen, "scorer": scorer,
                         "criterion": criterion, "n_outputs": int(stats["n"]),
                         **{k: stats[k] for k in ("mean", "sd", "mean_lo", "mean_hi")}})
    table = pd.DataFrame(rows, columns=GROUP_COLUMNS)
    groups = [g for g, _ in output_groups(study, by)]
    key = {"group": groups, "generator": sorted(set(table.generator)), "scorer": scorers,
           "criterion": criteria}
    return table.sort_values(list(key), key=lambda col: col.map(
        {v: i for i, v in enumerate(key[col.name])}), kind="stable").reset_index(drop=True)


def conflict_scores_table(study: StudyData) -> pd.DataFrame:
    """``vif_conflicts.csv`` (see the module docstring); no rows for a project without
    conflict labels."""
    if "conflict.any" not in study.outputs.columns or study.outputs["conflict.any"].isna().all():
        return pd.DataFrame(columns=CONFLICT_COLUMNS)
    scores = output_scores(study)
    outputs = study.outputs.set_index("output_id")
    scorers, criteria = _order(scores)
    rows = []
    for kind in (*CONFLICTS, "any"):
        label = outputs[f"conflict.{kind}"]
        source = outputs[f"conflict.{kind}.source"]
        labelled = label[label.notna()]
        if labelled.empty:
            continue
        on = scores[scores.output_id.isin(labelled.index)]
        on = on.assign(conflict=labelled.reindex(on.output_id).to_numpy().astype(bool),
                       generator=outputs["generator"].reindex(on.output_id).to_numpy())
        tasks = outputs.loc[labelled.index, ["generator", "task_id"]].assign(
            source=source.reindex(labelled.index).to_numpy()).drop_duplicates(
            ["generator", "task_id"])
        counts = {(gen, s): n for (gen, s), n in tasks.groupby(["generator", "source"])
                  .size().items()}
        cells = dict(tuple(on.groupby(["generator", "scorer", "criterion"], sort=False)))
        for gen in sorted(set(on.generator)):
            for scorer in scorers:
                for criterion in criteria:
                    g = cells.get((gen, scorer, criterion))
                    if g is None:
                        continue
                    d = welch_difference(g.score[g.conflict], g.score[~g.conflict]).iloc[0]
                    rows.append({
                        "conflict": kind, "generator": gen, "scorer": scorer,
                        "criterion": criterion, "n_conflict": int(d["n_x"]),
                        "mean_conflict": d["mean_x"], "n_no_conflict": int(d["n_y"]),
                        "mean_no_conflict": d["mean_y"],
                        **{k: d[k] for k in ("diff", "diff_lo", "diff_hi", "df", "p")},
                        **{f"labels_{s}": int(counts.get((gen, s), 0)) for s in SOURCES}})
    return pd.DataFrame(rows, columns=CONFLICT_COLUMNS)
