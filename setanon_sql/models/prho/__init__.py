"""``--model prho``: personalized ρ-uncertainty by partial suppression (Nakagawa et al.).

Every record u names the items E_u it wants protected (``--constraint FILE``, or a generator
``--setting``). An adversary (u, Q) knows Q ⊆ D_u (|Q| <= m) of the original record; the output
D' is safe for it iff conf_{D'}(Q -> e) <= ρ for every e ∈ E_u \\ Q, or supp_{D'}(Q) = 0
(Defs. 2, 3, 5). SUPPRESSOR (Alg. 1) makes every adversary safe; with ``--epsilon --delta``
SAMPLESUPPRESSOR (Alg. 2) stops when n_S sampled adversaries per ℓ <= m are all safe, which gives
(ε, δ)-ρ^m-uncertainty (Def. 6, Thm. 7), or with ``--stop-rule bound`` when a confidence bound
puts every ℓ's unsafe share below ε (see sampler.py). The output is a record-by-record subset of
the input. SUPPRESSOR runs by the rho model's suppressor (with the same E_u for everyone it is
H_dist; a personalized E keeps only the rules someone can use): see staged.py.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import click
from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset
from setanon_sql.metrics import util_dist_tables, util_info_tables
from setanon_sql.models.base import Model
from setanon_sql.models.prho.build import build_constraint
from setanon_sql.models.prho.constraint import Constraint
from setanon_sql.models.prho.params import (
    CHOICES,
    DEFAULT_NOISE,
    SETTINGS,
    STOP_RULES,
    PrhoParams,
    parse_params,
    validate,
)
from setanon_sql.models.prho.sampler import run_sample_suppressor
from setanon_sql.models.prho.staged import run_staged, staged_applies
from setanon_sql.models.prho.suppressor import run_suppressor
from setanon_sql.models.prho.verify import verify_run
from setanon_sql.models.rho.check import check_shape
from setanon_sql.models.rho.qids import col
from setanon_sql.models.rho.target import suppression_target
from setanon_sql.runs import RunContext


def anonymize(backend: Backend, dataset: Dataset, params: dict[str, Any],
              context: RunContext) -> None:
    """Suppress item occurrences until every (sampled) adversary is safe, and publish."""
    chosen = parse_params(params)
    attribute, items, dictionary = suppression_target(backend, dataset, chosen.column,
                                                      "--model prho")
    records = backend.table(dataset.records_table)
    constraint = build_constraint(backend, context.table, context.seed or 0, chosen, items,
                                  records, dictionary)
    context.figures.update(constraint.figures)
    base = context.table("base")
    backend.materialize(base, exp.select(
        col("record_id"), col("item_id"),
        exp.cast(exp.Literal.number(0), "BIGINT").as_("part", quoted=True)).from_(items.copy()))
    istat0 = context.table("istat0")
    if chosen.sampled:
        # Before istat0 exists: the rho model's suppressor has a work table of that name.
        start, history = _exact_start(backend, context, chosen, constraint, items, base)
        backend.materialize(istat0, "rho_istat0", tables={"base": base})
        final, sampled_history, sampled = run_sample_suppressor(
            backend, context, chosen, constraint, base, istat0, start)
        history += sampled_history
        context.figures.update(sampled)
    elif staged_applies(chosen):
        final, history = run_staged(backend, context, chosen, constraint, items, base)
    else:
        shape = check_shape(backend, items, chosen.m)
        backend.materialize(istat0, "rho_istat0", tables={"base": base})
        final, history = ((base, []) if shape.width < 2 else
                          run_suppressor(backend, context, chosen, constraint, base, istat0,
                                         shape))
        context.figures["largest_qid_checked"] = shape.max_q
    context.set_phase("publish")
    out = context.table(f"items_{attribute.attr_no}")
    backend.materialize(out, exp.select(col("record_id"), col("item_id")).from_(final.copy()))
    for work in {final.name: final, base.name: base, istat0.name: istat0}.values():
        backend.drop_table(work)
    before = int(backend.scalar("prho_count_rows", tables={"t": items}))
    after = int(backend.scalar("prho_count_rows", tables={"t": out}))
    context.figures.update({
        "algorithm": "SampleSuppressor (Alg. 2)" if chosen.sampled else "Suppressor (Alg. 1)",
        "m": chosen.m if chosen.m is not None else "all", "occurrences": before,
        "suppressed": before - after,
        "util_info": util_info_tables(backend, items, out),
        "util_dist": util_dist_tables(backend, items, out),
        "rounds": len(history), "history": history[-200:], "choice": chosen.choice,
    })


def _exact_start(backend: Backend, context: RunContext, chosen: PrhoParams,
                 constraint: Constraint, items: exp.Table, base: exp.Table
                 ) -> tuple[exp.Table, list[dict[str, Any]]]:
    """Where SAMPLESUPPRESSOR's sweeps start: D itself, or with ``--exact-upto L`` SUPPRESSOR's
    output for adversaries of up to L items, and that phase's rounds.

    Why: where most small itemsets are held by one record (1M Quest records: 94.6% of the
    unsafe rules with a qid of 3 items have a qid of one holder), the rules of a sampled
    adversary are mostly its own record's, so a sweep lowers the unsafe share by little more
    than what it draws (200k Quest records: 0.60 -> 0.37 -> 0.35 at 60,000 draws a sweep,
    BENCHMARKS.md, prho). SUPPRESSOR repairs all of them from supports counted once. The
    sweeps that follow still test every ℓ <= m on fresh draws of the output, so the guarantee
    is Theorem 7's whatever the start (a later repair may make a small adversary unsafe
    again; the last sweep sees it).
    """
    if not chosen.exact_upto:
        return base, []
    exact = replace(chosen, m=chosen.exact_upto, epsilon=None, delta=None, exact_upto=0)
    started = time.perf_counter()
    start, rounds = run_staged(backend, context, exact, constraint, items, base)
    phase = {key: context.figures.pop(key) for key in
             ("largest_qid_checked", "stages", "support_mismatches") if key in context.figures}
    context.figures["exact_phase"] = {"upto": chosen.exact_upto, "rounds": len(rounds),
                                      **phase, "seconds": round(time.perf_counter() - started, 1)}
    return start, [{"phase": "exact", **entry} for entry in rounds]


OPTIONS = (
    click.Option(["--rho"], type=float, required=True,
                 help="highest confidence of an inference of a sensitive item, in (0, 1)"),
    click.Option(["--constraint"], default=None, type=click.Path(dir_okay=False),
                 help="FIMI file aligned with the data: line n lists the items record n "
                      "protects (may be empty)"),
    click.Option(["--setting"], type=click.Choice(SETTINGS), default=None,
                 help="generate the constraint as in the paper's Sec. 6.1 (from --seed)"),
    click.Option(["--sensitive-fraction", "sensitive_fraction"], type=float, default=None,
                 help="with --setting: share of the item types that are (tend to be) "
                      "sensitive, e.g. 0.4"),
    click.Option(["--noise"], type=float, default=None,
                 help=f"with --setting fixed+/personalized+: per-item noise (default "
                      f"{DEFAULT_NOISE})"),
    click.Option(["--m"], default="all", show_default=True,
                 help="the adversary knows at most m items of the target's record (N or 'all')"),
    click.Option(["--epsilon"], type=float, default=None,
                 help="SampleSuppressor: tolerated share of unsafe adversaries, in (0, 1)"),
    click.Option(["--delta"], type=float, default=None,
                 help="SampleSuppressor: probability that the share exceeds epsilon, in (0, 1)"),
    click.Option(["--choice"], type=click.Choice(CHOICES), default="paper", show_default=True,
                 help="item and records to suppress per unsafe rule: 'paper' = eq. 8 and random "
                      "records; 'fewest' = the smallest N_s, which is always the protected item "
                      "e, records shared with other unsafe rules first (far fewer suppressions "
                      "where records are long; the distribution shifts more)"),
    click.Option(["--repair-pool"], type=int, default=1, show_default=True,
                 help="SampleSuppressor: a sweep whose n_S check samples of some size are not "
                      "all safe repairs the unsafe adversaries among N x n_S draws (the first "
                      "n_S are the check); fewer sweeps, same guarantee; 1 = the paper"),
    click.Option(["--stop-rule"], type=click.Choice(STOP_RULES), default="paper",
                 show_default=True,
                 help="SampleSuppressor: 'paper' ends at the first sweep whose n_S check samples "
                      "are all safe (Alg. 2); 'bound' at the first sweep in which, for every "
                      "size, the Clopper-Pearson upper bound of the unsafe share among all N x "
                      "n_S draws is below epsilon (confidence shared out over the sweeps): the "
                      "same (eps, delta) guarantee, far fewer sweeps and suppressions"),
    click.Option(["--exact-upto", "exact_upto"], type=int, default=0, show_default=True,
                 help="SampleSuppressor: first make every adversary of up to this many items "
                      "safe by Suppressor (the exact check), then sweep as Alg. 2 does; the "
                      "sweeps still test every size, so the guarantee is the same. Pays where "
                      "most small itemsets are held by one record (sampled repairs then fix "
                      "only what they draw); 0 = the paper"),
    click.Option(["--column"], default=None, help="the set-valued column to anonymize"),
)

MODEL = Model("prho", "personalized rho-uncertainty (rho^m, (eps, delta)-rho^m)", OPTIONS,
              anonymize, verify_run, validate)
