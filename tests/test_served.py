"""Issue #12 in a real browser against a real ``judge-audit serve`` (items 1, 2, 4 and 5).

One server for the module: the demo project (output ids ``<task>/<generator>``, three
judges) with URLs and an e-mail address written into every text the pages show (project
name, guidelines, questions, criterion labels and rubrics, image labels, instructions),
served by ``python -m annotation.cli serve --db DB``. Debian's Chromium, driven by
Playwright, signs in as the annotator ``alice`` and records every websocket frame and the
DOM's attributes:

* item 1: no frame, element id, key or data attribute holds a generator, a judge, an output
  id or a sha256 / sha1 / md5 prefix of one (``tests/helpers/exposure.py``);
* item 2: no frame holds the server's folders (the app's, the project's) or a traceback;
  a page error and a callback error (made on purpose by a ``sitecustomize`` that the test
  puts on the server's ``PYTHONPATH``: a library call raises with a path in its message
  while a marker file exists; the callback is the answer panel's command, E) show
  "Something went wrong (incident ...)" and nothing else, and the server log has the
  incident id with the traceback; an error behind the answer panel's ``POST /_ja/answers``
  sends the browser no path and no traceback, the panel keeps the answer ("saving…") and
  delivers it once the error is gone;
* item 4: no ``<a>`` element is made from data text on the sign-in, annotate (guidelines,
  questions, criterion labels, rubric: the answer panel's list and card), verification
  and tree pages;
* item 5: the server listens on 127.0.0.1 only (its sockets, read from ``/proc/net``) and
  sends the security headers on ``/``, ``/_stcore/health``, a static file and a media URL.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.browser import (
    idle,
    panel,
    press,
    shots,
    sign_in,
    stop,
    sync_api,
    wait_panel,
    wait_until,
)
from tests.helpers.exposure import leaks, secrets_of

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
EVIL = " See https://evil.example/x, HTTP://Evil.Example/y, www.evil.example or bad@evil.example."
FAKE_PATH = "/srv/secret-server-folder/project_media/ab/abcdef.png"
SECURITY_HEADERS = {"x-frame-options": "DENY",
                    "content-security-policy": "frame-ancestors 'none'",
                    "x-content-type-options": "nosniff", "referrer-policy": "no-referrer"}

SITECUSTOMIZE = f'''
import os
from pathlib import Path

_MARKER = Path(os.environ["JA_TEST_MARKERS"])


def _patch():
    from annotation.work import workflow

    progress, answer = workflow.overall_progress, workflow.give_answer
    command = workflow.AnnotationSession.panel_command

    def overall_progress(*args, **kwargs):
        if (_MARKER / "page").exists():
            raise FileNotFoundError(2, "No such file or directory", {FAKE_PATH!r})
        return progress(*args, **kwargs)

    def give_answer(*args, **kwargs):  # behind POST /_ja/answers
        if (_MARKER / "answer").exists():
            raise IsADirectoryError(21, "Is a directory", {FAKE_PATH!r})
        return answer(*args, **kwargs)

    def panel_command(self, *args, **kwargs):  # the panel's command callback
        if (_MARKER / "callback").exists():
            raise PermissionError(13, "Permission denied", {FAKE_PATH!r})
        return command(self, *args, **kwargs)

    workflow.overall_progress, workflow.give_answer = overall_progress, give_answer
    workflow.AnnotationSession.panel_command = panel_command


_patch()
'''


def add_urls(db: Path) -> None:
    """Write :data:`EVIL` into every text from the data that the pages show."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE project SET value = value || ? WHERE key IN ('name', "
                     "'guidelines')", [EVIL])
        conn.execute("UPDATE questions SET text = text || ?", [EVIL])
        conn.execute("UPDATE criteria SET label = label || ?, rubric = coalesce(rubric, '') "
                     "|| ?", [EVIL, EVIL])
        conn.execute("UPDATE images SET label = coalesce(label, '') || ?", [EVIL])
        conn.execute("UPDATE tasks SET instruction = instruction || ?", [EVIL])
    conn.close()


