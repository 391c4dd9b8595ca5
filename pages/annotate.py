"""Placeholder page (issue #3)."""

from annotation.widgets import not_built

not_built(
    "Annotate outputs",
    "the annotator workspace (checklist and 1-10 ratings, keyboard first, blind, multi-annotator)",
    issue=3,
)
