"""util_mining (Nakagawa et al. eq. 12): Jaccard distance of the association rules of D and D'.

Rules are mined as Apriori does (Agrawal & Srikant): frequent itemsets level by level, a k-set
counted only over the occurrences of a frequent (k-1)-prefix and frequent items (every subset
of a frequent set is frequent, so nothing frequent is missed), then every split A -> Z \\ A of a
frequent Z with supp(Z) / supp(A) >= minconf. All in SQL: an itemset is a row of item ids
x1 < x2 < ... (as in the ρ model), a rule a row (a1.., c1..) padded with 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.rho.qids import col, placeholder, xs
from setanon_sql.sqlrender import union_all, with_alias

TableFn = Callable[[str], exp.Table]
MINSUP = Fraction(5, 10_000)  # 0.05% of the records (Sec. 6.2.2)
MINCONF = Fraction(3, 10)  # 30%


def _level(items: exp.Table, occ: exp.Table | None, k: int) -> exp.Select:
    """(record_id, x1..xk) of k-sets extending a frequent (k-1)-set by a larger item."""
    if occ is None:
        return exp.select(col("record_id"), col("item_id").as_("x1", quoted=True)).from_(
            items.copy())
    return (exp.select(col("record_id", "o"), *(col(x, "o") for x in xs(k - 1)),
                       col("item_id", "i").as_(f"x{k}", quoted=True))
            .from_(with_alias(occ, "o"))
            .join(with_alias(items, "i"), on=exp.and_(
                col("record_id", "i").eq(col("record_id", "o")),
                col("item_id", "i") > col(f"x{k - 1}", "o"))))


def frequent_itemsets(backend: Backend, table: TableFn, items: exp.Table, min_count: int,
                      max_size: int) -> list[exp.Table]:
    """f1..fK: (x1..xk, n) of every itemset with support >= min_count (K <= max_size)."""
    found: list[exp.Table] = []
    occ: exp.Table | None = None
    for k in range(1, max_size + 1):
        cand = table(f"mc{k}")
        backend.drop_table(cand)
        backend.materialize(cand, _level(items, occ, k))
        freq = table(f"mf{k}")
        backend.drop_table(freq)
        backend.materialize(freq, exp.select(*(col(x) for x in xs(k)),
                                             exp.func("count", exp.Star()).as_("n", quoted=True))
                            .from_(cand.copy()).group_by(*(col(x) for x in xs(k)))
                            .having(exp.func("count", exp.Star()) >= placeholder("min_count")),
                            {"min_count": min_count})
        if occ is not None:
            backend.drop_table(occ)
        if int(backend.scalar("metrics_count_rows", tables={"t": freq})) == 0:
            backend.drop_table(freq)
            backend.drop_table(cand)
            break
        found.append(freq)
        occ = table(f"mo{k}")
        backend.drop_table(occ)
        backend.materialize(occ, exp.select(exp.Star()).from_(with_alias(cand, "c")).where(
            exp.Exists(this=exp.select(exp.Literal.number(1)).from_(with_alias(freq, "f")).where(
                exp.and_(*(col(x, "f").eq(col(x, "c")) for x in xs(k)))))))
        backend.drop_table(cand)
    if occ is not None:
        backend.drop_table(occ)
    return found


def rules_query(freq: list[exp.Table], width: int) -> exp.Query | None:
    """(a1..a_w, c1..c_w): every rule A -> Z \\ A of a frequent Z with conf >= :cnum/:cden."""
    parts: list[exp.Select] = []
    for k in range(2, len(freq) + 1):
        for mask in range(1, 2**k - 1):
            inside = [j for j in range(1, k + 1) if mask >> (j - 1) & 1]
            outside = [j for j in range(1, k + 1) if not mask >> (j - 1) & 1]
            zero = exp.Literal.number(0)
            cols = [col(f"x{j}", "z").as_(f"a{p}", quoted=True) for p, j in enumerate(inside, 1)]
            cols += [zero.copy().as_(f"a{p}", quoted=True) for p in range(len(inside) + 1,
                                                                          width + 1)]
            cols += [col(f"x{j}", "z").as_(f"c{p}", quoted=True)
                     for p, j in enumerate(outside, 1)]
            cols += [zero.copy().as_(f"c{p}", quoted=True) for p in range(len(outside) + 1,
                                                                          width + 1)]
            on = [col(f"x{p}", "s").eq(col(f"x{j}", "z")) for p, j in enumerate(inside, 1)]
            parts.append(exp.select(*cols).from_(with_alias(freq[k - 1], "z"))
                         .join(with_alias(freq[len(inside) - 1], "s"), on=exp.and_(*on))
                         .where(placeholder("cden") * col("n", "z")
                                >= placeholder("cnum") * col("n", "s")))
    if not parts:
        return None
    union = union_all(parts)
    return union


def util_mining_tables(backend: Backend, table: TableFn, items: exp.Table, pub: exp.Table,
                       n_records: int, minsup: Fraction = MINSUP, minconf: Fraction = MINCONF,
                       max_size: int = 10) -> dict[str, float | int]:
    """1 - |R_D and R_D'| / |R_D or R_D'| (eq. 12) with the two rule sets' sizes."""
    min_count = max(1, math.ceil(minsup * n_records))
    def side_tables(side: str) -> TableFn:
        return lambda purpose: table(f"{side}{purpose}")

    sides = [frequent_itemsets(backend, side_tables(side), source, min_count, max_size)
             for side, source in (("a", items), ("b", pub))]
    width = max(1, *(len(side) for side in sides))
    sets = []
    for name, side in zip(("ra", "rb"), sides, strict=True):
        target = table(name)
        backend.drop_table(target)
        query = rules_query(side, width)
        backend.materialize(target, query if query is not None else exp.select(
            *(exp.Literal.number(0).as_(f"{c}{p}", quoted=True) for c in "ac"
              for p in range(1, width + 1))).where(exp.false()),
            {"cnum": minconf.numerator, "cden": minconf.denominator} if query else None)
        sets.append(target)
        for freq in side:
            backend.drop_table(freq)
    keys = [f"{c}{p}" for c in "ac" for p in range(1, width + 1)]
    both = (exp.select(exp.func("count", exp.Star())).from_(with_alias(sets[0], "a"))
            .join(with_alias(sets[1], "b"), on=exp.and_(*(col(k, "a").eq(col(k, "b"))
                                                          for k in keys))))
    shared = int(backend.scalar(both))
    sizes = [int(backend.scalar("metrics_count_rows", tables={"t": t})) for t in sets]
    for target in sets:
        backend.drop_table(target)
    union = sizes[0] + sizes[1] - shared
    return {"util_mining": 1 - shared / union if union else 0.0, "rules_input": sizes[0],
            "rules_output": sizes[1], "rules_shared": shared, "minsup_count": min_count}
