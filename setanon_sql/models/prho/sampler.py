"""SAMPLESUPPRESSOR (Nakagawa et al. Alg. 2) for personalized (ε, δ)-ρ^m-uncertainty.

A sweep draws, for ℓ = 1..m in turn, n_S = ⌈ln(1/δ)/(2ε²)⌉ adversaries of ℓ items (l.6-7),
finds the rules Q -> e, e ∈ E_u, with conf_{D'} > ρ among them (l.8) and suppresses for them
as SUPPRESSOR does (l.11-15): passes over the rules no higher rule interferes with, each
followed by the re-check of l.12 (fresh supports), until no rule of R_S is above ρ. The loop ends at
the first sweep in which every sample of every ℓ is safe (l.4-5, 9-10): by Theorem 7,
Pr[H_ℓ < ε] >= 1 - δ for every ℓ <= m. Every sweep and ℓ draws fresh samples, reproducible from
the seed.

``--repair-pool N`` (N > 1, not in the paper) draws N·n_S adversaries per ℓ instead of n_S. The
first n_S of them, i.i.d. from A^ℓ as before, are the check; only when the check finds an unsafe
one are the unsafe adversaries of the whole pool repaired. A sweep that repairs nothing is one
whose check samples are all safe, so the run still ends exactly as Alg. 2 l.4-10 says and
Theorem 7 applies unchanged; the pool only lets one sweep repair what several sweeps of n_S
samples would find one after the other. With N = 1 the samples are drawn as the paper's are.

``--stop-rule bound`` (not in the paper) ends at the first sweep in which, for every ℓ, the
one-sided Clopper-Pearson upper bound of H_ℓ from the unsafe adversaries among all N·n_S draws
is below ε; a size whose bound is not below ε has its unsafe draws repaired, and only the
repaired sizes and those whose bound was at least ε/2 are tested in the next sweep until one
repairs nothing; then a sweep tests every size again (:func:`next_tested`), and only such a
sweep with nothing to repair ends the run. The paper's rule
asks for zero unsafe samples, which certifies far more than H_ℓ < ε (with n_S = 600 draws at
ε = δ = 0.05, the bound is 1 - δ^(1/n_S) = 0.005) and so keeps suppressing long after the share
is below ε. Sweep t tests each ℓ at confidence 1 - δ_t, δ_t = 6δ / (π² t²): the δ_t sum to δ,
so the chance that ANY sweep's test of ℓ passes while H_ℓ >= ε is at most δ, and the output
keeps Def. 6's Pr[H_ℓ < ε] >= 1 - δ for every ℓ <= m (a sweep that does not test ℓ spends
none of it). A sweep of this rule checks its sizes before it repairs, then repairs the sizes
that need it together. The last sweep tests every size and repairs nothing, so all of its tests
saw the output itself, with draws made after it was fixed.

``--exact-upto L`` (not in the paper) starts the sweeps from SUPPRESSOR's output for
adversaries of up to L items instead of from D (``models/prho/__init__.py``). The draws are
still of D's adversaries of every ℓ <= m, and the run still ends only as above, so Theorem 7
(or the bound rule's union bound) holds as it is: the start only changes how much is left to
repair.
"""

from __future__ import annotations

import math
import time
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.prho.adversaries import (
    eligible_counts,
    rules_query,
    sample,
    unsafe_adversaries,
)
from setanon_sql.models.prho.constraint import Constraint
from setanon_sql.models.prho.params import PrhoParams
from setanon_sql.models.prho.recheck import still_unsafe
from setanon_sql.models.prho.rules import TableFn, fresh, suppress
from setanon_sql.progress import report
from setanon_sql.runs import RunContext
from setanon_sql.stats.binomial import upper_bound


def sweep_delta(delta: float, sweep: int) -> float:
    """δ_t = 6δ / (π² t²), the error allowed to sweep t's test of one ℓ (Σ_t δ_t = δ)."""
    return 6 * delta / (math.pi ** 2 * sweep ** 2)


