"""Undo an in-place run: the user's tables get back exactly the rows they had, in one transaction.

Deleted rows come back from the typed backup (every column as it was, byte for byte). Updated
rows are found again by what the run made of them (new key, new label and a fingerprint of
their other columns); several identical rows are told apart by the engine's row id, used only
inside this transaction. If the run's rows are no longer there as the run left them (someone
changed the table since), undo refuses and changes nothing.
"""

from __future__ import annotations

import json
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset, get_dataset
from setanon_sql.errors import InputError, NotFoundError, UsageError
from setanon_sql.inplace.apply import DELETE_ACTIONS, check_privileges
from setanon_sql.inplace.statements import actions, delete_where, insert_into, p, update_from
from setanon_sql.inplace.target import UserTable, user_tables
from setanon_sql.names import run_table
from setanon_sql.runs import dataset_lock

UPDATE_ACTIONS = ("generalize", "move")


def forget_dropped(backend: Backend) -> list[int]:
    """Forget applies whose run was dropped with its dataset (its backup went with it).

    Run ids are reused after a drop, so a stale row would otherwise claim a new run.
    """
    tables = backend.catalog_tables("inplace_applies")
    gone = [int(r) for (r,) in backend.query("inplace_applied_runs", None, tables)
            if not backend.table_names(run_table(int(r), "undo_items"))]
    for run_id in gone:
        backend.run("inplace_delete", {"run_id": run_id}, tables)
    return gone


def applied_figures(backend: Backend, run_id: int) -> dict[str, Any]:
    """The figures recorded when run ``run_id`` was applied in place."""
    return _applied(backend, run_id)[1]


def _applied(backend: Backend, run_id: int) -> tuple[str, dict[str, Any]]:
    rows = backend.query("inplace_by_run", {"run_id": run_id},
                         backend.catalog_tables("inplace_applies"))
    if not rows:
        raise UsageError(f"run {run_id} changed no user table in place, so there is nothing to "
                         "undo")
    return str(rows[0][4]), json.loads(rows[0][5])


def _dataset_of(backend: Backend, run_id: int) -> Dataset:
    name = backend.scalar("run_by_id_any_dataset", {"run_id": run_id},
                          backend.catalog_tables("runs", "datasets"))
    if name is None:
        raise NotFoundError(f"there is no run {run_id}; 'setanon runs' lists the runs")
    return get_dataset(backend, str(name))


def _same_columns(table: UserTable | None, recorded: list[list[str]] | None, run_id: int) -> None:
    if table is None:
        return
    if [list(c) for c in table.columns] != recorded:
        raise InputError(f"the columns of {table.ref} changed since run {run_id} was applied "
                         f"(then: {recorded}); undo restores whole rows and cannot do it now")


def _revert_updates(backend: Backend, items: UserTable, backup: exp.Table,
                    match: exp.Table, run_id: int) -> int:
    """Give the rows the run updated their old key and item back; returns how many."""
    assert items.item is not None
    locator = exp.column(backend.row_locator().name, table="t")
    key, label, fp = items.as_text(items.key), items.as_text(items.item), items.fingerprint()
    changed = (exp.select(exp.Literal.number(1)).from_(backup.as_("p"))
               .where(exp.and_(actions(*UPDATE_ACTIONS), p("new_key").eq(key),
                               p("new_label").eq(label))))
    number = exp.Window(this=exp.RowNumber(), partition_by=[key.copy(), label.copy(), fp.copy()],
                        order=exp.Order(expressions=[exp.Ordered(this=locator.copy())]))
    current = (exp.select(locator.as_("loc"), key.as_("key_text"), label.as_("label"),
                          fp.as_("fp"), number.as_("rn"))
               .from_(items.table("t")).where(exp.Exists(this=changed)))
    numbers = {c: n for n, (c, _) in enumerate(items.columns, start=1)}
    k, i = f"u{numbers[items.key]}", f"u{numbers[items.item]}"
    b_number = exp.Window(this=exp.RowNumber(), partition_by=[p("new_key"), p("new_label"),
                                                                p("fp")],
                          order=exp.Order(expressions=[exp.Ordered(this=p("bid"))]))
    old = (exp.select(p("new_key"), p("new_label"), p("fp"), p(k).as_("old_k"),
                      p(i).as_("old_i"), b_number.as_("rn"))
           .from_(backup.as_("p")).where(actions(*UPDATE_ACTIONS)))
    on = " AND ".join(f"c.{a} = b.{b}" for a, b in (("key_text", "new_key"),
                                                     ("label", "new_label"), ("fp", "fp"),
                                                     ("rn", "rn")))
    backend.materialize(match, exp.select("c.loc", "b.old_k", "b.old_i")
                        .from_(current.subquery("c")).join(old.subquery("b"), on=on))
    expected = int(backend.scalar(exp.select(exp.func("count", exp.Star()))
                                  .from_(backup.as_("p")).where(actions(*UPDATE_ACTIONS))))
    found = int(backend.scalar("inplace_count", tables={"t": match}))
    if found != expected:
        raise InputError(
            f"{expected - found} of the {expected} rows run {run_id} updated in {items.ref} are "
            "no longer as the run left them (the table was changed since); undo would not "
            "restore the original exactly, so it changed nothing")
    update_from(backend, items, match.as_("m"),
                {items.key: exp.column("old_k", table="m"),
                 items.item: exp.column("old_i", table="m")},
                locator.eq(exp.column("loc", table="m")))
    return found


