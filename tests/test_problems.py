"""The one collector of import problems (:class:`annotation.records.Problems`) that every
reader uses: the bundle, TIIF-Bench and VIF-Bench readers and the project checks."""

from __future__ import annotations

import inspect

import pytest

from annotation.formats import bundle, tiif, validate, vif
from annotation.records import MAX_PROBLEMS, ImportRefused, Problem, Problems


def test_errors_warnings_and_the_limit():
    pr = Problems(limit=3)
    pr.add("tasks.jsonl", 4, "task_id", "missing")
    pr.at(("", None), "name", "must not be empty")
    pr.warn("outputs.jsonl", None, None, "output 'o1' is missing")
    assert not pr.full
    assert [str(p) for p in pr.errors] == ["tasks.jsonl:4: task_id: missing",
                                           "?: name: must not be empty"]
    assert pr.warnings == [Problem("outputs.jsonl", None, None, "output 'o1' is missing")]
    pr.extend([Problem("a.jsonl", 1, None, "x"), Problem("a.jsonl", 2, None, "y")])
    assert pr.full
    with pytest.raises(ImportRefused) as refused:
        pr.raise_if_any()
    assert len(refused.value.problems) == 3
    assert str(refused.value) == "tasks.jsonl:4: task_id: missing (and 2 more)"


def test_warnings_alone_refuse_nothing():
    pr = Problems()
    pr.warn("x", None, None, "only a warning")
    pr.raise_if_any()
    assert pr.limit == MAX_PROBLEMS == 20


def test_every_reader_uses_the_one_collector():
    """No reader keeps a collector of its own (there were four)."""
    for module in (bundle, tiif, validate, vif):
        own = [name for name, obj in vars(module).items() if inspect.isclass(obj)
               and obj.__module__ == module.__name__
               and any(hasattr(obj, m) for m in ("add", "error"))
               and not issubclass(obj, Problems)]
        assert own == [], module.__name__
        assert module.Problems is Problems
