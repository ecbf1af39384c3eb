"""The unsafe rules someone must be protected from, when E_u differs between records.

A rule Q -> e of D' with conf > ρ needs sanitizing only if some adversary (u, Q) can use it:
Q ⊆ D_u of the ORIGINAL data and e ∈ E_u (Nakagawa et al. Defs. 2, 3; Alg. 1 l.7). That is a
property of D and E alone, never of D', so the rho model's suppressor can keep the rules of a
round whose supports did not change and test only the rules it finds afresh
(:class:`..rho.suppressor.RuleFilter`). With E_u the same for everyone every unsafe rule whose
e is in S needs it, and no filter is used (:mod:`.staged`).

Why a filter and not the single pass of :mod:`.suppressor`: that pass counts every itemset of
up to m + 1 items in every round, and on 1M Quest records at ``--m 3`` it was refused by the
run-time estimate and, with the limit raised, ran DuckDB out of 10 GB in round 1
(BENCHMARKS.md, prho at scale). The rho suppressor counts once, keeps the supports up to date
and goes by stages of growing qid size where one stage is out of reach.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.prho.constraint import Constraint
from setanon_sql.models.rho.choice import held_by_one_record
from setanon_sql.models.rho.qids import col
from setanon_sql.sqlrender import union_all, with_alias

# The A/B switch of :meth:`Relevance.keep`'s own-holder test (the same rules either way).
OWN_HOLDER_FIRST = True


def protected_occurrences(backend: Backend, constraint: Constraint, level1: exp.Table
                          ) -> exp.Select:
    """(record_id, item_id): the occurrences of the original data whose item the record
    protects (item ∈ E_record), from the original level 1 (part, record_id, x1)."""
    query = (exp.select(col("record_id", "o"), col("x1", "o").as_("item_id", quoted=True))
             .from_(with_alias(level1, "o")))
    return constraint.member_filter(backend, query, col("record_id", "o"), col("x1", "o"))


@dataclass(frozen=True)
class Relevance:
    """Keeps the rules Q -> e with an original record u ⊇ Q and e ∈ E_u.

    ``levels[k - 1]`` holds every (part, record_id, x1..xk) of the original records
    (:func:`.rules.original_levels`), up to the largest qid size checked. ``own``: the
    original occurrences each record protects (:func:`protected_occurrences`), or None.
    """

    backend: Backend
    constraint: Constraint
    levels: tuple[exp.Table, ...]
    own: exp.Table | None = None

    def params(self) -> dict[str, Any]:
        """The membership test's bind parameters (:meth:`.Constraint.params`)."""
        return self.constraint.params()

    def keep(self, found: exp.Table, width: int, counted: bool = False) -> exp.Select:
        """The rules of ``found`` (columns part, q1..q_{width-1}, e, ..., sx, xrec; a rule with
        a qid of k items has size k + 1 and q_{k+1}.. = 0) that some adversary can use.

        The distinct (part, Q, e) that :func:`usable_rules_query` leaves pick the rules (a
        rule is its (part, Q, e): X = Q + {e}). With ``own`` and rules ``counted`` from
        scratch, a rule whose X one known record holds (sx = 1, ``xrec``) is first tested on that
        record alone: it holds X ⊇ Q in D' ⊆ D, so it is an original holder of Q, and
        (xrec, e) is one of its original occurrences. A rule it protects e for is kept as it
        is; only the others go to the holders, without xrec. At a count from scratch nearly
        every rule is of one holder (94.6% of 167M at stage 3 of 1M Quest records,
        personalized, ``--m 3``): the holders' md5 draws, the distinct keys and the join back
        then serve only the rules their own record does not settle. Stage 3's filter replayed
        alone, alternated pairs (``bench/rho_filter_alone.py``): 1M records 220.4 and 195.8 s
        before, 193.1 and 170.4 s so; 200k records 20.9-24.3 s before, 16.0-19.3 s so; the
        same rules (BENCHMARKS.md, prho). The rules a round finds afresh have no ``xrec``, and
        joining ``own`` for nothing in every round cost more than the count saved (200k
        records: 15-24 CPU-seconds more in all).
        """
        key = ["part", *(f"q{p}" for p in range(1, width)), "e"]
        own = self.own if OWN_HOLDER_FIRST and counted else None
        keys = usable_rules_query(self.backend, self.constraint, found,
                                  self.levels[:width - 1], key, own).subquery("k")
        every = exp.Column(this=exp.Star(), table=exp.to_identifier("f", quoted=True))
        others = (exp.select(every).from_(with_alias(found, "f"))
                  .join(keys, on=exp.and_(*(col(c, "k").eq(col(c, "f")) for c in key))))
        if own is None:
            return others
        settled = (exp.select(every.copy()).from_(with_alias(found, "f"))
                   .join(with_alias(own, "w"), on=_own_occurrence("f", "w"))
                   .where(held_by_one_record("f")))
        return exp.select("*").from_(exp.union(settled, others, distinct=False).subquery("s"))


def _own_occurrence(rules: str, own: str) -> exp.Expr:
    """The ``own`` row (alias) is (xrec, e) of the rule (alias ``rules``)."""
    return exp.and_(col("record_id", own).eq(col("xrec", rules)),
                    col("item_id", own).eq(col("e", rules)))


def usable_rules_query(backend: Backend, constraint: Constraint, rules: exp.Table,
                       levels: Sequence[exp.Table], columns: list[str],
                       own: exp.Table | None = None) -> exp.Query:
    """The distinct ``columns`` of the rules Q -> e of ``rules`` with an original record
    u ⊇ Q and e ∈ E_u (Alg. 1 l.7): one join per qid size k with the original level k
    (``levels[k - 1]``) on (part, Q), then the membership of e in E_u of the records found.
    Each part is made distinct on its own: a rule's size picks its part, so none repeats
    another's rows when ``columns`` name the rule.

    ``own`` (:class:`Relevance`): leave out the rules of one known holder whose (xrec, e) is
    in it, and the holder xrec of the others; ``rules`` then has the columns sx and xrec.
    """
    parts: list[exp.Query] = []
    for k, level in enumerate(levels, start=1):
        on: list[exp.Expr] = [col("part", "o").eq(col("part", "r")),
                              *(col(f"x{j}", "o").eq(col(f"q{j}", "r"))
                                for j in range(1, k + 1))]
        query = exp.select(*(col(c, "r") for c in columns)).from_(with_alias(rules, "r"))
        where: list[exp.Expr] = [col("size", "r").eq(exp.Literal.number(k + 1))]
        if own is not None:
            # An anti-join: the rules their own holder does not settle (Relevance.keep).
            query = query.join(with_alias(own, "w"), join_type="left",
                               on=exp.and_(_own_occurrence("r", "w"), held_by_one_record("r")))
            on.append(exp.not_(exp.and_(held_by_one_record("r"),
                                        col("record_id", "o").eq(col("xrec", "r")))))
            where.append(col("record_id", "w").is_(exp.null()))
        query = query.join(with_alias(level, "o"), on=exp.and_(*on)).where(exp.and_(*where))
        parts.append(constraint.member_filter(backend, query, col("record_id", "o"),
                                              col("e", "r")).distinct())
    return union_all(parts)
