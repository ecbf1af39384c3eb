"""The SQL layer: canonical named statements, sqlglot expressions, one render function.

Canonical statements live in ``sql/*.sql``, written in one dialect (PostgreSQL, see
``CANONICAL_DIALECT``), each introduced by a ``-- name: <statement_name>`` line. Values are named
placeholders (``:k``) and are always bound by the driver. Tables are written by *logical* name
(``items``, ``dict``) and bound to real, quoted, schema-qualified tables at render time, so a
statement never contains a user-controlled identifier as text.

Rendering a named statement for a dialect and a set of tables is cached: each statement is parsed
once and transpiled once per (dialect, tables) combination.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from setanon_sql.errors import UnsupportedOperationError
from setanon_sql.resources import sql_dir

CANONICAL_DIALECT = "postgres"

_NAME_LINE = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Statement:
    """A canonical named statement as written in ``sql/``."""

    name: str
    text: str
    source: Path


def parse_statement_file(path: Path) -> list[Statement]:
    """Split one ``sql/*.sql`` file into its named statements."""
    text = path.read_text(encoding="utf-8")
    marks = list(_NAME_LINE.finditer(text))
    if not marks:
        raise ValueError(f"{path}: no '-- name: ...' line; every statement needs a name")
    found = []
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        body = text[mark.end() : following.start() if following else len(text)].strip()
        found.append(Statement(mark.group(1), body.rstrip(";").strip(), path))
    return found


@cache
def statements() -> dict[str, Statement]:
    """All named statements shipped with the package, by name."""
    by_name: dict[str, Statement] = {}
    for path in sorted(sql_dir().glob("*.sql")):
        for statement in parse_statement_file(path):
            if statement.name in by_name:
                raise ValueError(
                    f"statement {statement.name!r} is defined twice: "
                    f"{by_name[statement.name].source} and {path}"
                )
            by_name[statement.name] = statement
    return by_name


@cache
def parsed(name: str) -> exp.Expr:
    """The canonical statement ``name`` as a sqlglot tree (parsed once; never mutate it)."""
    try:
        statement = statements()[name]
    except KeyError:
        raise KeyError(f"no SQL statement named {name!r} in {sql_dir()}") from None
    return sqlglot.parse_one(statement.text, read=CANONICAL_DIALECT)


def identifier(name: str) -> exp.Identifier:
    """A quoted identifier: the only way a name enters generated SQL."""
    return exp.to_identifier(name, quoted=True)


def qualified_column(alias: str, name: str) -> exp.Column:
    """``alias.name``, both quoted."""
    return exp.Column(this=identifier(name), table=identifier(alias))


def qualified_table(schema: str | None, name: str, alias: str | None = None) -> exp.Table:
    """A quoted, optionally schema-qualified table reference."""
    table = exp.Table(this=identifier(name), db=identifier(schema) if schema else None)
    if alias:
        table.set("alias", exp.TableAlias(this=identifier(alias)))
    return table


def with_alias(table: exp.Table, alias: str) -> exp.Table:
    """A copy of ``table`` under ``alias``."""
    copy = table.copy()
    copy.set("alias", exp.TableAlias(this=identifier(alias)))
    return copy


def union_all(parts: Sequence[exp.Query], copy: bool = True) -> exp.Query:
    """``parts`` joined by UNION ALL (one part alone as it is): sqlglot's ``exp.union`` asks
    for two at least, and a shape built per size or position may have one. ``copy=False``
    places the parts themselves (fresh trees of the caller's)."""
    return parts[0] if len(parts) == 1 else exp.union(*parts, distinct=False, copy=copy)


TableBinding = Mapping[str, exp.Table]


def bind_tables(tree: exp.Expr, tables: TableBinding) -> exp.Expr:
    """Replace logical table names in ``tree`` by real tables; returns a new tree.

    Every unqualified table that is not a CTE must be bound: a forgotten binding is a programming
    error caught here rather than a query against a stray table.
    """
    cte_names = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}

    def replace(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.Table) or node.args.get("db") or not node.name:
            return node
        if node.name in cte_names:
            return node
        if node.name not in tables:
            raise KeyError(f"table {node.name!r} of the statement is not bound to a real table")
        real = tables[node.name].copy()
        alias = node.args.get("alias")
        is_target = isinstance(node.parent, (exp.Create, exp.Insert, exp.Drop, exp.Schema,
                                             exp.Update, exp.Delete))
        if alias is None and node.name != real.name and not is_target:
            alias = exp.TableAlias(this=identifier(node.name))
        if alias is not None:
            real.set("alias", alias.copy())
        return real

    return tree.copy().transform(replace, copy=False)


def to_sql(tree: exp.Expr, dialect: str) -> str:
    """Generate ``tree`` in ``dialect``, turning sqlglot failures into our own error."""
    try:
        return tree.sql(dialect=dialect, unsupported_level=sqlglot.ErrorLevel.RAISE)
    except SqlglotError as error:
        raise UnsupportedOperationError(
            f"cannot express a {type(tree).__name__} statement for the {dialect} backend: {error}"
        ) from error


def _freeze(tables: TableBinding | None) -> tuple[tuple[str, str], ...]:
    if not tables:
        return ()
    return tuple(sorted((key, table.sql(dialect=CANONICAL_DIALECT))
                        for key, table in tables.items()))


@lru_cache(maxsize=4096)
def _render_named(name: str, dialect: str, frozen: tuple[tuple[str, str], ...]) -> str:
    tree = parsed(name)
    if frozen:
        tables = {key: sqlglot.parse_one(text, into=exp.Table, read=CANONICAL_DIALECT)
                  for key, text in frozen}
        tree = bind_tables(tree, tables)
    return to_sql(tree, dialect)


def render(
    statement: str | exp.Expr, dialect: str, tables: TableBinding | None = None
) -> str:
    """Render a named statement or a sqlglot expression for ``dialect``.

    The single rendering path of the package: named statements are cached per dialect and table
    binding; expressions (statements whose shape depends on parameters) are rendered directly.
    """
    if isinstance(statement, str):
        return _render_named(statement, dialect, _freeze(tables))
    tree = bind_tables(statement, tables) if tables else statement
    return to_sql(tree, dialect)
