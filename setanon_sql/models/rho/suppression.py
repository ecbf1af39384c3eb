"""How many occurrences to suppress for a rule, and from which records (Jia et al. Def. 1, Alg. 2).

Shared with the personalized model: the suppression number N_s, the candidates d of a rule,
which rules one round sanitizes together, and the picks of those rules.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.rho.pickkey import pick_key
from setanon_sql.models.rho.qids import col, placeholder, xs
from setanon_sql.sqlrender import union_all, with_alias


def rho_fraction(rho: float | str | Fraction) -> Fraction:
    """ρ as an exact fraction num/den, so that every confidence test is in integers."""
    value = Fraction(str(rho)) if not isinstance(rho, Fraction) else rho
    return value.limit_denominator(10**6)


def suppression_number(divisor: exp.Expr) -> exp.Expr:
    """⌈(den·sup(q + {e}) - num·sup(q)) / divisor⌉: Def. 1 with ρ = num/den.

    Suppressing k occurrences of e makes (sx - k) / sq <= ρ: k >= sx - ρ·sq (divisor den).
    Suppressing k occurrences of t ∈ q makes (sx - k) / (sq - k) <= ρ: k >= (sx - ρ·sq) / (1 - ρ)
    (divisor den - num). The quotient of two integers below 2^53 is exact enough for ceil.
    """
    excess = placeholder("den") * col("sx") - placeholder("num") * col("sq")
    return exp.cast(exp.func("ceil", exp.Div(this=exp.cast(excess, "DOUBLE PRECISION"),
                                             expression=exp.paren(divisor))), "BIGINT")


def candidates_query(rules: exp.Table, width: int) -> exp.Select:
    """(rule_id, part, d, k, ise) for every d ∈ q + {e} of the rules of buffer ``:w``; k = N_s(d),
    ise = 1 for d = e."""
    in_buffer = col("w").eq(placeholder("w"))
    parts: list[exp.Select] = [
        exp.select(col("rule_id"), col("part"), col("e").as_("d", quoted=True),
                   suppression_number(placeholder("den")).as_("k", quoted=True),
                   exp.Literal.number(1).as_("ise", quoted=True))
        .from_(rules.copy()).where(in_buffer)
    ]
    for p in range(1, width):
        parts.append(
            exp.select(col("rule_id"), col("part"), col(f"q{p}").as_("d", quoted=True),
                       suppression_number(placeholder("den") - placeholder("num"))
                       .as_("k", quoted=True), exp.Literal.number(0).as_("ise", quoted=True))
            .from_(rules.copy())
            .where(exp.and_(in_buffer, col(f"q{p}").neq(exp.Literal.number(0)))))
    query = union_all(parts)
    return exp.select("*").from_(query.subquery("c"))


def blocked_rules_query(chosen: exp.Table, members: exp.Table, picks: exp.Table,
                        width: int, x_in_members: bool = False) -> exp.Select:
    """Ids of the rules that wait for a later round: those where a rule of higher rank would
    suppress an item of X from a record of C(X).

    ``picks`` (record_id, item_id, rule_id, rnk) holds the occurrences every rule would
    suppress if admitted. Why the admitted rules then act as if taken one after the other
    (Alg. 2 l.5-14, arg max first): rule A deletes d_A from its picks. That changes sup(X_B) or
    sup(q_B) of a lower rule B only where a picked record holds d_A ∈ X_B. If d_A ∉ X_B, B's
    supports, N_s and records are what the sequential algorithm would see after A. If d_A ∈ q_B
    and the record holds q_B but not e_B, only sup(q_B) falls: B's confidence rises, so B is
    under- rather than over-sanitized and comes back next round. The one case where doing B now
    could suppress more than needed is a pick of A in C(X_B) with d_A ∈ X_B: those B are
    blocked here (also when A is itself blocked: waiting is always safe). An earlier version
    blocked every rule sharing any record of C(X) with a higher one; at ``--m 2`` a long
    record holds thousands of unsafe rules, and a popular item's rules claimed every record
    they hold, so a round admitted about one rule per record and full BMS-WebView-1 needed
    thousands of rounds. ``tops`` holds, per (record, item), the best rank of a rule picking
    it, so the query stays linear in the member rows (no self-join of members on record).

    The (member, item of X) rows are a UNION ALL of one join of members with chosen per
    position, joined with ``tops`` only after it: a planner cannot move that join into the
    union's branches. Joined per position, PostgreSQL joined ``tops`` with chosen on the item
    first (auto_explain, BMS-WebView-2 25k records, --m 3, 2.3M unsafe rules: 100M rows for
    x1, 68M for x3; 145 s against 4.8 s for the branch it planned the other way).
    ``x_in_members``: ``members`` carries each rule's x1..x_width (:func:`held_query`).
    """
    tops = (exp.select(col("record_id"), col("item_id"),
                       exp.func("min", col("rnk")).as_("top", quoted=True))
            .from_(picks.copy()).group_by(col("record_id"), col("item_id")))
    return _overtaken(held_query(chosen, members, width, x_in_members=x_in_members)
                      .subquery("u"), tops)


def held_query(chosen: exp.Table, members: exp.Table, width: int,
               only: exp.Table | None = None, x_in_members: bool = False) -> exp.Query:
    """(rule_id, record_id, rnk, item_id): every record of C(X) of a chosen rule with every item
    of X, for the rules in ``only`` (rule_id) if given.

    A UNION ALL of one branch per position; a planner cannot move a later join into the
    union's branches (see :func:`blocked_rules_query`). A branch joins members with chosen for
    the rule's x_p, or, with ``x_in_members`` (the members carry x1..x_width, as the rho model's
    member routes write them), reads it from the members alone. PostgreSQL, 14.2M members of
    1.06M rules against a 975k-row ``tops`` (a replica of whole BMS-WebView-1's widest round in
    psql, EXPLAIN ANALYZE): 26.4 s with the three joins, 14.9 s without.
    """
    parts: list[exp.Select] = []
    for x in xs(width):
        source = "m" if x_in_members else "c"
        part = (exp.select(col("rule_id", "m"), col("record_id", "m"), col("rnk", "m"),
                           col(x, source).as_("item_id", quoted=True))
                .from_(with_alias(members, "m"))
                .where(col(x, source).neq(exp.Literal.number(0))))
        if not x_in_members:
            part = part.join(with_alias(chosen, "c"),
                             on=col("rule_id", "c").eq(col("rule_id", "m")))
        if only is not None:
            part = part.join(with_alias(only, "o"), on=col("rule_id", "o").eq(col("rule_id", "m")))
        parts.append(part)
    held = union_all(parts)
    return held


def _overtaken(held: exp.Expr, tops: exp.Select) -> exp.Select:
    """Ids of the rules of ``held`` (aliased u) with a (record, item) where ``tops`` (record_id,
    item_id, top) has a pick of a higher rank (a smaller rnk) than the rule's own."""
    tops_f = exp.Table(this=exp.to_identifier("tops", quoted=True),
                       alias=exp.TableAlias(this=exp.to_identifier("f", quoted=True)))
    return (exp.select(col("rule_id", "u")).distinct().from_(held)
            .join(tops_f, on=exp.and_(col("record_id", "f").eq(col("record_id", "u")),
                                      col("item_id", "f").eq(col("item_id", "u"))))
            .where(col("top", "f") < col("rnk", "u"))
            .with_(exp.to_identifier("tops", quoted=True), as_=tops))


