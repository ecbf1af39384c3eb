"""SUPPRESSOR (``--choice paper``) by the rho model's suppressor, for every kind of constraint.

When E_u = S for every u (``--setting fixed`` and ``fixed+``), an adversary (u, Q) with
Q ⊆ D_u can use a rule Q -> e iff e ∈ S \\ Q and supp_{D'}(Q) > 0: every Q of D' lies in some
original record (D' is a record-by-record subset of D). Personalized ρ^m-uncertainty is then
Jia et al.'s ρ-uncertainty with S sensitive and qids of at most m items, and Alg. 1's choice
of d, F = D'(d) log(D'(d)/D(d)) / N_s(d) (eq. 8, D(t) the share of t among all occurrences), is
H_dist (Jia et al. eq. 5) with the same tie-breaks (the rho model's ``choice.py``; the
``prho_choose`` statement). So the rho model's suppressor runs it: supports counted once and
kept up to date, the level above the largest qid only with itemsets that hold an item of S,
rules of one holder collapsed, and, where one pass over every qid size at once is out of
reach, qids of growing size in stages (Alg. 1 l.5 also goes ℓ = 1 .. max; :mod:`..rho.stages`).
The last stage ends only when a count from scratch finds no unsafe rule with a qid of up to m
items (Alg. 1 l.3-4).

A personalized constraint (E_u per record) runs the same way with one more test: a rule
Q -> e found unsafe is sanitized only if an original record u ⊇ Q has e ∈ E_u
(:class:`.relevance.Relevance`), which depends on D and E only; the possible consequents are
then every item in some E_u.

Why: the single pass of :mod:`.suppressor` counts every itemset of up to m + 1 items in every
round; on 1M Quest records at ``--m 3`` its first round ran DuckDB out of 10 GB (BENCHMARKS.md,
prho at scale). It is kept for ``--choice fewest``.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.prho.constraint import Constraint
from setanon_sql.models.prho.params import PrhoParams
from setanon_sql.models.prho.relevance import Relevance, protected_occurrences
from setanon_sql.models.prho.rules import original_levels
from setanon_sql.models.rho.check import (
    CheckShape,
    check_shape,
    length_histogram,
    pruned_rows,
)
from setanon_sql.models.rho.params import RhoParams
from setanon_sql.models.rho.stages import run_stages
from setanon_sql.runs import RunContext


def staged_applies(chosen: PrhoParams) -> bool:
    """Whether SUPPRESSOR (the exact check; the caller has ruled out SAMPLESUPPRESSOR) runs by
    the rho model's suppressor: d chosen by eq. 8, whatever the constraint.

    ``--choice fewest`` (the smallest N_s, records shared with other rules first) has no
    counterpart among the rho model's heuristics, so it keeps the single pass.
    """
    return chosen.choice == "paper"


# The most (record, itemset) rows one stage enumerates from the input; above it, stages. The
# largest one-stage run measured: 116.8M rows (200k Quest records, --m 3, fixed 40%), 191.3 s,
# peak RSS 9.7 GiB at DuckDB's memory_limit=10GB; its staged run took 100.0 s (BENCHMARKS.md).
ONE_STAGE_MAX_ROWS = 120_000_000
# What one row weighs when E_u differs between records: every unsafe rule a count finds is also
# joined with the input's holders of its qid and tested against E_u (:mod:`.relevance`). 50k
# personalized Quest records at --m 3 (32.0M rows) took 148.5 s and 8.5 GiB in one stage, the
# fixed setting's 116.8M rows 191.3 s and 9.7 GiB: about 4x the time and 3.2x the memory per
# row, and the stages took 36.2 s for 2.0% more suppressed. With the weight 100k records go by
# stages in 52.9 s; one stage took 257.5 s and 9.9 GiB for 1.7% fewer (BENCHMARKS.md, prho).
PER_RECORD_ROW_WEIGHT = 4


def one_stage_within_reach(histogram: dict[tuple[int, int], int], shape: CheckShape,
                           per_record: bool = False) -> bool:
    """Whether the last stage alone (every qid size at once, from the input) enumerates at
    most ONE_STAGE_MAX_ROWS (record, itemset) rows (``histogram``: records per (length,
    items of S held), :func:`..rho.check.length_histogram`); with a ``per_record``
    constraint each row counts PER_RECORD_ROW_WEIGHT times.

    Why not always stages: making small qids safe first costs utility. Fixed setting, ρ = 0.5,
    40%, the first 10% extracts of BMS-WebView-1' and -2' (m = all): every stage 1,257 and 2,845
    occurrences suppressed, the last stage alone 1,061 and 2,321, the single pass of
    :mod:`.suppressor` 1,139 and 2,600; 200k Quest records at ``--m 3``, ρ = 0.7: 0.673 of the
    occurrences against 0.592 (BENCHMARKS.md, prho). Where one stage is out of reach (1M Quest
    records: 582.6M rows), the stages are what makes the run possible.
    """
    weight = PER_RECORD_ROW_WEIGHT if per_record else 1
    return weight * pruned_rows(histogram, shape.width, shape.max_q) <= ONE_STAGE_MAX_ROWS


def run_staged(backend: Backend, context: RunContext, chosen: PrhoParams,
               constraint: Constraint, items: exp.Table, base: exp.Table
               ) -> tuple[exp.Table, list[dict[str, Any]]]:
    """The final D' and the history of every round. The largest qid checked, the stages'
    summaries and the final recount's support mismatches (0 when the kept supports were right)
    go to the figures; a UsageError before any work if the enumeration is out of reach."""
    conseq = context.table("conseq")
    backend.materialize(conseq, constraint.consequents())
    # The stages check each level above a qid size on the data as it is then, with only the
    # itemsets that hold an item of S (as the rho model estimates its own runs).
    histogram = length_histogram(backend, items, conseq)
    shape = check_shape(backend, items, chosen.m, conseq, deferred_top=True,
                        histogram=histogram)
    context.figures["largest_qid_checked"] = shape.max_q
    if shape.width < 2:
        backend.drop_table(conseq)
        return base, []
    params = RhoParams(rho=chosen.rho, m=chosen.m, heuristic="dist", b_max=None, t_max=None,
                       sensitive=None, sensitive_fraction=None, column=chosen.column)
    work = [conseq]
    relevance: Relevance | None = None
    if constraint.per_record:
        olevels = original_levels(backend, context.table, base, shape.max_q)
        own = context.table("ownsens")
        backend.materialize(own, protected_occurrences(backend, constraint, olevels[0]),
                            constraint.params(), working=True)
        relevance = Relevance(backend, constraint, tuple(olevels), own)
        work += [*olevels, own]
    final, history, stages, mismatches = run_stages(
        backend, context, params, conseq, base, shape.width, shape.max_q,
        last_only=one_stage_within_reach(histogram, shape, constraint.per_record),
        rule_filter=relevance)
    for table in work:
        backend.drop_table(table)
    context.figures.update({"stages": stages, "support_mismatches": mismatches})
    return final, history
