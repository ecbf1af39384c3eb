"""Sampled adversaries (u, Q) and their unsafe rules, in SQL (Nakagawa et al. Sec. 5.3).

The paper's distribution on A^ℓ: a record with at least ℓ items uniformly, then ℓ of its items
uniformly. Both draws are made in SQL from the salt: sample s takes the record of rank
md5(salt:s) mod N_ℓ among the records with at least ℓ items (the first 32 bits of the digest:
the modulo's bias is below N_ℓ / 2^32), and the ℓ items with the smallest md5(salt:s:item)
(byte-wise) of the record's ORIGINAL items. A VALUES list of the ranks drawn in Python cost more
to build and render than the query took to run (thousands of literals per ℓ and sweep).
For every sample s the records of D' containing Q are found by counting matched items (no
enumeration of long records), so supp_{D'}(Q) and supp_{D'}(Q + {e}) for every e of those
records are two GROUP BYs.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.prho.constraint import Constraint, md5_text
from setanon_sql.models.prho.rules import TableFn, fresh, rho_params
from setanon_sql.models.rho.qids import col, placeholder
from setanon_sql.sqlrender import union_all, with_alias


def eligible_counts(backend: Backend, items: exp.Table, m: int) -> dict[int, int]:
    """N_ℓ = records of D with at least ℓ items, for ℓ = 1..m (from the length histogram)."""
    lengths = {int(n): int(c) for n, c in backend.query("rho_length_histogram",
                                                        tables={"items": items})}
    return {ell: sum(c for n, c in lengths.items() if n >= ell) for ell in range(1, m + 1)}


def sample(backend: Backend, table: TableFn, items: exp.Table, olen: exp.Table, ell: int,
           count: int, eligible: int, salt: str) -> tuple[exp.Table, exp.Table]:
    """samp(s, record_id) and hits(s, record_id, item_id): adversary s = (u, Q), |Q| = ℓ, for
    s = 1..count, u uniform among the ``eligible`` records with at least ℓ items."""
    s = exp.column("s", table="g", quoted=True)
    series = exp.func("generate_series", exp.cast(exp.Literal.number(1), "BIGINT"),
                      exp.cast(placeholder("count"), "BIGINT"))
    draws = exp.select(s.as_("s", quoted=True), exp.Mod(
        this=backend.hex_prefix_value(md5_text(placeholder("salt"), s)),
        expression=exp.cast(placeholder("eligible"), "BIGINT")).as_("rk", quoted=True)).from_(
        exp.Table(this=series, alias=exp.TableAlias(this=exp.to_identifier("g", quoted=True),
                                                    columns=[exp.to_identifier("s", quoted=True)])))
    order = exp.Order(expressions=[exp.Ordered(this=col("record_id"))])
    long_enough = (exp.select(col("record_id"),
                              (exp.Window(this=exp.RowNumber(), order=order)
                              - exp.Literal.number(1)).as_("rk", quoted=True))
                   .from_(olen.copy()).where(col("len") >= placeholder("l")))
    samp = fresh(backend, table, "samp")
    backend.materialize(samp, exp.select(col("s", "v"), col("record_id", "e"))
                        .from_(draws.subquery("v"))
                        .join(long_enough.subquery("e"), on=col("rk", "e").eq(col("rk", "v"))),
                        {"l": ell, "count": count, "eligible": eligible, "salt": salt})
    key = backend.binary_sort_key(md5_text(placeholder("salt"), col("s", "p"),
                                           col("item_id", "b")))
    pick = exp.Window(this=exp.RowNumber(), partition_by=[col("s", "p")],
                      order=exp.Order(expressions=[exp.Ordered(this=key),
                                                   exp.Ordered(this=col("item_id", "b"))]))
    ranked = (exp.select(col("s", "p"), col("record_id", "p"), col("item_id", "b"),
                         pick.as_("pick", quoted=True))
              .from_(with_alias(samp, "p"))
              .join(with_alias(items, "b"), on=col("record_id", "b").eq(col("record_id", "p"))))
    hits = fresh(backend, table, "hits")
    backend.materialize(hits, exp.select(col("s"), col("record_id"), col("item_id"))
                        .from_(ranked.subquery("r")).where(col("pick") <= placeholder("l")),
                        {"salt": salt, "l": ell})
    return samp, hits


def cover_query(cur: exp.Table, hits: exp.Table, istat0: exp.Table, ell: int) -> exp.Select:
    """(s, v): the records v of D' that contain Q of sample s (|Q| = ``ell``).

    Q's items are pivoted rarest first in D (istat0): r1..r_ell. The candidates are the
    records holding r1, and each further item is one join on (record_id, item_id) that keeps
    only the candidates holding it, so the next join probes the survivors alone. (Joining
    every item of Q with all its records made PostgreSQL aggregate millions of rows for
    popular items; probing every candidate with all ell items and counting the matches took
    3.3 s of a grocery-sized run's statements at m = 5, against 1.2 s so. As plain joins,
    DuckDB joined the working table to itself on record_id first.) Run it inside
    ``backend.joins_as_written()``: an engine without statistics for the pivot may start
    from another item than the rarest.
    """
    rarest = exp.Window(this=exp.RowNumber(), partition_by=[col("s", "h")],
                        order=exp.Order(expressions=[exp.Ordered(this=col("n0", "i")),
                                                     exp.Ordered(this=col("item_id", "h"))]))
    ranked = (exp.select(col("s", "h"), col("item_id", "h"), rarest.as_("j", quoted=True))
              .from_(with_alias(hits, "h"))
              .join(with_alias(istat0, "i"), on=col("item_id", "i").eq(col("item_id", "h"))))
    pivot = exp.select(col("s"), *(
        exp.func("max", exp.Case().when(col("j").eq(exp.Literal.number(j)), col("item_id")))
        .as_(f"r{j}", quoted=True) for j in range(1, ell + 1))).from_(
        ranked.subquery("n")).group_by(col("s"))
    query = (exp.select(col("s", "q"), col("record_id", "c1").as_("v", quoted=True))
             .from_(pivot.subquery("q"))
             .join(with_alias(cur, "c1"), on=col("item_id", "c1").eq(col("r1", "q"))))
    for j in range(2, ell + 1):
        query = query.where(exp.Exists(this=exp.select(exp.Literal.number(1)).from_(
            with_alias(cur, f"c{j}")).where(exp.and_(
                col("record_id", f"c{j}").eq(col("record_id", "c1")),
                col("item_id", f"c{j}").eq(col(f"r{j}", "q"))))))
    return query


def q_columns(hits: exp.Table, width: int) -> exp.Select:
    """(s, q1..q_width): the items of sample s's Q in item order, 0 past |Q|."""
    ordered = exp.Window(this=exp.RowNumber(), partition_by=[col("s")],
                         order=exp.Order(expressions=[exp.Ordered(this=col("item_id"))]))
    numbered = exp.select(col("s"), col("item_id"), ordered.as_("j", quoted=True)).from_(
        hits.copy())
    return exp.select(col("s"), *(
        exp.func("coalesce", exp.func("max", exp.Case().when(
            col("j").eq(exp.Literal.number(j)), col("item_id"))), exp.Literal.number(0))
        .as_(f"q{j}", quoted=True) for j in range(1, width + 1))).from_(
        numbered.subquery("n")).group_by(col("s"))


