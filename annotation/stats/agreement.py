"""Two-rater agreement: a judge against the human majority, or against one annotator.

Everything here is a pure function (no I/O). Inputs are labels (``"yes"``/``"no"`` in the
store, but any hashable categories are allowed) or a k x k contingency table with rows =
rater A (the judge) and columns = rater B (the humans).

Label conventions shared by every function of this module (see :func:`normalize_label`):

* ``None``, ``NaN``, ``pd.NA`` and ``"cant_tell"`` are *missing*: a pair where either side
  is missing is dropped, and the number dropped is reported (``n_dropped``).
* ``True``/``False`` become ``"yes"``/``"no"``; strings are stripped and lower-cased, so a
  judge's ``True`` or ``"Yes"`` matches a human's ``"yes"``. Other values (numbers, ...)
  are compared as they are.

Sources: Cohen (1960) for kappa, Fleiss, Cohen & Everitt (1969) for its large-sample
standard error, Cohen (1968) for weighted kappa, Gwet (2008) for AC1, Scott (1955) for pi,
Bennett, Alpert & Goldstein (1954) for S (= PABAK of Byrt, Bishop & Carlin 1993 with two
categories), Cicchetti & Feinstein (1990) for the specific agreements, Wilson (1927) for
the score interval and McNemar (1947) for the paired test.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

__all__ = [
    "MISSING_TOKENS",
    "ChanceCorrected",
    "Kappa",
    "McNemar",
    "Proportion",
    "agreement_from_table",
    "bennett_s",
    "binary_agreement",
    "cohen_kappa",
    "contingency_table",
    "gwet_ac1",
    "majority",
    "mcnemar_exact",
    "normalize_label",
    "paired_flags",
    "scott_pi",
    "wilson_interval",
]

MISSING_TOKENS: frozenset[str] = frozenset({"cant_tell"})
"""Answers that carry no yes/no decision and are treated as missing (after lower-casing)."""

YES, NO = "yes", "no"


# --------------------------------------------------------------------------- labels


def normalize_label(value: Any) -> Hashable | None:
    """Normalize one label: missing or ``"cant_tell"`` -> None, bool -> "yes"/"no".

    Strings are stripped and lower-cased; other values are returned unchanged.
    """
    if value is None:
        return None
    if isinstance(value, bool | np.bool_):
        return YES if value else NO
    if isinstance(value, str):
        v = value.strip().lower()
        return None if v == "" or v in MISSING_TOKENS else v
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):  # array-likes are not labels
        pass
    return value


def _sorted_categories(values: Iterable[Hashable]) -> list[Hashable]:
    """Categories in a stable order: yes before no for binary data, else sorted if possible."""
    cats = list(dict.fromkeys(values))
    if set(cats) <= {YES, NO}:
        return [YES, NO]
    try:
        return sorted(cats)  # type: ignore[type-var]
    except TypeError:
        return cats


def _paired(a: Any, b: Any) -> tuple[list[Hashable | None], list[Hashable | None]]:
    """Two label sequences as aligned lists (Series are aligned on their index, inner join)."""
    if isinstance(a, pd.Series) and isinstance(b, pd.Series):
        if not a.index.is_unique or not b.index.is_unique:
            raise ValueError("both Series must have a unique index (one label per item)")
        joined = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner")
        a_vals, b_vals = list(joined["a"]), list(joined["b"])
    else:
        a_vals, b_vals = list(a), list(b)
        if len(a_vals) != len(b_vals):
            raise ValueError(f"length mismatch: {len(a_vals)} != {len(b_vals)}")
    return _normalized(a_vals), _normalized(b_vals)


def _normalized(values: list[Any]) -> list[Hashable | None]:
    """:func:`normalize_label` of each value, computed once per distinct value."""
    memo: dict[Any, Hashable | None] = {}
    out: list[Hashable | None] = []
    for v in values:
        try:
            out.append(memo[v])
        except KeyError:
            out.append(memo.setdefault(v, normalize_label(v)))
        except TypeError:  # unhashable
            out.append(normalize_label(v))
    return out


def contingency_table(
    a: Any, b: Any, *, categories: Sequence[Hashable] | None = None
) -> pd.DataFrame:
    """k x k table of counts, rows = labels of ``a`` (judge), columns = labels of ``b``.

    Pairs with a missing side are dropped (module docstring). ``categories`` fixes the
    rows/columns (default: yes, no for binary data, else the sorted observed labels).
    """
    xa, xb = _paired(a, b)
    pairs = [(u, v) for u, v in zip(xa, xb, strict=True) if u is not None and v is not None]
    if categories is None:
        observed = [u for u, _ in pairs] + [v for _, v in pairs]
        cats = _sorted_categories(observed) if observed else [YES, NO]
    else:
        cats = [normalize_label(c) for c in categories]
    index = {c: i for i, c in enumerate(cats)}
    counts = np.zeros((len(cats), len(cats)), dtype=np.int64)
    for (u, v), k in Counter(pairs).items():
        if u not in index or v not in index:
            raise ValueError(f"label {u if u not in index else v!r} not in categories {cats}")
        counts[index[u], index[v]] += k
    return pd.DataFrame(
        counts,
        index=pd.Index(cats, name="a", dtype=object),
        columns=pd.Index(cats, name="b", dtype=object),
    )


def _as_table(table: Any) -> np.ndarray:
    t = np.asarray(table, dtype=float)
    if t.ndim != 2 or t.shape[0] != t.shape[1]:
        raise ValueError(f"need a square k x k contingency table, got shape {t.shape}")
    if (t < 0).any() or not np.isfinite(t).all():
        raise ValueError("contingency table counts must be finite and >= 0")
    return t


def _ratio(num: float, den: float) -> float:
    """num / den, NaN when den is 0 or NaN."""
    return float(num / den) if den != 0 and not math.isnan(den) else math.nan


# --------------------------------------------------------------------------- intervals


@dataclass(frozen=True)
class Proportion:
    """A proportion ``k / n`` with its confidence interval."""

    k: int
    n: int
    estimate: float
    lo: float
    hi: float
    conf: float


def wilson_interval(k: int, n: int, conf: float = 0.95) -> Proportion:
    """Wilson (1927) score interval for a binomial proportion (no continuity correction).

    ``(k + z^2/2) / (n + z^2)  +-  z sqrt(n) / (n + z^2) * sqrt(p(1-p) + z^2 / (4n))``,
    Wilson, J. Am. Stat. Assoc. 22:209 (1927); Agresti & Coull (1998) eq. 2. Equals
    ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``. ``n = 0`` gives NaN.
    """
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if not 0 < conf < 1:
        raise ValueError(f"conf must be in (0, 1), got {conf}")
    if n == 0:
        return Proportion(int(k), 0, math.nan, math.nan, math.nan, conf)
    z = float(stats.norm.ppf(0.5 + conf / 2))
    p = k / n
    den = n + z * z
    center = (k + z * z / 2) / den
    half = z * math.sqrt(n) / den * math.sqrt(p * (1 - p) + z * z / (4 * n))
    return Proportion(int(k), int(n), p, max(0.0, center - half), min(1.0, center + half), conf)


# --------------------------------------------------------------------------- McNemar


@dataclass(frozen=True)
class McNemar:
    """Exact McNemar test: ``b`` = A right and B wrong, ``c`` = A wrong and B right."""

    b: int
    c: int
    n: int
    p: float


def paired_flags(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two aligned right/wrong sequences as booleans: ``(a, b, keep)`` with the pairs where
    either side is missing dropped from ``a`` and ``b`` (``keep``: which pairs were kept).
    Boolean arrays have nothing missing and are used as they are (no Python object per
    pair); anything else is read as objects, missing = None/NaN, else truthiness."""
    if (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == bool
            and b.dtype == bool and a.ndim == b.ndim == 1):
        if len(a) != len(b):
            raise ValueError(f"length mismatch: {len(a)} != {len(b)}")
        return a, b, np.ones(len(a), dtype=bool)
    sa, sb = pd.Series(list(a), dtype=object), pd.Series(list(b), dtype=object)
    if len(sa) != len(sb):
        raise ValueError(f"length mismatch: {len(sa)} != {len(sb)}")
    keep = (sa.notna() & sb.notna()).to_numpy()
    return sa[keep].astype(bool).to_numpy(), sb[keep].astype(bool).to_numpy(), keep


