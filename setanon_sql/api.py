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

from setanon_sql import inplace
from setanon_sql.attach import attach
from setanon_sql.backends import DEFAULT_SCHEMA, Backend, connect
from setanon_sql.catalog import Dataset, Run, find_dataset, get_dataset, get_run
from setanon_sql.errors import (
    GuaranteeNotMetError,
    InputError,
    NotFoundError,
    NotPublishableError,
    SetanonError,
    UsageError,
    VerificationInconclusiveError,
)
from setanon_sql.gate import clear_verification, record_verification, require_publishable
from setanon_sql.io.export import export_dataset
from setanon_sql.io.hierarchy import load_hierarchy
from setanon_sql.io.replace import drop_dataset
from setanon_sql.io.table import load_table
from setanon_sql.io.transactions import load_transactions
from setanon_sql.migrations import migrate
from setanon_sql.models import require_model
from setanon_sql.models.base import Model, Verification
from setanon_sql.resources import demo_data_dir
from setanon_sql.runs import cleanup_runs, dataset_lock, list_runs, recorded_run, set_phase
from setanon_sql.summary import dataset_summary

__all__ = [
    "Dataset",
    "InputError",
    "NotFoundError",
    "Run",
    "SetanonError",
    "UsageError",
    "apply_in_place",
    "attach",
    "cleanup_runs",
    "dataset_summary",
    "demo_file",
    "drop_dataset",
    "estimate_unicity",
    "export_dataset",
    "find_dataset",
    "get_dataset",
    "get_run",
    "list_runs",
    "load_hierarchy",
    "load_table",
    "load_transactions",
    "open_database",
    "preview_in_place",
    "undo_in_place",
]

_DEMO_FILES = {
    "baskets": "demo_baskets.dat",
    "admissions": "demo_admissions.tsv",
    "diagnosis_hierarchy": "demo_diagnosis_hierarchy.txt",
}


def open_database(url: Any = None, schema: str = DEFAULT_SCHEMA,
                  wait_seconds: float = 0.0, create: bool = True) -> Backend:
    """Connect (URL, SQLAlchemy URL or Engine; see :func:`connect`) and apply pending migrations.

    ``wait_seconds``: how long to wait for a DuckDB file another process holds (its single
    writer lock) before refusing with a message naming the holder. ``create=False``: a DuckDB
    file that does not exist is refused rather than created.
    """
    backend = connect(url, schema, wait_seconds, create)
    try:
        migrate(backend)
    except BaseException:
        backend.close()
        backend.discard_created()
        raise
    return backend


def anonymize(backend: Backend, dataset: Dataset, model: Model, params: dict[str, Any],
              seed: int | None = None, in_place: bool = False, dry_run: bool = False,
              wait_seconds: float = 0.0, check: bool = True) -> int:
    """Run ``model`` on ``dataset`` as a recorded run, then verify it; returns the run id.

    Without a seed, a random one is drawn and recorded, so every run can be repeated. The
    dataset is locked for the run (another process on it waits ``wait_seconds``, then is
    refused), and runs of it that a killed process left behind are cleaned up first. The
    finished run is verified by its model's independent verifier and the outcome recorded:
    only a run that passed can be exported, applied or reported (:mod:`setanon_sql.gate`); a
    failed verification raises GuaranteeNotMetError, an inconclusive one
    VerificationInconclusiveError, both naming the run. ``check=False`` leaves the run
    unverified (unpublishable until :func:`verify` passes). With ``in_place`` (attached
    datasets), the verified run is then applied to the user's tables in one transaction (see
    :func:`apply_in_place`); with ``dry_run`` too, only planned (see :func:`preview_in_place`).
    """
    backend.require_model(model.name)
    if in_place:
        backend.require_in_place("--in-place")
    if in_place and not check:
        raise UsageError("--in-place writes only a verified run: drop --no-verify")
    if dry_run and not in_place:
        raise UsageError("--dry-run shows what --in-place would change: pass both")
    with dataset_lock(backend, dataset, wait_seconds):
        cleanup_runs(backend, dataset)
        if in_place:
            _check_in_place(backend, dataset)
        if model.validate is not None:
            model.validate(backend, dataset, params)
        if seed is None:
            seed = secrets.randbelow(2**31)
        with recorded_run(backend, dataset, model.name, params, seed) as context:
            model.anonymize(backend, dataset, params, context)
        if check:
            verify(backend, dataset, get_run(backend, dataset, context.run_id), enforce=True,
                   model=model)
        if in_place and not dry_run:
            _apply(backend, dataset, get_run(backend, dataset, context.run_id))
    return context.run_id


