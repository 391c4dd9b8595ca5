"""Small Streamlit building blocks shared by pages (layout only, no logic)."""

from __future__ import annotations

import re

import streamlit as st

from annotation.app_state import current_user
from annotation.auth import User

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def inert(text: str) -> str:
    """Escape markdown and HTML so a label shows ``text`` literally (prompts are data)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text.replace("\n", " "))


def require(role: str | None = None) -> User:
    """The signed-in user; stop the page unless signed in (and, if given, in ``role``)."""
    from annotation.app_state import open_store

    user = current_user(st.session_state, open_store(st.session_state))
    if user is None:
        st.error("Please sign in.")
        st.stop()
    if role is not None and user.role != role:
        st.error("This page is for admins only.")
        st.stop()
    return user


def not_built(title: str, what: str, issue: int, role: str | None = None) -> None:
    """Say plainly that a page is not built yet, and which issue brings it."""
    require(role)
    st.title(title)
    st.warning(
        f"Not built yet: {what} comes with issue #{issue}. The data it needs is already in "
        "the project database (see Overview)."
    )
