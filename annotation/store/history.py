"""The audit trail of a project as one tidy table: who did what, when (issue #7).

:func:`history` reads three append-only sources and returns one row per event:

* ``annotations``: every human answer ever written, including superseded ones. An answer
  that replaces an earlier one is an ``answer.change`` event and carries the replaced row
  (``supersedes``) and its value (``previous_answer`` / ``previous_score`` /
  ``previous_note``); the first answer to a question or criterion is an ``answer``.
  ``who`` is the annotator; ``source`` is ``app`` or ``import:<id>`` (answers made
  elsewhere, brought in by that import).
* ``audit_log``: account changes (``user.add``, ``user.role`` with ``from``/``to``,
  ``user.disable``, ``user.enable``, ``user.password``, ``user.email``), sign-ins
  (``login.*``), submissions (``item.submit``), flags (``item.flag`` with reason, note and
  question), workflow settings and samples (``workflow.settings``, ``workflow.sample``) and
  whatever else the storage layer logs (e.g. ``verify.*``), with ``detail`` as JSON.
* ``imports``: each import (``import``), with who ran it and what it wrote.
* the verification and review tables, also append-only: ``prelabel_readings``
  (``reading`` / ``reading.change``: item = task, ``question_id`` = ``Image_<k>.<attribute>``,
  ``answer`` = the value as JSON), ``conflict_verdicts`` (``verdict`` / ``verdict.change``:
  item = task, ``question_id`` = conflict type, ``answer`` = ``conflict`` / ``no conflict``,
  ``detail`` with the automatic label and agreement) and ``tree_reviews`` (``tree_review``
  / ``tree_review.change``: item = root output, ``question_id`` = operator instance,
  ``answer`` = the origin node, ``detail`` with reason and box), and ``conflict_resolutions``
  (``resolution`` / ``resolution.change``: an admin's decision on a tied or undecided
  conflict label; item = task, ``question_id`` = conflict type, ``note`` = why). Their row
  ids and the row they supersede are in ``detail``.
* ``adjudications`` (schema 10, issue #16): ``adjudication`` / ``adjudication.change``, an
  adjudicator's decision on a disputed checklist decision (item = output, ``question_id``
  = question, ``answer`` = yes / no) or tree localization (item = root output,
  ``question_id`` = operator instance, ``answer`` = the origin), with ``note``; ``detail``
  has the kind, row id and the row superseded. A conflict tie decided in the adjudication
  queue is a ``resolution`` (it is written to ``conflict_resolutions``); every decision
  of the queue is also an ``adjudicate.submit`` audit event.

Columns: ``at`` (UTC ISO 8601 as stored), ``who``, ``event``, ``annotator`` (the
annotator or account the event is about), ``item`` (output id), ``question_id``,
``criterion``, ``answer``, ``score``, ``note``, ``annotation_id``, ``supersedes``,
``previous_answer``, ``previous_score``, ``previous_note``, ``source``, ``subject`` (the
audit log's subject), ``event_id`` (audit log row), ``import_id``, ``detail`` (JSON text).
Rows are in time order.
"""

from __future__ import annotations

import json

import pandas as pd

from annotation.store import Store

COLUMNS = [
    "at", "who", "event", "annotator", "item", "question_id", "criterion", "answer", "score",
    "note", "annotation_id", "supersedes", "previous_answer", "previous_score",
    "previous_note", "source", "subject", "event_id", "import_id", "detail",
]
ITEM_ACTIONS = ("item.", "verify.submit", "tree.submit", "adjudicate.submit")
ACCOUNT_ACTIONS = ("user.", "login.")


def _answers(store: Store) -> pd.DataFrame:
    df = store.query_df(
        "SELECT a.created_at AS at, a.annotator AS who, a.annotator, a.output_id AS item,"
        " a.question_id, a.criterion, a.answer, a.score, a.note, a.annotation_id,"
        " a.supersedes, p.answer AS previous_answer, p.score AS previous_score,"
        " p.note AS previous_note, a.source, a.import_id"
        " FROM annotations a LEFT JOIN annotations p ON p.annotation_id = a.supersedes"
        " ORDER BY a.annotation_id"
    )
    df.insert(2, "event", df["supersedes"].notna().map({True: "answer.change",
                                                       False: "answer"}))
    return df


def _audit(store: Store) -> pd.DataFrame:
    df = store.query_df(
        "SELECT event_id, at, actor AS who, action AS event, subject, detail"
        " FROM audit_log ORDER BY event_id"
    )
    details = df["detail"].map(lambda text: json.loads(text) if text else {})
    about_item = df["event"].str.startswith(ITEM_ACTIONS)
    about_account = df["event"].str.startswith(ACCOUNT_ACTIONS)
    df["item"] = df["subject"].where(about_item)
    adjudicated = df["event"] == "adjudicate.submit"  # subject: the queue's unit (JSON)
    df.loc[adjudicated, "item"] = [d.get("item") if isinstance(d, dict) else None
                                   for d in details[adjudicated]]
    df["annotator"] = df["who"].where(about_item, df["subject"].where(about_account))
    df["question_id"] = [d.get("question_id") if isinstance(d, dict) else None
                         for d in details]
    df["note"] = [d.get("note") if isinstance(d, dict) else None for d in details]
    df["source"] = "audit_log"
    return df