def _in(table: exp.Table, alias: str, outer: str) -> exp.Exists:
    """EXISTS a row of ``table`` (rule_id) for the rule of ``outer``."""
    return exp.Exists(this=exp.select(exp.Literal.number(1)).from_(with_alias(table, alias))
                      .where(col("rule_id", alias).eq(col("rule_id", outer))))


def _tops(picks: exp.Table, where: exp.Expr) -> exp.Select:
    """(record_id, item_id, top): the best rank of a pick of each (record, item), among the
    picks of the rules ``where`` selects (the picks are aliased p)."""
    return (exp.select(col("record_id", "p"), col("item_id", "p"),
                       exp.func("min", col("rnk", "p")).as_("top", quoted=True))
            .from_(with_alias(picks, "p")).where(where)
            .group_by(col("record_id", "p"), col("item_id", "p")))


def rejected_rules_query(waiting: exp.Table, open_rules: exp.Table, held: exp.Table,
                         picks: exp.Table) -> exp.Select:
    """Ids of the open rules that an admitted rule (one not in ``waiting``) of higher rank
    overtakes: it suppresses an item of their X from a record of their C(X), so they wait for
    a later round whatever else is admitted. ``held``: :func:`held_query` of (at least) the
    open rules."""
    admitted = exp.not_(_in(waiting, "w", "p"))
    open_held = exp.select("*").from_(with_alias(held, "h")).where(_in(open_rules, "o", "h"))
    return _overtaken(open_held.subquery("u"), _tops(picks, admitted))


