"""Enumerating the itemsets of every record level by level: each size a table built from the one
below by one join.

The certificate (:mod:`.exactcheck`), its steering (:mod:`.imagetrack`) and verify enumerate
the itemsets of 1, 2, ... ℓ nodes of every generalized record. One statement per size, each a
chain of joins, redoes the joins of every smaller size: at ℓ = 11, on the 19-region cut of
100,000 CDR-like users (σ = 0.999), 337 M joined rows where the levels hold 75 M. Built level
by level instead (:func:`.itemsets.level_query`), each join is done once and each size's
supports are read from its level. That run's first tries of the certificate and its steering
took 74.6 → 34.7 s on DuckDB and 729.2 → 485.4 s on PostgreSQL, where the chain's statement
also ran in one process, its rows named twice in a CTE (BENCHMARKS.md, km, "Built (stop 86)").

Two levels are stored at a time, so where the widest level would hold more than
:data:`LEVEL_ROWS_MAX` rows the callers enumerate by the chain, which stores none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from math import comb

from sqlglot import exp

from setanon_sql.backends.base import Backend, Params
from setanon_sql.models.km.itemsets import level_query, rare_itemsets, rows_of_itemsets

# The widest level stored: at 9 columns (ℓ = 8) about 2.9 GB before compression. The fine cut
# above holds 13.8 M rows at its widest; a σ = 0.999 certificate priced at 1 M users may
# enumerate 10^9 rows, which the chain streams and the levels would store.
LEVEL_ROWS_MAX = 40_000_000


def level_rows(lengths: list[tuple[int, int]], size: int) -> int:
    """Rows of the level of ``size`` nodes, from the records' (nodes, records) pairs."""
    return sum(int(n) * comb(int(length), size) for length, n in lengths)


def fits_levels(lengths: list[tuple[int, int]], deepest: int) -> bool:
    """Whether every level up to ``deepest`` nodes holds at most :data:`LEVEL_ROWS_MAX` rows."""
    return all(level_rows(lengths, size) <= LEVEL_ROWS_MAX for size in range(1, deepest + 1))


def level_bytes(lengths: list[tuple[int, int]], deepest: int) -> int:
    """About the bytes of the widest level up to ``deepest`` nodes: 8 a value, a record id and
    a node per position."""
    return max(level_rows(lengths, size) * (1 + size) * 8 for size in range(1, deepest + 1))


def for_each_level(backend: Backend, table: exp.Table, lengths: list[tuple[int, int]],
                   deepest: int, name: Callable[[int], exp.Table],
                   visit: Callable[[int, exp.Table], None]) -> None:
    """Build the levels of 1..``deepest`` nodes of ``table(record_id, node_id, c)`` as tables
    ``name(size)`` and call ``visit(size, level)`` on each, in increasing size. A level is
    dropped once the next is built, and the last one at the end, whatever happens.
    ``lengths``: the (nodes, records) pairs of ``table``.

    A level is read by the next level and by its visit, then dropped: the engine may store it
    for speed (:meth:`.Backend.short_lived_tables`; on DuckDB in memory where it fits: the
    levels of the run above took 70.7 s in the file, compressed as they were written, and
    25.3 s in memory)."""
    previous: exp.Table | None = None
    widest = level_bytes(lengths, deepest)
    try:
        for size in range(1, deepest + 1):
            current = name(size)  # once a size: ``name`` may draw a fresh name each call
            try:
                with backend.short_lived_tables(widest):
                    backend.materialize(current, level_query(table, size, previous),
                                        working=True)
            finally:
                if previous is not None:
                    backend.drop_table(previous)
            previous = current
            visit(size, current)
    finally:
        if previous is not None:
            backend.drop_table(previous)


@contextmanager
def rows_below_of(backend: Backend, level: exp.Table, size: int, below: exp.Expr,
                  params: Params, itemsets: exp.Table, rows: exp.Table) -> Iterator[exp.Table]:
    """The rows of ``level`` of the itemsets with fewer than ``below`` holders, stored as
    ``rows`` (record_id, n1..n_size) for the block and then dropped; those itemsets are stored
    first as ``itemsets`` (:func:`.itemsets.rare_itemsets`), dropped once ``rows`` is built.
    What the level's visits read (:func:`.itemsets.violating_images` and
    :func:`.itemsets.image_violations`): the records' items under the nodes are read for
    these rows alone.

    Three statements, each on tables whose sizes the engine knows. In one statement
    PostgreSQL's parallel workers each built the aggregate's hash table themselves (three
    scans of the 12.2 M rows of the 9-node level of 100,000 CDR-like users at σ = 0.999, 12.2
    of the statement's 15.0 s, EXPLAIN ANALYZE); with the itemsets stored but their rows not,
    it estimated 318 rows of the 10-node level's 119,161 and joined all its 8.9 M rows to the
    records' items first (74.6 s where the three statements take a few)."""
    try:
        backend.materialize(itemsets, rare_itemsets(level, size, below), params, working=True)
        backend.materialize(rows, rows_of_itemsets(level, itemsets, size), working=True)
        backend.drop_table(itemsets)
        yield rows
    finally:
        backend.drop_table(itemsets)
        backend.drop_table(rows)
