"""``judge-audit export --parquet DIR``: a study as a publishable dataset (issue #18, item 5).

One Parquet file per kind of row, each in its own folder (``DIR/<name>/<name>.parquet``,
so ``pandas.read_parquet("DIR/<name>")`` and ``datasets.load_dataset("parquet",
data_dir="DIR/<name>")`` read one table), and a dataset card ``DIR/README.md`` in the
Hugging Face style: YAML front matter with ``license`` and one ``configs`` entry per file
(``datasets.load_dataset("DIR", "<name>")``), then the columns of every file with their
meaning, the row counts, the sampling design (:mod:`annotation.results.design`), the
annotation guidelines, the schema version and the judge-audit version.

What is in it is what the bundle export (:func:`annotation.formats.bundle.write_bundle`)
holds, an admin's artefact like it: tasks and their checklist questions, criteria and
judges, the input images and outputs (metadata and content hashes, never pixels), every
judge answer (checklist, ratings, pairs, rankings) and every human answer **with its
history** (each row ever written, ``supersedes`` naming the row it replaced, ``created_at``,
``source`` and ``current``), annotators by their names in the database (judge-audit has no
pseudonymisation option: the card says so). Never in it, as never in a bundle: accounts,
password hashes, sessions, the audit log, reservations, the import log (local paths).

Column types are the stored ones: integers stay integers (``supersedes`` too, with nulls),
SQLite's 0/1 flags are booleans, JSON columns are JSON text, timestamps are the stored
UTC ISO 8601 text.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import annotation

if TYPE_CHECKING:
    from annotation.store import Store

CARD = "README.md"
DEFAULT_LICENSE = "unknown"  # the Hugging Face Hub's value for a licence not given
#: the config ``load_dataset(DIR)`` reads without a name: the human answers
DEFAULT_CONFIG = "annotations"


@dataclass(frozen=True)
class Column:
    """A column of an exported file: its name, Arrow type (``string``, ``int64``,
    ``float64``, ``bool``) and meaning (written to the dataset card)."""

    name: str
    type: str
    meaning: str


@dataclass(frozen=True)
class DatasetFile:
    """An exported file: its name (the config and file stem), what one row is, the query
    that reads its rows (columns in :attr:`columns` order), and whether it is written when
    the project has no such rows (``always``; otherwise left out, e.g. no pairs)."""

    name: str
    row: str
    sql: str
    columns: tuple[Column, ...]
    always: bool = False


def _c(name: str, type_: str, meaning: str) -> Column:
    return Column(name, type_, meaning)


def _history(table: str, row_id: str) -> tuple[str, tuple[Column, ...]]:
    """The ``supersedes``/``current`` part of an append-only answer table's query."""
    sql = (f"a.supersedes, NOT EXISTS (SELECT 1 FROM {table} b "
           f"WHERE b.supersedes = a.{row_id}) AS current")
    return sql, (
        _c("supersedes", "int64", f"the `{row_id}` of the row this one replaces (null: a "
           "first answer); unique, so a history never forks"),
        _c("current", "bool", "true: no later row replaces this one (the live answer)"))


_CREATED = _c("created_at", "string", "when the row was written (UTC, ISO 8601)")
_SOURCE = _c("source", "string", "where it was written: `app`, or `import:<id>` for an "
             "answer brought by an import")
_NOTE = _c("note", "string", "the person's free-text note (may be null)")
_META = "JSON object: the benchmark's extra data"


def _answer_file(name: str, row: str, row_id: str, select: str,
                 columns: tuple[Column, ...], always: bool = False) -> DatasetFile:
    """An append-only answer table (``name``): every row, oldest first, with its history
    columns."""
    history_sql, history = _history(name, row_id)
    sql = f"SELECT a.{row_id}, {select}, {history_sql} FROM {name} a ORDER BY a.{row_id}"
    return DatasetFile(name, row, sql, (_c(row_id, "int64", "the row's id (its order)"),
                                        *columns, *history), always)


