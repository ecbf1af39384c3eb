"""Re-check a swap run from the DBMS: records kept, items kept (but for reported collisions),
and the share of records with a tendency whose tendency category left their record.

Tendencies are recomputed from the original items and the run's ``cats`` table, not read from
the run's own intermediate state.
"""

from __future__ import annotations

from typing import Any

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.errors import InputError
from setanon_sql.models.base import Verification
from setanon_sql.models.swap.metrics import item_balance
from setanon_sql.names import run_table, staging_table


def hidden_counts(backend: Backend, published: Any, cats: Any, tend: Any) -> dict[str, Any]:
    """Records with a tendency per kind, how many of them are hidden, and the share."""
    rows = backend.query("swap_hidden", tables={"published": published, "cats": cats,
                                                "tend": tend})
    per_kind = {kind: (int(total), int(hidden)) for kind, total, hidden in rows}
    total = sum(t for t, _ in per_kind.values())
    hidden = sum(h for _, h in per_kind.values())
    return {"tendency_records": total, "hidden_records": hidden,
            "hidden_share": hidden / total if total else 1.0,
            "hidden_by_kind": {k: {"records": t, "hidden": h} for k, (t, h) in per_kind.items()}}


def verify_swap(backend: Backend, dataset: Dataset, run: Run) -> Verification:
    """Check the published items of ``run`` against the original ones."""
    attr_no = int(run.figures.get("attr_no", 0))
    names = set(backend.table_names(run_table(run.run_id, "x")[:-1]))
    needed = [run_table(run.run_id, "cats"), run_table(run.run_id, f"items_{attr_no}")]
    if any(name not in names for name in needed):
        raise InputError(f"run {run.run_id} lacks its tables ({', '.join(needed)}); was it "
                         "made by --model swap of this version?")
    attribute = next(a for a in dataset.set_attributes if a.attr_no == attr_no)
    original = backend.table(dataset.items_table(attribute))
    published = backend.table(needed[1])
    cats = backend.table(needed[0])
    n_original, n_published = backend.query(
        "swap_record_counts", tables={"items": original, "published": published})[0]
    balance = item_balance(backend, original, published)
    tend = backend.table(staging_table("tend"))
    try:
        backend.materialize(tend, "swap_tendency", tables={"items": original, "cats": cats})
        hidden = hidden_counts(backend, published, cats, tend)
    finally:
        backend.drop_table(tend)
    reported_lost = int(run.figures.get("items_lost", -1))
    checks = {
        "records with items kept": (int(n_original) == int(n_published)
                                    or run.params.get("method") == "suppress"),
        "no item gained": balance["items_gained_kinds"] == 0,
        "items lost equal the reported collisions": balance["items_lost"] == reported_lost,
        "no collision under similarity swapping": (run.params.get("method", "similarity")
                                                   != "similarity"
                                                   or balance["items_lost"] == 0),
        "hidden records as reported": hidden["hidden_records"]
        == int(run.figures.get("hidden_records", -1)),
        "every tendency hidden under suppression": (run.params.get("method") != "suppress"
                                                    or hidden["hidden_records"]
                                                    == hidden["tendency_records"]),
    }
    details = {
        "records_with_items": f"{int(n_original)} -> {int(n_published)}",
        "items_lost": balance["items_lost"], "reported_items_lost": reported_lost,
        "diss": round(balance["diss"], 6),
        "tendency_records": hidden["tendency_records"],
        "hidden_records": hidden["hidden_records"],
        "hidden_share": round(hidden["hidden_share"], 6),
        "failed_checks": [name for name, ok in checks.items() if not ok] or "none",
    }
    return Verification(all(checks.values()),
                        "record count, per-item counts against the original, and the "
                        "tendency category of every record with a tendency", details)
