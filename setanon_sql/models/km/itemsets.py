"""ℓ-itemset supports in SQL: an ℓ-way self-join of a record-item table, built with sqlglot.

The shape depends on ℓ, so these are expressions rather than named statements. Items of an
itemset are joined in increasing id order, so every itemset of a record appears exactly once.
"""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.sqlrender import identifier, with_alias


def _col(alias: str, name: str) -> exp.Column:
    return exp.Column(this=identifier(name), table=identifier(alias))


def itemset_occurrences(table: exp.Table, ell: int, item: str = "node_id") -> exp.Select:
    """One row (record_id, n1..nℓ) per record and ℓ-itemset it contains, n1 < ... < nℓ."""
    query = exp.select(_col("g1", "record_id").as_("record_id", quoted=True),
                       _col("g1", item).as_("n1", quoted=True)).from_(with_alias(table, "g1"))
    for j in range(2, ell + 1):
        alias, previous = f"g{j}", f"g{j - 1}"
        on = exp.and_(_col(alias, "record_id").eq(_col("g1", "record_id")),
                      _col(alias, item) > _col(previous, item))
        query = query.join(with_alias(table, alias), on=on)
        query = query.select(_col(alias, item).as_(f"n{j}", quoted=True))
    return query


def violating_itemsets(table: exp.Table, ell: int, item: str = "node_id") -> exp.Select:
    """The ℓ-itemsets of ``table`` with support below ``:k`` (support 0 never shows up).

    Columns vid (a number per itemset, in itemset order), n1..nℓ and support.
    """
    nodes = [exp.column(f"n{j}", quoted=True) for j in range(1, ell + 1)]
    counted = (exp.select(*nodes, exp.func("count", exp.Star()).as_("support", quoted=True))
               .from_(itemset_occurrences(table, ell, item).subquery("o"))
               .group_by(*nodes)
               .having(exp.func("count", exp.Star()) < exp.Placeholder(this="k")))
    vid = exp.Window(this=exp.RowNumber(), order=exp.Order(
        expressions=[exp.Ordered(this=n.copy()) for n in nodes]))
    return exp.select(exp.cast(vid, "BIGINT").as_("vid", quoted=True), *nodes,
                      exp.column("support", quoted=True)).from_(counted.subquery("c"))


def itemset_nodes(violations: exp.Table, ell: int) -> exp.Select:
    """(vid, node_id) rows: the itemsets of ``violations`` one node per row."""
    parts = [exp.select(exp.column("vid", quoted=True),
                        exp.column(f"n{j}", quoted=True).as_("node_id", quoted=True))
             .from_(violations.copy()) for j in range(1, ell + 1)]
    query: exp.Query = parts[0]
    for part in parts[1:]:
        query = exp.union(query, part, distinct=False)
    return exp.select("*").from_(query.subquery("u"))


def violation_count(table: exp.Table, ell: int, item: str = "item_id") -> exp.Select:
    """How many ℓ-itemsets of ``table`` have support in [1, :k): the exact k^m check."""
    return (exp.select(exp.func("count", exp.Star()))
            .from_(violating_itemsets(table, ell, item).subquery("v")))
