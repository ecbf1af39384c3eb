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

Violating images found decide nothing: a few of them may be a share of Ω^ℓ below 1 - σ, which
σ allows. The pool then goes on being drawn exactly as it would have been, and the check is
not repeated until the cut changes. The guarantee is never weaker than the pool's: a cut is
passed either with no violating image at all (Definition 1 holds with probability 1) or by γ
clean samples drawn uniformly after the last merge (Theorem 1); the check uses no randomness,
so it selects nothing among the samples, and a cut whose violating share is >= ε still passes
with probability at most δ (it can only pass by its samples).

When: the check enumerates Σ_r Σ_{j <= ℓ} C(|g_r|, j) rows (|g_r| = nodes of record r under the
cut), known before it runs from one aggregate of <R, D>. It runs when that is below
ROW_COST × the samples the pool would draw next, and at most MAX_EXACT_ROWS. On a fine cut
(long generalized records) it is skipped; as merges shorten the records it becomes cheap, and
at σ = 0.999 (5,866,617 samples per pool) it is cheap long before the pool would be.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb

from setanon_sql.models.km.cutsearch import CutSearch
from setanon_sql.models.km.itemsets import image_violation_count

# Enumerated itemset rows that cost about as much as drawing and checking one sample (rejection
# step, ℓ positions, supports of the proposals, generalization, supports of the pool). Measured
# on BMS-WebView-2 (DuckDB, 2 cores): see BENCHMARKS.md, σ-k^m at scale.
ROW_COST = 200
MAX_EXACT_ROWS = 200_000_000  # one check's self-join rows (its memory)


def enumeration_rows(lengths: list[tuple[int, int]], ell: int) -> int:
    """Σ over records of Σ_{j <= ℓ} C(|g_r|, j), from (length, records) pairs."""
    return sum(int(n) * comb(int(length), j)
               for length, n in lengths for j in range(1, ell + 1))


@dataclass
class ExactCheck:
    """The enumeration certificate of one size ℓ, tried at most once per cut version."""

    gen: CutSearch
    ell: int
    k: int
    tried_version: int = -1
    tries: int = 0
    found_violations: int = 0  # tries that found a violating image (then sampling went on)
    rows: int = 0  # rows enumerated by all tries
    last: dict[str, int] = field(default_factory=dict)

    def worth(self, generalized_lengths: list[tuple[int, int]], samples: int) -> bool:
        """Whether to try the check on the current cut before drawing ``samples`` samples."""
        if self.tried_version == self.gen.version:
            return False
        rows = enumeration_rows(generalized_lengths, self.ell)
        return rows <= min(MAX_EXACT_ROWS, ROW_COST * samples)

    def certifies(self) -> bool:
        """True when no ℓ-itemset of D has a generalization with support in [1, k)."""
        gen, b = self.gen, self.gen.backend
        self.tried_version = gen.version
        self.tries += 1
        counts = gen.table("gcount")
        b.materialize(counts, "km_generalized_counts", None,
                      {"items": gen.items, "cut": gen.cut})
        try:
            lengths = b.query("km_group_record_lengths", None, {"gr": counts})
            self.rows += enumeration_rows(lengths, self.ell)
            for size in range(self.ell, 0, -1):  # size ℓ holds most violations: stop early
                found = int(b.scalar(image_violation_count(counts, size),
                                     {"k": self.k, "ell": self.ell}))
                if found:
                    self.found_violations += 1
                    self.last = {"size": size, "violating_images": found}
                    return False
            self.last = {}
            return True
        finally:
            b.drop_table(counts)

    def figures(self) -> dict[str, int]:
        return {"exact_checks": self.tries, "exact_checks_with_violations": self.found_violations,
                "exact_check_rows": self.rows}
