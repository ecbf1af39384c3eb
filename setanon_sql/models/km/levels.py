"""Enumerating the itemsets of every record level by level: each size a table built from the one
below by one join.

The certificate (:mod:`.exactcheck`), its steering (:mod:`.imagetrack`) and verify enumerate
the itemsets of 1, 2, ... ℓ nodes of every generalized record. One statement per size, each a
chain of joins, redoes the joins of every smaller size: at ℓ = 11, on the 19-region cut of
100,000 CDR-like users (σ = 0.999), 337 M joined rows where the levels hold 75 M. Built level
by level instead (:func:`.levelkeys.level_query`), each join is done once and each size's
supports are read from its level (its itemsets packed into integer keys, :mod:`.levelkeys`).
That run's first tries of the certificate and its steering took 74.6 → 34.7 s on DuckDB and
729.2 → 485.4 s on PostgreSQL, where the chain's statement also ran in one process, its rows
named twice in a CTE (BENCHMARKS.md, km, "Built (stop 86)").

Two levels are stored at a time, and the level of 2 nodes (the deeper ones grow by it), so
where the widest level would hold more than :data:`LEVEL_ROWS_MAX` rows the callers enumerate
by the chain, which stores none; and where the chain would join fewer than
:data:`LEVEL_GAIN` times the levels' rows (long records, whose top level holds most of them),
the chain is the cheaper way (:func:`levels_pay`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from math import comb

from sqlglot import exp

from setanon_sql.backends.base import Backend, Params
from setanon_sql.models.km.levelkeys import (
    KeyPacking,
    level_query,
    node_ranks_query,
    rare_keys_query,
    rows_of_keys,
)

# The widest level stored: at 9 columns (ℓ = 8) about 2.9 GB before compression. The fine cut
# above holds 13.8 M rows at its widest; a σ = 0.999 certificate priced at 1 M users may
# enumerate 10^9 rows, which the chain streams and the levels would store.
LEVEL_ROWS_MAX = 40_000_000
# Levels are built where the chain would join at least this many times their rows (see
# :func:`levels_pay`: a level's row costs about twice a chain's).
LEVEL_GAIN = 2.0


def level_rows(lengths: list[tuple[int, int]], size: int) -> int:
    """Rows of the level of ``size`` nodes, from the records' (nodes, records) pairs."""
    return sum(int(n) * comb(int(length), size) for length, n in lengths)


def fits_levels(lengths: list[tuple[int, int]], deepest: int) -> bool:
    """Whether every level up to ``deepest`` nodes holds at most :data:`LEVEL_ROWS_MAX` rows."""
    return all(level_rows(lengths, size) <= LEVEL_ROWS_MAX for size in range(1, deepest + 1))


def levels_pay(lengths: list[tuple[int, int]], deepest: int) -> bool:
    """Whether to enumerate by levels (where they fit, :func:`fits_levels`) rather than by the
    chain: where the chain joins at least :data:`LEVEL_GAIN` times the rows the levels hold.

    The chain's statement for s nodes joins again every level below s, so it joins Σ_j
    (deepest - j + 1) × rows(j) where the levels hold Σ_j rows(j); but a level's row costs
    about twice a chain's (it is written, grouped by its keys and joined back for the rows
    below k). At ℓ = 11 on the 19-region cut of 100,000 CDR-like users the chain joined 4.5
    times the levels' rows, and the levels took 34.7 s against its 74.6 s (module docstring).
    Retail's records are long, so its top level holds most of the rows: the chain joins
    1.1-1.2 times them at ℓ = 3 and 4, and the levels made the sampled search's first
    enumerations of size 3 about twice as slow (BENCHMARKS.md, km, "Built (stop 96)")."""
    if not fits_levels(lengths, deepest):
        return False
    rows = [level_rows(lengths, size) for size in range(1, deepest + 1)]
    chain = sum(held * (deepest - size + 1) for size, held in enumerate(rows, start=1))
    return chain >= LEVEL_GAIN * sum(rows)