def _check_in_place(backend: Backend, dataset: Dataset, sync: bool = True) -> None:
    """Before a run meant for --in-place: everything that would stop the apply, checked early.

    ``sync=False`` skips comparing the user's tables with the attached copy (two passes over
    them): the apply transaction repeats that comparison under its write lock anyway, which is
    the check that guards the data; the early one only fails fast before a long run.
    """
    inplace.forget_dropped(backend)
    applied = backend.scalar("inplace_applied_of_dataset", {"dataset_id": dataset.dataset_id},
                             backend.catalog_tables("inplace_applies"))
    if applied is not None:
        raise UsageError(f"run {applied} was applied in place to dataset {dataset.name!r}; "
                         f"undo it first ('setanon undo {applied}'), or attach the anonymized "
                         "table again under a new name")
    items, records = inplace.user_tables(backend, dataset)
    inplace.check_privileges(backend, items, records)
    if sync:
        inplace.check_in_sync(backend, dataset, items, records)


def preview_in_place(backend: Backend, dataset: Dataset, run: Run,
                     top: int = 10) -> dict[str, Any]:
    """What applying ``run`` in place would change: counts per action, top changes, samples."""
    return inplace.preview(backend, inplace.build_plan(backend, dataset, run), top)


def apply_in_place(backend: Backend, dataset: Dataset, run: Run,
                   wait_seconds: float = 0.0) -> dict[str, Any]:
    """Write a finished run into the user's attached tables, in one transaction.

    Suppressed (record, item) rows are deleted, generalized values updated, moved items get
    their new record key; every change goes to the change log and every changed row to a typed
    backup, so :func:`undo_in_place` restores the original rows exactly.
    """
    backend.require_in_place("apply")
    with dataset_lock(backend, dataset, wait_seconds):
        return _apply(backend, dataset, run)


def _apply(backend: Backend, dataset: Dataset, run: Run) -> dict[str, Any]:
    """The apply itself, under the dataset's lock: only a verified run (the gate), and the
    user's tables are checked to equal its verified output before the transaction commits."""
    require_publishable(dataset, run)
    _check_in_place(backend, dataset, sync=False)
    set_phase(backend, run.run_id, "apply")
    figures = inplace.apply_plan(backend, inplace.build_plan(backend, dataset, run))
    set_phase(backend, run.run_id, "applied")
    return figures


def in_place_figures(backend: Backend, run_id: int) -> dict[str, Any]:
    """What an in-place run changed (rows per action), as recorded when it was applied."""
    return inplace.applied_figures(backend, run_id)


def undo_in_place(backend: Backend, run_id: int, wait_seconds: float = 0.0) -> dict[str, Any]:
    """Restore the user's tables as they were before run ``run_id`` was applied in place."""
    backend.require_in_place("undo")
    return inplace.undo_run(backend, run_id, wait_seconds)


def verify(backend: Backend, dataset: Dataset, run: Run, enforce: bool = False,
           model: Model | None = None) -> Verification:
    """Check a finished run against its model's guarantee, from the DBMS, and record the outcome.

    The model's verifier recomputes the guarantee from the original data and the published
    output alone. The outcome (passed, failed, inconclusive) is stored with the run; it is what
    the gate reads before anything of the run is handed on. With ``enforce``, an outcome other
    than passed raises (GuaranteeNotMetError, exit 1; VerificationInconclusiveError, exit 4).
    ``model`` is the run's model when the caller holds it (default: the registered one).
    """
    if run.status != "done":
        raise NotPublishableError(
            f"run {run.run_id} of {dataset.name!r} is {run.status}, not done: it has no output "
            "to verify, and nothing of it is published")
    clear_verification(backend, run.run_id)
    set_phase(backend, run.run_id, "verify")
    result = (model or require_model(run.model)).verify(backend, dataset, run)
    record_verification(backend, run.run_id, result)
    set_phase(backend, run.run_id, "verified")
    if enforce and result.outcome != "passed":
        raise verification_error(dataset, run, result)
    return result


def verification_error(dataset: Dataset, run: Run, result: Verification) -> SetanonError:
    """The error of a run whose verification did not pass: names the run and the next step."""
    where = f"run {run.run_id} of {dataset.name!r} ({run.model})"
    show = f"'setanon verify {dataset.name} --run {run.run_id}' shows the details"
    if result.inconclusive:
        return VerificationInconclusiveError(
            f"{where}: the sampled verification was inconclusive (its confidence bounds straddle "
            f"the limit); nothing is published. {show}; the check's sample is fixed by the "
            "run's seed, so a new run (another --seed) is the way to a decision")
    return GuaranteeNotMetError(f"{where} failed verification; nothing is published. {show}")


def estimate_unicity(backend: Backend, dataset: Dataset, m: int, seed: int = 0,
                     epsilon: float = 0.01, delta: float = 0.01,
                     column: str | None = None,
                     max_items_per_record: int | None = None) -> list[dict[str, Any]]:
    """Share of the data's ℓ-itemsets (ℓ ≤ m) held by one record only, from uniform samples.

    What a steward looks at before choosing k and m (Acs et al. §VI-B): each share is within
    ± ``epsilon`` with confidence 1 - ``delta``.
    """
    from setanon_sql.models.km.risk import estimate_unicity as estimate

    return estimate(backend, dataset, m, seed, epsilon, delta, column, max_items_per_record)


def demo_file(name: str) -> Path:
    """Path of a demo dataset shipped with the package: baskets, admissions, diagnosis_hierarchy."""
    return demo_data_dir() / _DEMO_FILES[name]
