"""Steering a sampled size by enumeration while that is cheap (``certify="auto"``).

Alg. 2 steers the search by violating samples: each one proposes a merge (l.12-14), and the
size ends when γ samples drawn after the last merge are clean. Where enumerating the images of
Ω^ℓ under the cut costs less than one pool of samples, the same rounds can be steered by the
enumeration itself: one pass over <R, D> finds every violating image (:mod:`.exactcheck`), its
bound on the violating share decides the size (certified at a share <= ε, the certificate of
:mod:`.exactcheck`, with certainty), and otherwise the violating images propose the merges,
as the violating samples would (each proposes the parent of least error among its nodes', the
cheapest share ``batch`` is applied: :meth:`.cutsearch.CutSearch.merge`).

Why: a sample-steered round re-counts the supports of the violating samples (a dozen
statements: keys, groups, plan costs, a support plan, violations) and draws a pool of γ
samples per size first; this round is a handful of statements plus the merge (the cut's
copy, its changed nodes, their records, the images), and it stops at the
first cut whose violating share is provably <= ε, where the samples went on until none of
them violated (BMS-WebView-2, k = 5, m = 3: see BENCHMARKS.md). The exact search
(:mod:`.exact`) makes the same rounds but only stops at zero violations.

The guarantee is the certificate's (a computed share <= ε < 1 - σ); what steered the merges
plays no part in it. When the enumeration grows past ``budget`` rows (long records in nodes),
the caller goes on with samples from the cut reached.
"""

from __future__ import annotations

from typing import Any

from setanon_sql.models.km.exactcheck import ExactCheck, ShareBound
from setanon_sql.models.km.imagetrack import ImageTracker
from setanon_sql.models.km.itemsets import enumeration_rows
from setanon_sql.models.km.shapes import record_lengths
from setanon_sql.progress import report_shrinking


def steer_by_enumeration(exact: ExactCheck, error: str, batch: float,
                         budget: float) -> list[dict[str, Any]] | None:
    """Rounds of enumerate-then-merge on size ``exact.ell`` until the certificate holds (the
    history, its last entry certifying) or a round would enumerate more than ``budget`` rows
    (None: the rounds made so far are in ``exact.steered``; the caller samples on).

    The first round enumerates every record; each later one only what the merges changed
    (:class:`.imagetrack.ImageTracker`). The first is priced by what it builds (levels the
    search kept for the cut are not built again: 100,000 CDR-like users at σ = 0.999 drew a
    pilot part of samples at ℓ = 7, 9 and 10, where the level of ℓ nodes was all that was
    missing; priced so, its search took 61.6 -> 37.5 s on DuckDB, 371.3 -> 253.7 s on
    PostgreSQL), the later ones by a full enumeration."""
    gen, b, ell = exact.gen, exact.gen.backend, exact.ell
    counts = gen.table("gcount")
    # Steering bounds the share as the certificate does (the merges stop where it would
    # certify; a looser bound merged on past it).
    tracker = ImageTracker(gen, ell, exact.k, prefix="v")
    history = exact.steered
    rows = 0
    try:
        while True:
            if not tracker.started:
                # The first round enumerates <R, D> of every record, but builds only the
                # levels the search has not kept for this cut (:class:`.levels.KeptLevels`).
                # Merges only coarsen the cut, so no record gets longer in nodes: a full
                # enumeration's rows bound every later round's (it is asked once per size).
                b.materialize(counts, "km_generalized_counts", None,
                              {"items": gen.items, "cut": gen.cut})
                lengths = record_lengths(b, counts)
                rows = enumeration_rows(lengths, ell)
                exact.first_rows = rows
                if tracker.start_rows(lengths) > budget:
                    return None
                images = tracker.start(counts, lengths)
                b.drop_table(counts)
            elif rows > budget:  # a first round that cost less: the samples go on from here
                return None
            else:
                images = tracker.advance()
            exact.tries += 1
            found, total = tracker.tally()
            share = exact.share(found, total)
            first = history[0]["violating_images"] if history else found
            report_shrinking("search", f"violating images of {ell}-itemsets", first,
                             found, len(history) + 1)
            if exact.record(ShareBound(rows, found, share)):
                history.append({"size": ell, "certified_by": "exact", "clean_samples": 0,
                                "steered_by": "enumeration", "steering_rounds": len(history),
                                **exact.figures()})
                return history
            merges = gen.merge_images(images, ell, error, batch)
            history.append({"size": ell, "violating_images": found, "share_bound": share,
                            "merges": merges, "steered_by": "enumeration"})
            if not merges:
                raise gen.no_merge_error(exact.k)
    finally:
        b.drop_table(counts)
        tracker.drop()
