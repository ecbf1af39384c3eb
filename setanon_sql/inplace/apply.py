"""Apply a planned run to the user's tables in ONE transaction, with its change log and backup.

Inside the transaction: the user's tables are locked against other writers, checked to still
hold what was attached, every row about to change is copied (typed, all columns) into the run's
``undo_items`` / ``undo_records`` tables, the change log is written, then rows are deleted
(suppressed items, deleted records), updated (generalized labels and values, moved items) and
inserted (published pairs no original row becomes). A crash at any point rolls all of it back:
the user's tables are untouched or fully anonymized, never in between.
"""

from __future__ import annotations

import json
from typing import Any

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.errors import DatabaseError, InputError, PermissionDeniedError
from setanon_sql.failpoints import pause_if_asked
from setanon_sql.inplace.plan import Plan, check_in_sync, check_matches_published
from setanon_sql.inplace.statements import actions, delete_where, insert_into, p, update_from
from setanon_sql.inplace.target import UserTable, typed, writable_check
from setanon_sql.names import run_table

# Undo needs INSERT and UPDATE even where the apply only deletes: check all before writing.
PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE")
DELETE_ACTIONS = ("suppress", "delete_record")


# SQLSTATE classes of a refusal by the user's own rules: integrity constraints (23), and an
# exception raised by a trigger (P0001, PL/pgSQL RAISE).
_USER_RULE_STATES = ("23", "P0001")


def refused_by_user_rules(error: DatabaseError) -> bool:
    """True when the database refused the change for a constraint or trigger of the user's."""
    return (error.sqlstate or "").startswith(_USER_RULE_STATES)


def check_privileges(backend: Backend, *tables: UserTable | None) -> None:
    """Refuse, naming table and privileges, a role that could apply but not undo."""
    for table in tables:
        if table is None:
            continue
        missing = backend.missing_privileges(table.table(), PRIVILEGES)
        if missing:
            raise PermissionDeniedError(
                f"this database role lacks {', '.join(missing)} on {table.ref}; in-place runs "
                f"and their undo need {', '.join(PRIVILEGES)}: GRANT them, or export instead")



def _pair_match(table: UserTable) -> exp.Expr:
    """The user's row ``t`` is the original (record, item) pair of plan row ``p``."""
    return exp.and_(p("key_text").eq(table.as_text(table.key)),
                    p("old_label").eq(table.as_text(table.item or table.key)))



def _values(plan_table: exp.Table, column: str, where: exp.Expr) -> exp.Select:
    return exp.select(p(column).as_("v")).from_(plan_table.as_("p")).where(where)


def check_writable(backend: Backend, plan: Plan) -> None:
    """Every new value fits its user column (checked before the transaction starts)."""
    items = plan.items
    assert items.item is not None
    relabeled = exp.or_(actions("generalize", "insert"), exp.and_(
        actions("move"), p("new_label").neq(p("old_label"))))
    writable_check(items, items.item, _values(plan.pairs, "new_label", relabeled), backend,
                   "item labels")
    writable_check(items, items.key, _values(plan.pairs, "new_key", actions("move", "insert")),
                   backend, "record keys")
    if plan.records is None:
        return
    for attribute in plan.dataset.single_attributes:
        where = exp.and_(actions("generalize"),
                         p("attr_no").eq(exp.Literal.number(attribute.attr_no)))
        writable_check(plan.records, attribute.name, _values(plan.recplan, "new_value", where),
                       backend, "values")


def _backup(backend: Backend, table: UserTable, source: exp.Expr, target: exp.Table,
            on: exp.Expr, extra: list[exp.Expr], where: exp.Expr | None,
            order: list[exp.Expr]) -> None:
    """Copy the rows about to change, every column typed as it is (u1..uN), plus plan columns.

    ``source`` is the plan (aliased ``p``) the user's rows ``t`` are joined to ``on``.
    """
    columns = [table.col(c).as_(f"u{i}") for i, (c, _) in enumerate(table.columns, start=1)]
    bid = exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=order))
    query = (exp.select(exp.cast(bid, exp.DataType.build("BIGINT")).as_("bid"), *columns,
                        *extra)
             .from_(table.table("t")).join(source, on=on))
    backend.materialize(target, query.where(where) if where is not None else query)




