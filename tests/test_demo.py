"""The synthetic demo bundle (scripts/demo/) and the VI drawings (annotation/vif/draw.py).

The demo must be byte-for-byte reproducible, small, internally consistent, and the
committed ``data/demo`` folder must equal a fresh build (run ``python scripts/make_demo.py``
after changing the builder).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path, PurePosixPath

import pytest
from PIL import Image

from annotation.vif import draw as vi_draw
from scripts.demo import build_demo_bundle

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "data" / "demo"
# 1.45 MB before the diagnostic tree of demo-10 (its root outputs, 12 node images of 384 px
# in a 256-colour palette and their judgments added about 0.34 MB); keep the demo small.
MAX_BYTES = 2_000_000
#: the human-work files of the demo (verifications, tree reviews, submissions, visits)
HUMAN_WORK = ("prelabel_readings.jsonl", "conflict_verdicts.jsonl",
              "conflict_resolutions.jsonl", "tree_reviews.jsonl", "submissions.jsonl",
              "visits.jsonl")
CRITERIA = [
    "text_instruction_following",
    "reference_consistency",
    "visual_instruction_adherence",
    "visual_instruction_cleanliness",
    "scene_coherence",
    "visual_quality",
]


def tree(root: Path, *, pixels: bool = False) -> dict[str, bytes]:
    """Every file under ``root``: relative POSIX path -> bytes.

    With ``pixels=True`` an image is compared by its decoded pixels, not its encoded bytes,
    which another Pillow version may compress differently.
    """

    def content(p: Path) -> bytes:
        if pixels and p.suffix in (".png", ".jpg", ".webp"):
            with Image.open(p) as im:
                return f"{im.mode}{im.size}".encode() + im.tobytes()
        return p.read_bytes()

    return {
        p.relative_to(root).as_posix(): content(p)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def tree_diff(a: dict[str, bytes], b: dict[str, bytes]) -> list[str]:
    only_a = sorted(set(a) - set(b))
    only_b = sorted(set(b) - set(a))
    changed = sorted(k for k in set(a) & set(b) if a[k] != b[k])
    return (
        [f"only in first: {k}" for k in only_a]
        + [f"only in second: {k}" for k in only_b]
        + [f"differs: {k}" for k in changed]
    )


def read_jsonl(path: Path) -> list[dict]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:  # pragma: no cover - the assertion reports it
            pytest.fail(f"{path.name}:{n}: not JSON: {exc}")
        assert isinstance(obj, dict), f"{path.name}:{n}: not an object"
        rows.append(obj)
    return rows


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    a = tmp_path_factory.mktemp("demo_a") / "demo"
    b = tmp_path_factory.mktemp("demo_b") / "demo"
    build_demo_bundle(a)
    build_demo_bundle(b)
    return a, b


@pytest.fixture(scope="module")
def demo(builds: tuple[Path, Path]) -> Path:
    return builds[0]


@pytest.fixture(scope="module")
def data(demo: Path) -> dict:
    return {
        "bundle": json.loads((demo / "bundle.json").read_text(encoding="utf-8")),
        "tasks": read_jsonl(demo / "tasks.jsonl"),
        "outputs": read_jsonl(demo / "outputs.jsonl"),
        "judgments": read_jsonl(demo / "judgments.jsonl"),
        "annotations": read_jsonl(demo / "annotations.jsonl"),
    }


# ----------------------------------------------------------------- build properties


@pytest.mark.slow
def test_two_builds_are_byte_identical(builds: tuple[Path, Path]) -> None:
    a, b = builds
    ta, tb = tree(a), tree(b)
    assert len(ta) > 20
    assert tree_diff(ta, tb) == []


@pytest.mark.slow
def test_bundle_is_small(demo: Path) -> None:
    total = sum(len(v) for v in tree(demo).values())
    assert 100_000 < total < MAX_BYTES, f"demo bundle is {total} bytes"


@pytest.mark.slow
def test_expected_files(demo: Path) -> None:
    for name in (
        "bundle.json",
        "tasks.jsonl",
        "outputs.jsonl",
        "judgments.jsonl",
        "annotations.jsonl",
        "pairs.jsonl",
        "rankings.jsonl",
        *HUMAN_WORK,
    ):
        assert (demo / name).is_file(), name


@pytest.mark.slow
def test_json_is_sorted_and_newline_terminated(demo: Path) -> None:
    for name in ("tasks.jsonl", "outputs.jsonl", "judgments.jsonl", "annotations.jsonl",
                 "pairs.jsonl", "rankings.jsonl", *HUMAN_WORK):
        text = (demo / name).read_text(encoding="utf-8")
        assert text.endswith("\n") and "\r" not in text, name
        for line in text.splitlines():
            obj = json.loads(line)
            assert line == json.dumps(obj, ensure_ascii=False, sort_keys=True), name


@pytest.mark.slow
def test_committed_demo_equals_fresh_build(demo: Path) -> None:
    assert COMMITTED.is_dir(), "data/demo is missing: run python scripts/make_demo.py"
    diff = tree_diff(tree(COMMITTED, pixels=True), tree(demo, pixels=True))
    assert diff == [], "data/demo drifted from the builder; run python scripts/make_demo.py:\n" + (
        "\n".join(diff[:20])
    )


# -------------------------------------------------------------------- bundle content


@pytest.mark.slow
def test_header(data: dict) -> None:
    b = data["bundle"]
    assert b["name"] == "judge-audit demo"
    assert b["benchmark"] == "VIF-Bench + TRACE-Bench (synthetic demo)"
    assert b["format"] == "judge-audit-bundle/1"
    assert [c["name"] for c in b["criteria"]] == CRITERIA
    assert [c["label"] for c in b["criteria"]] == [
        "Text Instruction Following",
        "Reference Consistency",
        "Visual Instruction Adherence",
        "Visual Instruction Cleanliness",
        "Scene Coherence",
        "Visual Quality",
    ]
    for c in b["criteria"]:
        assert (c["min"], c["max"], c["step"]) == (1, 10, 1)
        assert len(c["rubric"]) > 80
        assert set(c) <= {"name", "label", "min", "max", "step", "level", "rubric"}
    assert [(j["name"], j["kind"]) for j in b["judges"]] == [
        ("gpt-5", "vlm"),
        ("gemini-2.5-pro", "vlm"),
        ("qwen3-vl", "vlm"),
    ]
    assert "Can't tell" in b["guidelines"] and "1-10" in b["guidelines"]
    assert set(b) <= {"format", "name", "benchmark", "criteria", "judges", "guidelines", "meta"}


def _image_ok(demo: Path, rel: str) -> None:
    parts = PurePosixPath(rel).parts
    assert not rel.startswith("/") and ".." not in parts, rel
    path = demo.joinpath(*parts)
    assert path.is_file() and not path.is_symlink(), rel
    with Image.open(path) as im:
        assert im.format == "PNG", rel
        im.load()
        assert max(im.size) <= 512, (rel, im.size)
        assert not im.info.get("exif") and "parameters" not in im.info, rel


@pytest.mark.slow
def test_tasks_and_images(demo: Path, data: dict) -> None:
    tasks = data["tasks"]
    assert 9 <= len(tasks) <= 10
    ids = [t["task_id"] for t in tasks]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"demo-\d\d", i) for i in ids)
    task_keys = {"task_id", "instruction", "images", "questions", "checklist_id", "meta"}
    image_keys = {"path", "role", "kind", "label", "meta"}
    for t in tasks:
        assert set(t) <= task_keys
        refs = [i for i in t["images"] if i["role"] == "reference"]
        vis = [i for i in t["images"] if i["role"] == "visual_instruction"]
        assert 1 <= len(refs) <= 4 and 1 <= len(vis) <= 3, t["task_id"]
        assert len(refs) + len(vis) == len(t["images"])
        assert any(i["kind"] == "layout" for i in vis), t["task_id"]
        for img in t["images"]:
            assert set(img) <= image_keys and img["kind"] and img["label"]
            _image_ok(demo, img["path"])
        # every Image_k the instruction names exists, and it names at least one
        named = {int(k) for k in re.findall(r"Image_(\d+)", t["instruction"])}
        assert named and max(named) < len(t["images"]), t["task_id"]
        meta = t["meta"]
        assert meta["formula"] and meta["layout"]
        assert len(meta["layout"]) == sum(i["kind"] == "main" for i in refs)
        for box in meta["layout"]:
            x0, y0, x1, y1 = box["box"]
            assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1
            assert t["images"][box["image"]]["role"] == "reference"
    kinds = Counter(i["kind"] for t in tasks for i in t["images"] if i["role"] != "reference")
    assert kinds["orientation"] >= 1 and kinds["pose"] >= 1
    assert kinds["wind"] + kinds["light"] + kinds["light+wind"] >= 2
    assert any("**" in t["instruction"] for t in tasks)  # markdown, shown as plain text
    # no test probes in what a newcomer reads (markup probes live in the tests)
    assert not any(re.search(r"<[a-z/!]", t["instruction"], re.I) for t in tasks)


@pytest.mark.slow
def test_questions(data: dict) -> None:
    all_ids: set[str] = set()
    negative = dep = 0
    for t in data["tasks"]:
        qs = t["questions"]
        assert 3 <= len(qs) <= 6, t["task_id"]
        own = {q["question_id"] for q in qs}
        for q in qs:
            assert set(q) <= {
                "question_id",
                "text",
                "pass_answer",
                "operator",
                "target",
                "depends_on",
                "meta",
            }
            assert q["question_id"].startswith(t["task_id"] + ".q")
            assert q["pass_answer"] in ("yes", "no")
            assert q["operator"] in ("f", "g", "⊕", "C") and q["target"]
            negative += q["pass_answer"] == "no"
            for parent in q.get("depends_on", []):
                assert parent in own and parent != q["question_id"]
                dep += 1
        assert not own & all_ids
        all_ids |= own
    assert negative >= 1 and dep >= 1


@pytest.mark.slow
def test_outputs(demo: Path, data: dict) -> None:
    outputs = data["outputs"]
    tasks = {t["task_id"] for t in data["tasks"]}
    ids = [o["output_id"] for o in outputs]
    assert len(set(ids)) == len(ids)
    # one output per task and generator, except diagnostic-tree nodes (one per node)
    pairs = Counter(
        (o["task_id"], o["generator"], o.get("meta", {}).get("node")) for o in outputs
    )
    assert max(pairs.values()) == 1
    assert {k[2] for k in pairs} == {None, "N1", "N2a", "N2b", "N3a1"}
    assert {o["generator"] for o in outputs} == {"nano-banana", "gpt-image-1", "qwen-image-edit"}
    for o in outputs:
        assert set(o) <= {"output_id", "task_id", "generator", "path", "missing", "meta"}
        assert o["task_id"] in tasks
        if o.get("missing"):
            assert o["path"] is None
        if o["path"] is not None:
            _image_ok(demo, o["path"])
    assert sum(bool(o.get("missing")) for o in outputs) == 1
    assert sum(o["path"] is None and not o.get("missing") for o in outputs) == 1
    defects = Counter(
        d.split(":")[0] for o in outputs for d in o.get("meta", {}).get("defects", [])
    )
    assert defects["residue"] >= 1 and defects["misplaced"] >= 1


@pytest.mark.slow
def test_judgments_refer_to_existing_records(data: dict) -> None:
    b = data["bundle"]
    criteria = {c["name"]: c for c in b["criteria"]}
    judges = {j["name"] for j in b["judges"]}
    outputs = {o["output_id"]: o for o in data["outputs"]}
    questions = {t["task_id"]: {q["question_id"] for q in t["questions"]} for t in data["tasks"]}
    keys = Counter()
    unparsed = 0
    for j in data["judgments"]:
        if "pair_id" in j or "ranking_id" in j:
            continue  # pairs and rankings: test_pairs_and_rankings
        assert set(j) <= {
            "judge",
            "output_id",
            "question_id",
            "criterion",
            "answer",
            "score",
            "raw",
            "parse_status",
        }
        assert j["judge"] in judges
        out = outputs[j["output_id"]]
        assert not out.get("missing"), "a refusal cannot be judged"
        assert ("question_id" in j) != ("criterion" in j)
        assert j["raw"]
        if "question_id" in j:
            assert j["question_id"] in questions[out["task_id"]]
            assert j["answer"] in ("yes", "no")
            key = j["question_id"]
        else:
            c = criteria[j["criterion"]]
            if j.get("parse_status") == "unparsed":
                assert j["score"] is None
                unparsed += 1
            else:
                assert isinstance(j["score"], int) and c["min"] <= j["score"] <= c["max"]
                assert j.get("parse_status", "ok") == "ok"
                label = {
                    "visual_instruction_adherence": "Vision Instruction Adherence",
                    "visual_instruction_cleanliness": "Visual Instruction Residue",
                }.get(j["criterion"], c["label"])
                assert f"\n{label}: {j['score']}." in j["raw"]
                assert j["raw"].startswith("Reasoning: ")
            key = j["criterion"]
        keys[(j["judge"], j["output_id"], key)] += 1
    assert max(keys.values()) == 1, "a judge answered twice"
    assert unparsed == 1
    # every judge answers everything about every output that exists (diagnostic-tree
    # nodes: only their retained questions, tests/test_demo_tree.py)
    for o in outputs.values():
        if o.get("missing") or "node" in o.get("meta", {}):
            continue
        for judge in judges:
            for key in [*criteria, *questions[o["task_id"]]]:
                assert keys[(judge, o["output_id"], key)] == 1, (judge, o["output_id"], key)


@pytest.mark.slow
def test_annotations(data: dict) -> None:
    criteria = {c["name"] for c in data["bundle"]["criteria"]}
    outputs = {o["output_id"]: o for o in data["outputs"]}
    questions = {t["task_id"]: {q["question_id"] for q in t["questions"]} for t in data["tasks"]}
    history: dict[tuple, list[dict]] = {}
    answers = Counter()
    for a in data["annotations"]:
        if "pair_id" in a or "ranking_id" in a:
            continue  # pairs and rankings: test_pairs_and_rankings
        assert set(a) <= {
            "annotator",
            "output_id",
            "question_id",
            "criterion",
            "answer",
            "score",
            "note",
            "created_at",
        }
        assert a["annotator"] in ("ann1", "ann2", "ann3")
        out = outputs[a["output_id"]]
        assert out["path"] is not None, "only outputs with an image can be annotated"
        assert "node" not in out.get("meta", {}), "tree nodes are not annotation items"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", a["created_at"])
        if "question_id" in a:
            assert a["question_id"] in questions[out["task_id"]]
            assert a["answer"] in ("yes", "no", "cant_tell")
            answers[a["answer"]] += 1
            key = a["question_id"]
        else:
            assert a["criterion"] in criteria
            assert isinstance(a["score"], int) and 1 <= a["score"] <= 10
            key = a["criterion"]
        history.setdefault((a["annotator"], a["output_id"], key), []).append(a)
    assert answers["yes"] and answers["no"] and answers["cant_tell"]
    corrected = [rows for rows in history.values() if len(rows) > 1]
    assert len(corrected) >= 2
    for rows in corrected:
        assert rows[0]["created_at"] < rows[-1]["created_at"] and rows[-1].get("note")
        value = "answer" if "answer" in rows[0] else "score"
        assert rows[0][value] != rows[-1][value]
    with_image = {
        o
        for o, row in outputs.items()
        if row["path"] is not None and "node" not in row.get("meta", {})
    }
    for ann in ("ann1", "ann2", "ann3"):
        done = {o for (a, o, _k) in history if a == ann}
        assert done <= with_image
    covered = {o for (_a, o, _k) in history}
    assert len(covered) >= len(with_image) - 1
    assert any(
        {o for (a, o, _k) in history if a == ann} != with_image for ann in ("ann2", "ann3")
    ), "not every annotator should have done everything"


@pytest.mark.slow
def test_pairs_and_rankings(demo: Path, data: dict) -> None:
    """Issue #17: pairs of two generators' outputs of one task (some also in the swapped
    order), two judges (one unparsed verdict with its raw text; one judge on both orders),
    the three annotators with shown_first, a few disagreements and a changed answer; and a
    ranking item or two answered by the annotators (one tie) and the judges."""
    outputs = {o["output_id"]: o for o in data["outputs"]}
    pairs = {p["pair_id"]: p for p in read_jsonl(demo / "pairs.jsonl")}
    assert 10 <= len(pairs) <= 40
    couples = Counter()
    for p in pairs.values():
        a, b = outputs[p["output_a"]], outputs[p["output_b"]]
        assert a["task_id"] == b["task_id"] == p["task_id"] and a["generator"] != b["generator"]
        assert a["path"] and b["path"] and "node" not in a.get("meta", {})
        couples[frozenset((p["output_a"], p["output_b"]))] += 1
    swapped = [p for p in pairs.values() if p.get("meta", {}).get("order") == "swapped"]
    assert len(swapped) == sum(n == 2 for n in couples.values()) >= 2
    assert len({p["task_id"] for p in pairs.values()}) >= 10  # clusters for intervals
    judged: dict[str, dict[str, dict]] = {}
    for j in data["judgments"]:
        if "pair_id" in j:
            assert set(j) == {"judge", "pair_id", "preference", "raw"} and j["raw"]
            assert j["pair_id"] in pairs and j["pair_id"] not in judged.get(j["judge"], {})
            judged.setdefault(j["judge"], {})[j["pair_id"]] = j
    assert len(judged) == 2
    unparsed = [j for js in judged.values() for j in js.values() if j["preference"] is None]
    assert len(unparsed) == 1 and unparsed[0]["raw"]
    both_orders = [judge for judge, js in judged.items()
                   if all(p["pair_id"] in js for p in swapped)]
    assert len(both_orders) == 1
    history: dict[tuple[str, str], list[dict]] = {}
    for a in data["annotations"]:
        if "pair_id" in a:
            assert a["annotator"] in ("ann1", "ann2", "ann3")
            assert a["preference"] in ("a", "b", "tie", "both_bad")
            assert a["shown_first"] in ("a", "b") and a["pair_id"] in pairs
            history.setdefault((a["annotator"], a["pair_id"]), []).append(a)
    changed = [rows for rows in history.values() if len(rows) > 1]
    assert len(changed) == 1 and changed[0][-1]["note"]
    assert changed[0][0]["preference"] != changed[0][-1]["preference"]
    assert {a["shown_first"] for rows in history.values() for a in rows} == {"a", "b"}
    final: dict[str, set[str]] = {}
    for (_who, pair), rows in history.items():
        final.setdefault(pair, set()).add(rows[-1]["preference"])
    assert 2 <= sum(len(v) > 1 for v in final.values()) < len(final) / 2  # a few disagree
    assert {"a", "b", "tie", "both_bad"} <= set().union(*final.values())
    rankings = {r["ranking_id"]: r for r in read_jsonl(demo / "rankings.jsonl")}
    assert 1 <= len(rankings) <= 2
    for r in rankings.values():
        assert {outputs[o]["task_id"] for o in r["outputs"]} == {r["task_id"]}
    orders = [a for a in data["annotations"] if "ranking_id" in a]
    assert Counter(a["ranking_id"] for a in orders) == {r: 3 for r in rankings}
    assert any(isinstance(place, list) for a in orders for place in a["order"])
    assert Counter(j["ranking_id"] for j in data["judgments"] if "ranking_id" in j) == {
        r: 2 for r in rankings}


@pytest.mark.slow
def test_judges_agree_with_humans_but_not_perfectly(data: dict) -> None:
    """Scores are correlated with the annotators' (shared hidden truth), yet not equal."""

    def means(rows: list[dict]) -> dict[str, float]:
        acc: dict[str, list[float]] = {}
        for r in rows:
            if r.get("criterion") and r.get("score") is not None:
                acc.setdefault(r["output_id"], []).append(r["score"])
        return {k: sum(v) / len(v) for k, v in acc.items()}

    humans = means(data["annotations"])
    for judge in ("gpt-5", "gemini-2.5-pro", "qwen3-vl"):
        rows = [j for j in data["judgments"] if j["judge"] == judge]
        jm = means(rows)
        common = sorted(set(humans) & set(jm))
        x = [jm[o] for o in common]
        y = [humans[o] for o in common]
        mx, my = sum(x) / len(x), sum(y) / len(y)
        cov = sum((a - mx) * (b - my) for a, b in zip(x, y))
        var = (sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y)) ** 0.5
        r = cov / var
        assert 0.5 < r < 0.999, (judge, r)


