"""The report's assembly defects found by the statistics audit, one test each.

Names that exist only after the fix are imported inside the tests, so that on the old
code each test fails on its own.

Each test fails on the code before the fix (named in its docstring) and checks the fixed
behaviour against scipy, statsmodels or a naive reference computed here, never against
numbers the product produced.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from annotation.results.checklist import checklist_table, mcnemar_table
from annotation.results.operators import operators_table
from annotation.results.ratings import HUMAN_LOO, HUMAN_PAIRWISE, ratings_table
from annotation.results.report import ReportOptions, build_report
from annotation.results.study import StudyData
from tests.helpers.study_frames import (
    CRITERION,
    checklist_study,
    criteria_frame,
    empty_scores,
    judges_frame,
    outputs_frame,
    questions_frame,
    rating_study,
)


def _loo_pairs(humans: pd.DataFrame) -> pd.DataFrame:
    """(output, annotator score, mean of the other annotators) by a plain loop."""
    rows = []
    for output, group in humans.groupby("output_id"):
        for annotator, score in zip(group.annotator, group.score, strict=True):
            others = group[group.annotator != annotator].score
            if len(others):
                rows.append((output, score, others.mean()))
    return pd.DataFrame(rows, columns=["output_id", "score", "others"])


# ------------------------------------------------------------------ 1. like for like
def test_human_baseline_is_computed_on_the_judges_outputs():
    """Defect 1: the human (leave-one-out) row used every output while the judge's row
    used only the 40 of 80 outputs it scored. Now a baseline row per judge whose outputs
    differ, named in ``paired_judge``, on exactly that judge's outputs."""
    study = rating_study(np.random.default_rng(1), n_outputs=80, judge_outputs={"half": 40},
                         judges={"half": 1.2, "all": 1.2})
    table = ratings_table(study, n_boot=200, seed=0)
    rows = table[(table.criterion == CRITERION) & (table.group == "all")]
    pairs = _loo_pairs(study.human_scores)
    half = set(study.judge_scores[study.judge_scores.judge == "half"].output_id)
    on_half = pairs[pairs.output_id.isin(half)]
    baseline = rows[(rows.judge == HUMAN_LOO) & (rows.paired_judge == "half")]
    assert len(baseline) == 1
    assert baseline.plcc.iloc[0] == pytest.approx(stats.pearsonr(on_half.score,
                                                                 on_half.others)[0])
    assert baseline.n_items.iloc[0] == 40
    overall = rows[(rows.judge == HUMAN_LOO) & (rows.paired_judge == "")].iloc[0]
    assert overall.plcc == pytest.approx(stats.pearsonr(pairs.score, pairs.others)[0])
    assert overall.n_items == 80
    # a judge that scored every output needs no row of its own
    assert rows[(rows.judge == HUMAN_LOO) & (rows.paired_judge == "all")].empty
    # the judge's leave-one-out row uses the same pairs as its baseline
    judge = rows[(rows.judge == "half") & (rows.reference == "leave-one-out mean")].iloc[0]
    assert judge.n_pairs == baseline.n_pairs.iloc[0] == len(on_half)
    # the pairwise baseline too
    pairwise = rows[(rows.judge == HUMAN_PAIRWISE) & (rows.paired_judge == "half")]
    assert len(pairwise) == 1 and pairwise.n_items.iloc[0] == 40