def _apply_items(backend: Backend, plan: Plan) -> None:
    items, pairs = plan.items, plan.pairs
    assert items.item is not None
    item_type, key_type = items.type_of(items.item), items.type_of(items.key)
    match = _pair_match(items)
    delete_where(backend, items, pairs, exp.and_(actions(*DELETE_ACTIONS), match))
    update_from(backend, items, pairs.as_("p"), {items.item: typed(p("new_label"), item_type)},
            exp.and_(actions("generalize"), match))
    relabel = exp.Case(ifs=[exp.If(this=p("new_label").eq(p("old_label")),
                                   true=items.col(items.item))],
                       default=typed(p("new_label"), item_type))
    update_from(backend, items, pairs.as_("p"), {items.key: typed(p("new_key"), key_type),
                                    items.item: relabel}, exp.and_(actions("move"), match))
    inserts = (exp.select(typed(p("new_key"), key_type), typed(p("new_label"), item_type))
               .from_(pairs.as_("p")).where(actions("insert")))
    insert_into(backend, items, [items.key, items.item], inserts)


def _apply_records(backend: Backend, plan: Plan) -> None:
    records, recplan = plan.records, plan.recplan
    assert records is not None
    key_match = p("key_text").eq(records.as_text(records.key))
    delete_where(backend, records, recplan, exp.and_(actions("delete_record"), key_match))
    for attribute in plan.dataset.single_attributes:
        if attribute.role == "id":
            continue
        where = exp.and_(actions("generalize"), key_match,
                         p("attr_no").eq(exp.Literal.number(attribute.attr_no)))
        update_from(backend, records, recplan.as_("p"),
                {attribute.name: typed(p("new_value"), records.type_of(attribute.name))}, where)


def _columns_json(table: UserTable | None) -> list[list[str]] | None:
    return [list(c) for c in table.columns] if table else None


def apply_plan(backend: Backend, plan: Plan) -> dict[str, Any]:
    """Write ``plan`` into the user's tables in one transaction; returns what changed."""
    items, records, run_id = plan.items, plan.records, plan.run.run_id
    check_privileges(backend, items, records)
    check_writable(backend, plan)
    undo_items = backend.table(run_table(run_id, "undo_items"))
    undo_records = backend.table(run_table(run_id, "undo_records"))
    try:
        with backend.transaction():
            backend.lock_for_write(items.table())
            if records is not None:
                backend.lock_for_write(records.table())
            check_in_sync(backend, plan.dataset, items, records)
            for table in (undo_items, undo_records):
                backend.drop_table(table)
            _backup(backend, items, plan.pairs.as_("p"), undo_items, _pair_match(items),
                    [p(c) for c in ("action", "key_text", "old_label", "new_key", "new_label")]
                    + [items.fingerprint().as_("fp")],
                    p("action").neq(exp.Literal.string("insert")),
                    [p("record_id"), p("item_id"), items.fingerprint()])
            figures: dict[str, Any] = {
                "item_rows": {str(a): int(n) for a, n in backend.query(
                    "inplace_plan_counts", tables={"plan": undo_items})},
                "pairs": plan.counts, "items_columns": _columns_json(items),
                "records_columns": _columns_json(records), "attr_no": plan.attr_no}
            figures["item_rows"]["insert"] = plan.counts.get("insert", 0)
            tables = {"change_log": backend.table("change_log"), "plan": plan.pairs,
                      "recplan": plan.recplan}
            backend.run("inplace_log_items", {"run_id": run_id, "attr_no": plan.attr_no}, tables)
            backend.run("inplace_log_records", {"run_id": run_id}, tables)
            _apply_items(backend, plan)
            if records is not None:
                changed = exp.select("key_text", "action").distinct().from_(plan.recplan.copy())
                _backup(backend, records, changed.subquery("p"), undo_records,
                        p("key_text").eq(records.as_text(records.key)),
                        [p("action"), p("key_text")], None, [p("key_text")])
                _apply_records(backend, plan)
                figures["record_rows"] = {str(a): int(n) for a, n in backend.query(
                    "inplace_plan_counts", tables={"plan": undo_records})}
            check_matches_published(backend, plan)
            pause_if_asked("apply-commit")
            backend.run("inplace_delete", {"run_id": run_id},
                        backend.catalog_tables("inplace_applies"))
            backend.run("inplace_insert", {
                "run_id": run_id, "dataset_id": plan.dataset.dataset_id, "items_table": items.ref,
                "records_table": records.ref if records else None,
                "figures": json.dumps(figures, sort_keys=True)},
                backend.catalog_tables("inplace_applies"))
    except DatabaseError as error:
        if not refused_by_user_rules(error):
            raise DatabaseError(f"applying run {run_id} to {items.ref} failed and was rolled "
                                f"back (the tables are unchanged): {error}",
                                error.sqlstate) from None
        raise InputError(
            f"applying run {run_id} to {items.ref} was refused by the database and rolled back "
            f"(the tables are unchanged): {error}. A constraint, trigger or foreign key of the "
            "user's tables did not accept the change; --dry-run shows what would change") from None
    return figures
