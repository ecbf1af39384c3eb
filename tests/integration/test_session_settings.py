"""How setanon's own connection is set up for speed, without reconfiguring anyone else's.

PostgreSQL: work_mem and jit come from the URL (``?work_mem=64MB&jit=on``) or a default
applied only where nobody configured them, always for setanon's session alone. Working tables
(a run's own, never published) are UNLOGGED and skip autovacuum on PostgreSQL; on every backend
they hold what their query gives.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest
from sqlalchemy.engine import make_url
from sqlglot import exp

from setanon_sql.backends import connect
from setanon_sql.backends.base import Backend
from setanon_sql.backends.postgres import DEFAULT_WORK_MEM
from setanon_sql.errors import UsageError
from tests.conftest import _require_pg


def _with_query(url: str, **query: str) -> str:
    return make_url(url).update_query_dict(query).render_as_string(hide_password=False)


def _work_mem(backend: Backend) -> str:
    return _setting(backend, "work_mem")


def _setting(backend: Backend, name: str) -> str:
    return str(backend.execute("SELECT current_setting(%(name)s)", {"name": name},
                               fetch=True)[0][0])


@pytest.mark.postgres
def test_work_mem_from_the_url_or_the_default_for_this_session_only(
        pg_server_url: str | None) -> None:
    url = _require_pg(pg_server_url)
    with psycopg.connect(url, autocommit=True) as other:
        before = other.execute("SELECT current_setting('work_mem')").fetchone()
        with connect(url, "s") as backend:
            assert _work_mem(backend) == DEFAULT_WORK_MEM
        with connect(_with_query(url, work_mem="64MB"), "s") as backend:
            assert _work_mem(backend) == "64MB"
        # Another session, and the server's configuration, are untouched.
        assert other.execute("SELECT current_setting('work_mem')").fetchone() == before


@pytest.mark.postgres
def test_jit_is_off_for_this_session_unless_the_url_or_someone_set_it(
        pg_server_url: str | None) -> None:
    url = _require_pg(pg_server_url)
    with psycopg.connect(url, autocommit=True) as other:
        before = other.execute("SELECT current_setting('jit')").fetchone()
        with connect(url, "s") as backend:
            assert _setting(backend, "jit") == "off"
            assert _work_mem(backend) == DEFAULT_WORK_MEM  # both defaults, not one
        with connect(_with_query(url, jit="on"), "s") as backend:
            assert _setting(backend, "jit") == "on"
        with connect(_with_query(url, options="-c jit=on"), "s") as backend:
            assert _setting(backend, "jit") == "on"
            assert _work_mem(backend) == DEFAULT_WORK_MEM
        assert other.execute("SELECT current_setting('jit')").fetchone() == before


@pytest.mark.postgres
def test_a_work_mem_someone_configured_is_kept(pg_server_url: str | None) -> None:
    # Set through libpq's options, as a role's or the server's setting would be: not 'default'.
    url = _with_query(_require_pg(pg_server_url), options="-c work_mem=2MB")
    with connect(url, "s") as backend:
        assert _work_mem(backend) == "2MB"


@pytest.mark.postgres
def test_a_bad_jit_is_named(pg_server_url: str | None) -> None:
    url = _with_query(_require_pg(pg_server_url), jit="sometimes")
    with pytest.raises(UsageError, match=r"database URL setting jit='sometimes' is not valid "
                                         r"for PostgreSQL \(.*\); write jit=off or jit=on"):
        connect(url, "s")


@pytest.mark.postgres
def test_a_bad_work_mem_is_named(pg_server_url: str | None) -> None:
    url = _with_query(_require_pg(pg_server_url), work_mem="lots")
    with pytest.raises(UsageError, match=r"database URL setting work_mem='lots' is not valid "
                                         r"for PostgreSQL \(.*\); write a size such as "
                                         r"work_mem=256MB"):
        connect(url, "s")


def test_working_tables_hold_their_query_and_skip_wal_and_autovacuum_on_postgres(
        db: Backend, backend_name: str) -> None:
    target = db.table(f"w_{uuid.uuid4().hex[:8]}")
    query = exp.select(exp.alias_(exp.column("n"), "x")).from_(
        exp.values([(1,), (2,), (3,)], alias="v", columns=["n"]))
    db.materialize(target, query, working=True)
    assert sorted(db.query(exp.select("x").from_(target))) == [(1,), (2,), (3,)]
    if backend_name == "postgres":
        persistence, options = db.execute(
            "SELECT relpersistence, reloptions FROM pg_class WHERE oid = %(t)s::regclass",
            {"t": target.sql(dialect="postgres")}, fetch=True)[0]
        assert persistence == "u"
        assert options == ["autovacuum_enabled=false"]  # analyzed by materialize instead
    db.drop_table(target)
