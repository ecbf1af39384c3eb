"""Re-check a km run from the DBMS: k^m by enumerating published itemsets, and faithfulness.

Exact sizes are checked by counting, in SQL, every published ℓ-itemset whose support is in
[1, k_ℓ). Sampled sizes draw γ(σ_ℓ) fresh uniform itemsets of the ORIGINAL data (a stream the
run did not use) and decide ``share of itemsets whose generalization has support below k_ℓ
<= 1 - σ_ℓ`` with one-sided Clopper-Pearson bounds at confidence 1 - VERIFY_DELTA: passed when
the upper bound is within the limit, failed when the lower bound is above it, else
inconclusive (not published). Before sampling, a sampled size is enumerated where that is
cheaper than its γ samples (priced by :func:`.exactcheck.sample_price`; :mod:`.exactcheck`,
the search's certificate recomputed from the original items and the published mapping): it
passes, with certainty, when no image of an ℓ-itemset of D is below k_ℓ, or when the bounded
share of Ω^ℓ that is, is <= 1 - σ_ℓ; else the fresh samples decide. The published rows must
also be exactly the original rows under ``map_<attr>``.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Attribute, Dataset, Run
from setanon_sql.errors import UsageError
from setanon_sql.io.published import Published, published
from setanon_sql.models.base import Verification
from setanon_sql.models.km.exactcheck import ShareBound, cheaper_than_samples, share_bounds
from setanon_sql.models.km.itemsets import enumeration_joins, violation_count
from setanon_sql.models.km.params import parse_params
from setanon_sql.models.km.risk import sampled_violations
from setanon_sql.models.km.samplesize import gamma
from setanon_sql.models.km.shapes import record_lengths
from setanon_sql.names import staging_table
from setanon_sql.stats.binomial import decide

VERIFY_DELTA = 0.01  # a sampled size's verdict holds with confidence 0.99


def run_tables(backend: Backend, dataset: Dataset, attribute: Attribute,
               view: Published) -> dict[str, exp.Table]:
    """The tables a km check reads: the original items and dictionary, and what the run
    published (items, mapping, dictionary) for ``attribute``."""
    attr_no = attribute.attr_no
    return {"items": backend.table(dataset.items_table(attribute)),
            "map": view.maps[attr_no], "pdict": view.dicts[attr_no],
            "published": view.items[attr_no],
            "dict": backend.table(dataset.dict_table(attribute))}


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
        ell: (params.k[ell - 1], gamma(params.sigma[ell - 1]))
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
            bad, drawn = sampled_violations(backend, dataset, original, original["items"], ell,
                                            k, gamma(sigma), run.seed or 0)
            if drawn == 0:
                details[f"size {ell}"] = f"no itemset of size {ell} in the data: nothing to check"
                continue
            verdict = decide(bad, drawn, 1 - sigma, VERIFY_DELTA)
            details[f"size {ell}"] = (f"sampled, support below {k}: {verdict.describe()}")
            failed = failed or verdict.outcome == "failed"
            undecided = undecided or verdict.outcome == "inconclusive"
            sampled.append(str(ell))
            continue
        with enumeration_joins(backend, ell):
            bad = int(backend.scalar(violation_count(view.items[attr_no], ell), {"k": k}))
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
                    f"samples (gamma of Theorem 1 each, a stream the run did not draw) with "
                    f"one-sided Clopper-Pearson bounds at confidence {1 - VERIFY_DELTA:g}",
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
