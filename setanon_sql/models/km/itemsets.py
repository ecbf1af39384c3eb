"""ℓ-itemset supports in SQL: an ℓ-way self-join of a record-item table, built with sqlglot.

The shape depends on ℓ, so these are expressions rather than named statements. Items of an
itemset are joined in increasing id order, so every itemset of a record appears exactly once.

The trees grow with ℓ (up to 256 terms a row in :func:`exact_cover_count`, ℓ parts of ℓ joins in
:func:`violating_image_rows`), and sqlglot's builders copy their receiver by default: built that
way, one statement of ℓ = 11 took 1-1.5 s of Python, 2.6 s for verify's (nearly all of it
deep copies), and the search builds one every round. So the builders here grow their own
fresh trees in place (``copy=False``); a node placed twice is copied (one parent each).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from math import comb
from typing import TYPE_CHECKING, NamedTuple

from sqlglot import exp

from setanon_sql.sqlrender import identifier, union_all, with_alias
from setanon_sql.sqlrender import qualified_column as _col

if TYPE_CHECKING:
    from setanon_sql.backends.base import Backend



class RecordShapes(NamedTuple):
    """The records' distinct node sets (:mod:`.shapes`): ``shapes(record_id, node_id, w)``
    holds each set once, under the id of its smallest record, w = its records;
    ``members(record_id, shape_id)`` gives every record's set."""

    shapes: exp.Table
    members: exp.Table


def enumeration_rows(lengths: list[tuple[int, int]], ell: int) -> int:
    """Σ over records of Σ_{j <= ℓ} C(|g_r|, j), from (length, records) pairs: the rows that
    enumerating every itemset of up to ℓ nodes of every record reads."""
    return sum(int(n) * comb(int(length), j)
               for length, n in lengths for j in range(1, ell + 1))


def enumeration_joins(backend: Backend, deepest: int) -> AbstractContextManager[None]:
    """How to plan a statement whose deepest enumeration of every itemset of its records has
    ``deepest`` nodes: one join at a time in the written order from the engine's
    ``left_deep_from`` nodes on (:meth:`.Backend.left_deep_joins`), each join keeping only the
    itemsets that grow in node order; below it, as the engine likes. (Enumerations grown from
    an anchor, the ones holding a changed node, are as fast either way: DuckDB, 11 nodes of
    100,000 CDR-like users, 0.54 / 0.51 s; they do not come here.)"""
    start = backend.left_deep_from
    return (backend.left_deep_joins() if start is not None and deepest >= start
            else nullcontext())


def itemset_occurrences(table: exp.Table, ell: int, item: str = "node_id",
                        touching: str | None = None, first: bool = False) -> exp.Select:
    """One row (record_id, n1..nℓ) per record and ℓ-itemset it contains, n1 < ... < nℓ; with
    ``touching`` (a 0/1 column of ``table``), only the itemsets holding a node flagged 1; with
    ``first`` (not with ``touching``), only those whose n1 lies between the parameters
    ``:first_low`` and ``:first_high`` (:mod:`.firstslices`)."""
    if touching is not None:
        assert not first, "an anchored enumeration is not sliced"
        return _anchored_occurrences(table, ell, item, touching)
    query = exp.select(_col("g1", "record_id").as_("record_id", quoted=True),
                       _col("g1", item).as_("n1", quoted=True)).from_(with_alias(table, "g1"),
                                                                        copy=False)
    if first:
        query.where(_in_first_range(_col("g1", item)), copy=False)
    for j in range(2, ell + 1):
        alias, previous = f"g{j}", f"g{j - 1}"
        on = exp.and_(_col(alias, "record_id").eq(_col("g1", "record_id")),
                      _col(alias, item) > _col(previous, item))
        query.join(with_alias(table, alias), on=on, copy=False)
        query.select(_col(alias, item).as_(f"n{j}", quoted=True), copy=False)
    return query


def shape_occurrences(counts: exp.Table, shapes: RecordShapes, size: int,
                      below: exp.Expr) -> exp.Select:
    """(record_id, n1..n_size, c1..c_size): :func:`itemset_occurrences` of ``counts``
    (record_id, node_id, c) for the itemsets whose support is under ``below`` only, with the
    record's items under each node (c_j under n_j). The itemsets of each distinct node set are
    enumerated once and their supports summed over the sets' weights (:mod:`.shapes`); the
    itemsets under ``below`` are matched back to the records holding them, and the counts are
    read by one join of ``counts`` against (holder, itemset, position) rows, then put back in
    columns. (Joining ``counts`` once per node instead let DuckDB join those copies to each
    other by record first, through the record ids they share: every ordered node tuple of
    every record, 1.2 × 10^10 rows planned at 100,000 CDR-like users, ℓ = 5, and the disk
    filled.)"""
    nodes = [exp.column(f"n{j}", quoted=True) for j in range(1, size + 1)]
    occurrences = itemset_occurrences(shapes.shapes, size).select(
        _col("g1", "w").as_("w", quoted=True), copy=False)
    support = exp.Window(this=exp.func("sum", exp.column("w", quoted=True)),
                         partition_by=[n.copy() for n in nodes])
    weighted = exp.select(exp.column("record_id", quoted=True).as_("shape_id", quoted=True),
                          *nodes, support.as_("support", quoted=True)).from_(
        occurrences.subquery("o", copy=False), copy=False)
    rare = (exp.select(exp.column("shape_id", quoted=True), *(n.copy() for n in nodes))
            .from_(weighted.subquery("s", copy=False), copy=False)
            .where(exp.column("support", quoted=True) < below, copy=False))
    holders = (exp.select(_col("m", "record_id").as_("record_id", quoted=True),
                          *(_col("v", f"n{j}").as_(f"n{j}", quoted=True)
                            for j in range(1, size + 1)))
               .from_(rare.subquery("v", copy=False), copy=False)
               .join(with_alias(shapes.members, "m"),
                     on=_col("m", "shape_id").eq(_col("v", "shape_id")), copy=False))
    return _with_item_counts(holders, counts, size)


def _with_item_counts(holders: exp.Select, counts: exp.Table, size: int) -> exp.Select:
    """(record_id, n1..n_size, c1..c_size): the rows of ``holders`` (record_id, n1..n_size)
    with the record's items under each node read from ``counts(record_id, node_id, c)``: one
    join of ``counts`` against (holder, itemset, position) rows, put back in columns by a
    group (the join once per node let DuckDB join those copies to each other by record first,
    :func:`shape_occurrences`)."""
    position = _col("p", "pos")
    node_at = exp.Case(ifs=[exp.If(this=position.eq(exp.Literal.number(j)),
                                   true=_col("h", f"n{j}")) for j in range(1, size + 1)])
    positions = exp.values([(exp.Literal.number(j),) for j in range(1, size + 1)], alias="p",
                           columns=["pos"])
    keyed = [_col("h", "record_id"), *(_col("h", f"n{j}") for j in range(1, size + 1))]
    return (exp.select(*(column.copy().as_(column.name, quoted=True) for column in keyed),
                       *(exp.func("max", exp.If(this=position.eq(exp.Literal.number(j)),
                                                true=_col("g", "c")))
                         .as_(f"c{j}", quoted=True) for j in range(1, size + 1)))
            .from_(holders.subquery("h", copy=False), copy=False)
            .join(positions, join_type="cross", copy=False)
            .join(with_alias(counts, "g"), on=exp.and_(
                _col("g", "record_id").eq(_col("h", "record_id")),
                _col("g", "node_id").eq(node_at)), copy=False)
            .group_by(*(column.copy() for column in keyed), copy=False))