_QUESTION = _c("question_id", "string", "the checklist question answered (null: a rating)")
_CRITERION = _c("criterion", "string", "the criterion rated (null: a checklist answer)")
_OUTPUT = _c("output_id", "string", "the generated output (`outputs.output_id`)")
_TASK = _c("task_id", "string", "the task (`tasks.task_id`)")
_ANNOTATOR = _c("annotator", "string", "the person (`annotators.name`, as in the database)")
_JUDGE = _c("judge", "string", "the judge (`judges.name`)")
_RAW = _c("raw", "string", "the judge's text as imported")
_SHA = _c("sha256", "string", "SHA-256 of the image file's bytes (null: image not at hand)")
_FILE = (_c("format", "string", "image format (PNG, JPEG, ...)"),
         _c("width", "int64", "width in pixels"), _c("height", "int64", "height in pixels"),
         _c("size_bytes", "int64", "file size in bytes"))

#: every file the export can write, in card order
FILES: tuple[DatasetFile, ...] = (
    DatasetFile("tasks", "benchmark item", """
        SELECT t.task_id, t.instruction, t.checklist_id, t.meta,
               (SELECT count(*) FROM images i WHERE i.task_id = t.task_id) AS n_images
        FROM tasks t ORDER BY t.rowid""", (
        _c("task_id", "string", "the benchmark item's id"),
        _c("instruction", "string", "the text instruction (plain text)"),
        _c("checklist_id", "string", "the checklist of its questions (`questions`); tasks "
           "that share one share it (TIIF-Bench short and long prompts)"),
        _c("meta", "string", f"{_META} (TRACE-Bench formula and tree, VIF-Bench layout and "
           "conflicts, TIIF-Bench dimension, ...)"),
        _c("n_images", "int64", "number of input images (`images`)")), always=True),
    DatasetFile("questions", "checklist question", """
        SELECT question_id, checklist_id, position, text, pass_answer, operator, target,
               depends_on, meta FROM questions ORDER BY checklist_id, position""", (
        _c("question_id", "string", "the question's id"),
        _c("checklist_id", "string", "its checklist (`tasks.checklist_id`)"),
        _c("position", "int64", "order in the checklist"),
        _c("text", "string", "the question"),
        _c("pass_answer", "string", "`yes` or `no`: the answer that counts as a pass"),
        _c("operator", "string", "TRACE-Bench operator (grouping; may be null)"),
        _c("target", "string", "TRACE-Bench target (grouping; may be null)"),
        _c("depends_on", "string", "JSON list of parent question ids (DSG gating)"),
        _c("meta", "string", _META))),
    DatasetFile("criteria", "rating criterion", """
        SELECT name, label, min, max, step, level, rubric, position
        FROM criteria ORDER BY position""", (
        _c("name", "string", "the criterion's id (`criterion` in the answer files)"),
        _c("label", "string", "its label"),
        _c("min", "float64", "lowest score"), _c("max", "float64", "highest score"),
        _c("step", "float64", "score step (null: continuous)"),
        _c("level", "string", "`interval`, `ordinal` or `nominal`"),
        _c("rubric", "string", "the rubric shown to annotators (may be null)"),
        _c("position", "int64", "display order"))),
    DatasetFile("judges", "judge", "SELECT name, kind, scale_min, scale_max FROM judges "
                "ORDER BY name", (
        _c("name", "string", "the judge's name"),
        _c("kind", "string", "`vlm` (a vision-language model) or `metric`"),
        _c("scale_min", "float64", "lowest score of its own scale (null: the criterion's)"),
        _c("scale_max", "float64", "highest score of its own scale (null: the criterion's)")),
        always=True),
    DatasetFile("images", "input image of a task", """
        SELECT i.task_id, i.idx, i.role, i.kind, i.label, i.path, i.sha256,
               f.format, f.width, f.height, f.size_bytes, i.meta
        FROM images i LEFT JOIN files f ON f.sha256 = i.sha256
        ORDER BY i.task_id, i.idx""", (
        _TASK, _c("idx", "int64", "0-based input order (`Image_<idx>`)"),
        _c("role", "string", "`reference` or `visual_instruction`"),
        _c("kind", "string", "`layout`, `orientation`, `wind`, `light`, `pose`, `main`, ..."),
        _c("label", "string", "its label (may be null)"),
        _c("path", "string", "its path as in the imported source"),
        _c("sha256", "string", "SHA-256 of the image file's bytes"), *_FILE,
        _c("meta", "string", _META))),
    DatasetFile("outputs", "generated output", """
        SELECT o.output_id, o.task_id, o.generator, o.path, o.sha256,
               f.format, f.width, f.height, f.size_bytes, o.missing, o.meta
        FROM outputs o LEFT JOIN files f ON f.sha256 = o.sha256 ORDER BY o.rowid""", (
        _c("output_id", "string", "the output's id"), _TASK,
        _c("generator", "string", "the image generator that made it"),
        _c("path", "string", "its path as in the imported source (null: not at hand)"),
        _SHA, *_FILE,
        _c("missing", "bool", "true: the generator produced nothing"),
        _c("meta", "string", f"{_META} (e.g. `node` of a diagnostic-tree node)")),
        always=True),
    DatasetFile("judgments", "judge answer (checklist answer or rating)", """
        SELECT judgment_id, judge, output_id, question_id, criterion, answer, score, raw,
               parse_status FROM judgments ORDER BY judgment_id""", (
        _c("judgment_id", "int64", "the row's id"), _JUDGE, _OUTPUT, _QUESTION, _CRITERION,
        _c("answer", "string", "`yes` or `no` (checklist; null: unparsed or a rating)"),
        _c("score", "float64", "the score (rating; null: unparsed or a checklist answer)"),
        _RAW, _c("parse_status", "string", "`ok`, or `unparsed`: answer/score is null")),
        always=True),
    DatasetFile("annotators", "person who annotated", "SELECT name, created_at FROM "
                "annotators ORDER BY name", (
        _c("name", "string", "the person's name as in the database (not pseudonymised)"),
        _c("created_at", "string", "when they first appeared (UTC, ISO 8601)")),
        always=True),
    _answer_file(
        "annotations", "human answer ever written (checklist answer or rating)",
        "annotation_id",
        "a.annotator, a.output_id, a.question_id, a.criterion, a.answer, a.score, a.note, "
        "a.created_at, a.source", (
            _ANNOTATOR, _OUTPUT, _QUESTION, _CRITERION,
            _c("answer", "string", "`yes`, `no` or `cant_tell` (checklist; null: a rating)"),
            _c("score", "float64", "the score (rating; null: a checklist answer)"),
            _NOTE, _CREATED, _SOURCE), always=True),
    DatasetFile("pairs", "pairwise item", """
        SELECT pair_id, output_a, output_b, task_id, meta FROM pairs ORDER BY rowid""", (
        _c("pair_id", "string", "the pair's id"),
        _c("output_a", "string", "output shown first / left (`outputs.output_id`)"),
        _c("output_b", "string", "the other output"),
        _c("task_id", "string", "the task (may be null)"), _c("meta", "string", _META))),
    DatasetFile("pair_judgments", "judge's preference on a pair", """
        SELECT pair_judgment_id, judge, pair_id, preference, raw FROM pair_judgments
        ORDER BY pair_judgment_id""", (
        _c("pair_judgment_id", "int64", "the row's id"), _JUDGE,
        _c("pair_id", "string", "the pair (`pairs.pair_id`)"),
        _c("preference", "string", "`a`, `b`, `tie` (both good) or `both_bad`; null: "
           "unparsed, see `raw`"), _RAW)),
    _answer_file("pair_annotations", "human preference on a pair ever written",
                 "pair_annotation_id",
                 "a.annotator, a.pair_id, a.preference, a.shown_first, a.note, a.created_at, "
                 "a.source", (
                     _ANNOTATOR, _c("pair_id", "string", "the pair (`pairs.pair_id`)"),
                     _c("preference", "string", "`a`, `b`, `tie` or `both_bad`"),
                     _c("shown_first", "string", "`a`/`b`: the output the person saw on the "
                        "left (null: not recorded)"), _NOTE, _CREATED, _SOURCE)),
    DatasetFile("rankings", "ranking item", """
        SELECT ranking_id, outputs, task_id FROM rankings ORDER BY rowid""", (
        _c("ranking_id", "string", "the ranking item's id"),
        _c("outputs", "string", "JSON list of the output ids to rank"),
        _c("task_id", "string", "the task (may be null)"))),
    DatasetFile("ranking_judgments", "judge's order of a ranking item", """
        SELECT ranking_judgment_id, judge, ranking_id, ranked, raw FROM ranking_judgments
        ORDER BY ranking_judgment_id""", (
        _c("ranking_judgment_id", "int64", "the row's id"), _JUDGE,
        _c("ranking_id", "string", "the item (`rankings.ranking_id`)"),
        _c("ranked", "string", "JSON: the order, best first, ties as nested lists; null: "
           "unparsed, see `raw`"), _RAW)),
    _answer_file("ranking_annotations", "human order of a ranking item ever written",
                 "ranking_annotation_id",
                 "a.annotator, a.ranking_id, a.ranked, a.note, a.created_at, a.source", (
                     _ANNOTATOR, _c("ranking_id", "string", "the item (`rankings.ranking_id`)"),
                     _c("ranked", "string", "JSON: the order, best first, ties as nested "
                        "lists"), _NOTE, _CREATED, _SOURCE)),
    _answer_file("prelabel_readings", "verifier's reading of an image's pre-label ever "
                 "written (VIF-Bench)", "reading_id",
                 "a.verifier, a.task_id, a.image_idx, a.image_sha256, a.attribute, a.value, "
                 "a.created_at, a.source", (
                     _c("verifier", "string", "the person (as in the database)"), _TASK,
                     _c("image_idx", "int64", "the reference image read (`images.idx`)"),
                     _c("image_sha256", "string", "SHA-256 of the image read"),
                     _c("attribute", "string", "`yaw`, `yaw_reliable`, `light_distinctive`, "
                        "`wind_responsive` or `pose_distinctive`"),
                     _c("value", "string", "JSON: degrees, true/false or null"),
                     _CREATED, _SOURCE)),
    _answer_file("conflict_verdicts", "verdict on a conflict label ever written (VIF-Bench)",
                 "verdict_id",
                 "a.verifier, a.task_id, a.conflict, a.automatic, a.agrees, a.label, a.note, "
                 "a.blind, a.created_at, a.source", (
                     _c("verifier", "string", "the person (as in the database)"), _TASK,
                     _c("conflict", "string", "`orientation`, `light`, `wind` or `pose`"),
                     _c("automatic", "bool", "the automatic label judged (null: none)"),
                     _c("agrees", "bool", "the verified label equals the automatic one "
                        "(null: no automatic label)"),
                     _c("label", "bool", "the verified label"), _NOTE,
                     _c("blind", "bool", "true: the automatic label was hidden until the "
                        "verifier's reading was complete"), _CREATED, _SOURCE)),
    _answer_file("conflict_resolutions", "admin's decision on a tied conflict label ever "
                 "written", "resolution_id",
                 "a.task_id, a.conflict, a.label, a.note, a.decided_by, a.created_at", (
                     _TASK, _c("conflict", "string", "the conflict"),
                     _c("label", "bool", "the label decided"),
                     _c("note", "string", "why"),
                     _c("decided_by", "string", "the admin (as in the database)"), _CREATED)),
    _answer_file("tree_reviews", "reviewer's localization of a diagnostic-tree failure ever "
                 "written (TRACE-Bench)", "review_id",
                 "a.reviewer, a.output_id, a.instance, a.origin, a.reason, a.box, a.note, "
                 "a.created_at, a.source", (
                     _c("reviewer", "string", "the person (as in the database)"),
                     _c("output_id", "string", "the root output"),
                     _c("instance", "string", "the operator instance `<operator>|<target>`"),
                     _c("origin", "string", "the node where the failure originates, "
                        "`persistent` or `not_a_failure`"),
                     _c("reason", "string", "`identity_inconsistency`, `attribute_mismatch`, "
                        "`duplication`, `source_leakage`, `missing_carrier` or `other`"),
                     _c("box", "string", 'JSON `{"node", "box": [x0, y0, x1, y1]}` in 0..1'),
                     _NOTE, _CREATED, _SOURCE)),
    _answer_file("adjudications", "adjudicator's decision on a disputed answer ever written",
                 "adjudication_id",
                 "a.kind, a.item, a.target, a.decision, a.note, a.decided_by, a.created_at", (
                     _c("kind", "string", "`checklist` or `tree`"),
                     _c("item", "string", "the output (for `tree` the root output)"),
                     _c("target", "string", "the question id (for `tree` the operator "
                        "instance)"),
                     _c("decision", "string", "`yes`/`no` (for `tree` a node id, "
                        "`persistent` or `not_a_failure`)"),
                     _c("note", "string", "why"),
                     _c("decided_by", "string", "the adjudicator (as in the database)"),
                     _CREATED)),
    _answer_file("gold_answers", "admin's known answer of a gold item ever written",
                 "gold_id",
                 "a.output_id, a.question_id, a.criterion, a.answer, a.score, a.source, "
                 "a.note, a.created_by, a.created_at", (
                     _OUTPUT, _QUESTION, _CRITERION,
                     _c("answer", "string", "`yes`, `no` or `cant_tell` (null with a null "
                        "score: the gold answer is withdrawn)"),
                     _c("score", "float64", "the known score"),
                     _c("source", "string", "`typed`, `majority` or `import:<file name>`"),
                     _NOTE, _c("created_by", "string", "the admin (as in the database)"),
                     _CREATED)),
    DatasetFile("flags", "flag raised by an annotator on an output", """
        SELECT flag_id, annotator, output_id, reason, question_id, note, created_at
        FROM flags ORDER BY flag_id""", (
        _c("flag_id", "int64", "the row's id"), _ANNOTATOR, _OUTPUT,
        _c("reason", "string", "`broken_image`, `ambiguous_question` or `other`"),
        _c("question_id", "string", "the question flagged (may be null)"), _NOTE, _CREATED)),
)


