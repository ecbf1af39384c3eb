"""The set-valued column a suppression run (``rho``, ``prho``) works on, and its guard.

The qid enumeration packs item ids into columns where 0 means "no item", so every item id must
be at least 1; the loaders number from 1, and this refuses tables numbered otherwise.
"""

from __future__ import annotations

from typing import NamedTuple

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Attribute, Dataset
from setanon_sql.errors import InputError


class SuppressionTarget(NamedTuple):
    """The column and its record-item and dictionary tables."""

    attribute: Attribute
    items: exp.Table
    dictionary: exp.Table


def suppression_target(backend: Backend, dataset: Dataset, column: str | None,
                       model_flag: str) -> SuppressionTarget:
    """The column named by ``--column`` (or the only one), checked for item ids >= 1."""
    attribute = dataset.set_attribute(column, model_flag)
    items = backend.table(dataset.items_table(attribute))
    lowest = backend.scalar("rho_min_item_id", tables={"items": items})
    if lowest is not None and int(lowest) < 1:
        raise InputError(f"dataset {dataset.name!r}: item ids must be >= 1 (found {lowest}); "
                         "reload it with 'setanon load'")
    return SuppressionTarget(attribute, items, backend.table(dataset.dict_table(attribute)))
