"""Uniform ℓ-subsets of a proposed record drawn as ℓ positions (Floyd's algorithm).

The itemset sampler proposes a record with weight C(|r|, ℓ) and then ranks all of its items
by hash to keep ℓ of them: one record of 100,000 items takes nearly every proposal, and each
proposal then reads 100,000 rows (2.6e9 for the 26,492 samples of ``risk``). Here the items
are numbered 1..|r| once (a linear table), and each proposal draws ℓ distinct positions by
Floyd's algorithm: for j = |r| - ℓ + 1 .. |r|, t = uniform in [1, j]; keep t unless already
kept, else keep j. Every ℓ-subset is then equally likely (Floyd's proof), as with the
hash-rank rule, so the sampler's rejection step stays exact; each proposal reads ℓ rows.
Only the randomness differs, so the samples differ from the base sampler's for one seed.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from setanon_sql.models.km.sampler import Sampler, SamplingWork, uniform
from setanon_sql.sqlrender import union_all, with_alias


def _int(value: int) -> exp.Expr:
    return exp.Literal.number(value)


def _position_bound(alias: str, k: int, ell: int) -> exp.Expr:
    """j_k = len - ℓ + k: the k-th draw of Floyd's algorithm is uniform in [1, j_k]."""
    return exp.Add(this=exp.column("len", alias), expression=_int(k - ell))


@dataclass
class PositionSampler(Sampler):
    """A Sampler whose per-proposal work is ℓ rows, not |r| (see the module docstring).
    The numbered items are the table ``table("snum")``, made once; the caller drops it."""

    numbered_ready: bool = False

    def _numbered(self) -> exp.Table:
        numbered = self.table("snum")
        if not self.numbered_ready:
            self.backend.materialize(numbered, "workload_numbered_items",
                                     tables={"items": self.items})
            self.numbered_ready = True
        return numbered

    def release(self) -> None:
        """Also drop the numbered items (they do not depend on ℓ: kept across sizes)."""
        super().release()
        if self.numbered_ready:
            self.backend.drop_table(self.table("snum"))
        self.numbered_ready = False

    def _work(self, ell: int, count: int) -> SamplingWork | None:
        """A proposal reads ℓ rows whatever its record's length: no estimate to refuse on."""
        return None

    def _subsets(self, ell: int, params: dict[str, int], props: exp.Table,
                 subs: exp.Table) -> None:
        numbered = self._numbered()
        b = self.backend
        # t_k = 1 + floor(u_k * j_k), j_k = len - ℓ + k: every draw in the first step (one md5
        # each), then s_k = j_k if t_k is kept already, else t_k, one step per k. Each step is
        # fenced (Backend.fenced): it tests the steps before it, which must not be recomputed.
        draws = [exp.Add(this=_int(1), expression=exp.cast(exp.Floor(this=exp.Mul(
            this=uniform(b, exp.Literal.string("pos"), exp.Placeholder(this="seed"),
                         exp.Placeholder(this="ell"), exp.Placeholder(this="round"),
                         exp.column("pid", "p"), _int(k)),
            expression=exp.paren(_position_bound("n", k, ell)))), "BIGINT")).as_(f"t{k}")
            for k in range(1, ell + 1)]
        query = (exp.select("p.pid", "p.record_id", "n.len", *draws)
                 .from_(with_alias(props, "p"))
                 .join(with_alias(numbered, "n"),
                       on=exp.condition("n.record_id = p.record_id AND n.pos = 1")))
        for k in range(1, ell + 1):
            t = exp.column(f"t{k}", "q")
            kept = [exp.column(f"s{i}", "q") for i in range(1, k)]
            pick = (exp.Case(ifs=[exp.If(this=exp.In(this=t.copy(), expressions=kept),
                                         true=_position_bound("q", k, ell))], default=t)
                    if kept else t)
            query = exp.select(exp.Star(), exp.cast(pick, "BIGINT").as_(f"s{k}")).from_(
                b.fenced(query).subquery("q"))
        query = exp.select("q.pid", "q.record_id",
                           *(exp.column(f"s{k}", "q") for k in range(1, ell + 1))).from_(
            b.fenced(query).subquery("q"))
        # The positions are written once, then read by ℓ branches: a union over the chain as a
        # subquery recomputed s_1..s_k in its k-th branch (ℓ(ℓ + 1) / 2 md5s a proposal, not ℓ;
        # 1 M users, 2 M proposals of 5 items: 14.0 s, 6.4 s with the table; 1 M of 11 items:
        # 34.9 s, 7.5 s).
        positions = self.table("spos")
        b.materialize(positions, query, params)
        try:
            picked = union_all([
                exp.select("x.pid", "x.record_id", exp.column(f"s{k}", "x").as_("pos"))
                .from_(with_alias(positions, "x")) for k in range(1, ell + 1)])
            b.materialize(subs, exp.select("c.pid", "n.item_id")
                          .from_(picked.subquery("c"))
                          .join(with_alias(numbered, "n"),
                                on=exp.condition("n.record_id = c.record_id AND n.pos = c.pos")))
        finally:
            b.drop_table(positions)
