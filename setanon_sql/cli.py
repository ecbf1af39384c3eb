"""The ``setanon`` command: parses arguments, calls the API, prints. No logic of its own.

Exit codes (see :mod:`setanon_sql.errors` and the README): 0 ok, 1 guarantee not met or output
not publishable, 2 usage or input error, 3 database error, 4 verification inconclusive,
130 interrupted. Every error is one line on stderr, never a traceback.
"""

from __future__ import annotations

import inspect
import json
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from types import FrameType
from typing import Any

import click

from setanon_sql import __version__, api
from setanon_sql.backends import DEFAULT_SCHEMA, DEFAULT_URL, Backend, retry_while_locked
from setanon_sql.errors import (
    DatabaseError,
    InterruptedRunError,
    NotFoundError,
    SetanonError,
    as_database_error,
    is_driver_error,
)
from setanon_sql.io.table import split_columns
from setanon_sql.models import describe_models, model_params, require_model
from setanon_sql.report.command import report_command
from setanon_sql.runs import forget_progress, last_progress, run_processes

_DB_HELP = f"database URL (default: $SETANON_DB, else {DEFAULT_URL})"
_WAIT_OPTION = click.option(
    "--wait", type=click.FloatRange(min=0), default=0.0, show_default=True, metavar="SECONDS",
    help="when another run holds the dataset: wait this long for it, then give up")


def _err(message: str) -> None:
    click.echo(f"setanon: error: {message}", err=True)


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    from setanon_sql.progress_display import QUIET_KEY

    if value:
        ctx.meta[QUIET_KEY] = True


# Accepted before the command (setanon --quiet anonymize ...) and after it; ctx.meta is shared
# by the whole chain of contexts.
_QUIET_OPTION = click.option(
    "-q", "--quiet", is_flag=True, expose_value=False, is_eager=True, callback=_set_quiet,
    help="no progress display on stderr (it is also off when stderr is not a terminal)")


_JSON_OPTION = click.option(
    "--json", "as_json", is_flag=True,
    help="print the result as one JSON document on stdout (for scripts); messages stay on stderr")


def _emit_json(document: Any) -> None:
    """The result of a command for a script: one JSON document, nothing else on stdout."""
    click.echo(json.dumps(document, indent=2, default=str))


@contextmanager
def _status(message: str) -> Iterator[None]:
    """The progress display (phase, bar, elapsed and time left) on a terminal, unless --quiet;
    nothing in logs, pipes or CI."""
    from setanon_sql.progress_display import command_progress

    with command_progress(message):
        yield


def _with_database(func: Callable[..., Any], create: bool) -> Callable[..., Any]:
    """Add --db and --schema, open the database, and pass it as ``db``.

    ``create``: the command makes data, so a DuckDB file that does not exist is created (and
    removed again if the command fails); the other commands refuse a missing file instead of
    leaving an empty one behind.
    """

    @click.option("--schema", default=DEFAULT_SCHEMA, show_default=True,
                  help="schema of setanon's own tables")
    @click.option("--db", "url", default=None, help=_DB_HELP)
    @wraps(func)
    def wrapper(url: str | None, schema: str, **kwargs: Any) -> Any:
        # --wait also covers DuckDB's file lock, taken when the database is opened.
        wait = float(kwargs.get("wait") or 0.0)
        db = retry_while_locked(lambda: api.open_database(url, schema, create=create), wait)
        try:
            with db:
                return func(db=db, **kwargs)
        except BaseException:
            db.discard_created()
            raise

    return wrapper


