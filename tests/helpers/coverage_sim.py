"""Coverage simulator: studies with a KNOWN truth, run through the report's own table builders.

Used by ``benchmarks/coverage.py`` (the full benchmark) and ``tests/test_coverage.py`` (a
small seeded version). Nothing here re-implements a table of the report: each simulated
study is a :class:`annotation.results.study.StudyData` built in memory and handed to the builders
(``ratings_table``, ``checklist_table``, ``reliability_table``, ``judge_comparisons``, ...);
the interval a builder writes is then compared with the population value of its estimand.

What is simulated (every parameter is a field of :class:`RatingsDesign` or
:class:`ChecklistDesign`, printed by the benchmark):

* **Ratings** (criterion ``quality``, 1-10): 20 tasks x 6 generators = 120 outputs. Output
  ``i`` of generator ``g`` has a latent quality ``q_i = 5.5 + m_g + u_i``, ``u_i ~ N(0,
  1.2^2)``, generator offsets ``m_g`` spaced 0.6 apart. Annotator ``a`` (h1, h2, h3, fixed
  biases -0.4, 0, +0.4, the same in every study) scores ``clip(round(q_i + c_a + e), 1, 10)``
  with ``e ~ N(0, 1.2^2)``. Judge ``judge-a`` is as noisy as one annotator (noise sd 1.2,
  bias +0.5); ``judge-b`` is noisier (sd 1.9) and prefers some generators over others
  (generator-specific biases), so that the judges rank the generators differently.
  Variants: ``ratings3`` (complete), ``ratings3_missing`` (each annotator rates an output
  with probability 0.7; an output nobody drew gets one random annotator, so outputs have 1-3
  ratings from different annotator sets), ``ratings3_half`` (judge-a scored only the
  outputs of generators g1-g3, whose quality spread is smaller: its output set, and the
  truth on it, differ from the humans').
* ``ratings3_random``: as ``ratings3`` but every study draws its three annotators' biases
  from N(0, 0.5^2) (random raters: the model of ICC(A,1)'s F interval; its truth is the
  covariance of two random annotators' ratings of one output over a rating's variance).
* **Checklist**: 10 tasks x 6 generators = 60 outputs, 10 yes/no questions each (4
  operators, 6 operator instances, two questions phrased negatively, no gating). The true
  pass of question ``j`` on output ``i`` is Bernoulli(sigmoid(1.0 + 1.2 z_i + b_j)) with an
  output latent ``z_i ~ N(0, 1)`` (output-level correlation). Annotators (3) flip the true
  answer independently with probability sigmoid(logit(.08) + 0.8 d_i), ``d_i ~ N(0, 1)`` the
  output's difficulty, and answer ``cant_tell`` with probability .03. Judges ``judge-a`` and
  ``judge-b`` (identically distributed, so equally accurate) flip with probability
  sigmoid(logit(.10) + 0.8 d_i + 0.8 v_ji + 0.8 [true answer is no]): ``v_ji ~ N(0, 1)`` an
  output-level random effect of the judge's error rate, the last term leniency.
  ``checklist180``: the same with 30 tasks (180 outputs; TRACE-Bench validated 400).

What the truth is: the **population value of exactly the estimand of the row**, i.e. the
value the row's point estimate converges to over an infinite population of outputs drawn
with the same design, missingness and output sets (for pooled statistics a ratio of
expectations). Computed once per design from a large Monte-Carlo sample (the benchmark's
default: 4 million rating outputs, 2 million checklist outputs, in 8 chunks) by this
module's own numpy code, never the product's; its Monte-Carlo standard error is the spread
over chunks / sqrt(8). Per family:

* A: Pearson, Spearman (Pearson of mid-ranks) and Kendall tau-b, exactly from the joint
  count table of the discrete pairs, of (judge score, mean of the humans) over the outputs
  the judge scored; of the pooled leave-one-out pairs (judge score or annotator score, mean
  of the other annotators) over every rating of an output with >= 2 ratings, restricted to
  the judge's outputs for the paired human row;
* B: agreement, Cohen's kappa, Gwet's AC1 and balanced accuracy (mean of yes- and
  no-recall) of the population 2x2 table of judge decision vs human majority (strict
  majority of the yes/no answers; ties and all-cant_tell decisions left out);
* C: Krippendorff's alpha from the population coincidence moments (interval: D_o =
  sum_u 2 m_u SS_u / (m_u - 1) / N, D_e = 2 var; nominal likewise); ICC(A,1) from the
  two-way ANOVA mean squares of the complete matrix (before missingness), i.e. the
  estimator's probability limit for these three fixed annotators (the continuous model's
  sigma_item^2 / (sigma_item^2 + s_rater^2 + sigma_e^2), with sigma_item^2 including the
  generator offsets, is printed beside it);
* D: Pearson(judge-a, human mean) - Pearson(judge-b, human mean) over all outputs;
* E: accuracy(judge-a) - accuracy(judge-b) against the human majority = 0 exactly (the
  judges are identically distributed; the Monte-Carlo value is printed as ``...|mc``);
* F: tau-b and pairwise accuracy between the TRUE generator means of judge-b and of the
  humans, exact (normal probabilities of each score value per generator): 0.6 and 0.8;
* G: Bland-Altman: the population mean of judge-a - human mean, mean -/+ 1.96 sd (the
  estimand of the limits), and, as a second reading, the 2.5%/97.5% quantiles of that
  difference; TRACE trace table: Pearson of the pooled (output, operator) pairs (judge-a's
  operator score, mean of the annotators' operator scores).

A family is a declarative :class:`Spec`: (table, row filter, statistic column, lo/hi
columns, truth key). A column absent from the current code skips the spec with "not in this
version"; a builder that raises is counted per study, never fatal.
"""

from __future__ import annotations

import importlib
import inspect
import math
import sys
import time
import traceback
import warnings
import zlib
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

CRITERION = "quality"
ANNOTATORS = ("h1", "h2", "h3")
HUMAN_LOO = "human (leave-one-out)"  # annotation.results.ratings.HUMAN_LOO (checked at load)
CHECKLIST_ROW = "checklist (yes/no)"  # annotation.results.reliability.CHECKLIST
TRUTH_SEED = 20_240_601  # the truth does not depend on --seed
NOMINAL = 0.95
TEST_LEVEL = 0.05
_TOL = 1e-9  # a bound equal to the truth covers it (tau steps: 9/15 computed two ways)


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


# ================================================================================ designs


@dataclass(frozen=True)
class JudgeModel:
    """A rating judge: ``clip(round(q + bias + gen_bias[g] + N(0, sd^2)), 1, 10)``, scoring the
    outputs of ``generators`` only (indices; None = all)."""

    name: str
    bias: float
    sd: float
    gen_bias: tuple[float, ...] = (0.0,) * 6
    generators: tuple[int, ...] | None = None


@dataclass(frozen=True)
class RatingsDesign:
    """One rating criterion 1-10; see the module docstring."""

    name: str
    n_tasks: int = 20
    gen_offsets: tuple[float, ...] = (-1.5, -0.9, -0.3, 0.3, 0.9, 1.5)
    mu: float = 5.5
    sd_item: float = 1.2
    rater_bias: tuple[float, ...] = (-0.4, 0.0, 0.4)
    #: > 0: every study draws its annotators' biases afresh from N(0, sd_rater^2) (random
    #: raters, the model of ICC(A,1) "two-way random"); 0: the fixed ``rater_bias``.
    sd_rater: float = 0.0
    sd_noise: float = 1.2
    p_rate: float = 1.0
    #: < 1: only a uniform random sample of this share of the outputs has human scores (all
    #: annotators), the judges score every output (the design of leaderboard.csv)
    p_label: float = 1.0
    judges: tuple[JudgeModel, ...] = ()
    lo: int = 1
    hi: int = 10

    kind = "ratings"

    @property
    def n_outputs(self) -> int:
        return self.n_tasks * len(self.gen_offsets)


