"""The one CSV writer of judge-audit: every cell a spreadsheet could run is neutralized.

CSV formula injection (OWASP): a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or
a carriage return may be run as a formula by Excel, LibreOffice or Google Sheets
(``=HYPERLINK(...)``, ``@SUM(1+1)``, ``-2+3``, ``\\t=cmd|...``). Task ids, generator and
judge names, annotator names, notes and question texts come from the data, and column
names can too (annotators, groups). Such a text cell gets a ``'`` in front, which
spreadsheets show as text; numbers stay numbers (``-0.5`` as a float or as the text
``"-0.5"``).

Every CSV the product writes goes through :func:`write_csv` (or :func:`csv_text` for a
download): ``judge-audit report``, ``conflicts``, ``trees``, ``history --csv``, ``tree
--out`` and the CSV downloads of the admin pages. ``annotation.results.report`` re-exports
:func:`neutralize_table` and :data:`FORMULA_STARTS`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet may read as the start of a formula (OWASP's list for CSV injection)."""

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def neutralize_value(value: object) -> object:
    """A text cell starting with = + - @ (or a tab or carriage return) prefixed with ``'``,
    unless the whole text is a plain number; anything else unchanged."""
    if (isinstance(value, str) and value.startswith(FORMULA_STARTS)
            and not _NUMBER.fullmatch(value)):
        return "'" + value
    return value


def neutralize_table(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with every text cell and column name neutralized
    (:func:`neutralize_value`), ready for ``to_csv``."""
    safe = table.map(neutralize_value)
    if isinstance(safe.columns, pd.MultiIndex):
        safe.columns = pd.MultiIndex.from_tuples(
            [tuple(neutralize_value(part) for part in column) for column in safe.columns],
            names=safe.columns.names)
    else:
        safe.columns = [neutralize_value(column) for column in safe.columns]
    return safe


def csv_text(table: pd.DataFrame) -> str:
    """The table as CSV text (no index), neutralized."""
    return neutralize_table(table).to_csv(index=False)


def write_csv(table: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write ``table`` as UTF-8 CSV (no index) to ``path``, neutralized; return the path."""
    path = Path(path)
    neutralize_table(table).to_csv(path, index=False, encoding="utf-8", lineterminator="\r\n")
    return path
