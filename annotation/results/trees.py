"""Results of diagnostic-tree review (TRACE-Bench): automatic localization, Table 3,
Figure 11, automatic vs human localization, human vs human, failure reasons.

"TRACE-Bench: Decomposing and Diagnosing Multi-Reference Image Generation" (Wang et al.
2026) decomposes each case into a diagnostic tree
(Sec. 3.5, Appendix C.2), judges every node again and attributes each operator instance
that fails at the root to the component removed by the first step where it passes
(Sec. 4.4, :mod:`annotation.trace.localize`). Appendix C.3 validates this against humans: "human
annotators inspect the same trees and identify the node at which each failure originates.
The automatic and human localizations agree in 82.6% of cases" (200 Emu3.5 cases). 82.6 %
of 200 is not a whole number, so the unit there is most likely the localized failure, not
the tree; this module reports the failing instance as its unit (``level`` ``node`` and
``category``) and, more strictly, the reviewed tree (``level`` ``case``: every failing
instance of the tree agrees).

Every function but the loaders (those taking a :class:`~annotation.store.Store`) is pure
and returns a tidy DataFrame:

* :func:`load_automatic`: the automatic localization of
  :func:`annotation.trace.trees.automatic_localization` over every tree unit (root output x
  operator instance; computed in bulk, tested equal), with the automatic origin (the
  first passing node, or ``persistent`` for a Persistent Failure).
* :func:`table3` / :func:`table3_long`: Table 3, per operator and overall
  (:func:`annotation.trace.localize.distribution_table` /
  :func:`~annotation.trace.localize.distribution`);
  :func:`figure11`: the cumulative pass rate over relative depth per operator
  (:func:`annotation.trace.localize.cumulative_pass_rate`).
* :func:`review_pairs` + :func:`auto_vs_human`: each current human review of an instance
  the judge fails at the root, the human origin (node id, ``persistent``,
  ``not_a_failure``) against the automatic one: percent agreement with its Wilson (1927)
  interval and Cohen's (1960) kappa with the Fleiss-Cohen-Everitt (1969) interval, on the
  node and on the category (a node's category is the rule of the step into it, Sec. 4.4:
  Rule 1 Global Reference, Rule 2 Joint Composition, Rules 3-4 Relation / Attribute;
  ``persistent`` is Persistent Failure; ``not_a_failure`` is its own label, "Not a
  failure", a disagreement with the judge's decision at the root). Kappa's categories are
  the union of the labels either side used; node ids are pooled across trees by name
  (``N1`` of one tree and ``N1`` of another are one label), as the paper's node names
  (Figure 10) are the same in every tree.
* :func:`human_agreement`: reviewers against each other where two or more reviewed the
  same instance of the same tree: mean pairwise agreement, Cohen's kappa when exactly two reviewers
  are involved, Krippendorff's (2011) alpha, nominal, in general.
* :func:`failure_reasons`: the reviewers' failure reasons (Sec. 4.4 / Appendix C case
  tables) per operator.
* ``cases``: the per-case table of the paper's Fig. 1/4
  (:func:`annotation.results.trace_cases.case_table`), written with the boxes drawn on
  the node images by :func:`write_tree_report`.
* :func:`false_passes` / :func:`passed_instances`: how often the judge passed at the root
  what a reviewer failed (reviewers check a blind sample of the passed instances), per
  operator with a Wilson interval; a passed instance no reviewer opened is "not reviewed".
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from annotation.results.trace_cases import case_table, write_cases
from annotation.stats.agreement import cohen_kappa, contingency_table
from annotation.stats.clustered import clustered_wilson
from annotation.stats.reliability import krippendorff_alpha
from annotation.store import Store
from annotation.store import adjudications as adjudication_rows
from annotation.store import project as project_rows
from annotation.store import trees as tree_rows
from annotation.trace.formula import FormulaError
from annotation.trace.localize import (
    CATEGORIES,
    OPERATORS,
    OVERALL,
    PERSISTENT_FAILURE,
    RULE_CATEGORY,
    STABLE_SUCCESS,
    cumulative_pass_rate,
    distribution,
    distribution_table,
    instance_results,
    localize,
)
from annotation.trace.nodes import output_node
from annotation.trace.trees import Tree, instance_key, load_tree, tree_units
from annotation.work.tree_review import NOT_A_FAILURE, PERSISTENT, REASONS, get_settings, judge_for

__all__ = [
    "AUTOMATIC_COLUMNS", "NOT_A_FAILURE_LABEL", "NO_REASON", "PAIR_COLUMNS", "TABLES",
    "UNKNOWN_NODE", "auto_vs_human", "data_stamp", "failure_reasons", "false_passes",
    "figure11", "passed_instances",
    "figure11_chart", "human_agreement", "human_category", "load_automatic", "load_nodes",
    "load_reviews", "overall_progress", "progress_by_reviewer", "review_pairs",
    "reviews_jsonl", "reviews_jsonl_rows", "table3", "table3_chart", "table3_long",
    "tree_report", "tree_tables", "write_tree_report",
]

#: The category of a human origin ``not_a_failure``: the judge was wrong at the root.
NOT_A_FAILURE_LABEL = "Not a failure"
#: The category of a human origin that is no node of the tree, or the root (no rule).
UNKNOWN_NODE = "Unknown node"
#: The reason of a review without one (``not_a_failure`` needs none).
NO_REASON = "none"

AUTOMATIC_COLUMNS = [
    "output_id", "task_id", "generator", "judge", "key", "instance", "operator", "target",
    "category", "root_passed", "first_pass", "rule", "removed", "path", "depth",
    "rel_depth", "unstable", "auto_origin",
]
NODE_COLUMNS = ["task_id", "node", "parent", "depth", "rule", "category", "removed",
                "formula"]
REVIEW_COLUMNS = ["review_id", "reviewer", "output_id", "task_id", "generator", "instance",
                  "origin", "reason", "box", "note", "created_at", "submitted"]
PAIR_COLUMNS = [*REVIEW_COLUMNS, "operator", "target", "human_category", "auto_origin",
                "auto_category", "status", "agree_node", "agree_category"]
PROBLEM_COLUMNS = ["output_id", "problem"]

#: ``status`` of a review in :func:`review_pairs`.
COMPARED = "compared"
NOT_FAILING = "passes at the root"  # the judge passes the instance at the root
NO_AUTOMATIC = "no automatic result"  # no such instance (or no judge, a broken tree)

#: The report's tables, in the order of the page and the CSV files.
TABLES = ("auto_vs_human", "human_agreement", "table3", "table3_long", "figure11",
          "failure_reasons", "automatic_localization", "reviews", "reviewer_progress",
          "tree_problems", "false_passes", "passed_instances", "cases",
          # added by the adjudication queue (issue #16)
          "adjudicated_localization")
ADJUDICATED_COLUMNS = ["output_id", "task_id", "instance", "operator", "target",
                       "n_reviewers", "origins", "majority_origin", "adjudicated_origin",
                       "adjudicated_by", "adjudication_note", "consensus_origin",
                       "auto_origin", "status", "agree_node"]


# ------------------------------------------------------------------------ loading
def _units(store: Store) -> pd.DataFrame:
    """The tree units (:func:`annotation.trace.trees.tree_units`) with task_id and generator."""
    units = tree_units(store)
    roots = store.outputs_df()[["output_id", "task_id", "generator"]]
    roots = roots[roots["output_id"].isin(set(units))]
    order = {u: i for i, u in enumerate(units)}
    return roots.sort_values("output_id", key=lambda s: s.map(order)).reset_index(drop=True)


def _load_trees(store: Store, task_ids: Iterable[str]) -> tuple[dict[str, Tree], dict[str, str]]:
    """Each task's tree (:func:`annotation.trace.trees.load_tree`), and the tasks whose tree
    cannot be built, with the reason."""
    built: dict[str, Tree] = {}
    broken: dict[str, str] = {}
    for task_id in dict.fromkeys(task_ids):
        try:
            tree = load_tree(store, task_id)
        except (FormulaError, ValueError, KeyError) as exc:
            broken[task_id] = str(exc)
            continue
        if tree is None:
            broken[task_id] = f"task {task_id} has no formula or tree nodes"
        else:
            built[task_id] = tree
    return built, broken


def _node_passes(store: Store, units: pd.DataFrame, judge: str) -> pd.DataFrame:
    """Per unit, node and question: ``passed`` (the judge's answer equals the pass
    answer), as :func:`annotation.trace.trees.question_passes` gives for one unit."""
    from annotation.vif.variants import output_variant

    outputs = store.outputs_df()[["output_id", "task_id", "generator", "meta"]]
    outputs = outputs[outputs["meta"].map(output_variant).isna()].copy()  # not tree outputs
    outputs["node"] = [output_node(m) for m in outputs["meta"]]
    answers = project_rows.judge_checklist_answers_df(store, judge)
    answers["passed"] = answers["answer"] == answers["pass_answer"]
    answers = answers.merge(outputs[["output_id", "task_id", "generator", "node"]],
                            on="output_id")
    answers = answers.merge(units.rename(columns={"output_id": "unit"}),
                            on=["task_id", "generator"])
    return answers[["unit", "node", "question_id", "passed"]]


def load_automatic(store: Store, judge: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The automatic localization (:func:`annotation.trace.trees.automatic_localization`) of
    every tree unit by ``judge`` (default :func:`annotation.work.tree_review.judge_for`): one
    row per root output x operator instance evaluated at the root, with ``auto_origin``
    (``first_pass`` for a localized failure, ``persistent`` for a Persistent Failure, None
    for a Stable Success).

    Computed in bulk (one read of the outputs and of the judge's answers, one
    :func:`annotation.trace.localize.instance_results` over every unit's nodes, then
    :func:`annotation.trace.localize.localize` per unit): the per-unit functions of
    :mod:`annotation.trace.trees` read the whole project for each unit (the tests check both
    give the same table). Returns ``(table, problems)``: a unit whose tree cannot be built
    (malformed formula, a node rule outside 1-4) is left out and listed in ``problems``
    (output_id, problem).
    """
    judge = judge or judge_for(store)
    units = _units(store)
    return _automatic(store, judge, units, *_load_trees(store, units["task_id"]))