def test_human_baseline_per_group_and_on_the_checklist():
    """Defect 1, per ``--by`` group and for the checklist's leave-one-out majority: the
    baseline beside a judge that decided only some outputs is on that judge's decisions."""
    rng = np.random.default_rng(2)
    study = rating_study(rng, n_outputs=80, judge_outputs={"half": 40},
                         judges={"half": 1.0}, generators=2)
    table = ratings_table(study, n_boot=0, by="generator")
    for group in ("generator=g0", "generator=g1"):
        members = set(study.outputs.output_id[study.outputs.generator == group[-2:]])
        judged = set(study.judge_scores.output_id) & members
        pairs = _loo_pairs(study.human_scores[study.human_scores.output_id.isin(judged)])
        row = table[(table.judge == HUMAN_LOO) & (table.group == group)
                    & (table.paired_judge == "half")].iloc[0]
        assert row.plcc == pytest.approx(stats.pearsonr(pairs.score, pairs.others)[0])

    checks = checklist_study(rng, n_outputs=40)
    kept = set(checks.outputs.output_id[:20])
    answers = checks.judge_answers[checks.judge_answers.output_id.isin(kept)]
    checks = StudyData(**{**checks.__dict__, "judge_answers": answers})
    table = checklist_table(checks, n_boot=0)
    row = table[(table.judge == "human (leave-one-out)")
                & (table.paired_judge == "judge")].iloc[0]
    # by hand: each annotator's answer against the majority of the other two, on the
    # judge's 20 outputs (every question decided)
    hits = total = 0
    wide = checks.human_answers.pivot_table(index=["output_id", "question_id"],
                                            columns="annotator", values="answer",
                                            aggfunc="first")
    for (output, _), answers_row in wide.iterrows():
        if output not in kept:
            continue
        for a in wide.columns:
            others = [answers_row[b] for b in wide.columns if b != a]
            if others.count("yes") != others.count("no"):
                total += 1
                hits += answers_row[a] == ("yes" if others.count("yes") > 1 else "no")
    assert row.n_decisions == total and row.agreement == pytest.approx(hits / total)
    assert row.n_items == 20


# ------------------------------------------------------------------ 2. pooled intervals
def _z_and_se(frame: pd.DataFrame) -> tuple[float, float]:
    """atanh(r) of the pooled pairs and its cluster-robust standard error, written out:
    the influence function of r per pair (Devlin et al. 1975), summed per output."""
    u = (frame.score - frame.score.mean()) / frame.score.std(ddof=0)
    v = (frame.others - frame.others.mean()) / frame.others.std(ddof=0)
    r = float((u * v).mean())
    influence = (u * v - r * (u * u + v * v) / 2).groupby(frame.cluster).sum()
    se_r = float(np.sqrt((influence**2).sum()) / len(frame))
    return float(np.arctanh(r)), se_r / (1 - r * r)


def _naive_bootstrap_t(pairs: pd.DataFrame, n_boot: int, seed: int) -> tuple[float, float]:
    """The studentized cluster bootstrap by a plain loop: draw outputs with replacement
    (each draw a cluster of its own), t* = (z* - z) / se*, interval on Fisher's z."""
    rng = np.random.default_rng(seed)
    outputs = pairs.output_id.unique()
    groups = {o: g for o, g in pairs.groupby("output_id")}
    z, se = _z_and_se(pairs.assign(cluster=pairs.output_id))
    t = np.empty(n_boot)
    for b in range(n_boot):
        draw = pd.concat([groups[o].assign(cluster=i) for i, o in
                          enumerate(rng.choice(outputs, len(outputs)))])
        zb, seb = _z_and_se(draw)
        t[b] = (zb - z) / seb
    hi_t, lo_t = np.quantile(t, [0.975, 0.025])
    return float(np.tanh(z - hi_t * se)), float(np.tanh(z - lo_t * se))


@pytest.mark.slow
def test_pooled_rows_resample_outputs_not_pairs():
    """Defect 2: the PLCC interval of a leave-one-out row was Fisher's with n = pairs (k per
    output), too narrow (coverage .78-.84 for a nominal .95). Now the studentized cluster
    bootstrap over outputs, checked against a naive resampling loop."""
    study = rating_study(np.random.default_rng(3), n_outputs=60, n_annotators=4)
    table = ratings_table(study, n_boot=2000, seed=5)
    row = table[(table.judge == HUMAN_LOO) & (table.criterion == CRITERION)
                & (table.paired_judge == "")].iloc[0]
    pairs = _loo_pairs(study.human_scores)
    naive = _naive_bootstrap_t(pairs, 2000, 11)
    assert row.plcc_ci_method == "cluster bootstrap-t"
    assert row.plcc_lo == pytest.approx(naive[0], abs=0.02)
    assert row.plcc_hi == pytest.approx(naive[1], abs=0.02)
    fisher = stats.pearsonr(pairs.score, pairs.others).confidence_interval()
    assert row.plcc_hi - row.plcc_lo > 1.3 * (fisher.high - fisher.low)
    assert np.isnan(row.plcc_fisher_lo)  # Fisher is not valid with several pairs per output
    assert row.n_items == 60 and row.n_pairs == 240


