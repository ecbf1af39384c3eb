"""Utility metrics of any run, computed in the DBMS (Nakagawa et al. Sec. 4.2 and 6.2.2).

* :func:`util_info` (eq. 5): the share of the input's item occurrences the output lost;
* :func:`util_dist` (eq. 6): KL(D' || D) of the item distributions;
* :func:`util_mining` (eq. 12): Jaccard distance of the association rules mined from D and D'.

Each takes ``(backend, dataset, run)`` and reads the run's published tables (or the input for
items a run did not publish). Published labels are matched to the input's by label, so runs that
generalize (new labels) are compared fairly: a generalized item counts as lost. The ``*_tables``
variants take two (record_id, item_id) tables with the same item ids.
"""

from __future__ import annotations

import uuid

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.io.published import publishable
from setanon_sql.metrics.mining import util_mining_tables
from setanon_sql.names import staging_table

__all__ = ["util_dist", "util_dist_tables", "util_info", "util_info_tables", "util_mining",
           "util_mining_tables"]


def util_info_tables(backend: Backend, items: exp.Table, pub: exp.Table) -> float:
    """eq. 5 of D = ``items`` and D' = ``pub``."""
    return float(backend.scalar("metrics_util_info", tables={"items": items, "pub": pub}) or 0.0)


def util_dist_tables(backend: Backend, items: exp.Table, pub: exp.Table) -> float:
    """eq. 6 of D = ``items`` and D' = ``pub``."""
    return float(backend.scalar("metrics_util_dist", tables={"items": items, "pub": pub}) or 0.0)


class _Sides:
    """The input's items and the run's published items in the input's ids (a scratch table
    when the run has its own dictionary), dropped on exit."""

    def __init__(self, backend: Backend, dataset: Dataset, run: Run, column: str | None) -> None:
        attribute = dataset.set_attribute(column or run.params.get("column"), "the utility metrics")
        self.backend = backend
        self.items = backend.table(dataset.items_table(attribute))
        tables = publishable(backend, dataset, run)
        self.pub = tables.items[attribute.attr_no]
        self.scratch: exp.Table | None = None
        own_dict = tables.dicts[attribute.attr_no]
        if own_dict.name != dataset.dict_table(attribute):
            self.scratch = backend.table(staging_table("metpub"))
            backend.materialize(self.scratch, "metrics_pub_by_label", tables={
                "pub": self.pub, "pdict": own_dict,
                "dict": backend.table(dataset.dict_table(attribute))})
            self.pub = self.scratch

    def __enter__(self) -> _Sides:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.scratch is not None:
            self.backend.drop_table(self.scratch)


def util_info(backend: Backend, dataset: Dataset, run: Run, column: str | None = None) -> float:
    """Share of the input's item occurrences suppressed (or generalized away) by ``run``."""
    with _Sides(backend, dataset, run, column) as sides:
        return util_info_tables(backend, sides.items, sides.pub)


def util_dist(backend: Backend, dataset: Dataset, run: Run, column: str | None = None) -> float:
    """KL divergence of the run's item distribution from the input's."""
    with _Sides(backend, dataset, run, column) as sides:
        return util_dist_tables(backend, sides.items, sides.pub)


def util_mining(backend: Backend, dataset: Dataset, run: Run, column: str | None = None,
                **options: object) -> dict[str, float | int]:
    """eq. 12 and the rule counts; ``options``: minsup, minconf (Fractions), max_size."""
    prefix = f"tmp_{uuid.uuid4().hex[:12]}_um"
    with _Sides(backend, dataset, run, column) as sides:
        return util_mining_tables(backend, lambda purpose: backend.table(f"{prefix}{purpose}"),
                                  sides.items, sides.pub, dataset.n_records, **options)  # type: ignore[arg-type]
