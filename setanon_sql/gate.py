"""The one gate between a run and anything that leaves it: export, in place, report, metrics.

A run's output may be read for publication only when the run finished (status ``done``) and its
latest verification, recorded in the catalog by :func:`record_verification`, passed. Every
other state is refused with a message naming the run, its state and what to do next, so raw or
unverified data never leaves under the name of an anonymized run. The verifier itself reads the
output through :func:`setanon_sql.io.published.published`, the only ungated path.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.errors import NotPublishableError

if TYPE_CHECKING:
    from setanon_sql.models.base import Verification

PASSED = "passed"


def _refusal(dataset: Dataset, run: Run) -> str | None:
    """Why ``run``'s output may not leave, or None when it may."""
    name, rid = dataset.name, run.run_id
    again = f"'setanon anonymize {name} --model {run.model} ...' starts a new run"
    if run.status == "running":
        return (f"run {rid} of {name!r} is still running (phase {run.phase or 'unknown'}), or "
                f"its process died; nothing of it is published. Wait for it to finish, or "
                f"'setanon runs --cleanup' to clear a dead run")
    if run.status != "done":
        reason = f": {run.message}" if run.message else ""
        return (f"run {rid} of {name!r} is {run.status}{reason}; it did not finish, so it has "
                f"no published output. {again}")
    if run.verification is None:
        return (f"run {rid} of {name!r} finished but was never verified; "
                f"'setanon verify {name} --run {rid}' checks it (and allows its export if it "
                "passes)")
    if run.verification == "inconclusive":
        return (f"the verification of run {rid} of {name!r} was inconclusive (a sampled check "
                f"could not decide at its confidence); nothing is published. "
                f"'setanon verify {name} --run {rid}' shows the bounds; {again}")
    if run.verification != PASSED:
        return (f"run {rid} of {name!r} failed verification ({run.verification}); its output "
                f"is not published. 'setanon verify {name} --run {rid}' shows what is wrong; "
                f"{again}")
    return None


def is_publishable(dataset: Dataset, run: Run) -> bool:
    """True when ``run`` finished and its latest verification passed."""
    return _refusal(dataset, run) is None


def require_publishable(dataset: Dataset, run: Run) -> Run:
    """``run`` itself when its output may leave; otherwise NotPublishableError (exit code 1)."""
    reason = _refusal(dataset, run)
    if reason is not None:
        raise NotPublishableError(reason)
    return run


def record_verification(backend: Backend, run_id: int, result: Verification) -> None:
    """Store the outcome of verifying run ``run_id``: the gate reads it. Its own transaction,
    so that it is durable once stored (:meth:`.backends.base.Backend.transaction`)."""
    detail: dict[str, Any] = {"covered": result.covered, "details": result.details}
    with backend.transaction():
        backend.run("run_set_verification", {
            "run_id": run_id, "verification": result.outcome,
            "detail": json.dumps(detail, sort_keys=True, default=str),
        }, backend.catalog_tables("runs"))


def clear_verification(backend: Backend, run_id: int) -> None:
    """Forget the recorded outcome before re-verifying, so an interrupted check leaves none."""
    backend.run("run_set_verification", {"run_id": run_id, "verification": None,
                                         "detail": None}, backend.catalog_tables("runs"))