# ------------------------------------------------------------------ 3. checklist clusters
def test_checklist_intervals_resample_outputs():
    """Defect 3: agreement's interval was Wilson over decisions (60 outputs x 10 correlated
    questions: coverage .776). Now a cluster bootstrap over outputs (checked against a
    naive loop); Wilson stays as agreement_wilson_lo/hi."""
    study = checklist_study(np.random.default_rng(4), n_outputs=60, n_questions=10)
    row = checklist_table(study, n_boot=2000, seed=1, per_annotator=False)
    row = row[(row.judge == "judge") & (row.reference == "human majority")].iloc[0]
    humans = study.human_answers.pivot_table(index=["output_id", "question_id"],
                                             columns="annotator", values="answer",
                                             aggfunc="first")
    majority = (humans == "yes").sum(axis=1).map(lambda n: "yes" if n >= 2 else "no")
    judge = study.judge_answers.set_index(["output_id", "question_id"]).answer
    agree = (judge.reindex(majority.index) == majority).groupby(level=0).agg(["sum", "size"])
    rng = np.random.default_rng(9)
    boot = []
    for _ in range(2000):
        draw = agree.iloc[rng.integers(0, len(agree), len(agree))]
        boot.append(draw["sum"].sum() / draw["size"].sum())
    naive = np.quantile(boot, [0.025, 0.975])
    assert row.agreement == pytest.approx(agree["sum"].sum() / agree["size"].sum())
    assert row.agreement_lo == pytest.approx(naive[0], abs=0.01)
    assert row.agreement_hi == pytest.approx(naive[1], abs=0.01)
    wilson = stats.binomtest(int(agree["sum"].sum()), int(agree["size"].sum())
                             ).proportion_ci(method="wilson")
    assert (row.agreement_wilson_lo, row.agreement_wilson_hi) == pytest.approx(
        (wilson.low, wilson.high))
    assert row.agreement_hi - row.agreement_lo > wilson.high - wilson.low
    assert row.kappa_lo < row.kappa < row.kappa_hi
    assert row.ac1_lo < row.ac1 < row.ac1_hi
    assert row.n_boot == 2000


def test_checklist_comparisons_are_clustered_and_adjusted():
    """Defect 3, McNemar: checklist_comparisons.csv had only the exact McNemar over
    decisions. Now the accuracy difference with a paired cluster-bootstrap interval, the
    Durkalski et al. (2003) clustered McNemar and BH/BY over the file."""
    from statsmodels.stats.contingency_tables import mcnemar
    from statsmodels.stats.multitest import multipletests

    study = checklist_study(np.random.default_rng(5), n_outputs=50,
                            judges={"a": 0.1, "b": 0.2, "c": 0.15})
    table = mcnemar_table(study, n_boot=500)
    assert len(table) == 6  # 3 pairs x (human majority, expected answer)
    row = table[(table.reference == "human majority") & (table.judge_a == "a")
                & (table.judge_b == "b")].iloc[0]
    humans = study.human_answers.pivot_table(index=["output_id", "question_id"],
                                             columns="annotator", values="answer",
                                             aggfunc="first")
    majority = (humans == "yes").sum(axis=1).map(lambda n: "yes" if n >= 2 else "no")
    answers = study.judge_answers.set_index(["judge", "output_id", "question_id"]).answer
    right_a = answers["a"].reindex(majority.index) == majority
    right_b = answers["b"].reindex(majority.index) == majority
    # Durkalski et al. (2003), eq. 3, by hand over outputs
    d = (right_a & ~right_b).groupby(level=0).sum() - (~right_a & right_b).groupby(
        level=0).sum()
    chi2 = d.sum() ** 2 / (d**2).sum()
    assert row.clustered_chi2 == pytest.approx(chi2)
    assert row.clustered_p == pytest.approx(stats.chi2.sf(chi2, 1))
    assert row["diff"] == pytest.approx(right_a.mean() - right_b.mean())
    assert row.diff_lo < row["diff"] < row.diff_hi and row.n_items == 50
    assert table.p_bh.to_numpy() == pytest.approx(
        multipletests(table.clustered_p, method="fdr_bh")[1])
    assert table.p_by.to_numpy() == pytest.approx(
        multipletests(table.clustered_p, method="fdr_by")[1])
    # with one decision per output, the clustered test is McNemar's (no correction)
    from annotation.stats.clustered import clustered_mcnemar

    rng = np.random.default_rng(6)
    a, b = rng.random(300) < 0.8, rng.random(300) < 0.7
    cells = [[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]]
    assert clustered_mcnemar(a, b).clustered_p[0] == pytest.approx(
        mcnemar(cells, exact=False, correction=False).pvalue)


