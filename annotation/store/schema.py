"""The SQLite schema of a judge-audit project, as forward migrations.

``MIGRATIONS[i]`` takes a database from schema version ``i`` to ``i + 1``; the version is
kept in ``PRAGMA user_version``. A migration is only ever appended, never edited, once it
has landed: databases in the field were built by the old text.

Tables (see ``docs/schema.md`` for every column):

* ``project``: one row of key/value settings (name, benchmark, guidelines).
* ``files``: image files by content hash; the bytes live in the media folder.
* ``tasks``, ``images``: benchmark items and their input images in input order.
* ``questions``: checklist questions, grouped in checklists shared by tasks.
* ``criteria``, ``judges``, ``annotators``.
* ``outputs``: one generated output per task and generator (or diagram node).
* ``judgments``: judges' answers and scores, with raw text and parse status.
* ``annotations``: human answers, **append-only**: a changed answer is a new row whose
  ``supersedes`` names the row it replaces; ``current_annotations`` shows the live ones.
* ``imports``: the import log.
* ``users``, ``audit_log`` (append-only), and the annotation workflow: ``sample``,
  ``reservations``, ``submissions``, ``item_time``, ``flags``.
* Conflict-label verification (VIF-Bench): ``prelabel_readings`` (a verifier's reading of
  a reference image's pre-labels) and ``conflict_verdicts`` (agree/disagree with the
  automatic conflict label, and the verified label), both **append-only** with
  ``supersedes`` like ``annotations``; ``verify_reservations``, ``verify_submissions`` and
  ``verify_time`` for the verification workflow.
* Diagnostic-tree review (TRACE-Bench): ``tree_reviews`` (append-only: per failing
  operator instance of a root output, the node where the reviewer says the failure
  originates, a reason, an optional box and a note), ``tree_reservations`` and
  ``tree_submissions``.
* Sign-in sessions: ``sessions`` (hashes of the cookie tokens, never the tokens; see
  :mod:`annotation.accounts.sessions`).
* Schema 6 (one workflow engine, issue #13): ``queue_reservations``, ``queue_submissions``
  and ``queue_visits`` hold the reservations, submissions and visits (active time) of every
  workflow, keyed by ``kind`` (:data:`QUEUE_KINDS`); the per-workflow tables of schema 2-4
  were copied into them and dropped, and read-only views with their names and columns
  (:data:`COMPAT_VIEWS`) remain for readers of the old names. The append-only triggers and
  ``current_*`` views of the four answer tables (:data:`ANSWER_TABLES`) are made by one
  function, :func:`append_only_sql`.
* Schema 9 (issue #15): a pre-label reading names the content hash of the image it read
  (``prelabel_readings.image_sha256``); ``current_image_readings`` is each verifier's
  newest reading per image and attribute, whichever task it was given in.
* Schema 10 (issue #16): the role ``adjudicator`` and ``adjudications`` (decisions on
  disputed checklist answers and tree localizations, append-only).
* Schema 11 (issue #16): ``gold_answers`` (an admin's known answers of gold items,
  append-only; never human answers).
* Schema 12 (issue #17): ``pairs`` and ``rankings`` (pairwise and ranking items), the
  judges' answers ``pair_judgments`` and ``ranking_judgments``, the humans' answers
  ``pair_annotations`` and ``ranking_annotations`` (append-only, ``supersedes``).
* Schema 13 (issue #17): ``ranking_places`` (append-only: the place an annotator gave each
  output of a ranking, one row per key press; the complete order goes to
  ``ranking_annotations``).
"""

from __future__ import annotations

