"""Set-value recoding (NEC §3.2-3.4): one specialization step of a set-valued QI, all classes.

Every class ranks its not yet disclosed items by in-class frequency f(alpha) (eq. 1), pruned
below theta = max(beta |c|, k) (eq. 2); every record picks its best-ranked item (eq. 3); picks
held by >= k records become subclasses that disclose the item; the rest of the class (the pool)
stays, is deleted within the budget when it has 1..k-1 records, or else blocks the class's split.
Six statements over all (fresh) classes, whatever their number (the first three
per slice of classes where the engine cannot group them at once).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from setanon_sql.backends.base import Statement
from setanon_sql.catalog import Dataset
from setanon_sql.models.kanon.plan import QI
from setanon_sql.models.kanon.work import Work
from setanon_sql.sqlrender import parsed


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


def held_slices(work: Work, items: exp.Table, records: exp.Table, occurrences: int) -> int:
    """In how many slices of classes a step builds `held`, `rank` and `picks`. ``occurrences``
    (the live records' items) bounds `held`'s rows without a statement; only when the bound
    asks for slices is `held` counted, as few classes may be fresh."""
    if work.slices_for(occurrences) == 1:
        return 1
    return work.slices_for(int(work.backend.scalar(
        "kanon_occurrences", tables={"items": items, "state": records})))


def held_of_slice(slices: int) -> Statement:
    """``kanon_set_record_items``, for more than one slice with the filter that keeps the classes
    ``mod(cls, :slices) = :slice``. One slice gets no filter: PostgreSQL would read even
    ``mod(cls, 1) = 0`` as keeping one class in 200, and plan the step's joins for that."""
    if slices == 1:
        return "kanon_set_record_items"
    of_class = exp.func("mod", exp.column("cls", table="s"), exp.Placeholder(this="slices"))
    query = parsed("kanon_set_record_items").copy()
    assert isinstance(query, exp.Select)
    return query.where(exp.EQ(this=of_class, expression=exp.Placeholder(this="slice")), copy=False)


def rank_and_pick(work: Work, items: exp.Table, records: exp.Table, disc: exp.Table, k: int,
                  beta: float, slices: int) -> tuple[exp.Table, exp.Table]:
    """`rank` and `picks` of every class of ``records``. In slices, each slice of classes
    (``mod(cls, :slices) = :slice``) gets its own `held`, and the ranking and the picks of those
    classes read only that: at 100M claims one `held` was a billion rows on disk that every
    slice's statements scanned again (BENCHMARKS.md, kanon 100M)."""
    rank_parts: list[exp.Table] = []
    pick_parts: list[exp.Table] = []
    for part in range(slices):
        of_slice = {"slices": slices, "slice": part} if slices > 1 else None
        held = work.build("held", held_of_slice(slices), of_slice,
                          {"items": items, "state": records})
        build = work.build if slices == 1 else work.build_part
        rank_parts.append(build("rank", "kanon_set_rank", {"beta": beta, "k": k},
                                {"held": held, "cs": work["cs"], "disc": disc}))
        pick_parts.append(build("picks", "kanon_set_picks", None,
                                {"held": held, "rank": rank_parts[-1]}))
    work.drop("held")
    if slices == 1:
        return rank_parts[0], pick_parts[0]
    return work.build_union("rank", rank_parts), work.build_union("picks", pick_parts)


def set_step(work: Work, dataset: Dataset, qi: QI, k: int, beta: float, budget: int,
             next_cls: int, records: exp.Table, occurrences: int) -> SetStep:
    """Rank, pick and split every class of ``records`` (the fresh ones) once; ``budget`` is how
    many records may still go; ``occurrences`` is the live records' items of ``qi``. Records
    deleted are left in the working table ``gone``."""
    items, state, cs = items_table(work, dataset, qi), work["state"], work["cs"]
    slices = held_slices(work, items, records, occurrences)
    rank, picks = rank_and_pick(work, items, records, work[f"d{qi.no}"], k, beta, slices)
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