# ------------------------------------------------------------------ 5. DSG gating
def _gating_study(judge_child: str = "yes") -> StudyData:
    """Two questions, q1 (is there a cat?) and q1's child q0... here q1 depends on q0:
    the judge says q0 "no" but still answers its child q1; the humans say q0 "no" and,
    for ann0, a stale "yes" on q1 from before the parent was changed."""
    ids = [f"t{i}/g" for i in range(12)]
    qs = questions_frame(2, depends={1: [0]})
    humans, judged = [], []
    for o in ids:
        for a in ("ann0", "ann1", "ann2"):
            humans.append((o, a, "q0", "no"))
        humans.append((o, "ann0", "q1", "yes"))  # stale: q0 was changed to "no" after
        judged += [(o, "judge", "q0", "no"), (o, "judge", "q1", judge_child)]
    return StudyData(
        human_scores=empty_scores("annotator"), judge_scores=empty_scores("judge"),
        human_answers=pd.DataFrame(humans, columns=["output_id", "annotator", "question_id",
                                                    "answer"]),
        judge_answers=pd.DataFrame(judged, columns=["output_id", "judge", "question_id",
                                                    "answer"]),
        questions=qs, outputs=outputs_frame(ids), criteria=criteria_frame([]),
        judges=judges_frame(["judge"]))


def test_gating_applies_to_judges_and_retires_stale_child_answers():
    """Defect 5: a judge that answered every question was never gated, and a human's
    earlier "yes" on a child stayed current after the parent was changed to "no". Cho et
    al. (DSG, ICLR 2024, Sec. 3): the child of a failed parent is failed whatever its own
    answer; checklist.csv, operators.csv and McNemar all see it."""
    study = _gating_study()
    checklist = checklist_table(study, n_boot=0)
    row = checklist[(checklist.judge == "judge") & (checklist.reference == "human majority")]
    row = row.iloc[0]
    # both questions of 12 outputs are decided "no" by judge and humans alike
    assert row.n_decisions == 24 and row.agreement == 1.0
    assert row.n_gated == 12 and row.judge_yes_human_no == 0
    ann0 = checklist[(checklist.judge == "judge") & (checklist.reference == "annotator:ann0")]
    assert ann0.agreement.iloc[0] == 1.0  # ann0's stale "yes" is scored as a fail
    ops = operators_table(study, n_boot=0).set_index(["judge", "operator"])
    assert ops.loc[("judge", "all"), "mae"] == 0.0
    # the --pair pass rate and the alt-test read the same decisions: the judge passes
    # nothing (both questions failed), whatever it said on q1
    from annotation.results.decisions import judge_decisions

    assert judge_decisions(study).passed.sum() == 0


def test_unanswered_outputs_are_counted_or_failed():
    """Defect 5: outputs a judge never answered are left out by default and counted in
    n_unanswered; ``unanswered="fail"`` scores them as failed (DSG's convention)."""
    study = checklist_study(np.random.default_rng(7), n_outputs=30, n_questions=4)
    kept = set(study.outputs.output_id[:20])
    study = StudyData(**{**study.__dict__, "judge_answers": study.judge_answers[
        study.judge_answers.output_id.isin(kept)]})
    omit = checklist_table(study, n_boot=0, per_annotator=False)
    row = omit[(omit.judge == "judge") & (omit.reference == "human majority")].iloc[0]
    assert row.n_unanswered == 10 and row.n_items == 20
    fail = checklist_table(study, n_boot=0, per_annotator=False, unanswered="fail")
    row = fail[(fail.judge == "judge") & (fail.reference == "human majority")].iloc[0]
    assert row.n_unanswered == 0 and row.n_items == 30
    missing = study.human_answers[~study.human_answers.output_id.isin(kept)]
    votes = (missing.answer == "yes").groupby([missing.output_id,
                                               missing.question_id]).sum()
    assert row.judge_no_human_yes >= int((votes >= 2).sum())  # failed = "no" on each
    report = build_report(study, ReportOptions(n_boot=0, unanswered="fail"))
    assert (report["operators"].n_unanswered == 0).all()
    with pytest.raises(ValueError, match="unanswered"):
        ReportOptions(unanswered="zero")


