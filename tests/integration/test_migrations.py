"""Schema migrations: idempotent, versioned, and refusing a newer or hand-edited schema."""

from __future__ import annotations

import pytest

from setanon_sql.backends.base import Backend
from setanon_sql.errors import SchemaVersionError
from setanon_sql.migrations import applied_versions, available, migrate


def test_migrate_is_idempotent(db: Backend) -> None:
    assert applied_versions(db) == [m.version for m in available()]
    assert migrate(db) == []
    assert {"datasets", "attributes", "runs", "change_log", "hierarchies",
            "hierarchy_nodes", "schema_version"} <= set(db.table_names(""))


def test_newer_schema_is_refused_with_upgrade_advice(db: Backend) -> None:
    db.run("schema_version_insert", {"version": 999, "name": "future"},
           db.catalog_tables("schema_version"))
    with pytest.raises(SchemaVersionError, match=r"version 999, newer than this setanon_sql.*"
                                                 r"pip install -U setanon_sql"):
        migrate(db)

