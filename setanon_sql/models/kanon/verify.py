"""Verify a kanon run from its published tables, in SQL (the run's working state is not used).

Checks Def. 1 on what was published: every published record shares its whole QI combination
(generalized single values and disclosed item sets) with >= k - 1 others; every published value
covers the original (interval contains it, hierarchy ancestor, '*', published set ⊆ original
set); at most floor(epsilon |T|) records were deleted.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.io.published import published
from setanon_sql.models.base import Verification
from setanon_sql.models.kanon.plan import QI, make_plan
from setanon_sql.models.kanon.verify_groups import group_sizes
from setanon_sql.names import qi_column, staging_table

TEXT = exp.DataType.build("TEXT")


def _uncovered(backend: Backend, dataset: Dataset, view: Any, qi: QI) -> int:
    """Published values of a single-valued QI that do not cover the original value."""
    original = exp.column(qi_column(qi.no), table="o")
    value = original if qi.kind == "numeric" else exp.cast(original, TEXT)
    pairs = backend.table(staging_table("pairs"))
    backend.materialize(pairs, exp.select(
        exp.column("record_id", table="p"), value.as_("v"),
        exp.column(qi_column(qi.no), table="p").as_("l"))
        .from_(view.records.copy().as_("p"))
        .join(backend.table(dataset.records_table, "o"), on="o.record_id = p.record_id"))
    try:
        if qi.kind == "numeric":
            return int(backend.scalar("kanon_verify_numeric", tables={"pairs": pairs}))
        if qi.hierarchy_id is None:
            return int(backend.scalar("kanon_verify_flat", tables={"pairs": pairs}))
        return int(backend.scalar("kanon_verify_hierarchy", {"hierarchy_id": qi.hierarchy_id},
                                  {"pairs": pairs, **backend.catalog_tables("hierarchy_nodes")}))
    finally:
        backend.drop_table(pairs)


def verify(backend: Backend, dataset: Dataset, run: Run) -> Verification:
    """Re-check a kanon run against Def. 1, its coverage and its deletion budget."""
    plan = make_plan(backend, dataset, run.params)
    view = published(backend, dataset, run)
    original = backend.table(dataset.records_table)
    n_published, n_distinct, n_known = backend.query(
        "kanon_verify_records", tables={"published": view.records, "records": original})[0]
    deleted = dataset.n_records - int(n_published)
    uncovered: dict[str, int] = {}
    repeated: dict[str, int] = {}
    for qi in plan.qis:
        if qi.kind == "set":
            uncovered[qi.name] = int(backend.scalar("kanon_verify_items", tables={
                "published": view.items[qi.no], "records": view.records,
                "items": backend.table(dataset.items_table(qi.attribute))}))
            repeated[qi.name] = int(backend.scalar("kanon_verify_repeated_items",
                                                   tables={"published": view.items[qi.no]}))
        else:
            uncovered[qi.name] = _uncovered(backend, dataset, view, qi)
    items_are_sets = not any(repeated.values())
    sizes = group_sizes(backend, view, plan.qis, plan.k, items_are_sets)
    n_groups, smallest, in_small = sizes.groups, sizes.smallest, sizes.below_k
    details = {
        "k": plan.k, "records_published": int(n_published), "records_deleted": deleted,
        "deletion_budget": plan.budget, "qi_combinations": n_groups,
        "smallest_group": smallest, "records_in_groups_below_k": in_small,
        "values_not_covering_original": uncovered, "repeated_item_rows": repeated,
        "unknown_or_repeated_records": int(n_published) - min(int(n_distinct), int(n_known)),
        "grouping": sizes.method,
    }
    ok = (in_small == 0 and deleted <= plan.budget and not any(uncovered.values())
          and not any(repeated.values())
          and details["unknown_or_repeated_records"] == 0)
    covered = (f"k-anonymity (k={plan.k}) of every published record over the QIs "
               f"{', '.join(qi.name for qi in plan.qis)} (sets compared whole), coverage of "
               f"every published value, deletions <= floor(epsilon |T|) = {plan.budget}; exact")
    return Verification(ok, covered, details)
