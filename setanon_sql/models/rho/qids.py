"""Qids, their supports and the unsafe rules q -> e, in SQL (Jia et al. Sec. 2.1).

A qid is any non-empty itemset drawn from a record (sensitive items included); the table is safe
w.r.t. ρ iff conf(q -> e) = sup(q + {e}) / sup(q) <= ρ for every qid q and sensitive e ∉ q.
Itemsets are rows of ``width`` columns x1 < x2 < ... in increasing item id, padded with 0 (item
ids are >= 1), so an itemset has exactly one row and joins on all columns. Every itemset X of
size 1..width contained in a record is enumerated level-wise (level k joins level k-1 with the
record's larger items), and its support is the number of records it comes from. A rule q -> e
is then X = q + {e} with a sensitive member e, and q is X without e: both supports are rows of
the same support table, so the whole check is a few joins. Shared with the personalized model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.sqlrender import identifier, union_all, with_alias

# X held by one record, or by two or more (:func:`rules_for_position`).
Holders = Literal["one", "many"]


def col(name: str, table: str | None = None) -> exp.Column:
    """A quoted column reference."""
    return exp.Column(this=identifier(name), table=identifier(table) if table else None)


def placeholder(name: str) -> exp.Placeholder:
    """A ``:name`` parameter bound by the driver."""
    return exp.Placeholder(this=name)


def as_double(value: exp.Expr) -> exp.Cast:
    """``value`` as a float, so an integer division in SQL keeps its fraction."""
    return exp.cast(value, "DOUBLE PRECISION")


def xs(width: int) -> list[str]:
    return [f"x{j}" for j in range(1, width + 1)]


def holds_sensitive(sens: exp.Table, items: list[exp.Expr]) -> exp.Expr:
    """True iff one of ``items`` is a sensitive item type (an OR of IN-subqueries)."""
    tests = [item.copy().isin(query=exp.select(col("item_id")).from_(sens.copy()))
             for item in items]
    return exp.or_(*tests) if len(tests) > 1 else tests[0]


def every_item_sensitive(backend: Backend, items: exp.Table, sens: exp.Table) -> bool:
    """Whether every item type of ``items`` is sensitive (personalized ρ^m with generated E_u:
    every item is a possible consequent). Pruning the levels to the itemsets holding a
    sensitive item then keeps every row, and :func:`through_sensitive` would build the top
    level's join a second time only to keep nothing of it."""
    other = (exp.select(exp.Literal.number(1)).from_(items.copy())
             .where(exp.not_(holds_sensitive(sens, [col("item_id")]))).limit(1))
    return not backend.query(other)


def through_sensitive(query: exp.Select, sens: exp.Table, prefix: list[exp.Expr],
                      added: exp.Expr) -> exp.Query:
    """``query`` (a level's join of the level below, ``prefix``, with one more item, ``added``)
    kept to the itemsets holding a sensitive item, as two joins.

    A prefix that holds one already keeps every extension; any other prefix only those by a
    sensitive item, so that join meets the sensitive occurrences alone. Tested on the joined
    rows, PostgreSQL probed the sensitive set once per prefix item for every extension (level
    4 of whole BMS-WebView-2 at ``--m 3``: 9.4 s per build; as two joins 1.4-1.7 s).
    """
    held = holds_sensitive(sens, prefix)
    return exp.union(query.copy().where(held),
                     query.where(exp.and_(exp.not_(held.copy()),
                                          holds_sensitive(sens, [added]))),
                     distinct=False)


def level_query(cur: exp.Table, previous: exp.Table | None, k: int,
                sens: exp.Table | None = None) -> exp.Query:
    """Level k: one row (part, record_id, x1..xk) per record and k-itemset it contains.

    With ``sens``, only the itemsets holding a sensitive item: a level above the largest qid
    size holds nothing but the X = q + {e} of rules, and every such X holds its consequent e.
    """
    if k == 1:
        first = exp.select(col("part"), col("record_id"),
                           col("item_id").as_("x1", quoted=True)).from_(cur.copy())
        return first if sens is None else first.where(holds_sensitive(sens, [col("item_id")]))
    assert previous is not None
    on = exp.and_(col("record_id", "c").eq(col("record_id", "p")),
                  col("item_id", "c") > col(f"x{k - 1}", "p"))
    query = (exp.select(col("part", "p"), col("record_id", "p"),
                        *(col(x, "p") for x in xs(k - 1)),
                        col("item_id", "c").as_(f"x{k}", quoted=True))
             .from_(with_alias(previous, "p")).join(with_alias(cur, "c"), on=on))
    if sens is None:
        return query
    return through_sensitive(query, sens, [col(x, "p") for x in xs(k - 1)], col("item_id", "c"))