def distinct_qids(backend: Backend, table: TableFn, hits: exp.Table,
                  ell: int) -> tuple[exp.Table, exp.Table]:
    """smap(s, q): sample s asks about the q-th distinct Q; qhits(s, item_id): the items of Q
    number s. Samples share their Q often (every sample of ℓ = 1 asks about one of the items,
    popular ones most), and supp(Q) and supp(Q + {e}) depend on Q alone: only E_u is the
    sample's own, so the supports are counted once per distinct Q."""
    order = exp.Order(expressions=[exp.Ordered(this=col(f"q{j}")) for j in range(1, ell + 1)])
    smap = fresh(backend, table, "smap")
    backend.materialize(smap, exp.select(
        col("s"), exp.Window(this=exp.func("dense_rank"), order=order).as_("q", quoted=True))
        .from_(q_columns(hits, ell).subquery("p")))
    qhits = fresh(backend, table, "qhits")
    backend.materialize(qhits, exp.select(col("q", "m").as_("s", quoted=True),
                                          col("item_id", "h")).distinct()
                        .from_(with_alias(smap, "m"))
                        .join(with_alias(hits, "h"), on=col("s", "h").eq(col("s", "m"))))
    return smap, qhits


def unsafe_adversaries(backend: Backend, table: TableFn, cur: exp.Table, samp: exp.Table,
                       hits: exp.Table, istat0: exp.Table, constraint: Constraint, ell: int,
                       rho: Fraction) -> exp.Table:
    """unsafe(s, e, sx, sq): e ∈ E_u \\ Q with conf_{D'}(Q -> e) = sx / sq > ρ (Alg. 2 l.8).

    The supports are counted per distinct Q (:func:`distinct_qids`), the rules above ρ then
    joined back to every sample asking about that Q, and kept where e ∈ E_u of its record.
    """
    smap, qhits = distinct_qids(backend, table, hits, ell)
    cover = fresh(backend, table, "cover")
    with backend.joins_as_written():
        backend.materialize(cover, cover_query(cur, qhits, istat0, ell))
    sq = (exp.select(col("s"), exp.func("count", exp.Star()).as_("n", quoted=True))
          .from_(cover.copy()).group_by(col("s")))
    in_q = (exp.select(exp.Literal.number(1)).from_(with_alias(qhits, "h"))
            .where(exp.and_(col("s", "h").eq(col("s", "cv")),
                            col("item_id", "h").eq(col("item_id", "c")))))
    px = (exp.select(col("s", "cv"), col("item_id", "c").as_("e", quoted=True),
                     exp.func("count", exp.Star()).as_("sx", quoted=True))
          .from_(with_alias(cover, "cv"))
          .join(with_alias(cur, "c"), on=col("record_id", "c").eq(col("v", "cv")))
          .where(exp.not_(exp.Exists(this=in_q)))
          .group_by(col("s", "cv"), col("item_id", "c")))
    above = (exp.select(col("s", "x").as_("q", quoted=True), col("e", "x"), col("sx", "x"),
                        col("n", "y").as_("sq", quoted=True))
             .from_(px.subquery("x"))
             .join(sq.subquery("y"), on=col("s", "y").eq(col("s", "x")))
             .where(placeholder("den") * col("sx", "x") > placeholder("num") * col("n", "y")))
    # The rules above ρ first, as a table of their own: few of the (Q, e) pairs are, and the
    # membership test e ∈ E_u may hash every row it sees (personalized settings). In one
    # statement PostgreSQL, estimating 422 pairs where there were 279k, hashed 392k rows of
    # which 1,789 were above ρ (1.2 s of a grocery-sized run's statement at ℓ = 2).
    rules = fresh(backend, table, "above")
    backend.materialize(rules, above, rho_params(rho))
    query = (exp.select(col("s", "m"), col("e", "a"), col("sx", "a"), col("sq", "a"))
             .from_(with_alias(rules, "a"))
             .join(with_alias(smap, "m"), on=col("q", "m").eq(col("q", "a")))
             .join(with_alias(samp, "sp"), on=col("s", "sp").eq(col("s", "m"))))
    query = constraint.member_filter(backend, query, col("record_id", "sp"), col("e", "a"))
    unsafe = fresh(backend, table, "unsafe")
    backend.materialize(unsafe, query, constraint.params())
    for work in (cover, smap, qhits, rules):
        backend.drop_table(work)
    return unsafe


