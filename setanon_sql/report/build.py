"""Assemble the content of a report: what was done, whether it holds, what it cost.

The content is one JSON-serializable dict (``--format json`` prints it; the HTML page draws it):
the dataset summary, the run's parameters and figures, the verification outcome, and the
aggregates of :mod:`setanon_sql.report.data`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from setanon_sql import __version__
from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.errors import SetanonError, UsageError
from setanon_sql.models.base import Verification
from setanon_sql.report.data import report_data
from setanon_sql.summary import dataset_summary

Verifier = Callable[[Backend, Dataset, Run], Verification]


def default_verifier(backend: Backend, dataset: Dataset, run: Run) -> Verification:
    """The run's own model re-checks its guarantee from the DBMS (``setanon verify``)."""
    from setanon_sql.api import verify

    return verify(backend, dataset, run)


def require_done(run: Run) -> Run:
    """Only a finished run has published tables to report on."""
    if run.status != "done":
        reason = f" ({run.message})" if run.message else ""
        raise UsageError(f"run {run.run_id} is {run.status}{reason}: only finished runs have "
                         "published data to report on; 'setanon runs' lists them")
    return run


def verification(backend: Backend, dataset: Dataset, run: Run,
                 verifier: Verifier | None) -> dict[str, Any]:
    """The verification outcome as data; a model without a verifier says so instead."""
    if verifier is None:
        return {"status": "skipped", "covered": None, "details": {},
                "message": "not run (--no-verify)"}
    started = time.perf_counter()
    try:
        result = verifier(backend, dataset, run)
    except SetanonError as error:
        return {"status": "not available", "covered": None, "details": {},
                "message": " ".join(str(error).split())}
    return {"status": "met" if result.ok else "NOT MET", "covered": result.covered,
            "details": dict(result.details), "message": None,
            "seconds": time.perf_counter() - started}


def run_meta(run: Run) -> dict[str, Any]:
    """What was done: model, parameters, seed, where, how long, with which version."""
    return {"run_id": run.run_id, "model": run.model, "params": run.params, "seed": run.seed,
            "backend": run.backend, "status": run.status, "seconds": run.seconds,
            "package_version": run.package_version, "figures": run.figures}


def build_report(backend: Backend, dataset: Dataset, run: Run | None,
                 verifier: Verifier | None = default_verifier) -> dict[str, Any]:
    """Everything a report shows about ``dataset`` as loaded, or as published by ``run``."""
    if run is not None:
        require_done(run)
    report: dict[str, Any] = {
        "report": "run" if run is not None else "dataset",
        "generated_by": f"setanon_sql {__version__}",
        "summary": dataset_summary(backend, dataset, run),
        "run": run_meta(run) if run is not None else None,
        "verification": verification(backend, dataset, run, verifier) if run else None,
    }
    report.update(report_data(backend, dataset, run))
    return report