def supports_query(levels: list[exp.Table], width: int) -> exp.Select:
    """(part, x1..x_width, size, n, first_rec): every itemset of every level and its support.

    ``first_rec`` is the first record (in scan order) that generates the itemset: the qid buffer
    it belongs to (Alg. 1 l.5).
    """
    parts: list[exp.Select] = []
    for k, level in enumerate(levels, start=1):
        present = [col(x) for x in xs(k)]
        padding = [exp.Literal.number(0).as_(x, quoted=True) for x in xs(width)[k:]]
        parts.append(
            exp.select(col("part"), *present, *padding,
                       exp.Literal.number(k).as_("size", quoted=True),
                       exp.func("count", exp.Star()).as_("n", quoted=True),
                       exp.func("min", col("record_id")).as_("first_rec", quoted=True))
            .from_(level.copy()).group_by(col("part"), *present))
    query = union_all(parts)
    return exp.select("*").from_(query.subquery("u"))


def qid_buffer(win: exp.Table | None) -> exp.Expr:
    """The column ``w``: the qid buffer of q (alias y), read by :func:`with_qid_buffer`; 0
    without ``win``."""
    return (col("w", "v") if win is not None else exp.Literal.number(0)).as_("w", quoted=True)


def with_qid_buffer(query: exp.Select, win: exp.Table | None) -> exp.Select:
    """``query`` joined with ``win`` (alias v) at q's (alias y) first record, if any."""
    if win is None:
        return query
    return query.join(with_alias(win, "v"), on=exp.and_(
        col("part", "v").eq(col("part", "y")), col("first_rec", "v").eq(col("first_rec", "y"))))


def rules_for_position(supx: exp.Table, sens: exp.Table, win: exp.Table | None, width: int,
                       j: int, max_q: int, x_source: exp.Expr | None = None,
                       y_source: exp.Expr | None = None, counted: bool = True,
                       holders: Holders | None = None, shared_qids: bool = False
                       ) -> exp.Select:
    """Rules whose consequent e is the j-th item of X; q is X without it.

    X is read from ``x_source`` (alias x) and q from ``y_source`` (alias y), by default both
    from ``supx``; :mod:`.incremental` passes the itemsets a round changed instead.
    ``counted``: the supports were just counted in full, so X's ``first_rec`` is the record
    holding X when sup(X) = 1 (column ``xrec``, :func:`.choice.chosen_query`); otherwise
    ``xrec`` is NULL (after a subtraction the first record may no longer hold X).
    ``holders``: only the rules whose X is held by ``"one"`` record or by ``"many"`` (see
    :func:`unnumbered_rules_query`); None, all. ``shared_qids``: only the qids held by two
    records or more (:func:`one_holder_rules_query` makes the others' rules).
    """
    q_source = [f"x{p}" for p in range(1, width + 1) if p != j]
    on_q = [col("part", "y").eq(col("part", "x"))]
    on_q += [col(f"x{p}", "y").eq(col(source, "x")) for p, source in enumerate(q_source, 1)]
    query = (exp.select(col("part", "x"),
                        *(col(source, "x").as_(f"q{p}", quoted=True)
                          for p, source in enumerate(q_source, 1)),
                        col(f"x{j}", "x").as_("e", quoted=True),
                        *(col(x, "x") for x in xs(width)),
                        col("size", "x"), col("n", "x").as_("sx", quoted=True),
                        col("n", "y").as_("sq", quoted=True),
                        qid_buffer(win),
                        (col("first_rec", "x") if counted
                         else exp.cast(exp.null(), "BIGINT")).as_("xrec", quoted=True))
             .from_(x_source or with_alias(supx, "x"))
             .join(with_alias(sens, "s"), on=col("item_id", "s").eq(col(f"x{j}", "x")))
             .join(y_source or with_alias(supx, "y"), on=exp.and_(*on_q)))
    query = with_qid_buffer(query, win)
    # Def.: unsafe iff sup(q + {e}) / sup(q) > ρ = num / den, in integers.
    unsafe = (placeholder("den") * col("n", "x")) > (placeholder("num") * col("n", "y"))
    # y is q itself: its first width - 1 items are q's, and an itemset of fewer than width
    # items pads x_width with 0 (supports_query), so the size bound is all that makes y's
    # x_width 0. Writing "y.x_width = 0" as well made PostgreSQL multiply two selectivities
    # of one fact: it estimated 162 of 2.28M changed itemsets (BMS-WebView-2, --m 3) passed
    # "size <= 2 AND x3 = 0" and planned the join for a handful of rows.
    q_size = exp.convert(min(max_q, width - 1))
    conditions = [col("size", "x") >= exp.Literal.number(2), col("size", "y") <= q_size, unsafe]
    two = exp.Literal.number(2)
    if shared_qids and holders != "many":  # "many": sup(q) >= sup(X) >= 2 already
        conditions.append(col("n", "y") >= two)
    if holders == "many":
        conditions.append(col("n", "x") >= two)
    elif holders == "one":
        # Implied by ``unsafe`` when sup(X) = 1, written so that only the rare qids
        # (sup(q) < den / num) are joined: a filter on y alone.
        conditions += [col("n", "x") < two,
                       (placeholder("num") * col("n", "y")) < placeholder("den")]
    return query.where(exp.and_(*conditions))


