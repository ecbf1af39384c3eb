"""Sizes of the exact check, and the exact count of unsafe rules of a table (used by verify).

An unbounded adversary knows any subset of a record, so the check enumerates 2^len - 1 itemsets
per record: the controller estimates the rows from the record-length histogram (a small
aggregate), turns them into an estimated run time by the throughput measured on the full
datasets, and refuses, suggesting ``--m``, when that is out of reach.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import comb

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.errors import UsageError
from setanon_sql.models.rho.qids import build_supports, placeholder, unnumbered_rules_query

# Throughput of the suppressor on DuckDB, 2 shared cores (BENCHMARKS.md, the rho part, BMS-WebView-2
# full, --m 1 and --m 2): the supports are counted from every (record, itemset) row twice (at
# the start and in the final recount); every round then scans the support table (unsafe rules,
# the delta update) and enumerates the touched records' itemsets, at worst those of the
# longest record. Rounds are many more with long records: ROUNDS is the most we measured.
COUNT_ROWS_PER_SECOND = 1.2e6
ROUND_ROWS_PER_SECOND = 1.1e7
ROUND_SECONDS = 1.0
ROUNDS = 60
MAX_SECONDS = 3600.0


@dataclass(frozen=True)
class CheckShape:
    """Itemsets up to ``width`` items are enumerated; qids have at most ``max_q`` items."""

    width: int
    max_q: int
    rows: int


def estimated_seconds(rows: int, longest: int, width: int) -> float:
    """The suppressor's run time for ``rows`` (record, itemset) rows, by the measured rates."""
    delta = sum(comb(longest - 1, k - 1) for k in range(1, width + 1))
    per_round = ROUND_SECONDS + (rows + delta) / ROUND_ROWS_PER_SECOND
    return 2 * rows / COUNT_ROWS_PER_SECOND + ROUNDS * per_round


def pruned_rows(histogram: dict[tuple[int, int], int], width: int, max_q: int) -> int:
    """(record, itemset) rows of an enumeration up to ``width`` items whose levels above
    ``max_q`` keep only itemsets holding a sensitive item; ``histogram`` maps (record length,
    sensitive items of the record) to a number of records."""
    rows = 0
    for (length, n_sens), count in histogram.items():
        for k in range(1, min(width, length) + 1):
            rows += count * (comb(length, k) if k <= max_q
                             else comb(length, k) - comb(length - n_sens, k))
    return rows


def length_histogram(backend: Backend, items: exp.Table,
                     sens: exp.Table | None) -> dict[tuple[int, int], int]:
    """Records of ``items`` per (length, sensitive items held), a small aggregate; without
    ``sens`` every item counts as sensitive."""
    if sens is None:
        return {(int(length), int(length)): int(count) for length, count in
                backend.query("rho_length_histogram", tables={"items": items})}
    return {(int(length), int(n_sens)): int(count) for length, n_sens, count in
            backend.query("rho_length_sensitive_histogram", tables={"items": items,
                                                                     "sens": sens})}


def _estimate(histogram: dict[tuple[int, int], int], width: int,
              max_q: int) -> tuple[int, int, float]:
    """(rows enumerated, longest record, estimated seconds) of counting up to ``width`` items
    with levels above ``max_q`` pruned to itemsets holding a sensitive item."""
    longest = max((length for length, _ in histogram), default=0)
    rows = pruned_rows(histogram, width, max_q)
    return rows, longest, estimated_seconds(rows, longest, width)


def longest_holding_sensitive(histogram: dict[tuple[int, int], int]) -> int:
    """The most items of a record that holds a sensitive item (0 when no record holds one)."""
    return max((length for length, n_sens in histogram if n_sens > 0), default=0)


def trimmed_histogram(histogram: dict[tuple[int, int], int],
                      above: int) -> dict[tuple[int, int], int]:
    """The (length, sensitive items) histogram after :func:`.longrecords.trim_query`: a record of
    more than ``above`` items keeps its non-sensitive items and at most ``above`` minus their
    number of its sensitive ones."""
    trimmed: dict[tuple[int, int], int] = {}
    for (length, n_sens), count in histogram.items():
        if length > above:
            kept = max(0, min(n_sens, above - (length - n_sens)))
            length, n_sens = length - n_sens + kept, kept
        trimmed[(length, n_sens)] = trimmed.get((length, n_sens), 0) + count
    return trimmed


def largest_trim_within_reach(histogram: dict[tuple[int, int], int]) -> int | None:
    """The largest ``--trim-above`` whose staged run the estimate puts within MAX_SECONDS."""
    for above in range(longest_holding_sensitive(histogram) - 1, 1, -1):
        if _estimate(trimmed_histogram(histogram, above), above - 1, above - 1)[2] <= MAX_SECONDS:
            return above
    return None


