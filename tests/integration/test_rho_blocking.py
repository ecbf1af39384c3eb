"""Which rules one round sanitizes together (blocked_rules_query, settle), on both backends.

A rule B is overtaken when a rule of higher rank would suppress an item of X_B from a record of
C(X_B): only then could doing both at once suppress more than taking them one after the other.
``blocked_rules_query`` holds back every overtaken rule; ``settle`` then admits those that only
held-back rules overtake, as taking the rules one by one in rank order would. Hand-made rules
whose answer follows from those definitions, and random ones checked against that greedy pass
written in plain Python.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import NamedTuple

import pytest
from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.rho.pickkey import pick_key_int
from setanon_sql.models.rho.suppression import (
    admitted_picks_query,
    blocked_rules_query,
    picks_query,
    settle,
)

# rule_id, rnk, d, x1, x2, x3 (X = q + {e}; 0 pads)
CHOSEN = [(1, 1, 10, 10, 20, 30),   # picks 10 from record 100 (also holds record 200)
          (2, 2, 40, 10, 40, 50),   # shares record 100 and holds 10: waits for rule 1
          (3, 3, 60, 20, 60, 0),    # shares record 100, but rule 1 takes 10, not 20 or 60
          (4, 4, 10, 10, 70, 0),    # record 200 is rule 1's, but rule 1 picks 10 only from 100
          (5, 5, 80, 40, 80, 0)]    # rule 2 would take 40 from 100: waits, though 2 waits too
MEMBERS = [(1, 1, 100), (1, 1, 200), (2, 2, 100), (3, 3, 100), (4, 4, 200), (5, 5, 100)]
PICKS = [(100, 10, 1, 1), (100, 40, 2, 2), (100, 60, 3, 3), (200, 10, 4, 4), (100, 80, 5, 5)]


def values_table(db: Backend, name: str, columns: str, rows: Sequence[tuple[int, ...]]
                 ) -> exp.Table:
    """A work table holding ``rows``, built as a VALUES expression (no text pasted)."""
    values = exp.values([tuple(exp.Literal.number(v) for v in row) for row in rows], alias="v",
                        columns=columns.split(", "))
    table = db.table(name)
    db.materialize(table, exp.select("*").from_(values))
    return table


def test_a_rule_waits_only_where_a_higher_pick_takes_one_of_its_items(db: Backend) -> None:
    chosen = values_table(db, "t_chosen", "rule_id, rnk, d, x1, x2, x3", CHOSEN)
    members = values_table(db, "t_members", "rule_id, rnk, record_id", MEMBERS)
    picks = values_table(db, "t_picks", "record_id, item_id, rule_id, rnk", PICKS)
    blocked = db.table("t_blocked")
    db.materialize(blocked, blocked_rules_query(chosen, members, picks, 3))
    assert sorted(r for (r,) in db.query(exp.select("rule_id").from_(blocked))) == [2, 5]
    dels = sorted(db.query(admitted_picks_query(picks, blocked)))
    assert dels == [(100, 10), (100, 60), (200, 10)]


class Settled(NamedTuple):
    waiting: list[int]
    dels: list[tuple[int, int]]
    steps: int
    blocked: int  # how many rules blocked_rules_query held back


def settled(db: Backend, chosen_rows: Sequence[tuple[int, ...]],
            member_rows: Sequence[tuple[int, ...]],
            pick_rows: Sequence[tuple[int, ...]], x_in_members: bool = False) -> Settled:
    """The waiting rules, the round's suppressions and the settling steps, by the SQL.
    ``x_in_members``: the members table carries each rule's x1..x3 (as the rho model's member
    routes write it) and the queries read X from there instead of joining ``chosen``."""
    chosen = values_table(db, "t_chosen", "rule_id, rnk, d, x1, x2, x3", chosen_rows)
    if x_in_members:
        xs = {rule: x for rule, _, _, *x in chosen_rows}
        members = values_table(db, "t_members", "rule_id, rnk, x1, x2, x3, record_id",
                               [(rule, rnk, *xs[rule], record) for rule, rnk, record
                                in member_rows])
    else:
        members = values_table(db, "t_members", "rule_id, rnk, record_id", member_rows)
    picks = values_table(db, "t_picks", "record_id, item_id, rule_id, rnk", pick_rows)
    blocked = db.table("t_blocked")
    db.materialize(blocked, blocked_rules_query(chosen, members, picks, 3,
                                                x_in_members=x_in_members))

    def fresh(purpose: str) -> exp.Table:
        # One table per purpose, dropped when named again, as the suppressor's work tables.
        table = db.table(f"t_{purpose}")
        db.drop_table(table)
        return table

    held_back = len(db.query(exp.select("rule_id").from_(blocked)))
    waiting, steps = settle(db, fresh, chosen, members, picks, blocked, 3,
                            x_in_members=x_in_members)
    rules = sorted(r for (r,) in db.query(exp.select("rule_id").from_(waiting)))
    return Settled(rules, sorted(db.query(admitted_picks_query(picks, waiting))), steps,
                   held_back)


def test_a_rule_overtaken_only_by_waiting_rules_goes_now(db: Backend) -> None:
    # Rule 2 waits for rule 1, which goes; rule 5 waited for rule 2 only, so it goes too.
    waiting, dels, steps, _ = settled(db, CHOSEN, MEMBERS, PICKS)
    assert waiting == [2]
    assert dels == [(100, 10), (100, 60), (100, 80), (200, 10)]
    assert steps == 1


@pytest.mark.parametrize("length", [4, 12])
def test_a_chain_of_overtakers_alternates(db: Backend, length: int) -> None:
    # Each rule takes its d from record 100, which holds all of them, and each X holds the
    # d of the rule before: 1 overtakes 2, 2 overtakes 3, 3 overtakes 4 ... In rank order 1
    # goes, 2 is skipped, so 3 goes and 4 is skipped: a step admits one rule and rejects the
    # next. Twelve rules take six steps, so the held rows are narrowed twice, skipping steps
    # between (settle narrows them once the open rules are at most half of those they hold).
    chosen = [(1, 1, 10, 10, 0, 0)] + [(r, r, 10 * r, 10 * (r - 1), 10 * r, 0)
                                       for r in range(2, length + 1)]
    members = [(r, r, 100) for r in range(1, length + 1)]
    picks = [(100, d, r, r) for r, _, d, *_ in chosen]
    waiting, dels, steps, _ = settled(db, chosen, members, picks)
    assert waiting == list(range(2, length + 1, 2))
    assert dels == [(100, 10 * r) for r in range(1, length + 1, 2)]
    assert steps == length // 2


def greedy(chosen: Sequence[tuple[int, ...]], members: Sequence[tuple[int, ...]],
           picks: Sequence[tuple[int, ...]]) -> list[int]:
    """The rules skipped when they are taken one by one in rank order, each skipped if a taken
    one picks an item of its X from a record of its C(X)."""
    records = {r: {m for rule, _, m in members if rule == r} for r, *_ in chosen}
    taken_picks: set[tuple[int, int]] = set()
    skipped = []
    for rule, _, _, *x in sorted(chosen, key=lambda row: row[1]):
        items = {i for i in x if i}
        if any((m, i) in taken_picks for m in records[rule] for i in items):
            skipped.append(rule)
        else:
            taken_picks |= {(m, i) for m, i, r, _ in picks if r == rule}
    return sorted(skipped)


def settling_steps(chosen: Sequence[tuple[int, ...]], members: Sequence[tuple[int, ...]],
                   picks: Sequence[tuple[int, ...]]) -> int:
    """How many steps settling takes, by its definition over all blocked rules (each step
    re-reads every waiting rule): the SQL narrows what a step reads to the open rules, which
    must not change when it ends."""
    rank = {r: rnk for r, rnk, *_ in chosen}
    records = {r: {m for rule, _, m in members if rule == r} for r in rank}
    items = {r: {i for i in x if i} for r, _, _, *x in chosen}

    def overtaken(rule: int, by: set[int]) -> bool:
        return any(r in by and rnk < rank[rule] and m in records[rule] and i in items[rule]
                   for m, i, r, rnk in picks)

    waiting = {r for r in rank if overtaken(r, set(rank))}
    steps = 0
    while waiting:
        steps += 1
        rejected = {r for r in waiting if overtaken(r, set(rank) - waiting)}
        live = waiting - rejected
        still = rejected | {r for r in live if overtaken(r, live)}
        if still in (rejected, waiting):
            break
        waiting = still
    return steps


@pytest.mark.parametrize("x_in_members", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_settling_skips_what_the_one_by_one_pass_skips(db: Backend, seed: int,
                                                       x_in_members: bool) -> None:
    rng = random.Random(seed)
    chosen, members, picks = [], [], []
    for rule in range(1, 41):
        x = sorted(rng.sample(range(1, 9), rng.randint(1, 3)))
        d = rng.choice(x)
        chosen.append((rule, rule, d, *x, *[0] * (3 - len(x))))
        held = rng.sample(range(100, 112), rng.randint(1, 4))
        members += [(rule, rule, m) for m in held]
        picks += [(m, d, rule, rule) for m in rng.sample(held, rng.randint(1, len(held)))]
    waiting, dels, steps, blocked = settled(db, chosen, members, picks, x_in_members)
    assert waiting == greedy(chosen, members, picks)
    assert steps == settling_steps(chosen, members, picks)
    assert blocked > len(waiting)  # settling admitted some rules blocked_rules_query held back
    assert dels == sorted({(m, i) for m, i, r, _ in picks if r not in waiting})


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_rules_picks_are_its_k_records_first_by_the_pick_key(db: Backend, seed: int) -> None:
    """picks_query against the key's Python twin: each rule's k records of least
    (pick_key(rule, record, salt), record), with the rule's d and rank; k may exceed C(X)."""
    rng = random.Random(seed)
    salt = rng.randrange(2**31 - 1)
    chosen_rows, member_rows = [], []
    for rule in rng.sample(range(1, 2**40), 30):
        rnk = len(chosen_rows) + 1
        held = rng.sample(range(1, 2**35), rng.randint(1, 12))
        chosen_rows.append((rule, rnk, rng.randint(1, 50), rng.randint(1, 14)))
        member_rows += [(rule, rnk, record) for record in held]
    chosen = values_table(db, "t_chosen", "rule_id, rnk, d, k", chosen_rows)
    members = values_table(db, "t_members", "rule_id, rnk, record_id", member_rows)
    picks = db.table("t_picks")
    db.materialize(picks, picks_query(chosen, members), {"salt": salt})
    expected = []
    for rule, rnk, d, k in chosen_rows:
        records = [m for r, _, m in member_rows if r == rule]
        first = sorted(records, key=lambda m: (pick_key_int(rule, m, salt), m))[:k]
        expected += [(m, d, rule, rnk) for m in first]
    assert sorted(db.query(exp.select("*").from_(picks))) == sorted(expected)