def rules_query(unsafe: Sequence[tuple[exp.Table, exp.Table, int]], m: int) -> exp.Select:
    """The distinct rules Q -> e of the unsafe samples, as rows of the ρ model's rule table.

    ``unsafe``: (unsafe, hits, ℓ) of each size whose rules are wanted; the sizes' rules go in
    one table (a Q of ℓ items makes a rule of size ℓ + 1). Columns rule_id, part, q1..q_m, e,
    x1..x_{m+1} (Q + {e} in item order, 0-padded), size, sx, sq, w; x_j = q_j before e's place
    p, e at p + 1, q_{j-1} after.
    """
    qs = [col(f"q{j}", "p") for j in range(1, m + 1)]
    per_size = [exp.select(*qs, col("e", "u"), col("sx", "u"), col("sq", "u"),
                           exp.Literal.number(ell + 1).as_("size", quoted=True)).distinct()
                .from_(with_alias(table, "u"))
                .join(q_columns(hits, m).subquery("p"), on=col("s", "p").eq(col("s", "u")))
                for table, hits, ell in unsafe]
    distinct = union_all(per_size)
    before: exp.Expr = exp.Literal.number(0)
    for j in range(1, m + 1):
        before = before + exp.Case().when(exp.and_(col(f"q{j}").neq(exp.Literal.number(0)),
                                                   col(f"q{j}") < col("e")),
                                          exp.Literal.number(1)).else_(exp.Literal.number(0))
    place = exp.paren(before)
    xcols = []
    for j in range(1, m + 2):
        later = col(f"q{j - 1}") if j >= 2 else exp.Literal.number(0)
        here = col(f"q{j}") if j <= m else exp.Literal.number(0)
        xcols.append(exp.Case().when(exp.LTE(this=exp.Literal.number(j), expression=place),
                                     here)
                     .when(exp.EQ(this=exp.Literal.number(j),
                                  expression=place + exp.Literal.number(1)), col("e"))
                     .else_(later).as_(f"x{j}", quoted=True))
    order = exp.Order(expressions=[exp.Ordered(this=col("e")),
                                   *(exp.Ordered(this=col(f"q{j}")) for j in range(1, m + 1))])
    return exp.select(
        exp.cast(exp.Window(this=exp.RowNumber(), order=order), "BIGINT")
        .as_("rule_id", quoted=True),
        exp.cast(exp.Literal.number(0), "BIGINT").as_("part", quoted=True),
        *(col(f"q{j}") for j in range(1, m + 1)), col("e"), *xcols,
        col("size"), col("sx"), col("sq"),
        exp.Literal.number(0).as_("w", quoted=True)).from_(distinct.subquery("d"))
