"""Each unsafe rule's item type and the rules' order (scores_query, chosen_query), on every
backend.

The definition (Jia et al. Alg. 2 l.5-8 with the project's tie-breaks, see
:mod:`setanon_sql.models.rho.choice`) is computed here in plain Python over the stacked
(rule, candidate) rows: candidates ordered by (h descending, k, e first, item id), rules by
(h descending, k, d, rule id). Few distinct item statistics and supports make ties common, so
every tie-break is exercised.
"""

from __future__ import annotations

import math
import random

import pytest
from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.rho.choice import chosen_query, scores_query
from setanon_sql.models.rho.qids import numbered_rules
from tests.integration.test_rho_blocking import values_table

NUM, DEN = 7, 10  # ρ = 0.7
BUFFER = 1
SENSITIVE = (2, 3, 5, 8)


def random_rules(seed: int, width: int) -> list[tuple[int, ...]]:
    """(rule_id, part, q1..q_{width-1}, e, x1..x_width, size, sx, sq, w, xrec), every rule
    unsafe; xrec (the record holding X when sx = 1) is record 1, or -1 for NULL."""
    rng = random.Random(seed)
    rules: list[tuple[int, ...]] = []
    seen: set[tuple[int, ...]] = set()
    while len(rules) < 60:
        part = rng.choice([0, 1])
        x = sorted(rng.sample(range(1, 10), rng.randint(2, width)))
        e = rng.choice([i for i in x if i in SENSITIVE] or [0])
        if not e or (part, e, *x) in seen:
            continue
        seen.add((part, e, *x))
        q = [i for i in x if i != e]
        sq = rng.choice([1] * 6 + [*range(2, 7)])
        sx = rng.randint(math.floor(sq * NUM / DEN) + 1, sq)  # den·sx > num·sq: unsafe
        rules.append((len(rules) + 1, part, *q, *([0] * (width - 1 - len(q))), e, *x,
                      *([0] * (width - len(x))), len(x), sx, sq, rng.choice([0, BUFFER]),
                      rng.choice([-1, 1, 1])))
    return rules


def item_stats(seed: int) -> list[tuple[int, int, int, int]]:
    """(part, item_id, n0, n): three (n0, n) pairs only, so scores tie often."""
    rng = random.Random(seed + 100)
    pairs = [(10, 10), (10, 5), (20, 10)]
    return [(part, item, *rng.choice(pairs)) for part in (0, 1) for item in range(1, 10)]


def expected(rules: list[tuple[int, ...]], stats: list[tuple[int, int, int, int]], width: int,
             heuristic: str, collapse: bool = False) -> dict[int, tuple[int, int, float, int]]:
    """rule_id -> (d, k, h, rnk) from the definition; with ``collapse``, of the rules with
    sx = 1 and a holder (xrec) that choose the same d, only the least rule_id is ranked."""
    by_item = {(part, item): (n0, n) for part, item, n0, n in stats}
    totals = {part: (sum(n0 for p, _, n0, _ in stats if p == part),
                     sum(n for p, _, _, n in stats if p == part)) for part in (0, 1)}
    best: dict[int, tuple[float, int, int]] = {}
    for rule in rules:
        rule_id, part, *rest = rule
        q, e = rest[:width - 1], rest[width - 1]
        sx, sq, w = rule[-4], rule[-3], rule[-2]
        if w != BUFFER:
            continue
        excess = DEN * sx - NUM * sq
        candidates = [(e, math.ceil(excess / DEN), 1)]
        candidates += [(d, math.ceil(excess / (DEN - NUM)), 0) for d in q if d]
        scored = []
        for d, k, ise in candidates:
            n0, n = by_item[part, d]
            if heuristic == "mine":
                h = -(n / n0) * k
            else:
                t0, t = totals[part]
                h = (n / t) * math.log((n / t) / (n0 / t0)) / k
            scored.append(((-h, k, -ise, d), (h, k, d)))
        h, k, d = min(scored)[1]
        best[rule_id] = (h, k, d)
    if collapse:
        first: dict[tuple[int, int, int], int] = {}
        for rule in rules:
            rule_id, part, sx, xrec = rule[0], rule[1], rule[-4], rule[-1]
            if rule_id in best and sx == 1 and xrec != -1:
                key = (part, xrec, best[rule_id][2])
                first[key] = min(first.get(key, rule_id), rule_id)
        left_out = {rule[0] for rule in rules if rule[0] in best and rule[-4] == 1
                    and rule[-1] != -1 and first[rule[1], rule[-1], best[rule[0]][2]] != rule[0]}
        assert left_out, "the draw has rules to collapse"
        best = {r: v for r, v in best.items() if r not in left_out}
    order = sorted(best, key=lambda r: (-best[r][0], best[r][1], best[r][2], r))
    return {r: (best[r][2], best[r][1], best[r][0], rnk) for rnk, r in enumerate(order, 1)}


