"""The answer panel in the browser, and the route its answers arrive by.

Why: a Streamlit button's key press is a *trigger*, and Streamlit drops triggers when
reruns overlap; under load an annotator pressed ``Y``, saw nothing and moved on, and the
answer was lost. The panel is a components-v2 element (inline HTML and JavaScript, no
iframe: ``answer_panel.js``) that

* handles the keys in the browser (``Y`` / ``N`` / ``U``, digits, ``A`` / ``D``, ``J`` /
  ``K``, ``Enter`` and the page's commands), so a key shows its answer at once, without a
  rerun;
* keeps every answer in an **outbox** (memory and ``localStorage``) until the server
  acknowledges it, sends the outbox oldest first to ``POST /_ja/answers``
  (:data:`ROUTE_ANSWERS`, a route of ``judge-audit serve`` beside Streamlit, same origin,
  the ``ja_session`` cookie), and sends again after a network or server error, a timeout
  or a reload: each press carries its own id, so a press delivered twice is written once
  (:mod:`annotation.work.deliveries`);
* marks each answer *saving…* until acknowledged, says at the top how many wait and
  whether the server is reachable, and sends a command (Submit, Back, Flag, ...) only
  once every answer typed before it is acknowledged. A command is the component's *state*
  (``command = {name, n}``), which Streamlit keeps and sends with every rerun request, so
  unlike a trigger it is not dropped; the workflow's controller acts on each ``n`` once
  (:func:`annotation.work.panel.take_command`) and echoes it (``handled``) so the panel
  stops sending it.

What reaches the browser is :func:`annotation.work.panel.spec`: targets by position, the
visit id and an item token that is an HMAC of the unit under a secret of this process (the
same item gives the same token on a reload, nothing to recompute an id from).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from annotation.ui.widget_keys import opaque
from annotation.work import panel as panels

ROUTE_ANSWERS = "/_ja/answers"
#: sign-in ended for these reasons: the account itself was changed by an admin (disabled,
#: role changed), so what the browser still holds is not sent again later
DROPPED_WHEN = frozenset({"disabled", "role"})
MAX_BODY = 64_000
_HERE = Path(__file__).parent
_SECRET = secrets.token_bytes(32)
_component: Any = None


def item_token(person: str, unit: str) -> str:
    """The panel's name for ``person``'s unit: stable in this server process, not an id
    (:func:`annotation.ui.widget_keys.opaque` under a secret of the process)."""
    return opaque(_SECRET, person, unit)


def outbox_owner(person: str) -> str:
    """The name of ``person``'s outbox in the browser's ``localStorage`` (one per account,
    so an account signing in after another in the same browser neither sends nor drops
    the other's answers): stable across server restarts, not the account's name."""
    return hashlib.sha256(f"judge-audit outbox:{person}".encode()).hexdigest()[:16]


def _mount() -> Any:
    global _component
    if _component is None:
        import streamlit as st

        _component = st.components.v2.component(
            "judge_audit_answer_panel", js=(_HERE / "answer_panel.js").read_text("utf-8"),
            css=(_HERE / "answer_panel.css").read_text("utf-8"), isolate_styles=False)
    return _component


def show(panel: panels.Panel, *, person: str, unit: str, key: str,
         on_command: Callable[[dict[str, Any]], None]) -> None:
    """Draw the panel; ``on_command`` gets each command (``{name, n, visit, seconds,
    cursor}``) before the page runs (a Streamlit callback); the controller's
    ``command`` says whether it is new and acts on it."""
    import streamlit as st

    data = panels.spec(panel) | {"item": item_token(person, unit),
                                 "owner": outbox_owner(person)}

    def changed() -> None:
        value = st.session_state.get(key)
        command = _command_of(value)
        if command is not None:
            on_command(command)

    _mount()(data=data, key=key, on_command_change=changed,
             default={"command": None})


def _command_of(value: Any) -> dict[str, Any] | None:
    """The ``command`` of the component's state, if it is a well-formed one."""
    raw = value.get("command") if isinstance(value, dict) else getattr(value, "command", None)
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        return None
    n, visit = raw.get("n"), raw.get("visit")
    if isinstance(n, bool) or not isinstance(n, int) or not isinstance(visit, int):
        return None
    seconds, cursor = raw.get("seconds", 0), raw.get("cursor")
    return {"name": raw["name"], "n": n, "visit": visit,
            "seconds": float(seconds) if isinstance(seconds, (int, float))
            and not isinstance(seconds, bool) and 0 <= seconds < 1e6 else 0.0,
            "cursor": cursor if isinstance(cursor, int) and not isinstance(cursor, bool)
            else None}


# ------------------------------------------------------------------ the route
_local = threading.local()


def _store(token: str | None) -> Any:
    """This thread's store of the served project (kept for the thread's life), acting for
    the session of ``token``."""
    from annotation.store import SessionGuard, Store, guard
    from annotation.ui.app_state import resolve_db

    db = resolve_db()
    store = getattr(_local, "store", None)
    if store is None or store.location != str(db):
        store = Store.open(db)
        guard.protect(store)
        _local.store = store
    store.guard = SessionGuard(token=lambda: token, on_refused=lambda exc: None)
    return store


def deliver_body(token: str | None, body: bytes) -> tuple[int, dict[str, Any]]:
    """Status and JSON of ``POST /_ja/answers``: 401 without a live session (``keep``:
    whether the panel should keep the entries for after the next sign-in: not when the
    account was disabled or its role changed), 400 for a body that is not a delivery (the
    error names the entry and field), else 200 with a receipt per entry."""
    from annotation.accounts import sessions
    from annotation.store import accounts as accounts_store
    from annotation.work import deliveries

    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # also too deep, too long
        return 400, {"error": "the body is not JSON (or nests or counts beyond reason)"}
    try:
        entries = deliveries.parse(payload)
    except deliveries.BadDelivery as exc:
        return 400, {"error": str(exc)}
    store = _store(token)
    try:
        info = sessions.check(accounts_store.reading(store), token, touch=False)
        receipts = deliveries.deliver(store, info.user, entries)
    except sessions.SignedOut as exc:  # also: revoked between the check and a write
        return 401, {"error": exc.message, "reason": exc.reason,
                     "keep": exc.reason not in DROPPED_WHEN}
    return 200, deliveries.receipts_json(receipts)


#: worker threads of the answer route's own: Starlette runs every static-file read of a
#: page load (a stat and each 64 KiB chunk) as a job on the shared worker pool, whose one
#: limiter (40 threads) a few browsers loading the app fill; an answer must not queue
#: behind them (the soak's key-to-database delays while 20 annotators sign in)
ANSWER_THREADS = 8
_limiter: Any = None


def answer_limiter() -> Any:
    """The route's own ``anyio.CapacityLimiter`` (made on first use, in the event loop)."""
    global _limiter
    if _limiter is None:
        import anyio

        _limiter = anyio.CapacityLimiter(ANSWER_THREADS)
    return _limiter


def routes() -> list[Any]:
    """The panel's route (for ``st.App(routes=...)``)."""
    from functools import partial

    import anyio.to_thread
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from annotation.accounts import sessions
    from annotation.ui.incidents import log_incident
    from annotation.ui.web_session import same_origin

    async def answers_endpoint(request: Any) -> Response:
        if not same_origin(request.headers):
            return Response(status_code=403, headers={"Cache-Control": "no-store"})
        if not request.cookies.get(sessions.COOKIE_NAME):  # before reading anything
            return JSONResponse({"error": sessions.SignedOut("no_session").message,
                                 "reason": "no_session", "keep": True}, status_code=401,
                                headers={"Cache-Control": "no-store"})
        length = request.headers.get("content-length", "")
        if length and (not length.isdigit() or int(length) > MAX_BODY):
            return JSONResponse({"error": "too large"}, status_code=413)
        body = bytearray()
        async for chunk in request.stream():  # never more than MAX_BODY in memory
            body += chunk
            if len(body) > MAX_BODY:
                return JSONResponse({"error": "too large"}, status_code=413)
        try:
            status, payload = await anyio.to_thread.run_sync(
                partial(deliver_body, request.cookies.get(sessions.COOKIE_NAME), bytes(body)),
                limiter=answer_limiter())
        except Exception as exc:  # logged with an incident id; the panel keeps the answers
            incident = log_incident(exc)
            status, payload = 500, {"error": f"the server had an error (incident {incident})",
                                    "incident": incident}
        return JSONResponse(payload, status_code=status, headers={"Cache-Control": "no-store"})

    return [Route(ROUTE_ANSWERS, answers_endpoint, methods=["POST"])]