def _occurrences_with_counts(table: exp.Table, size: int, touching: str | None,
                             shapes: RecordShapes | None, below: exp.Expr, counted: bool,
                             level: exp.Table | None = None
                             ) -> tuple[exp.Select, list[exp.Expr]]:
    """(occurrences, the per-node item counts c_1..c_size as its rows name them): with
    ``shapes``, of the itemsets whose support is under ``below`` only, enumerated over the
    records' distinct node sets (:func:`shape_occurrences`); else of the records' itemsets,
    those under ``below`` only where the rows' bound is ``counted`` (:func:`rare_occurrences`:
    where it is the product of the counts, an image of ℓ nodes, every row costs less than the
    join back would); with ``level``, read from that table instead of enumerated, with the
    counts read for its rows (:func:`_with_item_counts`; a level holds none). ``level``: the
    rows (record_id, n1..n_size) of the records' itemsets, all (:func:`itemset_occurrences`
    of ``table``, stored) or those of the itemsets under ``below`` (:func:`.levels.rows_below_of`):
    every row of an itemset it holds, so their count is its support. The callers group them by
    itemset and keep those under ``below``."""
    if level is not None:
        assert shapes is None and touching is None
        rows = _with_item_counts(exp.select(*(exp.column(c, quoted=True) for c in (
            "record_id", *(f"n{j}" for j in range(1, size + 1))))).from_(level.copy()),
            table, size)
    elif shapes is None:
        occurrences = itemset_occurrences(table, size, touching=touching)
        counts: list[exp.Expr] = [_col(f"g{j}", "c") for j in range(1, size + 1)]
        if not counted:
            return occurrences, counts
        rows = rare_occurrences(occurrences, counts, below)
    else:
        assert touching is None
        rows = shape_occurrences(table, shapes, size, below)
    return (exp.select(exp.Star()).from_(rows.subquery("h", copy=False), copy=False),
            [_col("h", f"c{j}") for j in range(1, size + 1)])


def rare_occurrences(occurrences: exp.Select, counts: Sequence[exp.Expr],
                     below: exp.Expr) -> exp.Select:
    """(record_id, n1..n_size, c1..c_size): the rows of ``occurrences`` (record_id, n1..n_size;
    ``counts`` name each row's items under its nodes) whose itemset has fewer than ``below``
    rows. The supports are counted first and the rows of the itemsets under ``below`` joined
    back, so the bound's arithmetic (:func:`exact_cover_count`, up to 256 terms a row) is done
    on those rows only: on the final cut of 100,000 CDR-like users at σ = 0.999 (76 M rows
    enumerated at ℓ = 11) it took 133 of verify's 191 s on every row, 15 s this way.
    The enumeration is named once (a CTE); an engine may run it twice."""
    size = len(counts)
    name = f"o{size}"  # one name per size: Spark refuses a name twice in one statement
    occurrences.select(*(c.copy().as_(f"c{j}", quoted=True)
                         for j, c in enumerate(counts, start=1)), copy=False)
    return _rows_below(exp.Table(this=identifier(name)), size, below).with_(
        identifier(name), as_=occurrences, copy=False)


def rare_itemsets(source: exp.Table, size: int, below: exp.Expr) -> exp.Select:
    """(n1..n_size): the itemsets of ``source`` (record_id, n1..n_size, ...; one row per
    holder) with fewer than ``below`` rows, counted by one aggregate."""
    nodes = [f"n{j}" for j in range(1, size + 1)]
    return (exp.select(*(exp.column(n, quoted=True) for n in nodes))
            .from_(source.copy(), copy=False)
            .group_by(*(exp.column(n, quoted=True) for n in nodes), copy=False)
            .having(exp.func("count", exp.Star()) < below.copy(), copy=False))


def _rows_below(source: exp.Table, size: int, below: exp.Expr) -> exp.Select:
    """(record_id, n1..n_size, c1..c_size) of the rows of ``source`` (those columns) whose
    itemset n1..n_size has fewer than ``below`` rows: the supports counted by one aggregate
    (:func:`rare_itemsets`), the rows of the itemsets under ``below`` joined back
    (:func:`rare_occurrences`)."""
    keys = rare_itemsets(source, size, below).subquery("r", copy=False)
    return _rows_of(source, keys, ["record_id", *(f"n{j}" for j in range(1, size + 1)),
                                   *(f"c{j}" for j in range(1, size + 1))], size)


def _rows_of(source: exp.Table, keys: exp.Expr, columns: list[str], size: int) -> exp.Select:
    """``columns`` of the rows of ``source`` (alias s) whose n1..n_size are a row of ``keys``
    (alias r)."""
    return (exp.select(*(_col("s", c).as_(c, quoted=True) for c in columns))
            .from_(with_alias(source, "s"), copy=False)
            .join(keys, on=exp.and_(*(_col("s", f"n{j}").eq(_col("r", f"n{j}"))
                                      for j in range(1, size + 1))), copy=False))


def _in_first_range(node: exp.Expr) -> exp.Between:
    """``node`` between the parameters ``:first_low`` and ``:first_high``: one slice of an
    enumeration (:mod:`.firstslices`)."""
    return exp.Between(this=node, low=exp.Placeholder(this="first_low"),
                       high=exp.Placeholder(this="first_high"))


def _anchored_occurrences(table: exp.Table, ell: int, item: str, flag: str,
                          in_place: bool = True,
                          prefixes: Sequence[exp.Table] | None = None) -> exp.Select:
    """:func:`itemset_occurrences` of the itemsets holding a node flagged 1 in ``flag``, each
    grown from its smallest flagged node (the anchor, alias gℓ) and ℓ - 1 other nodes of the
    record (g1 < ... < gℓ-1, none of them a flagged node below the anchor): a record of L nodes
    with F flagged gives F·C(L - 1, ℓ - 1) rows rather than C(L, ℓ) filtered. The anchor is put
    in its place among the others (:func:`_anchor_in_place`), so n1 < ... < nℓ as there; with
    ``in_place`` False, the columns are a1..aℓ-1 (the others) and aℓ (the anchor), one
    itemset's rows all alike as well. ``prefixes``: only the itemsets of a candidate list,
    ``prefixes[j]`` holding the candidates' anchor and first j others (aℓ, a1..aj;
    :func:`candidate_prefixes`), each joined as soon as its nodes are, so that the chain stops
    growing where no candidate goes on."""
    anchor = f"g{ell}"
    query = (exp.select(_col(anchor, "record_id").as_("record_id", quoted=True))
             .from_(with_alias(table, anchor), copy=False)
             .where(_col(anchor, flag).eq(exp.Literal.number(1)), copy=False))
    if prefixes is not None:
        _join_prefix(query, prefixes[0], 0, ell, item)
    for j in range(1, ell):
        alias = f"g{j}"
        on = exp.and_(_col(alias, "record_id").eq(_col(anchor, "record_id")),
                      _col(alias, item).neq(_col(anchor, item)),
                      exp.or_(_col(alias, flag).eq(exp.Literal.number(0)),
                              _col(alias, item) > _col(anchor, item)),
                      *([_col(alias, item) > _col(f"g{j - 1}", item)] if j > 1 else []))
        query.join(with_alias(table, alias), on=on, copy=False)
        if prefixes is not None:
            _join_prefix(query, prefixes[j], j, ell, item)
    nodes: list[exp.Expr] = [_col(f"g{j}", item) for j in range(1, ell + 1)]
    if in_place:
        nodes = _anchor_in_place(nodes)
    for p, node in enumerate(nodes, start=1):
        query.select(node.as_(f"{'n' if in_place else 'a'}{p}", quoted=True, copy=False),
                     copy=False)
    return query


