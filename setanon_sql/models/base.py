"""The contract between a privacy model and the rest of setanon.

A model is a module ``setanon_sql.models.<name>`` that defines ``MODEL``, an instance of
:class:`Model`. The CLI builds the model's options from ``Model.options`` (click options), the
run is recorded by :func:`setanon_sql.runs.recorded_run`, and the model publishes its output as
described in ``setanon_sql.io.published``. Nothing outside the model's own package needs to
change when a model is added.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import click

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.runs import RunContext


@dataclass(frozen=True)
class Verification:
    """The outcome of checking a run against its guarantee.

    ``covered`` says what was checked (e.g. "every itemset of size <= 2, exactly" or "10,000
    sampled adversaries; unsafe share <= 0.01 with confidence 0.95"). A sampled check that can
    neither confirm nor refute the guarantee at its stated confidence sets ``inconclusive``
    (with ``ok`` False): an inconclusive run is not published, like a failed one.
    """

    ok: bool
    covered: str
    details: dict[str, Any] = field(default_factory=dict)
    inconclusive: bool = False

    @property
    def outcome(self) -> str:
        """'passed', 'failed' or 'inconclusive', as recorded in the catalog."""
        if self.inconclusive:
            return "inconclusive"
        return "passed" if self.ok else "failed"


AnonymizeFn = Callable[[Backend, Dataset, dict[str, Any], RunContext], None]
VerifyFn = Callable[[Backend, Dataset, Run], Verification]
ValidateFn = Callable[[Backend, Dataset, dict[str, Any]], None]


@dataclass(frozen=True)
class Model:
    """A privacy model as setanon runs it.

    ``validate`` (optional) checks ``params`` against the dataset before the run is recorded,
    raising UsageError naming the parameter, so bad input leaves no trace. ``anonymize`` does
    its work in SQL, creates the run's published tables through ``context.table(...)`` and puts
    its figures in ``context.figures``. ``verify`` re-checks a finished run from the DBMS.
    """

    name: str
    title: str
    options: Sequence[click.Option]
    anonymize: AnonymizeFn
    verify: VerifyFn
    validate: ValidateFn | None = None