def level_bytes(lengths: list[tuple[int, int]], deepest: int) -> int:
    """About the bytes of the widest level up to ``deepest`` nodes: 8 a value, a record id, a
    last and a first node, and a key per 3 nodes (:mod:`.levelkeys`: a key holds at least 3
    digits wherever the cut has at most 2^21 nodes; 14 at 19 nodes)."""
    return max(level_rows(lengths, size) * (3 + -(-size // 3)) * 8
               for size in range(1, deepest + 1))


def for_each_level(backend: Backend, table: exp.Table, lengths: list[tuple[int, int]],
                   deepest: int, name: Callable[[str], exp.Table],
                   visit: Callable[[Level], None]) -> None:
    """Build the levels of 1..``deepest`` nodes of ``table(record_id, node_id, c)`` and call
    ``visit(level)`` on each, in increasing size; ``name(purpose)`` names the tables
    (``level<size>``, ``ranks``). A level is dropped once the next is built (the level of 2
    nodes at the end: the deeper ones grow by it), and the last one at the end, whatever
    happens. ``lengths``: the (nodes, records) pairs of ``table``.

    A level is read by the next level and by its visit, then dropped: the engine may store it
    for speed (:meth:`.Backend.short_lived_tables`; on DuckDB in memory where it fits: the
    levels of the run above took 70.7 s in the file, compressed as they were written, and
    25.3 s in memory)."""
    chain = _Chain(backend, table, name("ranks"), level_bytes(lengths, deepest))
    try:
        for size in range(1, deepest + 1):
            visit(chain.grow(size, name(f"level{size}")))
    finally:
        chain.drop()


@dataclass(frozen=True)
class Level:
    """A stored level: ``table`` (record_id, k1..kq, last) holds each itemset of ``size``
    nodes of each record as packed keys (:mod:`.levelkeys`: ranks in ``ranks``, digits as
    ``packing`` says). Read its rows through :func:`rows_below_of`."""

    table: exp.Table
    size: int
    ranks: exp.Table
    packing: KeyPacking


@dataclass
class _Chain:
    """The levels of ``table`` being built one from the other: the deepest so far, and the
    level of 2 nodes (:func:`.levelkeys.level_query`: the deeper levels grow by it), kept
    until :meth:`drop`, with the nodes' ranks (``ranks``, built with the first level).
    ``widest``: the bytes of the widest level its caller builds."""

    backend: Backend
    table: exp.Table
    ranks: exp.Table
    widest: int
    packing: KeyPacking | None = None
    deepest: Level | None = None
    pairs: Level | None = None

    def grow(self, size: int, table: exp.Table) -> Level:
        """Build ``table``, the level of ``size`` nodes, from the deepest (of ``size`` - 1),
        which is dropped unless it is the pairs; returns the level."""
        try:
            if self.packing is None:
                self.backend.materialize(self.ranks, node_ranks_query(self.table),
                                         working=True)
                nodes = int(self.backend.scalar(
                    exp.select(exp.func("count", exp.Star())).from_(self.ranks.copy())))
                self.packing = KeyPacking.for_nodes(nodes)
            _build_level(self.backend, self, size, table)
        except BaseException:
            self.backend.drop_table(table)
            raise
        finally:
            self._drop_deepest()
        level = self.deepest = Level(table, size, self.ranks, self.packing)
        if size == 2:
            self.pairs = level
        return level

    def _drop_deepest(self) -> None:
        if self.deepest is not None and self.deepest is not self.pairs:
            self.backend.drop_table(self.deepest.table)
        self.deepest = None

    def drop(self) -> None:
        self._drop_deepest()
        if self.pairs is not None:
            self.backend.drop_table(self.pairs.table)
        self.pairs = None
        self.backend.drop_table(self.ranks)
        self.packing = None


def _build_level(backend: Backend, chain: _Chain, size: int, table: exp.Table) -> None:
    """``table``: the level of ``size`` nodes of ``chain``'s table, from its deepest level and
    pairs, stored as a short-lived table (of about ``chain.widest`` bytes at most)."""
    assert chain.packing is not None
    query = level_query(chain.table, chain.ranks, chain.packing, size,
                        None if chain.deepest is None else chain.deepest.table,
                        None if chain.pairs is None else chain.pairs.table)
    with backend.short_lived_tables(chain.widest):
        backend.materialize(table, query, chain.packing.grow_params(size), working=True)


@contextmanager
def rows_below_of(backend: Backend, level: Level, below: exp.Expr, params: Params,
                  itemsets: exp.Table, rows: exp.Table) -> Iterator[exp.Table]:
    """The rows of ``level`` of the itemsets with fewer than ``below`` holders, stored as
    ``rows`` (record_id, n1..n_size) for the block and then dropped; those itemsets are stored
    first as ``itemsets`` (:func:`.levelkeys.rare_keys_query`), dropped once ``rows`` is
    built. What the level's visits read (:func:`.itemsets.violating_images` and
    :func:`.itemsets.image_violations`): the records' items under the nodes are read for
    these rows alone.

    Separate statements, each on tables whose sizes the engine knows. In one statement
    PostgreSQL's parallel workers each built the aggregate's hash table themselves (three
    scans of the 12.2 M rows of the 9-node level of 100,000 CDR-like users at σ = 0.999, 12.2
    of the statement's 15.0 s, EXPLAIN ANALYZE); with the itemsets stored but their rows not,
    it estimated 318 rows of the 10-node level's 119,161 and joined all its 8.9 M rows to the
    records' items first (74.6 s where the separate statements take a few)."""
    try:
        _store_rows_below(backend, level, below, params, itemsets, rows)
        yield rows
    finally:
        backend.drop_table(rows)


def _store_rows_below(backend: Backend, level: Level, below: exp.Expr, params: Params,
                      itemsets: exp.Table, rows: exp.Table) -> None:
    """``rows``: :func:`rows_below_of`'s table, built through ``itemsets`` (dropped here)."""
    try:
        backend.materialize(itemsets, rare_keys_query(
            level.table, level.ranks, level.packing, level.size, below),
            {**dict(params or {}), **level.packing.decode_params(level.size)}, working=True)
        backend.materialize(rows, rows_of_keys(level.table, itemsets, level.packing,
                                               level.size), working=True)
    finally:
        backend.drop_table(itemsets)


@dataclass
class KeptLevels:
    """The rows of itemsets below k of each level of one cut (:func:`rows_below_of`), kept
    with the deepest level built, for the next enumeration of the same cut.

    The sampled search enumerates each size's first cut once (:mod:`.enumsteer`,
    :mod:`.exactcheck`), and where merges are few it is the same cut from one size to the
    next: on 100,000 CDR-like users at σ = 0.999 the cut reached at ℓ = 4 certified every size
    from 5 to 11 at once, and their seven enumerations built 56 levels where 11 hold every
    row (levels 1..5, then 1..6, ... 1..11). A size's images differ from the last size's only
    in their bound (the ℓ-itemsets each image stands for), computed from these rows; the
    rows themselves depend on the cut and k alone. So the rows of each size are kept while
    the cut and k stay, and a deeper enumeration builds only the levels past the deepest
    kept, from it. Any other cut or k drops them all first. That run's search, 74.3 -> 61.4 s
    on DuckDB and 699.3 -> 450.3 s on PostgreSQL (BENCHMARKS.md, km, "Built (stop 89)").

    ``name`` gives the work tables their names (purpose -> table). Drop with :meth:`drop`:
    the search does when it ends, whatever happens."""

    backend: Backend
    name: Callable[[str], exp.Table]
    key: tuple[int, int] | None = None  # (cut version, k) of the kept rows
    rows: dict[int, exp.Table] = field(default_factory=dict)  # size -> its rows below k
    chain: _Chain | None = None  # the deepest level built (of max(rows) nodes), and pairs

    def each(self, key: tuple[int, int], table: exp.Table, lengths: list[tuple[int, int]],
             deepest: int, visit: Callable[[int, exp.Table], None]) -> None:
        """Call ``visit(size, rows)`` for sizes 1..``deepest`` in increasing order, ``rows``
        (record_id, n1..n_size) those of the itemsets below k of that level of ``table``
        (``km_generalized_counts`` of the cut ``key`` names: (version, k); ``lengths`` its
        (nodes, records) pairs), built where not kept."""
        if key != self.key:
            self.drop()
            self.key = key
        widest = level_bytes(lengths, deepest)
        for size in range(1, deepest + 1):
            if size not in self.rows:
                self._extend(table, size, widest)
            visit(size, self.rows[size])

    def rows_to_build(self, key: tuple[int, int], lengths: list[tuple[int, int]],
                      deepest: int) -> int:
        """The level rows :meth:`each` would build for these arguments: those of the sizes
        not kept for ``key``."""
        return sum(level_rows(lengths, size) for size in range(1, deepest + 1)
                   if key != self.key or size not in self.rows)

    def holds(self, key: tuple[int, int]) -> bool:
        """Whether rows of the cut and k ``key`` names are kept."""
        return key == self.key and bool(self.rows)

    def _extend(self, table: exp.Table, size: int, widest: int) -> None:
        """Build the level of ``size`` nodes from the deepest kept (``size`` - 1) and keep its
        rows below k. Whatever fails, nothing stays (the kept sizes would no longer follow
        each other)."""
        assert self.key is not None and len(self.rows) == size - 1
        try:
            if self.chain is None:  # at size 1 (from 3 nodes on, levels grow by the pairs)
                self.chain = _Chain(self.backend, table, self.name("ranks"), widest)
            self.chain.widest = widest  # the engine stores a level by this call's widest
            level = self.chain.grow(size, self.name(f"level{size}"))
            rows = self.rows[size] = self.name(f"below{size}")
            _store_rows_below(self.backend, level, exp.Placeholder(this="k"),
                              {"k": self.key[1]}, self.name(f"rare{size}"), rows)
        except BaseException:
            self.drop()
            raise

    def drop(self) -> None:
        """Drop every kept table: the rows of each size and the levels kept."""
        if self.chain is not None:
            self.chain.drop()
            self.chain = None
        for rows in self.rows.values():
            self.backend.drop_table(rows)
        self.rows.clear()
        self.key = None
