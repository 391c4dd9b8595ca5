"""What a study's outputs can be grouped by (``judge-audit report --by``), in one place.

Every grouping key is a column of ``StudyData.outputs`` (:mod:`annotation.results.study`):

* ``generator``, ``task_id``;
* ``meta.<path>``: the task's meta, nested objects flattened with dots
  (``meta.conflicts.orientation_conflict``, ``meta.dimension``); a list of scalars is a
  *multi-valued* key (``meta.visual_instruction_types``: a task is in the group of each of
  its values);
* derived task features (:func:`task_features`), named ``task.<feature>``:
  ``task.n_references`` and ``task.n_visual_instructions`` (images by role),
  ``task.vi_type`` (multi-valued: the kinds of the task's visual-instruction images,
  ``light+wind`` counted as both ``light`` and ``wind``; the meta's
  ``visual_instruction_types`` where no image names its kind), as in "VIF-Bench: Evaluating
  Visual Instruction Following in Multi-Reference Image Generation", App. F.1-F.2 (results
  by number of references, of visual instructions and by VI type);
* conflict labels (:func:`conflict_features`), named ``conflict.<type>`` for
  ``orientation``, ``light``, ``wind``, ``pose`` and ``any``: ``True`` / ``False`` on the tasks
  that can have that conflict, the *verified* label where verifiers decided it (strict
  majority) and the published label otherwise (the rules' decision on the pre-labels where
  nothing was published); ``conflict.<type>.source`` says which (``verified``,
  ``published``, ``rules``). VIF-Bench Sec. 4.3 (Fig. 6 left) compares judge scores on
  conflict and no-conflict tasks this way.

Pure functions except the two ``load_*`` readers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from annotation.store import Store
from annotation.work.verification import CONFLICT_TYPES

#: Conflict types of VIF-Bench, in report order; ``any`` pools them per task.
CONFLICTS = CONFLICT_TYPES
SOURCES = ("verified", "published", "rules")


def flat_meta(meta: Mapping[str, Any], prefix: str = "meta") -> dict[str, Any]:
    """``meta`` flattened to ``{"meta.a.b": value}``: nested objects by dotted paths, scalars
    as they are, a list of scalars as a tuple (a multi-valued key); other lists (of
    objects, e.g. boxes) are left out, as they name no group."""
    out: dict[str, Any] = {}
    for key, value in meta.items():
        name = f"{prefix}.{key}"
        if isinstance(value, Mapping):
            out.update(flat_meta(value, name))
        elif isinstance(value, list | tuple):
            if all(isinstance(v, str | int | float | bool) for v in value):
                out[name] = tuple(value)
        elif isinstance(value, str | int | float | bool) or value is None:
            out[name] = value
    return out


def vi_types(kinds: Iterable[str | None], declared: Iterable[Any] = ()) -> tuple[str, ...]:
    """The visual-instruction types of a task, sorted: from its VI images' kinds (``+``
    splits a shared image, ``light+wind``), else from the declared
    ``visual_instruction_types``."""
    found = {part.strip().lower() for kind in kinds if kind
             for part in str(kind).split("+") if part.strip()}
    if not found:
        found = {part.strip().lower() for kind in declared if isinstance(kind, str)
                 for part in kind.split("+") if part.strip()}
    return tuple(sorted(found))


def task_features(images: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """Per task: ``task.n_references``, ``task.n_visual_instructions``, ``task.vi_type``.

    ``images``: task_id, role, kind (one row per image); ``tasks``: task_id and the meta as
    a dict (``meta``)."""
    rows = []
    grouped = dict(tuple(images.groupby("task_id", sort=False))) if len(images) else {}
    for task_id, meta in zip(tasks["task_id"], tasks["meta"], strict=True):
        mine = grouped.get(task_id)
        roles = mine["role"].tolist() if mine is not None else []
        vi_kinds = (mine.loc[mine["role"] == "visual_instruction", "kind"].tolist()
                    if mine is not None else [])
        declared = meta.get("visual_instruction_types") or ()
        rows.append({"task_id": task_id,
                     "task.n_references": roles.count("reference"),
                     "task.n_visual_instructions": roles.count("visual_instruction"),
                     "task.vi_type": vi_types(vi_kinds, declared if isinstance(
                         declared, list | tuple) else ())})
    return pd.DataFrame(rows, columns=["task_id", "task.n_references",
                                       "task.n_visual_instructions", "task.vi_type"])


def conflict_features(automatic: pd.DataFrame, verified: pd.DataFrame) -> pd.DataFrame:
    """Per task that can have a conflict: ``conflict.<type>`` and ``conflict.<type>.source``
    for each type and ``any`` (see the module docstring).

    ``automatic``: task_id, conflict, published, rules (one row per task and type it can
    have, :func:`annotation.results.conflicts.load_tasks`); ``verified``: task_id,
    conflict, verified (None on a tie; :func:`annotation.results.conflicts.verified_labels`).
    ``any`` is True when one type is True, False when every type is False; its source is
    the least certain (``rules`` before ``published`` before ``verified``) of the labels
    that decide it: the True ones, or every type's when all are False. A task with an
    undecided type and no True one has no ``any``.
    """
    decided = {(t, k): v for t, k, v in zip(verified["task_id"], verified["conflict"],
                                             verified["verified"], strict=True)
               if v is not None and not pd.isna(v)}
    per_task: dict[str, dict[str, Any]] = {}
    for task_id, kind, published, rules in zip(
            automatic["task_id"], automatic["conflict"], automatic["published"],
            automatic["rules"], strict=True):
        if kind is None or pd.isna(kind):
            continue
        row = per_task.setdefault(task_id, {"task_id": task_id})
        row.setdefault("__types", set()).add(kind)
        if (task_id, kind) in decided:
            label, source = bool(decided[(task_id, kind)]), "verified"
        elif published is not None and not pd.isna(published):
            label, source = bool(published), "published"
        elif rules is not None and not pd.isna(rules):
            label, source = bool(rules), "rules"
        else:
            continue
        row[f"conflict.{kind}"], row[f"conflict.{kind}.source"] = label, source
    for row in per_task.values():
        types = row.pop("__types")
        labels = [row[f"conflict.{k}"] for k in CONFLICTS if f"conflict.{k}" in row]
        sources = [row[f"conflict.{k}.source"] for k in CONFLICTS if f"conflict.{k}" in row]
        if any(labels):
            row["conflict.any"] = True
        elif labels and len(labels) == len(types):  # every type decided, none a conflict
            row["conflict.any"] = False
        if "conflict.any" in row:  # what decided it: the conflicts, or every type's "no"
            deciding = [s for s, label in zip(sources, labels, strict=True) if label] or sources
            row["conflict.any.source"] = next(s for s in reversed(SOURCES) if s in deciding)
    columns = ["task_id"] + [c for k in (*CONFLICTS, "any")
                             for c in (f"conflict.{k}", f"conflict.{k}.source")]
    table = pd.DataFrame(list(per_task.values()), columns=columns).astype(object)
    return table.where(table.notna(), None)  # None, never NaN, where a task has no label


TASK_FEATURES = ("task.n_references", "task.n_visual_instructions", "task.vi_type")


def grouping_keys(store: Store) -> list[str]:
    """The grouping keys this project has (``generator``, the tasks' flattened meta keys,
    the task features, and the conflict labels where a task can have a conflict), without
    computing their values: for a picker."""
    from annotation.store import items

    meta_keys: set[str] = set()
    for _, meta in items.task_metas(store):
        meta_keys.update(flat_meta(meta))
    can_conflict = any(k.startswith("meta.conflicts") for k in meta_keys) or \
        items.has_prelabels(store)
    conflicts = [f"conflict.{k}" for k in (*CONFLICTS, "any")] if can_conflict else []
    return ["generator", *sorted(meta_keys), *TASK_FEATURES, *conflicts]


def load_task_features(store: Store, tasks: pd.DataFrame) -> pd.DataFrame:
    """:func:`task_features` of ``tasks`` (task_id, meta as a dict), images read from the
    store."""
    return task_features(store.images_df()[["task_id", "role", "kind"]], tasks)


def load_conflict_features(store: Store) -> pd.DataFrame:
    """:func:`conflict_features` of the project (no rows when no task has a visual
    instruction that can conflict)."""
    from annotation.results.conflicts import (
        load_resolutions,
        load_tasks,
        load_verdicts,
        verified_labels,
    )

    automatic = load_tasks(store)
    if automatic["conflict"].notna().sum() == 0:
        return conflict_features(automatic.iloc[0:0], pd.DataFrame(
            columns=["task_id", "conflict", "verified"]))
    return conflict_features(automatic, verified_labels(load_verdicts(store),
                                                        load_resolutions(store)))
