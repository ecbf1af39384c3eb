"""Alg. 2 l.11-12: the rules of R_S that are still above ρ in the new D', with fresh supports.

One suppression pass (:func:`.rules.suppress`) does only the rules no rule of higher rank
interferes with; the others must be re-checked (l.12) and done in the same sweep, not left
until random samples find them again (that made the sweeps on BMS-WebView-2 converge very
slowly). sq = |C_{D'}(Q)|
and sx = |C_{D'}(Q + {e})| of every rule are counted from the records holding the rarest item of
Q (by its support in D) only.
"""

from __future__ import annotations

from fractions import Fraction

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.prho.rules import TableFn, fresh, rho_params
from setanon_sql.models.rho.qids import col, placeholder, xs
from setanon_sql.sqlrender import union_all, with_alias

ONE, ZERO = exp.Literal.number(1), exp.Literal.number(0)


def _rule_items(rules: exp.Table, width: int) -> exp.Select:
    """(rule_id, size, item, ise): the items of Q + {e}, ise = 1 for e."""
    parts = [exp.select(col("rule_id"), col("size"), col(x).as_("item", quoted=True),
                        exp.Case().when(col(x).eq(col("e")), ONE).else_(ZERO)
                        .as_("ise", quoted=True))
             .from_(rules.copy()).where(col(x).neq(ZERO)) for x in xs(width)]
    union = union_all(parts)
    return exp.select("*").from_(union.subquery("u"))


def _supports(ritems: exp.Table, cur: exp.Table, istat0: exp.Table) -> exp.Select:
    """(rule_id, sq, sx) in D' = ``cur``, from the records holding Q's rarest item."""
    rarest = exp.Window(this=exp.RowNumber(), partition_by=[col("rule_id", "u")],
                        order=exp.Order(expressions=[exp.Ordered(this=col("n0", "i")),
                                                     exp.Ordered(this=col("item", "u"))]))
    first = (exp.select(col("rule_id", "u"), col("item", "u"), rarest.as_("r", quoted=True))
             .from_(with_alias(ritems, "u"))
             .join(with_alias(istat0, "i"), on=col("item_id", "i").eq(col("item", "u")))
             .where(col("ise", "u").eq(ZERO)))
    cand = (exp.select(col("rule_id", "f"), col("record_id", "c"))
            .from_(first.subquery("f"))
            .join(with_alias(cur, "c"), on=col("item_id", "c").eq(col("item", "f")))
            .where(col("r", "f").eq(ONE)))
    per_record = (exp.select(col("rule_id", "k"), col("record_id", "k"),
                             exp.func("max", col("size", "u")).as_("size", quoted=True),
                             exp.func("sum", ONE - col("ise", "u")).as_("nq", quoted=True),
                             exp.func("sum", col("ise", "u")).as_("ne", quoted=True))
                  .from_(cand.subquery("k"))
                  .join(with_alias(ritems, "u"), on=col("rule_id", "u").eq(col("rule_id", "k")))
                  .join(with_alias(cur, "c"), on=exp.and_(
                      col("record_id", "c").eq(col("record_id", "k")),
                      col("item_id", "c").eq(col("item", "u"))))
                  .group_by(col("rule_id", "k"), col("record_id", "k")))
    holds_q = col("nq").eq(col("size") - ONE)
    return (exp.select(col("rule_id"),
                       exp.func("sum", exp.Case().when(holds_q, ONE).else_(ZERO))
                       .as_("sq", quoted=True),
                       exp.func("sum", exp.Case().when(exp.and_(holds_q, col("ne").eq(ONE)),
                                                       ONE).else_(ZERO))
                       .as_("sx", quoted=True))
            .from_(per_record.subquery("p")).group_by(col("rule_id")))


def still_unsafe(backend: Backend, table: TableFn, rules: exp.Table, cur: exp.Table,
                 istat0: exp.Table, width: int, rho: Fraction, target: exp.Table) -> int:
    """``target`` = the rules of ``rules`` with conf_{D'}(Q -> e) > ρ, sx/sq of D'; their count."""
    ritems = fresh(backend, table, "ritemsq")
    backend.materialize(ritems, _rule_items(rules, width))
    keep = [col(name, "r") for name in ("rule_id", "part", *(f"q{j}" for j in range(1, width)),
                                        "e", *xs(width), "size")]
    query = (exp.select(*keep, col("sx", "a"), col("sq", "a"), col("w", "r"))
             .from_(with_alias(rules, "r"))
             .join(_supports(ritems, cur, istat0).subquery("a"),
                   on=col("rule_id", "a").eq(col("rule_id", "r")))
             .where(placeholder("den") * col("sx", "a") > placeholder("num") * col("sq", "a")))
    backend.materialize(target, query, rho_params(rho))
    backend.drop_table(ritems)
    return int(backend.scalar("prho_count_rows", tables={"t": target}))
