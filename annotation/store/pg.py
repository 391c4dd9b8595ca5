"""PostgreSQL as a second store engine (issue #18, item 3): a ``postgresql://`` URL.

The store's SQL is written once, in the SQLite dialect; on PostgreSQL, :class:`PgConnection`
(a small DB-API adapter with the methods of :class:`sqlite3.Connection` the store uses)
translates each distinct statement once (:func:`translate`, cached per connection) and runs
it through psycopg 3. A SQLite store never comes here: its ``conn`` stays the
:class:`sqlite3.Connection` it always was, with no layer in between.

What the translation does (every rule is in :func:`translate`):

* ``?`` placeholders become ``%s`` (a literal ``%`` becomes ``%%``);
* ``INSERT OR IGNORE`` becomes ``INSERT ... ON CONFLICT DO NOTHING``; an ``INSERT`` into a
  table with an integer key gets ``RETURNING`` that key (the cursor's ``lastrowid``);
* ``IFNULL`` -> ``COALESCE``, two-argument ``MAX``/``MIN`` -> ``GREATEST``/``LEAST``,
  ``json_object`` -> ``json_build_object``, ``x IS y`` / ``x IS NOT y`` (values) ->
  ``IS [NOT] DISTINCT FROM``, ``LIKE`` -> ``ILIKE`` (SQLite's LIKE ignores ASCII case);
* every ``ORDER BY`` term gets SQLite's NULL order (NULLS FIRST ascending, NULLS LAST
  descending); text columns are ``COLLATE "C"`` (SQLite compares bytes);
* the column ``user`` is quoted (a bare ``user`` is PostgreSQL's ``current_user``);
* ``PRAGMA user_version`` reads and writes the one-row table ``judge_audit_schema``;
* ``BEGIN IMMEDIATE`` is ``BEGIN`` plus ``pg_advisory_xact_lock``: writers of one database
  serialize exactly as on SQLite (one writer at a time, across every process and machine),
  so every invariant the store keeps under SQLite's write lock (the overlap rule,
  reservations, append-only ``supersedes`` chains, answer receipts) holds unchanged. Row
  locks or ``SKIP LOCKED`` would let writers overlap; that is left for later.

Results look like SQLite's: booleans come back as 0/1, ``numeric`` as int or float, JSON as
text; each table has a ``rowid`` column (insertion order, as ``ORDER BY rowid`` expects)
that no result shows. Errors are raised as the :mod:`sqlite3` exception classes (an
append-only refusal is an :class:`sqlite3.IntegrityError`), so callers have one set.

The schema (:func:`schema_statements`) is the SQLite schema the migrations build, read back
from an in-memory SQLite database and translated: the same tables, columns, indexes, views
and append-only guarantees (plpgsql triggers refusing UPDATE, DELETE and TRUNCATE; every view
read-only, as in SQLite).
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import threading
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

#: URL schemes that select PostgreSQL (anything else is a SQLite file path)
SCHEMES = ("postgresql://", "postgres://")
#: the transaction-level advisory lock every write transaction takes (one writer at a time)
WRITE_LOCK_KEY = 0x6A61_7564  # "jaud"
#: environment variable naming the shared folder the media of PostgreSQL projects live in
ENV_MEDIA = "JUDGE_AUDIT_MEDIA"
VERSION_TABLE = "judge_audit_schema"


def is_url(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` names a PostgreSQL database (a ``postgresql://`` URL)."""
    return isinstance(location, str) and location.lower().startswith(SCHEMES)


@dataclass(frozen=True)
class Target:
    """A parsed PostgreSQL location: what psycopg connects with, and where media live."""

    conninfo: str
    dbname: str
    media_root: Path

    @property
    def anchor(self) -> Path:
        """The path the media rule (:func:`annotation.store.media.media_dir`) is applied
        to: the media of database ``db`` are in ``<media root>/db_media``."""
        return self.media_root / f"{self.dbname}.postgresql"


def parse(url: str) -> Target:
    """Split ``url`` into the psycopg connection string and the media folder: the URL's own
    ``media=DIR`` query parameter (removed before connecting), else ``$JUDGE_AUDIT_MEDIA``,
    else ``$JUDGE_AUDIT_HOME`` (default ``~/.judge-audit``). Every server of one database
    must see the same folder (a shared mount)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    media = [v for k, v in query if k == "media"]
    rest = [(k, v) for k, v in query if k != "media"]
    conninfo = f"{parts.scheme}://{parts.netloc}{parts.path}" + (
        f"?{urlencode(rest)}" if rest else "")
    dbname = parts.path.lstrip("/") or dict(rest).get("dbname", "") or "postgres"
    root = (media[-1] if media else None) or os.environ.get(ENV_MEDIA) or os.environ.get(
        "JUDGE_AUDIT_HOME") or str(Path.home() / ".judge-audit")
    return Target(conninfo, dbname, Path(root))


def redacted(location: str | os.PathLike[str]) -> str:
    """``location`` fit to print: a URL's password replaced by ``***``."""
    text = str(location)
    if not is_url(text):
        return text
    text = re.sub(r"^(\w+://[^/:@]*):[^/@]*@", r"\1:***@", text)
    return re.sub(r"([?&](?:ssl)?password=)[^&]*", r"\1***", text)


