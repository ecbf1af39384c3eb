"""σ-k^m for one itemset size: Alg. 2 l.6-15 with samples drawn in batches.

A pool of γ samples (uniform, independent, from the ORIGINAL data, l.8) is generalized by the
current cut and checked in SQL (l.9-10, by the cheaper of two plans: :mod:`.groupsupport`).
Violating samples propose merges as in the exact search (l.13-14), and the pool is re-checked
under the new cut. Once the pool passes, a FRESH pool of γ samples is drawn (l.15 resets S
after a merge: samples that steered the search do not certify it); the size is done when a
fresh pool passes without any merge, so the γ certifying samples were drawn after the final
cut was fixed, as Theorem 1 needs.

Between two draws only the violating samples are re-checked: a merge only coarsens nodes, and
a record holding items under nodes A and B still holds items under their merged parents, so the
support of a generalized sample never shrinks and a k-anonymous sample stays k-anonymous. The
count of violating samples per round is the same as re-checking the whole pool.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.km.cutsearch import CutSearch
from setanon_sql.models.km.groupsupport import group_violations
from setanon_sql.models.km.mcmc import McmcSampler
from setanon_sql.models.km.sampler import Sampler
from setanon_sql.models.km.samplesize import gamma
from setanon_sql.progress import report


def group_samples(backend: Backend, pool: exp.Table, cut: exp.Table, keys: exp.Table,
                  groups: exp.Table) -> None:
    """keys(sid, vid, node_id) and groups(vid, node_id, n): the pool generalized by ``cut``."""
    backend.materialize(keys, "km_sample_keys", None, {"samples": pool, "cut": cut})
    backend.materialize(groups, "km_sample_groups", None, {"keys": keys})


def violating_count(backend: Backend, violations: exp.Table) -> int:
    """Samples behind the violating generalized itemsets (``violations`` has a row per node)."""
    return int(backend.scalar(
        exp.select(exp.func("coalesce", exp.func("sum", exp.column("n")), 0))
        .from_(exp.select("vid", "n").distinct().from_(violations.copy()).subquery("v"))))


def enforce_sampled(gen: CutSearch, sampler: Sampler | McmcSampler, ell: int, k: int,
                    sigma: float, error: str, batch: float) -> list[dict[str, Any]]:
    """Generalize until γ(σ) fresh samples of size ℓ are all k-anonymous; one entry per round."""
    b = gen.backend
    need = gamma(sigma)
    pool, keys, groups = gen.table("samples"), gen.table("skeys"), gen.table("groups")
    violations, narrowed = gen.table("sviol"), gen.table("snarrow")
    history: list[dict[str, Any]] = []
    drawn, fresh = sampler.draw(ell, need, pool), True
    while drawn:
        generalized = gen.generalized()
        group_samples(b, pool, gen.cut, keys, groups)
        plan = group_violations(b, groups, generalized, k, violations, gen.table)
        b.drop_table(groups)
        b.drop_table(generalized)
        bad = violating_count(b, violations)
        report("search", f"size {ell}: round {len(history) + 1}, {bad:,} of {drawn:,} "
                         "sampled itemsets violate k", done=drawn - bad, total=max(drawn, 1))
        if not bad:
            b.drop_table(violations)
            b.drop_table(keys)
            if fresh:
                history.append({"size": ell, "certified_by": drawn, "gamma": need,
                                "plan": plan})
                break
            b.drop_table(pool)
            drawn, fresh = sampler.draw(ell, need, pool), True
            continue
        merges = gen.merge(violations, error, batch)
        b.materialize(narrowed, "km_violating_samples", None,
                      {"samples": pool, "keys": keys, "violations": violations})
        for table in (violations, keys, pool):
            b.drop_table(table)
        pool, narrowed = narrowed, pool  # the two names take turns: no copy back
        history.append({"size": ell, "violating_samples": bad, "samples": drawn,
                        "merges": merges, "plan": plan})
        fresh = False
        if not merges:
            raise gen.no_merge_error(k)
    b.drop_table(pool)
    return history
