"""From a staged table of text columns ``stage(pos, c1, ..., cN)`` to a dataset's records table.

Shared by ``load table`` (a CSV/TSV file staged by the engine's bulk path) and ``attach`` (a
user's tables staged by a query): checks the id column, infers each single-valued column's type
and builds ``records(record_id, position, c<attr_no>...)`` in input order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Attribute
from setanon_sql.errors import InputError
from setanon_sql.names import qi_column, records_table, staging_table


def column_lines(backend: Backend, stage: exp.Table, column_no: int) -> exp.Table:
    """A narrow (pos, line) copy of one staged column, so named statements can check it."""
    lines = backend.table(staging_table("lines"))
    query = exp.select("pos", exp.column(f"c{column_no}").as_("line")).from_(stage.copy())
    backend.materialize(lines, query)
    return lines


def check_ids(backend: Backend, lines: exp.Table, id_column: str,
              where: Callable[[int], str]) -> None:
    """Every record has an id, and no id repeats; ``where(pos)`` names a record's place."""
    empty = backend.scalar("first_empty_value", tables={"lines": lines})
    if empty is not None:
        raise InputError(f"{where(int(empty))}: the id column {id_column!r} is empty; every "
                         "record needs an id")
    duplicate = backend.query("first_duplicate_value", tables={"lines": lines})
    if duplicate:
        value, first, last, count = duplicate[0]
        raise InputError(
            f"{where(int(first))}: id {value!r} of column {id_column!r} appears {count} times "
            f"(also {where(int(last))}); record ids must be unique"
        )


def single_valued_attribute(
    backend: Backend, stage: exp.Table, attr_no: int, name: str, role: str,
    where: Callable[[int], str],
) -> tuple[Attribute, exp.Expr]:
    """Check and type one single-valued column; returns it and its records-table expression."""
    lines = column_lines(backend, stage, attr_no)
    if role == "id":
        check_ids(backend, lines, name, where)
    integer = bool(backend.scalar("column_is_integer", tables={"lines": lines}))
    value: exp.Expr = exp.column(f"c{attr_no}")
    if integer:
        value = exp.cast(value, exp.DataType.build("BIGINT"))
    n_distinct = int(backend.scalar("count_distinct_values", tables={"lines": lines}))
    backend.drop_table(lines)
    attribute = Attribute(attr_no, name, role, "integer" if integer else "text", n_distinct)
    return attribute, value.as_(qi_column(attr_no))


def create_records_table(
    backend: Backend, stage: exp.Table, dataset_id: int, columns: Sequence[exp.Expr]
) -> None:
    """``records(record_id, position, ...)``: the staged row number is both id and position."""
    records = backend.table(records_table(dataset_id))
    query = exp.select(exp.column("pos").as_("record_id"), exp.column("pos").as_("position"),
                       *columns).from_(stage.copy()).order_by("pos")
    backend.materialize(records, query)
    backend.create_access_index(records, ["record_id"])
