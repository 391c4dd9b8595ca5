"""VIF-Bench text-variant tasks ("VIF-Bench: Evaluating Visual Instruction Following in
Multi-Reference Image Generation", Sec. 4.4 and App. C.5): ``judge-audit variants``, the
import of outputs generated from a variant, and ``vif_variants.csv``."""

from __future__ import annotations

import json
import shutil
import statistics
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from annotation.cli.main import main
from annotation.formats.importers import import_path
from annotation.records import ImportRefused
from annotation.results.study import load_study
from annotation.results.variants import variant_table
from annotation.stats.means import paired_difference
from annotation.store import Store
from annotation.store.items import annotatable_outputs
from annotation.vif.variants import stratified_sample, strip_erase_clause
from tests.helpers.bundles import db_checksum, read_jsonl, write_jsonl
from tests.helpers.variant_bundle import (
    CRITERIA,
    ERASE,
    GENERATORS,
    JUDGE,
    generate_variant_outputs,
    make_variant_source,
)
from tests.helpers.vif_fixture import make_vif_release

SERVED_ENGINES = ("sqlite", "postgresql")

# ------------------------------------------------------------------ paired difference


def test_paired_difference_matches_scipy_paired_t() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(6, 2, 40)
    y = x - rng.normal(0.4, 1, 40)
    row = paired_difference(x, y).iloc[0]
    ref = stats.ttest_rel(x, y)
    ci = ref.confidence_interval(0.95)
    assert row["n"] == 40 and row["df"] == 39
    assert row["diff"] == pytest.approx(float(np.mean(x - y)))
    assert row["diff_lo"] == pytest.approx(ci.low) and row["diff_hi"] == pytest.approx(ci.high)
    assert row["p"] == pytest.approx(ref.pvalue)


def test_paired_difference_keeps_complete_pairs_only() -> None:
    x = [7, 8, np.nan, 5, 6]
    y = [6, 6, 4, np.nan, 6]
    row = paired_difference(x, y).iloc[0]
    ref = stats.ttest_rel([7, 8, 6], [6, 6, 6])
    assert row["n"] == 3 and row["mean_x"] == 7 and row["mean_y"] == 6
    assert row["p"] == pytest.approx(ref.pvalue)
    one = paired_difference([3], [1]).iloc[0]
    assert one["diff"] == 2 and np.isnan(one["diff_lo"]) and np.isnan(one["p"])
    with pytest.raises(ValueError, match="same length"):
        paired_difference([1, 2], [1])


# ------------------------------------------------------------------------- fixtures


def _project(tmp_path: Path, per_count: dict[int, int], db: str) -> tuple[str, dict]:
    """The variant source of ``per_count`` imported into the new project ``db``."""
    source = make_variant_source(tmp_path / "source", per_count)
    with Store.open(db) as store:
        import_path(store, tmp_path / "source")
    return db, source


def _variants(db: str | Path, out: Path, level: str, *extra: str) -> int:
    return main(["variants", "--db", str(db), "--level", level, "--out", str(out), "--quiet",
                 *extra])


# ---------------------------------------------------------------- the variant tasks


