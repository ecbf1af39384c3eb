"""Plain-text lines the CLI prints for --dry-run, --in-place and undo."""

from __future__ import annotations

from typing import Any

_WHAT = {"generalize": "relabeled (generalized)", "move": "moved to another record",
         "suppress": "deleted (suppressed)", "delete_record": "deleted with their record",
         "insert": "inserted"}


def format_preview(summary: dict[str, Any]) -> str:
    """The dry run: what applying the run would change, per action, with examples."""
    lines = [f"dry run: run {summary['run_id']} would change {summary['items_table']} "
             "(nothing was written):"]
    for action, what in _WHAT.items():
        rows, pairs = summary["item_rows"][action], summary["pairs"][action]
        if rows or pairs:
            lines.append(f"  {rows:>10,} rows {what} ({pairs:,} (record, item) pairs)")
    if summary["records_table"]:
        records = summary["records"]
        lines.append(f"  {records['delete_record']:>10,} records deleted from "
                     f"{summary['records_table']}, {records['generalize']:,} values generalized")
    if len(lines) == 1:
        lines.append("  no change: the run published the data as it is")
    if summary["top_changes"]:
        lines.append("most frequent changes (action, item, new item, pairs):")
        lines += [f"  {a:<13} {old!r} -> {new!r}: {n:,}" for a, old, new, n in
                  summary["top_changes"]]
    if summary["sample"]:
        lines.append("sample (action, record, item, new record, new item):")
        lines += [f"  {a:<13} {k!r} {old!r} -> {nk!r} {new!r}" for a, k, old, nk, new in
                  summary["sample"]]
    return "\n".join(lines)


def format_applied(run_id: int, figures: dict[str, Any]) -> str:
    """After --in-place: rows changed per action, and how to undo."""
    rows = figures.get("item_rows", {})
    parts = [f"{n:,} {_WHAT.get(a, a)}" for a, n in sorted(rows.items()) if n]
    records = figures.get("record_rows", {})
    parts += [f"{n:,} records {'deleted' if a == 'delete_record' else 'generalized'}"
              for a, n in sorted(records.items()) if n]
    return (f"applied run {run_id} in place: {', '.join(parts) or 'no change'}; "
            f"'setanon undo {run_id}' restores the original rows")