def mcnemar_exact(a_correct: Any, b_correct: Any) -> McNemar:
    """Exact McNemar (1947) test of two judges scored on the same questions, two-sided.

    ``a_correct``/``b_correct``: per question, whether judge A / judge B was right (bool or
    0/1; pairs with a missing side are dropped, ``n`` counts the pairs kept). Under H0 the
    discordant pairs split as Binomial(b + c, 1/2): ``p = min(1, 2 P(X <= min(b, c)))``
    (the exact binomial test; Fagerland, Lydersen & Laake 2013, BMC Med Res Methodol
    13:91, eq. 2). No discordant pairs gives ``p = 1``.
    """
    xa, xb, keep = paired_flags(a_correct, b_correct)
    b = int(np.sum(xa & ~xb))
    c = int(np.sum(~xa & xb))
    m = b + c
    p = 1.0 if m == 0 else min(1.0, 2.0 * float(stats.binom.cdf(min(b, c), m, 0.5)))
    return McNemar(b=b, c=c, n=int(keep.sum()), p=p)


# --------------------------------------------------------------------------- coefficients


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa with its large-sample standard errors (Fleiss, Cohen & Everitt 1969).

    ``se`` is the standard error for the confidence interval ``[lo, hi]``; ``se0`` the
    standard error under H0: kappa = 0, giving ``z = kappa / se0`` and the two-sided ``p``.
    """

    kappa: float
    po: float
    pe: float
    n: int
    se: float
    lo: float
    hi: float
    se0: float
    z: float
    p: float
    weights: str
    conf: float


def _agreement_weights(k: int, weights: str | None) -> np.ndarray:
    if weights is None or weights == "none":
        return np.eye(k)
    if k < 2:
        return np.ones((1, 1))
    d = np.abs(np.subtract.outer(np.arange(k), np.arange(k))) / (k - 1)
    if weights == "linear":
        return 1 - d
    if weights == "quadratic":
        return 1 - d**2
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")


def cohen_kappa(
    table: Any,
    *,
    weights: Literal["linear", "quadratic"] | None = None,
    conf: float = 0.95,
) -> Kappa:
    """Cohen's kappa (Cohen 1960, eq. 1) on a k x k table, optionally weighted (Cohen 1968).

    ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o = sum w_ij p_ij`` and
    ``p_e = sum w_ij p_i. p_.j``; ``w`` = identity, or the agreement weights
    ``1 - |i-j|/(k-1)`` (linear, Cicchetti & Allison 1971) or ``1 - (i-j)^2/(k-1)^2``
    (quadratic) in the order of the table's categories.

    Standard errors: Fleiss, Cohen & Everitt (1969), Psychol. Bull. 72:323, eqs. 13 (any
    kappa) and 14 (under H0), as printed by SAS PROC FREQ. CI = kappa +- z * se.
    ``p_e = 1`` (one category used by both raters) gives NaN.
    """
    t = _as_table(table)
    k = t.shape[0]
    n = float(t.sum())
    w = _agreement_weights(k, weights)
    wname = weights or "none"
    if n == 0:
        nan = math.nan
        return Kappa(nan, nan, nan, 0, nan, nan, nan, nan, nan, nan, wname, conf)
    p = t / n
    r, c = p.sum(axis=1), p.sum(axis=0)
    po = float((w * p).sum())
    pe = float((w * np.outer(r, c)).sum())
    kappa = _ratio(po - pe, 1 - pe)
    if math.isnan(kappa):
        return Kappa(math.nan, po, pe, int(n), *(math.nan,) * 6, wname, conf)
    wi = w @ c  # mean weight of row i, over the column marginals
    wj = r @ w  # mean weight of column j, over the row marginals
    wsum = np.add.outer(wi, wj)
    var = ((p * (w - wsum * (1 - kappa)) ** 2).sum() - (kappa - pe * (1 - kappa)) ** 2) / (
        n * (1 - pe) ** 2
    )
    var0 = ((np.outer(r, c) * (w - wsum) ** 2).sum() - pe**2) / (n * (1 - pe) ** 2)
    se = math.sqrt(max(float(var), 0.0))
    se0 = math.sqrt(max(float(var0), 0.0))
    zq = float(stats.norm.ppf(0.5 + conf / 2))
    z = _ratio(kappa, se0)
    pval = float(2 * stats.norm.sf(abs(z))) if not math.isnan(z) else math.nan
    return Kappa(
        kappa=kappa, po=po, pe=pe, n=int(n), se=se, lo=kappa - zq * se, hi=kappa + zq * se,
        se0=se0, z=z, p=pval, weights=wname, conf=conf,
    )


@dataclass(frozen=True)
class ChanceCorrected:
    """A chance-corrected agreement ``(po - pe) / (1 - pe)`` on ``q`` categories."""

    coefficient: str
    estimate: float
    po: float
    pe: float
    n: int
    q: int


def _two_rater(table: Any) -> tuple[np.ndarray, float, float, np.ndarray, np.ndarray]:
    t = _as_table(table)
    n = float(t.sum())
    if n == 0:
        k = t.shape[0]
        return t, 0.0, math.nan, np.full(k, math.nan), np.full(k, math.nan)
    p = t / n
    return t, n, float(np.trace(p)), p.sum(axis=1), p.sum(axis=0)


def gwet_ac1(table: Any) -> ChanceCorrected:
    """Gwet's AC1 for two raters (Gwet 2008, Br. J. Math. Stat. Psychol. 61:29, eq. 15).

    ``p_e = 1/(q-1) sum_k pi_k (1 - pi_k)`` with ``pi_k = (p_k. + p_.k) / 2`` and q = the
    number of categories of the table (rows). q = 1 gives ``p_e = 0`` (AC1 = p_o), as
    irrCAC does. AC1 rises with skewed prevalence by construction; do not read it on a
    kappa scale.
    """
    t, n, po, r, c = _two_rater(table)
    q = t.shape[0]
    pi = (r + c) / 2
    pe = float((pi * (1 - pi)).sum() / (q - 1)) if q >= 2 else 0.0
    return ChanceCorrected("ac1", _ratio(po - pe, 1 - pe), po, pe, int(n), q)


def scott_pi(table: Any) -> ChanceCorrected:
    """Scott's pi (Scott 1955, Public Opin. Q. 19:321): ``p_e = sum_k ((p_k. + p_.k)/2)^2``."""
    t, n, po, r, c = _two_rater(table)
    pe = float((((r + c) / 2) ** 2).sum())
    return ChanceCorrected("scott_pi", _ratio(po - pe, 1 - pe), po, pe, int(n), t.shape[0])


