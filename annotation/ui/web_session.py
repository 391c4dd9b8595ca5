"""The session cookie in the browser: two HTTP routes and a tiny component that calls them.

Streamlit only *reads* cookies (``st.context.cookies``, from the request that opened the
websocket), so the cookie is set by the server through two routes that ``judge-audit
serve`` mounts beside Streamlit (``st.App(..., routes=...)``, :mod:`annotation.server`):

* ``POST /_ja/session`` with a one-time handoff code in the body (from
  :func:`annotation.accounts.sessions.create`): the session's token is made and sent back as
  ``Set-Cookie: ja_session=<token>; HttpOnly; SameSite=Strict; Path=/`` (and ``Secure``
  over https, also behind a proxy that says ``X-Forwarded-Proto: https``). Page scripts
  cannot read an HttpOnly cookie, and the token never appears in a URL, in the page or in
  a log: it only travels in this response header and the browser's ``Cookie`` headers.
* ``POST /_ja/signout``: revokes the session of the request's cookie and clears it.

Both refuse cross-site requests (their ``Origin`` must be the app's own).

:func:`cookie_step` mounts a components-v2 element whose JavaScript makes one of these
POSTs (``fetch``, same origin) and, after sign-in, reloads the page: the new websocket
then carries the cookie, and every rerun resolves the user from it. The handoff code is
the element's ``data``: it reaches only the browser that signed in (in its websocket
frames), is never written into the DOM, works once and within 60 seconds.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from annotation.accounts import sessions

ROUTE_SESSION = "/_ja/session"
ROUTE_SIGNOUT = "/_ja/signout"

_JS = """
export default function (component) {
  const { data, setTriggerValue } = component;
  if (!data || !data.action) return;
  const url = data.action === "set" ? "ROUTE_SESSION" : "ROUTE_SIGNOUT";
  fetch(url, {
    method: "POST", body: data.code || "", credentials: "same-origin", cache: "no-store",
    headers: { "Content-Type": "text/plain" },
  }).then((response) => {
    if (response.ok) {
      if (data.reload) window.location.reload();
    } else {
      setTriggerValue("failed", response.status);
    }
  }).catch(() => setTriggerValue("failed", -1));
}
""".replace("ROUTE_SESSION", ROUTE_SESSION).replace("ROUTE_SIGNOUT", ROUTE_SIGNOUT)

_component: Any = None


def cookie_step(action: str, code: str | None = None, *, key: str,
                on_failed: Any = None) -> None:
    """Mount the element that sets (``action="set"``, with the handoff ``code``, then
    reloads) or clears (``action="clear"``) the session cookie in this browser."""
    global _component
    import streamlit as st

    if _component is None:
        _component = st.components.v2.component("judge_audit_session", js=_JS)
    _component(data={"action": action, "code": code, "reload": action == "set"}, key=key,
               height=0, on_failed_change=on_failed or (lambda: None))


# ------------------------------------------------------------------ the server side
def same_origin(headers: Any) -> bool:
    """A browser's fetch() sends ``Origin``; it must name this very host (the one the
    browser asked for: ``Host``, or ``X-Forwarded-Host`` behind a reverse proxy)."""
    origin = headers.get("origin")
    hosts = {h.strip().lower() for h in (headers.get("x-forwarded-host", "").split(",")[0],
                                         headers.get("host", "")) if h and h.strip()}
    if not origin or not hosts:
        return False
    try:
        return urlsplit(origin).netloc.lower() in hosts
    except ValueError:  # e.g. "http://[::1": not an origin
        return False


def _secure(request: Any) -> bool:
    forwarded = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    return request.url.scheme == "https" or forwarded == "https"


def _open_store() -> Any:
    from annotation.store import Store
    from annotation.ui.app_state import resolve_db

    return Store.open(resolve_db())


def redeem_code(code: str) -> str | None:
    """The token for a handoff code (one transaction), or None."""
    from annotation.store import accounts as accounts_store

    with _open_store() as store, accounts_store.writing(store, public=True) as rows:
        return sessions.redeem(rows, code)


def revoke_token(token: str | None) -> None:
    """Revoke the session of ``token`` (a sign-out request), logged as ``logout``."""
    if not token:
        return
    from annotation.store import accounts as accounts_store

    with _open_store() as store, accounts_store.writing(store, public=True) as rows:
        sessions.sign_out(rows, token)


def routes() -> list[Any]:
    """The two Starlette routes (for ``st.App(routes=...)``)."""
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import Response
    from starlette.routing import Route

    def refused() -> Response:
        return Response(status_code=403, headers={"Cache-Control": "no-store"})

    async def session_endpoint(request: Any) -> Response:
        if not same_origin(request.headers):
            return refused()
        body = await request.body()
        if len(body) > 256:
            return refused()
        token = await run_in_threadpool(redeem_code, body.decode("ascii", "replace").strip())
        if token is None:
            return refused()
        response = Response(status_code=204, headers={"Cache-Control": "no-store"})
        response.set_cookie(sessions.COOKIE_NAME, token, max_age=sessions.MAX_HOURS * 3600,
                            path="/", httponly=True, samesite="strict",
                            secure=_secure(request))
        return response

    async def signout_endpoint(request: Any) -> Response:
        if not same_origin(request.headers):
            return refused()
        await run_in_threadpool(revoke_token, request.cookies.get(sessions.COOKIE_NAME))
        response = Response(status_code=204, headers={"Cache-Control": "no-store"})
        response.delete_cookie(sessions.COOKIE_NAME, path="/", httponly=True,
                               samesite="strict", secure=_secure(request))
        return response

    return [Route(ROUTE_SESSION, session_endpoint, methods=["POST"]),
            Route(ROUTE_SIGNOUT, signout_endpoint, methods=["POST"])]