def _driver() -> Any:
    """psycopg 3, imported on first use (the ``postgres`` extra: a SQLite-only server does
    not need it)."""
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise RuntimeError(
            "a postgresql:// database needs psycopg 3: pip install 'judge-audit[postgres]'"
        ) from exc
    return psycopg


# ---------------------------------------------------------------------- translation
_TOKEN = re.compile(r"""
    (?P<str>'(?:[^']|'')*')
  | (?P<qid>"(?:[^"]|"")*")
  | (?P<comment>--[^\n]*)
  | (?P<ws>\s+)
  | (?P<word>[A-Za-z_][A-Za-z_0-9$]*)
  | (?P<num>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)
  | (?P<op>\|\||<>|!=|<=|>=|.)
""", re.VERBOSE | re.DOTALL)

#: words that end an ORDER BY list (besides a closing parenthesis and the end)
_ORDER_END = {"limit", "offset", "union", "except", "intersect", "rows", "range", "groups",
              "fetch", "for", "window", "returning", "on"}


def _tokens(sql: str) -> list[str]:
    return [m.group(0) for m in _TOKEN.finditer(sql)]


def _is_space(tok: str) -> bool:
    return tok.isspace() or tok.startswith("--")


def _next(toks: list[str], i: int) -> int:
    """Index of the next non-space token after ``i`` (``len(toks)`` at the end)."""
    i += 1
    while i < len(toks) and _is_space(toks[i]):
        i += 1
    return i


#: words after a subquery in FROM that are not its alias
_NOT_ALIAS = {"where", "group", "order", "limit", "offset", "union", "except", "intersect",
              "join", "left", "right", "inner", "outer", "cross", "full", "natural", "on",
              "using", "having", "window", "returning", ""}


_BEFORE_UNARY = {"and", "or", "not", "where", "on", "select", "by", "when", "then", "else",
                 "in", "(", ",", "=", "<", ">", "<=", ">=", "<>", "!=", ""}


def _unary(toks: list[str], i: int) -> bool:
    """Whether the ``+`` at ``i`` is a unary plus (after an operator or a keyword)."""
    return _prev_word(toks, i) in _BEFORE_UNARY


def _prev_word(toks: list[str], i: int) -> str:
    j = i - 1
    while j >= 0 and _is_space(toks[j]):
        j -= 1
    return toks[j].lower() if j >= 0 else ""


def _column_name(toks: list[str], i: int) -> bool:
    """Whether the token before ``i`` is a column name (so ``toks[i]`` is its type)."""
    j = i - 1
    while j >= 0 and _is_space(toks[j]):
        j -= 1
    return j >= 0 and (toks[j].startswith('"') or bool(re.fullmatch(r"\w+", toks[j])))


def _matching(toks: list[str], i: int) -> int:
    """Index of the parenthesis closing the one at ``i``."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j] == "(":
            depth += 1
        elif toks[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


def _top_level_commas(toks: list[str], open_i: int, close_i: int) -> int:
    depth, n = 0, 0
    for tok in toks[open_i + 1:close_i]:
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        elif tok == "," and depth == 0:
            n += 1
    return n


def _order_by(toks: list[str], start: int) -> None:
    """Give every term of the ORDER BY list starting at ``start`` SQLite's NULL order."""
    depth, i = 0, start
    term_words: list[str] = []
    last = start - 1  # index of the last non-space token of the current term

    def close_term() -> None:
        if not term_words or "nulls" in term_words:
            return
        order = "NULLS LAST" if term_words[-1] == "desc" else "NULLS FIRST"
        toks[last] = toks[last] + " " + order

    while i < len(toks):
        tok = toks[i]
        low = tok.lower()
        if tok == "(":
            depth += 1
        elif tok == ")":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and (tok == "," or tok == ";" or low in _ORDER_END):
            close_term()
            term_words = []
            if tok != ",":
                return
            i += 1
            continue
        if not _is_space(tok):
            term_words.append(low)
            last = i
        i += 1
    close_term()


@dataclass(frozen=True)
class Translated:
    """One statement in PostgreSQL's dialect; ``returning``: the key column an INSERT
    returns (the cursor's ``lastrowid``)."""

    sql: str
    returning: str | None = None
    kind: str = "sql"  # "sql", "begin", "version", "set_version", "noop"
    value: int = 0


