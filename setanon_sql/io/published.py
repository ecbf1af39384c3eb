"""Where the data of a dataset, as loaded or as published by a run, is found.

A run publishes by creating tables under :func:`setanon_sql.names.run_table` names:
``items_<attr>`` (record_id, item_id) for every set-valued attribute; optionally ``dict_<attr>``
(item_id, label) when published items carry new labels (generalization), ``map_<attr>``
(original item_id, published label) for ``--mapping``, and ``records`` (record_id, position, and
the published single-valued columns c<attr_no>) when it generalizes single values or deletes
records. What a run does not publish is taken from the dataset as loaded.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
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


def published(backend: Backend, dataset: Dataset, run: Run | None) -> Published:
    """The tables of ``dataset`` as published by ``run`` (or as loaded)."""
    records = backend.table(dataset.records_table)
    items = {a.attr_no: backend.table(dataset.items_table(a)) for a in dataset.set_attributes}
    dicts = {a.attr_no: backend.table(dataset.dict_table(a)) for a in dataset.set_attributes}
    maps: dict[int, exp.Table] = {}
    if run is not None:
        existing = set(backend.table_names(run_table(run.run_id, "x")[:-1]))
        if run_table(run.run_id, "records") in existing:
            records = backend.table(run_table(run.run_id, "records"))
        for attribute in dataset.set_attributes:
            for kind, target in (("items", items), ("dict", dicts), ("map", maps)):
                name = run_table(run.run_id, f"{kind}_{attribute.attr_no}")
                if name in existing:
                    target[attribute.attr_no] = backend.table(name)
    return Published(dataset, run, records, items, dicts, maps)
