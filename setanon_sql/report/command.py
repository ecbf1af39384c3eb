"""``setanon report``: a terminal summary, JSON, or a self-contained HTML page (one run or many).

The command is built by :func:`report_command` around the CLI's ``db_options`` decorator, so
``cli.py`` registers it with ``main.add_command(report_command(db_options))`` and this module
never imports the CLI. Plotting (matplotlib) is imported only when a page is drawn.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run, get_dataset, get_run
from setanon_sql.errors import UsageError
from setanon_sql.report.build import Verifier, build_report, checked_run, default_verifier
from setanon_sql.report.figures import figure_rows
from setanon_sql.summary import dataset_summary, format_summary

FORMATS = ("text", "json", "html")
# Rows of a figure's table the terminal shows; the rest are counted, and are in json and html.
TEXT_ROWS = 12


def parse_run_ids(value: str) -> list[int]:
    """``--runs 3,4,5`` as distinct run ids, in the order given."""
    parts = [part.strip() for part in value.split(",") if part.strip()]
    if not parts or not all(part.isdigit() for part in parts):
        raise UsageError(f"--runs {value!r}: give run ids separated by commas, e.g. --runs 3,4,5")
    ids = [int(part) for part in parts]
    if len(set(ids)) != len(ids):
        raise UsageError(f"--runs {value!r} names a run twice; give each run id once")
    return ids


def choose_format(fmt: str | None, output: str | None) -> str:
    """The format asked for, else HTML for an output file ending in .html, else text."""
    if fmt is not None:
        return fmt
    if output and output.lower().endswith((".html", ".htm")):
        return "html"
    return "text"


def _numeric(cell: str) -> bool:
    """Whether a cell reads as a number (right-aligned, so digits line up)."""
    bare = cell.replace(",", "").replace("%", "").replace(" ", "")
    try:
        float(bare)
    except ValueError:
        return False
    return True


def text_table(header: list[str], rows: list[list[str]], limit: int = TEXT_ROWS,
               indent: str = "    ") -> list[str]:
    """A figure's table as aligned lines: the header, at most ``limit`` rows, and how many more
    there are (a bare row count tells a steward nothing about the search or the pairs)."""
    shown = rows if len(rows) <= limit else rows[:limit]
    width = max([len(header), *(len(row) for row in rows)])
    grid = [[*header, *[""] * (width - len(header))]] + [
        [*row, *[""] * (width - len(row))] for row in shown]
    widths = [max(len(line[i]) for line in grid) for i in range(width)]
    # A column is numeric when every cell with a value ("-" is none) reads as a number.
    filled = [[row[i] for row in shown if row[i] not in ("", "-")] for i in range(width)]
    right = [bool(column) and all(_numeric(cell) for cell in column) for column in filled]
    lines = []
    for line in grid:
        cells = [cell.rjust(w) if r else cell.ljust(w) for cell, w, r in zip(line, widths, right,
                                                                             strict=True)]
        lines.append((indent + "  ".join(cells)).rstrip())
    if len(rows) > limit:
        hidden = len(rows) - limit
        lines.append(f"{indent}... {hidden:,} more row{'s' if hidden != 1 else ''} not shown "
                     f"({len(rows):,} in all; --format json or html shows every row)")
    return lines


def verification_line(outcome: dict[str, Any]) -> str:
    """The verification outcome in one line, worded as the HTML page words it."""
    status = outcome["status"]
    text = {"met": "privacy guarantee met", "NOT MET": "privacy guarantee NOT met"}.get(
        status, f"verification {status}")
    how = outcome.get("message") or (
        f"checked again now in {outcome['seconds']:.1f} s" if outcome.get("seconds") is not None
        else None)
    covered = f"; checked {outcome['covered']}" if outcome.get("covered") else ""
    return f"  {text}{f' ({how})' if how else ''}{covered}"


def _text(backend: Backend, dataset: Dataset, run: Run | None,
          verifier: Verifier | None = None) -> str:
    """The terminal summary of before (or of the run's output, through the gate), whether the
    guarantee holds, and the run's own figures (tables with their rows)."""
    if run is None:
        return format_summary(dataset_summary(backend, dataset, None))
    run, outcome = checked_run(backend, dataset, run, verifier)
    lines = [format_summary(dataset_summary(backend, dataset, run)), verification_line(outcome)]
    for row in figure_rows(run.figures):
        if row.rows is None:
            lines.append(f"  {row.name}: {row.text}")
        else:
            lines.append(f"  {row.name} ({len(row.rows):,} rows):")
            lines += text_table(row.header or [], row.rows)
    return "\n".join(lines)


def _json_view(report: dict[str, Any]) -> dict[str, Any]:
    """The summary's keys at the top (as ``report --format json`` always gave), then the rest."""
    if report["report"] == "tradeoff":
        return report
    rest = {key: value for key, value in report.items() if key not in ("summary", "run")}
    return {**report["summary"], **rest}


def render_report(backend: Backend, dataset: Dataset, run: Run | None, runs: list[Run] | None,
                  fmt: str, verify: bool) -> str:
    """The report of ``run`` (or of the loaded data), or the trade-off of ``runs``, as text."""
    verifier = default_verifier if verify else None
    if runs is None and fmt == "text":
        return _text(backend, dataset, run, verifier)
    if runs is not None:
        from setanon_sql.report.tradeoff import tradeoff_data

        content = tradeoff_data(backend, dataset, runs, verifier)
    else:
        content = build_report(backend, dataset, run, verifier)
    if fmt == "json":
        return json.dumps(_json_view(content), indent=2, default=str)
    if fmt == "html":
        if runs is not None:
            from setanon_sql.report.tradeoff_page import tradeoff_page

            return tradeoff_page(content)
        from setanon_sql.report.run_page import run_page

        return run_page(content)
    return _tradeoff_text(content)


def _tradeoff_text(tradeoff: dict[str, Any]) -> str:
    lines = [f"trade-off of {tradeoff['dataset']['name']} over runs "
             + ", ".join(str(r["run_id"]) for r in tradeoff["runs"])]
    for run in tradeoff["runs"]:
        lines.append(f"  run {run['run_id']} ({run['model']}) {run['params']}: "
                     f"verification {run['verification']['status']}")
        lines += [f"    {name}: {value:.6g}" for name, value in sorted(run["metrics"].items())]
    return "\n".join(lines)


def report_command(db_options: Callable[[Callable[..., Any]], Callable[..., Any]]
                   ) -> click.Command:
    """The ``report`` command, wrapped in the CLI's database options."""

    @click.command("report")
    @click.argument("name")
    @click.option("--run", "run", default=None,
                  help="run id or 'latest' (default: the data as loaded)")
    @click.option("--runs", default=None,
                  help="several run ids, e.g. 3,4,5: a trade-off page across them")
    @click.option("--format", "fmt", default=None, type=click.Choice(FORMATS),
                  help="text (default), json, or html (the default for -o *.html)")
    @click.option("-o", "--output", default=None, help="write to this file instead of the terminal")
    @click.option("--verify/--no-verify", default=False, show_default=True,
                  help="check the run's guarantee again (default: the outcome recorded when "
                       "the run was verified); only a run that passed is reported")
    @db_options
    def report(db: Backend, name: str, run: str | None, runs: str | None, fmt: str | None,
               output: str | None, verify: bool) -> None:
        """Report on a dataset or a run: summary, figures, verification and plots.

        \b
        Example:
          setanon report bms2
          setanon report bms2 --run latest -o report.html
          setanon report bms2 --runs 3,4,5,6 -o tradeoff.html
          setanon report bms2 --format json -o bms2.json
        """
        if run is not None and runs is not None:
            raise UsageError("give either --run (one run) or --runs (a trade-off), not both")
        dataset = get_dataset(db, name)
        found = get_run(db, dataset, run) if run else None
        several = [get_run(db, dataset, i) for i in parse_run_ids(runs)] if runs else None
        from setanon_sql.progress_display import command_progress

        with command_progress(f"reporting on {name}"):
            text = render_report(db, dataset, found, several, choose_format(fmt, output),
                                 verify)
        if output:
            Path(output).write_text(text if text.endswith("\n") else text + "\n",
                                    encoding="utf-8")
            click.echo(f"wrote {output}")
        else:
            click.echo(text)

    return report