def translate(sql: str, keys: dict[str, str], *, ddl: bool = False) -> Translated:
    """``sql`` (the SQLite dialect the store writes) in PostgreSQL's dialect.

    ``keys``: table -> its integer key column (an INSERT into it returns that key).
    ``ddl``: column types are translated too (only for the schema)."""
    stripped = sql.strip().rstrip(";").strip()
    low = " ".join(stripped.lower().split())
    if low == "begin immediate":
        return Translated("BEGIN", kind="begin")
    if low.startswith("pragma"):
        m = re.fullmatch(r"pragma user_version(?:\s*=\s*(\d+))?", low)
        if m is None:
            return Translated("", kind="noop")  # SQLite file settings mean nothing here
        if m.group(1) is None:
            return Translated(f"SELECT version FROM {VERSION_TABLE}", kind="version")
        return Translated(f"UPDATE {VERSION_TABLE} SET version = %s", kind="set_version",
                          value=int(m.group(1)))
    toks = _tokens(stripped)
    first = next((t.lower() for t in toks if not _is_space(t)), "")
    ignore = False
    insert_table: str | None = None
    aliases = 0
    i = 0
    while i < len(toks):
        tok = toks[i]
        low_tok = tok.lower()
        if tok.startswith("'"):
            toks[i] = tok.replace("%", "%%")
        elif tok == "?":
            # "? IS NULL" gives PostgreSQL no type to infer the parameter's from
            nxt = toks[_next(toks, i)].lower() if _next(toks, i) < len(toks) else ""
            toks[i] = "%s::text" if nxt == "is" else "%s"
        elif tok == "%":
            toks[i] = "%%"
        elif tok == "+" and _unary(toks, i):
            toks[i] = ""  # SQLite's "+column" (keeps its planner off an index): a no-op
        elif low_tok == "or" and first == "insert" and i == _next(toks, 0):
            j = _next(toks, i)
            if toks[j].lower() != "ignore":
                raise ValueError(f"PostgreSQL: unsupported INSERT OR {toks[j]}: {sql}")
            for k in range(i, _next(toks, j)):  # "OR IGNORE" and the space after it
                toks[k] = ""
            ignore = True
            i = j
        elif low_tok == "into" and first == "insert" and insert_table is None:
            insert_table = toks[_next(toks, i)].strip('"').lower()
        elif low_tok == "user" and (i == 0 or toks[i - 1] != '"'):
            toks[i] = '"user"'
        elif low_tok in ("ifnull", "json_object", "max", "min") and toks[_next(toks, i)] == "(":
            open_i = _next(toks, i)
            if low_tok == "ifnull":
                toks[i] = "COALESCE"
            elif low_tok == "json_object":
                toks[i] = "json_build_object"
            elif _top_level_commas(toks, open_i, _matching(toks, open_i)):
                toks[i] = "GREATEST" if low_tok == "max" else "LEAST"
        elif (low_tok == "datetime" and toks[_next(toks, i)] == "("
              and toks[_next(toks, _next(toks, i))].lower() == "'now'"
              and toks[_next(toks, _next(toks, _next(toks, i)))] == ")"):
            close = _next(toks, _next(toks, _next(toks, i)))
            for k in range(i + 1, close + 1):
                toks[k] = ""
            toks[i] = "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')"
        elif low_tok == "like":
            toks[i] = "ILIKE"
        elif low_tok == "is":
            j = _next(toks, i)
            nxt = toks[j].lower() if j < len(toks) else ""
            if nxt == "not":
                k = _next(toks, j)
                if k < len(toks) and toks[k].lower() not in ("null", "true", "false"):
                    toks[i], toks[j] = "IS DISTINCT", "FROM"
            elif nxt not in ("null", "true", "false", "distinct", ""):
                toks[i] = "IS NOT DISTINCT FROM"
        elif (tok == "(" and _prev_word(toks, i) in ("from", "join")
              and toks[_next(toks, i)].lower() == "select"):
            close = _matching(toks, i)
            after = toks[_next(toks, close)].lower() if _next(toks, close) < len(toks) else ""
            if not re.fullmatch(r"\w+", after) or after in _NOT_ALIAS:
                aliases += 1  # PostgreSQL 15 needs a name for a subquery in FROM
                toks[close] = f") AS _subquery{aliases}"
        elif low_tok == "order" and toks[_next(toks, i)].lower() == "by":
            _order_by(toks, _next(toks, _next(toks, i)))
        elif ddl and low_tok in ("integer", "real", "text") and not _column_name(toks, i):
            pass
        elif ddl and low_tok == "integer":
            j = _next(toks, i)
            k = _next(toks, j)
            if (j < len(toks) and toks[j].lower() == "primary" and k < len(toks)
                    and toks[k].lower() == "key"):
                toks[i] = "BIGINT GENERATED BY DEFAULT AS IDENTITY"
            else:
                toks[i] = "BIGINT"
        elif ddl and low_tok == "real":
            toks[i] = "DOUBLE PRECISION"
        elif ddl and low_tok == "text":
            toks[i] = 'TEXT COLLATE "C"'
        i += 1
    out = "".join(toks)
    returning = None
    if first == "insert":
        if ignore:
            out = _before_returning(out, " ON CONFLICT DO NOTHING")
        if insert_table in keys and " returning " not in out.lower():
            returning = keys[insert_table]
            out += f" RETURNING {returning}"
    return Translated(out, returning)


