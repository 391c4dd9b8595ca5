"""Small Streamlit building blocks shared by pages (layout only, no logic)."""

from __future__ import annotations

import streamlit as st


def not_built(title: str, what: str, issue: int) -> None:
    """Say plainly that a page is not built yet, and which issue brings it."""
    st.title(title)
    st.warning(
        f"Not built yet: {what} comes with issue #{issue}. The data it needs is already in "
        "the project database (see Overview)."
    )