def unsafe_rules_query(supx: exp.Table, sens: exp.Table, win: exp.Table | None, width: int,
                       max_q: int, split: bool, holders: OneHolder | None = None
                       ) -> exp.Select:
    """Every unsafe rule q -> e with |q| <= max_q, numbered by (part, e, X).

    Columns rule_id, part, q1..q_{width-1}, e, x1..x_width, size, sx = sup(q + {e}),
    sq = sup(q), w (the qid buffer of q; 0 without ``win``), xrec (the record holding X when
    sx = 1, :func:`rules_for_position`). Needs ``:num`` and ``:den``. ``split`` and
    ``holders``: see :func:`unnumbered_rules_query`.
    """
    return numbered_rules(unnumbered_rules_query(supx, sens, win, width, max_q, split, holders),
                          width)


def unnumbered_rules_query(supx: exp.Table, sens: exp.Table, win: exp.Table | None,
                           width: int, max_q: int, split: bool,
                           holders: OneHolder | None = None) -> exp.Query:
    """:func:`unsafe_rules_query` without rule_id: for a caller that only aggregates the
    rules, numbering them sorted them all for nothing.

    Each position is two joins of X with q, by how many records hold X (the same rules: a
    support is at least 1). A rule whose X one record holds is unsafe only if
    1 / sup(q) > ρ, so only the qids held by fewer than 1 / ρ records are joined with those X;
    a rule whose X more records hold joins only those X. So each join reads one side
    filtered, where one join read every X and every q: at stage 3 of 1M Quest records
    (personalized prho, ``--m 3``), where 94.6% of the unsafe rules have sup(q) = 1, the
    statement took 75.6 s with one join and 62.0 s split, the same rules (BENCHMARKS.md, prho).
    ``split`` False: one join per position, for an engine that plans the split worse; no
    default, so every caller passes its engine's :attr:`.Backend.split_rules_by_holders`.

    ``holders``: the table the supports were just counted from, and ρ. The rules whose q one
    record holds are then made from that record's items (:func:`one_holder_rules_query`),
    and the joins above read only the qids held by two records or more.
    """
    kinds: tuple[Holders | None, ...] = ("one", "many") if split else (None,)
    if holders is not None and holders.rho.denominator <= 2 * holders.rho.numerator:
        # ρ >= 1/2: sup(X) = 1 is unsafe only with sup(q) = 1, all of them made from q's holder.
        kinds = ("many",) if split else (None,)
    parts: list[exp.Query] = [
        rules_for_position(supx, sens, win, width, j, max_q, holders=kind,
                           shared_qids=holders is not None)
        for j in range(1, width + 1) for kind in kinds]
    if holders is not None:
        parts.append(one_holder_rules_query(supx, holders.cur, sens, win, width, max_q))
    return union_all(parts)


