"""The levels' itemsets as packed integer keys: each node's rank a digit in base N.

A level of ``size`` nodes (:mod:`.levels`) holds one row per record and itemset it contains.
Stored as (record_id, n1..n_size), its supports are counted by grouping on ``size`` columns and
its rows below k found by joining on them again; on PostgreSQL that grouping and that join cost
more than building the level (100,000 CDR-like users at σ = 0.999, the 11 levels of its
19-region cut, timed by hand: grouped 37.0 s, joined back 53.1 s, built 83.6 s).

Here the cut's N nodes are ranked 0..N-1 in node order and an itemset, its ranks in increasing
order, is the number Σ r_j · N^(size-j): a row is (record_id, k1..kq, last) with q keys of at
most :attr:`KeyPacking.width` digits each (as many as a BIGINT holds: 14 at N = 19, 6 at
N = 1,303), ``last`` the rank of its last node (the next level joins on it). The same
levels grouped in 11.1 s, joined back in 4.6 s and were built in 77.9 s; in the run, its
PostgreSQL search took 413.0 -> 337.3 s, its verify 134.9 -> 80.8 s (BENCHMARKS.md, km,
"Built (stop 90)"). Only the itemsets below k, a few thousand, are turned back into node
ids (:func:`rare_keys_query`), and then their rows found (:func:`rows_of_keys`): every reader
of a level reads those rows, as (record_id, n1..n_size), the same rows as before.

The keys are computed and decoded with parameters (``:base``, ``:p1``...: N and its powers),
never pasted into the SQL.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from setanon_sql.sqlrender import qualified_column as _col
from setanon_sql.sqlrender import with_alias

BIGINT_MAX = 2**63 - 1



def _param(name: str) -> exp.Placeholder:
    return exp.Placeholder(this=name)


@dataclass(frozen=True)
class KeyPacking:
    """How the itemsets of a table with ``nodes`` distinct nodes are packed: digits in base
    ``base`` (the node count, 2 at least), ``width`` digits to a key, so that a key never
    exceeds a BIGINT (N^width - 1 <= 2^63 - 1)."""

    base: int
    width: int

    @classmethod
    def for_nodes(cls, nodes: int) -> KeyPacking:
        base = max(int(nodes), 2)
        width = 1
        while base ** (width + 1) - 1 <= BIGINT_MAX:
            width += 1
        return cls(base, width)

    def keys(self, size: int) -> list[str]:
        """The key columns of a level of ``size`` nodes: k1..kq, q = ceil(size / width)."""
        return [f"k{j}" for j in range(1, (size - 1) // self.width + 2)]

    def grow_params(self, size: int) -> dict[str, int]:
        """The parameters of :func:`level_query` at ``size`` nodes: the base where the node
        is added to the last key, none where it starts a new one (or at 1 node)."""
        return {"base": self.base} if size > 1 and (size - 1) % self.width else {}

    def decode_params(self, size: int) -> dict[str, int]:
        """The powers of the base :meth:`digit` divides by, for a level of ``size`` nodes."""
        longest = min(size, self.width)
        return {"base": self.base, **{f"p{e}": self.base ** e for e in range(1, longest)}}

    def digit(self, size: int, position: int, alias: str) -> exp.Expr:
        """The rank of node ``position`` (1-based) of an itemset of ``size`` nodes, from the
        keys of the row ``alias``: key j holds positions (j-1)·width + 1 .. j·width, the first
        one its most significant digit."""
        chunk, index = divmod(position - 1, self.width)
        digits = min(self.width, size - chunk * self.width)
        power = digits - 1 - index
        key: exp.Expr = _col(alias, f"k{chunk + 1}")
        if power:
            key = exp.IntDiv(this=key, expression=_param(f"p{power}"))
        return exp.cast(exp.Mod(this=exp.paren(key, copy=False), expression=_param("base")),
                        "BIGINT")


def node_ranks_query(table: exp.Table) -> exp.Select:
    """(node_id, r): the distinct nodes of ``table(record_id, node_id, ...)`` ranked 0..N-1 in
    node order, so that ranks in increasing order are nodes in increasing order."""
    node = exp.column("node_id", quoted=True)
    rank = exp.Window(this=exp.func("dense_rank"),
                      order=exp.Order(expressions=[exp.Ordered(this=node.copy())]))
    distinct = exp.select(node.copy()).from_(table.copy()).distinct()
    return exp.select(node.copy(), exp.cast(rank - exp.Literal.number(1), "BIGINT").as_(
        "r", quoted=True)).from_(distinct.subquery("d"))


def level_query(table: exp.Table, ranks: exp.Table, packing: KeyPacking, size: int,
                previous: exp.Table | None, pairs: exp.Table | None) -> exp.Select:
    """The level of ``size`` nodes of ``table(record_id, node_id, ...)``: (record_id,
    k1..kq, last), plus ``first`` (the rank of its first node) at 2 nodes, built from the
    level below (``previous``; None at 1) by one join: each row grows by one node after its
    last. Parameters: :meth:`KeyPacking.grow_params`.

    At 2 nodes a row of the first level grows by the first level's rows of its record with a
    higher rank; from 3 nodes on by the rows of ``pairs`` (the level of 2) that start at its
    last node, a join on (record, node). Joining on the record alone, PostgreSQL's hash join
    tested 186.7 M matches to keep 13.8 M at 8 nodes of the run in the module docstring, and
    the 11 levels took 46.7 s; joined to the pairs, 25.5 s (DuckDB 3.9 -> 3.4 s; BENCHMARKS.md,
    km, "Built (stop 89)")."""
    if previous is None:
        rank = _col("m", "r")
        return (exp.select(_col("t", "record_id").as_("record_id", quoted=True),
                           rank.as_("k1", quoted=True), rank.copy().as_("last", quoted=True))
                .from_(with_alias(table, "t"), copy=False)
                .join(with_alias(ranks, "m"),
                      on=_col("m", "node_id").eq(_col("t", "node_id")), copy=False))
    on: exp.Expr
    if size == 2:
        grown, on = with_alias(previous, "g"), _col("g", "last") > _col("l", "last")
    else:
        assert pairs is not None, "a level of 3 nodes or more grows by the pairs"
        grown, on = with_alias(pairs, "g"), _col("g", "first").eq(_col("l", "last"))
    before, after = packing.keys(size - 1), packing.keys(size)
    added = _col("g", "last")
    columns: list[exp.Expr] = [_col("l", "record_id").as_("record_id", quoted=True)]
    columns += [_col("l", key).as_(key, quoted=True) for key in before[:-1]]
    if len(after) > len(before):  # the last key is full: the node starts a new one
        columns += [_col("l", before[-1]).as_(before[-1], quoted=True),
                    added.copy().as_(after[-1], quoted=True)]
    else:
        shifted = exp.Mul(this=_col("l", before[-1]), expression=_param("base"))
        columns.append(exp.Add(this=shifted, expression=added.copy()).as_(after[-1],
                                                                          quoted=True))
    columns.append(added.as_("last", quoted=True))
    if size == 2:
        columns.append(_col("l", "last").as_("first", quoted=True))
    return (exp.select(*columns).from_(with_alias(previous, "l"), copy=False)
            .join(grown, on=exp.and_(_col("g", "record_id").eq(_col("l", "record_id")), on),
                  copy=False))


def rare_keys_query(level: exp.Table, ranks: exp.Table, packing: KeyPacking, size: int,
                    below: exp.Expr) -> exp.Select:
    """(k1..kq, n1..n_size): the itemsets of ``level`` (:func:`level_query`) with fewer than
    ``below`` rows, grouped by their keys, each key decoded into its node ids (a join to
    ``ranks`` per node, on the few itemsets below k only). Parameters: those of ``below`` and
    :meth:`KeyPacking.decode_params`."""
    keys = packing.keys(size)
    grouped = (exp.select(*(exp.column(key, quoted=True) for key in keys))
               .from_(level.copy(), copy=False)
               .group_by(*(exp.column(key, quoted=True) for key in keys), copy=False)
               .having(exp.func("count", exp.Star()) < below.copy(), copy=False))
    query = exp.select(*(_col("q", key).as_(key, quoted=True) for key in keys),
                       *(_col(f"m{p}", "node_id").as_(f"n{p}", quoted=True)
                         for p in range(1, size + 1))).from_(
        grouped.subquery("q", copy=False), copy=False)
    for p in range(1, size + 1):
        query.join(with_alias(ranks, f"m{p}"),
                   on=_col(f"m{p}", "r").eq(packing.digit(size, p, "q")), copy=False)
    return query


def rows_of_keys(level: exp.Table, rare: exp.Table, packing: KeyPacking,
                 size: int) -> exp.Select:
    """(record_id, n1..n_size): the rows of ``level`` whose itemset is one of ``rare``
    (:func:`rare_keys_query`, stored), joined on the keys."""
    keys = packing.keys(size)
    return (exp.select(_col("l", "record_id").as_("record_id", quoted=True),
                       *(_col("r", f"n{p}").as_(f"n{p}", quoted=True)
                         for p in range(1, size + 1)))
            .from_(with_alias(level, "l"), copy=False)
            .join(with_alias(rare, "r"),
                  on=exp.and_(*(_col("l", key).eq(_col("r", key)) for key in keys)),
                  copy=False))
