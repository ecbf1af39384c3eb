"""``itemsets.set_ids`` against grouping in plain Python, on every backend, several seeds.

km keys its proposals and its generalized samples by ``set_ids``: owners holding the same set
of items must share one id, the smallest owner holding it, and owners holding different sets
(a set that is a prefix of another included: the pivot pads it with NULLs) must not.
"""

from __future__ import annotations

import random

import pytest
from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.km.itemsets import set_ids
from tests.integration.test_rho_blocking import values_table


def _random_sets(seed: int, size: int) -> list[tuple[int, int]]:
    """(owner, item) rows: 60 owners, sets of 1..``size`` of 6 items, many repeated, listed in
    a shuffled order (so no owner's items come sorted)."""
    rng = random.Random(seed)
    common = [frozenset(rng.sample(range(1, 7), rng.randint(1, size))) for _ in range(5)]
    rows = []
    for owner in rng.sample(range(1, 200), 60):
        held = (rng.choice(common) if rng.random() < 0.6
                else frozenset(rng.sample(range(1, 7), rng.randint(1, size))))
        rows.extend((owner, item) for item in held)
    rng.shuffle(rows)
    return rows


def _expected(rows: list[tuple[int, int]]) -> dict[int, int]:
    sets: dict[int, set[int]] = {}
    for owner, item in rows:
        sets.setdefault(owner, set()).add(item)
    first: dict[frozenset[int], int] = {}
    for owner, held in sets.items():
        key = frozenset(held)
        first[key] = min(first.get(key, owner), owner)
    return {owner: first[frozenset(held)] for owner, held in sets.items()}


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("size", [1, 3, 5])
def test_owners_of_one_set_share_the_smallest_owner_as_id(db: Backend, seed: int,
                                                          size: int) -> None:
    rows = _random_sets(seed, size)
    table = values_table(db, "t_sets", "pid, item_id", rows)
    got = {int(owner): int(vid) for owner, vid in db.query(set_ids(table, "pid", "item_id", size))}
    expected = _expected(rows)
    assert len(set(expected.values())) < len(expected), "the case should repeat some sets"
    assert got == expected
    db.drop_table(table)


def test_a_set_and_its_prefix_get_different_ids(db: Backend) -> None:
    """{1, 2} and {1, 2, 3}: the pivot pads the shorter with NULL, which must not match 3."""
    rows = [(5, 1), (5, 2), (7, 1), (7, 2), (7, 3), (9, 2), (9, 1)]
    table = values_table(db, "t_prefix", "sid, node_id", rows)
    got = dict(db.query(exp.select("*").from_(set_ids(table, "sid", "node_id", 3).subquery("s"))))
    assert {int(k): int(v) for k, v in got.items()} == {5: 5, 7: 7, 9: 5}
    db.drop_table(table)
