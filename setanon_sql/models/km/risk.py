"""Checks by fresh uniform samples: the violating share of a run, and the data's unicity.

Unicity (Acs et al. Sec. VI-B) is the share of ℓ-itemsets of D that occur in one record only;
it is estimated from uniform samples of Omega^ℓ, within ±ε with confidence 1 - δ (Hoeffding,
ln(2/δ) / (2ε²) samples: 26,492 for ε = δ = 0.01). It is what a data steward looks at before
choosing k and m. Every table used here is a staging table, dropped before returning.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset
from setanon_sql.errors import UsageError
from setanon_sql.models.km.groupsupport import (
    SLICE_FROM_RECORDS,
    group_violations,
    record_count,
    record_slices,
)
from setanon_sql.models.km.positions import PositionSampler
from setanon_sql.models.km.sampled import group_samples, violating_count
from setanon_sql.names import staging_table
from setanon_sql.workload import cap_items

_STREAM_RISK, _STREAM_VERIFY = 900_001, 900_002
VERIFY_PART = 1_000_000  # samples drawn and checked at once by sampled_violations


def _staging(purpose: str, made: dict[str, exp.Table], backend: Backend) -> exp.Table:
    if purpose not in made:
        made[purpose] = backend.table(staging_table(purpose))
    return made[purpose]


def estimate_unicity(backend: Backend, dataset: Dataset, m: int, seed: int = 0,
                     epsilon: float = 0.01, delta: float = 0.01,
                     column: str | None = None,
                     max_items_per_record: int | None = None) -> list[dict[str, Any]]:
    """Estimated share of unique ℓ-itemsets for ℓ = 1..m, each ± ``epsilon``.

    Samples are drawn by :class:`.positions.PositionSampler`: a proposal reads ℓ rows, not
    all items of its record, so one record of 100,000 items (which takes nearly every
    proposal) costs a linear numbering of the items, not 1e5 rows per sample.
    ``max_items_per_record`` leaves out records longer than that (the estimate is then of
    the remaining records; each row reports ``records_left_out``)."""
    if m < 1:
        raise UsageError(f"--m {m}: give an itemset size >= 1")
    if not (0 < epsilon < 1 and 0 < delta < 1):
        raise UsageError("--epsilon and --delta must lie in (0, 1)")
    attribute = dataset.set_attribute(column, "setanon risk")
    made: dict[str, exp.Table] = {}
    items = backend.table(dataset.items_table(attribute))
    needed = math.ceil(math.log(2 / delta) / (2 * epsilon * epsilon))
    left_out = 0
    result = []
    try:
        if max_items_per_record is not None:
            left_out, _ = cap_items(backend, items, max_items_per_record,
                                    _staging("capped", made, backend))
            items = made["capped"]
        sampler = PositionSampler(backend, items, lambda p: _staging(p, made, backend), seed,
                                  _STREAM_RISK)
        for ell in range(1, m + 1):
            samples = _staging("samples", made, backend)
            drawn = sampler.draw(ell, needed, samples)
            unique, total = backend.query("km_sample_unique_share", None,
                                          {"samples": samples})[0]
            backend.drop_table(samples)
            result.append({"size": ell, "samples": int(total),
                           "unique_share": int(unique) / int(total) if drawn else None,
                           "error_bound": epsilon, "confidence": 1 - delta,
                           "records_left_out": left_out})
    finally:
        for table in made.values():
            backend.drop_table(table)
    return result


def sampled_violations(backend: Backend, dataset: Dataset, published_tables: dict[str, exp.Table],
                       items: exp.Table, ell: int, k: int, count: int, seed: int,
                       looks: Sequence[int] = (),
                       settled: Callable[[int, int], bool] | None = None) -> tuple[int, int]:
    """(violating, drawn): fresh samples of size ℓ of D whose generalization has support < k
    in the published data. ``published_tables`` binds map, pdict and published.

    Drawn and checked in parts of at most VERIFY_PART samples (σ = 0.999 asks for 5.9 M):
    the counts add up. With ``settled``, after the samples of each of ``looks`` (sample counts
    below ``count``, fixed before any is drawn) and after all ``count``, ``settled(violating,
    drawn)`` is asked whether the totals so far decide; the draw stops at the first yes
    (verify's sequential check, :func:`.verify.sample_looks`)."""
    made: dict[str, exp.Table] = {}
    sampler = PositionSampler(backend, items, lambda p: _staging(p, made, backend), seed,
                              _STREAM_VERIFY + ell, first_holder=True)
    try:
        cut, g = _staging("vcut", made, backend), _staging("vg", made, backend)
        groups, violations = _staging("groups", made, backend), _staging("viol", made, backend)
        samples, keys = _staging("samples", made, backend), _staging("keys", made, backend)
        backend.materialize(cut, "km_published_cut", None, published_tables)
        backend.materialize(g, "km_published_generalized", None, published_tables)
        checked: exp.Table | list[exp.Table] = (
            record_slices(backend, g, lambda i: _staging(f"vslice{i}", made, backend))
            if record_count(backend, g) >= SLICE_FROM_RECORDS else g)
        bad = drawn = 0
        for stop in [*sorted(n for n in set(looks) if 0 < n < count), count]:
            while drawn < stop:
                got = sampler.draw(ell, min(VERIFY_PART, stop - drawn), samples)
                if not got:  # Ω^ℓ is empty
                    return bad, drawn
                group_samples(backend, samples, cut, keys, groups,
                              _staging("gnodes", made, backend))
                group_violations(backend, groups, checked, k, violations,
                                 lambda purpose: _staging(purpose, made, backend))
                bad += violating_count(backend, violations)
                drawn += got
                for table in (samples, keys, groups, violations):
                    backend.drop_table(table)
            if settled is not None and settled(bad, drawn):
                break
        return bad, drawn
    finally:
        for table in made.values():
            backend.drop_table(table)
