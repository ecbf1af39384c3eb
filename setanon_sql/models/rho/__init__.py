"""``--model rho``: ρ-uncertainty by partial suppression (Jia et al.).

No sensitive association rule q -> e (q any itemset of a record, sensitive items included; e a
sensitive item not in q) may hold with confidence above ρ. Occurrences of items are deleted
(partial suppression, Alg. 1-2 with the H_dist or H_mine heuristic), or every occurrence of
chosen item types (``--heuristic global``). The output is a record-by-record subset of the
input. Optional: ``--m`` bounds the adversary's knowledge to m items (reported with the result),
``--t-max`` partitions the data (divide-and-conquer, Alg. 3; see :mod:`.dnc` for why the union
of safe partitions is safe). The suppressor runs in stages of growing qid size (1 item, 2, ...
up to m), the last of which is the exact check (:mod:`.stages`). ``--heuristic tdcontrol`` is
the baseline of Jia et al.'s comparison, Cao et al.'s TDControl (:mod:`.tdcontrol`): it
generalizes the non-sensitive items along ``--hierarchy`` and suppresses sensitive item types
globally; it is a heuristic of this model, not a model of its own, because the guarantee,
the parameters and the verifier's check are those of ρ-uncertainty.
"""

from __future__ import annotations

from typing import Any

import click
from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Attribute, Dataset
from setanon_sql.errors import UsageError
from setanon_sql.io.hierarchy import find_hierarchy, hierarchy_name
from setanon_sql.models.base import Model
from setanon_sql.models.km.generalization import resolve_hierarchy
from setanon_sql.models.rho.check import check_shape, length_histogram
from setanon_sql.models.rho.dnc import base_query, split_points
from setanon_sql.models.rho.longrecords import trim_long_records
from setanon_sql.models.rho.params import HEURISTICS, RhoParams, parse_params
from setanon_sql.models.rho.qids import col
from setanon_sql.models.rho.sensitive import build_sensitive
from setanon_sql.models.rho.stages import run_stages
from setanon_sql.models.rho.target import suppression_target
from setanon_sql.models.rho.tdcontrol import TDControl
from setanon_sql.models.rho.verify import verify_run
from setanon_sql.runs import RunContext


def anonymize(backend: Backend, dataset: Dataset, params: dict[str, Any],
              context: RunContext) -> None:
    """Suppress item occurrences until the data is ρ-uncertain, and publish it."""
    chosen = parse_params(params)
    attribute, items, dictionary = suppression_target(backend, dataset, chosen.column,
                                                      "--model rho")
    sens = context.table("sensitive")
    context.figures.update(build_sensitive(backend, sens, items, dictionary, chosen.sensitive,
                                           chosen.sensitive_fraction, context.seed or 0))
    if chosen.heuristic == "tdcontrol":
        _tdcontrol(backend, dataset, attribute, chosen, sens, context)
        return
    histogram = length_histogram(backend, items, sens)
    shape = check_shape(backend, items, chosen.m, sens,
                        deferred_top=chosen.m is not None or chosen.trim_above is not None,
                        trim_above=chosen.trim_above, histogram=histogram)
    starts = [0]
    ranks = context.table("ranks")
    if chosen.t_max is not None:
        backend.materialize(ranks, "rho_record_ranks",
                            tables={"records": backend.table(dataset.records_table)},
                            working=True)
        starts = split_points(backend, ranks, items, dataset.n_records, chosen.t_max)
    base = context.table("base")
    backend.materialize(base, base_query(items, ranks, starts), working=True)
    backend.drop_table(ranks)
    start = base
    if chosen.trim_above is not None:
        start = context.table("trimmed")
        context.figures["long_records"] = trim_long_records(
            backend, start, base, sens, chosen.trim_above, context.seed or 0, histogram)
    final, history, stages, mismatches = (
        (start, [], [], 0) if shape.width < 2 else
        run_stages(backend, context, chosen, sens, base, shape.width, shape.max_q, start))
    context.set_phase("publish")
    out = context.table(f"items_{attribute.attr_no}")
    backend.materialize(out, exp.select(col("record_id"), col("item_id")).from_(final.copy()))
    if final is not base:
        backend.drop_table(final)
    backend.drop_table(base)
    context.figures["support_mismatches"] = mismatches
    context.figures["stages"] = stages
    _figures(backend, context, items, out, chosen.m, shape.max_q, starts, history)


