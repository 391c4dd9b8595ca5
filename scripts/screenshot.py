"""Screenshot app pages in a real browser, to look at what users see.

    python scripts/screenshot.py [--db DB] [--out screenshots] [--page overview ...]

Starts ``judge-audit serve`` on a free localhost port (the demo project without --db),
opens each page in Debian's Chromium through Playwright (``/usr/bin/chromium``; install
with ``apt-get install chromium``), waits until Streamlit has finished drawing, and writes
``<out>/<page>.png``. A development tool, not part of the product.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM = os.environ.get("JUDGE_AUDIT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
PAGES = {"login": None, "overview": "Overview", "assignment": "Assignment & progress",
         "annotate": "Annotate outputs", "conflicts": "Verify conflict labels",
         "trees": "Review diagnostic trees", "analytics": "Judge validation",
         "conflict_results": "Conflict labels", "tree_results": "Tree localization",
         "adjudicate": "Adjudicate", "compare": "Compare outputs"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port: int, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"the app did not start on port {port}")


RENDERED_JS = """() => !document.querySelector('[data-testid="stStatusWidget"]')
    && !document.querySelector('[data-testid="stSkeleton"]')
    && !document.querySelector('[data-testid="stSpinner"]')
    && document.querySelector(
        '[data-testid="stMainBlockContainer"] [data-testid="stElementContainer"]') !== null"""


def wait_rendered(page, quiet_ms: int = 1500, timeout_s: float = 30) -> None:
    """Streamlit draws after its script runs: wait until it has been idle for ``quiet_ms``."""
    deadline = time.time() + timeout_s
    idle_since = None
    while time.time() < deadline:
        if page.evaluate(RENDERED_JS):
            idle_since = idle_since or time.time()
            if (time.time() - idle_since) * 1000 >= quiet_ms:
                return
        else:
            idle_since = None
        page.wait_for_timeout(200)
    raise TimeoutError("the page did not finish rendering")


def sign_in(page, user: str, password: str) -> None:
    page.locator("input[aria-label='Name']").fill(user)
    page.locator("input[type='password']").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("[data-testid='stSidebar']")
    wait_rendered(page)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="project database (default: the demo project)")
    parser.add_argument("--out", default="screenshots")
    parser.add_argument("--page", action="append", choices=sorted(PAGES))
    parser.add_argument("--width", type=int, default=1440)
    parser.add_argument("--height", type=int, default=1000)
    parser.add_argument("--user", default="admin", help="sign in as (demo: admin, alice, ...)")
    parser.add_argument("--password", default="demo-admin")
    parser.add_argument("--tabs", action="store_true",
                        help="also click every tab of the page: <page>-<n>-<tab>.png")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    port = free_port()
    cmd = [sys.executable, "-m", "annotation.cli", "serve", "--port", str(port)]
    if args.db:
        cmd += ["--db", args.db]
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        wait_healthy(port)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": args.width, "height": args.height})
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_selector("[data-testid='stApp']")
            wait_rendered(page)
            for name in args.page or list(PAGES):
                if name == "login":
                    pass
                else:
                    if page.locator("input[aria-label='Name']").count():
                        sign_in(page, args.user, args.password)
                    page.get_by_role("link", name=PAGES[name], exact=True).click()
                wait_rendered(page)
                path = out / f"{name}.png"
                page.screenshot(path=str(path), full_page=True)
                print(path)
                if args.tabs:
                    tabs = page.get_by_role("tab")
                    for i in range(tabs.count()):
                        label = tabs.nth(i).inner_text().strip()
                        tabs.nth(i).click()
                        wait_rendered(page)
                        slug = "".join(ch if ch.isalnum() else "-" for ch in label.lower())
                        path = out / f"{name}-{i + 1}-{slug}.png"
                        page.screenshot(path=str(path), full_page=True)
                        print(path)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
