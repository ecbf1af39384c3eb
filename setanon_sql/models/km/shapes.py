"""Enumerating the itemsets of <R, D> once per distinct record, weighted by its records.

The certificate (:mod:`.exactcheck`), its steering (:mod:`.enumsteer`) and verify enumerate every
itemset of up to ℓ nodes of every generalized record, to find the images with support below k.
Once the cut is coarse, many records hold the same set of nodes (100,000 CDR-like users at the
15 regions of a σ = 0.999 run: 8,400 distinct sets, and 13.5 M itemset rows over records
against 2.9 M over sets, ℓ = 11). An itemset's support is the sum, over the distinct sets
holding it, of the records holding that set; so the supports are counted over the sets, and
only the itemsets below k are matched back to their (fewer than k) holders, where the bound
needs each holder's items per node (:func:`.itemsets.exact_cover_count`, up to 256 terms a
row, which the full enumeration computed for every row). The rows are the same as those of the
enumeration over records (tests compare them); where the sets would not save half the rows
(fine cuts: most records are distinct), the records are enumerated as before.
"""

from __future__ import annotations

from collections.abc import Callable
from math import comb

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.km.itemsets import RecordShapes, enumeration_rows

# Sets are enumerated instead of records when that reads at most this share of the rows.
SHAPE_ROW_SHARE = 0.5
# The sets are built (to be counted) only where :func:`distinct_sets_bound` proves that at
# least this share of the records' rows repeat a set (an upper bound on the sets' rows cannot
# prove that they save half, only that some rows surely repeat). On BMS-WebView-2's fine cuts
# it proves 1-6% (building the sets there cost about 1 s of a 5 s search, for nothing); on
# the 15-region cut of 100,000 CDR-like users 44%, where the sets read 21% of the rows.
SHAPE_SURE_REPEATS = 0.1


def distinct_sets_bound(lengths: list[tuple[int, int]], nodes: int, ell: int) -> int:
    """An upper bound on the rows enumerating the distinct node sets reads, from the records'
    (length, records) pairs and the number of nodes: at most min(records, C(nodes, L)) sets
    of each length L. On a fine cut (many nodes) it is about the records' own rows. It is
    loose where the cut is coarse (15 nodes: C(15, 7) = 6,435 possible sets of 7 nodes, of
    which a few hundred occur), so it proves only that some rows repeat, never that few do."""
    return sum(min(int(n), comb(nodes, int(length))) * sum(
        comb(int(length), j) for j in range(1, ell + 1)) for length, n in lengths)


def record_shapes(backend: Backend, counts: exp.Table, ell: int,
                  table: Callable[[str], exp.Table],
                  lengths: list[tuple[int, int]] | None = None) -> RecordShapes | None:
    """The distinct node sets of ``counts`` (``km_generalized_counts``), materialized in
    ``table("shapes")`` and ``table("members")``, when enumerating their itemsets of up to
    ``ell`` nodes reads at most SHAPE_ROW_SHARE of the rows the records would; else None (and
    nothing is left). Drop them with :func:`drop_shapes`.

    Two aggregates decide first whether the sets surely repeat SHAPE_SURE_REPEATS of the rows
    (:func:`distinct_sets_bound`); only then are they built and counted. ``lengths``, the
    (nodes per record, records) pairs of ``counts``, is the first, when the caller has it.
    (Until 1 December this skipped the sets wherever the bound exceeded SHAPE_ROW_SHARE of
    the rows: on 100,000 CDR-like users at σ = 0.999 the bound said 56% where the sets read
    21%, and the certificate's first tries took 165 s instead of 55 s.)"""
    if lengths is None:
        lengths = record_lengths(backend, counts)
    by_records = enumeration_rows(lengths, ell)
    nodes = int(backend.scalar(exp.select(exp.func(
        "count", exp.Distinct(expressions=[exp.column("node_id")]))).from_(counts.copy())) or 0)
    if distinct_sets_bound(lengths, nodes, ell) > (1 - SHAPE_SURE_REPEATS) * by_records:
        return None
    members, shapes = table("members"), table("shapes")
    found = RecordShapes(shapes, members)
    try:
        backend.materialize(members, "km_record_shapes", None, {"counts": counts})
        backend.materialize(shapes, "km_shape_nodes", None,
                            {"counts": counts, "members": members})
        by_shapes = enumeration_rows(record_lengths(backend, shapes), ell)
    except BaseException:
        drop_shapes(backend, found)
        raise
    if by_shapes > SHAPE_ROW_SHARE * by_records:
        drop_shapes(backend, found)
        return None
    return found


def record_lengths(backend: Backend, records: exp.Table) -> list[tuple[int, int]]:
    """(nodes per record, records) of ``records`` (record_id, node_id, ...): what enumerating
    its itemsets costs (:func:`.itemsets.enumeration_rows`)."""
    return [(int(length), int(n)) for length, n in
            backend.query("km_group_record_lengths", None, {"gr": records})]


def drop_shapes(backend: Backend, shapes: RecordShapes | None) -> None:
    if shapes is not None:
        backend.drop_table(shapes.shapes)
        backend.drop_table(shapes.members)
