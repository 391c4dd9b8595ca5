"""Shared test helpers: bundles and fixtures written with Pillow, reference values, browser
and AppTest set-up. Imported as ``from tests.helpers.bundles import ...``."""

from __future__ import annotations

from pathlib import Path

#: the checkout (``app.py``, ``pages/``, ``annotation/``, ``tests/``)
ROOT = Path(__file__).resolve().parents[2]
#: the shared folder beside the checkout (public fixtures, reference values); tests that
#: read it skip when it is absent
SHARED = ROOT.parent / "shared"
