"""Placeholder page (issue #4)."""

from annotation.widgets import not_built

not_built(
    "Judge validation",
    "the judge-validation statistics, report and dashboard",
    issue=4,
    role="admin",
)
