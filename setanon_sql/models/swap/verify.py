"""Re-check a swap run from the original data and its published items alone.

The property checked is the paper's (Defs. 3-4): a record's tendency is hidden when its
published record holds no item of its original tendency category. Every record the output
changed must have had a tendency and (but for RandSwap, the baseline) hide it; swapping keeps
the records and every item's count (RandSwap and suppression lose what they lose, counted here);
a run that hides nothing where records of two tendency categories could swap fails.
"""

from __future__ import annotations

from typing import Any

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.errors import InputError
from setanon_sql.models.base import Verification
from setanon_sql.models.swap.metrics import item_balance
from setanon_sql.names import staging_table


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
    """Check the hiding property of ``run`` on its published items against the original.

    Independent of the run: the categories are rebuilt from the original data and the run's
    parameters and seed (the same deterministic build as the model's, in staging tables), the
    tendencies from the original items; nothing the run made but its published items is read,
    none of its figures.
    """
    from setanon_sql.io.hierarchy import default_attribute
    from setanon_sql.io.published import published as published_tables
    from setanon_sql.models.swap.categories import build_categories
    from setanon_sql.models.swap.params import parse_params

    options = parse_params(run.params)
    method = options.method
    attribute = default_attribute(dataset, options.column)
    original = backend.table(dataset.items_table(attribute))
    published = published_tables(backend, dataset, run).items[attribute.attr_no]
    if published.name == dataset.items_table(attribute):
        raise InputError(f"run {run.run_id} published no items for column {attribute.name!r}; "
                         "it is not a finished swap run")
    cats = build_categories(backend, dataset, attribute, options,
                            lambda purpose: backend.table(staging_table(f"v{purpose}")),
                            int(run.seed or 0), {})
    tend = backend.table(staging_table("vtend"))
    try:
        backend.materialize(tend, "swap_tendency", tables={"items": original, "cats": cats})
        bound = {"items": original, "published": published, "cats": cats, "tend": tend}
        hidden = hidden_counts(backend, published, cats, tend)
        changed, untouchable, exposed = (int(v) for v in backend.query(
            "swap_verify_changed", tables=bound)[0])
        swappable = int(backend.scalar("swap_verify_swappable_kinds", tables={"tend": tend}))
        extra = (int(backend.scalar("swap_verify_suppressed_extra", tables=bound))
                 if method == "suppress" else 0)
    finally:
        backend.drop_table(tend)
        backend.drop_table(cats)
    n_original, n_published = (int(v) for v in backend.query(
        "swap_record_counts", tables={"items": original, "published": published})[0])
    balance = item_balance(backend, original, published)
    checks = {
        "records with items kept": n_original == n_published or method == "suppress",
        "no item gained": balance["items_gained_kinds"] == 0,
        "no item lost (similarity swapping never collides)": (method != "similarity"
                                                              or balance["items_lost"] == 0),
        "only records with a tendency changed": untouchable == 0,
        "every changed record hides its tendency": method == "random" or exposed == 0,
        "something hidden where a swap is possible": (swappable == 0 or (
            changed > 0 if method == "random" else hidden["hidden_records"] > 0)),
        "suppression removes exactly the tendency items": extra == 0,
    }
    details = {
        "records_with_items": f"{n_original} -> {n_published}",
        "items_lost": balance["items_lost"], "diss": round(balance["diss"], 6),
        "records_changed": changed,
        "changed_without_tendency": untouchable,
        "changed_still_showing_tendency": exposed,
        "tendency_records": hidden["tendency_records"],
        "hidden_records": hidden["hidden_records"],
        "hidden_share": round(hidden["hidden_share"], 6),
        "failed_checks": [name for name, ok in checks.items() if not ok] or "none",
    }
    return Verification(all(checks.values()),
                        "exact: tendencies recomputed from the original data (categories "
                        "rebuilt from the parameters and seed); on the published items, every "
                        "changed record had a tendency and hides it, record count and per-item "
                        "counts kept", details)