def _tdcontrol(backend: Backend, dataset: Dataset, attribute: Attribute, chosen: RhoParams,
               sens: exp.Table, context: RunContext) -> None:
    """Cao et al.'s TDControl (see :mod:`.tdcontrol`), published as a generalization."""
    items = backend.table(dataset.items_table(attribute))
    hierarchy = resolve_hierarchy(backend, dataset, attribute, chosen.hierarchy)
    # Every cut's table is a generalization of the input, so its qids are no more than the
    # input's: the input's shape bounds every SuppressControl's enumeration.
    shape = check_shape(backend, items, chosen.m, sens)
    search = TDControl(backend, context, chosen, sens, items,
                       backend.table(dataset.dict_table(attribute)), hierarchy.hierarchy_id,
                       shape)
    cut, best, figures = search.search()
    context.set_phase("publish")
    context.figures.update(figures)
    context.figures.update(search.publish(cut, best, attribute.attr_no))
    context.figures.update({"hierarchy": hierarchy.name, "largest_qid_checked": shape.max_q,
                            "qid_bound_m": chosen.m if chosen.m is not None
                            else "none (every subset of a record)"})


def validate(backend: Backend, dataset: Dataset, params: dict[str, Any]) -> None:
    """Parameters; for tdcontrol, a hierarchy to generalize along, before the run is recorded."""
    chosen = parse_params(params)
    if chosen.heuristic != "tdcontrol" or chosen.hierarchy is not None:
        return
    attribute = dataset.set_attribute(chosen.column, "--model rho")
    if find_hierarchy(backend, hierarchy_name(dataset, attribute)) is None:
        raise UsageError(
            f"--heuristic tdcontrol generalizes the non-sensitive items along an item hierarchy, "
            f"and column {attribute.name!r} of dataset {dataset.name!r} has none: give "
            f"--hierarchy FILE (lines leaf;parent;...;root) or load one with 'setanon load "
            f"hierarchy FILE --name {dataset.name} --column {attribute.name}'")


def _figures(backend: Backend, context: RunContext, items: exp.Table, out: exp.Table,
             m: int | None, max_q: int, starts: list[int], history: list[dict[str, Any]]) -> None:
    before = int(backend.scalar("rho_count_rows", tables={"t": items}))
    after = int(backend.scalar("rho_count_rows", tables={"t": out}))
    context.figures.update({
        "qid_bound_m": m if m is not None else "none (every subset of a record)",
        "largest_qid_checked": max_q, "partitions": len(starts),
        "partition_first_ranks": starts[:64],
        "occurrences": before, "suppressed": before - after,
        "suppressed_share": (before - after) / before if before else 0.0,
        "symmetric_kl": float(backend.scalar("rho_distribution",
                                             tables={"items": items, "pub": out}) or 0.0),
        "rounds": len(history), "history": history,
    })


OPTIONS = (
    click.Option(["--rho"], type=float, required=True,
                 help="highest confidence of a sensitive rule, in (0, 1), e.g. 0.7"),
    click.Option(["--sensitive"], default=None, type=click.Path(dir_okay=False),
                 help="file of sensitive item labels, one per line"),
    click.Option(["--sensitive-fraction", "sensitive_fraction"], type=float, default=None,
                 help="draw this share of the item types as sensitive, from --seed (e.g. 0.4)"),
    click.Option(["--heuristic"], type=click.Choice(HEURISTICS), default="mine",
                 show_default=True,
                 help="dist: keep the item distribution (H_dist); mine: keep association rules "
                      "(H_mine); global: suppress item types entirely (baseline); tdcontrol: "
                      "generalize non-sensitive items along --hierarchy, suppress sensitive "
                      "types globally (Cao et al.'s TDControl, baseline)"),
    click.Option(["--m"], type=int, default=None,
                 help="the adversary knows at most m items (default: any subset of a record)"),
    click.Option(["--trim-above", "trim_above"], type=int, default=None,
                 help="any qid size on long records: a record of more than this many items "
                      "loses sensitive items until it has this many, or none left, so that "
                      "qids of up to one item fewer cover every qid (reported; e.g. 4)"),
    click.Option(["--b-max", "b_max"], type=int, default=None,
                 help="qid buffer capacity (distinct qids sanitized together; the paper's "
                      "10^6); default: one buffer for every qid, the fastest, as the supports "
                      "are counted in the database anyway"),
    click.Option(["--t-max", "t_max"], type=float, default=None,
                 help="divide-and-conquer: split partitions whose cost (eq. 6) exceeds this"),
    click.Option(["--column"], default=None, help="the set-valued column to anonymize"),
    click.Option(["--hierarchy"], default=None, type=click.Path(dir_okay=False),
                 help="tdcontrol: item hierarchy file (leaf;parent;...;root); default: the "
                      "loaded one"),
)

MODEL = Model("rho", "rho-uncertainty by partial suppression", OPTIONS, anonymize, verify_run,
              validate)
