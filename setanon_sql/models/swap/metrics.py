"""Utility figures: frequent-itemset similarity (Eq. 2) and database dissimilarity (Eq. 3).

Frequent itemsets are mined level-wise in SQL (Apriori: level k joins the records' frequent
items k times and keeps the itemsets whose (k-1)-prefix is frequent), once at the lowest
support; higher supports are filters over the same counts. Itemsets up to ``max_size`` items
are counted (the paper mined all sizes with FP-Growth; on BMS data nearly all frequent itemsets
at 0.2%-0.5% have at most 3 items).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlglot import condition, exp

from setanon_sql.backends.base import Backend
from setanon_sql.sqlrender import with_alias


def _level_query(items: exp.Table, previous: exp.Table | None, size: int) -> exp.Select:
    """Itemsets of ``size`` items with their support (HAVING >= :min_count)."""
    columns = [exp.column("item_id", table=f"t{k}").as_(f"i{k}") for k in range(1, size + 1)]
    query = exp.select(*columns, exp.Count(this=exp.Star()).as_("support")).from_(
        with_alias(items, "t1"))
    if previous is not None:
        on = " AND ".join(f"p.i{k} = t{k}.item_id" for k in range(1, size))
        joins: list[tuple[exp.Table, str]] = [
            (with_alias(items, f"t{k}"),
             f"t{k}.record_id = t1.record_id AND t{k}.item_id > t{k - 1}.item_id")
            for k in range(2, size)
        ]
        joins.append((with_alias(previous, "p"), on))
        joins.append((with_alias(items, f"t{size}"),
                      f"t{size}.record_id = t1.record_id AND "
                      f"t{size}.item_id > t{size - 1}.item_id"))
        for table, on_text in joins:
            query = query.join(table, on=condition(on_text))
    group = [exp.column("item_id", table=f"t{k}") for k in range(1, size + 1)]
    return query.group_by(*group).having(
        exp.Count(this=exp.Star()) >= exp.Placeholder(this="min_count"))


def mine(backend: Backend, items: exp.Table, min_count: int, max_size: int,
         table: Any) -> list[exp.Table]:
    """Frequent itemsets of ``items`` by size: tables ``table(k)`` with columns i1..ik, support."""
    levels: list[exp.Table] = []
    first = table(1)
    backend.materialize(first, _level_query(items, None, 1), {"min_count": min_count})
    levels.append(first)
    frequent_items = table(0)
    backend.materialize(frequent_items, exp.select("i.record_id", "i.item_id")
                        .from_(with_alias(items, "i"))
                        .join(with_alias(first, "f"), on=condition("f.i1 = i.item_id")))
    for size in range(2, max_size + 1):
        if not backend.scalar("swap_count_rows", tables={"t": levels[-1]}):
            break
        level = table(size)
        backend.materialize(level, _level_query(frequent_items, levels[-1], size),
                            {"min_count": min_count})
        levels.append(level)
    backend.drop_table(frequent_items)
    return levels


def _compare_query(original: exp.Table, anonymized: exp.Table, size: int,
                   n_supports: int) -> exp.Select:
    on = " AND ".join(f"o.i{k} = a.i{k}" for k in range(1, size + 1))
    selects = []
    for s in range(n_supports):
        m = f":m{s}"
        selects += [
            f"count(*) FILTER (WHERE o.support >= {m})",
            f"count(*) FILTER (WHERE a.support >= {m})",
            f"count(*) FILTER (WHERE o.support >= {m} AND a.support >= {m})",
        ]
    return (exp.select(*(condition(s) for s in selects))
            .from_(with_alias(original, "o"))
            .join(with_alias(anonymized, "a"), on=condition(on), join_type="FULL OUTER"))


def min_count(supports: Sequence[float], n_records: int) -> int:
    """The support count the itemsets are mined at: that of the lowest relative support."""
    return max(1, math.ceil(min(supports) * n_records - 1e-9))


def frequent_itemset_figures(backend: Backend, original: exp.Table, anonymized: exp.Table,
                             n_records: int, supports: Sequence[float], max_size: int,
                             table: Callable[[str], exp.Table]) -> list[dict[str, Any]]:
    """Per support: #FI in D and in D~, and U(D~, D) = |F_D n F_D~| / |F_D u F_D~| (Eq. 2).

    ``table(purpose)`` names the scratch tables (a run's ``context.table``, or staging names).
    """
    counts = [max(1, math.ceil(s * n_records - 1e-9)) for s in supports]
    lowest = min_count(supports, n_records)
    levels_o = mine(backend, original, lowest, max_size, lambda k: table(f"fio_{k}"))
    levels_a = mine(backend, anonymized, lowest, max_size, lambda k: table(f"fia_{k}"))
    totals = [[0, 0, 0] for _ in supports]
    params = {f"m{s}": count for s, count in enumerate(counts)}
    for size, (lo, la) in enumerate(zip(levels_o, levels_a, strict=False), start=1):
        row = backend.query(_compare_query(lo, la, size, len(supports)), params)[0]
        for s in range(len(supports)):
            for j in range(3):
                totals[s][j] += int(row[3 * s + j])
    for level in (*levels_o, *levels_a):
        backend.drop_table(level)
    figures = []
    for support, count, (n_o, n_a, both) in zip(supports, counts, totals, strict=True):
        union = n_o + n_a - both
        figures.append({"support": support, "min_count": count, "fi_original": n_o,
                        "fi_anonymized": n_a, "fi_common": both,
                        "fi_similarity": both / union if union else 1.0})
    return figures


def item_balance(backend: Backend, original: exp.Table, published: exp.Table) -> dict[str, Any]:
    """Items lost, items gained (never by a swap) and Diss (Eq. 3, after Oliveira & Zaiane).

    Diss = sum_i |f_D(i) - f_D~(i)| / sum_i f_D(i); a swap only loses items (collisions), where
    this equals the paper's (sum f_D - sum f_D~) / sum f_D.
    """
    total, changed, gained = backend.query(
        "swap_item_balance", tables={"items": original, "published": published})[0]
    published_total = int(backend.scalar("swap_count_rows", tables={"t": published}))
    total = int(total)
    return {"item_occurrences": total, "items_lost": total - published_total,
            "items_gained_kinds": int(gained),
            "diss": int(changed) / total if total else 0.0}


def tendency_figures(backend: Backend, published: exp.Table, cats: exp.Table, tend: exp.Table,
                     touched: exp.Table,
                     totals: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Records with a tendency, how many are hidden, and how many changed tendency.

    "Hidden": the published record holds no item of its original tendency category (Defs.
    3-4); "changed": its published tendency is absent or of another category. Both come from
    one pass (``swap_published_figures``) over the published items of the records in
    ``touched`` (the run's pairs; ``tend`` itself to read every record): a record outside it
    is published as it was, so it is neither. The totals per kind are counted in ``tend``,
    one row per record, unless the caller knows them (``totals``, records per kind).
    """
    if totals is None:
        totals = dict(backend.query("swap_tendency_counts", tables={"tend": tend}))
    totals = {kind: int(n) for kind, n in totals.items() if kind != "none" and n}
    rows = backend.query("swap_published_figures", tables={
        "published": published, "cats": cats, "tend": tend, "touched": touched})
    counted = {kind: (int(hidden), int(changed)) for kind, hidden, changed in rows}
    total = sum(totals.values())
    hidden = sum(h for h, _ in counted.values())
    changed = sum(c for _, c in counted.values())
    return {"tendency_records": total, "hidden_records": hidden,
            "hidden_share": hidden / total if total else 1.0,
            "hidden_by_kind": {kind: {"records": n, "hidden": counted.get(kind, (0, 0))[0]}
                               for kind, n in sorted(totals.items())},
            "tendency_changed_share": changed / total if total else 1.0}
