"""Results of conflict-label verification: verified labels, how good the automatic labels
were, how much verifiers agree, and the conflict statistics of VIF-Bench Section 3.2.

Every function but :func:`load_verdicts` / :func:`load_tasks` is pure and returns a tidy
DataFrame (one row per conflict type, plus ``all`` where pooling makes sense):

* :func:`verified_labels`: per task and conflict type, the verified label = the strict
  majority of the verifiers' current labels (a tie is left undecided, ``None``), next to
  the automatic label they judged.
* :func:`automatic_vs_verified`: the automatic labels scored against the verified ones as a
  classifier of *conflict*: the counts TP/FP/FN/TN, precision TP/(TP+FP), recall
  TP/(TP+FN), percent agreement with its Wilson (1927) interval and Cohen's (1960) kappa with
  the Fleiss-Cohen-Everitt (1969) interval (:func:`annotation.stats.agreement.binary_agreement`).
* :func:`verifier_agreement`: inter-annotator agreement on the verified labels:
  Krippendorff's alpha, nominal (Krippendorff 2011), and the mean pairwise percent
  agreement over tasks with two or more verifiers.
* :func:`verified_prelabels` and :func:`prelabel_accuracy`: the verified reading of each
  reference image's pre-labels (a reading is of the image, matched to tasks by content
  hash, VIF-Bench Appendix C.4) and how often the VLM pre-label agreed with it, per
  attribute over distinct images; :func:`rules_on_readings`: the rules on those readings.
* :func:`conflict_statistics`: "VIF-Bench: Evaluating Visual Instruction Following in
  Multi-Reference Image Generation", Section 3.2 ("438 of 1,241 tasks contain at least
  one conflict ... orientation conflict in 106 of the 315 tasks containing an orientation
  instruction (33.7%)"), recomputed from the automatic labels over all tasks, from the
  automatic labels over the verified tasks, and from the verified labels.
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

from annotation.results.aggregation import SEP, conflict_fit, confusion_table
from annotation.stats.agreement import binary_agreement, wilson_interval
from annotation.stats.reliability import krippendorff_alpha
from annotation.store import Store
from annotation.store import conflicts as conflict_rows
from annotation.vif.conflicts import CONFLICT_KEYS, normalize_yaw, yaw_difference
from annotation.work.verification import (
    ATTRIBUTE_TYPE,
    CONFLICT_TYPES,
    VerifyItem,
    conflict_types,
    decisions_on,
    load_verify_item,
    prelabel_value,
    verifiable_tasks,
)


# ------------------------------------------------------------------------ loading
def load_verdicts(store: Store, *, history: bool = False) -> pd.DataFrame:
    """Current verdicts of submitted tasks (work in progress is not a result yet) or, with
    ``history``, every row ever written, with ``supersedes``; ``automatic``/``agrees``/
    ``label`` as booleans (None where absent)."""
    df = conflict_rows.verdicts_df(store, history=history)
    for col in ("automatic", "agrees", "label", "blind"):
        df[col] = df[col].map(lambda v: None if pd.isna(v) else bool(v)).astype(object)
    return df


def load_items(store: Store) -> dict[str, VerifyItem]:
    """What the verification page shows of each verifiable task, by task id."""
    return {task_id: load_verify_item(store, task_id) for task_id in verifiable_tasks(store)}


def load_tasks(store: Store, items: Mapping[str, VerifyItem] | None = None) -> pd.DataFrame:
    """Per task and conflict type it can have: the automatic label (published, else the
    rules'), the published label and the rules' decision on the pre-labels. ``items``:
    from :func:`load_items`, when the caller has them already."""
    rows = []
    tasks = store.tasks_df()
    for task_id, meta in zip(tasks["task_id"], tasks["meta"], strict=True):
        if not conflict_types(json.loads(meta)):
            rows.append({"task_id": task_id, "conflict": None, "automatic": None,
                         "published": None, "rules": None})
            continue
        item = items[task_id] if items is not None else load_verify_item(store, task_id)
        for check in item.checks:
            rows.append({"task_id": task_id, "conflict": check.conflict,
                         "automatic": check.automatic, "published": check.published,
                         "rules": check.rule.conflict})
    return pd.DataFrame(rows, columns=["task_id", "conflict", "automatic", "published",
                                       "rules"]).astype(object)


def load_readings(store: Store) -> pd.DataFrame:
    df = conflict_rows.readings_df(store)
    df["value"] = df["value"].map(json.loads).astype(object)
    return df


# ------------------------------------------------------------------------ pure parts
def _majority(labels: Iterable[bool]) -> bool | None:
    votes = list(labels)
    yes = sum(1 for v in votes if v)
    no = len(votes) - yes
    return None if yes == no else yes > no


def verified_labels(verdicts: pd.DataFrame,
                    resolutions: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (task, conflict type): verifiers, conflict votes, the majority label (None on a
    tie) and the automatic label judged (the latest verdict's, should it have changed).

    ``resolutions`` (current admin decisions: task_id, conflict, label, note, decided_by)
    settle a label: ``verified`` is then the decision, ``majority`` keeps what the votes
    said, ``resolved_by`` / ``resolution_note`` say who decided and why. A decision also
    counts where nobody has verified yet (``n_verifiers`` 0).

    ``dawid_skene`` / ``dawid_skene_posterior``: the label and P(conflict) of the
    Dawid-Skene model over every verifier's labels (:func:`annotation.results.aggregation.
    conflict_fit`), an alternative to the majority that weighs verifiers by their
    estimated reliability (None / NaN where nobody verified)."""
    cols = ["task_id", "conflict", "n_verifiers", "votes_conflict", "verified", "automatic",
            "majority", "resolved_by", "resolution_note", "dawid_skene",
            "dawid_skene_posterior"]
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for (task, kind), g in (verdicts.groupby(["task_id", "conflict"], sort=True)
                            if len(verdicts) else ()):
        latest = g.sort_values("created_at").iloc[-1]
        majority = _majority(bool(v) for v in g["label"])
        rows[(task, kind)] = {
            "task_id": task, "conflict": kind, "n_verifiers": len(g),
            "votes_conflict": int(sum(bool(v) for v in g["label"])), "verified": majority,
            "automatic": latest["automatic"], "majority": majority, "resolved_by": None,
            "resolution_note": None}
    for r in (resolutions.itertuples(index=False) if resolutions is not None else ()):
        row = rows.setdefault((r.task_id, r.conflict), {
            "task_id": r.task_id, "conflict": r.conflict, "n_verifiers": 0,
            "votes_conflict": 0, "automatic": None, "majority": None})
        row.update(verified=bool(r.label), resolved_by=r.decided_by, resolution_note=r.note)
    fit = conflict_fit(verdicts).items.set_index("item")
    for (task, kind), row in rows.items():
        item = f"{task}{SEP}{kind}"
        found = item in fit.index
        row["dawid_skene"] = fit.at[item, "label"] if found else None
        row["dawid_skene_posterior"] = float(fit.at[item, "p_True"]) if found else math.nan
    table = pd.DataFrame([rows[k] for k in sorted(rows)], columns=cols)
    for c in ("verified", "automatic", "majority", "resolved_by", "resolution_note",
              "dawid_skene"):
        table[c] = table[c].astype(object).where(table[c].notna(), None)
    return table


def undecided_labels(labels: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`verified_labels` with verifiers but no label: a tie, with no
    decision yet."""
    keep = labels["verified"].map(lambda v: v is None) & (labels["n_verifiers"] > 0)
    return labels.loc[keep, ["task_id", "conflict", "n_verifiers", "votes_conflict",
                             "automatic"]].reset_index(drop=True)


def load_resolutions(store: Store) -> pd.DataFrame:
    """The admins' current decisions on conflict labels (see :func:`verified_labels`)."""
    return conflict_rows.resolutions_df(store)


def _score_row(name: str, auto: pd.Series, verified: pd.Series) -> dict[str, Any]:
    keep = auto.notna() & verified.notna()
    a = auto[keep].map(bool)
    v = verified[keep].map(bool)
    tp, fp = int((a & v).sum()), int((a & ~v).sum())
    fn, tn = int((~a & v).sum()), int((~a & ~v).sum())
    n = tp + fp + fn + tn
    stats: Any = binary_agreement(list(a), list(v), positive=True).iloc[0] if n else None

    def ratio(x: int, y: int) -> float:
        return x / y if y else math.nan

    return {
        "conflict": name, "n_tasks": n, "n_undecided": int((~keep).sum()),
        "tp": tp, "fp": fp, "fn": fn, "tn": tn,
        "precision": ratio(tp, tp + fp), "recall": ratio(tp, tp + fn),
        "agreement": stats["agreement"] if n else math.nan,
        "agreement_lo": stats["agreement_lo"] if n else math.nan,
        "agreement_hi": stats["agreement_hi"] if n else math.nan,
        "kappa": stats["kappa"] if n else math.nan,
        "kappa_lo": stats["kappa_lo"] if n else math.nan,
        "kappa_hi": stats["kappa_hi"] if n else math.nan,
    }


def automatic_vs_verified(labels: pd.DataFrame) -> pd.DataFrame:
    """The automatic labels against the verified ones, per conflict type and pooled
    (``all``: every task x type decision). Undecided pairs (tie, no automatic label) are
    dropped and counted in ``n_undecided``."""
    rows = []
    for kind in CONFLICT_TYPES:
        sub = labels[labels["conflict"] == kind]
        rows.append(_score_row(kind, sub["automatic"], sub["verified"]))
    rows.append(_score_row("all", labels["automatic"], labels["verified"]))
    return pd.DataFrame(rows)


def verifier_agreement(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Agreement between verifiers on the verified labels, per conflict type and pooled:
    Krippendorff's alpha (nominal; tasks x verifiers with missing cells) and the mean
    pairwise percent agreement over tasks verified by two or more people."""
    rows = []
    for kind in (*CONFLICT_TYPES, "all"):
        sub = verdicts if kind == "all" else verdicts[verdicts["conflict"] == kind]
        unit = sub["task_id"] + "\x1f" + sub["conflict"]
        wide = (sub.assign(unit=unit, value=sub["label"].map(lambda v: int(bool(v))))
                .pivot_table(index="unit", columns="verifier", values="value", aggfunc="last"))
        multi = wide[wide.notna().sum(axis=1) >= 2]
        pairs = agree = 0
        for _, row in multi.iterrows():
            values = [int(v) for v in row.dropna()]
            for x, y in combinations(values, 2):
                pairs += 1
                agree += int(x == y)
        alpha = (krippendorff_alpha(multi.to_numpy(dtype=float), "nominal")
                 if len(multi) else math.nan)
        rows.append({"conflict": kind, "n_tasks": int(len(wide)),
                     "n_tasks_multi": int(len(multi)),
                     "n_verifiers": int(sub["verifier"].nunique()), "n_pairs": pairs,
                     "pairwise_agreement": agree / pairs if pairs else math.nan,
                     "alpha": alpha})
    return pd.DataFrame(rows)


def conflict_statistics(tasks: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """VIF-Bench's Section 3.2 table: per conflict type, the tasks with that instruction and
    how many are conflicts, and the tasks with at least one conflict (``any``) among all
    tasks; from the automatic labels (all tasks, and the verified tasks only) and from the
    verified labels. Shares are of the column's own task count; ``verified_tasks`` counts
    tasks with a decided (not tied) verified label, for ``any`` on every type they have."""
    all_tasks = tasks["task_id"].nunique()
    checked = tasks[tasks["conflict"].notna()]
    decided = labels.loc[labels["verified"].map(lambda v: v is not None).astype(bool)]
    rows = []

    def share(k: int, n: int) -> float:
        return k / n if n else math.nan

    def positive(frame: pd.DataFrame, col: str) -> set[str]:
        return set(frame.loc[frame[col].map(lambda v: v is True).astype(bool), "task_id"])

    for kind in (*CONFLICT_TYPES, "any"):
        if kind == "any":
            # a task is verified when every conflict type it has got a decided label
            needed = checked.groupby("task_id")["conflict"].agg(set)
            got = decided.groupby("task_id")["conflict"].agg(set)
            ver_tasks = {t for t, kinds in needed.items() if kinds <= got.get(t, set())}
            auto_pos, with_vi = positive(checked, "automatic"), all_tasks
            ver_pos = positive(decided, "verified") & ver_tasks
        else:
            sub = checked[checked["conflict"] == kind]
            lab = decided[decided["conflict"] == kind]
            ver_tasks = set(lab["task_id"])
            auto_pos, with_vi = positive(sub, "automatic"), sub["task_id"].nunique()
            ver_pos = positive(lab, "verified")
        auto_on_ver = auto_pos & ver_tasks
        rows.append({
            "conflict": kind, "tasks_with_instruction": with_vi,
            "automatic_conflicts": len(auto_pos),
            "automatic_share": share(len(auto_pos), with_vi),
            "verified_tasks": len(ver_tasks),
            "automatic_conflicts_on_verified": len(auto_on_ver),
            "automatic_share_on_verified": share(len(auto_on_ver), len(ver_tasks)),
            "verified_conflicts": len(ver_pos),
            "verified_share": share(len(ver_pos), len(ver_tasks)),
        })
    return pd.DataFrame(rows)


def labels_jsonl_rows(labels: pd.DataFrame, verdicts: pd.DataFrame,
                      readings: pd.DataFrame | None = None,
                      tasks: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """One record per verified task in the VIF-Bench labels shape (``id`` and the four
    ``*_conflict`` keys: the verified label; None where the task has that type (``tasks``,
    from :func:`load_tasks`) but no decided label; False for a type it cannot have), plus
    ``verifiers``, every current ``verdicts`` entry with its note, and the verifiers'
    ``readings`` of the pre-labels (``{verifier: {Image_k: {attribute: value}}}``)."""
    out = []
    for task, g in labels.groupby("task_id", sort=True):
        record: dict[str, Any] = {"id": task}
        decided = dict(zip(g["conflict"], g["verified"], strict=True))
        has = (set(tasks.loc[tasks["task_id"] == task, "conflict"].dropna())
               if tasks is not None else set(decided))
        for kind in CONFLICT_TYPES:
            record[CONFLICT_KEYS[kind]] = decided.get(kind) if kind in has else False
        mine = verdicts[verdicts["task_id"] == task]
        record["verifiers"] = sorted(mine["verifier"].unique())
        record["verdicts"] = [
            {"verifier": r.verifier, "conflict": r.conflict, "automatic": r.automatic,
             "agrees": r.agrees, "label": r.label, "note": r.note, "blind": r.blind,
             "at": r.created_at}
            for r in mine.itertuples()]
        record["notes"] = [f"{r.verifier} ({r.conflict}): {r.note}"
                           for r in mine.itertuples() if r.note]
        if readings is not None:
            given: dict[str, dict[str, dict[str, Any]]] = {}
            for r in readings[readings["task_id"] == task].itertuples():
                given.setdefault(r.verifier, {}).setdefault(
                    f"Image_{r.image_idx}", {})[r.attribute] = r.value
            record["readings"] = given
        out.append(record)
    return out


# ------------------------------------------------------------------------ pre-labels
#: The binary pre-label attributes, in report order (yaw is reported as an angle).
BINARY_ATTRIBUTES = ("yaw_reliable", "light_distinctive", "wind_responsive",
                     "pose_distinctive")
#: The yaw errors (degrees) whose shares the accuracy table reports.
YAW_WITHIN = (22.5, 45.0)


def load_image_readings(store: Store, *, history: bool = False) -> pd.DataFrame:
    """Each verifier's current reading of each image (by content hash) and attribute, with
    ``value`` decoded, kept where the verifier submitted a task showing the image (work in
    progress is not a result yet); with ``history`` every reading row ever written."""
    df = conflict_rows.image_readings_df(store, history=history)
    if not history:
        df = df[df["confirmed"] == 1].reset_index(drop=True)
    df["value"] = df["value"].map(json.loads).astype(object)
    return df


def load_prelabels(store: Store) -> pd.DataFrame:
    """The VLM pre-labels of the reference images, one row per image content hash,
    attribute and pre-label value (tasks showing one image normally carry one pre-label;
    differing ones are kept apart, never merged): image_sha256, attribute, prelabel,
    tasks (the task ids, ``;``-joined)."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    images = store.images_df()
    images = images[images.role == "reference"].sort_values(["task_id", "idx"])
    for task, sha, meta in images[["task_id", "sha256", "meta"]].itertuples(index=False):
        label = json.loads(meta).get("prelabel")
        if not isinstance(label, dict):
            continue
        for attribute in ATTRIBUTE_TYPE:
            value = prelabel_value(label, attribute)
            if value is None:
                continue
            row = rows.setdefault((sha, attribute, json.dumps(value)), {
                "image_sha256": sha, "attribute": attribute, "prelabel": value, "tasks": []})
            if task not in row["tasks"]:
                row["tasks"].append(task)
    out = pd.DataFrame(list(rows.values()),
                       columns=["image_sha256", "attribute", "prelabel", "tasks"])
    out["tasks"] = out["tasks"].map(";".join)
    return out.astype({"prelabel": object})


def circular_mean(degrees: Iterable[float]) -> float | None:
    """The mean direction of angles in degrees, in ``(-180, 180]`` (Mardia & Jupp,
    "Directional Statistics", Sec. 2.2.1: the direction of the resultant of the unit
    vectors); None for no angle or a resultant of length ~0 (no mean direction)."""
    values = [math.radians(float(d)) for d in degrees]
    if not values:
        return None
    c = sum(math.cos(v) for v in values)
    s = sum(math.sin(v) for v in values)
    if math.hypot(c, s) < 1e-9 * len(values):
        return None
    return normalize_yaw(math.degrees(math.atan2(s, c)))


def _consensus(attribute: str, values: list[Any]) -> Any:
    """The verified reading of one image from its verifiers' readings: the circular mean
    of the yaws given; for a binary attribute the strict majority (a tie: None)."""
    if attribute == "yaw":
        return circular_mean(v for v in values if v is not None and not isinstance(v, bool))
    return _majority(bool(v) for v in values if v is not None) if any(
        v is not None for v in values) else None


def verified_prelabels(readings: pd.DataFrame, prelabels: pd.DataFrame) -> pd.DataFrame:
    """Per image (content hash) and attribute: the verifiers' readings and the verified
    reading (:func:`_consensus`), beside the VLM pre-label. ``readings``: from
    :func:`load_image_readings`; ``prelabels``: from :func:`load_prelabels`. Images read
    but without a pre-label are kept (``prelabel`` None). Columns: image_sha256,
    attribute, prelabel, n_verifiers, readings (JSON ``{verifier: value}``), verified,
    tasks."""
    cols = ["image_sha256", "attribute", "prelabel", "n_verifiers", "readings", "verified",
            "tasks"]
    read: dict[tuple[str, str], dict[str, Any]] = {}
    for r in readings.itertuples(index=False):
        read.setdefault((r.image_sha256, r.attribute), {})[r.verifier] = r.value
    rows = []
    for r in prelabels.itertuples(index=False):
        given = read.get((r.image_sha256, r.attribute), {})
        rows.append([r.image_sha256, r.attribute, r.prelabel, len(given),
                     json.dumps(given, sort_keys=True),
                     _consensus(r.attribute, list(given.values())), r.tasks])
    labelled = set(zip(prelabels["image_sha256"], prelabels["attribute"], strict=True))
    for (sha, attribute), given in sorted(read.items()):
        if (sha, attribute) not in labelled:
            rows.append([sha, attribute, None, len(given), json.dumps(given, sort_keys=True),
                         _consensus(attribute, list(given.values())), ""])
    table = pd.DataFrame(rows, columns=cols).astype({"prelabel": object, "verified": object})
    for c in ("prelabel", "verified"):
        table[c] = table[c].where(table[c].notna(), None)
    return table.sort_values(["image_sha256", "attribute"], kind="stable").reset_index(
        drop=True)


def prelabel_accuracy(verified: pd.DataFrame) -> pd.DataFrame:
    """How good the VLM pre-labels were, per attribute, over distinct images: agreement of
    the pre-label with the verified reading (:func:`verified_prelabels`). VIF-Bench
    pre-labels the reference pool with a VLM and verifies it by hand ("VIF-Bench:
    Evaluating Visual Instruction Following in Multi-Reference Image Generation",
    Section 3.2 and Appendix C.4); this is how often the verification changed it.

    * ``yaw``: the error is the minimum angular difference on the circle between the
      pre-label and the verified yaw (:func:`annotation.vif.conflicts.yaw_difference`), over
      images whose facing direction the verifiers read as clear (verified ``yaw_reliable``
      true: an unclear facing direction has no yaw to be wrong about): ``n``,
      ``median_error``, ``mean_error``, ``p90_error`` (linear interpolation between order
      statistics, numpy's default) in degrees and the shares within 22.5 and 45 degrees.
    * the binary attributes: ``n`` images with a pre-label and a decided verified reading,
      ``correct``, ``accuracy`` and its Wilson (1927) 95% interval (``accuracy_lo``,
      ``accuracy_hi``; :func:`annotation.stats.agreement.wilson_interval`).

    ``n_images``: images with a pre-label of the attribute; ``n_unread``: of those, not
    yet read by anyone (or only in unsubmitted work); ``n_undecided``: read, but tied (or
    for yaw: no mean direction, unclear, or no yaw given)."""
    rows = []
    for attribute in ("yaw", *BINARY_ATTRIBUTES):
        sub = verified[(verified["attribute"] == attribute) & verified["prelabel"].notna()]
        unread = int((sub["n_verifiers"] == 0).sum())
        row: dict[str, Any] = {"attribute": attribute, "n_images": int(len(sub)),
                               "n_unread": unread}
        if attribute == "yaw":
            clear = {sha for sha, v in zip(
                verified.loc[verified["attribute"] == "yaw_reliable", "image_sha256"],
                verified.loc[verified["attribute"] == "yaw_reliable", "verified"],
                strict=True) if v is True}
            errors = [yaw_difference(float(p), float(v))
                      for sha, p, v in zip(sub["image_sha256"], sub["prelabel"],
                                           sub["verified"], strict=True)
                      if v is not None and sha in clear
                      and isinstance(p, (int, float)) and not isinstance(p, bool)]
            row |= {"n": len(errors), "n_undecided": len(sub) - unread - len(errors)}
            arr = np.array(errors, dtype=float)
            row |= {
                "median_error": float(np.median(arr)) if len(arr) else math.nan,
                "mean_error": float(arr.mean()) if len(arr) else math.nan,
                "p90_error": float(np.percentile(arr, 90)) if len(arr) else math.nan,
                **{f"within_{str(d).replace('.', '_').removesuffix('_0')}":
                   float((arr <= d).mean()) if len(arr) else math.nan for d in YAW_WITHIN}}
        else:
            pairs = [(bool(p), bool(v)) for p, v in zip(sub["prelabel"], sub["verified"],
                                                        strict=True) if v is not None]
            correct = sum(1 for p, v in pairs if p == v)
            interval = wilson_interval(correct, len(pairs))
            row |= {"n": len(pairs), "n_undecided": len(sub) - unread - len(pairs),
                    "correct": correct, "accuracy": interval.estimate,
                    "accuracy_lo": interval.lo, "accuracy_hi": interval.hi}
        rows.append(row)
    cols = ["attribute", "n_images", "n_unread", "n_undecided", "n", "correct", "accuracy",
            "accuracy_lo", "accuracy_hi", "median_error", "mean_error", "p90_error",
            "within_22_5", "within_45"]
    table = pd.DataFrame(rows).reindex(columns=cols)
    return table.astype({"correct": "Int64"})


def rules_on_readings(items: Mapping[str, VerifyItem], verified: pd.DataFrame) -> pd.DataFrame:
    """Per task (``items``: :func:`load_items`) and conflict type it can have: the rules'
    decision (Appendix C.4) on the verified readings of its reference images
    (:func:`verified_prelabels`), the pre-label where an image has no verified reading. A
    reading is of the image, so a correction made in one task changes this decision in
    every task showing that image."""
    value = {(r.image_sha256, r.attribute): r.verified
             for r in verified.itertuples(index=False) if r.verified is not None}
    rows = []
    for task_id, item in items.items():
        sha = {im.index: im.sha256 for im in item.images}
        readings = {(i, a): value[(sha[i], a)] for i, a in item.needed()
                    if (sha[i], a) in value}
        decided = decisions_on(item, readings)
        rows += [{"task_id": task_id, "conflict": c.conflict,
                  "rules_on_readings": decided[c.conflict].conflict} for c in item.checks]
    return pd.DataFrame(rows, columns=["task_id", "conflict", "rules_on_readings"]).astype(
        object)


# ------------------------------------------------------------------------ the report
def conflict_tables(store: Store) -> dict[str, pd.DataFrame]:
    """Every table of the conflict report, by file name (without extension)."""
    verdicts = load_verdicts(store)
    labels = verified_labels(verdicts, load_resolutions(store))
    items = load_items(store)
    tasks = load_tasks(store, items)
    rules = tasks[tasks["conflict"].notna()]
    consistency = rules.assign(
        consistent=[p is None or r is None or p == r
                    for p, r in zip(rules["published"], rules["rules"], strict=True)])
    prelabels = verified_prelabels(load_image_readings(store), load_prelabels(store))
    consistency = consistency.merge(rules_on_readings(items, prelabels), how="left",
                                    on=["task_id", "conflict"])
    consistency["rules_on_readings"] = consistency["rules_on_readings"].astype(object).where(
        consistency["rules_on_readings"].notna(), None)
    return {
        "conflict_agreement": automatic_vs_verified(labels),
        "annotator_confusion": confusion_table(conflict_fit(verdicts), "conflict"),
        "verifier_agreement": verifier_agreement(verdicts),
        "conflict_statistics": conflict_statistics(tasks, labels),
        "verified_labels": labels,
        "verdict_history": load_verdicts(store, history=True),
        "resolution_history": conflict_rows.resolutions_df(store, history=True),
        "published_vs_rules": consistency,
        "prelabel_accuracy": prelabel_accuracy(prelabels),
        "verified_prelabels": prelabels,
        "reading_history": load_image_readings(store, history=True).drop(
            columns="confirmed").astype({"supersedes": "Int64"}),
    }


def verified_labels_jsonl(store: Store) -> str:
    """The ``verified_labels.jsonl`` text (see :func:`labels_jsonl_rows`)."""
    verdicts = load_verdicts(store)
    rows = labels_jsonl_rows(verified_labels(verdicts, load_resolutions(store)), verdicts,
                             load_readings(store),
                             load_tasks(store))
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def write_conflict_report(store: Store, out: Path) -> list[Path]:
    """Write ``verified_labels.jsonl`` and one CSV per table of :func:`conflict_tables`
    (text cells that a spreadsheet would run as a formula are neutralized)."""
    from annotation.results.report import write_csvs

    return write_csvs(conflict_tables(store), out,
                      {"verified_labels.jsonl": verified_labels_jsonl(store)})
