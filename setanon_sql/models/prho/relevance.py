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
from setanon_sql.models.rho.qids import col
from setanon_sql.sqlrender import union_all, with_alias


@dataclass(frozen=True)
class Relevance:
    """Keeps the rules Q -> e with an original record u ⊇ Q and e ∈ E_u.

    ``levels[k - 1]`` holds every (part, record_id, x1..xk) of the original records
    (:func:`.rules.original_levels`), up to the largest qid size checked.
    """

    backend: Backend
    constraint: Constraint
    levels: tuple[exp.Table, ...]

    def params(self) -> dict[str, Any]:
        """The membership test's bind parameters (:meth:`.Constraint.params`)."""
        return self.constraint.params()

    def keep(self, found: exp.Table, width: int) -> exp.Select:
        """The rules of ``found`` (columns part, q1..q_{width-1}, e, ...; a rule with a qid of
        k items has size k + 1 and q_{k+1}.. = 0) that some adversary can use.

        The distinct (part, Q, e) that :func:`usable_rules_query` leaves pick the rules (a
        rule is its (part, Q, e): X = Q + {e}).
        """
        key = ["part", *(f"q{p}" for p in range(1, width)), "e"]
        keys = usable_rules_query(self.backend, self.constraint, found,
                                  self.levels[:width - 1], key).subquery("k")
        return (exp.select(exp.Column(this=exp.Star(), table=exp.to_identifier("f",
                                                                              quoted=True)))
                .from_(with_alias(found, "f"))
                .join(keys, on=exp.and_(*(col(c, "k").eq(col(c, "f")) for c in key))))


def usable_rules_query(backend: Backend, constraint: Constraint, rules: exp.Table,
                       levels: Sequence[exp.Table], columns: list[str]) -> exp.Query:
    """The distinct ``columns`` of the rules Q -> e of ``rules`` with an original record
    u ⊇ Q and e ∈ E_u (Alg. 1 l.7): one join per qid size k with the original level k
    (``levels[k - 1]``) on (part, Q), then the membership of e in E_u of the records found.
    Each part is made distinct on its own: a rule's size picks its part, so none repeats
    another's rows when ``columns`` name the rule."""
    parts: list[exp.Query] = []
    for k, level in enumerate(levels, start=1):
        on = [col("part", "o").eq(col("part", "r")),
              *(col(f"x{j}", "o").eq(col(f"q{j}", "r")) for j in range(1, k + 1))]
        query = (exp.select(*(col(c, "r") for c in columns))
                 .from_(with_alias(rules, "r"))
                 .join(with_alias(level, "o"), on=exp.and_(*on))
                 .where(col("size", "r").eq(exp.Literal.number(k + 1))))
        parts.append(constraint.member_filter(backend, query, col("record_id", "o"),
                                              col("e", "r")).distinct())
    return union_all(parts)