@dataclass(frozen=True)
class ChecklistDesign:
    """Yes/no checklists; see the module docstring."""

    name: str
    n_tasks: int = 10
    n_generators: int = 6
    # (operator, target, pass_answer) per question
    questions: tuple[tuple[str, str, str], ...] = (
        ("count", "A", "yes"), ("count", "A", "yes"), ("count", "B", "yes"),
        ("count", "B", "no"), ("color", "A", "yes"), ("color", "A", "yes"),
        ("color", "B", "yes"), ("spatial", "AB", "yes"), ("spatial", "AB", "no"),
        ("text", "T", "yes"),
    )  # fmt: skip
    question_effects: tuple[float, ...] = tuple(np.round(np.linspace(-0.9, 0.9, 10), 3))
    pass_logit: float = 1.0
    sd_output: float = 1.2
    human_error: float = 0.08
    human_difficulty: float = 0.8
    cant_tell: float = 0.03
    judges: tuple[str, ...] = ("judge-a", "judge-b")
    judge_error: float = 0.10
    judge_difficulty: float = 0.8
    sd_judge_output: float = 0.8
    judge_no_shift: float = 0.8

    kind = "checklist"

    @property
    def n_outputs(self) -> int:
        return self.n_tasks * self.n_generators


JUDGE_A = JudgeModel("judge-a", bias=0.5, sd=1.2)
JUDGE_B = JudgeModel("judge-b", bias=0.3, sd=1.9, gen_bias=(0.0, 0.8, 0.0, -0.8, 0.0, 0.0))

DESIGNS: dict[str, RatingsDesign | ChecklistDesign] = {
    "ratings3": RatingsDesign("ratings3", judges=(JUDGE_A, JUDGE_B)),
    "ratings3_missing": RatingsDesign("ratings3_missing", p_rate=0.7, judges=(JUDGE_A,)),
    "ratings3_half": RatingsDesign(
        "ratings3_half", judges=(JudgeModel("judge-a", 0.5, 1.2, generators=(0, 1, 2)),)),
    "ratings3_random": RatingsDesign("ratings3_random", rater_bias=(0.0, 0.0, 0.0),
                                     sd_rater=0.5, judges=(JUDGE_A,)),
    "ratings_board": RatingsDesign("ratings_board", n_tasks=100, p_label=0.2,
                                   judges=(JUDGE_A, JUDGE_B)),
    "checklist": ChecklistDesign("checklist"),
    "checklist180": ChecklistDesign("checklist180", n_tasks=30),
}


# ============================================================================ simulation


def rating_arrays(d: RatingsDesign, rng: np.random.Generator, n_tasks: int) -> dict[str, Any]:
    """One draw of the ratings design with ``n_tasks`` tasks (every generator per task).

    Returns ``gen``, ``task`` (n,), ``full`` (n, k: every annotator's score before
    missingness), ``H`` (n, k, NaN = not rated) and ``J[name]`` (n, NaN = not scored).
    """
    n_gen = len(d.gen_offsets)
    n = n_tasks * n_gen
    gen = np.tile(np.arange(n_gen), n_tasks)
    task = np.repeat(np.arange(n_tasks), n_gen)
    q = d.mu + np.asarray(d.gen_offsets)[gen] + rng.normal(0.0, d.sd_item, n)
    k = len(d.rater_bias)
    bias = rng.normal(0.0, d.sd_rater, k) if d.sd_rater > 0 else np.asarray(d.rater_bias)
    full = q[:, None] + bias[None, :] + rng.normal(0.0, d.sd_noise, (n, k))
    full = np.clip(np.rint(full), d.lo, d.hi)
    if d.p_rate < 1.0:
        seen = rng.random((n, k)) < d.p_rate
        nobody = np.flatnonzero(~seen.any(axis=1))
        seen[nobody, rng.integers(0, k, len(nobody))] = True
        H = np.where(seen, full, np.nan)
    else:
        H = full.copy()
    J = {}
    for j in d.judges:
        s = q + j.bias + np.asarray(j.gen_bias)[gen] + rng.normal(0.0, j.sd, n)
        s = np.clip(np.rint(s), d.lo, d.hi)
        if j.generators is not None:
            s[~np.isin(gen, j.generators)] = np.nan
        J[j.name] = s
    return {"gen": gen, "task": task, "full": full, "H": H, "J": J}


def checklist_arrays(d: ChecklistDesign, rng: np.random.Generator, n_tasks: int
                     ) -> dict[str, Any]:
    """One draw of the checklist design. Codes: 1 = yes, 0 = no, -1 = cant_tell.

    Returns ``gen``, ``task`` (n,), ``truth`` (n, Q: true answer is yes), ``human``
    (n, Q, 3) and ``judge`` (n, Q, n_judges) answer codes.
    """
    n = n_tasks * d.n_generators
    n_q = len(d.questions)
    gen = np.tile(np.arange(d.n_generators), n_tasks)
    task = np.repeat(np.arange(n_tasks), d.n_generators)
    z = rng.normal(size=n)
    diff = rng.normal(size=n)
    p_pass = _sigmoid(d.pass_logit + d.sd_output * z[:, None]
                      + np.asarray(d.question_effects)[None, :])
    passed = rng.random((n, n_q)) < p_pass
    yes_passes = np.array([q[2] == "yes" for q in d.questions])
    truth = np.where(yes_passes[None, :], passed, ~passed)
    p_h = _sigmoid(_logit(d.human_error) + d.human_difficulty * diff)
    flip = rng.random((n, n_q, len(ANNOTATORS))) < p_h[:, None, None]
    human = (truth[:, :, None] ^ flip).astype(np.int8)
    human[rng.random(human.shape) < d.cant_tell] = -1
    judge = np.empty((n, n_q, len(d.judges)), dtype=np.int8)
    for m in range(len(d.judges)):
        v = rng.normal(size=n)
        logit = (_logit(d.judge_error) + d.judge_difficulty * diff[:, None]
                 + d.sd_judge_output * v[:, None] + d.judge_no_shift * (~truth))
        judge[:, :, m] = truth ^ (rng.random((n, n_q)) < _sigmoid(logit))
    return {"gen": gen, "task": task, "truth": truth, "human": human, "judge": judge}


def _study_rng(seed: int, design: str, study: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(design.encode()), study])


def _output_ids(task: np.ndarray, gen: np.ndarray) -> np.ndarray:
    return np.array([f"t{t:03d}/g{g + 1}" for t, g in zip(task, gen)], dtype=object)


def _outputs_frame(task: np.ndarray, gen: np.ndarray, checklists: bool) -> pd.DataFrame:
    return pd.DataFrame({
        "output_id": _output_ids(task, gen),
        "task_id": [f"t{t:03d}" for t in task],
        "generator": [f"g{g + 1}" for g in gen],
        "missing": 0,
        "checklist_id": [f"c{t:03d}" for t in task] if checklists else None,
    })


def _empty(*columns: str) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})


def _judges_frame(names: Iterable[str]) -> pd.DataFrame:
    names = sorted(names)
    return pd.DataFrame({"name": names, "kind": "vlm", "scale_min": np.nan,
                         "scale_max": np.nan})


def ratings_study(d: RatingsDesign, rng: np.random.Generator) -> Any:
    """A :class:`annotation.results.study.StudyData` drawn from the ratings design."""
    from annotation.results.study import StudyData

    a = rating_arrays(d, rng, d.n_tasks)
    oid = _output_ids(a["task"], a["gen"])
    if d.p_label < 1.0:  # humans on a uniform sample of the outputs only
        a["H"] = np.where((rng.random(len(oid)) < d.p_label)[:, None], a["H"], np.nan)
    rows, cols = np.nonzero(np.isfinite(a["H"]))
    human = pd.DataFrame({"output_id": oid[rows], "annotator": np.array(ANNOTATORS)[cols],
                          "criterion": CRITERION, "score": a["H"][rows, cols]})
    parts = []
    for name, s in a["J"].items():
        ok = np.isfinite(s)
        parts.append(pd.DataFrame({"output_id": oid[ok], "judge": name,
                                   "criterion": CRITERION, "score": s[ok]}))
    criteria = pd.DataFrame({"name": [CRITERION], "label": ["Quality"], "min": [1.0],
                             "max": [10.0], "step": [1.0], "level": ["interval"],
                             "rubric": [""], "position": [0]})
    return StudyData(
        human_scores=human,
        judge_scores=pd.concat(parts, ignore_index=True),
        human_answers=_empty("output_id", "annotator", "question_id", "answer"),
        judge_answers=_empty("output_id", "judge", "question_id", "answer"),
        questions=_empty("question_id", "checklist_id", "operator", "target", "pass_answer",
                         "depends_on"),
        outputs=_outputs_frame(a["task"], a["gen"], checklists=False),
        criteria=criteria,
        judges=_judges_frame(a["J"]),
    )


