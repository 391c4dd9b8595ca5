"""Widget keys that tell the browser nothing (issue #12, item 1).

Streamlit sends every widget key to the browser (inside the element id), so a key built
from an output id (``<task>/<generator>``), a question id, a criterion, a judge or a
generator, or from a plain hash of one (``sha256(output_id)[:12]``, which anyone can
recompute from the task id on the page and a list of likely generator names), gives the
generator away. :func:`widget_key` is the one way pages build a key from data: an HMAC
keyed with a random secret of the browser session (kept in ``st.session_state``, never
sent), so a key is stable across the reruns of one session, different in every other
session, and not computable from the ids without the secret.

Tests find a widget with the same call on the AppTest's session state:
``widget_key("q", output_id, question_id, given, state=at.session_state)``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import MutableMapping
from typing import Any

#: Where the session's secret is kept in ``st.session_state`` (server side only).
SECRET_STATE_KEY = "_widget_key_secret"
_DIGITS = 24  # hex digits of the HMAC kept in a key (96 bits)


def session_secret(state: MutableMapping[Any, Any]) -> bytes:
    """The random secret of this session (made on first use, 32 bytes)."""
    secret = state.get(SECRET_STATE_KEY)
    if not isinstance(secret, bytes) or len(secret) < 32:
        secret = secrets.token_bytes(32)
        state[SECRET_STATE_KEY] = secret
    return secret


def opaque(secret: bytes, *parts: object) -> str:
    """HMAC-SHA256 of ``parts`` (as text) under ``secret``, as hex digits."""
    payload = json.dumps([str(p) for p in parts], ensure_ascii=False).encode("utf-8")
    return hmac.new(secret, payload, hashlib.sha256).hexdigest()[:_DIGITS]


def widget_key(kind: str, *parts: object,
               state: MutableMapping[Any, Any] | None = None) -> str:
    """``<kind>-<opaque digits>``: a widget key for ``parts`` (ids from the data) that is
    stable within the browser session and reveals nothing of them. ``kind`` is a short
    constant naming the widget (``"q"``, ``"compare"``, ...); ``state`` defaults to
    ``st.session_state``."""
    if state is None:
        import streamlit as st

        state = st.session_state
    return f"{kind}-{opaque(session_secret(state), kind, *parts)}"
