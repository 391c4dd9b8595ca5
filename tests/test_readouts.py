"""Dense / Medium / Sparse text readouts (VIF-Bench: Evaluating Visual Instruction Following
in Multi-Reference Image Generation, Appendix C.5 and Figure 8)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from annotation.vif.readouts import (
    arrow_dense,
    arrow_medium,
    arrow_sparse,
    compass4,
    compass8,
    heading,
    layout_cell,
    layout_dense,
    layout_medium,
    layout_size,
    layout_sparse,
    orientation_dense,
    orientation_medium,
    orientation_sparse,
    pitch_level,
    readouts,
    yaw_direction4,
    yaw_direction8,
)
from tests.helpers.papers import VIF_BENCH, paper_text

#: The paper's quoted example texts (Appendix C.5, Figure 8) and a visual instruction,
#: built here, whose readout must say them.
PAPER_EXAMPLES = [
    ("from (13%, 8%) to (87%, 92%) of the canvas",  # TI Dense of a layout box
     lambda: layout_dense((0.13, 0.08, 0.87, 0.92))),
    ("front-right, level", lambda: orientation_medium(40, 10)),  # Figure 8, Medium
    ("the viewer's right", lambda: orientation_sparse(40)),  # Figure 8, Sparse
    ("coming from the upper-left", lambda: arrow_medium("light", (0.12, 0.12), (0.55, 0.62))),
    ("blowing from left to right", lambda: arrow_medium("wind", (0.1, 0.35), (0.82, 0.45))),
]


def test_layout_dense_paper_example() -> None:
    # C.5: "from (13%, 8%) to (87%, 92%) of the canvas"
    text = layout_dense((0.13, 0.08, 0.87, 0.92))
    assert text == "within the rectangular region from (13%, 8%) to (87%, 92%) of the canvas"


@pytest.mark.parametrize(
    ("box", "cell", "size", "third"),
    [
        ((0.13, 0.08, 0.87, 0.92), "center", "large", "middle"),  # area 0.6216
        ((0.05, 0.05, 0.25, 0.25), "top-left", "small", "left"),  # area 0.04
        ((0.70, 0.62, 0.92, 0.92), "bottom-right", "small", "right"),  # 0.066
        ((0.08, 0.40, 0.52, 0.92), "middle-left", "medium", "left"),  # centre (.30,.66)
        ((0.50, 0.05, 0.90, 0.45), "top-right", "medium", "right"),  # area 0.16
        ((0.0, 0.0, 2 / 3, 2 / 3), "center", "large", "middle"),  # centre on the 1/3 lines
        ((0.0, 0.0, 1.0, 1 / 3), "top-center", "large", "middle"),  # area exactly 1/3
        ((0.0, 0.0, 1 / 3, 1 / 3), "top-left", "medium", "left"),  # area exactly 1/9
    ],
)
def test_layout_medium_and_sparse(
    box: tuple[float, float, float, float], cell: str, size: str, third: str
) -> None:
    assert layout_cell(box) == cell
    assert layout_size(box) == size
    assert layout_medium(box) == f"{size}, in the {cell} cell of a 3x3 grid over the image"
    assert layout_sparse(box) == f"in the {third} third of the image"


@pytest.mark.parametrize(
    ("yaw", "d8", "d4"),
    [
        (0, "front", "the viewer"),
        (22.4, "front", "the viewer"),
        (22.5, "front-right", "the viewer's right"),
        (40, "front-right", "the viewer's right"),  # Figure 8 progression
        (-40, "front-left", "the viewer's left"),
        (90, "right", "the viewer's right"),
        (-90, "left", "the viewer's left"),
        (135, "back-right", "the viewer's right"),
        (-120, "back-left", "the viewer's left"),
        (157.5, "back", "away from the viewer"),
        (180, "back", "away from the viewer"),
        (-170, "back", "away from the viewer"),
        (270, "left", "the viewer's left"),  # 0..360 input
    ],
)
def test_orientation_directions(yaw: float, d8: str, d4: str) -> None:
    assert yaw_direction8(yaw) == d8
    assert yaw_direction4(yaw) == d4
    assert orientation_sparse(yaw) == f"facing {d4}"


def test_orientation_pitch_and_texts() -> None:
    assert [pitch_level(p) for p in (0, 14.9, -14.9, 15, -15, 50)] == [
        "level",
        "level",
        "level",
        "tilted up",
        "tilted down",
        "tilted up",
    ]
    # Figure 8: explicit yaw/pitch -> "front-right, level" -> "the viewer's right"
    assert orientation_medium(40, 10) == "facing front-right, level"
    assert orientation_sparse(40) == "facing the viewer's right"
    dense = orientation_dense(40, -12.5)
    assert dense.startswith("facing yaw 40°, pitch -12.5°")
    assert "+90° the viewer's right" in dense and "positive pitch is up" in dense


@pytest.mark.parametrize(
    ("start", "end", "angle", "c8", "c4"),
    [
        ((0.1, 0.5), (0.9, 0.5), 0, "right", "right"),
        ((0.5, 0.9), (0.5, 0.1), 90, "top", "top"),  # y grows downward: this is "up"
        ((0.9, 0.5), (0.1, 0.5), 180, "left", "left"),
        ((0.5, 0.1), (0.5, 0.9), 270, "bottom", "bottom"),
        ((0.1, 0.1), (0.6, 0.6), 315, "lower-right", "right"),  # 315 is a 4-way boundary
        ((0.2, 0.8), (0.7, 0.3), 45, "upper-right", "top"),
        ((0.12, 0.12), (0.55, 0.62), 310.6961, "lower-right", "bottom"),
    ],
)
def test_arrow_heading_and_compass(
    start: tuple[float, float], end: tuple[float, float], angle: float, c8: str, c4: str
) -> None:
    assert heading(start, end) == pytest.approx(angle, abs=1e-3)
    assert compass8(heading(start, end)) == c8
    assert compass4(heading(start, end)) == c4


def test_compass_boundaries() -> None:
    assert compass8(22.5) == "upper-right" and compass8(22.4) == "right"
    assert compass8(337.5) == "right" and compass8(337.4) == "lower-right"
    assert compass4(45) == "top" and compass4(44.9) == "right"
    with pytest.raises(ValueError):
        heading((0.3, 0.3), (0.3, 0.3))


def test_arrow_texts() -> None:
    # C.5 examples: "blowing from left to right", "coming from the upper-left"
    assert arrow_medium("wind", (0.1, 0.35), (0.82, 0.45)) == "wind blowing from left to right"
    assert arrow_medium("light", (0.12, 0.12), (0.55, 0.62)) == "light coming from the upper-left"
    assert arrow_sparse("light", (0.12, 0.12), (0.55, 0.62)) == "light coming from the top"
    assert arrow_sparse("wind", (0.5, 0.9), (0.6, 0.1)) == "wind blowing from bottom to top"
    assert arrow_dense("wind", (0.1, 0.35), (0.82, 0.45)) == (
        "wind blowing from (10%, 35%) toward (82%, 45%) of the canvas, "
        "heading 352° (0° = toward the right, 90° = toward the top)"
    )
    assert arrow_dense("light", (0.12, 0.12), (0.55, 0.62)).startswith(
        "light arriving from (12%, 12%) and falling toward (55%, 62%)"
    )


def test_readouts_shapes_and_bad_input() -> None:
    meta = {
        "layout": {"dog": [0.1, 0.1, 0.4, 0.5]},
        "orientation": {"dog": {"yaw": -100, "pitch": 30}, "bad": {"yaw": "x"}},
        "arrows": [
            {"kind": "wind", "start": [0.5, 0.5], "end": [0.5, 0.5]},
            {"kind": "light", "start": [0.9, 0.1], "end": [0.1, 0.1]},
        ],
    }
    out = readouts(json.dumps(meta))
    assert [(r["kind"], r["subject"]) for r in out] == [
        ("layout", "dog"),
        ("orientation", "dog"),
        ("light", None),
    ]
    assert out[1]["medium"] == "facing left, tilted up"
    assert out[2]["sparse"] == "light coming from the right"
    assert readouts("not json") == [] and readouts(None) == [] and readouts({}) == []


@pytest.mark.slow
def test_readouts_on_demo(tmp_path: Path) -> None:
    from scripts.demo import build_demo_bundle

    build_demo_bundle(tmp_path)
    rows = [json.loads(x) for x in (tmp_path / "tasks.jsonl").read_text().splitlines() if x]
    metas = {r["task_id"]: r["meta"] for r in rows}
    out = readouts(metas["demo-03"])
    assert [(r["kind"], r["subject"]) for r in out] == [
        ("layout", "cat"),
        ("orientation", "cat"),
        ("light", None),
    ]
    lay, ori, light = out
    # cat box [0.25, 0.42, 0.80, 0.92]: centre (0.525, 0.67), area 0.275
    assert lay["dense"] == (
        "within the rectangular region from (25%, 42%) to (80%, 92%) of the canvas"
    )
    assert lay["medium"] == "medium, in the bottom-center cell of a 3x3 grid over the image"
    assert lay["sparse"] == "in the middle third of the image"
    assert ori["medium"] == "facing front-right, level"  # yaw 40, pitch 10
    assert ori["sparse"] == "facing the viewer's right"
    assert light["medium"] == "light coming from the upper-left"
    assert {r["kind"] for r in readouts(metas["demo-05"])} == {"layout", "wind", "light"}
    wind = next(r for r in readouts(metas["demo-05"]) if r["kind"] == "wind")
    assert wind["medium"] == "wind blowing from right to left"  # "blowing to the left"
    mug = next(r for r in readouts(metas["demo-06"]) if r["kind"] == "orientation")
    assert mug["medium"] == "facing front-left, tilted down"  # yaw -40, pitch -15
    for meta in metas.values():
        for r in readouts(meta):
            assert set(r) == {"kind", "subject", "dense", "medium", "sparse"}
            assert all(isinstance(r[k], str) and r[k] for k in ("dense", "medium", "sparse"))


@pytest.mark.parametrize(("quoted", "readout"), PAPER_EXAMPLES,
                         ids=[q for q, _ in PAPER_EXAMPLES])
def test_readouts_say_what_the_paper_quotes(quoted: str, readout: Callable[[], str]) -> None:
    assert quoted in readout()


def test_the_quoted_examples_are_the_papers() -> None:
    """Each readout above, made by the product, says a phrase the paper's Appendix C.5 or
    Figure 8 quotes (skipped when the shared folder is absent)."""
    text = paper_text(VIF_BENCH)
    section = text[text.index("Figure 8:"):text.index("Appendix D Further Statistics")]
    for quoted, readout in PAPER_EXAMPLES:
        said = readout()
        assert quoted in said
        assert quoted in section, f"the paper does not quote {quoted!r} (product: {said!r})"
