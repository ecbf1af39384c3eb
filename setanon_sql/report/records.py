"""Whole-record figures: how single-valued columns changed, and classes of identical records.

These statements depend on the dataset's columns, so they are sqlglot expressions built here
(identifiers come from ``names.qi_column``; no value is pasted). Both run in the DBMS and return
one row per column, or the histogram of class sizes.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset
from setanon_sql.io.published import Published
from setanon_sql.sqlrender import with_alias

_TEXT = exp.DataType.build("TEXT")


def column_changes(backend: Backend, dataset: Dataset, before: Published,
                   after: Published) -> list[dict[str, Any]]:
    """Per single-valued QI: distinct values as loaded and published, and the share of
    published records whose value differs from the loaded one (compared as text)."""
    result = []
    for attribute in (a for a in dataset.single_attributes if a.role == "qi"):
        old = exp.cast(exp.column(attribute.column, table="b"), _TEXT)
        new = exp.cast(exp.column(attribute.column, table="a"), _TEXT)
        changed: exp.Expr = exp.func("count", exp.Star())
        changed = exp.Filter(this=changed, expression=exp.Where(this=exp.NullSafeEQ(
            this=old, expression=new).not_()))
        query = (exp.select(exp.func("count", exp.Star()), changed,
                            exp.Count(this=exp.Distinct(expressions=[old])),
                            exp.Count(this=exp.Distinct(expressions=[new])))
                 .from_(with_alias(after.records, "a"))
                 .join(with_alias(before.records, "b"),
                       on=exp.column("record_id", table="b").eq(
                           exp.column("record_id", table="a"))))
        n, n_changed, distinct_before, distinct_after = backend.query(query)[0]
        result.append({"name": attribute.name, "published_records": int(n),
                       "changed": int(n_changed or 0),
                       "changed_share": int(n_changed or 0) / int(n) if n else 0.0,
                       "distinct_before": int(distinct_before),
                       "distinct_after": int(distinct_after)})
    return result


def record_classes(backend: Backend, dataset: Dataset, view: Published) -> list[list[int]]:
    """(class size, number of classes) over records identical in every published QI and set.

    The k-anonymity view of a whole record: a class of size 1 is a record nobody shares. Sets
    are compared as their sorted item ids joined into one text per record.
    """
    records = with_alias(view.records, "r")
    keys: list[exp.Expr] = [exp.column(a.column, table="r")
                                  for a in dataset.single_attributes if a.role == "qi"]
    query = exp.select(exp.func("count", exp.Star()).as_("class_size")).from_(records)
    for attribute in dataset.set_attributes:
        alias = f"s{attribute.attr_no}"
        item = exp.cast(exp.column("item_id"), _TEXT)
        joined = exp.GroupConcat(this=exp.Order(this=item, expressions=[
            exp.Ordered(this=exp.column("item_id"))]), separator=exp.Literal.string(" "))
        cells = (exp.select("record_id", joined.as_("v")).from_(view.items[attribute.attr_no])
                 .group_by("record_id"))
        query = query.join(cells.subquery(alias), join_type="left",
                           on=exp.column("record_id", table=alias).eq(
                               exp.column("record_id", table="r")))
        keys.append(exp.column("v", table=alias))
    if keys:
        query = query.group_by(*keys)
    histogram = (exp.select("class_size", exp.func("count", exp.Star()).as_("n_classes"))
                 .from_(query.subquery("c")).group_by("class_size").order_by("class_size"))
    return [[int(size), int(n)] for size, n in backend.query(histogram)]