def db_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--db and --schema for a command that works on data already loaded."""
    return _with_database(func, create=False)


def creating_db_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--db and --schema for a command that makes data (init, load, generate)."""
    return _with_database(func, create=True)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM ends a command the way Ctrl-C does: the run is marked interrupted."""
    raise KeyboardInterrupt


def _watch_signals(reader: socket.socket) -> None:
    """Interrupt DuckDB's running statement when SIGINT or SIGTERM arrives.

    Python runs signal handlers in the main thread only between bytecodes, and DuckDB's C++
    code runs a statement to its end first; this thread, woken by the signal's byte on the
    wakeup fd, interrupts the statement so that the handler runs at once.
    """
    with reader:
        while data := reader.recv(64):
            if {signal.SIGINT, signal.SIGTERM} & set(data):
                duckdb_backend = sys.modules.get("setanon_sql.backends.duckdb")
                if duckdb_backend is not None:
                    duckdb_backend.interrupt_all()


@contextmanager
def interrupt_handling() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt and both signals stop a DuckDB statement, for the
    duration of one command (restored after, so an embedding program keeps its own). Public
    for programs that call the API and should stop the same way (the benchmarks' cells)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    threading.Thread(target=_watch_signals, args=(reader,), daemon=True).start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGTERM, previous)
        writer.close()  # the watcher reads EOF and ends


def _interrupted_line() -> str:
    """The one line Ctrl-C prints: which run, and what became of it."""
    progress = last_progress()
    if progress is None:
        return "interrupted"
    run = f"run {progress.run_id}"
    if progress.interrupted:
        return f"interrupted: {run} marked interrupted, nothing published"
    if progress.phase == "verify":
        return f"interrupted: {run} stopped while being verified; it stays unverified, " \
               "nothing published"
    if progress.phase == "apply":
        return (f"interrupted: {run} stopped while being applied in place; the transaction "
                "was rolled back ('setanon runs' shows the run)")
    return f"interrupted: {run} stopped (phase {progress.phase}); 'setanon runs' shows the run"


def _message(error: SetanonError) -> str:
    if isinstance(error, DatabaseError) and error.sqlstate:
        return f"{error} (SQLSTATE {error.sqlstate})"
    return str(error)


def _command_summary(command: click.Command) -> str:
    """A command's summary in its group's list: its ``short_help``, else the whole first
    paragraph of its help. Click would cut that at 45 characters (or the terminal's width)
    with "...", which leaves a new user guessing what the command does."""
    if command.short_help:
        return " ".join(command.short_help.split())
    first = inspect.cleandoc(command.help or "").split("\n\n")[0]
    return " ".join(first.replace("\b", "").split())


class _Group(click.Group):
    """Turn every error into one line on stderr and its exit code; Ctrl-C and SIGTERM into
    exit code 130 (the top group does it; nested groups pass errors up to it). List
    subcommands with their whole summaries (wrapped, never cut)."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, _command_summary(command)) for name in self.list_commands(ctx)
                if (command := self.get_command(ctx, name)) is not None and not command.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        if ctx.parent is not None:
            return super().invoke(ctx)
        forget_progress()
        try:
            with interrupt_handling():
                return super().invoke(ctx)
        except (KeyboardInterrupt, InterruptedRunError):
            click.echo(_interrupted_line(), err=True)
            ctx.exit(InterruptedRunError.exit_code)
        except SetanonError as error:
            _err(_message(error))
            ctx.exit(error.exit_code)
        except Exception as error:
            if not is_driver_error(error):
                raise
            wrapped = as_database_error(error)
            _err(_message(wrapped))
            ctx.exit(wrapped.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="setanon")
@_QUIET_OPTION
def main() -> None:
    """setanon: anonymize set-valued and complex data inside DuckDB or PostgreSQL.

    \b
    Example:
      setanon demo
      setanon load transactions baskets.dat --name baskets
      setanon export baskets --format fimi -o out.dat
    """


@main.command()
@creating_db_options
def init(db: Backend) -> None:
    """Create or upgrade setanon's schema (idempotent; other commands do it implicitly).

    \b
    Example:
      setanon init --db postgresql://me:secret@localhost:5432/shop
    """
    click.echo(f"setanon schema {db.schema!r} is up to date in {db.describe()}")


@main.group(cls=_Group)
def load() -> None:
    """Load transactions, a table of complex data, or a hierarchy.

    \b
    Example:
      setanon load transactions baskets.dat --name baskets
      setanon load table admissions.tsv --name adm --id hadm_id --set-column icd9_codes
      setanon load hierarchy hierarchy.txt --name adm --column icd9_codes
    """


@load.command("transactions")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, readable=True))
@click.option("--name", required=True, help="dataset name")
@click.option("--format", "fmt", default="auto", show_default=True,
              type=click.Choice(["auto", "fimi", "spmf", "labels"]),
              help="fimi: integer items; spmf: with -1/-2 separators; labels: any text items")
