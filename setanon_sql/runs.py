"""The life of a run: recorded before work starts, finished or failed in the catalog.

A model runs inside :func:`recorded_run`; it creates its tables through ``RunContext.table`` and
puts its figures in ``RunContext.figures``. A run that raises is marked failed and its tables
are dropped, so a failed run never leaves half-published data behind.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from setanon_sql import __version__
from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset
from setanon_sql.names import run_table


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


def cleanup_runs(backend: Backend) -> list[int]:
    """Mark runs left 'running' by a killed process as failed and drop their tables.

    Only safe when no other setanon process is working on this database.
    """
    tables = backend.catalog_tables("runs")
    stale = [int(r) for (r,) in backend.query("runs_with_status", {"status": "running"}, tables)]
    for run_id in stale:
        with backend.transaction():
            _drop_run_tables(backend, run_id)
            backend.run("run_mark_failed",
                        {"run_id": run_id, "message": "interrupted; cleaned up by runs --cleanup"},
                        tables)
    return stale
