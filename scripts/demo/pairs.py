"""The demo's pairwise and ranking items (issue #17; ``docs/bundle-format.md``, *Pairs and
rankings*): ``pairs.jsonl``, ``rankings.jsonl`` and their answers in ``judgments.jsonl`` and
``annotations.jsonl``, so that the Judge validation page's section *Pairwise preferences*
and the report's ``pairwise*.csv`` / ``rankings.csv`` have real rows on first start.

The story:

* Every two outputs with an image of the same task form a pair (26 pairs over the ten
  tasks, so the report's cluster bootstrap, which resamples tasks, gives intervals); the
  side each output is shown on (``output_a`` first) is drawn at random. Three of them are
  also listed in the swapped order (:data:`SWAPPED`, ``meta.order = "swapped"``), for the
  judges only: a judge's consistency across orders (Zheng et al. 2023, "Judging
  LLM-as-a-Judge with MT-Bench and Chatbot Arena", Sec. 3.3).
* Two judges answer the pairs (:data:`PAIR_JUDGES`) with GenAI-Arena's four votes ("GenAI
  Arena: An Open Evaluation Platform for Generative Models", Sec. 3): ``gpt-5`` the
  original and the swapped pairs, a little drawn to the first-shown output; ``qwen3-vl``
  the original pairs only, noisier, lenient and more drawn to the first-shown output: once
  it calls two bad outputs both good (:data:`LENIENT`), and once its text could not be
  parsed (:data:`UNPARSED_PAIR`: ``preference`` null, its raw text kept).
* The three annotators answer the original pairs (``ann3`` skips two, :data:`PAIR_SKIPS`),
  each shown the two outputs in a side drawn per person and pair (``shown_first``); they
  see the hidden truth through noise, so they sometimes disagree; ``ann2`` changes one
  answer (:data:`PAIR_CORRECTION`, a history).
* Two ranking items (:data:`RANKING_TASKS`, TIIF-Bench's human ranking, "TIIF-Bench: How
  Does Your T2I Model Follow Your Instructions?", Sec. 4.2) order the three generators'
  outputs of a task; the three annotators (``ann3`` puts two outputs that look alike at
  one place: a tie, :data:`RANKING_TIE`) and both judges answer.

Everything follows from the outputs' hidden quality (the mean of their true scores,
:func:`scripts.demo.truth.true_scores`) through a generator of its own
(:data:`PAIR_SEED`), so the rest of the demo is unchanged by this part.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from scripts.demo.spec import ANNOTATORS, GENERATORS, SEED

PAIR_SEED = SEED + 17
#: the judges that answer pairs and rankings; the first also judges the swapped pairs
PAIR_JUDGES = ("gpt-5", "qwen3-vl")
#: per judge: its leniency (added to the quality it sees), the noise (sd) of what it sees,
#: and its pull to the first-shown output (added to the difference in favour of A)
JUDGE_PAIR_PROFILE: dict[str, dict[str, float]] = {
    "gpt-5": {"bias": 0.0, "sd": 0.6, "first": 0.35},
    "qwen3-vl": {"bias": 0.5, "sd": 0.9, "first": 0.9},
}
HUMAN_SD = 0.45
#: two outputs that both look worse than this are both bad ...
BAD = 6.3
#: ... two that both reach it and differ by less than this a tie (both good)
TIE = 0.45
#: (task, generator, generator): pairs also listed in the swapped order
SWAPPED = (("demo-01", "nano-banana", "gpt-image-1"),
           ("demo-02", "gpt-image-1", "nano-banana"),
           ("demo-09", "nano-banana", "gpt-image-1"))
#: (judge, task, generator, generator): the pair whose verdict could not be parsed
UNPARSED_PAIR = ("qwen3-vl", "demo-06", "nano-banana", "gpt-image-1")
UNPARSED_TEXT = ("Image A keeps the references better, while Image B has the cleaner "
                 "pattern; weighing these, it is hard to call, so it depends on the "
                 "criterion.")
#: (judge, task, generator, generator, verdict): a lenient verdict where the humans see
#: two bad outputs (both good: wrong on all four classes, right with ties merged)
LENIENT = ("qwen3-vl", "demo-10", "gpt-image-1", "qwen-image-edit", "tie")
#: annotator -> (task, generator, generator) pairs not answered
PAIR_SKIPS: dict[str, set[tuple[str, str, str]]] = {
    "ann1": set(), "ann2": set(),
    "ann3": {("demo-02", "gpt-image-1", "qwen-image-edit"),
             ("demo-09", "nano-banana", "qwen-image-edit")},
}
#: (annotator, task, generator, generator, first preference, the generator preferred
#: after all, note): the first answer, then the correction with the note
PAIR_CORRECTION = ("ann2", "demo-07", "nano-banana", "gpt-image-1", "tie", "nano-banana",
                   "looked again: the mug faces the wrong way in the other one")
RANKING_TASKS = ("demo-02", "demo-07")
#: the annotator who places two outputs of a ranking within this quality of each other
#: at one place (a tie)
RANKING_TIE = ("ann3", 0.6)
_VERDICT = {"a": "[[A]]", "b": "[[B]]", "tie": "[[tie: both good]]",
            "both_bad": "[[both bad]]"}


def pair_id(task: str, a: str, b: str) -> str:
    """The id of the pair showing ``task``'s output of generator ``a`` first."""
    return f"{task}/{a}-vs-{b}"