MIGRATIONS: list[str] = [
    # 0 -> 1: the foundation.
    """
    CREATE TABLE project (
        key TEXT PRIMARY KEY,
        value TEXT
    );
    CREATE TABLE imports (
        import_id INTEGER PRIMARY KEY,
        source TEXT NOT NULL,
        format TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        counts TEXT NOT NULL DEFAULT '{}',
        warnings TEXT NOT NULL DEFAULT '[]',
        user TEXT
    );
    CREATE TABLE files (
        sha256 TEXT PRIMARY KEY,
        format TEXT NOT NULL,
        width INTEGER NOT NULL,
        height INTEGER NOT NULL,
        size_bytes INTEGER NOT NULL
    );
    CREATE TABLE tasks (
        task_id TEXT PRIMARY KEY,
        instruction TEXT NOT NULL,
        checklist_id TEXT NOT NULL,
        meta TEXT NOT NULL DEFAULT '{}',
        import_id INTEGER REFERENCES imports(import_id)
    );
    CREATE TABLE images (
        task_id TEXT NOT NULL REFERENCES tasks(task_id),
        idx INTEGER NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('reference', 'visual_instruction')),
        kind TEXT,
        label TEXT,
        path TEXT NOT NULL,
        sha256 TEXT NOT NULL REFERENCES files(sha256),
        meta TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (task_id, idx)
    );
    CREATE TABLE questions (
        question_id TEXT PRIMARY KEY,
        checklist_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        text TEXT NOT NULL,
        pass_answer TEXT NOT NULL CHECK (pass_answer IN ('yes', 'no')),
        operator TEXT,
        target TEXT,
        depends_on TEXT NOT NULL DEFAULT '[]',
        meta TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX questions_checklist ON questions(checklist_id, position);
    CREATE TABLE criteria (
        name TEXT PRIMARY KEY,
        label TEXT NOT NULL,
        min REAL NOT NULL,
        max REAL NOT NULL,
        step REAL,
        level TEXT NOT NULL DEFAULT 'interval'
            CHECK (level IN ('interval', 'ordinal', 'nominal')),
        rubric TEXT,
        position INTEGER NOT NULL,
        CHECK (min < max)
    );
    CREATE TABLE judges (
        name TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('vlm', 'metric')),
        scale_min REAL,
        scale_max REAL
    );
    CREATE TABLE outputs (
        output_id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL REFERENCES tasks(task_id),
        generator TEXT NOT NULL,
        path TEXT,
        sha256 TEXT REFERENCES files(sha256),
        missing INTEGER NOT NULL DEFAULT 0 CHECK (missing IN (0, 1)),
        meta TEXT NOT NULL DEFAULT '{}',
        import_id INTEGER REFERENCES imports(import_id),
        CHECK (NOT (missing = 1 AND path IS NOT NULL))
    );
    CREATE INDEX outputs_task ON outputs(task_id, generator);
    CREATE TABLE judgments (
        judgment_id INTEGER PRIMARY KEY,
        judge TEXT NOT NULL REFERENCES judges(name),
        output_id TEXT NOT NULL REFERENCES outputs(output_id),
        question_id TEXT REFERENCES questions(question_id),
        criterion TEXT REFERENCES criteria(name),
        answer TEXT CHECK (answer IN ('yes', 'no')),
        score REAL,
        raw TEXT,
        parse_status TEXT NOT NULL DEFAULT 'ok' CHECK (parse_status IN ('ok', 'unparsed')),
        import_id INTEGER REFERENCES imports(import_id),
        CHECK ((question_id IS NULL) <> (criterion IS NULL))
    );
    CREATE UNIQUE INDEX judgments_key
        ON judgments(judge, output_id, IFNULL(question_id, ''), IFNULL(criterion, ''));
    CREATE TABLE annotators (
        name TEXT PRIMARY KEY,
        created_at TEXT NOT NULL
    );
    CREATE TABLE annotations (
        annotation_id INTEGER PRIMARY KEY,
        annotator TEXT NOT NULL REFERENCES annotators(name),
        output_id TEXT NOT NULL REFERENCES outputs(output_id),
        question_id TEXT REFERENCES questions(question_id),
        criterion TEXT REFERENCES criteria(name),
        answer TEXT CHECK (answer IN ('yes', 'no', 'cant_tell')),
        score REAL,
        note TEXT,
        created_at TEXT NOT NULL,
        supersedes INTEGER UNIQUE REFERENCES annotations(annotation_id),
        source TEXT NOT NULL DEFAULT 'app',
        import_id INTEGER REFERENCES imports(import_id),
        CHECK ((question_id IS NULL) <> (criterion IS NULL)),
        CHECK (answer IS NOT NULL OR score IS NOT NULL)
    );
    CREATE INDEX annotations_item
        ON annotations(output_id, annotator, IFNULL(question_id, ''), IFNULL(criterion, ''));
    -- Append-only: the store never updates or deletes an annotation; neither may anyone else.
    CREATE TRIGGER annotations_no_update BEFORE UPDATE ON annotations
        BEGIN SELECT RAISE(ABORT, 'annotations are append-only'); END;
    CREATE TRIGGER annotations_no_delete BEFORE DELETE ON annotations
        BEGIN SELECT RAISE(ABORT, 'annotations are append-only'); END;
    CREATE VIEW current_annotations AS
        SELECT a.* FROM annotations a
        WHERE NOT EXISTS (SELECT 1 FROM annotations b WHERE b.supersedes = a.annotation_id);
    """,
    # 1 -> 2: accounts, the annotation workflow (assignment, reservations, submissions,
    # active time, flags) and an audit log.
    """
    CREATE TABLE users (
        name TEXT PRIMARY KEY,
        role TEXT NOT NULL CHECK (role IN ('annotator', 'admin')),
        password_hash TEXT,
        email TEXT,
        disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
        created_at TEXT NOT NULL
    );
    CREATE TABLE audit_log (
        event_id INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        actor TEXT,
        action TEXT NOT NULL,
        subject TEXT,
        detail TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX audit_log_subject ON audit_log(subject, at);
    CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
    CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
    CREATE TABLE sample (
        output_id TEXT PRIMARY KEY REFERENCES outputs(output_id)
    );
    CREATE TABLE reservations (
        output_id TEXT NOT NULL REFERENCES outputs(output_id),
        annotator TEXT NOT NULL,
        reserved_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        PRIMARY KEY (output_id, annotator)
    );
    CREATE TABLE submissions (
        annotator TEXT NOT NULL,
        output_id TEXT NOT NULL REFERENCES outputs(output_id),
        submitted_at TEXT NOT NULL,
        PRIMARY KEY (annotator, output_id)
    );
    CREATE TABLE item_time (
        visit_id INTEGER PRIMARY KEY,
        annotator TEXT NOT NULL,
        output_id TEXT NOT NULL REFERENCES outputs(output_id),
        started_at TEXT NOT NULL,
        active_seconds REAL NOT NULL DEFAULT 0
    );
    CREATE INDEX item_time_item ON item_time(annotator, output_id);
    CREATE TABLE flags (
        flag_id INTEGER PRIMARY KEY,
        annotator TEXT NOT NULL,
        output_id TEXT NOT NULL REFERENCES outputs(output_id),
        reason TEXT NOT NULL CHECK (reason IN ('broken_image', 'ambiguous_question', 'other')),
        question_id TEXT REFERENCES questions(question_id),
        note TEXT,
        created_at TEXT NOT NULL
    );
    """,
    # 2 -> 3: conflict-label verification (issue #5).
    """
    CREATE TABLE prelabel_readings (
        reading_id INTEGER PRIMARY KEY,
        verifier TEXT NOT NULL,
        task_id TEXT NOT NULL REFERENCES tasks(task_id),
        image_idx INTEGER NOT NULL,
        attribute TEXT NOT NULL CHECK (attribute IN ('yaw', 'yaw_reliable',
            'light_distinctive', 'wind_responsive', 'pose_distinctive')),
        value TEXT NOT NULL,
        created_at TEXT NOT NULL,
        supersedes INTEGER UNIQUE REFERENCES prelabel_readings(reading_id),
        source TEXT NOT NULL DEFAULT 'app',
        FOREIGN KEY (task_id, image_idx) REFERENCES images(task_id, idx)
    );
    CREATE INDEX prelabel_readings_key
        ON prelabel_readings(task_id, verifier, image_idx, attribute);
    CREATE TRIGGER prelabel_readings_no_update BEFORE UPDATE ON prelabel_readings
        BEGIN SELECT RAISE(ABORT, 'prelabel readings are append-only'); END;
    CREATE TRIGGER prelabel_readings_no_delete BEFORE DELETE ON prelabel_readings
        BEGIN SELECT RAISE(ABORT, 'prelabel readings are append-only'); END;
    CREATE VIEW current_prelabel_readings AS
        SELECT r.* FROM prelabel_readings r
        WHERE NOT EXISTS (SELECT 1 FROM prelabel_readings s WHERE s.supersedes = r.reading_id);
    CREATE TABLE conflict_verdicts (
        verdict_id INTEGER PRIMARY KEY,
        verifier TEXT NOT NULL,
        task_id TEXT NOT NULL REFERENCES tasks(task_id),
        conflict TEXT NOT NULL CHECK (conflict IN ('orientation', 'light', 'wind', 'pose')),
        automatic INTEGER CHECK (automatic IN (0, 1)),
        agrees INTEGER CHECK (agrees IN (0, 1)),
        label INTEGER NOT NULL CHECK (label IN (0, 1)),
        note TEXT,
        blind INTEGER NOT NULL CHECK (blind IN (0, 1)),
        created_at TEXT NOT NULL,
        supersedes INTEGER UNIQUE REFERENCES conflict_verdicts(verdict_id),
        source TEXT NOT NULL DEFAULT 'app',
        CHECK ((automatic IS NULL AND agrees IS NULL)
               OR (automatic IS NOT NULL AND agrees = (label = automatic)))
    );
    CREATE INDEX conflict_verdicts_key ON conflict_verdicts(task_id, verifier, conflict);
    CREATE TRIGGER conflict_verdicts_no_update BEFORE UPDATE ON conflict_verdicts
        BEGIN SELECT RAISE(ABORT, 'conflict verdicts are append-only'); END;
    CREATE TRIGGER conflict_verdicts_no_delete BEFORE DELETE ON conflict_verdicts
        BEGIN SELECT RAISE(ABORT, 'conflict verdicts are append-only'); END;
    CREATE VIEW current_conflict_verdicts AS
        SELECT v.* FROM conflict_verdicts v
        WHERE NOT EXISTS (SELECT 1 FROM conflict_verdicts w WHERE w.supersedes = v.verdict_id);
    CREATE TABLE verify_reservations (
        task_id TEXT NOT NULL REFERENCES tasks(task_id),
        verifier TEXT NOT NULL,
        reserved_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        PRIMARY KEY (task_id, verifier)
    );
    CREATE TABLE verify_submissions (
        verifier TEXT NOT NULL,
        task_id TEXT NOT NULL REFERENCES tasks(task_id),
        submitted_at TEXT NOT NULL,
        PRIMARY KEY (verifier, task_id)
    );
    CREATE TABLE verify_time (
        visit_id INTEGER PRIMARY KEY,
        verifier TEXT NOT NULL,
        task_id TEXT NOT NULL REFERENCES tasks(task_id),
        started_at TEXT NOT NULL,
        active_seconds REAL NOT NULL DEFAULT 0
    );
    """,
    # 3 -> 4: diagnostic-tree review (issue #6).
    """
    CREATE TABLE tree_reviews (
        review_id INTEGER PRIMARY KEY,
        reviewer TEXT NOT NULL,
        output_id TEXT NOT NULL REFERENCES outputs(output_id),
        instance TEXT NOT NULL,
        origin TEXT NOT NULL,
        reason TEXT CHECK (reason IN ('identity_inconsistency', 'attribute_mismatch',
            'duplication', 'source_leakage', 'missing_carrier', 'other')),
        box TEXT,
        note TEXT,
        created_at TEXT NOT NULL,
        supersedes INTEGER UNIQUE REFERENCES tree_reviews(review_id),
        source TEXT NOT NULL DEFAULT 'app'
    );
    CREATE INDEX tree_reviews_key ON tree_reviews(output_id, reviewer, instance);
    CREATE TRIGGER tree_reviews_no_update BEFORE UPDATE ON tree_reviews
        BEGIN SELECT RAISE(ABORT, 'tree reviews are append-only'); END;
    CREATE TRIGGER tree_reviews_no_delete BEFORE DELETE ON tree_reviews
        BEGIN SELECT RAISE(ABORT, 'tree reviews are append-only'); END;
    CREATE VIEW current_tree_reviews AS
        SELECT r.* FROM tree_reviews r
        WHERE NOT EXISTS (SELECT 1 FROM tree_reviews s WHERE s.supersedes = r.review_id);
    CREATE TABLE tree_reservations (
        output_id TEXT NOT NULL REFERENCES outputs(output_id),
        reviewer TEXT NOT NULL,
        reserved_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        PRIMARY KEY (output_id, reviewer)
    );
    CREATE TABLE tree_submissions (
        reviewer TEXT NOT NULL,
        output_id TEXT NOT NULL REFERENCES outputs(output_id),
        submitted_at TEXT NOT NULL,
        PRIMARY KEY (reviewer, output_id)
    );
    """,
    # 4 -> 5: signed-in sessions (issue #12): only hashes of the cookie tokens and of the
    # one-time handoff codes are stored; revoked rows stay (when, whose) until pruned.
    """
    CREATE TABLE sessions (
        session_id INTEGER PRIMARY KEY,
        token_hash TEXT UNIQUE,
        handoff_hash TEXT UNIQUE,
        handoff_expires_at TEXT,
        user TEXT NOT NULL REFERENCES users(name),
        role TEXT NOT NULL CHECK (role IN ('annotator', 'admin')),
        created_at TEXT NOT NULL,
        last_seen TEXT NOT NULL,
        revoked_at TEXT,
        user_agent TEXT,
        CHECK (token_hash IS NOT NULL OR handoff_hash IS NOT NULL OR revoked_at IS NOT NULL)
    );
    CREATE INDEX sessions_user ON sessions(user, revoked_at);
    """,
]


