"""DuckDB backend: an embedded file (or ``:memory:``), the default engine."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

import duckdb
from sqlglot import exp

from setanon_sql.backends.base import Backend, Params, Rows
from setanon_sql.errors import (
    ConnectionFailedError,
    InputError,
    PermissionDeniedError,
    SetanonError,
    UsageError,
)

MEMORY_ENV = "SETANON_DUCKDB_MEMORY_LIMIT"
_MEMORY_CAP = 2 * 1024 ** 3


def machine_defaults(path: str, settings: dict[str, str]) -> tuple[dict[str, str], str | None]:
    """``settings`` with ``memory_limit`` and ``temp_directory`` filled in from the machine.

    DuckDB's own default memory limit is 80% of physical memory: one record of 100,000 items
    took a run to 15-20 GB. Here the limit is ``SETANON_DUCKDB_MEMORY_LIMIT``, else half of
    physical memory capped at 2 GiB (a run then spills to disk rather than growing); a
    ``memory_limit`` in the database URL wins over both. The spill goes next to the database
    file (``<file>.tmp``, where ``setanon runs --cleanup`` looks), or for ``:memory:`` into a
    fresh temporary directory, returned so the backend removes it on close (DuckDB would put
    it in ``.tmp`` under the current directory). Returns (settings, directory to remove).
    """
    chosen = dict(settings)
    if "memory_limit" not in chosen:
        given = os.environ.get(MEMORY_ENV)
        if given:
            chosen["memory_limit"] = given
        else:
            try:
                memory = int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
            except (ValueError, OSError, AttributeError):
                memory = 0
            limit = min(memory // 2, _MEMORY_CAP) if memory > 0 else _MEMORY_CAP
            chosen["memory_limit"] = f"{limit // 1024 ** 2}MiB"
    owned = None
    if "temp_directory" not in chosen:
        if path in ("", ":memory:") or path.startswith(":memory:"):
            # Named, not created: DuckDB makes it only when it spills, so a failed connect
            # leaves nothing behind.
            owned = str(Path(tempfile.gettempdir())
                        / f"setanon-duckdb-{os.getpid()}-{uuid.uuid4().hex[:12]}")
            chosen["temp_directory"] = owned
        else:
            chosen["temp_directory"] = f"{path}.tmp"
    return chosen, owned


def _literal(value: str) -> str:
    return exp.Literal.string(value).sql(dialect="duckdb")


class DuckDBBackend(Backend):
    """DuckDB through its Python API; parameters bound as ``$name``."""

    name = "duckdb"
    dialect = "duckdb"

    def __init__(self, path: str, schema: str, settings: dict[str, str] | None = None) -> None:
        super().__init__(f"duckdb:///{path}", schema)
        self.path = path
        config, self._owned_temp = machine_defaults(path, dict(settings or {}))
        try:
            self._con = duckdb.connect(path, config=dict(config))
        except duckdb.IOException as error:
            if "lock" in str(error).lower():
                raise ConnectionFailedError(
                    f"the DuckDB file {path} is in use by another process (DuckDB allows one "
                    "writer); wait for that setanon run to finish or close the other program"
                ) from None
            raise ConnectionFailedError(f"cannot open the DuckDB file {path}: {error}") from None
        except (duckdb.ParserException, duckdb.InvalidInputException) as error:
            raise UsageError(f"a setting of the DuckDB URL is not valid: {error}") from None
        except duckdb.Error as error:
            raise ConnectionFailedError(f"cannot open the DuckDB file {path}: {error}") from None
        # A file named setanon.duckdb is a catalog named 'setanon': qualify fully to stay clear.
        self.catalog = str(self._con.execute("SELECT current_database()").fetchone()[0])

    def execute(self, sql: str, params: Params = None, fetch: bool = False) -> Rows:
        try:
            cursor = self._con.execute(sql, dict(params) if params else None)
            return cursor.fetchall() if fetch else []
        except duckdb.PermissionException as error:
            raise PermissionDeniedError(f"DuckDB refused: {error}") from None
        except duckdb.Error as error:
            raise SetanonError(f"DuckDB failed on a setanon statement: {error}") from error

    def _begin(self) -> None:
        self._con.begin()

    def _commit(self) -> None:
        self._con.commit()

    def _rollback(self) -> None:
        self._con.rollback()

    def _read_file(self, path: Path, sql: str, params: dict[str, Any]) -> None:
        """Run a statement that reads ``path``; a read error names the file."""
        try:
            self._con.execute(sql, params)
        except duckdb.Error as error:
            reason = str(error).strip().splitlines()[0]
            raise InputError(f"{path}: DuckDB could not read it: {reason}") from None

    def load_lines(self, path: Path, target: exp.Table) -> int:
        # read_text + string_split keeps exact line numbers (the CSV reader would count a stray
        # '\r' as a line break). A final newline does not start another record.
        self._read_file(
            path,
            f"CREATE TABLE {target.sql(dialect='duckdb')} AS "
            "WITH f AS (SELECT string_split(content, chr(10)) AS lines, "
            "  ends_with(content, chr(10)) AS has_final_newline FROM read_text($path)) "
            "SELECT CAST(pos AS BIGINT) AS pos, rtrim(lines[pos], chr(13)) AS line "
            "FROM f, LATERAL (SELECT unnest(generate_series(1, CAST(len(lines) AS BIGINT) "
            "  - CASE WHEN has_final_newline THEN 1 ELSE 0 END)) AS pos)",
            {"path": str(path)},
        )
        return int(self.execute(f"SELECT count(*) FROM {target.sql(dialect='duckdb')}",
                                fetch=True)[0][0])

    def load_delimited(
        self, path: Path, target: exp.Table, n_columns: int, delimiter: str, quoted: bool
    ) -> int:
        names = ", ".join(f"'c{i}': 'VARCHAR'" for i in range(1, n_columns + 1))
        quote = '"' if quoted else ""
        self._read_file(
            path,
            f"CREATE TABLE {target.sql(dialect='duckdb')} AS "
            "SELECT CAST(row_number() OVER () AS BIGINT) AS pos, * FROM read_csv($path, "
            f"columns={{{names}}}, header=true, auto_detect=false, delim=$delim, "
            "quote=$quote, escape=$quote, strict_mode=false, null_padding=true, "
            "parallel=false)",
            {"path": str(path), "delim": delimiter, "quote": quote},
        )
        return int(self.execute(f"SELECT count(*) FROM {target.sql(dialect='duckdb')}",
                                fetch=True)[0][0])

    def _copy_out(
        self, body: str, path: Path, delimiter: str, header: bool, quoted: bool, params: Params
    ) -> None:
        # COPY takes its options as literals; they are rendered by sqlglot, never formatted in.
        options = (
            f"FORMAT csv, DELIMITER {_literal(delimiter)}, "
            f"QUOTE {_literal(chr(34) if quoted else '')}, HEADER {'true' if header else 'false'}"
        )
        self.execute(f"COPY ({body}) TO {_literal(str(path))} ({options})", params)

    def row_locator(self) -> exp.Expression:
        return exp.column("rowid")

    def close(self) -> None:
        self._con.close()
        if self._owned_temp:
            shutil.rmtree(self._owned_temp, ignore_errors=True)