def _before_returning(sql: str, clause: str) -> str:
    m = re.search(r"\sRETURNING\s", sql, re.IGNORECASE)
    return sql + clause if m is None else sql[:m.start()] + clause + sql[m.start():]


# --------------------------------------------------------------------------- schema
_TRIGGER = re.compile(
    r"CREATE TRIGGER\s+(?P<name>\w+)\s+(?P<when>BEFORE|AFTER)\s+(?P<event>INSERT|UPDATE|DELETE)"
    r"\s+ON\s+(?P<table>\w+)(?:\s+WHEN\s+(?P<cond>.*?))?\s+BEGIN\s+SELECT\s+RAISE\s*\(\s*ABORT"
    r"\s*,\s*(?P<msg>'(?:[^']|'')*')\s*\)\s*;\s*END",
    re.IGNORECASE | re.DOTALL)

#: SQLite compares an integer with a comparison's 0/1; PostgreSQL needs the cast
_FIXUPS = (("agrees = (label = automatic)", "agrees = (label = automatic)::int"),)


def sqlite_schema(version: int) -> list[tuple[str, str, str, str]]:
    """(type, name, table, sql) of the schema ``MIGRATIONS[:version]`` builds in SQLite:
    tables first (creation order), then indexes, views and triggers."""
    from annotation.store import schema

    return _sqlite_schema(tuple(schema.MIGRATIONS[:version]))


@lru_cache(maxsize=8)
def _sqlite_schema(migrations: tuple[str, ...]) -> list[tuple[str, str, str, str]]:
    from annotation.store import split_sql

    mem = sqlite3.connect(":memory:")
    try:
        for script in migrations:
            for statement in split_sql(script):
                mem.execute(statement)
        rows = mem.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL"
            " ORDER BY rowid").fetchall()
    finally:
        mem.close()
    order = {"table": 0, "index": 1, "view": 2, "trigger": 3}
    return sorted(rows, key=lambda r: order[r[0]])


def integer_keys(version: int) -> dict[str, str]:
    """Table -> its ``INTEGER PRIMARY KEY`` column, in the schema of ``version``."""
    return dict(_integer_keys(tuple(sqlite_schema(version))))


@lru_cache(maxsize=8)
def _integer_keys(objects: tuple[tuple[str, str, str, str], ...]) -> tuple[tuple[str, str], ...]:
    mem = sqlite3.connect(":memory:")
    keys = {}
    try:
        for kind, name, _table, sql in objects:
            if kind == "table":
                mem.execute(sql)
                for _cid, col, ctype, _nn, _dflt, pk in mem.execute(
                        f'PRAGMA table_info("{name}")'):
                    if pk == 1 and ctype.upper() == "INTEGER":
                        keys[name.lower()] = col
    finally:
        mem.close()
    return tuple(keys.items())


def _table_sql(sql: str, key: str | None) -> str:
    """A CREATE TABLE with its ``rowid`` column: the integer key itself (a generated copy)
    or an identity of its own (insertion order, as SQLite's rowid)."""
    body = translate(sql, {}, ddl=True).sql
    for old, new in _FIXUPS:
        body = body.replace(old, new)
    end = body.rstrip().rindex(")")
    rowid = (f"rowid BIGINT GENERATED ALWAYS AS ({key}) STORED" if key
             else "rowid BIGINT GENERATED ALWAYS AS IDENTITY")
    return body[:end].rstrip() + f",\n    {rowid}\n)"


def _trigger_sql(name: str, sql: str) -> list[str]:
    m = _TRIGGER.fullmatch(sql.strip().rstrip(";"))
    if m is None:
        raise ValueError(f"PostgreSQL: trigger {name} is not one the translation knows: {sql}")
    event, table = m["event"].upper(), m["table"]
    cond = translate(m["cond"], {}).sql.replace("%%", "%") if m["cond"] else "TRUE"
    ret = "OLD" if event == "DELETE" else "NEW"
    msg = m["msg"]
    out = [
        f"CREATE FUNCTION {name}_fn() RETURNS trigger LANGUAGE plpgsql AS $body$\n"
        f"BEGIN\n  IF {cond} THEN\n"
        f"    RAISE EXCEPTION USING MESSAGE = {msg}, ERRCODE = '23000';\n  END IF;\n"
        f"  RETURN {ret};\nEND\n$body$",
        f"CREATE TRIGGER {name} {m['when']} {event} ON {table}"
        f" FOR EACH ROW EXECUTE FUNCTION {name}_fn()",
    ]
    if event == "DELETE" and m["cond"] is None:
        # TRUNCATE skips row triggers: refuse it as well (append-only means every row stays)
        out.append(f"CREATE TRIGGER {name}_truncate BEFORE TRUNCATE ON {table}"
                   f" FOR EACH STATEMENT EXECUTE FUNCTION {name}_fn()")
    return out