def _prefer(seen_a: float, seen_b: float, pull: float = 0.0) -> str:
    """The vote of someone who sees the qualities ``seen_a`` and ``seen_b`` (noise
    included) and is drawn to the first-shown output by ``pull``: both bad when neither
    reaches :data:`BAD`, a tie (both good) when they differ by less than :data:`TIE` and
    both reach it, else the better one."""
    if max(seen_a, seen_b) < BAD:
        return "both_bad"
    diff = seen_a - seen_b + pull
    if abs(diff) < TIE and min(seen_a, seen_b) >= BAD:
        return "tie"
    return "a" if diff > 0 else "b"


def _judge_raw(judge: str, preference: str, defects: Mapping[str, list[str]], a: str,
               b: str) -> str:
    """The judge's text: the flaws it names, then its verdict in brackets."""
    flaws = [f"Image {side} shows {', '.join(d.split(':')[0].replace('_', ' ') for d in found)}."
             for side, found in (("A", defects[a]), ("B", defects[b])) if found]
    opener = {"gpt-5": "I compared both images with the references and instructions.",
              "qwen3-vl": "Both images show the requested scene."}[judge]
    body = " ".join(flaws) if flaws else "Neither image shows a clear flaw."
    return f"{opener} {body}\nVerdict: {_VERDICT[preference]}"