#: The append-only answer tables: (table, row id column, how the refusal names the rows).
ANSWER_TABLES: tuple[tuple[str, str, str], ...] = (
    ("annotations", "annotation_id", "annotations"),
    ("prelabel_readings", "reading_id", "prelabel readings"),
    ("conflict_verdicts", "verdict_id", "conflict verdicts"),
    ("tree_reviews", "review_id", "tree reviews"),
)


def refuse_changes_sql(table: str, what: str) -> str:
    """The triggers that refuse UPDATE and DELETE on ``table``: the one definition of
    "append-only"."""
    return f"""
    CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table}
        BEGIN SELECT RAISE(ABORT, '{what} are append-only'); END;
    CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table}
        BEGIN SELECT RAISE(ABORT, '{what} are append-only'); END;"""


def append_only_sql(table: str, row_id: str, what: str) -> str:
    """An answer table's triggers (:func:`refuse_changes_sql`) and its view of the current
    rows (those no later row supersedes)."""
    return refuse_changes_sql(table, what) + f"""
    CREATE VIEW current_{table} AS
        SELECT a.* FROM {table} a
        WHERE NOT EXISTS (SELECT 1 FROM {table} b WHERE b.supersedes = a.{row_id});
    """


#: The workflow kinds of the queue tables, and where each kept its queue before schema 6:
#: kind -> (reservations, submissions, visits or None, unit column, person column).
QUEUE_KINDS: dict[str, tuple[str, str, str | None, str, str]] = {
    "annotate": ("reservations", "submissions", "item_time", "output_id", "annotator"),
    "verify": ("verify_reservations", "verify_submissions", "verify_time", "task_id",
               "verifier"),
    "trees": ("tree_reservations", "tree_submissions", None, "output_id", "reviewer"),
}


