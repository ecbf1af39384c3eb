"""A round's support delta and the records C(X) of chosen rules, on both backends.

The delta (how many records lose each itemset when some occurrences go) and C(X) are computed
here in plain Python, from their definitions, on random records with long ones among them, and
compared with the SQL of :mod:`setanon_sql.models.rho.incremental`.
"""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations

import pytest
from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.rho.incremental import (
    NO_ITEM_COUNT,
    build_lost_levels,
    delta_query,
    gone_query,
    member_level_query,
    member_pair_query,
    member_start_query,
    member_step_query,
    pivot_query,
    subtract_statement,
    subtracted_query,
    touched_query,
)
from setanon_sql.models.rho.qids import build_levels, build_supports
from tests.integration.test_rho_blocking import values_table

SENSITIVE = {2, 5, 7, 11}


def records(seed: int) -> dict[int, list[int]]:
    rng = random.Random(seed)
    out: dict[int, list[int]] = {}
    for record_id in range(1, 31):
        size = rng.choice([1, 2, 3, 4, 6, 9])
        out[record_id] = sorted(rng.sample(range(1, 15), size))
    return out


def expected_delta(recs: dict[int, list[int]], dels: set[tuple[int, int]], width: int,
                   max_q: int) -> Counter[tuple[int, ...]]:
    lost: Counter[tuple[int, ...]] = Counter()
    for record_id, items in recs.items():
        gone = {i for r, i in dels if r == record_id}
        for k in range(1, width + 1):
            for subset in combinations(items, k):
                if gone & set(subset) and (k <= max_q or SENSITIVE & set(subset)):
                    lost[subset + (0,) * (width - k)] += 1
    return lost


def a_round(db: Backend, seed: int, draw: int) -> tuple[
        dict[int, list[int]], set[tuple[int, int]], exp.Table, exp.Table, exp.Table]:
    """Random records, a fifth of their occurrences drawn to go, and the tables of both and of
    the sensitive items: (records, deleted pairs, cur, dels, sens)."""
    recs = records(seed)
    rng = random.Random(draw)
    rows = [(r, i, 0) for r, items in recs.items() for i in items]
    dels = {(r, i) for r, i, _ in rows if rng.random() < 0.2}
    cur = values_table(db, "t_cur", "record_id, item_id, part", rows)
    dels_table = values_table(db, "t_dels", "record_id, item_id", sorted(dels))
    sens = values_table(db, "t_sens", "item_id", [(s,) for s in sorted(SENSITIVE)])
    return recs, dels, cur, dels_table, sens


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(("width", "max_q"), [(3, 2), (4, 3)])
def test_delta_counts_the_records_that_lose_each_itemset(db: Backend, seed: int, width: int,
                                                         max_q: int) -> None:
    recs, dels, cur, dels_table, sens = a_round(db, seed, seed + 100)
    tcur = db.table("t_tcur")
    db.materialize(tcur, touched_query(cur, dels_table))
    levels = build_lost_levels(db, lambda purpose: db.table(f"t_{purpose}"), tcur, width, sens,
                               max_q)
    got = {tuple(int(v) for v in row[1:-1]): int(row[-1])
           for row in db.query(delta_query(levels, width))}
    assert got == dict(expected_delta(recs, dels, width, max_q))


def kept_itemsets(recs: dict[int, list[int]], width: int, max_q: int
                  ) -> Counter[tuple[int, ...]]:
    """Every itemset of up to ``width`` items the support table keeps, and its support."""
    counts: Counter[tuple[int, ...]] = Counter()
    for items in recs.values():
        for k in range(1, width + 1):
            for subset in combinations(items, k):
                if k <= max_q or SENSITIVE & set(subset):
                    counts[subset + (0,) * (width - k)] += 1
    return counts


