"""Issue #12 in a real browser against a real ``judge-audit serve`` (items A and B).

B. Being signed in is the ``ja_session`` cookie (HttpOnly, SameSite=Strict), not the
   Streamlit session id: a reload keeps the annotator signed in on the same page; signing
   out revokes it (a reload stays signed out); a second browser context that presents only
   the admin's Streamlit session id (read from context A's websocket, as the red team read
   it, and sent the way Streamlit's own frontend resumes a session) is handed the admin's
   Streamlit session by the server and still gets nothing; the token is in no page, no URL
   and no server log.
A. An account disabled from the command line while its tab is open: the next key press
   writes nothing (the answer panel's ``POST /_ja/answers`` is refused: the panel says
   "Signed out" and keeps the answer in the browser; a reload shows the sign-in page and
   why), the next submission neither (the panel's Enter command reruns the page: the tab
   shows the sign-in page).

Debian's Chromium through Playwright, with the helpers of tests/test_browser.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from annotation.store import Store
from annotation.store import accounts as accounts_store
from annotation.work import workflow
from tests.helpers.browser import (
    NAME_FIELD,
    ROOT,
    SIGNED_IN_AS,
    idle,
    panel,
    press,
    sign_in,
    wait_until,
)
from tests.test_browser import answer_open_targets, serve_and_run, wait_next_item

pytestmark = [pytest.mark.browser, pytest.mark.slow]

def signed_in_as(page: Any) -> str | None:
    """The name the sidebar says is signed in, or None."""
    caption = page.locator(SIGNED_IN_AS)
    if not caption.count():
        return None
    return caption.first.inner_text().split("Signed in as", 1)[1].split("(")[0].strip()


def on_sign_in_page(page: Any) -> bool:
    return idle(page) and page.locator(NAME_FIELD).count() == 1 and signed_in_as(page) is None


def session_ids(page: Any, frames: list[bytes] | None = None) -> list[str]:
    """Collect the Streamlit session ids the server sends this page (its NewSession
    messages on the websocket): what the red team read from the page's traffic. Every
    frame received is also appended to ``frames``."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    found: list[str] = []

    def on_websocket(ws: Any) -> None:
        def on_frame(payload: Any) -> None:
            if isinstance(payload, bytes | bytearray):
                if frames is not None:
                    frames.append(bytes(payload))
                try:
                    msg = ForwardMsg.FromString(bytes(payload))
                except Exception:  # not a ForwardMsg: ignore
                    return
                if msg.HasField("new_session"):
                    found.append(msg.new_session.initialize.session_id)

        ws.on("framereceived", on_frame)

    page.on("websocket", on_websocket)
    return found


# The Streamlit frontend resumes a session by sending its id as the third websocket
# subprotocol ("streamlit", xsrf token, session id). Context B does just that with the
# admin's id, and nothing else of context A (no cookie).
PRESENT_SESSION_ID_JS = """(sid) => {
  const Real = window.WebSocket;
  function Hijack(url, protocols) {
    const p = Array.from(protocols || []).slice(0, 2);
    while (p.length < 2) p.push("PLACEHOLDER_AUTH_TOKEN");
    p.push(sid);
    return new Real(url, p);
  }
  Hijack.prototype = Real.prototype;
  Object.assign(Hijack, Real);
  window.WebSocket = Hijack;
}"""


def test_the_session_cookie_reload_sign_out_and_a_stolen_session_id(tmp_path):
    serve_and_run(tmp_path, lambda page, store, port: cookie_scenario(page, store, port,
                                                                      tmp_path))


