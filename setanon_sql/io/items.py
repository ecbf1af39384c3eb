"""Turn staged (record, label) tokens into an item dictionary and record-item rows.

Shared by every loader. Item ids are stable and deterministic: when all labels are canonical
integers, ids follow their numeric order (so an export lists items as FIMI files do); otherwise
they follow the labels' byte order, the same on every backend.
"""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Attribute
from setanon_sql.names import dict_table, items_table


def build_dictionary_query(backend: Backend, tokens: exp.Table, numeric: bool) -> exp.Select:
    """``SELECT item_id, label`` over the distinct labels of ``tokens``, ids in natural order."""
    label = exp.column("label")
    key = (
        exp.cast(label, exp.DataType.build("DECIMAL(38, 0)"))
        if numeric
        else backend.binary_sort_key(label)
    )
    row_number = exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=[exp.Ordered(
        this=key)]))
    distinct_labels = exp.select("label").distinct().from_(tokens).subquery("labels")
    return exp.select(
        exp.cast(row_number, exp.DataType.build("INT")).as_("item_id"), label
    ).from_(distinct_labels)


def build_item_attribute(
    backend: Backend, dataset_id: int, attr_no: int, name: str, tokens: exp.Table
) -> Attribute:
    """Create ``dict_<attr>`` and ``items_<attr>`` from ``tokens(record_id, label)``.

    Runs inside the caller's transaction; indexes for both access paths (postings by item,
    items by record) are created where the engine profits.
    """
    numeric = bool(backend.scalar("labels_are_integers", tables={"tokens": tokens}))
    dictionary = backend.table(dict_table(dataset_id, attr_no))
    backend.materialize(dictionary, build_dictionary_query(backend, tokens, numeric))
    items = backend.table(items_table(dataset_id, attr_no))
    backend.run("items_from_tokens", tables={"items": items, "tokens": tokens, "dict": dictionary})
    backend.create_access_index(items, ["item_id", "record_id"])
    backend.create_access_index(items, ["record_id", "item_id"])
    backend.create_access_index(dictionary, ["label"])
    backend.analyze(items)
    n_distinct = int(backend.scalar("count_rows", tables={"t": dictionary}))
    return Attribute(attr_no, name, "set", "items", n_distinct)
