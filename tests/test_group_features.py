"""Grouping a study (issue #15, item 1): ``--by`` into nested meta, several keys, derived task
features and conflict labels (verified where decided, else published), and the tables
``group_scores.csv`` / ``vif_conflicts.csv`` (VIF-Bench App. F.1-F.2 and Sec. 4.3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from annotation.results import features
from annotation.results.groups import conflict_scores_table, group_scores_table
from annotation.results.ratings import HUMAN_MEAN
from annotation.results.study import StudyData, load_study, output_groups
from annotation.store import Store
from tests.helpers.module_demo import ENGINES
from tests.helpers.study_frames import criteria_frame, empty_answers, judges_frame, outputs_frame


# ------------------------------------------------------------------ pure parts
def test_nested_meta_is_flattened_by_dotted_paths():
    flat = features.flat_meta({"dimension": "color", "conflicts": {
        "orientation_conflict": True, "deep": {"x": 2}}, "types": ["layout", "wind"],
        "boxes": [{"x": 1}], "n": None})
    assert flat == {"meta.dimension": "color", "meta.conflicts.orientation_conflict": True,
                    "meta.conflicts.deep.x": 2, "meta.types": ("layout", "wind"),
                    "meta.n": None}  # a list of objects names no group


def test_vi_types_split_shared_images_and_fall_back_to_the_meta():
    assert features.vi_types(["layout", "light+wind", None]) == ("layout", "light", "wind")
    assert features.vi_types([], ["Layout", "orientation"]) == ("layout", "orientation")


def _automatic(rows):
    return pd.DataFrame(rows, columns=["task_id", "conflict", "published", "rules"])


def _verified(rows):
    return pd.DataFrame(rows, columns=["task_id", "conflict", "verified"])


def test_a_verified_label_wins_over_the_published_one_and_says_so():
    table = features.conflict_features(
        _automatic([("t1", "orientation", True, True), ("t1", "light", False, False),
                    ("t2", "wind", None, True), ("t3", "pose", False, None),
                    ("t4", "light", None, None)]),
        _verified([("t1", "orientation", False), ("t3", "pose", None)]))  # t3: a tie
    t = table.set_index("task_id")
    assert t.loc["t1", "conflict.orientation"] is False
    assert t.loc["t1", "conflict.orientation.source"] == "verified"
    assert t.loc["t1", "conflict.light.source"] == "published"
    assert t.loc["t1", "conflict.any"] is False  # both types decided, neither a conflict
    assert t.loc["t1", "conflict.any.source"] == "published"  # the least certain of the two
    assert (t.loc["t2", "conflict.wind"], t.loc["t2", "conflict.wind.source"]) == (True,
                                                                                   "rules")
    assert t.loc["t2", "conflict.any"] is True
    # a verified conflict decides "any" although another type is only the rules' "no"
    mixed = features.conflict_features(
        _automatic([("t5", "orientation", None, False), ("t5", "wind", False, False)]),
        _verified([("t5", "wind", True)])).set_index("task_id")
    assert (mixed.loc["t5", "conflict.any"], mixed.loc["t5", "conflict.any.source"]) == (
        True, "verified")
    assert t.loc["t3", "conflict.pose.source"] == "published"  # a tie is not a verification
    assert t.loc["t4", "conflict.light"] is None and t.loc["t4", "conflict.any"] is None


def _study(outputs: pd.DataFrame, judge_scores: pd.DataFrame,
           human_scores: pd.DataFrame | None = None) -> StudyData:
    return StudyData(
        human_scores=human_scores if human_scores is not None else pd.DataFrame(
            columns=["output_id", "annotator", "criterion", "score"]),
        judge_scores=judge_scores, human_answers=empty_answers("annotator"),
        judge_answers=empty_answers("judge"),
        questions=pd.DataFrame(columns=["question_id", "checklist_id", "operator", "target",
                                        "pass_answer", "depends_on"]),
        outputs=outputs, criteria=criteria_frame(["tif", "vq"]),
        judges=judges_frame(["j"]))


def test_groups_of_several_keys_are_their_combinations_and_lists_are_multi_valued():
    outputs = outputs_frame(["t1/a", "t2/a", "t3/b", "t4/b"], ["a", "a", "b", "b"])
    outputs["task.vi_type"] = [("layout",), ("layout", "wind"), ("wind",), None]
    outputs["task.n_references"] = [2, 10, 2, 3]
    study = _study(outputs, pd.DataFrame(columns=["output_id", "judge", "criterion", "score"]))
    groups = dict(output_groups(study, ["generator", "task.vi_type"]))
    assert groups == {"all": None, "generator=a & task.vi_type=layout": {"t1/a", "t2/a"},
                      "generator=a & task.vi_type=wind": {"t2/a"},
                      "generator=b & task.vi_type=wind": {"t3/b"}}  # t4 has no VI type
    # numbers in numeric order, one key as before
    assert [g for g, _ in output_groups(study, "task.n_references")] == [
        "all", "task.n_references=2", "task.n_references=3", "task.n_references=10"]
    with pytest.raises(KeyError, match="task.nope"):
        output_groups(study, ["generator", "task.nope"])


def _scores(values: dict[str, tuple[float, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"output_id": o, "judge": "j", "criterion": c, "score": s}
                         for o, pair in values.items() for c, s in zip(("tif", "vq"), pair,
                                                                       strict=True)])


def test_group_scores_are_the_means_per_generator_and_group_with_student_intervals():
    rng = np.random.default_rng(5)
    ids = [f"t{i}/{'ab'[i % 2]}" for i in range(40)]
    outputs = outputs_frame(ids, ["ab"[i % 2] for i in range(40)])
    outputs["task.n_references"] = [1 + i % 3 for i in range(40)]
    scores = {o: (float(rng.integers(1, 11)), float(rng.integers(1, 11))) for o in ids}
    humans = pd.DataFrame([{"output_id": o, "annotator": who, "criterion": "tif",
                            "score": float(rng.integers(1, 11))}
                           for o in ids[:10] for who in ("h1", "h2")])
    table = group_scores_table(_study(outputs, _scores(scores), humans),
                               by="task.n_references")
    row = table[(table.group == "task.n_references=2") & (table.generator == "b")
                & (table.scorer == "j") & (table.criterion == "average")].iloc[0]
    mine = [np.mean(scores[o]) for o, n, g in zip(ids, outputs["task.n_references"],
                                                   outputs.generator, strict=True)
            if n == 2 and g == "b"]
    assert row.n_outputs == len(mine) and row["mean"] == pytest.approx(np.mean(mine))
    lo, hi = stats.t.interval(0.95, len(mine) - 1, loc=np.mean(mine), scale=stats.sem(mine))
    assert (row.mean_lo, row.mean_hi) == pytest.approx((lo, hi))
    human = table[(table.group == "all") & (table.scorer == HUMAN_MEAN)
                  & (table.criterion == "tif") & (table.generator == "a")].iloc[0]
    per_output = humans[humans.output_id.isin([o for o in ids[:10] if o.endswith("/a")])
                        ].groupby("output_id").score.mean()
    assert human["mean"] == pytest.approx(per_output.mean())
    assert human.n_outputs == 5
    assert list(dict.fromkeys(table.group)) == ["all", "task.n_references=1",
                                                "task.n_references=2", "task.n_references=3"]


def test_conflict_table_compares_conflict_and_no_conflict_tasks_with_welch():
    rng = np.random.default_rng(8)
    ids = [f"t{i}/g" for i in range(30)]
    outputs = outputs_frame(ids, ["g"] * 30)
    label = [i % 3 == 0 for i in range(30)]
    for kind in features.CONFLICTS:
        outputs[f"conflict.{kind}"] = None
        outputs[f"conflict.{kind}.source"] = None
    outputs["conflict.orientation"] = [label[i] if i < 24 else None for i in range(30)]
    outputs["conflict.orientation.source"] = [("verified" if i < 6 else "published")
                                              if i < 24 else None for i in range(30)]
    outputs["conflict.any"] = outputs["conflict.orientation"]
    outputs["conflict.any.source"] = outputs["conflict.orientation.source"]
    scores = {o: (float(rng.integers(1, 11)), float(rng.integers(1, 11))) for o in ids}
    table = conflict_scores_table(_study(outputs, _scores(scores)))
    row = table[(table.conflict == "orientation") & (table.criterion == "vq")].iloc[0]
    yes = [scores[ids[i]][1] for i in range(24) if label[i]]
    no = [scores[ids[i]][1] for i in range(24) if not label[i]]
    assert (row.n_conflict, row.n_no_conflict) == (len(yes), len(no))
    assert row["diff"] == pytest.approx(np.mean(yes) - np.mean(no))
    assert row.p == pytest.approx(stats.ttest_ind(yes, no, equal_var=False).pvalue)
    assert (row.labels_verified, row.labels_published, row.labels_rules) == (6, 18, 0)
    assert set(table.conflict) == {"orientation", "any"}  # types without labels: no rows


# ------------------------------------------------------------------ the demo project
# the commands run in another folder: they import this checkout's package
_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}


@pytest.fixture(scope="module", params=ENGINES)
def demo(request, tmp_path_factory) -> str:
    """The demo as ``judge-audit demo --db`` builds it: a SQLite file, or a new empty
    PostgreSQL database."""
    folder = tmp_path_factory.mktemp("groups")
    db = str(folder / "demo.db")
    if request.param == "postgresql":
        cluster = request.getfixturevalue("pg_cluster")
        db = cluster.url(cluster.create_database(), media=folder)
    subprocess.run([sys.executable, "-m", "annotation.cli", "demo", "--db", str(db),
                    "--quiet"], check=True, cwd=folder, env=_ENV)
    return db


def test_the_demo_study_has_every_grouping_column(demo):
    with Store.open(demo) as store:
        study = load_study(store)
        tasks = store.query_df("SELECT task_id, meta FROM tasks")
        images = store.query_df("SELECT task_id, role, kind FROM images")
    o = study.outputs.drop_duplicates("task_id").set_index("task_id")
    for task_id, meta in zip(tasks.task_id, tasks.meta, strict=True):
        meta = json.loads(meta)
        mine = images[images.task_id == task_id]
        assert o.loc[task_id, "task.n_references"] == (mine.role == "reference").sum()
        assert o.loc[task_id, "task.n_visual_instructions"] == (
            mine.role == "visual_instruction").sum()
        published = meta.get("conflicts", {})
        for key in ("orientation_conflict", "wind_conflict"):
            if key in published and published[key] is not None:
                assert o.loc[task_id, f"meta.conflicts.{key}"] == published[key]
    assert set(o["conflict.any.source"].dropna()) <= {"published", "rules", "verified"}
    assert o["conflict.any"].notna().any()


def test_report_by_nested_meta_and_several_keys_from_the_command_line(demo, tmp_path):
    out = tmp_path / "report"
    done = subprocess.run(
        [sys.executable, "-m", "annotation.cli", "report", "--db", str(demo), "--out",
         str(out), "--bootstrap", "0", "--by", "generator", "--by",
         "meta.conflicts.orientation_conflict", "--quiet"], capture_output=True, text=True,
        env=_ENV)
    assert done.returncode == 0, done.stderr
    groups = set(pd.read_csv(out / "group_scores.csv").group)
    assert "generator=nano-banana & meta.conflicts.orientation_conflict=True" in groups
    ratings = pd.read_csv(out / "ratings.csv")
    assert any(" & " in g for g in ratings.group)
    conflicts = pd.read_csv(out / "vif_conflicts.csv")
    assert set(conflicts.conflict) >= {"orientation", "any"}
    assert "VIF-Bench Fig. 6 (left)" in (out / "report.html").read_text()


def test_leniency_counts_only_the_decisions_of_each_group(demo):
    """One ``--by`` key: each group's row counts its own outputs' decisions (a review found
    every group counting all of them), and the groups add up to ``all``."""
    from annotation.results.checklist import leniency_table

    with Store.open(demo) as store:
        study = load_study(store)
    table = leniency_table(study, by="generator")
    for _judge, mine in table.groupby("judge"):
        everything = mine[mine.facet == "all"].iloc[0]
        groups = mine[mine.facet == "generator"]
        assert len(groups) == study.outputs.generator.nunique()
        assert groups.n_decisions.sum() == everything.n_decisions
        assert (groups.n_decisions < everything.n_decisions).all()
        assert groups.judge_yes_human_no.sum() == everything.judge_yes_human_no
