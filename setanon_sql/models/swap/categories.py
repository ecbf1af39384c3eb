"""The item categories a tendency is measured in: from a file, a hierarchy level, or random.

Whatever the source, the result is the table ``cats(item_id, category, category_label)``
covering every item of the column, with category ids 0, 1, ... The model's ``validate`` builds
it once in staging tables before the run is recorded, so a bad category file (malformed lines,
overlapping categories, items it misses under ``--uncategorized error``) or fewer than two
categories stop the run with an InputError and leave nothing behind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Attribute, Dataset
from setanon_sql.errors import InputError, UsageError
from setanon_sql.io.files import readable_file
from setanon_sql.io.hierarchy import get_hierarchy
from setanon_sql.models.swap.params import UNCATEGORIZED, SwapParams

Namer = Callable[[str], exp.Table]


def _map_from_file(backend: Backend, params: SwapParams, dictionary: exp.Table,
                   table: Namer, figures: dict[str, Any]) -> exp.Table:
    """``catmap(item_label, category_label)`` from the category file, checked line by line."""
    lines, catlines, catmap = table("catfile"), table("catlines"), table("catmap")
    try:
        missing = _check_file(backend, params, dictionary, lines, catlines, catmap)
    except BaseException:
        backend.drop_table(catmap)
        raise
    finally:
        backend.drop_table(lines)
        backend.drop_table(catlines)
    if missing:
        backend.run("swap_category_add_uncategorized", {"label": UNCATEGORIZED},
                    {"dict": dictionary, "catmap": catmap})
        backend.analyze(catmap)
    figures["uncategorized_items"] = missing
    return catmap


def _check_file(backend: Backend, params: SwapParams, dictionary: exp.Table, lines: exp.Table,
                catlines: exp.Table, catmap: exp.Table) -> int:
    """Load and check the file into ``catmap``; returns how many data items it misses."""
    path = str(params.categories)
    backend.load_lines(readable_file(path, "category file (--categories)"), lines)
    backend.materialize(catlines, "swap_category_lines", {"tab": "\t"}, {"lines": lines})
    bound = {"catlines": catlines}
    first_bad, n_bad = backend.query("swap_category_bad_lines", tables=bound)[0]
    if n_bad:
        raise InputError(f"category file {path} line {first_bad}: expected 'item<TAB>category' "
                         f"({n_bad} malformed line(s)); fix the file")
    conflicts = backend.query("swap_category_conflicts", tables=bound)
    if conflicts:
        shown = "; ".join(f"{r[0]!r} in {r[1]!r} and {r[2]!r}" for r in conflicts)
        raise InputError(f"category file {path}: {conflicts[0][3]} item(s) have two categories "
                         f"(categories must not overlap): {shown}")
    backend.materialize(catmap, "swap_category_map_file", tables=bound)
    missing = backend.query("swap_category_missing", tables={"dict": dictionary,
                                                             "catmap": catmap})
    if missing and params.uncategorized == "error":
        shown = ", ".join(repr(r[0]) for r in missing)
        raise InputError(f"category file {path} misses {missing[0][1]} item(s) of the data, "
                         f"first: {shown}; add them, or pass --uncategorized own to put them "
                         f"in one category {UNCATEGORIZED!r}")
    return int(missing[0][1]) if missing else 0


def _map_from_hierarchy(backend: Backend, dataset: Dataset, attribute: Attribute,
                        level: int, dictionary: exp.Table, table: Namer) -> exp.Table:
    hierarchy = get_hierarchy(backend, dataset, attribute)
    if level > hierarchy.height:
        raise UsageError(f"--category-level {level} is deeper than the hierarchy of column "
                         f"{attribute.name!r} (height {hierarchy.height})")
    catmap = table("catmap")
    backend.materialize(catmap, "swap_category_map_hierarchy",
                        {"hierarchy_id": hierarchy.hierarchy_id, "level": level},
                        {"dict": dictionary,
                         "hierarchy_nodes": backend.table("hierarchy_nodes")})
    return catmap


def build_categories(backend: Backend, dataset: Dataset, attribute: Attribute,
                     params: SwapParams, table: Namer, seed: int,
                     figures: dict[str, Any]) -> exp.Table:
    """Create the ``cats`` table named by ``table``; returns it. Needs two categories in use.

    The scratch tables are dropped on the way, and on failure ``cats`` too.
    """
    dictionary = backend.table(dataset.dict_table(attribute))
    cats = table("cats")
    try:
        _build(backend, dataset, attribute, params, table, seed, figures, dictionary, cats)
    except BaseException:
        backend.drop_table(cats)
        raise
    return cats


def _build(backend: Backend, dataset: Dataset, attribute: Attribute, params: SwapParams,
           table: Namer, seed: int, figures: dict[str, Any], dictionary: exp.Table,
           cats: exp.Table) -> None:
    if params.source == "random":
        n_items = int(backend.scalar("swap_count_rows", tables={"t": dictionary}))
        if params.random_categories and params.random_categories > n_items:
            raise UsageError(f"--random-categories {params.random_categories} exceeds the "
                             f"{n_items} distinct items of column {attribute.name!r}")
        backend.materialize(cats, "swap_categories_random",
                            {"seed": seed,
                             "n_categories": params.random_categories},
                            {"dict": dictionary})
    else:
        if params.source == "file":
            catmap = _map_from_file(backend, params, dictionary, table, figures)
        else:
            catmap = _map_from_hierarchy(backend, dataset, attribute,
                                         int(params.category_level or 0), dictionary, table)
        backend.materialize(cats, "swap_categories_from_map",
                            tables={"dict": dictionary, "catmap": catmap})
        backend.drop_table(catmap)
    n_categories, n_items, smallest, largest = backend.query(
        "swap_category_shape", tables={"cats": cats})[0]
    if int(n_categories or 0) < 2:
        raise InputError(f"the items of column {attribute.name!r} fall into "
                         f"{int(n_categories or 0)} category; swapping needs at least two")
    figures.update(categories=int(n_categories), categorized_items=int(n_items),
                   category_size_min=int(smallest), category_size_max=int(largest))