#: SQLite's comparisons are 0/1 integers, so the store sums and averages them
#: (``SUM(origin = ?)``); PostgreSQL gets SUM and AVG of booleans with SQLite's results
#: (NULL over no rows)
_BOOLEAN_SQL = (
    "CREATE FUNCTION judge_audit_bool_sum(bigint, boolean) RETURNS bigint LANGUAGE sql"
    " IMMUTABLE AS $$ SELECT CASE WHEN $2 IS NULL THEN $1 ELSE COALESCE($1, 0) + $2::int END $$",
    "CREATE AGGREGATE sum(boolean) (SFUNC = judge_audit_bool_sum, STYPE = bigint)",
    "CREATE FUNCTION judge_audit_bool_avg(bigint[], boolean) RETURNS bigint[] LANGUAGE sql"
    " IMMUTABLE AS $$ SELECT CASE WHEN $2 IS NULL THEN $1"
    " ELSE ARRAY[$1[1] + $2::int, $1[2] + 1] END $$",
    "CREATE FUNCTION judge_audit_bool_avg_final(bigint[]) RETURNS double precision"
    " LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN $1[2] = 0 THEN NULL"
    " ELSE $1[1]::double precision / $1[2] END $$",
    "CREATE AGGREGATE avg(boolean) (SFUNC = judge_audit_bool_avg, STYPE = bigint[],"
    " FINALFUNC = judge_audit_bool_avg_final, INITCOND = '{0,0}')",
)


def _view_sql(name: str, sql: str) -> list[str]:
    """A view, read-only as SQLite's views are: PostgreSQL would write a simple view's
    rows through to its table (``DELETE FROM reservations`` emptying the queue), so every
    view gets a trigger refusing INSERT, UPDATE and DELETE with SQLite's message (raised
    per row: a statement that matches no row changes nothing and says nothing)."""
    msg = "'cannot modify " + name + " because it is a view'"
    return [
        translate(sql, {}, ddl=False).sql.replace("%%", "%"),
        f"CREATE FUNCTION {name}_read_only_fn() RETURNS trigger LANGUAGE plpgsql AS $body$\n"
        f"BEGIN\n  RAISE EXCEPTION USING MESSAGE = {msg}, ERRCODE = '42809';\nEND\n$body$",
        f"CREATE TRIGGER {name}_read_only INSTEAD OF INSERT OR UPDATE OR DELETE ON {name}"
        f" FOR EACH ROW EXECUTE FUNCTION {name}_read_only_fn()",
    ]


def schema_statements(version: int) -> list[str]:
    """The PostgreSQL statements that build the schema of ``MIGRATIONS[:version]``."""
    keys = integer_keys(version)
    # SQLite's NOCASE (the accounts' names and e-mail addresses): case-insensitive equality
    out: list[str] = ["CREATE COLLATION IF NOT EXISTS nocase (provider = icu,"
                      " locale = 'und-u-ks-level2', deterministic = false)", *_BOOLEAN_SQL]
    for kind, name, _table, sql in sqlite_schema(version):
        if kind == "table":
            out.append(_table_sql(sql, keys.get(name.lower())))
        elif kind == "trigger":
            out.extend(_trigger_sql(name, sql))
        elif kind == "view":
            out.extend(_view_sql(name, sql))
        else:
            stmt = translate(sql, {}, ddl=False).sql.replace("%%", "%")
            out.append(stmt)
    return out


def migrate(conn: PgConnection, target: int) -> int:
    """Bring the database to schema ``target``: an empty database gets the whole schema at
    once (:func:`schema_statements`); a database at an older version gets the schema's new
    tables, indexes, views and triggers (objects it lacks), in one transaction under the
    write lock (taken only when there is something to do: opening a store never waits for
    another server's writer). Returns the version."""
    current = _read_version(conn)
    if current is not None and current >= target:
        conn.keys = integer_keys(target)
        if current == target and _unguarded_views(conn):
            _guard_views(conn, target)
        return current
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.raw(f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version BIGINT NOT NULL)")
        if conn.raw(f"SELECT count(*) FROM {VERSION_TABLE}").fetchone()[0] == 0:
            conn.raw(f"INSERT INTO {VERSION_TABLE} (version) VALUES (0)")
        version = int(conn.raw(f"SELECT version FROM {VERSION_TABLE}").fetchone()[0])
        if version > target:
            conn.execute("ROLLBACK")
            return version
        if version == 0:
            for statement in schema_statements(target):
                conn.raw(statement)
        elif version < target:
            _add_missing(conn, version, target)
        conn.raw(f"UPDATE {VERSION_TABLE} SET version = %s", [target])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.keys = integer_keys(target)
    return target


def _unguarded_views(conn: PgConnection) -> set[str]:
    """Views of this database without their read-only trigger (:func:`_view_sql`): a
    database made before views had one."""
    return {str(r[0]) for r in conn.raw(
        "SELECT c.relname FROM pg_class c WHERE c.relkind = 'v'"
        " AND c.relnamespace = current_schema()::regnamespace AND NOT EXISTS ("
        "SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid"
        " AND t.tgname = c.relname || '_read_only')").fetchall()}


