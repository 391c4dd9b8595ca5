"""Placeholder page (issue #6)."""

from annotation.widgets import not_built

not_built(
    "Review diagnostic trees",
    "diagnostic-tree review and failure localization (TRACE-Bench)",
    issue=6,
)
