"""Progress of ``judge-audit import`` on stderr: one bar per file read and per table written.

:class:`ImportProgress` takes both callbacks of
:func:`annotation.formats.importers.import_path`: ``stage`` (read, check, write: a bar
of three stages, all a TIIF-Bench or VIF-Bench import shows) and ``records`` (the lines
read of each bundle file and the judgments written: ``judgments.jsonl 45,000 / 100,000``).
The bars redraw at most every :data:`MIN_INTERVAL` seconds, and once more when a file
or table is done.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # tqdm is imported when a bar is first shown
    from tqdm import tqdm

#: seconds between two redraws of a bar
MIN_INTERVAL = 0.2
RECORDS_FORMAT = "{desc} {n:,} / {total:,} {bar} [{elapsed}<{remaining}]"
STAGES = ("reading", "checking", "writing")
STAGES_FORMAT = "{desc} ({n} / {total} stages done)"


class ImportProgress:
    """The bars of one import on ``stream``; :meth:`close` clears the last one."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.bar: tqdm | None = None
        self.what: str | None = None  # the file or table of the open bar (None: stages)
        self.stages_done = 0

    def _open(self, what: str | None, total: int) -> tqdm:
        from tqdm import tqdm

        if self.bar is not None:
            self.bar.close()
        self.what = what
        if what is None:
            self.bar = tqdm(total=total, desc=f"import: {STAGES[self.stages_done]}",
                            initial=self.stages_done, file=self.stream, leave=False,
                            mininterval=MIN_INTERVAL, bar_format=STAGES_FORMAT)
        else:
            self.bar = tqdm(total=total, desc=what, file=self.stream, leave=False,
                            mininterval=MIN_INTERVAL, bar_format=RECORDS_FORMAT)
        return self.bar

    def stage(self, done: int) -> None:
        """One more stage done (the ``progress`` callback of ``import_path``)."""
        self.stages_done += done
        if self.stages_done >= len(STAGES):
            self.close()  # written: nothing left to show
        elif self.bar is None or self.what is not None:
            self._open(None, len(STAGES))
        else:
            self.bar.set_description_str(f"import: {STAGES[self.stages_done]}", refresh=False)
            self.bar.update(done)
            self.bar.refresh()

    def records(self, what: str, done: int, total: int) -> None:
        """``done`` of ``total`` records of ``what`` (the ``record_progress`` callback)."""
        bar = self.bar if self.what == what and self.bar is not None else self._open(what, total)
        bar.total = max(total, done)
        bar.update(done - bar.n)
        if done >= total:
            bar.refresh()  # the finished count is shown even between two redraws

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
