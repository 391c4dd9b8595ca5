"""A demo project shared by the tests of a module, on either engine (issue #18): conftest's
``engine_demo`` is made per test; a module fixture parametrized with :data:`ENGINES` gets
one copy per engine from :func:`module_demo`."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

# the params of a module fixture: PostgreSQL's run is ``slow``, as conftest's ``engine``
ENGINES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)]


def module_demo(request: pytest.FixtureRequest, folder: Path,
                make_demo_db: Callable[[Path], Path]) -> str:
    """A fresh copy of the demo project on ``request.param``'s engine in ``folder``: a
    SQLite path, or a PostgreSQL URL (a database made from the session's demo template,
    its media folder copied into ``folder``)."""
    if request.param == "sqlite":
        return str(make_demo_db(folder / "demo.db"))
    cluster = request.getfixturevalue("pg_cluster")
    template, media = request.getfixturevalue("pg_demo_template")
    name = cluster.create_database(template=template)
    shutil.copytree(media / f"{template}_media", folder / f"{name}_media")
    return str(cluster.url(name, media=folder))
