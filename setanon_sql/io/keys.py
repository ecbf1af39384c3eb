"""A record's item set as one comparable string, for grouping records by their whole set."""

from __future__ import annotations

from sqlglot import exp

TEXT = exp.DataType.build("TEXT")


def item_set_key(items: exp.Table, alias: str, column: str = "v") -> exp.Subquery:
    """``(record_id, <column>)`` aliased ``alias``: each record's item ids, sorted, joined by
    commas (records without items have no row)."""
    item = exp.column("item_id")
    joined = exp.GroupConcat(this=exp.Order(this=exp.cast(item, TEXT),
                                            expressions=[exp.Ordered(this=item)]),
                             separator=exp.Literal.string(","))
    return (exp.select("record_id", joined.as_(column)).from_(items.copy())
            .group_by("record_id")).subquery(alias)