# ------------------------------------------------------------------------- vi_draw


def _mask_centroid(img: Image.Image, rgb: tuple[int, int, int], tol: int = 30) -> tuple:
    px = img.load()
    xs, ys = [], []
    for y in range(0, img.height, 2):
        for x in range(0, img.width, 2):
            p = px[x, y]
            if all(abs(p[i] - rgb[i]) <= tol for i in range(3)):
                xs.append(x)
                ys.append(y)
    assert xs, f"colour {rgb} not found"
    return sum(xs) / len(xs) / img.width, sum(ys) / len(ys) / img.height, len(xs)


def _rgb(color: str) -> tuple[int, int, int]:
    return tuple(int(color[i : i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


def test_subject_color_palette() -> None:
    colors = [vi_draw.subject_color(i) for i in range(len(vi_draw.PALETTE))]
    assert len(set(colors)) == len(colors)
    assert vi_draw.subject_color(len(colors)) == colors[0]
    assert all(re.fullmatch(r"#[0-9A-F]{6}", c) for c in colors)
    with pytest.raises(ValueError):
        vi_draw.subject_color(-1)


def test_layout_draws_each_box_in_its_colour() -> None:
    boxes = [
        {"subject": "cat", "box": [0.1, 0.5, 0.4, 0.9], "color": "#E6194B"},
        {"subject": "mug", "box": [0.6, 0.2, 0.9, 0.6], "color": "#4363D8"},
    ]
    img = vi_draw.draw_layout(boxes, size=512)
    assert img.size == (512, 512) and img.mode == "RGB"
    assert img.getpixel((5, 5)) == (255, 255, 255)
    assert img.getpixel((round(0.1 * 512) + 1, round(0.7 * 512))) == _rgb("#E6194B")
    assert img.getpixel((round(0.9 * 512) - 1, round(0.4 * 512))) == _rgb("#4363D8")
    assert vi_draw.draw_layout(boxes, size=512).tobytes() == img.tobytes()
    with pytest.raises(ValueError):
        vi_draw.draw_layout([{"subject": "x", "box": [0.5, 0.5, 0.2, 0.9]}])


@pytest.mark.parametrize(
    ("yaw", "pitch", "side"),
    [(40, 0, "right"), (-40, 0, "left"), (30, 30, "up"), (20, -40, "down")],
)
def test_orientation_front_points_where_the_subject_faces(yaw: float, pitch: float, side: str):
    img = vi_draw.draw_orientation(yaw, pitch, size=256)
    cx, cy, _n = _mask_centroid(img, _rgb(vi_draw.PYRAMID_FRONT))
    expected = {"right": cx > 0.52, "left": cx < 0.48, "up": cy < 0.48, "down": cy > 0.52}
    assert expected[side], (yaw, pitch, cx, cy)


def test_orientation_from_behind_hides_the_front_face() -> None:
    front = _mask_centroid(vi_draw.draw_orientation(30, 0, size=256), _rgb(vi_draw.PYRAMID_FRONT))[
        2
    ]
    back = vi_draw.draw_orientation(180, 0, size=256)
    back_front = _mask_centroid(back, _rgb(vi_draw.PYRAMID_FRONT))[2]  # only edges remain
    assert back_front < front / 5


def test_arrows_colours_and_direction() -> None:
    arrows = [
        {"kind": "wind", "start": [0.1, 0.2], "end": [0.8, 0.2]},
        {"kind": "light", "start": [0.5, 0.9], "end": [0.5, 0.4]},
    ]
    img = vi_draw.draw_arrows(arrows, size=256)
    wx, wy, _ = _mask_centroid(img, _rgb(vi_draw.ARROW_COLORS["wind"]))
    lx, ly, _ = _mask_centroid(img, _rgb(vi_draw.ARROW_COLORS["light"]))
    assert abs(wy - 0.2) < 0.03 and 0.4 < wx < 0.6
    assert abs(lx - 0.5) < 0.03 and 0.55 < ly < 0.75
    # the head (end) is wider than the tail: more wind pixels in the right half
    px = img.load()
    cyan = _rgb(vi_draw.ARROW_COLORS["wind"])
    left = sum(px[x, y] == cyan for x in range(20, 100) for y in range(40, 64))
    right = sum(px[x, y] == cyan for x in range(120, 210) for y in range(40, 64))
    assert right > left
    with pytest.raises(ValueError):
        vi_draw.draw_arrows([{"kind": "rain", "start": [0, 0], "end": [1, 1]}])


def test_pose_is_deterministic_and_checks_joints() -> None:
    a = vi_draw.draw_pose({"r_wrist": [0.3, 0.1]}, size=128)
    assert a.tobytes() == vi_draw.draw_pose({"r_wrist": [0.3, 0.1]}, size=128).tobytes()
    assert a.tobytes() != vi_draw.draw_pose(size=128).tobytes()
    with pytest.raises(ValueError):
        vi_draw.draw_pose({"tail": [0.5, 0.5]})


# ------------------------------------------------------- conflict labels and pre-labels


def _decisions(task: dict) -> dict:
    from annotation.vif.conflicts import task_conflicts, task_prelabels

    return task_conflicts(task_prelabels(task), task["meta"])


@pytest.mark.slow
def test_published_conflicts_are_the_rules_on_the_demo_prelabels(data: dict) -> None:
    """meta.conflicts is what the pipeline publishes: the rules on the (VLM) pre-labels."""
    from annotation.vif.conflicts import CONFLICT_KEYS

    for t in data["tasks"]:
        decisions = _decisions(t)
        assert t["meta"]["conflicts"] == {
            key: decisions[name].conflict for name, key in CONFLICT_KEYS.items()
        }, t["task_id"]
    published = {t["task_id"]: t["meta"]["conflicts"] for t in data["tasks"]}
    # the known bug: a wind-responsive reference (scarf / tree / cat) and a wind arrow
    assert published["demo-02"]["wind_conflict"] is True
    assert published["demo-05"]["wind_conflict"] is True
    # every rule fires somewhere, and each also stays silent somewhere
    for key in ("orientation_conflict", "light_conflict", "wind_conflict", "pose_conflict"):
        assert {p[key] for p in published.values()} == {True, False}, key


@pytest.mark.slow
def test_prelabels_are_canonical_and_valid(data: dict) -> None:
    from annotation.formats.validate import prelabel_problems, task_meta_problems

    labelled = 0
    for t in data["tasks"]:
        assert task_meta_problems(t["meta"], len(t["images"])) == [], t["task_id"]
        for img in t["images"]:
            pre = img.get("meta", {}).get("prelabel")
            if pre is None:
                continue
            labelled += 1
            assert prelabel_problems(pre) == [], (t["task_id"], img["path"])
            assert "lighting_distinctive" not in pre
            assert pre["source"] == "demo VLM" and pre["notes"]
    assert labelled >= 20


def _subject(task: dict, name: str) -> dict:
    return _decisions(task)["orientation"].values["subjects"][name]


@pytest.mark.slow
def test_borderline_orientation_cases(data: dict) -> None:
    """Appendix C.4 at its edges, with the targets inside the pyramids' |yaw| < 60."""
    tasks = {t["task_id"]: t for t in data["tasks"]}
    for t in tasks.values():
        for o in t["meta"].get("orientation", []):
            assert abs(o["yaw"]) < 60 and abs(o["pitch"]) < 60, t["task_id"]
    exactly_60 = _subject(tasks["demo-07"], "tabby")
    assert exactly_60.conflict is True and exactly_60.values["difference"] == 60
    assert exactly_60.values["source_side"] == exactly_60.values["target_side"] == 1
    flip = _subject(tasks["demo-07"], "mug")  # the paper's 30 vs -20
    assert (flip.values["source_yaw"], flip.values["target_yaw"]) == (30, -20)
    assert flip.conflict is True and flip.values["difference"] == 50
    below = _subject(tasks["demo-08"], "tabby")
    assert below.conflict is False and below.values["difference"] == 59
    unreliable = _subject(tasks["demo-08"], "kitten")
    assert unreliable.conflict is False and unreliable.rule.startswith("source yaw unreliable")
    assert tasks["demo-08"]["meta"]["conflicts"]["orientation_conflict"] is False
    across = _subject(tasks["demo-09"], "dancer")  # 350 (= -10) vs 10: 20 apart, flipped
    assert across.conflict is True and across.values["difference"] == 20
    assert across.rule == "opposite yaw signs (left/right flip)"


@pytest.mark.slow
def test_light_wind_and_pose_cases(data: dict) -> None:
    tasks = {t["task_id"]: t for t in data["tasks"]}
    # distinctive light + light arrow (demo-03); distinctive light, no light arrow (demo-07)
    assert _decisions(tasks["demo-03"])["light"].conflict is True
    d7 = _decisions(tasks["demo-07"])["light"]
    assert d7.conflict is False and d7.values["references"]["Image_2"] is True
    # wind-responsive reference + wind arrow
    assert _decisions(tasks["demo-02"])["wind"].conflict is True
    # distinctive pose + pose reference; neutral pose + pose reference
    assert _decisions(tasks["demo-09"])["pose"].conflict is True
    assert _decisions(tasks["demo-04"])["pose"].conflict is False


@pytest.mark.slow
def test_the_deliberately_wrong_prelabels_flip_their_labels(data: dict) -> None:
    """With the value the drawn image supports, the rules give the other label: a verifier
    who corrects the pre-label disagrees with the published label."""
    from annotation.vif.conflicts import CONFLICT_KEYS, task_conflicts, task_prelabels
    from scripts.demo.spec import WRONG_PRELABELS

    tasks = {t["task_id"]: t for t in data["tasks"]}
    assert 1 <= len(WRONG_PRELABELS) <= 2
    for reference, fld, truth, flipped in WRONG_PRELABELS:
        for task_id in flipped:
            task = tasks[task_id]
            pre = task_prelabels(task)
            name = next(n for n in pre if n == reference or n.startswith("Image_")
                        and task["images"][int(n[6:])]["path"].endswith(f"/{reference}.png"))
            assert pre[name][fld] != truth
            notes = pre[name]["notes"].lower()
            assert not any(w in notes for w in ("fur", "wind", "daylight", "light", "sun"))
            corrected = {**pre, name: {**pre[name], fld: truth}}
            kind = {"wind_responsive": "wind", "light_distinctive": "light"}[fld]
            after = task_conflicts(corrected, task["meta"])[kind].conflict
            assert after is not task["meta"]["conflicts"][CONFLICT_KEYS[kind]], task_id


def test_demo_criteria_are_the_vif_importer_criteria() -> None:
    """The demo writes its own rubrics, but names and labels must be VIF-Bench's (one source
    of truth: annotation.formats.vif.CRITERIA), so demo and real imports line up."""
    from annotation.formats.vif import CRITERIA as VIF
    from scripts.demo.spec import CRITERIA as DEMO

    assert [(c["name"], c["label"]) for c in DEMO] == list(VIF)


# -------------------------------------------------------------------- builder and product
def test_the_product_does_not_import_the_demo_builder() -> None:
    """The builder (scripts/demo) is a developer tool; the product (annotation/) only reads
    its output, the committed data/demo."""
    import ast

    offenders = []
    for path in sorted((ROOT / "annotation").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
                     if isinstance(node, ast.ImportFrom) else [])  # "from annotation import demo"
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names
                          if n.split(".")[0] == "scripts" or n == "annotation.demo"]
    assert offenders == []


@pytest.mark.slow
def test_demo_accounts_come_from_the_demo(demo: Path) -> None:
    """The accounts the app creates in the demo database are the ones the builder wrote
    beside the bundle (not a list kept in annotation.accounts)."""
    from annotation.accounts import auth
    from annotation.project_files import DEMO_ACCOUNTS_FILE, demo_accounts
    from scripts.demo.spec import ACCOUNTS

    assert DEMO_ACCOUNTS_FILE == COMMITTED / "accounts.json"
    assert demo_accounts() == demo_accounts(demo / "accounts.json") == list(ACCOUNTS)
    assert {r for _, r, _ in ACCOUNTS} == {"admin", "annotator"}
    answered = {a["annotator"] for a in read_jsonl(demo / "annotations.jsonl")}
    assert answered and answered <= {n for n, r, _ in ACCOUNTS if r == "annotator"}
    assert not hasattr(auth, "DEMO_ACCOUNTS")