@pytest.mark.parametrize("seed", [4, 5])
def test_supports_less_the_delta_are_a_recount_in_place_or_rebuilt(db: Backend,
                                                                   seed: int) -> None:
    """The UPDATE (small deltas) and the rebuilt table (large ones) leave the same non-zero
    supports, those of the records after the round counted by hand; the rebuilt table drops
    the itemsets no record holds any more, the update leaves them at 0."""
    width, max_q = 4, 3
    recs, dels, cur, dels_table, sens = a_round(db, seed, seed + 200)
    _, supx = build_supports(db, lambda purpose: db.table(f"t_{purpose}"), cur, width, sens,
                             max_q)
    tcur = db.table("t_tcur")
    db.materialize(tcur, touched_query(cur, dels_table))
    levels = build_lost_levels(db, lambda purpose: db.table(f"t_{purpose}"), tcur, width, sens,
                               max_q)
    delta = db.table("t_delta")
    db.materialize(delta, delta_query(levels, width))
    rebuilt = db.table("t_rebuilt")
    db.materialize(rebuilt, subtracted_query(supx, delta, width))
    db.run(subtract_statement(supx, delta, width))
    every = exp.select("*")
    in_place = sorted(tuple(int(v) for v in row) for row in db.query(every.from_(supx)))
    assert sorted(tuple(int(v) for v in row)
                  for row in db.query(every.copy().from_(rebuilt))) == [
        row for row in in_place if row[-2]]
    after = {r: [i for i in items if (r, i) not in dels] for r, items in recs.items()}
    # (part, x1..x4, size, n, first_rec): the itemsets no record holds now keep n = 0
    assert {row[1:1 + width]: row[-2] for row in in_place if row[-2]} == dict(
        kept_itemsets(after, width, max_q))
    assert any(row[-2] == 0 for row in in_place)  # the draw empties some itemsets


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("start", ["pivot", "levels", "pair"])
def test_members_are_the_records_holding_every_item_of_x(db: Backend, seed: int,
                                                        start: str) -> None:
    """From the rarest item, from levels counted before some items went, or from the pairs
    of those levels narrowed by x3: the same C(X)."""
    before = records(seed)
    rng = random.Random(seed)
    recs = {r: [i for i in items if rng.random() > 0.2] for r, items in before.items()}
    rows = [(r, i, 0) for r, items in recs.items() for i in items]
    cur = values_table(db, "t_cur", "record_id, item_id, part", rows)
    old = values_table(db, "t_old", "record_id, item_id, part",
                       [(r, i, 0) for r, items in before.items() for i in items])
    sens = values_table(db, "t_sens", "item_id", [(s,) for s in sorted(SENSITIVE)])
    levels = build_levels(db, lambda purpose: db.table(f"t_{purpose}"), old, 3, "lvl", sens, 2)
    counts = Counter(i for _, i, _ in rows)
    istat = values_table(db, "t_istat", "part, item_id, n0, n",
                         [(0, i, n, n) for i, n in sorted(counts.items())])
    xsets = [tuple(sorted(rng.sample(range(1, 15), rng.choice([2, 3])))) for _ in range(30)]
    # X of a rule holds a sensitive item (the top level keeps only those)
    xsets = [x for x in xsets if SENSITIVE & set(x)]
    chosen = values_table(db, "t_chosen", "rule_id, rnk, part, x1, x2, x3, size",
                          [(n, n, 0, *x, *(0,) * (3 - len(x)), len(x))
                           for n, x in enumerate(xsets, 1)])
    pivots = db.table("t_pivots")
    db.materialize(pivots, pivot_query(chosen, istat, 3))
    # The pivot is X's item held by the fewest records now, ties to the smaller item id.
    rarest = {n: min((counts.get(i, NO_ITEM_COUNT), i) for i in x)
              for n, x in enumerate(xsets, 1)}
    assert {int(r): (int(c), int(p)) for r, p, c in db.query(
        exp.select("rule_id", "pivot", "n").from_(pivots))} == rarest
    found = db.table("t_found0")
    if start == "pivot":
        db.materialize(found, member_start_query(chosen, pivots, cur, 3))
        for j in range(1, 4):
            following = db.table(f"t_found{j}")
            db.materialize(following, member_step_query(found, cur, 3, j))
            found = following
    elif start == "levels":
        gone = db.table("t_gone")
        db.materialize(gone, gone_query(levels[0], cur))
        db.materialize(found, member_level_query(chosen, levels, gone, 3))
    else:
        gone = db.table("t_gone")
        db.materialize(gone, gone_query(levels[0], cur))
        db.materialize(found, member_pair_query(chosen, levels[1], gone, 3))
        following = db.table("t_found3")
        db.materialize(following, member_step_query(found, cur, 3, 3))
        found = following
    got = sorted((int(r), int(rec)) for r, rec in db.query(
        exp.select("rule_id", "record_id").from_(found)))
    want = sorted((n, r) for n, x in enumerate(xsets, 1) for r, items in recs.items()
                  if set(x) <= set(items))
    assert got == want
    assert want  # the draw has rules with records
