"""Uniform, independent samples of ℓ-itemsets of the original data, drawn in batches in SQL.

Theorem 1 needs itemsets drawn independently and uniformly from Omega^ℓ (the ℓ-itemsets that
occur in D). Acs et al. draw them with the Metropolis-Hastings chain of Alg. 1, whose proposal
is "a record, then an ℓ-subset of it", corrected by q(x). Here the same proposal, with records
weighted by C(|D_u|, ℓ), is corrected by rejection instead: each pair (record r, ℓ-subset C of
r) is proposed with probability 1 / Z (Z = Σ_u C(|D_u|, ℓ)), so an itemset C is proposed with
probability supp(C) / Z. Two rejection rules make every itemset equally likely; either gives
exactly uniform, independent draws, so no mixing time (Theorem 3) or convergence diagnostic
(Geweke) is needed:

- **by support** (``first_holder=False``): accept C with probability 1 / supp(C), a uniform
  number per proposal; supp(C) is counted once per distinct proposed itemset by the cheaper
  plan of :mod:`.groupsupport`, and each sample carries it (``risk`` reads it);
- **by first holder** (``first_holder=True``, the search and verify): records are put in one
  fixed order, longest first (``rnk``), and a proposal is accepted when its record is the
  first holder of C in that order. Of the supp(C) pairs (r, C) exactly one is accepted, so C
  is accepted with probability 1 / Z whatever its support; the proposals are independent, and
  acceptance is a function of the proposal alone, so the samples are too. Deciding it needs
  only the holders before the proposing record: proposals come mostly from the longest
  records (Z is dominated by them), so few records are before them, and the support plan
  skips the rest (``bounds``). At 1 M CDR-like users, one pass over 1 M kept proposals
  (``bench/bench_km_accept.py``): 55.2 -> 30.1 s at ℓ = 5, 43.5 -> 26.9 s at ℓ = 7,
  39.1 -> 14.8 s at ℓ = 11. The samples carry no support.

Size 1 draws items directly (Omega^1 is the item set; rejection would accept |I| / |D| only).
Randomness is a hash of (seed, stream, round, proposal), the same on every backend.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.errors import WorkTooLargeError
from setanon_sql.models.km.groupsupport import itemset_support
from setanon_sql.models.km.itemsets import binomial, set_ids
from setanon_sql.sqlrender import parsed

_MAX_PROPOSALS = 2_000_000
# A round hashes one row per item of every proposed record (km_sample_subsets). Memory: a round
# proposes at most MAX_ROUND_ROWS / (mean length of a drawn record) records, so it hashes about
# 20M rows (measured: 1.8 GB peak RSS on DuckDB; BMS-WebView-2 and Retail never reach the cap,
# so their draws are unchanged). Time: a draw whose rounds would hash more than
# MAX_SAMPLING_ROWS in all is refused before it starts; a record of 100,000 items makes every
# draw pick it and needs billions.
MAX_ROUND_ROWS = 20_000_000
MAX_SAMPLING_ROWS = 150_000_000
# The rounds propose about count / 0.5 * 1.2 records in all (acceptance starts at 0.5, _round).
_FIRST_ROUND_FACTOR = 2.4


@dataclass(frozen=True)
class SamplingWork:
    """What drawing ``count`` ℓ-itemsets will cost: hashed rows, and the record that drives it."""

    mean_length: float  # items of a drawn record: rows hashed per proposal
    proposals: float  # records proposed over all rounds (estimated)
    longest_record: int | None
    longest_length: int

    @property
    def rows(self) -> float:
        return self.proposals * self.mean_length

    def too_large(self) -> bool:
        """More rows than MAX_SAMPLING_ROWS (read when called, so a caller may lower it)."""
        return self.rows > MAX_SAMPLING_ROWS

    def round_proposals(self) -> int:
        """The most records one round may propose and stay within MAX_ROUND_ROWS."""
        return max(16, int(MAX_ROUND_ROWS / max(self.mean_length, 1.0)))


def sampling_work(backend: Backend, items: exp.Table, ell: int, count: int) -> SamplingWork:
    """Estimate the rows the rounds of :meth:`Sampler.draw` hash, before they run."""
    mean_length, record, longest = backend.query(statement("km_sample_work", ell, backend),
                                                 {"ell": ell}, {"items": items})[0]
    return SamplingWork(float(mean_length or 0.0), _FIRST_ROUND_FACTOR * count,
                        None if record is None else int(record), int(longest or 0))


def uniform(backend: Backend, *parts: exp.Expr) -> exp.Expr:
    """A number in [0, 1) from the first 32 bits of md5 of the parts (the same on every backend)."""
    text = exp.ConcatWs(expressions=[exp.Literal.string("|"),
                                     *(exp.cast(p, "TEXT") for p in parts)])
    return hex_fraction(backend, exp.MD5(this=text))


def _fenced_draws(records: exp.Expr, backend: Backend) -> exp.Expr:
    """km_sample_records with its draws (the CTE ``p``) fenced (:meth:`.Backend.fenced`): its
    join tests the draw t three times (the bucket and both ends of the record's interval), and
    PostgreSQL, inlining the CTE, computed its md5 in each (942,448 proposals: 6.2 s)."""
    draws = records.find(exp.CTE)
    if draws is not None and isinstance(draws.this, exp.Select):
        draws.set("this", backend.fenced(draws.this))
    return records


def hex_fraction(backend: Backend, digest: exp.Expr) -> exp.Expr:
    """The first 8 hex digits of ``digest`` as a number in [0, 1) (backend hook for the digits)."""
    return exp.Div(this=exp.cast(backend.hex_prefix_value(digest), "DOUBLE PRECISION"),
                   expression=exp.Literal.number(float(2 ** 32)))


def statement(name: str, ell: int, backend: Backend) -> exp.Expr:
    """Named statement ``name`` with km_uniform / km_hex / km_binomial expanded for size ``ell``
    and ``backend``."""

    def expand(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Anonymous) and node.name.lower() == "km_uniform":
            return uniform(backend, *node.expressions)
        if isinstance(node, exp.Anonymous) and node.name.lower() == "km_hex":
            return hex_fraction(backend, node.expressions[0])
        if isinstance(node, exp.Anonymous) and node.name.lower() == "km_binomial":
            return binomial(node.expressions[0], ell)
        return node

    return parsed(name).copy().transform(expand)


class ProposedPart(NamedTuple):
    """Proposals of one round not yet counted: their size, how many, the round's parameters."""

    ell: int
    proposals: int
    params: dict[str, int]


@dataclass
class Sampler:
    """Draws samples of one dataset's record-item table; tables named by ``table(purpose)``."""

    backend: Backend
    items: exp.Table
    table: Callable[[str], exp.Table]
    seed: int
    stream: int
    first_holder: bool = False  # the rejection rule (module docstring)
    rounds: int = 0
    acceptance: dict[int, float] = field(default_factory=dict)
    # (accepted, proposed) of every round counted so far, by size: the acceptance is theirs
    measured: dict[int, tuple[int, int]] = field(default_factory=dict)
    proposals: int = 0
    round_cap: dict[int, int] = field(default_factory=dict)
    prepared: tuple[int, float, int] | None = None  # (ℓ, Z, buckets) of the kept tables
    # the last propose() until keep() or discard()
    _pending: ProposedPart | None = None
    # the parts kept in the pool's round and not yet counted
    _kept: ProposedPart | None = None

    def _count(self, table: exp.Table, column: str = "*") -> int:
        what = exp.Star() if column == "*" else exp.Distinct(expressions=[exp.column(column)])
        return int(self.backend.scalar(exp.select(exp.func("count", what)).from_(table.copy())))

    def draw(self, ell: int, count: int, target: exp.Table) -> int:
        """Create ``target(sid, item_id, supp)`` with at least ``count`` samples of size ℓ
        (fewer only if Omega^ℓ is empty); ``supp`` is the itemset's support in D.

        The per-size tables (record weights, their buckets, D as nodes) depend on D and ℓ
        only, so they are made by the first draw of a size and kept for the next draws of the
        same size (a sampled search draws a pool in several parts); :meth:`release` drops them.
        """
        b = self.backend
        if ell == 1:
            self.rounds += 1
            params = {"seed": self.seed, "ell": 1, "n": count,
                      "round": self.stream * 1_000_000 + self.rounds}
            b.materialize(target, statement("km_sample_singletons", 1, b), params,
                          {"items": self.items})
            self.proposals += count
            return self._count(target, "sid")
        self._check_work(ell, count)
        z, nb = self._prepare(ell)
        self._empty(target)
        have = 0
        if nb:
            while have < count:
                have = self._round(ell, count - have, have, z, nb, target)
        return have

    def _empty(self, target: exp.Table) -> None:
        """``target(sid, item_id, supp)`` with no rows."""
        self.backend.materialize(target, exp.select("sid", "item_id", "supp").from_(
            exp.select(exp.cast(exp.Literal.number(0), "BIGINT").as_("sid"),
                       exp.cast(exp.Literal.number(0), "BIGINT").as_("item_id"),
                       exp.cast(exp.Literal.number(0), "BIGINT").as_("supp")).subquery("e"))
            .where(exp.false()))

    def _check_work(self, ell: int, count: int) -> None:
        """Refuse a draw whose rounds would hash more than MAX_SAMPLING_ROWS rows; remember the
        largest round that stays within MAX_ROUND_ROWS."""
        work = self._work(ell, count)
        if work is not None and work.too_large():
            raise WorkTooLargeError(
                f"drawing {count:,} itemsets of size {ell} would hash about {work.rows:,.0f} "
                f"(record, item) rows, more than the {MAX_SAMPLING_ROWS:,} allowed: records are "
                f"drawn by their number of {ell}-itemsets, and record id {work.longest_record} "
                f"holds {work.longest_length:,} items. Use the exact check for this size "
                "(--sigma 1), or remove or split that record")
        if work is not None:
            self.round_cap[ell] = work.round_proposals()

    def _prepare(self, ell: int) -> tuple[float, int]:
        """(Z, buckets) of size ℓ; makes recw, recb and snodes unless this size has them."""
        if self.prepared is not None and self.prepared[0] == ell:
            return self.prepared[1], self.prepared[2]
        self.release_size()
        b = self.backend
        for purpose in ("recw", "recb", "snodes"):  # left by an earlier sampler of the names
            b.drop_table(self.table(purpose))
        recw = self.table("recw")
        b.materialize(recw, statement("km_sample_weights", ell, b), {"ell": ell},
                      {"items": self.items})
        nb = self._count(recw)
        z = float(b.scalar(exp.select(exp.func("max", exp.column("hi"))).from_(recw.copy()))
                  or 0.0)
        if nb:
            b.materialize(self.table("recb"), statement("km_sample_buckets", ell, b),
                          {"z": z, "nb": nb}, {"recw": recw})
            b.materialize(self.table("snodes"), "km_sample_records_as_nodes", None,
                          {"items": self.items, "recw": recw})
        self.prepared = (ell, z, nb)
        return z, nb

    def release_size(self) -> None:
        """Drop the per-size tables kept between draws (a no-op when there are none)."""
        if self.prepared is not None:
            for purpose in ("recw", "recb", "snodes"):
                self.backend.drop_table(self.table(purpose))
        self.prepared = None

    def release(self) -> None:
        """Drop every table this sampler keeps between draws (and a round left pending)."""
        self.discard()
        self.release_size()

    def _work(self, ell: int, count: int) -> SamplingWork | None:
        """The estimated work of drawing ``count`` ℓ-itemsets (this sampler hashes every item
        of a proposed record); None where a proposal's work does not grow with its record."""
        return sampling_work(self.backend, self.items, ell, count)

    def _subsets(self, ell: int, params: dict[str, int], props: exp.Table,
                 subs: exp.Table) -> None:
        """``subs(pid, item_id)``: a uniform ℓ-subset of each proposed record (its ℓ items of
        smallest hash; reads every item of the record, see risk.PositionSampler)."""
        self.backend.materialize(subs, statement("km_sample_subsets", ell, self.backend),
                                 params, {"props": props, "items": self.items})

    def _round_size(self, ell: int, wanted: int, slack: float) -> int:
        """Proposals for about ``wanted`` accepted samples at the acceptance seen so far.

        Before the first round of a size the acceptance is unknown: assume every proposal is
        accepted (at ℓ >= 4 on BMS2 0.99 are: itemsets of long records are unique), and let a
        later round make up for a lower rate. Assuming 0.5 drew 2.4x the samples asked for at
        ℓ = 5, all of which were then checked."""
        rate = self.acceptance.get(ell, 1.0)
        return min(_MAX_PROPOSALS, self.round_cap.get(ell, _MAX_PROPOSALS),
                   math.ceil(wanted / max(rate, 0.01) * slack) + 16)

    def _propose(self, ell: int, n: int, z: float, nb: int,
                 first: int = 1) -> dict[str, int]:
        """``n`` proposals numbered from ``first`` (1: a new round): ``props`` (pid,
        record_id, rnk) and ``subs`` (pid, item_id: an ℓ-subset of each record); returns the
        round's parameters."""
        b = self.backend
        if first == 1:
            self.rounds += 1
        props, subs = self.table("props"), self.table("subs")
        common = {"seed": self.seed, "ell": ell, "round": self.stream * 1_000_000 + self.rounds}
        b.materialize(props, _fenced_draws(statement("km_sample_records", ell, b), b),
                      {**common, "first": first, "last": first + n - 1, "z": z, "nb": nb},
                      {"recb": self.table("recb")})
        self._subsets(ell, common, props, subs)
        self.proposals += n
        return common

    def _accepted(self, common: dict[str, int], subs: exp.Table, ranks: exp.Table) -> exp.Table:
        """``pacc(pid, supp)``: the proposals of ``subs(pid, item_id)`` the rejection rule
        accepts (module docstring); ``ranks(pid, rnk)`` holds their records' ranks (and may
        hold other proposals'). The caller drops it (:meth:`_drop_round`).

        By support, proposals of one itemset share a vid (:func:`.itemsets.set_ids`), so
        that each itemset's support is counted once (an itemset is proposed in proportion to
        its support: frequent ones repeat). By first holder each proposal is its own itemset,
        bounded by its own record: a repeated itemset shares its prefixes in the support plan
        all the same, and the keys (a grouping of every proposal's ℓ items) are not made (at
        1 M CDR-like users and σ = 0.999, 262 s of the 3,600 made them)."""
        b, accepted = self.backend, self.table("pacc")
        keys, itemsets = self.table("pkeys"), self.table("pitems")
        counted, bounds = self.table("psupp"), self.table("pbounds")
        for table in (accepted, keys, itemsets, counted, bounds):
            b.drop_table(table)
        if not self.first_holder:
            b.materialize(keys, set_ids(subs, "pid", "item_id", common["ell"]))
            b.materialize(itemsets, "km_proposal_itemsets", None, {"pkeys": keys, "subs": subs})
            itemset_support(b, itemsets, self.table("snodes"), counted, self.table)
            b.materialize(accepted, statement("km_accepted_by_support", common["ell"], b),
                          common, {"pkeys": keys, "support": counted})
            return accepted
        b.materialize(itemsets, "km_proposals_as_itemsets", None, {"subs": subs})
        b.materialize(bounds, "km_proposal_bounds", None, {"subs": subs, "ranks": ranks})
        itemset_support(b, itemsets, self.table("snodes"), counted, self.table, bounds=bounds)
        b.materialize(accepted, "km_accepted_first_holders", None,
                      {"pbounds": bounds, "holders": counted})
        return accepted

    def _drop_round(self) -> None:
        for purpose in ("props", "subs", "pkeys", "pitems", "psupp", "pbounds", "pacc"):
            self.backend.drop_table(self.table(purpose))

    def _round(self, ell: int, missing: int, have: int, z: float, nb: int,
               target: exp.Table) -> int:
        b = self.backend
        n = self._round_size(ell, missing, 1.2)
        common = self._propose(ell, n, z, nb)
        fresh, merged = self.table("fresh"), self.table("sunion")
        accepted = self._accepted(common, self.table("subs"), self.table("props"))
        b.materialize(fresh, "km_sample_accept", {"offset": have},
                      {"subs": self.table("subs"), "accepted": accepted})
        taken = self._count(fresh, "sid")
        self._measure(ell, taken, n)
        b.materialize(merged, "km_sample_union", {"limit": have + missing},
                      {"samples": target, "fresh": fresh})
        self._drop_round()
        b.drop_table(fresh)
        b.replace_table(target, merged)
        return have + min(taken, missing)

    # ---- proposals first: a pool that fails costs no support in D ----------------------------
    def knows_acceptance(self, ell: int) -> bool:
        """Whether a draw of size ℓ measured the acceptance, which sizes a round of proposals."""
        return ell in self.acceptance

    def propose(self, ell: int, count: int, target: exp.Table) -> int:
        """Create ``target(sid, item_id, supp)`` with a part of proposals, about enough for
        ``count`` accepted samples; ``supp`` is NULL. Returns how many.

        The rejection step (supp(C) in D of each distinct proposal, the dearest statement of a
        round on large data) waits: a caller that finds a proposal violating k counts the
        supports of those alone (:meth:`accept_among`) and may :meth:`discard` the pool; a
        clean part goes to :meth:`keep`, and :meth:`accept_kept` counts the samples among all
        the parts kept, in one pass. Parts kept together are one round (proposals numbered on), so
        their uniform numbers never repeat. Needs the size's acceptance
        (:meth:`knows_acceptance`): a first draw of the size measures it.
        """
        if ell not in self.acceptance:
            raise RuntimeError(f"propose() needs a draw() of size {ell} before it")
        if self._pending is not None or (self._kept is not None and self._kept.ell != ell):
            # its proposals would be numbered again: keep() or discard() the last part first
            raise RuntimeError("propose() after a part neither kept nor discarded")
        self._check_work(ell, count)
        z, nb = self._prepare(ell)
        n = self._round_size(ell, count, 1.0)
        first = self.kept() + 1
        common = self._propose(ell, n, z, nb, first)
        self.backend.materialize(target, "km_proposals_as_samples", None,
                                 {"subs": self.table("subs")})
        self._pending = ProposedPart(ell, n, common)
        return n

    def accept_among(self, chosen: exp.Table, target: exp.Table) -> int:
        """``target(sid, item_id, supp)``: the proposals of the last :meth:`propose` whose sid
        is in ``chosen(sid, ...)`` and that the rejection rule accepts (the test of
        :meth:`draw`), sid unchanged, counting in D for those itemsets only; returns how
        many.

        A part whose violating proposals are all rejected holds no violating sample: the
        caller may still :meth:`keep` it."""
        if self._pending is None:
            raise RuntimeError("accept_among() needs a propose() before it")
        common = self._pending.params
        b = self.backend
        among = self.table("csubs")
        try:
            b.materialize(among, "km_proposals_among", None,
                          {"subs": self.table("subs"), "chosen": chosen})
            accepted = self._accepted(common, among, self.table("props"))
            b.materialize(target, "km_accepted_proposals", None,
                          {"subs": among, "accepted": accepted})
        finally:
            for purpose in ("csubs", "pkeys", "pitems", "psupp", "pbounds", "pacc"):
                b.drop_table(self.table(purpose))
        return self._count(target, "sid")

    def keep(self) -> None:
        """Add the last part's proposals to the pool's kept ones (no support counted)."""
        if self._pending is None:
            raise RuntimeError("keep() needs a propose() before it")
        ell, n, common = self._pending
        b, kept, merged = self.backend, self.table("ksubs"), self.table("kunion")
        ranks = self.table("kranks")
        if self._kept is None:
            b.materialize(kept, exp.select("pid", "item_id").from_(self.table("subs").copy()))
            b.materialize(ranks, exp.select("pid", "rnk").from_(self.table("props").copy()))
            self._kept = ProposedPart(ell, n, common)
        else:
            b.materialize(merged, "km_kept_proposals", None,
                          {"kept": kept, "subs": self.table("subs")})
            b.replace_table(kept, merged)
            b.materialize(merged, "km_kept_ranks", None,
                          {"kept": ranks, "props": self.table("props")})
            b.replace_table(ranks, merged)
            self._kept = ProposedPart(ell, self._kept.proposals + n, common)
        self._pending = None
        self._drop_round()

    def kept(self) -> int:
        """Proposals kept and not yet counted."""
        return self._kept.proposals if self._kept is not None else 0

    def accept_kept(self) -> int:
        """How many of the kept proposals the rejection rule accepts (:meth:`draw`'s, module
        docstring): uniform, independent samples of Omega^ℓ. One support count for all the
        parts kept; they are then forgotten (counted)."""
        if self._kept is None:
            return 0
        ell, n, common = self._kept
        b, kept = self.backend, self.table("ksubs")
        try:
            counted = self._accepted(common, kept, self.table("kranks"))
            accepted = int(b.scalar("km_sample_accepted_count", None, {"accepted": counted}))
        finally:
            self._drop_round()
            b.drop_table(kept)
            b.drop_table(self.table("kranks"))
        self._kept = None  # the next part starts a new round
        self._measure(ell, accepted, n)
        return accepted

    def _measure(self, ell: int, accepted: int, proposed: int) -> None:
        """Count a round's outcome into the size's acceptance, which sizes the next rounds.

        The acceptance is a property of D and ℓ alone (the share of proposals the rule keeps),
        so every round counted so far estimates it: pooled, not the last round's. A draw's
        last round is often small (it makes up a few missing samples), and its share alone
        once sized the next part 1.65x too small (the part then held 267 of 457 samples)."""
        taken, total = self.measured.get(ell, (0, 0))
        taken, total = taken + accepted, total + proposed
        self.measured[ell] = (taken, total)
        self.acceptance[ell] = max(taken / total, 0.001)

    def discard(self) -> None:
        """Forget the last part and every kept proposal, without counting supports (the
        pool failed); the next :meth:`propose` starts a new round."""
        self._pending, self._kept = None, None
        self._drop_round()
        self.backend.drop_table(self.table("ksubs"))
        self.backend.drop_table(self.table("kranks"))

