"""What ``judge-audit serve`` adds around the Streamlit app (issue #12, items 2 and 5).

``server.py`` (beside ``app.py``) wraps the app in Streamlit's ASGI ``App`` with:

* :class:`SecurityHeaders`: ``X-Frame-Options: DENY``, ``Content-Security-Policy:
  frame-ancestors 'none'``, ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy:
  no-referrer`` on every HTTP response (pages, ``/_stcore/*``, ``/media/*``, static
  files); component iframes (``/component/*``) may be framed by the app itself only;
  media files (named by their content) may be kept by the browser (:data:`MEDIA_CACHE`);
* :class:`WebsocketGuard`: Streamlit sends the absolute path of its main script in every
  ``NewSession`` message (``main_script_path``; the browser uses it only to name the app
  in its metrics) and answers a ``load_git_info`` request with the repository, branch and
  untracked files. The guard replaces the path by ``app.py`` in the frames it sends and
  drops the developer requests (``load_git_info``, ``clear_cache``, ``set_run_on_save``)
  that the minimal toolbar never sends;
* :func:`annotation.ui.incidents.on_script_error` for errors outside the page guards.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOGGER = logging.getLogger("judge_audit.served")

#: Sent with every HTTP response.
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)
#: ... except under these paths (Streamlit's component iframes), framed by the app only.
SAME_ORIGIN_FRAMES = ("/component/",)
_SAME_ORIGIN: tuple[tuple[bytes, bytes], ...] = (
    (b"x-frame-options", b"SAMEORIGIN"),
    (b"content-security-policy", b"frame-ancestors 'self'"),
    *SECURITY_HEADERS[2:],
)
#: Streamlit's media files (images): named by a hash of their bytes, so a name always means
#: the same bytes and the browser may keep them (for this user only); the next item then
#: shows the images it already has without fetching them again.
MEDIA_PATH = "/media/"
MEDIA_CACHE = (b"cache-control", b"private, max-age=86400, immutable")
#: What the browser is told the main script is called.
SHOWN_SCRIPT_PATH = "app.py"
#: BackMsg types a browser of an annotator has no business sending.
DROPPED_BACK_MSGS = frozenset({"load_git_info", "clear_cache", "set_run_on_save"})


class SecurityHeaders:
    """ASGI middleware: :data:`SECURITY_HEADERS` on every HTTP response (replacing any
    header of the same name the app set)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        root = str(scope.get("root_path", "") or "")
        local = path[len(root):] if root and path.startswith(root) else path
        extra = _SAME_ORIGIN if local.startswith(SAME_ORIGIN_FRAMES) else SECURITY_HEADERS
        if local.startswith(MEDIA_PATH):
            extra = (*extra, MEDIA_CACHE)
        names = {name for name, _ in extra}

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])
                           if bytes(k).lower() not in names]
                message = {**message, "headers": [*headers, *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def scrub_forward_msg(data: bytes, needle: bytes) -> bytes:
    """``data`` (a serialized ForwardMsg) with ``new_session.main_script_path`` replaced
    by :data:`SHOWN_SCRIPT_PATH` when ``needle`` (the server's app folder) is in it."""
    if needle not in data:
        return data
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    msg = ForwardMsg()
    try:
        msg.ParseFromString(data)
    except Exception:  # not ours to judge: send as it is
        return data
    if msg.WhichOneof("type") == "new_session" and msg.new_session.main_script_path:
        msg.new_session.main_script_path = SHOWN_SCRIPT_PATH
        data = msg.SerializeToString()
    if needle in data:
        LOGGER.warning("a websocket frame of type %s still names the app folder",
                       msg.WhichOneof("type"))
    return data


def dropped_back_msg(data: bytes) -> str | None:
    """The type of a BackMsg the guard drops (:data:`DROPPED_BACK_MSGS`), else None."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    msg = BackMsg()
    try:
        msg.ParseFromString(data)
    except Exception:
        return None
    kind = msg.WhichOneof("type")
    return kind if kind in DROPPED_BACK_MSGS else None


class WebsocketGuard:
    """ASGI middleware on Streamlit's websocket: :func:`scrub_forward_msg` on what is
    sent, :func:`dropped_back_msg` on what is received."""

    def __init__(self, app: ASGIApp, app_dir: str) -> None:
        self.app = app
        self.needle = app_dir.encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return

        async def guarded_send(message: Message) -> None:
            if message["type"] == "websocket.send" and message.get("bytes"):
                message = {**message, "bytes": scrub_forward_msg(message["bytes"],
                                                                  self.needle)}
            await send(message)

        async def guarded_receive() -> Message:
            while True:
                message = await receive()
                if message["type"] == "websocket.receive" and message.get("bytes"):
                    kind = dropped_back_msg(message["bytes"])
                    if kind is not None:
                        LOGGER.info("dropped a %s request from a browser", kind)
                        continue
                return message

        await self.app(scope, guarded_receive, guarded_send)


def middleware(app_dir: str) -> list[Any]:
    """The Starlette middleware list for ``st.App`` (outermost first)."""
    from starlette.middleware import Middleware

    return [Middleware(SecurityHeaders), Middleware(WebsocketGuard, app_dir=app_dir)]
