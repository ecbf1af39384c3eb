"""Certifying a sampled size by enumeration, when that is cheaper than drawing its samples.

Definition 1 (Acs et al.): the output is σ-k^ℓ-anonymous when an itemset x drawn uniformly from
Ω^ℓ (the ℓ-itemsets of the ORIGINAL data) has a generalization R(x) with support >= k in
<R, D> with probability >= σ. If *no* x ∈ Ω^ℓ has R(x) below k, that probability is 1, which
is >= σ for every σ: the cut is then σ-k^ℓ-anonymous with certainty (no δ, no ε), a stronger
statement than the γ clean samples of Theorem 1 give.

Which itemsets of <R, D> are images: R(x) has 1..ℓ nodes (two items of x under one node make
it shorter). A j-itemset G of <R, D> is R(x) for some x ∈ Ω^ℓ exactly when some record holding
G has at least ℓ original items under G's nodes (take one item under each node, the other
ℓ - j among the rest). So the check counts, for j = ℓ, ℓ - 1, ..., 1, the j-itemsets of <R, D>
with support in [1, k) one of whose holders has >= ℓ items under them
(:func:`.itemsets.image_violations`): zero at every j certifies the size. (The exact
search, :mod:`.exact`, counts ℓ-itemsets only, enough there because the smaller sizes were
made exact first; here they may have been sampled and still hold a few itemsets below k,
which matter at size ℓ only if they are images of ℓ-itemsets.)

A few violating images may still be a share of Ω^ℓ that σ allows. The check bounds that share
without sampling: the ℓ-itemsets of D whose image is a violating G lie in G's holders (fewer
than k records), and a holder r with c_i items under G's i-th node holds
Σ_{S ⊆ G} (-1)^{|G| - |S|} C(Σ_{i ∈ S} c_i, ℓ) ℓ-subsets whose image is exactly G
(inclusion-exclusion), which is also Σ over a_i >= 1 with Σ a_i = ℓ of Π_i C(c_i, a_i) (a_i
items under G's i-th node); :func:`.itemsets.exact_cover_count` takes the form with fewer
terms, and C(Σ c_i, ℓ), larger, only where both have too many. Summed over violating images
and holders this is an upper bound B on the violating itemsets of Ω^ℓ (computed on the rows of
itemsets below k only; :mod:`.enumsteer` steers by the same bound). |Ω^ℓ| is bounded from below
by :func:`omega_floor`: counted exactly where that enumerates at most OMEGA_ROWS rows, else the
larger of C(|r|, ℓ) for the longest record r (its ℓ-subsets are distinct itemsets that occur)
and the Bonferroni bound Σ_r C(|r|, ℓ) - Σ_{r < r'} C(|r ∩ r'|, ℓ) over the OMEGA_RECORDS
longest records (the union of their ℓ-subsets is part of Ω^ℓ). So the violating share
h = (violating itemsets) / |Ω^ℓ| <= B / omega_floor, exactly, and the size is certified
when that bound is <= ε, the ε of Theorem 1 for this σ ((1 - ε)(1 - δ) = σ, so ε < 1 - σ and
Definition 1 holds with certainty). ε rather than 1 - σ: the sampled pool passes cuts whose
share is below ε (it fails those above with probability >= 1 - δ), and the verifier's fresh
γ samples then pass the one-sided bound at 1 - σ; a share of 0.9 × (1 - σ) would leave verify
inconclusive. Where the bound is above ε (no long record, or many violating images) nothing
is decided: the pool goes on being drawn exactly as it would have been, and the check is not
repeated until the cut changes. The guarantee is never weaker than the pool's: a cut is passed
either with its violating share <= ε < 1 - σ computed (Definition 1 holds with probability 1)
or by γ clean samples drawn uniformly after the last merge (Theorem 1); the check uses no
randomness, so it selects nothing among the samples.

When: the check enumerates Σ_r Σ_{j <= ℓ} C(|g_r|, j) rows (|g_r| = nodes of record r under the
cut), known before it runs from one aggregate of <R, D>. It runs when that is below
:func:`sample_price` × the samples the pool would draw next, and at most MAX_EXACT_ROWS. On a
fine cut (long generalized records) it is skipped; as merges shorten the records it becomes
cheap, and at σ = 0.999 (5,866,617 samples per pool) it is cheap long before the pool would be.
That price is a full enumeration's; only the first try of a size pays it. The violating images
are kept (:class:`.imagetrack.ImageTracker`), and a later try, on a cut the merges changed
since, enumerates only the records holding a changed node (the images are those of a full
enumeration: tests compare them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from math import comb
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.km.cutsearch import CutSearch
from setanon_sql.models.km.imagetrack import ImageTracker
from setanon_sql.models.km.itemsets import (
    binomial,
    enumeration_joins,
    enumeration_rows,
    image_violations,
    itemset_occurrences,
    loosest_k,
)
from setanon_sql.models.km.levels import Level, for_each_level, levels_pay, rows_below_of
from setanon_sql.models.km.samplesize import gamma_bound
from setanon_sql.models.km.shapes import drop_shapes, record_lengths, record_shapes
from setanon_sql.sqlrender import with_alias

# Enumerated itemset rows of size ℓ that cost about as much as drawing and checking one sample
# (its draw, the proposal's support in D, its generalization, the support of its image), for
# ℓ = 1..7 (above 7 as at 7). A sample costs about the same at every size (65-95 µs
# on DuckDB), while an enumerated row gets dearer with ℓ (images of every size up to ℓ, each
# with an inclusion-exclusion count of up to 2^size terms): 44 ns at ℓ = 3 and 83 ns at ℓ = 4
# on Retail, 170-380 ns at ℓ = 5-7 on CDR-like users. The break-even points, about 1,500 /
# 1,100 / 430 / 550 / 250 rows a sample at ℓ = 3..7, are set a little lower here
# (BENCHMARKS.md, km, "Built (stop 83): the price of a sample by its size"). One price of 200 rows
# at every size (measured on BMS-WebView-2) sent Retail's sizes 3 and 4 to samples where
# enumerating was the cheaper check, and the certain one.
SAMPLE_ROWS: tuple[float, ...] = (1_200, 1_200, 1_200, 800, 400, 400, 200)


def sample_price(ell: int) -> float:
    """Enumerated rows of size ``ell`` that cost about as much as one sample (SAMPLE_ROWS)."""
    return SAMPLE_ROWS[min(ell, len(SAMPLE_ROWS)) - 1]


# A size whose first pool fails costs far more than that pool: the re-checks of its violators
# after each merge, then a new pool drawn in parts (Retail, k = 10, m = 3: 1,394 of the first
# 45,845 samples of size 3 violate, six merge rounds, then a pool of five parts). Where one
# enumeration pass costs more than the first pool's samples at :func:`sample_price` but at
# most FAILING_POOLS times that, a pilot part decides (:func:`.sampled.enforce_sampled`): a
# violator in it, and the size is steered by enumeration; a clean pilot is the pool's first
# part. 5 (1,000 rows a sample, when one price of 200 held for every size): BENCHMARKS.md,
# σ-k^m at scale.
FAILING_POOLS = 5
MAX_EXACT_ROWS = 200_000_000  # one check's self-join rows (its memory)


def cheaper_than_samples(lengths: list[tuple[int, int]], ell: int, samples: float,
                         rows: int | None = None) -> bool:
    """Whether enumerating the ℓ-itemsets of records with these (nodes, records) ``lengths``
    costs no more than ``samples`` samples at :func:`sample_price`, within MAX_EXACT_ROWS: the
    one rule by which the search's certificate (:meth:`ExactCheck.worth`) and verify
    (:func:`.verify.enumerated_shares`) choose enumeration over samples. ``rows``: what the
    enumeration builds, where the caller knows it is less than every itemset of every record
    (:meth:`.imagetrack.ImageTracker.start_rows`)."""
    if rows is None:
        rows = enumeration_rows(lengths, ell)
    return rows <= min(MAX_EXACT_ROWS, sample_price(ell) * samples)


# |Ω^ℓ| is counted exactly (distinct ℓ-itemsets of D) when that enumerates at most OMEGA_ROWS
# rows: on BMS-WebView-2 every 2-itemset (2.1 M rows, 722,045 distinct, where the longest
# record alone gives C(161, 2) = 12,880). Above, a Bonferroni bound over the OMEGA_RECORDS
# longest records: BMS-WebView-2 at ℓ = 3, 8.7 M (C(161, 3) = 682,640), at ℓ = 5, 3.9 G.
OMEGA_ROWS = 3_000_000
OMEGA_RECORDS = 200


def _record_lengths(items: exp.Table) -> exp.Select:
    return (exp.select(exp.column("record_id", quoted=True),
                       exp.func("count", exp.Star()).as_("len", quoted=True))
            .from_(items.copy()).group_by(exp.column("record_id", quoted=True)))


def _longest_records(items: exp.Table) -> exp.Select:
    """The rows of ``items`` of its ``:records`` longest records (ties: the smaller id)."""
    top = (_record_lengths(items)
           .order_by(exp.Ordered(this=exp.column("len", quoted=True), desc=True),
                     exp.column("record_id", quoted=True))
           .limit(exp.Placeholder(this="records")))
    return (exp.select(exp.column("record_id", "i", quoted=True).as_("record_id", quoted=True),
                       exp.column("item_id", "i", quoted=True).as_("item_id", quoted=True))
            .from_(with_alias(items, "i"))
            .join(top.subquery("t"), on=exp.column("record_id", "t", quoted=True).eq(
                exp.column("record_id", "i", quoted=True))))


def bonferroni_terms(longest: exp.Table, ell: int) -> exp.Select:
    """(Σ_r C(|r|, ℓ), Σ_{r < r'} C(|r ∩ r'|, ℓ)) over the records of ``longest``: the union
    of their ℓ-subsets has at least the first minus the second (Bonferroni), and is part of
    Ω^ℓ."""
    length = exp.column("len", quoted=True)
    own = (exp.select(exp.func("sum", binomial(length, ell)))
           .from_(_record_lengths(longest).subquery("r")))
    a, b = (exp.column("record_id", x, quoted=True) for x in ("a", "b"))
    shared = (exp.select(a.copy().as_("ra", quoted=True), b.copy().as_("rb", quoted=True),
                         exp.func("count", exp.Star()).as_("len", quoted=True))
              .from_(with_alias(longest, "a"))
              .join(with_alias(longest, "b"), on=exp.and_(
                  exp.column("item_id", "b", quoted=True).eq(
                      exp.column("item_id", "a", quoted=True)), b < a))
              .group_by(a.copy(), b.copy()))
    overlap = exp.select(exp.func("sum", binomial(length, ell))).from_(shared.subquery("s"))
    return exp.select(exp.func("coalesce", own.subquery(), exp.Literal.number(0.0)),
                      exp.func("coalesce", overlap.subquery(), exp.Literal.number(0.0)))


def omega_floor(backend: Backend, items: exp.Table, ell: int, scratch: exp.Table) -> int:
    """A lower bound on |Ω^ℓ|, the distinct ℓ-itemsets of ``items``: exact when enumerating
    them costs at most OMEGA_ROWS rows, else the larger of C(|r|, ℓ) for the longest record
    (its ℓ-subsets are distinct) and the Bonferroni bound of :func:`bonferroni_terms` over the
    OMEGA_RECORDS longest. ``scratch`` holds those records' rows (dropped here)."""
    length = exp.column("len", quoted=True)
    longest, rows = backend.query(
        exp.select(exp.func("max", length), exp.func("sum", binomial(length, ell)))
        .from_(_record_lengths(items).subquery("r")))[0]
    floor = comb(int(longest or 0), ell)
    if float(rows or 0) <= OMEGA_ROWS:
        nodes = [exp.column(f"n{j}", quoted=True) for j in range(1, ell + 1)]
        distinct = (exp.select(*nodes).distinct()
                    .from_(itemset_occurrences(items, ell, "item_id").subquery("o")))
        with enumeration_joins(backend, ell):
            return int(backend.scalar(exp.select(exp.func("count", exp.Star()))
                                      .from_(distinct.subquery("d"))) or 0)
    try:
        backend.materialize(scratch, _longest_records(items), {"records": OMEGA_RECORDS})
        own, overlap = backend.query(bonferroni_terms(scratch, ell))[0]
    finally:
        backend.drop_table(scratch)
    # Floats: the terms are integers summed as floats; a relative margin of 1e-9 keeps their
    # rounding from lifting the bound, and 1e-6 keeps an exact integer from flooring below.
    own, overlap = float(own), float(overlap)
    return max(floor, math.floor(own - overlap - 1e-9 * (own + overlap) + 1e-6))


