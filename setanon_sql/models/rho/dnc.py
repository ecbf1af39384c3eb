"""Divide-and-conquer (Jia et al. Alg. 3): partitions of consecutive records, sanitized apart.

Why the combination stays safe: partitions T_1..T_n split the records, so for any itemset X,
sup_T(X) = Σ_i sup_{T_i}(X). If every suppressed partition is safe, then for every qid q and
sensitive e ∉ q, sup_{T_i}(q + {e}) <= ρ·sup_{T_i}(q) in every partition (where q does not occur
both sides are 0), and summing gives sup_T(q + {e}) <= ρ·sup_T(q): the union is safe. The same
holds for qids of at most m items. The partitions are not processed one after the other: every
statement of the suppressor groups by ``part``, so all partitions advance together in one pass.
"""

from __future__ import annotations

import math

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.rho.qids import col
from setanon_sql.sqlrender import with_alias


def cost(n_records: int, n_items: int, n_types: int) -> float:
    """Cost(T) = |T| · 2^(N / |T|) / |D(T)| (eq. 6); N items, D(T) the item types of T."""
    if n_records == 0 or n_types == 0:
        return 0.0
    return n_records * math.pow(2.0, min(n_items / n_records, 1000.0)) / n_types


def _node_stats(backend: Backend, ranks: exp.Table, items: exp.Table,
                nodes: list[tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """(items, item types) of every record range [lo, hi) of ``nodes``, in one statement."""
    values = exp.Values(expressions=[exp.Tuple(expressions=[exp.convert(lo), exp.convert(hi)])
                                     for lo, hi in nodes],
                        alias=exp.TableAlias(this=exp.to_identifier("v", quoted=True),
                                             columns=[exp.to_identifier("lo", quoted=True),
                                                      exp.to_identifier("hi", quoted=True)]))
    query = (exp.select(col("lo", "v"), exp.func("count", exp.Star()),
                        exp.Count(this=exp.Distinct(expressions=[col("item_id", "i")])))
             .from_(values)
             .join(with_alias(ranks, "r"), on=exp.and_(col("rk", "r") >= col("lo", "v"),
                                                       col("rk", "r") < col("hi", "v")))
             .join(with_alias(items, "i"), on=col("record_id", "i").eq(col("record_id", "r")))
             .group_by(col("lo", "v")))
    return {int(lo): (int(n), int(d)) for lo, n, d in backend.query(query)}


def split_points(backend: Backend, ranks: exp.Table, items: exp.Table, n_records: int,
                 t_max: float) -> list[int]:
    """First ranks of the partitions: Alg. 3 halves a range while Cost(range) > t_max.

    One statement per level of the recursion computes the figures of all its ranges.
    """
    leaves: list[int] = []
    frontier = [(0, n_records)]
    while frontier:
        stats = _node_stats(backend, ranks, items, frontier)
        following: list[tuple[int, int]] = []
        for lo, hi in frontier:
            n_items, n_types = stats.get(lo, (0, 0))
            if hi - lo >= 2 and cost(hi - lo, n_items, n_types) > t_max:
                middle = (lo + hi) // 2
                following += [(lo, middle), (middle, hi)]
            else:
                leaves.append(lo)
        frontier = following
    return sorted(leaves)


def base_query(items: exp.Table, ranks: exp.Table, starts: list[int]) -> exp.Select:
    """T0 as (record_id, item_id, part): part = the partition holding the record's rank."""
    if len(starts) <= 1:
        return exp.select(col("record_id"), col("item_id"),
                          exp.cast(exp.Literal.number(0), "BIGINT").as_("part", quoted=True)
                          ).from_(items.copy())
    case = exp.Case()
    for part, start in enumerate(starts[1:]):
        case = case.when(col("rk", "r") < exp.convert(start), exp.convert(part))
    case = case.else_(exp.convert(len(starts) - 1))
    return (exp.select(col("record_id", "i"), col("item_id", "i"),
                       exp.cast(case, "BIGINT").as_("part", quoted=True))
            .from_(with_alias(items, "i"))
            .join(with_alias(ranks, "r"), on=col("record_id", "r").eq(col("record_id", "i"))))
