"""Exact k^m-anonymity: Alg. 2 with the sampling of l.8 replaced by enumerating every itemset.

This is the apriori-based anonymization (AA) the paper compares with (Sec. V-C, Terrovitis et
al.): sizes ℓ = 1..m in turn, each on the data generalized by the previous sizes. Every round
counts the supports of all ℓ-itemsets of <R, D> with one ℓ-way self-join; every itemset below
k proposes the merge of least error among the parents of its nodes (Alg. 2 l.13-14), and the
cheapest share ``batch`` of the proposals is applied at once (a batch instead of one merge per
itemset, so the number of rounds stays small; batch -> 0 approaches one merge per round).
The round repeats until no ℓ-itemset violates k: exact by construction, because the loop only
ends on a count of zero.
"""

from __future__ import annotations

from typing import Any

from setanon_sql.models.km.cutsearch import CutSearch
from setanon_sql.models.km.itemsets import itemset_nodes, violating_itemsets
from setanon_sql.progress import report_shrinking


def enforce_exact(gen: CutSearch, ell: int, k: int, error: str,
                  batch: float) -> list[dict[str, Any]]:
    """Generalize until every ℓ-itemset of <R, D> has support 0 or >= k; one entry per round."""
    backend = gen.backend
    history: list[dict[str, Any]] = []
    violations, vnodes = gen.table("viol"), gen.table("vnodes")
    while True:
        generalized = gen.generalized()
        backend.materialize(violations, violating_itemsets(generalized, ell), {"k": k})
        backend.drop_table(generalized)
        found = gen.row_count(violations)
        first = history[0]["violating_itemsets"] if history else found
        report_shrinking("search", f"violating {ell}-itemsets", first, found, len(history) + 1)
        if not found:
            backend.drop_table(violations)
            return history
        backend.materialize(vnodes, itemset_nodes(violations, ell))
        merges = gen.merge(vnodes, error, batch)
        backend.drop_table(violations)
        backend.drop_table(vnodes)
        history.append({"size": ell, "violating_itemsets": found, "merges": merges})
        if not merges:
            raise gen.no_merge_error(k)
