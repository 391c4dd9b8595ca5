"""Server-side time of one answer on the annotate page, against a bare page of the same images.

    python benchmarks/annotate_bench.py [--repeats 30] [--frames]      # real servers, browser
    python benchmarks/annotate_bench.py --apptest [--repeats 30] [--profile]

Writes, in a temporary folder, a bundle with one VIF-like task (7 references and 6 visual
instructions, 1024x1024 photo-like PNGs made with Pillow, one 1024x1024 output, 10
checklist questions, one of them gated by another, and the six VIF criteria on 1-10) and
imports it into a fresh project with the annotator's account.

**Real servers (the default).** Starts ``judge-audit serve --db DB`` (the app) and
``streamlit run benchmarks/_bench_bare_page.py`` (the bare page: the same 14 thumbnails from
the same cache, the instruction and one "Y" button whose callback writes one answer through
:func:`annotation.work.workflow.give_answer`, as the annotate page does), each in a process group
of its own, stopped at the end (also on error). Debian's Chromium (1280x800, Playwright)
signs in to the app with the annotator, leaves the guidelines with Enter and opens the bare
page in a second browser context. A figure is the time between the websocket frame the
browser sends after a key press (a ``BackMsg`` with ``rerun_script``) and the frame it
receives that ends that run (a ``ForwardMsg`` with ``script_finished``): the server's run
plus localhost transport, not the browser's drawing. Each frame is stamped twice: with
``time.perf_counter()`` in Playwright's ``framesent`` / ``framereceived`` handlers (the
headline figures; they include Playwright's delivery delay to this process), and with the
browser's own timestamp (Chrome DevTools Protocol ``Network.webSocketFrame*``), printed
next to them as a check. A third column is the CPU time the server process used meanwhile
(``/proc/PID/stat``, 10 ms ticks, mean): the browser runs on the same machine and draws
while the server runs, so on a small machine the wall-clock figures include that contention,
the CPU figure does not. Figures:

* **annotate answer**: "y" / "n" in turn on the first question. The answer panel is an
  ``st.fragment``, so this is a fragment run (its ``script_finished`` is
  ``FINISHED_FRAGMENT_RUN_SUCCESSFULLY``; checked). The cursor then moves on by itself: "k"
  brings it back (a fragment run too, not measured) and the next key waits until the page
  shows the "▶" on the first question;
* **bare answer**: "y" on the bare page (a whole-script run, ``FINISHED_SUCCESSFULLY``);
* **annotate full run** (for information): "e" (Enlarge) on the annotate page, a button
  outside the fragment, so a full run of ``app.py`` and the page plus the dialog with the
  output image (the dialog is then closed with Escape, which runs nothing).

Each answer must add exactly one row to ``annotations`` for its annotator (counted through
a read-only connection before and after; "k" and "e" must add none), or the benchmark
fails. After 3 unmeasured answers on each side (and one "e"), the two pages alternate in
blocks of ``--block`` answers (the page measured first alternating too), with two "e" after
each annotate block. Printed: median and 90th percentile in ms, and the ratio of the answer
medians annotate / bare (goal: <= 1.5). A key press that sends no frame within 5 s is
pressed again (rare; counted and printed; the figure starts at the frame, so it is
unaffected). ``--frames`` prints the message types of the first measured runs and where
their longest waits are.

**AppTest (``--apptest``).** In this process, no browser: with
:class:`streamlit.testing.v1.AppTest` it times the server side of a click, i.e.
``AppTest.run()``, which always runs the whole script (AppTest cannot run a fragment alone),
so its annotate figure is a full page run:

* **annotate**: ``pages/annotate.py`` with a signed-in annotator who has seen the
  guidelines: the run that follows a click on "Yes" / "No";
* **bare**: a minimal script written to the temporary folder that shows the same 14
  thumbnails with ``st.image`` from the same cache (:func:`annotation.ui.render.thumbnail`),
  the instruction text and three plain buttons (no callbacks, no write, no account check),
  timed the same way after a click on one of its buttons;
* **annotate, no click** (for information): a plain rerun of the annotate page, i.e. one
  script execution with no write.

AppTest makes a new ``ScriptCache`` for every run, so it would compile (and "magic"-rewrite)
the page's source on every run, which a server does once per process (its runtime keeps one
``ScriptCache``): the benchmark gives AppTest one shared cache, and prints the compile time
of each page once, for information. The thumbnail cache is warmed by untimed runs of each
page before timing. The variants alternate ``--repeats`` times each; the figures are the
median and the 90th percentile in ms, and the ratio annotate / bare (goal: at most 1.5).
AppTest's own cost (building the element tree of each run) is in every figure alike.

How each click writes an answer: before every click the page's cursor
(``st.session_state["annotate"]["cursor"]``) is put back on the first question, and the
clicks alternate "Yes" and "No", so every click changes the stored answer of that question
(``give_answer`` writes nothing for an unchanged answer) and the item never becomes
complete (the other questions and the criteria stay open). After every click the rows of
the ``annotations`` table for the annotator are counted through a separate connection; the
benchmark fails unless the count grew by exactly one.

In AppTest mode, when the ratio is above 1.5, ``--repeats`` more clicks are run under
:mod:`cProfile` and the top costs are printed, with the number of SQL statements a click
executes.
"""