ANSWER = np.array(["cant_tell", "no", "yes"], dtype=object)  # code + 1


def checklist_study(d: ChecklistDesign, rng: np.random.Generator) -> Any:
    """A :class:`annotation.results.study.StudyData` drawn from the checklist design."""
    from annotation.results.study import StudyData

    a = checklist_arrays(d, rng, d.n_tasks)
    n, n_q = a["truth"].shape
    oid = _output_ids(a["task"], a["gen"])
    qid = np.array([[f"t{t:03d}.q{j}" for j in range(n_q)] for t in a["task"]], dtype=object)
    i, j, r = np.indices(a["human"].shape).reshape(3, -1)
    human = pd.DataFrame({"output_id": oid[i], "annotator": np.array(ANNOTATORS)[r],
                          "question_id": qid[i, j], "answer": ANSWER[a["human"][i, j, r] + 1]})
    i, j, m = np.indices(a["judge"].shape).reshape(3, -1)
    judge = pd.DataFrame({"output_id": oid[i], "judge": np.array(d.judges)[m],
                          "question_id": qid[i, j], "answer": ANSWER[a["judge"][i, j, m] + 1]})
    tasks = np.unique(a["task"])
    questions = pd.DataFrame([
        {"question_id": f"t{t:03d}.q{k}", "checklist_id": f"c{t:03d}", "operator": op,
         "target": target, "pass_answer": pass_answer, "depends_on": [], "position": k}
        for t in tasks for k, (op, target, pass_answer) in enumerate(d.questions)])
    return StudyData(
        human_scores=_empty("output_id", "annotator", "criterion", "score"),
        judge_scores=_empty("output_id", "judge", "criterion", "score"),
        human_answers=human,
        judge_answers=judge,
        questions=questions,
        outputs=_outputs_frame(a["task"], a["gen"], checklists=True),
        criteria=_empty("name", "label", "min", "max", "step", "level", "rubric", "position"),
        judges=_judges_frame(d.judges),
    )


def make_study(design: RatingsDesign | ChecklistDesign, seed: int, study: int) -> Any:
    rng = _study_rng(seed, design.name, study)
    if isinstance(design, RatingsDesign):
        return ratings_study(design, rng)
    return checklist_study(design, rng)


# ================================================================= truth (own numpy code)

#: Scores are multiples of 1/6 at most (means of 1, 2 or 3 integers): exact integer codes.
_SCALE = 6


class _Table:
    """Joint count table of two discrete variables whose values are multiples of 1/6."""

    def __init__(self, hi: float = 10.0) -> None:
        size = int(round(hi * _SCALE)) + 1
        self.t = np.zeros((size, size))
        self.values = np.arange(size) / _SCALE

    def add(self, x: np.ndarray, y: np.ndarray) -> None:
        ok = np.isfinite(x) & np.isfinite(y)
        ix = np.rint(x[ok] * _SCALE).astype(np.int64)
        iy = np.rint(y[ok] * _SCALE).astype(np.int64)
        size = self.t.shape[0]
        self.t += np.bincount(ix * size + iy, minlength=size * size).reshape(size, size)

    def __iadd__(self, other: _Table) -> _Table:
        self.t += other.t
        return self


def table_stats(t: np.ndarray, xv: np.ndarray, yv: np.ndarray) -> dict[str, float]:
    """Pearson, Spearman (Pearson of mid-ranks) and Kendall tau-b of the sample whose joint
    counts are ``t`` (rows: values ``xv``; columns: ``yv``); exact, ties included."""
    n = t.sum()
    px, py = t.sum(axis=1), t.sum(axis=0)

    def pearson(a: np.ndarray, b: np.ndarray) -> float:
        ma, mb = px @ a / n, py @ b / n
        cov = ((a - ma)[:, None] * (b - mb)[None, :] * t).sum() / n
        return float(cov / math.sqrt((px @ (a - ma) ** 2 / n) * (py @ (b - mb) ** 2 / n)))

    rx = np.cumsum(px) - px + (px + 1) / 2
    ry = np.cumsum(py) - py + (py + 1) / 2
    # concordant: sum_ij t_ij * sum_{k>i, l>j} t_kl; discordant: ... k>i, l<j
    ge = t[::-1, ::-1].cumsum(axis=0).cumsum(axis=1)[::-1, ::-1]  # k >= i, l >= j
    gt = np.zeros_like(t)
    gt[:-1, :-1] = ge[1:, 1:]
    gl = t[::-1, :].cumsum(axis=0)[::-1, :].cumsum(axis=1)  # k >= i, l <= j
    lt = np.zeros_like(t)
    lt[:-1, 1:] = gl[1:, :-1]
    s = (t * gt).sum() - (t * lt).sum()
    n0 = n * (n - 1) / 2
    n1, n2 = (px * (px - 1) / 2).sum(), (py * (py - 1) / 2).sum()
    return {"plcc": pearson(xv, yv), "srcc": pearson(rx, ry),
            "kendall": float(s / math.sqrt((n0 - n1) * (n0 - n2)))}


def _ba_stats(t: np.ndarray, xv: np.ndarray, yv: np.ndarray) -> dict[str, float]:
    """Bland-Altman truths of d = x - y: mean, mean -/+ 1.96 sd, and the 2.5/97.5% quantiles."""
    d = xv[:, None] - yv[None, :]
    w = t / t.sum()
    mean = float((w * d).sum())
    sd = math.sqrt(float((w * (d - mean) ** 2).sum()))
    order = np.argsort(d, axis=None)
    cdf = np.cumsum(w.ravel()[order])
    dv = d.ravel()[order]
    return {"mean_diff": mean, "loa_lo": mean - 1.959964 * sd, "loa_hi": mean + 1.959964 * sd,
            "q025": float(dv[np.searchsorted(cdf, 0.025)]),
            "q975": float(dv[np.searchsorted(cdf, 0.975)])}


