"""Progress of a long command, told by the code that does the work to whoever shows it.

The models and the run bookkeeping call :func:`report` (the phase, a line of detail, and where
known how far along of how much); the CLI installs a display with :func:`reporting_to` (a rich
bar on a terminal, nothing under ``--quiet``, in logs or when embedded), so the library stays
free of any display and a program that embeds it sees nothing unless it asks.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Step:
    """Where a command stands: ``phase`` (load, search, publish, verify, apply, ...), a short
    ``detail`` ("round 3: 1,204 unsafe rules"), and ``done`` of ``total`` when the total is
    known (a bar), else None (elapsed time only)."""

    phase: str
    detail: str = ""
    done: float | None = None
    total: float | None = None


class ProgressSink(Protocol):
    """Shows :class:`Step`s as they come."""

    def show(self, step: Step) -> None: ...


_sink: ContextVar[ProgressSink | None] = ContextVar("setanon_progress", default=None)


def report(phase: str, detail: str = "", done: float | None = None,
           total: float | None = None) -> None:
    """Tell the installed display where the work stands (nothing happens without one)."""
    sink = _sink.get()
    if sink is not None:
        sink.show(Step(phase, detail, done, total))


def report_shrinking(phase: str, what: str, first: int, left: int, round_no: int) -> None:
    """A search that ends when a count reaches 0 (unsafe rules, violating itemsets): the bar
    is the share of the first count already gone, so the estimate of time left follows it."""
    report(phase, f"round {round_no}: {left:,} {what} left of {first:,}",
           done=max(first - left, 0), total=max(first, 1))


@contextmanager
def reporting_to(sink: ProgressSink | None) -> Iterator[None]:
    """Send every :func:`report` made inside the block to ``sink``."""
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)
