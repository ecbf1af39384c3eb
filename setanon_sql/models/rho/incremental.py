"""Supports kept up to date by the delta of a round, instead of recounted (Jia et al. Alg. 2).

Suppressing item d from record R changes only the supports of the itemsets of R that contain d:
each loses exactly one (R's). So after a round, the itemsets of the touched records that hold a
deleted item are enumerated (level-wise, as in :mod:`.qids`, but over the touched records only
and through a deleted item, :func:`lost_level_query`), counted, and subtracted from the support
table: the rest of the table is not recounted. On BMS-WebView-2 (``--m 1``) enumerating and
grouping every record's itemsets was 75% of a round. The records C(X) of a chosen rule are found
from the records of its rarest item, then checked against the current table once per other item
of X (the full level tables are not kept). A qid keeps the buffer it was given when the supports
were last counted in full (``first_rec``); the buffers only order the work, the check that ends
the run is over every buffer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.rho.qids import (
    col,
    holds_sensitive,
    subset_rows,
    through_sensitive,
    xs,
)
from setanon_sql.sqlrender import union_all, with_alias


def touched_query(cur: exp.Table, dels: exp.Table) -> exp.Select:
    """The rows of ``cur`` of every record that loses an occurrence this round, with
    ``gone`` = 1 on the occurrences it loses."""
    touched = exp.select(exp.Literal.number(1)).from_(with_alias(dels, "t")).where(
        col("record_id", "t").eq(col("record_id", "c")))
    gone = exp.Case(ifs=[exp.If(this=col("item_id", "d").is_(exp.null()),
                                true=exp.Literal.number(0))],
                    default=exp.Literal.number(1))
    return (exp.select(col("record_id", "c"), col("item_id", "c"), col("part", "c"),
                       gone.as_("gone", quoted=True))
            .from_(with_alias(cur, "c"))
            .join(with_alias(dels, "d"), on=exp.and_(
                col("record_id", "d").eq(col("record_id", "c")),
                col("item_id", "d").eq(col("item_id", "c"))), join_type="left")
            .where(exp.Exists(this=touched)))


def shrink_histogram_query(cur: exp.Table, dels: exp.Table) -> exp.Select:
    """(length, lost, records): how many records of ``cur`` hold ``length`` items and lose
    ``lost`` of them to ``dels``; records that lose nothing have lost = 0. From it the rows
    of the lost levels and of a count from scratch of the next table are known before either
    is enumerated (:func:`recount_pays`)."""
    per_record = (exp.select(exp.func("count", exp.Star()).as_("length", quoted=True),
                             exp.func("count", col("item_id", "d")).as_("lost", quoted=True))
                  .from_(with_alias(cur, "c"))
                  .join(with_alias(dels, "d"), join_type="left", on=exp.and_(
                      col("record_id", "d").eq(col("record_id", "c")),
                      col("item_id", "d").eq(col("item_id", "c"))))
                  .group_by(col("record_id", "c")))
    return (exp.select(col("length"), col("lost"),
                       exp.func("count", exp.Star()).as_("records", quoted=True))
            .from_(per_record.subquery("r")).group_by(col("length"), col("lost")))


def shrink_rows(histogram: Sequence[tuple[int, int, int]], width: int) -> tuple[int, int]:
    """(lost, left): the (record, itemset) rows of up to ``width`` items that the touched
    records lose, and those every record holds after the round (``histogram``:
    :func:`shrink_histogram_query`). A record of L items that loses j has
    sum_k [C(L, k) - C(L - j, k)] itemsets through a lost item and sum_k C(L - j, k) left."""
    lost = left = 0
    for length, gone, records in histogram:
        after = subset_rows({length - gone: records}, width)
        lost += subset_rows({length: records}, width) - after
        left += after
    return lost, left


def recount_pays(histogram: Sequence[tuple[int, int, int]], width: int) -> bool:
    """Whether counting the next table from scratch enumerates fewer rows than the itemsets
    the touched records lose (:func:`shrink_rows`).

    A round that takes a few items from most records (the first round of qids of 3 items on
    1M Quest records: 3.4M of 8.3M occurrences) loses several times the itemsets the records
    keep, and a count from scratch also finds the unsafe rules by the support table's
    self-join instead of scanning every kept rule against the delta. Rows above ``max_q``
    that the levels prune by S are counted whole on both sides.
    """
    lost, left = shrink_rows(histogram, width)
    return lost > left


def ys(k: int) -> list[str]:
    return [f"y{j}" for j in range(1, k + 1)]


def lost_level_query(tcur: exp.Table, previous: exp.Table | None, k: int,
                     sens: exp.Table | None = None) -> exp.Query:
    """Level k of the itemsets a touched record loses: (part, record_id, a, y1..y_{k-1}).

    A record loses X iff X holds one of its deleted items; ``a`` is the smallest of them and
    Y = X - {a} (increasing) holds no deleted item below ``a``, so each lost (record, X) is
    one row. Enumerating every itemset of the touched records and keeping those with a deleted
    item (as before) grew as C(len, k) for the long records that lose an item or two: the
    itemsets through a deleted item grow as (lost items)·C(len - 1, k - 1). With ``sens``, only
    the itemsets holding a sensitive item (see :func:`.qids.level_query`).
    """
    if k == 1:
        first = (exp.select(col("part"), col("record_id"), col("item_id").as_("a", quoted=True))
                 .from_(tcur.copy()).where(col("gone").eq(exp.Literal.number(1))))
        return first if sens is None else first.where(holds_sensitive(sens, [col("item_id")]))
    assert previous is not None
    conditions = [col("record_id", "c").eq(col("record_id", "p")),
                  col("item_id", "c").neq(col("a", "p")),
                  exp.or_(col("gone", "c").eq(exp.Literal.number(0)),
                          col("item_id", "c") > col("a", "p"))]
    if k > 2:
        conditions.append(col("item_id", "c") > col(f"y{k - 2}", "p"))
    query = (exp.select(col("part", "p"), col("record_id", "p"), col("a", "p"),
                        *(col(y, "p") for y in ys(k - 2)),
                        col("item_id", "c").as_(f"y{k - 1}", quoted=True))
             .from_(with_alias(previous, "p")).join(with_alias(tcur, "c"),
                                                    on=exp.and_(*conditions)))
    if sens is None:
        return query
    return through_sensitive(query, sens, [col("a", "p"), *(col(y, "p") for y in ys(k - 2))],
                             col("item_id", "c"))


def sorted_items(k: int) -> list[exp.Expr]:
    """x1..xk: ``a`` inserted into the increasing y1..y_{k-1}."""
    a = col("a")
    out: list[exp.Expr] = []
    for i in range(1, k + 1):
        ifs: list[exp.If] = []
        if i <= k - 1:
            ifs.append(exp.If(this=col(f"y{i}") < a, true=col(f"y{i}")))
        if i == 1:
            out.append(exp.Case(ifs=ifs, default=a.copy()) if ifs else a.copy())
            continue
        ifs.append(exp.If(this=col(f"y{i - 1}") < a.copy(), true=a.copy()))
        out.append(exp.Case(ifs=ifs, default=col(f"y{i - 1}")))
    return out


def delta_query(levels: list[exp.Table], width: int) -> exp.Select:
    """(part, x1..x_width, dn): how many touched records lose each itemset this round."""
    parts: list[exp.Select] = []
    for k, level in enumerate(levels, start=1):
        itemsets = exp.select(col("part"), *(x.as_(f"x{i}", quoted=True)
                                             for i, x in enumerate(sorted_items(k), 1))
                              ).from_(level.copy())
        present = [col(x) for x in xs(k)]
        padding = [exp.Literal.number(0).as_(x, quoted=True) for x in xs(width)[k:]]
        parts.append(
            exp.select(col("part"), *present, *padding,
                       exp.func("count", exp.Star()).as_("dn", quoted=True))
            .from_(itemsets.subquery("l")).group_by(col("part"), *[c.copy() for c in present]))
    query = union_all(parts)
    return exp.select("*").from_(query.subquery("u"))


def build_lost_levels(backend: Backend, table: Callable[[str], exp.Table], tcur: exp.Table,
                      width: int, sens: exp.Table | None, max_q: int) -> list[exp.Table]:
    """Materialize ``tlvl1..tlvl<width>`` (:func:`lost_level_query`); with ``sens``, levels
    above ``max_q`` keep only itemsets holding a sensitive item, as the support table does."""
    levels: list[exp.Table] = []
    for k in range(1, width + 1):
        level = table(f"tlvl{k}")
        backend.drop_table(level)
        backend.materialize(level, lost_level_query(tcur, levels[-1] if levels else None, k,
                                                    sens if k > max_q else None), working=True)
        levels.append(level)
    return levels


def subtract_statement(supx: exp.Table, delta: exp.Table, width: int) -> exp.Update:
    """sup(X) -= the round's delta, in place: one set-based UPDATE joined to the (small) delta.

    Rewriting the whole support table every round was the largest cost left (BMS-WebView-2,
    ``--m 1``: 0.5 s of a round); the update scans it once and writes only the touched rows.
    Itemsets no record holds any more keep a row with n = 0, which no rule can use: a rule
    needs sup(q + {e}) > ρ·sup(q) >= 0.
    """
    on = exp.and_(col("part", "d").eq(col("part", "s")),
                  *(col(x, "d").eq(col(x, "s")) for x in xs(width)))
    return exp.Update(this=with_alias(supx, "s"),
                      expressions=[exp.EQ(this=exp.column("n", quoted=True),
                                          expression=col("n", "s") - col("dn", "d"))],
                      from_=exp.From(this=with_alias(delta, "d")), where=exp.Where(this=on))


def subtracted_query(supx: exp.Table, delta: exp.Table, width: int) -> exp.Select:
    """The support table less the round's delta, as a new table: ``supx`` left-joined to it.

    The rows :func:`subtract_statement` leaves with a support above 0, for a delta too large to
    update in place (see ``Suppressor._subtract``). An itemset no record holds any more can be
    neither X nor q of a rule (sup(q + {e}) > ρ·sup(q) >= 0 needs both above 0), nor lose a
    record later, so its row is dropped: round 6 of whole BMS-WebView-2 at ``--m 3`` took a
    9.6M-row delta off 16M supports, and every later scan, update and index of the table paid
    for the emptied rows.
    """
    on = exp.and_(col("part", "d").eq(col("part", "s")),
                  *(col(x, "d").eq(col(x, "s")) for x in xs(width)))
    lost = exp.func("coalesce", col("dn", "d"), exp.Literal.number(0))
    left = col("n", "s") - lost
    return (exp.select(col("part", "s"), *(col(x, "s") for x in xs(width)), col("size", "s"),
                       left.as_("n", quoted=True), col("first_rec", "s"))
            .from_(with_alias(supx, "s")).join(with_alias(delta, "d"), on=on, join_type="left")
            .where(left.copy() > exp.Literal.number(0)))


def mismatch_query(kept: exp.Table, fresh: exp.Table, width: int) -> exp.Select:
    """How many itemsets have a different support in ``kept`` and in a full recount ``fresh``."""
    on = exp.and_(col("part", "a").eq(col("part", "b")),
                  *(col(x, "a").eq(col(x, "b")) for x in xs(width)))
    zero = exp.Literal.number(0)
    differs = exp.func("coalesce", col("n", "a"), zero).neq(
        exp.func("coalesce", col("n", "b"), zero.copy()))
    return (exp.select(exp.func("count", exp.Star())).from_(with_alias(kept, "a"))
            .join(with_alias(fresh, "b"), on=on, join_type="full").where(differs))


# The count of a padding position (x_j = 0, no item): above any count, so never the pivot.
NO_ITEM_COUNT = 2**62


def pivot_query(chosen: exp.Table, istat: exp.Table, width: int) -> exp.Select:
    """(rule_id, pivot, n): the item of each chosen rule's X held by the fewest (n) records now.

    C(X) is found from the records of this one item (:func:`member_step_query`). Joining from
    x1, the smallest item id, expanded each rule to every record of what is often a popular
    page (thousands of rows per rule) before the other items filtered them: 43% of a whole
    BMS-WebView-1 ``--m 3`` run. Ties go to the smaller item id (x1 < x2 < ...): x_j is taken
    when its count is at most every later one's, the earlier ones having lost already.

    One row per rule, read across its positions (one join with the small ``istat`` each): an
    earlier version stacked the (rule, item) rows and ranked them per rule by a window, and
    PostgreSQL sorted all of them (6.1M chosen rules, round 6 of whole BMS-WebView-2 at
    ``--m 3``: 24 s).
    """
    counts = [exp.func("coalesce", col("n", f"i{j}"), exp.Literal.number(NO_ITEM_COUNT))
              for j in range(1, width + 1)]
    ifs = [exp.If(this=exp.and_(*(counts[j].copy() <= counts[k].copy()
                                  for k in range(j + 1, width))), true=col(f"x{j + 1}", "c"))
           for j in range(width - 1)]
    pivot = exp.Case(ifs=ifs, default=col(f"x{width}", "c")) if ifs else col("x1", "c")
    query = exp.select(
        col("rule_id", "c"), pivot.as_("pivot", quoted=True),
        exp.func("least", *counts).as_("n", quoted=True)).from_(with_alias(chosen, "c"))
    for j, x in enumerate(xs(width), start=1):
        query = query.join(with_alias(istat, f"i{j}"), join_type="left", on=exp.and_(
            col("part", f"i{j}").eq(col("part", "c")), col("item_id", f"i{j}").eq(col(x, "c"))))
    return query


def member_start_query(chosen: exp.Table, pivots: exp.Table, cur: exp.Table,
                       width: int) -> exp.Select:
    """(rule_id, rnk, x1..x_width, record_id): the records of ``cur`` holding the rule's pivot."""
    return (exp.select(col("rule_id", "c"), col("rnk", "c"), *(col(x, "c") for x in xs(width)),
                       col("record_id", "t"))
            .from_(with_alias(chosen, "c"))
            .join(with_alias(pivots, "p"), on=col("rule_id", "p").eq(col("rule_id", "c")))
            .join(with_alias(cur, "t"), on=exp.and_(col("part", "t").eq(col("part", "c")),
                                                    col("item_id", "t").eq(col("pivot", "p")))))