def _loo(H: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leave-one-out pairs as the product defines them: for every rating of an output with at
    least two ratings, (row index, the rating, the mean of the output's other ratings)."""
    count = np.isfinite(H).sum(axis=1)
    total = np.nansum(H, axis=1)
    rows, cols = np.nonzero(np.isfinite(H) & (count >= 2)[:, None])
    score = H[rows, cols]
    return rows, score, (total[rows] - score) / (count[rows] - 1)


def _rating_chunk_tables(d: RatingsDesign, a: dict[str, Any]) -> dict[str, Any]:
    H, full = a["H"], a["full"]
    mean = np.nanmean(H, axis=1)
    rows, score, others = _loo(H)
    acc: dict[str, Any] = {}
    human_all = _Table()
    human_all.add(score, others)
    acc["human_loo|all"] = human_all
    for name, s in a["J"].items():
        tm, tl, th = _Table(), _Table(), _Table()
        tm.add(s, mean)
        tl.add(s[rows], others)
        judged = np.isfinite(s[rows])
        th.add(score[judged], others[judged])
        acc[f"{name}|mean"], acc[f"{name}|loo"], acc[f"human_loo|{name}"] = tm, tl, th
    names = list(a["J"])
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            both = np.isfinite(a["J"][x]) & np.isfinite(a["J"][y])
            ta, tb = _Table(), _Table()
            ta.add(a["J"][x][both], mean[both])
            tb.add(a["J"][y][both], mean[both])
            acc[f"pair|{x}|{y}"] = (ta, tb)
    # Krippendorff's interval alpha: D_o = sum_u 2 m_u SS_u / (m_u - 1) / N, D_e = 2 var
    m = np.isfinite(H).sum(axis=1)
    ok = m >= 2
    hp = H[ok]
    ss = np.nansum((hp - np.nanmean(hp, axis=1)[:, None]) ** 2, axis=1)
    vals = hp[np.isfinite(hp)]
    acc["alpha"] = np.array([(2 * m[ok] * ss / (m[ok] - 1)).sum(), vals.size, vals.sum(),
                             (vals**2).sum()])
    # two-way ANOVA sums of the complete matrix (before missingness)
    acc["anova"] = (full.shape[0], full.sum(), (full**2).sum(), (full.sum(axis=1) ** 2).sum(),
                    full.sum(axis=0))
    return acc


def _alpha_from(s: np.ndarray) -> float:
    num, n, sv, sv2 = s
    return float(1 - (num / n) / (2 * (sv2 / n - (sv / n) ** 2)))


def _icc_from(s: tuple) -> float:
    n, total, sq, rows2, cols = s
    k = len(cols)
    cf = total**2 / (n * k)
    ss_r, ss_c, ss_t = rows2 / k - cf, (cols**2).sum() / n - cf, sq - cf
    ss_e = ss_t - ss_r - ss_c
    msr, msc, mse = ss_r / (n - 1), ss_c / (k - 1), ss_e / ((n - 1) * (k - 1))
    return float((msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n))


def _rating_values(acc: dict[str, Any], d: RatingsDesign) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, tab in acc.items():
        if isinstance(tab, _Table):
            for stat, v in table_stats(tab.t, tab.values, tab.values).items():
                out[f"{key}|{stat}"] = v
            if key.endswith("|mean"):
                judge = key.split("|")[0]
                for stat, v in _ba_stats(tab.t, tab.values, tab.values).items():
                    out[f"ba|{judge}|{stat}"] = v
        elif key.startswith("pair|"):
            ta, tb = tab
            ra = table_stats(ta.t, ta.values, ta.values)["plcc"]
            rb = table_stats(tb.t, tb.values, tb.values)["plcc"]
            out[f"diff|{key[5:]}|plcc"] = ra - rb
    out["alpha_interval"] = _alpha_from(acc["alpha"])
    out["icc_a1"] = _icc_from(acc["anova"])
    return out


def _merge(total: dict[str, Any] | None, part: dict[str, Any]) -> dict[str, Any]:
    if total is None:
        return part
    for key, v in part.items():
        if isinstance(v, _Table):
            total[key] += v
        elif key.startswith("pair|"):
            total[key][0].__iadd__(v[0])
            total[key][1].__iadd__(v[1])
        elif key == "anova":
            a = total[key]
            total[key] = (a[0] + v[0], a[1] + v[1], a[2] + v[2], a[3] + v[3], a[4] + v[4])
        else:
            total[key] = total[key] + v
    return total


def _expected_score(mu: np.ndarray, sd: float, lo: int, hi: int) -> np.ndarray:
    """E[clip(round(N(mu, sd^2)), lo, hi)], exactly (normal probabilities of each value)."""
    from scipy.stats import norm

    values = np.arange(lo, hi + 1)
    upper = norm.cdf((values[:-1] + 0.5 - mu[:, None]) / sd)
    p = np.diff(np.concatenate([np.zeros((len(mu), 1)), upper, np.ones((len(mu), 1))],
                               axis=1), axis=1)
    return p @ values


def _system_truth(d: RatingsDesign) -> dict[str, float]:
    """Tau-b and pairwise accuracy between the TRUE generator means of judge and humans."""
    offs = np.asarray(d.gen_offsets)
    base = d.mu + offs
    human = np.mean([_expected_score(base + c, math.hypot(d.sd_item, d.sd_noise), d.lo, d.hi)
                     for c in d.rater_bias], axis=0)
    out = {}
    for j in d.judges:
        jm = _expected_score(base + j.bias + np.asarray(j.gen_bias), math.hypot(d.sd_item, j.sd),
                             d.lo, d.hi)
        i, k = np.triu_indices(len(offs), 1)
        sx, sy = np.sign(jm[i] - jm[k]), np.sign(human[i] - human[k])
        out[f"system|{j.name}|kendall"] = float((sx * sy).sum() / math.sqrt(
            (sx != 0).sum() * (sy != 0).sum()))
        out[f"system|{j.name}|pairwise_accuracy"] = float((sx == sy).mean())
        out[f"system|{j.name}|min_gap"] = float(np.min(np.abs(np.diff(np.sort(jm)))))
    out["system|human|min_gap"] = float(np.min(np.abs(np.diff(np.sort(human)))))
    for g, value in enumerate(human):  # each generator's true human mean (leaderboard.csv)
        out[f"board|g{g + 1}"] = float(value)
    return out


def _operator_scores(codes: np.ndarray, yes_passes: np.ndarray, inst: np.ndarray,
                     op_of_inst: np.ndarray, n_ops: int) -> np.ndarray:
    """TRACE operator scores per (output, rater, operator), NaN where nothing was decided:
    instance = mean pass over its decided questions, operator = mean of its instances.
    ``codes``: (n, Q, R) answer codes."""
    decided = codes >= 0
    passed = ((codes == 1) == yes_passes[None, :, None]) & decided
    m_inst = np.eye(inst.max() + 1)[inst]  # Q x I
    num = np.einsum("nqr,qi->nri", passed.astype(float), m_inst)
    den = np.einsum("nqr,qi->nri", decided.astype(float), m_inst)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = num / den
        m_op = np.eye(n_ops)[op_of_inst]  # I x O
        ok = np.isfinite(score)
        return np.einsum("nri,io->nro", np.where(ok, score, 0.0), m_op) / np.einsum(
            "nri,io->nro", ok.astype(float), m_op)


def _checklist_chunk(d: ChecklistDesign, a: dict[str, Any]) -> dict[str, np.ndarray]:
    human, judge = a["human"], a["judge"]
    yes = (human == 1).sum(axis=2)
    no = (human == 0).sum(axis=2)
    majority = np.where(yes > no, 1, np.where(no > yes, 0, -1))  # -1: tie or no vote
    has = majority >= 0
    acc: dict[str, np.ndarray] = {}
    for m, name in enumerate(d.judges):
        j = judge[:, :, m][has]
        h = majority[has]
        acc[f"cells|{name}"] = np.array([np.sum((j == 1) & (h == 1)), np.sum((j == 1) & (h == 0)),
                                         np.sum((j == 0) & (h == 1)), np.sum((j == 0) & (h == 0))],
                                        dtype=float)
    m_u = yes + no
    ok = m_u >= 2
    acc["alpha_nominal"] = np.array([(2 * yes[ok] * no[ok] / (m_u[ok] - 1)).sum(),
                                     m_u[ok].sum(), yes[ok].sum()], dtype=float)
    # TRACE operator scores, pooled over (output, operator)
    ops = list(dict.fromkeys(q[0] for q in d.questions))
    instances = list(dict.fromkeys((q[0], q[1]) for q in d.questions))
    inst = np.array([instances.index((q[0], q[1])) for q in d.questions])
    op_of_inst = np.array([ops.index(i[0]) for i in instances])
    yes_passes = np.array([q[2] == "yes" for q in d.questions])
    hs = _operator_scores(human, yes_passes, inst, op_of_inst, len(ops))
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-cant_tell operator
        hmean = np.nanmean(hs, axis=1)  # (n, O)
    js = _operator_scores(judge[:, :, :1], yes_passes, inst, op_of_inst, len(ops))[:, 0, :]
    x, y = js.ravel(), hmean.ravel()
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    acc[f"trace|{d.judges[0]}"] = np.array([x.size, x.sum(), y.sum(), (x * x).sum(),
                                            (y * y).sum(), (x * y).sum()])
    return acc


def _checklist_values(acc: dict[str, np.ndarray], d: ChecklistDesign) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in d.judges:
        a, b, c, dd = acc[f"cells|{name}"]
        n = a + b + c + dd
        po = (a + dd) / n
        pe = ((a + b) * (a + c) + (c + dd) * (b + dd)) / n**2
        pi = ((a + b) + (a + c)) / (2 * n)
        pe1 = 2 * pi * (1 - pi)
        out[f"chk|{name}|agreement"] = po
        out[f"chk|{name}|kappa"] = (po - pe) / (1 - pe)
        out[f"chk|{name}|ac1"] = (po - pe1) / (1 - pe1)
        out[f"chk|{name}|balanced_accuracy"] = (a / (a + c) + dd / (dd + b)) / 2
    out[f"chk|diff|{d.judges[0]}|{d.judges[1]}|mc"] = (
        out[f"chk|{d.judges[0]}|agreement"] - out[f"chk|{d.judges[1]}|agreement"])
    out[f"chk|diff|{d.judges[0]}|{d.judges[1]}"] = 0.0  # identically distributed judges
    num, n, y = acc["alpha_nominal"]
    p = y / n
    out["alpha_nominal"] = 1 - (num / n) / (2 * p * (1 - p))
    k, sx, sy, sxx, syy, sxy = acc[f"trace|{d.judges[0]}"]
    cov = sxy / k - sx * sy / k**2
    out[f"trace|{d.judges[0]}|pearson"] = cov / math.sqrt(
        (sxx / k - (sx / k) ** 2) * (syy / k - (sy / k) ** 2))
    return out


def _random_rater_icc(d: RatingsDesign, n_outputs: int) -> tuple[float, float]:
    """Population ICC(A,1) with random raters: the covariance of two ratings of one output
    by two independently drawn annotators, over the variance of a rating (items, raters
    and noise all random; McGraw & Wong 1996, case 2A), after rounding and clipping.
    Returns (value, Monte-Carlo standard error over 8 chunks)."""
    parts = []
    for c in range(8):
        rng = np.random.default_rng([TRUTH_SEED, zlib.crc32(d.name.encode()), 100 + c])
        n = n_outputs // 8
        gen = rng.integers(0, len(d.gen_offsets), n)
        q = d.mu + np.asarray(d.gen_offsets)[gen] + rng.normal(0.0, d.sd_item, n)
        y = np.clip(np.rint(q[:, None] + rng.normal(0.0, d.sd_rater, (n, 2))
                            + rng.normal(0.0, d.sd_noise, (n, 2))), d.lo, d.hi)
        mean = y.mean()
        parts.append(float(((y[:, 0] - mean) * (y[:, 1] - mean)).mean() / y.var()))
    return float(np.mean(parts)), float(np.std(parts, ddof=1) / math.sqrt(8))


def compute_truth(design: RatingsDesign | ChecklistDesign, n_outputs: int,
                  chunks: int = 8) -> dict[str, Any]:
    """Population values of every estimand of ``design`` from ``n_outputs`` Monte-Carlo
    outputs in ``chunks`` chunks; ``se`` holds each value's Monte-Carlo standard error
    estimated from the spread of the per-chunk values (sd / sqrt(chunks))."""
    start = time.perf_counter()
    if isinstance(design, RatingsDesign):
        per_task = len(design.gen_offsets)
        chunk_fn, values_fn, arrays = _rating_chunk_tables, _rating_values, rating_arrays
    else:
        per_task = design.n_generators
        chunk_fn, values_fn, arrays = _checklist_chunk, _checklist_values, checklist_arrays
    tasks = max(1, n_outputs // per_task // chunks)
    total = None
    per_chunk = []
    for c in range(chunks):
        rng = np.random.default_rng([TRUTH_SEED, zlib.crc32(design.name.encode()), c])
        part = chunk_fn(design, arrays(design, rng, tasks))
        per_chunk.append(values_fn(part, design))
        total = _merge(total, part)
    values = values_fn(total, design)
    se = {k: float(np.std([p[k] for p in per_chunk], ddof=1) / math.sqrt(chunks))
          for k in values}
    if isinstance(design, RatingsDesign):
        values.update(_system_truth(design))
        # the continuous model: item variance = generator offsets + u, raters fixed
        s_item = design.sd_item**2 + float(np.var(design.gen_offsets))
        s_c = float(np.var(design.rater_bias, ddof=1))
        values["icc_a1_continuous"] = s_item / (s_item + s_c + design.sd_noise**2)
        if design.sd_rater > 0:
            values["icc_a1"], se["icc_a1"] = _random_rater_icc(design, n_outputs)
    return {"design": design.name, "n_outputs": tasks * per_task * chunks, "values": values,
            "se": se, "seconds": time.perf_counter() - start}


# ================================================================================ specs


@dataclass(frozen=True)
class Spec:
    """One row of the coverage table: where to read an interval and what it should cover.

    ``where``: column == value filters (the columns must exist); ``prefer``: (column,
    values in order of preference) pairs, each applied only if its column exists (NaN reads
    as ""): the first value present is kept, none present = no row;
    ``kind`` "test": ``stat`` is a p-value under a true null, reported as P(p < .05).
    """

    family: str
    design: str
    table: str
    row: str
    stat: str
    lo: str | None
    hi: str | None
    truth: str
    where: tuple[tuple[str, object], ...]
    prefer: tuple[tuple[str, tuple[str, ...]], ...] = ()
    kind: str = "interval"
    note: str = ""

    @property
    def key(self) -> str:
        return f"{self.family}|{self.design}|{self.row}|{self.stat}|{self.lo}"


def _w(**kw: object) -> tuple[tuple[str, object], ...]:
    return tuple(kw.items())


def _ratings_specs() -> list[Spec]:
    out = []
    base = {"criterion": CRITERION, "group": "all"}
    for design in ("ratings3", "ratings3_missing", "ratings3_half"):
        own = (("paired_judge", ("",)),)  # a judge's own rows (new code: paired_judge "")
        rows: list[tuple[str, dict, tuple, str, str]] = [
            ("judge-a vs human mean", {"judge": "judge-a", "reference": "human mean"}, own,
             "judge-a|mean", ""),
            ("judge-a vs LOO mean (pooled pairs)",
             {"judge": "judge-a", "reference": "leave-one-out mean"}, own, "judge-a|loo", ""),
        ]
        if design == "ratings3_half":
            rows += [
                ("human LOO on judge-a's outputs",
                 {"judge": HUMAN_LOO, "reference": "leave-one-out mean"},
                 (("paired_judge", ("judge-a",)),), "human_loo|judge-a",
                 "without a paired_judge column: the only (all-outputs) row"),
                ("human LOO on all outputs",
                 {"judge": HUMAN_LOO, "reference": "leave-one-out mean"},
                 (("paired_judge", ("",)),), "human_loo|all", ""),
            ]
        else:
            rows.append(("human LOO (pooled pairs)",
                         {"judge": HUMAN_LOO, "reference": "leave-one-out mean"},
                         (("paired_judge", ("judge-a", "")),), "human_loo|judge-a", ""))
        for label, where, prefer, truth, note in rows:
            for stat in ("plcc", "srcc", "kendall"):
                out.append(Spec("A", design, "ratings", label, stat, f"{stat}_lo", f"{stat}_hi",
                                f"{truth}|{stat}", _w(**base, **where), prefer, note=note))
    return out


def _checklist_specs() -> list[Spec]:
    where = _w(judge="judge-a", group="all", reference="human majority")
    out = [Spec("B", "checklist", "checklist", "judge-a vs human majority", stat, f"{stat}_lo",
                f"{stat}_hi", f"chk|judge-a|{stat}", where)
           for stat in ("agreement", "kappa", "ac1", "balanced_accuracy")]
    out.append(Spec("B", "checklist", "checklist", "CONTRAST old-style Wilson (decisions)",
                    "agreement", "agreement_wilson_lo", "agreement_wilson_hi",
                    "chk|judge-a|agreement", where,
                    note="expected to under-cover: decisions are not independent"))
    return out


def _reliability_specs() -> list[Spec]:
    rating = _w(criterion=CRITERION, group="all")
    out = []
    out.append(Spec("C", "ratings3_random", "reliability", "ratings ICC(A,1), random raters",
                    "icc_a1", "icc_a1_lo", "icc_a1_hi", "icc_a1", rating,
                    note="annotators drawn afresh per study: the model of the F interval"))
    for design in ("ratings3", "ratings3_missing"):
        out.append(Spec("C", design, "reliability", "ratings alpha (interval)", "alpha_interval",
                        "alpha_lo", "alpha_hi", "alpha_interval",
                        rating + (("ci_level", "interval"),)))
        out.append(Spec("C", design, "reliability", "ratings ICC(A,1)", "icc_a1", "icc_a1_lo",
                        "icc_a1_hi", "icc_a1", rating,
                        note="incomplete design" if design.endswith("missing") else ""))
    out.append(Spec("C", "checklist", "reliability", "checklist alpha (nominal)",
                    "alpha_nominal", "alpha_lo", "alpha_hi", "alpha_nominal",
                    _w(criterion=CHECKLIST_ROW, group="all", ci_level="nominal")))
    return out


def _other_specs() -> list[Spec]:
    pair = _w(criterion=CRITERION, judge_a="judge-a", judge_b="judge-b")
    chk_pair = _w(reference="human majority", judge_a="judge-a", judge_b="judge-b")
    system = _w(criterion=CRITERION, judge="judge-b")
    ba = _w(judge="judge-a")
    ba_prefer = (("criterion", (CRITERION,)), ("group", ("all",)),
                 ("reference", ("human mean",)), ("paired_judge", ("",)))
    return [
        Spec("D", "ratings3", "judge_comparisons", "r(judge-a) - r(judge-b), Zou", "diff",
             "zou_lo", "zou_hi", "diff|judge-a|judge-b|plcc", pair),
        Spec("D", "ratings3", "judge_comparisons", "r(judge-a) - r(judge-b), paired boot",
             "diff", "boot_lo", "boot_hi", "diff|judge-a|judge-b|plcc", pair),
        Spec("E", "checklist", "checklist_comparisons", "accuracy(a) - accuracy(b)", "diff",
             "diff_lo", "diff_hi", "chk|diff|judge-a|judge-b", chk_pair),
        Spec("E", "checklist", "checklist_comparisons", "clustered McNemar, H0 true",
             "clustered_p", None, None, "chk|diff|judge-a|judge-b", chk_pair, kind="test"),
        Spec("E", "checklist", "checklist_comparisons", "exact McNemar (old), H0 true",
             "mcnemar_p", None, None, "chk|diff|judge-a|judge-b", chk_pair, kind="test"),
        Spec("F", "ratings3", "system_level", "judge-b vs humans, 6 generators", "kendall",
             "kendall_lo", "kendall_hi", "system|judge-b|kendall", system,
             note="tau of 6 generators moves in steps of 2/15; true gaps 0.19-0.6 points"),
        Spec("F", "ratings3", "system_level", "judge-b vs humans, 6 generators",
             "pairwise_accuracy", "pairwise_accuracy_lo", "pairwise_accuracy_hi",
             "system|judge-b|pairwise_accuracy", system),
        Spec("G", "ratings3", "bland_altman", "judge-a - human mean", "mean_diff",
             "mean_diff_lo", "mean_diff_hi", "ba|judge-a|mean_diff", ba, ba_prefer),
        Spec("G", "ratings3", "bland_altman", "lower LoA (truth mu - 1.96 sd)", "loa_lo",
             "loa_lo_lo", "loa_lo_hi", "ba|judge-a|loa_lo", ba, ba_prefer),
        Spec("G", "ratings3", "bland_altman", "upper LoA (truth mu + 1.96 sd)", "loa_hi",
             "loa_hi_lo", "loa_hi_hi", "ba|judge-a|loa_hi", ba, ba_prefer),
        Spec("G", "ratings3", "bland_altman", "lower LoA (truth 2.5% quantile)", "loa_lo",
             "loa_lo_lo", "loa_lo_hi", "ba|judge-a|q025", ba, ba_prefer),
        Spec("G", "ratings3", "bland_altman", "upper LoA (truth 97.5% quantile)", "loa_hi",
             "loa_hi_lo", "loa_hi_hi", "ba|judge-a|q975", ba, ba_prefer),
        Spec("G", "checklist", "trace", "operator scores, unit output x operator", "pearson",
             "pearson_lo", "pearson_hi", "trace|judge-a|pearson",
             _w(judge="judge-a", unit="output x operator")),
        Spec("G", "checklist180", "trace", "operator scores, 180 outputs", "pearson",
             "pearson_lo", "pearson_hi", "trace|judge-a|pearson",
             _w(judge="judge-a", unit="output x operator"),
             note="the same design with 30 tasks (TRACE-Bench validated 400 outputs)"),
    ]


def _leaderboard_specs() -> list[Spec]:
    """Each generator's human mean from the judge on all 600 outputs and humans on a
    uniform 20% sample; judge-b flatters g2 (+0.8) and is harsh on g4 (-0.8)."""
    out = []
    for judge, gen in (("judge-a", "g1"), ("judge-b", "g2"), ("judge-b", "g4"),
                       ("judge-b", "g6")):
        where = _w(judge=judge, measure=CRITERION, generator=gen)
        out.append(Spec("H", "ratings_board", "leaderboard", f"{judge}, {gen}, corrected",
                        "estimate", "lo", "hi", f"board|{gen}", where))
        out.append(Spec("H", "ratings_board", "leaderboard", f"{judge}, {gen}, humans only",
                        "human_mean", "human_lo", "human_hi", f"board|{gen}", where,
                        note="the contrast: compare the widths"))
    return out


SPECS: list[Spec] = [*_ratings_specs(), *_checklist_specs(), *_reliability_specs(),
                     *_other_specs(), *_leaderboard_specs()]
FAMILIES = {
    "A": "ratings.csv: judge vs human mean, pooled leave-one-out rows",
    "B": "checklist.csv: judge vs human majority",
    "C": "reliability.csv: alpha and ICC",
    "D": "judge_comparisons.csv: difference of two judges' PLCC",
    "E": "checklist_comparisons.csv: difference of two accuracies, McNemar",
    "F": "system_level.csv: ranking of 6 generators",
    "G": "bland_altman and trace_table (if present)",
    "H": "leaderboard.csv: generator scores from the judge corrected by a human sample",
}


def select_specs(families: Iterable[str] | None) -> list[Spec]:
    if not families:
        return list(SPECS)
    wanted = {f.strip().upper() for f in families if f.strip()}
    unknown = wanted - set(FAMILIES)
    if unknown:
        raise ValueError(f"unknown families {sorted(unknown)}; use {', '.join(FAMILIES)}")
    return [s for s in SPECS if s.family in wanted]


# =========================================================================== the product


@dataclass
class Product:
    """The product's table builders, resolved once (the harness never edits them)."""

    builders: dict[str, Callable[[Any, int, int, dict], pd.DataFrame]] = field(
        default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)


def _call(fn: Callable, *args: Any, **kw: Any) -> Any:
    params = inspect.signature(fn).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        kw = {k: v for k, v in kw.items() if k in params}
    return fn(*args, **kw)


#: table -> candidate (module, function) in order; a function with an ``options`` parameter
#: gets ``ReportOptions(n_boot, seed)``, others ``n_boot``/``seed`` keywords if they take them.
TABLE_SOURCES: dict[str, list[tuple[str, str]]] = {
    "ratings": [("annotation.results.ratings", "ratings_table")],
    "checklist": [("annotation.results.checklist", "checklist_table")],
    "checklist_comparisons": [("annotation.results.report", "checklist_comparisons"),
                              ("annotation.results.report", "checklist_comparisons_table"),
                              ("annotation.results.checklist", "mcnemar_table")],
    "reliability": [("annotation.results.reliability", "reliability_table")],
    "judge_comparisons": [("annotation.results.report", "judge_comparisons")],
    "system_level": [("annotation.results.report", "system_table")],
    "operators": [("annotation.results.operators", "operators_table")],
    "leaderboard": [("annotation.results.leaderboard", "leaderboard_table")],
    "bland_altman": [("annotation.results.judge_bias", "bland_altman_table"),
                     ("annotation.results.report", "bland_altman_table"),
                     ("annotation.results.report", "bland_altman"),
                     ("annotation.results.ratings", "bland_altman_table"),
                     ("annotation.bland_altman", "bland_altman_table"),
                     ("annotation.stats.bland_altman", "bland_altman_table")],
}
PRODUCT_MODULES = ("annotation.results.study", "annotation.results.ratings",
                   "annotation.results.checklist",
                   "annotation.results.reliability", "annotation.results.operators",
                   "annotation.results.report", "annotation.results.analytics")


def _wrap(fn: Callable, options_cls: Any) -> Callable[[Any, int, int, dict], pd.DataFrame]:
    takes_options = "options" in inspect.signature(fn).parameters

    def build(study: Any, n_boot: int, seed: int, cache: dict) -> pd.DataFrame:
        if takes_options:
            return _call(fn, study, options=options_cls(n_boot=n_boot, seed=seed))
        return _call(fn, study, n_boot=n_boot, seed=seed, per_annotator=False)

    return build


#: where the report's modules were before the layout by concern (``--code`` on older commits)
OLD_LAYOUT = {
    "annotation.results.study": "annotation.study",
    "annotation.results.ratings": "annotation.ratings",
    "annotation.results.checklist": "annotation.checklist_agreement",
    "annotation.results.reliability": "annotation.human_reliability",
    "annotation.results.operators": "annotation.operator_scores",
    "annotation.results.report": "annotation.report",
    "annotation.results.analytics": "annotation.analytics",
    "annotation.results.judge_bias": "annotation.judge_bias",
}


def _alias_old_layout(log: Callable[[str], object]) -> None:
    """On code from before ``annotation/results/`` existed, make its modules importable
    under their present names (what the builders and the simulator import)."""
    import types

    package = importlib.import_module("annotation")
    if (Path(package.__file__ or "").parent / "results").is_dir():
        return  # (an editable install of a newer checkout must not lend its modules)
    log("note: code before the layout by concern; report modules taken from annotation.*")
    sys.modules["annotation.results"] = types.ModuleType("annotation.results")
    for new, old in OLD_LAYOUT.items():
        try:
            sys.modules[new] = importlib.import_module(old)
        except ImportError:
            continue  # not in that version: its tables print "not in this version"


def load_product(*, attempts: int = 10, wait: float = 30.0,
                 log: Callable[[str], object] = print) -> Product:
    """Import the product's builders; an import that fails (code mid-edit by others) is
    retried ``attempts`` times, ``wait`` seconds apart, before giving up."""
    for attempt in range(1, attempts + 1):
        try:
            _alias_old_layout(log)
            mods = {name: importlib.import_module(name) for name in PRODUCT_MODULES}
            break
        except Exception as exc:  # a module mid-edit: SyntaxError, ImportError, ...
            if attempt == attempts:
                raise
            log(f"import of the product failed ({type(exc).__name__}: {exc}); "
                f"retry {attempt}/{attempts - 1} in {wait:.0f} s")
            time.sleep(wait)
            for name in [m for m in sys.modules if m.split(".")[0] == "annotation"]:
                del sys.modules[name]  # re-read everything, half-written or not
    _preimport(log)
    report = mods["annotation.results.report"]
    product = Product()
    if getattr(mods["annotation.results.ratings"], "HUMAN_LOO", HUMAN_LOO) != HUMAN_LOO:
        loo = mods["annotation.results.ratings"].HUMAN_LOO
        log(f"note: annotation.results.ratings.HUMAN_LOO is {loo!r}")
    for table, candidates in TABLE_SOURCES.items():
        for module, name in candidates:
            try:
                mod = mods.get(module) or importlib.import_module(module)
            except Exception:
                continue
            fn = getattr(mod, name, None)
            if callable(fn) and not isinstance(fn, type):
                product.builders[table] = _wrap(fn, report.ReportOptions)
                product.sources[table] = f"{module}.{name}"
                break
        else:
            if table in getattr(report, "TABLES", ()):
                def from_report(study: Any, n_boot: int, seed: int, cache: dict,
                                _t: str = table) -> pd.DataFrame:
                    if "__report__" not in cache:
                        cache["__report__"] = report.build_report(
                            study, report.ReportOptions(n_boot=n_boot, seed=seed))
                    return cache["__report__"][_t]

                product.builders[table] = from_report
                product.sources[table] = f"annotation.results.report.build_report()[{table!r}]"
            else:
                product.missing[table] = "no builder in this version"
    product.builders["trace"], product.sources["trace"] = _trace_builder(mods, product)
    if product.builders["trace"] is None:
        del product.builders["trace"]
        product.missing["trace"] = product.sources.pop("trace")
    return product


def _preimport(log: Callable[[str], object]) -> None:
    """Import every module of the package now, so that the forked workers share one
    snapshot of the code even where a builder imports lazily (others may be editing)."""
    import pkgutil

    package = importlib.import_module("annotation")
    for info in pkgutil.walk_packages(package.__path__, "annotation."):
        if info.name.endswith(".__main__"):  # runs the command line when imported
            continue
        try:
            importlib.import_module(info.name)
        except Exception as exc:  # unrelated or mid-edit: the builders will tell
            log(f"note: could not import {info.name} ({type(exc).__name__})")


#: display names of the old ``analytics.trace_table`` -> the report's column names
_TRACE_NAMES = {"Pearson": "pearson", "Pearson lo": "pearson_lo", "Pearson hi": "pearson_hi"}


def _trace_builder(mods: dict[str, Any], product: Product) -> tuple[Callable | None, str]:
    """TRACE-Bench's judge table: ``operator_scores.trace_table(study, checklist, ...)`` in
    the new code, ``analytics.trace_table(operators, checklist)`` in the old one."""
    new = getattr(mods["annotation.results.operators"], "trace_table", None)
    old = getattr(mods["annotation.results.analytics"], "trace_table", None)
    if callable(new) and next(iter(inspect.signature(new).parameters)) == "study":
        def trace(study: Any, n_boot: int, seed: int, cache: dict) -> pd.DataFrame:
            chk = table_for("checklist", study, n_boot, seed, cache, product)
            return _call(new, study, chk, n_boot=n_boot, seed=seed)

        return trace, "annotation.results.operators.trace_table(study, checklist)"
    if callable(old):
        def trace_old(study: Any, n_boot: int, seed: int, cache: dict) -> pd.DataFrame:
            ops = table_for("operators", study, n_boot, seed, cache, product)
            chk = table_for("checklist", study, n_boot, seed, cache, product)
            table = _call(old, ops, chk, n_boot=n_boot, seed=seed)
            return table.rename(columns=_TRACE_NAMES)

        return trace_old, "annotation.results.analytics.trace_table(operators, checklist)"
    return None, "no trace_table in this version"


def table_for(table: str, study: Any, n_boot: int, seed: int, cache: dict,
              product: Product) -> pd.DataFrame:
    if table not in cache:
        start = time.perf_counter()
        try:
            cache[table] = product.builders[table](study, n_boot, seed, cache)
        except Exception:
            cache[table] = traceback.format_exc(limit=6)
        cache.setdefault("__times__", {})[table] = time.perf_counter() - start
    value = cache[table]
    if isinstance(value, str):
        raise RuntimeError(value)
    return value


# ========================================================================== one study


def _pick(table: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    mask = pd.Series(True, index=table.index)
    for col, value in spec.where:
        mask &= table[col].astype(object) == value
    rows = table[mask]
    for col, values in spec.prefer:
        if col not in rows.columns:
            continue
        got = rows[col].astype(object).where(rows[col].notna(), "").astype(str)
        rows = next((rows[got == v] for v in values if (got == v).any()), rows.iloc[0:0])
    return rows


def spec_status(spec: Spec, columns: Iterable[str]) -> str | None:
    """None when the table has every column the spec reads, else why not."""
    columns = set(columns)
    need = [spec.stat, *(c for c in (spec.lo, spec.hi) if c), *(c for c, _ in spec.where)]
    absent = [c for c in need if c not in columns]
    return f"not in this version (no column {', '.join(absent)})" if absent else None


def run_study(index: int, *, specs: list[Spec], seed: int, n_boot: int,
              product: Product) -> dict[str, Any]:
    """Simulate study ``index`` of every design the specs need, build the tables they read,
    and return per spec (estimate, lo, hi) (NaN = row or interval missing)."""
    boot_seed = (seed * 1_000_003 + index) % (2**31 - 1)
    values: dict[str, tuple[float, float, float]] = {}
    errors: dict[str, str] = {}
    columns: dict[str, list[str]] = {}
    times: dict[str, float] = {}
    ambiguous: dict[str, int] = {}
    for design_name in dict.fromkeys(s.design for s in specs):
        design = DESIGNS[design_name]
        start = time.perf_counter()
        study = make_study(design, seed, index)
        times[f"simulate {design_name}"] = time.perf_counter() - start
        cache: dict[str, Any] = {}
        for spec in (s for s in specs if s.design == design_name):
            if spec.table not in product.builders:
                continue
            tkey = f"{design_name}:{spec.table}"
            try:
                table = table_for(spec.table, study, n_boot, boot_seed, cache, product)
            except RuntimeError as exc:
                errors[tkey] = str(exc)
                continue
            columns[tkey] = [str(c) for c in table.columns]
            if spec_status(spec, table.columns):
                continue
            rows = _pick(table, spec)
            if len(rows) > 1:
                ambiguous[spec.key] = len(rows)
            if rows.empty:
                values[spec.key] = (math.nan, math.nan, math.nan)
                continue
            row = rows.iloc[0]

            def num(col: str | None, _row: pd.Series = row) -> float:
                if col is None:
                    return math.nan
                try:
                    return float(_row[col])
                except (TypeError, ValueError):
                    return math.nan

            values[spec.key] = (num(spec.stat), num(spec.lo), num(spec.hi))
        for table, sec in cache.get("__times__", {}).items():
            times[f"{design_name}:{table}"] = sec
    return {"index": index, "values": values, "errors": errors, "columns": columns,
            "times": times, "ambiguous": ambiguous}


# ========================================================================== aggregation


@dataclass
class Outcome:
    spec: Spec
    truth: float
    truth_se: float
    status: str = ""
    n_studies: int = 0
    n_defined: int = 0
    coverage: float = math.nan
    mc_se: float = math.nan
    width: float = math.nan
    bias: float = math.nan
    below: float = math.nan  # share of defined intervals entirely above the truth
    above: float = math.nan  # ... entirely below the truth

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["spec"] = asdict(self.spec)
        return d


def aggregate(specs: list[Spec], results: list[dict[str, Any]], truths: dict[str, dict],
              product: Product) -> list[Outcome]:
    """Coverage (P(lo <= truth <= hi) over studies where the interval is defined) per spec;
    for ``kind == "test"`` the rejection rate P(p < .05)."""
    results = sorted(results, key=lambda r: r["index"])
    outcomes = []
    for spec in specs:
        t = truths[spec.design]
        truth = t["values"].get(spec.truth, math.nan)
        out = Outcome(spec, truth, t["se"].get(spec.truth, 0.0), n_studies=len(results))
        tkey = f"{spec.design}:{spec.table}"
        seen = next((r["columns"][tkey] for r in results if tkey in r["columns"]), None)
        if spec.table in product.missing:
            out.status = f"not in this version ({product.missing[spec.table]})"
        elif seen is None:
            errs = [r["errors"][tkey] for r in results if tkey in r["errors"]]
            out.status = ("error in every study: " + errs[0].strip().splitlines()[-1]
                          if errs else "not computed")
        elif spec_status(spec, seen):
            out.status = spec_status(spec, seen) or ""
        outcomes.append(out)
        if out.status:
            continue
        vals = np.array([r["values"].get(spec.key, (math.nan,) * 3) for r in results])
        est, lo, hi = vals[:, 0], vals[:, 1], vals[:, 2]
        if spec.kind == "test":
            ok = np.isfinite(est)
            out.n_defined = int(ok.sum())
            if ok.any():
                rate = float(np.mean(est[ok] < TEST_LEVEL))
                out.coverage, out.mc_se = rate, math.sqrt(rate * (1 - rate) / ok.sum())
            continue
        ok = np.isfinite(lo) & np.isfinite(hi)
        out.n_defined = int(ok.sum())
        if not ok.any():
            continue
        cov = (lo[ok] <= truth + _TOL) & (truth - _TOL <= hi[ok])
        out.coverage = float(cov.mean())
        out.mc_se = math.sqrt(out.coverage * (1 - out.coverage) / ok.sum())
        out.width = float(np.mean(hi[ok] - lo[ok]))
        out.below = float(np.mean(lo[ok] > truth + _TOL))
        out.above = float(np.mean(hi[ok] < truth - _TOL))
        e = est[ok][np.isfinite(est[ok])]
        out.bias = float(e.mean() - truth) if len(e) else math.nan
    return outcomes


def _stat_label(s: Spec) -> str:
    if s.kind == "test":
        return f"{s.stat}<{TEST_LEVEL:g}"
    method = (s.lo or "").removesuffix("_lo").removeprefix(f"{s.stat}_")
    return s.stat if not method or s.stat.startswith(method) else f"{s.stat} [{method}]"


def format_outcomes(outcomes: list[Outcome]) -> str:
    """The plain-text coverage table (coverage = rejection rate for ``kind == "test"``)."""
    head = (f"{'fam':<3} {'design':<16} {'row':<40} {'statistic':<22} {'nominal':>7} "
            f"{'coverage':>8} {'mc_se':>6} {'width':>7} {'used':>9} {'truth':>8} "
            f"{'bias':>7} {'lo>t':>5} {'hi<t':>5}")
    lines = [head, "-" * len(head)]
    for o in outcomes:
        s = o.spec
        prefix = (f"{s.family:<3} {s.design:<16} {s.row[:40]:<40} {_stat_label(s)[:22]:<22} "
                  f"{TEST_LEVEL if s.kind == 'test' else NOMINAL:>7.3f} ")
        used = f"{o.n_defined}/{o.n_studies}"
        if o.status:
            lines.append(prefix + o.status)
        elif s.kind == "test":
            lines.append(prefix + f"{o.coverage:>8.3f} {o.mc_se:>6.3f} {'':>7} {used:>9} "
                         f"{'H0 true':>8}")
        elif not o.n_defined:
            lines.append(prefix + f"{'-':>8} {'':>6} {'':>7} {used:>9} {o.truth:>8.4f}"
                         "  (interval never defined)")
        else:
            lines.append(prefix + f"{o.coverage:>8.3f} {o.mc_se:>6.3f} {o.width:>7.3f} "
                         f"{used:>9} {o.truth:>8.4f} {o.bias:>+7.3f} {o.below:>5.3f} "
                         f"{o.above:>5.3f}")
    notes = dict.fromkeys(f"  note [{o.spec.family} {o.spec.design}: {o.spec.row}]: "
                          f"{o.spec.note}" for o in outcomes if o.spec.note and not o.status)
    return "\n".join([*lines, *notes])


def run(*, studies: int, n_boot: int, seed: int, specs: list[Spec], truth_n: dict[str, int],
        workers: int = 2, product: Product | None = None,
        progress: Callable[[int, int], object] | None = None,
        truths: dict[str, dict] | None = None) -> dict[str, Any]:
    """Everything: truths (Monte Carlo, per design), the studies (``workers`` processes),
    and the aggregated :class:`Outcome` list. Same arguments, same numbers."""
    import multiprocessing as mp

    product = product or load_product()
    designs = list(dict.fromkeys(s.design for s in specs))
    global _WORKER
    _WORKER = {"specs": specs, "seed": seed, "n_boot": n_boot, "product": product}
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
    truths = dict(truths or {})
    todo = [d for d in designs if d not in truths]
    results: list[dict[str, Any]] = []
    if workers > 1 and ctx is not None:
        pool = ctx.Pool(workers)
        try:
            for t in pool.starmap(compute_truth,
                                  [(DESIGNS[d], truth_n[DESIGNS[d].kind]) for d in todo]):
                truths[t["design"]] = t
            for done, r in enumerate(pool.imap_unordered(_worker_study, range(studies),
                                                         chunksize=2), 1):
                results.append(r)
                if progress:
                    progress(done, studies)
        finally:
            pool.close()
            pool.join()
    else:
        for d in todo:
            truths[d] = compute_truth(DESIGNS[d], truth_n[DESIGNS[d].kind])
        for i in range(studies):
            results.append(_worker_study(i))
            if progress:
                progress(i + 1, studies)
    results.sort(key=lambda r: r["index"])
    return {"truths": truths, "results": results,
            "outcomes": aggregate(specs, results, truths, product), "product": product}


_WORKER: dict[str, Any] = {}


def _worker_study(index: int) -> dict[str, Any]:
    w = _WORKER
    return run_study(index, specs=w["specs"], seed=w["seed"], n_boot=w["n_boot"],
                     product=w["product"])