def _guard_views(conn: PgConnection, version: int) -> None:
    """Give the views of schema ``version`` that lack it their read-only trigger, under the
    write lock (another server may be doing the same)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        missing = _unguarded_views(conn)
        for kind, name, _table, sql in sqlite_schema(version):
            if kind == "view" and name in missing:
                _view, function, trigger = _view_sql(name, sql)
                conn.raw(function.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
                conn.raw(trigger)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _read_version(conn: PgConnection) -> int | None:
    """The schema version, or None when the database has no version table yet."""
    exists = conn.raw("SELECT to_regclass(%s) IS NOT NULL", [VERSION_TABLE]).fetchone()[0]
    if not exists:
        return None
    row = conn.raw(f"SELECT version FROM {VERSION_TABLE}").fetchone()
    return None if row is None else int(row[0])


def _add_missing(conn: PgConnection, version: int, target: int) -> None:
    """Schema ``version`` -> ``target`` by difference: what the newer schema has and the
    older lacks is created. A migration that changes an existing table (a column added,
    a table rebuilt) is refused: it needs its own PostgreSQL text."""
    old = {(k, n): s for k, n, _t, s in sqlite_schema(version)}
    keys = integer_keys(target)
    for kind, name, _table, sql in sqlite_schema(target):
        if (kind, name) in old:
            if old[(kind, name)] != sql:
                raise RuntimeError(
                    f"PostgreSQL: schema {version} -> {target} changes {kind} {name};"
                    " this migration has no PostgreSQL translation yet")
            continue
        if kind == "table":
            conn.raw(_table_sql(sql, keys.get(name.lower())))
        elif kind == "trigger":
            for statement in _trigger_sql(name, sql):
                conn.raw(statement)
        elif kind == "view":
            for statement in _view_sql(name, sql):
                conn.raw(statement)
        else:
            conn.raw(translate(sql, {}).sql.replace("%%", "%"))


# -------------------------------------------------------------------------- adapter
def _message(exc: Exception) -> str:
    return getattr(getattr(exc, "diag", None), "message_primary", None) or str(exc)


_WRITES = re.compile(r"\b(insert|update|delete|merge|truncate|nextval|setval|pg_advisory\w*)\b",
                     re.IGNORECASE)


def _ends_transaction(sql: str) -> bool:
    """``COMMIT``, ``END`` or ``ROLLBACK`` (not ``ROLLBACK TO SAVEPOINT``, which does not)."""
    low = " ".join(sql.lower().split())
    return low.startswith(("commit", "end")) or (
        low.startswith("rollback") and not low.startswith(("rollback to", "rollback work to",
                                                          "rollback transaction to")))


def _is_read(t: Translated) -> bool:
    """Whether ``t`` only reads (so may run again on a new connection)."""
    if t.kind == "version":
        return True
    first = t.sql.lstrip()[:6].lower()
    return first in ("select", "with") and _WRITES.search(t.sql) is None


def _sqlite_error(exc: Exception) -> sqlite3.Error:
    """The :mod:`sqlite3` exception a psycopg error stands for (callers catch those)."""
    psycopg = _driver()
    message = _message(exc)
    if isinstance(exc, psycopg.IntegrityError):
        return sqlite3.IntegrityError(message)
    if isinstance(exc, psycopg.DataError):
        return sqlite3.DataError(message)
    if isinstance(exc, psycopg.errors.LockNotAvailable | psycopg.errors.QueryCanceled):
        return sqlite3.OperationalError(f"database is locked ({message})")
    if isinstance(exc, psycopg.ProgrammingError | psycopg.OperationalError):
        return sqlite3.OperationalError(message)
    return sqlite3.DatabaseError(message)


class PgCursor:
    """The part of :class:`sqlite3.Cursor` the store and pandas use, over psycopg."""

    def __init__(self, conn: PgConnection):
        self._conn = conn
        self._rows: list[tuple[Any, ...]] = []
        self._pos = 0
        self.description: list[tuple[Any, ...]] | None = None
        self.lastrowid: int | None = None
        self.rowcount = -1

    def _load(self, cur: Any, returning: str | None) -> None:
        desc = cur.description
        self.rowcount = cur.rowcount
        if desc is None:
            self.description, self._rows = None, []
            return
        rows = cur.fetchall()
        names = [d.name for d in desc]
        if returning is not None:
            self.lastrowid = int(rows[0][0]) if rows else None
            self.description, self._rows = None, []
            return
        if "rowid" in names:  # the hidden insertion-order column (see the module docstring)
            keep = [i for i, n in enumerate(names) if n != "rowid"]
            rows = [tuple(r[i] for i in keep) for r in rows]
            names = [names[i] for i in keep]
        self.description = [(n, None, None, None, None, None, None) for n in names]
        self._rows = rows
        self._pos = 0

    def _clear(self) -> None:
        self.description, self._rows, self._pos, self.rowcount = None, [], 0, -1

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> PgCursor:
        self._conn._run(self, sql, params)
        return self

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]]) -> PgCursor:
        self._conn._run_many(self, sql, seq)
        return self

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._pos >= len(self._rows):
            return None
        self._pos += 1
        return self._rows[self._pos - 1]

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        out = self._rows[self._pos:self._pos + size]
        self._pos += len(out)
        return out

    def fetchall(self) -> list[tuple[Any, ...]]:
        out = self._rows[self._pos:]
        self._pos = len(self._rows)
        return out

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while (row := self.fetchone()) is not None:
            yield row

    def close(self) -> None:
        self._rows = []


class ConnectionLost(sqlite3.OperationalError):
    """The connection to PostgreSQL broke (the server restarted, or the backend was
    terminated) under a statement that cannot be run again safely: a write transaction
    (rolled back by the server: nothing of it was written), a ``COMMIT`` (whether it
    committed is unknown), a write outside a transaction, or the server cannot be reached
    at all. The next statement opens a new connection."""


#: how a :class:`PgConnection` reports a transaction whose connection broke
LOST_IN_TRANSACTION = ("the connection to PostgreSQL was lost inside a write transaction"
                       " (server restart or terminated backend): the server rolled it back,"
                       " nothing of it was written; the next transaction reconnects")


class PgConnection:
    """A PostgreSQL connection speaking the store's SQLite dialect (module docstring).

    Autocommit, like the store's SQLite connection (``isolation_level=None``): the store's
    own ``BEGIN IMMEDIATE`` / ``COMMIT`` / ``ROLLBACK`` make its transactions. One psycopg
    connection, shared by the threads of its store as the SQLite connection is.

    When that connection breaks (a server restart, ``pg_terminate_backend``), the next
    statement opens a new one: a long-lived server is never stuck with a dead connection.
    What was under way when it broke:

    * a ``BEGIN IMMEDIATE`` (nothing written yet) or a read outside a transaction is run
      again once, on the new connection, without the caller noticing;
    * a statement inside a write transaction raises :class:`ConnectionLost` (the server
      rolled the transaction back), and so does every further statement of that
      transaction until its ``ROLLBACK`` (a no-op then) or ``COMMIT`` (raises): a
      transaction is never continued half-way on the new connection in autocommit;
    * a ``COMMIT``, or a write outside a transaction, raises :class:`ConnectionLost`
      (it may or may not have been done; the answer route's client ids make its retry
      safe).

    The translated statements (:func:`translate`) stay cached across a reconnect."""

    def __init__(self, target: Target):
        self.target = target
        self._cache: dict[str, Translated] = {}
        self._lock = threading.RLock()
        self.keys: dict[str, str] = {}
        self.in_transaction = False
        #: the connection of the open transaction broke: its statements are refused
        self._lost = False
        #: connections opened after the first (one per break)
        self.reconnects = 0
        self._pg = self._open()

    def _open(self) -> Any:
        psycopg = _driver()
        try:
            conn = psycopg.connect(self.target.conninfo, autocommit=True)
            _configure(conn)
            # a writer waits for the write lock as long as SQLite's busy timeout, then fails
            conn.execute("SET lock_timeout = '30s'")
        except psycopg.Error as exc:
            raise ConnectionLost(f"PostgreSQL cannot be reached ({_message(exc)})") from exc
        return conn

    def _translated(self, sql: str) -> Translated:
        t = self._cache.get(sql)
        if t is None:
            t = self._cache[sql] = translate(sql, self.keys)
        return t

    def _call(self, work: Any, *, retry: bool = False, ends: bool = False) -> Any:
        """``work(psycopg connection)`` under the lock, reconnecting as the class
        docstring says. ``retry``: run it again once on a new connection if the old one
        broke outside a transaction; ``ends``: a ``COMMIT`` or ``ROLLBACK``."""
        psycopg = _driver()
        with self._lock:
            if self._lost:
                if ends:
                    self._lost = False
                raise ConnectionLost(LOST_IN_TRANSACTION)
            for attempt in range(2):
                if self._pg.closed and not self.in_transaction:
                    self._pg = self._open()
                    self.reconnects += 1
                try:
                    return work(self._pg)
                except psycopg.Error as exc:
                    if not (isinstance(exc, psycopg.OperationalError) and self._pg.closed):
                        raise _sqlite_error(exc) from exc
                    if self.in_transaction:
                        self.in_transaction = False
                        self._lost = not ends
                        raise ConnectionLost(
                            "the connection to PostgreSQL was lost at COMMIT (server restart"
                            " or terminated backend): the transaction may or may not have"
                            " been committed; the next transaction reconnects" if ends
                            else LOST_IN_TRANSACTION) from exc
                    if not retry or attempt:
                        raise ConnectionLost(
                            "the connection to PostgreSQL was lost (server restart or"
                            f" terminated backend: {_message(exc)}); the next statement"
                            " reconnects") from exc
            raise AssertionError("unreachable")  # pragma: no cover

    def _run(self, out: PgCursor, sql: str, params: Any) -> None:
        t = self._translated(sql)
        low = sql.lstrip()[:8].lower()
        if t.kind == "noop":
            out._clear()
            return
        if t.kind == "begin":
            self._call(lambda pg: self._begin(pg, out), retry=True)
            return
        ends = _ends_transaction(sql)
        if ends and low.startswith("rollback"):
            with self._lock:
                if self._lost or self._pg.closed:  # the server rolled it back already
                    self._lost = self.in_transaction = False
                    out._clear()
                    return

        def work(pg: Any) -> None:
            cur = pg.cursor()
            if t.kind == "set_version":
                cur.execute(t.sql, [t.value])
            else:
                cur.execute(t.sql, list(params) if not isinstance(params, dict) else params)
            if ends:
                self.in_transaction = False
            elif low.startswith("begin"):
                self.in_transaction = True
            out._load(cur, t.returning)

        self._call(work, retry=_is_read(t), ends=ends)

    def _begin(self, pg: Any, out: PgCursor) -> None:
        """``BEGIN`` and the write lock; on any failure no transaction is left open."""
        psycopg = _driver()
        cur = pg.cursor()
        cur.execute("BEGIN")
        try:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", [WRITE_LOCK_KEY])
        except psycopg.Error:
            if not pg.closed:
                with contextlib.suppress(psycopg.Error):
                    pg.execute("ROLLBACK")
            raise
        self.in_transaction = True
        out._load(cur, None)
        out.description = None

    def _run_many(self, out: PgCursor, sql: str, seq: Iterable[Sequence[Any]]) -> None:
        t = self._translated(sql)
        rows = [list(r) for r in seq]
        if not rows:
            return
        text = t.sql
        if t.returning is not None:  # executemany reports no row ids
            text = text[: text.rindex(" RETURNING ")]
        self._call(lambda pg: pg.cursor().executemany(text, rows))

    def raw(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run PostgreSQL's own SQL (no translation); the psycopg cursor. A ``BEGIN`` /
        ``START TRANSACTION`` here opens a transaction as the store's own does: a
        connection lost inside it fails its statements (a snapshot is never continued on a
        new connection), and ``COMMIT`` / ``ROLLBACK`` end it."""
        low = sql.lstrip().lower()
        begins = low.startswith(("begin", "start transaction"))
        ends = _ends_transaction(sql)

        def work(pg: Any) -> Any:
            cur = pg.cursor()
            cur.execute(sql, list(params) if params else None)
            if begins:
                self.in_transaction = True
            elif ends:
                self.in_transaction = False
            return cur

        if ends and low.startswith("rollback"):
            with self._lock:
                if self._lost or self._pg.closed:  # the server rolled it back already
                    self._lost = self.in_transaction = False
                    return None
        return self._call(work, retry=begins or _is_read(Translated(sql)), ends=ends)

    # ---- the sqlite3.Connection methods the store uses
    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> PgCursor:
        return PgCursor(self).execute(sql, params)

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]]) -> PgCursor:
        return PgCursor(self).executemany(sql, seq)

    def cursor(self) -> PgCursor:
        return PgCursor(self)

    def commit(self) -> None:
        if self.in_transaction or self._lost:
            self.execute("COMMIT")

    def rollback(self) -> None:
        if self.in_transaction or self._lost:
            self.execute("ROLLBACK")

    def close(self) -> None:
        self._pg.close()

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"a PostgreSQL store's connection has no {name!r} (a SQLite-only"
                             " operation)")


