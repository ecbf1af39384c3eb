"""Work estimates taken before a heavy step runs, and the refusal when one is too large.

One record of 100,000 items made ``risk --m 3`` and ``swap`` grow to 15-20 GB. The itemset
sampler of ``risk`` ranked every item of each proposed record (now it draws positions, see
:mod:`setanon_sql.models.km.positions`, and needs no estimate). Swapping compares a record's
items with those of up to ``--exact-limit`` partners, and its figures mine itemsets within
records. Those costs are known from the record lengths alone, so they are computed first
(one aggregate over the items) and a step whose estimate exceeds the budget is refused with
WorkTooLargeError naming the longest record and the option that bounds it:
``--max-items-per-record N`` (records longer than N are left out whole, as Jia et al.
truncate long transactions; the count is reported).

The budget is in rows of an intermediate join: ``SETANON_MAX_WORK_ROWS`` if set, otherwise
min(physical memory / 4, 3 GiB) / 40 bytes per row (about 8e7 rows on this 23 GiB machine).
It is taken from the machine setanon runs on, also when the engine is a remote PostgreSQL.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Longest:
    """The longest record of an items table."""

    record_id: int
    length: int


def longest_record(backend: Backend, items: exp.Table) -> Longest | None:
    rows = backend.query("workload_longest_record", tables={"items": items})
    return Longest(int(rows[0][0]), int(rows[0][1])) if rows else None


def _refuse(what: str, estimate: float, limit: float, record: Longest) -> None:
    raise WorkTooLargeError(
        f"{what} would handle about {estimate:.3g} rows, more than the limit of {limit:.3g} "
        f"(set by physical memory or {ENV_LIMIT}); record {record.record_id} has "
        f"{record.length} items and causes it: pass {CAP_OPTION} N to leave out records longer "
        f"than N items (counted in the output), or raise {ENV_LIMIT}")


def check_pairwise(backend: Backend, items: exp.Table, partners: int,
                   limit: float | None = None) -> None:
    """Refuse comparing records with up to ``partners`` others when the longest record's
    items times ``partners`` exceed the budget."""
    limit = work_limit() if limit is None else limit
    record = longest_record(backend, items)
    if record is None:
        return
    estimate = float(record.length) * partners
    if estimate > limit:
        _refuse(f"comparing records with up to {partners} partners", estimate, limit, record)


def check_record_combinations(backend: Backend, items: exp.Table, size: int,
                              limit: float | None = None) -> None:
    """Refuse level-wise itemset mining up to ``size`` when the longest record alone holds
    more than the budget of ``size``-itemsets (C(|r|, size), an upper bound: only its
    frequent items are combined). The real data sets stay far below (BMS-WebView-1: 3e6)."""
    limit = work_limit() if limit is None else limit
    record = longest_record(backend, items)
    if record is None:
        return
    estimate = float(math.comb(record.length, size))
    if estimate > limit:
        _refuse(f"mining itemsets of up to {size} items", estimate, limit, record)


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