def pair_records(quality: Mapping[str, float], defects: Mapping[str, list[str]],
                 start: datetime) -> dict[str, list[dict[str, Any]]]:
    """The demo's pairwise and ranking records (module docstring) from each output's
    hidden ``quality`` (outputs with an image only) and ``defects``; the people answer
    from ``start`` on (an hour apart). Returns ``pairs``, ``rankings``, ``judgments`` and
    ``annotations`` (lines of the bundle's files)."""
    rng = random.Random(PAIR_SEED)
    tasks = list(dict.fromkeys(o.split("/")[0] for o in quality))
    pairs: list[dict[str, Any]] = []
    originals: list[tuple[str, str, str]] = []
    for task in tasks:
        gens = [g for g in GENERATORS if f"{task}/{g}" in quality]
        for g1, g2 in itertools.combinations(gens, 2):
            a, b = (g1, g2) if rng.random() < 0.5 else (g2, g1)
            originals.append((task, a, b))
    swapped = [(t, b, a) for t, a, b in originals
               if (t, a, b) in SWAPPED or (t, b, a) in SWAPPED]
    if len(swapped) != len(SWAPPED):
        raise ValueError("a swapped pair of SWAPPED is not a pair of the demo")
    for (task, a, b), order in [*((p, None) for p in originals),
                                *((p, "swapped") for p in swapped)]:
        row: dict[str, Any] = {"pair_id": pair_id(task, a, b), "output_a": f"{task}/{a}",
                               "output_b": f"{task}/{b}", "task_id": task}
        if order:
            row["meta"] = {"order": order}
        pairs.append(row)

    judgments: list[dict[str, Any]] = []
    for judge in PAIR_JUDGES:
        prof = JUDGE_PAIR_PROFILE[judge]
        for task, a, b in originals + (swapped if judge == PAIR_JUDGES[0] else []):
            oa, ob = f"{task}/{a}", f"{task}/{b}"
            preference: str | None = _prefer(
                quality[oa] + prof["bias"] + rng.gauss(0.0, prof["sd"]),
                quality[ob] + prof["bias"] + rng.gauss(0.0, prof["sd"]), prof["first"])
            if (judge, task) == LENIENT[:2] and {a, b} == set(LENIENT[2:4]):
                preference = LENIENT[4]
            raw = _judge_raw(judge, str(preference), defects, oa, ob)
            if (judge, task) == UNPARSED_PAIR[:2] and {a, b} == set(UNPARSED_PAIR[2:]):
                preference, raw = None, UNPARSED_TEXT
            judgments.append({"judge": judge, "pair_id": pair_id(task, a, b),
                              "preference": preference, "raw": raw})

    annotations: list[dict[str, Any]] = []
    for n, person in enumerate(ANNOTATORS):
        clock = start + timedelta(hours=n)
        for task, a, b in originals:
            if (task, a, b) in PAIR_SKIPS[person] or (task, b, a) in PAIR_SKIPS[person]:
                continue
            shown = rng.choice("ab")
            preference = _prefer(quality[f"{task}/{a}"] + rng.gauss(0.0, HUMAN_SD),
                                 quality[f"{task}/{b}"] + rng.gauss(0.0, HUMAN_SD))
            line = {"annotator": person, "pair_id": pair_id(task, a, b),
                    "shown_first": shown}
            c_person, c_task, *c_gens = PAIR_CORRECTION[:4]
            if (person, task) == (c_person, c_task) and {a, b} == set(c_gens):
                clock += timedelta(seconds=rng.randint(8, 30))
                annotations.append({**line, "preference": PAIR_CORRECTION[4],
                                    "created_at": _iso(clock)})
                clock += timedelta(minutes=4)
                preference = "a" if a == PAIR_CORRECTION[5] else "b"
                line["note"] = PAIR_CORRECTION[6]
            clock += timedelta(seconds=rng.randint(8, 30))
            annotations.append({**line, "preference": preference, "created_at": _iso(clock)})

    rankings: list[dict[str, Any]] = []
    for task in RANKING_TASKS:
        outputs = [f"{task}/{g}" for g in GENERATORS]
        rng.shuffle(outputs)
        ranking_id = f"{task}/ranking"
        rankings.append({"ranking_id": ranking_id, "outputs": outputs, "task_id": task})
        for n, person in enumerate(ANNOTATORS):
            seen = {o: quality[o] + rng.gauss(0.0, HUMAN_SD) for o in outputs}
            tie = RANKING_TIE[1] if person == RANKING_TIE[0] else 0.0
            annotations.append({"annotator": person, "ranking_id": ranking_id,
                                "order": _order(seen, tie),
                                "created_at": _iso(start + timedelta(hours=n, minutes=50,
                                                                     seconds=40 * len(
                                                                         rankings)))})
        for judge in PAIR_JUDGES:
            seen = {o: quality[o] + rng.gauss(0.0, JUDGE_PAIR_PROFILE[judge]["sd"])
                    for o in outputs}
            order = _order(seen, 0.0)
            named = ", ".join(f"Image {outputs.index(str(o)) + 1}" for o in order)
            judgments.append({"judge": judge, "ranking_id": ranking_id, "order": order,
                              "raw": f"Best to worst: {named}."})
    return {"pairs": pairs, "rankings": rankings, "judgments": judgments,
            "annotations": annotations}


def _order(seen: Mapping[str, float], tie: float) -> list[Any]:
    """Outputs best first by their seen quality; neighbours within ``tie`` share a place
    (a nested list)."""
    ranked = sorted(seen, key=lambda o: -seen[o])
    places: list[list[str]] = [[ranked[0]]]
    for o in ranked[1:]:
        if seen[places[-1][-1]] - seen[o] < tie:
            places[-1].append(o)
        else:
            places.append([o])
    return [p[0] if len(p) == 1 else p for p in places]


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat(timespec="seconds")