def _join_prefix(query: exp.Select, prefix: exp.Table, depth: int, ell: int,
                 item: str) -> None:
    """Join ``prefix`` (aℓ, a1..a``depth``) to the anchored chain of ``query`` on its anchor
    (alias gℓ) and first ``depth`` others (g1..g``depth``)."""
    alias = f"p{depth}"
    on = exp.and_(_col(alias, f"a{ell}").eq(_col(f"g{ell}", item)),
                  *(_col(alias, f"a{j}").eq(_col(f"g{j}", item)) for j in range(1, depth + 1)))
    query.join(with_alias(prefix, alias), on=on, copy=False)


def candidate_itemsets(violations: exp.Table, successors: exp.Table, ell: int) -> exp.Select:
    """(a1..aℓ): the images under the next cut of the itemsets of ``violations``
    (:func:`violating_itemsets` under the previous cut) that hold a changed node, each once, in
    the anchored form of :func:`_anchored_occurrences` (a1 < ... < aℓ-1 the other nodes, aℓ
    the smallest changed node); an image of fewer than ℓ nodes (two of its nodes merged) is
    left out. ``successors(old_node, new_node)``: ``km_node_successors``, the next cut's node
    of each changed node of the previous cut; the other nodes keep their ids, and a node is
    changed in the next cut exactly when it is the successor of one (its items grew).

    These are the only itemsets holding a changed node that can be below k (the cut only
    merges, Acs et al. Alg. 2 l.13-14): a holder of an ℓ-itemset G' of the next cut holds,
    under each node of G', a node of the previous cut, so an ℓ-itemset G of the previous cut
    whose image is G'; every holder of G holds G', so supp(G') >= supp(G). G' is below k only
    if each such G held by a record was below k too, a row of the previous round's
    violations: G' is one of their images.

    One pass over the rows, no grouping by itemset: each node is mapped by a join, and the
    others are put in order by their ranks among the row's nodes (all distinct)."""
    nodes = [exp.column(f"m{j}", quoted=True) for j in range(1, ell + 1)]
    anchor = exp.column("anchor", quoted=True)
    mapped = exp.select().from_(with_alias(violations, "v"), copy=False)
    for j in range(1, ell + 1):
        alias = f"s{j}"
        mapped.join(with_alias(successors, alias), join_type="left",
                    on=_col(alias, "old_node").eq(_col("v", f"n{j}")), copy=False)
        mapped.select(exp.func("coalesce", _col(alias, "new_node"), _col("v", f"n{j}")).as_(
            f"m{j}", quoted=True), copy=False)
    # the smallest changed node (LEAST skips NULLs), NULL where none changed; Spark's LEAST
    # wants two arguments at least
    successors_of = [_col(f"s{j}", "new_node") for j in range(1, ell + 1)]
    mapped.select((exp.func("least", *successors_of) if ell > 1 else successors_of[0]).as_(
        "anchor", quoted=True), copy=False)

    # each node's place among the others: the nodes below it, less the anchor if below
    places = [exp.Sub(this=sum_of([_one_if(nodes[i].copy() < nodes[j].copy())
                                   for i in range(ell) if i != j]),
                      expression=_one_if(anchor.copy() < nodes[j].copy()))
              for j in range(ell)]
    ordered = exp.select(*(exp.Case(ifs=[exp.If(
        this=exp.and_(nodes[j].copy().neq(anchor.copy()),
                      places[j].copy().eq(exp.Literal.number(p))),
        true=nodes[j].copy()) for j in range(ell)]).as_(f"a{p + 1}", quoted=True)
        for p in range(ell - 1)), anchor.as_(f"a{ell}", quoted=True)).distinct().from_(
        mapped.subquery("c", copy=False), copy=False)
    return ordered.where(exp.and_(anchor.copy().is_(exp.null()).not_(),
                                  *(nodes[i].copy().neq(nodes[j].copy())
                                    for i in range(ell) for j in range(i + 1, ell))),
                         copy=False)


def _one_if(condition: exp.Expr) -> exp.Expr:
    """1 where ``condition`` holds, else 0."""
    return exp.Case(ifs=[exp.If(this=condition, true=exp.Literal.number(1))],
                    default=exp.Literal.number(0))


def sum_of(terms: Sequence[exp.Expr]) -> exp.Expr:
    """``terms`` added up (0 for none)."""
    total: exp.Expr = exp.Literal.number(0)
    for term in terms:
        total = exp.Add(this=total, expression=term)
    return total


def candidate_prefixes(candidates: exp.Table, depth: int, ell: int) -> exp.Select:
    """(a1..a``depth``, aℓ): the distinct prefixes of ``candidates``
    (:func:`candidate_itemsets`), by which :func:`_anchored_occurrences` stops early."""
    return (exp.select(*(exp.column(f"a{j}", quoted=True) for j in range(1, depth + 1)),
                       exp.column(f"a{ell}", quoted=True))
            .distinct().from_(candidates.copy(), copy=False))


def _anchor_in_place(nodes: Sequence[exp.Expr]) -> list[exp.Expr]:
    """n1..nℓ from ``nodes``: ℓ - 1 others in increasing order, then an anchor that may sort
    anywhere among them (:func:`_anchored_occurrences`)."""
    *others, anchor = nodes
    ell = len(nodes)
    # how many other nodes sort before the anchor
    below = sum_of([_one_if(other.copy() < anchor.copy()) for other in others])
    placed: list[exp.Expr] = []
    for p in range(1, ell + 1):
        ifs = []
        if p < ell:
            ifs.append(exp.If(this=below.copy() >= exp.Literal.number(p),
                              true=others[p - 1].copy()))
        ifs.append(exp.If(this=below.copy().eq(exp.Literal.number(p - 1)),
                          true=anchor.copy()))
        placed.append(exp.Case(ifs=ifs, default=others[p - 2].copy() if p > 1 else None))
    return placed


def violating_itemsets(table: exp.Table, ell: int, item: str = "node_id") -> exp.Select:
    """The ℓ-itemsets of ``table`` with support below ``:k`` (support 0 never shows up).

    Columns vid (a number per itemset, in itemset order), n1..nℓ and support.
    """
    return numbered_itemsets(violating_counts(table, ell, item), ell)


def violating_counts(table: exp.Table, ell: int, item: str = "node_id",
                     touching: str | None = None, first: bool = False,
                     prefixes: Sequence[exp.Table] | None = None) -> exp.Select:
    """(n1..nℓ, support) of the ℓ-itemsets of ``table`` with support below ``:k``; with
    ``first``, only those whose first node is in a range (:func:`itemset_occurrences`); with
    ``touching``, only those holding a node flagged 1, and with ``prefixes`` only those of a
    candidate list (:func:`_anchored_occurrences`).

    With ``touching``, the rows are grouped as they are enumerated (the others in order, then
    the anchor: one form per itemset) and only the itemsets below k are put in node order.
    Ordered first, every row computed ℓ CASEs and was grouped by them: a round of ℓ = 3 on
    100,000 CDR-like users enumerated 12.4 M rows, gathered from PostgreSQL's parallel workers
    to one process that ordered and grouped them, to keep 4,373 itemsets. Over the 47 later
    rounds of that run's exact sizes (σ = 0.999, k = 20), 61.6 -> 46.0 s on PostgreSQL, 9.3
    -> 8.7 s on DuckDB (BENCHMARKS.md, km, "Built (stop 90)")."""
    nodes = [exp.column(f"n{j}", quoted=True) for j in range(1, ell + 1)]
    if touching is None:
        return (exp.select(*nodes, exp.func("count", exp.Star()).as_("support", quoted=True))
                .from_(itemset_occurrences(table, ell, item, first=first)
                       .subquery("o", copy=False), copy=False)
                .group_by(*(n.copy() for n in nodes), copy=False)
                .having(exp.func("count", exp.Star()) < exp.Placeholder(this="k"), copy=False))
    raw = [exp.column(f"a{j}", quoted=True) for j in range(1, ell + 1)]
    counted = (exp.select(*raw, exp.func("count", exp.Star()).as_("support", quoted=True))
               .from_(_anchored_occurrences(table, ell, item, touching, in_place=False,
                                            prefixes=prefixes).subquery("o", copy=False),
                      copy=False)
               .group_by(*(a.copy() for a in raw), copy=False)
               .having(exp.func("count", exp.Star()) < exp.Placeholder(this="k"), copy=False))
    return exp.select(*(node.as_(f"n{p}", quoted=True, copy=False) for p, node in enumerate(
        _anchor_in_place([_col("v", f"a{j}") for j in range(1, ell + 1)]), start=1)),
        _col("v", "support").as_("support", quoted=True)).from_(
        counted.subquery("v", copy=False), copy=False)


