"""Server-side time of one answer on the annotate page, against a bare page of the same images.

    python benchmarks/annotate_bench.py [--repeats 30]

Writes, in a temporary folder, a bundle with one VIF-like task (7 references and 6 visual
instructions, 1024x1024 photo-like PNGs made with Pillow, one 1024x1024 output, 10
checklist questions, one of them gated by another, and the six VIF criteria on 1-10),
imports it into a fresh project, creates the annotator's account (pages check it on every
run) and points ``JUDGE_AUDIT_DB`` at it. Then, with :class:`streamlit.testing.v1.AppTest`
(in this process, no browser), it times the server side of a click, i.e. ``AppTest.run()``:

* **annotate**: ``pages/annotate.py`` with a signed-in annotator who has seen the
  guidelines: the run that follows a click on "Yes" / "No" (the page writes the answer,
  calls ``st.rerun()`` and runs again: both script executions are in the figure, as they
  are on a server);
* **bare**: a minimal script written to the temporary folder that shows the same 14
  thumbnails with ``st.image`` from the same cache (:func:`annotation.render.thumbnail`),
  the instruction text and three plain buttons (no callbacks, no account check), timed
  the same way after a click on one of its buttons;
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

When the ratio is above 1.5, ``--repeats`` more clicks are run under :mod:`cProfile` and the
top costs are printed, with the number of SQL statements a click executes.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import logging
import os
import pstats
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

from PIL import Image, ImageDraw, ImageFilter
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.local_script_runner import LocalScriptRunner

from annotation import auth, render
from annotation.app_state import ENV_DB, sign_in
from annotation.auth import User
from annotation.importers import import_path
from annotation.store import Store

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

from annotation import auth, render
from annotation.app_state import open_store

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
def photo_like(size: int, seed: int) -> Image.Image:
    """A size x size RGB image with smooth areas, shapes and fine noise (PNG ~ a photo)."""
    rng = random.Random(seed)
    top = tuple(rng.randrange(256) for _ in range(3))
    bottom = tuple(rng.randrange(256) for _ in range(3))
    ramp = Image.linear_gradient("L").resize((size, size))
    im = Image.composite(Image.new("RGB", (size, size), bottom),
                         Image.new("RGB", (size, size), top), ramp)
    draw = ImageDraw.Draw(im)
    for _ in range(12):
        x, y = rng.randrange(size), rng.randrange(size)
        r = rng.randrange(size // 20, size // 4)
        draw.ellipse((x - r, y - r, x + r, y + r), fill=tuple(rng.randrange(256) for _ in "rgb"))
    noise = Image.effect_noise((size, size), 24).convert("RGB")
    return Image.blend(im.filter(ImageFilter.GaussianBlur(2)), noise, 0.12)


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--profile", action="store_true",
                        help="profile the annotate page even when the goal is met")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="judge-audit-annotate-bench-") as tmp:
        root = Path(tmp)
        make_bundle(root / "bundle")
        db = root / "p.db"
        with Store.open(db) as store:
            import_path(store, root / "bundle")
            auth.add_user(store, ANNOTATOR, "annotator", "bench-password-123", actor="bench")
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
          "   (click run + st.rerun run)")
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


if __name__ == "__main__":
    sys.exit(main())
