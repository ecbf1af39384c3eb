"""Dataset summaries for ``setanon report`` and the demo: aggregates read from the DBMS."""

from __future__ import annotations

from typing import Any

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.io.published import loaded, publishable


def dataset_summary(backend: Backend, dataset: Dataset, run: Run | None = None) -> dict[str, Any]:
    """Size and shape of a dataset (as loaded, or as published by ``run``: a verified run only)."""
    view = loaded(backend, dataset) if run is None else publishable(backend, dataset, run)
    summary: dict[str, Any] = {
        "dataset": dataset.name, "kind": dataset.kind, "source": dataset.source,
        "records": dataset.n_records, "backend": backend.name,
        "columns": [], "set_columns": [],
    }
    if run is not None:
        summary["run"] = {"run_id": run.run_id, "model": run.model, "params": run.params,
                          "seed": run.seed, "status": run.status, "seconds": run.seconds,
                          "figures": run.figures, "package_version": run.package_version}
    for attribute in dataset.single_attributes:
        summary["columns"].append({"name": attribute.name, "role": attribute.role,
                                   "type": attribute.value_type,
                                   "distinct": attribute.n_distinct})
    for attribute in dataset.set_attributes:
        tables = {"records": view.records, "items": view.items[attribute.attr_no]}
        n_records, item_rows, max_length, avg_length, n_empty = backend.query(
            "item_attribute_summary", tables=tables)[0]
        used = backend.scalar("distinct_items_used", tables={"items": tables["items"]})
        summary["set_columns"].append({
            "name": attribute.name, "distinct_items": int(used), "item_rows": int(item_rows),
            "max_length": int(max_length), "avg_length": round(float(avg_length), 4),
            "empty_records": int(n_empty), "records": int(n_records),
        })
    return summary


def format_summary(summary: dict[str, Any]) -> str:
    """A few lines of plain text for the terminal."""
    lines = [f"dataset {summary['dataset']} ({summary['kind']}, {summary['records']:,} records, "
             f"{summary['backend']}) from {summary['source']}"]
    if "run" in summary:
        run = summary["run"]
        lines.append(f"  run {run['run_id']}: model {run['model']}, status {run['status']}, "
                     f"params {run['params']}, seed {run['seed']}")
    for column in summary["set_columns"]:
        lines.append(
            f"  set column {column['name']}: {column['distinct_items']:,} distinct items, "
            f"{column['item_rows']:,} record-item rows, record length avg "
            f"{column['avg_length']:.2f} max {column['max_length']}, "
            f"{column['empty_records']:,} empty records"
        )
    for column in summary["columns"]:
        lines.append(f"  {column['role']} column {column['name']}: {column['type']}, "
                     f"{column['distinct']:,} distinct values")
    return "\n".join(lines)