def test_images_removed_renumbered_and_references_rewritten(tmp_path: Path,
                                                            make_engine_db) -> None:
    db, source = _project(tmp_path, {2: 1}, make_engine_db("study.db"))
    assert _variants(db, tmp_path / "dense", "dense") == 0
    (task,) = read_jsonl(tmp_path / "dense" / "tasks.jsonl")
    original = source["tasks"]["n2_00"]
    # input order: cat, layout, dog, pyramid, wind, meadow -> cat, dog, meadow
    assert task["task_id"] == "n2_00~text-dense"
    assert task["meta"]["variant_of"] == "n2_00" and task["meta"]["text_variant"] == "text-dense"
    assert task["meta"]["image_map"] == [0, 2, 5]
    assert [i["label"] for i in task["images"]] == ["cat", "dog", "meadow"]
    assert all(i["role"] == "reference" for i in task["images"])
    for new, old in enumerate([0, 2, 5]):  # the very same image files
        assert ((tmp_path / "dense" / task["images"][new]["path"]).read_bytes()
                == (tmp_path / "source" / original["images"][old]["path"]).read_bytes())
    body, readout = task["instruction"].split("\n\n")
    assert body == ("In the meadow of Image_2, the cat of Image_0 and the dog of Image_1 sit in "
                    "their boxes of the text below. The cat faces as the pyramid of the text "
                    "below shows. The wind blows as the arrow of the text below shows.")
    assert ERASE not in task["instruction"]  # the trailing clause is removed (App. C.5)
    # the readouts, as the paper words TI Dense: corner percentages, yaw/pitch, endpoints
    assert ("The cat of Image_0 is within the rectangular region from (2%, 40%) to (48%, 90%) "
            "of the canvas.") in readout
    assert ("The dog of Image_1 is within the rectangular region from (52%, 40%) to "
            "(98%, 90%) of the canvas.") in readout
    assert "The cat of Image_0 is facing yaw 40°, pitch 10°" in readout
    assert "wind blowing from (10%, 30%) toward (80%, 35%) of the canvas" in readout
    assert "questions" not in task  # judged with the original's checklist
    listed = pd.read_csv(tmp_path / "dense" / "variant_tasks.csv")
    assert listed.to_dict("records") == [{
        "task_id": "n2_00", "variant_task_id": "n2_00~text-dense", "variant": "text-dense",
        "subject_count": 2, "images": 3,
        "removed": "Image_1:layout Image_3:orientation Image_4:wind"}]


@pytest.mark.parametrize(("level", "texts"), [
    ("medium", ["The cat of Image_0 is large, in the center cell of a 3x3 grid over "
                "the image.", "The cat of Image_0 is facing front-right, level.",
                "The scene has wind blowing from left to right."]),
    ("sparse", ["The cat of Image_0 is in the middle third of the image.",
                "The cat of Image_0 is facing the viewer's right.",
                "The scene has wind blowing from left to right."]),
])
def test_readout_of_each_level_in_the_instruction(tmp_path: Path, level: str,
                                                  texts: list[str],
                                                  make_engine_db: Callable[[str], str]) -> None:
    db, _ = _project(tmp_path, {1: 1}, make_engine_db("study.db"))
    assert _variants(db, tmp_path / level, level) == 0
    (task,) = read_jsonl(tmp_path / level / "tasks.jsonl")
    readout = task["instruction"].split("\n\n")[1]
    assert readout == " ".join(texts)
    assert [r["text"] for r in task["meta"]["readouts"]] == [
        t.split(" is ", 1)[1].rstrip(".") if " is " in t else t[len("The scene has "):-1]
        for t in texts]


def test_stratified_sample_size_per_subject_count(tmp_path: Path,
                                                  make_engine_db: Callable[[str], str]) -> None:
    db, _ = _project(tmp_path, {1: 5, 2: 2, 3: 4, 4: 1}, make_engine_db("study.db"))
    assert _variants(db, tmp_path / "a", "sparse", "--per-count", "3", "--seed", "7") == 0
    listed = pd.read_csv(tmp_path / "a" / "variant_tasks.csv")
    assert listed.groupby("subject_count").size().to_dict() == {1: 3, 2: 2, 3: 3, 4: 1}
    assert (listed.task_id.str[1].astype(int) == listed.subject_count).all()
    bundle = json.loads((tmp_path / "a" / "bundle.json").read_text())
    assert bundle["meta"]["variants"]["tasks"] == list(listed.task_id)
    # same seed, same subset, at another level too; another seed, another subset
    assert _variants(db, tmp_path / "b", "dense", "--per-count", "3", "--seed", "7") == 0
    assert list(pd.read_csv(tmp_path / "b" / "variant_tasks.csv").task_id) == list(
        listed.task_id)
    counts = {f"n{n}_{i}": n for n, k in ((1, 5), (3, 4)) for i in range(k)}
    draws = {tuple(stratified_sample(counts, 3, seed)) for seed in range(6)}
    assert len(draws) > 1
    assert all(len(d) == 6 for d in draws)
    assert _variants(db, tmp_path / "c", "dense") == 0  # default 50: every task
    assert len(pd.read_csv(tmp_path / "c" / "variant_tasks.csv")) == 12


