"""Coverage of the report's 95% intervals on simulated studies with a KNOWN truth.

    python benchmarks/coverage.py [--studies 500] [--boot 1000] [--seed 0]
                                  [--families A,B,...] [--json PATH] [--workers 2]
                                  [--truth-outputs 4000000] [--code DIR] [--label TEXT]

Simulates ``--studies`` judge-validation studies of every design the selected families need
(``tests/helpers/coverage_sim.py`` says exactly what is simulated), runs the report's **own** table
builders on each (``ratings_table``, ``checklist_table``, ``reliability_table``,
``judge_comparisons``, ``mcnemar_table``/``checklist_comparisons``, ``system_table``,
``trace_table``, ``bland_altman`` where present; never a re-implementation), and prints for
every interval the report writes its empirical coverage of the population value of its
estimand (the truth, from a large Monte-Carlo sample of the same design, computed by the
simulator's own numpy code), the Monte-Carlo standard error of that coverage
(sqrt(p (1 - p) / n)), the mean width, the number of studies where the interval was
defined, the truth, the mean bias of the point estimate and the share of intervals missing
on each side (``lo>t``: the interval lies above the truth; ``hi<t``: below). For the
p-values of tests whose null hypothesis is true by construction (family E), the coverage
column holds the rejection rate at .05 instead. Goal for the product: every coverage in
[.93, .97].

Families (``--families``, letters): A ratings.csv (judge vs human mean and the pooled
leave-one-out rows; complete, missing-data and half-judged designs), B checklist.csv (judge
vs human majority: agreement, kappa, AC1, balanced accuracy, plus the old-style Wilson
interval as a contrast), C reliability.csv (Krippendorff's alpha interval/nominal,
ICC(A,1)), D judge_comparisons.csv (difference of two judges' PLCC: Zou, paired bootstrap),
E checklist_comparisons.csv (difference of two equally accurate judges' accuracies; type-I
error of the clustered and of the exact McNemar test), F system_level.csv (Kendall tau and
pairwise accuracy of 6 generators), G bland_altman and trace_table (if present), H
leaderboard.csv (each generator's score from a judge on all outputs corrected by humans on
a uniform 20% sample, prediction-powered; beside the human-only interval, to compare
widths).

A column missing from the code under test prints "not in this version"; a builder that
raises is counted per study; an import that fails (code being edited) is retried. The same
seed gives the same output. ``--code DIR`` runs the ``annotation`` package found in DIR
(e.g. a ``git archive`` export of an older commit) instead of this checkout's.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import resource
import subprocess
import sys
import time
from dataclasses import asdict
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("numpy", "pandas", "scipy", "statsmodels", "pingouin", "krippendorff",
            "judge-audit")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--studies", type=int, default=500, help="simulated studies (default 500)")
    p.add_argument("--boot", type=int, default=1000,
                   help="bootstrap resamples per study and table (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the studies (default 0)")
    p.add_argument("--families", default="",
                   help="comma-separated family letters, e.g. A,B (default: all)")
    p.add_argument("--json", type=Path, help="also write every result to this JSON file")
    p.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    p.add_argument("--truth-outputs", type=int, default=4_000_000,
                   help="Monte-Carlo outputs per ratings design for the truth (default 4e6; "
                        "checklist designs use half)")
    p.add_argument("--code", type=Path, default=ROOT,
                   help="directory holding the annotation package to test (default: this "
                        "checkout)")
    p.add_argument("--label", default="",
                   help="free text printed with the code's location (e.g. the commit of an "
                        "exported tree)")
    p.add_argument("--import-retries", type=int, default=10,
                   help="attempts to import the product, 30 s apart (default 10)")
    return p.parse_args(argv)


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _git(code: Path) -> dict[str, str]:
    """Read-only: the commit and whether annotation/ differs from it (never changes state)."""
    def run(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=code, capture_output=True, text=True,
                                  timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    head = run("rev-parse", "--short", "HEAD")
    if not head:
        return {"commit": "(not a git checkout)", "annotation_dirty": "unknown"}
    dirty = run("status", "--porcelain", "--", "annotation")
    return {"commit": head,
            "annotation_dirty": f"yes ({len(dirty.splitlines())} paths)" if dirty else "no"}


def _rss_mib(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # KiB on Linux


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    code = args.code.resolve()
    sys.path.insert(0, str(ROOT))  # tests.helpers.coverage_sim: the simulation
    sys.path.insert(0, str(code))  # the annotation package under test (first on the path)
    from tests.helpers import coverage_sim as sim

    specs = sim.select_specs(args.families.split(",") if args.families else None)
    product = sim.load_product(attempts=args.import_retries,
                               log=lambda m: print(m, file=sys.stderr, flush=True))
    import annotation

    where = Path(annotation.__file__).resolve().parent
    versions = _versions()
    git = _git(code) if where.parent == code else {"commit": "(outside --code)",
                                                   "annotation_dirty": "unknown"}
    truth_n = {"ratings": args.truth_outputs, "checklist": max(1, args.truth_outputs // 2)}
    designs = list(dict.fromkeys(s.design for s in specs))
    print("coverage benchmark: the report's 95% intervals against known truths")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    print(f"code: {where} (commit {git['commit']}, annotation/ modified: "
          f"{git['annotation_dirty']}){' ' + args.label if args.label else ''}")
    print(f"parameters: studies={args.studies} boot={args.boot} seed={args.seed} "
          f"workers={args.workers} families={','.join(sorted({s.family for s in specs}))} "
          f"truth_outputs={truth_n} nominal={sim.NOMINAL} test_level={sim.TEST_LEVEL}")
    for name in designs:
        print(f"design {name}: {asdict(sim.DESIGNS[name])}")
    print("builders: " + "; ".join(f"{t} = {s}" for t, s in sorted(product.sources.items())))
    if product.missing:
        print("absent: " + "; ".join(f"{t} ({why})" for t, why in product.missing.items()))
    sys.stdout.flush()

    step = max(1, args.studies // 10)
    t_studies = [0.0]

    def progress(done: int, total: int) -> None:
        if not t_studies[0]:
            t_studies[0] = time.perf_counter()
        if done % step == 0 or done == total:
            print(f"  {done}/{total} studies, {time.perf_counter() - started:.0f} s",
                  file=sys.stderr, flush=True)

    out = sim.run(studies=args.studies, n_boot=args.boot, seed=args.seed, specs=specs,
                  truth_n=truth_n, workers=args.workers, product=product, progress=progress)
    truths, results, outcomes = out["truths"], out["results"], out["outcomes"]

    print("\ntruths (Monte Carlo of the same design; se = its own standard error):")
    for name in designs:
        t = truths[name]
        used = dict.fromkeys(s.truth for s in specs if s.design == name)
        extra = ["icc_a1_continuous"] if "icc_a1" in used else []
        extra += [f"{k}|mc" for k in used if f"{k}|mc" in t["values"]]
        cells = [f"{k} = {t['values'][k]:.4f} (se {t['se'].get(k, 0.0):.4f})"
                 for k in [*used, *extra] if k in t["values"]]
        print(f"  {name} ({t['n_outputs']:,} outputs, {t['seconds']:.1f} s):")
        for c in cells:
            print(f"    {c}")

    print()
    print(sim.format_outcomes(outcomes))

    errors: dict[str, list[str]] = {}
    ambiguous: dict[str, int] = {}
    times: dict[str, list[float]] = {}
    for r in results:
        for k, v in r["errors"].items():
            errors.setdefault(k, []).append(v)
        for k, v in r["ambiguous"].items():
            ambiguous[k] = max(ambiguous.get(k, 0), v)
        for k, v in r["times"].items():
            times.setdefault(k, []).append(v)
    for k, errs in errors.items():
        print(f"\nERROR in {k}: {len(errs)} of {len(results)} studies; first:\n{errs[0]}")
    for k, n in ambiguous.items():
        print(f"warning: {k} matched up to {n} rows; the first was used")
    wall = time.perf_counter() - started
    rss_self, rss_children = _rss_mib(resource.RUSAGE_SELF), _rss_mib(resource.RUSAGE_CHILDREN)
    print("\nmean seconds per study: " + ", ".join(
        f"{k} {sum(v) / len(v):.3f}" for k, v in sorted(times.items())))
    print(f"wall time {wall:.1f} s; peak memory (ru_maxrss) self {rss_self:.0f} MiB, "
          f"children {rss_children:.0f} MiB")
    if args.json:
        payload = {
            "versions": versions, "code": str(where), "git": git, "label": args.label,
            "parameters": {"studies": args.studies, "boot": args.boot, "seed": args.seed,
                           "workers": args.workers, "families": args.families,
                           "truth_outputs": truth_n},
            "designs": {n: asdict(sim.DESIGNS[n]) for n in designs},
            "builders": product.sources, "absent": product.missing,
            "truths": truths,
            "outcomes": [o.as_dict() for o in outcomes],
            "errors": {k: {"studies": len(v), "first": v[0]} for k, v in errors.items()},
            "wall_seconds": wall, "peak_rss_mib": {"self": rss_self, "children": rss_children},
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=1, default=_json_default,
                                        allow_nan=True))
        print(f"wrote {args.json}")
    return 0


def _json_default(value: object) -> object:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


if __name__ == "__main__":
    raise SystemExit(main())
