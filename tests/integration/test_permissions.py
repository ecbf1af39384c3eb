"""A database role that may not write what setanon needs gets a clear error, not a traceback.

PostgreSQL only: DuckDB files have no roles (file permissions are checked when opening).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy.engine import make_url

from setanon_sql.api import open_database
from setanon_sql.errors import PermissionDeniedError
from tests.conftest import _require_pg


@pytest.fixture
def limited_url(pg_server_url: str | None) -> Iterator[str]:
    """A login role without CREATE on the database."""
    url = _require_pg(pg_server_url)
    role = f"limited_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
        con.execute(f"REVOKE CREATE ON DATABASE {make_url(url).database} FROM PUBLIC")
    yield make_url(url).set(username=role, password="pw").render_as_string(hide_password=False)
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"DROP OWNED BY {role}")
        con.execute(f"DROP ROLE {role}")


@pytest.mark.postgres
def test_role_without_create_gets_a_clear_error(limited_url: str) -> None:
    with pytest.raises(PermissionDeniedError, match=r"PostgreSQL refused \(permission denied "
                                                    r"for database .*\); grant the role"):
        open_database(limited_url, f"t_{uuid.uuid4().hex[:8]}")