def set_ids(rows: exp.Table, owner: str, item: str, size: int) -> exp.Select:
    """(``owner``, vid) from ``rows(owner, item)``, each owner holding at most ``size``
    distinct items: owners holding the same set share a vid, the smallest owner holding it
    (so sets are numbered in the order of their first owner, as by a rank of it).

    The set is pivoted into ``size`` columns, smallest item first (NULL past its size), and
    grouped by them. A key string per owner (string_agg ordered by item, then grouped) did
    the same at 2.4x the time: 2 M proposals of 5 items at 1 M CDR-like users, 2.71 s against
    1.15 s on DuckDB."""
    own = exp.column(owner, quoted=True)
    slots = [exp.column(f"i{j}", quoted=True) for j in range(1, size + 1)]
    first = exp.Window(this=exp.func("min", own.copy()), partition_by=slots)
    return exp.select(own.copy(), exp.cast(first, "BIGINT").as_("vid", quoted=True)).from_(
        pivoted_sets(rows, owner, item, size).subquery("p"))


def pivoted_sets(rows: exp.Table | exp.Select, owner: str, item: str, size: int,
                 fill: int | None = None) -> exp.Select:
    """(``owner``, i1..i``size``) from ``rows(owner, item)``: each owner's distinct items in
    increasing order, one column each, ``fill`` (a constant; None: NULL) past its count."""
    own, it = exp.column(owner, quoted=True), exp.column(item, quoted=True)
    rank = exp.Window(this=exp.RowNumber(), partition_by=[own.copy()],
                      order=exp.Order(expressions=[exp.Ordered(this=it.copy())]))
    source = rows.copy() if isinstance(rows, exp.Table) else rows.subquery("s")
    ranked = exp.select(own.copy(), it.copy(), rank.as_("r", quoted=True)).from_(source)
    slots: list[exp.Expr] = []
    for j in range(1, size + 1):
        slot: exp.Expr = exp.func("max", exp.If(
            this=exp.column("r", quoted=True).eq(exp.Literal.number(j)), true=it.copy()))
        if fill is not None:
            slot = exp.func("coalesce", slot, exp.Literal.number(fill))
        slots.append(slot.as_(f"i{j}", quoted=True))
    return exp.select(own.copy(), *slots).from_(ranked.subquery("r")).group_by(own.copy())


def numbered_itemsets(counted: exp.Query, ell: int) -> exp.Select:
    """(vid, n1..nℓ, support) from the (n1..nℓ, support) rows of ``counted``, vid in itemset
    order."""
    nodes = [exp.column(f"n{j}", quoted=True) for j in range(1, ell + 1)]
    vid = exp.Window(this=exp.RowNumber(), order=exp.Order(
        expressions=[exp.Ordered(this=n.copy()) for n in nodes]))
    return exp.select(exp.cast(vid, "BIGINT", copy=False).as_("vid", quoted=True), *nodes,
                      exp.column("support", quoted=True)).from_(counted.subquery("c"),
                                                                 copy=False)


def untouched_itemsets(violations: exp.Table, changed: exp.Table, ell: int) -> exp.Select:
    """(n1..nℓ, support) of the rows of ``violations`` (:func:`violating_itemsets`) none of
    whose nodes is in ``changed``: their holders, so their supports, are the same under the
    next cut (:mod:`.exact`)."""
    return exp.select(*(exp.column(f"n{j}", quoted=True) for j in range(1, ell + 1)),
                      exp.column("support", quoted=True)).from_(
        untouched_image_rows(violations, changed, ell).subquery("u", copy=False), copy=False)


def itemset_nodes(violations: exp.Table, ell: int) -> exp.Select:
    """(vid, node_id) rows: the itemsets of ``violations`` one node per row."""
    parts = [exp.select(exp.column("vid", quoted=True),
                        exp.column(f"n{j}", quoted=True).as_("node_id", quoted=True))
             .from_(violations.copy()) for j in range(1, ell + 1)]
    query = union_all(parts)
    return exp.select("*").from_(query.subquery("u"))


def violation_count(table: exp.Table, ell: int, item: str = "item_id",
                    first: bool = False) -> exp.Select:
    """How many ℓ-itemsets of ``table`` have support in [1, :k): the exact k^m check; with
    ``first``, of those whose first node is in a range (:func:`itemset_occurrences`). The
    itemsets are counted, not numbered: a count needs no order."""
    return (exp.select(exp.func("count", exp.Star()))
            .from_(violating_counts(table, ell, item, first=first).subquery("v", copy=False)))


def itemset_rows(groups: exp.Table, ell: int) -> exp.Select:
    """(vid, size, n1..nℓ): each itemset of ``groups(vid, node_id, ...)`` in one row.

    Nodes ascend, so the row matches :func:`itemset_occurrences`; columns past the size are NULL.
    """
    position = exp.Window(this=exp.RowNumber(), partition_by=[exp.column("vid", quoted=True)],
                          order=exp.Order(expressions=[exp.Ordered(
                              this=exp.column("node_id", quoted=True))]))
    ranked = exp.select(exp.column("vid", quoted=True), exp.column("node_id", quoted=True),
                        position.as_("pos", quoted=True)).from_(groups.copy())
    nodes = [exp.func("max", exp.If(
        this=exp.column("pos", quoted=True).eq(exp.Literal.number(j)),
        true=exp.column("node_id", quoted=True))).as_(f"n{j}", quoted=True)
        for j in range(1, ell + 1)]
    return (exp.select(exp.column("vid", quoted=True),
                       exp.func("count", exp.Star()).as_("size", quoted=True), *nodes)
            .from_(ranked.subquery("r")).group_by(exp.column("vid", quoted=True)))


def itemset_supports(records: exp.Table, rows: exp.Table, sizes: list[int],
                     first: bool = False) -> exp.Select:
    """(vid, supp): the support in ``records`` of each itemset of ``rows`` whose size is listed.

    One enumeration of the s-subsets of the records per size, matched to the itemsets of that
    size (an itemset no record holds gets no row: support 0). With ``first`` (``rows`` from
    :func:`bounded_rows`): (vid, holder), the smallest record id below the itemset's ``bound``
    that holds it (no row: none does), for the sampler's first-holder rule.
    """
    parts = []
    for size in sizes:
        on = exp.and_(_col("v", "size").eq(exp.Literal.number(size)),
                      *(_col("v", f"n{j}").eq(_col("o", f"n{j}")) for j in range(1, size + 1)))
        if first:
            on = exp.and_(on, _col("o", "record_id") < _col("v", "bound"))
        value = (exp.func("min", _col("o", "record_id")).as_("holder", quoted=True) if first
                 else exp.func("count", exp.Star()).as_("supp", quoted=True))
        parts.append(exp.select(_col("v", "vid").as_("vid", quoted=True), value)
                     .from_(itemset_occurrences(records, size).subquery("o"))
                     .join(with_alias(rows, "v"), on=on)
                     .group_by(_col("v", "vid")))
    query = union_all(parts)
    return exp.select("*").from_(query.subquery("u"))


