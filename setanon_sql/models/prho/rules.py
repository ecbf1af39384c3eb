"""Sensitive rules with conf > ρ, and one suppression step for a set of them (Alg. 1 l.7-14).

A rule Q -> {e} needs suppression iff conf_{D'}(Q -> {e}) > ρ and some adversary (u, Q) can use
it: Q ⊆ D_u of the ORIGINAL data and e ∈ E_u (Def. 2). Supports are those of the current D'
(shared with the ρ model: :func:`build_supports`, :func:`unsafe_rules_query`); rules whose e is
nobody's sensitive item are never generated, and for a personalized constraint the original
records containing Q are joined with E to keep the rules someone must be protected from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.prho.constraint import Constraint
from setanon_sql.models.prho.relevance import usable_rules_query
from setanon_sql.models.rho.incremental import member_level_query, pivot_query
from setanon_sql.models.rho.pickkey import pick_key, pick_salt
from setanon_sql.models.rho.qids import (
    OneHolder,
    build_supports,
    col,
    level_query,
    unsafe_rules_query,
    xs,
)
from setanon_sql.models.rho.suppression import (
    admitted_picks_query,
    blocked_rules_query,
    candidates_query,
)
from setanon_sql.sqlrender import union_all, with_alias

TableFn = Callable[[str], exp.Table]


def rho_params(rho: Fraction) -> dict[str, int]:
    """ρ = num/den: every confidence test is in integers."""
    return {"num": rho.numerator, "den": rho.denominator}


def fresh(backend: Backend, table: TableFn, purpose: str) -> exp.Table:
    """The work table ``purpose``, dropped if a previous round left it."""
    target = table(purpose)
    backend.drop_table(target)
    return target


def original_levels(backend: Backend, table: TableFn, base: exp.Table,
                    max_q: int) -> list[exp.Table]:
    """olvl1..olvl_{max_q}: every (record, Q) with Q ⊆ D_u, |Q| <= m, of the original data."""
    levels: list[exp.Table] = []
    for k in range(1, max_q + 1):
        level = fresh(backend, table, f"olvl{k}")
        backend.materialize(level, level_query(base, levels[-1] if levels else None, k))
        levels.append(level)
    return levels


def exact_rules(backend: Backend, table: TableFn, cur: exp.Table, constraint: Constraint,
                conseq: exp.Table, olevels: list[exp.Table], width: int, max_q: int,
                rho: Fraction, target: exp.Table, keep_levels: bool = False) -> list[exp.Table]:
    """``target`` = every sensitive rule of D' (|Q| <= max_q) with conf > ρ.

    ``olevels`` (the original records' itemsets up to max_q) are needed only when E_u differs
    between records. ``keep_levels``: return the level tables of D' (every (record, k-itemset),
    :func:`build_supports`) for :func:`suppress` to read C(Q + {e}) from; the caller drops
    them. Otherwise they are dropped and the list is empty.
    """
    # X = Q + {e} holds its consequent: the level above the largest Q keeps only the itemsets
    # that hold a possible consequent (the rho model's pruning, :func:`.qids.build_levels`).
    levels, supx = build_supports(backend, table, cur, width, conseq, max_q)
    query = unsafe_rules_query(supx, conseq, None, width, max_q, backend.split_rules_by_holders,
                               OneHolder(cur, rho))
    # The supports joined with themselves on whole-table keys: PostgreSQL sorted them once per
    # position of e for merge joins (grocery-sized file, m = 5: the first round's joins took
    # 3.7 s, 2.1 s as hash joins), as in the rho model's search and check.
    with backend.whole_table_joins():
        every = target if not constraint.per_record else fresh(backend, table, "allrules")
        backend.materialize(every, query, rho_params(rho))
    if constraint.per_record:
        ids = fresh(backend, table, "ids")
        backend.materialize(ids, usable_rules_query(backend, constraint, every, olevels,
                                                    ["rule_id"]), constraint.params())
        backend.materialize(target, "prho_rules_from_ids", tables={"rules": every, "ids": ids})
        backend.drop_table(ids)
        backend.drop_table(every)
    backend.drop_table(supx)
    if keep_levels:
        return levels
    for level in levels:
        backend.drop_table(level)
    return []


def members_query(backend: Backend, table: TableFn, chosen: exp.Table, cur: exp.Table,
                  istat: exp.Table, width: int) -> tuple[exp.Select, exp.Table]:
    """(rule_id, rnk, record_id, hkey): the records of D' containing Q + {e} of each rule.

    Found by counting matched items per record (no itemset enumeration, so it also serves
    rules of sampled adversaries over long records), rarest item first: only the records
    holding a rule's least frequent item of D' are candidates, and only their rows are
    counted (joining every item of every rule with all its records made PostgreSQL hash
    millions of rows for popular items). ``hkey`` (:mod:`setanon_sql.models.rho.pickkey`)
    orders them at random, reproducibly (Alg. 1 l.14: "select N records randomly"). Returns
    the query and the work table ``ritems`` it reads (the caller drops it).
    """
    parts = [exp.select(col("rule_id"), col("rnk"), col("size"), col(x).as_("item", quoted=True))
             .from_(chosen.copy()).where(col(x).neq(exp.Literal.number(0))) for x in xs(width)]
    union = union_all(parts)
    rarest = exp.Window(this=exp.RowNumber(), partition_by=[col("rule_id", "u")],
                        order=exp.Order(expressions=[exp.Ordered(this=col("n", "i")),
                                                     exp.Ordered(this=col("item", "u"))]))
    ritems = fresh(backend, table, "ritems")
    backend.materialize(ritems, exp.select(col("rule_id", "u"), col("rnk", "u"),
                                           col("size", "u"), col("item", "u"),
                                           rarest.as_("r", quoted=True))
                        .from_(union.subquery("u"))
                        .join(with_alias(istat, "i"), on=col("item_id", "i").eq(col("item", "u"))))
    cand = (exp.select(col("rule_id", "f"), col("rnk", "f"), col("size", "f"),
                       col("record_id", "c"))
            .from_(with_alias(ritems, "f"))
            .join(with_alias(cur, "c"), on=col("item_id", "c").eq(col("item", "f")))
            .where(col("r", "f").eq(exp.Literal.number(1))))
    matched = (exp.select(col("rule_id", "k"), col("rnk", "k"), col("record_id", "k"))
               .from_(cand.subquery("k"))
               .join(with_alias(ritems, "u"), on=col("rule_id", "u").eq(col("rule_id", "k")))
               .join(with_alias(cur, "c"), on=exp.and_(
                   col("record_id", "c").eq(col("record_id", "k")),
                   col("item_id", "c").eq(col("item", "u"))))
               .group_by(col("rule_id", "k"), col("rnk", "k"), col("size", "k"),
                         col("record_id", "k"))
               .having(exp.func("count", exp.Star()).eq(col("size", "k"))))
    return _hashed(matched), ritems


def _hashed(matched: exp.Query) -> exp.Select:
    """(rule_id, rnk, record_id, hkey) of the (rule_id, rnk, record_id) rows of ``matched``
    (:func:`setanon_sql.models.rho.pickkey.pick_key`, salted by ``:salt``)."""
    hkey = pick_key(col("rule_id"), col("record_id"))
    return exp.select(col("rule_id"), col("rnk"), col("record_id"),
                      hkey.as_("hkey", quoted=True)).from_(matched.subquery("m"))


def level_members_pay(backend: Backend, chosen: exp.Table, istat: exp.Table,
                      levels: Sequence[exp.Table], width: int) -> bool:
    """Whether reading C(Q + {e}) from the level tables reads fewer rows than expanding each
    rule by the records of its rarest item (:func:`members_query`).

    On 200,000 Quest records at ``--m 3`` (fixed, 40% sensitive, ρ = 0.7) the first round has
    48.3M rules above ρ; expanding them by their rarest items spilled over 70 GB and failed
    with the disk full, while the level tables hold every (record, itemset) once. The rho
    model makes the same choice (:meth:`..rho.suppressor.Suppressor._members`).
    """
    if not levels:
        return False
    by_pivot = backend.scalar(exp.select(exp.func("coalesce", exp.func("sum", col("n")),
                                                  exp.Literal.number(0)))
                              .from_(pivot_query(chosen, istat, width).subquery("p")))
    level_rows = sum(int(backend.scalar("prho_count_rows", tables={"t": level}))
                     for level in levels[1:])
    return int(by_pivot) > level_rows


def suppress(backend: Backend, table: TableFn, cur: exp.Table, istat0: exp.Table,
             rules: exp.Table, width: int, rho: Fraction, seed: int, round_no: int,
             target: exp.Table, choice: str = "paper",
             levels: Sequence[exp.Table] = ()) -> int:
    """``target`` = D' after one pass over ``rules``; returns the occurrences suppressed.

    For every rule: d = arg max F (eq. 8: D'(d) log(D'(d)/D(d)) / N_s(d)), N = N_s(d) (eq. 7),
    N random records of C(Q + {e}) lose d (``choice`` 'paper'). With 'fewest', d is the item
    with the smallest N_s, ties to e (so always e: N_s(e) <= N_s(q), eq. 7), and the records
    that also support other unsafe rules with consequent d go first (one suppression lowers
    several confidences). A rule waits for the next pass when a rule of higher rank would
    suppress one of its items from one of its records (:func:`.blocked_rules_query`), so the
    rules done together act as if taken one after the other with l.11's re-check.
    ``levels``: the level tables of ``cur`` (:func:`exact_rules`), read for C(Q + {e}) where
    that reads fewer rows (:func:`level_members_pay`); the same records either way.
    """
    istat = fresh(backend, table, "istat")
    backend.materialize(istat, "rho_istat", tables={"istat0": istat0, "cur": cur})
    cand = fresh(backend, table, "cand")
    backend.materialize(cand, candidates_query(rules, width), {"w": 0, **rho_params(rho)})
    chosen = fresh(backend, table, "chosen")
    backend.materialize(chosen, "prho_choose", {"choice": choice},
                        {"cand": cand, "istat": istat, "rules": rules})
    members = fresh(backend, table, "members")
    work: list[exp.Table] = []
    if level_members_pay(backend, chosen, istat, levels, width):
        # cur is the table the levels were counted from: no occurrence is gone since.
        query = _hashed(member_level_query(chosen, list(levels), None, width))
    else:
        query, ritems = members_query(backend, table, chosen, cur, istat, width)
        work.append(ritems)
    backend.materialize(members, query, {"salt": pick_salt(seed, round_no)})
    picks = fresh(backend, table, "picks")
    backend.materialize(picks, "prho_picks", {"shared": int(choice == "fewest")},
                        {"chosen": chosen, "members": members})
    blocked = fresh(backend, table, "blocked")
    backend.materialize(blocked, blocked_rules_query(chosen, members, picks, width))
    dels = fresh(backend, table, "dels")
    backend.materialize(dels, admitted_picks_query(picks, blocked))
    backend.materialize(target, "rho_apply", tables={"cur": cur, "dels": dels})
    count = int(backend.scalar("prho_count_rows", tables={"t": dels}))
    for done in (istat, cand, chosen, *work, members, picks, blocked, dels):
        backend.drop_table(done)
    return count
