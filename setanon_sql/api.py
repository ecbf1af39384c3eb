"""The public Python API: open a database, load, attach, export, summarize.

Every function takes an open :class:`~setanon_sql.backends.base.Backend` (from
:func:`open_database`), so a caller can run several steps on one connection::

    >>> from setanon_sql import api
    >>> db = api.open_database("duckdb:///:memory:")
    >>> ds = api.load_transactions(db, api.demo_file("baskets"), "baskets")
    >>> ds.n_records
    2000
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from setanon_sql.attach import attach
from setanon_sql.backends import DEFAULT_SCHEMA, Backend, connect
from setanon_sql.catalog import Dataset, Run, find_dataset, get_dataset, get_run
from setanon_sql.errors import InputError, NotFoundError, SetanonError, UsageError
from setanon_sql.io.export import export_dataset
from setanon_sql.io.hierarchy import load_hierarchy
from setanon_sql.io.replace import drop_dataset
from setanon_sql.io.table import load_table
from setanon_sql.io.transactions import load_transactions
from setanon_sql.migrations import migrate
from setanon_sql.models import require_model
from setanon_sql.models.base import Model, Verification
from setanon_sql.resources import demo_data_dir
from setanon_sql.runs import cleanup_runs, list_runs, recorded_run
from setanon_sql.summary import dataset_summary

__all__ = [
    "Dataset",
    "InputError",
    "NotFoundError",
    "Run",
    "SetanonError",
    "UsageError",
    "attach",
    "cleanup_runs",
    "dataset_summary",
    "demo_file",
    "drop_dataset",
    "export_dataset", "find_dataset",
    "get_dataset",
    "get_run",
    "list_runs",
    "load_hierarchy",
    "load_table",
    "load_transactions",
    "open_database",
]

_DEMO_FILES = {
    "baskets": "demo_baskets.dat",
    "admissions": "demo_admissions.tsv",
    "diagnosis_hierarchy": "demo_diagnosis_hierarchy.txt",
}


def open_database(url: Any = None, schema: str = DEFAULT_SCHEMA) -> Backend:
    """Connect (URL, SQLAlchemy URL or Engine; see :func:`connect`) and apply pending migrations."""
    backend = connect(url, schema)
    try:
        migrate(backend)
    except BaseException:
        backend.close()
        raise
    return backend


def anonymize(backend: Backend, dataset: Dataset, model: Model, params: dict[str, Any],
              seed: int | None = None) -> int:
    """Run ``model`` on ``dataset`` as a recorded run; returns the run id.

    Without a seed, a random one is drawn and recorded, so every run can be repeated.
    """
    if model.validate is not None:
        model.validate(backend, dataset, params)
    if seed is None:
        seed = secrets.randbelow(2**31)
    with recorded_run(backend, dataset, model.name, params, seed) as context:
        model.anonymize(backend, dataset, params, context)
    return context.run_id


def verify(backend: Backend, dataset: Dataset, run: Run) -> Verification:
    """Re-check a finished run against its model's guarantee, from the DBMS."""
    if run.status != "done":
        raise UsageError(f"run {run.run_id} is {run.status}, not done: there is nothing to verify")
    return require_model(run.model).verify(backend, dataset, run)


def demo_file(name: str) -> Path:
    """Path of a demo dataset shipped with the package: baskets, admissions, diagnosis_hierarchy."""
    return demo_data_dir() / _DEMO_FILES[name]