def bennett_s(table: Any) -> ChanceCorrected:
    """Bennett, Alpert & Goldstein's S (1954): ``p_e = 1/q``, i.e. ``(q p_o - 1) / (q - 1)``.

    With two categories this is PABAK = 2 p_o - 1 (Byrt, Bishop & Carlin 1993, J Clin
    Epidemiol 46:423).
    """
    t, n, po, _, _ = _two_rater(table)
    q = t.shape[0]
    pe = 1.0 / q
    return ChanceCorrected("bennett_s", _ratio(po - pe, 1 - pe), po, pe, int(n), q)


# --------------------------------------------------------------------------- judge vs humans


BINARY_COLUMNS = [
    "n_decisions", "n_dropped", "agreement", "agreement_lo", "agreement_hi",
    "kappa", "kappa_lo", "kappa_hi", "ac1", "pabak", "p_pos", "p_neg",
    "yes_recall", "no_recall", "both_yes", "both_no", "judge_yes_human_no",
    "judge_no_human_yes", "prevalence_yes", "judge_yes_rate",
]  # fmt: skip


def binary_agreement(
    judge: Any,
    human: Any,
    *,
    positive: Hashable = YES,
    categories: Sequence[Hashable] | None = None,
    conf: float = 0.95,
) -> pd.DataFrame:
    """Judge-vs-human agreement on paired decisions, as one tidy row.

    ``judge`` and ``human`` are label sequences of equal length, or two Series aligned on
    their index (inner join: items present on one side only are ignored). Pairs where
    either side is missing or ``"cant_tell"`` (human majority ties included, see
    :func:`majority`) are dropped; ``n_dropped`` counts them and ``n_decisions`` counts
    the pairs kept, the denominator of every rate.

    Columns: ``agreement`` = p_o with its Wilson (1927) interval; ``kappa`` = Cohen (1960)
    with the Fleiss-Cohen-Everitt (1969) interval; ``ac1`` = Gwet (2008); ``pabak`` =
    2 p_o - 1 (Byrt et al. 1993; with q > 2 categories, Bennett's S = (q p_o - 1)/(q - 1));
    ``p_pos = 2a / (2a + b + c)`` and ``p_neg = 2d / (2d + b + c)`` the specific
    agreements (Cicchetti & Feinstein 1990, J Clin Epidemiol 43:551), with a = both yes,
    d = both no, b = judge yes/human no (leniency), c = judge no/human yes;
    ``yes_recall = a / (a + c)`` (judge says yes where the human says yes), ``no_recall =
    d / (d + b)``; ``prevalence_yes`` = human yes rate, ``judge_yes_rate`` = judge's.
    "Yes" is ``positive`` (after :func:`normalize_label`); every other category is "no"
    (if ``positive`` is not among the categories, these columns are NaN).
    Categories default to yes/no for binary data (so q = 2 even if one is never used).
    """
    xj, xh = _paired(judge, human)
    keep = [(u, v) for u, v in zip(xj, xh, strict=True) if u is not None and v is not None]
    n_dropped = len(xj) - len(keep)
    table = contingency_table(
        [u for u, _ in keep], [v for _, v in keep], categories=categories
    )
    return agreement_from_table(table.to_numpy(), list(table.index), positive=positive,
                                n_dropped=n_dropped, conf=conf)