@dataclass(frozen=True)
class ShareBound:
    """What enumerating the images of Ω^ℓ found: violating images, and an upper bound on the
    share of Ω^ℓ whose generalization is below k (0 when there is no violating image)."""

    rows: int  # itemset rows enumerated
    images: int
    share: float


def share_bounds(backend: Backend, counts: exp.Table, items: exp.Table, ks: dict[int, int],
                 scratch: exp.Table, floors: dict[int, int] | None = None,
                 shape_table: Callable[[str], exp.Table] | None = None,
                 lengths: list[tuple[int, int]] | None = None) -> dict[int, ShareBound]:
    """For each size ℓ of ``ks`` (ℓ -> k_ℓ): enumerate the violating images of ℓ-itemsets in
    ``counts(record_id, node_id, c)`` (the generalized records with items per node,
    ``km_generalized_counts``) and bound their share of Ω^ℓ of ``items`` (module docstring).
    Each itemset size is enumerated once for every ℓ at once. ``floors`` keeps
    :func:`omega_floor` per ℓ between calls on the same ``items``; ``scratch`` is its work
    table. With ``shape_table`` (names of work tables), the itemsets are enumerated over the
    records' distinct node sets where that saves rows (:mod:`.shapes`; the same figures).
    ``lengths`` are the (nodes per record, records) pairs of ``counts``, when the caller has
    them."""
    if lengths is None:
        lengths = record_lengths(backend, counts)
    images, bound = dict.fromkeys(ks, 0), dict.fromkeys(ks, 0.0)
    shapes = (record_shapes(backend, counts, max(ks), shape_table, lengths)
              if shape_table is not None else None)

    def add(size: int, level: Level | None) -> None:
        ells = sorted(ell for ell in ks if ell >= size)
        params = {f"k{ell}": ks[ell] for ell in ells}
        with ExitStack() as stack:
            rows = None
            if level is not None and shape_table is not None:
                rows = stack.enter_context(rows_below_of(
                    backend, level, loosest_k(ells), params, shape_table(f"rare{size}"),
                    shape_table(f"below{size}")))
            with enumeration_joins(backend, 1 if rows is not None else size):
                row = backend.query(image_violations(counts, size, ells, shapes, rows),
                                    params)[0]
        for ell, found, itemsets in zip(ells, row[0::2], row[1::2], strict=True):
            images[ell] += int(found)
            bound[ell] += float(itemsets or 0.0)

    try:
        if shapes is None and shape_table is not None and levels_pay(lengths, max(ks)):
            for_each_level(backend, counts, lengths, max(ks), shape_table,
                           lambda level: add(level.size, level))
        else:
            for size in range(max(ks), 0, -1):
                add(size, None)
    finally:
        drop_shapes(backend, shapes)
    floors = {} if floors is None else floors
    found_bounds = {}
    for ell in ks:
        share = 0.0
        if images[ell]:
            if ell not in floors:
                floors[ell] = omega_floor(backend, items, ell, scratch)
            share = min(1.0, bound[ell] / floors[ell]) if floors[ell] else 1.0
        found_bounds[ell] = ShareBound(enumeration_rows(lengths, ell), images[ell], share)
    return found_bounds


