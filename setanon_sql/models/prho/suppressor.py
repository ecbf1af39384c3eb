"""SUPPRESSOR (Nakagawa et al. Alg. 1) for personalized ρ^m-uncertainty, one SQL pass per round.

Used for ``--choice fewest``; ``--choice paper`` runs by the rho model's suppressor
(:mod:`.staged`), which counts the supports once instead of in every round.

A round finds every sensitive rule Q -> {e} (|Q| <= m) of D' with conf > ρ that some adversary
(u, Q), Q ⊆ D_u, e ∈ E_u can use (l.5-7, all ℓ and u at once), and suppresses for all of them
that no rule of higher rank interferes with (l.10-14; :func:`.rules.suppress`). The loop ends
when a round finds none (l.3-4: safe). Each round suppresses at least one occurrence (the rule
with the highest F is always done), so it ends. Suppression may make other rules unsafe (no
monotonicity, Sec. 4.2): the next round's full recount finds them.
"""

from __future__ import annotations

import time
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.prho.constraint import Constraint
from setanon_sql.models.prho.params import PrhoParams
from setanon_sql.models.prho.rules import exact_rules, fresh, original_levels, suppress
from setanon_sql.models.rho.check import CheckShape
from setanon_sql.progress import report_shrinking
from setanon_sql.runs import RunContext


def run_suppressor(backend: Backend, context: RunContext, chosen: PrhoParams,
                   constraint: Constraint, base: exp.Table, istat0: exp.Table,
                   shape: CheckShape) -> tuple[exp.Table, list[dict[str, Any]]]:
    """Suppress until no adversary of at most m items is unsafe; the final D' and the history."""
    table = context.table
    conseq = fresh(backend, table, "conseq")
    backend.materialize(conseq, constraint.consequents())
    olevels = (original_levels(backend, table, base,
                                               min(shape.max_q, shape.width - 1))
               if constraint.per_record else [])
    cur, history = base, []
    first_rules = 0
    for round_no in range(1, 10**9):
        started = time.perf_counter()
        rules = fresh(backend, table, "rules")
        levels = exact_rules(backend, table, cur, constraint, conseq, olevels, shape.width,
                             shape.max_q, chosen.rho, rules, keep_levels=True)
        n_rules = int(backend.scalar("prho_count_rows", tables={"t": rules}))
        first_rules = first_rules if round_no > 1 else n_rules
        report_shrinking("search", "sensitive rules above rho", first_rules, n_rules, round_no)
        if n_rules == 0:
            for level in levels:
                backend.drop_table(level)
            history.append({"round": round_no, "unsafe_rules": 0,
                            "seconds": round(time.perf_counter() - started, 3)})
            break
        following = fresh(backend, table, f"cur{round_no % 2}")
        count = suppress(backend, table, cur, istat0, rules, shape.width, chosen.rho,
                         context.seed or 0, round_no, following, chosen.choice, levels)
        for level in levels:
            backend.drop_table(level)
        if count == 0:
            raise RuntimeError(f"round {round_no} suppressed nothing although {n_rules} "
                               "sensitive rules are above rho")
        if cur is not base:
            backend.drop_table(cur)
        cur = following
        history.append({"round": round_no, "unsafe_rules": n_rules, "suppressed": count,
                        "seconds": round(time.perf_counter() - started, 3)})
    for work in (conseq, table("rules"), *olevels):
        backend.drop_table(work)
    return cur, history
