"""Rounds of growing qid size: the data is made safe for qids of 1 item, then 2, ... up to m.

Why: an exact check of qids of up to m items counts every itemset of up to m + 1 items of every
record, and on the whole BMS-WebView-1 at ``--m 3`` that is 928M (record, itemset) rows, 99% of
them from the 100 longest records (up to 267 items). The level above the largest qid size holds
only the X = q + {e} of rules, so it keeps only itemsets holding a sensitive item
(:func:`.qids.build_levels`); once the earlier stages have made the data safe for smaller qids,
the long records have lost most of their sensitive items and that level is small.

Why it is safe: each stage is the whole suppressor (Alg. 1-2) for its qid size, and the last
stage's run ends only when a count of every support from scratch finds no unsafe rule with a
qid of up to m items (Alg. 1 l.13), whatever the earlier stages did. The earlier stages only
order the work (small qids first), as the qid buffer orders it within a stage; every rule an
earlier stage sanitizes is unsafe at m as well, since its qid is a qid of at most m items.
For the same reason an earlier stage ends when its kept supports show no unsafe rule, without
the recount from scratch that ends the last stage: the next stage counts every support from
scratch anyway, and sanitizes whatever unsafe rule with a smaller qid is left (on 200k Quest
records at ``--m 3`` the recount that ended stage 2 took 8.5 s, BENCHMARKS.md, rho).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.rho.check import check_stage
from setanon_sql.models.rho.params import RhoParams
from setanon_sql.models.rho.qids import every_item_sensitive
from setanon_sql.models.rho.suppressor import RuleFilter, Suppressor
from setanon_sql.progress import report
from setanon_sql.runs import RunContext


def run_stages(backend: Backend, context: RunContext, params: RhoParams, sens: exp.Table,
               base: exp.Table, width: int, max_q: int, start: exp.Table | None = None,
               last_only: bool = False, rule_filter: RuleFilter | None = None
               ) -> tuple[exp.Table, list[dict[str, Any]], list[dict[str, Any]], int]:
    """Stages for qid sizes 1 .. max_q (widths 2 .. ``width``); the last one is the real check.

    ``base`` is T0; the first stage starts from ``start`` (long records trimmed, dropped once
    replaced) or from ``base``. ``last_only``: the last stage alone, every qid size at once
    (the caller knows its enumeration of the input is within reach). ``rule_filter``: only
    the unsafe rules it keeps are sanitized (:class:`.suppressor.Suppressor`). Returns the
    final table, the history of every round (with its stage), one summary per stage, and the
    support mismatches found by the final recounts (0 when all is well).
    """
    cur, mismatches = start if start is not None else base, 0
    prune = not every_item_sensitive(backend, cur, sens)
    history: list[dict[str, Any]] = []
    stages: list[dict[str, Any]] = []
    for stage_width in range(width if last_only else 2, width + 1):
        stage_q = stage_width - 1 if stage_width < width else max_q
        rows = check_stage(backend, cur, sens, stage_width, stage_q, params.m)
        report("search", f"stage {stage_q} of {max_q}: qids of up to {stage_q} items, "
                         f"{rows:,} (record, itemset) rows")
        suppressor = Suppressor(backend, context, params, sens, stage_width, stage_q,
                                stage=stage_width - 1, round_offset=len(history),
                                recount_at_end=stage_width == width,
                                rule_filter=rule_filter, prune_levels=prune)
        # Each round's subtraction joins the whole support table to a small delta on the
        # itemset's key; PostgreSQL chose a merge join that sorted all 12M supports of whole
        # BMS-WebView-2 at --m 3 every round (20-30 s for a 54k-row delta, BENCHMARKS.md).
        with backend.whole_table_joins():
            cur, rounds = suppressor.run(base, cur, rows)
        history += [{"stage": stage_q, **entry} for entry in rounds]
        stages.append({"qid_size": stage_q, "rows_enumerated": rows, "rounds": len(rounds),
                       "suppressed": sum(int(e.get("suppressed", 0)) for e in rounds),
                       "support_rebuilds": suppressor.rebuilds,
                       "seconds": round(sum(float(e["seconds"]) for e in rounds), 1)})
        mismatches += suppressor.mismatches
    return cur, history, stages, mismatches