def _compat_views() -> dict[str, str]:
    """The read-only views that keep the schema 2-4 queue table names readable."""
    views = {}
    for kind, (res, subs, visits, unit, person) in QUEUE_KINDS.items():
        views[res] = (f"SELECT unit AS {unit}, person AS {person}, reserved_at, expires_at"
                      f" FROM queue_reservations WHERE kind = '{kind}'")
        views[subs] = (f"SELECT person AS {person}, unit AS {unit}, submitted_at"
                       f" FROM queue_submissions WHERE kind = '{kind}'")
        if visits is not None:
            views[visits] = (f"SELECT visit_id, person AS {person}, unit AS {unit},"
                             f" started_at, active_seconds FROM queue_visits"
                             f" WHERE kind = '{kind}'")
    return views


#: Old queue table name -> the SELECT of its read-only compatibility view (schema 6).
COMPAT_VIEWS = _compat_views()


def _one_queue() -> str:
    """Schema 5 -> 6: one set of queue tables keyed by workflow kind, every row copied
    (submissions and visits in their old order), the old tables dropped and read-only
    views with their names left; the answer tables' triggers and views made anew by
    :func:`append_only_sql`."""
    parts = ["""
    CREATE TABLE queue_reservations (
        kind TEXT NOT NULL,
        unit TEXT NOT NULL,
        person TEXT NOT NULL,
        reserved_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        PRIMARY KEY (kind, unit, person)
    );
    CREATE INDEX queue_reservations_person ON queue_reservations(person, kind);
    CREATE TABLE queue_submissions (
        submission_id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        person TEXT NOT NULL,
        unit TEXT NOT NULL,
        submitted_at TEXT NOT NULL,
        UNIQUE (kind, person, unit)
    );
    CREATE INDEX queue_submissions_unit ON queue_submissions(kind, unit);
    CREATE TABLE queue_visits (
        visit_id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        person TEXT NOT NULL,
        unit TEXT NOT NULL,
        started_at TEXT NOT NULL,
        active_seconds REAL NOT NULL DEFAULT 0
    );
    CREATE INDEX queue_visits_unit ON queue_visits(kind, person, unit);
    """]
    for kind, (res, subs, visits, unit, person) in QUEUE_KINDS.items():
        parts.append(
            f"INSERT INTO queue_reservations (kind, unit, person, reserved_at, expires_at)"
            f" SELECT '{kind}', {unit}, {person}, reserved_at, expires_at FROM {res}"
            f" ORDER BY rowid;\n"
            f"INSERT INTO queue_submissions (kind, person, unit, submitted_at)"
            f" SELECT '{kind}', {person}, {unit}, submitted_at FROM {subs}"
            f" ORDER BY submitted_at, rowid;\n")
        if visits is not None:
            # annotation visits keep their ids; later kinds' ids follow after them
            parts.append(
                f"INSERT INTO queue_visits (visit_id, kind, person, unit, started_at,"
                f" active_seconds) SELECT visit_id + (SELECT IFNULL(MAX(visit_id), 0)"
                f" FROM queue_visits), '{kind}', {person}, {unit}, started_at,"
                f" active_seconds FROM {visits} ORDER BY visit_id;\n")
        for table in (res, subs, visits):
            if table is not None:
                parts.append(f"DROP TABLE {table};\n")
    for name, select in COMPAT_VIEWS.items():
        parts.append(f"CREATE VIEW {name} AS {select};\n")
    for table, row_id, what in ANSWER_TABLES:
        parts.append(f"DROP TRIGGER {table}_no_update;\nDROP TRIGGER {table}_no_delete;\n"
                     f"DROP VIEW current_{table};\n")
        parts.append(append_only_sql(table, row_id, what))
    return "".join(parts)