# Itemsets whose bounds lie within one factor of TIER_BASE share prefixes (bounded_rows): a
# prefix's bound is the largest of its itemsets', so sharing across all bounds let the
# records below the largest in. 1 M CDR-like users, 1 M proposals of 7 items, timed by hand:
# levels of 21.6 s shared across tiers, 14.1 s with base 4 (16: 15.5 s, 2: 17.2 s).
TIER_BASE = 4


def bounded_rows(rows: exp.Table, bounds: exp.Table) -> exp.Select:
    """The rows of ``rows(vid, ...)`` with each itemset's ``bound`` from ``bounds(vid, bound)``
    (a record id, at least 1) and its ``tier``, floor(log base TIER_BASE of the bound)."""
    tier = exp.Floor(this=exp.Div(
        this=exp.Ln(this=exp.cast(_col("b", "bound"), "DOUBLE PRECISION")),
        expression=exp.Ln(this=exp.Literal.number(float(TIER_BASE)))))
    return (exp.select(exp.Column(this=exp.Star(), table=exp.to_identifier("r")),
                       _col("b", "bound").as_("bound", quoted=True),
                       exp.cast(tier, "BIGINT").as_("tier", quoted=True))
            .from_(with_alias(rows, "r"))
            .join(with_alias(bounds, "b"), on=_col("b", "vid").eq(_col("r", "vid"))))


def rarest_first_rows(groups: exp.Table, postings: exp.Table, ell: int) -> exp.Select:
    """(vid, size, r1..rℓ): each itemset of ``groups(vid, node_id, ...)`` in one row, its nodes
    ordered by their number of records in ``postings(node_id, n)`` (rarest first; ties: the
    smaller id; a node without postings first, so the prefix plan finds no holder: in a slice of
    the records, see :func:`.groupsupport.record_slices`, a node may have none); columns
    past the size are NULL."""
    position = exp.Window(this=exp.RowNumber(), partition_by=[exp.column("vid", "gr")],
                          order=exp.Order(expressions=[
                              exp.Ordered(this=exp.func("coalesce", exp.column("n", "o"),
                                                        exp.Literal.number(0))),
                              exp.Ordered(this=exp.column("node_id", "gr"))]))
    ranked = (exp.select(exp.column("vid", "gr").as_("vid", quoted=True),
                         exp.column("node_id", "gr").as_("node_id", quoted=True),
                         position.as_("pos", quoted=True))
              .from_(with_alias(groups, "gr"))
              .join(with_alias(postings, "o"), join_type="left",
                    on=exp.column("node_id", "o").eq(exp.column("node_id", "gr"))))
    nodes = [exp.func("max", exp.If(
        this=exp.column("pos", quoted=True).eq(exp.Literal.number(j)),
        true=exp.column("node_id", quoted=True))).as_(f"r{j}", quoted=True)
        for j in range(1, ell + 1)]
    return (exp.select(exp.column("vid", quoted=True),
                       exp.func("count", exp.Star()).as_("size", quoted=True), *nodes)
            .from_(ranked.subquery("k")).group_by(exp.column("vid", quoted=True)))


def binomial(n: exp.Expr, ell: int) -> exp.Expr:
    """C(n, ℓ) as a float: the product of (n - i) / (i + 1) for i < ℓ (0 for integer
    0 <= n < ℓ, where one factor is 0)."""
    value: exp.Expr = exp.Literal.number(1.0)
    for i in range(ell):
        factor = exp.Div(this=_as_double(exp.Sub(this=n.copy(),
                                                 expression=exp.Literal.number(i))),
                         expression=exp.Literal.number(float(i + 1)))
        value = exp.Mul(this=value, expression=factor)
    return exp.paren(value, copy=False)


_DOUBLE = exp.DataType.build("DOUBLE PRECISION")


def _as_double(value: exp.Expr) -> exp.Cast:
    """CAST(value AS DOUBLE PRECISION), ``value`` placed as it is (the type parsed once)."""
    return exp.Cast(this=value, to=_DOUBLE.copy())


# An image's ℓ-itemsets held by one record are counted by the form with fewer terms:
# inclusion-exclusion over its nodes (2^size - 1 terms, up to MAX_EXACT_TERMS_SIZE nodes) or a
# sum over the compositions of ℓ into one part per node (C(ℓ - 1, size - 1) products, up to
# MAX_COMPOSITIONS); past both, the upper bound C(cover, ℓ). That bound was used above 6 nodes
# until stop 84, and was 4-5 orders of magnitude loose there: on 100,000 CDR-like users at
# σ = 0.999 (15 regions) it bounded the violating share of Ω^9 at 0.008 where the count gives
# 4.5 × 10^-7, so the certificate failed and 5,866,617 samples were drawn instead
# (BENCHMARKS.md, km, "Built (stop 84)"). 256 compositions reach every size up to ℓ = 11.
MAX_EXACT_TERMS_SIZE = 6
MAX_COMPOSITIONS = 256


def _cover(counts: Sequence[exp.Expr]) -> exp.Expr:
    """A holder's items under an itemset's nodes: the sum of its per-node counts."""
    total: exp.Expr = counts[0].copy()
    for c in counts[1:]:
        total = exp.Add(this=total, expression=c.copy())
    return total


def _one_per_node(counts: Sequence[exp.Expr]) -> exp.Expr:
    """ℓ items over ℓ nodes, each node holding one: the exact cover count is the product of
    the counts (what inclusion-exclusion sums to, at a fraction of the arithmetic)."""
    product: exp.Expr = _as_double(counts[0].copy())
    for c in counts[1:]:
        product = exp.Mul(this=product, expression=c.copy())
    return product


def compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    """Every (a_1, ..., a_parts) of integers >= 1 summing to ``total``: C(total - 1, parts - 1)
    of them (none when parts > total)."""
    if parts == 1:
        if total >= 1:
            yield (total,)
        return
    for first in range(1, total - parts + 2):
        for rest in compositions(total - first, parts - 1):
            yield (first, *rest)


def exact_cover_count(counts: Sequence[exp.Expr], ell: int) -> exp.Expr:
    """ℓ-subsets of a record's items under the nodes whose item counts are ``counts`` that hold
    an item under every node (those whose image is exactly the itemset), by the form with
    fewer terms within its cap (the constants above): inclusion-exclusion, Σ over node subsets S
    of (-1)^(size - |S|) C(Σ_S c, ℓ), or Σ over the compositions a of ℓ into one part a_i >= 1
    per node of Π_i C(c_i, a_i) (a_i items under node i; no cancellation); past both caps the
    upper bound C(Σ c, ℓ)."""
    size = len(counts)
    ways = comb(ell - 1, size - 1) if size <= ell else 0
    by_terms = size <= MAX_EXACT_TERMS_SIZE
    if ways <= MAX_COMPOSITIONS and not (by_terms and (1 << size) - 1 <= ways):
        return _composition_count(counts, ell)
    if by_terms:
        return _inclusion_exclusion(counts, ell)
    return binomial(_cover(counts), ell)


def _composition_count(counts: Sequence[exp.Expr], ell: int) -> exp.Expr:
    """Σ over :func:`compositions` a of ℓ into len(counts) parts of Π_i C(c_i, a_i)."""
    value: exp.Expr | None = None
    for parts in compositions(ell, len(counts)):
        term: exp.Expr | None = None
        for c, a in zip(counts, parts, strict=True):
            factor = _as_double(c.copy()) if a == 1 else binomial(c, a)
            term = factor if term is None else exp.Mul(this=term, expression=factor)
        value = term if value is None else exp.Add(this=value, expression=term)
    return exp.paren(value, copy=False) if value is not None else exp.Literal.number(0.0)