def _reinsert(backend: Backend, table: UserTable, backup: exp.Table,
              deleted_by: tuple[str, ...]) -> None:
    columns = [exp.column(f"u{n}", table="p") for n in range(1, len(table.columns) + 1)]
    query = (exp.select(*columns).from_(backup.as_("p")).where(actions(*deleted_by))
             .order_by(p("bid")))
    insert_into(backend, table, [c for c, _ in table.columns], query)

def _revert_records(backend: Backend, dataset: Dataset, records: UserTable,
                    backup: exp.Table) -> None:
    numbers = {c: n for n, (c, _) in enumerate(records.columns, start=1)}
    sets: dict[str, exp.Expr] = {a.name: p(f"u{numbers[a.name]}")
                                 for a in dataset.single_attributes if a.role != "id"}
    if sets:
        update_from(backend, records, backup.as_("p"), sets,
                    exp.and_(actions("generalize"), p("key_text").eq(records.as_text(records.key))))
    _reinsert(backend, records, backup, ("delete_record",))


def undo_run(backend: Backend, run_id: int, wait_seconds: float = 0.0) -> dict[str, Any]:
    """Restore the user's tables as they were before run ``run_id`` was applied in place."""
    forget_dropped(backend)
    _applied(backend, run_id)
    dataset = _dataset_of(backend, run_id)
    with dataset_lock(backend, dataset, wait_seconds):
        state, figures = _applied(backend, run_id)
        if state != "applied":
            raise UsageError(f"run {run_id} was already undone")
        items, records = user_tables(backend, dataset)
        _same_columns(items, figures["items_columns"], run_id)
        _same_columns(records, figures["records_columns"], run_id)
        check_privileges(backend, items, records)
        backup = backend.table(run_table(run_id, "undo_items"))
        match = backend.table(run_table(run_id, "ip_match"))
        with backend.transaction():
            backend.lock_for_write(items.table())
            if records is not None:
                backend.lock_for_write(records.table())
            backend.drop_table(match)
            pairs = backend.table(run_table(run_id, "ip_pairs"))
            delete_where(backend, items, pairs, exp.and_(
                actions("insert"), p("new_key").eq(items.as_text(items.key)),
                p("new_label").eq(items.as_text(items.item or items.key))))
            reverted = _revert_updates(backend, items, backup, match, run_id)
            if records is not None:
                _revert_records(backend, dataset, records,
                                backend.table(run_table(run_id, "undo_records")))
            _reinsert(backend, items, backup, DELETE_ACTIONS)
            backend.drop_table(match)
            backend.run("inplace_mark_undone", {"run_id": run_id},
                        backend.catalog_tables("inplace_applies"))
    return {"run_id": run_id, "rows_reverted": reverted, **figures.get("item_rows", {})}
