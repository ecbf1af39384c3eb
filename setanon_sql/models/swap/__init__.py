"""``--model swap``: hiding personal tendency by similarity-based swapping (Gunawan & Mambo 2019).

A record's personal tendency is its category of highest weight (Eq. 4) when that weight exceeds
its mean tendency value (Eq. 5). Partial swapping (Algs. 1-3) exchanges the items of that
category with those of a destination record of another tendency that shares as little as
possible (minimum Jaccard similarity) and collides on no item; full swapping (Alg. 4) exchanges
the items of two records of different single categories. ``--method random`` is the RandSwap
baseline; ``--method suppress`` deletes the tendency items of every record with a tendency
(the paper's PartSupp read as tendency-targeted suppression). The controller keeps only counts
and a round history; every pass is SQL. Published: ``items_<attr>``; kept for ``verify``:
``cats`` (the categories) and ``pairs`` (who swapped with whom; never exported).

What happens to a destination's own tendency. A swap is an exchange between two records of
the same kind (partial with partial, full with full), and Alg. 2 only admits a destination
whose tendency category differs from the source's. Its tendency items move to the source in
the same step, so the destination's tendency is hidden too: after the swap neither record
holds an item of its own tendency category, and each holds the other's. Every record takes
part in at most one swap, as source or as destination, never both; records without a
tendency are never touched. A record may end up showing its partner's tendency (that is the
point: the tendency is no longer tied to its data subject); "tendency changed" counts records
whose published tendency is absent or of another category.

How exact the minimum-Jaccard choice is (see :mod:`.destinations`). Destinations form a
matching, found in three stages. Randomized rounds accept only pairs that share no item,
Jaccard 0, the least possible: exact. The exact stage (pool <= ``--exact-limit``, default
2000) is the greedy matching over every candidate pair, which never passes over a free
partner of smaller Jaccard similarity. Only the window stage (larger leftover pools: each
record sees 16 random others) is a heuristic. ``python bench/bench_swap.py --datasets bms2
--backends duckdb --exactness 2000,50`` checks every accepted pair with Jaccard > 0 by brute
force: with the default limit BMS-WebView-2 never reaches the window stage (13,376 of 13,718
partial pair directions have Jaccard 0, the other 342 come from the exact stage, 0 missed a
better free partner); forcing the window stage (``--exact-limit 50``), 75 of its 342 pair
directions (22%; 0.5% of all partial ones) missed a free partner of smaller similarity. The
paper's choice, each source's minimum over the whole database regardless of whether that
destination is still free, is lower for every pair with Jaccard > 0 (70 resp. 102 directions):
the price of swapping each record at most once.

Bounded work (:mod:`setanon_sql.workload`). Before anything is built, the itemsets that
mining for the figures forms inside records (up to ``--fi-max-size``, from frequent items
only) are counted against the machine's budget; too many are refused naming the record that
contributes most. (The matching stayed small with one record of 100,000 items: 0.5 s.)
``--max-items-per-record N`` leaves records longer than N items out of the whole computation
(tendency, matching, figures):
they are published unchanged, like records left unmatched, and counted in the figures
(``records_over_item_cap``, ``items_over_item_cap``).
"""

from __future__ import annotations

import time
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Attribute, Dataset
from setanon_sql.errors import InputError
from setanon_sql.io.hierarchy import default_attribute
from setanon_sql.models.base import Model
from setanon_sql.models.swap.categories import build_categories
from setanon_sql.models.swap.destinations import Matcher, create_pairs_table
from setanon_sql.models.swap.metrics import (
    frequent_itemset_figures,
    item_balance,
    min_count,
    tendency_figures,
)
from setanon_sql.models.swap.params import OPTIONS, SwapParams, parse_params
from setanon_sql.models.swap.swapping import (
    KINDS,
    build_moves,
    build_tendency,
    publish,
    random_pairs,
)
from setanon_sql.models.swap.verify import verify_swap
from setanon_sql.names import staging_table
from setanon_sql.progress import report
from setanon_sql.runs import RunContext
from setanon_sql.workload import cap_items, check_itemset_mining

_SCRATCH = ("tend", "pool", "cand", "overlap", "accepted", "edges", "live", "moves")


def _bounded_items(backend: Backend, items: exp.Table, options: SwapParams, capped: exp.Table,
                   n_records: int, figures: dict[str, Any]) -> exp.Table:
    """The items the model works on: ``items``, or under ``--max-items-per-record`` the records
    of at most that many items (in ``capped``); then refuse work beyond the budget."""
    work = items
    if options.max_items_per_record is not None:
        left_out, dropped = cap_items(backend, items, options.max_items_per_record, capped)
        figures.update(max_items_per_record=options.max_items_per_record,
                       records_over_item_cap=left_out, items_over_item_cap=dropped)
        work = capped
    if options.metrics:
        check_itemset_mining(backend, work, min_count(options.fi_supports, n_records),
                             options.fi_max_size)
    return work


