"""Supports of many itemsets at once, by the cheaper of two plans.

Used for Alg. 2 l.9-10 (which generalized samples are below k: a pool generalized by the cut
is ``groups(vid, node_id, n)``, one itemset of 1..ℓ nodes per vid, two items under one node
making it shorter) and for the sampler's rejection step (the support in D of each distinct
proposed itemset). The supports can be counted

- by **postings** (:func:`chained_support`): for each itemset, the records of its
  rarest node, kept when they hold the next rarest node, and so on (a chain of joins, each on
  the records the previous one left; it replaced one join of the rarest node's records with
  all of the itemset's nodes, which read size x postings rows: 160 s of a 100,000-user CDR run
  went to the rejection step's supports, where towers carry hundreds of users each). Cheap
  while the cut is fine (the identity cut's
  rarest items have a handful of records each), expensive once nodes are coarse: a node over a
  third of the records makes every itemset that holds it read a third of the records;
- by **enumeration** (``itemset_supports``): every s-subset of every generalized record,
  matched to the itemsets of size s, as the exact search counts. Cheap once records are short
  in nodes, expensive on long records (C(161, 4) = 27 M subsets for BMS-WebView-2's longest).

Both give the same supports, so the choice changes the time only, never the cut. The rows each
plan reads are computed first from two small aggregates (about 2 × Σ postings of the rarest
node for the chain, against Σ_r C(|g_r|, s), with g_r restricted to the nodes some itemset
holds) and the smaller one runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise
from math import comb

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.km.itemsets import (
    chain_counts,
    chain_start,
    chain_step,
    itemset_rows,
    itemset_supports,
    rarest_first_rows,
)


def plan_costs(backend: Backend, itemsets: exp.Table, records: exp.Table,
               node_postings: exp.Table,
               restricted: exp.Table) -> tuple[dict[int, int], dict[int, int]]:
    """Rows read per itemset size by each plan: (postings, enumeration).

    Leaves ``node_postings`` (records per node, the postings plan's input) and ``restricted``
    (``records`` cut down to the itemsets' nodes, the enumeration's input).
    """
    backend.materialize(node_postings, "km_group_node_postings", None,
                        {"groups": itemsets, "g": records})
    # km_group_postings_cost gives Σ s x (rarest node's records) per size s; the chain reads
    # the rarest node's records once and probes them for the second node, the later links
    # only what is left: about 2 x Σ rarest (the s x estimate of the former plan made the
    # rejection step enumerate BMS2's long records instead: 34 s of a 123 s search at m = 3).
    postings = {int(size): int(cost) * min(int(size), 2) // int(size)
                for size, cost in backend.query(
                    "km_group_postings_cost", None,
                    {"groups": itemsets, "gocc": node_postings})}
    backend.materialize(restricted, "km_group_records", None,
                        {"groups": itemsets, "g": records})
    lengths = backend.query("km_group_record_lengths", None, {"gr": restricted})
    enumeration = {size: sum(int(n) * comb(int(length), size) for length, n in lengths)
                   for size in postings}
    return postings, enumeration


def chained_support(backend: Backend, itemsets: exp.Table, records: exp.Table,
                    node_postings: exp.Table, target: exp.Table, rows: exp.Table,
                    links: tuple[exp.Table, exp.Table], ell: int) -> None:
    """``target(vid, supp)`` by the chain of :func:`.itemsets.chain_step`: one table per link,
    so the order of the joins is ours (a single query let DuckDB join ``records`` with itself
    on record_id first: 12 GB for 480,000 itemsets of size 5 on BMS-WebView-2)."""
    backend.materialize(rows, rarest_first_rows(itemsets, node_postings, ell))
    held, spare = links
    backend.materialize(held, chain_start(rows, records, ell))
    for j in range(2, ell + 1):
        backend.materialize(spare, chain_step(held, records, j, ell))
        backend.drop_table(held)
        held, spare = spare, held
    backend.materialize(target, chain_counts(held))
    backend.drop_table(held)


def itemset_support(backend: Backend, itemsets: exp.Table, records: exp.Table,
                    target: exp.Table, work: Callable[[str], exp.Table],
                    plan: str = "auto") -> str:
    """Materialize ``target(vid, supp)``: the support in ``records(record_id, node_id)`` of
    each itemset of ``itemsets(vid, node_id, ...)`` (no row: support 0).

    Returns the plan that ran. ``work(purpose)`` names the scratch tables (dropped here).
    """
    node_postings, restricted, rows = work("gocc"), work("grec"), work("grows")
    try:
        postings, enumeration = plan_costs(backend, itemsets, records, node_postings,
                                           restricted)
        if plan == "auto":
            plan = ("enumerate" if sum(enumeration.values()) < sum(postings.values())
                    else "postings")
        if plan == "postings" or not postings:
            sizes = sorted(postings)
            if not sizes:  # no itemset: no support to count
                backend.materialize(target, "km_itemset_support_postings", None,
                                    {"groups": itemsets, "g": records, "gocc": node_postings})
                return "postings"
            chained_support(backend, itemsets, records, node_postings, target, rows,
                            (work("gchain1"), work("gchain2")), max(sizes))
            return "postings"
        sizes = sorted(postings)
        backend.materialize(rows, itemset_rows(itemsets, max(sizes)))
        backend.materialize(target, itemset_supports(restricted, rows, sizes))
        return "enumerate"
    finally:
        for table in (node_postings, restricted, rows):
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
                     plan: str = "auto") -> str:
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
                plans.append(itemset_support(backend, current, records, total, work, plan))
            else:
                plans.append(itemset_support(backend, current, records, support, work, plan))
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
