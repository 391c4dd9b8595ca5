"""End to end in a real browser: an annotator signs in and annotates with the keyboard only.

Starts ``judge-audit serve`` (the demo project, built fresh in a temporary
``$JUDGE_AUDIT_HOME``) on a free localhost port and drives it with Debian's Chromium
through Playwright. Alice (an annotator with no answers yet) signs in, leaves the
guidelines with Enter, completes two items with Y / N and digit keys then Enter, starts
a third, reloads the page and must find the same item with the cursor on the next open
question, still signed in (the session cookie). The keys go to the answer panel
(annotation/ui/answer_panel.js, drawn inline in the page: ``.ja-panel``), which shows each
answer at once and sends it to ``POST /_ja/answers``. Every key press is checked against
the project database, which the test reads with its own connection, and against the
panel (the "▶" on the next open target, every answer acknowledged).

Skipped when ``/usr/bin/chromium`` (``apt-get install chromium``) or Playwright is missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from annotation.store import Store
from annotation.work import workflow
from annotation.work.workflow import AnnotationSession
from tests.helpers.browser import (  # skips this module without Chromium or Playwright
    ARTIFACTS,
    USER,
    idle,
    panel,
    panel_shows,
    press,
    shots,
    sign_in,
    stop,
    sync_api,
    wait_panel,
    wait_until,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SAVED = "All answers saved"  # the panel's status line once every answer is acknowledged
# The header's task id, as shown.
HEADER_JS = """() => Array.from(document.querySelectorAll(
        '[data-testid="stMainBlockContainer"] h3'))
    .map(e => e.innerText.trim()).filter(t => t.startsWith('Task '))"""


def shows(page: Any, *, pointer: str | None = None, task: str | None = None,
          progress: str | None = None, can_submit: bool | None = None,
          other_than: str | None = None) -> bool:
    """True when the page is idle, its answer panel is drawn (on a visit other than
    ``other_than``) with every answer acknowledged, and it shows exactly what is asked:
    the "▶" on ``pointer`` (the panel's list and its large card), the task header, the
    progress text, the panel's Submit button enabled or not."""
    state = panel_shows(page, other_than=other_than, pending=0, status=SAVED)
    if state is None:
        return False
    if pointer is not None and (state["here"] != [pointer] or state["question"] != pointer):
        return False
    if task is not None and page.evaluate(HEADER_JS) != [f"Task {task}"]:
        return False
    if progress is not None and not page.get_by_text(progress, exact=False).count():
        return False
    return can_submit is None or (state["commands"].get("submit") is can_submit
                                  and state["ready"] is can_submit)


def reader(store: Store, output_id: str) -> AnnotationSession:
    """A read-only view of alice's item as the database holds it now: with ``output_id`` in
    its state the session opens, reserves and writes nothing. Make a new one after every
    change made by the app (a session may keep what it read until it writes itself)."""
    return AnnotationSession(store, USER, {"annotator": USER, "output_id": output_id})


def label(session: AnnotationSession, target: Any) -> str:
    """What the checklist shows for a target: a question's text or a criterion's label."""
    if target.is_question:
        text = next(q.text for q in session.item.questions if q.question_id == target.key)
    else:
        text = next(c.label for c in session.item.criteria if c.name == target.key)
    return " ".join(text.split())


def reserved_item(store: Store) -> str | None:
    """The item alice holds now (the app reserves it when it opens it)."""
    row = store.conn.execute(
        "SELECT output_id FROM reservations WHERE annotator = ?", [USER]
    ).fetchone()
    return row[0] if row else None


def given(store: Store, output_id: str) -> dict[str, Any]:
    """Alice's current answers on one item, from the database: {question or criterion: v}."""
    df = store.annotations_df()
    df = df[(df.annotator == USER) & (df.output_id == output_id)]
    return {
        (r.question_id if isinstance(r.question_id, str) else r.criterion):
        (r.answer if isinstance(r.question_id, str) else float(r.score))
        for r in df.itertuples()
    }


def answer_open_targets(page: Any, store: Store, output_id: str, item_no: int,
                        limit: int | None = None) -> dict[str, Any]:
    """Answer the item's open targets in order with Y / N and digits; return what was given.

    After each key: the database has the answer, and the panel shows it acknowledged and
    the "▶" on the next open target (or, after the last one, an enabled Submit button).
    """
    pressed: dict[str, Any] = {}
    while ((open_now := reader(store, output_id).remaining())
           and (limit is None or len(pressed) < limit)):
        target = open_now[0]
        n = len(pressed)
        if target.is_question:
            # "n" on the first question of each item (it gates its dependents, if any)
            key = "n" if n % 3 == 0 else "y"
            value: Any = {"y": "yes", "n": "no"}[key]
        else:
            score = (item_no * 3 + n) % 10 + 1  # 1..10; 10 is the "0" key
            key, value = ("0" if score == 10 else str(score)), float(score)
        press(page, key)
        pressed[target.key] = value
        wait_until(page, lambda k=target.key, v=value: given(store, output_id).get(k) == v,
                   f"{target.key} = {value!r} in the database")
        now = reader(store, output_id)
        if after := now.remaining():
            expected = label(now, after[0])
            wait_until(page, lambda e=expected: shows(page, pointer=e, can_submit=False),
                       f"the cursor on {expected!r}")
        else:
            wait_until(page, lambda: shows(page, can_submit=True), "an enabled Submit button")
    return pressed


def serve_and_run(tmp_path: Path, scenario: Callable[[Any, Store, int], None]) -> None:
    """Start ``judge-audit serve`` on the demo project and run ``scenario(page, store, port)``
    in Chromium; on failure keep a screenshot in tests/artifacts and print the server log."""
    home = tmp_path / "home"
    port = shots.free_port()
    env = dict(os.environ, JUDGE_AUDIT_HOME=str(home))
    env.pop("JUDGE_AUDIT_DB", None)
    log = (tmp_path / "serve.log").open("w")
    # judge-audit serve runs streamlit as its child: a session of its own lets the test stop
    # both (terminating judge-audit alone would leave streamlit running).
    server = subprocess.Popen(
        [sys.executable, "-m", "annotation.cli", "serve", "--port", str(port)],
        env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        shots.wait_healthy(port, timeout=60)
        store = Store.open(home / "demo.db", migrate=False)
        try:
            with sync_api.sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=shots.CHROMIUM,
                                             args=shots.CHROMIUM_ARGS)
                try:
                    page = browser.new_page(viewport={"width": 1280, "height": 800})
                    page.set_default_timeout(30_000)
                    try:
                        scenario(page, store, port)
                    except BaseException:
                        ARTIFACTS.mkdir(exist_ok=True)
                        page.screenshot(path=str(ARTIFACTS / "failure.png"), full_page=True)
                        raise
                finally:
                    browser.close()
        finally:
            store.close()
    except BaseException:
        log.flush()
        sys.stderr.write((tmp_path / "serve.log").read_text()[-4000:])
        raise
    finally:
        stop(server)
        log.close()


def test_annotator_works_with_the_keyboard_only(tmp_path):
    serve_and_run(tmp_path, run_scenario)


def test_verifier_confirms_agrees_disagrees_and_submits_with_keys(tmp_path):
    serve_and_run(tmp_path, verify_scenario)


def verify_scenario(page: Any, store: Store, port: int) -> None:
    """Blind mode: Enter confirms the reading (the automatic label appears), A agrees on
    the marked type, D disagrees on the next, Enter submits (and the next task opens);
    each step in the database."""
    from annotation.work import verification as vf

    page.goto(f"http://127.0.0.1:{port}/")
    sign_in(page)
    page.get_by_role("link", name="Verify conflict labels", exact=True).click()
    page.evaluate("document.activeElement.blur()")  # the clicked menu link keeps the focus
    task = wait_until(page, lambda: store.conn.execute(
        "SELECT task_id FROM verify_reservations WHERE verifier = ?", [USER]).fetchone(),
        "a task reserved for alice")[0]
    item = vf.load_verify_item(store, task)
    # the blind first step: the panel offers "Confirm my reading" (Enter), no verdict
    wait_panel(page, "the blind first step", commands={"confirm": True}, kind="")
    assert not page.get_by_text("Automatic label").count()
    press(page, "Enter")
    wait_until(page, lambda: vf.readings_complete(item, vf.my_readings(store, USER, task)),
               "the confirmed reading in the database")
    wait_until(page, lambda: idle(page) and page.get_by_text("Automatic label").count(),
               "the automatic label shown")
    for n, check in enumerate(item.checks):
        key = "a" if n % 2 == 0 else "d"
        title = vf.CONFLICT_TITLES[check.conflict]
        wait_panel(page, f"the {check.conflict} type marked", kind="v", here=[title],
                   question=title, commands={"submit": False})
        press(page, key)
        wait_until(page, lambda c=check.conflict: c in vf.my_verdicts(store, USER, task),
                   f"the {check.conflict} verdict in the database")
        verdict = vf.my_verdicts(store, USER, task)[check.conflict]
        if check.automatic is not None:
            assert verdict.agrees is (key == "a")
        else:  # no automatic label: A says conflict, D no conflict
            assert bool(verdict.label) is (key == "a")
    visit = wait_panel(page, "an enabled Submit button", pending=0, status=SAVED, ready=True,
                       commands={"submit": True})["visit"]
    press(page, "Enter")
    wait_until(page, lambda: vf.is_submitted(store, USER, task), f"the submission of {task}")
    wait_until(page, lambda: panel_shows(page, other_than=visit)
               or (idle(page) and page.get_by_text("All done").count()),
               "the next task (or the end) after the submission")


def wait_next_item(page: Any, store: Store, done: list[str], total: int,
                   after_visit: str | None = None) -> tuple[str, AnnotationSession]:
    """The item the app opened after ``done``, once the page shows all of it: its task, the
    progress, and the answer panel on a new visit (other than ``after_visit``, the one the
    last item was answered on: keys pressed before the new panel is drawn would answer
    the old item) with the cursor on the first open target and a disabled Submit."""
    output_id = wait_until(
        page, lambda: (o := reserved_item(store)) not in (None, *done) and o,
        f"item {len(done) + 1} reserved for alice")
    session = reader(store, output_id)

    def first() -> str:
        """The first open target, as the database has it now."""
        now = reader(store, output_id)
        return label(now, now.remaining()[0])

    wait_until(
        page,
        lambda: shows(page, pointer=first(), task=session.item.task_id,
                      progress=f"Your progress: {len(done)} of {total} items",
                      can_submit=False, other_than=after_visit),
        f"item {output_id} with the cursor on its first open target",
    )
    return output_id, reader(store, output_id)


def run_scenario(page: Any, store: Store, port: int) -> None:
    assert workflow.personal_progress(store, USER)[0] == 0, "alice must start with nothing"
    page.goto(f"http://127.0.0.1:{port}/")
    sign_in(page)

    # first visit: the guidelines, left with Enter
    start = page.get_by_role("button", name="I have read the guidelines")
    wait_until(page, lambda: idle(page) and start.count() == 1 and start.is_enabled(),
               "the guidelines screen")
    press(page, "Enter")

    total = workflow.personal_progress(store, USER)[1]
    done: list[str] = []
    visit: str | None = None
    for item_no in range(2):
        output_id, session = wait_next_item(page, store, done, total, after_visit=visit)
        pressed = answer_open_targets(page, store, output_id, item_no)
        session = reader(store, output_id)
        assert session.complete()
        visit = panel(page)["visit"]
        press(page, "Enter")
        wait_until(page, lambda o=output_id: workflow.is_submitted(store, USER, o),
                   f"the submission of {output_id}")
        done.append(output_id)
        # the database holds exactly what was pressed; gated questions have no answer
        assert given(store, output_id) == pressed
        gate = session.applicable()
        assert all(gate[q] for q in pressed if q in gate)
        assert len(pressed) == sum(gate.values()) + len(session.item.criteria)
        assert any(v == "no" for v in pressed.values())

    # a third item: one answer, then a reload (a new browser session: sign in again)
    output_id, session = wait_next_item(page, store, done, total, after_visit=visit)
    answer_open_targets(page, store, output_id, 2, limit=1)
    session = reader(store, output_id)
    expected = label(session, session.remaining()[0])
    assert len(given(store, output_id)) == 1

    page.reload()  # signed in still: the session cookie survives a reload (issue #12)
    page.wait_for_selector("[data-testid='stSidebar']", timeout=30_000)
    assert not page.locator("input[aria-label='Name']").count()
    start = page.get_by_role("button", name="I have read the guidelines")
    wait_until(page, lambda: idle(page) and (start.count() == 1 or page.evaluate(HEADER_JS)),
               "the annotation page after the reload")
    assert not start.count(), "the guidelines came back after alice had started"
    wait_until(page, lambda: shows(page, task=session.item.task_id, pointer=expected,
                                   progress=f"Your progress: 2 of {total} items",
                                   can_submit=False),
               f"task {session.item.task_id} with the cursor on {expected!r} after the reload")
    assert panel(page)["here"] == [expected]
    assert reserved_item(store) == output_id
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "annotate.png"), full_page=True)
