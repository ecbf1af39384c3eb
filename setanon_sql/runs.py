"""The life of a run: recorded before work starts, finished, failed, interrupted or abandoned.

A model runs inside :func:`recorded_run`; it creates its tables through ``RunContext.table`` and
puts its figures in ``RunContext.figures``. A run that raises is marked failed (Ctrl-C or
SIGTERM: interrupted) and its tables are dropped, so it never leaves half-published data
behind. A run whose process died (SIGKILL, power loss) cannot mark itself: the next process
sees it as abandoned (:func:`mark_abandoned`), and the next run on its dataset or
``setanon runs --cleanup`` removes its tables and DuckDB spill (:func:`cleanup_runs`).

Whether a 'running' run's process lives is decided by locks, never by a clock: on PostgreSQL the
run holds a session-level advisory lock, which the server frees when the process dies; DuckDB's
file lock admits one process, so a 'running' run the opening process did not start is dead.
The pid and host recorded with the run name it in messages; they are not trusted for liveness
on a server (two containers may share a hostname and a pid).
"""

from __future__ import annotations

import json
import os
import socket
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from setanon_sql import __version__
from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset
from setanon_sql.errors import ConnectionFailedError, InterruptedRunError, SetanonError
from setanon_sql.failpoints import pause_if_asked
from setanon_sql.names import run_table
from setanon_sql.progress import report

_LOCK_POLL_SECONDS = 0.2
_INTERRUPTS = (KeyboardInterrupt, InterruptedRunError)


@dataclass
class Progress:
    """What this process did last with a run, for the one line Ctrl-C prints (see the CLI)."""

    run_id: int
    phase: str | None = None
    interrupted: bool = False  # recorded_run marked it 'interrupted'


# Module-level on purpose: a signal ends the command anywhere, and the CLI's handler must be able
# to name the run without a connection. One process runs one command at a time.
_progress: Progress | None = None
# Runs this process is running now, by (database, schema, run id): alive whatever locks say (a
# PostgreSQL session's own advisory locks are re-entrant, so it cannot test them on itself).
_live: set[tuple[str, str, int]] = set()


def last_progress() -> Progress | None:
    """The run this process last started or advanced, if any."""
    return _progress


def forget_progress() -> None:
    """Start a new command with no run in progress."""
    global _progress
    _progress = None


@dataclass
class RunContext:
    """What a model sees of its run: its id, its tables and the figures it reports."""

    backend: Backend
    dataset: Dataset
    run_id: int
    seed: int | None
    figures: dict[str, Any] = field(default_factory=dict)

    def table(self, purpose: str) -> exp.Table:
        """A table of this run (dropped if the run fails)."""
        return self.backend.table(run_table(self.run_id, purpose))

    def set_phase(self, phase: str) -> None:
        """Record where the run is ('search', 'publish', 'verify', 'apply'), for ``runs``."""
        set_phase(self.backend, self.run_id, phase)


def set_phase(backend: Backend, run_id: int, phase: str) -> None:
    """Record the phase of run ``run_id`` in the catalog (committed at once), with a heartbeat."""
    global _progress
    tables = backend.catalog_tables("runs")
    backend.run("run_set_phase", {"run_id": run_id, "phase": phase}, tables)
    backend.run("lifecycle_heartbeat", {"run_id": run_id}, tables)
    if _progress is None or _progress.run_id != run_id:
        _progress = Progress(run_id)
    _progress.phase = phase
    report(phase)
    pause_if_asked(phase)


def _drop_run_tables(backend: Backend, run_id: int, names: list[str] | None = None) -> None:
    prefix = run_table(run_id, "x")[:-1]
    if names is None:
        names = backend.table_names(prefix)
    for name in names:
        if name.startswith(prefix):
            backend.drop_table(backend.table(name))


def _signed(value: int) -> int:
    return value - (1 << 32) if value >= 1 << 31 else value


def _lock_key(backend: Backend, dataset_id: int) -> tuple[int, int]:
    """The advisory-lock key of a dataset: (schema hash as a signed int4, dataset id)."""
    return (_signed(zlib.crc32(backend.schema.encode("utf-8"))), dataset_id)


