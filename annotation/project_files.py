"""Where judge-audit's own files are: the app, the embedded demo bundle, the demo database."""

from __future__ import annotations

import json
import os
from pathlib import Path

from annotation.accounts.auth import create_demo_accounts
from annotation.formats.importers import import_path
from annotation.store import Store, now_iso

PACKAGE_ROOT = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_ROOT.parent
DEMO_BUNDLE = REPO_ROOT / "data" / "demo"
#: the demo's accounts, written beside the bundle by its builder (``scripts/demo``)
DEMO_ACCOUNTS_FILE = DEMO_BUNDLE / "accounts.json"


def app_path() -> Path:
    """The Streamlit entry point (``app.py`` beside the package, as in a checkout)."""
    path = REPO_ROOT / "app.py"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: install judge-audit from a checkout with 'pip install -e .'"
        )
    return path


def server_path() -> Path:
    """What ``judge-audit serve`` runs: ``server.py`` beside ``app.py`` (``app.py`` behind
    ``st.App``, with the session-cookie routes)."""
    path = REPO_ROOT / "server.py"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: install judge-audit from a checkout with 'pip install -e .'"
        )
    return path


def default_demo_db() -> Path:
    """``$JUDGE_AUDIT_HOME/demo.db``, by default ``~/.judge-audit/demo.db``."""
    home = Path(os.environ.get("JUDGE_AUDIT_HOME", Path.home() / ".judge-audit"))
    return home / "demo.db"


def ensure_demo_db(db: Path) -> None:
    """Bring the demo database up to date (idempotent). A demo database built by an older
    judge-audit whose demo content has changed is moved aside and built anew."""
    from annotation.records import ImportRefused

    try:
        build_demo_db(db)
    except ImportRefused:
        stamp = now_iso().replace(":", "").replace("-", "")[:15]
        for suffix in ("", "-wal", "-shm"):
            old = db.with_name(db.name + suffix)
            if old.exists():
                old.rename(old.with_name(f"{old.name}.old-{stamp}"))
        build_demo_db(db)


def demo_accounts(path: Path = DEMO_ACCOUNTS_FILE) -> list[tuple[str, str, str]]:
    """(name, role, password) of the demo project's accounts, as the demo's builder wrote
    them (``data/demo/accounts.json``). These passwords are public."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    return [(a["name"], a["role"], a["password"]) for a in doc["accounts"]]


def build_demo_db(db: Path | str) -> str:
    """Import the embedded demo bundle into ``db`` (idempotent); return the summary text.

    Then create the demo accounts (:func:`demo_accounts`), also idempotent. Uses the
    committed ``data/demo`` folder (made by ``python scripts/make_demo.py``), which a
    checkout has.
    """
    if not (DEMO_BUNDLE / "bundle.json").is_file():
        raise FileNotFoundError(
            f"{DEMO_BUNDLE} not found: install judge-audit from a checkout with "
            "'pip install -e .'"
        )
    with Store.open(db) as store:
        text = import_path(store, DEMO_BUNDLE, user="demo").text()
        create_demo_accounts(store, demo_accounts())
        return text
