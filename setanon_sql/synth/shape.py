"""The shape of a dataset, printed beside every figure measured on it: distinct full rows,
distinct quasi-identifier combinations, and per set-valued column the item-frequency skew and
the set sizes. Computed in the DBMS; only these aggregates come back.

Distinct rows compare each record's item sets by fixed-width hashes (``item_set_hash``: two
independent sums of 32-bit item hashes and the set's size), not by sorted text keys: the text
keys of 10M claims did not fit DuckDB's 1.2 GB memory_limit. Equal sets always hash equal, so
a collision can only make the count smaller; two distinct sets collide with probability about
2^-66, so at 100M records the expected number of colliding pairs is below 10^-5."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset
from setanon_sql.io.keys import item_set_hash
from setanon_sql.names import qi_column


def _distinct_count(backend: Backend, query: exp.Select, columns: list[exp.Expr]) -> int:
    inner = query.select(*columns, append=False).distinct()
    return int(backend.scalar(exp.select(exp.func("count", exp.Star())).from_(
        inner.subquery("d"))))


def shape(backend: Backend, dataset: Dataset, qis: list[str] | None = None) -> dict[str, Any]:
    """Distinct rows and QI combinations, and per set column: occurrences, distinct items,
    the share of occurrences held by the top 1% of items, max/median item frequency, and the
    mean and largest set size. ``qis`` (single-valued column names) default to every QI."""
    records = backend.table(dataset.records_table, "r")
    singles = [a for a in dataset.single_attributes if a.role != "id"]
    chosen = [a for a in singles if qis is None or a.name in qis]
    query = exp.select(exp.column("record_id", table="r")).from_(records)
    row_columns: list[exp.Expr] = [exp.column(qi_column(a.attr_no), table="r") for a in singles]
    for attribute in dataset.set_attributes:
        alias = f"s{attribute.attr_no}"
        query = query.join(item_set_hash(backend.table(dataset.items_table(attribute)), alias),
                           join_type="left",
                           on=exp.column("record_id", table=alias).eq(
                               exp.column("record_id", table="r")))
        row_columns.extend(exp.column(c, table=alias) for c in ("h1", "h2", "n"))
    result: dict[str, Any] = {
        "records": dataset.n_records,
        "distinct_rows": _distinct_count(backend, query.copy(), row_columns),
        "qi": [a.name for a in chosen],
        "distinct_qi_combinations": _distinct_count(
            backend, query.copy(), [exp.column(qi_column(a.attr_no), table="r")
                                    for a in chosen]) if chosen else 0,
        "sets": {}}
    for attribute in dataset.set_attributes:
        items = backend.table(dataset.items_table(attribute))
        frequencies = sorted((int(n) for (n,) in backend.query(
            exp.select(exp.func("count", exp.Star())).from_(items.copy()).group_by("item_id"))),
            reverse=True)
        sizes = backend.query(exp.select(
            exp.func("avg", exp.column("n")), exp.func("max", exp.column("n"))).from_(
            exp.select(exp.func("count", exp.Star()).as_("n")).from_(items.copy())
            .group_by("record_id").subquery("l")))[0]
        total = sum(frequencies)
        top = max(1, len(frequencies) // 100)
        result["sets"][attribute.name] = {
            "occurrences": total, "distinct_items": len(frequencies),
            "top_1pct_share": sum(frequencies[:top]) / total if total else 0.0,
            "max_over_median_frequency": (frequencies[0] / frequencies[len(frequencies) // 2]
                                          if frequencies else 0.0),
            "mean_set_size": float(sizes[0] or 0.0), "max_set_size": int(sizes[1] or 0)}
    return result


def format_shape(found: dict[str, Any]) -> str:
    """One paragraph for a terminal or a benchmark table's caption."""
    lines = [f"shape: {found['records']:,} records, {found['distinct_rows']:,} distinct rows "
             f"({found['distinct_rows'] / max(found['records'], 1):.2%}), "
             f"{found['distinct_qi_combinations']:,} distinct combinations of "
             f"{', '.join(found['qi']) or 'no QI'}"]
    for name, s in found["sets"].items():
        lines.append(f"  {name}: {s['occurrences']:,} occurrences of {s['distinct_items']:,} "
                     f"items; top 1% of items hold {s['top_1pct_share']:.1%}, max/median "
                     f"frequency {s['max_over_median_frequency']:.1f}; set size mean "
                     f"{s['mean_set_size']:.2f}, max {s['max_set_size']}")
    return "\n".join(lines)
