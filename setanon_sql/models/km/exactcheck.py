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
(:func:`.itemsets.image_violation_count`): zero at every j certifies the size. (The exact
search, :mod:`.exact`, counts ℓ-itemsets only, enough there because the smaller sizes were
made exact first; here they may have been sampled and still hold a few itemsets below k,
which matter at size ℓ only if they are images of ℓ-itemsets.)

A few violating images may still be a share of Ω^ℓ that σ allows. The check bounds that share
without sampling: the ℓ-itemsets of D whose image is a violating G lie in G's holders (fewer
than k records), and a holder r with c_i items under G's i-th node holds
Σ_{S ⊆ G} (-1)^{|G| - |S|} C(Σ_{i ∈ S} c_i, ℓ) ℓ-subsets whose image is exactly G
(inclusion-exclusion; :func:`.itemsets.exact_cover_count`). Summed over violating images and
holders this is an upper bound B on the violating itemsets of Ω^ℓ, and any record r of D gives
|Ω^ℓ| >= C(|r|, ℓ) (its ℓ-subsets are distinct itemsets that occur). So the violating share
h = (violating itemsets) / |Ω^ℓ| <= B / max_r C(|r|, ℓ), exactly, and the size is certified
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
ROW_COST × the samples the pool would draw next, and at most MAX_EXACT_ROWS. On a fine cut
(long generalized records) it is skipped; as merges shorten the records it becomes cheap, and
at σ = 0.999 (5,866,617 samples per pool) it is cheap long before the pool would be.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.km.cutsearch import CutSearch
from setanon_sql.models.km.itemsets import image_violations
from setanon_sql.models.km.samplesize import gamma_bound

# Enumerated itemset rows that cost about as much as drawing and checking one sample (rejection
# step, ℓ positions, supports of the proposals, generalization, supports of the pool). Measured
# on BMS-WebView-2 (DuckDB, 2 cores): see BENCHMARKS.md, σ-k^m at scale.
ROW_COST = 200
MAX_EXACT_ROWS = 200_000_000  # one check's self-join rows (its memory)


def enumeration_rows(lengths: list[tuple[int, int]], ell: int) -> int:
    """Σ over records of Σ_{j <= ℓ} C(|g_r|, j), from (length, records) pairs."""
    return sum(int(n) * comb(int(length), j)
               for length, n in lengths for j in range(1, ell + 1))


def omega_floor(backend: Backend, items: exp.Table, ell: int) -> int:
    """A lower bound on |Ω^ℓ|: C(|r|, ℓ) of the longest record of ``items``."""
    longest = backend.scalar(
        exp.select(exp.func("max", exp.column("len"))).from_(
            exp.select(exp.func("count", exp.Star()).as_("len"))
            .from_(items.copy()).group_by(exp.column("record_id")).subquery("r")))
    return comb(int(longest or 0), ell)


@dataclass(frozen=True)
class ShareBound:
    """What enumerating the images of Ω^ℓ found: violating images, and an upper bound on the
    share of Ω^ℓ whose generalization is below k (0 when there is no violating image)."""

    rows: int  # itemset rows enumerated
    images: int
    share: float


def share_bound(backend: Backend, counts: exp.Table, items: exp.Table, ell: int,
                k: int) -> ShareBound:
    """Enumerate the violating images of ℓ-itemsets in ``counts(record_id, node_id, c)`` (the
    generalized records with items per node, ``km_generalized_counts``) and bound their share
    of Ω^ℓ of ``items`` (module docstring)."""
    lengths = backend.query("km_group_record_lengths", None, {"gr": counts})
    images, bound = 0, 0.0
    for size in range(ell, 0, -1):
        found, itemsets = backend.query(image_violations(counts, size, ell), {"k": k})[0]
        images, bound = images + int(found), bound + float(itemsets or 0.0)
    share = 0.0
    if images:
        floor = omega_floor(backend, items, ell)
        share = min(1.0, bound / floor) if floor else 1.0
    return ShareBound(enumeration_rows(lengths, ell), images, share)


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
    rows: int = 0  # rows enumerated by all tries
    last: dict[str, float] = field(default_factory=dict)

    def worth(self, generalized_lengths: list[tuple[int, int]], samples: int) -> bool:
        """Whether to try the check on the current cut before drawing ``samples`` samples."""
        if self.tried_version == self.gen.version:
            return False
        rows = enumeration_rows(generalized_lengths, self.ell)
        return rows <= min(MAX_EXACT_ROWS, ROW_COST * samples)

    def certifies(self) -> bool:
        """True when the share of ℓ-itemsets of D whose generalization has support in [1, k)
        is provably <= ε (zero violating images, or the bound of the module docstring)."""
        gen, b = self.gen, self.gen.backend
        self.tried_version = gen.version
        self.tries += 1
        counts = gen.table("gcount")
        b.materialize(counts, "km_generalized_counts", None,
                      {"items": gen.items, "cut": gen.cut})
        try:
            found = share_bound(b, counts, gen.items, self.ell, self.k)
        finally:
            b.drop_table(counts)
        self.rows += found.rows
        self.last = {"violating_images": found.images, "share_bound": found.share}
        if not found.images:
            return True
        if found.share <= gamma_bound(self.sigma)[1]:
            self.bounded += 1
            return True
        self.found_violations += 1
        return False

    def figures(self) -> dict[str, float]:
        return {"exact_checks": self.tries, "exact_checks_with_violations": self.found_violations,
                "exact_certificates_by_bound": self.bounded, "exact_check_rows": self.rows,
                **{f"exact_last_{key}": value for key, value in self.last.items()}}
