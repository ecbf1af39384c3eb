"""The progress display: what a person sees on a terminal, and silence everywhere else."""

from __future__ import annotations

import io

from rich.console import Console

from setanon_sql.progress import Step, report, report_shrinking, reporting_to
from setanon_sql.progress_display import progress_shown


class Recorder:
    def __init__(self) -> None:
        self.steps: list[Step] = []

    def show(self, step: Step) -> None:
        self.steps.append(step)


def test_report_without_a_display_does_nothing() -> None:
    report("search", "round 1")  # no sink installed: no error, no output


def test_shrinking_count_becomes_a_bar() -> None:
    recorder = Recorder()
    with reporting_to(recorder):
        report_shrinking("search", "unsafe rules", 400, 100, 3)
    assert recorder.steps == [Step("search", "round 3: 100 unsafe rules left of 400", 300, 400)]


def test_a_count_that_grows_never_goes_below_zero() -> None:
    recorder = Recorder()
    with reporting_to(recorder):
        report_shrinking("search", "unsafe rules", 10, 25, 2)
    assert recorder.steps[0].done == 0


def test_terminal_shows_phase_detail_percentage_and_time() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200, color_system=None)
    with progress_shown("anonymizing b with rho", console=console):
        report("search", "round 2: 50 unsafe rules left of 200", 150, 200)
    screen = out.getvalue()
    assert "anonymizing b with rho · search · round 2: 50 unsafe rules left of 200" in screen
    assert "75%" in screen
    assert "0:00:0" in screen  # elapsed


def test_quiet_shows_nothing_and_installs_no_display() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200)
    recorder = Recorder()
    with reporting_to(recorder), progress_shown("x", quiet=True, console=console):
        report("search", "round 1")
    assert out.getvalue() == ""
    assert recorder.steps == [Step("search", "round 1")]  # the outer display still hears it
