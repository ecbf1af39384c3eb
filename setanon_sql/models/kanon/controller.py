"""Top-down anonymization (NEC Alg. 1): the controller's loop over SQL specialization steps.

The controller holds only small state: which QIs can still be specialized (QI*), the running
class-id counter, the deletion budget and one history entry per iteration. Classes, their
generalized values, rankings and picks live in the DBMS (millions of classes at 10M records
would not fit a flat controller memory).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset
from setanon_sql.models.kanon.plan import QI, Plan
from setanon_sql.models.kanon.set_recoding import init_set, items_table, set_step
from setanon_sql.models.kanon.single_valued import (
    BIGINT,
    category_step,
    init_category,
    init_numeric,
    numeric_step,
)
from setanon_sql.models.kanon.work import Work
from setanon_sql.progress import report
from setanon_sql.sqlrender import union_all


@dataclass
class Loss:
    """How to turn a QI's class-level sum into its NCP: sum / (records * per_record)."""

    per_record: float  # numeric: range; category: leaves - 1; set: unused
    occurrences: int = 0  # set-valued: item occurrences of the live records


@dataclass
class Anonymization:
    """The outcome the publisher and the metrics read."""

    plan: Plan
    work: Work
    losses: dict[int, Loss]
    live: int
    occurrences_total: dict[int, int]
    history: list[dict[str, Any]] = field(default_factory=list)


def _has_nulls(backend: Backend, dataset: Dataset, qi: QI) -> bool:
    query = (exp.select(exp.func("count", exp.Star())).from_(backend.table(dataset.records_table))
             .where(exp.column(qi.attribute.column).is_(exp.null())))
    return int(backend.scalar(query)) > 0


def _track(work: Work, active: list[QI]) -> None:
    """qis(qi): the QIs whose fresh classes are still kept (the active ones, QI*)."""
    rows = [exp.select(exp.cast(exp.convert(qi.no), BIGINT).as_("qi")) for qi in active]
    query = union_all(rows)
    work.build("qis", query)


def _initialize(work: Work, dataset: Dataset, plan: Plan) -> dict[int, Loss]:
    """Alg. 1 l.1: every QI fully generalized, every item hidden, one class."""
    backend = work.backend
    work.build("state", exp.select(
        "record_id", exp.cast(exp.Literal.number(1), exp.DataType.build("BIGINT")).as_("cls"))
        .from_(backend.table(dataset.records_table)))
    work.build("cs", "kanon_class_sizes", tables={"state": work["state"]})
    _track(work, list(plan.qis))
    work.build("fresh", exp.select("qi", exp.cast(exp.convert(1), BIGINT).as_("cls"))
               .from_(work["qis"]))
    losses: dict[int, Loss] = {}
    for qi in plan.qis:
        if qi.kind == "numeric":
            lo, hi = init_numeric(work, dataset, qi)
            losses[qi.no] = Loss(float(hi - lo))
        elif qi.kind == "category":
            leaves = init_category(work, dataset, qi, _has_nulls(backend, dataset, qi))
            losses[qi.no] = Loss(float(leaves - 1))
        else:
            init_set(work, dataset, qi)
            occurrences = int(backend.scalar("kanon_occurrences", tables={
                "items": items_table(work, dataset, qi), "state": work["state"]}))
            losses[qi.no] = Loss(1.0, occurrences)
    return losses


def class_loss(work: Work, qi: QI) -> float:
    """The class-level sum of a QI's loss (see ``Loss``) over the live records."""
    cs = work["cs"]
    if qi.kind == "numeric":
        return float(work.backend.scalar("kanon_ncp_numeric",
                                         tables={"cs": cs, "bounds": work[f"b{qi.no}"]}))
    if qi.kind == "category":
        return float(work.backend.scalar("kanon_ncp_category", tables={
            "cs": cs, "gen": work[f"g{qi.no}"], "nodes": work[f"n{qi.no}"]}))
    return float(work.backend.scalar("kanon_ncp_set", tables={"cs": cs,
                                                               "disc": work[f"d{qi.no}"]}))


def ncp(work: Work, qi: QI, loss: Loss, live: int) -> float:
    """NCP of ``qi`` over the live records (set-valued: the share of hidden occurrences)."""
    if qi.kind == "set":
        if loss.occurrences == 0:
            return 0.0
        return 1.0 - class_loss(work, qi) / loss.occurrences
    if loss.per_record == 0 or live == 0:
        return 0.0
    return class_loss(work, qi) / (live * loss.per_record)


