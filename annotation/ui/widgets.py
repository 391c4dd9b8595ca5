"""Small Streamlit building blocks shared by pages (layout only, no logic)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import streamlit as st

from annotation.accounts.auth import User
from annotation.results.export import arrow_safe as arrow_safe  # st.dataframe's tables
from annotation.ui import render
from annotation.ui.app_state import current_user

if TYPE_CHECKING:
    from annotation.store import Store

#: Invisible, no line break: splits what markdown would turn into a link (see _unlink).
WORD_JOINER = "\u2060"
# Where Streamlit's markdown (remark-gfm) makes a link of plain text, also after escapes
# are resolved: ``http://`` / ``https://`` (any case), ``www.`` and ``name@host.tld``.
_AUTOLINK = re.compile(r"(?i)(?<=https:)(?=//)|(?<=http:)(?=//)|(?<=www)(?=\.)"
                       r"|(?<=[-.\w+]@)(?=[-\w])")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#.!|<>~$:&])")
_LINE_BREAK = re.compile(r"\r\n?|\n")
_LIST_MARKER = re.compile(r"^(\s*)([-+])")  # '- x', '+ x', '---': only at a line start


def _unlink(text: str) -> str:
    """``text`` with a word joiner (U+2060, invisible) where markdown would autolink it:
    inside ``https://`` / ``http://`` (before ``//``), after ``www`` (before the dot) and
    after the ``@`` of an e-mail address. The text reads the same; no ``<a>`` is made."""
    return _AUTOLINK.sub(WORD_JOINER, text)


def inert(text: str) -> str:
    """Escape markdown and HTML so a label shows ``text`` literally (prompts are data).

    One line (line breaks become spaces); every character that markdown, HTML, LaTeX,
    entities or Streamlit's ``:directives:`` act on is escaped; ``-`` and ``+`` only where
    they could start a list or a rule, so ``judge-audit`` stays as typed in the source.
    Bare URLs and e-mail addresses are shown as text, not as links (:func:`_unlink`).
    """
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", _LINE_BREAK.sub(" ", _unlink(text)))
    return _LIST_MARKER.sub(r"\1\\\2", escaped)


_MARKUP_IN_MARKDOWN = re.compile(r"([\\<>\[\]$])")


def safe_markdown(text: str) -> str:
    """Markdown written for people (guidelines, rubrics) with its markup kept (bold, lists,
    headings, code) but nothing active: HTML tags, links, images and LaTeX are escaped, so
    ``<script>``, ``[x](javascript:...)`` and ``$x$`` show as the characters typed; bare
    URLs and e-mail addresses stay text (:func:`_unlink`)."""
    return _MARKUP_IN_MARKDOWN.sub(r"\\\1", _unlink(text))


def require(role: str | tuple[str, ...] | None = None) -> User:
    """The signed-in user; stop the page unless signed in (and, if given, in ``role`` or
    one of the roles ``role`` names).

    Resolved from the session the request presents, on every run: the page's and each
    rerun of a fragment (which then reruns the whole app to the sign-in page).
    """
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    from annotation.ui.app_state import SIGNED_OUT_KEY, open_store, rerun_app

    user = current_user(st.session_state, open_store(st.session_state))
    if user is None:
        ctx = get_script_run_ctx()
        if ctx is not None and getattr(ctx, "fragment_ids_this_run", None):
            rerun_app()  # a fragment rerun: the whole page goes, not just the fragment
        if message := st.session_state.get(SIGNED_OUT_KEY):
            st.warning(message)
        st.error("Please sign in.")
        st.stop()
    roles = (role,) if isinstance(role, str) else role
    if roles is not None and user.role not in roles:
        st.error("This page is for admins only." if roles == ("admin",) else
                 f"This page is for {' and '.join(r + 's' for r in roles)} only.")
        st.stop()
    return user


def show_image(store: Store, sha256: str | None, max_side: int, *, caption: str | None = None,
               width: Any = "stretch", task_meta: Any = None,
               generated: bool = False) -> render.BrowserImage:
    """Show stored image ``sha256`` at ``max_side``: the only way pages put an image on
    screen. The bytes are :func:`annotation.ui.render.browser_image`'s (re-encoded from pixels,
    no metadata, a placeholder when the image cannot be read); ``task_meta`` draws the VI
    overlay. ``generated``: a generated output, served alike for every generator (no format
    or resolution to tell them apart). ``caption`` must already be escaped (:func:`inert`).
    Returns what was shown."""
    image = render.browser_image(store, sha256, max_side, task_meta=task_meta,
                                 generated=generated)
    st.image(image.data, caption=caption, width=width, output_format=image.format)  # type: ignore[arg-type]
    return image


#: the input images' groups, in the order annotators read them
INPUT_GROUPS = (("reference", "Reference images"), ("visual_instruction", "Visual instructions"))


def show_input_images(store: Store, images: Any) -> None:
    """A task's reference and visual-instruction images (``images``: items with ``role``,
    ``sha256`` and ``short_caption``), each group under its title, two per row."""
    for role, title in INPUT_GROUPS:
        group = [im for im in images if im.role == role]
        if not group:
            continue
        st.caption(title)
        grid = st.columns(2)
        for i, image in enumerate(group):
            with grid[i % 2]:
                show_image(store, image.sha256, render.STRIP_SIZE,
                           caption=inert(image.short_caption))
