"""The unsafe rules kept up to date by a round's delta, instead of recomputed by a self-join.

conf(q -> e) = sup(q + {e}) / sup(q) changes only if sup(q + {e}) or sup(q) changed, i.e. if X =
q + {e} or q is one of the itemsets of the round's delta. So the new set of unsafe rules is the
old one without the rules whose X or q changed, plus the rules, unsafe now, whose X or q changed
(found by joining the support table with the changed itemsets on either side: a scan of the
support table with a small hash table, where the full recomputation joined it with itself).
Renumbered by (part, e, X) like :func:`.qids.unsafe_rules_query`, the table is the one a full
recomputation gives, ids included.
"""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.models.rho.qids import col, numbered_rules, rules_for_position, xs
from setanon_sql.sqlrender import with_alias


def rule_columns(width: int) -> list[str]:
    """The columns of a rule besides rule_id (see :func:`.qids.unsafe_rules_query`)."""
    return ["part", *(f"q{p}" for p in range(1, width)), "e", *xs(width), "size", "sx", "sq",
            "w"]


def _changed(supx: exp.Table, delta: exp.Table, width: int, alias: str) -> exp.Subquery:
    """The support rows of the itemsets in ``delta``, as a derived table named ``alias``."""
    on = exp.and_(col("part", "d").eq(col("part", "c")),
                  *(col(x, "d").eq(col(x, "c")) for x in xs(width)))
    return (exp.select(exp.Column(this=exp.Star(), table=exp.to_identifier("c", quoted=True)))
            .from_(with_alias(supx, "c")).join(with_alias(delta, "d"), on=on)
            .subquery(alias, copy=False))


def _in_delta(delta: exp.Table, columns: list[str], width: int) -> exp.Exists:
    """EXISTS a delta row equal to the rule's itemset ``columns`` (padded with 0)."""
    padded = [*columns, *([None] * (width - len(columns)))]
    match = [col("part", "d").eq(col("part", "r"))]
    match += [col(x, "d").eq(col(c, "r") if c else exp.Literal.number(0))
              for x, c in zip(xs(width), padded, strict=True)]
    return exp.Exists(this=exp.select(exp.Literal.number(1)).from_(with_alias(delta, "d"))
                      .where(exp.and_(*match)))


def kept_rules_query(rules: exp.Table, supx: exp.Table, delta: exp.Table, sens: exp.Table,
                     win: exp.Table, width: int, max_q: int) -> exp.Select:
    """The unsafe rules after the round whose supports are in ``delta``; needs :num, :den."""
    names = rule_columns(width)
    untouched = (exp.select(*(col(c, "r") for c in names)).from_(with_alias(rules, "r"))
                 .where(exp.and_(exp.not_(_in_delta(delta, xs(width), width)),
                                 exp.not_(_in_delta(delta, [f"q{p}" for p in range(1, width)],
                                                    width)))))
    fresh: list[exp.Select] = []
    for j in range(1, width + 1):
        fresh.append(rules_for_position(supx, sens, win, width, j, max_q,
                                        x_source=_changed(supx, delta, width, "x")))
        fresh.append(rules_for_position(supx, sens, win, width, j, max_q,
                                        y_source=_changed(supx, delta, width, "y")))
    changed: exp.Query = fresh[0]
    for part in fresh[1:]:
        changed = exp.union(changed, part, distinct=True)
    both = exp.union(untouched, exp.select(*(col(c) for c in names))
                     .from_(changed.subquery("n")), distinct=False)
    return numbered_rules(both, width)