def _automatic(store: Store, judge: str | None, units: pd.DataFrame, built: dict[str, Tree],
               broken: dict[str, str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    empty = pd.DataFrame(columns=AUTOMATIC_COLUMNS)
    problems: list[dict[str, str]] = []
    if judge is None:
        return empty, pd.DataFrame(columns=PROBLEM_COLUMNS)
    passes = _node_passes(store, units, judge)
    # one instance_results for every unit: node ids made unique per unit
    sep = "\x1f"
    retained = {f"{unit}{sep}{node.id}": node.questions
                for unit, task in units[["output_id", "task_id"]].itertuples(index=False)
                if task in built for node in built[task].nodes}
    questions = project_rows.question_targets_df(store)
    results = instance_results(
        retained, passes.assign(node=passes["unit"] + sep + passes["node"]), questions)
    split = results["node"].str.split(sep, n=1, regex=False)
    results = results.assign(unit=split.str[0], node=split.str[1])
    by_unit = dict(iter(results.groupby("unit", sort=False)))
    parts, about = [], []
    for unit, task, generator in units[["output_id", "task_id", "generator"]].itertuples(
            index=False):
        if task in broken:
            problems.append({"output_id": unit, "problem": broken[task]})
            continue
        mine = by_unit.get(unit, results.iloc[0:0]).drop(columns="unit")
        try:
            table = localize(built[task].diagnostic, mine)
        except ValueError as exc:
            problems.append({"output_id": unit, "problem": str(exc)})
            continue
        if not table.empty:
            parts.append(table)
            about.append((len(table), unit, task, generator))
    if not parts:
        return empty, pd.DataFrame(problems, columns=PROBLEM_COLUMNS)
    auto = pd.concat(parts, ignore_index=True)
    for position, column in enumerate(("output_id", "task_id", "generator")):
        auto.insert(position, column, [value for a in about for value in [a[position + 1]] * a[0]])
    auto.insert(3, "judge", judge)
    auto.insert(4, "key", instance_key(auto["operator"], auto["target"]))
    auto["auto_origin"] = pd.Series(
        [None if category == STABLE_SUCCESS else PERSISTENT if category == PERSISTENT_FAILURE
         else first for category, first in zip(auto["category"], auto["first_pass"],
                                                strict=True)],
        index=auto.index, dtype=object)
    return auto[AUTOMATIC_COLUMNS], pd.DataFrame(problems, columns=PROBLEM_COLUMNS)


def _rule_number(rule: Any) -> int | None:
    try:
        number = int(rule)
    except (TypeError, ValueError):
        return None
    return number if number in RULE_CATEGORY else None


def load_nodes(store: Store) -> pd.DataFrame:
    """Every node of every tree-unit task: task_id, node, parent, depth, rule, category
    (the category of a failure that first passes there: Rule 1 Global Reference, 2 Joint
    Composition, 3-4 Relation / Attribute; None for the root), removed, formula."""
    return _nodes(_load_trees(store, _units(store)["task_id"])[0])


def _nodes(built: Mapping[str, Tree]) -> pd.DataFrame:
    rows = []
    for task_id, tree in built.items():
        for n in tree.nodes:
            rule = _rule_number(n.rule)
            rows.append({"task_id": task_id, "node": n.id, "parent": n.parent,
                         "depth": n.depth, "rule": rule,
                         "category": RULE_CATEGORY.get(rule) if rule else None,
                         "removed": "; ".join(n.removed), "formula": n.formula})
    return pd.DataFrame(rows, columns=NODE_COLUMNS)


def load_reviews(store: Store) -> pd.DataFrame:
    """Every current tree review: review_id, reviewer, output_id, task_id, generator,
    instance (``<operator>|<target>``), origin, reason, box (a dict or None), note,
    created_at, submitted (the reviewer has submitted that tree)."""
    df = tree_rows.current_reviews_df(store)
    df["box"] = [None if b is None or (isinstance(b, float) and math.isnan(b))
                 else json.loads(b) for b in df["box"]]
    df["box"] = df["box"].astype(object)
    df["submitted"] = df["submitted"].astype(bool)
    for col in ("reason", "note"):
        df[col] = df[col].astype(object).where(df[col].notna(), None)
    return df[REVIEW_COLUMNS]


# ------------------------------------------------------------------------ Table 3, Fig. 11
def table3(automatic: pd.DataFrame) -> pd.DataFrame:
    """Table 3 as printed: one row per outcome / source, one column per operator and
    Overall, in percent of that operator's instances."""
    if automatic.empty:
        return pd.DataFrame({"Outcome / Source": list(CATEGORIES)})
    return distribution_table(automatic).reset_index()


def table3_long(automatic: pd.DataFrame) -> pd.DataFrame:
    """Table 3 in long form with counts: operator, category, n, percent."""
    return distribution(automatic)


def figure11(automatic: pd.DataFrame) -> pd.DataFrame:
    """Figure 11: per operator and Overall, the cumulative pass rate at each relative
    depth (persistent failures stay in the denominator, so curves end below 1)."""
    if automatic.empty:
        return pd.DataFrame(columns=["operator", "rel_depth", "pass_rate", "n"])
    return cumulative_pass_rate(automatic)


# ------------------------------------------------------------------------ auto vs human
def human_category(origin: str | None, rule: Any) -> str:
    """The Table 3 category of a human origin: ``persistent`` -> Persistent Failure,
    ``not_a_failure`` -> "Not a failure", a node -> the category of the rule of the step
    into it (Rule 1 Global Reference, 2 Joint Composition, 3-4 Relation / Attribute);
    the root or a node not in the tree (``rule`` None) -> "Unknown node"."""
    if origin == PERSISTENT:
        return PERSISTENT_FAILURE
    if origin == NOT_A_FAILURE:
        return NOT_A_FAILURE_LABEL
    number = _rule_number(rule)
    return RULE_CATEGORY[number] if number is not None else UNKNOWN_NODE


def _split_instance(instance: str) -> tuple[str, str]:
    operator, _, target = str(instance).partition("|")
    return operator, target


def review_pairs(reviews: pd.DataFrame, automatic: pd.DataFrame,
                 nodes: pd.DataFrame) -> pd.DataFrame:
    """Each review next to the automatic localization of the same root output and
    instance (``automatic`` from :func:`load_automatic`, ``nodes`` from :func:`load_nodes`).

    Adds operator and target (from the instance key), human_category
    (:func:`human_category`), auto_origin, auto_category, status (``compared`` when the
    judge fails the instance at the root; ``passes at the root``; ``no automatic result``)
    and, for compared rows, agree_node / agree_category (else None).
    """
    out = reviews.copy()
    if out.empty:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    split = [_split_instance(i) for i in out["instance"]]
    out["operator"] = [op for op, _ in split]
    out["target"] = [t for _, t in split]
    rules = {(t, n): r for t, n, r in nodes[["task_id", "node", "rule"]].itertuples(
        index=False)}
    out["human_category"] = [
        human_category(origin, rules.get((task, origin)))
        for task, origin in zip(out["task_id"], out["origin"], strict=True)]
    auto = {(o, k): (origin, category, passed) for o, k, origin, category, passed in
            automatic[["output_id", "key", "auto_origin", "category", "root_passed"]]
            .itertuples(index=False)}
    found = [auto.get((o, i)) for o, i in zip(out["output_id"], out["instance"], strict=True)]
    out["auto_origin"] = pd.Series([f[0] if f else None for f in found], index=out.index,
                                   dtype=object)
    out["auto_category"] = pd.Series([f[1] if f else None for f in found], index=out.index,
                                     dtype=object)
    out["status"] = [NO_AUTOMATIC if f is None else NOT_FAILING if bool(f[2]) else COMPARED
                     for f in found]
    compared = out["status"] == COMPARED
    out["agree_node"] = pd.Series(
        [bool(h == a) if c else None for h, a, c in
         zip(out["origin"], out["auto_origin"], compared, strict=True)],
        index=out.index, dtype=object)
    out["agree_category"] = pd.Series(
        [bool(h == a) if c else None for h, a, c in
         zip(out["human_category"], out["auto_category"], compared, strict=True)],
        index=out.index, dtype=object)
    return out[PAIR_COLUMNS].reset_index(drop=True)


def _operators(values: Iterable[str]) -> list[str]:
    present = set(values)
    return [op for op in OPERATORS if op in present] + sorted(present - set(OPERATORS))


def _kappa_row(auto: list[str], human: list[str]) -> dict[str, float]:
    labels = sorted(set(auto) | set(human))
    if not auto:
        return {"kappa": math.nan, "kappa_lo": math.nan, "kappa_hi": math.nan,
                "n_labels": 0}
    table = contingency_table(auto, human, categories=labels)
    k = cohen_kappa(table.to_numpy())
    return {"kappa": k.kappa, "kappa_lo": k.lo, "kappa_hi": k.hi, "n_labels": len(labels)}


def auto_vs_human(pairs: pd.DataFrame) -> pd.DataFrame:
    """Automatic against human localization (Appendix C.3), per level and operator.

    Levels: ``node`` (the human's origin equals the automatic one: the same node, both
    ``persistent``), ``category`` (the same Table 3 category, ``not_a_failure`` its own
    label), both per operator (f, g, ⊕, C) and Overall; and ``case`` (Overall only): a
    reviewed tree (reviewer x root output) agrees when all its compared instances agree
    on the node. Columns: level, operator, n (compared reviews), n_agree, agreement with
    its Wilson interval at the effective sample size of reviews (or cases) clustered by
    root output (agreement_lo, agreement_hi;
    :func:`annotation.stats.clustered.clustered_wilson`), kappa with its interval (Cohen's
    kappa on the k x k table of automatic x human labels, k = n_labels = the union of
    labels used), n_not_a_failure (reviews saying the judge was wrong at the root:
    disagreements), n_passes_at_root and n_no_automatic (reviews left out), n_reviewers,
    n_outputs.
    """
    pairs = pairs if not pairs.empty else pd.DataFrame(columns=PAIR_COLUMNS)
    rows = []
    for level, human_col, auto_col in (("node", "origin", "auto_origin"),
                                       ("category", "human_category", "auto_category")):
        for op in [*_operators(pairs["operator"]), OVERALL]:
            part = pairs if op == OVERALL else pairs[pairs["operator"] == op]
            done = part[part["status"] == COMPARED]
            human = [str(v) for v in done[human_col]]
            auto = [str(v) for v in done[auto_col]]
            n = len(done)
            hits = [h == a for h, a in zip(human, auto, strict=True)]
            agree = sum(hits)
            ci = clustered_wilson(hits, list(done["output_id"]))
            rows.append({
                "level": level, "operator": op, "n": n, "n_agree": agree,
                "agreement": ci.estimate, "agreement_lo": ci.lo, "agreement_hi": ci.hi,
                **_kappa_row(auto, human),
                "n_not_a_failure": int((done["origin"] == NOT_A_FAILURE).sum()),
                "n_passes_at_root": int((part["status"] == NOT_FAILING).sum()),
                "n_no_automatic": int((part["status"] == NO_AUTOMATIC).sum()),
                "n_reviewers": int(done["reviewer"].nunique()),
                "n_outputs": int(done["output_id"].nunique()),
            })
    done = pairs[pairs["status"] == COMPARED]
    cases = done.groupby(["reviewer", "output_id"], sort=True)["agree_node"].agg(
        lambda s: all(bool(v) for v in s))
    k, n = int(cases.sum()), len(cases)
    ci = clustered_wilson([bool(v) for v in cases],
                          list(cases.index.get_level_values("output_id")))
    rows.append({
        "level": "case", "operator": OVERALL, "n": n, "n_agree": k,
        "agreement": ci.estimate, "agreement_lo": ci.lo, "agreement_hi": ci.hi,
        "kappa": math.nan, "kappa_lo": math.nan, "kappa_hi": math.nan, "n_labels": 0,
        "n_not_a_failure": int(done.groupby(["reviewer", "output_id"])["origin"].agg(
            lambda s: (s == NOT_A_FAILURE).any()).sum()) if n else 0,
        "n_passes_at_root": int((pairs["status"] == NOT_FAILING).sum()),
        "n_no_automatic": int((pairs["status"] == NO_AUTOMATIC).sum()),
        "n_reviewers": int(done["reviewer"].nunique()),
        "n_outputs": int(done["output_id"].nunique()),
    })
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------ human vs human
def human_agreement(pairs: pd.DataFrame) -> pd.DataFrame:
    """Reviewers against each other on the instances the judge fails at the root (every
    current review of those; the judge-passed instances of the blind sample,
    ``passed_share``, are left out: mostly "not a failure" on both sides, they would
    inflate the agreement on localization), per level (``node``: the origin;
    ``category``: its Table 3 category) and operator and Overall.

    A unit is one instance of one root output; only units reviewed by two or more people
    count. Columns: level, operator, n_units (units reviewed at all), n_units_multi,
    n_reviewers (in those units), n_pairs (reviewer pairs within units), n_pairs_agree,
    pairwise_agreement (their share), kappa with its interval (Cohen's kappa when exactly
    two reviewers are involved, else NaN), alpha (Krippendorff's alpha, nominal, on the
    units x reviewers table of the multi-reviewed units).
    """
    pairs = pairs if not pairs.empty else pd.DataFrame(columns=PAIR_COLUMNS)
    pairs = pairs[pairs["status"] != NOT_FAILING]
    rows = []
    for level, col in (("node", "origin"), ("category", "human_category")):
        for op in [*_operators(pairs["operator"]), OVERALL]:
            part = pairs if op == OVERALL else pairs[pairs["operator"] == op]
            unit = part["output_id"].astype(str) + "\x1f" + part["instance"].astype(str)
            wide = (part.assign(unit=unit, value=part[col].astype(str))
                    .pivot_table(index="unit", columns="reviewer", values="value",
                                 aggfunc="last")
                    if not part.empty else pd.DataFrame())
            multi = wide[wide.notna().sum(axis=1) >= 2] if not wide.empty else wide
            multi = multi.loc[:, multi.notna().any()] if not multi.empty else multi
            n_pairs = n_agree = 0
            for _, row in multi.iterrows():
                for x, y in combinations(list(row.dropna()), 2):
                    n_pairs += 1
                    n_agree += int(x == y)
            kappa = {"kappa": math.nan, "kappa_lo": math.nan, "kappa_hi": math.nan}
            if multi.shape[1] == 2:
                a, b = multi.columns
                row_k = _kappa_row([str(v) for v in multi[a]], [str(v) for v in multi[b]])
                kappa = {k: row_k[k] for k in kappa}
            alpha = (krippendorff_alpha(multi.astype(object).to_numpy(), "nominal")
                     if len(multi) else math.nan)
            rows.append({
                "level": level, "operator": op, "n_units": int(len(wide)),
                "n_units_multi": int(len(multi)), "n_reviewers": int(multi.shape[1]),
                "n_pairs": n_pairs, "n_pairs_agree": n_agree,
                "pairwise_agreement": n_agree / n_pairs if n_pairs else math.nan,
                **kappa, "alpha": alpha,
            })
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------ adjudicated
def _strict_majority(values: list[str]) -> str | None:
    """The value more than half of ``values`` name, else None."""
    for value in sorted(set(values)):
        if values.count(value) * 2 > len(values):
            return value
    return None


def adjudicated_localization(pairs: pd.DataFrame, decisions: pd.DataFrame) -> pd.DataFrame:
    """One row per reviewed instance of a root output (the unit of "TRACE-Bench:
    Decomposing and Diagnosing Multi-Reference Image Generation", Appendix C.3): the
    reviewers' origins (raw: every current review, ``origins`` as ``;``-joined sorted
    values), the strict-majority origin (None on a tie), the adjudicator's origin where
    one decided (``decisions``: current tree rows of
    :func:`annotation.store.adjudications.decisions_df`), and ``consensus_origin``: the
    adjudicated origin where there is one, else the majority. ``agree_node``: the consensus
    origin equals the automatic one (compared instances with a consensus only). The
    reviewer agreement tables (``human_agreement``) and ``auto_vs_human`` stay on the raw
    reviews."""
    pairs = pairs if not pairs.empty else pd.DataFrame(columns=PAIR_COLUMNS)
    decided = {(str(r.item), str(r.target)): r for r in decisions.itertuples(index=False)} \
        if len(decisions) else {}
    rows = []
    for (output_id, instance), g in pairs.groupby(["output_id", "instance"], sort=True):
        origins = [str(o) for o in g["origin"]]
        majority = _strict_majority(origins)
        adj = decided.get((str(output_id), str(instance)))
        consensus = str(adj.decision) if adj is not None else majority
        first = g.iloc[0]
        compared = first["status"] == COMPARED
        rows.append({
            "output_id": output_id, "task_id": first["task_id"], "instance": instance,
            "operator": first["operator"], "target": first["target"],
            "n_reviewers": int(g["reviewer"].nunique()), "origins": "; ".join(sorted(origins)),
            "majority_origin": majority,
            "adjudicated_origin": None if adj is None else str(adj.decision),
            "adjudicated_by": None if adj is None else str(adj.decided_by),
            "adjudication_note": None if adj is None else str(adj.note),
            "consensus_origin": consensus, "auto_origin": first["auto_origin"],
            "status": first["status"],
            "agree_node": (consensus == first["auto_origin"])
            if compared and consensus is not None else None,
        })
    table = pd.DataFrame(rows, columns=ADJUDICATED_COLUMNS)
    for c in ("majority_origin", "adjudicated_origin", "adjudicated_by",
              "adjudication_note", "consensus_origin", "agree_node"):
        table[c] = table[c].astype(object).where(table[c].notna(), None)
    return table


# ------------------------------------------------------------------------ reasons
def failure_reasons(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per operator and Overall, how often reviewers gave each failure reason (every
    current review of an instance the judge fails at the root, as :func:`human_agreement`;
    ``none`` when a review has no reason, e.g. ``not_a_failure``).
    Columns: operator, reason, label, n, percent (of that operator's reviews); every
    reason is listed, zeros included."""
    pairs = pairs if not pairs.empty else pd.DataFrame(columns=PAIR_COLUMNS)
    pairs = pairs[pairs["status"] != NOT_FAILING]
    labels = {**REASONS, NO_REASON: "(no reason)"}
    rows = []
    for op in [*_operators(pairs["operator"]), OVERALL]:
        part = pairs if op == OVERALL else pairs[pairs["operator"] == op]
        counts = part["reason"].map(lambda r: NO_REASON if r is None or pd.isna(r) else r
                                    ).value_counts()
        total = len(part)
        for reason, label in labels.items():
            n = int(counts.get(reason, 0))
            rows.append({"operator": op, "reason": reason, "label": label, "n": n,
                         "percent": 100.0 * n / total if total else math.nan})
    return pd.DataFrame(rows, columns=["operator", "reason", "label", "n", "percent"])


# ------------------------------------------------------------------------ false passes
#: ``status`` of a judge-passed instance in :func:`passed_instances`.
NOT_REVIEWED = "not reviewed"
HUMAN_AGREED = "agreed"  # every reviewer said it is not a failure
HUMAN_FAILED = "human failed"  # at least one reviewer marked it failed
PASSED_COLUMNS = ["output_id", "task_id", "generator", "key", "operator", "target",
                  "n_reviews", "n_human_failed", "reviewers", "status"]
FALSE_PASS_COLUMNS = ["operator", "n_judge_passed", "n_reviewed", "n_not_reviewed",
                      "n_reviews", "n_human_failed", "false_pass_rate", "false_pass_lo",
                      "false_pass_hi", "n_judge_failed_reviews", "n_human_passed",
                      "false_fail_rate", "false_fail_lo", "false_fail_hi"]


def passed_instances(automatic: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """Every operator instance the judge passes at the root (``root_passed``), with its
    current reviews (:func:`review_pairs`): n_reviews, n_human_failed (reviews whose origin
    is a node or ``persistent``: the reviewer fails it at the root), reviewers, and status
    ``not reviewed`` (no reviewer opened it: not an agreement), ``agreed`` (every review
    says not a failure) or ``human failed``."""
    passed = automatic[automatic["root_passed"].astype(bool)] if not automatic.empty else (
        pd.DataFrame(columns=AUTOMATIC_COLUMNS))
    pairs = pairs if not pairs.empty else pd.DataFrame(columns=PAIR_COLUMNS)
    mine = pairs[pairs["status"] == NOT_FAILING]
    grouped: dict[tuple[str, str], list[tuple[str, bool]]] = {}
    for o, i, reviewer, origin in mine[["output_id", "instance", "reviewer",
                                        "origin"]].itertuples(index=False):
        grouped.setdefault((o, i), []).append((str(reviewer), origin != NOT_A_FAILURE))
    rows = []
    for r in passed[["output_id", "task_id", "generator", "key", "operator",
                     "target"]].itertuples(index=False):
        found = grouped.get((r.output_id, r.key), [])
        failed = sum(f for _, f in found)
        rows.append({**r._asdict(), "n_reviews": len(found), "n_human_failed": failed,
                     "reviewers": "; ".join(sorted(name for name, _ in found)),
                     "status": NOT_REVIEWED if not found else HUMAN_FAILED if failed
                     else HUMAN_AGREED})
    return pd.DataFrame(rows, columns=PASSED_COLUMNS)


def _review_units(table: pd.DataFrame) -> tuple[list[bool], list[str]]:
    """One 0/1 per review (failed by the reviewer) of :func:`passed_instances` rows, with
    its root output as the cluster."""
    units: list[bool] = []
    clusters: list[str] = []
    for output, n, failed in table[["output_id", "n_reviews",
                                    "n_human_failed"]].itertuples(index=False):
        units += [True] * int(failed) + [False] * (int(n) - int(failed))
        clusters += [str(output)] * int(n)
    return units, clusters


def false_passes(automatic: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """How often the judge passed what a human failed, per operator (f, g, ⊕, C) and
    Overall ("TRACE-Bench: Decomposing and Diagnosing Multi-Reference Image Generation",
    Sec. 3.5: every operator instance is judged at the root; reviewers check a sample of
    the passed ones, :func:`annotation.work.tree_review.review_instances`).

    The unit is the review, as in :func:`auto_vs_human`: ``false_pass_rate`` =
    n_human_failed / n_reviews over the reviews of judge-passed instances, with its Wilson
    (1927) interval at the effective sample size of reviews clustered by root output
    (several reviewers, several instances of one output:
    :func:`annotation.stats.clustered.clustered_wilson`); n_judge_passed counts the
    judge-passed instances (root output x instance), n_reviewed those with a review,
    n_not_reviewed the others (left out: not reviewed is not agreed). Beside it the other
    direction, on the reviews of instances the judge fails: ``false_fail_rate`` =
    n_human_passed (``not_a_failure``) / n_judge_failed_reviews, with its clustered Wilson
    interval likewise."""
    table = passed_instances(automatic, pairs)
    pairs = pairs if not pairs.empty else pd.DataFrame(columns=PAIR_COLUMNS)
    compared = pairs[pairs["status"] == COMPARED]
    rows = []
    for op in [*_operators(list(table["operator"]) + list(compared["operator"])), OVERALL]:
        part = table if op == OVERALL else table[table["operator"] == op]
        failed = compared if op == OVERALL else compared[compared["operator"] == op]
        n_reviews = int(part["n_reviews"].sum())
        n_failed = int(part["n_human_failed"].sum())
        ci = clustered_wilson(*_review_units(part))
        n_judge_failed = len(failed)
        n_human_passed = int((failed["origin"] == NOT_A_FAILURE).sum())
        back = clustered_wilson(list(failed["origin"] == NOT_A_FAILURE),
                                list(failed["output_id"]))
        rows.append({
            "operator": op, "n_judge_passed": len(part),
            "n_reviewed": int((part["n_reviews"] > 0).sum()),
            "n_not_reviewed": int((part["status"] == NOT_REVIEWED).sum()),
            "n_reviews": n_reviews, "n_human_failed": n_failed,
            "false_pass_rate": ci.estimate, "false_pass_lo": ci.lo, "false_pass_hi": ci.hi,
            "n_judge_failed_reviews": n_judge_failed, "n_human_passed": n_human_passed,
            "false_fail_rate": back.estimate, "false_fail_lo": back.lo,
            "false_fail_hi": back.hi,
        })
    return pd.DataFrame(rows, columns=FALSE_PASS_COLUMNS)


# ------------------------------------------------------------------------ progress
def overall_progress(store: Store) -> tuple[int, int, int]:
    """``(done, needed, units)``: submitted reviews that count towards the overlap (at
    most ``overlap`` per tree unit), ``units x overlap``, and the number of tree units."""
    from annotation.work import tree_review

    done, needed = tree_review.overall_progress(store)
    return done, needed, len(tree_units(store))


def progress_by_reviewer(store: Store) -> pd.DataFrame:
    """Per reviewer: trees submitted, trees started (with at least one current review),
    reviews (current instance localizations), of which persistent / not_a_failure, with a
    box, with a note, and the time of the latest review."""
    subs = tree_rows.submissions_by_reviewer_df(store)
    reviews = tree_rows.reviews_by_reviewer_df(store, persistent=PERSISTENT,
                                               not_a_failure=NOT_A_FAILURE)
    table = subs.merge(reviews, how="outer", on="reviewer")
    counts = ["submitted", "started", "reviews", "persistent", "not_a_failure", "with_box",
              "with_note"]
    table = table.fillna(dict.fromkeys(counts, 0)).astype(dict.fromkeys(counts, int))
    columns = ["reviewer", *counts, "last_review"]
    return table.reindex(columns=columns).sort_values("reviewer").reset_index(drop=True)


def data_stamp(store: Store) -> tuple[Any, ...]:
    """A cache key that changes when the data behind the results does: imports,
    judgments, every tree review row (history included), submissions, the settings."""
    return (
        *tree_rows.review_data_counts(store),
        len(adjudication_rows.decisions_df(store, history=True, kind="tree")),
        json.dumps(get_settings(store).__dict__, sort_keys=True),
    )


# ------------------------------------------------------------------------ the report
def _compute(store: Store, judge: str | None) -> tuple[pd.DataFrame, pd.DataFrame,
                                                       pd.DataFrame]:
    judge = judge or judge_for(store)
    units = _units(store)
    built, broken = _load_trees(store, units["task_id"])
    automatic, problems = _automatic(store, judge, units, built, broken)
    pairs = review_pairs(load_reviews(store), automatic, _nodes(built))
    return automatic, problems, pairs


def _tables(store: Store, automatic: pd.DataFrame, problems: pd.DataFrame,
            pairs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    reviews = pairs.assign(box=pd.Series(
        [None if b is None else json.dumps(b) for b in pairs["box"]], index=pairs.index,
        dtype=object))
    return {
        "auto_vs_human": auto_vs_human(pairs),
        "human_agreement": human_agreement(pairs),
        "table3": table3(automatic),
        "table3_long": table3_long(automatic),
        "figure11": figure11(automatic),
        "failure_reasons": failure_reasons(pairs),
        "automatic_localization": automatic,
        "reviews": reviews,
        "reviewer_progress": progress_by_reviewer(store),
        "tree_problems": problems,
        "false_passes": false_passes(automatic, pairs),
        "passed_instances": passed_instances(automatic, pairs),
        "cases": case_table(automatic, pairs),
        "adjudicated_localization": adjudicated_localization(
            pairs, adjudication_rows.decisions_df(store, kind="tree")),
    }


def tree_tables(store: Store, judge: str | None = None) -> dict[str, pd.DataFrame]:
    """Every table of the tree report by name (:data:`TABLES`), for ``judge`` (default
    :func:`annotation.work.tree_review.judge_for`)."""
    return _tables(store, *_compute(store, judge))


def tree_report(store: Store, judge: str | None = None) -> tuple[dict[str, pd.DataFrame], str]:
    """:func:`tree_tables` and the ``reviews.jsonl`` text, computed once."""
    automatic, problems, pairs = _compute(store, judge)
    return _tables(store, automatic, problems, pairs), _jsonl(pairs)


def _plain(value: Any) -> Any:
    """A JSON-ready value: numpy scalars unwrapped, NaN / NA as None."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def reviews_jsonl_rows(pairs: pd.DataFrame) -> list[dict[str, Any]]:
    """One record per current review (:func:`review_pairs`): reviewer, task_id,
    output_id, instance, operator, target, origin, human_category, reason, box, note,
    created_at, submitted, automatic_origin, automatic_category, status, agree_node,
    agree_category."""
    rows = []
    for r in pairs.to_dict("records"):
        rows.append(_plain({
            "reviewer": r["reviewer"], "task_id": r["task_id"], "output_id": r["output_id"],
            "instance": r["instance"], "operator": r["operator"], "target": r["target"],
            "origin": r["origin"], "human_category": r["human_category"],
            "reason": r["reason"], "box": r["box"], "note": r["note"],
            "created_at": r["created_at"], "submitted": bool(r["submitted"]),
            "automatic_origin": r["auto_origin"], "automatic_category": r["auto_category"],
            "status": r["status"], "agree_node": r["agree_node"],
            "agree_category": r["agree_category"],
        }))
    return rows


def _jsonl(pairs: pd.DataFrame) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in reviews_jsonl_rows(pairs))


def reviews_jsonl(store: Store, judge: str | None = None) -> str:
    """The ``reviews.jsonl`` text (see :func:`reviews_jsonl_rows`)."""
    return _jsonl(_compute(store, judge)[2])


def write_tree_report(store: Store, out: Path, judge: str | None = None) -> list[Path]:
    """Write ``reviews.jsonl`` and one CSV per table of :func:`tree_tables` (text cells
    that a spreadsheet would run as a formula are neutralized), and the per-case pages:
    the node images with the reviewers' boxes drawn, ``cases/<case>.html`` and
    ``cases.html`` (:func:`annotation.results.trace_cases.write_cases`)."""
    from annotation.results.report import write_csvs

    tables, jsonl = tree_report(store, judge)
    cases = tables.pop("cases")
    written = write_csvs(tables, out, {"reviews.jsonl": jsonl})
    return written + write_cases(store, cases, Path(out))


# ------------------------------------------------------------------------ figures
#: Table 3's outcomes: successes green, the persistent failures grey, the sources warm.
CATEGORY_COLORS = {STABLE_SUCCESS: "#4caf50", PERSISTENT_FAILURE: "#9e9e9e",
                   "Global Reference": "#ff9800", "Joint Composition": "#e53935",
                   "Relation / Attribute": "#8e24aa"}


def figure11_chart(curve: pd.DataFrame) -> Any:
    """Figure 11 as a plotly step chart: cumulative pass rate (y, 0..1) against relative
    depth (x, 0 = root, 1 = leaf), one line per operator and Overall; None without data."""
    if curve.empty or curve["pass_rate"].isna().all():
        return None
    import plotly.express as px

    from annotation.results.figures import plot_columns

    fig = px.line(plot_columns(curve, "operator"), x="rel_depth", y="pass_rate",
                  color="operator", markers=True,
                  line_shape="hv", hover_data=["n"],
                  labels={"rel_depth": "relative depth (0 = root, 1 = leaf)",
                          "pass_rate": "cumulative pass rate", "operator": ""})
    fig.update_layout(height=380, yaxis_range=[0, 1.02], xaxis_range=[-0.02, 1.02])
    return fig


def table3_chart(long: pd.DataFrame) -> Any:
    """Table 3 as a plotly stacked bar: per operator and Overall, the share (%) of each
    outcome / source; None without data."""
    if long.empty or long["percent"].isna().all():
        return None
    import plotly.express as px

    from annotation.results.figures import plot_columns

    fig = px.bar(plot_columns(long.dropna(subset=["percent"]), "operator"), x="operator",
                 y="percent",
                 color="category", category_orders={"category": list(CATEGORIES)},
                 color_discrete_map=CATEGORY_COLORS, hover_data=["n"],
                 labels={"percent": "% of operator instances", "operator": "",
                         "category": ""})
    fig.update_layout(barmode="stack", height=380, yaxis_range=[0, 100])
    return fig