from __future__ import annotations

import argparse
import base64
import cProfile
import importlib.util
import io
import json
import logging
import os
import pstats
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.local_script_runner import LocalScriptRunner

from annotation.accounts import auth
from annotation.accounts.auth import User
from annotation.formats.importers import import_path
from annotation.store import Store
from annotation.ui import render
from annotation.ui.app_state import ENV_DB, enable_test_sessions, sign_in

REPO = Path(__file__).resolve().parents[1]
ANNOTATE = REPO / "pages" / "annotate.py"
N_REFERENCES, N_VI, SIZE = 7, 6, 1024
ANNOTATOR = "bench-annotator"
GOAL = 1.5
CRITERIA = ["text_instruction_following", "reference_consistency",
            "visual_instruction_adherence", "visual_instruction_cleanliness",
            "scene_coherence", "visual_quality"]
QUESTIONS = [  # (operator, target, text)
    ("f", "f1", "Is there a cat?"),
    ("f", "f2", "Is there a ceramic mug?"),
    ("f", "f3", "Is there a wooden table?"),
    ("g", "g1", "Is the cat orange with stripes?"),
    ("g", "g2", "Does the mug have a blue glaze?"),
    ("C", "C, relation", "Is the cat to the left of the mug?"),
    ("C", "C, layout", "Does the cat sit inside its layout box?"),
    ("C", "C, layout", "Does the mug sit inside its layout box?"),
    ("C", "C, wind", "Does the steam bend the way the wind arrow points?"),
    ("C", "C, duplication", "Does any cat appear more than once?"),
]

BARE_PAGE = '''\
"""The bare page: the same thumbnails, the instruction and three buttons, nothing else."""
import json

import streamlit as st

from annotation.accounts import auth
from annotation.ui import render
from annotation.ui.app_state import open_store

PAGE = json.loads({page!r})
store = open_store(st.session_state)
st.text(PAGE["instruction"])
for group in (PAGE["references"], PAGE["visual_instructions"]):
    columns = st.columns(7)
    for i, (sha, caption) in enumerate(group):
        with columns[i % 7]:
            st.image(str(render.thumbnail(store, sha, 256)), caption=caption, width="stretch")
st.image(str(render.thumbnail(store, PAGE["output"], 1024)), width="content")
row = st.columns(3)
row[0].button("Yes")
row[1].button("No")
row[2].button("Can't tell")
'''


# ------------------------------------------------------------------------ the project
sys.path.insert(0, str(Path(__file__).resolve().parent))
from thumb_bench import photo_like  # noqa: E402  (one image maker for both benchmarks)


def make_bundle(root: Path) -> None:
    """One task: 7 references, 6 VIs, 10 questions, six criteria; one output."""
    images = []
    for i in range(N_REFERENCES + N_VI):
        rel = f"images/t1/img{i}.png"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        photo_like(SIZE, i).save(root / rel, compress_level=6)
        ref = i < N_REFERENCES
        images.append({"path": rel, "role": "reference" if ref else "visual_instruction",
                       "kind": "main" if ref else ("layout", "wind", "light")[i % 3],
                       "label": f"subject {i}" if ref else None})
    (root / "outputs").mkdir(parents=True, exist_ok=True)
    photo_like(SIZE, 99).save(root / "outputs/t1.png", compress_level=6)
    questions = [{"question_id": f"t1.q{k}", "text": text, "pass_answer": "no" if k == 9
                  else "yes", "operator": op, "target": target}
                 for k, (op, target, text) in enumerate(QUESTIONS)]
    questions[3]["depends_on"] = ["t1.q0"]  # "orange cat" only when there is a cat
    for image in images:
        if image["label"] is None:
            del image["label"]
    (root / "bundle.json").write_text(json.dumps({
        "name": "annotate bench", "benchmark": "VIF-Bench",
        "criteria": [{"name": c, "label": c.replace("_", " ").capitalize(), "min": 1,
                      "max": 10, "step": 1, "rubric": "10: flawless. 1: unusable."}
                     for c in CRITERIA],
        "guidelines": "Answer what you **see**, not what the prompt says.",
    }))
    meta = {"layout": [{"subject": "cat", "box": [0.1, 0.4, 0.5, 0.9], "color": "#E6194B"},
                       {"subject": "mug", "box": [0.55, 0.5, 0.9, 0.9], "color": "#4363D8"}],
            "arrows": [{"kind": "wind", "start": [0.9, 0.3], "end": [0.35, 0.36]}]}
    instruction = ("Put the cat of Image_0 on the table of Image_2 to the left of the mug of "
                   "Image_1, as boxed in Image_7, with the wind of Image_8 bending the steam.")
    (root / "tasks.jsonl").write_text(json.dumps(
        {"task_id": "t1", "instruction": instruction, "images": images,
         "questions": questions, "meta": meta}) + "\n")
    (root / "outputs.jsonl").write_text(json.dumps(
        {"output_id": "t1/gen", "task_id": "t1", "generator": "gen",
         "path": "outputs/t1.png"}) + "\n")


