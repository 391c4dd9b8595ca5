"""TIIF-Bench's tables: ``tiif_table.csv`` (Table 2 layout) and ``tiif_pairs.csv`` (short
vs long prompts).

"TIIF-Bench: How Does Your T2I Model Follow Your Instructions?", Sec. 3-4: a prompt comes
in a short and a long form sharing one list of yes/no questions with expected answers; an
image's score is the share of its questions answered as expected (x 100). Prompts are
built from 10 concept pools in three groups (Sec. 3.1): **attribute** (color, shape,
texture), **relation** (2D and 3D spatial relation, action) and **reasoning** (numeracy,
differentiation, comparison, negation). *Basic following* combines concepts of one group,
*advanced following* combines two groups and adds text rendering and style; *designer*
prompts (``real_world``) stand apart. So a dimension (``meta.dimension``, e.g.
``numeracy+color``) falls into one of nine sub-groups (:func:`subgroup`): ``attribute``,
``relation``, ``reasoning`` (basic), ``attribute+relation``, ``attribute+reasoning``,
``relation+reasoning``, ``style``, ``text`` (advanced), ``designer``.

* :func:`image_scores`: per scorer (each judge, the VLM majority ensemble, and the
  ``human majority``: per question the strict majority of the annotators) and output, the
  share of decided questions passed x 100 (:mod:`annotation.results.decisions`: unparsed or
  unanswered questions are no decision under ``--unanswered omit``, failed under
  ``fail``).
* :func:`tiif_table`: per scorer, generator, variant (``short``/``long``) and column (the
  nine sub-groups, ``basic``, ``advanced``, ``overall``): the mean image score and the
  number of images. Every column is a mean over images (a tier or ``overall`` pools the
  images of its sub-groups; it is not a mean of the sub-group means).
* :func:`tiif_pairs`: per scorer and generator, over the prompts scored in both forms: the
  mean short and long scores and their paired difference (short minus long) with the
  Student-t interval of the mean difference.

Pure functions; a project without ``meta.dimension`` / ``meta.variant`` has no rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from annotation.results.checklist import HUMAN_MAJORITY, SEP, StudyDecisions
from annotation.results.paper_tables import judge_order
from annotation.results.study import StudyData
from annotation.stats.means import mean_interval

POOLS = {"color": "attribute", "shape": "attribute", "texture": "attribute",
         "2d": "relation", "3d": "relation", "action": "relation",
         "numeracy": "reasoning", "differentiation": "reasoning",
         "comparison": "reasoning", "negation": "reasoning"}
GROUPS = ("attribute", "relation", "reasoning")
SUBGROUPS = ("attribute", "relation", "reasoning", "attribute+relation",
             "attribute+reasoning", "relation+reasoning", "style", "text", "designer")
TIERS = {"basic": SUBGROUPS[:3], "advanced": SUBGROUPS[3:8], "designer": ("designer",)}
#: the columns of Table 2, in its order
COLUMNS = ("overall", "basic", *TIERS["basic"], "advanced", *TIERS["advanced"], "designer")
TABLE_COLUMNS = ["scorer", "generator", "variant", "column", "n_images", "score"]
PAIR_COLUMNS = ["scorer", "generator", "n_prompts", "mean_short", "mean_long", "diff",
                "diff_lo", "diff_hi"]


def subgroup(dimension: str) -> str | None:
    """The sub-group of a TIIF-Bench dimension (see the module docstring), or None for a
    name it does not know. ``2d_spatial_relation`` and ``3d_spatial_relation`` are the
    spatial pools, also as ``+2d`` / ``+3d`` in combinations."""
    name = dimension.strip().lower()
    if name in ("style", "text"):
        return name
    if name in ("real_world", "designer"):
        return "designer"
    parts = [p.split("_")[0] for p in name.split("+")]
    pools = {POOLS.get(p) for p in parts}
    if None in pools or not pools:
        return None
    ordered = [g for g in GROUPS if g in pools]
    return "+".join(ordered)


def image_scores(study: StudyData, decided: StudyDecisions) -> pd.DataFrame:
    """scorer, output_id, score (share of decided questions passed x 100), n_questions,
    sorted by scorer and output.

    Grouped on integer codes (``np.bincount`` over scorer x output cells), never a grouped
    copy of the judges' decisions: at 100,000 outputs (6 million decisions) the groupby
    and its string columns were the leaderboard's rise of a gigabyte (issue #18). The
    shares are sums of 0/1 over counts: exactly what the grouped mean gave."""
    expected = study.questions.set_index("question_id")["pass_answer"]
    judges = decided.judges
    passed = judges["passed"].to_numpy(dtype=float, copy=True)
    # the VLM majority's rows carry an answer but no ``passed``: score them the same way
    derive = np.flatnonzero(np.isnan(passed)
                            & judges["answer"].isin(("yes", "no")).to_numpy(dtype=bool))
    if len(derive):
        rows = judges.iloc[derive]
        wanted = rows["question_id"].map(expected).to_numpy(dtype=object)
        passed[derive] = (rows["answer"].to_numpy(dtype=object) == wanted).astype(float)
    keep = np.flatnonzero(~np.isnan(passed))
    scorer_codes, scorer_names = pd.factorize(judges["judge"].take(keep))
    output_codes, output_names = pd.factorize(judges["output_id"].take(keep))
    values = [passed[keep]]
    scorers = [str(n) for n in scorer_names]
    outputs = [np.asarray(output_names, dtype=object)]
    if len(decided.majority):
        key = pd.Series(decided.majority.index.astype(str), index=decided.majority.index)
        parts = key.str.split(SEP, n=1, regex=False)
        wanted_human = parts.str[1].map(expected)
        human_outputs = parts.str[0].to_numpy(dtype=object)
        values.append((decided.majority["answer"] == wanted_human).astype(float).to_numpy())
        scorer_codes = np.concatenate([scorer_codes, np.full(len(key), len(scorers))])
        scorers.append(HUMAN_MAJORITY)
        output_codes = np.concatenate([output_codes,
                                       np.arange(len(human_outputs)) + len(outputs[0])])
        outputs.append(human_outputs)
    names = sorted(set(scorers))
    scorer_rank = np.array([names.index(n) for n in scorers], dtype=np.int64)
    unified, output_ids = pd.factorize(np.concatenate(outputs), sort=True)
    cell = scorer_rank[scorer_codes] * len(output_ids) + unified[output_codes]
    size = len(names) * len(output_ids)
    counts = np.bincount(cell, minlength=size)
    sums = np.bincount(cell, weights=np.concatenate(values), minlength=size)
    found = np.flatnonzero(counts)
    return pd.DataFrame({
        "scorer": pd.Series(np.asarray(names, dtype=object)[found // max(len(output_ids), 1)],
                            dtype="str"),
        "output_id": pd.Series(np.asarray(output_ids, dtype=object)[
            found % max(len(output_ids), 1)], dtype="str"),
        "score": sums[found] / counts[found] * 100,
        "n_questions": counts[found].astype(np.int64)})


def _tiif_outputs(study: StudyData) -> pd.DataFrame:
    """output_id, generator, checklist_id, variant, subgroup of the TIIF outputs."""
    o = study.outputs
    if "meta.dimension" not in o.columns or "meta.variant" not in o.columns:
        return pd.DataFrame(columns=["output_id", "generator", "checklist_id", "variant",
                                     "subgroup"])
    out = o[["output_id", "generator", "checklist_id", "meta.variant", "meta.dimension"]]
    out = out.rename(columns={"meta.variant": "variant"})
    out = out.assign(subgroup=out["meta.dimension"].map(
        lambda d: subgroup(d) if isinstance(d, str) else None))
    return out[out.subgroup.notna() & out.variant.isin(("short", "long"))].drop(
        columns=["meta.dimension"])


def _scored(study: StudyData, decided: StudyDecisions) -> pd.DataFrame:
    outputs = _tiif_outputs(study)
    if outputs.empty:
        return outputs.assign(scorer=None, score=None)
    return image_scores(study, decided).merge(outputs, on="output_id", how="inner")


def _scorer_order(names: pd.Series) -> list[str]:
    """The judges as the papers order them (:func:`judge_order`), the humans last."""
    found = set(names)
    return judge_order(sorted(found - {HUMAN_MAJORITY})) + (
        [HUMAN_MAJORITY] if HUMAN_MAJORITY in found else [])


def tiif_table(study: StudyData, decided: StudyDecisions) -> pd.DataFrame:
    """``tiif_table.csv`` (see the module docstring), long format: one row per scorer,
    generator, variant and column."""
    scored = _scored(study, decided)
    if scored.empty:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    members = {c: (c,) for c in SUBGROUPS} | {"basic": TIERS["basic"],
                                              "advanced": TIERS["advanced"],
                                              "overall": SUBGROUPS}
    rows = []
    for scorer in _scorer_order(scored.scorer):
        mine = scored[scored.scorer == scorer]
        for generator in sorted(set(mine.generator)):
            for variant in ("short", "long"):
                part = mine[(mine.generator == generator) & (mine.variant == variant)]
                for column in COLUMNS:
                    cell = part[part.subgroup.isin(members[column])]
                    if cell.empty:
                        continue
                    rows.append({"scorer": scorer, "generator": generator,
                                 "variant": variant, "column": column,
                                 "n_images": len(cell), "score": float(cell.score.mean())})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def tiif_wide(table: pd.DataFrame) -> pd.DataFrame:
    """``tiif_table`` as the paper prints it: a row per scorer and generator, a column per
    Table 2 column and variant (``overall short``, ``overall long``, ...)."""
    if table.empty:
        return pd.DataFrame(columns=["scorer", "generator"])
    wide = table.assign(head=table.column + " " + table.variant).pivot_table(
        index=["scorer", "generator"], columns="head", values="score", sort=False)
    order = [f"{c} {v}" for c in COLUMNS for v in ("short", "long") if f"{c} {v}" in wide]
    return wide[order].reset_index()


def tiif_pairs(study: StudyData, decided: StudyDecisions) -> pd.DataFrame:
    """``tiif_pairs.csv`` (see the module docstring)."""
    scored = _scored(study, decided)
    if scored.empty:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    rows = []
    for scorer in _scorer_order(scored.scorer):
        mine = scored[scored.scorer == scorer]
        wide = mine.pivot_table(index=["generator", "checklist_id"], columns="variant",
                                values="score")
        if not {"short", "long"} <= set(wide.columns):
            continue
        wide = wide.dropna(subset=["short", "long"])
        for generator, g in wide.groupby(level="generator", sort=True):
            d = mean_interval(g["short"] - g["long"]).iloc[0]
            rows.append({"scorer": scorer, "generator": generator, "n_prompts": len(g),
                         "mean_short": float(g["short"].mean()),
                         "mean_long": float(g["long"].mean()), "diff": d["mean"],
                         "diff_lo": d["mean_lo"], "diff_hi": d["mean_hi"]})
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)
