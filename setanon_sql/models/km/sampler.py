"""Uniform, independent samples of ℓ-itemsets of the original data, drawn in batches in SQL.

Theorem 1 needs itemsets drawn independently and uniformly from Omega^ℓ (the ℓ-itemsets that
occur in D). Acs et al. draw them with the Metropolis-Hastings chain of Alg. 1, whose proposal
is "a record, then an ℓ-subset of it", corrected by q(x). Here the same proposal, with records
weighted by C(|D_u|, ℓ), is corrected by rejection instead: an itemset C is then proposed with
probability supp(C) / Z, and accepting it with probability 1 / supp(C) makes every itemset
equally likely. The draws are exactly uniform and independent, so no mixing time (Theorem 3)
or convergence diagnostic (Geweke) is needed; a batch of proposals is a few SQL statements,
and supp(C) is counted once per distinct proposed itemset by the cheaper plan of
:mod:`.groupsupport`.
Size 1 draws items directly (Omega^1 is the item set; rejection would accept |I| / |D| only).
Randomness is a hash of (seed, stream, round, proposal), the same on every backend.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.km.groupsupport import itemset_support
from setanon_sql.sqlrender import parsed

_MAX_PROPOSALS = 2_000_000


def uniform(backend: Backend, *parts: exp.Expression) -> exp.Expression:
    """A number in [0, 1) from the first 32 bits of md5 of the parts (the same on every backend)."""
    text = exp.ConcatWs(expressions=[exp.Literal.string("|"),
                                     *(exp.cast(p, "TEXT") for p in parts)])
    return hex_fraction(backend, exp.MD5(this=text))


def hex_fraction(backend: Backend, digest: exp.Expression) -> exp.Expression:
    """The first 8 hex digits of ``digest`` as a number in [0, 1) (backend hook for the digits)."""
    return exp.Div(this=exp.cast(backend.hex_prefix_value(digest), "DOUBLE PRECISION"),
                   expression=exp.Literal.number(float(2 ** 32)))


def binomial(n: exp.Expression, ell: int) -> exp.Expression:
    """C(n, ℓ) as a float: the product of (n - i) / (i + 1) for i < ℓ."""
    value: exp.Expression = exp.Literal.number(1.0)
    for i in range(ell):
        factor = exp.Div(this=exp.cast(exp.Sub(this=n.copy(), expression=exp.Literal.number(i)),
                                       "DOUBLE PRECISION"),
                         expression=exp.Literal.number(float(i + 1)))
        value = exp.Mul(this=value, expression=factor)
    return exp.paren(value)


def statement(name: str, ell: int, backend: Backend) -> exp.Expression:
    """Named statement ``name`` with km_uniform / km_hex / km_binomial expanded for size ``ell``
    and ``backend``."""

    def expand(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Anonymous) and node.name.lower() == "km_uniform":
            return uniform(backend, *node.expressions)
        if isinstance(node, exp.Anonymous) and node.name.lower() == "km_hex":
            return hex_fraction(backend, node.expressions[0])
        if isinstance(node, exp.Anonymous) and node.name.lower() == "km_binomial":
            return binomial(node.expressions[0], ell)
        return node

    return parsed(name).copy().transform(expand)


@dataclass
class Sampler:
    """Draws samples of one dataset's record-item table; tables named by ``table(purpose)``."""

    backend: Backend
    items: exp.Table
    table: Callable[[str], exp.Table]
    seed: int
    stream: int
    rounds: int = 0
    acceptance: dict[int, float] = field(default_factory=dict)
    proposals: int = 0

    def _count(self, table: exp.Table, column: str = "*") -> int:
        what = exp.Star() if column == "*" else exp.Distinct(expressions=[exp.column(column)])
        return int(self.backend.scalar(exp.select(exp.func("count", what)).from_(table.copy())))

    def draw(self, ell: int, count: int, target: exp.Table) -> int:
        """Create ``target(sid, item_id, supp)`` with at least ``count`` samples of size ℓ
        (fewer only if Omega^ℓ is empty); ``supp`` is the itemset's support in D."""
        b = self.backend
        if ell == 1:
            self.rounds += 1
            params = {"seed": self.seed, "ell": 1, "n": count,
                      "round": self.stream * 1_000_000 + self.rounds}
            b.materialize(target, statement("km_sample_singletons", 1, b), params,
                          {"items": self.items})
            self.proposals += count
            return self._count(target, "sid")
        recw, recb = self.table("recw"), self.table("recb")
        b.materialize(recw, statement("km_sample_weights", ell, b), {"ell": ell},
                      {"items": self.items})
        nb = self._count(recw)
        z = float(b.scalar(exp.select(exp.func("max", exp.column("hi"))).from_(recw.copy()))
                  or 0.0)
        b.materialize(target, exp.select("sid", "item_id", "supp").from_(
            exp.select(exp.cast(exp.Literal.number(0), "BIGINT").as_("sid"),
                       exp.cast(exp.Literal.number(0), "BIGINT").as_("item_id"),
                       exp.cast(exp.Literal.number(0), "BIGINT").as_("supp")).subquery("e"))
            .where(exp.false()))
        have = 0
        if nb:
            nodes = self.table("snodes")
            b.materialize(recb, statement("km_sample_buckets", ell, b), {"z": z, "nb": nb},
                          {"recw": recw})
            b.materialize(nodes, "km_sample_records_as_nodes", None, {"items": self.items})
            while have < count:
                have = self._round(ell, count - have, have, z, nb, target)
            b.drop_table(recb)
            b.drop_table(nodes)
        b.drop_table(recw)
        return have

    def _subsets(self, ell: int, params: dict[str, int], props: exp.Table,
                 subs: exp.Table) -> None:
        """``subs(pid, item_id)``: a uniform ℓ-subset of each proposed record (its ℓ items of
        smallest hash; reads every item of the record, see risk.PositionSampler)."""
        self.backend.materialize(subs, statement("km_sample_subsets", ell, self.backend),
                                 params, {"props": props, "items": self.items})

    def _round(self, ell: int, missing: int, have: int, z: float, nb: int,
               target: exp.Table) -> int:
        b = self.backend
        self.rounds += 1
        rate = self.acceptance.get(ell, 0.5)
        n = min(_MAX_PROPOSALS, math.ceil(missing / max(rate, 0.01) * 1.2) + 16)
        props, subs, fresh, merged = (self.table(p) for p in ("props", "subs", "fresh", "sunion"))
        common = {"seed": self.seed, "ell": ell, "round": self.stream * 1_000_000 + self.rounds}
        b.materialize(props, statement("km_sample_records", ell, b),
                      {**common, "n": n, "z": z, "nb": nb}, {"recb": self.table("recb")})
        self._subsets(ell, common, props, subs)
        pkeys, itemsets, support = (self.table(p) for p in ("pkeys", "pitems", "psupp"))
        b.materialize(pkeys, "km_proposal_keys", None, {"subs": subs})
        b.materialize(itemsets, "km_proposal_itemsets", None, {"pkeys": pkeys, "subs": subs})
        itemset_support(b, itemsets, self.table("snodes"), support, self.table)
        b.materialize(fresh, statement("km_sample_accept", ell, b), {**common, "offset": have},
                      {"subs": subs, "pkeys": pkeys, "support": support})
        accepted = self._count(fresh, "sid")
        self.proposals += n
        self.acceptance[ell] = max(accepted / n, 0.001)
        b.materialize(merged, "km_sample_union", None, {"samples": target, "fresh": fresh})
        for table in (props, subs, pkeys, itemsets, support, fresh, target):
            b.drop_table(table)
        b.materialize(target, exp.select("*").from_(merged.copy()))
        b.drop_table(merged)
        return have + accepted