# 5 -> 6: one set of queue tables keyed by workflow kind (issue #13).
MIGRATIONS.append(_one_queue())

# 6 -> 7: receipts of answer deliveries, so that a key press delivered twice is one answer
# and a late retry never overwrites a later press (issue #14).
MIGRATIONS.append("""
    CREATE TABLE answer_receipts (
        client_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        person TEXT NOT NULL,
        unit TEXT NOT NULL,
        target TEXT NOT NULL,
        seq INTEGER NOT NULL,
        outcome TEXT NOT NULL CHECK (outcome IN ('written', 'unchanged', 'stale')),
        row_id INTEGER,
        received_at TEXT NOT NULL
    );
    CREATE INDEX answer_receipts_target ON answer_receipts(kind, person, unit, target, seq);
""" + refuse_changes_sql("answer_receipts", "answer receipts"))

# 7 -> 8: an admin's decision on a conflict label the verifiers left tied or undecided,
# with a note, append-only (issue #15, item 3).
MIGRATIONS.append("""
    CREATE TABLE conflict_resolutions (
        resolution_id INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL REFERENCES tasks(task_id),
        conflict TEXT NOT NULL CHECK (conflict IN ('orientation', 'light', 'wind', 'pose')),
        label INTEGER NOT NULL CHECK (label IN (0, 1)),
        note TEXT NOT NULL CHECK (length(trim(note)) > 0),
        decided_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        supersedes INTEGER UNIQUE REFERENCES conflict_resolutions(resolution_id)
    );
    CREATE INDEX conflict_resolutions_key ON conflict_resolutions(task_id, conflict);
""" + append_only_sql("conflict_resolutions", "resolution_id", "conflict resolutions"))

