"""``leaderboard.csv``: the judge's benchmark score per generator corrected by a uniform
human sample (issue #16, item 5), on a real project: a judge that flatters one generator
reorders the leaderboard, and the correction puts it back, with a valid interval."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from annotation.cli import main
from annotation.formats.importers import import_path
from annotation.results.checklist import study_decisions
from annotation.results.leaderboard import leaderboard_table
from annotation.results.study import load_study
from annotation.store import Store, items
from annotation.work import workflow
from annotation.work.validation_set import draw_validation_set
from tests.helpers.bundles import make_image, write_jsonl

TRUE_MEAN = {"alpha": 6.5, "beta": 5.5, "gamma": 4.5}
FLATTERY = {"alpha": 0.0, "beta": 2.0, "gamma": 0.0}  # the judge inflates beta


def _bundle(root: Path, n_tasks: int = 60, seed: int = 11) -> tuple[Path, dict[str, float]]:
    """Every output judged on ``quality`` (1-10) and on two yes/no questions; returns the
    bundle and each output's true quality (what a human sees, before rating noise)."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    (root / "bundle.json").write_text(json.dumps({
        "name": "board", "benchmark": "demo",
        "criteria": [{"name": "quality", "label": "Quality", "min": 1, "max": 10, "step": 1}],
        "judges": [{"name": "vlm", "kind": "vlm"}]}))
    tasks, outputs, judgments, truth = [], [], [], {}
    for t in range(n_tasks):
        tasks.append({"task_id": f"t{t}", "instruction": f"Prompt {t}.", "questions": [
            {"question_id": f"t{t}.q{k}", "text": f"Q{k}?", "pass_answer": "yes"}
            for k in range(2)]})
        for g, gen in enumerate(TRUE_MEAN):
            out = f"t{t}/{gen}"
            make_image(root / "img" / f"{t}_{g}.png", size=(32 + t % 7, 24 + g),
                       color=["red", "blue", "green"][g], text=str(t))
            outputs.append({"output_id": out, "task_id": f"t{t}", "generator": gen,
                            "path": f"img/{t}_{g}.png"})
            quality = min(10.0, max(1.0, rng.gauss(TRUE_MEAN[gen], 1.5)))
            truth[out] = quality
            judged = min(10, max(1, round(quality + FLATTERY[gen] + rng.gauss(0, 0.8))))
            judgments.append({"judge": "vlm", "output_id": out, "criterion": "quality",
                              "score": judged})
            for k in range(2):
                judgments.append({"judge": "vlm", "output_id": out,
                                  "question_id": f"t{t}.q{k}",
                                  "answer": "yes" if rng.random() < quality / 10 + 0.1
                                  else "no"})
    write_jsonl(root / "tasks.jsonl", tasks)
    write_jsonl(root / "outputs.jsonl", outputs)
    write_jsonl(root / "judgments.jsonl", judgments)
    return root, truth


def _annotate(root: Path, store: Store, chosen: list[str], truth: dict[str, float],
              seed: int = 3) -> None:
    """Two annotators rate (and answer the questions of) exactly ``chosen``."""
    rng = random.Random(seed)
    rows = []
    for out in chosen:
        task = out.split("/")[0]
        for h in ("h1", "h2"):
            rows.append({"annotator": h, "output_id": out, "criterion": "quality",
                         "score": min(10, max(1, round(truth[out] + rng.gauss(0, 0.7))))})
            for k in range(2):
                rows.append({"annotator": h, "output_id": out, "question_id": f"{task}.q{k}",
                             "answer": "yes" if rng.random() < truth[out] / 10 else "no"})
    later = root.parent / "humans"
    later.mkdir()
    (later / "bundle.json").write_text((root / "bundle.json").read_text())
    write_jsonl(later / "tasks.jsonl", [])
    write_jsonl(later / "outputs.jsonl", [])
    write_jsonl(later / "annotations.jsonl", rows)
    import_path(store, later)


@pytest.fixture
def board(tmp_path: Path, make_engine_db) -> tuple[Path, list[str]]:
    root, truth = _bundle(tmp_path / "bundle")
    db = make_engine_db("board.db")
    with Store.open(db) as store:
        import_path(store, root)
        chosen = workflow.draw_sample(store, "admin", "stratified", 60, seed=4)
        _annotate(root, store, chosen, truth)
    return db, chosen