def _run_lock_key(backend: Backend, run_id: int) -> tuple[int, int]:
    """The advisory-lock key a run holds while its process lives (another space than datasets')."""
    return (_signed(zlib.crc32(f"{backend.schema}/run".encode())), run_id)


def _live_key(backend: Backend, run_id: int) -> tuple[str, str, int]:
    return (backend.describe(), backend.schema, run_id)


def _finish(backend: Backend, run_id: int, status: str, started: float, message: str) -> None:
    """Mark a run that ended without finishing, then drop its tables.

    Marked first: if dropping is stopped too (a second Ctrl-C), the run is already not
    'running', and cleanup finds its tables by its status. A database that fails here (the
    connection is gone) leaves the run 'running'; the next process sees it as abandoned.
    """
    try:
        backend.run("run_finish", {
            "run_id": run_id, "status": status, "seconds": time.perf_counter() - started,
            "figures": None, "message": message[:2000],
        }, backend.catalog_tables("runs"))
        _drop_run_tables(backend, run_id)
    except SetanonError:
        pass


@contextmanager
def recorded_run(
    backend: Backend, dataset: Dataset, model: str, params: dict[str, Any], seed: int | None
) -> Iterator[RunContext]:
    """Record a run as 'running', yield its context, then mark it 'done', 'failed' or
    'interrupted' (Ctrl-C, SIGTERM)."""
    global _progress
    tables = backend.catalog_tables("runs")
    with backend.transaction():
        run_id = int(backend.scalar("run_next_id", tables=tables))
        backend.run("run_insert", {
            "run_id": run_id, "dataset_id": dataset.dataset_id, "model": model,
            "params": json.dumps(params, sort_keys=True), "seed": seed,
            "backend": backend.name, "package_version": __version__,
        }, tables)
        backend.run("lifecycle_set_process", {
            "run_id": run_id, "pid": os.getpid(), "host": socket.gethostname()[:255],
        }, tables)
        # Held before the run is visible to others, so no one sees it 'running' and unlocked.
        lock = _run_lock_key(backend, run_id)
        if not backend.try_advisory_lock(lock):
            raise ConnectionFailedError(f"run {run_id} is being recorded by another process; "
                                        "try again")
    _live.add(_live_key(backend, run_id))
    backend.announce_run(run_id)
    progress = _progress = Progress(run_id)
    context = RunContext(backend, dataset, run_id, seed)
    started = time.perf_counter()
    try:
        context.set_phase("search")
        yield context
    except _INTERRUPTS:
        progress.interrupted = True
        _finish(backend, run_id, "interrupted", started, "interrupted (Ctrl-C or SIGTERM)")
        raise
    except BaseException as error:
        _finish(backend, run_id, "failed", started, f"{type(error).__name__}: {error}")
        raise
    else:
        with backend.transaction():  # durable once the caller is told the run is done
            backend.run("run_finish", {
                "run_id": run_id, "status": "done", "seconds": time.perf_counter() - started,
                "figures": json.dumps(context.figures, sort_keys=True, default=float),
                "message": None,
            }, tables)
    finally:
        _live.discard(_live_key(backend, run_id))
        with suppress(SetanonError):
            backend.advisory_unlock(lock)


def list_runs(backend: Backend, dataset_name: str | None = None) -> list[dict[str, Any]]:
    """Runs (of one dataset, or all), oldest first; runs whose process died show as abandoned."""
    mark_abandoned(backend)
    tables = backend.catalog_tables("runs", "datasets", "inplace_applies")
    if dataset_name is None:
        rows = backend.query("run_list", tables=tables)
    else:
        rows = backend.query("run_list_of_dataset", {"name": dataset_name}, tables)
    return [
        {"run_id": int(run_id), "dataset": name, "model": model, "status": status,
         "seed": seed, "seconds": seconds, "params": json.loads(params),
         "verification": verification, "in_place": in_place}
        for run_id, name, model, status, seed, seconds, params, verification, in_place in rows
    ]


def run_processes(backend: Backend) -> dict[int, str]:
    """Per run: its last phase and the process that ran it ('phase search, process 12 on h')."""
    return {int(run_id): f"phase {phase or '-'}, {_describe_process(pid, host)}"
            for run_id, phase, pid, host in backend.query(
                "lifecycle_processes", None, backend.catalog_tables("runs"))}


