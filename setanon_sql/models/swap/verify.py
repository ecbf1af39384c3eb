"""Re-check a swap run from the original data and its published items alone.

The property checked is the paper's (Defs. 3-4): a record's tendency is hidden when its
published record holds no item of its original tendency category. Every record the output
changed must have had a tendency and (but for RandSwap, the baseline) hide it; swapping keeps
the records and every item's count (RandSwap and suppression lose what they lose, counted here);
a run that hides nothing where records of two tendency categories could swap fails.

Why the tendencies of the changed records suffice. The verifier first finds, from the original
and published items alone, the records whose published item set differs from the original
("changed"), and recomputes the tendency only for those (from their original items):

- A record's tendency (Eqs. 4-5, Alg. 1: the category of highest weight WR, when it exceeds
  the mean tendency value MTV) depends only on that record's own items and the categories, so
  computing it for some records gives, for them, exactly what computing it for all gives.
- "Only records with a tendency changed" and "every changed record hides its tendency" are
  statements about changed records.
- A record that did not change is never hidden: its tendency category g has the highest weight
  among the categories of its items, so it holds at least one item of g, and its published
  record holds the same items. Hence the hidden records are among the changed ones, and
  counting hidden records over the changed ones counts all of them.
- "Something hidden where a swap is possible" needs every record's tendency only when nothing
  is hidden (nothing changed, for RandSwap): only then is the whole tendency table built, to
  see whether two tendency categories of one kind exist at all.
- Suppression's check (the output is the original minus every tendency item) concerns every
  record with a tendency, changed or not, so under ``--method suppress`` the tendency of every
  record is computed, as before.

What the verifier no longer reports is the number of records with a tendency and the hidden
share over them (the run's figures carry both); it reports the hidden records per kind.
"""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.errors import InputError
from setanon_sql.models.base import Verification
from setanon_sql.models.swap.metrics import item_balance
from setanon_sql.models.swap.swapping import tendency_query
from setanon_sql.names import staging_table


def verify_swap(backend: Backend, dataset: Dataset, run: Run) -> Verification:
    """Check the hiding property of ``run`` on its published items against the original.

    Independent of the run: the categories are rebuilt from the original data and the run's
    parameters and seed (the same deterministic build as the model's, in staging tables), the
    tendencies from the original items; nothing the run made but its published items is read,
    none of its figures. See the module docstring for why the changed records suffice.
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
    diff, tend = backend.table(staging_table("vdiff")), backend.table(staging_table("vtend"))
    every_record = method == "suppress"
    try:
        backend.materialize(diff, "swap_verify_diff",
                            tables={"items": original, "published": published})
        _tendencies(backend, original, cats, tend, None if every_record else diff)
        bound = {"items": original, "published": published, "cats": cats, "tend": tend,
                 "diff": diff}
        changed, untouchable, exposed, hidden_partial, hidden_full, appeared, emptied = (
            int(v) for v in backend.query("swap_verify_changed", tables={
                name: bound[name] for name in ("published", "cats", "tend", "diff")})[0])
        hidden = hidden_partial + hidden_full
        did_something = changed > 0 if method == "random" else hidden > 0
        swappable = 0
        if not did_something:
            if not every_record:
                _tendencies(backend, original, cats, tend, None)
            swappable = int(backend.scalar("swap_verify_swappable_kinds",
                                           tables={"tend": tend}))
        extra = (int(backend.scalar("swap_verify_suppressed_extra", tables={
            name: bound[name] for name in ("items", "published", "cats", "tend")}))
            if method == "suppress" else 0)
    finally:
        backend.drop_table(diff)
        backend.drop_table(tend)
        backend.drop_table(cats)
    balance = item_balance(backend, original, published)
    checks = {
        "records with items kept": (appeared == 0 and emptied == 0) or method == "suppress",
        "no item gained": balance["items_gained_kinds"] == 0,
        "no item lost (similarity swapping never collides)": (method != "similarity"
                                                              or balance["items_lost"] == 0),
        "only records with a tendency changed": untouchable == 0,
        "every changed record hides its tendency": method == "random" or exposed == 0,
        "something hidden where a swap is possible": did_something or swappable == 0,
        "suppression removes exactly the tendency items": extra == 0,
    }
    details = {
        "records_emptied": emptied, "records_appeared": appeared,
        "items_lost": balance["items_lost"], "diss": round(balance["diss"], 6),
        "records_changed": changed,
        "changed_without_tendency": untouchable,
        "changed_still_showing_tendency": exposed,
        "hidden_records": hidden,
        "hidden_by_kind": {"full": hidden_full, "partial": hidden_partial},
        "failed_checks": [name for name, ok in checks.items() if not ok] or "none",
    }
    return Verification(all(checks.values()),
                        "exact: tendencies recomputed from the original data (categories "
                        "rebuilt from the parameters and seed) for every record the output "
                        "changed; on the published items, every changed record had a tendency "
                        "and hides it, no record emptied or added, per-item counts kept",
                        details)


def _tendencies(backend: Backend, original: exp.Table, cats: exp.Table, tend: exp.Table,
                records: exp.Table | None) -> None:
    """(Re)build ``tend`` from the original items: of the records in ``records``, or of all."""
    backend.drop_table(tend)
    tables = {"items": original, "cats": cats}
    if records is not None:
        tables["records"] = records
    backend.materialize(tend, tendency_query(records is not None), tables=tables)
