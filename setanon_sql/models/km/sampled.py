"""σ-k^m for one itemset size: Alg. 2 l.6-15 with each pool drawn in growing parts.

Alg. 2 keeps a set S of k-anonymous samples drawn (uniformly and independently, from the
ORIGINAL data, l.8) since the last merge; a violating sample triggers a merge (l.12-14) and
resets S (l.15); the size is done when |S| reaches γ (l.7) with no merge in between, so the
γ certifying samples were all drawn after the final cut was fixed, as Theorem 1 needs.

The decision on a pool is sequential (:class:`PoolRule`): the pool fails, with certainty, as
soon as one sample violates k (Alg. 2 merges on any violation), and passes when γ samples
are clean. So a pool after the first of a size is drawn in parts of growing size
(``first_part``, doubling, never past γ) and each part is checked as soon as it is drawn: a
pool that will fail stops at the first part holding a violation instead of drawing all γ
samples, and the clean samples of a part
are not kept (the cut does not change while S grows, so they are never re-checked). γ is
unchanged (Theorem 1's count, :mod:`.samplesize`): only the work spent on pools that fail is
saved. Each part's supports are counted for all of its generalized itemsets in one pass
(:mod:`.groupsupport`).

What is reused, and why that is allowed:

- **violating samples between merges**: after a failed part, only its violating samples are
  re-checked under the merged cut until none violates (a merge only coarsens nodes, and a
  record holding items under nodes A and B still holds items under their merged parents, so
  the support of a generalized sample never shrinks: a k-anonymous sample stays so). They
  steer the search only; S restarts empty (l.15), so they never certify it.
- **clean samples of a failed pool are NOT carried over**: they were clean under an earlier,
  finer cut and stay clean under the new one, but counting them would select the samples by
  the merges made in between (the violators are dropped and the rest kept), and the chance
  of γ clean samples would no longer be bounded by (1 - ε)^γ. Theorem 1 is applied to the
  samples drawn after the last merge only, as in Alg. 2.
- **proposals first** (the rejection sampler, :class:`.sampler.Sampler`): once a size's
  acceptance is known (its first part is drawn whole, which measures it and tells how many
  proposals make a part), a part is drawn as proposals (records by C(|r|, ℓ), an ℓ-subset of
  each) and checked against the cut before the rejection rule is decided in D (the
  first-holder rule, :mod:`.sampler`). The samples are the accepted proposals, as in
  :meth:`.sampler.Sampler.draw`; what changes is which proposals are decided, and when:

  - if some proposals violate k, they alone are decided: the part (and its pool)
    fails when one of them is accepted, and steers with the accepted ones, as Alg. 2 does;
    the pool's kept parts are dropped uncounted;
  - a part with no violating sample is kept, and the samples among all the kept parts of the
    pool are decided in one pass once they are expected to reach γ, not one pass per part
    (on 1 M CDR-like users these passes were most of the search, BENCHMARKS.md).

  So the samples and the decisions are those of the pool's parts drawn whole, except that a
  pool which reached γ clean samples within its kept parts may still fail on a later part
  before they are counted (a merge more, never a weaker certificate). A failed part's sample
  count (``samples``) is estimated from its ``proposals`` at the acceptance measured so far,
  and serves only the steering.
- **tables that depend on D only**: the sampler keeps its per-size tables across parts (the
  caller releases them, :meth:`.sampler.Sampler.release`), and <R, D> is materialized once
  per cut version.

With ``certify="auto"``, a size whose enumeration costs less than its first pool is steered
and decided by enumeration alone (:mod:`.enumsteer`): no sample is drawn; the pools below take
over from the cut it reached once a pass would cost more. Where a pass costs up to
FAILING_POOLS times that (:mod:`.exactcheck`), the pool's first part is a pilot of
``first_part(γ)`` samples instead of the whole pool: a violator in it means the pool fails
and the size needs merge rounds, which enumeration steers for less than samples do, so the
size is steered by enumeration from that cut (the pilot only chose the way; the certificate
is the enumeration's). A clean pilot is the pool's first part, and the rest of γ follows at
once.

A pool may also be decided by enumeration (``certify="auto"``, :mod:`.exactcheck`): before a
part is drawn, if enumerating the images of Ω^ℓ under the current cut costs less than the
samples still to draw, and no image violates k, the size is certified with certainty (exact
k^ℓ of the images implies σ-k^ℓ for every σ); with a few violating images, it is certified
when their share of Ω^ℓ is provably at most Theorem 1's ε. Otherwise nothing is decided and
the pool is drawn as before. The history's certifying entry says which way it went
(``certified_by``: "exact" or "samples").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.km.cleanimages import CleanImages, without_vids
from setanon_sql.models.km.cutsearch import CutSearch
from setanon_sql.models.km.enumsteer import steer_by_enumeration
from setanon_sql.models.km.exactcheck import (
    FAILING_POOLS,
    MAX_EXACT_ROWS,
    ExactCheck,
    sample_price,
)
from setanon_sql.models.km.groupsupport import (
    SLICE_FROM_RECORDS,
    group_violations,
    record_count,
    record_slices,
)
from setanon_sql.models.km.itemsets import set_ids
from setanon_sql.models.km.mcmc import McmcSampler
from setanon_sql.models.km.sampler import Sampler
from setanon_sql.models.km.samplesize import gamma, gamma_bound
from setanon_sql.models.km.shapes import record_lengths
from setanon_sql.progress import report
from setanon_sql.sqlrender import with_alias

# The first pool of a size is drawn whole (up to MAX_PART): at a new size most samples
# violate k, and the violating samples of a failed part are what steers the merges; with
# smaller parts the search made more merge rounds (BMS2 k = 5, m = 3: 146 rounds with parts of
# 1,000, 71 with parts of γ / 8, 47 with whole pools; each round a dozen statements), costing
# more than the samples saved. Later pools start at γ / 8 (within [1,000, 50,000]) and
# double: a pool that fails late in a size holds few violating samples, and drawing all γ of
# them would be mostly waste. "Whole" stops at WHOLE_MAX: σ = 0.99 (γ = 45,845) is drawn whole
# as before, while σ = 0.999 (γ = 5,866,617) draws 100,000 first (then doubles while clean);
# at a new size that is thousands of violating samples to steer by, and drawing 1 M samples of
# size 5 to find them cost about 2 minutes on BMS-WebView-2 per size.
FIRST_SHARE, FIRST_MIN, FIRST_MAX = 8, 1_000, 50_000
WHOLE_MAX = 100_000
MAX_PART = 1_000_000  # samples drawn and checked at once (memory of one part's tables)


def first_part(count: int) -> int:
    """The size of the first part of a pool of ``count`` samples (see FIRST_SHARE)."""
    return min(count, max(FIRST_MIN, min(count // FIRST_SHARE, FIRST_MAX)))


@dataclass(frozen=True)
class PoolRule:
    """Alg. 2 l.7-15 as a sequential decision on one pool of γ samples.

    ``decide(clean, violating)``: 'failed' once any sample violates k (certain: Alg. 2 merges
    on one violation), 'passed' once ``gamma`` samples are clean, else 'continue'. A pool
    passes a cut whose share of violating itemsets is h with probability (1 - h)^γ, at most
    δ of Theorem 1 for h >= ε (tests/unit/test_km_pool.py measures it).
    """

    gamma: int
    first: int = 0  # 0: first_part(gamma)
    largest: int = MAX_PART

    def decide(self, clean: int, violating: int) -> str:
        if violating:
            return "failed"
        return "passed" if clean >= self.gamma else "continue"

    def next_part(self, clean: int, last: int | None, whole: bool = False) -> int:
        """The size of the next part: the first part (all of γ, at most WHOLE_MAX, if
        ``whole``), then twice the last, up to γ - clean and at most ``largest``."""
        first = min(self.gamma, WHOLE_MAX) if whole else (self.first or first_part(self.gamma))
        size = first if last is None else 2 * last
        return max(1, min(size, self.largest, self.gamma - clean))


def group_samples(backend: Backend, pool: exp.Table, cut: exp.Table, keys: exp.Table,
                  groups: exp.Table, nodes: exp.Table, widest: int | None = None) -> None:
    """keys(sid, vid, node_id) and groups(vid, node_id, n): the pool generalized by ``cut``,
    identical generalized itemsets sharing a vid (:func:`.itemsets.set_ids`, as wide as
    ``widest``, the most nodes a generalized sample can hold). The search's own cut gives one
    node per item, so it passes ℓ; verify reads a published map, which nothing here assumes to
    give one node per item, so without ``widest`` the widest generalized sample is counted.
    ``nodes`` is a work table (dropped here)."""
    backend.materialize(nodes, "km_sample_nodes", None, {"samples": pool, "cut": cut})
    try:
        if widest is None:
            widest = int(backend.scalar("km_sample_widest", None, {"nodes": nodes}) or 1)
        ids = set_ids(nodes, "sid", "node_id", widest)
        backend.materialize(keys, exp.select("n.sid", "i.vid", "n.node_id")
                            .from_(with_alias(nodes, "n"))
                            .join(ids.subquery("i"), on=exp.condition("i.sid = n.sid")))
    finally:
        backend.drop_table(nodes)
    backend.materialize(groups, "km_sample_groups", None, {"keys": keys})


def violating_count(backend: Backend, violations: exp.Table) -> int:
    """Samples behind the violating generalized itemsets (``violations`` has a row per node)."""
    return int(backend.scalar(
        exp.select(exp.func("coalesce", exp.func("sum", exp.column("n")), 0))
        .from_(exp.select("vid", "n").distinct().from_(violations.copy()).subquery("v"))))


@dataclass
class _Checker:
    """Checks samples against the current cut; <R, D> is made once per cut version."""

    gen: CutSearch
    k: int
    ell: int  # the samples' size: a generalized sample holds at most ℓ nodes (one per item)
    version: int = -1
    generalized: exp.Table | None = None
    lengths_of: tuple[int, list[tuple[int, int]]] | None = None
    slices_of: tuple[int, list[exp.Table]] | None = None
    record_count: int | None = None
    clean: CleanImages = field(init=False)
    violated: bool = False  # the last part checked had a violating group (``violating``)

    def __post_init__(self) -> None:
        self.clean = CleanImages(self.gen.backend, self.gen.table, self.ell)

    def _refresh(self) -> exp.Table:
        """<R, D> of the current cut version (made once per version): the first in full, each
        later one from the one before and the cut it was made of (:meth:`.cutsearch.CutSearch.
        generalized_since`), since a round's merges change the rows of a few nodes only."""
        if self.version != self.gen.version or self.generalized is None:
            previous, built_from = self.generalized, self.gen.table("gcutcopy")
            self._drop_slices()
            if previous is None:
                current = self.gen.generalized()
            else:
                current = self.gen.generalized_since(previous, built_from)
                self.gen.backend.drop_table(previous)
            self.generalized, self.version = current, self.gen.version
            self.gen.copy_cut(built_from)
        return self.generalized

    def _records(self) -> exp.Table | list[exp.Table]:
        """<R, D> as the check reads it: whole, or in slices once it holds SLICE_FROM_RECORDS
        records (made once per version, see :func:`.groupsupport.group_violations`)."""
        generalized = self._refresh()
        if self.slices_of is None or self.slices_of[0] != self.version:
            self._drop_slices()
            slices = (record_slices(self.gen.backend, generalized,
                                    lambda i: self.gen.table(f"gslice{i}"))
                      if self._record_count() >= SLICE_FROM_RECORDS else [])
            self.slices_of = (self.version, slices)
        return self.slices_of[1] or generalized

    def _record_count(self) -> int:
        """Records of <R, D>: those of D holding an item, whatever the cut, so counted once
        (not from a length histogram of each cut version's <R, D>)."""
        if self.record_count is None:
            self.record_count = record_count(self.gen.backend, self.gen.items)
        return self.record_count

    def _drop_slices(self) -> None:
        if self.slices_of is not None:
            for table in self.slices_of[1]:
                self.gen.backend.drop_table(table)
        self.slices_of = None

    def lengths(self) -> list[tuple[int, int]]:
        """(nodes per record, records) of <R, D>: what enumerating it costs."""
        generalized = self._refresh()
        if self.lengths_of is None or self.lengths_of[0] != self.version:
            self.lengths_of = (self.version, record_lengths(self.gen.backend, generalized))
        return self.lengths_of[1]

    def check(self, pool: exp.Table) -> tuple[int, str]:
        """(violating samples, plan); leaves ``sviol`` and ``skeys`` for the caller. Images
        found clean under the same cut in a part :meth:`goes_on` kept are not counted again
        (:mod:`.cleanimages`); this part's counted groups wait for that call."""
        gen, b = self.gen, self.gen.backend
        records = self._records()
        groups, counted, violating = gen.table("groups"), self.counted, self.violating
        self._drop_part()  # the last part's, had its pool not gone on
        group_samples(b, pool, gen.cut, gen.table("skeys"), groups, gen.table("sgnodes"),
                      widest=self.ell)
        try:
            unknown = self.clean.unknown(groups, self.version, counted)
            plan = group_violations(b, unknown, records, self.k, gen.table("sviol"),
                                    gen.table)
            if unknown is groups:
                b.replace_table(counted, groups)
        finally:
            b.drop_table(groups)
        bad = violating_count(b, gen.table("sviol"))
        self.violated = bool(bad)
        if bad:  # the caller may narrow sviol to the violating samples: keep what it holds
            b.materialize(violating, exp.select(exp.column("vid", quoted=True)).distinct()
                          .from_(gen.table("sviol")))
        return bad, plan

    @property
    def counted(self) -> exp.Table:
        """The groups the last :meth:`check` counted (those whose image was not kept)."""
        return self.gen.table("gcounted")

    @property
    def violating(self) -> exp.Table:
        """The vids of the groups among them found below k (made only when there is one)."""
        return self.gen.table("gviolating")

    def goes_on(self) -> None:
        """The pool goes on under this cut after the last :meth:`check` (no violating sample
        in it, or none the rejection rule kept): keep its clean images for the next parts.
        Made here, not in :meth:`check`: most parts are clean (their clean groups are all
        counted, no anti-join), and a failing part's are never needed."""
        clean: exp.Table | exp.Select = self.counted
        if self.violated:
            clean = without_vids(self.counted, self.violating)
        self.clean.add(clean, self.version)
        self._drop_part()

    def _drop_part(self) -> None:
        self.gen.backend.drop_table(self.counted)
        self.gen.backend.drop_table(self.violating)

    def drop(self) -> None:
        self.clean.forget()
        self._drop_part()
        self._drop_slices()
        if self.generalized is not None:
            self.gen.backend.drop_table(self.generalized)
        self.gen.backend.drop_table(self.gen.table("gcutcopy"))
        self.generalized = None


