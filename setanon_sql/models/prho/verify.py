"""``setanon verify`` for personalized ρ-uncertainty.

Exact runs (SUPPRESSOR): every adversary (u, Q), Q ⊆ D_u, |Q| <= m, is re-checked in SQL: no
sensitive rule of the published table may exceed ρ for an e some u ⊇ Q protects. Sampled runs
(SAMPLESUPPRESSOR): fresh adversaries per ℓ (another seed than the run's), 4·n_S of them, or
4·N·n_S for ``--stop-rule bound`` (that rule stops once its N·n_S draws bound the share below ε,
so the share may lie close to ε and a smaller sample could not decide). Per ℓ, the one-sided
Clopper-Pearson bounds at confidence 1 - δ decide: pass when the upper bound is below ε, fail
when the lower bound is above it, else inconclusive. (Hoeffding's bound, eq. 9, was used
before: it is valid but loose for small shares, sqrt(ln(1/δ) / (2n)) = ε/2 whatever the share.)
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, Run
from setanon_sql.io.published import published
from setanon_sql.models.base import Verification
from setanon_sql.models.prho.adversaries import (
    eligible_counts,
    sample,
    unsafe_adversaries,
)
from setanon_sql.models.prho.build import build_constraint
from setanon_sql.models.prho.constraint import Constraint
from setanon_sql.models.prho.params import PrhoParams, parse_params
from setanon_sql.models.prho.rules import exact_rules, original_levels
from setanon_sql.models.rho.check import check_original_levels, check_shape
from setanon_sql.models.rho.qids import col
from setanon_sql.stats.binomial import decide

VERIFY_FACTOR = 4  # fresh samples per ℓ = 4·n_S (times the pool for --stop-rule bound)


def verify_sample_size(chosen: PrhoParams) -> int:
    """Fresh adversaries per ℓ the sampled verifier draws: 4·n_S, times the pool for
    ``--stop-rule bound`` (whose share may lie close to ε)."""
    pool = chosen.repair_pool if chosen.stop_rule == "bound" else 1
    return VERIFY_FACTOR * chosen.n_samples * pool


def verify_run(backend: Backend, dataset: Dataset, run: Run) -> Verification:
    """Subset of the input record by record, and every (or every sampled) adversary safe."""
    chosen = parse_params(run.params)
    attribute = dataset.set_attribute(chosen.column, "--model prho")
    pub = published(backend, dataset, run).items[attribute.attr_no]
    items = backend.table(dataset.items_table(attribute))
    extra = int(backend.scalar("rho_not_subset", tables={"pub": pub, "items": items}))
    prefix = f"tmp_{uuid.uuid4().hex[:12]}_pv"

    def table(purpose: str) -> exp.Table:
        return backend.table(f"{prefix}{purpose}")

    def part0(source: exp.Table) -> exp.Select:
        return exp.select(col("record_id"), col("item_id"), exp.cast(
            exp.Literal.number(0), "BIGINT").as_("part", quoted=True)).from_(source.copy())

    base, cur = table("base"), table("cur")
    try:
        # E_u rebuilt from the data, the parameters and the run's seed, in the verifier's own
        # tables: never the run's 'common' and 'cons'.
        constraint = build_constraint(backend, table, run.seed or 0, chosen, items,
                                      backend.table(dataset.records_table),
                                      backend.table(dataset.dict_table(attribute)))
        backend.materialize(base, part0(items))
        backend.materialize(cur, part0(pub))
        inconclusive = False
        if chosen.sampled:
            ok, inconclusive, covered, details = _sampled(backend, table, base, cur, constraint,
                                                          chosen, run)
        else:
            ok, covered, details = _exact(backend, table, base, cur, items, constraint, chosen)
    finally:
        for name in backend.table_names(prefix):
            backend.drop_table(backend.table(name))
    details["occurrences_not_in_input"] = extra
    return Verification(ok and extra == 0, covered + "; output is a subset of the input "
                        "record by record", details, inconclusive=inconclusive and extra == 0)


def _exact(backend: Backend, table: Any, base: exp.Table, cur: exp.Table, items: exp.Table,
           constraint: Constraint, chosen: Any) -> tuple[bool, str, dict[str, Any]]:
    conseq = table("conseq")
    backend.materialize(conseq, constraint.consequents())
    # The enumeration is of the published table: a rule Q -> e of positive confidence has
    # Q + {e} inside a published record, so its longest record bounds |Q| + 1, whatever the
    # input's records are; the level above m only holds itemsets with a possible consequent.
    # When E_u differs between records, the input's itemsets of up to that |Q| are joined in
    # (who holds Q), counted once. (The input's shape used to bound both: with every item a
    # possible consequent that refused 1M Quest records at --m 3, 639M rows, after the run.)
    shape = check_shape(backend, cur, chosen.m, conseq)
    unsafe = 0
    if shape.width >= 2:
        largest_q = min(shape.max_q, shape.width - 1)
        olevels: list[exp.Table] = []
        if constraint.per_record:
            check_original_levels(backend, items, largest_q)
            olevels = original_levels(backend, table, base, largest_q)
        rules = table("rules")
        exact_rules(backend, table, cur, constraint, conseq, olevels, shape.width, shape.max_q,
                    chosen.rho, rules)
        unsafe = int(backend.scalar("prho_count_rows", tables={"t": rules}))
    bound = f"up to {chosen.m} items" if chosen.m else "any subset of the record"
    return unsafe == 0, (f"every adversary (u, Q), Q of {bound}, and every e in E_u, exactly "
                         f"in SQL (rho = {chosen.rho})"), {
        "unsafe_rules": unsafe, "largest_qid_checked": shape.max_q}


def _sampled(backend: Backend, table: Any, base: exp.Table, cur: exp.Table,
             constraint: Constraint, chosen: Any, run: Run
             ) -> tuple[bool, bool, str, dict[str, Any]]:
    """(passed, inconclusive, covered, details): per l, pass when the one-sided Clopper-Pearson
    upper bound of the unsafe share is below epsilon, fail when the lower bound is above it,
    else the sample cannot decide (inconclusive)."""
    n = verify_sample_size(chosen)
    eligible = eligible_counts(backend, base, chosen.m)
    olen, istat0 = table("olen"), table("istat0")
    backend.materialize(olen, "prho_lengths", tables={"items": base})
    backend.materialize(istat0, "rho_istat0", tables={"base": base})
    per_l: dict[str, Any] = {}
    ok, failed = True, False
    for ell in range(1, chosen.m + 1):
        if eligible[ell] == 0:
            continue
        key = f"verify:{run.seed}:{ell}"
        samp, hits = sample(backend, table, base, olen, ell, n, eligible[ell], key)
        unsafe = unsafe_adversaries(backend, table, cur, samp, hits, istat0, constraint, ell,
                                    chosen.rho)
        count = int(backend.scalar("prho_unsafe_samples", tables={"unsafe": unsafe}))
        decision = decide(count, n, chosen.epsilon, chosen.delta)
        ok = ok and decision.upper < chosen.epsilon
        failed = failed or decision.lower > chosen.epsilon
        per_l[str(ell)] = {"unsafe": count, "samples": n, "unsafe_share": count / n,
                           "upper_bound": round(decision.upper, 6),
                           "lower_bound": round(decision.lower, 6)}
    return ok, not ok and not failed, (
        f"sampled: {n} fresh adversaries per l = 1..{chosen.m} (seed 'verify:{run.seed}', not "
        f"the run's draws); passes when the one-sided Clopper-Pearson upper bound of the unsafe "
        f"share is below epsilon = {chosen.epsilon}, fails when the lower bound is above it, "
        f"confidence {1 - chosen.delta:g} each; in between: inconclusive"), {
        "per_l": per_l, "delta": chosen.delta}
