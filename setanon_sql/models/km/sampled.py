"""σ-k^m for one itemset size: Alg. 2 l.6-15 with samples drawn in batches.

A pool of γ samples (uniform, independent, from the ORIGINAL data, l.8) is generalized by the
current cut and checked in one statement (l.9-10). Violating samples propose merges as in the
exact search (l.13-14), and the pool is re-checked under the new cut. Once the pool passes, a
FRESH pool of γ samples is drawn (l.15 resets S after a merge: samples that steered the search
do not certify it); the size is done when a fresh pool passes without any merge, so the γ
certifying samples were drawn after the final cut was fixed, as Theorem 1 needs.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from setanon_sql.models.km.graph import AnyGeneralization
from setanon_sql.models.km.mcmc import McmcSampler
from setanon_sql.models.km.sampler import Sampler
from setanon_sql.models.km.samplesize import gamma


def enforce_sampled(gen: AnyGeneralization, sampler: Sampler | McmcSampler, ell: int, k: int,
                    sigma: float, error: str, batch: float) -> list[dict[str, Any]]:
    """Generalize until γ(σ) fresh samples of size ℓ are all k-anonymous; one entry per round."""
    b = gen.backend
    need = gamma(sigma)
    pool, groups, violations = gen.table("samples"), gen.table("groups"), gen.table("sviol")
    history: list[dict[str, Any]] = []
    drawn, fresh = sampler.draw(ell, need, pool), True
    while drawn:
        generalized = gen.generalized()
        b.materialize(groups, "km_sample_groups", None, {"samples": pool, "cut": gen.cut})
        b.materialize(violations, "km_group_violations", {"k": k},
                      {"groups": groups, "g": generalized})
        b.drop_table(groups)
        b.drop_table(generalized)
        bad = int(b.scalar(exp.select(exp.func("coalesce", exp.func("sum", exp.column("n")), 0))
                           .from_(exp.select("vid", "n").distinct()
                                  .from_(violations.copy()).subquery("v"))))
        if not bad:
            b.drop_table(violations)
            if fresh:
                history.append({"size": ell, "certified_by": drawn, "gamma": need})
                break
            b.drop_table(pool)
            drawn, fresh = sampler.draw(ell, need, pool), True
            continue
        merges = gen.merge(violations, error, batch)
        b.drop_table(violations)
        history.append({"size": ell, "violating_samples": bad, "samples": drawn,
                        "merges": merges})
        fresh = False
        if not merges:
            raise gen.no_merge_error(k)
    b.drop_table(pool)
    return history
