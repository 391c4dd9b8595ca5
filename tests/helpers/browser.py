"""Playwright helpers shared by the browser tests: the screenshot script's helpers, waiting
for the page, key presses, the one sign-in, stopping ``judge-audit serve``.

Importing this module skips the importing test module when ``/usr/bin/chromium``
(``apt-get install chromium``) or Playwright is missing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT

ARTIFACTS = ROOT / "tests" / "artifacts"

USER, PASSWORD = "alice", "demo-alice"
STEP_TIMEOUT = 20.0  # seconds for one key press to reach the database and the page
NAME_FIELD = "input[aria-label='Name']"
PASSWORD_FIELD = "input[type='password']"
SIGNED_IN_AS = "[data-testid='stSidebar'] >> text=Signed in as"
# A shortcut is ignored while an input has the focus: the page must leave it on the body.
FOCUS_JS = "() => document.activeElement ? document.activeElement.tagName : 'BODY'"


def _load_screenshot_helpers() -> Any:
    """scripts/screenshot.py (not a package): free_port, wait_healthy, wait_rendered, ..."""
    spec = importlib.util.spec_from_file_location(
        "judge_audit_screenshot", ROOT / "scripts" / "screenshot.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


shots = _load_screenshot_helpers()
if not os.access(shots.CHROMIUM, os.X_OK):
    pytest.skip(
        f"no Chromium at {shots.CHROMIUM} (apt-get install chromium)", allow_module_level=True
    )
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="Playwright is not installed (pip install -e '.[test]')"
)


def wait_until(page: Any, check: Callable[[], Any], what: str,
               timeout: float = STEP_TIMEOUT) -> Any:
    """Poll ``check`` (every 100 ms, letting the page run) until it is truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        page.wait_for_timeout(100)


def idle(page: Any) -> bool:
    """No status widget, no skeleton, something drawn. Not proof that the run is over (a
    short run shows no status widget): callers also wait for what the run must draw."""
    return bool(page.evaluate(shots.RENDERED_JS))


def press(page: Any, key: str) -> None:
    """One shortcut key. Shortcuts are ignored while an input has the focus; the pages
    never leave it in one (the sign-in form disappears once signed in), so a focused input
    here is a product problem to report, not to blur away."""
    assert page.evaluate(FOCUS_JS) == "BODY", "the focus sits in an input: shortcuts are dead"
    page.keyboard.press(key)


def sign_in(page: Any, name: str = USER, password: str = PASSWORD) -> None:
    """Sign in on the sign-in page with the keyboard, then wait for the signed-in menu and
    the first page.

    The only non-keyboard action (once per sign-in) is putting the caret in the Name field
    (page.focus); then type, Tab, type, Enter.
    """
    page.locator(NAME_FIELD).wait_for(timeout=60_000)
    wait_until(page, lambda: idle(page), "the sign-in page", timeout=60)
    page.focus(NAME_FIELD)
    page.keyboard.type(name)
    page.keyboard.press("Tab")
    page.keyboard.type(password)
    # On a loaded machine a late redraw of the form can swallow the typed password (seen
    # once in a full run: name kept, password empty). Check before Enter, retype if so.
    field = page.locator(PASSWORD_FIELD)
    if field.input_value() != password:
        field.focus()
        page.keyboard.press("Control+A")
        page.keyboard.type(password)
    assert page.locator(NAME_FIELD).input_value() == name
    assert field.input_value() == password
    page.keyboard.press("Enter")
    page.wait_for_selector(SIGNED_IN_AS, timeout=60_000)
    wait_until(page, lambda: idle(page), "the first page after signing in", timeout=60)


def stop(server: subprocess.Popen) -> None:
    """Stop judge-audit serve and its streamlit child: the process group the test made."""
    group = server.pid
    for sig, grace in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            server.poll()
            try:
                os.killpg(group, 0)  # anyone left in the group?
            except ProcessLookupError:
                return
            time.sleep(0.1)
    server.wait(timeout=10)


# ------------------------------------------------------------------ the answer panel
# The pages' answers and commands are typed into the answer panel (annotation/ui/
# answer_panel.js): drawn inline in the page, keys handled by its window keydown listener,
# each answer POSTed to /_ja/answers. Its root carries its state as data attributes.
PANEL = ".ja-panel[data-visit]"
PANEL_JS = """() => {
  const p = document.querySelector('.ja-panel[data-visit]');
  if (!p) return null;
  const words = (e) => e ? e.textContent.replace(/\\s+/g, ' ').trim() : null;
  return {
    visit: p.dataset.visit, pending: Number(p.dataset.pending),
    connection: p.dataset.connection, kind: p.dataset.currentKind,
    cursor: Number(p.dataset.cursor), ready: p.dataset.ready === '1',
    command: p.dataset.command,
    here: Array.from(p.querySelectorAll('.ja-item.ja-here .ja-item-text'))
      .map(e => words(e).replace(/^▶\\s*/, '')),
    question: words(p.querySelector('.ja-card .ja-question')),
    status: words(p.querySelector('.ja-status')),
    commands: Object.fromEntries(Array.from(
      p.querySelectorAll('button.ja-option[data-command]'))
      .map(b => [b.dataset.command, !b.disabled])),
  };
}"""


def panel(page: Any) -> dict[str, Any] | None:
    """What the answer panel shows now, None before it is drawn: ``visit``, ``pending``
    (answers not acknowledged yet), ``connection``, ``kind`` of the current target,
    ``cursor``, ``ready`` (can submit), ``command`` (in progress), ``here`` (the "▶"
    marked list entries, the marker removed), ``question`` (the current target's text),
    ``status`` (the status line) and ``commands`` ({name: enabled})."""
    return page.evaluate(PANEL_JS)


def panel_shows(page: Any, *, other_than: str | None = None,
                commands: dict[str, bool] | None = None, **expected: Any) -> dict | None:
    """The panel's state when the page is idle, the panel is drawn on a visit other than
    ``other_than``, its ``commands`` include the ones given (with that enabled state) and
    every other ``expected`` field has its value; else None."""
    if not idle(page):
        return None
    state = panel(page)
    if state is None or (other_than is not None and state["visit"] == other_than):
        return None
    if commands and any(state["commands"].get(k) != v for k, v in commands.items()):
        return None
    if any(state.get(k) != v for k, v in expected.items()):
        return None
    return state


def wait_panel(page: Any, what: str, timeout: float = STEP_TIMEOUT,
               **expected: Any) -> dict[str, Any]:
    """Wait until :func:`panel_shows` (same arguments); its state."""
    return wait_until(page, lambda: panel_shows(page, **expected), what, timeout=timeout)


@contextlib.contextmanager
def serving(db: Path, folder: Path, env: dict[str, str] | None = None) -> Iterator[int]:
    """``judge-audit serve --db db`` on a free port (its log in ``folder/serve.log``, its
    own process group, stopped on leaving); yields the port. On an error inside, the end
    of the server's log is printed."""
    port = shots.free_port()
    env = dict(os.environ if env is None else env)
    env.pop("JUDGE_AUDIT_DB", None)
    log_path = folder / "serve.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "annotation.cli", "serve", "--db", str(db), "--port",
             str(port)], env=env, cwd=folder, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            shots.wait_healthy(port, timeout=60)
            yield port
        except BaseException:
            log.flush()
            sys.stderr.write(log_path.read_text()[-4000:])
            raise
        finally:
            stop(server)
