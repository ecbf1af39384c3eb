"""Publish a kanon run (records with generalized QIs, disclosed items) and compute its figures.

Published tables follow ``setanon_sql.io.published``: ``records`` (record_id, position, every
single-valued column; generalized QIs as text: ``[lo-hi]`` intervals, hierarchy labels, ``*``)
and ``items_<attr>`` (the disclosed items) per set-valued QI. Deleted records are absent.
"""

from __future__ import annotations

import math
from typing import Any

from sqlglot import exp

from setanon_sql.catalog import Dataset
from setanon_sql.models.kanon.controller import Anonymization, class_loss
from setanon_sql.names import qi_column
from setanon_sql.runs import RunContext

TEXT = exp.DataType.build("TEXT")


def interval_label(lo: exp.Expr, hi: exp.Expr) -> exp.Expr:
    """``[lo-hi]``, or the value itself when the interval holds one value."""
    text = exp.DPipe(this=exp.DPipe(this=exp.DPipe(this=exp.DPipe(
        this=exp.Literal.string("["), expression=exp.cast(lo, TEXT)),
        expression=exp.Literal.string("-")), expression=exp.cast(hi, TEXT)),
        expression=exp.Literal.string("]"))
    return exp.Case(ifs=[exp.If(this=lo.eq(hi), true=exp.cast(lo, TEXT))], default=text)


def publish(result: Anonymization, dataset: Dataset, context: RunContext) -> None:
    """Create the run's ``records`` and ``items_<attr>`` tables.

    Numeric intervals are first tightened to each final class's members (the search splits an
    interval at a cut point and copies it to classes later split on other QIs, so its bounds
    can be wider than the values left in the class); the figures then read the tight ones.
    """
    context.set_phase("publish")
    work, backend = result.work, result.work.backend
    kinds = {qi.no: qi for qi in result.plan.qis}
    for numeric in (q for q in result.plan.qis if q.kind == "numeric"):
        work.build(f"b{numeric.no}", "kanon_tight_bounds",
                   tables={"state": work["state"], "val": work[f"v{numeric.no}"]})
    query = (exp.select(exp.column("record_id", table="r"), exp.column("position", table="r"))
             .from_(backend.table(dataset.records_table, "r"))
             .join(work["state"].as_("s"), on="s.record_id = r.record_id"))
    for attribute in dataset.single_attributes:
        qi = kinds.get(attribute.attr_no)
        column = qi_column(attribute.attr_no)
        if qi is None:
            query = query.select(exp.column(column, table="r").as_(column))
        elif qi.kind == "numeric":
            alias = f"b{qi.no}"
            query = query.join(work[alias].as_(alias), on=f"{alias}.cls = s.cls").select(
                interval_label(exp.column("lo", table=alias), exp.column("hi", table=alias))
                .as_(column))
        else:
            gen, nodes = f"g{qi.no}", f"n{qi.no}"
            query = (query.join(work[gen].as_(gen), on=f"{gen}.cls = s.cls")
                     .join(work[nodes].as_(nodes), on=f"{nodes}.node = {gen}.node")
                     .select(exp.column("label", table=nodes).as_(column)))
    backend.materialize(context.table("records"), query)
    for qi in result.plan.qis:
        if qi.kind == "set":
            backend.materialize(context.table(f"items_{qi.no}"), "kanon_published_items",
                                tables={"state": work["state"], "disc": work[f"d{qi.no}"]})


def _size_buckets(histogram: list[tuple[int, int]], k: int) -> dict[str, int]:
    """Classes by size, in doubling buckets from k: {"2-3": 10, "4-7": 3, ...}."""
    buckets: dict[str, int] = {}
    for size, count in histogram:
        low = k * 2 ** int(math.log2(size / k)) if size >= k else size
        key = f"{low}-{low * 2 - 1}" if size >= k else str(size)
        buckets[key] = buckets.get(key, 0) + int(count)
    return buckets


def figures(result: Anonymization, dataset: Dataset) -> dict[str, Any]:
    """NCP per QI and overall, disclosed-item shares, classes, deletions, iterations.

    NCP counts a deleted record as fully generalized (loss 1 on every QI), so deleting records
    never looks like a gain.
    """
    work, backend, plan = result.work, result.work.backend, result.plan
    n, deleted = plan.n_records, plan.n_records - result.live
    per_qi: dict[str, float] = {}
    disclosed: dict[str, dict[str, Any]] = {}
    for qi in plan.qis:
        loss = result.losses[qi.no]
        if qi.kind == "set":
            total = result.occurrences_total[qi.no]
            shown = class_loss(work, qi)
            per_qi[qi.name] = 1.0 - shown / total if total else 0.0
            distinct = backend.scalar(
                exp.select(exp.Count(this=exp.Distinct(
                    expressions=[exp.column("item_id", table="d")])))
                .from_(work[f"d{qi.no}"].as_("d"))
                .join(work["cs"].as_("c"), on="c.cls = d.cls"))
            disclosed[qi.name] = {
                "occurrences": total, "disclosed": int(shown),
                "share": shown / total if total else 0.0,
                "distinct_items": qi.attribute.n_distinct, "distinct_disclosed": int(distinct)}
        else:
            per_qi[qi.name] = ((class_loss(work, qi) + deleted * loss.per_record)
                               / (n * loss.per_record)) if loss.per_record else 0.0
    histogram = [(int(a), int(b)) for a, b in backend.query(
        "kanon_class_size_histogram", tables={"cs": work["cs"]})]
    n_classes = sum(count for _, count in histogram)
    return {
        "k": plan.k, "beta": plan.beta, "suppress_budget": plan.epsilon,
        "qi": [qi.name for qi in plan.qis],
        "qi_kinds": {qi.name: qi.kind + (" (hierarchy)" if qi.hierarchy_id else "")
                     for qi in plan.qis},
        "records": n, "records_published": result.live, "records_deleted": deleted,
        "deletion_budget": plan.budget,
        "ncp": per_qi, "ncp_overall": sum(per_qi.values()) / len(per_qi),
        "disclosed_items": disclosed,
        "classes": {
            "count": n_classes,
            "min_size": histogram[0][0] if histogram else 0,
            "max_size": histogram[-1][0] if histogram else 0,
            "mean_size": result.live / n_classes if n_classes else 0.0,
            "by_size": _size_buckets(histogram, plan.k)},
        "iterations": len(result.history),
        "history": result.history,
    }
