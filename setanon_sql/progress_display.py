"""The terminal display of :mod:`setanon_sql.progress`: a rich bar on stderr.

One line: what the command does, the phase and its detail ("search · round 4: 310 unsafe rules
left of 2,048"), a bar with a percentage where the total is known (a pulsing bar where it is
not), the time spent in the phase and, with a bar, rich's estimate of the time left. Shown only
on a terminal and without ``--quiet``: logs, pipes and CI get nothing but the results.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from setanon_sql.progress import Step, reporting_to


class ProgressDisplay:
    """Shows :class:`Step`s as one rich task per phase (a new phase, or a new total within one,
    restarts the clock, so the estimate of time left is about the work now under way)."""

    def __init__(self, progress: Progress, message: str) -> None:
        self._progress = progress
        self._message = message
        self._phase = ""
        self._total: float | None = None
        self._task: TaskID = progress.add_task(message, total=None)

    def show(self, step: Step) -> None:
        description = f"{self._message} · {step.phase}"
        if step.detail:
            description += f" · {step.detail}"
        if step.phase != self._phase or step.total != self._total:
            self._progress.reset(self._task, total=step.total, completed=int(step.done or 0),
                                 description=description)
            self._phase, self._total = step.phase, step.total
        else:
            self._progress.update(self._task, completed=step.done, description=description)


def new_progress(console: Console) -> Progress:
    """The columns of the display, on ``console`` (removed from the screen when done)."""
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                    TaskProgressColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=console, transient=True)


@contextmanager
def progress_shown(message: str, quiet: bool = False,
                   console: Console | None = None) -> Iterator[None]:
    """Show the progress of the block on stderr, when stderr is a terminal and not ``quiet``.

    ``console``: where to draw instead (the tests pass one that records).
    """
    if quiet or (console is None and not sys.stderr.isatty()):
        yield
        return
    with new_progress(console or Console(stderr=True)) as progress, \
            reporting_to(ProgressDisplay(progress, message)):
        yield


QUIET_KEY = "setanon.quiet"


@contextmanager
def command_progress(message: str) -> Iterator[None]:
    """:func:`progress_shown` for the running click command: quiet when ``--quiet`` was given
    before or after the command (recorded under QUIET_KEY in the shared ``ctx.meta``)."""
    ctx = click.get_current_context(silent=True)
    with progress_shown(message, bool(ctx is not None and ctx.meta.get(QUIET_KEY))):
        yield
