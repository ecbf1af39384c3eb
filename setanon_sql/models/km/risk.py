"""Checks by fresh uniform samples: the violating share of a run, and the data's unicity.

Unicity (Acs et al. Sec. VI-B) is the share of ℓ-itemsets of D that occur in one record only;
it is estimated from uniform samples of Omega^ℓ, within ±ε with confidence 1 - δ (Hoeffding,
ln(2/δ) / (2ε²) samples: 26,492 for ε = δ = 0.01). It is what a data steward looks at before
choosing k and m. Every table used here is a staging table, dropped before returning.
"""

from __future__ import annotations

import math
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset
from setanon_sql.errors import UsageError, WorkTooLargeError
from setanon_sql.models.km import sampler as sampling
from setanon_sql.models.km.groupsupport import group_violations
from setanon_sql.models.km.sampled import group_samples, violating_count
from setanon_sql.models.km.sampler import Sampler, SamplingWork, sampling_work
from setanon_sql.names import staging_table

_STREAM_RISK, _STREAM_VERIFY = 900_001, 900_002


def _staging(purpose: str, made: dict[str, exp.Table], backend: Backend) -> exp.Table:
    if purpose not in made:
        made[purpose] = backend.table(staging_table(purpose))
    return made[purpose]


def estimate_unicity(backend: Backend, dataset: Dataset, m: int, seed: int = 0,
                     epsilon: float = 0.01, delta: float = 0.01,
                     column: str | None = None,
                     max_items_per_record: int | None = None) -> list[dict[str, Any]]:
    """Estimated share of unique ℓ-itemsets for ℓ = 1..m, each ± ``epsilon``.

    The work is estimated before anything is drawn (:func:`sampling_work`): a record of many
    items is drawn in proportion to its number of ℓ-itemsets, so one huge record makes every
    draw hash all its items. Too much work is refused, naming the record; with
    ``max_items_per_record`` longer records are cut to that many items (chosen by a seeded
    hash, as Jia et al. truncate records) and each result says how many were cut.
    """
    if m < 1:
        raise UsageError(f"--m {m}: give an itemset size >= 1")
    if not (0 < epsilon < 1 and 0 < delta < 1):
        raise UsageError("--epsilon and --delta must lie in (0, 1)")
    if max_items_per_record is not None and max_items_per_record < m:
        raise UsageError(f"--max-items-per-record {max_items_per_record} must be at least "
                         f"--m {m}")
    attribute = dataset.set_attribute(column, "setanon risk")
    made: dict[str, exp.Table] = {}
    items = backend.table(dataset.items_table(attribute))
    needed = math.ceil(math.log(2 / delta) / (2 * epsilon * epsilon))
    result = []
    try:
        cut = 0
        if max_items_per_record is not None:
            bound = {"cap": max_items_per_record}
            cut = int(backend.scalar("km_records_over_cap", bound, {"items": items}))
            capped = _staging("capped", made, backend)
            backend.materialize(capped, "km_truncated_items", {**bound, "seed": seed},
                                {"items": items})
            items = capped
        for ell in range(2, m + 1):
            work = sampling_work(backend, items, ell, needed)
            if work.too_large():
                raise WorkTooLargeError(
                    f"estimating the unicity of {dataset.name!r} at size {ell} would hash about "
                    f"{work.rows:,.0f} (record, item) rows: samples are drawn by a record's "
                    f"number of {ell}-itemsets, and {_record(backend, dataset, work)} holds "
                    f"{work.longest_length:,} items, so nearly every draw picks it. Bound it "
                    f"with --max-items-per-record N (N = {_fitting_cap(work, m):,} fits: longer "
                    "records are cut to N items chosen at random for this estimate), or lower "
                    "--m")
        sampler = Sampler(backend, items, lambda p: _staging(p, made, backend), seed,
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
                           "records_cut": cut, "max_items_per_record": max_items_per_record})
    finally:
        for table in made.values():
            backend.drop_table(table)
    return result


def _fitting_cap(work: SamplingWork, m: int) -> int:
    """A cap on items per record under which the draws fit MAX_SAMPLING_ROWS (when one long
    record dominates, the mean drawn length is about the cap)."""
    return max(m, int(sampling.MAX_SAMPLING_ROWS / work.proposals) // 100 * 100)


def _record(backend: Backend, dataset: Dataset, work: SamplingWork) -> str:
    """How a user finds the record: its line in the loaded file (data row), and its id."""
    if work.longest_record is None:
        return "a record"
    records = backend.table(dataset.records_table)
    position = backend.scalar(exp.select("position").from_(records).where(
        exp.column("record_id").eq(exp.Literal.number(work.longest_record))))
    return f"record {work.longest_record} (data row {position} of the loaded data)"


def sampled_violations(backend: Backend, dataset: Dataset, published_tables: dict[str, exp.Table],
                       items: exp.Table, ell: int, k: int, count: int,
                       seed: int) -> tuple[int, int]:
    """(violating, drawn): fresh samples of size ℓ of D whose generalization has support < k
    in the published data. ``published_tables`` binds map, pdict and published."""
    made: dict[str, exp.Table] = {}
    sampler = Sampler(backend, items, lambda p: _staging(p, made, backend), seed,
                      _STREAM_VERIFY + ell)
    try:
        cut, g = _staging("vcut", made, backend), _staging("vg", made, backend)
        groups, violations = _staging("groups", made, backend), _staging("viol", made, backend)
        samples = _staging("samples", made, backend)
        backend.materialize(cut, "km_published_cut", None, published_tables)
        backend.materialize(g, "km_published_generalized", None, published_tables)
        drawn = sampler.draw(ell, count, samples)
        group_samples(backend, samples, cut, _staging("keys", made, backend), groups)
        group_violations(backend, groups, g, k, violations,
                         lambda purpose: _staging(purpose, made, backend))
        return violating_count(backend, violations), drawn
    finally:
        for table in made.values():
            backend.drop_table(table)
