"""Shared fixtures: a real SQLite project file (WAL), real bundles made with Pillow, and the
demo project built once per session and copied per test."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from annotation.project_files import build_demo_db
from annotation.store import Store
from annotation.ui.app_state import enable_test_sessions
from tests.helpers.bundles import write_doc_example
from tests.helpers.module_demo import ENGINES

# AppTest has no browser, hence no session cookie: sign_in() keeps the session token in
# session_state instead, in this process only (see annotation.ui.app_state).
enable_test_sessions()

# Whatever falls back to the default demo project ($JUDGE_AUDIT_HOME/demo.db: a page opened
# without $JUDGE_AUDIT_DB, a CLI command without --db) gets a folder of this run, never the
# user's ~/.judge-audit.
os.environ["JUDGE_AUDIT_HOME"] = tempfile.mkdtemp(prefix="judge-audit-home-")


@pytest.fixture(autouse=True)
def _main_module_restored() -> Iterator[None]:
    """AppTest runs a page as ``__main__`` and leaves it in ``sys.modules``; a later
    ``multiprocessing`` child (forkserver, spawn) would run that page again on start. Put
    the test runner's own ``__main__`` back after each test."""
    main = sys.modules.get("__main__")
    yield
    if main is not None and sys.modules.get("__main__") is not main:
        sys.modules["__main__"] = main


def _media(db: Path) -> Path:
    """The media folder of the database ``db`` (as :attr:`annotation.store.Store.media_dir`)."""
    return db.with_name(db.stem + "_media")


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo project (``judge-audit demo``: the embedded bundle and the demo accounts),
    built once per session. Never open it: copy it with :func:`make_demo_db`."""
    db = tmp_path_factory.mktemp("demo-template") / "demo.db"
    build_demo_db(db)
    conn = sqlite3.connect(db)  # fold the WAL into the file: one file (+ media) to copy
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return db


@pytest.fixture(scope="session")
def make_demo_db(demo_template: Path) -> Callable[[Path], Path]:
    """``make_demo_db(path)`` puts a fresh copy of the demo project at ``path`` (and its
    media folder beside it) and returns ``path``: what ``judge-audit demo --db path`` builds,
    without building it again."""

    def make(path: Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("-wal", "-shm"):
            assert not path.with_name(path.name + suffix).exists(), f"{path}{suffix} exists"
        shutil.copy2(demo_template, path)
        if _media(demo_template).is_dir():
            shutil.copytree(_media(demo_template), _media(path), copy_function=shutil.copy2)
        return path

    return make


@pytest.fixture
def served_demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                make_demo_db: Callable[[Path], Path], served_engine: str,
                request: pytest.FixtureRequest) -> Path | str:
    """A fresh copy of the demo project that the app pages open (``$JUDGE_AUDIT_DB``
    points at it for the test): what AppTest tests of a page start from. A module with
    ``SERVED_ENGINES = ("sqlite", "postgresql")`` also gets it on PostgreSQL (a URL)."""
    if served_engine == "postgresql":
        url = request.getfixturevalue("make_pg_demo")()
        monkeypatch.setenv("JUDGE_AUDIT_DB", url)
        return url
    path = make_demo_db(tmp_path / "demo.db")
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(path))
    return path


@pytest.fixture
def served_engine() -> str:
    """The engine of ``served_demo`` (see :func:`pytest_generate_tests`)."""
    return "sqlite"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "project.db"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test module that sets ``STORE_ENGINES = ("sqlite", "postgresql")`` runs its tests
    that use the ``store`` fixture on each engine (issue #18: PostgreSQL);
    ``SERVED_ENGINES`` does the same for ``served_demo``."""
    engines = getattr(metafunc.module, "STORE_ENGINES", None)
    if engines and "store_engine" in metafunc.fixturenames:
        metafunc.parametrize("store_engine", [_engine(e) for e in engines])
    served = getattr(metafunc.module, "SERVED_ENGINES", None)
    if served and "served_engine" in metafunc.fixturenames:
        metafunc.parametrize("served_engine", [_engine(e) for e in served])


def _engine(name: str) -> Any:
    """An engine parameter; PostgreSQL's are ``slow`` (a database made per test)."""
    return pytest.param(name, marks=pytest.mark.slow) if name == "postgresql" else name


@pytest.fixture
def store_engine() -> str:
    """The engine of the ``store`` fixture (see :func:`pytest_generate_tests`)."""
    return "sqlite"


