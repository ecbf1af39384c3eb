"""Open a backend from a database URL (or a SQLAlchemy URL / Engine)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from setanon_sql.backends.base import Backend
from setanon_sql.errors import ConnectionFailedError, DatabaseLockedError, UsageError

DEFAULT_URL = "duckdb:///setanon.duckdb"
DEFAULT_SCHEMA = "setanon"
_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")

__all__ = ["DEFAULT_SCHEMA", "DEFAULT_URL", "Backend", "connect", "resolve_url",
           "retry_while_locked", "shown"]


def resolve_url(url: Any = None) -> Any:
    """``url`` if given, else ``$SETANON_DB``, else a DuckDB file in the working directory."""
    if url is not None and url != "":
        return url
    return os.environ.get("SETANON_DB") or DEFAULT_URL


def _parsed(url: Any) -> URL:
    """A URL string, a ``sqlalchemy.engine.URL`` or an ``Engine``, parsed by SQLAlchemy.

    A password holding '@', ':' or '/' is written percent-encoded (``p%40ss``), as SQLAlchemy
    expects; no message ever shows it (:func:`shown`).
    """
    engine_url = getattr(url, "url", None)  # an Engine carries its URL
    if isinstance(engine_url, URL):
        return engine_url
    if isinstance(url, URL):
        return url
    if not isinstance(url, str):
        raise UsageError(f"cannot use a {type(url).__name__} as a database: give a URL such as "
                         f"{DEFAULT_URL}")
    if "://" not in url:
        raise UsageError(
            f"database URL {_without_credentials(url)!r} has no scheme: write "
            "duckdb:///file.duckdb or postgresql://user:password@host:5432/dbname")
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a port that is no number
        raise UsageError(
            f"database URL {_without_credentials(url)!r} cannot be parsed: write "
            "duckdb:///file.duckdb or postgresql://user:password@host:5432/dbname (a password "
            "with '@', ':' or '/' percent-encoded: %40, %3A, %2F)") from None
    if "@" in (parsed.host or ""):
        # 'user:p@ss@host' parses as password 'p', host 'ss@host': refuse before any message
        # can show the host, which holds the rest of the password.
        raise UsageError(
            f"database URL {_without_credentials(url)!r}: a password or user name holding '@' "
            "must be percent-encoded (%40; ':' as %3A, '/' as %2F)")
    return parsed


def _without_credentials(text: str) -> str:
    """An unparsable URL for a message: whatever precedes its last '@' is hidden."""
    scheme, sep, rest = text.rpartition("://")
    if "@" in rest:
        rest = "***@" + rest.rsplit("@", 1)[1]
    return f"{scheme}{sep}{rest}" if sep else rest


def shown(url: Any) -> str:
    """A database URL as messages show it: parsed, the password replaced by ***."""
    try:
        return _parsed(url).render_as_string(hide_password=True)
    except UsageError:
        return _without_credentials(str(url))


# Engine settings a DuckDB URL may carry (``duckdb:///f.duckdb?memory_limit=4GB&threads=2``):
# the embedded engine shares the process, so a laptop user must be able to bound it.
DUCKDB_SETTINGS = ("memory_limit", "threads", "temp_directory")


def _duckdb_settings(url: URL) -> dict[str, str]:
    settings: dict[str, str] = {}
    for key, value in url.query.items():
        if key not in DUCKDB_SETTINGS:
            raise UsageError(
                f"database URL setting {key!r} is not known for DuckDB: use "
                + ", ".join(f"{name}=..." for name in DUCKDB_SETTINGS))
        settings[key] = value[-1] if isinstance(value, tuple) else value
    return settings


def connect(url: Any = None, schema: str = DEFAULT_SCHEMA, wait_seconds: float = 0.0,
            create: bool = True) -> Backend:
    """Open the database named by ``url`` (see :func:`resolve_url`).

    ``duckdb:///relative/file.duckdb``, ``duckdb:////absolute/file.duckdb`` and
    ``duckdb:///:memory:`` follow SQLAlchemy's convention (with ``?memory_limit=4GB&threads=2``
    and ``temp_directory=`` to bound the embedded engine); ``postgresql://user:pw@host:5432/db``
    (also ``postgres://`` and ``postgresql+psycopg://``) opens PostgreSQL through psycopg 3.
    Every URL is parsed by ``sqlalchemy.engine.make_url``. A DuckDB file another process holds
    is retried for up to ``wait_seconds`` (DuckDB admits one writing process). With
    ``create=False`` a DuckDB file that does not exist is refused (NotFoundError) instead of
    created: commands that only read must not leave an empty database behind.
    """
    if not _SCHEMA_NAME.match(schema):
        raise UsageError(
            f"--schema {schema!r} is not a plain schema name: use letters, digits and '_' "
            "(at most 63 characters, not starting with a digit)"
        )
    resolved = resolve_url(url)
    if isinstance(resolved, str) and resolved.startswith("spark://"):
        from setanon_sql.backends.spark import SparkBackend

        return SparkBackend(resolved, schema, create)
    if isinstance(resolved, str) and resolved.startswith("sc://"):
        from setanon_sql.backends.spark_connect import SparkConnectBackend

        return SparkConnectBackend(resolved, schema, create)
    parsed = _parsed(resolved)
    driver = parsed.get_backend_name().lower()
    if driver == "duckdb":
        from setanon_sql.backends.duckdb import DuckDBBackend

        path = parsed.database or ":memory:"
        settings = _duckdb_settings(parsed)
        return retry_while_locked(lambda: DuckDBBackend(path, schema, settings, create),
                                  wait_seconds)
    if driver in ("postgresql", "postgres"):
        from setanon_sql.backends.postgres import PostgresBackend

        return PostgresBackend(parsed, schema)
    raise ConnectionFailedError(
        f"database URL scheme {parsed.drivername!r} is not supported: use duckdb:///FILE or "
        "postgresql://USER:PASSWORD@HOST:PORT/DB or spark://local[N]?warehouse=DIR"
    )


_LOCK_POLL_SECONDS = 0.25
T = TypeVar("T")


def retry_while_locked(open_it: Callable[[], T], wait_seconds: float) -> T:
    """``open_it()``, retried while the database is locked by another process, up to a deadline.

    The refusal after the deadline is the last one seen (it names the holder) and says how long
    it waited.
    """
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            return open_it()
        except DatabaseLockedError as error:
            if time.monotonic() >= deadline:
                if wait_seconds > 0:
                    raise DatabaseLockedError(f"{error} (waited {wait_seconds:g} s)",
                                              error.holder_pid) from None
                raise
        time.sleep(min(_LOCK_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
