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
from setanon_sql.catalog import Attribute, Dataset, register_dataset
from setanon_sql.models.kanon.generate import generate_items
from setanon_sql.synth.store import check_generator_args, start_generated_dataset

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
    check_generator_args(name, records, seed)
    with backend.transaction():
        dataset_id, _ = start_generated_dataset(backend, name, replace, _records_query(records))
        n_distinct = generate_items(backend, dataset_id, 1, records, seed, UNIVERSE, MOST, SKEW)
        options = {"generator": "swap-baskets", "seed": seed, "universe": UNIVERSE,
                   "most": MOST, "skew": SKEW}
        return register_dataset(backend, dataset_id, name, "transactions", None, records,
                                options, [Attribute(1, "items", "set", "items", n_distinct)])
