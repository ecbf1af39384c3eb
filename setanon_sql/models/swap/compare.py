"""The swap figures for the published data of ANY run: how baselines such as PartSupp compare.

The paper compares PartSwap with partial suppression (PartSupp, after Jia et al.) on the same
figures (Figs. 3-6). ``compare_run`` measures another run's published items (e.g. a ``--model
rho`` run) against the original with the categories of a swap run of the same dataset:
records with a tendency whose tendency items are all gone ("hidden"), whose tendency changed,
items lost and Diss (Eq. 3), and frequent-itemset similarity (Eq. 2). Every pass is SQL over
staging tables that are dropped before returning.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.errors import InputError
from setanon_sql.models.swap.metrics import (
    frequent_itemset_figures,
    item_balance,
    tendency_figures,
)
from setanon_sql.names import run_table, staging_table


def _published(backend: Backend, run: Run, attr_no: int) -> exp.Table:
    name = run_table(run.run_id, f"items_{attr_no}")
    if name not in backend.table_names(name):
        raise InputError(f"run {run.run_id} publishes no table {name}: nothing to compare")
    return backend.table(name)


def compare_run(backend: Backend, dataset: Dataset, run: Run, swap_run: Run,
                supports: Sequence[float], max_size: int) -> dict[str, Any]:
    """Swap figures of ``run``'s published items, in the categories of ``swap_run``."""
    attr_no = int(swap_run.figures.get("attr_no", 0))
    cats_name = run_table(swap_run.run_id, "cats")
    if cats_name not in backend.table_names(cats_name):
        raise InputError(f"run {swap_run.run_id} has no categories table: pass a swap run")
    cats = backend.table(cats_name)
    attribute = next(a for a in dataset.set_attributes if a.attr_no == attr_no)
    original = backend.table(dataset.items_table(attribute))
    published = _published(backend, run, attr_no)
    tend = backend.table(staging_table("tend"))
    try:
        backend.materialize(tend, "swap_tendency", tables={"items": original, "cats": cats})
        figures = tendency_figures(backend, published, cats, tend, tend)
    finally:
        backend.drop_table(tend)
    balance = item_balance(backend, original, published)
    figures.update(items_lost=balance["items_lost"], diss=balance["diss"])
    if supports:
        figures["frequent_itemsets"] = frequent_itemset_figures(
            backend, original, published, dataset.n_records, supports, max_size,
            lambda purpose: backend.table(staging_table(purpose)))
    return figures
