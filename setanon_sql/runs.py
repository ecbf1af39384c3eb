"""The life of a run: recorded before work starts, finished or failed in the catalog.

A model runs inside :func:`recorded_run`; it creates its tables through ``RunContext.table`` and
puts its figures in ``RunContext.figures``. A run that raises is marked failed and its tables
are dropped, so a failed run never leaves half-published data behind.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from setanon_sql import __version__
from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset
from setanon_sql.errors import ConnectionFailedError
from setanon_sql.failpoints import pause_if_asked
from setanon_sql.names import run_table

_LOCK_POLL_SECONDS = 0.2


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
    """Record the phase of run ``run_id`` in the catalog (committed at once)."""
    backend.run("run_set_phase", {"run_id": run_id, "phase": phase},
                backend.catalog_tables("runs"))
    pause_if_asked(phase)


def _drop_run_tables(backend: Backend, run_id: int) -> None:
    for name in backend.table_names(run_table(run_id, "x")[:-1]):
        backend.drop_table(backend.table(name))


@contextmanager
def recorded_run(
    backend: Backend, dataset: Dataset, model: str, params: dict[str, Any], seed: int | None
) -> Iterator[RunContext]:
    """Record a run as 'running', yield its context, then mark it 'done' or 'failed'."""
    tables = backend.catalog_tables("runs")
    with backend.transaction():
        run_id = int(backend.scalar("run_next_id", tables=tables))
        backend.run("run_insert", {
            "run_id": run_id, "dataset_id": dataset.dataset_id, "model": model,
            "params": json.dumps(params, sort_keys=True), "seed": seed,
            "backend": backend.name, "package_version": __version__,
        }, tables)
    context = RunContext(backend, dataset, run_id, seed)
    context.set_phase("search")
    started = time.perf_counter()
    try:
        yield context
    except BaseException as error:
        _drop_run_tables(backend, run_id)
        backend.run("run_finish", {
            "run_id": run_id, "status": "failed", "seconds": time.perf_counter() - started,
            "figures": None, "message": f"{type(error).__name__}: {error}"[:2000],
        }, tables)
        raise
    backend.run("run_finish", {
        "run_id": run_id, "status": "done", "seconds": time.perf_counter() - started,
        "figures": json.dumps(context.figures, sort_keys=True, default=float), "message": None,
    }, tables)


def list_runs(backend: Backend, dataset_name: str | None = None) -> list[dict[str, Any]]:
    """Runs (of one dataset, or all), oldest first."""
    if dataset_name is None:
        rows = backend.query("run_list", tables=backend.catalog_tables("runs", "datasets"))
    else:
        rows = backend.query("run_list_of_dataset", {"name": dataset_name},
                             backend.catalog_tables("runs", "datasets"))
    return [
        {"run_id": int(run_id), "dataset": name, "model": model, "status": status,
         "seed": seed, "seconds": seconds, "params": json.loads(params)}
        for run_id, name, model, status, seed, seconds, params in rows
    ]


def _lock_key(backend: Backend, dataset_id: int) -> tuple[int, int]:
    """The advisory-lock key of a dataset: (schema hash as a signed int4, dataset id)."""
    schema_hash = zlib.crc32(backend.schema.encode("utf-8"))
    return (schema_hash - (1 << 32) if schema_hash >= 1 << 31 else schema_hash, dataset_id)


@contextmanager
def dataset_lock(backend: Backend, dataset: Dataset, wait_seconds: float = 0.0) -> Iterator[None]:
    """Hold the dataset's lock: one setanon process at a time works on a dataset.

    PostgreSQL: a session-level advisory lock, released by the server when the process dies
    (so a killed run never blocks the next one). DuckDB: the file lock already admits one
    process. Waits up to ``wait_seconds``, then refuses with a message naming the dataset.
    """
    key = _lock_key(backend, dataset.dataset_id)
    deadline = time.monotonic() + wait_seconds
    while not backend.try_advisory_lock(key):
        if time.monotonic() >= deadline:
            raise ConnectionFailedError(
                f"dataset {dataset.name!r} is in use by another setanon process (a run, apply "
                "or undo on it is in progress); wait for it to finish, then try again")
        time.sleep(_LOCK_POLL_SECONDS)
    try:
        yield
    finally:
        backend.advisory_unlock(key)


def _mark_stale(backend: Backend, run_id: int, message: str) -> None:
    with backend.transaction():
        _drop_run_tables(backend, run_id)
        backend.run("run_mark_failed", {"run_id": run_id, "message": message},
                    backend.catalog_tables("runs"))


def cleanup_runs(backend: Backend, dataset: Dataset | None = None) -> list[int]:
    """Mark runs left 'running' by a killed process as failed and drop their tables.

    A run counts as killed when nobody holds its dataset's lock (PostgreSQL), so a run in
    progress in another process is left alone. DuckDB admits one process per file, so every
    'running' run another process left there is stale. With ``dataset``, only its runs.
    """
    tables = backend.catalog_tables("runs")
    stale = []
    for run_id, dataset_id in backend.query("inplace_running_runs", None, tables):
        if dataset is not None and int(dataset_id) != dataset.dataset_id:
            continue
        key = _lock_key(backend, int(dataset_id))
        if not backend.try_advisory_lock(key):
            continue
        try:
            _mark_stale(backend, int(run_id), "interrupted (process killed); cleaned up")
        finally:
            backend.advisory_unlock(key)
        stale.append(int(run_id))
    return stale
