"""The judge-validation set as TIIF-Bench builds it: questions balanced by expected answer.

"TIIF-Bench: How Does Your T2I Model Follow Your Instructions?", Key Design 4 and
Sec. 3.4: the evaluator is validated on human answers to 560 questions over 300 images,
balanced 280 "yes" / 280 "no". A judge that says "yes" to most questions scores well on
a set that is mostly "yes"; balancing by the expected answer (known before any human
answers) keeps accuracy from rewarding that, and balanced accuracy is reported beside it
(:mod:`annotation.results.validation`).

:func:`balanced_questions` is the pure sampler; :func:`draw_validation_set` draws from a
project, makes the chosen images the annotation sample (annotators answer their whole
checklists, as ever) and keeps the chosen questions as the set the report scores.
"""

from __future__ import annotations

import random

import pandas as pd

from annotation.store import Store, items
from annotation.store import project as project_rows

ANSWERS = ("yes", "no")


def balanced_questions(candidates: pd.DataFrame, images: int, questions: int,
                       seed: int = 0, on: str = "pass_answer") -> pd.DataFrame:
    """``questions`` (output, question) pairs over exactly ``images`` outputs, half with
    answer "yes" and half "no" in column ``on``, every chosen output with at least one
    question.

    ``candidates`` has ``output_id, question_id`` and ``on``: the expected answer
    (``pass_answer``, known before annotation) or the human majority (``human_majority``).
    Outputs are drawn uniformly at random (``random.Random(seed)``), except that outputs
    with a question of the scarcer expected answer are drawn first until that half can
    be filled: balance is the point of the set, and on TIIF-Bench "no" is the scarcer.
    Each chosen output then gets one question (of the answer still most needed), and the
    rest of each half is drawn uniformly from the chosen outputs' other questions.
    Returns the chosen rows of ``candidates`` sorted by output then question.
    Raises ``ValueError`` saying what is short when the candidates cannot give such a set.
    """
    if images < 1 or questions < 1:
        raise ValueError("the validation set needs at least 1 image and 1 question")
    if questions % 2:
        raise ValueError(f"{questions} questions cannot be half 'yes' and half 'no': give an "
                         "even number")
    if questions < images:
        raise ValueError(f"{questions} questions cannot cover {images} images (at least one "
                         "question per image)")
    half = questions // 2
    what = "expected answer" if on == "pass_answer" else on.replace("_", " ")
    known = candidates[candidates[on].isin(ANSWERS)].rename(columns={on: "_label"})
    by_output = {str(o): g for o, g in known.groupby("output_id", sort=True)}
    if len(by_output) < images:
        raise ValueError(f"only {len(by_output)} outputs with checklist questions, "
                         f"{images} asked for")
    rng = random.Random(seed)
    order = sorted(by_output)
    rng.shuffle(order)
    totals = known._label.value_counts()
    scarce = min(ANSWERS, key=lambda a: (totals.get(a, 0), a))
    chosen: list[str] = []
    pooled = 0
    for output in order:  # first the outputs that bring the scarcer answer
        if pooled >= half or len(chosen) == images:
            break
        n = int((by_output[output]._label == scarce).sum())
        if n:
            chosen.append(output)
            pooled += n
    taken = set(chosen)
    chosen += [o for o in order if o not in taken][:images - len(chosen)]
    pool = pd.concat([by_output[o] for o in chosen])
    have = pool._label.value_counts()
    for answer in ANSWERS:
        if have.get(answer, 0) < half:
            raise ValueError(
                f"the {images} images drawn have {have.get(answer, 0)} questions with "
                f"{what} {answer!r}, fewer than the {half} asked for (the project "
                f"has {totals.get(answer, 0)} such questions): ask for fewer questions or "
                "more images")
    picked: list[tuple[str, str, str]] = []
    need = {a: half for a in ANSWERS}
    # outputs with questions of one answer only first: they leave no choice
    for output in sorted(chosen, key=lambda o: by_output[o]._label.nunique()):
        mine = by_output[output]
        offered = [a for a in ANSWERS if (mine._label == a).any() and need[a] > 0]
        if not offered:
            raise ValueError(f"cannot give every one of the {images} images a question "
                             f"within {half} 'yes' and {half} 'no': ask for more questions")
        answer = max(offered, key=lambda a: (need[a], a == scarce))
        ids = sorted(mine.question_id[mine._label == answer].astype(str))
        picked.append((output, rng.choice(ids), answer))
        need[answer] -= 1
    done = {(o, q) for o, q, _ in picked}
    for answer in ANSWERS:
        rest = sorted((str(o), str(q)) for o, q, a in zip(
            pool.output_id, pool.question_id, pool._label, strict=True)
            if a == answer and (str(o), str(q)) not in done)
        picked += [(o, q, answer) for o, q in rng.sample(rest, need[answer])]
    keys = pd.DataFrame([(o, q) for o, q, _ in picked], columns=["output_id", "question_id"])
    rows = candidates.astype({"output_id": str, "question_id": str}).merge(
        keys, on=["output_id", "question_id"])
    return rows.sort_values(["output_id", "question_id"], ignore_index=True)


def balance_column(balance: str) -> str:
    """The column of the drawn set that ``balance`` balanced: ``pass_answer``,
    ``human_majority`` or ``judge_answer``; ``ValueError`` for another balance."""
    if balance == "expected":
        return "pass_answer"
    if balance == "human":
        return "human_majority"
    if balance.startswith("judge:") and balance[6:]:
        return "judge_answer"
    raise ValueError(f"balance must be expected, human or judge:<name>, not {balance!r}")


def draw_validation_set(store: Store, actor: str, *, images: int = 300,
                        questions: int = 560, seed: int = 0,
                        balance: str = "expected") -> pd.DataFrame:
    """Draw the balanced set (:func:`balanced_questions`) from the annotatable outputs of
    ``store``, make its images the annotation sample and keep its questions for the report
    (``validation_set.csv``); audited. Returns the set.

    ``balance="expected"`` balances on the expected answers, before any annotation;
    ``"judge:<name>"`` on that judge's answers (as many questions it says "no" to as "yes":
    a set on which a lenient judge cannot look good); ``"human"`` on the strict majority
    of the human answers already given
    (:func:`annotation.results.checklist.study_decisions`, DSG gating included): the
    second stage of a study that first annotates a larger pool, for benchmarks whose
    expected answers are nearly all "yes" (the public TIIF-Bench testmini files expect
    "no" for 34 of 1,446 questions, too few for 280).
    """
    on = balance_column(balance)
    candidates = items.checklist_candidates(store)
    if on == "human_majority":
        from annotation.results.checklist import SEP, study_decisions
        from annotation.results.study import load_study

        majority = study_decisions(load_study(store)).majority.answer
        keys = candidates.output_id.astype(str) + SEP + candidates.question_id.astype(str)
        candidates = candidates.assign(human_majority=keys.map(majority).to_numpy())
    elif on == "judge_answer":
        judge = balance[len("judge:"):]
        answers = project_rows.judge_checklist_answers_df(store, judge)
        if answers.empty:
            known = ", ".join(map(str, store.judges_df().name)) or "none"
            raise ValueError(f"judge {judge!r} answered no checklist question (judges: "
                             f"{known})")
        candidates = candidates.merge(
            answers[["output_id", "question_id", "answer"]].rename(
                columns={"answer": "judge_answer"}), on=["output_id", "question_id"],
            how="left")
    table = balanced_questions(candidates, images, questions, seed, on=on)
    items.replace_validation_set(store, actor, table, {
        "mode": "validation", "balance": balance, "size": images, "questions": questions,
        "seed": seed})
    return table
