"""Database URLs are parsed by SQLAlchemy: every form it accepts, passwords with '@', ':' and
'/', and no message that shows a password (issue 21, item 7)."""

from __future__ import annotations

import os

import pytest
from sqlalchemy.engine import make_url

from setanon_sql.backends import connect, shown
from setanon_sql.backends.duckdb import DuckDBBackend
from setanon_sql.backends.postgres import connect_args
from setanon_sql.errors import ConnectionFailedError, UsageError

SECRET = "p@ss:w/rd"
ENCODED = "p%40ss%3Aw%2Frd"


@pytest.mark.parametrize(("url", "expected"), [
    (f"postgresql://me:{ENCODED}@db.example:5433/shop",
     {"host": "db.example", "port": 5433, "user": "me", "password": SECRET, "dbname": "shop"}),
    (f"postgres://me:{ENCODED}@db.example/shop",
     {"host": "db.example", "user": "me", "password": SECRET, "dbname": "shop"}),
    ("postgresql+psycopg://me@/shop?host=/var/run/postgresql",
     {"host": "/var/run/postgresql", "user": "me", "dbname": "shop"}),
    ("postgresql://me:pw@h/shop?sslmode=require&application_name=setanon",
     {"host": "h", "user": "me", "password": "pw", "dbname": "shop", "sslmode": "require",
      "application_name": "setanon"}),
    # setanon's own session settings are SET after connecting, not passed to libpq.
    ("postgresql://me@h/shop?work_mem=64MB&sslmode=require",
     {"host": "h", "user": "me", "dbname": "shop", "sslmode": "require"}),
])
def test_postgres_urls_become_psycopg_arguments(url: str, expected: dict) -> None:
    assert connect_args(make_url(url)) == expected


@pytest.mark.parametrize("url", [
    f"postgresql://me:{ENCODED}@127.0.0.1:1/db",
    f"postgresql+psycopg://me:{ENCODED}@127.0.0.1:1/db",
])
def test_unreachable_server_message_hides_the_password(url: str) -> None:
    with pytest.raises(ConnectionFailedError) as info:
        connect(url)
    message = str(info.value)
    assert "postgresql://me:***@127.0.0.1:1/db" in message
    for part in (SECRET, ENCODED, "p@ss", "w/rd", "ss:w", "%40", "rd"):
        assert part not in message


def test_unencoded_at_in_password_is_refused_without_showing_it() -> None:
    with pytest.raises(UsageError, match="percent-encoded") as info:
        connect("postgresql://me:p@ss@127.0.0.1:1/db")
    assert "p@ss" not in str(info.value) and ":p" not in str(info.value)


def test_shown_hides_passwords() -> None:
    assert shown(f"postgresql://me:{ENCODED}@h:5432/db") == "postgresql://me:***@h:5432/db"
    assert SECRET not in shown(f"postgresql://me:{SECRET}@h/db")


@pytest.mark.parametrize(("url", "path"), [
    ("duckdb:///:memory:", ":memory:"),
    ("duckdb://", ":memory:"),
])
def test_duckdb_memory_forms(url: str, path: str) -> None:
    with connect(url) as backend:
        assert isinstance(backend, DuckDBBackend) and backend.path == path


def test_duckdb_relative_and_absolute_paths(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with connect("duckdb:///rel.duckdb") as backend:
        assert isinstance(backend, DuckDBBackend) and backend.path == "rel.duckdb"
    assert (tmp_path / "rel.duckdb").exists()
    with connect(f"duckdb:///{tmp_path}/abs.duckdb") as backend:  # four slashes: absolute
        assert isinstance(backend, DuckDBBackend) and backend.path == f"{tmp_path}/abs.duckdb"
    assert (tmp_path / "abs.duckdb").exists()


def test_unparsable_url_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="cannot be parsed"):
        connect("postgresql://me:pw@h:notaport/db")


@pytest.mark.postgres
def test_postgres_url_with_encoded_password_connects(pg_server_url: str | None) -> None:
    """The server sees the user and database the URL names (the test server trusts passwords,
    so what reaches it is checked by connect_args above)."""
    if pg_server_url is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but no PostgreSQL server could be found or started")
        pytest.skip("no PostgreSQL available")
    server = make_url(pg_server_url)
    url = server.set(password=SECRET).render_as_string(hide_password=False)
    assert ENCODED in url
    with connect(url) as backend:
        assert backend.execute("SELECT current_user, current_database()", fetch=True) == [
            (server.username, server.database)]
        assert SECRET not in backend.describe() and "***" in backend.describe()


def test_url_may_set_the_connect_timeout() -> None:
    with pytest.raises(ConnectionFailedError, match=r"127.0.0.1:1/db\?connect_timeout=3"):
        connect("postgresql://me:pw@127.0.0.1:1/db?connect_timeout=3")