def write_bare_page(store: Store, path: Path) -> None:
    images = store.images_df("t1")
    caption = [f"Image_{r.idx}" for r in images.itertuples()]
    page = {
        "instruction": str(store.tasks_df()["instruction"].iloc[0]),
        "references": [(s, c) for s, c, role in zip(images.sha256, caption, images.role)
                       if role == "reference"],
        "visual_instructions": [(s, c) for s, c, role in zip(images.sha256, caption,
                                                             images.role)
                                if role == "visual_instruction"],
        "output": str(store.outputs_df()["sha256"].iloc[0]),
    }
    path.write_text(BARE_PAGE.format(page=json.dumps(page)))


# ------------------------------------------------------------------------ the pages
def annotate_page() -> AppTest:
    at = AppTest.from_file(str(ANNOTATE), default_timeout=60)
    enable_test_sessions()  # AppTest has no cookie: the token is kept in session_state
    sign_in(at.session_state, User(ANNOTATOR, "annotator"))
    at.session_state["annotate"] = {"annotator": ANNOTATOR, "guidelines_seen": True}
    return at


def button(at: AppTest, label: str):
    found = [b for b in at.button if b.label == label]
    if not found:
        shown = [e.value for e in at.error] or [b.label for b in at.button]
        raise RuntimeError(f"no {label!r} button on the page; it shows {shown}")
    return found[0]


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def check(at: AppTest) -> None:
    if at.exception:
        raise RuntimeError(f"the page raised: {at.exception[0].message}")


class Annotate:
    """The annotate page, clicked "Yes" / "No" in turn on its first question."""

    def __init__(self, db: Path):
        self.at = annotate_page()
        self.reader_path = db
        self.reader = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        self.clicks = 0
        check(self.at.run())  # opens the item; makes the thumbnails (warms the cache)
        self.rows = self.count()

    def count(self) -> int:
        return self.reader.execute(
            "SELECT count(*) FROM annotations WHERE annotator = ?", [ANNOTATOR]).fetchone()[0]

    def click(self) -> float:
        """One answer click (untimed preparation, timed run, untimed write check)."""
        self.at.session_state["annotate"]["cursor"] = 0
        label = "Yes" if self.clicks % 2 == 0 else "No"
        self.clicks += 1
        button(self.at, label).click()
        seconds = timed(self.at.run)
        check(self.at)
        rows = self.count()
        if rows != self.rows + 1:
            raise RuntimeError(f"click {self.clicks} ({label}) wrote {rows - self.rows} "
                               "annotation rows, expected 1")
        self.rows = rows
        return seconds

    def rerun(self) -> float:
        seconds = timed(self.at.run)
        check(self.at)
        return seconds


class Bare:
    def __init__(self, script: Path):
        self.at = AppTest.from_file(str(script), default_timeout=60)
        check(self.at.run())
        self.clicks = 0

    def click(self) -> float:
        button(self.at, ("Yes", "No", "Can't tell")[self.clicks % 3]).click()
        self.clicks += 1
        seconds = timed(self.at.run)
        check(self.at)
        return seconds


# ------------------------------------------------------------------------ report
def ms(values: list[float]) -> tuple[float, float]:
    """Median and 90th percentile of ``values`` (seconds), in ms."""
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p90 * 1000


