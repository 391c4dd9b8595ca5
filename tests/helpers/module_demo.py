"""A demo project (or an empty project) shared by the tests of one module, on each engine
(issue #18).

The ``engine_demo`` fixture of tests/conftest.py makes a copy per test; a module whose tests
share one demo (module scope) parametrizes its own fixture with :data:`ENGINES` and gets the
copy from :func:`module_demo`."""

from __future__ import annotations

import shutil

import pytest

#: the two engines, PostgreSQL marked ``slow`` as in tests/conftest.py
ENGINES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)]


def module_demo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                prefix: str) -> str:
    """A fresh copy of the demo project on ``request.param``'s engine: a SQLite path, or
    the URL of a PostgreSQL database made from the session's demo template."""
    folder = tmp_path_factory.mktemp(prefix)
    if request.param == "sqlite":
        return str(request.getfixturevalue("make_demo_db")(folder / "demo.db"))
    cluster = request.getfixturevalue("pg_cluster")
    template, media = request.getfixturevalue("pg_demo_template")
    name = cluster.create_database(template=template)
    shutil.copytree(media / f"{template}_media", folder / f"{name}_media")
    return str(cluster.url(name, media=folder))


def module_db(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
              prefix: str) -> str:
    """The location of a new empty project on ``request.param``'s engine: a SQLite path, or
    the URL of a PostgreSQL database made from the session's migrated template."""
    folder = tmp_path_factory.mktemp(prefix)
    if request.param == "sqlite":
        return str(folder / "project.db")
    cluster = request.getfixturevalue("pg_cluster")
    name = cluster.create_database(template=request.getfixturevalue("pg_schema_template"))
    return str(cluster.url(name, media=folder))
