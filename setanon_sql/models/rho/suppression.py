"""How many occurrences to suppress for a rule, and from which records (Jia et al. Def. 1, Alg. 2).

Shared with the personalized model: the suppression number N_s, the records C(q + {e}) a rule
may suppress from, and the reproducible random choice among them.
"""

from __future__ import annotations

from fractions import Fraction

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.rho.qids import col, placeholder, xs
from setanon_sql.sqlrender import with_alias


def rho_fraction(rho: float | str | Fraction) -> Fraction:
    """ρ as an exact fraction num/den, so that every confidence test is in integers."""
    value = Fraction(str(rho)) if not isinstance(rho, Fraction) else rho
    return value.limit_denominator(10**6)


def suppression_number(divisor: exp.Expression) -> exp.Expression:
    """⌈(den·sup(q + {e}) - num·sup(q)) / divisor⌉: Def. 1 with ρ = num/den.

    Suppressing k occurrences of e makes (sx - k) / sq <= ρ: k >= sx - ρ·sq (divisor den).
    Suppressing k occurrences of t ∈ q makes (sx - k) / (sq - k) <= ρ: k >= (sx - ρ·sq) / (1 - ρ)
    (divisor den - num). The quotient of two integers below 2^53 is exact enough for ceil.
    """
    excess = placeholder("den") * col("sx") - placeholder("num") * col("sq")
    return exp.cast(exp.func("ceil", exp.Div(this=exp.cast(excess, "DOUBLE PRECISION"),
                                             expression=exp.paren(divisor))), "BIGINT")


def candidates_query(rules: exp.Table, width: int) -> exp.Select:
    """(rule_id, part, d, k) for every d ∈ q + {e} of the rules of buffer ``:w``; k = N_s(d)."""
    in_buffer = col("w").eq(placeholder("w"))
    parts: list[exp.Select] = [
        exp.select(col("rule_id"), col("part"), col("e").as_("d", quoted=True),
                   suppression_number(placeholder("den")).as_("k", quoted=True))
        .from_(rules.copy()).where(in_buffer)
    ]
    for p in range(1, width):
        parts.append(
            exp.select(col("rule_id"), col("part"), col(f"q{p}").as_("d", quoted=True),
                       suppression_number(placeholder("den") - placeholder("num"))
                       .as_("k", quoted=True))
            .from_(rules.copy())
            .where(exp.and_(in_buffer, col(f"q{p}").neq(exp.Literal.number(0)))))
    query: exp.Query = parts[0]
    for part in parts[1:]:
        query = exp.union(query, part, distinct=False)
    return exp.select("*").from_(query.subquery("c"))


def members_query(backend: Backend, chosen: exp.Table, levels: list[exp.Table],
                  width: int) -> exp.Select:
    """(rule_id, rnk, record_id, hkey): the records C(q + {e}) of every chosen rule.

    ``hkey`` = md5(seed:round:rule:record) orders a rule's records at random, the same way on
    every backend (compared byte-wise), so the records that lose an item are reproducible from
    ``:seed`` (Alg. 2 l.13: "pick a record R where R ∈ C(X)").
    """
    text = [exp.cast(placeholder("seed"), "TEXT"), exp.cast(placeholder("round"), "TEXT"),
            exp.cast(col("rule_id", "c"), "TEXT"), exp.cast(col("record_id", "l"), "TEXT")]
    joined: exp.Expression = text[0]
    for part in text[1:]:
        joined = exp.DPipe(this=exp.DPipe(this=joined, expression=exp.Literal.string(":")),
                           expression=part)
    hkey = backend.binary_sort_key(exp.func("md5", joined))
    parts: list[exp.Select] = []
    for k in range(2, width + 1):
        on = [col("part", "l").eq(col("part", "c")), col("size", "c").eq(exp.Literal.number(k))]
        on += [col(x, "l").eq(col(x, "c")) for x in xs(k)]
        parts.append(exp.select(col("rule_id", "c"), col("rnk", "c"), col("record_id", "l"),
                                hkey.copy().as_("hkey", quoted=True))
                     .from_(with_alias(chosen, "c"))
                     .join(with_alias(levels[k - 1], "l"), on=exp.and_(*on)))
    query: exp.Query = parts[0]
    for part in parts[1:]:
        query = exp.union(query, part, distinct=False)
    return exp.select("*").from_(query.subquery("m"))


def picks_query(chosen: exp.Table, members: exp.Table, blocked: exp.Table) -> exp.Select:
    """(record_id, item_id): k = N_s(d) random records of every admitted rule lose d."""
    order = exp.Order(expressions=[exp.Ordered(this=col("hkey", "m")),
                                   exp.Ordered(this=col("record_id", "m"))])
    pick = exp.Window(this=exp.RowNumber(), partition_by=[col("rule_id", "m")], order=order)
    ranked = (exp.select(col("record_id", "m"), col("d", "c").as_("item_id", quoted=True),
                         col("k", "c"), pick.as_("pick", quoted=True))
              .from_(with_alias(members, "m"))
              .join(with_alias(chosen, "c"), on=col("rule_id", "c").eq(col("rule_id", "m")))
              .where(exp.not_(exp.Exists(this=exp.select(exp.Literal.number(1))
                                         .from_(with_alias(blocked, "b"))
                                         .where(col("rule_id", "b").eq(col("rule_id", "m")))))))
    return (exp.select(col("record_id"), col("item_id")).from_(ranked.subquery("r"))
            .where(col("pick") <= col("k")))