def test_published_subset_instead_of_a_drawn_one(tmp_path: Path, capsys,
                                                 make_engine_db: Callable[[str], str]) -> None:
    """A VIF-Bench release marks its own subset (``in_vi_vs_ti_experiment``)."""
    root = tmp_path / "source"
    make_variant_source(root, {1: 3, 2: 2})
    rows = read_jsonl(root / "tasks.jsonl")
    db = make_engine_db("db.db")
    with Store.open(db) as store:
        import_path(store, root)
    assert _variants(db, tmp_path / "none", "dense", "--published") == 1
    assert "no task is marked in_vi_vs_ti_experiment" in capsys.readouterr().err
    for row in rows:
        row["meta"]["in_vi_vs_ti_experiment"] = row["task_id"] in ("n2_01", "n1_02")
    write_jsonl(root / "tasks.jsonl", rows)
    for name in ("outputs.jsonl", "judgments.jsonl"):
        write_jsonl(root / name, [])
    db2 = make_engine_db("db2.db")
    with Store.open(db2) as store:
        import_path(store, root)
    assert _variants(db2, tmp_path / "pub", "dense", "--published", "--per-count", "1") == 0
    assert list(pd.read_csv(tmp_path / "pub" / "variant_tasks.csv").task_id) == [
        "n1_02", "n2_01"]
    meta = json.loads((tmp_path / "pub" / "bundle.json").read_text())["meta"]["variants"]
    assert meta["published"] is True and meta["seed"] is None


def test_layout_only_tasks_are_not_in_the_subset(tmp_path: Path,
                                                 make_engine_db: Callable[[str], str]) -> None:
    root = tmp_path / "source"
    make_variant_source(root, {1: 2})
    rows = read_jsonl(root / "tasks.jsonl")
    rows[0]["images"] = [i for i in rows[0]["images"] if i["kind"] in ("main", "layout",
                                                                       "scene")]
    rows[0]["instruction"] = "The cat of Image_0 in the box of Image_1, in Image_2."
    write_jsonl(root / "tasks.jsonl", rows)
    db = make_engine_db("db.db")
    with Store.open(db) as store:
        import_path(store, root)
    assert _variants(db, tmp_path / "out", "dense") == 0
    assert list(pd.read_csv(tmp_path / "out" / "variant_tasks.csv").task_id) == ["n1_01"]


# -------------------------------------------------------------------------- errors


def test_unknown_level_is_a_usage_error(tmp_path: Path, capsys,
                                        make_engine_db: Callable[[str], str]) -> None:
    db, _ = _project(tmp_path, {1: 1}, make_engine_db("study.db"))
    assert _variants(db, tmp_path / "out", "verbose") == 2
    err = capsys.readouterr().err
    assert "unknown level 'verbose'" in err and "dense, medium, sparse" in err
    assert not (tmp_path / "out").exists()


def test_an_existing_bundle_is_never_overwritten(tmp_path: Path, capsys,
                                                 make_engine_db: Callable[[str], str]) -> None:
    db, source = _project(tmp_path, {1: 1}, make_engine_db("study.db"))
    out = tmp_path / "dense"
    assert _variants(db, out, "dense") == 0
    generate_variant_outputs(out, {t: n for n, t in enumerate(source["order"])})
    outputs = (out / "outputs.jsonl").read_text()
    assert _variants(db, out, "dense") == 1
    assert "exists and is not an empty folder" in capsys.readouterr().err
    assert (out / "outputs.jsonl").read_text() == outputs  # the generated outputs stay


