"""Issue #12, item 4: text from the data is shown as text, never as a link or markup.

* :func:`annotation.ui.widgets.inert` and :func:`~annotation.ui.widgets.safe_markdown` break
  what Streamlit's markdown autolinks (``https://``, ``http://`` in any case, ``www.``,
  ``name@host.tld``) with an invisible word joiner: the text reads the same. That no
  ``<a>`` is made in a real browser is checked on the served app in
  ``tests/test_served.py`` (sign-in, guidelines, annotate, rating card and rubric,
  verification and tree pages).
* ``report.html`` built from a bundle whose judge and generator names hold
  ``<b>``, ``<i>``, ``<a href>`` and ``<br>``: opened in Chromium, no plotly figure draws
  bold, italic or a link from them, and every figure's data and layout carry them escaped.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from annotation.cli import main
from annotation.formats.importers import import_path
from annotation.store import Store
from annotation.ui.widgets import WORD_JOINER, inert, safe_markdown
from tests.helpers.bundles import read_jsonl, write_jsonl
from tests.test_hostile_input import write_hostile_bundle

URLS = ["https://evil.example/x", "HTTP://Evil.Example/y", "www.evil.example",
        "bad@evil.example", "see https://www.evil.example/z."]


@pytest.mark.parametrize("text", URLS)
def test_urls_are_broken_where_markdown_would_link_them(text):
    for shown in (inert(text), safe_markdown(text)):
        plain = shown.replace("\\", "")
        assert plain.replace(WORD_JOINER, "") == text  # reads the same
        for pattern in (r"(?i)https?://", r"(?i)www\.", r"[-.\w+]@[-\w]"):
            assert not re.search(pattern, plain), (pattern, plain)


def test_text_without_links_is_unchanged():
    for text in ("judge-audit v1.2", "Is the cat @ the door?", "a.b.c", "http:/x"):
        assert WORD_JOINER not in inert(text) + safe_markdown(text)


# ------------------------------------------------------------------ report.html
JUDGES = {"-judge-x": "<b>BoldJudge</b>", "+metric-y": "<a href='https://evil.example'>LinkJ</a>"}
GENERATORS = {"=gen(A)": "<i>ItalicGen</i>", "@genB": "gen<br>B"}


def markup_bundle(root: Path) -> Path:
    """The hostile bundle with HTML in the judge, generator and criterion names."""
    write_hostile_bundle(root)
    header = json.loads((root / "bundle.json").read_text(encoding="utf-8"))
    for judge in header["judges"]:
        judge["name"] = JUDGES[judge["name"]]
    (root / "bundle.json").write_text(json.dumps(header), encoding="utf-8")
    outputs = read_jsonl(root / "outputs.jsonl")
    renamed = {}
    for output in outputs:
        output["generator"] = GENERATORS[output["generator"]]
        old = output["output_id"]
        output["output_id"] = renamed[old] = old.split("/")[0] + "/" + output["generator"]
    write_jsonl(root / "outputs.jsonl", outputs)
    for name in ("judgments", "annotations"):
        rows = read_jsonl(root / f"{name}.jsonl")
        for row in rows:
            row["output_id"] = renamed[row["output_id"]]
            if "judge" in row:
                row["judge"] = JUDGES[row["judge"]]
        write_jsonl(root / f"{name}.jsonl", rows)
    return root


FIGURES_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(
    gd => JSON.stringify({data: gd.data, layout: gd.layout}))"""
MARKUP_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot svg *')).filter(
    e => e.tagName === 'a' || /bold|italic/.test(e.getAttribute('style') || '')
         || e.getAttribute('font-weight') === 'bold' || e.getAttribute('font-style')
         === 'italic').map(e => e.tagName + ': ' + e.textContent)"""


@pytest.mark.slow
def test_report_html_draws_no_markup_from_names(tmp_path):
    shots = pytest.importorskip("tests.helpers.browser").shots
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.access(shots.CHROMIUM, os.X_OK):
        pytest.skip("no Chromium")
    # SQLite only: a Chromium run on what the report's HTML draws from the names (the
    # engine is not what it tests; browser runs are kept few)
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        import_path(store, markup_bundle(tmp_path / "bundle"))
    out = tmp_path / "report"
    assert main(["report", "--db", str(db), "--out", str(out), "--bootstrap", "20",
                 "--quiet"]) == 0
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shots.CHROMIUM, args=shots.CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto((out / "report.html").as_uri())
            page.wait_for_function("document.querySelectorAll('.js-plotly-plot svg').length "
                                   "> 0", timeout=30_000)
            page.wait_for_timeout(1000)
            figures = page.evaluate(FIGURES_JS)
            drawn = page.evaluate(MARKUP_JS)
            texts = page.evaluate("""() => Array.from(document.querySelectorAll(
                '.js-plotly-plot svg text')).map(t => t.textContent).join('\\n')""")
        finally:
            browser.close()
    assert len(figures) >= 3  # PLCC bars, SRCC heatmap, checklist bars, Bland-Altman
    assert drawn == []  # no bold, italic or link element drawn from the names
    joined = "\n".join(figures)
    for name in [*JUDGES.values(), *GENERATORS.values()]:
        assert name not in joined, name  # raw markup never enters a figure
    assert "&lt;b&gt;BoldJudge&lt;/b&gt;" in joined
    # and the names are drawn as the characters typed
    assert "<b>BoldJudge</b>" in texts