def cookie_scenario(page: Any, store: Store, port: int, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{port}/"
    log = tmp_path / "serve.log"
    frames: list[bytes] = []
    ids = session_ids(page, frames)
    page.goto(url)
    sign_in(page, "admin", "demo-admin")
    assert signed_in_as(page) == "admin"
    home = page.url
    # the one-time handoff code reached this browser in its websocket frames (the element's
    # data), as designed; it is in no page, no URL and no log, and it is spent
    codes = {m.group(1).decode() for f in frames
             for m in re.finditer(rb'"code":\s*"([A-Za-z0-9_-]{43})"', f)}
    assert len(codes) == 1, codes
    code = codes.pop()
    assert code not in page.content() and code not in page.url
    assert code not in log.read_text()
    assert not store.conn.execute("SELECT 1 FROM sessions WHERE handoff_hash IS NOT NULL"
                                  " AND token_hash IS NULL AND revoked_at IS NULL"
                                  " AND user = 'admin'").fetchone()

    # 1. a second browser: only the admin's Streamlit session id, no cookie
    wait_until(page, lambda: ids, "the admin's Streamlit session id")
    stolen = ids[-1]
    other = page.context.browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        intruder = other.new_page()
        intruder.add_init_script(f"({PRESENT_SESSION_ID_JS})({stolen!r})")
        intruder.goto(url)
        # the server does hand the admin's Streamlit session to the intruder ...
        wait_until(intruder, lambda: stolen in log.read_text(), "the session id reused",
                   timeout=60)
        assert "Reconnecting to existing session" in log.read_text()
        wait_until(intruder, lambda: idle(intruder) and (
            on_sign_in_page(intruder) or signed_in_as(intruder)), "the intruder's page",
            timeout=60)
        intruder.wait_for_timeout(2000)
        # ... and the intruder still gets only the sign-in page
        assert signed_in_as(intruder) is None, "the intruder got the admin's pages"
        assert on_sign_in_page(intruder)
        assert not intruder.get_by_text("Assignment & progress").count()
        assert not [c for c in other.cookies() if c["name"] == "ja_session"]
    finally:
        other.close()

    # 2. a reload keeps the admin signed in, on the same page (the admin's tab also lost
    # its Streamlit session to the intruder's connection: the reload makes a new one)
    page.reload()
    wait_until(page, lambda: idle(page) and (on_sign_in_page(page) or signed_in_as(page)),
               "the page after the reload", timeout=60)
    page.wait_for_timeout(1000)
    assert signed_in_as(page) == "admin", "a reload signed the admin out"
    assert page.url == home and page.locator(NAME_FIELD).count() == 0

    # 3. the cookie: HttpOnly, SameSite=Strict, not readable by the page, not in the page
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert "ja_session" in cookies, cookies.keys()
    cookie = cookies["ja_session"]
    token = cookie["value"]
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    assert len(token) >= 43
    assert "ja_session" not in page.evaluate("document.cookie")
    assert token not in page.content() and token not in page.url

    # 4. sign out: revoked at once, the cookie cleared; a reload stays signed out
    page.get_by_role("button", name="Sign out").click()
    wait_until(page, lambda: on_sign_in_page(page), "the sign-in page after signing out",
               timeout=60)
    live = store.conn.execute(
        "SELECT count(*) FROM sessions WHERE user = 'admin' AND revoked_at IS NULL"
        " AND token_hash IS NOT NULL").fetchone()[0]
    assert live == 0
    wait_until(page, lambda: not [c for c in page.context.cookies()
                                  if c["name"] == "ja_session"], "the cookie cleared")
    page.reload()
    wait_until(page, lambda: on_sign_in_page(page), "signed out after the reload", timeout=60)
    page.wait_for_timeout(1500)
    assert on_sign_in_page(page)

    # 5. the token never reached a log
    assert token not in log.read_text()

    # 6. the cookie route itself: same origin only, a good code only, Secure over https
    check_cookie_route(store, port)


def post(port: int, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    """POST to the served app; (status, Set-Cookie header)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body,
                                     headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers.get("set-cookie", "")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("set-cookie", "")


def check_cookie_route(store: Store, port: int) -> None:
    from annotation.accounts import sessions

    def new_code() -> str:
        with accounts_store.writing(store, public=True) as rows:
            return sessions.create(rows, "alice", "annotator", handoff=True)

    same = {"Origin": f"http://127.0.0.1:{port}", "Content-Type": "text/plain"}
    code = new_code()
    assert post(port, "/_ja/session", code.encode(), {**same, "Origin": "https://evil.example"}
                ) == (403, "")  # cross-site: refused, and the code is not spent
    assert post(port, "/_ja/session", b"not-a-code" * 5, same) == (403, "")
    status, cookie = post(port, "/_ja/session", code.encode(),
                          {**same, "X-Forwarded-Proto": "https"})
    assert status == 204
    attributes = {a.strip().split("=")[0].lower() for a in cookie.split(";")}
    assert cookie.startswith("ja_session=") and {"httponly", "secure", "path"} <= attributes
    assert "samesite=strict" in cookie.lower()
    assert post(port, "/_ja/session", code.encode(), same) == (403, "")  # spent
    status, cleared = post(port, "/_ja/signout", b"", {**same, "Cookie": cookie.split(";")[0]})
    assert status == 204 and cleared.startswith("ja_session=")
    assert "max-age=0" in cleared.lower()  # cleared in the browser
    with pytest.raises(sessions.SignedOut):
        sessions.check(accounts_store.reading(store), cookie.split(";")[0].split("=", 1)[1])


def cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "annotation.cli", *args], env=env,
                          capture_output=True, text=True, timeout=120, check=True)


def test_an_account_disabled_from_the_cli_writes_nothing_more(tmp_path):
    serve_and_run(tmp_path, lambda page, store, port: disable_scenario(page, store, port,
                                                                       tmp_path))


def disable_scenario(page: Any, store: Store, port: int, tmp_path: Path) -> None:
    db = tmp_path / "home" / "demo.db"
    url = f"http://127.0.0.1:{port}/"

    def rows() -> tuple[int, int]:
        answers = store.conn.execute(
            "SELECT count(*) FROM annotations WHERE annotator = 'alice'").fetchone()[0]
        subs = store.conn.execute(
            "SELECT count(*) FROM submissions WHERE annotator = 'alice'").fetchone()[0]
        return answers, subs

    def begin(guidelines: bool) -> None:
        """Sign in; leave the guidelines with Enter (shown until alice has started)."""
        sign_in(page, "alice", "demo-alice")
        if guidelines:
            start = page.get_by_role("button", name="I have read the guidelines")
            wait_until(page, lambda: idle(page) and start.count() == 1,
                       "the guidelines screen")
            press(page, "Enter")

    page.goto(url)
    begin(guidelines=True)
    total = workflow.personal_progress(store, "alice")[1]

    # 1. one answer, then the account is disabled: the next key press writes nothing
    output_id, _ = wait_next_item(page, store, [], total)
    answer_open_targets(page, store, output_id, 0, limit=1)
    before = rows()
    cli("user", "disable", "alice", "--db", str(db))
    press(page, "y")
    wait_until(page, lambda: on_sign_in_page(page) or rows() != before
               or (panel(page) or {}).get("connection") == "signed_out",
               "the panel signed out, the sign-in page, or a write", timeout=60)
    page.wait_for_timeout(1000)
    assert rows() == before, "the disabled account's tab wrote an answer"
    # the panel drops the answer (the account was disabled: it must not be written after a
    # later re-activation) and the page goes to the sign-in page by itself, saying why
    wait_until(page, lambda: on_sign_in_page(page), "the sign-in page", timeout=60)
    assert page.get_by_text("account was disabled").count() == 1
    kept = page.evaluate("""() => Object.keys(localStorage).filter(k => k.startsWith(
        'ja-outbox-v1:')).map(k => JSON.parse(localStorage.getItem(k)).length)""")
    assert sum(kept) == 0, kept
    page.wait_for_timeout(1500)
    assert rows() == before

    # 2. enabled again and signed in: a complete item, disabled, Enter submits nothing
    cli("user", "enable", "alice", "--db", str(db))
    begin(guidelines=False)  # alice has started: no guidelines again
    # (the answer pressed while disabled is not written now either)
    output_id, _ = wait_next_item(page, store, [], total)
    answer_open_targets(page, store, output_id, 0)
    before = rows()
    cli("user", "disable", "alice", "--db", str(db))
    press(page, "Enter")
    wait_until(page, lambda: on_sign_in_page(page) or rows() != before,
               "the sign-in page, or a write", timeout=60)
    page.wait_for_timeout(1000)
    assert rows() == before, "the disabled account's tab submitted"
    wait_until(page, lambda: on_sign_in_page(page), "the sign-in page", timeout=60)
    assert not workflow.is_submitted(store, "alice", output_id)