@pytest.fixture
def store(db_path: Path, store_engine: str, request: pytest.FixtureRequest):
    location = db_path if store_engine == "sqlite" else request.getfixturevalue("pg_url")
    s = Store.open(location)
    yield s
    s.close()


@pytest.fixture
def example_bundle(tmp_path: Path) -> Path:
    """The complete small example of docs/bundle-format.md, with real images."""
    return write_doc_example(tmp_path / "example")


# ------------------------------------------------------------- PostgreSQL (issue #18)
@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[object]:
    """A throwaway PostgreSQL cluster (:mod:`tests.helpers.postgres`) for the session; the
    test is skipped where no server can be started here."""
    from tests.helpers import postgres

    cluster = postgres.start()
    if cluster is None:
        if os.environ.get("JUDGE_AUDIT_REQUIRE_PG"):  # CI (.ci/run): both engines or fail
            pytest.fail("JUDGE_AUDIT_REQUIRE_PG is set and no PostgreSQL server starts here")
        pytest.skip("no PostgreSQL server here (server binaries or psycopg missing)")
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def pg_schema_template(pg_cluster) -> str:
    """A PostgreSQL database migrated once (empty project): what :func:`pg_url` copies."""
    name = pg_cluster.create_database()
    Store.open(pg_cluster.url(name)).close()
    return name


@pytest.fixture
def pg_url(pg_cluster, pg_schema_template: str, tmp_path: Path) -> str:
    """The URL of a new empty project database on PostgreSQL (a copy of the migrated
    template), its media folder in ``tmp_path``."""
    return pg_cluster.url(pg_cluster.create_database(template=pg_schema_template),
                          media=tmp_path / "pg-media")


@pytest.fixture(scope="session")
def pg_demo_template(pg_cluster, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The demo project built once into a PostgreSQL database (copy it with
    :func:`make_pg_demo`): its name and its media root."""
    media = tmp_path_factory.mktemp("pg-demo-media")
    name = pg_cluster.create_database()
    build_demo_db(pg_cluster.url(name, media=media))
    return name, media


@pytest.fixture
def make_pg_demo(pg_cluster, pg_demo_template, tmp_path: Path) -> Callable[[], str]:
    """``make_pg_demo()``: the URL of a fresh copy of the demo project on PostgreSQL (a
    database made from the template, its media folder copied into ``tmp_path``)."""

    def make() -> str:
        template, media = pg_demo_template
        name = pg_cluster.create_database(template=template)
        root = tmp_path / f"media-{name}"
        root.mkdir()
        shutil.copytree(media / f"{template}_media", root / f"{name}_media")
        return pg_cluster.url(name, media=root)

    return make


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """``"sqlite"`` or ``"postgresql"``: every test that asks for a project through
    :func:`engine_db`, :func:`engine_demo`, :func:`make_engine_db` or
    :func:`make_engine_demo` runs once on each engine (ids ``[sqlite]``,
    ``[postgresql]``; the PostgreSQL run is ``slow`` and skips where no server starts)."""
    return str(request.param)


@pytest.fixture
def make_engine_db(engine: str, tmp_path: Path,
                   request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``make_engine_db(name)``: the location of a new empty project on the test's engine,
    a SQLite file ``tmp_path/name`` or a new PostgreSQL database (a URL, its media folder
    under ``tmp_path``): for a test that needs more than one project."""

    def make(name: str = "project.db") -> str:
        if engine == "sqlite":
            return str(tmp_path / name)
        cluster = request.getfixturevalue("pg_cluster")
        template = request.getfixturevalue("pg_schema_template")
        return cluster.url(cluster.create_database(template=template),
                           media=tmp_path / f"pg-media-{Path(name).stem}")

    return make


@pytest.fixture
def engine_db(make_engine_db: Callable[[str], str]) -> str:
    """A new project location on each engine: a SQLite file path, a PostgreSQL URL."""
    return make_engine_db("project.db")


@pytest.fixture
def make_engine_demo(engine: str, tmp_path: Path, make_demo_db: Callable[[Path], Path],
                     request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``make_engine_demo(name)``: a fresh copy of the demo project on the test's engine
    (a path, or a URL)."""

    def make(name: str = "demo.db") -> str:
        if engine == "sqlite":
            return str(make_demo_db(tmp_path / name))
        return str(request.getfixturevalue("make_pg_demo")())

    return make


@pytest.fixture
def engine_demo(make_engine_demo: Callable[[str], str]) -> str:
    """A fresh copy of the demo project on each engine (a path, or a URL)."""
    return make_engine_demo("demo.db")
