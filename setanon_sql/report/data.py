"""The numbers behind a report, computed in the DBMS (``sql/report_plots.sql``).

Every function runs set-based statements over a whole version of a dataset and reads back only
aggregates: a thinned rank-frequency curve, a record-length histogram, unicity counts, the top
changed labels with totals, class sizes. The result is plain JSON-serializable data, so the HTML
page, the JSON output and the trade-off view all draw from the same dictionaries.
"""

from __future__ import annotations

from typing import Any

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.io.published import Published, publishable
from setanon_sql.io.published import loaded as loaded_tables
from setanon_sql.names import run_table
from setanon_sql.report.records import column_changes, record_classes

TOP_CHANGED = 15
# Pairs of items in records above which exact ℓ = 2 unicity is not computed (the self-join's
# size; BMS-WebView-2 has about 2 million, retail about 10 million).
PAIR_LIMIT = 50_000_000


def _version_tables(view: Published, attr_no: int) -> dict[str, Any]:
    return {"records": view.records, "items": view.items[attr_no]}


def support_curve(backend: Backend, view: Published, attr_no: int) -> list[list[int]]:
    """Points (rank, support) of the rank-frequency curve, thinned in SQL to a few hundred."""
    points: dict[int, int] = {}
    for first_rank, first_support, last_rank, last_support in backend.query(
        "report_item_support_curve", tables=_version_tables(view, attr_no)
    ):
        points[int(first_rank)] = int(first_support)
        points[int(last_rank)] = int(last_support)
    return [[rank, points[rank]] for rank in sorted(points)]


def record_lengths(backend: Backend, view: Published, attr_no: int) -> list[list[int]]:
    """Pairs (record length, number of records), records without items as length 0."""
    return [[int(length), int(n)] for length, n in backend.query(
        "report_record_lengths", tables=_version_tables(view, attr_no))]


def unicity(backend: Backend, view: Published, attr_no: int, lengths: list[list[int]]
            ) -> list[dict[str, Any]]:
    """Exact unicity for ℓ = 1, 2: share of distinct ℓ-itemsets of support 1 and of records
    holding one (a record an adversary knowing ℓ of its items singles out).

    ℓ = 2 is skipped (and left out) when the records hold more than ``PAIR_LIMIT`` pairs.
    """
    n_records = sum(n for _, n in lengths)
    pairs = sum(n * length * (length - 1) // 2 for length, n in lengths)
    with_pairs = int(pairs <= PAIR_LIMIT)
    rows = backend.query("report_unicity", {"with_pairs": with_pairs},
                         _version_tables(view, attr_no))
    result = []
    for ell, itemsets, unique, at_risk in rows:
        if ell == 2 and not with_pairs:
            continue
        itemsets, unique, at_risk = int(itemsets), int(unique), int(at_risk)
        result.append({
            "ell": int(ell), "itemsets": itemsets, "unique_itemsets": unique,
            "unique_share": unique / itemsets if itemsets else 0.0,
            "records_at_risk": at_risk,
            "records_at_risk_share": at_risk / n_records if n_records else 0.0,
        })
    return result


def version_data(backend: Backend, view: Published, attr_no: int) -> dict[str, Any]:
    """Curve, lengths and unicity of one set-valued attribute in one version of the data."""
    lengths = record_lengths(backend, view, attr_no)
    n_records = sum(n for _, n in lengths)
    occurrences = sum(length * n for length, n in lengths)
    curve = support_curve(backend, view, attr_no)
    return {
        "records": n_records,
        "item_occurrences": occurrences,
        "distinct_items": curve[-1][0] if curve else 0,
        "avg_length": occurrences / n_records if n_records else 0.0,
        "curve": curve,
        "lengths": lengths,
        "unicity": unicity(backend, view, attr_no, lengths),
    }


def item_changes(backend: Backend, before: Published, after: Published, attr_no: int,
                 top: int = TOP_CHANGED) -> dict[str, Any]:
    """The labels a run changed most (removed from / added to records) and the totals."""
    rows = backend.query("report_item_changes", {"top": top}, {
        "items": before.items[attr_no], "dict": before.dicts[attr_no],
        "pub_items": after.items[attr_no], "pub_records": after.records,
        "pub_dict": after.dicts[attr_no],
    })
    totals: dict[str, float] = {"before": 0, "kept": 0, "removed": 0, "added": 0,
                                "labels_removed": 0, "labels_added": 0}
    changed = []
    for (label, n_before, n_kept, n_removed, n_added, *all_counts) in rows:
        totals = dict(zip(totals, (int(v) for v in all_counts), strict=True))
        if int(n_removed) + int(n_added):
            changed.append({"label": str(label), "before": int(n_before), "kept": int(n_kept),
                            "removed": int(n_removed), "added": int(n_added)})
    base = totals["before"]
    totals["removed_share"] = totals["removed"] / base if base else 0.0
    totals["added_share"] = totals["added"] / base if base else 0.0
    return {"top": changed, "totals": totals}


def class_sizes(backend: Backend, run: Run) -> list[list[int]] | None:
    """(class size, number of classes) when the run published ``classes(class_id, size)``."""
    name = run_table(run.run_id, "classes")
    if name not in backend.table_names(name):
        return None
    columns = {c for (c,) in backend.query(
        "table_columns", {"schema_name": backend.schema, "table_name": name})}
    if not {"class_id", "size"} <= columns:
        return None
    return [[int(size), int(n)] for size, n in backend.query(
        "report_class_sizes", tables={"classes": backend.table(name)})]


def report_data(backend: Backend, dataset: Dataset, run: Run | None,
                original: dict[Any, Any] | None = None) -> dict[str, Any]:
    """All plotted aggregates of ``dataset`` as loaded and, with ``run``, as published.

    ``original`` (attr_no -> version data of the loaded data) lets a trade-off view compute the
    loaded data's figures once for many runs.
    """
    loaded = loaded_tables(backend, dataset)
    view = publishable(backend, dataset, run) if run is not None else None
    attributes = []
    for attribute in dataset.set_attributes:
        no = attribute.attr_no
        before = (original or {}).get(no) or version_data(backend, loaded, no)
        entry: dict[str, Any] = {"name": attribute.name, "attr_no": no, "before": before,
                                 "after": None, "changes": None, "mapped": False}
        if view is not None:
            entry["after"] = version_data(backend, view, no)
            entry["changes"] = item_changes(backend, loaded, view, no)
            entry["mapped"] = no in view.maps
        attributes.append(entry)
    return {
        "attributes": attributes,
        "classes": class_sizes(backend, run) if run is not None else None,
        "record_classes": {
            "before": (original or {}).get("record_classes")
            or record_classes(backend, dataset, loaded),
            "after": record_classes(backend, dataset, view) if view is not None else None},
        "columns": column_changes(backend, dataset, loaded, view) if view is not None else [],
    }
