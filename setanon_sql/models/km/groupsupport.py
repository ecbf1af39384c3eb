"""Supports of many itemsets at once, by the cheaper of two plans.

Used for Alg. 2 l.9-10 (which generalized samples are below k: a pool generalized by the cut
is ``groups(vid, node_id, n)``, one itemset of 1..ℓ nodes per vid, two items under one node
making it shorter) and for the sampler's rejection step (the support in D of each distinct
proposed itemset, or under the first-holder rule each proposal's first holder below its own
record, ``bounds``: :func:`itemset_support`). The supports can be counted

- by **postings**, shared by prefix (:func:`prefix_support`): each itemset's nodes are put in
  one global order, rarest first; the records of each distinct first node are read once, and
  kept for each distinct second node they also hold, and so on, one level per node. Itemsets
  sharing their rarest nodes share those rows: the former chain, which followed each itemset
  on its own, read the postings of a first node once per itemset (at 1 M CDR-like users its
  two links took 613 s of 1,800, and the rejection step enumerated instead, 308 s more).
  Cheap while the first nodes are rare, expensive once nodes are coarse and many itemsets
  differ early. A level is extended from each held prefix to its extensions, or, where
  prefixes have many extensions, from each held record to its own nodes (whichever makes fewer
  rows: at 1 M CDR-like users, m = 7, the first way alone took 793 s of the search);
- by **enumeration** (``itemset_supports``): every s-subset of every generalized record,
  matched to the itemsets of size s, as the exact search counts. Cheap once records are short
  in nodes, expensive on long records (C(161, 4) = 27 M subsets for BMS-WebView-2's longest).

Both give the same supports, so the choice changes the time only, never the cut. The rows each
plan reads are computed first from small aggregates (the first two levels of the prefixes,
where postings are longest, against Σ_r C(|g_r|, s), with g_r restricted to the nodes some
itemset holds) and the smaller one runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise
from math import comb
from typing import NamedTuple

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.km.itemsets import (
    bounded_rows,
    enumeration_joins,
    itemset_rows,
    itemset_supports,
    prefix_cost,
    prefix_counts,
    prefix_extend,
    prefix_extend_by_records,
    prefix_extension_rows,
    prefix_ids,
    prefix_level,
    prefix_record_bound,
    prefix_start,
    prefix_supports,
    rarest_first_rows,
)


class PlanCosts(NamedTuple):
    """Itemset sizes present and the rows each plan would read."""

    sizes: list[int]
    postings: int
    enumeration: int


def plan_costs(backend: Backend, itemsets: exp.Table, records: exp.Table,
               work: Callable[[str], exp.Table], bounds: exp.Table | None = None) -> PlanCosts:
    """The rows each plan reads. Leaves ``work("gids")`` (:func:`.itemsets.prefix_ids`, the
    prefix plan's input; with ``bounds``, bounded and shared by tier) and ``work("glens")``
    (``km_group_lengths``: each record's length in the itemsets' nodes) unless there is no
    itemset. The costs are of the unbounded plans (bounds only remove rows)."""
    node_postings, rows, tiered = work("gocc"), work("grows"), work("gbrows")
    ids, lengths = work("gids"), work("glens")
    sizes = sorted(int(size) for (size,) in backend.query("km_group_sizes", None,
                                                          {"groups": itemsets}))
    if not sizes:
        return PlanCosts([], 0, 0)
    try:
        backend.materialize(node_postings, "km_group_node_postings", None,
                            {"groups": itemsets, "g": records})
        backend.materialize(rows, rarest_first_rows(itemsets, node_postings, max(sizes)))
        if bounds is not None:
            backend.materialize(tiered, bounded_rows(rows, bounds))
        backend.materialize(ids, prefix_ids(rows if bounds is None else tiered, max(sizes),
                                            bounded=bounds is not None))
        postings = int(backend.scalar(prefix_cost(ids, node_postings, max(sizes))) or 0)
    finally:
        for table in (node_postings, rows, tiered):
            backend.drop_table(table)
    backend.materialize(lengths, "km_group_lengths", None, {"groups": itemsets, "g": records})
    histogram = backend.query("km_length_histogram", None, {"lengths": lengths})
    enumeration = sum(int(n) * comb(int(length), size)
                      for size in sizes for length, n in histogram)
    return PlanCosts(sizes, postings, enumeration)


# Bytes of a held row (record_id, pid), for the estimate passed to short_lived_tables.
HELD_ROW_BYTES = 16

# How a level of prefixes is extended (:func:`prefix_support`): from each held prefix to its
# extensions, then those the record holds ("prefixes"); or from each held record to its nodes,
# then those extending the held prefix ("records"); "auto": whichever makes fewer rows.
EXTEND_STEPS = ("prefixes", "records", "auto")


def extends_by_records(backend: Backend, held: exp.Table, level: exp.Table,
                       lengths: exp.Table, step: str) -> bool:
    """Whether to extend ``held`` to ``level`` by records
    (:func:`.itemsets.prefix_extend_by_records`).

    Under "auto" the prefix-side rows are counted first, in a pass over ``held``; only where
    the prefixes average more than two extensions per held row (below that the extension by
    prefixes makes at most twice the held rows, which the other way rarely beats by enough)
    is a bound on the record-side rows computed (:func:`.itemsets.prefix_record_bound`, from
    :func:`plan_costs`'s record lengths), and the records way runs where it is below. An exact
    count of the record-side rows grouped the records again at every such level: 41 s of
    PostgreSQL's search at 100,000 CDR-like users, 20x DuckDB's. The bound is close where it
    matters (a coarse level holds most of the itemsets' nodes), and the choice changes the
    time only, never the rows kept."""
    if step != "auto":
        return step == "records"
    ((extensions, held_rows),) = backend.query(prefix_extension_rows(held, level))
    if int(extensions) <= 2 * int(held_rows):
        return False
    return int(backend.scalar(prefix_record_bound(held, lengths)) or 0) < int(extensions)


def prefix_support(backend: Backend, ids: exp.Table, records: exp.Table, lengths: exp.Table,
                   target: exp.Table, sizes: list[int], work: Callable[[str], exp.Table],
                   step: str, held_rows: int, bounded: bool = False) -> None:
    """``target(vid, supp)`` level by level over the prefixes of ``ids``: one table of
    (record_id, prefix) per level, each made from the level before by one statement whose
    joins run in the order written (:meth:`.Backend.joins_as_written`). A level is extended by
    prefixes or by records (``step``, :data:`EXTEND_STEPS`); both keep the same (record,
    prefix) rows. ``lengths``: :func:`plan_costs`'s, for the choice of the way.

    Each written level is read once, by the next, and dropped, so it is a short-lived table
    (:meth:`.Backend.short_lived_tables`; on DuckDB in memory and uncompressed where it fits),
    of about ``held_rows`` rows (:func:`plan_costs`'s postings, the rows of the first two
    levels, where they are longest; a later level that outgrows it spills, never fails).
    Written to the file, these levels were a third of DuckDB's search at 1 M CDR-like users
    and σ = 0.999 (1,145 of 3,600 s). In memory, at σ = 0.99 and m = 7: 8.2 -> 5.7 s at
    100,000 users, 87.6 -> 79.5 s at 1 M (BENCHMARKS.md, km, "Built (stop 91)").

    With ``bounded`` (``ids`` made with bounds, :func:`plan_costs`), a level keeps only the
    records below its prefix's bound, and ``target`` is (vid, holder): the first holder below
    the itemset's bound (:func:`itemset_support`)."""
    level = work("gpre")
    held = [work("gheld"), work("gheld2")]  # this level's rows, built from the other's
    counts = {size: work(f"gcount{size}") for size in sizes}
    last = max(sizes)
    try:
        for j in range(1, last + 1):
            backend.materialize(level, prefix_level(ids, j, bounded))
            if j == 1:
                rows = prefix_start(level, records, bounded)
            else:
                by_records = extends_by_records(backend, held[0], level, lengths, step)
                rows = (prefix_extend_by_records(held[0], level, records, bounded) if by_records
                        else prefix_extend(held[0], level, records, bounded))
            # The last level is counted as it is found: its rows are never read again, so
            # they are not written (millions at 100,000 CDR-like users, each passed from
            # PostgreSQL's parallel workers to the one process that writes).
            with backend.joins_as_written():
                if j == last:
                    backend.materialize(counts[j], prefix_counts(rows, bounded))
                else:
                    with backend.short_lived_tables(held_rows * HELD_ROW_BYTES):
                        backend.materialize(held[1], rows)
            if j > 1:
                backend.drop_table(held[0])
            held.reverse()
            backend.drop_table(level)
            if j in counts and j != last:
                backend.materialize(counts[j], prefix_counts(held[0], bounded))
        backend.materialize(target, prefix_supports(ids, counts,
                                                    "holder" if bounded else "supp"))
    finally:
        for table in (level, *held, *counts.values()):
            backend.drop_table(table)


def itemset_support(backend: Backend, itemsets: exp.Table, records: exp.Table,
                    target: exp.Table, work: Callable[[str], exp.Table],
                    plan: str = "auto", step: str = "auto",
                    bounds: exp.Table | None = None) -> str:
    """Materialize ``target(vid, supp)``: the support in ``records(record_id, node_id)`` of
    each itemset of ``itemsets(vid, node_id, ...)`` (no row: support 0).

    With ``bounds(vid, bound)``, ``target(vid, holder)`` instead: the smallest record id below
    the itemset's bound that holds it (no row: none does), which decides the sampler's
    first-holder rule (:mod:`.sampler`) without counting the holders after it. Both plans
    skip the records at or above a bound; the prefix plan's levels share prefixes within a
    tier of bounds only (:func:`.itemsets.bounded_rows`).

    Returns the plan that ran. ``work(purpose)`` names the scratch tables (dropped here);
    ``step`` is how the postings plan extends a level (:data:`EXTEND_STEPS`).
    """
    ids, lengths, restricted = work("gids"), work("glens"), work("grec")
    rows, tiered = work("grows"), work("gbrows")
    first = bounds is not None
    try:
        costs = plan_costs(backend, itemsets, records, work, bounds)
        if not costs.sizes:  # no itemset: no support to count
            backend.materialize(target, "km_itemset_first_none" if first
                                else "km_itemset_support_none")
            return "postings"
        if plan == "auto":
            plan = "enumerate" if costs.enumeration < costs.postings else "postings"
        if plan == "postings":
            prefix_support(backend, ids, records, lengths, target, costs.sizes, work, step,
                           costs.postings, first)
            return "postings"
        backend.materialize(restricted, "km_group_records", None,
                            {"groups": itemsets, "g": records})
        backend.materialize(rows, itemset_rows(itemsets, max(costs.sizes)))
        if bounds is not None:
            backend.materialize(tiered, bounded_rows(rows, bounds))
        with enumeration_joins(backend, max(costs.sizes)):
            backend.materialize(target, itemset_supports(
                restricted, rows if bounds is None else tiered, costs.sizes, first))
        return "enumerate"
    finally:
        for table in (ids, lengths, restricted, rows, tiered):
            backend.drop_table(table)


# Slices of <R, D> for the staged check: records by ``record_id`` modulo SLICE_PARTS, the
# first slice 1/16 of them, the second 3/16, the last the other 3/4. A group whose support in
# the first slice already reaches k is decided there; at 1 M CDR-like users most generalized
# samples are held by thousands of records, so the later, larger slices count a few percent
# of the groups (and the enumeration plan restricts their records to those groups' nodes).
SLICE_PARTS = 16
SLICE_BOUNDS = (0, 1, 4, 16)
# Below this many records one pass is cheaper than the stages' extra statements.
SLICE_FROM_RECORDS = 200_000


def record_count(backend: Backend, records: exp.Table) -> int:
    """Distinct records of ``records(record_id, ...)``: whether to slice (SLICE_FROM_RECORDS)."""
    return int(backend.scalar(exp.select(exp.func(
        "count", exp.Distinct(expressions=[exp.column("record_id")]))).from_(records.copy())))


def record_slices(backend: Backend, records: exp.Table,
                  name: Callable[[int], exp.Table]) -> list[exp.Table]:
    """``records(record_id, node_id)`` split into the disjoint slices of SLICE_BOUNDS (every
    record in exactly one); ``name(i)`` names slice i. The caller drops them."""
    slices = []
    for i, (lo, hi) in enumerate(pairwise(SLICE_BOUNDS)):
        backend.materialize(name(i), "km_record_slice",
                            {"parts": SLICE_PARTS, "lo": lo, "hi": hi}, {"g": records})
        slices.append(name(i))
    return slices


def group_violations(backend: Backend, groups: exp.Table,
                     generalized: exp.Table | Sequence[exp.Table], k: int,
                     target: exp.Table, work: Callable[[str], exp.Table],
                     plan: str = "auto", step: str = "auto") -> str:
    """Materialize ``target(vid, node_id, n)``: the groups with support below ``k`` in
    ``generalized`` (one table, or disjoint slices of it by record, see :func:`record_slices`);
    returns the plan that counted the supports (one per slice counted, joined by "+").

    Slices are counted one after another, each for the groups still undecided: supports only
    grow as records are added, so a group whose support so far reaches k holds k in the whole
    table, and the groups left after the last slice have their full support, below k. The
    output is the same as one count over the whole table; only the rows read change.
    """
    slices = [generalized] if isinstance(generalized, exp.Table) else list(generalized)
    support, total, added = work("gsupp"), work("gtotal"), work("gadded")
    undecided = [work("gundec1"), work("gundec2")]
    plans: list[str] = []
    current = groups
    try:
        for i, records in enumerate(slices):
            last = i == len(slices) - 1
            if not i:
                plans.append(itemset_support(backend, current, records, total, work, plan,
                                             step))
            else:
                plans.append(itemset_support(backend, current, records, support, work, plan,
                                             step))
                backend.materialize(added, "km_group_support_sum", None,
                                    {"a": total, "b": support})
                backend.drop_table(total)
                backend.drop_table(support)
                total, added = added, total
            left = target if last else undecided[i % 2]
            backend.materialize(left, "km_group_violations", {"k": k},
                                {"groups": current, "support": total})
            if current is not groups:
                backend.drop_table(current)
            current = left
            if not last and not backend.scalar(
                    exp.select(exp.func("count", exp.Star())).from_(left.copy())):
                backend.materialize(target, exp.select("*").from_(left.copy()))
                break
        return "+".join(plans)
    finally:
        for table in (support, total, added, *undecided):
            backend.drop_table(table)