def run_sample_suppressor(backend: Backend, context: RunContext, chosen: PrhoParams,
                          constraint: Constraint, base: exp.Table, istat0: exp.Table,
                          start: exp.Table | None = None
                          ) -> tuple[exp.Table, list[dict[str, Any]], dict[str, Any]]:
    """Suppress until a whole sweep of samples is safe; the final D', history and figures.

    The adversaries are drawn from D (``base``); the repairs start from ``start`` (D' of an
    exact phase, ``--exact-upto``, dropped once replaced) or from D.

    The paper's rule repairs each size as soon as its samples are checked (Alg. 2 l.6-15). The
    bound rule checks the sweep's sizes (:func:`next_tested`) first and repairs the sizes that
    need it together, in one series of passes over their rules: the sweep that ends the run
    tests every size and repairs nothing either way, so its tests saw the output itself. Taken
    together the sizes' rules need fewer passes (a grocery-sized file at m = 5: 32 passes in 12
    sweeps, against 47 one size at a time).
    """
    assert chosen.m is not None and chosen.epsilon is not None and chosen.delta is not None
    table, seed, m, n_s = context.table, context.seed or 0, chosen.m, chosen.n_samples
    drawn = n_s * chosen.repair_pool  # draws per sweep and ℓ; the first n_s are Alg. 2's check
    together = chosen.stop_rule == "bound"
    eligible = eligible_counts(backend, base, m)
    olen = fresh(backend, table, "olen")
    backend.materialize(olen, "prho_lengths", tables={"items": base})
    repairs = _Repairs(backend, table, istat0, chosen, seed, base, start)
    history: list[dict[str, Any]] = []
    every_size = [ell for ell in range(1, m + 1) if eligible[ell] > 0]
    tested, bounds = every_size, dict.fromkeys(every_size, 1.0)
    for sweep in range(1, 10**9):
        repaired = False
        pending: list[tuple[exp.Table, exp.Table, int]] = []
        work: list[exp.Table] = []
        for ell in tested:
            started = time.perf_counter()
            key = f"{seed}:{sweep}:{ell}"
            sized = _sized(table, ell)  # a size's tables live until the sweep's repair
            samp, hits = sample(backend, sized, base, olen, ell, drawn, eligible[ell], key)
            unsafe = unsafe_adversaries(backend, sized, repairs.cur, samp, hits, istat0,
                                        constraint, ell, chosen.rho)
            work += [samp, hits, unsafe]
            in_pool, n_unsafe = (int(n) for n in backend.query(
                "prho_unsafe_pool", {"n": n_s}, {"unsafe": unsafe})[0])
            entry: dict[str, Any] = {"sweep": sweep, "l": ell, "unsafe_samples": n_unsafe}
            if chosen.repair_pool > 1:
                entry["unsafe_in_pool"] = in_pool
            shown = f"{in_pool:,} of {drawn:,} draws unsafe"
            if chosen.stop_rule == "bound":
                # every draw is part of the check; repair while the share may reach epsilon
                bound = upper_bound(in_pool, drawn, sweep_delta(chosen.delta, sweep))
                entry["share_upper_bound"] = bounds[ell] = round(bound, 6)
                shown += f", share <= {bound:.4f}"
                repair = bound >= chosen.epsilon
            else:
                repair = n_unsafe > 0  # Alg. 2 l.9: any unsafe check sample
            report("search", f"sweep {sweep}, adversaries of {ell} items: {shown}"
                   + (", repairing" if repair else ""))
            if repair:
                repaired = entry["repaired"] = True
                if together:
                    pending.append((unsafe, hits, ell))
                else:
                    entry.update(repairs.run([(unsafe, hits, ell)], sweep))
            entry["seconds"] = round(time.perf_counter() - started, 3)
            history.append(entry)
            if not together:
                _drop(backend, work)
                work = []
        if pending:
            started = time.perf_counter()
            done = repairs.run(pending, sweep)
            history.append({"sweep": sweep, "repaired_sizes": [ell for _, _, ell in pending],
                            **done, "seconds": round(time.perf_counter() - started, 3)})
        _drop(backend, work)
        if not repaired and tested == every_size:
            break
        if together:
            tested = next_tested(every_size, bounds, [ell for _, _, ell in pending],
                                 chosen.epsilon)
    backend.drop_table(olen)
    figures = {"samples_per_l": n_s, "repair_pool": chosen.repair_pool, "sweeps": sweep,
               "exact_upto": chosen.exact_upto,
               "stop_rule": chosen.stop_rule,
               "epsilon": chosen.epsilon, "delta": chosen.delta,
               "eligible_records_per_l": eligible}
    return repairs.cur, history, figures