def gone_query(first_level: exp.Table, cur: exp.Table) -> exp.Select:
    """(part, record_id, item_id): the occurrences suppressed since the level tables were built
    (level 1 is the table as it was then)."""
    kept = exp.select(exp.Literal.number(1)).from_(with_alias(cur, "c")).where(exp.and_(
        col("record_id", "c").eq(col("record_id", "l")), col("item_id", "c").eq(col("x1", "l"))))
    return (exp.select(col("part", "l"), col("record_id", "l"),
                       col("x1", "l").as_("item_id", quoted=True))
            .from_(with_alias(first_level, "l")).where(exp.not_(exp.Exists(this=kept))))


def kept_since(gone: exp.Table | None, items: list[str]) -> list[exp.Expr]:
    """One NOT EXISTS per column of ``items``: the level row ``l``'s record has not lost that
    item since the levels were counted (``gone``, :func:`gone_query`; None: nothing lost)."""
    if gone is None:
        return []
    return [exp.not_(exp.Exists(this=exp.select(exp.Literal.number(1))
                                .from_(with_alias(gone, "g")).where(exp.and_(
                                    col("record_id", "g").eq(col("record_id", "l")),
                                    col("item_id", "g").eq(col(x, "l"))))))
            for x in items]


def member_level_query(chosen: exp.Table, levels: list[exp.Table], gone: exp.Table | None,
                       width: int) -> exp.Select:
    """(rule_id, rnk, x1..x_width, record_id): C(X) of each chosen rule, read from the stage's
    level tables (``levels[k - 1]`` holds every (record, k-itemset) at the last full count, the
    top level those with a sensitive item, as every X of a rule has).

    Records only lose items within a stage, so a record holds X now iff it held X then and has
    lost none of X's items since (``gone``, :func:`gone_query`: small, a few anti-joins). In the
    first rounds of a stage (1.4M chosen rules on the whole BMS-WebView-1) one scan of the
    levels costs less than expanding every rule by the records of its rarest item. ``gone``
    None: nothing was suppressed since the levels were counted.
    """
    parts: list[exp.Select] = []
    for k in range(2, width + 1):
        on = [col("part", "l").eq(col("part", "c"))]
        on += [col(x, "l").eq(col(x, "c")) for x in xs(k)]
        unchanged = kept_since(gone, xs(k))
        parts.append(
            exp.select(col("rule_id", "c"), col("rnk", "c"), *(col(x, "c") for x in xs(width)),
                       col("record_id", "l"))
            .from_(with_alias(chosen, "c"))
            .join(with_alias(levels[k - 1], "l"), on=exp.and_(*on))
            .where(exp.and_(col("size", "c").eq(exp.Literal.number(k)), *unchanged)))
    union = union_all(parts)
    return exp.select("*").from_(union.subquery("u"))


