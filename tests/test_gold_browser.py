"""Gold items in Chromium (issue #16, item 2): everything the browser receives for a gold
item (websocket frames, answer receipts, the panel's DOM state) has the same shape as for a
normal item, and the word "gold" appears nowhere in it.

One ``judge-audit serve`` on a fresh demo project with one gold item per task and one gold
item in every 2 items, an annotator who works through items with the keyboard until a
gold and a normal item have both been seen.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from annotation.accounts import auth
from annotation.store import Store
from annotation.store import gold as gold_rows
from annotation.work import gold, workflow
from tests.helpers.browser import (  # skips this module without Chromium or Playwright
    ARTIFACTS,
    serving,
    shots,
    sign_in,
    sync_api,
    wait_until,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
PANEL = ".ja-panel[data-visit]"
WHO, PASSWORD = "gb1", "gold-pass-1"


def dataset(page: Any) -> dict[str, str]:
    return page.evaluate("() => ({...document.querySelector('.ja-panel').dataset})")


def held(db: Path) -> str:
    with Store.open(db, migrate=False) as store:
        return store.conn.execute("SELECT unit FROM queue_reservations WHERE person = ? AND"
                                  " kind = 'annotate'", [WHO]).fetchone()[0]


def test_a_gold_item_and_a_normal_item_reach_the_browser_alike(tmp_path):
    db = tmp_path / "gold.db"
    subprocess.run([sys.executable, "-m", "annotation.cli", "demo", "--db", str(db),
                    "--quiet"], check=True, cwd=tmp_path)
    with Store.open(db) as store:
        auth.add_user(store, WHO, "annotator", PASSWORD, actor="test")
        outputs = workflow.eligible_outputs(store)
        for _, group in outputs.groupby("task_id"):
            o = group.output_id.iloc[0]
            item = workflow.load_item(store, o)
            gold.mark(store, "test", o, {q.question_id: "yes" for q in item.questions},
                      {c.name: 7.0 for c in item.criteria})
        workflow.set_settings(store, "test", overlap=10, gold_every=2,
                              gold_feedback="test")
        golden = set(gold_rows.gold_outputs(store))
    seen: dict[bool, dict[str, Any]] = {}
    with serving(db, tmp_path) as port, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shots.CHROMIUM, args=shots.CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(30_000)
        frames: list[str] = []
        page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(
            f if isinstance(f, str) else f.decode("latin-1"))))
        bodies: list[Any] = []
        page.on("response", lambda r: bodies.append(r) if "_ja/answers" in r.url else None)
        try:
            page.goto(f"http://127.0.0.1:{port}/")
            sign_in(page, WHO, PASSWORD)
            page.get_by_role("button", name="I have read the guidelines").wait_for(
                timeout=60_000)
            page.keyboard.press("Enter")
            page.wait_for_selector(PANEL, timeout=60_000)
            for _ in range(6):
                if len(seen) == 2:
                    break
                unit = held(db)
                page.wait_for_timeout(500)
                del frames[:], bodies[:]
                opened = dataset(page)
                for _ in range(40):
                    if dataset(page)["ready"] == "1":
                        break
                    page.keyboard.press("7" if dataset(page)["currentKind"] == "c" else "y")
                    page.wait_for_timeout(30)
                wait_until(page, lambda: dataset(page)["pending"] == "0", "answers stored")
                visit = dataset(page)["visit"]
                page.keyboard.press("Enter")
                wait_until(page, lambda v=visit: dataset(page)["visit"] != v, "the next item")
                page.wait_for_timeout(500)
                seen.setdefault(unit in golden, {
                    "unit": unit, "dataset": sorted(opened), "frames": list(frames),
                    "bodies": [b.text() for b in bodies]})
        except BaseException:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "gold-browser.png"))
            raise
        finally:
            browser.close()
    assert set(seen) == {True, False}, "the router gave no gold item (or only gold items)"
    g, n = seen[True], seen[False]
    assert g["dataset"] == n["dataset"]  # the panel's state: the same fields
    everything = "\n".join(g["frames"] + g["bodies"] + n["frames"] + n["bodies"])
    assert g["frames"] and g["bodies"]
    assert "gold" not in everything.lower()
    # the receipts of the answers: the same fields and outcomes
    def receipts(item: dict[str, Any]) -> set[tuple[str, ...]]:
        return {tuple(sorted(r)) + (r["status"], r["outcome"]) for b in item["bodies"]
                for r in json.loads(b)["receipts"]}

    assert receipts(g) == receipts(n)
