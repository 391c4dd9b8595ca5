"""Progress of the per-judge loops of long result tables (``judge-audit report`` prints it).

A table that loops over judges takes an optional ``on_judge(i, n, label)`` callback
(:data:`JudgeProgress`) and calls it as it starts on judge ``i`` of ``n`` (``label``: the
judge, and the criterion where the loop is per criterion too). It only reports: no number
depends on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sized
from typing import TypeVar

#: ``on_judge(i, n, label)``: starting judge ``i`` (from 1) of ``n``
JudgeProgress = Callable[[int, int, str], object]

T = TypeVar("T")


def each_judge(judges: Iterable[T], on_judge: JudgeProgress | None, suffix: str = "",
               name: Callable[[T], str] = str) -> Iterator[T]:
    """Yield ``judges`` unchanged, calling ``on_judge(i, n, name(judge) + suffix)`` before
    each (``name``: the judge's name from an item, e.g. of a ``groupby``). Lazy: a
    ``groupby``'s frames are made one at a time, as without it."""
    items = judges if isinstance(judges, Sized) else list(judges)
    n = len(items)
    for i, judge in enumerate(items, start=1):
        if on_judge is not None:
            on_judge(i, n, name(judge) + suffix)
        yield judge