# ------------------------------------------------------------------ 8. smaller
def test_nan_statistics_say_why_and_small_groups_get_no_bootstrap():
    """Defect 8: a NaN statistic says why (note); no bootstrap interval from fewer than 10
    outputs; n_boot reports the resamples used; pooled rows count outputs."""
    study = rating_study(np.random.default_rng(8), n_outputs=9)
    table = ratings_table(study, n_boot=100)
    row = table[(table.judge == "judge") & (table.reference == "human mean")].iloc[0]
    assert np.isnan(row.srcc_lo) and "fewer than 10" in row.note
    assert row.plcc_ci_method == "fisher" and row.n_boot == 0
    scores = study.judge_scores.assign(score=5.0)
    flat = ratings_table(StudyData(**{**study.__dict__, "judge_scores": scores}), n_boot=0)
    flat = flat[(flat.judge == "judge") & (flat.reference == "human mean")].iloc[0]
    assert np.isnan(flat.plcc) and "constant judge" in flat.note
    big = rating_study(np.random.default_rng(8), n_outputs=40, n_annotators=4)
    pooled = ratings_table(big, n_boot=50)
    pairwise = pooled[pooled.judge == HUMAN_PAIRWISE].iloc[0]
    assert pairwise.n_items == 40  # outputs, not the 6 pairs x 40 outputs
    assert pairwise.n_pooled == 6 and pairwise.n_left_out == 0
    loo = pooled[(pooled.judge == HUMAN_LOO) & (pooled.paired_judge == "")].iloc[0]
    assert 0 < loo.n_boot <= 50


def test_zou_interval_with_python_floats_at_r_one():
    """Defect 8: zou_ci_overlap with Python floats divided by zero at r = 1."""
    from annotation.stats.comparison import zou_ci_overlap

    result = zou_ci_overlap(1.0, 0.5, 0.5, 30)
    assert np.isnan(result.lo) and np.isnan(result.hi)


@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "NaN", "1e999"])
def test_infinite_scores_are_refused_at_import(tmp_path, value, make_engine_db):
    """Defect 8: +-inf scores are refused at import with file:line:field."""
    import json

    from annotation.formats.importers import import_path
    from annotation.records import ImportRefused
    from annotation.store import Store
    from tests.helpers.bundles import write_doc_example

    bundle = write_doc_example(tmp_path / "b")
    path = bundle / "judgments.jsonl"
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        record = json.loads(line)
        if record.get("score") is not None:
            lines[i] = line.replace(json.dumps(record["score"]), value, 1) \
                if f'"score": {json.dumps(record["score"])}' in line else line
            target = i + 1
            break
    path.write_text("\n".join(lines) + "\n")
    with Store.open(make_engine_db("p.db")) as store, pytest.raises(ImportRefused) as refused:
        import_path(store, bundle)
    assert f"judgments.jsonl:{target}: score: " in refused.value.report()
    assert "numbers must be finite" in refused.value.report() or "out of range" in \
        refused.value.report()


def test_ensemble_leaves_out_judges_on_their_own_scale():
    """The ensemble averages only the VLM judges on the humans' scale: a judge scoring 0-1
    would drag the mean of 1-10 scores."""
    from annotation.results.ratings import ensemble_scores

    study = rating_study(np.random.default_rng(10), n_outputs=20,
                         judges={"a": 1.0, "b": 1.0, "unit": 1.0})
    scores = study.judge_scores.copy()
    scores.loc[scores.judge == "unit", "score"] /= 10
    study = StudyData(**{**study.__dict__, "judge_scores": scores,
                         "judges": judges_frame(["a", "b", "unit"], {"unit": (0, 1)})})
    mean = ensemble_scores(study).set_index("output_id").score
    wide = scores.pivot_table(index="output_id", columns="judge", values="score")
    assert mean.to_numpy() == pytest.approx(wide[["a", "b"]].mean(axis=1)[mean.index])
