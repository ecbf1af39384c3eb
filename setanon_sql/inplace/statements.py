"""Small sqlglot builders shared by apply and undo: plan columns, action filters, DML.

The plan (or backup) table is always aliased ``p`` and the user's table ``t``.
"""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.inplace.target import UserTable


def p(column: str) -> exp.Column:
    """Column ``column`` of the plan or backup table ``p``."""
    return exp.column(column, table="p")


def actions(*names: str) -> exp.Expr:
    """``p.action IN (...)``."""
    return p("action").isin(*(exp.Literal.string(a) for a in names))


def delete_where(backend: Backend, table: UserTable, plan_table: exp.Table,
                 match: exp.Expr) -> None:
    """Delete the user's rows ``t`` that some plan row ``p`` matches."""
    exists = exp.Exists(this=exp.select(exp.Literal.number(1)).from_(plan_table.as_("p"))
                        .where(match))
    backend.run(exp.Delete(this=table.table("t"), where=exp.Where(this=exists)))


def update_from(backend: Backend, table: UserTable, source: exp.Expr,
                sets: dict[str, exp.Expr], where: exp.Expr) -> None:
    """``UPDATE t SET ... FROM source WHERE where`` (``source`` carries its alias)."""
    backend.run(exp.Update(
        this=table.table("t"),
        expressions=[exp.EQ(this=exp.column(c, quoted=True), expression=v)
                     for c, v in sets.items()],
        from_=exp.From(this=source), where=exp.Where(this=where)))


def insert_into(backend: Backend, table: UserTable, columns: list[str],
                query: exp.Select) -> None:
    """``INSERT INTO table (columns) query``."""
    backend.run(exp.Insert(this=exp.Schema(this=table.table(), expressions=[
        exp.to_identifier(c, quoted=True) for c in columns]), expression=query))
