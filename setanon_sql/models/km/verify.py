"""Re-check a km run from the DBMS: k^m by enumerating published itemsets, and faithfulness.

Exact sizes are checked by counting, in SQL, every published ℓ-itemset whose support is in
[1, k_ℓ). Sampled sizes draw up to γ(σ_ℓ) fresh uniform itemsets of the ORIGINAL data (a
stream the run did not use) and decide ``share of itemsets whose generalization has support
below k_ℓ <= 1 - σ_ℓ`` with one-sided Clopper-Pearson bounds: passed when the upper bound is
within the limit, failed when the lower bound is above it, else inconclusive (not published).

The samples are looked at sequentially (:func:`sample_looks`): after FIRST_LOOK, then LOOK_GROWTH
times as many, up to γ, the check stopping at the first look whose bounds decide. Each look j
of J spends its own share δ_j of VERIFY_DELTA (:func:`look_delta`, Σ_j δ_j = VERIFY_DELTA), so
the chance that any look's bound is wrong is at most their sum (a union bound over looks fixed
before any sample is drawn), and a verdict holds with confidence 1 - VERIFY_DELTA wherever the
check stopped. γ is Theorem 1's count for the search's certificate, which needs γ clean samples
in a row; a run whose violating share is well below 1 - σ is decided far sooner: with no
violating sample, 50,000 samples bound the share below 1.3e-4 at the first look's δ_1 = δ / 6.
At σ = 0.999 (γ = 5,866,617, looks at 50,000, 400,000, 3,200,000 and γ) drawing all γ per size
kept a 1 M-user run from being verified within an hour (BENCHMARKS.md, km). Where γ is at most
FIRST_LOOK (σ <= 0.99) there is one look, with all of VERIFY_DELTA, as before.

Before sampling, a sampled size is enumerated where that is cheaper than its first look's
samples (priced by :func:`.exactcheck.sample_price`; :mod:`.exactcheck`,
the search's certificate recomputed from the original items and the published mapping): it
passes, with certainty, when no image of an ℓ-itemset of D is below k_ℓ, or when the bounded
share of Ω^ℓ that is, is <= 1 - σ_ℓ; else the fresh samples decide. The published rows must
also be exactly the original rows under ``map_<attr>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Attribute, Dataset, Run
from setanon_sql.errors import UsageError
from setanon_sql.io.published import Published, published
from setanon_sql.models.base import Verification
from setanon_sql.models.km.exactcheck import ShareBound, cheaper_than_samples, share_bounds
from setanon_sql.models.km.firstslices import violation_total
from setanon_sql.models.km.itemsets import enumeration_joins
from setanon_sql.models.km.params import parse_params
from setanon_sql.models.km.risk import sampled_violations
from setanon_sql.models.km.samplesize import gamma
from setanon_sql.models.km.shapes import record_lengths
from setanon_sql.names import staging_table
from setanon_sql.stats.binomial import Decision, decide

VERIFY_DELTA = 0.01  # a sampled size's verdict holds with confidence 0.99
# The sampled check's looks (module docstring): after FIRST_LOOK samples, then LOOK_GROWTH times
# as many, up to γ. σ = 0.99's γ (45,845) is one look.
FIRST_LOOK, LOOK_GROWTH = 50_000, 8


def sample_looks(count: int) -> list[int]:
    """The sample counts, rising to ``count`` (γ), after which a sampled size is decided if
    its bounds allow; fixed before any sample is drawn, as the union bound needs."""
    looks, n = [], FIRST_LOOK
    while n < count:
        looks.append(n)
        n *= LOOK_GROWTH
    return [*looks, count]


def look_delta(delta: float, looks: int, look: int) -> float:
    """The error δ_j spent at look ``look`` (0-based) of ``looks``: all of ``delta`` for one
    look; else half for the last (all γ samples, nearly as strong as one look) and the other
    half evenly over the earlier ones. Σ_j δ_j = ``delta``."""
    if looks == 1:
        return delta
    return delta / 2 if look == looks - 1 else delta / (2 * (looks - 1))


def run_tables(backend: Backend, dataset: Dataset, attribute: Attribute,
               view: Published) -> dict[str, exp.Table]:
    """The tables a km check reads: the original items and dictionary, and what the run
    published (items, mapping, dictionary) for ``attribute``."""
    attr_no = attribute.attr_no
    return {"items": backend.table(dataset.items_table(attribute)),
            "map": view.maps[attr_no], "pdict": view.dicts[attr_no],
            "published": view.items[attr_no],
            "dict": backend.table(dataset.dict_table(attribute))}


@dataclass
class SequentialCheck:
    """The looks of one sampled size and the decision taken at each (module docstring)."""

    limit: float  # 1 - σ_ℓ: the most the violating share may be
    looks: list[int]  # :func:`sample_looks`
    decisions: list[Decision] = field(default_factory=list)

    def settled(self, bad: int, drawn: int) -> bool:
        """Decide on the totals at the next look; whether that ends the check."""
        delta = look_delta(VERIFY_DELTA, len(self.looks), len(self.decisions))
        self.decisions.append(decide(bad, drawn, self.limit, delta))
        return self.decisions[-1].outcome != "inconclusive"

    def describe(self) -> str:
        """The last decision, and with more than one look where it was taken."""
        said = self.decisions[-1].describe()
        if len(self.looks) == 1:
            return said
        return (f"{said}; decided at look {len(self.decisions)} of {len(self.looks)} (after "
                f"{', '.join(f'{n:,}' for n in self.looks)} samples), the error "
                f"{VERIFY_DELTA:g} split over the looks, so the verdict holds with confidence "
                f"{1 - VERIFY_DELTA:g}")


def verify_run(backend: Backend, dataset: Dataset, run: Run) -> Verification:
    """Check every size the way the run enforced it; see the module docstring. Its tables
    are scratch and its joins of whole tables, as in the search."""
    with backend.working_tables(), backend.whole_table_joins():
        return _verify_run(backend, dataset, run)


def _verify_run(backend: Backend, dataset: Dataset, run: Run) -> Verification:
    params = parse_params(run.params)
    attribute = dataset.set_attribute(params.column, "--model km")
    view = published(backend, dataset, run)
    attr_no = attribute.attr_no
    if attr_no not in view.maps:
        raise UsageError(f"run {run.run_id} published no mapping for column {attribute.name!r}; "
                         "it is not a finished km run")
    details: dict[str, Any] = {}
    failed, undecided = False, False
    original = run_tables(backend, dataset, attribute, view)
    sampled = []
    enumerated_sizes = enumerated_shares(backend, original, {
        ell: (params.k[ell - 1], sample_looks(gamma(params.sigma[ell - 1]))[0])
        for ell in range(1, params.m + 1) if not params.exact_at(ell)})
    for ell in range(1, params.m + 1):
        k = params.k[ell - 1]
        if not params.exact_at(ell):
            sigma = params.sigma[ell - 1]
            enumerated = enumerated_sizes.get(ell)
            if enumerated is not None and enumerated.share <= 1 - sigma:
                details[f"size {ell}"] = (
                    f"enumerated, support below {k}: {enumerated.images} image(s) of "
                    f"{ell}-itemsets, share of the {ell}-itemsets <= {enumerated.share:.3g} "
                    f"<= {1 - sigma:.3g}: passed")
                sampled.append(f"{ell} (enumerated)")
                continue
            check = SequentialCheck(1 - sigma, sample_looks(gamma(sigma)))
            _, drawn = sampled_violations(backend, dataset, original, original["items"], ell, k,
                                          check.looks[-1], run.seed or 0, check.looks[:-1],
                                          check.settled)
            if drawn == 0:
                details[f"size {ell}"] = f"no itemset of size {ell} in the data: nothing to check"
                continue
            verdict = check.decisions[-1]
            details[f"size {ell}"] = f"sampled, support below {k}: {check.describe()}"
            failed = failed or verdict.outcome == "failed"
            undecided = undecided or verdict.outcome == "inconclusive"
            sampled.append(str(ell))
            continue
        with enumeration_joins(backend, ell):
            bad = violation_total(backend, view.items[attr_no], ell, k, "item_id")
        details[f"size {ell}"] = f"{bad} itemset(s) with support in [1, {k})"
        failed = failed or bad > 0
    unfaithful = int(backend.scalar("km_unfaithful_rows", tables=original))
    unmapped = int(backend.scalar("km_unmapped_items", tables=original))
    details["rows not the generalization of the input"] = unfaithful
    details["items without a published label"] = unmapped
    failed = failed or unfaithful > 0 or unmapped > 0
    exact = [ell for ell in range(1, params.m + 1) if params.exact_at(ell)]
    covered = "; ".join(part for part in (
        exact and f"every published itemset of size {', '.join(map(str, exact))}, exactly",
        sampled and f"sampled: the original itemsets of size {', '.join(sampled)}, by "
                    f"enumerating their generalizations where cheaper, else by fresh uniform "
                    f"samples (up to gamma of Theorem 1 each, a stream the run did not draw, "
                    f"looked at after {FIRST_LOOK:,} and each {LOOK_GROWTH} times more until "
                    f"one decides) with one-sided Clopper-Pearson bounds at confidence "
                    f"{1 - VERIFY_DELTA:g} over all looks",
        "published rows against the mapping") if part)
    # A definite violation anywhere fails the run; otherwise an undecided sampled size leaves
    # it inconclusive (not published either).
    return Verification(not failed and not undecided, covered, details,
                        inconclusive=undecided and not failed)


def enumerated_shares(backend: Backend, original: dict[str, Any],
                      sizes: dict[int, tuple[int, int]]) -> dict[int, ShareBound]:
    """The enumeration bound of :mod:`.exactcheck` on the published generalization of the
    original items, for each size ℓ of ``sizes`` (ℓ -> (k_ℓ, the samples it would draw
    instead)) where enumerating costs no more than those samples; the other sizes are left
    out. The generalization is built once, and each itemset size is enumerated once for all
    of them."""
    if not sizes:
        return {}
    cut, counts, scratch = (backend.table(staging_table(p))
                            for p in ("vecut", "vecount", "veomega"))
    try:
        backend.materialize(cut, "km_published_cut", None, original)
        backend.materialize(counts, "km_generalized_counts", None,
                            {"items": original["items"], "cut": cut})
        lengths = record_lengths(backend, counts)
        cheap = {ell: k for ell, (k, samples) in sizes.items()
                 if cheaper_than_samples(lengths, ell, samples)}
        if not cheap:
            return {}
        return share_bounds(backend, counts, original["items"], cheap, scratch,
                            shape_table=lambda p: backend.table(staging_table(f"ve{p}")),
                            lengths=lengths)
    finally:
        for table in (cut, counts, scratch):
            backend.drop_table(table)
