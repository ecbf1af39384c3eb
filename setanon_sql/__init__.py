"""setanon_sql: anonymize set-valued and complex data inside DuckDB or PostgreSQL."""

from __future__ import annotations

__version__ = "0.1.0"
