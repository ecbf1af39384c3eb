"""Tendencies (Eqs. 4-5, Alg. 1), the swap itself (Alg. 3) and the RandSwap baseline.

What happens to a destination: swapping is an exchange. The destination also has a tendency
of another category (Alg. 2 only admits such candidates), and its tendency items move to the
source in the same step, so both records of a pair lose every item of their own tendency
category and receive the partner's: the destination's tendency is hidden too, and each
record takes part in at most one swap. Under full swapping (Alg. 4) two single-category
records exchange all their items.
"""

from __future__ import annotations

from sqlglot import condition, exp

from setanon_sql.backends.base import Backend
from setanon_sql.sqlrender import parsed

KINDS = ("full", "partial")


def build_tendency(backend: Backend, items: exp.Table, cats: exp.Table,
                   tend: exp.Table) -> dict[str, int]:
    """Create ``tend`` (one row per record with items); returns the records per kind."""
    backend.materialize(tend, "swap_tendency", tables={"items": items, "cats": cats})
    counts = dict(backend.query("swap_tendency_counts", tables={"tend": tend}))
    return {kind: int(counts.get(kind, 0)) for kind in ("none", *KINDS)}


def tendency_query(listed_only: bool) -> str | exp.Expr:
    """``swap_tendency``, or with ``listed_only`` the same for the records of a table bound as
    ``records`` only.

    A record's tendency (Eqs. 4-5, Alg. 1) depends on its own items and the categories alone,
    so the restricted query gives exactly the rows the whole one gives for those records. The
    restriction is a filter added to the statement's per-category weights, so the formula is
    written once, in ``sql/swap.sql``.
    """
    if not listed_only:
        return "swap_tendency"
    tree = parsed("swap_tendency").copy()
    weights = next(cte for cte in tree.find_all(exp.CTE) if cte.alias == "w").this
    weights.where(condition("i.record_id IN (SELECT record_id FROM records)"), copy=False)
    return tree


def random_pairs(backend: Backend, tend: exp.Table, pairs: exp.Table, seed: int) -> None:
    """RandSwap: create ``pairs`` from the records with a tendency in a seeded random order."""
    backend.materialize(pairs, "swap_random_pairs", {"seed": seed}, {"tend": tend})


def build_moves(backend: Backend, method: str, tables: dict[str, exp.Table], seed: int) -> None:
    """Create ``moves``: which item leaves which record for which partner."""
    bound = {name: tables[name] for name in ("pairs", "tend", "items", "cats")}
    if method == "random":
        bound.pop("cats")
        backend.materialize(tables["moves"], "swap_moves_random", {"seed": seed}, bound)
    elif method == "suppress":
        bound.pop("pairs")
        backend.materialize(tables["moves"], "swap_moves_suppress", tables=bound)
    else:
        backend.materialize(tables["moves"], "swap_moves_tendency", tables=bound)


def publish(backend: Backend, method: str, items: exp.Table, moves: exp.Table,
            target: exp.Table) -> None:
    """Create the published ``items_<attr>`` table from the original items and the moves."""
    statement = "swap_publish_suppressed" if method == "suppress" else "swap_publish"
    backend.materialize(target, statement, tables={"items": items, "moves": moves})
    backend.create_access_index(target, ["record_id", "item_id"])