@dataclass
class Steering:
    """When to try the enumeration certificate between merge rounds (``certify="auto"``).

    The violating samples still left of a failed part estimate the violating share of Ω^ℓ
    under the current cut; once that estimate is at most ε (Theorem 1's, as the certificate
    needs), the certificate may already hold, and every round it saves is a dozen statements
    and more merges than σ asks for. After a try that bounded the share at s > ε, the next
    waits until the violating samples fell by ε / s. Only *when* to try depends on the samples;
    what is certified is computed from the cut and D alone (:mod:`.exactcheck`), so the
    guarantee is the certificate's, whatever the samples were.
    """

    drawn: int  # samples of the part that failed
    epsilon: float
    wait_below: float = 0.0  # violating samples at which to try again (0: by the estimate)

    def try_now(self, bad: int) -> bool:
        if self.wait_below:
            return bad <= self.wait_below
        return bad <= self.epsilon * self.drawn

    def failed(self, bad: int, share: float) -> None:
        self.wait_below = bad * min(0.5, self.epsilon / share) if share > 0 else bad / 2


def _accepted_violators(gen: CutSearch, sampler: Sampler, pool: exp.Table, keys: exp.Table,
                        violations: exp.Table) -> int:
    """Narrow ``pool`` (a part's proposals, some violating k), ``keys`` and ``violations`` to
    the violating proposals the rejection step accepts: the part's violating samples, as a
    check of them would find (the same cut); returns how many."""
    b = gen.backend
    chosen, narrowed = gen.table("sviolp"), gen.table("sviolk")
    try:
        b.materialize(chosen, "km_violating_samples", None,
                      {"samples": pool, "keys": keys, "violations": violations})
        b.drop_table(pool)
        if not sampler.accept_among(chosen, pool):
            return 0
        b.materialize(narrowed, "km_sample_keys_among", None, {"keys": keys, "samples": pool})
        b.replace_table(keys, narrowed)
        b.materialize(narrowed, "km_violations_among", None,
                      {"keys": keys, "violations": violations})
        b.replace_table(violations, narrowed)
        return violating_count(b, violations)
    finally:
        b.drop_table(chosen)
        b.drop_table(narrowed)