def test_the_corrected_score_is_ppi_on_the_raw_rows(board):
    ppi_py = pytest.importorskip("ppi_py")
    db, chosen = board
    with Store.open(db) as store:
        study = load_study(store)
        human = pd.DataFrame(list(store.db.query(
            "SELECT output_id, score FROM current_annotations WHERE criterion = 'quality'"))
        ).groupby("output_id").score.mean()
        judged = pd.DataFrame(list(store.db.query(
            "SELECT output_id, score FROM judgments WHERE criterion = 'quality'"))
        ).set_index("output_id").score
    table = leaderboard_table(study, study_decisions(study))
    rows = table[table.measure == "quality"].set_index("generator")
    for gen in TRUE_MEAN:
        ids = [o for o in judged.index if o.endswith("/" + gen)]
        labeled = [o for o in ids if o in human.index]
        unlabeled = [o for o in ids if o not in human.index]
        y, f, fu = human[labeled].to_numpy(), judged[labeled].to_numpy(), judged[
            unlabeled].to_numpy()
        row = rows.loc[gen]
        assert (row.n_labeled, row.n_unlabeled) == (20, 40)  # stratified: 20 per generator
        assert row.estimate == pytest.approx(float(np.ravel(
            ppi_py.ppi_mean_pointestimate(y, f, fu))[0]))
        # the interval: ppi-python's normal one, read at t(n - 1) with unbiased variances
        lam = row.lam
        assert row.estimate == pytest.approx(np.mean(lam * fu) + np.mean(y - lam * f))
        se = np.sqrt(np.var(y - lam * f, ddof=1) / len(y) + lam**2 * np.var(fu, ddof=1)
                     / len(fu))
        half = stats.t.ppf(0.975, len(y) - 1) * se
        assert (row.lo, row.hi) == pytest.approx((row.estimate - half, row.estimate + half))
        assert row.judge_mean == pytest.approx(judged[ids].mean())
        assert row.human_mean == pytest.approx(y.mean())
        assert row.design == "stratified" and not row.note


def test_a_flattered_generator_loses_its_place_after_the_correction(board):
    db, _ = board
    with Store.open(db) as store:
        study = load_study(store)
    table = leaderboard_table(study, study_decisions(study))
    rows = table[table.measure == "quality"].set_index("generator")
    assert rows.loc["beta", "rank_judge"] == 1  # the judge's leaderboard: beta first
    assert rows.loc["alpha", "rank_corrected"] == 1  # the humans': alpha first
    assert rows.loc["beta", "rank_changed"] and rows.loc["alpha", "rank_changed"]
    assert rows.loc["beta", "lo"] < TRUE_MEAN["beta"] + 0.6  # corrected down to the truth
    assert rows.loc["beta", "judge_mean"] > rows.loc["beta", "hi"]  # the judge is outside
    assert (rows.width_ratio < 1).all()  # a good judge narrows the human-only interval
    assert set(table.measure) == {"quality", "checklist"}


def test_the_validation_set_is_not_a_design_for_the_correction(board):
    db, _ = board
    with Store.open(db) as store:
        draw_validation_set(store, "admin", images=30, questions=40, balance="human")
        study = load_study(store)
    table = leaderboard_table(study, study_decisions(study))
    assert table.estimate.isna().all() and table.lo.isna().all()
    assert table.human_mean.isna().all() and table.judge_mean.notna().all()
    assert table.note.str.contains("balanced by answer").all()
    assert (table.design == "validation").all()


def test_the_report_writes_leaderboard_csv_and_its_figure(board, tmp_path):
    db, _ = board
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "rep"),
                 "--bootstrap", "50", "--quiet"]) == 0
    csv = pd.read_csv(tmp_path / "rep" / "leaderboard.csv")
    assert len(csv) == 6 and set(csv.generator) == set(TRUE_MEAN)
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "Judge-corrected leaderboard" in html


def test_no_human_score_gives_the_judge_only_column(tmp_path, make_engine_db):
    root, _ = _bundle(tmp_path / "bundle", n_tasks=5)
    with Store.open(make_engine_db("p.db")) as store:
        import_path(store, root)
        study = load_study(store)
        assert items.sample_design(store)["mode"] == "none"
    assert leaderboard_table(study, study_decisions(study)).empty  # nothing to correct with