def _arrow_type(name: str) -> Any:
    import pyarrow as pa

    return {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(),
            "bool": pa.bool_()}[name]


#: rows read from the database and written as one Parquet row group at a time, so the
#: memory of an export does not grow with the number of judge answers
BATCH_ROWS = 65_536


def arrow_schema(spec: DatasetFile) -> Any:
    """The ``pyarrow.Schema`` of a file: its declared column types."""
    import pyarrow as pa

    return pa.schema([pa.field(c.name, _arrow_type(c.type)) for c in spec.columns])


def read_batches(store: Store, spec: DatasetFile, batch_rows: int = BATCH_ROWS
                 ) -> Iterator[Any]:
    """The file's rows as ``pyarrow.Table`` batches of at most ``batch_rows`` rows with the
    declared column types (SQLite's 0/1 as booleans)."""
    import pyarrow as pa

    cur = store.conn.execute(spec.sql)
    names = [d[0] for d in cur.description]
    expected = [c.name for c in spec.columns]
    if names != expected:  # a query and its documentation went apart: a bug of ours
        raise AssertionError(f"{spec.name}: query columns {names} != documented {expected}")
    schema = arrow_schema(spec)
    while rows := cur.fetchmany(batch_rows):
        arrays = []
        for i, column in enumerate(spec.columns):
            values = [r[i] for r in rows]
            if column.type == "bool":
                values = [None if v is None else bool(v) for v in values]
            arrays.append(pa.array(values, type=schema.field(i).type))
        yield pa.Table.from_arrays(arrays, schema=schema)


