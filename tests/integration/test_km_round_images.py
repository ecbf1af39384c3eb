"""A later round of the exact search counts only the images of the round before's violations
(``itemsets.candidate_itemsets``, ``exact._next_violations``).

Against brute force on small records: after random merges of nodes (some into a new id, some
into the smallest id of the group, as the two searches name them), the itemsets holding a
changed node with support below k are exactly those the image count finds, with their
supports; and every one of them is the image of an old violation (the reason the count may
skip the other itemsets). On every backend, several seeds and sizes.
"""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations

import pytest
from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.km.itemsets import (
    candidate_itemsets,
    candidate_prefixes,
    violating_counts,
)


def _records(rng: random.Random) -> dict[int, list[int]]:
    """Records of skewed nodes 3.., a few long among many short."""
    nodes = list(range(3, 3 + rng.randint(8, 14)))
    weights = [1.0 / (rank + 1) for rank in range(len(nodes))]
    return {record: sorted(set(rng.choices(nodes, weights, k=rng.choice([1, 2, 3, 4, 7, 9]))))
            for record in range(1, rng.randint(30, 60))}


def _merges(rng: random.Random, nodes: list[int]) -> dict[int, int]:
    """old node -> new node for a few disjoint groups of nodes (the others keep their ids)."""
    shuffled = rng.sample(nodes, len(nodes))
    successor: dict[int, int] = {}
    for group_no in range(rng.randint(1, 3)):
        group = shuffled[:rng.randint(2, 3)]
        shuffled = shuffled[len(group):]
        if len(group) < 2:
            break
        new = 100 + group_no if group_no % 2 == 0 else min(group)
        successor.update((old, new) for old in group)
    return successor


def _values(db: Backend, name: str, columns: list[str], rows: list[tuple[int, ...]]) -> exp.Table:
    """A table of these BIGINT rows (none: a row of zeros filtered out, for its types)."""
    table = db.table(name)
    query = exp.select(*(exp.cast(exp.column(f"c{i}"), "BIGINT").as_(column)
                         for i, column in enumerate(columns))).from_(exp.values(
        [tuple(exp.Literal.number(v) for v in row) for row in rows or [(0,) * len(columns)]],
        alias="v", columns=[f"c{i}" for i in range(len(columns))]))
    db.materialize(table, query if rows else query.where(exp.false()))
    return table


def _supports(records: dict[int, list[int]], ell: int) -> Counter[tuple[int, ...]]:
    return Counter(itemset for nodes in records.values()
                   for itemset in combinations(sorted(nodes), ell))


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("ell", [1, 2, 3, 4])
@pytest.mark.on_spark(seeds=[2])
def test_the_images_of_old_violations_are_every_new_one(db: Backend, seed: int,
                                                        ell: int) -> None:
    rng = random.Random(seed * 10 + ell)
    old_records = _records(rng)
    successor = _merges(rng, sorted({n for nodes in old_records.values() for n in nodes}))
    new_records = {record: sorted({successor.get(n, n) for n in nodes})
                   for record, nodes in old_records.items()}
    changed = set(successor) | set(successor.values())  # km_changed_nodes: gone and grown
    old_support = _supports(old_records, ell)
    new_support = _supports(new_records, ell)
    # at least one itemset holding a changed node violates k
    k = max(3, 1 + min(count for itemset, count in new_support.items()
                       if changed.intersection(itemset)))
    expected = sorted((*itemset, count) for itemset, count in new_support.items()
                      if count < k and changed.intersection(itemset))
    old_violations = sorted(itemset for itemset, count in old_support.items() if count < k)
    images = {tuple(sorted({successor.get(n, n) for n in itemset})) for itemset in old_violations}
    assert expected and all(tuple(row[:ell]) in images for row in expected)  # the lemma

    violations = _values(db, "t_ri_viol", ["vid", *(f"n{j}" for j in range(1, ell + 1))],
                         [(vid, *itemset) for vid, itemset in enumerate(old_violations, 1)])
    successors = _values(db, "t_ri_succ", ["old_node", "new_node"], sorted(successor.items()))
    touched = _values(db, "t_ri_touched", ["record_id", "node_id", "fresh"], [
        (record, node, int(node in changed)) for record, nodes in new_records.items()
        if changed.intersection(nodes) for node in nodes])
    candidates = db.table("t_ri_cand")
    db.materialize(candidates, candidate_itemsets(violations, successors, ell))
    anchored = sorted((*(row[:-1]), row[-1]) for row in db.query(
        exp.select(*(f"a{j}" for j in range(1, ell + 1))).from_(candidates)))
    expected_candidates = sorted(
        (*sorted(set(image) - {anchor}), anchor) for image in images if len(image) == ell
        for anchor in [min((n for n in image if n in changed), default=None)]
        if anchor is not None)
    assert anchored == expected_candidates
    prefixes = []
    for depth in range(ell - 1):
        prefixes.append(db.table(f"t_ri_prefix{depth}"))
        db.materialize(prefixes[-1], candidate_prefixes(candidates, depth, ell))
    found = sorted(tuple(int(v) for v in row) for row in db.query(
        violating_counts(touched, ell, touching="fresh", prefixes=[*prefixes, candidates]),
        {"k": k}))
    assert found == expected
    for table in (violations, successors, touched, candidates, *prefixes):
        db.drop_table(table)
    assert not db.table_names("t_ri_")
