"""Where the data of a dataset, as loaded or as published by a run, is found.

A run publishes by creating tables under :func:`setanon_sql.names.run_table` names:
``items_<attr>`` (record_id, item_id) for every set-valued attribute; optionally ``dict_<attr>``
(item_id, label) when published items carry new labels (generalization), ``map_<attr>``
(original item_id, published label) for ``--mapping``, and ``records`` (record_id, position, and
the published single-valued columns c<attr_no>) when it generalizes single values or deletes
records. What a run does not publish is taken from the dataset as loaded; a run that published
nothing is refused, never shown as the loaded data.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.errors import NotPublishableError
from setanon_sql.gate import require_publishable
from setanon_sql.names import run_table


@dataclass(frozen=True)
class Published:
    """Tables holding one version of a dataset (as loaded when ``run`` is None)."""

    dataset: Dataset
    run: Run | None
    records: exp.Table
    items: dict[int, exp.Table]
    dicts: dict[int, exp.Table]
    maps: dict[int, exp.Table]


def loaded(backend: Backend, dataset: Dataset) -> Published:
    """The tables of ``dataset`` as loaded: the raw data, never a run's output."""
    records = backend.table(dataset.records_table)
    items = {a.attr_no: backend.table(dataset.items_table(a)) for a in dataset.set_attributes}
    dicts = {a.attr_no: backend.table(dataset.dict_table(a)) for a in dataset.set_attributes}
    return Published(dataset, None, records, items, dicts, {})


def published(backend: Backend, dataset: Dataset, run: Run) -> Published:
    """The tables ``run`` published, UNGATED: for verifiers, which decide whether they may leave.

    Everything that hands a run's output on (export, in place, report, metrics) calls
    :func:`publishable` instead. A run that published no table at all is refused rather than
    shown as the loaded data; the set-valued columns a run did not anonymize (a km run on one
    of two columns) are the loaded ones, as its model defines.
    """
    view = loaded(backend, dataset)
    records, items, dicts = view.records, dict(view.items), dict(view.dicts)
    maps: dict[int, exp.Table] = {}
    existing = set(backend.table_names(run_table(run.run_id, "x")[:-1]))
    found = False
    if run_table(run.run_id, "records") in existing:
        records = backend.table(run_table(run.run_id, "records"))
        found = True
    for attribute in dataset.set_attributes:
        for kind, target in (("items", items), ("dict", dicts), ("map", maps)):
            name = run_table(run.run_id, f"{kind}_{attribute.attr_no}")
            if name in existing:
                target[attribute.attr_no] = backend.table(name)
                found = found or kind == "items"
    if not found:
        raise NotPublishableError(
            f"run {run.run_id} of {dataset.name!r} has no published tables (status "
            f"{run.status}); nothing of it can be read. 'setanon runs {dataset.name}' lists "
            "its runs")
    return Published(dataset, run, records, items, dicts, maps)


def publishable(backend: Backend, dataset: Dataset, run: Run) -> Published:
    """The output of ``run`` for anything that hands it on: only a finished, verified run's.

    Raises NotPublishableError (see :mod:`setanon_sql.gate`) for any other run.
    """
    return published(backend, dataset, require_publishable(dataset, run))
