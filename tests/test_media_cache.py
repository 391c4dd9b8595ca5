"""Media files (named by their bytes) may be kept by the browser, so moving to the next item
does not fetch again an image the browser already has (issue #14); nothing else may."""

from __future__ import annotations

import asyncio

from annotation.ui.served import MEDIA_CACHE, SecurityHeaders


def headers_for(path: str) -> dict[bytes, bytes]:
    sent: list[dict] = []

    async def app(scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"cache-control", b"no-cache")]})
        await send({"type": "http.response.body", "body": b"x"})

    async def send(message) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {"type": "http.request"}

    asyncio.run(SecurityHeaders(app)({"type": "http", "path": path}, receive, send))
    return dict(sent[0]["headers"])


def test_media_files_are_kept_by_the_browser_for_this_user_only():
    media = headers_for("/media/3f2a9c0d1e.jpg")
    assert media[b"cache-control"] == MEDIA_CACHE[1] == b"private, max-age=86400, immutable"
    assert media[b"x-content-type-options"] == b"nosniff"


def test_pages_and_answers_are_not_cached():
    for path in ("/", "/_ja/answers", "/_stcore/health", "/annotate"):
        assert headers_for(path).get(b"cache-control") in (None, b"no-cache"), path
