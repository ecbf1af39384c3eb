"""SUPPRESSOR for a constraint that is the same for every record, by the rho model's stages.

When E_u = S for every u (``--setting fixed`` and ``fixed+``), an adversary (u, Q) with
Q ⊆ D_u can use a rule Q -> e iff e ∈ S \\ Q and supp_{D'}(Q) > 0: every Q of D' lies in some
original record (D' is a record-by-record subset of D). Personalized ρ^m-uncertainty is then
Jia et al.'s ρ-uncertainty with S sensitive and qids of at most m items, and Alg. 1's choice
of d, F = D'(d) log(D'(d)/D(d)) / N_s(d) (eq. 8, D(t) the share of t among all occurrences), is
H_dist (Jia et al. eq. 5) with the same tie-breaks (the rho model's ``choice.py``; the
``prho_choose`` statement). So the rho model's suppressor runs it: qids of growing size in
stages (Alg. 1 l.5 also goes ℓ = 1 .. max), supports counted once and kept up to date, the
level above the largest qid only with itemsets that hold an item of S, rules of one holder
collapsed (:mod:`..rho.stages`). The last stage ends only when a count from scratch finds no
unsafe rule with a qid of up to m items (Alg. 1 l.3-4).

Why: the single pass of :mod:`.suppressor` counts every itemset of up to m + 1 items in every
round; on 1M Quest records at ``--m 3`` its first round ran DuckDB out of 10 GB (BENCHMARKS.md,
prho at scale). A personalized constraint keeps that pass: which rules someone must be
protected from depends on the original records holding Q (:func:`.rules.exact_rules`).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.prho.constraint import Constraint
from setanon_sql.models.prho.params import PrhoParams
from setanon_sql.models.rho.check import CheckShape
from setanon_sql.models.rho.params import RhoParams
from setanon_sql.models.rho.stages import run_stages
from setanon_sql.runs import RunContext


def staged_applies(constraint: Constraint, chosen: PrhoParams) -> bool:
    """Whether SUPPRESSOR runs by stages: E_u the same for everyone and d chosen by eq. 8.

    ``--choice fewest`` (the smallest N_s, records shared with other rules first) has no
    counterpart among the rho model's heuristics, so it keeps the single pass.
    """
    return not constraint.per_record and chosen.choice == "paper" and not chosen.sampled


def run_staged(backend: Backend, context: RunContext, chosen: PrhoParams, conseq: exp.Table,
               base: exp.Table, shape: CheckShape) -> tuple[exp.Table, list[dict[str, Any]]]:
    """The final D' and the history of every round; the stages' summaries and the final
    recount's support mismatches (0 when the kept supports were right) go to the figures."""
    params = RhoParams(rho=chosen.rho, m=chosen.m, heuristic="dist", b_max=None, t_max=None,
                       sensitive=None, sensitive_fraction=None, column=chosen.column)
    final, history, stages, mismatches = run_stages(backend, context, params, conseq, base,
                                                    shape.width, shape.max_q)
    context.figures.update({"stages": stages, "support_mismatches": mismatches})
    return final, history