@click.option("--replace", is_flag=True, help="replace an existing dataset of that name")
@_QUIET_OPTION
@creating_db_options
def load_transactions(db: Backend, file: str, name: str, fmt: str, replace: bool) -> None:
    """Load a transaction file: one record per line, items separated by blanks.

    \b
    Example:
      setanon load transactions BMS2.dat --name bms2
    """
    with _status(f"loading {file} into {db.name}"):
        dataset = api.load_transactions(db, file, name, fmt, replace)
    attribute = dataset.set_attributes[0]
    click.echo(f"loaded {dataset.name}: {dataset.n_records:,} records, "
               f"{attribute.n_distinct:,} distinct items")
    _say_duplicates(dataset)


def _say_duplicates(dataset: api.Dataset) -> None:
    """What the loader changed: items a record named twice count once (a record is a set)."""
    for column, count in sorted((dataset.options.get("duplicate_items") or {}).items()):
        if count:
            click.echo(f"  {count:,} duplicate item(s) within a record in column {column!r} "
                       "counted once (a record is a set of items)")


@load.command("table")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, readable=True))
@click.option("--name", required=True, help="dataset name")
@click.option("--id", "id_column", required=True, help="column with the record id")
@click.option("--set-column", "set_columns", multiple=True, required=True,
              help="set-valued column (repeat for several)")
@click.option("--item-separator", default=" ", show_default="space",
              help="separator of items inside a set-valued cell")
@click.option("--qi", multiple=True, help="single-valued quasi-identifiers (default: all others)")
@click.option("--ignore", multiple=True, help="columns kept but not quasi-identifiers")
@click.option("--delimiter", default=None,
              help="field delimiter, e.g. ';' or tab (default: tab for a .tsv or .tab file or a "
                   "header line with tabs, else comma)")
@click.option("--replace", is_flag=True, help="replace an existing dataset of that name")
@_QUIET_OPTION
@creating_db_options
def load_table(db: Backend, file: str, name: str, id_column: str, set_columns: tuple[str, ...],
               item_separator: str, qi: tuple[str, ...], ignore: tuple[str, ...],
               delimiter: str | None, replace: bool) -> None:
    """Load CSV/TSV complex data: single-valued quasi-identifiers plus set-valued columns.

    \b
    Example:
      setanon load table admissions.tsv --name adm --id hadm_id --set-column icd9_codes
    """
    with _status(f"loading {file} into {db.name}"):
        dataset = api.load_table(db, file, name, id_column, split_columns(set_columns),
                                 item_separator, split_columns(qi) or None,
                                 split_columns(ignore), delimiter, replace)
    click.echo(f"loaded {dataset.name}: {dataset.n_records:,} records; columns: "
               + ", ".join(f"{a.name} ({a.role})" for a in dataset.attributes))
    _say_duplicates(dataset)


@load.command("hierarchy")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, readable=True))
@click.option("--name", required=True, help="dataset the hierarchy belongs to")
@click.option("--column", default=None, help="column it generalizes (default: the set column)")
@click.option("--separator", default=";", show_default="semicolon",
              help="separator of a line's labels")
@click.option("--replace", is_flag=True, help="replace the column's existing hierarchy")
@_QUIET_OPTION
@creating_db_options
def load_hierarchy(db: Backend, file: str, name: str, column: str | None, separator: str,
                   replace: bool) -> None:
    """Load an ARX-style hierarchy: lines 'leaf;parent;...;root'.

    \b
    Example:
      setanon load hierarchy hierarchy_BMS2.txt --name bms2
    """
    dataset = api.get_dataset(db, name)
    with _status(f"loading {file} into {db.name}"):
        hierarchy = api.load_hierarchy(db, file, dataset, column, separator, replace)
    click.echo(f"loaded hierarchy {hierarchy.name}: {hierarchy.n_leaves:,} leaves, "
               f"height {hierarchy.height}")