def agreement_from_table(
    table: Any,
    categories: Sequence[Hashable],
    *,
    positive: Hashable = YES,
    n_dropped: int = 0,
    conf: float = 0.95,
) -> pd.DataFrame:
    """The row of :func:`binary_agreement` from its k x k contingency table (rows = judge,
    columns = reference, both in the order of ``categories``): the one place its
    statistics are computed, for callers that count the cells themselves."""
    t = _as_table(table)
    n = int(t.sum())
    pos = normalize_label(positive)
    cats = [normalize_label(c) for c in categories]

    agree = wilson_interval(int(np.trace(t)), n, conf)
    kap = cohen_kappa(t, conf=conf)
    if pos in cats:
        i = cats.index(pos)
        a: float = int(t[i, i])
        b: float = int(t[i].sum() - a)  # judge yes, human not yes
        c: float = int(t[:, i].sum() - a)  # judge not yes, human yes
        d: float = n - a - b - c
    else:  # no "yes" category: the yes/no columns are undefined
        a = b = c = d = math.nan
    row: dict[str, float | int] = {
        "n_decisions": n,
        "n_dropped": n_dropped,
        "agreement": agree.estimate,
        "agreement_lo": agree.lo,
        "agreement_hi": agree.hi,
        "kappa": kap.kappa,
        "kappa_lo": kap.lo,
        "kappa_hi": kap.hi,
        "ac1": gwet_ac1(t).estimate if n else math.nan,
        "pabak": bennett_s(t).estimate if n else math.nan,
        "p_pos": _ratio(2 * a, 2 * a + b + c),
        "p_neg": _ratio(2 * d, 2 * d + b + c),
        "yes_recall": _ratio(a, a + c),
        "no_recall": _ratio(d, d + b),
        "both_yes": a,
        "both_no": d,
        "judge_yes_human_no": b,
        "judge_no_human_yes": c,
        "prevalence_yes": _ratio(a + c, n),
        "judge_yes_rate": _ratio(a + b, n),
    }
    return pd.DataFrame([row], columns=BINARY_COLUMNS)


