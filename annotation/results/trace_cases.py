"""The per-case review table of TRACE-Bench, exported: ``cases.csv``, the node images with
the reviewers' boxes drawn on them, and an HTML page per case.

"TRACE-Bench: Decomposing and Diagnosing Multi-Reference Image Generation" (Wang et al.
2026), Fig. 1 ("Green/red tags indicate satisfied/failed requirements; red boxes localize
failures") and Fig. 4 ("operator-level analysis": identity mismatch, duplication,
leakage-induced mis-binding) show each case as a table Element | Operator | Result |
Failure reason beside the generated image with red boxes on the failing regions. Here a
case is a tree unit (a root output with node outputs):

* :func:`case_table` (pure): one row per operator instance the judge evaluated at the root
  and reviewer (an instance nobody reviewed: one row, reviewer empty). ``Result`` is the
  judge's pass/fail at the root; ``Failure reason`` the reviewer's reason and where the
  failure originates (``Identity inconsistency (originates at N1)``, as the review page's
  table: :func:`annotation.work.tree_review.review_table`); ``reviewer_result`` the
  reviewer's own verdict at the root (``fail``, or ``pass`` for ``not_a_failure``);
  ``box_no`` numbers the boxes within the case, as drawn.
* :func:`draw_boxes` (Pillow): the boxes (0..1 image coordinates) in red, each with its
  number.
* :func:`write_cases`: ``cases.csv``, ``cases/<case>/<node>.png`` (every node with a box,
  and the root), ``cases/<case>.html`` and the index ``cases.html``. Every text from the
  data is escaped in the HTML.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image, ImageDraw, ImageOps

from annotation.results.export import write_csv
from annotation.store import Store
from annotation.trace.trees import load_tree_item
from annotation.work.tree_review import NOT_A_FAILURE, PERSISTENT, REASONS

__all__ = ["CASE_COLUMNS", "case_name", "case_table", "draw_boxes", "node_file",
           "write_cases"]

CASE_COLUMNS = ["case", "output_id", "task_id", "generator", "judge", "reviewer", "Element",
                "Operator", "Result", "Failure reason", "key", "reviewer_result", "origin",
                "reason", "note", "box_no", "box_node", "box", "image"]
RED = (220, 20, 20)


def case_name(output_id: str) -> str:
    """A file name for a case: the root output id with every character but letters,
    digits, ``.``, ``_`` and ``-`` replaced, and a short hash (distinct ids stay distinct)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", str(output_id)).strip("._")[:60] or "case"
    return f"{stem}-{hashlib.sha256(str(output_id).encode()).hexdigest()[:8]}"


def node_file(node: str) -> str:
    """The image file name of a node in a case folder: ``<node>.png`` (a node id with
    other characters than letters, digits, ``_`` and ``-``: :func:`case_name`)."""
    return f"{node if re.fullmatch(r'[A-Za-z0-9_-]{1,60}', node) else case_name(node)}.png"


def _reason_text(origin: Any, reason: Any) -> str:
    where = {PERSISTENT: "persistent", NOT_A_FAILURE: "not a failure"}.get(
        origin, f"originates at {origin}")
    label = REASONS.get(reason, "") if isinstance(reason, str) else ""
    return f"{label} ({where})".strip()