@dataclass(frozen=True)
class OneHolder:
    """What :func:`one_holder_rules_query` needs beside the supports: ``cur``, the table
    (part, record_id, item_id) they were counted from (a count from scratch), and ρ."""

    cur: exp.Table
    rho: Fraction


def one_holder_rules_query(supx: exp.Table, cur: exp.Table, sens: exp.Table,
                           win: exp.Table | None, width: int, max_q: int) -> exp.Select:
    """The unsafe rules q -> e whose q one record r holds, from r's items: the rows
    :func:`rules_for_position` gives them, without joining any X.

    sup(q) = 1 and e ∈ r \\ q mean sup(q + {e}) = 1 (r holds it, and no other record holds q),
    so conf = 1 > ρ; and every rule with sup(q) = 1 is of that form. X = q + {e} is in the
    supports (levels above ``max_q`` keep the itemsets holding a sensitive item), held by r
    alone, so its ``first_rec`` (``xrec``) is r, q's ``first_rec``. The join of X with q
    probed every itemset held by one record once per position of e (the largest level: at
    the count of qids of 3 items on 1M Quest records, 94.6% of the 167M unsafe rules have
    sup(q) = 1); this reads each qid held by one record once, with its record's items. That
    stage's unsafe rules took 114.9 s before and 46.4-47.0 s so, the same output (personalized
    prho, ``--m 3``; BENCHMARKS.md, prho).
    X's items in order: the items of q below e, then e, then the rest (``lt`` counts those
    below; q pads with 0 after its items).
    """
    q_width = width - 1
    e = col("item_id", "c")
    below = [exp.Case(ifs=[exp.If(this=exp.and_(col(f"x{i}", "y") > exp.Literal.number(0),
                                                 col(f"x{i}", "y") < e.copy()),
                                  true=exp.Literal.number(1))],
                      default=exp.Literal.number(0)) for i in range(1, q_width + 1)]
    lt: exp.Expr = below[0]
    for term in below[1:]:
        lt = exp.Add(this=lt, expression=term)
    inner = (exp.select(col("part", "y"), *(col(f"x{i}", "y").as_(f"q{i}", quoted=True)
                                            for i in range(1, q_width + 1)),
                        e.as_("e", quoted=True), lt.as_("lt", quoted=True),
                        (col("size", "y") + exp.Literal.number(1)).as_("size", quoted=True),
                        col("n", "y").as_("sx", quoted=True), col("n", "y").as_("sq", quoted=True),
                        qid_buffer(win),
                        col("first_rec", "y").as_("xrec", quoted=True))
             .from_(with_alias(supx, "y"))
             .join(with_alias(cur, "c"), on=exp.and_(
                 col("record_id", "c").eq(col("first_rec", "y")),
                 col("part", "c").eq(col("part", "y"))))
             .join(with_alias(sens, "s"), on=col("item_id", "s").eq(e.copy())))
    inner = with_qid_buffer(inner, win)
    inner = inner.where(exp.and_(
        col("n", "y").eq(exp.Literal.number(1)),
        col("size", "y") <= exp.convert(min(max_q, q_width)),
        *(col(f"x{i}", "y").neq(e.copy()) for i in range(1, q_width + 1)),
        # conf = 1: unsafe iff ρ < 1 (den * 1 > num * 1).
        placeholder("den") > placeholder("num")))

    def x(p: int) -> exp.Expr:
        """X's p-th item: q_p while p items of q are below e, e at lt + 1, then q_{p-1}."""
        lt_at = col("lt", "h")
        after = col(f"q{p - 1}", "h") if p > 1 else exp.Literal.number(0)
        ifs = [exp.If(this=lt_at.copy().eq(exp.Literal.number(p - 1)), true=col("e", "h"))]
        if p <= q_width:  # lt never exceeds q's width
            ifs.insert(0, exp.If(this=lt_at >= exp.Literal.number(p), true=col(f"q{p}", "h")))
        return exp.Case(ifs=ifs, default=after)

    return exp.select(col("part", "h"), *(col(f"q{i}", "h") for i in range(1, q_width + 1)),
                      col("e", "h"), *(x(p).as_(f"x{p}", quoted=True)
                                       for p in range(1, width + 1)),
                      col("size", "h"), col("sx", "h"), col("sq", "h"), col("w", "h"),
                      col("xrec", "h")).from_(inner.subquery("h"))