def _configure(pg: Any) -> None:
    """Make values come and go as with SQLite: booleans as 0/1 both ways, ``numeric`` as
    int or float, JSON as its text."""
    from psycopg.adapt import Dumper, Loader
    from psycopg.types.string import TextLoader

    class BoolAsInt(Dumper):
        oid = pg.adapters.types["int8"].oid

        def dump(self, obj: Any) -> bytes:
            return b"1" if obj else b"0"

    class BoolLoader(Loader):
        def load(self, data: Any) -> int:
            return 1 if bytes(data) == b"t" else 0

    class NumericLoader(Loader):
        def load(self, data: Any) -> int | float:
            text = bytes(data).decode()
            try:
                return int(text)
            except ValueError:
                return float(text)

    pg.adapters.register_dumper(bool, BoolAsInt)
    pg.adapters.register_loader("bool", BoolLoader)
    pg.adapters.register_loader("numeric", NumericLoader)
    pg.adapters.register_loader("json", TextLoader)
    pg.adapters.register_loader("jsonb", TextLoader)


def connect(url: str) -> PgConnection:
    """A :class:`PgConnection` to the database of ``url``."""
    # pandas.read_sql_query is given this DB-API connection; it works, and says so
    warnings.filterwarnings("ignore", message="pandas only supports SQLAlchemy",
                            category=UserWarning)
    return PgConnection(parse(url))


def database_exists(location: str | os.PathLike[str], *, file: bool = False) -> bool:
    """Whether the commands' ``--db`` names an existing project: a SQLite path that exists
    (``file``: a regular file), or any PostgreSQL URL (a server that cannot be reached says
    so when opened)."""
    if is_url(location):
        return True
    return Path(location).is_file() if file else Path(location).exists()
