"""Supports kept up to date by the delta of a round, instead of recounted (Jia et al. Alg. 2).

Suppressing item d from record R changes only the supports of the itemsets of R that contain d:
each loses exactly one (R's). So after a round, the itemsets of the touched records that hold a
deleted item are enumerated (level-wise, as in :mod:`.qids`, but over the touched records
only), counted, and subtracted from the support table: the rest of the table is copied, not
recounted. On BMS-WebView-2 (``--m 1``) enumerating and grouping every record's itemsets was
75% of a round. The records C(X) of a chosen rule are found from the records of its rarest item,
then checked against the current table once per other item of X (the full level tables are not
kept). A qid keeps the buffer it was given when the
supports were last counted in full (``first_rec``); the buffers only order the work, the check
that ends the run is over every buffer.
"""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.rho.qids import col, placeholder, xs
from setanon_sql.sqlrender import with_alias


def touched_query(cur: exp.Table, dels: exp.Table) -> exp.Select:
    """The rows of ``cur`` of every record that loses an occurrence this round."""
    touched = exp.select(exp.Literal.number(1)).from_(with_alias(dels, "d")).where(
        col("record_id", "d").eq(col("record_id", "c")))
    return (exp.select(col("record_id", "c"), col("item_id", "c"), col("part", "c"))
            .from_(with_alias(cur, "c")).where(exp.Exists(this=touched)))


def delta_query(levels: list[exp.Table], dels: exp.Table, width: int) -> exp.Select:
    """(part, x1..x_width, dn): how many touched records lose each itemset this round.

    A record loses an itemset iff one of the itemset's items is deleted from it.
    """
    parts: list[exp.Select] = []
    for k, level in enumerate(levels, start=1):
        present = [col(x, "l") for x in xs(k)]
        hit = exp.select(exp.Literal.number(1)).from_(with_alias(dels, "d")).where(exp.and_(
            col("record_id", "d").eq(col("record_id", "l")),
            col("item_id", "d").isin(*[c.copy() for c in present])))
        padding = [exp.Literal.number(0).as_(x, quoted=True) for x in xs(width)[k:]]
        parts.append(
            exp.select(col("part", "l"), *(c.as_(c.name, quoted=True) for c in present),
                       *padding, exp.func("count", exp.Star()).as_("dn", quoted=True))
            .from_(with_alias(level, "l")).where(exp.Exists(this=hit))
            .group_by(col("part", "l"), *[c.copy() for c in present]))
    query: exp.Query = parts[0]
    for part in parts[1:]:
        query = exp.union(query, part, distinct=False)
    return exp.select("*").from_(query.subquery("u"))


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


def mismatch_query(kept: exp.Table, fresh: exp.Table, width: int) -> exp.Select:
    """How many itemsets have a different support in ``kept`` and in a full recount ``fresh``."""
    on = exp.and_(col("part", "a").eq(col("part", "b")),
                  *(col(x, "a").eq(col(x, "b")) for x in xs(width)))
    zero = exp.Literal.number(0)
    differs = exp.func("coalesce", col("n", "a"), zero).neq(
        exp.func("coalesce", col("n", "b"), zero.copy()))
    return (exp.select(exp.func("count", exp.Star())).from_(with_alias(kept, "a"))
            .join(with_alias(fresh, "b"), on=on, join_type="full").where(differs))


def pivot_query(chosen: exp.Table, istat: exp.Table, width: int) -> exp.Select:
    """(rule_id, pivot): the item of each chosen rule's X held by the fewest records now.

    C(X) is found from the records of this one item (:func:`member_step_query`). Joining from
    x1, the smallest item id, expanded each rule to every record of what is often a popular
    page (thousands of rows per rule) before the other items filtered them: 43% of a whole
    BMS-WebView-1 ``--m 3`` run. Ties go to the smaller item id.
    """
    parts: list[exp.Select] = []
    for x in xs(width):
        parts.append(
            exp.select(col("rule_id", "c"), col(x, "c").as_("item_id", quoted=True),
                       col("n", "i"))
            .from_(with_alias(chosen, "c"))
            .join(with_alias(istat, "i"), on=exp.and_(col("part", "i").eq(col("part", "c")),
                                                      col("item_id", "i").eq(col(x, "c")))))
    union: exp.Query = parts[0]
    for part in parts[1:]:
        union = exp.union(union, part, distinct=False)
    order = exp.Order(expressions=[exp.Ordered(this=col("n")), exp.Ordered(this=col("item_id"))])
    choice = exp.Window(this=exp.RowNumber(), partition_by=[col("rule_id")], order=order)
    ranked = exp.select(col("rule_id"), col("item_id"), choice.as_("choice", quoted=True)).from_(
        union.subquery("u"))
    return (exp.select(col("rule_id"), col("item_id").as_("pivot", quoted=True))
            .from_(ranked.subquery("r")).where(col("choice").eq(exp.Literal.number(1))))


def member_start_query(chosen: exp.Table, pivots: exp.Table, cur: exp.Table,
                       width: int) -> exp.Select:
    """(rule_id, rnk, x1..x_width, record_id): the records of ``cur`` holding the rule's pivot."""
    return (exp.select(col("rule_id", "c"), col("rnk", "c"), *(col(x, "c") for x in xs(width)),
                       col("record_id", "t"))
            .from_(with_alias(chosen, "c"))
            .join(with_alias(pivots, "p"), on=col("rule_id", "p").eq(col("rule_id", "c")))
            .join(with_alias(cur, "t"), on=exp.and_(col("part", "t").eq(col("part", "c")),
                                                    col("item_id", "t").eq(col("pivot", "p")))))


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


def members_query(backend: Backend, found: exp.Table) -> exp.Select:
    """(rule_id, rnk, record_id, hkey): the records C(X) of each chosen rule, in ``found``.

    ``hkey`` = md5(seed:round:rule:record), compared byte-wise, orders a rule's records at
    random, so the records that lose an item are reproducible from ``:seed`` and the same on
    every backend (Alg. 2 l.13: "pick a record R where R ∈ C(X)").
    """
    text = [exp.cast(placeholder("seed"), "TEXT"), exp.cast(placeholder("round"), "TEXT"),
            exp.cast(col("rule_id", "m"), "TEXT"), exp.cast(col("record_id", "m"), "TEXT")]
    joined: exp.Expr = text[0]
    for piece in text[1:]:
        joined = exp.DPipe(this=exp.DPipe(this=joined, expression=exp.Literal.string(":")),
                           expression=piece)
    hkey = backend.binary_sort_key(exp.func("md5", joined))
    return exp.select(col("rule_id", "m"), col("rnk", "m"), col("record_id", "m"),
                      hkey.as_("hkey", quoted=True)).from_(with_alias(found, "m"))