def majority(labels_long: pd.DataFrame, *, item_col: str, value_col: str) -> pd.Series:
    """Human majority label per item (strict plurality), from long-format answers.

    Values go through :func:`normalize_label`; missing answers and ``"cant_tell"`` are
    excluded before counting (they are no vote). The label with the most votes wins; a
    tie for the top (e.g. 1 yes / 1 no) or an item with no vote left gives ``None``,
    which :func:`binary_agreement` drops. Returns an object Series indexed by item
    (sorted), named ``value_col``.
    """
    missing = [c for c in (item_col, value_col) if c not in labels_long.columns]
    if missing:
        raise KeyError(f"columns not found: {missing}")
    items = labels_long[item_col]
    all_items = pd.Index(pd.unique(items)).sort_values()
    votes = pd.DataFrame({"item": items.to_numpy(),
                          "vote": labels_long[value_col].map(normalize_label).to_numpy()})
    votes = votes[votes.vote.notna()]
    # one vectorized count per (item, label) instead of a value_counts per item
    counts = votes.groupby(["item", "vote"], sort=True).size().unstack(fill_value=0)
    top = counts.max(axis=1)
    winners = counts.eq(top, axis=0)
    unique = winners.sum(axis=1) == 1
    label = winners.idxmax(axis=1).where(unique & (top > 0), None)
    result = pd.Series([None] * len(all_items), index=all_items, dtype=object)
    result.loc[label.index] = label.astype(object).where(label.notna(), None)
    result.index.name = item_col
    return result.rename(value_col)
