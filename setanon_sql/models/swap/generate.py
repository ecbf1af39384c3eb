"""Synthetic baskets generated inside the DBMS, for runtime figures at 1M and 10M records.

``generate_baskets(backend, "synth", 1_000_000, seed=1)`` creates a transactions dataset through
the normal catalog: record i holds 1 + floor(u^2 * most) draws (short records are common) of
items 1 + floor(v^skew * universe) (small ids are frequent), duplicates within a record merged.
Every value is a pure function of (seed, record, draw) in integer SQL arithmetic (the claims
generator's mixing, :mod:`setanon_sql.models.kanon.generate`), so the same seed gives the same
data on DuckDB and PostgreSQL and nothing passes through Python. Categories come later, from
``--random-categories`` of the swap run.
"""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import (
    Attribute,
    Dataset,
    check_dataset_name,
    next_dataset_id,
    register_dataset,
)
from setanon_sql.errors import UsageError
from setanon_sql.io.replace import drop_existing
from setanon_sql.models.kanon.generate import _items_query
from setanon_sql.names import dict_table, items_table, records_table

BIGINT = exp.DataType.build("BIGINT")
# The item universe, most draws per record (the claims key allows at most 16) and skew.
UNIVERSE, MOST, SKEW = 3000, 12, 2.5


def _records_query(n: int) -> exp.Select:
    i = exp.column("i", table="g")
    series = exp.func("generate_series", exp.cast(exp.Literal.number(1), BIGINT),
                      exp.cast(exp.Literal.number(n), BIGINT))
    return exp.select(i.as_("record_id"), i.as_("position")).from_(exp.Table(
        this=series, alias=exp.TableAlias(this=exp.to_identifier("g"),
                                          columns=[exp.to_identifier("i")])))


def generate_baskets(backend: Backend, name: str, records: int, seed: int = 1,
                     replace: bool = False) -> Dataset:
    """Create transactions dataset ``name`` of ``records`` synthetic baskets in one transaction."""
    check_dataset_name(name)
    if not 1 <= records <= 100_000_000:
        raise UsageError(f"records must be between 1 and 100,000,000, got {records}")
    if not 0 <= seed < 2**20:
        raise UsageError(f"seed must be between 0 and {2**20 - 1}, got {seed}")
    with backend.transaction():
        drop_existing(backend, name, replace)
        dataset_id = next_dataset_id(backend)
        table = backend.table(records_table(dataset_id))
        backend.materialize(table, _records_query(records))
        backend.create_access_index(table, ["record_id"])
        items = backend.table(items_table(dataset_id, 1))
        backend.materialize(items, _items_query(records, seed, 100, UNIVERSE, MOST, SKEW))
        backend.create_access_index(items, ["item_id", "record_id"])
        backend.create_access_index(items, ["record_id", "item_id"])
        dictionary = backend.table(dict_table(dataset_id, 1))
        backend.materialize(dictionary, exp.select(
            "item_id", exp.cast(exp.column("item_id"), exp.DataType.build("TEXT")).as_("label"))
            .distinct().from_(items.copy()).order_by("item_id"))
        backend.create_access_index(dictionary, ["label"])
        n_distinct = int(backend.scalar(exp.select(exp.Count(this=exp.Star()))
                                        .from_(dictionary.copy())))
        options = {"generator": "swap-baskets", "seed": seed, "universe": UNIVERSE,
                   "most": MOST, "skew": SKEW}
        return register_dataset(backend, dataset_id, name, "transactions", None, records,
                                options, [Attribute(1, "items", "set", "items", n_distinct)])