# ------------------------------------------------- designs that are not uniform (review)
def _rare_failures(root: Path) -> dict[str, float]:
    """200 tasks x 2 generators; 10% "rare" tasks where the generators fail (quality 2,
    else 8); a judge blind to the failures says 8 everywhere. True mean: 7.4."""
    root.mkdir(parents=True)
    (root / "bundle.json").write_text(json.dumps({
        "name": "x", "benchmark": "demo",
        "criteria": [{"name": "quality", "label": "Q", "min": 1, "max": 10, "step": 1}],
        "judges": [{"name": "vlm", "kind": "vlm"}]}))
    tasks, outs, judged, truth = [], [], [], {}
    for t in range(200):
        kind = "rare" if t < 20 else "common"
        tasks.append({"task_id": f"t{t}", "instruction": f"P{t}", "meta": {"kind": kind}})
        for g, gen in enumerate(["alpha", "beta"]):
            out = f"t{t}/{gen}"
            make_image(root / "img" / f"{t}_{g}.png", size=(32 + t % 7, 24 + g), text=str(t))
            outs.append({"output_id": out, "task_id": f"t{t}", "generator": gen,
                         "path": f"img/{t}_{g}.png"})
            truth[out] = 2.0 if kind == "rare" else 8.0
            judged.append({"judge": "vlm", "output_id": out, "criterion": "quality",
                           "score": 8})
    write_jsonl(root / "tasks.jsonl", tasks)
    write_jsonl(root / "outputs.jsonl", outs)
    write_jsonl(root / "judgments.jsonl", judged)
    return truth


def _human_scores(root: Path, store: Store, name: str, chosen: list[str],
                  truth: dict[str, float]) -> None:
    later = root.parent / name
    later.mkdir()
    (later / "bundle.json").write_text((root / "bundle.json").read_text())
    write_jsonl(later / "tasks.jsonl", [])
    write_jsonl(later / "outputs.jsonl", [])
    write_jsonl(later / "annotations.jsonl", [
        {"annotator": "h1", "output_id": o, "criterion": "quality", "score": truth[o]}
        for o in chosen])
    import_path(store, later)


def test_equal_numbers_per_stratum_are_not_corrected(tmp_path, make_engine_db):
    """20 rare and 20 common tasks' outputs: rare ones over-represented 4.5 times; the old
    leaderboard 'corrected' alpha to 5.1 [3.8, 6.5] (truth 7.4), without a word."""
    from annotation.results.design import design_table
    from annotation.work import sampling

    root = tmp_path / "b"
    truth = _rare_failures(root)
    with Store.open(make_engine_db("s.db")) as store:
        import_path(store, root)
        chosen = sampling.draw(store, "admin", "stratified", by=["meta.kind"],
                               per_stratum=20, seed=0)
        _human_scores(root, store, "h", chosen, truth)
        study = load_study(store)
    assert not design_table(study).iloc[0].uniform
    table = leaderboard_table(study, study_decisions(study))
    assert table.estimate.isna().all() and table.human_mean.isna().all()
    assert table.rank_human.isna().all() and table.judge_mean.notna().all()
    assert table.note.str.contains("equal numbers per stratum").all()


def test_human_scores_from_an_earlier_sample_are_left_out(tmp_path, make_engine_db):
    """A per-stratum pilot, then the uniform sample of the paper: only the uniform
    sample's human scores may correct the judge (the old code used all 74, and alpha's
    interval [5.3, 7.0] missed the truth 7.4)."""
    from annotation.work import sampling

    root = tmp_path / "b"
    truth = _rare_failures(root)
    with Store.open(make_engine_db("s.db")) as store:
        import_path(store, root)
        pilot = sampling.draw(store, "admin", "stratified", by=["meta.kind"],
                              per_stratum=20, seed=0)
        _human_scores(root, store, "h", pilot, truth)
        paper = sampling.draw(store, "admin", "uniform", size=40, seed=5)
        _human_scores(root, store, "h2", [o for o in paper if o not in pilot], truth)
        study = load_study(store)
    rows = leaderboard_table(study, study_decisions(study)).set_index("generator")
    assert rows.n_labeled.sum() == 40
    assert rows.n_outside_sample.sum() == len(set(pilot) - set(paper))
    for gen in ("alpha", "beta"):
        in_sample = [o for o in paper if o.endswith("/" + gen)]
        assert rows.loc[gen, "human_mean"] == pytest.approx(np.mean([truth[o] for o in
                                                                     in_sample]))
