"""Placeholder page (issue #5)."""

from annotation.widgets import not_built

not_built(
    "Verify conflict labels",
    "conflict-label verification for VIF-Bench tasks",
    issue=5,
)
