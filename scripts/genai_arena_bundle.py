"""Turn GenAI-Bench's public judge results into a judge-audit bundle of pairs.

GenAI-Bench ("GenAI Arena: An Open Evaluation Platform for Generative Models", Sec. 4.2) is
GenAI-Arena's judge benchmark: each line of a judge's results file
(``results/<task>/<judge>/pairwise.jsonl``) holds one pair ``idx`` with its ``prompt``,
the judge's ``model_vote`` (``[[A>B]]``, ``[[B>A]]``, ``[[A=B=Good]]``, ``[[A=B=Bad]]``,
anything else: not parsed), its ``response`` text and the ``human_vote`` (``leftvote``,
``rightvote``, ``tievote``, ``bothbad_vote``). The leaderboard's accuracy is the share of
lines whose vote matches the human vote, an unparsed vote counting as a miss: the
``accuracy_all`` column of ``pairwise.csv``.

Usage::

    python scripts/genai_arena_bundle.py OUT results/image_generation/gpt4o/pairwise.jsonl \\
        results/image_generation/gemini-1.5-pro/pairwise.jsonl

One task and one pair per ``idx`` (outputs ``<idx>/left`` = A, shown first, and
``<idx>/right`` = B, without images: the results files do not hold them; ``left_model`` /
``right_model`` name the generators when a line has them, else ``unknown (left)`` /
``unknown (right)``); the human vote
is one annotation by ``genai-arena``; each file is one judge, named after its folder. The
files must agree on every pair's prompt and human vote. The mapping is documented in
``docs/bundle-format.md`` (*GenAI-Arena's judge benchmark*).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

#: GenAI-Arena's vote names -> bundle preferences
HUMAN_VOTES = {"leftvote": "a", "rightvote": "b", "tievote": "tie", "bothbad_vote": "both_bad"}
#: GenAI-Bench's judge verdicts -> bundle preferences (anything else: unparsed)
JUDGE_VOTES = {"[[A>B]]": "a", "[[B>A]]": "b", "[[A=B=Good]]": "tie", "[[A=B=Bad]]": "both_bad"}
ANNOTATOR = "genai-arena"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def convert(results: list[Path], out: Path) -> dict[str, int]:
    """Write the bundle at ``out`` from the judges' results files; return line counts.
    ``ValueError`` (naming file and line) when the files disagree or a vote is unknown."""
    pairs: dict[str, dict[str, Any]] = {}
    judgments: list[dict[str, Any]] = []
    judges: list[str] = []
    for path in results:
        judge = path.parent.name if path.parent.name else path.stem
        judges.append(judge)
        for number, line in enumerate(_lines(path), start=1):
            idx = str(line["idx"])
            vote = HUMAN_VOTES.get(line.get("human_vote"))  # type: ignore[arg-type]
            if vote is None:
                raise ValueError(f"{path}:{number}: human_vote: unknown vote "
                                 f"{line.get('human_vote')!r} (known: {', '.join(HUMAN_VOTES)})")
            known = pairs.setdefault(idx, {"prompt": line["prompt"], "vote": vote,
                                           "left": line.get("left_model", "unknown (left)"),
                                           "right": line.get("right_model",
                                                             "unknown (right)")})
            if (known["prompt"], known["vote"]) != (line["prompt"], vote):
                raise ValueError(f"{path}:{number}: pair {idx} has another prompt or human "
                                 "vote than in an earlier file")
            verdict = JUDGE_VOTES.get(str(line.get("model_vote", "")).strip())
            row: dict[str, Any] = {"judge": judge, "pair_id": idx, "preference": verdict}
            if line.get("response") is not None:
                row["raw"] = str(line["response"])
            judgments.append(row)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bundle.json").write_text(json.dumps({
        "format": "judge-audit-bundle/1", "name": "GenAI-Bench", "benchmark": "genai-bench",
        "criteria": [], "judges": [{"name": j, "kind": "vlm"} for j in judges]},
        indent=2) + "\n", encoding="utf-8")

    def write(name: str, rows: list[dict[str, Any]]) -> None:
        (out / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                encoding="utf-8")

    write("tasks.jsonl", [{"task_id": i, "instruction": p["prompt"], "images": []}
                          for i, p in pairs.items()])
    write("outputs.jsonl", [
        {"output_id": f"{i}/{side}", "task_id": i, "generator": p[side], "path": None}
        for i, p in pairs.items() for side in ("left", "right")])
    write("pairs.jsonl", [{"pair_id": i, "output_a": f"{i}/left", "output_b": f"{i}/right",
                           "task_id": i} for i in pairs])
    write("judgments.jsonl", judgments)
    write("annotations.jsonl", [{"annotator": ANNOTATOR, "pair_id": i,
                                 "preference": p["vote"]} for i, p in pairs.items()])
    return {"pairs": len(pairs), "judgments": len(judgments)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the bundle folder to write")
    parser.add_argument("results", type=Path, nargs="+",
                        help="<judge>/pairwise.jsonl files of GenAI-Bench")
    args = parser.parse_args(argv)
    try:
        counts = convert(args.results, args.out)
    except (ValueError, KeyError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.out}: {counts['pairs']} pairs, {counts['judgments']} judge answers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
