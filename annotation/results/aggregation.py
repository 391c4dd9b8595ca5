"""Human labels beyond the majority: Dawid-Skene over annotators' answers.

The strict majority (``human majority`` in ``checklist.csv``, ``majority`` in the verified
conflict labels) counts every annotator alike. The Dawid-Skene model (Dawid & Skene 1979,
"Maximum likelihood estimation of observer error-rates using the EM algorithm", *Applied
Statistics* 28:20; :func:`annotation.stats.dawid_skene.dawid_skene`) estimates each
annotator's confusion matrix from all their answers and labels each item by its
posterior, so a careful annotator outweighs a careless one and a tie of votes can still
be decided. It is offered *beside* the majority, never in its place:

* :func:`checklist_fit`: one model over every gated checklist decision of the study (a
  decision = one output and question; ``cant_tell`` is no answer), classes ``no``/``yes``,
  one confusion matrix per annotator pooled over questions;
* :func:`human_labels_table` (``human_labels.csv``): per decision the votes, the majority,
  the Dawid-Skene label and its posterior P(yes);
* :func:`conflict_fit`: one model over the verifiers' current conflict labels (an item =
  one task and conflict type), classes False/True;
* :func:`confusion_table` (``annotator_confusion.csv``): per annotator the estimated
  confusion matrix, long format.

Inter-annotator agreement is still computed on the raw answers (``reliability.csv``).
"""

from __future__ import annotations

import pandas as pd

from annotation.stats.dawid_skene import DawidSkeneFit, dawid_skene

__all__ = ["CONFUSION_COLUMNS", "DAWID_SKENE", "HUMAN_LABEL_COLUMNS", "checklist_fit",
           "conflict_fit", "confusion_table", "human_labels_table"]

#: The reference name of the Dawid-Skene label in ``checklist.csv``.
DAWID_SKENE = "human Dawid-Skene"
SEP = "\x1f"
CONFUSION_COLUMNS = ["source", "annotator", "true", "answer", "probability",
                     "expected_count", "n_answers", "prior_true", "annotator_accuracy",
                     "n_items", "n_iter", "converged"]
HUMAN_LABEL_COLUMNS = ["output_id", "question_id", "n_yes", "n_no", "majority",
                       "dawid_skene", "posterior_yes", "differs"]


def checklist_fit(human: pd.DataFrame) -> DawidSkeneFit:
    """Dawid-Skene over the annotators' decided checklist answers. ``human``: gated
    decisions with ``key`` (output_id + SEP + question_id), ``annotator``, ``answer``
    (:attr:`annotation.results.checklist.StudyDecisions.human`); items are the keys."""
    decided = human[human.answer.isin(("yes", "no"))]
    return dawid_skene(decided.key, decided.annotator, decided.answer, classes=("no", "yes"))


def dawid_skene_labels(fit: DawidSkeneFit) -> pd.Series:
    """The Dawid-Skene label of every item (ties dropped), indexed by item."""
    labels = fit.items.set_index("item").label
    return labels[labels.notna()]


def human_labels_table(human: pd.DataFrame, fit: DawidSkeneFit) -> pd.DataFrame:
    """``human_labels.csv``: per decision answered by the humans, ``n_yes``/``n_no`` (their
    decided votes), ``majority`` (strict; None on a tie), ``dawid_skene`` (the label of
    highest posterior), ``posterior_yes`` and ``differs`` (both labels given and
    different)."""
    decided = human[human.answer.isin(("yes", "no"))]
    if decided.empty:
        return pd.DataFrame(columns=HUMAN_LABEL_COLUMNS)
    votes = decided.assign(n_yes=(decided.answer == "yes").astype(int),
                           n_no=(decided.answer == "no").astype(int)).groupby(
        ["key", "output_id", "question_id"], sort=True)[["n_yes", "n_no"]].sum().reset_index()
    majority = ["yes" if y > n else "no" if n > y else None
                for y, n in zip(votes.n_yes, votes.n_no, strict=True)]
    items = fit.items.set_index("item")
    table = votes.assign(
        majority=pd.Series(majority, dtype=object),
        dawid_skene=items.label.reindex(votes.key).to_numpy(),
        posterior_yes=items.p_yes.reindex(votes.key).to_numpy())
    table["differs"] = (table.majority.notna() & table.dawid_skene.notna()
                        & (table.majority != table.dawid_skene))
    return table[HUMAN_LABEL_COLUMNS].reset_index(drop=True)


def conflict_fit(verdicts: pd.DataFrame) -> DawidSkeneFit:
    """Dawid-Skene over the verifiers' current conflict labels (``verdicts``: task_id,
    conflict, verifier, label); items are ``task_id + SEP + conflict``."""
    given = verdicts[verdicts.label.notna()] if len(verdicts) else verdicts
    if not len(given):
        return dawid_skene([], [], [], classes=(False, True))
    return dawid_skene(given.task_id.astype(str) + SEP + given.conflict.astype(str),
                       given.verifier, given.label.map(bool), classes=(False, True))


def confusion_table(fit: DawidSkeneFit, source: str) -> pd.DataFrame:
    """``annotator_confusion.csv`` rows of one fit: ``source`` (``checklist`` or
    ``conflict``), ``annotator``, ``true`` (class), ``answer``, ``probability`` (P(answer |
    true), the estimated confusion matrix), ``expected_count`` (posterior-weighted count),
    ``n_answers`` (the annotator's answers in the fit), ``prior_true`` (the estimated
    prevalence of the true class), ``annotator_accuracy`` (sum over classes of prior x
    P(right answer): the annotator's estimated accuracy on a random item), ``n_items``
    (items in the fit), ``n_iter``, ``converged``."""
    if fit.confusion.empty:
        return pd.DataFrame(columns=CONFUSION_COLUMNS)
    table = fit.confusion.copy()
    table.insert(0, "source", source)
    table["prior_true"] = table["true"].map(fit.priors.to_dict()).astype(float)
    right = table[table["true"] == table.answer]
    accuracy = (right.probability * right.prior_true).groupby(right.annotator).sum()
    table["annotator_accuracy"] = table.annotator.map(accuracy).astype(float)
    table["n_items"] = len(fit.items)
    table["n_iter"] = fit.n_iter
    table["converged"] = fit.converged
    for column in ("true", "answer"):
        table[column] = table[column].map(str)
    return table[CONFUSION_COLUMNS].reset_index(drop=True)