class Server:
    def __init__(self, tmp: Path, make_demo_db: Callable[[Path], Path]) -> None:
        self.db = make_demo_db(tmp / "study.db")
        add_urls(self.db)
        custom = tmp / "custom"
        custom.mkdir()
        (custom / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        self.markers = tmp / "markers"
        self.markers.mkdir()
        self.port = shots.free_port()
        self.log_path = tmp / "serve.log"
        env = dict(os.environ, JA_TEST_MARKERS=str(self.markers),
                   PYTHONPATH=os.pathsep.join([str(custom), str(ROOT),
                                               os.environ.get("PYTHONPATH", "")]))
        env.pop("JUDGE_AUDIT_DB", None)
        self.log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "annotation.cli", "serve", "--db", str(self.db),
             "--port", str(self.port)], env=env, cwd=tmp, stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True)
        self.url = f"http://127.0.0.1:{self.port}"

    def log_text(self) -> str:
        self.log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")


@pytest.fixture(scope="module")
def server(tmp_path_factory, make_demo_db):
    served = Server(tmp_path_factory.mktemp("served"), make_demo_db)
    try:
        shots.wait_healthy(served.port, timeout=90)
        yield served
    except BaseException:
        sys.stderr.write(served.log_text()[-4000:])
        raise
    finally:
        stop(served.process)
        served.log.close()


class Recorder:
    """Every websocket frame a page receives (and sends), as text."""

    def __init__(self, page: Any) -> None:
        self.received: list[str] = []
        self.sent: list[str] = []
        page.on("websocket", self._attach)

    def _attach(self, ws: Any) -> None:
        ws.on("framereceived", lambda payload: self.received.append(_text(payload)))
        ws.on("framesent", lambda payload: self.sent.append(_text(payload)))


def _text(payload: Any) -> str:
    return payload.decode("latin-1") if isinstance(payload, bytes) else str(payload)


DOM_ATTRIBUTES_JS = """() => Array.from(document.querySelectorAll('*')).flatMap(
    e => Array.from(e.attributes).map(a => a.name + '=' + a.value))"""
DATA_LINKS_JS = """() => Array.from(document.querySelectorAll('a')).map(
    a => [a.getAttribute('href') || '', a.innerText]).filter(
    ([href, text]) => /evil/i.test(href) || /evil/i.test(text))"""


def browse(server: Server, scenario) -> None:
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shots.CHROMIUM, args=shots.CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(30_000)
            recorder = Recorder(page)
            try:
                scenario(page, recorder)
            except BaseException:
                shots_dir = ROOT / "tests" / "artifacts"
                shots_dir.mkdir(exist_ok=True)
                page.screenshot(path=str(shots_dir / "served-failure.png"), full_page=True)
                sys.stderr.write(server.log_text()[-4000:])
                raise
        finally:
            browser.close()


def settled(page: Any, text: str) -> bool:
    return idle(page) and page.get_by_text(text, exact=False).count() > 0


def open_page(page: Any, title: str, expect: str) -> None:
    page.get_by_role("link", name=title, exact=True).click()
    page.evaluate("document.activeElement.blur()")
    wait_until(page, lambda: settled(page, expect), f"the page {title!r}", timeout=40)
    page.wait_for_timeout(800)  # the last frames of the run


def without_app_code(frames: str) -> str:
    """``frames`` without the answer panel's own code (its JavaScript and CSS, sent with
    the element: the app's code, which names its Python modules in a comment)."""
    for name in ("answer_panel.js", "answer_panel.css"):
        code = (ROOT / "annotation" / "ui" / name).read_text("utf-8")
        frames = frames.replace(code.encode("utf-8").decode("latin-1"), "")
    return frames


def server_folders(server: Server) -> list[str]:
    return [str(ROOT), str(server.db.parent), str(Path.home()), FAKE_PATH]


# ------------------------------------------------------------------ item 5: exposure
def listening(port: int) -> set[str]:
    """The local addresses of the listening TCP sockets on ``port`` (IPv4 and IPv6)."""
    found = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port and len(address) == width:
                if width == 8:
                    found.add(".".join(str(b) for b in reversed(bytes.fromhex(address))))
                else:
                    found.add(address)
    return found


def test_serve_listens_on_loopback_only(server):
    assert listening(server.port) == {"127.0.0.1"}


