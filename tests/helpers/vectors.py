"""The published worked examples of ../shared/stats/test_vectors.json, and the tolerances
to check a value against them (shared by the statistics tests)."""

from __future__ import annotations

from tests.helpers import SHARED

VECTORS = SHARED / "stats" / "test_vectors.json"


def _decimals(x: float) -> int:
    text = repr(float(x))
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


def published_tol(x: float) -> float:
    """Half a unit of the last printed digit (at least 2 decimals: JSON drops zeros)."""
    return 0.5 * 10.0 ** -max(2, _decimals(x)) + 1e-12


def computed_tol(x: float) -> float:
    """Full precision, unless the 'computed' value itself was stored rounded."""
    d = _decimals(x)
    return max(1e-9, 0.5 * 10.0**-d if d < 10 else 0.0)