@pytest.mark.on_spark(seeds=[1], connect=True)
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("width", [3, 4])
@pytest.mark.parametrize("heuristic", ["mine", "dist"])
@pytest.mark.parametrize("collapse", [False, True])
def test_each_rule_takes_its_first_candidate_and_the_rules_are_ranked(
        db: Backend, seed: int, width: int, heuristic: str, collapse: bool) -> None:
    rules_rows = random_rules(seed, width)
    columns = ["rule_id", "part", *(f"q{p}" for p in range(1, width)), "e",
               *(f"x{j}" for j in range(1, width + 1)), "size", "sx", "sq", "w", "xrec"]
    drawn = values_table(db, "t_drawn", ", ".join(columns), rules_rows)
    rules = db.table("t_rules")  # xrec -1 stands for NULL (no holder known)
    db.materialize(rules, exp.select(*columns[:-1], exp.func(
        "nullif", exp.column("xrec"), exp.Literal.number(-1)).as_("xrec")).from_(drawn))
    stats = item_stats(seed)
    istat = values_table(db, "t_istat", "part, item_id, n0, n", stats)
    scores = db.table("t_scores")
    db.materialize(scores, scores_query(rules, istat, width, heuristic),
                   {"w": BUFFER, "num": NUM, "den": DEN})
    chosen = db.table("t_chosen")
    db.materialize(chosen, chosen_query(scores, rules, width, collapse))
    got = {int(r): (int(d), int(k), float(h), int(rnk)) for r, d, k, h, rnk in db.query(
        exp.select("rule_id", "d", "k", "h", "rnk").from_(chosen))}
    want = expected(rules_rows, stats, width, heuristic, collapse)
    assert {r: (d, k, rnk) for r, (d, k, _, rnk) in got.items()} == {
        r: (d, k, rnk) for r, (d, k, _, rnk) in want.items()}
    assert {r: h for r, (_, _, h, _) in got.items()} == pytest.approx(
        {r: h for r, (_, _, h, _) in want.items()})
    # the draw exercises the tie-breaks: equal h between a rule's candidates and between rules
    assert len({h for _, _, h, _ in want.values()}) < len(want)
    # every column of the rule comes along
    wide = db.query(exp.select(*columns).from_(chosen))
    assert sorted(tuple(-1 if v is None else int(v) for v in row) for row in wide) == sorted(
        row for row in rules_rows if row[-2] == BUFFER and row[0] in want)


@pytest.mark.on_spark(seeds=[1], connect=True)
@pytest.mark.parametrize("seed", [1, 2])
def test_rules_are_numbered_by_part_e_and_x(db: Backend, seed: int) -> None:
    """rule_id is the rank by (part, e, x1, x2, x3), counted group by group
    (:func:`numbered_rules`): compared with one sort in Python."""
    rng = random.Random(seed)
    rows = sorted({(rng.choice([0, 1, 2]), rng.choice(SENSITIVE),
                    *sorted(rng.sample(range(1, 30), 3))) for _ in range(200)})
    rng.shuffle(rows)
    unnumbered = values_table(db, "t_unnumbered", "part, e, x1, x2, x3", rows)
    numbered = db.table("t_numbered")
    db.materialize(numbered, numbered_rules(exp.select("*").from_(unnumbered), 3))
    got = {tuple(int(v) for v in row[1:]): int(row[0]) for row in db.query(
        exp.select("rule_id", "part", "e", "x1", "x2", "x3").from_(numbered))}
    assert got == {row: rank for rank, row in enumerate(sorted(rows), start=1)}
