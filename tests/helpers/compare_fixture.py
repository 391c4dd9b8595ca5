"""A project with pairs and rankings to annotate (issue #17, *Compare outputs*): the pair
fixture's bundle (real Pillow images) plus a reference image per task, imported into a real
SQLite file, with no human answers (so every pair and ranking is open to the annotators)."""

from __future__ import annotations

import json
from pathlib import Path

from annotation.formats.importers import import_path
from annotation.store import Store
from tests.helpers.bundles import make_image, read_jsonl, write_jsonl
from tests.helpers.pair_fixture import pair_bundle

GUIDELINES = "Prefer the output that **follows the instruction**."


def compare_bundle(root: Path, *, rankings_only: bool = False) -> Path:
    """Write the bundle at ``root``: the pair fixture without its human answers, each task
    with a reference image, the project's guidelines; ``rankings_only``: no pairs."""
    pair_bundle(root)
    header = json.loads((root / "bundle.json").read_text(encoding="utf-8"))
    (root / "bundle.json").write_text(json.dumps(header | {"guidelines": GUIDELINES}),
                                      encoding="utf-8")
    write_jsonl(root / "annotations.jsonl", [])
    tasks = read_jsonl(root / "tasks.jsonl")
    for t in tasks:
        path = f"inputs/{t['task_id']}_ref.png"
        make_image(root / path, size=(40, 30), color="white", text="ref")
        t["images"] = [{"path": path, "role": "reference", "kind": "subject",
                        "label": "the reference"}]
    write_jsonl(root / "tasks.jsonl", tasks)
    if rankings_only:
        write_jsonl(root / "pairs.jsonl", [])
        write_jsonl(root / "judgments.jsonl", [
            j for j in read_jsonl(root / "judgments.jsonl") if "pair_id" not in j])
    return root


def compare_db(folder: Path, db: str | Path | None = None, **kwargs: bool) -> str | Path:
    """A project database at ``db`` (a path or a PostgreSQL URL; default
    ``folder/compare.db``) with :func:`compare_bundle` imported."""
    db = folder / "compare.db" if db is None else db
    with Store.open(db) as store:
        import_path(store, compare_bundle(folder / "bundle", **kwargs))
    return db


def pair_and_ranking_ids(db: str | Path) -> list[str]:
    """Every pair and ranking id (they can name generators: never sent to a browser)."""
    with Store.open(db) as store:
        return [r[0] for r in store.conn.execute(
            "SELECT pair_id FROM pairs UNION ALL SELECT ranking_id FROM rankings")]


def outputs_of_ranking(db: str | Path, ranking_id: str) -> list[str]:
    with Store.open(db) as store:
        row = store.conn.execute("SELECT outputs FROM rankings WHERE ranking_id = ?",
                                 [ranking_id]).fetchone()
    return list(json.loads(row[0]))
