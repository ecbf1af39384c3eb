"""Set-value recoding (NEC §3.2-3.4): one specialization step of a set-valued QI, all classes.

Every class ranks its not yet disclosed items by in-class frequency f(alpha) (eq. 1), pruned
below theta = max(beta |c|, k) (eq. 2); every record picks its best-ranked item (eq. 3); picks
held by >= k records become subclasses that disclose the item; the rest of the class (the pool)
stays, is deleted within the budget when it has 1..k-1 records, or else blocks the class's split.
Six statements over all (fresh) classes, whatever their number.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from setanon_sql.catalog import Dataset
from setanon_sql.models.kanon.plan import QI
from setanon_sql.models.kanon.work import Work


@dataclass(frozen=True)
class SetStep:
    moves: exp.Table | None
    deleted: int


def items_table(work: Work, dataset: Dataset, qi: QI) -> exp.Table:
    return work.backend.table(dataset.items_table(qi.attribute))


def init_set(work: Work, dataset: Dataset, qi: QI) -> None:
    """No item is disclosed at first: one class, every item hidden (§2.4)."""
    empty = (exp.select(exp.cast(exp.Literal.number(1), exp.DataType.build("BIGINT")).as_("cls"),
                        "item_id")
             .from_(items_table(work, dataset, qi)).where(exp.false()))
    work.build(f"d{qi.no}", empty)


def set_step(work: Work, dataset: Dataset, qi: QI, k: int, beta: float, budget: int,
             next_cls: int, records: exp.Table) -> SetStep:
    """Rank, pick and split every class of ``records`` (the fresh ones) once; ``budget`` is how
    many records may still go. Records deleted are left in the working table ``gone``."""
    items, state, cs = items_table(work, dataset, qi), work["state"], work["cs"]
    held = work.build("held", "kanon_set_record_items", tables={"items": items, "state": records})
    slices = work.slices_for("held")
    rank = work.build_sliced("rank", "kanon_set_rank", slices, {"beta": beta, "k": k},
                             {"held": held, "cs": cs, "disc": work[f"d{qi.no}"]})
    picks = work.build_sliced("picks", "kanon_set_picks", slices,
                              tables={"held": held, "rank": rank})
    work.drop("held")
    groups = work.build("groups", "kanon_set_groups", tables={"picks": picks})
    decide = work.build("decide", "kanon_set_decide", {"k": k, "budget": budget},
                        {"groups": groups, "cs": cs})
    moves = work.build("moves", "kanon_set_moves", {"k": k, "next_cls": next_cls},
                       {"groups": groups, "decide": decide, "rank": rank})
    if work.count("moves") == 0:
        for purpose in ("rank", "picks", "groups", "decide"):
            work.drop(purpose)
        return SetStep(None, 0)
    deleted = int(work.backend.scalar("kanon_set_deleted", tables={"decide": decide}))
    if deleted:
        work.build("gone", "kanon_set_gone", tables={
            "state": state, "picks": picks, "moves": moves, "decide": decide})
    work.build("state", "kanon_set_state", tables={
        "state": state, "picks": picks, "moves": moves, "decide": decide})
    for purpose in ("rank", "picks", "groups", "decide"):
        work.drop(purpose)
    return SetStep(moves, deleted)