def headers_of(url: str) -> dict[str, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        return {k.lower(): v for k, v in response.getheaders()}


def assert_security_headers(url: str) -> None:
    headers = headers_of(url)
    for name, value in SECURITY_HEADERS.items():
        assert headers.get(name) == value, (url, name, headers.get(name))


def test_security_headers_on_pages_health_and_static_files(server):
    for path in ("/", "/_stcore/health", "/_stcore/host-config", "/favicon.png"):
        assert_security_headers(server.url + path)
    script = re.search(r'src="(\./static/js/[^"]+\.js)"',
                       urllib.request.urlopen(server.url + "/", timeout=10).read().decode())
    assert script
    assert_security_headers(server.url + "/" + script.group(1).removeprefix("./"))


# ------------------------------------------------------------------ items 1, 2, 4, 5
def test_an_annotators_browser_gets_no_secret_no_path_and_no_link(server):
    secrets = secrets_of(server.db)
    assert {"qwen-image-edit", "gpt-5"} <= set(secrets)

    def scenario(page: Any, recorder: Recorder) -> None:
        page.goto(server.url + "/")
        page.locator("input[aria-label='Name']").wait_for(timeout=60_000)
        wait_until(page, lambda: settled(page, "evil.example"), "the project name")
        assert page.evaluate(DATA_LINKS_JS) == [], "sign-in page"
        sign_in(page)
        start = page.get_by_role("button", name="I have read the guidelines")
        wait_until(page, lambda: idle(page) and start.count() == 1, "the guidelines")
        assert "bad@evil.example" in shown_text(page)  # shown, as text
        assert page.evaluate(DATA_LINKS_JS) == [], "guidelines"
        press(page, "Enter")
        wait_panel(page, "an item", commands={"submit": False})
        page.wait_for_timeout(800)
        # the panel's list holds every question and criterion label: shown, as text
        assert "www.evil.example" in page.locator(".ja-panel").inner_text()
        assert page.evaluate(DATA_LINKS_JS) == [], "annotate page: questions, labels"
        # a criterion: J moves the panel's cursor to the rating card with its rubric
        for _ in range(60):
            if panel(page)["kind"] == "c":
                break
            press(page, "j")
        wait_until(page, lambda: panel(page)["kind"] == "c"
                   and page.locator(".ja-card .ja-rubric").count() == 1, "the rubric")
        page.wait_for_timeout(800)
        assert "evil.example" in page.locator(".ja-card .ja-rubric").inner_text()
        assert page.evaluate(DATA_LINKS_JS) == [], "rating card and rubric"
        media = page.evaluate("""() => Array.from(document.querySelectorAll('img'))
            .map(i => i.src).filter(s => s.includes('/media/'))""")
        assert media
        assert_security_headers(media[0])
        annotate_dom = page.evaluate(DOM_ATTRIBUTES_JS)

        open_page(page, "Verify conflict labels", "Verify conflicts")
        assert page.evaluate(DATA_LINKS_JS) == [], "verification page"
        verify_dom = page.evaluate(DOM_ATTRIBUTES_JS)
        open_page(page, "Review diagnostic trees", "Diagnostic tree")
        assert page.evaluate(DATA_LINKS_JS) == [], "tree page"
        tree_dom = page.evaluate(DOM_ATTRIBUTES_JS)

        # item 1: frames and DOM (ids, keys, data attributes) name no generator or judge
        assert recorder.received and recorder.sent
        assert leaks(annotate_dom + verify_dom + tree_dom, secrets) == []
        assert leaks(recorder.received + recorder.sent, secrets) == []
        # item 2: no folder of the server, no traceback
        frames = "\n".join(recorder.received)
        assert [f for f in server_folders(server) if f in frames] == []
        assert "Traceback" not in frames
        assert ".py" not in without_app_code(frames).replace("app.py", "")

    browse(server, scenario)


def answers_of(db: Path) -> int:
    """How many answer rows alice has in the served project."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT count(*) FROM annotations WHERE annotator = 'alice'"
                            ).fetchone()[0]
    finally:
        conn.close()


def test_errors_show_an_incident_id_and_log_the_traceback(server):
    def scenario(page: Any, recorder: Recorder) -> None:
        deliveries: list[Any] = []
        page.on("response", lambda r: deliveries.append(r)
                if "/_ja/answers" in r.url else None)
        page.goto(server.url + "/")
        sign_in(page)
        past_guidelines(page)
        wait_panel(page, "an item", commands={"submit": False}, pending=0)
        # an error behind the answer route: the browser gets no detail, the answer waits
        before = answers_of(server.db)
        (server.markers / "answer").touch()
        try:
            press(page, "y")
            wait_until(page, lambda: [r for r in deliveries if r.status >= 500],
                       "a delivery the server failed")
            state = wait_panel(page, "the answer kept in the browser", pending=1,
                               connection="server_error")
            assert page.locator(".ja-item .ja-pending").count() == 1  # "saving…"
            assert answers_of(server.db) == before
            failed = [r.text() for r in deliveries if r.status >= 500]
        finally:
            (server.markers / "answer").unlink()
        assert state["status"].startswith("The server had an error"), state["status"]
        route_incidents = set()
        for body in failed:
            assert FAKE_PATH not in body and "Traceback" not in body, body
            assert "IsADirectoryError" not in body and ".py" not in body, body
            route_incidents.add(json.loads(body)["incident"])  # said to the annotator
        wait_panel(page, "the answer delivered once the error is gone", pending=0,
                   connection="ok", status="All answers saved", timeout=30)
        assert answers_of(server.db) == before + 1
        # an error in a widget callback (the panel's command, E): the server's handler
        (server.markers / "callback").touch()
        try:
            press(page, "e")
            wait_until(page, lambda: settled(page, "Something went wrong"),
                       "the incident message of the callback")
            callback = incident_ids(page)
        finally:
            (server.markers / "callback").unlink()
        (ROOT / "tests" / "artifacts").mkdir(exist_ok=True)
        page.screenshot(path=str(ROOT / "tests" / "artifacts" / "incident-callback.png"))
        # an error in the page's own code: caught by the page guard of app.py
        (server.markers / "page").touch()
        try:
            page.reload()  # the session cookie keeps alice signed in across the reload
            wait_until(page, lambda: settled(page, "Something went wrong")
                       or page.get_by_role("button", name="I have read the guidelines")
                       .count() == 1, "the page after the reload")
            if not settled(page, "Something went wrong"):
                past_guidelines(page)
            wait_until(page, lambda: settled(page, "Something went wrong"),
                       "the incident message of the page")
        finally:
            (server.markers / "page").unlink()
        on_page = incident_ids(page)
        (ROOT / "tests" / "artifacts").mkdir(exist_ok=True)
        page.screenshot(path=str(ROOT / "tests" / "artifacts" / "incident.png"))
        page.wait_for_timeout(800)
        frames = "\n".join(recorder.received)
        assert [f for f in server_folders(server) if f in frames] == []
        assert "Traceback" not in frames and "FileNotFoundError" not in frames
        assert "PermissionError" not in frames and "IsADirectoryError" not in frames
        log = server.log_text()
        # the route's error: in the log with its traceback and the path, on the server only
        assert re.search(r"Traceback \(most recent call last\):\n(?:  .*\n)+"
                         r"IsADirectoryError: .*" + re.escape(FAKE_PATH), log)
        for incident, error in ((callback, "PermissionError"), (on_page, "FileNotFoundError"),
                                ([sorted(route_incidents)[0]], "IsADirectoryError")):
            assert len(incident) == 1
            entry = log.split(f"incident {incident[0]}: ", 1)[1][:3000]
            assert entry.startswith(error) and "Traceback" in entry and FAKE_PATH in entry

    browse(server, scenario)


def past_guidelines(page: Any) -> None:
    """Leave the guidelines screen (shown to a new session of alice) with Enter."""
    start = page.get_by_role("button", name="I have read the guidelines")
    wait_until(page, lambda: idle(page) and start.count() == 1, "the guidelines")
    press(page, "Enter")
    wait_until(page, lambda: idle(page) and start.count() == 0, "the guidelines left")


def shown_text(page: Any) -> str:
    """What the main area reads (the invisible word joiners removed)."""
    return page.locator("[data-testid='stMain']").inner_text().replace("\u2060", "")


def incident_ids(page: Any) -> list[str]:
    text = page.locator("[data-testid='stMain']").inner_text()
    return re.findall(r"Something went wrong \(incident ([0-9A-F]{8})\)", text)
