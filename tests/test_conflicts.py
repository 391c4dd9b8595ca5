"""Conflict rules of VIF-Bench (VIF-Bench: Evaluating Visual Instruction Following in
Multi-Reference Image Generation, Section 3.1 and Appendix C.4 "Conflict Detection")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from annotation.vif.conflicts import (
    CONFLICT_KEYS,
    YAW_CONFLICT_DEG,
    Decision,
    layout_conflict,
    light_conflict,
    normalize_yaw,
    orientation_conflict,
    pose_conflict,
    task_conflicts,
    task_prelabels,
    wind_conflict,
    yaw_difference,
    yaw_side,
)
from tests.helpers.papers import VIF_BENCH, paper_text


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (170, -170, 20),
        (-170, 170, 20),
        (0, 180, 180),
        (350, 10, 20),
        (30, -20, 50),
        (-90, 90, 180),
        (45, 45, 0),
        (720, 0, 0),
        (-180, 180, 0),
        (10.5, -10.5, 21),
    ],
)
def test_yaw_difference_is_circular(a: float, b: float, expected: float) -> None:
    assert yaw_difference(a, b) == pytest.approx(expected)
    assert 0 <= yaw_difference(a, b) <= 180


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), None, "30", True])
def test_yaw_difference_rejects_non_numbers(bad: object) -> None:
    with pytest.raises(ValueError):
        yaw_difference(bad, 0)  # type: ignore[arg-type]


def test_normalize_and_side() -> None:
    assert normalize_yaw(350) == pytest.approx(-10)
    assert normalize_yaw(-180) == 180
    assert normalize_yaw(540) == 180
    assert [yaw_side(y) for y in (0, 180, -180, 360, 30, -20, 350, 190)] == [
        0,
        0,
        0,
        0,
        1,
        -1,
        -1,
        -1,
    ]


def test_paper_example_sign_flip_under_60_is_conflict() -> None:
    d = orientation_conflict(30, True, -20)
    assert d.conflict is True
    assert "sign" in d.rule and ">= 60" not in d.rule
    assert d.values["difference"] == pytest.approx(50)
    assert (d.values["source_side"], d.values["target_side"]) == (1, -1)


@pytest.mark.parametrize(
    ("src", "tgt", "conflict", "rule_part"),
    [
        (10, 50, False, "< 60"),  # same side, 40 apart
        (10, 70, True, ">= 60"),  # same side, exactly 60 apart
        (10, 69.9, False, "< 60"),
        (-50, 40, True, "and opposite"),  # both rules
        (0, 40, False, "< 60"),  # 0 has no side: no sign flip
        (0, -59, False, "< 60"),
        (180, 150, False, "< 60"),  # 180 has no side either
        (170, -170, True, "opposite yaw signs"),  # back-facing, 20 apart but flipped
        (350, 10, True, "opposite yaw signs"),  # 0..360 input: -10 vs 10
        (0, 180, True, ">= 60"),
    ],
)
def test_orientation_rules(src: float, tgt: float, conflict: bool, rule_part: str) -> None:
    d = orientation_conflict(src, True, tgt)
    assert d.conflict is conflict
    assert rule_part in d.rule


def test_unreliable_or_missing_yaw() -> None:
    d = orientation_conflict(30, False, -90)
    assert d.conflict is False and "unreliable" in d.rule
    assert orientation_conflict(None, False, 40).conflict is False
    assert orientation_conflict(30, None, -90).conflict is None
    assert orientation_conflict(None, True, 40).conflict is None
    assert orientation_conflict(30, True, None).conflict is None
    assert orientation_conflict(float("nan"), True, 40).conflict is None


@pytest.mark.parametrize("rule", [light_conflict, wind_conflict, pose_conflict])
def test_presence_rules(rule) -> None:  # type: ignore[no-untyped-def]
    assert rule(True, True).conflict is True
    assert rule(True, False).conflict is False
    assert rule(False, True).conflict is False
    assert rule(False, False).conflict is False
    assert rule(None, True).conflict is None
    assert rule(True, None).conflict is None
    assert rule(None, False).conflict is False  # no VI: nothing to conflict with
    assert rule(False, None).conflict is False
    d = rule(True, False)
    assert len(d.values) == 2 and sorted(d.values.values()) == [False, True]


def test_layout_never_conflicts() -> None:
    assert layout_conflict() == Decision(False, "layout never conflicts", {})


PRE = {
    "cat": {
        "yaw": -35,
        "yaw_reliable": True,
        "lighting_distinctive": False,
        "wind_responsive": True,
        "pose_distinctive": False,
    },
    "dancer": {
        "yaw": 0,
        "yaw_reliable": True,
        "lighting_distinctive": False,
        "wind_responsive": False,
        "pose_distinctive": True,
    },
    "Image_2": {"lighting_distinctive": True, "wind_responsive": False},
}


def test_task_conflicts_combines_rules() -> None:
    targets = {
        "orientation": [
            {"subject": "cat", "yaw": 40, "pitch": 0},
            {"subject": "dancer", "yaw": 20, "pitch": 0},
        ],
        "arrows": [{"kind": "light", "start": [0.1, 0.1], "end": [0.5, 0.5]}],
        "pose": {"subject": "dancer"},
    }
    out = task_conflicts(PRE, targets)
    assert set(out) == {"orientation", "light", "wind", "pose", "layout"}
    assert set(CONFLICT_KEYS) == set(out) - {"layout"}
    assert out["orientation"].conflict is True
    assert out["orientation"].values["subjects"]["dancer"].conflict is False
    assert out["orientation"].rule.startswith("cat:")
    assert out["light"].conflict is True  # the scene reference Image_2 has neon-like light
    assert out["light"].values["references"]["Image_2"] is True
    assert out["wind"].conflict is False and "no wind arrow" in out["wind"].rule
    assert out["pose"].conflict is True
    assert out["layout"].conflict is False


def test_task_conflicts_light_wind_from_vi_types() -> None:
    out = task_conflicts(PRE, {"visual_instruction_types": ["layout", "light+wind"]})
    assert out["light"].conflict is True and out["wind"].conflict is True
    assert out["orientation"].conflict is False and out["pose"].conflict is False


def test_task_conflicts_tolerates_missing() -> None:
    out = task_conflicts({}, {})
    assert out["orientation"].conflict is False  # no orientation VI at all
    assert out["light"].conflict is None  # arrows unknown, no pre-labels
    out = task_conflicts(
        {},
        {
            "orientation": [{"subject": "dog", "yaw": 30}],
            "arrows": [{"kind": "wind"}],
            "pose": "dog",
        },
    )
    assert out["orientation"].conflict is None
    assert out["wind"].conflict is None
    assert out["pose"].conflict is None
    # an unknown reference does not hide a known conflict
    pre = {"a": {"wind_responsive": True}, "b": {}}
    assert task_conflicts(pre, {"arrows": [{"kind": "wind"}]})["wind"].conflict is True
    pre = {"a": {"wind_responsive": False}, "b": {}}
    assert task_conflicts(pre, {"arrows": [{"kind": "wind"}]})["wind"].conflict is None
    # unreliable subject beside an undecidable one
    out = task_conflicts(
        {"x": {"yaw": 1, "yaw_reliable": False}},
        {"orientation": {"x": {"yaw": -90}, "y": {"yaw": 10}}},
    )
    assert out["orientation"].conflict is None
    assert out["orientation"].values["subjects"]["x"].conflict is False


def _demo_tasks(tmp_path: Path) -> dict[str, dict]:
    from scripts.demo import build_demo_bundle

    build_demo_bundle(tmp_path)
    rows = [json.loads(x) for x in (tmp_path / "tasks.jsonl").read_text().splitlines() if x]
    return {r["task_id"]: r for r in rows}


@pytest.mark.slow
def test_demo_tasks(tmp_path: Path) -> None:
    tasks = _demo_tasks(tmp_path)
    # demo-03: cat reference faces left (-35), pyramid 40; night street + light arrow
    t3 = tasks["demo-03"]
    pre = task_prelabels(t3)
    assert pre["cat"]["yaw"] == -35 and pre["Image_1"]["light_distinctive"] is True
    out = task_conflicts(pre, t3["meta"])
    assert out["orientation"].conflict is True
    assert out["orientation"].values["subjects"]["cat"].values["difference"] == 75
    assert out["light"].conflict is True and out["wind"].conflict is False
    for name, key in CONFLICT_KEYS.items():
        assert out[name].conflict is t3["meta"]["conflicts"][key]
    # demo-06: mug reference 30, pyramid -40 -> flip and 70 apart, as labelled
    t6 = tasks["demo-06"]
    out = task_conflicts(task_prelabels(t6), t6["meta"])
    for name, key in CONFLICT_KEYS.items():
        assert out[name].conflict is t6["meta"]["conflicts"][key]
    # demo-04: pose reference for a person whose reference pose is neutral
    t4 = tasks["demo-04"]
    assert task_conflicts(task_prelabels(t4), t4["meta"])["pose"].conflict is False
    # demo-02: the wind-responsive person (scarf) meets a wind arrow
    t2 = tasks["demo-02"]
    assert task_conflicts(task_prelabels(t2), t2["meta"])["wind"].conflict is True


def test_the_orientation_rule_on_the_papers_worked_example() -> None:
    """Appendix C.4, "Orientation conflict": a conflict when the minimum angular difference
    is >= 60 degrees or the two yaws have opposite signs; yaw 30 against yaw -20 is only 50
    apart but flipped, hence a conflict. The same 50 degrees on one side is none."""
    assert YAW_CONFLICT_DEG == 60
    flipped = orientation_conflict(30, True, -20)
    assert yaw_difference(30, -20) == pytest.approx(50)
    assert flipped.conflict is True and "opposite yaw signs" in flipped.rule
    assert orientation_conflict(30, True, 80).conflict is False  # 50 apart, same side
    assert orientation_conflict(30, True, 90).conflict is True  # 60 apart, same side
    assert orientation_conflict(-30, True, 20).conflict is True  # the mirror image


def test_the_orientation_rule_is_the_one_the_paper_states() -> None:
    """The threshold and the worked example read from the paper's text (skipped when the
    shared folder is absent), then applied to the product's rule."""
    text = paper_text(VIF_BENCH)
    rule = text[text.index("C.4 Conflict Detection"):text.index("C.5 Converting")]
    [threshold] = re.findall(r"source and target is \$\\geq (\d+)\^\{\\circ\}\$", rule)
    [(a, b)] = re.findall(r"yaw \$(-?\d+)\^\{\\circ\}\$ and yaw \$(-?\d+)\^\{\\circ\}\$", rule)
    [only] = re.findall(r"the difference is only \$(\d+)\^\{\\circ\}\$", rule)
    source, target = float(a), float(b)
    assert float(threshold) == YAW_CONFLICT_DEG
    assert yaw_difference(source, target) == pytest.approx(float(only))
    assert float(only) < float(threshold)  # the example is decided by the sign rule alone
    assert orientation_conflict(source, True, target).conflict is True
    same_side = source + float(only)
    assert orientation_conflict(source, True, same_side).conflict is False
    assert orientation_conflict(source, True, source + float(threshold)).conflict is True