def _inclusion_exclusion(counts: Sequence[exp.Expr], ell: int) -> exp.Expr:
    """Σ over node subsets S of (-1)^(size - |S|) C(Σ_S c, ℓ) (2^size - 1 terms)."""
    size = len(counts)
    value: exp.Expr | None = None
    for mask in range(1, 1 << size):
        chosen = [counts[i] for i in range(size) if mask >> i & 1]
        term = binomial(_cover(chosen), ell)
        if (size - len(chosen)) % 2:
            value = exp.Sub(this=value, expression=term) if value is not None else exp.Neg(
                this=term)
        else:
            value = exp.Add(this=value, expression=term) if value is not None else term
    assert value is not None
    return exp.paren(value, copy=False)


def violating_images(table: exp.Table, size: int, ell: int, touching: str | None = None,
                     shapes: RecordShapes | None = None,
                     level: exp.Table | None = None) -> exp.Select:
    """(n1..n_size, x): the ``size``-itemsets G of ``table(record_id, node_id, c)`` (``c``
    counts the record's original items under the node) with support in [1, :k) and a holder
    with at least ℓ items under G's nodes (the violating images of ℓ-itemsets of D,
    :mod:`.exactcheck`), and x = Σ over their holders of the ℓ-subsets of the holder's items
    whose image is G (an upper bound on the ℓ-itemsets of D they stand for: an itemset held by
    several records is counted once per holder; :func:`exact_cover_count`, computed on the
    rows of itemsets below k only, :func:`rare_occurrences`). ``touching``: only the
    images holding a node flagged in that column (:func:`itemset_occurrences`). ``shapes``:
    enumerated over the records' distinct node sets (:func:`shape_occurrences`), the same rows.
    ``level``: the records' itemsets read from that table (all, or the rows of the itemsets
    below k of a level, :func:`.levels.rows_below_of`), the same rows."""
    occurrences, counts = _occurrences_with_counts(table, size, touching, shapes,
                                                   exp.Placeholder(this="k"), size < ell,
                                                   level)
    nodes = [exp.column(f"n{j}", quoted=True) for j in range(1, size + 1)]
    below_k = exp.func("count", exp.Star()) < exp.Placeholder(this="k")
    summed = exp.select(*nodes, exp.func("sum", exp.column("x", quoted=True))
                        .as_("x", quoted=True))
    if size == ell:
        # every holder covers ℓ items (:func:`_one_per_node`)
        occurrences.select(_one_per_node(counts).as_("x", quoted=True, copy=False), copy=False)
        return (summed.from_(occurrences.subquery("o", copy=False), copy=False)
                .group_by(*(n.copy() for n in nodes), copy=False).having(below_k, copy=False))
    cover = _cover(counts)
    x = exact_cover_count(counts, ell)
    occurrences.select(cover.as_("cover", quoted=True, copy=False),
                       x.as_("x", quoted=True, copy=False), copy=False)
    return (summed.from_(occurrences.subquery("o", copy=False), copy=False)
            .group_by(*(n.copy() for n in nodes), copy=False)
            .having(exp.and_(
                below_k,
                exp.func("max", exp.column("cover", quoted=True))
                >= exp.Literal.number(ell)), copy=False))


def loosest_k(ells: Sequence[int]) -> exp.Expr:
    """The largest of the bounds ``:k<ℓ>`` of ``ells`` (:func:`image_violations`)."""
    ks = [exp.Placeholder(this=f"k{ell}") for ell in ells]
    return ks[0] if len(ks) == 1 else exp.func("greatest", *ks)


def image_violations(table: exp.Table, size: int, ells: Sequence[int],
                     shapes: RecordShapes | None = None,
                     level: exp.Table | None = None) -> exp.Select:
    """(images, itemsets) for each ℓ of ``ells`` (each >= ``size``), in that order: how many
    :func:`violating_images` of this size there are for ℓ (support below ``:k<ℓ>``, e.g.
    ``:k3``), and the sum of their x. One enumeration of the ``size``-itemsets serves every ℓ:
    verify checks several sizes on one cut, which used to enumerate each size once per ℓ.
    ``shapes``: enumerated over the records' distinct node sets (:func:`shape_occurrences`);
    ``level``: read from that table (all the rows, or those of the itemsets below the loosest
    bound of a level, :func:`.levels.rows_below_of`)."""
    assert ells and min(ells) >= size
    ks = [exp.Placeholder(this=f"k{ell}") for ell in ells]
    loosest = loosest_k(ells)
    occurrences, counts = _occurrences_with_counts(table, size, None, shapes, loosest,
                                                   max(ells) > size, level)
    nodes = [exp.column(f"n{j}", quoted=True) for j in range(1, size + 1)]
    cover = _cover(counts)
    xs = [(ell, _one_per_node(counts) if ell == size else exact_cover_count(counts, ell))
          for ell in ells]
    support, widest = (exp.column(name, quoted=True) for name in ("support", "cover"))
    occurrences.select(cover.as_("cover", quoted=True, copy=False),
                       *(x.as_(f"x{ell}", quoted=True, copy=False) for ell, x in xs),
                       copy=False)
    per_image = (
        exp.select(exp.func("count", exp.Star()).as_("support", quoted=True),
                   exp.func("max", exp.column("cover", quoted=True)).as_("cover", quoted=True),
                   *(exp.func("sum", exp.column(f"x{ell}", quoted=True))
                     .as_(f"x{ell}", quoted=True) for ell, _ in xs))
        .from_(occurrences.subquery("o", copy=False), copy=False)
        .group_by(*nodes, copy=False)
        # the loosest of the conditions below, to keep few groups
        .having(exp.func("count", exp.Star()) < loosest.copy(), copy=False))
    columns: list[exp.Expr] = []
    for (ell, _), k in zip(xs, ks, strict=True):
        # a holder with >= ℓ items under the nodes (always true at ℓ = size)
        violating = exp.and_(support < k.copy(), widest >= exp.Literal.number(ell))
        columns.append(exp.func("coalesce", exp.func("sum", exp.If(
            this=violating, true=exp.Literal.number(1), false=exp.Literal.number(0))),
            exp.Literal.number(0)))
        columns.append(exp.func("coalesce", exp.func("sum", exp.If(
            this=violating.copy(), true=exp.column(f"x{ell}", quoted=True),
            false=exp.Literal.number(0.0))), exp.Literal.number(0.0)))
    return exp.select(*columns).from_(per_image.subquery("v", copy=False), copy=False)


def violating_image_rows(table: exp.Table, ell: int, touching: str | None = None,
                         shapes: RecordShapes | None = None) -> exp.Select:
    """(size, n1..nℓ, x): every violating image of an ℓ-itemset, of sizes 1..ℓ
    (:func:`violating_images`, x the count of :func:`exact_cover_count`), one per row with NULL
    past its size. One row per image, so count(*) counts the images and sum(x) is the
    certificate's bound; the merge step reads the nodes from the columns
    (:func:`choose_image_merges`), or one per row (:func:`image_nodes`). ``touching``: only the
    images holding a flagged node (:func:`itemset_occurrences`)."""
    parts = [violating_image_part(table, size, ell, touching=touching, shapes=shapes)
             for size in range(1, ell + 1)]
    query = union_all(parts, copy=False)
    return exp.select(exp.Star()).from_(query.subquery("u", copy=False), copy=False)


def violating_image_part(table: exp.Table, size: int, ell: int, touching: str | None = None,
                         shapes: RecordShapes | None = None,
                         level: exp.Table | None = None) -> exp.Select:
    """The rows of :func:`violating_image_rows` of one image size (:func:`violating_images`
    with the same arguments)."""
    nodes = [exp.column(f"n{j}", quoted=True) if j <= size
             else exp.cast(exp.Null(), "BIGINT").as_(f"n{j}", quoted=True)
             for j in range(1, ell + 1)]
    return (exp.select(exp.Literal.number(size).as_("size", quoted=True), *nodes,
                       exp.column("x", quoted=True))
            .from_(violating_images(table, size, ell, touching=touching, shapes=shapes,
                                    level=level)
                   .subquery(f"v{size}", copy=False), copy=False))


