"""Numbered schema migrations for setanon's own schema, with a version table.

``migrations/NNNN_name.sql`` files hold canonical DDL; unqualified tables are created in the
configured setanon schema. Each pending file is applied in its own transaction and recorded in
``schema_version``. Applied files are never edited: a change is a new file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import sqlglot
from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.errors import SchemaVersionError
from setanon_sql.resources import migrations_dir
from setanon_sql.sqlrender import CANONICAL_DIALECT, bind_tables, identifier

_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path

    def statements(self) -> list[exp.Expr]:
        text = self.path.read_text(encoding="utf-8")
        return [tree for tree in sqlglot.parse(text, read=CANONICAL_DIALECT) if tree is not None]


@cache
def available() -> tuple[Migration, ...]:
    """The migrations shipped with this package, in order, checked for gaps."""
    found = []
    for path in sorted(migrations_dir().glob("*.sql")):
        match = _FILE_NAME.match(path.name)
        if not match:
            raise ValueError(f"{path}: migration files are named NNNN_name.sql")
        found.append(Migration(int(match.group(1)), match.group(2), path))
    for expected, migration in enumerate(found, start=1):
        if migration.version != expected:
            raise ValueError(f"{migration.path}: expected migration number {expected:04d}")
    return tuple(found)


def applied_versions(backend: Backend) -> list[int]:
    """Versions recorded in the database (empty if setanon was never initialised there)."""
    exists = backend.scalar(
        "table_exists", {"schema_name": backend.schema, "table_name": "schema_version"}
    )
    if not exists:
        return []
    rows = backend.query("schema_version_list", tables=backend.catalog_tables("schema_version"))
    return [int(version) for version, _ in rows]


def _qualify(backend: Backend, tree: exp.Expr) -> exp.Expr:
    names = {table.name for table in tree.find_all(exp.Table) if not table.args.get("db")}
    return bind_tables(tree, {name: backend.table(name) for name in names})


def migrate(backend: Backend) -> list[Migration]:
    """Apply pending migrations; refuse a database whose schema is newer than the package.

    Idempotent: a second call applies nothing. Returns the migrations it applied.
    """
    shipped = available()
    done = applied_versions(backend)
    latest = shipped[-1].version if shipped else 0
    if done and max(done) > latest:
        raise SchemaVersionError(
            f"the setanon schema {backend.schema!r} in {backend.describe()} is at version "
            f"{max(done)}, newer than this setanon_sql (knows up to {latest}); upgrade with "
            "'pip install -U setanon_sql'"
        )
    if done != list(range(1, len(done) + 1)):
        raise SchemaVersionError(
            f"the setanon schema {backend.schema!r} records migrations {done}, with gaps; it was "
            "changed by hand: restore it or use a new --schema"
        )
    pending = [m for m in shipped if m.version not in set(done)]
    if not pending:
        return []
    with backend.transaction():
        backend.run(exp.Create(this=exp.Table(this=identifier(backend.schema)), kind="SCHEMA",
                               exists=True))
        backend.run("schema_version_create", tables=backend.catalog_tables("schema_version"))
    for migration in pending:
        with backend.transaction():
            for tree in migration.statements():
                backend.run(_qualify(backend, tree))
            backend.run(
                "schema_version_insert",
                {"version": migration.version, "name": migration.name},
                tables=backend.catalog_tables("schema_version"),
            )
    return pending