def case_table(automatic: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """``cases.csv`` (module docstring) from the automatic localization and the review
    pairs of :mod:`annotation.results.trees` (``load_automatic``, ``review_pairs``)."""
    if automatic.empty:
        return pd.DataFrame(columns=CASE_COLUMNS)
    reviews: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in pairs.to_dict("records") if not pairs.empty else []:
        reviews.setdefault((str(r["output_id"]), str(r["instance"])), []).append(r)
    rows: list[dict[str, Any]] = []
    box_no: dict[str, int] = {}
    for a in automatic.to_dict("records"):
        output = str(a["output_id"])
        base = {"case": case_name(output), "output_id": output, "task_id": a["task_id"],
                "generator": a["generator"], "judge": a["judge"],
                "Element": a["target"] or a["operator"], "Operator": a["operator"],
                "Result": "pass" if bool(a["root_passed"]) else "fail", "key": a["key"]}
        mine = sorted(reviews.get((output, str(a["key"])), []), key=lambda r: r["reviewer"])
        if not mine:
            rows.append({**base, "reviewer": "", "Failure reason": ""})
            continue
        for r in mine:
            box = r["box"] if isinstance(r["box"], Mapping) else None
            row = {**base, "reviewer": r["reviewer"],
                   "Failure reason": _reason_text(r["origin"], r["reason"]),
                   "reviewer_result": "pass" if r["origin"] == NOT_A_FAILURE else "fail",
                   "origin": r["origin"], "reason": r["reason"], "note": r["note"]}
            if box is not None:
                box_no[output] = box_no.get(output, 0) + 1
                node = str(box["node"])
                row.update(box_no=box_no[output], box_node=node,
                           box=", ".join(f"{v:.3f}" for v in box["box"]),
                           image=f"cases/{base['case']}/{node_file(node)}")
            rows.append(row)
    table = pd.DataFrame(rows, columns=CASE_COLUMNS)
    table["box_no"] = table["box_no"].astype("Int64")
    return table


def draw_boxes(image: Image.Image, boxes: Sequence[tuple[int, Sequence[float]]]
               ) -> Image.Image:
    """A copy of ``image`` (RGB) with each ``(number, [x0, y0, x1, y1])`` box, in 0..1
    image coordinates, drawn as a red rectangle with its number at its top-left corner."""
    out = image.convert("RGB")
    draw = ImageDraw.Draw(out)
    w, h = out.size
    width = max(2, round(min(w, h) / 150))
    for number, (x0, y0, x1, y1) in boxes:
        rect = [round(x0 * (w - 1)), round(y0 * (h - 1)), round(x1 * (w - 1)),
                round(y1 * (h - 1))]
        draw.rectangle(rect, outline=RED, width=width)
        label = str(number)
        tx, ty = rect[0] + width, rect[1] + width
        box = draw.textbbox((tx, ty), label)
        draw.rectangle([box[0] - 1, box[1] - 1, box[2] + 1, box[3] + 1], fill=RED)
        draw.text((tx, ty), label, fill=(255, 255, 255))
    return out


def _node_boxes(rows: pd.DataFrame) -> dict[str, list[tuple[int, list[float]]]]:
    out: dict[str, list[tuple[int, list[float]]]] = {}
    for node, number, box in rows[rows["box_node"].notna()][
            ["box_node", "box_no", "box"]].itertuples(index=False):
        out.setdefault(str(node), []).append((int(number), [float(v) for v in
                                                            str(box).split(",")]))
    return out


def _esc(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) or (
        value is pd.NA) else html.escape(str(value))


_STYLE = ("body{font-family:sans-serif;margin:2em;max-width:80em}table{border-collapse:"
          "collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
          ".fail{color:#b00020;font-weight:bold}.pass{color:#1b7f3b;font-weight:bold}"
          "figure{display:inline-block;margin:0 1em 1em 0}img{width:24em;max-width:90vw;"
          "border:1px solid #ddd}")


def _case_html(rows: pd.DataFrame, instruction: str, formula: str,
               images: list[tuple[str, str]]) -> str:
    first = rows.iloc[0]
    head = (f"<h1>Case {_esc(first.task_id)} · {_esc(first.generator)}</h1>"
            f"<p><b>Formula</b> <code>{_esc(formula)}</code> · judge {_esc(first.judge)}</p>"
            f"<p><b>Prompt</b> {_esc(instruction)}</p>")
    figures = "".join(f'<figure><img src="{_esc(src)}" alt="{_esc(node)}">'
                      f"<figcaption>{_esc(node)}</figcaption></figure>"
                      for node, src in images)
    body = ["<table><tr><th>Element</th><th>Operator</th><th>Result</th>"
            "<th>Failure reason</th><th>Reviewer</th><th>Box</th></tr>"]
    for r in rows.to_dict("records"):
        result = "pass" if r["Result"] == "pass" else "fail"
        box = "" if pd.isna(r["box_no"]) else f"{int(r['box_no'])} on {_esc(r['box_node'])}"
        body.append(f"<tr><td>{_esc(r['Element'])}</td><td>{_esc(r['Operator'])}</td>"
                    f'<td class="{result}">{result}</td>'
                    f"<td>{_esc(r['Failure reason'])}</td><td>{_esc(r['reviewer'])}</td>"
                    f"<td>{box}</td></tr>")
    body.append("</table>")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
            f"{_esc(first.output_id)}</title><style>{_STYLE}</style></head><body>"
            f"{head}{figures}{''.join(body)}<p><a href='../cases.html'>All cases</a></p>"
            "</body></html>")


def write_cases(store: Store, table: pd.DataFrame, out: Path) -> list[Path]:
    """Write ``cases.csv``, ``cases/<case>/<node>.png`` (the root and every node with a
    box, the boxes drawn), ``cases/<case>.html`` and ``cases.html`` under ``out``."""
    out = Path(out)
    folder = out / "cases"
    folder.mkdir(parents=True, exist_ok=True)
    written = [write_csv(table, out / "cases.csv")]
    index = []
    for output_id, rows in table.groupby("output_id", sort=False):
        item = load_tree_item(store, str(output_id))
        case = case_name(str(output_id))
        boxes = _node_boxes(rows)
        root = item.tree.nodes[0].id
        images = []
        for node in [root, *[n.id for n in item.tree.nodes[1:] if n.id in boxes]]:
            sha = item.node_images.get(node)
            if not sha:
                continue
            with Image.open(store.file_path(sha)) as im:
                drawn = draw_boxes(ImageOps.exif_transpose(im), boxes.get(node, []))
            target = folder / case / node_file(node)
            target.parent.mkdir(parents=True, exist_ok=True)
            drawn.save(target, "PNG")
            written.append(target)
            images.append((node, f"{case}/{target.name}"))
        page = folder / f"{case}.html"
        page.write_text(_case_html(rows, item.instruction, item.tree.formula, images),
                        encoding="utf-8")
        written.append(page)
        failed = int((rows.drop_duplicates("key")["Result"] == "fail").sum())
        index.append(f"<tr><td><a href='cases/{case}.html'>{_esc(output_id)}</a></td>"
                     f"<td>{_esc(rows.iloc[0].task_id)}</td>"
                     f"<td>{_esc(rows.iloc[0].generator)}</td>"
                     f"<td>{rows['key'].nunique()}</td><td>{failed}</td>"
                     f"<td>{int(rows['box_no'].notna().sum())}</td></tr>")
    page = out / "cases.html"
    page.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>TRACE-Bench cases</title>"
        f"<style>{_STYLE}</style></head><body><h1>Cases: Element | Operator | Result | "
        "Failure reason</h1><table><tr><th>Root output</th><th>Task</th><th>Generator</th>"
        "<th>Instances</th><th>Judge fails</th><th>Boxes</th></tr>" + "".join(index)
        + "</table></body></html>", encoding="utf-8")
    written.append(page)
    return written