def test_project_without_vif_tasks_is_refused(tmp_path: Path, capsys,
                                              make_engine_db: Callable[[str], str]) -> None:
    root = tmp_path / "plain"
    make_variant_source(root, {1: 1})
    rows = read_jsonl(root / "tasks.jsonl")
    for row in rows:
        row["images"] = [i for i in row["images"] if i["role"] == "reference"]
        row["instruction"] = "A cat."
        row["meta"] = {}
    write_jsonl(root / "tasks.jsonl", rows)
    db = make_engine_db("plain.db")
    with Store.open(db) as store:
        import_path(store, root)
    assert _variants(db, tmp_path / "out", "dense") == 1
    assert "no VIF-Bench tasks in this project" in capsys.readouterr().err


@pytest.mark.parametrize("clause", [
    ERASE, "Remove all boxes.", "Remove the box and arrows.", "Remove the box.",
    "Do not draw the arrows. Never show the pyramid."])
def test_trailing_erase_clause_removed(clause: str) -> None:
    text = "Put the fox of Image_0 in the box of Image_1. Remove the hat of Image_0."
    assert strip_erase_clause(f"{text} {clause}\n") == text  # the hat's sentence stays


def test_task_without_readouts_is_named(tmp_path: Path, capsys,
                                        make_engine_db: Callable[[str], str]) -> None:
    """The VIF-Bench release fixture: v6_n2_00 has a layout image but no layout.json."""
    make_vif_release(tmp_path / "release")
    db = make_engine_db("vif.db")
    with Store.open(db) as store:
        import_path(store, tmp_path / "release")
    assert _variants(db, tmp_path / "out", "medium") == 1
    err = capsys.readouterr().err
    assert "task 'v6_n2_00': Image_2 (layout) has no readout: meta.layout has no layout entry" \
        in err
    assert "v3_n3_01" not in err  # its layout and arrows have their text
    assert not (tmp_path / "out").exists()


def test_pose_without_text_is_named_and_pose_text_is_used(tmp_path: Path, capsys,
                                                          make_engine_db) -> None:
    root = tmp_path / "source"
    make_variant_source(root, {1: 1})
    (row,) = read_jsonl(root / "tasks.jsonl")
    row["images"][3] = {**row["images"][3], "kind": "pose", "label": "pose"}  # Image_3
    row["meta"]["pose"] = {"subject": "cat", "image": 3}
    write_jsonl(root / "tasks.jsonl", [row])
    db = make_engine_db("db.db")
    with Store.open(db) as store:
        import_path(store, root)
    assert _variants(db, tmp_path / "out", "sparse") == 1
    assert ("task 'n1_00': Image_3 (pose) has no sparse text: give meta.pose[].text.sparse"
            in capsys.readouterr().err)
    row["meta"]["pose"]["text"] = {"dense": "d", "medium": "m", "sparse": "one paw raised"}
    row["task_id"] = "n1_01"
    row["questions"][0]["question_id"] = "n1_01.q1"
    write_jsonl(root / "tasks.jsonl", [row])
    write_jsonl(root / "outputs.jsonl", [])
    write_jsonl(root / "judgments.jsonl", [])
    db2 = make_engine_db("db2.db")
    with Store.open(db2) as store:
        import_path(store, root)
    assert _variants(db2, tmp_path / "out2", "sparse") == 0
    (task,) = read_jsonl(tmp_path / "out2" / "tasks.jsonl")
    assert "The cat of Image_0 takes this pose: one paw raised." in task["instruction"]


# ------------------------------------------------------------- import and the table