@main.command()
@click.option("--name", required=True, help="dataset name")
@click.option("--table", required=True, help="SCHEMA.TABLE of (record, item) rows")
@click.option("--record-column", required=True, help="column of --table with the record id")
@click.option("--item-column", required=True, help="column of --table with the item")
@click.option("--records-table", default=None,
              help="SCHEMA.TABLE with one row per record and its single-valued columns")
@click.option("--qi", multiple=True, help="columns of --records-table that are QIs (default all)")
@click.option("--replace", is_flag=True, help="replace an existing dataset of that name")
@_QUIET_OPTION
@db_options
def attach(db: Backend, name: str, table: str, record_column: str, item_column: str,
           records_table: str | None, qi: tuple[str, ...], replace: bool) -> None:
    """Register record-item tables that already exist in the database (nothing leaves it).

    \b
    Example:
      setanon attach --name shop --table public.purchases --record-column customer_id \\
          --item-column product_id --db postgresql://me@localhost/shop
    """
    with _status(f"attaching {table}"):
        dataset = api.attach(db, name, table, record_column, item_column, records_table,
                             split_columns(qi) or None, replace)
    click.echo(f"attached {dataset.name}: {dataset.n_records:,} records, "
               f"{dataset.set_attributes[0].n_distinct:,} distinct items")


@main.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("name")
@click.option("--model", required=True, help="km | rho | prho | kanon | swap (see setanon models)")
@click.option("--seed", type=int, default=None,
              help="makes the run reproducible (default: a random seed, recorded with the run)")
@click.option("--in-place", "in_place", is_flag=True,
              help="then write the result into the attached tables (one transaction; undo)")
@click.option("--dry-run", "dry_run", is_flag=True,
              help="with --in-place: print what would change in the tables, write nothing")
@click.option("--no-verify", "no_verify", is_flag=True,
              help="skip the verification after the run; the run cannot be exported, applied "
                   "or reported until 'setanon verify' passes")
@_WAIT_OPTION
@_QUIET_OPTION
@_JSON_OPTION
@db_options
@click.pass_context
def anonymize(ctx: click.Context, db: Backend, name: str, model: str, seed: int | None,
              in_place: bool, dry_run: bool, no_verify: bool, wait: float,
              as_json: bool) -> None:
    """Anonymize a dataset with a privacy model; prints the run id.

    The model's own options follow --model; 'setanon models' lists them. The finished run is
    verified from the original data and its output; only a run that passed can be exported,
    applied or reported (exit code 1 if it failed, 4 if a sampled check was inconclusive). With
    --in-place
    (attached datasets) the result replaces the rows of the user's tables in one transaction;
    'setanon undo RUN' restores them.

    \b
    Example:
      setanon anonymize bms2 --model km --k 5 --m 2 --seed 1
      setanon anonymize shop --model rho --rho 0.5 --sensitive-fraction 0.1 --in-place --dry-run
    """
    from setanon_sql.inplace.text import format_applied, format_preview

    dataset = api.get_dataset(db, name)
    chosen = require_model(model)
    params = model_params(chosen, ctx.args)
    with _status(f"anonymizing {name} with {model}"):
        run_id = api.anonymize(db, dataset, chosen, params, seed, in_place, dry_run, wait,
                               check=not no_verify)
    done = api.get_run(db, dataset, run_id)
    if as_json:
        _emit_json({
            **_run_document(done, name),
            "covered": (done.verification_detail or {}).get("covered"),
            "dry_run": api.preview_in_place(db, dataset, done) if dry_run else None,
            "in_place": api.in_place_figures(db, run_id) if in_place and not dry_run else None})
        return
    click.echo(run_id)
    if done.verification is None:
        click.echo(f"run {run_id} was not verified (--no-verify): 'setanon verify {name} "
                   f"--run {run_id}' before exporting it", err=True)
    else:
        covered = (done.verification_detail or {}).get("covered", "")
        click.echo(f"run {run_id} verification {done.verification}: {covered}", err=True)
    if dry_run:
        click.echo(format_preview(api.preview_in_place(db, dataset, done)))
    elif in_place:
        click.echo(format_applied(run_id, api.in_place_figures(db, run_id)))