#: the refusal of a reading whose image hash is not its image's (schema 9)
_READING_HASH = ("prelabel_readings.image_sha256 must be the content hash of image image_idx"
                 " of task task_id (annotation.store.answers derives it)")

# 8 -> 9: pre-label readings keyed by the content of the image read (issue #15, item 2):
# VIF-Bench verifies the pre-labels of the reference pool once per image, matched to tasks
# by content hash, so a reading names the image's hash (filled here for the rows written
# so far, derived by the store from task_id + image_idx on every insert since, and checked
# by a trigger); the current reading of an image, per verifier, is its newest row for that
# hash whichever task it was made in (``current_image_readings``). Still append-only.
MIGRATIONS.append("""
    DROP TRIGGER prelabel_readings_no_update;
    DROP TRIGGER prelabel_readings_no_delete;
    DROP VIEW current_prelabel_readings;
    ALTER TABLE prelabel_readings ADD COLUMN image_sha256 TEXT REFERENCES files(sha256);
    UPDATE prelabel_readings SET image_sha256 = (
        SELECT i.sha256 FROM images i
        WHERE i.task_id = prelabel_readings.task_id AND i.idx = prelabel_readings.image_idx);
    CREATE INDEX prelabel_readings_image
        ON prelabel_readings(image_sha256, verifier, attribute, reading_id);
    CREATE INDEX images_sha256 ON images(sha256);
    CREATE TRIGGER prelabel_readings_image_hash BEFORE INSERT ON prelabel_readings
        WHEN NEW.image_sha256 IS NOT (SELECT i.sha256 FROM images i
            WHERE i.task_id = NEW.task_id AND i.idx = NEW.image_idx)
        BEGIN SELECT RAISE(ABORT, '""" + _READING_HASH + """');
        END;
    CREATE VIEW current_image_readings AS
        SELECT r.* FROM prelabel_readings r
        WHERE r.reading_id = (SELECT MAX(s.reading_id) FROM prelabel_readings s
            WHERE s.verifier = r.verifier AND s.image_sha256 = r.image_sha256
            AND s.attribute = r.attribute);
""" + append_only_sql("prelabel_readings", "reading_id", "prelabel readings"))