def _checked(backend: Backend, dataset: Dataset,
             params: dict[str, Any]) -> tuple[SwapParams, Attribute, exp.Table]:
    options = parse_params(params)
    attribute = default_attribute(dataset, options.column)
    if not attribute.is_set:
        raise InputError(f"column {attribute.name!r} of dataset {dataset.name!r} is not "
                         "set-valued; swapping needs items")
    items = backend.table(dataset.items_table(attribute))
    if not backend.scalar("swap_count_rows", tables={"t": items}):
        raise InputError(f"column {attribute.name!r} of dataset {dataset.name!r} holds no "
                         "items: there is nothing to swap")
    return options, attribute, items


def validate(backend: Backend, dataset: Dataset, params: dict[str, Any]) -> None:
    """Refuse bad input before the run is recorded: parameters, an empty column, and the
    categories (built once in staging tables, then dropped), so nothing is half-written."""
    options, attribute, items = _checked(backend, dataset, params)
    capped = backend.table(staging_table("capped"))
    try:
        _bounded_items(backend, items, options, capped, dataset.n_records, {})
    finally:
        backend.drop_table(capped)
    cats = build_categories(backend, dataset, attribute, options,
                            lambda purpose: backend.table(staging_table(purpose)), 0, {})
    backend.drop_table(cats)


def anonymize(backend: Backend, dataset: Dataset, params: dict[str, Any],
              context: RunContext) -> None:
    """Swap tendency items between records; see the module docstring."""
    options, attribute, items = _checked(backend, dataset, params)
    seed = int(context.seed or 0)
    figures = context.figures
    figures.update(attr_no=attribute.attr_no, method=options.method,
                   category_source=options.source)
    clock = time.perf_counter()
    seconds: dict[str, float] = {}

    steps = ("categories", "tendency", "destinations", "swap")

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[name] = round(now - clock, 3)
        clock = now
        done = steps.index(name) + 1 if name in steps else len(steps)
        if done < len(steps):
            report("search", f"step {done + 1} of {len(steps)}: {steps[done]}", done, len(steps))

    report("search", f"step 1 of {len(steps)}: {steps[0]}", 0, len(steps))

    tables = {name: context.table(name) for name in (*_SCRATCH, "pairs", "capped")}
    original = items
    items = _bounded_items(backend, original, options, tables["capped"],
                           dataset.n_records, figures)
    tables["items"] = items
    tables["cats"] = build_categories(backend, dataset, attribute, options, context.table, seed,
                                      figures)
    lap("categories")
    kinds = build_tendency(backend, items, tables["cats"], tables["tend"])
    figures.update(records_with_items=sum(kinds.values()), no_tendency_records=kinds["none"],
                   partial_records=kinds["partial"], full_records=kinds["full"])
    lap("tendency")
    if options.method == "random":
        random_pairs(backend, tables["tend"], tables["pairs"], seed)
    elif options.method == "suppress":
        create_pairs_table(backend, tables["pairs"])
    else:
        create_pairs_table(backend, tables["pairs"])
        matcher = Matcher(backend, tables, seed, options.exact_limit, options.max_rounds)
        for kind in KINDS:
            history = matcher.match(kind)
            figures[f"rounds_{kind}"] = [list(r) for r in history.rounds]
            figures[f"stopped_{kind}"] = history.stopped
    lap("destinations")
    _pair_figures(backend, tables, figures)
    build_moves(backend, options.method, tables, seed)
    figures["items_moved"] = int(backend.scalar("swap_count_rows", tables={"t": tables["moves"]}))
    context.set_phase("publish")
    published = context.table(f"items_{attribute.attr_no}")
    publish(backend, options.method, original, tables["moves"], published)
    lap("swap")
    touched = tables["tend"] if options.method == "suppress" else tables["pairs"]
    figures.update(tendency_figures(backend, published, tables["cats"], tables["tend"],
                                    touched, kinds))
    balance = item_balance(backend, original, published)
    figures.update(items_lost=balance["items_lost"], diss=balance["diss"])
    if options.metrics:
        mined = published
        if items is not original:
            mined = context.table("pcapped")
            cap_items(backend, published, int(options.max_items_per_record or 0), mined,
                      original)
        figures["frequent_itemsets"] = frequent_itemset_figures(
            backend, items, mined, dataset.n_records, options.fi_supports,
            options.fi_max_size, context.table)
        if mined is not published:
            backend.drop_table(mined)
        figures["fi_max_size"] = options.fi_max_size
    lap("metrics")
    for name in (*_SCRATCH, "capped"):
        backend.drop_table(tables[name])
    figures["seconds"] = seconds


def _pair_figures(backend: Backend, tables: dict[str, Any], figures: dict[str, Any]) -> None:
    rows = backend.query("swap_pair_summary", tables={name: tables[name]
                                                      for name in ("pairs", "items", "tend")})
    figures["pairs"] = {
        kind: {"pairs": int(n), "positive_jaccard": int(pos), "mean_jaccard": float(mean or 0),
               "max_jaccard": float(top or 0)}
        for kind, n, pos, mean, top in rows
    }


MODEL = Model("swap", "hiding personal tendency by similarity-based swapping", OPTIONS,
              anonymize, verify_swap, validate)