def _process_is_gone(backend: Backend, run_id: int) -> bool:
    """True when the process of 'running' run ``run_id`` died (see the module docstring)."""
    if _live_key(backend, run_id) in _live:
        return False
    if backend.exclusive():
        return True
    key = _run_lock_key(backend, run_id)
    if not backend.try_advisory_lock(key):
        return False
    backend.advisory_unlock(key)
    return True


def _describe_process(pid: Any, host: Any) -> str:
    if pid is None:
        return "its process"
    return f"process {pid}" + (f" on {host}" if host else "")


def mark_abandoned(backend: Backend, dataset: Dataset | None = None) -> list[int]:
    """Mark 'running' runs whose process died as 'abandoned'; their ids.

    Their tables stay until :func:`cleanup_runs` (the next run on the dataset, or
    ``setanon runs --cleanup``): listing runs must not take long.
    """
    abandoned = []
    tables = backend.catalog_tables("runs")
    for run_id, dataset_id, pid, host in backend.query("lifecycle_running", None, tables):
        if dataset is not None and int(dataset_id) != dataset.dataset_id:
            continue
        if not _process_is_gone(backend, int(run_id)):
            continue
        backend.run("lifecycle_mark_abandoned", {
            "run_id": int(run_id),
            "message": f"abandoned: {_describe_process(pid, host)} died before the run ended",
        }, tables)
        abandoned.append(int(run_id))
    return abandoned


def cleanup_runs(backend: Backend, dataset: Dataset | None = None) -> list[int]:
    """Remove what runs that did not finish left behind; the ids of the runs cleaned.

    Runs left 'running' by a dead process are marked abandoned first (a run in progress in
    another live process is left alone). Then the tables of every abandoned, failed or
    interrupted run are dropped (they never hold published output), and DuckDB spill files a
    dead process left beside the database file are removed. With ``dataset``, only its runs.
    """
    tables = backend.catalog_tables("runs")
    cleaned = set(mark_abandoned(backend, dataset))
    run_of_dataset = None
    if dataset is not None:
        run_of_dataset = {int(r) for (r,) in backend.query(
            "runs_of_dataset", {"dataset_id": dataset.dataset_id}, tables)}
    names = backend.table_names("r")
    for (run_id,) in backend.query("lifecycle_ended_badly", None, tables):
        if run_of_dataset is not None and int(run_id) not in run_of_dataset:
            continue
        prefix = run_table(int(run_id), "x")[:-1]
        leftover = [name for name in names if name.startswith(prefix)]
        if leftover:
            _drop_run_tables(backend, int(run_id), leftover)
            cleaned.add(int(run_id))
    backend.remove_spill()
    return sorted(cleaned)


def _holder(backend: Backend, dataset: Dataset) -> str:
    """Who holds ``dataset``'s lock, as far as the catalog says."""
    rows = backend.query("lifecycle_running_of_dataset", {"dataset_id": dataset.dataset_id},
                         backend.catalog_tables("runs"))
    for run_id, pid, host in rows:
        return f"setanon run {run_id} ({_describe_process(pid, host)})"
    return "another setanon process (an apply or undo on it is in progress)"


@contextmanager
def dataset_lock(backend: Backend, dataset: Dataset, wait_seconds: float = 0.0) -> Iterator[None]:
    """Hold the dataset's lock: one setanon process at a time works on a dataset.

    PostgreSQL: a session-level advisory lock, released by the server when the process dies
    (so a killed run never blocks the next one). DuckDB: the file lock already admits one
    process. Waits up to ``wait_seconds``, then refuses with a message naming the holder.
    """
    key = _lock_key(backend, dataset.dataset_id)
    deadline = time.monotonic() + wait_seconds
    while not backend.try_advisory_lock(key):
        if time.monotonic() >= deadline:
            waited = f" (waited {wait_seconds:g} s)" if wait_seconds else ""
            raise ConnectionFailedError(
                f"dataset {dataset.name!r} is in use by {_holder(backend, dataset)}{waited}; "
                "wait for it to finish (--wait SECONDS), then try again")
        time.sleep(_LOCK_POLL_SECONDS)
    try:
        yield
    finally:
        backend.advisory_unlock(key)