@main.command()
@click.argument("name")
@click.option("--run", "run", default="latest", show_default=True, help="run id or 'latest'")
@_QUIET_OPTION
@_JSON_OPTION
@db_options
def verify(db: Backend, name: str, run: str, as_json: bool) -> None:
    """Check a run's output against its privacy guarantee (exit code 1 if it is not met).

    \b
    Example:
      setanon verify bms2 --run latest
    """
    dataset = api.get_dataset(db, name)
    found = api.get_run(db, dataset, run)
    with _status(f"verifying run {found.run_id} of {name}"):
        result = api.verify(db, dataset, found)
    if as_json:
        _emit_json({**_run_document(found, name), "verification": result.outcome,
                    "covered": result.covered, "details": result.details})
    else:
        verdict = {"passed": "guarantee met", "failed": "GUARANTEE NOT MET",
                   "inconclusive": "INCONCLUSIVE (a sampled check could not decide)"
                   }[result.outcome]
        click.echo(f"run {found.run_id} ({found.model}): {verdict}; checked {result.covered}")
        for key, value in result.details.items():
            click.echo(f"  {key}: {value}")
    if result.outcome != "passed":
        raise api.verification_error(dataset, found, result)


@main.command()
@click.argument("name")
@click.option("--run", "run", default=None, help="run id or 'latest' (default: data as loaded)")
@click.option("--format", "fmt", default="fimi", type=click.Choice(["fimi", "csv", "tsv"]),
              show_default=True,
              help="fimi: one record's items per line; csv/tsv: a table with a header")
@click.option("-o", "--output", required=True, help="output file")
@click.option("--column", default=None, help="set-valued column to write as FIMI")
@click.option("--mapping", default=None, help="also write item<TAB>label of a generalization")
@_QUIET_OPTION
@_JSON_OPTION
@db_options
def export(db: Backend, name: str, run: str | None, fmt: str, output: str, column: str | None,
           mapping: str | None, as_json: bool) -> None:
    """Export a dataset (as loaded, or as published by a run) to FIMI, CSV or TSV.

    A run is exported only when it finished and passed verification; otherwise nothing is
    written (exit code 1). Without --run the raw data as loaded is written, and said so.

    \b
    Example:
      setanon export bms2 --run latest --format fimi -o bms2_anon.dat
    """
    dataset = api.get_dataset(db, name)
    found = api.get_run(db, dataset, run) if run else None
    with _status(f"exporting {name}"):
        target = api.export_dataset(db, dataset, output, fmt, found, column, mapping)
    if as_json:
        _emit_json({"file": str(target), "format": fmt, "mapping": mapping, "raw": found is None,
                    "run": None if found is None else _run_document(found, name)})
    elif found is None:
        click.echo(f"wrote {target}: the RAW data of {name!r} as loaded, NOT anonymized "
                   "(pass --run to export a run's output)")
    else:
        click.echo(f"wrote {target}: run {found.run_id} of {name!r}, model {found.model} "
                   f"({_cli_params(found.params)}), seed {found.seed}, verification "
                   f"{found.verification}")


@main.command()
@click.argument("name", required=False)
@click.option("--cleanup", is_flag=True,
              help="drop the tables (and DuckDB spill) of runs that did not finish")
