"""Every module of the library imports on its own, first, in a fresh interpreter.

An import cycle between packages (e.g. a reader that needs the store, whose package
imports the reader back) only shows when the cycle's other end is imported first, which
the test suite, importing everything, never does. ``annotation.ui`` and the CLI are left
out: they sit on top of everything else and nothing imports them."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import annotation
from tests.helpers import ROOT

LIBRARY = sorted(
    info.name for info in pkgutil.walk_packages(annotation.__path__, "annotation.")
    if not info.name.startswith(("annotation.ui", "annotation.cli"))
)


@pytest.mark.slow
def test_every_library_module_imports_first():
    assert "annotation.formats.importers" in LIBRARY and "annotation.store.queue" in LIBRARY
    script = ("import importlib, subprocess, sys\n"
              "bad = []\n"
              "for name in sys.argv[1:]:\n"
              "    r = subprocess.run([sys.executable, '-c', f'import {name}'],"
              " capture_output=True, text=True)\n"
              "    if r.returncode:\n"
              "        bad.append(name + ': ' + r.stderr.strip().splitlines()[-1])\n"
              "print('\\n'.join(bad))\n")
    result = subprocess.run([sys.executable, "-c", script, *LIBRARY], cwd=ROOT,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", "modules that fail when imported first:\n" + result.stdout


def test_no_private_name_is_imported_across_modules():
    """A leading underscore says "only this module uses it"; another module importing it
    is a hidden dependency (make the name public, or move the code)."""
    import ast

    found = []
    sources = sorted((ROOT / "annotation").rglob("*.py")) + sorted((ROOT / "pages").glob("*.py"))
    for path in sources + [ROOT / "app.py", ROOT / "server.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("annotation"):
                found += [f"{path.relative_to(ROOT)}:{node.lineno}: {node.module}.{a.name}"
                          for a in node.names if a.name.startswith("_")]
    assert not found, "\n".join(found)
