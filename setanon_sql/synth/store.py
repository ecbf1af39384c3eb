"""Where an in-DBMS generator puts its dataset: the row series it draws from, the records table
of a new dataset id, and the items, indexes and dictionary of each set-valued attribute.

Shared by every generator (claims in :mod:`setanon_sql.models.kanon.generate`, Quest
transactions in :mod:`setanon_sql.synth.quest`, swap baskets), so each stores its data the way
the loaders do and the models find it through the normal catalog.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import check_dataset_name, next_dataset_id
from setanon_sql.errors import UsageError
from setanon_sql.io.replace import drop_existing
from setanon_sql.names import dict_table, items_table, records_table

BIGINT = exp.DataType.build("BIGINT")
# Records whose items one statement draws. A generator's items query de-duplicates and sorts
# its rows; DuckDB could not spill that for 10M claims (130M draws) under a 1 GB memory_limit,
# nor for 100M under 12 GB, so larger datasets are drawn in slices of this many records.
CHUNK_RECORDS = 2_000_000


def _num(value: int | float) -> exp.Expr:
    return exp.Literal.number(value)


def series_table(n: int, alias: str, column: str, first: int = 1) -> exp.Table:
    """generate_series(first, n) as table ``alias`` with one BIGINT column ``column``."""
    series = exp.func("generate_series", exp.cast(_num(first), BIGINT),
                      exp.cast(_num(n), BIGINT))
    return exp.Table(this=series, alias=exp.TableAlias(this=exp.to_identifier(alias),
                                                       columns=[exp.to_identifier(column)]))


def check_generator_args(name: str, records: int, seed: int) -> None:
    """The bounds every in-DBMS generator shares (item keys 64 i + j stay below 2^36)."""
    check_dataset_name(name)
    if not 1 <= records <= 100_000_000:
        raise UsageError(f"--records must be between 1 and 100,000,000, got {records}")
    if not 0 <= seed < 2**20:
        raise UsageError(f"--seed must be between 0 and {2**20 - 1}, got {seed}")


def start_generated_dataset(backend: Backend, name: str, replace: bool,
                            records_query: exp.Select) -> tuple[int, exp.Table]:
    """Inside the caller's transaction: a new dataset id and its records table, indexed."""
    drop_existing(backend, name, replace)
    dataset_id = next_dataset_id(backend)
    table = backend.table(records_table(dataset_id))
    backend.materialize(table, records_query)
    backend.create_access_index(table, ["record_id"])
    return dataset_id, table


def record_slices(records: int) -> Iterator[tuple[int, int]]:
    """(first, last) record ids of consecutive slices of at most CHUNK_RECORDS records."""
    for first in range(1, records + 1, CHUNK_RECORDS):
        yield first, min(records, first + CHUNK_RECORDS - 1)


def store_items(backend: Backend, dataset_id: int, attr_no: int,
                slices: Iterable[exp.Select]) -> int:
    """Materialize the union of ``slices`` (queries of record_id, item_id over disjoint record
    ranges, see :func:`record_slices`) as the items of one set-valued attribute, its indexes and
    its dictionary (labels are the item ids as text); returns the distinct items."""
    items = backend.table(items_table(dataset_id, attr_no))
    queries = iter(slices)
    backend.materialize(items, next(queries))
    appended = False
    for query in queries:
        backend.run(exp.Insert(this=items.copy(), expression=query))
        appended = True
    if appended:
        backend.analyze(items)
    backend.create_access_index(items, ["item_id", "record_id"])
    backend.create_access_index(items, ["record_id", "item_id"])
    dictionary = backend.table(dict_table(dataset_id, attr_no))
    backend.materialize(dictionary, exp.select(
        "item_id", exp.cast(exp.column("item_id"), exp.DataType.build("TEXT")).as_("label"))
        .distinct().from_(items.copy()).order_by("item_id"))
    backend.create_access_index(dictionary, ["label"])
    return distinct_count(backend, items, "item_id")


def distinct_count(backend: Backend, table: exp.Table, column: str) -> int:
    """Distinct values of ``column`` in ``table`` (an attribute's n_distinct in the catalog)."""
    return int(backend.scalar(exp.select(exp.Count(this=exp.Distinct(
        expressions=[exp.column(column)]))).from_(table.copy())))
