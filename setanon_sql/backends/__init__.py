"""Open a backend from a database URL (or a SQLAlchemy URL / Engine)."""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import parse_qsl

from setanon_sql.backends.base import Backend
from setanon_sql.errors import ConnectionFailedError, UsageError

DEFAULT_URL = "duckdb:///setanon.duckdb"
DEFAULT_SCHEMA = "setanon"
_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")

__all__ = ["DEFAULT_SCHEMA", "DEFAULT_URL", "Backend", "connect", "resolve_url"]


def resolve_url(url: Any = None) -> Any:
    """``url`` if given, else ``$SETANON_DB``, else a DuckDB file in the working directory."""
    if url is not None and url != "":
        return url
    return os.environ.get("SETANON_DB") or DEFAULT_URL


def _as_text(url: Any) -> str:
    """Accept a URL string, a ``sqlalchemy.engine.URL`` or a ``sqlalchemy.Engine``."""
    if isinstance(url, str):
        return url
    engine_url = getattr(url, "url", None)  # an Engine carries its URL
    if engine_url is not None and hasattr(engine_url, "render_as_string"):
        url = engine_url
    if hasattr(url, "render_as_string"):
        return url.render_as_string(hide_password=False)
    raise UsageError(f"cannot use {url!r} as a database: give a URL such as {DEFAULT_URL}")


# Engine settings a DuckDB URL may carry (``duckdb:///f.duckdb?memory_limit=4GB&threads=2``):
# the embedded engine shares the process, so a laptop user must be able to bound it.
DUCKDB_SETTINGS = ("memory_limit", "threads", "temp_directory")


def _duckdb_settings(query: str) -> dict[str, str]:
    settings: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key not in DUCKDB_SETTINGS:
            raise UsageError(
                f"database URL setting {key!r} is not known for DuckDB: use "
                + ", ".join(f"{name}=..." for name in DUCKDB_SETTINGS))
        settings[key] = value
    return settings


def connect(url: Any = None, schema: str = DEFAULT_SCHEMA) -> Backend:
    """Open the database named by ``url`` (see :func:`resolve_url`).

    ``duckdb:///relative/file.duckdb``, ``duckdb:////absolute/file.duckdb`` and
    ``duckdb:///:memory:`` follow SQLAlchemy's convention (with ``?memory_limit=4GB&threads=2``
    and ``temp_directory=`` to bound the embedded engine); ``postgresql://user:pw@host:5432/db``
    (also ``postgres://`` and ``postgresql+psycopg://``) opens PostgreSQL through psycopg 3.
    """
    if not _SCHEMA_NAME.match(schema):
        raise UsageError(
            f"--schema {schema!r} is not a plain schema name: use letters, digits and '_' "
            "(at most 63 characters, not starting with a digit)"
        )
    text = _as_text(resolve_url(url))
    scheme, sep, rest = text.partition("://")
    if not sep:
        raise UsageError(
            f"database URL {text!r} has no scheme: write duckdb:///file.duckdb or "
            "postgresql://user:password@host:5432/dbname"
        )
    driver = scheme.split("+", 1)[0].lower()
    if driver == "duckdb":
        from setanon_sql.backends.duckdb import DuckDBBackend

        rest, _, query = rest.partition("?")
        path = rest[1:] if rest.startswith("/") else rest
        if path in ("", ":memory:"):
            path = ":memory:"
        return DuckDBBackend(path, schema, _duckdb_settings(query))
    if driver in ("postgresql", "postgres"):
        from setanon_sql.backends.postgres import PostgresBackend

        return PostgresBackend(f"postgresql://{rest}", schema)
    raise ConnectionFailedError(
        f"database URL scheme {scheme!r} is not supported: use duckdb:///FILE or "
        "postgresql://USER:PASSWORD@HOST:PORT/DB"
    )