def next_tested(every_size: list[int], bounds: dict[int, float], repaired: list[int],
                epsilon: float) -> list[int]:
    """The sizes the bound rule tests in the next sweep: after a sweep that repaired, those
    whose last bound (``bounds``) was at least ε/2; after one that repaired nothing, every
    size (only such a sweep, testing every size, ends the run).

    A size far below ε is not tested again until then: on a grocery-sized file at m = 15,
    after the first sweep two to four sizes of fifteen need repairs, and the tests of the
    others (0.1 s each) were most of the run. Sizes near ε stay in: a size just below it
    fails the next test by chance often enough (the draws are fresh) that leaving it out
    until the confirming sweep made that sweep fail and the run longer. Skipping a test spends
    none of the δ_t, so the union bound of the module docstring holds as before; repairs of one
    size can make another unsafe again, which the confirming sweep finds and repairs.
    """
    if not repaired:
        return every_size
    return [ell for ell in every_size if ell in repaired or bounds[ell] >= epsilon / 2]


def _sized(table: TableFn, ell: int) -> TableFn:
    """Work tables named for adversaries of ``ell`` items."""
    return lambda purpose: table(f"{purpose}_l{ell}")


def _drop(backend: Backend, tables: list[exp.Table]) -> None:
    for work in tables:
        backend.drop_table(work)


class _Repairs:
    """D' as the repairs leave it (``cur``), and the passes that make the rules of unsafe
    samples safe (Alg. 2 l.11-15)."""

    def __init__(self, backend: Backend, table: TableFn, istat0: exp.Table, chosen: PrhoParams,
                 seed: int, base: exp.Table, start: exp.Table | None = None) -> None:
        self.backend, self.table, self.istat0 = backend, table, istat0
        self.chosen, self.seed, self.step = chosen, seed, 0
        self.cur, self.base = start if start is not None else base, base

    def run(self, unsafe: list[tuple[exp.Table, exp.Table, int]], sweep: int
            ) -> dict[str, int]:
        """Suppress for the rules of ``unsafe`` (unsafe, hits, ℓ) until none is above ρ:
        passes over the rules no higher rule interferes with, each followed by the re-check
        of l.12 (fresh supports). The rules, passes and occurrences suppressed."""
        backend, table, chosen = self.backend, self.table, self.chosen
        assert chosen.m is not None
        rules = fresh(backend, table, "rules")
        backend.materialize(rules, rules_query(unsafe, chosen.m))
        left = int(backend.scalar("prho_count_rows", tables={"t": rules}))
        done = {"rules": left, "suppressed": 0, "passes": 0}
        while left:
            self.step += 1
            following = fresh(backend, table, f"cur{self.step % 2}")
            count = suppress(backend, table, self.cur, self.istat0, rules, chosen.m + 1,
                             chosen.rho, self.seed, self.step, following, chosen.choice)
            if count == 0:
                sizes = ", ".join(str(ell) for _, _, ell in unsafe)
                raise RuntimeError(f"sweep {sweep}, l = {sizes}: a pass suppressed nothing "
                                   f"although {left} rules are above rho")
            done["suppressed"] += count
            done["passes"] += 1
            if self.cur is not self.base:
                backend.drop_table(self.cur)
            self.cur = following
            again = fresh(backend, table, f"rules{self.step % 2}")
            left = still_unsafe(backend, table, rules, self.cur, self.istat0, chosen.m + 1,
                                chosen.rho, again)
            backend.drop_table(rules)
            rules = again
        backend.drop_table(rules)
        return done
