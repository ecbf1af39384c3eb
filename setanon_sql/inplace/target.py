"""The user's attached tables as in-place work sees them: columns, types, key and item columns.

Everything here builds sqlglot expressions over the user's own column names (always quoted);
nothing is pasted into SQL text. A value setanon writes into a user column is text (a label or
a record key) converted to the column's type: text columns take it as is, integer columns take
canonical integers; other types are refused before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from setanon_sql.attach import parse_table_ref
from setanon_sql.backends.base import Backend
from setanon_sql.catalog import Dataset
from setanon_sql.errors import InputError, UsageError
from setanon_sql.sqlrender import qualified_table

_TEXT_WORDS = ("char", "text", "string")
_INTEGER_WORDS = ("int",)  # integer, bigint, smallint, int4, hugeint, ...
TEXT = exp.DataType.build("TEXT")
# Same pattern as load.sql's column_is_integer: canonical integers survive a text round trip.
CANONICAL_INTEGER = "^-?(0|[1-9][0-9]{0,17})$"


@dataclass(frozen=True)
class UserTable:
    """One of the user's tables: where it is, its columns in order, and the two that matter."""

    schema: str
    name: str
    columns: tuple[tuple[str, str], ...]  # (column name, data type) in table order
    key: str  # the record key column
    item: str | None  # the item column (None for a records table)

    @property
    def ref(self) -> str:
        return f"{self.schema}.{self.name}"

    def table(self, alias: str | None = None) -> exp.Table:
        return qualified_table(self.schema, self.name, alias)

    def type_of(self, column: str) -> str:
        return dict(self.columns)[column]

    def col(self, column: str, alias: str = "t") -> exp.Column:
        return exp.column(column, table=alias, quoted=True)

    def as_text(self, column: str, alias: str = "t") -> exp.Expr:
        return exp.cast(self.col(column, alias), TEXT)

    def other_columns(self) -> list[str]:
        return [c for c, _ in self.columns if c not in (self.key, self.item)]

    def fingerprint(self, alias: str = "t") -> exp.Expr:
        """md5 of every column but key and item, each as NULL or length-prefixed text.

        Rows that agree on it are interchangeable for undo; length prefixes keep ('a', 'bc')
        apart from ('ab', 'c').
        """
        parts: list[exp.Expr] = [exp.Literal.string("")]
        for column in self.other_columns():
            text = self.as_text(column, alias)
            encoded = exp.Case(
                ifs=[exp.If(this=exp.Is(this=self.col(column, alias), expression=exp.Null()),
                            true=exp.Literal.string("N"))],
                default=exp.DPipe(this=exp.DPipe(this=exp.DPipe(
                    this=exp.Literal.string("V"), expression=exp.cast(exp.Length(this=text),
                                                                      TEXT)),
                    expression=exp.Literal.string(":")), expression=text.copy()))
            parts.append(encoded)
        joined = parts[0]
        for part in parts[1:]:
            joined = exp.DPipe(this=joined, expression=part)
        return exp.MD5(this=joined)


def value_kind(data_type: str) -> str | None:
    """'text' or 'integer' when setanon can write text values into the type, else None."""
    lowered = data_type.lower()
    if any(word in lowered for word in _TEXT_WORDS):
        return "text"
    if any(word in lowered for word in _INTEGER_WORDS) and "interval" not in lowered:
        return "integer"
    return None


def typed(value: exp.Expr, data_type: str) -> exp.Expr:
    """A text ``value`` as something a column of ``data_type`` accepts (see ``value_kind``)."""
    kind = value_kind(data_type)
    if kind == "text":
        return value
    if kind == "integer":
        return exp.cast(value, exp.DataType.build("BIGINT"))
    raise AssertionError(f"type {data_type} was not checked before writing")


def writable_check(table: UserTable, column: str, values: exp.Select, backend: Backend,
                   what: str) -> None:
    """Refuse (before any write) new values that ``column`` of the user's table cannot hold.

    ``values`` selects one text column ``v`` of the values the run would write.
    """
    data_type = table.type_of(column)
    kind = value_kind(data_type)
    count = exp.select(exp.func("count", exp.Star())).from_(values.subquery("w"))
    if kind == "text":
        return
    if kind == "integer":
        count = count.where(exp.not_(exp.RegexpLike(this=exp.column("v"),
                                                    expression=exp.Literal.string(
                                                        CANONICAL_INTEGER))))
    bad = int(backend.scalar(count) or 0)
    if bad:
        raise InputError(
            f"column {column!r} of {table.ref} has type {data_type}, which cannot hold {bad} "
            f"{what} this run writes (e.g. generalized labels); ALTER the column to TEXT, or "
            "use 'setanon export' instead of --in-place")


def _columns(backend: Backend, schema: str, name: str, ref: str) -> tuple[tuple[str, str], ...]:
    rows = backend.query("table_column_types", {"schema_name": schema, "table_name": name})
    if not rows:
        raise InputError(f"the attached table {ref} no longer exists (or this role may not see "
                         "it); attach the table again with 'setanon attach --replace'")
    return tuple((str(c), str(t)) for c, t in rows)


def user_tables(backend: Backend, dataset: Dataset) -> tuple[UserTable, UserTable | None]:
    """The user's item table and records table (if attached with one) of ``dataset``."""
    if dataset.kind != "attached":
        raise UsageError(f"dataset {dataset.name!r} was loaded from a file ({dataset.source}), "
                         "so there is no table to change in place; use 'setanon export', or "
                         "attach the table with 'setanon attach' and run --in-place on that")
    options = dataset.options
    key, item = options["record_column"], options["item_column"]
    schema, name = parse_table_ref(backend, options["table"], "--table")
    items = UserTable(schema, name, _columns(backend, schema, name, options["table"]), key, item)
    records = None
    if options.get("records_table"):
        r_schema, r_name = parse_table_ref(backend, options["records_table"], "--records-table")
        records = UserTable(r_schema, r_name,
                            _columns(backend, r_schema, r_name, options["records_table"]),
                            key, None)
    for table in (items, records):
        if table is None:
            continue
        missing = [c for c in (table.key, table.item) if c and c not in dict(table.columns)]
        if missing:
            raise InputError(f"the attached table {table.ref} has no column {missing[0]!r} any "
                             "more; attach it again with 'setanon attach --replace'")
        if "rowid" in dict(table.columns):
            raise InputError(f"{table.ref} has a column named 'rowid', which hides DuckDB's row "
                             "id that undo relies on; rename the column to work in place")
    return items, records