def numbered_rules(query: exp.Query, width: int) -> exp.Select:
    """``query``'s rules with rule_id = their rank by (part, e, X): the same set, the same ids.

    The rank is the rules of the (part, e) groups before the rule's own, plus its rank by X
    within its group: numbered by one window over the whole table, the rules were sorted in
    one piece (86.1M rules in the first round of qids of 3 items on 1M Quest records, most of
    the 228 s their count took); per group the sort runs in parallel (30M synthetic rules on
    DuckDB: 32.4 s in one piece, 15.3 s by group, the same ids). ``query`` is a CTE read twice;
    DuckDB and PostgreSQL compute it once.
    """
    source = identifier("unnumbered")
    group = [col("part"), col("e")]
    counts = (exp.select(*group, exp.func("count", exp.Star()).as_("n", quoted=True))
              .from_(exp.Table(this=source.copy())).group_by(*(c.copy() for c in group)))
    # With (part, e) unique in counts, the running sum in that order less the group's own n is
    # the number of rules in the groups before it.
    running = exp.Window(this=exp.func("sum", col("n")), order=exp.Order(
        expressions=[exp.Ordered(this=c.copy()) for c in group]))
    offsets = exp.select(*(c.copy() for c in group),
                         (running - col("n")).as_("before", quoted=True)).from_(
        counts.subquery("c"))
    within = exp.Window(this=exp.RowNumber(), partition_by=[col("part", "r"), col("e", "r")],
                        order=exp.Order(expressions=[exp.Ordered(this=col(x, "r"))
                                                     for x in xs(width)]))
    rule_id = exp.cast(col("before", "o") + within, "BIGINT")
    rules = exp.Table(this=source.copy(), alias=exp.TableAlias(this=identifier("r")))
    return (exp.select(rule_id.as_("rule_id", quoted=True),
                       exp.Column(this=exp.Star(), table=identifier("r")))
            .from_(rules)
            .join(offsets.subquery("o"), on=exp.and_(col("part", "o").eq(col("part", "r")),
                                                     col("e", "o").eq(col("e", "r"))))
            .with_(source, as_=query))


def subset_rows(lengths: dict[int, int], width: int) -> int:
    """How many (record, itemset) rows an enumeration up to ``width`` items produces."""
    from math import comb

    return sum(count * sum(comb(length, k) for k in range(1, min(width, length) + 1))
               for length, count in lengths.items())


def build_levels(backend: Backend, table: Callable[[str], exp.Table], cur: exp.Table,
                 width: int, purpose: str, sens: exp.Table | None = None,
                 max_q: int | None = None) -> list[exp.Table]:
    """Materialize the levels ``<purpose>1..<purpose><width>`` of ``cur`` (see
    :func:`level_query`), each built from the one before.

    With ``sens`` and ``max_q``, the levels above ``max_q`` keep only the itemsets holding a
    sensitive item (they can only be the X of a rule); the qid levels are complete.
    """
    levels: list[exp.Table] = []
    for k in range(1, width + 1):
        level = table(f"{purpose}{k}")
        backend.drop_table(level)
        pruned = sens if sens is not None and max_q is not None and k > max_q else None
        backend.materialize(level, level_query(cur, levels[-1] if levels else None, k, pruned),
                            working=True)
        levels.append(level)
    return levels


def build_supports(backend: Backend, table: Callable[[str], exp.Table], cur: exp.Table,
                   width: int, sens: exp.Table | None = None,
                   max_q: int | None = None) -> tuple[list[exp.Table], exp.Table]:
    """Materialize the levels lvl1..lvl_width of ``cur`` and the support table ``supx``.

    ``table(purpose)`` names the work tables (a run's or a verification's; working tables,
    which the caller drops). ``sens`` and ``max_q`` prune the levels above the largest qid
    (see :func:`build_levels`).
    """
    levels = build_levels(backend, table, cur, width, "lvl", sens, max_q)
    supx = table("supx")
    backend.drop_table(supx)
    backend.materialize(supx, supports_query(levels, width), working=True)
    return levels, supx
