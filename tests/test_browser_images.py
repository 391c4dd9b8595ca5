"""In a real browser: every image of the annotate page carries pixels only (issue #12,
item 3).

Starts ``python -m annotation.cli serve`` on a free localhost port, on a project imported
from hostile files (tests/helpers/hostile_images.py: EXIF "OpenAI gpt-image-1", a JPEG comment and
XMP, PNG text chunks "nano-banana", ICC profiles, HTML after IEND, small images too), signs
in with the keyboard in Debian's Chromium (Playwright), opens every view of the item (the
page, the layout overlay, the enlarge dialog), and collects every image the browser
downloaded from the server's ``/media/`` URLs, as the browser received it, plus each
``<img>`` on the page fetched again. Each must be a PNG or JPEG with no trace of the
original. Reuses tests/test_browser.py's server and sign-in helpers; skipped where
``/usr/bin/chromium`` or Playwright is missing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from annotation.accounts import auth
from annotation.formats.importers import import_path
from annotation.store import Store
from tests.helpers.browser import (
    ARTIFACTS,
    PASSWORD,
    USER,
    idle,
    press,
    serving,
    shots,
    sign_in,
    sync_api,
    wait_panel,
    wait_until,
)
from tests.helpers.hostile_images import traces, write_hostile_image_bundle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

IMAGES_JS = """() => Array.from(document.images)
    .filter(i => new URL(i.src).pathname.startsWith('/media/') && i.complete
                 && i.naturalWidth > 0)
    .map(i => i.src)"""


def hostile_project(tmp_path: Path) -> Path:
    db = tmp_path / "hostile.db"
    with Store.open(db) as store:
        import_path(store, write_hostile_image_bundle(tmp_path / "bundle"))
        auth.add_user(store, USER, "annotator", PASSWORD, actor="test", allow_weak=True)
    return db


def test_every_image_the_browser_downloads_is_pixels_only(tmp_path):
    db = hostile_project(tmp_path)
    env = dict(os.environ, JUDGE_AUDIT_HOME=str(tmp_path / "home"))
    with serving(db, tmp_path, env) as port:
        received = browse(port)
    downloaded, refetched = received
    # the page's six images and the overlay and the enlarged output at least
    assert len(downloaded) >= 7, sorted(downloaded)
    assert set(refetched) <= set(downloaded)
    for url, data in {**downloaded, **refetched}.items():
        assert traces(data) == [], (url, traces(data))
    for url, data in refetched.items():
        assert data == downloaded[url]  # what the page shows is what was downloaded


def browse(port: int) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """Sign in, open every view; return ``({url: bytes the browser received},
    {url: bytes of each <img> on the page, fetched again})``."""
    responses: list[Any] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shots.CHROMIUM, args=shots.CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(30_000)
            page.on("response", lambda r: responses.append(r)
                    if urlparse(r.url).path.startswith("/media/") else None)
            try:
                page.goto(f"http://127.0.0.1:{port}/")
                sign_in(page)
                wait_until(page, lambda: idle(page) and len(page.evaluate(IMAGES_JS)) >= 6,
                           "the item's six images", timeout=60)
                refetched: dict[str, bytes] = {}

                def grab() -> set[str]:
                    """Fetch each image on the page now (Streamlit drops a run's media
                    files after the next run, so at once)."""
                    urls = set(page.evaluate(IMAGES_JS))
                    for url in urls - set(refetched):
                        again = page.request.get(url)
                        assert again.ok, (url, again.status)
                        refetched[url] = again.body()
                    return urls

                shown = grab()
                page.get_by_text("Layout guides").click()  # the overlay
                wait_until(page, lambda: idle(page) and set(page.evaluate(IMAGES_JS)) - shown,
                           "the overlaid output")
                grab()
                page.evaluate("document.activeElement && document.activeElement.blur()")
                # E is the answer panel's: it must be drawn, with its Enlarge command
                wait_panel(page, "the answer panel", commands={"enlarge": True})
                press(page, "e")  # the enlarge dialog
                wait_until(page, lambda: page.locator("[role='dialog'] img").count() >= 1
                           and page.evaluate(
                               "() => Array.from(document.querySelectorAll("
                               "'[role=\"dialog\"] img')).every(i => i.complete)"),
                           "the enlarged output")
                grab()
                downloaded = {}
                for response in responses:
                    if response.ok:
                        downloaded[response.url] = response.body()
            except BaseException:
                ARTIFACTS.mkdir(exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / "images-failure.png"), full_page=True)
                raise
        finally:
            browser.close()
    return downloaded, refetched