@_JSON_OPTION
@db_options
def runs(db: Backend, name: str | None, cleanup: bool, as_json: bool) -> None:
    """List runs (of one dataset, or all); --cleanup removes what killed runs left.

    A run whose process died (killed, crashed) is shown as abandoned; its tables are removed by
    the next run on its dataset or by --cleanup.

    \b
    Example:
      setanon runs bms2
    """
    if name:
        api.get_dataset(db, name)
    cleaned = api.cleanup_runs(db) if cleanup else None
    if cleaned is not None and not as_json:
        click.echo(f"cleaned up {len(cleaned)} run(s) that did not finish: {cleaned}")
    rows = api.list_runs(db, name)
    if as_json:
        processes = run_processes(db)
        _emit_json({"cleaned_up": cleaned, "runs": [
            {**row, "status": _STATUS.get(row["status"], row["status"]),
             "options": _cli_params(row["params"]), "process": processes.get(row["run_id"])}
            for row in rows]})
        return
    if not rows:
        click.echo("no runs yet")
        return
    processes = run_processes(db)
    click.echo(f"{'run':>5}  {'dataset':<20} {'model':<6} {'status':<11} {'verified':<12} "
               f"{'in place':<9} {'seconds':>8}  parameters")
    for row in rows:
        seconds = f"{row['seconds']:.1f}" if row["seconds"] is not None else "-"
        # Who ran a run that did not end normally: to find (or kill) it, or know it is gone.
        who = (f" ({processes.get(row['run_id'], '')})"
               if row["status"] in ("running", "abandoned", "interrupted") else "")
        verified = _VERIFIED.get(row["verification"] or "", "no")
        click.echo(f"{row['run_id']:>5}  {row['dataset']:<20} {row['model']:<6} "
                   f"{_STATUS.get(row['status'], row['status']):<11} {verified:<12} "
                   f"{row['in_place'] or '-':<9} {seconds:>8}  "
                   f"{_cli_params(row['params'])} --seed {row['seed']}{who}")


_STATUS = {"done": "finished"}
_VERIFIED = {"passed": "yes", "failed": "FAILED", "inconclusive": "inconclusive"}


def _run_document(run: api.Run, dataset: str) -> dict[str, Any]:
    """A run for --json output: who it is, what it was asked and how its check went."""
    return {"run_id": run.run_id, "dataset": dataset, "model": run.model, "params": run.params,
            "options": _cli_params(run.params), "seed": run.seed,
            "verification": run.verification}


def _cli_params(params: dict[str, Any]) -> str:
    """A run's parameters as the options that give them ('--k 5 --m 2 --no-metrics'); a
    parameter nobody set (None, or an empty list such as kanon's --qi) is left out."""
    parts = []
    for key, value in sorted(params.items()):
        option = "--" + key.replace("_", "-")
        if value is None or (isinstance(value, list | tuple) and not value):
            continue
        if value is True:
            parts.append(option)
        elif value is False:
            parts.append("--no-" + key.replace("_", "-"))
        elif isinstance(value, list | tuple):
            parts.append(f"{option} {','.join(map(str, value))}")
        else:
            parts.append(f"{option} {value}")
    return " ".join(parts)


@main.command()
@_JSON_OPTION
@db_options
def datasets(db: Backend, as_json: bool) -> None:
    """List the datasets in the database.

    \b
    Example:
      setanon datasets --db duckdb:///claims.duckdb
    """
    rows = db.query("dataset_list", tables=db.catalog_tables("datasets"))
    if as_json:
        _emit_json([{"id": int(dataset_id), "name": name, "kind": kind, "source": source,
                     "records": int(n_records)}
                    for dataset_id, name, kind, source, n_records in rows])
        return
    if not rows:
        click.echo("no datasets yet; load one with 'setanon load transactions FILE --name NAME'")
    for dataset_id, name, kind, source, n_records in rows:
        click.echo(f"{dataset_id:>4}  {name:<20} {kind:<12} {n_records:>12,}  {source}")


@main.command()
@click.argument("name")
@click.option("--force", is_flag=True,
              help="also when a run was applied in place (its undo backup is dropped too)")
@db_options
def drop(db: Backend, name: str, force: bool) -> None:
    """Remove a dataset, its runs and its tables from setanon's schema (not the user's tables).

    \b
    Example:
      setanon drop bms2
    """
    api.drop_dataset(db, api.get_dataset(db, name), force)
    click.echo(f"dropped {name}")


@main.command()
@click.argument("name")
@click.option("--m", "m", type=int, default=3, show_default=True,
              help="largest itemset size an adversary knows")
@click.option("--epsilon", type=float, default=0.01, show_default=True,
              help="each share is within +- epsilon ...")
@click.option("--delta", type=float, default=0.01, show_default=True,
              help="... with confidence 1 - delta")
