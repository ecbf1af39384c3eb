"""Sizes of the published QI groups for the kanon verifier, in no more memory than the run.

A group is the set of published records that share every published single value and every
published item set whole. Grouping by a text key of each whole set (``item_set_key``: a sorted
string aggregate, which buffers every item of every record) took 1.4x the run's memory at 1M
records (issue 22). Here each set is reduced to fixed-width numbers (``item_set_hash``: two sums
of independent item hashes and the set's size), records are grouped by those numbers and their
single values, and the grouping is then *proved* exact without trusting the hash:

    within a group of n records, every item that occurs in it occurs in exactly n rows.

When a QI's published items are sets (no repeated (record, item) row: ``kanon_verify_items``
checks this first), the item then occurs in all n records, so every record holds the union of
the group's sets, and all of its sets are equal. A group that fails the proof (a hash collision,
or a deliberately crafted one) sends the whole check to the exact text-key grouping: a
collision can cost memory and time, never a wrong answer.

Every step is a join or an aggregate over fixed-width columns (plus the single-valued labels the
run itself groups by), so DuckDB can spill each of them within its ``memory_limit``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.io.keys import SetHash, item_set_hash, item_set_key
from setanon_sql.models.kanon.plan import QI
from setanon_sql.names import qi_column, staging_table


@dataclass(frozen=True)
class GroupSizes:
    """What Def. 1 needs from the grouping, and how it was obtained."""

    groups: int
    smallest: int
    below_k: int  # records in groups smaller than k
    method: str  # "hashed sets, proved exact" or "sorted text keys of whole sets"


def _count(query: exp.Select) -> exp.Select:
    return exp.select(exp.func("count", exp.Star())).from_(query.subquery("x"))


def _summary(backend: Backend, groups: exp.Expr, k: int, method: str) -> GroupSizes:
    cnt = exp.column("cnt")
    small = exp.Case(ifs=[exp.If(this=cnt < exp.convert(k), true=cnt.copy())],
                     default=exp.convert(0))
    row = backend.query(exp.select(exp.func("count", exp.Star()), exp.func("min", cnt.copy()),
                                   exp.func("coalesce", exp.func("sum", small),
                                            exp.convert(0))).from_(groups))[0]
    return GroupSizes(int(row[0]), int(row[1] or 0), int(row[2]), method)


def text_key_sizes(backend: Backend, view: Any, qis: tuple[QI, ...], k: int) -> GroupSizes:
    """Exact by construction: each set compared as the sorted string of its item ids."""
    query = exp.select(exp.func("count", exp.Star()).as_("cnt")).from_(
        view.records.copy().as_("r"))
    keys: list[exp.Expr] = []
    for qi in qis:
        if qi.kind == "set":
            alias = f"s{qi.no}"
            query = query.join(item_set_key(view.items[qi.no], alias), join_type="left",
                               on=f"{alias}.record_id = r.record_id")
            keys.append(exp.column("v", table=alias))
        else:
            keys.append(exp.column(qi_column(qi.no), table="r"))
    return _summary(backend, query.group_by(*keys).subquery("g"), k,
                    "sorted text keys of whole sets")


def _keyed(view: Any, qis: tuple[QI, ...],
           set_hash: SetHash) -> tuple[exp.Select, list[str], list[str]]:
    """Every published record with its grouping key: single values and set hashes.

    Also which of the keys may be NULL (the single values); the set hashes never are.
    """
    query = exp.select(exp.column("record_id", table="r")).from_(view.records.copy().as_("r"))
    keys: list[str] = []
    nullable: list[str] = []
    for qi in qis:
        if qi.kind != "set":
            query = query.select(exp.column(qi_column(qi.no), table="r"))
            keys.append(qi_column(qi.no))
            nullable.append(qi_column(qi.no))
            continue
        alias = f"s{qi.no}"
        query = query.join(set_hash(view.items[qi.no], alias), join_type="left",
                           on=f"{alias}.record_id = r.record_id")
        for part in ("h1", "h2", "n"):  # a record without items: all zero, like an empty sum
            name = f"{part}_{qi.no}"
            query = query.select(exp.func("coalesce", exp.column(part, table=alias),
                                          exp.convert(0)).as_(name))
            keys.append(name)
    return query, keys, nullable


def _same_key(key: str, nullable: bool) -> exp.Expr:
    """r.key = c.key, NULL matching NULL where the key may be NULL.

    Plain equality for the set hashes: PostgreSQL can hash-join on it, while a join on
    IS NOT DISTINCT FROM alone is a nested loop (records x groups: 200k records did not
    finish in 15 minutes).
    """
    left, right = exp.column(key, table="r"), exp.column(key, table="c")
    return exp.NullSafeEQ(this=left, expression=right) if nullable else left.eq(right)


def hashed_sizes(backend: Backend, view: Any, qis: tuple[QI, ...], k: int,
                 set_hash: SetHash) -> GroupSizes | None:
    """Group sizes from hashed sets, or None when the grouping cannot be proved exact.

    Only call this when every set QI's published items are sets (no repeated row).
    """
    keyed_query, keys, nullable = _keyed(view, qis, set_hash)
    keyed, groups, member = (backend.table(staging_table(p)) for p in ("vkey", "vgrp", "vmem"))
    try:
        backend.materialize(keyed, keyed_query)
        backend.materialize(groups, exp.select(
            *keys, exp.func("min", exp.column("record_id")).as_("g"),
            exp.func("count", exp.Star()).as_("cnt")).from_(keyed.copy()).group_by(*keys))
        backend.materialize(member, exp.select(
            exp.column("record_id", table="r"), exp.column("g", table="c"),
            exp.column("cnt", table="c")).from_(keyed.copy().as_("r")).join(
            groups.copy().as_("c"),
            on=exp.and_(*(_same_key(key, key in nullable) for key in keys))))
        for qi in qis:
            if qi.kind == "set" and backend.scalar(_count(_unproved(view.items[qi.no], member))):
                return None
        return _summary(backend, groups.copy(), k, "hashed sets, proved exact")
    finally:
        for table in (member, groups, keyed):
            backend.drop_table(table)


def _unproved(items: exp.Table, member: exp.Table) -> exp.Select:
    """(group, item) pairs whose item is in fewer or more rows than the group has records."""
    rows = exp.func("count", exp.Star())
    return (exp.select(exp.column("g", table="m"), exp.column("item_id", table="p"))
            .from_(items.copy().as_("p"))
            .join(member.copy().as_("m"), on="m.record_id = p.record_id")
            .group_by(exp.column("g", table="m"), exp.column("item_id", table="p"))
            .having(rows.neq(exp.func("min", exp.column("cnt", table="m")))))


def group_sizes(backend: Backend, view: Any, qis: tuple[QI, ...], k: int, items_are_sets: bool,
                set_hash: SetHash | None = None) -> GroupSizes:
    """Exact group sizes: by hashed sets when the proof holds, else by text keys.

    ``items_are_sets``: the caller has checked that no published (record, item) row repeats;
    the proof needs it, so without it the text keys decide. ``set_hash`` (default
    :func:`item_set_hash`, looked up at call time) lets tests force collisions.
    """
    if items_are_sets and any(qi.kind == "set" for qi in qis):
        sizes = hashed_sizes(backend, view, qis, k, set_hash or item_set_hash)
        if sizes is not None:
            return sizes
    return text_key_sizes(backend, view, qis, k)
