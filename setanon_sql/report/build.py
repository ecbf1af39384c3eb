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
from setanon_sql.catalog import Dataset, Run, get_run
from setanon_sql.gate import require_publishable
from setanon_sql.models.base import Verification
from setanon_sql.report.data import report_data
from setanon_sql.summary import dataset_summary

Verifier = Callable[[Backend, Dataset, Run], Verification]


def default_verifier(backend: Backend, dataset: Dataset, run: Run) -> Verification:
    """The run's own model re-checks its guarantee from the DBMS (``setanon verify``)."""
    from setanon_sql.api import verify

    return verify(backend, dataset, run)


_STATUS = {"passed": "met", "failed": "NOT MET", "inconclusive": "inconclusive"}


def verification(backend: Backend, dataset: Dataset, run: Run,
                 verifier: Verifier | None) -> dict[str, Any]:
    """The verification outcome as data: checked again by ``verifier``, or as recorded.

    Without a verifier, the outcome recorded when the run was last verified is shown (every run
    is verified when it finishes). A fresh check that does not pass refuses the report: a
    report shows only the figures of a run whose output may be published.
    """
    if verifier is None:
        recorded = run.verification_detail or {}
        return {"status": _STATUS.get(run.verification or "", "not verified"),
                "covered": recorded.get("covered"), "details": recorded.get("details", {}),
                "message": "as recorded when the run was verified"}
    started = time.perf_counter()
    result = verifier(backend, dataset, run)
    if result.outcome != "passed":
        from setanon_sql.api import verification_error

        raise verification_error(dataset, run, result)
    return {"status": _STATUS[result.outcome], "covered": result.covered,
            "details": dict(result.details), "message": None,
            "seconds": time.perf_counter() - started}


def checked_run(backend: Backend, dataset: Dataset, run: Run,
                verifier: Verifier | None) -> tuple[Run, dict[str, Any]]:
    """``run`` as the catalog holds it after the (optional) fresh check, through the gate."""
    outcome = verification(backend, dataset, run, verifier)
    return require_publishable(dataset, get_run(backend, dataset, run.run_id)), outcome


def run_meta(run: Run) -> dict[str, Any]:
    """What was done: model, parameters, seed, where, how long, with which version."""
    return {"run_id": run.run_id, "model": run.model, "params": run.params, "seed": run.seed,
            "backend": run.backend, "status": run.status, "seconds": run.seconds,
            "package_version": run.package_version, "figures": run.figures}


def build_report(backend: Backend, dataset: Dataset, run: Run | None,
                 verifier: Verifier | None = default_verifier) -> dict[str, Any]:
    """Everything a report shows about ``dataset`` as loaded, or as published by ``run``."""
    outcome = None
    if run is not None:
        run, outcome = checked_run(backend, dataset, run, verifier)
    report: dict[str, Any] = {
        "report": "run" if run is not None else "dataset",
        "generated_by": f"setanon_sql {__version__}",
        "summary": dataset_summary(backend, dataset, run),
        "run": run_meta(run) if run is not None else None,
        "verification": outcome,
    }
    report.update(report_data(backend, dataset, run))
    return report
