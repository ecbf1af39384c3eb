"""Single-valued quasi-identifiers: their working tables and one specialization step each.

A numeric QI is an interval per class, split in two (Alg. 1 l.5); a categorical QI is a node of
its hierarchy per class (a flat one, value -> '*', when none is loaded), descended one level.
Both steps run over all classes at once and keep a class unchanged where the split would leave
fewer than k records in a part (Alg. 1 l.6-7, decided per class).
"""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset
from setanon_sql.models.kanon.plan import QI
from setanon_sql.models.kanon.work import Work

TEXT = exp.DataType.build("TEXT")
BIGINT = exp.DataType.build("BIGINT")


def _one(value: int) -> exp.Expr:
    return exp.cast(exp.Literal.number(value), BIGINT)


def init_numeric(work: Work, dataset: Dataset, qi: QI) -> tuple[int, int]:
    """``val`` and the one class's tight interval; returns the global (min, max)."""
    backend = work.backend
    records = backend.table(dataset.records_table)
    value = exp.cast(exp.column(qi.attribute.column), BIGINT)
    val = work.build(f"v{qi.no}", exp.select("record_id", value.as_("v")).from_(records))
    work.build(f"b{qi.no}", exp.select(_one(1).as_("cls"), exp.func("min", exp.column("v"))
                                       .as_("lo"), exp.func("max", exp.column("v")).as_("hi"))
               .from_(val))
    lo, hi = backend.query(exp.select("lo", "hi").from_(work[f"b{qi.no}"]))[0]
    return int(lo), int(hi)


def _flat_nodes(backend: Backend, dataset: Dataset, qi: QI) -> exp.Query:
    """Root '*' (node 0) over one leaf per distinct value (NULL included, ordered last)."""
    column = exp.column(qi.attribute.column)
    distinct = (exp.select(column.as_("c")).distinct()
                .from_(backend.table(dataset.records_table)).subquery("d"))
    label = exp.cast(exp.column("c"), TEXT)
    order = exp.Order(expressions=[exp.Ordered(this=backend.binary_sort_key(label),
                                               nulls_first=False)])
    leaves = exp.select(
        exp.cast(exp.Window(this=exp.RowNumber(), order=order), BIGINT).as_("node"),
        label.as_("label"), exp.Literal.number(1).as_("depth"), _one(1).as_("n_leaves"),
    ).from_(distinct.copy())
    root = exp.select(_one(0).as_("node"), exp.Literal.string("*").as_("label"),
                      exp.Literal.number(0).as_("depth"),
                      exp.cast(exp.func("count", exp.Star()), BIGINT).as_("n_leaves"),
                      ).from_(distinct)
    return exp.union(root, leaves, distinct=False)


def init_category(work: Work, dataset: Dataset, qi: QI, has_nulls: bool) -> int:
    """Nodes, ancestors and leaf codes of a categorical QI; returns its number of leaves."""
    backend = work.backend
    n, a = f"n{qi.no}", f"a{qi.no}"
    if qi.hierarchy_id is None:
        work.build(n, _flat_nodes(backend, dataset, qi))
        work.build(a, "kanon_flat_anc", tables={"nodes": work[n]})
    else:
        catalog = backend.catalog_tables("hierarchy_nodes")
        params = {"hierarchy_id": qi.hierarchy_id}
        work.build(n, "kanon_hierarchy_nodes", {**params, "null_leaves": int(has_nulls)}, catalog)
        work.build(a, "kanon_hierarchy_anc", params, {**catalog, "nodes": work[n]})
        if has_nulls:
            null_node = {"null_node": work.count(n)}
            work.build(n, "kanon_null_leaf_nodes", null_node, {"nodes": work[n]})
            work.build(a, "kanon_null_leaf_anc", null_node, {"anc": work[a]})
    leaves = (exp.select(exp.column("leaf", table="a"), exp.column("label", table="l"))
              .from_(work[a].as_("a"))
              .join(work[n].as_("l"), on="l.node = a.leaf")
              .where("a.node = a.leaf").subquery("l"))
    value = exp.cast(exp.column(qi.attribute.column, table="r"), TEXT)
    code = (exp.column("leaf", table="l") if not has_nulls else exp.func(
        "coalesce", exp.column("leaf", table="l"),
        exp.select("node").from_(work[n]).where("depth = 1 AND label IS NULL").subquery()))
    work.build(f"v{qi.no}", exp.select(exp.column("record_id", table="r"), code.as_("v"))
               .from_(backend.table(dataset.records_table, "r"))
               .join(leaves, on=exp.column("label", table="l").eq(value), join_type="left"))
    work.build(f"g{qi.no}", exp.select(_one(1).as_("cls"), _one(0).as_("node")))
    return int(backend.scalar(exp.select("n_leaves").from_(work[n]).where("node = 0")))


def numeric_step(work: Work, qi: QI, k: int, next_cls: int,
                 records: exp.Table) -> exp.Table | None:
    """Split every class's interval (the classes of ``records``, the fresh ones); returns the
    moves (cls -> new_cls) or None if none split."""
    val, bounds = work[f"v{qi.no}"], f"b{qi.no}"
    moves = work.build("moves", "kanon_numeric_moves", {"k": k, "next_cls": next_cls},
                       {"state": records, "val": val})
    if work.count("moves") == 0:
        return None
    work.build("state", "kanon_numeric_state", tables={"state": work["state"], "val": val,
                                                       "moves": moves})
    work.build(bounds, "kanon_numeric_bounds", tables={"bounds": work[bounds], "moves": moves})
    return moves


def category_step(work: Work, qi: QI, k: int, next_cls: int,
                  records: exp.Table) -> exp.Table | None:
    """Descend one hierarchy level in every class (of ``records``); returns the moves or None
    if none moved."""
    val, gen = work[f"v{qi.no}"], f"g{qi.no}"
    leaves = work.build("leaves", "kanon_category_leaves", tables={
        "state": records, "val": val, "gen": work[gen], "nodes": work[f"n{qi.no}"],
        "anc": work[f"a{qi.no}"]})
    moves = work.build("moves", "kanon_category_moves", {"k": k, "next_cls": next_cls},
                       {"leaves": leaves})
    if work.count("moves") == 0:
        return None
    work.build("state", "kanon_category_state", tables={
        "state": work["state"], "val": val, "leaves": leaves, "moves": moves})
    return moves
