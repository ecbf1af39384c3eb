"""A full enumeration too big for one aggregate, counted in slices of its first node.

The exact sizes' first round (:func:`.exact.enforce_exact`) groups every ℓ-itemset of every
record of <R, D> by its nodes in one statement. At the paper's own scale (Acs et al., Table II:
4,427,486 CDR-like users) the cut after size 3 left 160 nodes and 6.9 nodes a user, and size
4's first round was Σ_r C(|g_r|, 4) = 1.04 × 10^10 itemset rows: DuckDB's statement wrote over
53 GB to disk (14 GB memory limit) before it was stopped with 14 GB of the disk left.
Every itemset has exactly one first node n1, so grouping the rows whose n1 lies in one range
of node ids counts those itemsets completely: the union of the slices' rows below k is the one
statement's, row for row, and each slice stays in memory (there, node ids 6-8, about 7 × 10^8
rows, took 32.9 s with nothing written to disk).

A slice is a range of consecutive node ids whose itemsets number at most ``max_rows`` (a node
with more is a slice alone): a record of L nodes has C(L - 1 - p, ℓ - 1) itemsets starting at
its node of rank p (from 0), counted in one pass over the records' nodes. Enumerations within
``max_rows`` run as one statement as before; what is counted never changes, only in how many
statements.

The same holds for the verifier's exact check of a published output, as large as the search's
first round (:func:`violation_total`). (A later round of the search counts only the images of
the round before's violations, :mod:`.exact`, so its groups are no more than those.)
"""

from __future__ import annotations

from collections.abc import Callable
from math import comb

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.km.itemsets import (
    binomial,
    numbered_itemsets,
    violating_counts,
    violating_itemsets,
    violation_count,
)
from setanon_sql.models.km.shapes import record_lengths
from setanon_sql.sqlrender import union_all

# Itemset rows one statement may group. DuckDB grouped 7 × 10^8 rows into at most 1.8 M
# itemsets in memory at 4.4 M users, and wrote 53 GB to disk at 10^10 (above). At 1 M
# CDR-like users this cuts size 3's first round (9.1 × 10^8 rows) in two, at no measurable
# cost (BENCHMARKS.md, km, "Built (stop 98)").
SLICE_ROWS = 500_000_000


def first_node_rows(table: exp.Table, ell: int, item: str = "node_id") -> exp.Select:
    """(first, rows): for each node of ``table(record_id, item)``, how many ℓ-itemsets of the
    records have it as their smallest node: Σ over its holders of C(nodes after it, ℓ - 1)."""
    record = exp.column("record_id", quoted=True)
    node = exp.column(item, quoted=True)
    length = exp.Window(this=exp.func("count", exp.Star()), partition_by=[record.copy()])
    order = exp.Order(expressions=[exp.Ordered(this=node.copy())])
    upto = exp.Window(this=exp.RowNumber(), partition_by=[record.copy()], order=order)
    ranked = exp.select(node.as_("first", quoted=True),
                        exp.Sub(this=length, expression=upto).as_("after", quoted=True)).from_(
        table.copy(), copy=False)
    first = exp.column("first", quoted=True)
    return (exp.select(first, exp.func("sum", binomial(exp.column("after", quoted=True),
                                                       ell - 1)).as_("rows", quoted=True))
            .from_(ranked.subquery("r", copy=False), copy=False)
            .group_by(first.copy(), copy=False)
            .order_by(first.copy(), copy=False))


def slices_of(rows: list[tuple[int, float]], max_rows: int) -> list[tuple[int, int]]:
    """Ranges (first node, last node) of consecutive nodes of ``rows`` (node, its itemsets, in
    node order) holding at most ``max_rows`` itemsets each, a node above that alone."""
    ranges: list[tuple[int, int]] = []
    held = 0.0
    for node, count in rows:
        if ranges and held + count <= max_rows:
            ranges[-1] = (ranges[-1][0], node)
            held += count
        else:
            ranges.append((node, node))
            held = count
    return ranges


def first_node_slices(backend: Backend, table: exp.Table, ell: int,
                      max_rows: int | None = None,
                      item: str = "node_id") -> list[tuple[int, int]] | None:
    """The slices enumerating ``table``'s ℓ-itemsets takes, or None where one statement holds
    them all (decided from the records' lengths first, so the pass by node is made only for an
    enumeration that needs it). ``max_rows``: :data:`SLICE_ROWS` unless given."""
    max_rows = SLICE_ROWS if max_rows is None else max_rows
    total = sum(n * comb(length, ell) for length, n in record_lengths(backend, table))
    if total <= max_rows:
        return None
    return _slices(backend, first_node_rows(table, ell, item), max_rows)


def _slices(backend: Backend, by_node: exp.Select,
            max_rows: int) -> list[tuple[int, int]] | None:
    rows = [(int(node), float(count)) for node, count in backend.query(by_node)]
    if sum(count for _, count in rows) <= max_rows:
        return None
    return slices_of(rows, max_rows)


def materialize_violating_itemsets(backend: Backend, target: exp.Table, table: exp.Table,
                                   ell: int, k: int, work: Callable[[str], exp.Table],
                                   max_rows: int | None = None) -> int:
    """``target`` = :func:`.itemsets.violating_itemsets` of ``table`` below ``k``, in slices of
    the first node where the enumeration holds more than ``max_rows`` itemsets (module
    docstring). Returns the number of slices (1: one statement)."""
    ranges = first_node_slices(backend, table, ell, max_rows)
    if ranges is None:
        backend.materialize(target, violating_itemsets(table, ell), {"k": k})
        return 1
    parts = violating_slices(backend, table, ell, k, work, ranges)
    try:
        backend.materialize(target, numbered_itemsets(union_all(
            [slice_rows(part, ell) for part in parts], copy=False), ell))
    finally:
        for part in parts:
            backend.drop_table(part)
    return len(ranges)


def violation_total(backend: Backend, table: exp.Table, ell: int, k: int, item: str,
                    max_rows: int | None = None) -> int:
    """:func:`.itemsets.violation_count` (ℓ-itemsets of ``table`` with support in [1, k)),
    summed over slices of the first node where one statement would group more than
    ``max_rows`` rows: the exact check of a published output as large as the search's."""
    ranges = first_node_slices(backend, table, ell, max_rows, item)
    if ranges is None:
        return int(backend.scalar(violation_count(table, ell, item), {"k": k}))
    return sum(int(backend.scalar(violation_count(table, ell, item, first=True),
                                  {"k": k, "first_low": low, "first_high": high}))
               for low, high in ranges)


def violating_slices(backend: Backend, table: exp.Table, ell: int, k: int,
                     work: Callable[[str], exp.Table],
                     ranges: list[tuple[int, int]]) -> list[exp.Table]:
    """One table per range of first nodes holding :func:`.itemsets.violating_counts` of the
    itemsets starting there; the caller drops them (they are dropped here if one fails)."""
    parts: list[exp.Table] = []
    try:
        for i, (low, high) in enumerate(ranges):
            parts.append(work(f"vslice{i}"))
            backend.materialize(parts[-1], violating_counts(table, ell, first=True),
                                {"k": k, "first_low": low, "first_high": high})
    except BaseException:
        for part in parts:
            backend.drop_table(part)
        raise
    return parts


def slice_rows(part: exp.Table, ell: int) -> exp.Select:
    """(n1..nℓ, support) of one of :func:`violating_slices`' tables."""
    return exp.select(*(exp.column(f"n{j}", quoted=True) for j in range(1, ell + 1)),
                      exp.column("support", quoted=True)).from_(part.copy())
