"""Which item type each unsafe rule gives up, and in which order the rules go (Jia et al. Alg. 2
l.5-8), read across each rule's row.

For every unsafe rule q -> e of the current qid buffer the candidates are the item types d of
q + {e}; suppressing k = N_s(d) occurrences of d (Def. 1) makes the rule safe. The heuristic
scores each candidate: H_dist (eq. 5, maximal) or H_mine, minimal leftover(d) · N_s(d) (Def. 2),
written here as h = -leftover(d) · k so that both prefer the largest h. T(t) = n / N is the
share of item type t among the items of T. Footnote 4 divides by |T| (records), but records are
never deleted, so then T(t) <= T0(t) always and eq. 5 could never prefer the over-represented
types "where T(t) > T0(t)" that the text says it targets; over items it can.

A rule's own choice among candidates of equal h and k prefers e: the paper leaves ties open,
and taking e out of a record answers every rule q -> e the record supports, where an item of q
answers only the rules holding it (BMS-WebView-2, first 1,000 records, ``--m 2``, mine: 2,395
occurrences suppressed with the smallest item id as the tie-break, 1,250 so). Then the smaller
item id.

``rnk`` orders the rules by the same heuristic (the sequential algorithm's arg max over all
rules of the buffer), then by k and d, then by rule id. Grouped by d among rules of equal h and
k: under H_mine every untouched item scores the same, and ordering those by rule id
interleaved the d's so that most rules of a long record waited behind a rule suppressing
another of their items (:func:`.suppression.blocked_rules_query`); grouped by d, one round
suppresses each chosen d of a record at once.

Each rule's candidates are columns of its own row (one join with the small item table per
position, as :func:`.incremental.pivot_query` reads X; :func:`scores_query`), and the best is
picked by comparing them (:func:`chosen_query`): an earlier version stacked the (rule,
candidate) rows into a table of their own and ranked them per rule by a window, which sorted
up to width x the rules (6.1M rules in round 6 of whole BMS-WebView-2 at ``--m 3``). The rules
are ranked before they are joined with their rows: PostgreSQL sorted the joined rows, 96 bytes
each, for ``rnk`` and spilled them to disk (2.3M rules, 257 MB; BMS-WebView-2 25k records,
``--m 3``); the ranked rows hold five numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from setanon_sql.models.rho.qids import as_double, col, placeholder
from setanon_sql.models.rho.suppression import suppression_number
from setanon_sql.sqlrender import with_alias


def _score(heuristic: str, item: str, k: exp.Expr) -> exp.Expr:
    """h of a candidate whose item statistics are the join ``item``: larger is better."""
    n, n0 = col("n", item), col("n0", item)
    if heuristic == "mine":
        return exp.Neg(this=exp.paren(exp.Div(this=as_double(n), expression=n0))) * k
    if heuristic != "dist":
        raise ValueError(f"no item choice for heuristic {heuristic!r}")
    # sqlglot writes a Div as it is nested, without parentheses: a / b / (c / d) needs them.
    share = exp.paren(exp.Div(this=as_double(n), expression=col("n", "t")))
    share0 = exp.paren(exp.Div(this=as_double(n0), expression=col("n0", "t")))
    return exp.Div(this=share * exp.func("ln", exp.Div(this=share.copy(), expression=share0)),
                   expression=k)


Key = exp.Expr | int


def _beats(mine: Sequence[Key], other: Sequence[Key], larger: Sequence[bool]) -> exp.Expr | bool:
    """``mine`` comes first in the lexicographic order of the keys; ``larger[i]``: key i in
    descending order. A key that is the same column, or a number, on both sides is decided
    here, so the SQL compares only what differs (``True``/``False``: decided outright)."""
    if not mine:
        return False  # equal keys: not first
    a, b = mine[0], other[0]
    rest = _beats(mine[1:], other[1:], larger[1:])
    if isinstance(a, int) and isinstance(b, int):
        return ((a > b) == larger[0]) if a != b else rest
    assert isinstance(a, exp.Expr) and isinstance(b, exp.Expr)
    if a == b:
        return rest
    ahead = (a.copy() > b.copy()) if larger[0] else (a.copy() < b.copy())
    if rest is True:
        return (a.copy() >= b.copy()) if larger[0] else (a.copy() <= b.copy())
    if rest is False:
        return ahead
    return exp.or_(ahead, exp.and_(a.copy().eq(b.copy()), rest))


def scores_query(rules: exp.Table, istat: exp.Table, width: int, heuristic: str) -> exp.Select:
    """(rule_id, part, sx, xrec, d0..d_{width-1}, k0, kq, h0..h_{width-1}) for every unsafe
    rule of buffer ``:w``: its candidates d0 = e and d_p = q_p (0 where q has fewer items), N_s
    of e (k0) and of an item of q (kq), and each candidate's score h_p. Needs :w, :num, :den.

    A table of its own: inlined into :func:`chosen_query`, PostgreSQL put the whole score
    expression in place of every comparison that names it (about 40 evaluations per rule at
    width 3), 2.5 µs a rule of round 6 of whole BMS-WebView-2 at ``--m 3``.
    """
    positions = range(width)  # 0: e; p >= 1: q_p
    items = [col("e", "r"), *(col(f"q{p}", "r") for p in range(1, width))]
    joined = [f"i{p}" for p in positions]
    k_e = suppression_number(placeholder("den")).as_("k0", quoted=True)
    k_q = suppression_number(placeholder("den") - placeholder("num")).as_("kq", quoted=True)
    scores = [_score(heuristic, joined[p], col("k0" if p == 0 else "kq", "r"))
              .as_(f"h{p}", quoted=True) for p in positions]
    # k0 and kq are computed from the rule's supports in an inner select, so the scores can
    # name them.
    with_k = (exp.select(col("rule_id"), col("part"), col("e"),
                         *(col(f"q{p}") for p in range(1, width)), col("sx"), col("xrec"),
                         k_e, k_q)
              .from_(rules.copy()).where(col("w").eq(placeholder("w"))))
    scored = (exp.select(col("rule_id", "r"), col("part", "r"), col("sx", "r"),
                         col("xrec", "r"),
                         *(item.copy().as_(f"d{p}", quoted=True) for p, item in enumerate(items)),
                         col("k0", "r"), col("kq", "r"), *scores)
              .from_(with_k.subquery("r")))
    for p, item in enumerate(items):
        scored = scored.join(
            with_alias(istat, joined[p]), join_type="left" if p else "inner",
            on=exp.and_(col("part", joined[p]).eq(col("part", "r")),
                        col("item_id", joined[p]).eq(item.copy())))
    if heuristic == "dist":
        totals = (exp.select(col("part"), exp.func("sum", col("n0")).as_("n0", quoted=True),
                             exp.func("sum", col("n")).as_("n", quoted=True))
                  .from_(istat.copy()).group_by(col("part")))
        scored = scored.join(totals.subquery("t"), on=col("part", "t").eq(col("part", "r")))
    return scored


def chosen_query(scores: exp.Table, rules: exp.Table, width: int,
                 collapse: bool = False) -> exp.Select:
    """(d, k, h, rnk, the rule's columns) for every rule in ``scores`` (:func:`scores_query`):
    its best item type d, k = N_s(d), the score h and the rule's priority rnk (1 first).

    The order of a rule's candidates is (h descending, k, e before an item of q, d): the
    candidate taken is the one that comes before every other candidate of the rule.

    ``collapse``: of the rules of one known holder (sx = 1, ``xrec`` not NULL) that choose the
    same d, only the first (the least rule_id) is kept; see :func:`collapsed_rules`.
    """
    positions = range(width)  # 0: e; p >= 1: q_p

    def keys(p: int) -> list[Key]:
        return [col(f"h{p}", "s"), col("k0" if p == 0 else "kq", "s"), 1 if p == 0 else 0,
                col(f"d{p}", "s")]

    order = [True, False, True, False]  # h desc, k, e first (ise desc), d

    def absent(p: int) -> exp.Expr:
        return col(f"d{p}", "s").eq(exp.Literal.number(0))  # q has fewer items than width - 1

    def taken(p: int) -> exp.Expr:
        """Candidate p is there and comes before every other candidate that is there (e
        always is)."""
        conditions: list[exp.Expr] = [exp.not_(absent(p))] if p else []
        for o in positions:
            if o != p:
                wins = _beats(keys(p), keys(o), order)
                assert isinstance(wins, exp.Expr)  # h is a column of its own per position
                conditions.append(exp.or_(absent(o), wins) if o else wins)
        return exp.and_(*conditions)

    best = exp.Case(ifs=[exp.If(this=taken(p), true=exp.Literal.number(p))
                         for p in positions[:-1]], default=exp.Literal.number(width - 1))
    picked = exp.select(col("rule_id", "s"), col("part", "s"), col("sx", "s"), col("xrec", "s"),
                        *(col(f"d{p}", "s") for p in positions),
                        *(col(f"h{p}", "s") for p in positions), col("k0", "s"), col("kq", "s"),
                        best.as_("best", quoted=True)).from_(with_alias(scores, "s"))

    def at_best(name: str) -> exp.Case:
        return exp.Case(ifs=[exp.If(this=col("best", "b").eq(exp.Literal.number(p)),
                                    true=col(f"{name}{p}", "b")) for p in positions[:-1]],
                        default=col(f"{name}{width - 1}", "b"))

    k = exp.Case(ifs=[exp.If(this=col("best", "b").eq(exp.Literal.number(0)),
                             true=col("k0", "b"))], default=col("kq", "b"))
    choice = exp.select(col("rule_id", "b"), col("part", "b"), col("sx", "b"), col("xrec", "b"),
                        at_best("d").as_("d", quoted=True), k.as_("k", quoted=True),
                        at_best("h").as_("h", quoted=True)).from_(picked.subquery("b"))
    if collapse:
        choice = collapsed_rules(choice)
    rank = exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=[
        exp.Ordered(this=col("h"), desc=True), exp.Ordered(this=col("k")),
        exp.Ordered(this=col("d")), exp.Ordered(this=col("rule_id"))]))
    ranked = exp.select(col("rule_id"), col("d"), col("k"), col("h"),
                        exp.cast(rank, "BIGINT").as_("rnk", quoted=True)
                        ).from_(choice.subquery("c"))
    return (exp.select(col("d", "b"), col("k", "b"), col("h", "b"), col("rnk", "b"),
                       exp.Column(this=exp.Star(), table=exp.to_identifier("r", quoted=True)))
            .from_(ranked.subquery("b"))
            .join(with_alias(rules, "r"), on=col("rule_id", "r").eq(col("rule_id", "b"))))


def collapsed_rules(choice: exp.Select) -> exp.Select:
    """(rule_id, d, k, h): ``choice``'s rules (rule_id, part, sx, xrec, d, k, h), where of the
    rules held by one known record (sx = 1, ``xrec``) that choose the same d only the one of
    least rule_id is left.

    Why it changes nothing: such a rule's only member is its holder r, so it picks (r, d) (k = 1,
    as sup(q + {e}) = 1). Every rule of the group has k = 1 and the same h (h depends on d and
    k only), so they rank by rule_id, and each but the first is held back in the round by the
    first one's pick (r, d), an item of its X on its record
    (:func:`.suppression.blocked_rules_query`); its own pick, (r, d) again, ranks behind the
    first's, so it holds back no other rule. The admitted picks are the same; only settling
    (which could admit a held-back rule of the group) would differ, and the caller settles no
    round it collapses. On 200k Quest records at ``--m 3`` the first round of qids of 3 items
    has 23.7M unsafe rules, nearly all of one record each (BENCHMARKS.md, rho).
    """
    one = held_by_one_record()
    holder = exp.Case(ifs=[exp.If(this=one, true=col("xrec"))])
    alone = exp.Case(ifs=[exp.If(this=one.copy(), true=exp.null())], default=col("rule_id"))
    return (exp.select(exp.func("min", col("rule_id")).as_("rule_id", quoted=True), col("d"),
                       col("k"), col("h"))
            .from_(choice.subquery("g"))
            .group_by(col("part"), holder, alone, col("d"), col("k"), col("h")))


def held_by_one_record(rules: str | None = None) -> exp.Expr:
    """A rule (a row of ``rules`` or ``scores``; ``rules``: its alias, if any) whose X one known
    record holds: sx = 1 and ``xrec`` set (:func:`.qids.rules_for_position`)."""
    return exp.and_(col("sx", rules).eq(exp.Literal.number(1)),
                    exp.not_(col("xrec", rules).is_(exp.null())))