def member_pair_query(chosen: exp.Table, pairs: exp.Table, gone: exp.Table | None,
                      width: int) -> exp.Select:
    """(rule_id, rnk, x1..x_width, record_id): the records that held X's first two items
    (x1, x2) at the last full count (``pairs``, level 2 of the stage, every (record, pair)
    of a record) and have lost neither since (``gone``, :func:`gone_query`; None: nothing
    was suppressed since).

    C(X) for a rule of 2 items; for a longer X, :func:`member_step_query` narrows it by
    x3... A pair is held by no more records than its rarer item, and level 2 is a fraction
    of the levels :func:`member_level_query` scans: on 1M Quest records at ``--m 3``,
    personalized, stage 2's rounds expanded each rule by the records of its rarest item,
    127 member steps in 34 rounds, 170.9 s of the run (BENCHMARKS.md, prho).
    """
    on = exp.and_(col("part", "l").eq(col("part", "c")),
                  col("x1", "l").eq(col("x1", "c")), col("x2", "l").eq(col("x2", "c")))
    unchanged = kept_since(gone, ["x1", "x2"])
    query = (exp.select(col("rule_id", "c"), col("rnk", "c"), *(col(x, "c") for x in xs(width)),
                        col("record_id", "l"))
             .from_(with_alias(chosen, "c")).join(with_alias(pairs, "l"), on=on))
    return query.where(exp.and_(*unchanged)) if unchanged else query


def member_step_query(previous: exp.Table, cur: exp.Table, width: int, j: int) -> exp.Select:
    """The rows of ``previous`` whose record holds x_j too (or whose X has no j-th item).

    One materialized step per item, so that each is a hash join of the (small) candidate rows
    with ``cur`` on (record_id, item_id), in this order: the planner reordering one query
    joined from the popular items first (BENCHMARKS.md, rho, "Whole files at --m 3").
    ``cur`` holds each (record, item) once, so the left join adds no row.
    """
    x = f"x{j}"
    hit = exp.and_(col("record_id", "t").eq(col("record_id", "m")),
                   col("item_id", "t").eq(col(x, "m")))
    return (exp.select(col("rule_id", "m"), col("rnk", "m"), *(col(c, "m") for c in xs(width)),
                        col("record_id", "m"))
            .from_(with_alias(previous, "m"))
            .join(with_alias(cur, "t"), on=hit, join_type="left")
            .where(exp.or_(col(x, "m").eq(exp.Literal.number(0)),
                           exp.not_(col("item_id", "t").is_(exp.null())))))
