"""SuppressControl's greedy (TDControl step 2) on every backend, against the one-at-a-time greedy
written in plain Python.

The greedy is a weighted set cover over the unsafe rules: for antecedent sizes 1, 2, ... in
turn, suppress the sensitive item type in the most rules of that size per occurrence it costs
(ties: the smaller item id), drop every rule holding it, and repeat. A round of
``tdcgreedy.pick_query`` picks several types at once; the types must be those of the
one-at-a-time pass, and rounds must pick more than one type where the scores allow it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import count

import pytest
from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.rho.tdcgreedy import rules_left_query, signatures_query, suppress_greedy

Inc = list[tuple[int, int, int]]  # rule_id, lvl, s
NONSENSITIVE = 1000  # label ids start above every sensitive type of random_case
WIDTH = 4  # X = q + {e} of rules with qids of up to 3 items


def one_at_a_time(inc: Inc, occ: dict[int, int], max_q: int) -> list[int]:
    """The greedy, one pick per step: the picked types in the order picked."""
    rules: dict[int, tuple[int, set[int]]] = {}
    for rule_id, lvl, s in inc:
        rules.setdefault(rule_id, (lvl, set()))[1].add(s)
    picked: list[int] = []
    for lvl in range(1, max_q + 1):
        while True:
            counts: dict[int, int] = {}
            for size, items in rules.values():
                if size == lvl:
                    for s in items:
                        counts[s] = counts.get(s, 0) + 1
            if not counts:
                break
            best = min(counts, key=lambda s: (-(float(counts[s]) / occ[s]), s))
            picked.append(best)
            rules = {r: v for r, v in rules.items() if best not in v[1]}
    return picked


def random_case(seed: int) -> tuple[Inc, dict[int, int]]:
    """Rules of sizes 1-3 holding 1-3 of 25 sensitive types (popular ones more often);
    occurrence counts from a small range so that scores tie."""
    rng = random.Random(seed)
    types = list(range(1, 26))
    weights = [1.0 / rank for rank in range(1, len(types) + 1)]
    occ = {s: rng.choice([2, 3, 4, 6, 8, 12]) for s in types}
    inc: Inc = []
    for rule_id in range(1, rng.randint(60, 240)):
        lvl = rng.randint(1, 3)
        held = set(rng.choices(types, weights, k=rng.randint(1, min(3, lvl + 1))))
        inc.extend((rule_id, lvl, s) for s in sorted(held))
    return inc, occ


def values_table(db: Backend, name: str, columns: Sequence[str],
                 rows: Sequence[tuple[int, ...]]) -> exp.Table:
    """A work table holding ``rows``, built as a VALUES expression (no text pasted)."""
    values = exp.values([tuple(exp.Literal.number(v) for v in row) for row in rows], alias="v",
                        columns=list(columns))
    table = db.table(name)
    db.materialize(table, exp.select(*(exp.cast(exp.column(c), "BIGINT").as_(c)
                                       for c in columns)).from_(values))
    return table


# Seeds 12 and 62: cases where the order of two types of equal score decides the picks
# (found by running the same pass, written in Python, against this one on 3,000 seeds).
def rules_rows(inc: Inc) -> list[tuple[int, ...]]:
    """The rules as ``signatures_query`` reads them: (x1..x4, size), X = q + {e} sorted, its
    non-sensitive members labels of their own (so no two rules share one), padded with 0."""
    rules: dict[int, tuple[int, list[int]]] = {}
    for rule_id, lvl, s in inc:
        rules.setdefault(rule_id, (lvl, []))[1].append(s)
    rows = []
    for rule_id, (lvl, held) in sorted(rules.items()):
        size = lvl + 1
        xs = sorted(held) + [NONSENSITIVE + 4 * rule_id + j for j in range(size - len(held))]
        rows.append((*xs, *[0] * (WIDTH - len(xs)), size))
    return rows


# Seeds 12 and 62: cases where the order of two types of equal score decides the picks
# (found by running the same pass, written in Python, against this one on 3,000 seeds).
@pytest.mark.on_spark(seeds=[12], connect=True)
@pytest.mark.parametrize("seed", [1, 2, 12, 62])
def test_rounds_pick_what_the_one_at_a_time_greedy_picks(db: Backend, seed: int) -> None:
    inc_rows, occ = random_case(seed)
    rules = values_table(db, "t_rules", ("x1", "x2", "x3", "x4", "size"), rules_rows(inc_rows))
    sens = values_table(db, "t_sens", ("item_id",), [(s,) for s in sorted(occ)])
    sig = db.table("t_sig")
    db.materialize(sig, signatures_query(rules, sens, WIDTH))
    occ_table = values_table(db, "t_occ", ("item_id", "n"), sorted(occ.items()))
    supp = db.table("t_supp0")
    db.materialize(supp, exp.select(exp.column("item_id")).from_(occ_table.copy())
                   .where(exp.false()))
    names = count(1)
    supp, rounds = suppress_greedy(db, lambda purpose: db.table(f"t_{purpose}{next(names)}"),
                                   supp, sig, occ_table, WIDTH, 3)
    expected = one_at_a_time(inc_rows, occ, 3)
    assert sorted(s for (s,) in db.query(exp.select("item_id").from_(supp))) == sorted(expected)
    assert db.scalar(rules_left_query(sig, supp, WIDTH)) == 0
    # Batched: fewer rounds than picks (the scores of these cases always allow some batching).
    assert 0 < rounds < len(expected)