def enforce_sampled(gen: CutSearch, sampler: Sampler | McmcSampler, ell: int, k: int,
                    sigma: float, error: str, batch: float,
                    certify: str = "auto") -> list[dict[str, Any]]:
    """Generalize until γ(σ) samples of size ℓ drawn after the last merge are all k-anonymous
    (or, with ``certify="auto"``, no image of an ℓ-itemset violates k where enumerating them
    is the cheaper check); one history entry per merge round, and one for the certifying pool.
    """
    b = gen.backend
    rule = PoolRule(gamma(sigma))
    checker = _Checker(gen, k, ell)
    exact = ExactCheck(gen, ell, k, sigma) if certify == "auto" else None
    pool, keys, violations = gen.table("samples"), gen.table("skeys"), gen.table("sviol")
    narrowed = gen.table("snarrow")
    history: list[dict[str, Any]] = []
    clean, part, parts, failed_pools = 0, None, 0, 0
    proposed = 0  # parts checked as proposals before the rejection step
    pilot = False  # the first part decides between samples and enumeration (FAILING_POOLS)
    if exact is not None:
        # While one enumeration costs less than the first pool, it steers the merges itself
        # (:mod:`.enumsteer`); past that, the samples go on from the cut it reached.
        first_pool = sample_price(ell) * min(rule.gamma, WHOLE_MAX)  # enumerated rows
        steered = steer_by_enumeration(exact, error, batch, min(MAX_EXACT_ROWS, first_pool))
        if steered is not None:
            return steered
        history.extend(exact.steered)
        pilot = exact.first_rows <= min(MAX_EXACT_ROWS, FAILING_POOLS * first_pool)
    try:
        while True:
            whole = not failed_pools and not pilot
            # samples expected among the proposals kept and not yet counted (proposals first)
            kept = (int(sampler.kept() * sampler.acceptance.get(ell, 1.0))
                    if isinstance(sampler, Sampler) else 0)
            part = rule.next_part(clean + kept, part, whole=whole)
            # Samples this pool will surely draw next: all still missing once a part came out
            # clean (or the pool is drawn whole), else the part (a failing pool stops there).
            ahead = rule.gamma - clean if clean or whole else part
            if exact is not None and exact.worth(checker.lengths(), ahead) \
                    and exact.certifies(checker.lengths()):
                history.append({"size": ell, "certified_by": "exact", "clean_samples": clean,
                                "gamma": rule.gamma, "parts": parts, "proposed_parts": proposed,
                                "failed_pools": failed_pools, **exact.figures()})
                return history
            # The first part of a size is drawn whole (its acceptance is not known yet: with
            # proposals for γ samples at ℓ = 2 on CDR-like data it held 1/20 of them, and
            # steered by as few violators); later parts are proposed, then checked.
            proposer = (sampler if isinstance(sampler, Sampler)
                        and sampler.knows_acceptance(ell) else None)
            if proposer is not None:
                drawn = proposer.propose(ell, part, pool)
            else:
                drawn = sampler.draw(ell, part, pool)
            parts += 1
            proposed += proposer is not None
            if not drawn:  # Omega^ℓ is empty: no itemset of size ℓ to protect
                b.drop_table(pool)
                history.append({"size": ell, "certified_by": "empty", "gamma": rule.gamma})
                return history
            bad, plan = checker.check(pool)
            proposals = drawn
            if proposer is not None:
                if bad:  # which violating proposals are samples: supports of those alone
                    bad = _accepted_violators(gen, proposer, pool, keys, violations)
                if bad:
                    proposer.discard()  # the pool fails: its kept parts are never counted
                    # the part's samples, estimated: its proposals at the acceptance so far
                    drawn = max(bad, round(proposals * proposer.acceptance[ell]))
                else:  # no violating sample: keep the part; count once enough are kept
                    proposer.keep()
                    expected = proposer.kept() * proposer.acceptance[ell]
                    drawn = proposer.accept_kept() if clean + expected >= rule.gamma else 0
            if pilot:
                pilot, part = False, None  # after a clean pilot, the rest of γ at once
                if bad:  # the pool fails: enumeration steers the merges instead of samples
                    steered = steer_by_enumeration(exact, error, batch, MAX_EXACT_ROWS) \
                        if exact is not None else None
                    if steered is not None:
                        steered[-1].update(pilot_samples=drawn, pilot_violating_samples=bad)
                        return history + steered
            report("search", f"size {ell}: {clean + drawn - bad:,} of {rule.gamma:,} clean "
                             f"samples, {bad:,} violate k", done=clean + drawn - bad,
                   total=rule.gamma)
            outcome = rule.decide(clean + drawn - bad, bad)
            if outcome == "continue":
                checker.goes_on()
            if outcome != "failed":
                clean += drawn
                for table in (pool, keys, violations):
                    b.drop_table(table)
                if outcome == "passed":
                    history.append({"size": ell, "certified_by": "samples",
                                    "clean_samples": clean, "gamma": rule.gamma,
                                    "parts": parts, "proposed_parts": proposed,
                                    "failed_pools": failed_pools,
                                    "plan": plan,
                                    "remembered_images": checker.clean.remembered,
                                    **(exact.figures() if exact is not None else {})})
                    return history
                continue
            failed_pools += 1
            # Alg. 2 l.12-15: merge for the violating samples, re-check only them until none
            # violates; then S restarts empty (a new pool, first part again).
            steer = Steering(drawn, gamma_bound(sigma)[1])
            while bad:
                merges = gen.merge(violations, error, batch)
                b.materialize(narrowed, "km_violating_samples", None,
                              {"samples": pool, "keys": keys, "violations": violations})
                for table in (violations, keys, pool):
                    b.drop_table(table)
                pool, narrowed = narrowed, pool  # the two names take turns: no copy back
                history.append({"size": ell, "violating_samples": bad, "samples": drawn,
                                "proposals": proposals,
                                "merges": merges, "plan": plan})
                if not merges:
                    raise gen.no_merge_error(k)
                drawn = bad
                bad, plan = checker.check(pool)
                if bad and exact is not None and steer.try_now(bad) \
                        and exact.worth(checker.lengths(), rule.gamma):
                    if exact.certifies(checker.lengths()):
                        history.append({"size": ell, "certified_by": "exact",
                                        "clean_samples": 0, "gamma": rule.gamma,
                                        "parts": parts, "proposed_parts": proposed,
                                    "failed_pools": failed_pools,
                                        "while_steering": True, **exact.figures()})
                        return history
                    steer.failed(bad, exact.last.get("share_bound", 1.0))
            for table in (pool, keys, violations):
                b.drop_table(table)
            clean, part = 0, None
    finally:
        if isinstance(sampler, Sampler):
            sampler.discard()  # proposals a certificate made needless, or a failed statement's
        checker.drop()
        if exact is not None:
            exact.drop()
        for table in (pool, narrowed, keys, violations):
            b.drop_table(table)