def still_open_query(open_rules: exp.Table, rejected: exp.Table, held: exp.Table,
                     picks: exp.Table) -> exp.Select:
    """Ids of the open rules, not ``rejected`` in this step, that another such rule of higher
    rank overtakes: they stay open. ``held``: :func:`held_query` of (at least) the open rules.

    One no such rule overtakes is admitted: every rule of higher rank that takes one of its
    items from one of its records is rejected or waits, so it will not act this round.
    """
    live = exp.and_(_in(open_rules, "o", "p"), exp.not_(_in(rejected, "r", "p")))
    live_held = (exp.select("*").from_(with_alias(held, "h"))
                 .where(exp.and_(_in(open_rules, "o", "h"), exp.not_(_in(rejected, "r", "h")))))
    return _overtaken(live_held.subquery("u"), _tops(picks, live))


# settle narrows the held rows to the open rules once the open ones are at most 1/NARROW_SHARE
# of the rules the rows cover, so that a step that admits or rejects few does not rewrite them.
# Open rules mostly halve in a step, so it narrows nearly as often as after every step: whole
# BMS-WebView-1 at --m 3 took 82.9 s on DuckDB and 480.8 s on PostgreSQL, narrowed after every
# step 81.2 and 557.6 s, single runs in which PostgreSQL's untouched statements moved by as
# much (BENCHMARKS.md, rho).
NARROW_SHARE = 2


def _ids(table: exp.Table) -> exp.Select:
    """The rule ids of ``table``."""
    return exp.select(col("rule_id")).from_(table.copy())


def settle(backend: Backend, fresh: Callable[[str], exp.Table], chosen: exp.Table,
           members: exp.Table, picks: exp.Table, blocked: exp.Table, width: int,
           max_blocked: int | None = None, x_in_members: bool = False) -> tuple[exp.Table, int]:
    """The rules that wait this round, and how many settling steps it took: of the ``blocked``
    ones (:func:`blocked_rules_query`), those that the rules admitted in rank order would
    still overtake. ``fresh(purpose)`` names an empty work table.

    ``blocked`` waits for every rule of higher rank that would take one of its items from one
    of its records, also for one that itself waits; such a rule could wait a round for
    nothing. Every blocked rule starts open. Each step rejects the open rules an admitted one
    overtakes (:func:`rejected_rules_query`) and admits the open rules that no other open one
    overtakes (:func:`still_open_query`); it ends when no rule is open or a step admits none.
    That is taking the rules one by one in rank order and skipping each that an earlier taken
    one overtakes; each step admits at least the best-ranked open rule, so it ends. The
    admitted rules still act as if taken one after the other: every rule of higher rank that
    overtakes an admitted one waits. Alg. 2 l.3 picks the unsafe qids in any order, so the
    skipped rules may go later. On 1M Quest records at ``--m 3``, stage 2 (qids of up to 2
    items) took 85 rounds, 452.6 s, when every held-back rule waited, and 34 rounds, 201.2 s,
    settled, with 1.1% fewer suppressions (BENCHMARKS.md, rho).

    A rejected or admitted rule stays so (the admitted rules only grow), so a step reads the
    held rows of the open rules only, narrowed once the open rules are at most 1/NARROW_SHARE
    of those the rows cover. Whole BMS-WebView-1 at ``--m 3`` on DuckDB, settling rounds of up
    to 977k blocked rules (11 steps): settling's statements took 43.3 s when each step re-read
    every blocked rule's rows, 16.3 s narrowed after every step (the same output;
    BENCHMARKS.md, rho). ``max_blocked``: settle only a round that holds
    back at most this many rules. ``x_in_members``: see :func:`held_query`.
    """

    def count(table: exp.Table) -> int:
        return int(backend.scalar("rho_count_rows", tables={"t": table}))

    size = count(blocked)
    if size == 0 or (max_blocked is not None and size > max_blocked):
        return blocked, 0

    def discard(table: exp.Table) -> None:
        if table is not blocked:
            backend.drop_table(table)

    held = fresh("held")
    backend.materialize(held, held_query(chosen, members, width, only=blocked,
                                         x_in_members=x_in_members), working=True)
    waiting, open_rules, steps, held_rules, narrowings = blocked, blocked, 0, size, 0
    # No nested loops: most open rules are often rejected, PostgreSQL then estimates 1 row for
    # "open and not rejected" and scanned the picks per held row (a step of whole
    # BMS-WebView-1 at --m 3 ran for over 4 minutes; hashed: 0.5 s).
    with backend.hash_joins_only():
        while True:
            steps += 1
            rejected = fresh("rejected")
            backend.materialize(rejected, rejected_rules_query(waiting, open_rules, held, picks),
                                working=True)
            still = fresh(f"open{steps % 2}")
            backend.materialize(still, still_open_query(open_rules, rejected, held, picks),
                                working=True)
            left = count(still)
            admitted = size - count(rejected) - left
            if admitted == 0:
                backend.drop_table(rejected)
                backend.drop_table(still)
                break
            following = fresh(f"waiting{steps % 2}")
            kept = (exp.select(col("rule_id", "v")).from_(with_alias(waiting, "v"))
                    .where(exp.not_(_in(open_rules, "o", "v"))))
            backend.materialize(following, union_all([kept, _ids(rejected), _ids(still)]),
                                working=True)
            backend.drop_table(rejected)
            discard(waiting)
            waiting = following
            if left == 0:
                backend.drop_table(still)
                break
            if left * NARROW_SHARE <= held_rules:
                narrowings += 1
                narrowed = fresh(f"held{narrowings % 2}")
                backend.materialize(narrowed, exp.select("*").from_(with_alias(held, "h"))
                                    .where(_in(still, "s", "h")), working=True)
                backend.drop_table(held)
                held, held_rules = narrowed, left
            discard(open_rules)
            open_rules, size = still, left
    backend.drop_table(held)
    discard(open_rules)
    return waiting, steps


