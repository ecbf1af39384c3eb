"""Attach record-item tables that already live in the user's database.

Nothing leaves the DBMS: the user's tables are read by SQL into setanon's normalized tables
(records, item dictionary, record-item rows), keyed back to the user's record ids, so that runs
work as on loaded data and in-place application can find the user's rows again. The user's
tables are only read here.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import (
    Attribute,
    Dataset,
    check_dataset_name,
    next_dataset_id,
    register_dataset,
)
from setanon_sql.errors import InputError, UsageError
from setanon_sql.io.items import build_item_attribute
from setanon_sql.io.replace import drop_existing
from setanon_sql.io.stage import create_records_table, single_valued_attribute
from setanon_sql.names import staging_table
from setanon_sql.sqlrender import qualified_table, with_alias

_TEXT_TYPES = ("char", "text", "string")


def parse_table_ref(backend: Backend, ref: str, option: str) -> tuple[str, str]:
    """``SCHEMA.TABLE`` or ``TABLE`` (in the connection's current schema) -> (schema, table)."""
    parts = ref.split(".")
    if len(parts) == 1 and parts[0]:
        return str(backend.scalar("current_schema_name")), parts[0]
    if len(parts) == 2 and all(parts):
        return parts[0], parts[1]
    raise UsageError(f"{option} {ref!r} must be SCHEMA.TABLE or TABLE")


def _column_types(backend: Backend, schema: str, table: str, option: str,
                  wanted: Sequence[str]) -> dict[str, str]:
    rows = backend.query("table_column_types", {"schema_name": schema, "table_name": table})
    if not rows:
        raise InputError(f"{option}: table {schema}.{table} does not exist (or this role may "
                         "not see it); check the name, its schema and the role's privileges")
    types = {name: str(data_type) for name, data_type in rows}
    for column in wanted:
        if column not in types:
            raise InputError(f"{option}: table {schema}.{table} has no column {column!r}; its "
                             f"columns are: {', '.join(types)}")
    return types


def _sort_key(backend: Backend, column: exp.Expr, data_type: str) -> exp.Expr:
    text = any(word in data_type.lower() for word in _TEXT_TYPES)
    return backend.binary_sort_key(column) if text else column


def _as_text(expression: exp.Expr) -> exp.Expr:
    return exp.cast(expression, exp.DataType.build("TEXT"))


def attach(
    backend: Backend,
    name: str,
    table: str,
    record_column: str,
    item_column: str,
    records_table: str | None = None,
    qi: Sequence[str] | None = None,
    replace: bool = False,
) -> Dataset:
    """Register the user's record-item table ``table`` (and optional records table) as ``name``.

    Records are numbered in the order of their ids. With ``records_table``, every record of that
    table is a record (also those without items) and its other columns (or just ``qi``) become
    single-valued quasi-identifiers.
    """
    backend.require_command("attach")
    check_dataset_name(name)
    item_schema, item_name = parse_table_ref(backend, table, "--table")
    item_types = _column_types(backend, item_schema, item_name, "--table",
                               [record_column, item_column])
    items_source = qualified_table(item_schema, item_name, "t")
    record = exp.column(record_column, table="t", quoted=True)
    item = exp.column(item_column, table="t", quoted=True)
    header = [record_column]
    if records_table:
        rec_schema, rec_name = parse_table_ref(backend, records_table, "--records-table")
        rec_types = _column_types(backend, rec_schema, rec_name, "--records-table",
                                  [record_column, *(qi or [])])
        header += [c for c in rec_types if c != record_column and (qi is None or c in qi)]
        source: exp.Expr = qualified_table(rec_schema, rec_name, "t")
        key_type = rec_types[record_column]
    else:
        source = exp.select(record).distinct().from_(items_source.copy()).where(
            record.is_(exp.null()).not_()).subquery("t")
        key_type = item_types[record_column]
    with backend.transaction():
        drop_existing(backend, name, replace)
        dataset_id = next_dataset_id(backend)
        stage = backend.table(staging_table("stage"))
        order = exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=[exp.Ordered(
            this=_sort_key(backend, exp.column(record_column, table="t", quoted=True),
                           key_type))]))
        columns = [exp.cast(order, exp.DataType.build("BIGINT")).as_("pos")]
        columns += [_as_text(exp.column(c, table="t", quoted=True)).as_(f"c{i}")
                    for i, c in enumerate(header, start=1)]
        backend.materialize(stage, exp.select(*columns).from_(source))
        n_records = int(backend.scalar("count_rows", tables={"t": stage}))
        if n_records == 0:
            raise InputError(f"table {table} has no records to attach")
        attributes: list[Attribute] = []
        record_columns = []
        for attr_no, column in enumerate(header, start=1):
            attribute, value = single_valued_attribute(
                backend, stage, attr_no, column, "id" if attr_no == 1 else "qi",
                lambda pos: f"{records_table or table} (record number {pos})")
            attributes.append(attribute)
            record_columns.append(value)
        nulls = backend.scalar(
            exp.select(exp.func("count", exp.Star())).from_(items_source.copy()).where(
                exp.or_(record.is_(exp.null()), item.is_(exp.null()))))
        if nulls:
            raise InputError(f"table {table} has {nulls} rows with NULL in column "
                             f"{record_column!r} or {item_column!r}; delete or fill them first")
        tokens = backend.table(staging_table("tokens"))
        stage_alias = exp.column("c1", table="s")
        token_query = (
            exp.select(exp.column("pos", table="s").as_("record_id"), _as_text(item).as_("label"))
            .distinct()
            .from_(items_source.copy())
            .join(with_alias(stage, "s"),
                  on=stage_alias.eq(_as_text(record)), join_type="left")
        )
        backend.materialize(tokens, token_query)
        orphans = backend.scalar(exp.select(exp.func("count", exp.Star())).from_(tokens.copy())
                                 .where(exp.column("record_id").is_(exp.null())))
        if orphans:
            raise InputError(f"table {table} has {orphans} item rows whose {record_column!r} is "
                             f"not in {records_table}; every item needs a record")
        attributes.append(build_item_attribute(backend, dataset_id, len(header) + 1,
                                               item_column, tokens))
        create_records_table(backend, stage, dataset_id, record_columns)
        for scratch in (tokens, stage):
            backend.drop_table(scratch)
        options = {"table": f"{item_schema}.{item_name}", "record_column": record_column,
                   "item_column": item_column, "records_table": records_table,
                   "item_separator": " "}
        return register_dataset(backend, dataset_id, name, "attached", table, n_records,
                                options, attributes)