def _check_table(db: Path, source: dict, given: dict[str, dict], listed: list[str]) -> None:
    """vif_variants.csv against the scores written, with scipy's paired t test."""
    with Store.open(db) as store:
        study = load_study(store)
    table = variant_table(study)
    assert set(table.condition) == {"vi", *given}
    assert set(table.generator) == set(GENERATORS) and set(table.judge) == {JUDGE}
    for gen in GENERATORS:
        for crit in CRITERIA:
            cell = table[(table.generator == gen) & (table.criterion == crit)].set_index(
                "condition")
            vi = [source["scores"][(t, gen, crit)] for t in listed]
            assert cell.loc["vi", "n_tasks"] == len(listed)
            assert cell.loc["vi", "mean"] == pytest.approx(statistics.mean(vi))
            for variant, scores in given.items():
                text = [scores[(t, gen, crit)] for t in listed]
                row = cell.loc[variant]
                assert row["mean"] == pytest.approx(statistics.mean(text))
                assert row["n_pairs"] == len(listed)
                assert row["mean_vi"] == pytest.approx(statistics.mean(vi))
                ref = stats.ttest_rel(text, vi)
                assert row["diff"] == pytest.approx(statistics.mean(text) - statistics.mean(vi))
                if np.std(np.subtract(text, vi)) > 0:
                    ci = ref.confidence_interval()
                    assert row["diff_lo"] == pytest.approx(ci.low)
                    assert row["p"] == pytest.approx(ref.pvalue)
    average = table[(table.criterion == "average") & (table.condition == "vi")]
    assert len(average) == len(GENERATORS)
    # against the original's checklist: the judge passed its question on every VI output
    # ("yes") and failed it on every variant output ("no")
    checklist = table[table.criterion == "checklist pass rate"].set_index(
        ["generator", "condition"])
    for gen in GENERATORS:
        assert checklist.loc[(gen, "vi"), "mean"] == 1.0
        for variant in given:
            row = checklist.loc[(gen, variant)]
            assert (row["mean"], row["diff"], row["n_pairs"]) == (0.0, -1.0, len(listed))
            assert np.isnan(row["diff_lo"])  # every difference the same: no interval


@pytest.mark.slow
def test_round_trip_variant_bundle_outputs_import_linked_to_originals(tmp_path: Path,
                                                                      make_engine_db) -> None:
    db, source = _project(tmp_path, {1: 3, 2: 2, 3: 1}, make_engine_db("study.db"))
    index = {t: n for n, t in enumerate(source["order"])}
    given = {}
    for level in ("dense", "sparse"):
        out = tmp_path / level
        assert _variants(db, out, level, "--per-count", "2", "--seed", "1") == 0
        given[f"text-{level}"] = generate_variant_outputs(out, index)
        with Store.open(db) as store:
            before = store.counts()
            summary = import_path(store, out)
            after = store.counts()
        assert ("tasks.jsonl: 5 text-variant task(s) (meta.variant_of) are not stored as "
                "tasks: the 10 output(s) of text variants are stored with their original "
                "tasks (meta.text_variant)") in summary.text()
        assert after["tasks"] == before["tasks"]  # variant tasks are not stored
        assert after["images"] == before["images"]
    listed = list(pd.read_csv(tmp_path / "dense" / "variant_tasks.csv").task_id)
    assert len(listed) == 5  # 2 + 2 + 1
    with Store.open(db) as store:
        outputs = store.outputs_df()
        judgments = store.judgments_df()
        annotatable = set(annotatable_outputs(store).output_id)
        study = load_study(store)
    variant = outputs[outputs.output_id.str.contains("~")]
    assert len(variant) == 2 * len(listed) * len(GENERATORS)
    for row in variant.itertuples():
        meta = json.loads(row.meta)
        task, name = row.output_id.split("/")[0].split("~")
        assert row.task_id == task  # linked to the original task
        assert meta == {"seed": 1, "text_variant": name}
        assert row.output_id not in annotatable
    # judged against the original's checklist: the answer to its question was accepted
    answers = judgments[judgments.output_id.isin(variant.output_id)
                        & judgments.question_id.notna()]
    assert set(answers.question_id) == {f"{t}.q1" for t in listed}
    # not items of the study, but in its variant frames
    assert not set(study.outputs.output_id) & set(variant.output_id)
    assert set(study.variant_outputs.output_id) == set(variant.output_id)
    _check_table(db, source, given, listed)
    # export -> import into a new database keeps the link (meta.text_variant)
    assert main(["export", "--db", str(db), "--out", str(tmp_path / "export"), "--quiet"]) == 0
    db2 = make_engine_db("copy.db")
    with Store.open(db2) as store:
        import_path(store, tmp_path / "export")
        copied = store.outputs_df()
    assert set(copied.output_id) == set(outputs.output_id)
    _check_table(db2, source, given, listed)