def _imports(store: Store) -> pd.DataFrame:
    df = store.query_df(
        "SELECT import_id, started_at AS at, user AS who, source AS src, format, counts,"
        " finished_at FROM imports ORDER BY import_id"
    )
    df["event"] = "import"
    df["detail"] = [
        json.dumps({"source": r.src, "format": r.format, "counts": json.loads(r.counts),
                    "finished_at": r.finished_at}, ensure_ascii=False, sort_keys=True)
        for r in df.itertuples()
    ]
    df["source"] = "imports"
    return df.drop(columns=["src", "format", "counts", "finished_at"])


def _changes(df: pd.DataFrame, event: str, source: str) -> pd.DataFrame:
    df.insert(2, "event", df.pop("supersedes_id").notna().map(
        {True: f"{event}.change", False: event}))
    df["source"] = source
    return df


def _verification(store: Store) -> list[pd.DataFrame]:
    readings = store.query_df(
        "SELECT created_at AS at, verifier AS who, verifier AS annotator, task_id AS item,"
        " 'Image_' || image_idx || '.' || attribute AS question_id, value AS answer,"
        " supersedes AS supersedes_id, json_object('reading_id', reading_id, 'supersedes',"
        " supersedes) AS detail FROM prelabel_readings ORDER BY reading_id")
    verdicts = store.query_df(
        "SELECT created_at AS at, verifier AS who, verifier AS annotator, task_id AS item,"
        " conflict AS question_id, CASE label WHEN 1 THEN 'conflict' ELSE 'no conflict' END"
        " AS answer, note, supersedes AS supersedes_id, json_object('verdict_id', verdict_id,"
        " 'supersedes', supersedes, 'automatic', automatic, 'agrees', agrees, 'blind', blind)"
        " AS detail FROM conflict_verdicts ORDER BY verdict_id")
    reviews = store.query_df(
        "SELECT created_at AS at, reviewer AS who, reviewer AS annotator, output_id AS item,"
        " instance AS question_id, origin AS answer, note, supersedes AS supersedes_id,"
        " json_object('review_id', review_id, 'supersedes', supersedes, 'reason', reason,"
        " 'box', json(box)) AS detail FROM tree_reviews ORDER BY review_id")
    resolutions = store.query_df(
        "SELECT created_at AS at, decided_by AS who, task_id AS item, conflict AS question_id,"
        " CASE label WHEN 1 THEN 'conflict' ELSE 'no conflict' END AS answer, note,"
        " supersedes AS supersedes_id, json_object('resolution_id', resolution_id,"
        " 'supersedes', supersedes) AS detail FROM conflict_resolutions"
        " ORDER BY resolution_id")
    adjudications = store.query_df(
        "SELECT created_at AS at, decided_by AS who, item, target AS question_id,"
        " decision AS answer, note, supersedes AS supersedes_id, json_object('kind', kind,"
        " 'adjudication_id', adjudication_id, 'supersedes', supersedes) AS detail"
        " FROM adjudications ORDER BY adjudication_id")
    return [_changes(adjudications, "adjudication", "adjudications"),
            _changes(readings, "reading", "prelabel_readings"),
            _changes(verdicts, "verdict", "conflict_verdicts"),
            _changes(reviews, "tree_review", "tree_reviews"),
            _changes(resolutions, "resolution", "conflict_resolutions")]


def history(store: Store, annotator: str | None = None, item: str | None = None
            ) -> pd.DataFrame:
    """Every answer (current and superseded), flag, submission, account and role change,
    sign-in, settings change, import, pre-label reading, conflict verdict and tree review,
    with who and when, oldest first.

    ``annotator``: only events by or about that annotator (their answers, flags and
    submissions, changes to their account, and what they did as an admin). ``item``: only
    events about that output or task (answers, flags, submissions, verification, review).
    """
    parts = [p for p in (_answers(store), _audit(store), _imports(store),
                         *_verification(store)) if not p.empty]
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    df = pd.concat([p.reindex(columns=COLUMNS) for p in parts], ignore_index=True)
    if annotator is not None:
        df = df[(df["annotator"] == annotator) | (df["who"] == annotator)]
    if item is not None:
        df = df[df["item"] == item]
    moment = pd.to_datetime(df["at"], utc=True, errors="coerce", format="ISO8601")
    order = pd.DataFrame({"moment": moment, "text": df["at"].astype(str),
                          "kind": df["source"].map({"imports": 0, "audit_log": 2}).fillna(1),
                          "id": df[["annotation_id", "event_id", "import_id"]].max(axis=1)})
    df = df.loc[order.sort_values(["moment", "text", "kind", "id"], kind="stable").index]
    for column in ("annotation_id", "supersedes", "event_id", "import_id"):
        df[column] = df[column].astype("Int64")
    return df.reset_index(drop=True)