def scope(work: Work, qi: QI, live: int) -> exp.Table:
    """The records a step of ``qi`` must look at: those of its fresh classes (kanon_fresh_next).
    When they are most of the live records, the whole state: building the subset would cost
    about what it saves."""
    params = {"qi": qi.no}
    fresh = int(work.backend.scalar("kanon_fresh_records", params,
                                    {"cs": work["cs"], "fresh": work["fresh"]}))
    if 5 * fresh >= 4 * live:
        return work["state"]
    return work.build("fs", "kanon_fresh_state", params,
                      {"state": work["state"], "fresh": work["fresh"]})


def _refresh(work: Work, plan: Plan, chosen: QI, moves: exp.Table) -> None:
    """Class sizes, the class-level tables of every QI for the classes a step created, and
    every QI's fresh classes."""
    changed = work.build("changed", "kanon_changed", tables={"moves": moves})
    work.build("cs", "kanon_class_sizes_update", tables={
        "cs": work["cs"], "state": work["state"], "changed": changed})
    cs = work["cs"]
    for qi in plan.qis:
        if qi.kind == "numeric":
            if qi is not chosen:
                name = f"b{qi.no}"
                work.build(name, "kanon_copy_bounds",
                           tables={"bounds": work[name], "moves": moves, "cs": cs})
        elif qi.kind == "category":
            name = f"g{qi.no}"
            statement = "kanon_category_gen" if qi is chosen else "kanon_copy_gen"
            work.build(name, statement, tables={"gen": work[name], "moves": moves, "cs": cs})
        else:
            name = f"d{qi.no}"
            statement = "kanon_set_disc" if qi is chosen else "kanon_copy_disc"
            work.build(name, statement, tables={"disc": work[name], "moves": moves, "cs": cs})
    work.build("fresh", "kanon_fresh_next", {"chosen": chosen.no},
               {"fresh": work["fresh"], "qis": work["qis"], "changed": changed})
    for purpose in ("moves", "leaves", "changed", "fs"):
        work.drop(purpose)


def top_down(work: Work, dataset: Dataset, plan: Plan) -> Anonymization:
    """Alg. 1: specialize the QI of largest NCP until no QI can be specialized."""
    backend = work.backend
    losses = _initialize(work, dataset, plan)
    totals = {no: loss.occurrences for no, loss in losses.items()}
    live, max_cls, budget = plan.n_records, 1, plan.budget
    active = list(plan.qis)  # QI*
    result = Anonymization(plan, work, losses, live, totals)
    while active:  # l.2
        started = time.perf_counter()
        # No bound on the rounds is known in advance: the display shows elapsed time and growth.
        report("search", f"round {len(result.history) + 1}: {max_cls:,} classes, "
                         f"{len(active)} attribute(s) still specializable, {live:,} records kept")
        scores = {qi.no: ncp(work, qi, losses[qi.no], live) for qi in active}
        chosen = max(active, key=lambda qi: scores[qi.no])  # l.4: first of the largest NCP
        entry: dict[str, Any] = {"attribute": chosen.name, "ncp": round(scores[chosen.no], 6)}
        result.history.append(entry)
        if scores[chosen.no] <= 0.0:
            active.remove(chosen)
            entry["frozen"] = True
            if active:
                _track(work, active)
            continue
        deleted = 0
        records = scope(work, chosen, live)
        if chosen.kind == "numeric":
            moves = numeric_step(work, chosen, plan.k, max_cls, records)  # l.5
        elif chosen.kind == "category":
            moves = category_step(work, chosen, plan.k, max_cls, records)
        else:
            step = set_step(work, dataset, chosen, plan.k, plan.beta, budget, max_cls, records,
                            losses[chosen.no].occurrences)
            moves, deleted = step.moves, step.deleted
        if moves is None:  # l.6-8: no class could be specialized without breaking k-anonymity
            active.remove(chosen)
            entry["frozen"] = True
            work.drop("leaves")
            work.drop("fs")
            if active:
                _track(work, active)
            entry["seconds"] = round(time.perf_counter() - started, 3)
            continue
        created = work.count("moves")
        entry["new_classes"] = created
        max_cls += created
        if deleted:
            entry["deleted"] = deleted
            budget -= deleted
            live -= deleted
            for qi in plan.qis:
                if qi.kind == "set":
                    losses[qi.no].occurrences -= int(backend.scalar(
                        "kanon_occurrences_of",
                        tables={"items": items_table(work, dataset, qi), "gone": work["gone"]}))
            work.drop("gone")
        _refresh(work, plan, chosen, moves)
        entry["seconds"] = round(time.perf_counter() - started, 3)
    result.live = live
    return result