def picks_query(chosen: exp.Table, members: exp.Table) -> exp.Select:
    """(record_id, item_id, rule_id, rnk): k = N_s(d) random records of every rule lose d.

    A rule's records (``members``: rule_id, record_id) are ordered by :func:`.pickkey.pick_key`
    (salted by ``:salt`` of the seed and round), then record_id, so the records that lose an
    item are reproducible from the seed and the same on every backend (Alg. 2 l.13: "pick a
    record R where R ∈ C(X)"). The key is computed in the window, not written with the
    members, and the window sorts the members' two ids only; k comes from ``chosen`` after it.
    PostgreSQL, 14.2M members of 1.06M rules (whole BMS-WebView-1's widest round at --m 3):
    writing the keyed members (8.2 s) then ranking them joined with ``chosen`` (19.9 s)
    took 28.1 s, this 16.4 s, the same picks (a replica in psql; BENCHMARKS.md, rho).
    """
    key = pick_key(col("rule_id", "m"), col("record_id", "m"))
    order = exp.Order(expressions=[exp.Ordered(this=key), exp.Ordered(this=col("record_id", "m"))])
    pick = exp.Window(this=exp.RowNumber(), partition_by=[col("rule_id", "m")], order=order)
    ranked = (exp.select(col("rule_id", "m"), col("record_id", "m"), pick.as_("pick", quoted=True))
              .from_(with_alias(members, "m")))
    return (exp.select(col("record_id", "r"), col("d", "c").as_("item_id", quoted=True),
                       col("rule_id", "c"), col("rnk", "c"))
            .from_(ranked.subquery("r"))
            .join(with_alias(chosen, "c"), on=col("rule_id", "c").eq(col("rule_id", "r")))
            .where(col("pick", "r") <= col("k", "c")))


def admitted_picks_query(picks: exp.Table, blocked: exp.Table) -> exp.Select:
    """(record_id, item_id): the picks of the rules not blocked, the round's suppressions."""
    waits = (exp.select(exp.Literal.number(1)).from_(with_alias(blocked, "b"))
             .where(col("rule_id", "b").eq(col("rule_id", "p"))))
    return (exp.select(col("record_id", "p"), col("item_id", "p")).distinct()
            .from_(with_alias(picks, "p")).where(exp.not_(exp.Exists(this=waits))))
