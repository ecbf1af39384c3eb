"""Work estimates taken before a heavy step runs, and the refusal when one is too large.

One record of 100,000 items made ``risk --m 3`` and ``swap`` grow to 15-20 GB. The itemset
sampler of ``risk`` ranked every item of each proposed record (now it draws positions, see
:mod:`setanon_sql.models.km.positions`, and needs no estimate). Swapping itself stayed small
on that input (its matching took 0.5 s, 135 MB); its frequent-itemset figures did not: mining
combines the frequent items inside each record, C(|r ∩ frequent|, ℓ) itemsets per record.
That count is computed first (two aggregates over the items) and mining whose estimate
exceeds the budget is refused with WorkTooLargeError naming the record that contributes most
and the options that bound it:
``--max-items-per-record N`` (records longer than N are left out whole, as Jia et al.
truncate long transactions; the count is reported).

The budget is in rows of an intermediate join: ``SETANON_MAX_WORK_ROWS`` if set, otherwise
min(physical memory / 4, 3 GiB) / 40 bytes per row (about 8e7 rows on this 23 GiB machine).
It is taken from the machine setanon runs on, also when the engine is a remote PostgreSQL.
"""

from __future__ import annotations

import os

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.errors import UsageError, WorkTooLargeError

BYTES_PER_ROW = 40
MEMORY_CAP = 3 * 1024 ** 3
ENV_LIMIT = "SETANON_MAX_WORK_ROWS"
CAP_OPTION = "--max-items-per-record"


def physical_memory() -> int:
    """Bytes of physical memory (0 where the platform does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0


def work_limit() -> float:
    """The budget in rows: ``SETANON_MAX_WORK_ROWS``, else derived from physical memory."""
    given = os.environ.get(ENV_LIMIT)
    if given:
        try:
            value = float(given)
        except ValueError:
            raise UsageError(f"{ENV_LIMIT}={given!r} must be a number of rows") from None
        if value <= 0:
            raise UsageError(f"{ENV_LIMIT} must be positive")
        return value
    memory = physical_memory() or 4 * MEMORY_CAP
    return min(memory / 4, MEMORY_CAP) / BYTES_PER_ROW


def check_itemset_mining(backend: Backend, items: exp.Table, min_count: int, max_size: int,
                         limit: float | None = None) -> None:
    """Refuse level-wise mining of itemsets of up to ``max_size`` items at support
    ``min_count`` when the itemsets it forms inside records, sum over records and sizes of
    C(|r ∩ frequent items|, ℓ), exceed the budget. (The data sets of the papers stay far
    below: a record holds few frequent items.)"""
    # Imported here: the km package imports this module (risk.py), and swap imports it first.
    from setanon_sql.models.km.sampler import statement

    limit = work_limit() if limit is None else limit
    total = 0.0
    for ell in range(2, max_size + 1):
        rows = backend.query(statement("workload_frequent_combinations", ell, backend),
                             {"min_count": min_count}, {"items": items})
        if not rows:
            return
        formed, record_id, length = rows[0]
        total += float(formed or 0)
        if total > limit:
            raise WorkTooLargeError(
                f"mining frequent itemsets of up to {ell} items (the swap figures) would form "
                f"about {total:.3g} itemsets inside records, more than the limit of "
                f"{limit:.3g} (set by physical memory or {ENV_LIMIT}); record {record_id} "
                f"holds {length} frequent items and causes it: pass {CAP_OPTION} N to leave "
                f"out records longer than N items (counted in the output), --fi-max-size "
                f"{ell - 1} or --no-metrics, or raise {ENV_LIMIT}")


def cap_items(backend: Backend, items: exp.Table, cap: int, target: exp.Table,
              reference: exp.Table | None = None) -> tuple[int, int]:
    """Materialize ``target`` as ``items`` without the records longer than ``cap`` items in
    ``reference`` (default ``items``): left out whole and deterministic, so no record is
    changed, only absent. Returns (records left out, their items)."""
    if cap < 1:
        raise UsageError(f"{CAP_OPTION} must be at least 1")
    reference = items if reference is None else reference
    left_out, dropped = backend.query("workload_records_over", {"cap": cap},
                                      {"items": reference})[0]
    backend.materialize(target, "workload_capped_items", {"cap": cap},
                        {"t": items, "ref": reference})
    return int(left_out), int(dropped)
