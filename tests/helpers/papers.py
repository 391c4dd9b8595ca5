"""The papers' own text, where the shared folder beside the checkout holds it.

Tests that compare the product with a paper's wording find the paper by its title (the first
line of its text file), never by a file name, and skip cleanly when the folder is absent.
"""

from __future__ import annotations

import pytest

from tests.helpers import SHARED

VIF_BENCH = "VIF-Bench: Evaluating Visual Instruction Following in Multi-Reference Image Generation"


def paper_text(title: str) -> str:
    """The full text of the paper titled ``title`` (typographic apostrophes made plain), or
    skip the calling test when the shared folder does not hold it."""
    folder = SHARED / "seeds"
    for path in sorted(folder.glob("*.txt")) if folder.is_dir() else []:
        with path.open(encoding="utf-8") as f:
            first = f.readline().strip()
        if first == title:
            return path.read_text(encoding="utf-8").replace("\u2019", "'")
    pytest.skip(f"the text of {title!r} is not in {SHARED} (the shared folder beside the "
                "checkout)")