def check_shape(backend: Backend, items: exp.Table, m: int | None,
                sens: exp.Table | None = None, deferred_top: bool = False,
                trim_above: int | None = None,
                histogram: dict[tuple[int, int], int] | None = None) -> CheckShape:
    """The enumeration an exact check of ``items`` needs, or a UsageError suggesting a bound.

    With ``sens``, the level above the largest qid counts only itemsets holding a sensitive
    item (see :func:`.qids.build_levels`); with ``deferred_top`` that level is left out of the
    estimate: a staged run (:mod:`.stages`) checks it on the data as it is when it gets there.
    With ``trim_above``, the shape is that of ``items`` once trimmed (:mod:`.longrecords`).
    ``histogram``: :func:`length_histogram` of ``items`` and ``sens``, if the caller has it.

    Any qid size (``m`` None): a rule q -> e of positive confidence has q + {e} inside a record
    holding the sensitive item e (Jia et al. Sec. 2.1: sup(q + {e}) > 0), so itemsets of up
    to the longest such record's length cover every rule, however long the other records are.
    """
    if histogram is None:
        histogram = length_histogram(backend, items, sens)
    if trim_above is not None:
        histogram = trimmed_histogram(histogram, trim_above)
    longest = max((length for length, _ in histogram), default=0)
    if m is None:
        width = max(longest_holding_sensitive(histogram), 1)
        max_q = width - 1
    else:
        width, max_q = min(m + 1, longest), m
    rows, _, seconds = _estimate(histogram, min(width, max_q) if deferred_top else width, max_q)
    if seconds > MAX_SECONDS:
        bound = (f"itemsets of up to {width}" if m is not None else
                 f"every subset of every record holding a sensitive item (up to {width} items)")
        trim = largest_trim_within_reach(histogram) if m is None else None
        raise UsageError(
            f"an exact check of {bound} means about {rows:,} (record, itemset) rows (records "
            f"have up to {longest} items), an estimated {seconds / 3600:,.1f} hours at the "
            f"measured rate (limit {MAX_SECONDS / 3600:g} h): bound the adversary's knowledge "
            f"with {'--m 2' if m is None else f'a smaller --m than {m}'} (the bound is "
            "reported with the result)"
            + (f", or keep every qid size with --trim-above {trim} (records of more than "
               f"{trim} items lose sensitive items until they have {trim}, or none; reported)"
               if trim is not None else "")
            + ", or use the records with at most 5 items")
    return CheckShape(width, max_q, rows)


def check_original_levels(backend: Backend, items: exp.Table, max_q: int) -> int:
    """Rows of every (record, itemset of up to ``max_q`` items) of ``items``: the original
    records' qids a personalized check joins its rules with (:func:`..prho.rules.
    original_levels`); a UsageError if enumerating them once is out of reach."""
    histogram = length_histogram(backend, items, None)
    rows = pruned_rows(histogram, max_q, max_q)
    seconds = rows / COUNT_ROWS_PER_SECOND
    if seconds > MAX_SECONDS:
        longest = max((length for length, _ in histogram), default=0)
        raise UsageError(
            f"the input's qids of up to {max_q} items are about {rows:,} (record, itemset) "
            f"rows (records have up to {longest} items), an estimated {seconds / 3600:,.1f} "
            f"hours at the measured rate (limit {MAX_SECONDS / 3600:g} h): bound the "
            f"adversary's knowledge with a smaller --m")
    return rows


def check_stage(backend: Backend, cur: exp.Table, sens: exp.Table, width: int, max_q: int,
                m: int | None) -> int:
    """Rows the stage of qids up to ``max_q`` items enumerates from ``cur`` (the data as the
    earlier stages left it); a UsageError if that is out of reach."""
    rows, longest, seconds = _estimate(length_histogram(backend, cur, sens), width, max_q)
    if seconds > MAX_SECONDS:
        raise UsageError(
            f"the stage for qids of {max_q} items would enumerate about {rows:,} (record, "
            f"itemset) rows of the data made safe for qids of up to {max_q - 1} items (records "
            f"now have up to {longest} items), an estimated {seconds / 3600:,.1f} hours at the "
            f"measured rate (limit {MAX_SECONDS / 3600:g} h): "
            + (f"bound the adversary's knowledge with --m {max_q - 1}"
               + ("" if m is None else f" instead of --m {m}") if max_q > 1
               else "use the records with at most 5 items"))
    return rows


def count_unsafe(backend: Backend, table: Callable[[str], exp.Table], cur: exp.Table,
                 sens: exp.Table, shape: CheckShape, num: int, den: int) -> tuple[int, float]:
    """(number of unsafe rules, highest confidence of a rule) of ``cur`` (part = 0)."""
    if shape.width < 2:
        return 0, 0.0
    levels, supx = build_supports(backend, table, cur, shape.width, sens, shape.max_q)
    # One pass over every rule of positive confidence (:num = 0, :den = 1 admits them all)
    # gives both figures: the unsafe ones counted against ρ = :rho_num / :rho_den in integers,
    # and the highest confidence. Two passes, one per figure, each joined the supports with
    # themselves (33.8 + 32.2 s of PostgreSQL's 106.3 s verify of whole BMS-WebView-2, --m 3),
    # and numbered the rules, which sorted them all.
    rules = unnumbered_rules_query(supx, sens, None, shape.width, shape.max_q,
                                   backend.split_rules_by_holders).subquery("r")
    sx, sq = exp.column("sx", quoted=True), exp.column("sq", quoted=True)
    unsafe = (placeholder("rho_den") * sx) > (placeholder("rho_num") * sq.copy())
    # The rules join the supports with themselves on whole-table keys, and PostgreSQL cannot
    # tell that few itemsets hold a sensitive item: it sorted all 3.6M supports four times for
    # merge joins (14.5 s of a 23 s verify of whole BMS-WebView-2, --trim-above 4; 4.2 s
    # without, BENCHMARKS.md). The search builds its rules under the same settings.
    with backend.whole_table_joins():
        count, top = backend.query(exp.select(
            exp.func("sum", exp.Case(ifs=[exp.If(this=unsafe, true=exp.Literal.number(1))],
                                     default=exp.Literal.number(0))),
            exp.func("max", exp.Div(this=exp.cast(sx.copy(), "DOUBLE PRECISION"),
                                    expression=sq.copy()))).from_(rules),
            {"num": 0, "den": 1, "rho_num": num, "rho_den": den})[0]
    count = int(count or 0)
    for level in (*levels, supx):
        backend.drop_table(level)
    return count, float(top or 0.0)