def profile(page: Annotate, clicks: int) -> None:
    """Run ``clicks`` answer clicks under cProfile; print the top costs and SQL counts."""
    store = page.at.session_state["_store"]
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    page.click()
    store.conn.set_trace_callback(None)
    kinds: dict[str, int] = {}
    for sql in statements:
        word = sql.split(None, 1)[0].upper() if sql.strip() else "?"
        kinds[word] = kinds.get(word, 0) + 1
    print(f"\nSQL statements in one answer click (2 script runs): {len(statements)} "
          f"({', '.join(f'{k} {v}' for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]))})")
    frequent: dict[str, int] = {}
    for sql in statements:
        key = " ".join(sql.split())[:90]
        frequent[key] = frequent.get(key, 0) + 1
    for sql, n in sorted(frequent.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  {n:3d} x {sql}")

    # The page runs in AppTest's script thread: profile that thread, run by run.
    profiler = cProfile.Profile()
    run_thread = LocalScriptRunner._run_script_thread

    def profiled(runner: LocalScriptRunner) -> None:
        profiler.enable()
        try:
            run_thread(runner)
        finally:
            profiler.disable()

    with mock.patch.object(LocalScriptRunner, "_run_script_thread", profiled):
        for _ in range(clicks):
            page.click()
    prefixes = sorted({str(Path(p)) + os.sep for p in sys.path if p} | {str(REPO) + os.sep},
                      key=len, reverse=True)
    for order, restrict, top in (("cumulative", (), 30), ("tottime", (), 12),
                                 ("cumulative", (r"annotation[/\\]|annotate\.py",), 20)):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(*restrict, top)
        body = out.getvalue()
        for prefix in prefixes:  # short paths: site-packages/... and the repository's own
            body = body.replace(prefix, "")
        where = " in judge-audit's own code" if restrict else ""
        print(f"\ncProfile of the script thread, {clicks} clicks, top {top}{where} by {order}:")
        print(body[body.find("   ncalls"):].rstrip())


def compile_ms(script: Path) -> float:
    """Time to read, magic-rewrite and compile ``script`` (what a fresh ScriptCache does)."""
    return min(timed(lambda: ScriptCache().get_bytecode(str(script))) for _ in range(5)) * 1000


def measure(db: Path, bare_page: Path, repeats: int) -> tuple[Annotate, Bare, list[list[float]]]:
    """Warm up, then alternate an answer click, a bare click and a plain annotate rerun."""
    annotate = Annotate(db)
    bare = Bare(bare_page)
    for _ in range(2):  # untimed rounds: imports, thumbnails, streamlit's own caches
        annotate.click()
        bare.click()
        annotate.rerun()
    figures: list[list[float]] = [[], [], []]
    for _ in range(repeats):
        figures[0].append(annotate.click())
        figures[1].append(bare.click())
        figures[2].append(annotate.rerun())
    return annotate, bare, figures


def report(figures: list[list[float]], repeats: int, annotate: Annotate,
           compile_annotate: float, compile_bare: float) -> float:
    with Store.open(annotate.reader_path) as store:
        thumbs = len(list((store.media_dir / render.THUMBS_DIR).rglob("*.*")))
    (a_med, a_p90), (b_med, b_p90), (r_med, r_p90) = (ms(f) for f in figures)
    ratio = a_med / b_med
    print(f"one task: {N_REFERENCES} references + {N_VI} VIs + 1 output, {SIZE}x{SIZE} PNG; "
          f"{len(QUESTIONS)} questions, {len(CRITERIA)} criteria; {thumbs} cached thumbnail "
          f"files; {repeats} alternating repeats; server-side time of AppTest.run()")
    print(f"{'':34}{'median':>10}{'p90':>10}")
    print(f"{'annotate page, answer click':34}{a_med:8.1f}ms{a_p90:8.1f}ms"
          "   (callback + one script run)")
    print(f"{'bare page, button click':34}{b_med:8.1f}ms{b_p90:8.1f}ms")
    print(f"{'annotate page, rerun, no click':34}{r_med:8.1f}ms{r_p90:8.1f}ms"
          "   (one script run, for information)")
    print(f"ratio annotate / bare (median): {ratio:.2f}  (goal <= {GOAL}: "
          f"{'met' if ratio <= GOAL else 'NOT met'})")
    print(f"answers written: {annotate.clicks} clicks, {annotate.rows} annotation rows "
          "(one per click, checked)")
    print(f"compile + magic of the script, once per process (not in the figures): "
          f"annotate {compile_annotate:.1f} ms, bare {compile_bare:.1f} ms")
    return ratio


# ------------------------------------------------------------------------ real servers
BARE_SCRIPT = Path(__file__).resolve().with_name("_bench_bare_page.py")
BARE_ANNOTATOR = "bench-bare"
PASSWORD = "bench-password-123"
FIRST_QUESTION = QUESTIONS[0][2]
FULL, FRAGMENT = "FINISHED_SUCCESSFULLY", "FINISHED_FRAGMENT_RUN_SUCCESSFULLY"
STEP_TIMEOUT = 30.0  # seconds for one key press to run, write and be drawn
LOST_KEY = 5.0  # seconds after which a key press that sent nothing is pressed again
VIEWPORT = {"width": 1280, "height": 800}
# The "▶" marked checklist entry, as shown (tests/test_browser.py).
POINTER_JS = """() => Array.from(document.querySelectorAll(
        '[data-testid="stMainBlockContainer"] strong'))
    .map(e => e.innerText.trim()).filter(t => t.startsWith('▶'))
    .map(t => t.slice(1).trim().replace(/\\s+/g, ' '))"""
FOCUS_JS = "() => document.activeElement ? document.activeElement.tagName : 'BODY'"


def screenshot_helpers() -> Any:
    """scripts/screenshot.py (not a package): CHROMIUM, free_port, wait_healthy, ..."""
    spec = importlib.util.spec_from_file_location("judge_audit_screenshot",
                                                  REPO / "scripts" / "screenshot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def start_server(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """``cmd`` in a session (process group) of its own, its output to ``log``."""
    with log.open("w") as out:
        return subprocess.Popen(cmd, env=env, cwd=log.parent, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def stop_server(server: subprocess.Popen) -> None:
    """Stop the process group ``server`` leads: SIGTERM, then SIGKILL after 10 s."""
    for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            server.poll()
            try:
                os.killpg(server.pid, 0)  # anyone left in the group?
            except ProcessLookupError:
                server.wait(timeout=10)
                return
            time.sleep(0.1)
    server.wait(timeout=10)


def wait_until(page: Any, check: Callable[[], Any], what: str,
               timeout: float = STEP_TIMEOUT) -> Any:
    """Poll ``check`` every 10 ms (letting Playwright deliver events) until it is truthy."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        page.wait_for_timeout(10)
    return value


Frame = tuple[float, str, str]  # (seconds, "sent" or "received", message type)
Span = tuple[float, str, list[Frame]]  # (seconds, script_finished status, frames)
# seconds: by Playwright's perf_counter stamps, by the browser's, server CPU (10 ms ticks)
Timing = tuple[float, float, float]


def message_type(way: str, payload: bytes) -> str:
    """The type of a BackMsg (sent) or ForwardMsg (received); ``script_finished:<status>``."""
    msg = BackMsg() if way == "sent" else ForwardMsg()
    msg.ParseFromString(payload)
    kind = msg.WhichOneof("type") or "?"
    if kind == "script_finished":
        kind += ":" + ForwardMsg.ScriptFinishedStatus.Name(msg.script_finished)
    elif kind == "delta":  # delta:new_element:markdown, delta:add_block, ...
        part = msg.delta.WhichOneof("type") or "?"
        element = msg.delta.new_element.WhichOneof("type") if part == "new_element" else None
        kind = ":".join(p for p in (kind, part, element) if p)
    return kind


def run_span(frames: list[Frame]) -> Span | None:
    """From the first rerun request sent in ``frames`` to the next script_finished received."""
    requests = [i for i, (_, way, kind) in enumerate(frames)
                if way == "sent" and kind == "rerun_script"]
    if not requests:
        return None
    first = requests[0]
    for j in range(first + 1, len(frames)):
        seconds, way, kind = frames[j]
        if way == "received" and kind.startswith("script_finished:"):
            if len(requests) > 1 and requests[1] < j:
                raise RuntimeError(f"two rerun requests in one run: {frames[:j + 1]}")
            return seconds - frames[first][0], kind.split(":", 1)[1], frames[first:j + 1]
    return None


class Wire:
    """The websocket frames of one browser page, logged twice.

    ``log``: stamped with ``time.perf_counter()`` when Playwright's ``framesent`` /
    ``framereceived`` handlers run in this process (the figures). ``cdp_log``: the same
    frames with the browser's own timestamps (Chrome DevTools Protocol
    ``Network.webSocketFrameSent`` / ``Received``), a check on Playwright's delivery delays.
    """

    def __init__(self, page: Any):
        self.page = page
        self.log: list[Frame] = []
        self.cdp_log: list[Frame] = []
        self.lost = 0  # key presses that sent nothing and were pressed again
        page.on("websocket", self._socket)
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.send("Network.enable")
        for way in ("sent", "received"):
            self.cdp.on(f"Network.webSocketFrame{way.capitalize()}",
                        lambda event, way=way: self._cdp(way, event))

    def _socket(self, ws: Any) -> None:
        ws.on("framesent", lambda payload: self._frame("sent", payload))
        ws.on("framereceived", lambda payload: self._frame("received", payload))

    def _frame(self, way: str, payload: bytes | str) -> None:
        now = time.perf_counter()
        data = payload if isinstance(payload, bytes) else payload.encode()
        self.log.append((now, way, message_type(way, data)))

    def _cdp(self, way: str, event: dict[str, Any]) -> None:
        frame = event["response"]
        if frame.get("opcode") == 2:  # binary: the protobuf messages
            data = base64.b64decode(frame["payloadData"])
            self.cdp_log.append((event["timestamp"], way, message_type(way, data)))

    def run(self, key: str) -> tuple[Span, Span]:
        """Press ``key``; wait for the run it requests to end, in both logs. A press that
        sends nothing within ``LOST_KEY`` seconds is pressed again (once; counted in
        ``lost``): the figure starts at the request sent, so the retry does not change it."""
        assert self.page.evaluate(FOCUS_JS) == "BODY", "the focus sits in an input"
        mark, cdp_mark = len(self.log), len(self.cdp_log)

        def sent() -> bool:
            return any(kind == "rerun_script" for _, _, kind in self.log[mark:])

        def finished() -> tuple[Span, Span] | None:
            span = run_span(self.log[mark:])
            cdp = run_span(self.cdp_log[cdp_mark:])
            return (span, cdp) if span and cdp else None

        self.page.keyboard.press(key)
        try:
            try:
                wait_until(self.page, sent, f"a rerun request after {key!r}",
                           timeout=LOST_KEY)
            except TimeoutError:
                self.lost += 1
                self.page.keyboard.press(key)
            return wait_until(self.page, finished, f"the run after {key!r}")
        except TimeoutError as e:
            kinds = [[f[1][0] + ":" + f[2] for f in frames[-6:]]
                     for frames in (self.log[mark:], self.cdp_log[cdp_mark:])]
            raise TimeoutError(f"{e}; the last frames since the key press (Playwright, "
                               f"browser): {kinds}") from None


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` and its finished threads, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def count_rows(reader: sqlite3.Connection, annotator: str) -> int:
    return reader.execute("SELECT count(*) FROM annotations WHERE annotator = ?",
                          [annotator]).fetchone()[0]


class ServerPage:
    """One page in a browser context of its own, with its frames and its annotator's rows."""

    def __init__(self, browser: Any, url: str, db: Path, annotator: str, rendered_js: str,
                 pid: int):
        self.pid = pid  # the server's process, for its CPU time
        self.context = browser.new_context(viewport=VIEWPORT)
        self.page = self.context.new_page()
        self.page.set_default_timeout(STEP_TIMEOUT * 1000)
        self.wire = Wire(self.page)
        self.rendered_js = rendered_js
        self.annotator = annotator
        self.reader = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        self.presses = 0
        self.shown: list[tuple[str, list[Frame], list[Frame]]] = []  # for --frames
        self.page.goto(url)

    def idle(self) -> bool:
        return self.page.evaluate(self.rendered_js)

    def timed(self, key: str, status: str, writes: int, what: str) -> Timing:
        """One key press: its run must end with ``status`` and add ``writes`` annotation
        rows for the annotator. Returns its seconds: by Playwright's stamps, by the
        browser's, and the server process's CPU time meanwhile."""
        before = count_rows(self.reader, self.annotator)
        cpu = cpu_seconds(self.pid)
        (seconds, got, frames), (browser_seconds, cdp_got, cdp_frames) = self.wire.run(key)
        cpu = cpu_seconds(self.pid) - cpu
        if got != status or cdp_got != status:
            raise RuntimeError(f"{what}: the run ended with {got}, expected {status}")
        rows = wait_until(self.page, lambda: (n := count_rows(self.reader, self.annotator))
                          >= before + writes and (n,), f"{what}: the answer in the database")[0]
        if rows != before + writes:
            raise RuntimeError(f"{what}: {rows - before} annotation rows, expected {writes}")
        self.shown.append((what, frames, cdp_frames))
        return seconds, browser_seconds, cpu

    def close(self) -> None:
        self.reader.close()
        self.context.close()


class ServerAnnotate(ServerPage):
    """The annotate page of ``judge-audit serve``, signed in as the annotator."""

    def __init__(self, browser: Any, port: int, db: Path, rendered_js: str, pid: int):
        super().__init__(browser, f"http://127.0.0.1:{port}/", db, ANNOTATOR, rendered_js,
                         pid)
        page = self.page
        page.locator("input[aria-label='Name']").fill(ANNOTATOR)
        page.locator("input[type='password']").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        start = page.get_by_role("button", name="I have read the guidelines")
        wait_until(page, lambda: self.idle() and start.count() == 1, "the guidelines", 60)
        self.wire.run("Enter")
        self.ready()

    def ready(self) -> None:
        """Wait until the page shows the "▶" on the first question, and is idle."""
        wait_until(self.page, lambda: self.idle()
                   and self.page.evaluate(POINTER_JS) == [FIRST_QUESTION],
                   "the cursor on the first question")

    def answer(self) -> Timing:
        key = "yn"[self.presses % 2]
        self.presses += 1
        seconds = self.timed(key, FRAGMENT, 1, f"annotate {key!r}")
        self.timed("k", FRAGMENT, 0, "annotate 'k' (back to the first question)")
        self.ready()
        return seconds

    def full_run(self) -> Timing:
        seconds = self.timed("e", FULL, 0, "annotate 'e' (Enlarge: a full run)")
        dialog = self.page.get_by_role("dialog")
        wait_until(self.page, lambda: self.idle() and dialog.count() == 1, "the dialog")
        mark = len(self.wire.log)
        self.page.keyboard.press("Escape")
        wait_until(self.page, lambda: dialog.count() == 0, "the dialog to close")
        self.page.wait_for_timeout(100)
        if any(kind == "rerun_script" for _, _, kind in self.wire.log[mark:]):
            raise RuntimeError("closing the dialog ran the script: not expected")
        if self.page.evaluate(FOCUS_JS) != "BODY":  # Escape may leave it on a button
            self.page.evaluate("() => document.activeElement.blur()")
        self.ready()
        return seconds


class ServerBare(ServerPage):
    """The bare page: "y" writes one answer and reruns the whole script."""

    def __init__(self, browser: Any, port: int, db: Path, rendered_js: str, pid: int):
        super().__init__(browser, f"http://127.0.0.1:{port}/", db, BARE_ANNOTATOR,
                         rendered_js, pid)
        self.ready()

    def ready(self) -> None:
        written = self.page.get_by_text(f"{self.presses} answer(s) written", exact=True)
        images = self.page.locator("[data-testid='stImage'] img")
        wait_until(self.page, lambda: self.idle() and written.count() == 1
                   and images.count() == N_REFERENCES + N_VI + 1, "the bare page")

    def answer(self) -> Timing:
        seconds = self.timed("y", FULL, 1, "bare 'y'")
        self.presses += 1
        self.ready()
        return seconds


def serve_and_measure(root: Path, db: Path, repeats: int, block: int,
                      frames: bool) -> tuple[list[list[Timing]], int]:
    """Start both servers, drive both pages, stop both servers. Returns the three figure
    lists and the number of key presses that sent nothing and were pressed again."""
    from playwright.sync_api import sync_playwright

    shots = screenshot_helpers()
    if not os.access(shots.CHROMIUM, os.X_OK):
        raise SystemExit(f"no Chromium at {shots.CHROMIUM} (apt-get install chromium)")
    with Store.open(db) as store:
        page_spec = bare_page_spec(store)
    (root / "bare_page.json").write_text(json.dumps(page_spec))
    env = dict(os.environ, JUDGE_AUDIT_DB=str(db), JUDGE_AUDIT_BENCH_PAGE=str(root /
                                                                              "bare_page.json"))
    app_port, bare_port = shots.free_port(), shots.free_port()
    while bare_port == app_port:
        bare_port = shots.free_port()
    servers: list[tuple[str, subprocess.Popen, Path]] = []
    try:
        for name, cmd in (
            ("judge-audit serve", [sys.executable, "-m", "annotation.cli", "serve", "--db",
                                   str(db), "--port", str(app_port)]),
            ("bare page", [sys.executable, "-m", "streamlit", "run", str(BARE_SCRIPT),
                           "--server.port", str(bare_port), "--server.headless", "true",
                           "--browser.gatherUsageStats", "false",
                           "--client.toolbarMode", "minimal"]),
        ):
            log = root / f"{name.replace(' ', '-')}.log"
            servers.append((name, start_server(cmd, env, log), log))
        shots.wait_healthy(app_port, timeout=60)
        shots.wait_healthy(bare_port, timeout=60)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=shots.CHROMIUM,
                                         args=shots.CHROMIUM_ARGS)
            try:
                # the app first: it reserves the item for the annotator when it opens it
                annotate = ServerAnnotate(browser, app_port, db, shots.RENDERED_JS,
                                          servers[0][1].pid)
                bare = ServerBare(browser, bare_port, db, shots.RENDERED_JS, servers[1][1].pid)
                figures = alternate(annotate, bare, repeats, block)
                if frames:
                    show_frames(annotate, bare)
                lost = annotate.wire.lost + bare.wire.lost
                annotate.close()
                bare.close()
            finally:
                browser.close()
    except BaseException:
        for name, _, log in servers:
            sys.stderr.write(f"--- the end of the {name} log:\n{log.read_text()[-3000:]}\n")
        raise
    finally:
        for _, server, _ in servers:
            stop_server(server)
    return figures, lost


def bare_page_spec(store: Store) -> dict[str, Any]:
    images = store.images_df("t1")
    captions = [f"Image_{r.idx}" for r in images.itertuples()]
    return {
        "instruction": str(store.tasks_df()["instruction"].iloc[0]),
        **{group: [(s, c) for s, c, r in zip(images.sha256, captions, images.role) if r == role]
           for group, role in (("references", "reference"),
                               ("visual_instructions", "visual_instruction"))},
        "output": str(store.outputs_df()["output_id"].iloc[0]),
        "output_sha256": str(store.outputs_df()["sha256"].iloc[0]),
        "annotator": BARE_ANNOTATOR,
        "question": "t1.q0",
    }


def alternate(annotate: ServerAnnotate, bare: ServerBare, repeats: int,
              block: int) -> list[list[Timing]]:
    """3 unmeasured answers on each page and one "e"; then blocks of ``block`` answers on
    each page (the first page alternating) and two "e" per block, until ``repeats``."""
    for _ in range(3):
        annotate.answer()
        bare.answer()
    annotate.full_run()
    for page in (annotate, bare):
        page.shown.clear()
    figures: list[list[Timing]] = [[], [], []]
    turn = 0
    while len(figures[0]) < repeats:
        n = min(block, repeats - len(figures[0]))
        order = [(annotate, 0), (bare, 1)]
        for side, index in order if turn % 2 == 0 else order[::-1]:
            side.page.bring_to_front()
            figures[index] += [side.answer() for _ in range(n)]
            if side is annotate:
                figures[2] += [annotate.full_run() for _ in range(2)]
        turn += 1
    return figures


def show_frames(annotate: ServerAnnotate, bare: ServerBare) -> None:
    """The message types of the first measured run of each kind, with their times."""
    print("websocket frames of the first measured runs, ms after the rerun request "
          "(by Playwright's stamps / by the browser's):")
    seen: set[str] = set()
    for what, frames, cdp_frames in annotate.shown + bare.shown:
        if what in seen:
            continue
        seen.add(what)
        if [f[1:] for f in frames] != [f[1:] for f in cdp_frames]:
            print(f"  {what}: Playwright and the browser saw different frames")
        counts: dict[str, int] = {}
        for _, way, kind in frames:
            key = f"{way} {kind.split(':')[0]}"
            counts[key] = counts.get(key, 0) + 1
        print(f"  {what}: " + ", ".join(f"{n} x {k}" for k, n in counts.items()))
        marks = [(i, kind) for i, (_, way, kind) in enumerate(frames)
                 if not kind.startswith("delta") or i == len(frames) - 2]
        print("    at: " + ", ".join(
            f"{kind} {(frames[i][0] - frames[0][0]) * 1000:.1f}/"
            f"{(cdp_frames[i][0] - cdp_frames[0][0]) * 1000:.1f}"
            for i, kind in marks if i < len(cdp_frames)))
        gaps = sorted(((cdp_frames[i][0] - cdp_frames[i - 1][0], i)
                       for i in range(1, len(cdp_frames))), reverse=True)[:4]
        print("    longest waits (browser clock) before: " + ", ".join(
            f"#{i} {cdp_frames[i][2]} {gap * 1000:.1f}" for gap, i in gaps))


def report_server(figures: list[list[Timing]], repeats: int, block: int, lost: int) -> float:
    stats = [(ms([t[0] for t in f]), ms([t[1] for t in f]),
              statistics.mean(t[2] for t in f) * 1000) for f in figures]
    ratio = stats[0][0][0] / stats[1][0][0]
    browser_ratio = stats[0][1][0] / stats[1][1][0]
    cpu_ratio = stats[0][2] / stats[1][2] if stats[1][2] else float("nan")
    print(f"one task: {N_REFERENCES} references + {N_VI} VIs + 1 output, {SIZE}x{SIZE} PNG; "
          f"{len(QUESTIONS)} questions, {len(CRITERIA)} criteria; real servers, Chromium "
          f"{VIEWPORT['width']}x{VIEWPORT['height']}; {repeats} answers per page in "
          f"alternating blocks of {block}")
    print("ms from the rerun request sent to script_finished received (websocket frames),\n"
          "stamped by Playwright's frame events (perf_counter) | by the browser (CDP);\n"
          "and the server process's CPU time during the key press (mean, 10 ms ticks):")
    print(f"{'':32}{'median':>9}{'p90':>9}  |{'median':>9}{'p90':>9}  |{'CPU':>7}")
    rows = (("annotate page, answer (Y / N)", "fragment run: the answer panel"),
            ("bare page, answer (Y)", "whole script"),
            ("annotate page, full run (E)", f"app + page + dialog, {len(figures[2])} runs, "
             "for information"))
    for (label, note), ((med, p90), (b_med, b_p90), cpu) in zip(rows, stats):
        print(f"{label:32}{med:9.1f}{p90:9.1f}  |{b_med:9.1f}{b_p90:9.1f}  |{cpu:7.1f}"
              f"   ({note})")
    print(f"ratio annotate / bare (answer medians): {ratio:.2f} | {browser_ratio:.2f} | "
          f"CPU {cpu_ratio:.2f}  (goal <= {GOAL}: {'met' if ratio <= GOAL else 'NOT met'})")
    print(f"answers written: {repeats} + 3 warm-up per page, one annotation row each "
          f"(checked); key presses lost and pressed again: {lost}")
    return ratio


# ------------------------------------------------------------------------ main
def make_project(root: Path) -> Path:
    """The bundle, imported into ``root/p.db``, with both annotators' accounts."""
    make_bundle(root / "bundle")
    db = root / "p.db"
    with Store.open(db) as store:
        import_path(store, root / "bundle")
        for name in (ANNOTATOR, BARE_ANNOTATOR):
            auth.add_user(store, name, "annotator", PASSWORD, actor="bench")
    return db


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=30, help="measured answers per page")
    parser.add_argument("--apptest", action="store_true",
                        help="time AppTest.run() in this process instead of real servers")
    parser.add_argument("--block", type=int, default=5,
                        help="real servers: answers per page before switching pages")
    parser.add_argument("--frames", action="store_true",
                        help="real servers: print the message types of the first runs")
    parser.add_argument("--profile", action="store_true",
                        help="AppTest: profile the annotate page even when the goal is met")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="judge-audit-annotate-bench-") as tmp:
        root = Path(tmp)
        db = make_project(root)
        if not args.apptest:
            figures, lost = serve_and_measure(root, db, args.repeats, args.block, args.frames)
            report_server(figures, args.repeats, args.block, lost)
            return 0
        with Store.open(db) as store:
            write_bare_page(store, root / "bare_page.py")
        os.environ[ENV_DB] = str(db)
        # AppTest touches session_state outside a script run: harmless, but it warns.
        logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(
            lambda record: "missing ScriptRunContext" not in record.getMessage())
        shared = ScriptCache()  # one per server process, as streamlit's runtime has
        with mock.patch("streamlit.testing.v1.local_script_runner.ScriptCache",
                        lambda: shared):
            annotate, bare, figures = measure(db, root / "bare_page.py", args.repeats)
            ratio = report(figures, args.repeats, annotate, compile_ms(ANNOTATE),
                           compile_ms(root / "bare_page.py"))
            if ratio > GOAL or args.profile:
                profile(annotate, args.repeats)
        annotate.reader.close()
        annotate.at.session_state["_store"].close()
        bare.at.session_state["_store"].close()
    return 0

if __name__ == "__main__":
    sys.exit(main())
