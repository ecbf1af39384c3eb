"""Exact k^m-anonymity: Alg. 2 with the sampling of l.8 replaced by enumerating every itemset.

This is the apriori-based anonymization (AA) the paper compares with (Sec. V-C, Terrovitis et
al.): sizes ℓ = 1..m in turn, each on the data generalized by the previous sizes. A round
finds the ℓ-itemsets of <R, D> below k (an ℓ-way self-join counts them); every itemset below
k proposes the merge of least error among the parents of its nodes (Alg. 2 l.13-14), and the
cheapest share ``batch`` of the proposals is applied at once (a batch instead of one merge per
itemset, so the number of rounds stays small; batch -> 0 approaches one merge per round).
The round repeats until no ℓ-itemset violates k: exact by construction, because the loop only
ends on a count of zero.

Only the first round of a size enumerates every record (in slices of the itemsets' first
node where that is too many rows for one statement, :mod:`.firstslices`). A later one keeps
the violating itemsets whose nodes the merges left alone (the same items under the same node
ids, so the same holders and support) and counts, in the records holding a changed node, only
the itemsets that can now be below k (:func:`_next_violations`): the images of the old
violations that hold a changed node (:func:`.itemsets.candidate_itemsets`). Every holder of
such an itemset holds a changed node, so their count is its whole support. The union is what
enumerating every record would give (a test compares the two, round by round). At 1 M
CDR-like users the paper's hybrid (exact for ℓ <= 4) spent 1,160 s of a 1,316 s search in
full enumerations (BENCHMARKS.md); counting every itemset holding a changed node, its later
rounds still took 261 s of 486, and 67 s counting the images only (stop 100).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from setanon_sql.models.km.cutsearch import CutSearch
from setanon_sql.models.km.firstslices import materialize_violating_itemsets
from setanon_sql.models.km.itemsets import (
    candidate_itemsets,
    candidate_prefixes,
    enumeration_joins,
    itemset_nodes,
    numbered_itemsets,
    untouched_itemsets,
    violating_counts,
)
from setanon_sql.progress import report_shrinking
from setanon_sql.sqlrender import union_all


def enforce_exact(gen: CutSearch, ell: int, k: int, error: str,
                  batch: float) -> list[dict[str, Any]]:
    """Generalize until every ℓ-itemset of <R, D> has support 0 or >= k; one entry per round."""
    backend = gen.backend
    history: list[dict[str, Any]] = []
    vnodes, prevcut = gen.table("vnodes"), gen.table("xprevcut")
    violations = gen.table("viol0")
    generalized = gen.generalized()
    try:
        with enumeration_joins(backend, ell):
            slices = materialize_violating_itemsets(backend, violations, generalized, ell, k,
                                                    gen.table)
    finally:
        backend.drop_table(generalized)
    try:
        while True:
            found = gen.row_count(violations)
            first = history[0]["violating_itemsets"] if history else found
            report_shrinking("search", f"violating {ell}-itemsets", first, found,
                             len(history) + 1)
            if not found:
                return history
            gen.copy_cut(prevcut)
            backend.materialize(vnodes, itemset_nodes(violations, ell))
            merges = gen.merge(vnodes, error, batch)
            backend.drop_table(vnodes)
            entry = {"size": ell, "violating_itemsets": found, "merges": merges}
            if slices > 1 and not history:
                entry["slices"] = slices
            history.append(entry)
            if not merges:
                raise gen.no_merge_error(k)
            violations = _next_violations(gen, violations, prevcut, ell, k, len(history))
    finally:
        for table in (violations, prevcut, vnodes):
            backend.drop_table(table)


def _next_violations(gen: CutSearch, violations: exp.Table, prevcut: exp.Table, ell: int,
                     k: int, round_no: int) -> exp.Table:
    """The violating ℓ-itemsets under the current cut, from those under ``prevcut``
    (``violations``, dropped here): the untouched ones kept, and the images of the others
    counted in the records holding a changed node (module docstring). The anchored chain of
    :func:`.itemsets.violating_counts` stops at the first prefix no image has, and only the
    images are grouped: one statement, its groups no more than the old violations (at
    4,427,486 CDR-like users the count of every itemset holding a changed node had to be cut
    in slices of its anchor, 62 statements over size 3 and 4's later rounds)."""
    b = gen.backend
    changed, touched = gen.table("xchanged"), gen.table("xtouched")
    nxt = gen.table(f"viol{round_no}")
    prefixes: list[exp.Table] = []
    try:
        gen.touched_since(prevcut, changed, touched)
        prefixes = _image_prefixes(gen, violations, prevcut, changed, ell)
        counted = violating_counts(touched, ell, touching="fresh", prefixes=prefixes)
        with b.left_deep_joins():
            b.materialize(nxt, numbered_itemsets(union_all(
                [untouched_itemsets(violations, changed, ell), counted], copy=False), ell),
                {"k": k})
    finally:
        for table in (changed, touched, violations, *prefixes):
            b.drop_table(table)
    return nxt


def _image_prefixes(gen: CutSearch, violations: exp.Table, prevcut: exp.Table,
                    changed: exp.Table, ell: int) -> list[exp.Table]:
    """The images under the current cut of the rows of ``violations`` that hold a changed
    node (:func:`.itemsets.candidate_itemsets`), last, after their prefixes of 0..ℓ - 2 other
    nodes: the ``prefixes`` of :func:`.itemsets.violating_counts`. The caller drops them."""
    b = gen.backend
    successors, images = gen.table("xsuccessors"), gen.table("ximages")
    made: list[exp.Table] = []
    try:
        b.materialize(successors, "km_node_successors", None,
                      {"cut": gen.cut, "prevcut": prevcut, "changed": changed})
        b.materialize(images, candidate_itemsets(violations, successors, ell))
        for depth in range(ell - 1):
            made.append(gen.table(f"xprefix{depth}"))
            b.materialize(made[-1], candidate_prefixes(images, depth, ell))
    except BaseException:
        for table in (*made, images):
            b.drop_table(table)
        raise
    finally:
        b.drop_table(successors)
    return [*made, images]