# 9 -> 10 (issue #16, item 3: adjudication): the role ``adjudicator`` (``users`` and
# ``sessions`` rebuilt with the wider role check; sessions are copied aside first so that no
# foreign key points at a dropped table) and ``adjudications``: the decisions on disputed
# checklist answers and tree localizations, append-only. A conflict-label decision is not
# kept here: it stays in ``conflict_resolutions`` (one source of truth for conflict ties).
MIGRATIONS.append("""
    CREATE TABLE sessions_keep AS SELECT * FROM sessions;
    DROP TABLE sessions;
    CREATE TABLE users_new (
        name TEXT PRIMARY KEY,
        role TEXT NOT NULL CHECK (role IN ('annotator', 'adjudicator', 'admin')),
        password_hash TEXT,
        email TEXT,
        disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
        created_at TEXT NOT NULL
    );
    INSERT INTO users_new (name, role, password_hash, email, disabled, created_at)
        SELECT name, role, password_hash, email, disabled, created_at FROM users;
    DROP TABLE users;
    ALTER TABLE users_new RENAME TO users;
    CREATE TABLE sessions (
        session_id INTEGER PRIMARY KEY,
        token_hash TEXT UNIQUE,
        handoff_hash TEXT UNIQUE,
        handoff_expires_at TEXT,
        user TEXT NOT NULL REFERENCES users(name),
        role TEXT NOT NULL CHECK (role IN ('annotator', 'adjudicator', 'admin')),
        created_at TEXT NOT NULL,
        last_seen TEXT NOT NULL,
        revoked_at TEXT,
        user_agent TEXT,
        CHECK (token_hash IS NOT NULL OR handoff_hash IS NOT NULL OR revoked_at IS NOT NULL)
    );
    INSERT INTO sessions (session_id, token_hash, handoff_hash, handoff_expires_at, user,
        role, created_at, last_seen, revoked_at, user_agent)
        SELECT session_id, token_hash, handoff_hash, handoff_expires_at, user, role,
        created_at, last_seen, revoked_at, user_agent FROM sessions_keep ORDER BY session_id;
    DROP TABLE sessions_keep;
    CREATE INDEX sessions_user ON sessions(user, revoked_at);
    CREATE TABLE adjudications (
        adjudication_id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('checklist', 'tree')),
        item TEXT NOT NULL REFERENCES outputs(output_id),
        target TEXT NOT NULL,
        decision TEXT NOT NULL CHECK (length(decision) > 0),
        note TEXT NOT NULL CHECK (length(trim(note)) > 0),
        decided_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        supersedes INTEGER UNIQUE REFERENCES adjudications(adjudication_id)
    );
    CREATE INDEX adjudications_key ON adjudications(kind, item, target);
""" + append_only_sql("adjudications", "adjudication_id", "adjudications"))

# 10 -> 11: gold items (issue #16, item 2): an admin's known answers of an output (a
# checklist answer or a criterion score per row), append-only like the human answers; a
# row with neither answer nor score withdraws the gold answer of its question or
# criterion. Gold answers are not human answers: they never enter ``annotations``.
MIGRATIONS.append("""
    CREATE TABLE gold_answers (
        gold_id INTEGER PRIMARY KEY,
        output_id TEXT NOT NULL REFERENCES outputs(output_id),
        question_id TEXT REFERENCES questions(question_id),
        criterion TEXT REFERENCES criteria(name),
        answer TEXT CHECK (answer IN ('yes', 'no', 'cant_tell')),
        score REAL,
        source TEXT NOT NULL,
        note TEXT,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        supersedes INTEGER UNIQUE REFERENCES gold_answers(gold_id),
        CHECK ((question_id IS NULL) <> (criterion IS NULL))
    );
    CREATE INDEX gold_answers_key
        ON gold_answers(output_id, IFNULL(question_id, ''), IFNULL(criterion, ''));
""" + append_only_sql("gold_answers", "gold_id", "gold answers"))