def share_bound(backend: Backend, counts: exp.Table, items: exp.Table, ell: int,
                k: int, scratch: exp.Table, floors: dict[int, int] | None = None) -> ShareBound:
    """:func:`share_bounds` of the one size ℓ."""
    return share_bounds(backend, counts, items, {ell: k}, scratch, floors)[ell]


@dataclass
class ExactCheck:
    """The enumeration certificate of one size ℓ, tried at most once per cut version."""

    gen: CutSearch
    ell: int
    k: int
    sigma: float
    tried_version: int = -1
    tries: int = 0
    found_violations: int = 0  # tries that decided nothing (then sampling went on)
    bounded: int = 0  # certificates with violating images whose share is provably <= ε
    rows: int = 0  # rows a full enumeration of each try's cut costs (an upper bound)
    first_rows: int = 0  # a full enumeration of the size's first cut (steering's price)
    last: dict[str, float] = field(default_factory=dict)
    floors: dict[int, int] = field(default_factory=dict)  # omega_floor, once per size
    steered: list[dict[str, Any]] = field(default_factory=list)  # rounds of .enumsteer
    tracker: ImageTracker | None = None  # the violating images of the last try
    def worth(self, generalized_lengths: list[tuple[int, int]], samples: int) -> bool:
        """Whether to try the check on the current cut before drawing ``samples`` samples.

        The first try is priced by the levels it builds (:meth:`.imagetrack.ImageTracker.
        start_rows`); a later one as a full enumeration, though it enumerates only the records
        the merges since touched (:meth:`certifies`): the price bounds what it costs."""
        if self.tried_version == self.gen.version:
            return False
        tracker = self._tracker()
        rows = None if tracker.started else tracker.start_rows(generalized_lengths)
        return cheaper_than_samples(generalized_lengths, self.ell, samples, rows)

    def certifies(self, generalized_lengths: list[tuple[int, int]]) -> bool:
        """True when the share of ℓ-itemsets of D whose generalization has support in [1, k)
        is provably <= ε (zero violating images, or the bound of the module docstring).

        The violating images are kept between tries (:class:`.imagetrack.ImageTracker`): the
        first try enumerates every record, a later one only the records holding a node the
        merges since changed. The images, and so the decision, are those of a full
        enumeration of the current cut (tests compare them). ``generalized_lengths`` are the
        (nodes per record, records) pairs of the current cut's <R, D>, as :meth:`worth` took
        them."""
        gen, b = self.gen, self.gen.backend
        self.tries += 1
        tracker = self._tracker()
        if tracker.started:
            tracker.advance()
        else:
            counts = gen.table("gcount")
            b.materialize(counts, "km_generalized_counts", None,
                          {"items": gen.items, "cut": gen.cut})
            try:
                tracker.start(counts, generalized_lengths)
            finally:
                b.drop_table(counts)
        found, total = tracker.tally()
        rows = enumeration_rows(generalized_lengths, self.ell)
        return self.record(ShareBound(rows, found, self.share(found, total)))

    def _tracker(self) -> ImageTracker:
        """The kept violating images of this size's tries (made at the first)."""
        if self.tracker is None:
            self.tracker = ImageTracker(self.gen, self.ell, self.k, prefix="c")
        return self.tracker

    def share(self, images: int, itemsets: float) -> float:
        """The bound on the violating share of Ω^ℓ from ``images`` violating images standing
        for at most ``itemsets`` ℓ-itemsets (their Σ x): 0 without one, else over
        :func:`omega_floor`."""
        if not images:
            return 0.0
        floor = self.floor()
        return min(1.0, itemsets / floor) if floor else 1.0

    def drop(self) -> None:
        """Drop the kept images (the caller is done with this size)."""
        if self.tracker is not None:
            self.tracker.drop()
            self.tracker = None

    def record(self, found: ShareBound) -> bool:
        """Count a try on the current cut (made here or by :mod:`.enumsteer`) and say whether
        it certifies: no violating image, or a bounded share <= ε."""
        self.tried_version = self.gen.version
        self.rows += found.rows
        self.last = {"violating_images": found.images, "share_bound": found.share}
        if not found.images:
            return True
        if found.share <= self.epsilon:
            self.bounded += 1
            return True
        self.found_violations += 1
        return False

    @property
    def epsilon(self) -> float:
        """Theorem 1's ε for σ: the largest violating share a certificate accepts."""
        return gamma_bound(self.sigma)[1]

    def floor(self) -> int:
        """:func:`omega_floor` of this size (computed once)."""
        if self.ell not in self.floors:
            self.floors[self.ell] = omega_floor(self.gen.backend, self.gen.items, self.ell,
                                                self.gen.table("omega"))
        return self.floors[self.ell]

    def figures(self) -> dict[str, float]:
        return {"exact_checks": self.tries, "exact_checks_with_violations": self.found_violations,
                "exact_certificates_by_bound": self.bounded, "exact_check_rows": self.rows,
                **{f"exact_last_{key}": value for key, value in self.last.items()}}
