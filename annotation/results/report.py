"""``judge-audit report``: every table of a judge-validation study, as CSV and one HTML page.

Tables (file names and columns are a public interface: extend, never rename; every column
is documented in ``docs/report.md``):

* ``ratings.csv`` (:mod:`annotation.results.ratings`), ``checklist.csv``, ``leniency.csv``
  and ``checklist_comparisons.csv`` (:mod:`annotation.results.checklist`),
  ``operators.csv`` (:mod:`annotation.results.operators`), ``reliability.csv``
  (:mod:`annotation.results.reliability`), ``vif_table.csv`` and ``trace_table.csv`` (the
  seed papers' judge tables, :mod:`annotation.results.paper_tables`);
* ``judge_comparisons.csv``: per criterion and pair of judges scored on the same outputs
  against the same human means: both Pearson correlations, Williams' t for the difference
  of two dependent correlations with a shared variable (Williams 1959; Steiger 1980, eq. 7)
  with Benjamini-Hochberg and Benjamini-Yekutieli adjusted p-values across all rows, Zou's
  (2007) interval for the difference, and a paired cluster bootstrap of the difference;
* ``system_level.csv``: per criterion and judge, Kendall tau-b and pairwise accuracy of the
  per-generator means against the humans' (:func:`annotation.stats.system.system_level`);
* ``alt_test.csv`` and ``alt_test_annotators.csv`` (:mod:`annotation.results.alt_tests`): the
  alternative annotator test (Calderon, Reichart & Dror, ACL 2025) of each judge per
  criterion (negative RMSE; on ranks for a judge on its own scale) and on the checklist
  (accuracy), and its per-annotator rows;
* ``bland_altman.csv`` (:mod:`annotation.results.judge_bias`): limits of agreement of each judge
  with the human mean on the humans' scale;
* ``annotators.csv`` (:mod:`annotation.results.annotators`): one row per annotator, to find the
  annotator a study should not trust;
* ``group_scores.csv`` and ``vif_conflicts.csv`` (:mod:`annotation.results.groups`): mean
  scores of each judge and of the humans per generator and group, and VIF-Bench's
  conflict vs no-conflict comparison; ``tiif_table.csv`` and ``tiif_pairs.csv``
  (:mod:`annotation.results.tiif`): TIIF-Bench's Table 2 per judge and for the humans, and
  the paired short vs long prompts; ``validation_set.csv``
  (:mod:`annotation.results.validation`): each judge's accuracy and balanced accuracy on
  the balanced question-level validation set, when one was drawn; ``leaderboard.csv``
  (:mod:`annotation.results.leaderboard`): each generator's judge score corrected by the
  human sample (prediction-powered inference, PPI++), beside the judge-only and human-only
  scores;
  ``vif_variants.csv`` (:mod:`annotation.results.variants`): VIF-Bench's visual vs
  text-converted instructions per generator, judge and criterion;
  ``annotator_confusion.csv`` and ``human_labels.csv``
  (:mod:`annotation.results.aggregation`): each annotator's Dawid-Skene confusion matrix
  and, per checklist decision, the majority beside the Dawid-Skene label and posterior.
* ``pairwise.csv``, ``pairwise_confusion.csv``, ``pairwise_rankings.csv`` and
  ``rankings.csv`` (:mod:`annotation.results.pairwise`, issue #17): pairwise judges against
  the human preference, their confusion counts and position bias, the humans' agreement
  on pairs, Bradley-Terry strengths of the generators, Kendall's W and Spearman's rho on
  ranking items.

Same seed, same numbers: every bootstrap is seeded from ``seed``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import gc
import html
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from annotation.results import pairwise, tiif
from annotation.results.aggregation import confusion_table, human_labels_table
from annotation.results.alt_tests import run_alt_tests
from annotation.results.annotators import annotators_table
from annotation.results.checklist import (
    checklist_table,
    leniency_table,
    mcnemar_table,
    study_decisions,
)
from annotation.results.decisions import UNANSWERED
from annotation.results.design import design_sentence, design_table
from annotation.results.export import FORMULA_STARTS as FORMULA_STARTS  # re-exported
from annotation.results.export import TableFormat, write_table
from annotation.results.export import neutralize_table as neutralize_table  # re-exported
from annotation.results.groups import conflict_scores_table, group_scores_table
from annotation.results.judge_bias import bland_altman_table
from annotation.results.leaderboard import leaderboard_table
from annotation.results.operators import (
    generator_table,
    operators_table,
    study_operator_scores,
)
from annotation.results.paper_tables import trace_table, vif_table
from annotation.results.progress import JudgeProgress
from annotation.results.ratings import AVERAGE, pass_rate_rows, ratings_table, with_average
from annotation.results.reliability import reliability_table
from annotation.results.study import StudyData
from annotation.results.validation import validation_table
from annotation.results.variants import variant_table
from annotation.stats.comparison import adjust_pvalues, paired_bootstrap_diff, williams_t, zou_ci
from annotation.stats.system import system_level

TABLES = ("ratings", "checklist", "operators", "reliability", "judge_comparisons",
          "checklist_comparisons", "system_level", "alt_test",
          # added in the statistical-truth release
          "vif_table", "trace_table", "leniency", "bland_altman", "annotators",
          "alt_test_annotators",
          # added with the benchmarks' protocols (issue #15)
          "group_scores", "vif_conflicts", "tiif_table", "tiif_pairs", "trace_generators",
          "validation_set", "vif_variants",
          # added with the study design (issue #16)
          "leaderboard", "study_design",
          # added with Dawid-Skene (issue #16 item 4)
          "annotator_confusion", "human_labels",
          # added with pairwise preferences and rankings (issue #17)
          "pairwise", "pairwise_confusion", "pairwise_rankings", "rankings")


@dataclass(frozen=True)
class ReportOptions:
    """What ``judge-audit report`` computes: bootstrap resamples and seed, ``--by`` groups,
    the alt-test margin, ``--pair checklist:<criterion>`` rows, and what a question a
    judge never answered counts as (``unanswered``: ``omit`` = left out and counted,
    ``fail`` = failed, the DSG authors' convention; :mod:`annotation.results.decisions`)."""

    n_boot: int = 1000
    seed: int = 0
    by: str | tuple[str, ...] | None = None  # one key, or several: their combinations
    epsilon: float = 0.2
    pair: tuple[str, ...] = ()  # "checklist:<criterion>": pass rate vs a human rating
    unanswered: str = "omit"

    def __post_init__(self) -> None:
        if self.unanswered not in UNANSWERED:
            raise ValueError(f"unanswered must be one of {UNANSWERED}, got "
                             f"{self.unanswered!r}")


def _judge_wides(study: StudyData) -> Iterator[tuple[str, pd.DataFrame, pd.Series]]:
    """Per criterion (the study's, then ``average``): the judges' scores (outputs x
    judges) and the human mean. The averages are added once for every criterion."""
    criteria = list(study.criteria.name)
    humans = with_average(study.human_scores, "annotator", criteria)
    judges = with_average(study.judge_scores, "judge", criteria)
    for criterion in [*criteria, AVERAGE]:
        human = humans[humans.criterion == criterion].groupby("output_id").score.mean()
        wide = judges[judges.criterion == criterion].pivot_table(
            index="output_id", columns="judge", values="score")
        yield criterion, wide, human


def judge_comparisons(study: StudyData, options: ReportOptions) -> pd.DataFrame:
    """Pairs of judges against the same human means (see the module docstring)."""
    rows = []
    for criterion, wide, human in _judge_wides(study):
        for a, b in itertools.combinations(sorted(wide.columns), 2):
            frame = pd.concat([wide[a], wide[b], human.rename("human")], axis=1).dropna()
            n = len(frame)
            if n < 4 or frame.std().eq(0).any():
                continue
            r = frame.corr()
            r_a, r_b, r_ab = r.loc[a, "human"], r.loc[b, "human"], r.loc[a, b]
            test = williams_t(r_a, r_b, r_ab, n)
            zou = zou_ci(r12=r_a, r13=r_b, r23=r_ab, n=n)
            boot = paired_bootstrap_diff(frame[a], frame[b], frame["human"],
                                         items=frame.index.to_numpy(), n_boot=options.n_boot,
                                         seed=options.seed)
            rows.append({
                "criterion": criterion, "judge_a": a, "judge_b": b, "n_items": n,
                "r_a": r_a, "r_b": r_b, "r_ab": r_ab, "diff": r_a - r_b,
                "williams_t": test.statistic, "df": test.df, "p": test.p,
                "zou_lo": zou.lo, "zou_hi": zou.hi,
                "boot_lo": boot.lo, "boot_hi": boot.hi, "boot_p": boot.p,
            })
    table = pd.DataFrame(rows, columns=["criterion", "judge_a", "judge_b", "n_items", "r_a",
                                        "r_b", "r_ab", "diff", "williams_t", "df", "p",
                                        "zou_lo", "zou_hi", "boot_lo", "boot_hi", "boot_p"])
    if not table.empty:
        table["p_bh"] = adjust_pvalues(table.p.to_numpy(), "bh")
        table["p_by"] = adjust_pvalues(table.p.to_numpy(), "by")
    return table


def system_table(study: StudyData, options: ReportOptions) -> pd.DataFrame:
    """Per criterion and judge: ranking of generators by judge vs by humans."""
    generators = study.outputs.set_index("output_id").generator
    rows = []
    for criterion, wide, human in _judge_wides(study):
        if wide.empty or human.empty:
            continue
        frame = wide.join(human.rename("__human__"), how="inner")
        frame["__system__"] = generators.reindex(frame.index).to_numpy()
        if frame["__system__"].nunique() < 2:
            continue
        table = system_level(frame.reset_index(), system_col="__system__",
                             judge_col=list(wide.columns), human_col="__human__",
                             item_col="output_id", n_boot=options.n_boot, seed=options.seed)
        rows.append(table.assign(criterion=criterion))
    if not rows:
        return pd.DataFrame(columns=["criterion", "judge", "n_systems", "kendall"])
    out = pd.concat(rows, ignore_index=True)
    return out[["criterion", *[c for c in out.columns if c != "criterion"]]]


def _ratings(study: StudyData, options: ReportOptions,
             on_judge: JudgeProgress | None = None) -> pd.DataFrame:
    table = ratings_table(study, n_boot=options.n_boot, seed=options.seed, by=options.by,
                          on_judge=on_judge)
    criteria = []
    for spec in options.pair:
        kind, _, criterion = spec.partition(":")
        if kind != "checklist" or not criterion:
            raise KeyError(f"--pair {spec}: expected checklist:<criterion>")
        criteria.append(criterion)
    if criteria:
        extra = pass_rate_rows(study, criteria, n_boot=options.n_boot, seed=options.seed,
                               unanswered=options.unanswered)  # type: ignore[arg-type]
        table = pd.concat([table, extra], ignore_index=True)
    return table


def _release_memory() -> None:
    """Hand the memory the last table freed back to the system (glibc's ``malloc_trim``;
    nothing elsewhere). Large temporaries freed by one table otherwise stay in the heap
    (glibc raises its mmap threshold after freeing big blocks, so the next ones come
    from the heap), and the next table's allocations land beside them: the report's peak
    was the sum of the two. The same holds for Arrow's own allocator (mimalloc in the
    pyarrow wheels), which holds the buffers of the study's text columns and keeps freed
    pages for reuse: asked to release them too (at 100,000 outputs, issue #18). The
    collection before it only scans what is not frozen (:func:`_frozen`): the last
    table's objects."""
    gc.collect()
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@contextlib.contextmanager
def _frozen() -> Iterator[None]:
    """Keep the objects alive now (the study, its decisions) out of the garbage collector's
    scans until the block ends (``gc.freeze``; unfrozen after, even on an error). A full
    collection otherwise walks every object array of the study after each table (0.1 s
    each at 25,000 outputs) to find the last table's garbage, of which there is none."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@functools.cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, looked up once (``find_library`` runs ``ldconfig``), or
    None where there is none."""
    name = ctypes.util.find_library("c")
    return None if name is None else getattr(ctypes.CDLL(name), "malloc_trim", None)


def build_report(study: StudyData, options: ReportOptions = ReportOptions(),
                 progress: Callable[..., object] | None = None) -> dict[str, pd.DataFrame]:
    """Every table of the report, by name (:data:`TABLES`). The checklist decisions are
    scored once (:func:`annotation.results.checklist.study_decisions`) for every table
    that reads them.

    ``progress(name)`` is called as each table starts and, in the tables that loop over
    judges (ratings, checklist, alt_test), ``progress(name, "judge i of n: <judge>")`` as
    each judge starts (:mod:`annotation.results.progress`). The operator scores are
    likewise computed once for the three operator tables
    (:func:`annotation.results.operators.study_operator_scores`)."""
    boot: dict[str, Any] = {"n_boot": options.n_boot, "seed": options.seed}
    unanswered = options.unanswered
    decided = study_decisions(study, unanswered)  # type: ignore[arg-type]
    _release_memory()  # the decisions' temporaries, before the first table adds its own
    tables: dict[str, pd.DataFrame] = {}
    alt: dict[str, pd.DataFrame] = {}
    # the operator scores of the three operator tables, computed once, on first use
    operator_scores = functools.cache(lambda: study_operator_scores(study, decided))

    def judges(name: str) -> JudgeProgress | None:
        if progress is None:
            return None
        return lambda i, n, label: progress(name, f"judge {i} of {n}: {label}")

    def alt_tests() -> pd.DataFrame:
        run = run_alt_tests(study, epsilon=options.epsilon,
                            unanswered=unanswered,  # type: ignore[arg-type]
                            on_judge=judges("alt_test"), decided=decided)
        alt["annotators"] = run.annotators
        return run.summary

    steps: dict[str, Callable[[], pd.DataFrame]] = {
        "ratings": lambda: _ratings(study, options, judges("ratings")),
        "checklist": lambda: checklist_table(study, by=options.by, decided=decided,
                                             on_judge=judges("checklist"), **boot),
        "operators": lambda: operators_table(study, scores=operator_scores(), **boot),
        "reliability": lambda: reliability_table(study, by=options.by, **boot),
        "judge_comparisons": lambda: judge_comparisons(study, options),
        "checklist_comparisons": lambda: mcnemar_table(study, decided=decided, **boot),
        "system_level": lambda: system_table(study, options),
        "alt_test": alt_tests,
        "vif_table": lambda: vif_table(tables["ratings"]),
        "trace_table": lambda: trace_table(study, tables["checklist"],
                                           scores=operator_scores(), **boot),
        "leniency": lambda: leniency_table(study, by=options.by, decided=decided),
        "bland_altman": lambda: bland_altman_table(study),
        "annotators": lambda: annotators_table(study),
        "alt_test_annotators": lambda: alt["annotators"],
        "group_scores": lambda: group_scores_table(study, by=options.by),
        "vif_conflicts": lambda: conflict_scores_table(study),
        "tiif_table": lambda: tiif.tiif_table(study, decided),
        "tiif_pairs": lambda: tiif.tiif_pairs(study, decided),
        "trace_generators": lambda: generator_table(study, scores=operator_scores()),
        "validation_set": lambda: validation_table(study, decided, **boot),
        "leaderboard": lambda: leaderboard_table(study, decided),
        "study_design": lambda: design_table(study),
        "vif_variants": lambda: variant_table(study),
        "annotator_confusion": lambda: confusion_table(decided.dawid_skene, "checklist"),
        "human_labels": lambda: human_labels_table(decided.human, decided.dawid_skene),
        # issue #17: pairwise preferences and rankings
        "pairwise": lambda: pairwise.pairwise_table(study.pairwise, **boot),
        "pairwise_confusion": lambda: pairwise.confusion_table(study.pairwise),
        "pairwise_rankings": lambda: pairwise.pairwise_rankings_table(study.pairwise, **boot),
        "rankings": lambda: pairwise.rankings_table(study.pairwise),
    }
    with _frozen():
        for name, step in steps.items():
            if progress:
                progress(name)
            tables[name] = step()
            _release_memory()
    return tables


def write_csvs(tables: dict[str, pd.DataFrame], out: Path,
               texts: dict[str, str] | None = None, fmt: TableFormat = "csv") -> list[Path]:
    """Write ``texts`` (``{file name: content}``, e.g. a JSONL export) and every table
    through the one table writer (:func:`annotation.results.export.write_table`):
    ``<name>.csv`` neutralized against formula injection, ``<name>.parquet`` with ``fmt``
    ``parquet``, or both."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (texts or {}).items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    for name, table in tables.items():
        written.extend(write_table(table, out, name, fmt))
    return written


def write_report(tables: dict[str, pd.DataFrame], out: Path, *, title: str,
                 study: StudyData | None = None, fmt: TableFormat = "csv") -> list[Path]:
    """Write every table (``<name>.csv``, ``<name>.parquet`` or both: ``fmt``) and a
    standalone ``report.html`` (with the Bland-Altman plots when ``study`` is given)."""
    written = write_csvs(tables, out, fmt=fmt)
    path = out / "report.html"
    extra = bland_altman_figures(study) if study is not None else []
    path.write_text(report_html(tables, title=title, extra_figures=extra), encoding="utf-8")
    written.append(path)
    return written


def bland_altman_figures(study: StudyData) -> list[tuple[str, object]]:
    """A Bland-Altman plot per judge on the humans' scale, for the criteria ``average``
    (or the only criterion), as report.html shows them."""
    from annotation.results.judge_bias import bland_altman_figure, bland_altman_pairs

    pairs = bland_altman_pairs(study)
    if pairs.empty:
        return []
    criterion = AVERAGE if AVERAGE in set(pairs.criterion) else str(pairs.criterion.iloc[0])
    out = []
    for judge in dict.fromkeys(pairs.judge[pairs.criterion == criterion]):
        fig = bland_altman_figure(pairs, str(judge), criterion)
        if fig is not None:
            out.append((f"Bland-Altman: {judge} against the human mean ({criterion}): "
                        "difference by mean, limits of agreement with 95% intervals", fig))
    return out


def _html_table(table: pd.DataFrame) -> str:
    shown = table.copy()
    for col in shown.select_dtypes(include=[np.floating]).columns:
        shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{v:.4f}")
    return shown.to_html(index=False, escape=True, na_rep="")


def paper_sections(tables: dict[str, pd.DataFrame]) -> list[tuple[str, pd.DataFrame]]:
    """The seed papers' tables as report.html shows them first: VIF-Bench Table 7 (like for
    like, then against the mean of all annotators), VIF-Bench Fig. 6 left (conflict vs no
    conflict, on the criteria average) and TRACE-Bench Table 7 (both units), each cell
    ``value [lo, hi]``."""
    from annotation.results import analytics

    out = []
    vif = tables.get("vif_table")
    if vif is not None and not vif.empty:
        for reference, caption in (
                ("leave-one-out mean", "VIF-Bench Table 7, like for like: judges and humans "
                 "against the same leave-one-out means"),
                ("human mean", "VIF-Bench Table 7 as the paper: judges against the mean of "
                 "all annotators (flatters the judges beside a leave-one-out human)")):
            view = analytics.vif_view(vif, reference=reference, ci=True)
            out.append((caption, analytics.ci_text(view)))
    conflicts = tables.get("vif_conflicts")
    if conflicts is not None and not conflicts.empty:
        view = conflicts[conflicts.criterion == AVERAGE] if (
            conflicts.criterion == AVERAGE).any() else conflicts
        shown = view[["conflict", "generator", "scorer", "criterion", "n_conflict",
                      "mean_conflict", "n_no_conflict", "mean_no_conflict"]].copy()
        shown["diff [95% CI]"] = [
            "" if pd.isna(d) else (f"{d:.2f}" if pd.isna(lo) else f"{d:.2f} [{lo:.2f}, {hi:.2f}]")
            for d, lo, hi in zip(view["diff"], view["diff_lo"], view["diff_hi"], strict=True)]
        shown["labels verified / published / rules"] = [
            f"{v} / {p} / {r}" for v, p, r in zip(view.labels_verified, view.labels_published,
                                                   view.labels_rules, strict=True)]
        out.append(("VIF-Bench Fig. 6 (left): mean score on tasks with a conflict and on "
                    "tasks with that instruction but no conflict (verified labels where "
                    "decided, else the published ones)", shown))
    table2 = tables.get("tiif_table")
    if table2 is not None and not table2.empty:
        out.append(("TIIF-Bench Table 2 layout: mean image score (share of questions "
                    "answered as expected, x 100) per scorer and generator, short and long "
                    "prompts", tiif.tiif_wide(table2)))
    validation = tables.get("validation_set")
    if validation is not None and not validation.empty:
        first = validation.iloc[0]
        shown = validation[["judge", "reference", "paired_judge", "n_decisions"]].copy()
        for name, column in (("accuracy", "accuracy"), ("balanced accuracy",
                                                        "balanced_accuracy")):
            shown[f"{name} [95% CI]"] = [
                "" if pd.isna(v) else (f"{v:.3f}" if pd.isna(lo) else
                                       f"{v:.3f} [{lo:.3f}, {hi:.3f}]")
                for v, lo, hi in zip(validation[column], validation[f"{column}_lo"],
                                     validation[f"{column}_hi"], strict=True)]
        out.append((f"TIIF-Bench validation set (Key Design 4): {first.n_questions} questions "
                    f"over {first.n_images} images, expected {first.expected_yes} yes / "
                    f"{first.expected_no} no, human majority {first.human_yes} yes / "
                    f"{first.human_no} no", shown))
    trace = tables.get("trace_table")
    if trace is not None and not trace.empty:
        for unit in dict.fromkeys(trace.unit):
            out.append((f"TRACE-Bench Table 7 (unit: {unit})",
                        analytics.ci_text(analytics.trace_view(trace, unit=unit))))
    generators = tables.get("trace_generators")
    if generators is not None and not generators.empty:
        out.append(("TRACE-Bench Table 2 layout: operator scores per generator, averaged "
                    "over the slot levels, for each judge and the human mean",
                    generators))
    out += pairwise.pairwise_sections(tables)  # issue #17
    return out


def report_html(tables: dict[str, pd.DataFrame], *, title: str,
                extra_figures: list[tuple[str, object]] | None = None) -> str:
    """One self-contained page: the papers' tables, the figures (plotly, embedded) and
    every table. Every text from the data is escaped (shown as text, never markup)."""
    from annotation.results.figures import figures

    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             "</title><style>body{font-family:sans-serif;margin:2em;max-width:1400px}"
             "table{border-collapse:collapse;font-size:12px;margin-bottom:2em}"
             "td,th{border:1px solid #ddd;padding:3px 6px;text-align:right}"
             "th{background:#f4f4f4}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    design = tables.get("study_design")
    if design is not None and not design.empty:
        parts.append(f"<p><b>{html.escape(design_sentence(design))}</b></p>")
    for caption, table in paper_sections(tables):
        parts.append(f"<h2>{html.escape(caption)}</h2>")
        parts.append(_html_table(table))
    first = True
    for caption, fig in [*figures(tables), *(extra_figures or [])]:
        parts.append(f"<h2>{html.escape(caption)}</h2>")
        parts.append(fig.to_html(full_html=False,  # type: ignore[attr-defined]
                                 include_plotlyjs="inline" if first else False))
        first = False
    for name, table in tables.items():
        parts.append(f"<h2>{html.escape(name)}.csv</h2>")
        parts.append(_html_table(table))
    parts.append("</body></html>")
    return "\n".join(parts)
