"""*Compare outputs* in Chromium against ``judge-audit serve`` (issue #17): pairs answered
with A / B / T / X and Enter, rankings with digit keys, through the answer panel; the
database rows (preference in output A / B terms, ``shown_first``, the history of a changed
answer, a burst of keys in order), a reload showing the stored answers, and nothing in the
websocket frames or the DOM that names an output, a generator, a judge, a pair or which side
output A is on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from annotation.accounts import auth
from annotation.store import Store
from annotation.work import compare
from tests.helpers.browser import (  # skips this module without Chromium or Playwright
    ARTIFACTS,
    idle,
    press,
    serving,
    shots,
    sign_in,
    sync_api,
    wait_until,
)
from tests.helpers.compare_fixture import compare_db, pair_and_ranking_ids
from tests.helpers.exposure import leaks, secrets_of

pytestmark = [pytest.mark.browser, pytest.mark.slow]
PANEL = ".ja-panel[data-visit]"
WHO, PASSWORD = "pia", "compare-pass-1"
DOM_ATTRIBUTES_JS = """() => Array.from(document.querySelectorAll('*')).flatMap(
    e => Array.from(e.attributes).map(a => a.name + '=' + a.value))"""


def _text(payload: object) -> str:
    text = payload.decode("latin-1") if isinstance(payload, bytes) else str(payload)
    return text.replace("\\", "")


def _pair_rows(db: Path) -> list[tuple[Any, ...]]:
    with Store.open(db, migrate=False) as store:
        return store.conn.execute(
            "SELECT pair_id, preference, shown_first, supersedes FROM pair_annotations"
            " WHERE annotator = ? ORDER BY pair_annotation_id", [WHO]).fetchall()


def _places(db: Path) -> list[tuple[Any, ...]]:
    with Store.open(db, migrate=False) as store:
        return store.conn.execute(
            "SELECT ranking_id, output_id, place FROM ranking_places WHERE annotator = ?"
            " ORDER BY place_id", [WHO]).fetchall()


def _panel(page: Any) -> dict[str, str]:
    return page.evaluate("() => ({...document.querySelector('.ja-panel').dataset})")


def _chosen(page: Any) -> list[str]:
    return page.eval_on_selector_all(
        ".ja-card .ja-option.ja-chosen .ja-label", "els => els.map(e => e.textContent)")


def test_pairs_and_rankings_with_the_keyboard_blind(tmp_path: Path) -> None:
    db = compare_db(tmp_path)
    with Store.open(db) as store:
        auth.add_user(store, WHO, "annotator", PASSWORD, actor="test")
        pairs = compare.pair_units(store)
        for pair in pairs[2:]:  # someone else did all but two pairs (overlap 1)
            compare.give_preference(store, "other", pair, "tie")
            compare.PAIRS.submit(store, "other", pair)
    frames: list[str] = []
    dom: list[str] = []
    with serving(db, tmp_path) as port, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shots.CHROMIUM, args=shots.CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.set_default_timeout(30_000)
        page.on("websocket", lambda ws: (
            ws.on("framereceived", lambda f: frames.append(_text(f))),
            ws.on("framesent", lambda f: frames.append(_text(f)))))
        try:
            page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
            sign_in(page, WHO, PASSWORD)
            assert page.get_by_role("link", name="Compare outputs").count() == 1
            page.goto(f"http://127.0.0.1:{port}/compare", wait_until="domcontentloaded")
            page.wait_for_selector(PANEL, timeout=60_000)
            wait_until(page, lambda: idle(page), "the Compare outputs page", timeout=60)
            assert page.get_by_text("Left", exact=True).count() >= 1
            first_visit = _panel(page)["visit"]
            # a burst of the four keys on the first pair: four rows, in order
            for key in "abtx":
                press(page, key)
            wait_until(page, lambda: _panel(page)["pending"] == "0" and len(
                _pair_rows(db)) >= 4, "the four presses in the database")
            rows = _pair_rows(db)
            pair, side = rows[0][0], rows[0][2]
            other = "b" if side == "a" else "a"
            assert [r[1] for r in rows] == [side, other, "tie", "both_bad"]
            assert {r[2] for r in rows} == {side} == {compare.shown_first(WHO, pair)}
            timing = page.evaluate("() => window.__jaPanel.stats.presses.map("
                                   "p => [p.visible - p.at, p.acked - p.at])")
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            (ARTIFACTS / "compare-latency.json").write_text(json.dumps(timing))
            assert rows[0][3] is None and all(r[3] is not None for r in rows[1:])
            dom += page.evaluate(DOM_ATTRIBUTES_JS)
            press(page, "Enter")
            wait_until(page, lambda: idle(page) and _panel(page)["visit"] != first_visit,
                       "the second pair", timeout=60)
            press(page, "b")  # the right one
            wait_until(page, lambda: _panel(page)["pending"] == "0"
                       and len(_pair_rows(db)) == 5, "the second pair's answer")
            second = _pair_rows(db)[-1]
            assert second[1] == ("b" if second[2] == "a" else "a")  # right = not output A's
            # a reload shows the stored answer; Backspace goes back to the first pair
            page.reload(wait_until="domcontentloaded")
            page.wait_for_selector(PANEL, timeout=60_000)
            wait_until(page, lambda: idle(page) and _chosen(page) == ["Right"],
                       "the stored answer after a reload", timeout=60)
            press(page, "Backspace")
            wait_until(page, lambda: idle(page) and _chosen(page) == ["Both bad"],
                       "the first pair again, with its stored answer", timeout=60)
            press(page, "Enter")  # submitted again (idempotent): back to the second pair
            wait_until(page, lambda: idle(page) and _chosen(page) == ["Right"],
                       "the second pair again", timeout=60)
            press(page, "Enter")
            # the rankings: Output 1..3, digit keys in a burst
            page.get_by_text("Output 3", exact=True).first.wait_for(timeout=60_000)
            wait_until(page, lambda: idle(page) and _panel(page)["currentKind"] == "r",
                       "the first ranking", timeout=60)
            for key in "212":
                press(page, key)
            wait_until(page, lambda: _panel(page)["pending"] == "0"
                       and len(_places(db)) == 3, "the three places")
            places = _places(db)
            ranking = places[0][0]
            with Store.open(db, migrate=False) as store:
                outputs, _ = compare.ranking_outputs(store, ranking)
            shown = compare.shown_order(WHO, ranking, outputs)
            assert places == [(ranking, shown[0], 2), (ranking, shown[1], 1),
                              (ranking, shown[2], 2)]
            with Store.open(db, migrate=False) as store:
                assert compare.my_order(store, WHO, ranking) == [
                    shown[1], sorted([shown[0], shown[2]], key=outputs.index)]
            # a reload shows the stored places, output by output
            page.reload(wait_until="domcontentloaded")
            page.wait_for_selector(PANEL, timeout=60_000)
            wait_until(page, lambda: idle(page) and page.eval_on_selector_all(
                ".ja-list .ja-item .ja-option.ja-chosen .ja-label",
                "els => els.map(e => e.textContent)") == ["2", "1", "2"],
                "the stored places after a reload", timeout=60)
            dom += page.evaluate(DOM_ATTRIBUTES_JS)
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "compare-ranking.png"), full_page=True)
            ranking_visit = _panel(page)["visit"]
            press(page, "Enter")
            wait_until(page, lambda: idle(page) and page.locator(PANEL).count() == 1
                       and _panel(page)["visit"] != ranking_visit, "the next ranking",
                       timeout=60)
            dom += page.evaluate(DOM_ATTRIBUTES_JS)
            dom.append(page.inner_text("body"))
        except BaseException:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "compare-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
    assert "Traceback" not in (tmp_path / "serve.log").read_text()
    assert frames
    secrets = secrets_of(db) + pair_and_ranking_ids(db) + ["shown_first", "output_a",
                                                          "output_b"]
    assert leaks(frames + dom, secrets) == []
    with Store.open(db, migrate=False) as store:
        assert compare.PAIRS.is_submitted(store, WHO, pair)
        assert compare.RANKINGS.is_submitted(store, WHO, ranking)