def write_file(store: Store, spec: DatasetFile, path: Path,
               batch_rows: int = BATCH_ROWS) -> int:
    """Write the file ``spec`` to ``path`` batch by batch (:func:`read_batches`); the rows
    written. Nothing is written when there are none, unless the file is ``always``
    written (then with its columns and no rows)."""
    import pyarrow.parquet as pq

    writer = None
    n = 0
    try:
        for batch in read_batches(store, spec, batch_rows):
            if writer is None:
                path.parent.mkdir(parents=True, exist_ok=True)
                writer = pq.ParquetWriter(path, batch.schema)
            writer.write_table(batch)
            n += batch.num_rows
        if writer is None and spec.always:
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(arrow_schema(spec).empty_table(), path)
    finally:
        if writer is not None:
            writer.close()
    return n


def write_dataset(store: Store, out: Path, *, license: str = DEFAULT_LICENSE
                  ) -> dict[str, int]:
    """Write the project in ``store`` as Parquet files and a dataset card in ``out``
    (module docstring); return the rows written per file."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    for spec in FILES:
        folder = out / spec.name
        path = folder / f"{spec.name}.parquet"
        path.unlink(missing_ok=True)  # a file of an earlier export into DIR
        n = write_file(store, spec, path)
        if path.exists():
            counts[spec.name] = n
        elif folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    (out / CARD).write_text(dataset_card(store, counts, license=license), encoding="utf-8")
    return counts


def _yaml(text: str) -> str:
    """``text`` as a YAML scalar (a JSON string is one)."""
    return json.dumps(text, ensure_ascii=False)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def dataset_card(store: Store, counts: dict[str, int], *,
                 license: str = DEFAULT_LICENSE) -> str:
    """The dataset card (``README.md``) of an export with ``counts`` rows per file."""
    from annotation.results.design import design_sentence, design_table
    from annotation.results.study import load_study

    info = store.project_info()
    name = " ".join(str(info.get("name") or "judge-audit project").split())  # one line
    design = design_table(load_study(store))
    front = ["---", f"license: {_yaml(license)}", f"pretty_name: {_yaml(name)}",
             "tags:", "- judge-audit", "- human-evaluation", "- text-to-image",
             "configs:"]
    for spec in FILES:
        if spec.name in counts:
            front += [f"- config_name: {spec.name}", "  data_files:", "  - split: train",
                      f"    path: {spec.name}/{spec.name}.parquet"]
            if spec.name == DEFAULT_CONFIG:
                front.append("  default: true")
    front.append("---")
    lines = [
        "", f"# {name}", "",
        f"Human and judge labels of a judge-validation study"
        f"{' on ' + info['benchmark'] if info.get('benchmark') else ''}, exported by "
        f"judge-audit {annotation.__version__} (`judge-audit export --parquet`) from a "
        f"project database at schema version {store.schema_version()} on "
        f"{dt.datetime.now(dt.UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}.", "",
        f"- license: {license}",
        f"- judge-audit version: {annotation.__version__}",
        f"- schema version: {store.schema_version()}", "",
        "## Sampling design", "", design_sentence(design) or "No design recorded.", "",
        "| field | value |", "|---|---|",
    ]
    for key, value in design.iloc[0].items():
        lines.append(f"| {key} | {_cell('' if value is None else str(value))} |")
    lines += ["", "## Files", "", "| config | file | one row per | rows |", "|---|---|---|---|"]
    for spec in FILES:
        if spec.name in counts:
            lines.append(f"| {spec.name} | `{spec.name}/{spec.name}.parquet` | {spec.row} | "
                         f"{counts[spec.name]} |")
    lines += ["", "Every human answer is here with its history: a changed answer is a new "
              "row whose `supersedes` names the row it replaces; `current` marks the live "
              "ones. Annotators appear by their names in the database: judge-audit has no "
              "pseudonymisation option, so check the names (and the free-text notes) "
              "before publishing.", "",
              "Not in this export: accounts, password hashes, sessions, the audit log, "
              "reservations, submissions and visit times, the import log, and the images' "
              "pixels (their SHA-256, format and size are; `judge-audit export --out` writes "
              "a bundle with the files).", ""]
    for spec in FILES:
        if spec.name not in counts:
            continue
        lines += [f"### {spec.name}", "", f"One row per {spec.row}; {counts[spec.name]} "
                  "rows.", "", "| column | type | meaning |", "|---|---|---|"]
        lines += [f"| `{c.name}` | {c.type} | {_cell(c.meaning)} |" for c in spec.columns]
        lines.append("")
    guidelines = info.get("guidelines")
    if guidelines:
        lines += ["## Annotation guidelines", "", "What the annotators were shown, as "
                  "written in the project:", ""]
        lines += ["> " + line if line else ">" for line in str(guidelines).splitlines()]
        lines.append("")
    lines += ["## Loading", "", "```python", "import pandas as pd",
              'annotations = pd.read_parquet("DIR/annotations")', "",
              "from datasets import load_dataset",
              'annotations = load_dataset("DIR", "annotations")["train"]',
              '# or: load_dataset("parquet", data_dir="DIR/annotations")', "```", ""]
    return "\n".join(front + lines)
