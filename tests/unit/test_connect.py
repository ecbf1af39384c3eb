"""Database URLs: every accepted form, and clear errors for the rest."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import sqlalchemy

from setanon_sql.backends import DEFAULT_URL, connect, resolve_url
from setanon_sql.errors import ConnectionFailedError, UsageError


def test_url_falls_back_to_environment_then_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SETANON_DB", raising=False)
    assert resolve_url(None) == DEFAULT_URL
    monkeypatch.setenv("SETANON_DB", "duckdb:///:memory:")
    assert resolve_url(None) == "duckdb:///:memory:"
    assert resolve_url("duckdb:///x.duckdb") == "duckdb:///x.duckdb"


def test_duckdb_memory_and_sqlalchemy_forms(tmp_path) -> None:
    with connect("duckdb:///:memory:") as backend:
        assert backend.path == ":memory:"
    url = sqlalchemy.engine.make_url(f"duckdb:///{tmp_path}/a.duckdb")
    with connect(url) as backend:
        assert backend.path == f"{tmp_path}/a.duckdb"


def test_duckdb_url_settings_bound_the_embedded_engine(tmp_path) -> None:
    with connect(f"duckdb:///{tmp_path}/s.duckdb?memory_limit=1GB&threads=1") as backend:
        assert backend.path == f"{tmp_path}/s.duckdb"
        [(limit, threads)] = backend.execute(
            "SELECT current_setting('memory_limit'), current_setting('threads')", fetch=True)
        assert limit == "953.6 MiB" and int(threads) == 1


def test_bad_duckdb_url_settings_are_named(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(UsageError, match="setting 'memory_limt' is not known for DuckDB"):
        connect("duckdb:///:memory:?memory_limt=1GB")
    with pytest.raises(UsageError, match="setting of the DuckDB URL is not valid"):
        connect("duckdb:///:memory:?memory_limit=lots")
    assert list(tmp_path.iterdir()) == []  # no spill directory of a database never opened


def test_an_in_memory_database_never_closed_leaves_no_spill_directory(tmp_path: Path) -> None:
    """Opened through the API and left open at exit: the private spill directory still goes."""
    script = ("import tempfile; tempfile.tempdir = " + repr(str(tmp_path)) + "\n"
              "from setanon_sql.backends import connect\n"
              "backend = connect('duckdb:///:memory:')\n"
              "backend.execute('SELECT 1', fetch=True)\n")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert list(tmp_path.iterdir()) == []


def test_unknown_scheme_and_missing_scheme() -> None:
    with pytest.raises(ConnectionFailedError, match="scheme 'sqlite' is not supported"):
        connect("sqlite:///x.db")
    with pytest.raises(UsageError, match="has no scheme"):
        connect("just-a-file.duckdb")


def test_postgres_password_is_hidden_in_errors() -> None:
    with pytest.raises(ConnectionFailedError) as info:
        connect("postgresql://me:secret@127.0.0.1:1/db")
    assert "secret" not in str(info.value)
    assert "postgresql://me:***@127.0.0.1:1/db" in str(info.value)


def test_sqlalchemy_engine_is_accepted() -> None:
    engine = sqlalchemy.create_engine("postgresql+psycopg://me:pw@127.0.0.1:1/db")
    with pytest.raises(ConnectionFailedError, match=r"postgresql://me:\*\*\*@127.0.0.1:1/db"):
        connect(engine)
