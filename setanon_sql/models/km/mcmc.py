"""The Metropolis-Hastings sampler of Acs et al. Alg. 1, many chains advanced together in SQL.

Each sample is the state of its own chain (Alg. 1 returns one sample per run of t steps), so
the γ samples of Theorem 1 are γ independent chains. Candidates do not depend on the current
state (l.6-7: a record of U uniformly, then an ℓ-subset of it uniformly), so the candidates of
all chains for a segment of steps, with their q(C) and support, are computed by a few set-based
statements; one recursive statement then walks every chain through the segment (l.8).

Convergence (appendix): X_t is the support of a chain's state at step t; the Geweke z-score
compares the mean of X over the first 10% of the steps with the mean over the last 50%, and the
chain has converged when |z| <= 1. Over a batch of chains we (a) discard the first half of the
steps as burn-in and apply the windows to the second half (else the start's transient, inside
the first window by construction, keeps z large for t of the order of the number of chains),
and (b) take as standard error the spread over the independent chains of the per-chain
difference of the window means, which is right whatever the autocorrelation within a chain
(the appendix divides by the variances of X itself, which would not give the N(0, 1) z it
describes; per-chain z with window variances over lengths is over-dispersed by the chains'
rejections). The chains run t = 16, 32, 64, ... steps until |z| <= 1, capped by the worst case
of Theorem 3, τ(ξ) <= |D| ln(1/ξ) / R*_ℓ with ξ = 0.01 and R*_ℓ estimated from ℓ-subsets of
the largest record, and by ``max_steps``. The run's ``mcmc_chains`` figure records per draw
how it ended: ``converged`` is "geweke", "theorem3" (the cap reached: within ξ in total
variation) or null (stopped by ``max_steps`` alone).

Why the exact sampler stays the default (``--sampler exact``). Both score candidates with
the same support statement; MCMC scores chains * (t + 1) candidates, the exact sampler
γ / acceptance. The exact sampler is exactly uniform and independent; MCMC only in the limit
(Theorem 2), and Geweke can stop it early. Measured on BMS-WebView-2 (77,512 records, DuckDB,
2 cores shared with other engineers' tests, load average about 5):
- γ = 45,845 (σ = 0.99) exact draws: 30 s at ℓ = 4 (acceptance 0.95), 31 s at ℓ = 2 (0.32).
- 300 draws at ℓ = 4: exact 0.8 s, unique share 0.966 (the truth within ±0.02); MCMC stopped
  by Geweke after 32 steps: 3.1 s, unique share 0.880, mean support 1.27 against 1.06 (8
  standard errors off: chains started on itemsets of small records have not yet reached the
  itemsets of the largest records, which dominate Omega^4); MCMC forced to 512 steps: 24 s,
  unique share 0.960. At ℓ = 2 after 32 steps: 0.463 against 0.588. With 2,000 chains Geweke
  still stops at 32 steps (25 s): unique share 0.891 against 0.974 (exact, 2.4 s), so more
  chains do not make the diagnostic catch the slow drift; Theorem 3 caps at 366,991 steps.
- So a γ-sized MCMC pool at ℓ = 4 costs 1.5 M candidates (about 4 min) at the Geweke stop and
  is then biased toward frequent itemsets (the violating share is under-estimated, which
  weakens the σ guarantee), or 23.5 M candidates (about an hour) to match the exact sampler.
- End to end on the first 10,000 records, k = 10, m = 4, σ = 0.9: exact 43 s (NCP 0.194),
  MCMC 99 s (NCP 0.128); both verified by fresh exact samples (0 violating of 321-777 per ℓ).
- PostgreSQL 15, same 300 draws: identical samples to DuckDB (the md5 draws are portable);
  ℓ = 4 exact 4.6 s, MCMC 19.5 s; ℓ = 2 exact 7.1 s, MCMC 47.8 s.
``--mcmc-min-steps`` raises the burn-in floor for those who want the paper's sampler anyway.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.km.sampler import statement

XI = 0.01  # total variation distance ξ of the Theorem 3 cap
FIRST_CHECK = 16
MAX_STEPS = 4096
_RSTAR_DRAWS = 512


@dataclass
class McmcSampler:
    """Same interface as :class:`~.sampler.Sampler`: ``draw(ell, count, target)``."""

    backend: Backend
    items: exp.Table
    table: Callable[[str], exp.Table]
    seed: int
    stream: int
    max_steps: int = MAX_STEPS
    first_check: int = FIRST_CHECK
    rounds: int = 0
    proposals: int = 0
    chains: list[dict[str, Any]] = field(default_factory=list)

    def _count(self, table: exp.Table) -> int:
        return int(self.backend.scalar(exp.select(exp.func("count", exp.Star()))
                                       .from_(table.copy())))

    def _round(self) -> int:
        self.rounds += 1
        return self.stream * 1_000_000 + self.rounds

    def release(self) -> None:
        """Nothing is kept between draws (the chains' tables are dropped by each draw)."""

    def draw(self, ell: int, count: int, target: exp.Table) -> int:
        """Create ``target(sid, item_id, supp)``: the states of ``count`` chains of size ℓ
        (none if Omega^ℓ is empty); ``supp`` is the itemset's support in D."""
        b = self.backend
        recu = self.table("recu")
        b.materialize(recu, statement("km_mcmc_records", ell, b), {"ell": ell},
                      {"items": self.items})
        nu = self._count(recu)
        if not nu or count < 1:
            b.materialize(target, exp.select(*(exp.cast(exp.Literal.number(0), "BIGINT").as_(c)
                                               for c in ("sid", "item_id", "supp")))
                          .where(exp.false()))
            b.drop_table(recu)
            return 0
        cap, rstar = self._theorem3_cap(ell, nu)
        checks = self._run_chains(ell, count, nu, cap)
        steps, z = checks[-1] if checks else (0, None)
        converged = ("geweke" if z is not None and abs(z) <= 1
                     else "theorem3" if cap is not None and steps >= cap else None)
        self.chains.append({"size": ell, "chains": count, "steps": steps,
                            "converged": converged, "geweke_z": checks,
                            "theorem3_cap": cap, "r_star": rstar})
        b.materialize(target, "km_mcmc_samples", None,
                      {"cur": self.table("cur"), "pool": self.table("pool")})
        for purpose in ("recu", "cur", "pool", "hist"):
            b.drop_table(self.table(purpose))
        return count

    def _theorem3_cap(self, ell: int, nu: int) -> tuple[int | None, float]:
        """|D| ln(1/ξ) / R*_ℓ (Theorem 3), R*_ℓ estimated from subsets of the largest record;
        None when no sampled subset is unique (no finite bound)."""
        b = self.backend
        round_ = self._round()
        props, subs, scores = self.table("props"), self.table("subs"), self.table("scores")
        b.materialize(props, "km_mcmc_largest", {"n": _RSTAR_DRAWS},
                      {"recu": self.table("recu")})
        self._score(ell, round_, props, subs, scores)
        unique, total = b.query("km_mcmc_unique_share", None, {"scores": scores})[0]
        for table in (props, subs, scores):
            b.drop_table(table)
        records = int(b.scalar(exp.select(exp.func("count", exp.Distinct(
            expressions=[exp.column("record_id")]))).from_(self.items.copy())))
        rstar = int(unique) / int(total) if total else 0.0
        if not rstar:
            return None, 0.0
        return math.ceil(records * math.log(1 / XI) / rstar), rstar

    def _score(self, ell: int, round_: int, props: exp.Table, subs: exp.Table,
               scores: exp.Table) -> None:
        """subs := an ℓ-subset of each candidate's record (l.7); scores := its supp and q."""
        b = self.backend
        common = {"seed": self.seed, "ell": ell, "round": round_}
        b.materialize(subs, statement("km_sample_subsets", ell, b), common,
                      {"props": props, "items": self.items})
        b.materialize(scores, "km_mcmc_score", {"ell": ell},
                      {"subs": subs, "items": self.items, "recu": self.table("recu")})

    def _run_chains(self, ell: int, chains: int, nu: int,
                    cap: int | None) -> list[tuple[int, float | None]]:
        """Advance all chains segment by segment until Geweke agrees or a cap is reached;
        returns (steps, z) of every check."""
        limit = self.max_steps if cap is None else min(cap, self.max_steps)
        limit = max(limit, min(self.first_check, self.max_steps))
        round_ = self._round()
        done, checks = -1, list[Any]()
        target = min(self.first_check, limit)
        while True:
            self._segment(ell, chains, nu, round_, done + 1, target)
            done = target
            if done == 0:
                return checks
            z = self._geweke(done)
            checks.append((done, None if z is None else round(z, 4)))
            if (z is not None and abs(z) <= 1) or done >= limit:
                return checks
            target = min(2 * done, limit)

    def _segment(self, ell: int, chains: int, nu: int, round_: int, first: int,
                 last: int) -> None:
        """Candidates of steps first..last for every chain, then the walk through them."""
        b = self.backend
        t = {p: self.table(p) for p in ("props", "subs", "scores", "moves", "walk", "cur",
                                          "pool", "hist", "next")}
        common = {"seed": self.seed, "ell": ell, "round": round_}
        b.materialize(t["props"], statement("km_mcmc_propose", ell, b),
                      {**common, "chains": chains, "nu": nu, "first": first, "last": last},
                      {"recu": self.table("recu")})
        self._score(ell, round_, t["props"], t["subs"], t["scores"])
        b.materialize(t["moves"], statement("km_mcmc_moves", ell, b), common,
                      {"props": t["props"], "scores": t["scores"]})
        self.proposals += chains * (last - first + 1)
        if first == 0:
            b.materialize(t["cur"], "km_mcmc_start", None, {"moves": t["moves"]})
            b.materialize(t["pool"], exp.select("pid", "item_id").from_(t["subs"].copy())
                          .where(exp.column("pid").isin(
                              exp.select("pid").from_(t["cur"].copy()))))
            b.materialize(t["hist"], exp.select("chain", "step", "supp")
                          .from_(t["moves"].copy()).where(exp.false()))
            first = 1
        if first <= last:
            b.materialize(t["walk"], "km_mcmc_walk", {"first": first},
                          {"cur": t["cur"], "moves": t["moves"]})
            b.materialize(t["next"], "km_mcmc_history", None,
                          {"hist": t["hist"], "walk": t["walk"]})
            self._replace(t["hist"], t["next"])
            b.drop_table(t["cur"])
            b.materialize(t["cur"], "km_mcmc_current", {"last": last}, {"walk": t["walk"]})
            b.materialize(t["next"], "km_mcmc_pool", None,
                          {"subs": t["subs"], "pool": t["pool"], "cur": t["cur"]})
            self._replace(t["pool"], t["next"])
            b.drop_table(t["walk"])
        for purpose in ("props", "subs", "scores", "moves"):
            b.drop_table(t[purpose])

    def _replace(self, table: exp.Table, new: exp.Table) -> None:
        """``table`` := the rows of ``new``; ``new`` is dropped."""
        self.backend.replace_table(table, new)

    def _geweke(self, steps: int) -> float | None:
        """The batch z-score over steps ``steps // 2 + 1``..``steps`` (module docstring);
        None when it is undefined (one chain, or no variation at all)."""
        kept_from = steps // 2 + 1
        kept = steps - kept_from + 1
        mean, var, chains = self.backend.query(
            "km_mcmc_geweke", {"a_start": kept_from, "a_end": kept_from + max(1, kept // 10) - 1,
                               "b_start": steps - kept // 2 + 1},
            {"hist": self.table("hist")})[0]
        if not chains or mean is None or var is None:
            return None
        if not var:
            return 0.0 if not mean else None
        return float(mean) / math.sqrt(float(var) / int(chains))