@click.option("--column", default=None, help="set-valued column (default: the only one)")
@click.option("--seed", type=int, default=0, show_default=True, help="seed of the samples")
@click.option("--max-items-per-record", "max_items", type=click.IntRange(min=1), default=None,
              help="leave records longer than this many items out of the estimate (said in the "
                   "output) [default: every record]")
@_QUIET_OPTION
@_JSON_OPTION
@db_options
def risk(db: Backend, name: str, m: int, epsilon: float, delta: float, column: str | None,
         seed: int, max_items: int | None, as_json: bool) -> None:
    """Estimate how identifying a dataset's itemsets are, before choosing k and m.

    Prints, for each size l <= m, the share of the data's l-itemsets held by one record only
    (unicity), from uniform samples drawn in the database.

    \b
    Example:
      setanon risk bms2 --m 3
    """
    dataset = api.get_dataset(db, name)
    with _status(f"sampling itemsets of {name}"):
        found = api.estimate_unicity(db, dataset, m, seed, epsilon, delta, column, max_items)
    if as_json:
        _emit_json({"dataset": name, "m": m, "epsilon": epsilon, "delta": delta, "seed": seed,
                    "max_items_per_record": max_items, "sizes": found})
        return
    click.echo(f"unicity of {name} (share of l-itemsets held by one record; "
               f"+-{epsilon:g} with confidence {1 - delta:g}):")
    if found and found[0]["records_left_out"]:
        click.echo(f"  {found[0]['records_left_out']:,} record(s) longer than {max_items:,} items "
                   "are left out of this estimate")
    for row in found:
        share = "no itemsets" if row["unique_share"] is None else f"{row['unique_share']:.4f}"
        click.echo(f"  l = {row['size']}: {share}  ({row['samples']:,} samples)")


@main.command("apply")
@click.argument("name")
@click.option("--run", "run", default="latest", show_default=True, help="run id or 'latest'")
@click.option("--dry-run", "dry_run", is_flag=True,
              help="print what would change in the tables, write nothing")
@_WAIT_OPTION
@_QUIET_OPTION
@db_options
def apply_run(db: Backend, name: str, run: str, dry_run: bool, wait: float) -> None:
    """Write a finished run into the attached tables (one transaction; 'setanon undo' reverts).

    For a run made without --in-place, e.g. after looking at its report.

    \b
    Example:
      setanon apply shop --run 3 --dry-run
      setanon apply shop --run 3
    """
    from setanon_sql.inplace.text import format_applied, format_preview

    dataset = api.get_dataset(db, name)
    found = api.get_run(db, dataset, run)
    if dry_run:
        click.echo(format_preview(api.preview_in_place(db, dataset, found)))
        return
    with _status(f"applying run {found.run_id} to the tables of {name}"):
        figures = api.apply_in_place(db, dataset, found, wait)
    click.echo(format_applied(found.run_id, figures))


@main.command()
@click.argument("run_id", type=int)
@_WAIT_OPTION
@db_options
def undo(db: Backend, run_id: int, wait: float) -> None:
    """Restore the rows an in-place run changed in the user's tables.

    \b
    Example:
      setanon undo 7
    """
    if db.scalar("run_by_id_any_dataset", {"run_id": run_id},
                 db.catalog_tables("runs", "datasets")) is None:
        raise NotFoundError(f"there is no run {run_id}; 'setanon runs' lists the runs")
    result = api.undo_in_place(db, run_id, wait)
    click.echo(f"undid run {run_id}: the user's tables hold their original rows again "
               f"({result['rows_reverted']:,} rows reverted, deleted rows re-inserted)")


@main.command()
@click.option("--workdir", default="setanon-demo", show_default=True,
              help="directory for the demo's exports")
@click.option("--db", "url", default=None,
              help="database URL (default: $SETANON_DB, else duckdb:///setanon-demo.duckdb)")
@click.option("--schema", default=DEFAULT_SCHEMA, show_default=True,
              help="schema of setanon's own tables")