def untouched_image_rows(images: exp.Table, changed: exp.Table, ell: int) -> exp.Select:
    """The rows of ``images`` (:func:`violating_image_rows`) none of whose nodes is in
    ``changed(node_id)``: an image of unchanged nodes has the same holders, support and bound
    under the next cut (:mod:`.enumsteer`). Anti-joins, one per node column (a NULL past the
    image's size matches nothing)."""
    query = exp.select(exp.Column(this=exp.Star(), table=identifier("i"))).from_(
        with_alias(images, "i"), copy=False)
    unmatched = []
    for j in range(1, ell + 1):
        alias = f"c{j}"
        query.join(with_alias(changed, alias), join_type="left",
                   on=_col(alias, "node_id").eq(_col("i", f"n{j}")), copy=False)
        unmatched.append(_col(alias, "node_id").is_(exp.null()))
    return query.where(exp.and_(*unmatched), copy=False)


def image_nodes(images: exp.Table, ell: int) -> exp.Select:
    """(vid, node_id): the images of ``images`` (:func:`violating_image_rows`) one node per
    row, as :meth:`.cutsearch.CutSearch.merge` reads them (the graph search). vid only tells
    the images apart (the merge depends on the set of images, not on their numbers); they are
    numbered in (size, n1, ...) order all the same, as before, since Spark numbers rows only in
    an ordered window."""
    positions = union_all([exp.select(exp.Literal.number(j).as_("p", quoted=True))
                           for j in range(1, ell + 1)])
    p = exp.column("p", "q", quoted=True)
    node = exp.Case(ifs=[exp.If(this=p.eq(exp.Literal.number(j)),
                                true=exp.column(f"n{j}", "i", quoted=True))
                         for j in range(1, ell + 1)])
    vid = exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=[
        exp.Ordered(this=exp.column("size", quoted=True)),
        *(exp.Ordered(this=exp.column(f"n{j}", quoted=True)) for j in range(1, ell + 1))]))
    numbered = exp.select(exp.cast(vid, "BIGINT").as_("vid", quoted=True),
                          exp.Star()).from_(images.copy())
    return (exp.select(exp.column("vid", "i", quoted=True).as_("vid", quoted=True),
                       node.as_("node_id", quoted=True))
            .from_(numbered.subquery("i"))
            .join(exp.select("*").from_(positions.subquery("pos")).subquery("q"),
                  on=p <= exp.column("size", "i", quoted=True)))


def choose_image_merges(images: exp.Table, hnode: exp.Table, costs: exp.Table,
                        ell: int) -> exp.Select:
    """``km_choose_merges`` for images given one per row (:func:`violating_image_rows`):
    the same chosen nodes, without a row per (image, node) or a window per image.

    Each image proposes the parent of least (cost, parent id) among its nodes' parents; that
    order is a rank per parent (``dense_rank``, unique because parent ids are), and a node's
    rank is its parent's, so an image's proposal is the least rank of its nodes (LEAST skips
    the NULLs past an image's size and of the root, which has no parent, in PostgreSQL, DuckDB
    and Spark alike). The distinct proposals are the distinct ranks, in the order
    ``km_choose_merges`` sorts them (cost, node id), and the cheapest share ``:batch`` (at
    least one) is chosen, as there."""
    rank = exp.Window(this=exp.func("dense_rank"), order=exp.Order(expressions=[
        exp.Ordered(this=_col("c", "cost")), exp.Ordered(this=_col("c", "node_id"))]))
    ranked = (exp.select(_col("h", "node_id").as_("node_id", quoted=True),
                         _col("c", "node_id").as_("parent_id", quoted=True),
                         rank.as_("r", quoted=True))
              .from_(with_alias(hnode, "h"))
              .join(with_alias(costs, "c"), on=_col("c", "node_id").eq(_col("h", "parent_id"))))
    ranks = [_col(f"p{j}", "r") for j in range(1, ell + 1)]
    least = exp.func("least", *ranks) if ell > 1 else ranks[0]
    proposed = exp.select(least.as_("r", quoted=True)).distinct().from_(with_alias(images, "i"))
    for j in range(1, ell + 1):
        proposed = proposed.join(exp.Table(this=identifier("nodes")).as_(f"p{j}"),
                                 on=_col(f"p{j}", "node_id").eq(_col("i", f"n{j}")),
                                 join_type="left")
    r = exp.column("r", quoted=True)
    ordered = (exp.select(r, exp.Window(this=exp.RowNumber(), order=exp.Order(
        expressions=[exp.Ordered(this=r.copy())])).as_("rn", quoted=True),
                          exp.Window(this=exp.func("count", exp.Star())).as_("n", quoted=True))
               .from_(exp.select("*").from_(proposed.subquery("d")).where(r.copy().is_(
                   exp.Null()).not_()).subquery("e")))
    parents = exp.select(_col("nodes", "r").as_("r", quoted=True),
                         _col("nodes", "parent_id").as_("node_id", quoted=True)).distinct() \
        .from_(exp.Table(this=identifier("nodes")))
    top = exp.func("greatest", exp.Literal.number(1), exp.cast(
        exp.func("ceil", exp.Mul(this=_col("o", "n"), expression=exp.Placeholder(this="batch"))),
        "BIGINT"))
    return (exp.select(_col("a", "node_id").as_("node_id", quoted=True))
            .with_("nodes", as_=ranked)
            .from_(ordered.subquery("o"))
            .join(parents.subquery("a"), on=_col("a", "r").eq(_col("o", "r")))
            .where(_col("o", "rn") <= top))


def prefix_ids(rows: exp.Table, ell: int, bounded: bool = False) -> exp.Select:
    """(vid, size, r1..rℓ, p1..pℓ): the rows of :func:`rarest_first_rows` with ``pj`` a number
    for each distinct prefix r1..rj (NULL past the size). The nodes are in one global order
    (postings, then id), so itemsets that share their rarest nodes share prefixes. With
    ``bounded`` (rows of :func:`bounded_rows`) a prefix is shared within a tier only, and each
    row keeps its ``bound``."""
    nodes = [exp.column(f"r{j}", quoted=True) for j in range(1, ell + 1)]
    lead = [exp.column("tier", quoted=True)] if bounded else []
    numbers = []
    for j in range(1, ell + 1):
        rank = exp.Window(this=exp.Anonymous(this="dense_rank"), order=exp.Order(
            expressions=[exp.Ordered(this=n.copy()) for n in [*lead, *nodes[:j]]]))
        numbers.append(exp.Case(ifs=[exp.If(
            this=exp.column("size", quoted=True) >= exp.Literal.number(j), true=rank)])
            .as_(f"p{j}", quoted=True))
    kept = [exp.column("bound", quoted=True)] if bounded else []
    return exp.select(exp.column("vid", quoted=True), exp.column("size", quoted=True),
                      *nodes, *numbers, *kept).from_(rows.copy())


def prefix_level(ids: exp.Table, j: int, bounded: bool = False) -> exp.Select:
    """(pid, parent, node): the distinct prefixes of length j of :func:`prefix_ids`, each with
    the number of its prefix of length j - 1 (0 for j = 1) and its last node; with ``bounded``
    also the largest ``bound`` of the itemsets that extend it."""
    parent = exp.column(f"p{j - 1}", quoted=True) if j > 1 else exp.Literal.number(0)
    columns = [exp.column(f"p{j}", quoted=True).as_("pid", quoted=True),
               parent.as_("parent", quoted=True),
               exp.column(f"r{j}", quoted=True).as_("node", quoted=True)]
    where = exp.column("size", quoted=True) >= exp.Literal.number(j)
    if not bounded:
        return exp.select(*columns).distinct().from_(ids.copy()).where(where)
    return (exp.select(*columns, exp.func("max", exp.column("bound", quoted=True))
                       .as_("bound", quoted=True))
            .from_(ids.copy()).where(where)
            .group_by(*(exp.column(c, quoted=True) for c in (f"p{j}", "parent", f"r{j}"))))