def test_one_import_mixing_originals_and_variants(tmp_path: Path,
                                                  make_engine_db: Callable[[str], str]) -> None:
    db, source = _project(tmp_path, {1: 2, 4: 1}, make_engine_db("study.db"))
    assert _variants(db, tmp_path / "medium", "medium") == 0
    given = {"text-medium": generate_variant_outputs(
        tmp_path / "medium", {t: n for n, t in enumerate(source["order"])})}
    # one bundle: the source's tasks, outputs and judgments plus the variant tasks and
    # theirs (their image files copied in: paths stay inside the bundle)
    mixed = tmp_path / "source"
    for sub in ("images", "generated"):
        shutil.copytree(tmp_path / "medium" / sub, mixed / sub, dirs_exist_ok=True)
    for name in ("tasks.jsonl", "outputs.jsonl", "judgments.jsonl"):
        write_jsonl(mixed / name, read_jsonl(mixed / name)
                    + read_jsonl(tmp_path / "medium" / name))
    fresh = make_engine_db("fresh.db")
    with Store.open(fresh) as store:
        import_path(store, mixed)
        task_ids = list(store.tasks_df().task_id)
        variant_ids = set(load_study(store).variant_outputs.output_id)
    assert task_ids == source["order"]  # the originals only
    assert variant_ids == {f"{t}~text-medium/{g}" for t in source["order"] for g in GENERATORS}
    _check_table(fresh, source, given, source["order"])


def test_variant_output_errors_are_located_and_nothing_is_written(tmp_path: Path,
                                                                  make_engine_db) -> None:
    db, source = _project(tmp_path, {1: 2}, make_engine_db("study.db"))
    out = tmp_path / "dense"
    assert _variants(db, out, "dense") == 0
    generate_variant_outputs(out, {t: n for n, t in enumerate(source["order"])})
    # 1. into a database without the originals
    empty = make_engine_db("empty.db")
    with Store.open(empty) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, out)
    text = refused.value.report()
    assert ("outputs.jsonl:1: task_id: unknown task 'n1_00' (the original of its text-dense "
            "variant: import the original tasks first, or in the same bundle)") in text
    # 2. a second output of one generator for one variant; a bad meta.text_variant
    good = read_jsonl(out / "outputs.jsonl")
    before = db_checksum(db)
    write_jsonl(out / "outputs.jsonl", [*good, {**good[1], "output_id": "again"}])
    with Store.open(db) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, out)
    assert (f"outputs.jsonl:{len(good) + 1}: meta.text_variant: a second output of 'gen-b' for the "
            "text-dense variant of task 'n1_00' (output 'n1_00~text-dense/gen-b')"
            ) in refused.value.report()
    write_jsonl(out / "outputs.jsonl", [{**good[0], "meta": {"text_variant": "text-huge"}},
                                        *good[1:]])
    with Store.open(db) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, out)
    assert ('outputs.jsonl:1: meta.text_variant: expected one of text-dense, text-medium, '
            'text-sparse, got "text-huge"') in refused.value.report()
    assert db_checksum(db) == before
    # 3. a variant task naming no original
    tasks = read_jsonl(out / "tasks.jsonl")
    tasks[0]["meta"]["variant_of"] = ""
    write_jsonl(out / "tasks.jsonl", tasks)
    with Store.open(db) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, out)
    assert "tasks.jsonl:1: meta.variant_of: expected the id of the original task" in \
        refused.value.report()
    assert db_checksum(db) == before


# ----------------------------------------------------- the report and the analytics page