def demo(workdir: str, url: str | None, schema: str) -> None:
    """Run the main job on the demo data the package ships (DuckDB file by default).

    \b
    Example:
      setanon demo
      setanon demo --db postgresql://setanon:setanon@127.0.0.1:5432/setanon
    """
    from setanon_sql.demo import run_demo

    url = url or os.environ.get("SETANON_DB") or "duckdb:///setanon-demo.duckdb"
    with api.open_database(url, schema) as db:
        run_demo(db, Path(workdir), click.echo)


@main.group(cls=_Group)
def generate() -> None:
    """Generate synthetic datasets inside the DBMS (for benchmarks at any scale).

    \b
    Example:
      setanon generate claims --records 100000 --seed 1
      setanon generate quest --records 100000 --seed 1
    """


@generate.command("claims")
@click.option("--name", default="claims", show_default=True, help="dataset name")
@click.option("--records", type=click.IntRange(min=1), required=True, help="number of claims")
@click.option("--seed", type=int, default=1, show_default=True,
              help="the same seed generates the same claims")
@click.option("--replace", is_flag=True, help="replace an existing dataset of that name")
@_QUIET_OPTION
@creating_db_options
def generate_claims(db: Backend, name: str, records: int, seed: int, replace: bool) -> None:
    """Synthetic medical claims shaped like the NEC paper's data, generated by SQL.

    \b
    Example:
      setanon generate claims --records 1000000 --seed 1
    """
    from setanon_sql.models.kanon.generate import generate_claims as generate_in_db

    db.require_command("generate claims")
    with _status(f"generating {records:,} claims"):
        dataset = generate_in_db(db, name, records, seed, replace)
    click.echo(f"generated {dataset.name}: {dataset.n_records:,} claims")
    from setanon_sql.synth.shape import format_shape, shape

    click.echo(format_shape(shape(db, dataset, ["birth_year", "sex", "month"])))


@generate.command("quest")
@click.option("--name", default="quest", show_default=True, help="dataset name")
@click.option("--records", type=click.IntRange(min=1), required=True,
              help="number of transactions (Quest's D)")
@click.option("--avg-length", type=float, default=10.0, show_default=True,
              help="mean transaction length (Quest's T)")
@click.option("--avg-pattern", type=float, default=4.0, show_default=True,
              help="mean size of a potentially frequent pattern (Quest's I)")
@click.option("--patterns", type=int, default=2000, show_default=True,
              help="number of potentially frequent patterns (Quest's L)")
@click.option("--items", type=int, default=1000, show_default=True,
              help="number of distinct items (Quest's N)")
@click.option("--seed", type=int, default=1, show_default=True,
              help="the same seed generates the same transactions")
@click.option("--replace", is_flag=True, help="replace an existing dataset of that name")
@_QUIET_OPTION
@creating_db_options
def generate_quest(db: Backend, name: str, records: int, avg_length: float, avg_pattern: float,
                   patterns: int, items: int, seed: int, replace: bool) -> None:
    """Market-basket transactions in the style of IBM Quest (Agrawal & Srikant 1994),
    generated by SQL.

    \b
    Example:
      setanon generate quest --records 1000000 --avg-length 10 --avg-pattern 4 --seed 1
    """
    from setanon_sql.synth.quest import QuestParams
    from setanon_sql.synth.quest import generate_quest as generate_in_db

    db.require_command("generate quest")
    params = QuestParams(records, avg_length, avg_pattern, patterns, items)
    with _status(f"generating {records:,} transactions ({params.name()})"):
        dataset = generate_in_db(db, name, params, seed, replace)
    click.echo(f"generated {dataset.name}: {dataset.n_records:,} transactions ({params.name()}, "
               f"{patterns:,} patterns over {items:,} items)")
    from setanon_sql.synth.shape import format_shape, shape

    click.echo(format_shape(shape(db, dataset)))


@main.command("models")
def models_command() -> None:
    """List the privacy models, which are available, and their options.

    \b
    Example:
      setanon models
    """
    from setanon_sql.models import MODELS

    click.echo(describe_models())
    for info in MODELS.values():
        if info.implemented:
            model = require_model(info.name)
            click.echo(f"\noptions of --model {info.name}:")
            for option in model.options:
                click.echo(f"  {', '.join(option.opts):<24} {option.help or ''}")


main.add_command(report_command(db_options))