def _below_bound(record: exp.Column, bounded: bool) -> list[exp.Expr]:
    """The condition that a record lies below the prefix's bound (none when unbounded)."""
    return [record < _col("p", "bound")] if bounded else []


def prefix_start(prefixes: exp.Table, records: exp.Table, bounded: bool = False) -> exp.Select:
    """(record_id, pid): the records holding the node of each prefix of length 1 (with
    ``bounded``, those below its bound only)."""
    return (exp.select(_col("g", "record_id").as_("record_id", quoted=True),
                       _col("p", "pid").as_("pid", quoted=True))
            .from_(with_alias(prefixes, "p"))
            .join(with_alias(records, "g"), on=exp.and_(
                _col("g", "node_id").eq(_col("p", "node")),
                *_below_bound(_col("g", "record_id"), bounded))))


def prefix_extend(held: exp.Table, prefixes: exp.Table, records: exp.Table,
                  bounded: bool = False) -> exp.Select:
    """(record_id, pid): the records of ``held`` (holding a prefix of length j - 1) that hold
    a prefix of length j extending it: each held row joined with the prefix's extensions, then
    kept where the record holds the extension's node (with ``bounded``, and lies below the
    extension's bound).

    One statement, its joins written in that order (run it under
    ``backend.joins_as_written()``): the candidates (held rows times extensions) stream from
    one join into the next instead of being written as a table first, which at 100,000
    CDR-like users took PostgreSQL most of a level. ``records`` is read once, so no engine can
    join it with itself (a whole chain in one query once let DuckDB do that first: 12 GB for
    480,000 itemsets of size 5 on BMS-WebView-2)."""
    return (exp.select(_col("h", "record_id").as_("record_id", quoted=True),
                       _col("p", "pid").as_("pid", quoted=True))
            .from_(with_alias(held, "h"))
            .join(with_alias(prefixes, "p"), on=exp.and_(
                _col("p", "parent").eq(_col("h", "pid")),
                *_below_bound(_col("h", "record_id"), bounded)))
            .join(with_alias(records, "g"), on=exp.and_(
                _col("g", "record_id").eq(_col("h", "record_id")),
                _col("g", "node_id").eq(_col("p", "node")))))


def prefix_extend_by_records(held: exp.Table, prefixes: exp.Table,
                             records: exp.Table, bounded: bool = False) -> exp.Select:
    """The rows of :func:`prefix_extend`, found the other way: each held record joined with its
    own nodes among the level's, then matched to the small table of the level's prefixes on
    (parent, node). Its intermediate rows are the held rows times the record's nodes among
    the level's (11 a record on average at 1 M CDR-like users), where :func:`prefix_extend`'s
    are the held rows times the prefix's extensions (hundreds for a coarse first node).
    Joins written in that order, as for :func:`prefix_extend`."""
    nodes = exp.select(exp.column("node", quoted=True)).distinct().from_(prefixes.copy())
    return (exp.select(_col("h", "record_id").as_("record_id", quoted=True),
                       _col("p", "pid").as_("pid", quoted=True))
            .from_(with_alias(held, "h"))
            .join(with_alias(records, "g"), on=_col("g", "record_id").eq(_col("h", "record_id")))
            .join(with_alias(prefixes, "p"), on=exp.and_(
                _col("p", "parent").eq(_col("h", "pid")),
                _col("p", "node").eq(_col("g", "node_id")),
                *_below_bound(_col("h", "record_id"), bounded)))
            .where(_col("g", "node_id").isin(query=nodes)))


def prefix_extension_rows(held: exp.Table, prefixes: exp.Table) -> exp.Select:
    """(rows :func:`prefix_extend` joins before its last join, held rows), in one pass over
    ``held``: each held row times its prefix's extensions, and the held rows themselves."""
    extensions = (exp.select(exp.column("parent", quoted=True),
                             exp.func("count", exp.Star()).as_("n", quoted=True))
                  .from_(prefixes.copy()).group_by(exp.column("parent", quoted=True)))
    return (exp.select(exp.func("coalesce", exp.func("sum", _col("e", "n")),
                                exp.Literal.number(0)),
                       exp.func("count", exp.Star()))
            .from_(with_alias(held, "h"))
            .join(extensions.subquery("e"), join_type="left",
                  on=_col("e", "parent").eq(_col("h", "pid"))))


def prefix_record_bound(held: exp.Table, lengths: exp.Table) -> exp.Select:
    """A bound on the rows :func:`prefix_extend_by_records` joins before its last join: each
    held row times its record's length in ``lengths(record_id, len)``, the record's nodes
    among those some itemset holds (a level's nodes are among them, so this is at least each
    held row times its record's nodes among the level's)."""
    return (exp.select(exp.func("coalesce", exp.func("sum", _col("l", "len")),
                                exp.Literal.number(0)))
            .from_(with_alias(held, "h"))
            .join(with_alias(lengths, "l"), on=_col("l", "record_id").eq(_col("h", "record_id"))))


def prefix_counts(held: exp.Table | exp.Select, first: bool = False) -> exp.Select:
    """(pid, n): the records holding each prefix, from a held table or from the statement
    that would make one (the last level is counted as it is found, never written); with
    ``first``, n is the smallest of those records' ids instead of their number."""
    source = held.copy() if isinstance(held, exp.Table) else held.subquery("h")
    value = (exp.func("min", exp.column("record_id", quoted=True)) if first
             else exp.func("count", exp.Star()))
    return (exp.select(exp.column("pid", quoted=True), value.as_("n", quoted=True))
            .from_(source).group_by(exp.column("pid", quoted=True)))


def prefix_supports(ids: exp.Table, counts: dict[int, exp.Table],
                    column: str = "supp") -> exp.Select:
    """(vid, supp): each itemset's support, the count of its whole prefix (``counts[s]`` from
    :func:`prefix_counts` at length s; an itemset no record holds gets no row); ``column``
    names the value (``holder`` where the counts hold first holders)."""
    parts = [exp.select(_col("i", "vid").as_("vid", quoted=True),
                        _col("c", "n").as_(column, quoted=True))
             .from_(with_alias(ids, "i"))
             .join(with_alias(table, "c"), on=_col("c", "pid").eq(_col("i", f"p{size}")))
             .where(_col("i", "size").eq(exp.Literal.number(size)))
             for size, table in sorted(counts.items())]
    query = union_all(parts)
    return exp.select("*").from_(query.subquery("u"))


def prefix_cost(ids: exp.Table, postings: exp.Table, ell: int) -> exp.Select:
    """Rows the prefix plan reads in its first two levels, where the postings are longest:
    the records of each distinct first node, and those again for each distinct second node
    that extends it (``postings(node_id, n)``)."""
    parts = []
    for j in range(1, min(ell, 2) + 1):
        distinct = (exp.select(exp.column(f"p{j}", quoted=True), exp.column("r1", quoted=True))
                    .distinct().from_(ids.copy())
                    .where(exp.column("size", quoted=True) >= exp.Literal.number(j)))
        parts.append(exp.select(exp.func("coalesce", exp.func("sum", _col("o", "n")),
                                         exp.Literal.number(0)).as_("rows", quoted=True))
                     .from_(distinct.subquery("d"))
                     .join(with_alias(postings, "o"),
                           on=_col("o", "node_id").eq(_col("d", "r1"))))
    query = union_all(parts)
    return exp.select(exp.func("sum", exp.column("rows", quoted=True))).from_(
        query.subquery("u"))