@pytest.mark.slow
def test_demo_variants_in_the_report_and_on_the_analytics_page(tmp_path: Path,
                                                              served_demo: str) -> None:
    from tests.helpers.apptest import signed_in

    db = served_demo  # the project the page opens
    out = tmp_path / "ti-dense"
    assert _variants(db, out, "dense") == 0
    with Store.open(db) as store:
        order = list(store.tasks_df().task_id)
        generators = tuple(sorted(set(store.outputs_df().generator)))
    generate_variant_outputs(out, {t: n for n, t in enumerate(order)}, generators)
    with Store.open(db) as store:
        import_path(store, out)
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "report"), "--bootstrap",
                 "20", "--quiet"]) == 0
    written = pd.read_csv(tmp_path / "report" / "vif_variants.csv")
    assert set(written.condition) == {"vi", "text-dense"}
    assert set(written.judge) >= {JUDGE}
    at = signed_in("analytics.py", "admin", "admin", db=db, timeout=180)
    at.session_state["an_n_boot"] = 20
    at.run()
    assert not at.exception
    heads = [h.value for h in at.subheader]
    assert "Visual vs text instructions (VIF-Bench Fig. 6 right)" in heads
    shown = [d.value for d in at.dataframe if "condition" in d.value.columns]
    assert len(shown) == 1 and set(shown[0].condition) == {"vi", "text-dense"}


def test_variant_outputs_are_no_part_of_a_diagnostic_tree(tmp_path: Path,
                                                          make_engine_db) -> None:
    """A task with a TRACE tree: an output of a text variant of it (meta.text_variant,
    imported directly on the original task) is neither a tree unit nor its root."""
    from annotation.results.trees import load_automatic
    from annotation.trace.trees import tree_units
    from tests.helpers.bundles import make_image
    from tests.helpers.tree_fixture import write_tree_bundle

    db = make_engine_db("tree.db")
    with Store.open(db) as store:
        import_path(store, write_tree_bundle(tmp_path / "tree"))
        units, (automatic, _) = tree_units(store), load_automatic(store)
    extra = tmp_path / "variant"
    extra.mkdir()
    (extra / "bundle.json").write_text(json.dumps({
        "name": "Tree fixture", "benchmark": "TRACE-Bench",
        "judges": [{"name": "gpt-5", "kind": "vlm"}]}))
    (extra / "tasks.jsonl").write_text("")
    make_image(extra / "out.png", size=(96, 96), color="black")
    oid = "tr1~text-dense/m"
    write_jsonl(extra / "outputs.jsonl", [{"output_id": oid, "task_id": "tr1", "generator": "m",
                                           "path": "out.png",
                                           "meta": {"text_variant": "text-dense"}}])
    write_jsonl(extra / "judgments.jsonl", [  # every question passed: would change the tree
        {"judge": "gpt-5", "output_id": oid, "question_id": f"tr1.q{k}",
         "answer": "no" if k == 6 else "yes"} for k in range(1, 7)])
    with Store.open(db) as store:
        import_path(store, extra)
        assert tree_units(store) == units
        pd.testing.assert_frame_equal(load_automatic(store)[0], automatic)
        assert oid in set(load_study(store).variant_outputs.output_id)


@pytest.mark.slow
def test_real_tiif_bench_data_has_no_vif_tasks_and_no_variant_outputs(tmp_path: Path,
                                                                      capsys,
                                                                      make_engine_db) -> None:
    """The public TIIF-Bench files (../shared/fixtures): their tasks carry a ``variant``
    (short / long) of their own in the task meta; nothing of it is a text variant."""
    import os

    shared = Path(os.environ.get("JUDGE_AUDIT_SHARED")
                  or Path(__file__).resolve().parents[2] / "shared")
    fixture = shared / "fixtures" / "tiif-bench"
    if not (fixture / "data" / "test_prompts").is_dir():
        pytest.skip(f"TIIF-Bench fixture not found at {fixture}")
    db = make_engine_db("tiif.db")
    with Store.open(db) as store:
        import_path(store, fixture, user="test")
        study = load_study(store)
        n_outputs = len(store.outputs_df())
    assert study.variant_outputs.empty and len(study.outputs) == n_outputs
    assert variant_table(study).empty
    assert _variants(db, tmp_path / "out", "dense") == 1
    assert "no VIF-Bench tasks in this project" in capsys.readouterr().err