# 11 -> 12: pairwise preferences and rankings (issue #17): the items (``pairs``, ``rankings``),
# the judges' answers (one per judge and item, like ``judgments``; a NULL preference/order
# is an unparsed answer kept with its raw text) and the humans' answers, append-only with
# ``supersedes`` like ``annotations`` (``shown_first``: the side the person saw output A on).
MIGRATIONS.append("""
    CREATE TABLE pairs (
        pair_id TEXT PRIMARY KEY,
        output_a TEXT NOT NULL REFERENCES outputs(output_id),
        output_b TEXT NOT NULL REFERENCES outputs(output_id),
        task_id TEXT REFERENCES tasks(task_id),
        meta TEXT NOT NULL DEFAULT '{}',
        import_id INTEGER REFERENCES imports(import_id),
        CHECK (output_a <> output_b)
    );
    CREATE TABLE pair_judgments (
        pair_judgment_id INTEGER PRIMARY KEY,
        judge TEXT NOT NULL REFERENCES judges(name),
        pair_id TEXT NOT NULL REFERENCES pairs(pair_id),
        preference TEXT CHECK (preference IN ('a', 'b', 'tie', 'both_bad')),
        raw TEXT,
        import_id INTEGER REFERENCES imports(import_id),
        UNIQUE (judge, pair_id)
    );
    CREATE TABLE pair_annotations (
        pair_annotation_id INTEGER PRIMARY KEY,
        annotator TEXT NOT NULL REFERENCES annotators(name),
        pair_id TEXT NOT NULL REFERENCES pairs(pair_id),
        preference TEXT NOT NULL CHECK (preference IN ('a', 'b', 'tie', 'both_bad')),
        shown_first TEXT CHECK (shown_first IN ('a', 'b')),
        note TEXT,
        created_at TEXT NOT NULL,
        supersedes INTEGER UNIQUE REFERENCES pair_annotations(pair_annotation_id),
        source TEXT NOT NULL DEFAULT 'app',
        import_id INTEGER REFERENCES imports(import_id)
    );
    CREATE INDEX pair_annotations_item ON pair_annotations(pair_id, annotator);
    CREATE TABLE rankings (
        ranking_id TEXT PRIMARY KEY,
        outputs TEXT NOT NULL,
        task_id TEXT REFERENCES tasks(task_id),
        import_id INTEGER REFERENCES imports(import_id)
    );
    CREATE TABLE ranking_judgments (
        ranking_judgment_id INTEGER PRIMARY KEY,
        judge TEXT NOT NULL REFERENCES judges(name),
        ranking_id TEXT NOT NULL REFERENCES rankings(ranking_id),
        ranked TEXT,
        raw TEXT,
        import_id INTEGER REFERENCES imports(import_id),
        UNIQUE (judge, ranking_id)
    );
    CREATE TABLE ranking_annotations (
        ranking_annotation_id INTEGER PRIMARY KEY,
        annotator TEXT NOT NULL REFERENCES annotators(name),
        ranking_id TEXT NOT NULL REFERENCES rankings(ranking_id),
        ranked TEXT NOT NULL,
        note TEXT,
        created_at TEXT NOT NULL,
        supersedes INTEGER UNIQUE REFERENCES ranking_annotations(ranking_annotation_id),
        source TEXT NOT NULL DEFAULT 'app',
        import_id INTEGER REFERENCES imports(import_id)
    );
    CREATE INDEX ranking_annotations_item ON ranking_annotations(ranking_id, annotator);
""" + append_only_sql("pair_annotations", "pair_annotation_id", "pair annotations")
    + append_only_sql("ranking_annotations", "ranking_annotation_id", "ranking annotations"))

# 12 -> 13: the place an annotator gives one output of a ranking item (issue #17, ranking
# with digit keys): one row per key press, append-only with ``supersedes`` (key: the output
# within the ranking). Once every output of the ranking has a place, the order they make is
# written to ``ranking_annotations`` in the same transaction (the bundle's answer).
MIGRATIONS.append("""
    CREATE TABLE ranking_places (
        place_id INTEGER PRIMARY KEY,
        annotator TEXT NOT NULL REFERENCES annotators(name),
        ranking_id TEXT NOT NULL REFERENCES rankings(ranking_id),
        output_id TEXT NOT NULL REFERENCES outputs(output_id),
        place INTEGER NOT NULL CHECK (place >= 1),
        created_at TEXT NOT NULL,
        supersedes INTEGER UNIQUE REFERENCES ranking_places(place_id),
        source TEXT NOT NULL DEFAULT 'app'
    );
    CREATE INDEX ranking_places_item ON ranking_places(ranking_id, annotator);
""" + append_only_sql("ranking_places", "place_id", "ranking places"))

SCHEMA_VERSION = len(MIGRATIONS)
#: the store runs VACUUM once after migrating past this version (migration 6 drops tables)
VACUUM_AFTER = 6
