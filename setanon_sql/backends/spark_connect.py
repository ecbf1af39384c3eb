"""Spark Connect: the same Spark backend, over the thin client, against a running cluster.

``sc://HOST:PORT`` (Spark Connect's own URL, with its ``/;token=...;use_ssl=true`` parameters)
opens a Connect session; setanon's tables live in the cluster's catalog (``spark_catalog``, the
server's warehouse), so the data never passes through the client except where a command must
move it: a file loaded is read here and sent (Arrow batches), a file exported is streamed back.

What differs from the embedded session (``spark.py``) is the JVM, which the client has not got:

- The client cannot see the cluster's file system: ``load`` reads the file on the client and
  uploads it; ``export`` streams the rows back (``toLocalIterator``) and writes the file here.
- The transaction journal is a table of setanon's schema (``setanon_transaction__journal``), not
  a file beside a warehouse the client cannot see; before an INSERT into a table that existed at
  BEGIN the table is copied (the embedded session notes its data files instead).
- A cluster has no Derby lock admitting one process: several clients may read at once. So a
  connecting client never repairs what it finds; the first write of a client (BEGIN, or a
  write outside a transaction) rolls back a transaction a dead client left, and finishes a
  ``t__next`` swap. One writing client per schema at a time (as the README says): two writers
  in one schema are not kept apart.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import socket
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sqlglot import exp

from setanon_sql.backends.base import Params, Statement, ragged_row_error
from setanon_sql.backends.spark import JOURNAL_TABLE, SparkBackend
from setanon_sql.backends.spark_dialect import DIALECT
from setanon_sql.errors import (
    ConnectionFailedError,
    DatabaseLockedError,
    InputError,
    UsageError,
    one_line,
)
from setanon_sql.sqlrender import TableBinding, identifier

DEFAULT_PORT = 15002  # Spark Connect's default port
# Rows per uploaded Arrow batch, and bytes: a gRPC message is at most 128 MiB by default.
_BATCH_ROWS = 100_000
_BATCH_BYTES = 32 << 20
_sessions: dict[str, Any] = {}
_SESSION_SETTINGS = {"spark.sql.ansi.enabled": "false", "spark.sql.session.timeZone": "UTC",
                     "spark.sql.sources.default": "parquet",
                     "spark.sql.legacy.createHiveTableByDefault": "false"}


def parse_connect_url(url: str) -> tuple[str, int]:
    """``sc://HOST[:PORT][/;key=value...]`` -> (host, port), refusing what cannot be reached."""
    address = url.split("/;", 1)[0]
    try:
        parts = urlsplit(address)
        port = parts.port or DEFAULT_PORT
    except ValueError:
        parts, port = None, 0
    if parts is None or not parts.hostname or parts.path not in ("", "/"):
        raise UsageError(
            f"Spark Connect URL {shown_connect_url(url)!r} cannot be parsed: write "
            "sc://HOST:PORT (e.g. sc://localhost:15002), with ;token=... or ;use_ssl=true "
            "after a '/' if the cluster needs them")
    return parts.hostname, port


def shown_connect_url(url: str) -> str:
    """The URL for messages: a ``token=`` parameter's value is hidden."""
    address, sep, rest = url.partition("/;")
    hidden = [f"{key}=***" if key.lower() == "token" else f"{key}{eq}{value}"
              for key, eq, value in (part.partition("=") for part in rest.split(";") if part)]
    return address + (sep + ";".join(hidden) if sep else "")


def _connect_session(url: str) -> Any:
    """The process's Connect session for ``url`` (one per URL, kept for the process)."""
    if url in _sessions:
        return _sessions[url]
    host, port = parse_connect_url(url)
    try:
        # Imported from the Connect package directly: pyspark.sql.SparkSession.builder.remote()
        # would mark the whole process as Connect-only and break an embedded session beside it.
        # Its import warns about pandas 3, which setanon does not use through it (it sends and
        # receives Arrow and rows only): not a message for setanon's users.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError as error:
        raise ConnectionFailedError(
            f"Spark Connect ({shown_connect_url(url)}) needs PySpark's Connect client: pip "
            f"install 'setanon_sql[spark]' ({one_line(error)})") from None
    # The client retries an unreachable server for minutes; a plain TCP check refuses at once.
    try:
        socket.create_connection((host, port), timeout=10).close()
    except OSError as error:
        raise ConnectionFailedError(
            f"cannot reach the Spark Connect server {shown_connect_url(url)} ({error}): start "
            "it (sbin/start-connect-server.sh of a Spark 4 distribution or of the pyspark "
            "package) or check HOST:PORT") from None
    session = ConnectSession.builder.remote(url).getOrCreate()
    # Session settings setanon's statements assume (the embedded session sets them at start);
    # the cluster's own shuffle settings stand unless the environment overrides them.
    settings = dict(_SESSION_SETTINGS)
    for key, variable in (("spark.sql.shuffle.partitions", "SETANON_SPARK_PARTITIONS"),
                          ("spark.sql.adaptive.enabled", "SETANON_SPARK_ADAPTIVE"),
                          ("spark.sql.codegen.wholeStage", "SETANON_SPARK_WHOLESTAGE")):
        if os.environ.get(variable):
            settings[key] = os.environ[variable]
    try:
        for key, value in settings.items():
            session.conf.set(key, value)
    except Exception as error:
        raise ConnectionFailedError(
            f"cannot use the Spark Connect server {shown_connect_url(url)}: "
            f"{one_line(error).split('JVM stacktrace')[0].strip()}") from None
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True
    _sessions[url] = session
    return session


def stop_sessions() -> None:
    """End this process's Connect sessions (before their server goes away: a test fixture)."""
    while _sessions:
        _url, session = _sessions.popitem()
        with contextlib.suppress(Exception):  # the server may already be gone
            session.stop()


class SparkConnectBackend(SparkBackend):
    """Spark SQL over Spark Connect (``sc://HOST:PORT``); tables in the cluster's catalog."""

    def _open(self, create: bool) -> Any:
        self.master, self.warehouse = "connect", Path()
        session = _connect_session(self.url)
        try:
            session.sql("SHOW DATABASES").collect()
        except Exception as error:
            raise ConnectionFailedError(
                f"cannot use the Spark Connect server {self.describe()}: "
                f"{one_line(error).split('JVM stacktrace')[0].strip()}") from None
        self._recovered = False
        return session

    def describe(self) -> str:
        return shown_connect_url(self.url)

    # ---- repair at the first write, never at connect -----------------------------------------
    def _recover(self) -> None:
        """Deferred: a reader must not roll back the transaction of a live writer."""

    def _recover_before_writing(self) -> None:
        if self._recovered:
            return
        owner = self._journal_owner()
        if owner is not None and owner.get("host") == socket.gethostname() and _alive(
                int(owner.get("pid", 0))) and owner.get("pid") != os.getpid():
            raise DatabaseLockedError(
                f"schema {self.schema} on {self.describe()} is being written by process "
                f"{owner['pid']} on this host: wait for it to finish", int(owner["pid"]))
        self._recovered = True  # before the repair, whose own writes must not come back here
        super()._recover()

    def run(
        self, statement: Statement, params: Params = None, tables: TableBinding | None = None
    ) -> None:
        if self._special(statement, tables) is not None:
            self._recover_before_writing()
        super().run(statement, params, tables)

    def _begin(self) -> None:
        self._recover_before_writing()
        super()._begin()

    # ---- the journal as a table ----------------------------------------------------------------
    def _journal_table(self) -> str:
        return self.table(JOURNAL_TABLE).sql(dialect=DIALECT)

    def _save_journal(self) -> None:
        # Appended, never rewritten: one INSERT is one commit of files, so a killed client leaves
        # the last whole journal (the highest seq).
        assert self._txn is not None
        self._txn["owner"] = {"host": socket.gethostname(), "pid": os.getpid()}
        self._txn["seq"] = int(self._txn.get("seq", 0)) + 1
        schema = identifier(self.schema).sql(dialect=DIALECT)
        self.execute(f"CREATE DATABASE IF NOT EXISTS {schema}")
        self.execute(f"CREATE TABLE IF NOT EXISTS {self._journal_table()} "
                     "(seq BIGINT, journal STRING) USING parquet")
        self.execute(f"INSERT INTO {self._journal_table()} SELECT :seq, :journal",
                     {"seq": self._txn["seq"], "journal": json.dumps(self._txn)})

    def _load_journal(self) -> dict[str, Any] | None:
        if not self._journal_exists():
            return None
        rows = self.execute(f"SELECT journal FROM {self._journal_table()} ORDER BY seq DESC "
                            "LIMIT 1", fetch=True)
        return json.loads(rows[0][0]) if rows else None

    def _journal_owner(self) -> dict[str, Any] | None:
        journal = self._load_journal()
        return None if journal is None else journal.get("owner")

    def _journal_exists(self) -> bool:
        if self.schema not in self._list_databases():
            return False
        rows = self.execute(f"SHOW TABLES IN {identifier(self.schema).sql(dialect=DIALECT)}",
                            fetch=True)
        return any(name == JOURNAL_TABLE for _db, name, _temporary in rows)

    def _clear_journal(self) -> None:
        self.execute(f"DROP TABLE IF EXISTS {self._journal_table()}")

    def _protect_insert(self, table: exp.Table) -> None:
        # The client cannot list the table's files: a copy undoes the INSERT instead.
        self._protect_copy(table)

    # ---- files: read and written on the client --------------------------------------------------
    def load_lines(self, path: Path, target: exp.Table) -> int:
        def rows() -> Iterator[tuple[int, str]]:
            with path.open("rb") as stream:
                for pos, raw in enumerate(stream, start=1):
                    line = raw[:-1] if raw.endswith(b"\n") else raw
                    line = line[:-1] if line.endswith(b"\r") else line
                    yield pos, line.decode("utf-8", errors="replace")

        return self._upload(path, target, ["line"], rows())

    def load_delimited(
        self, path: Path, target: exp.Table, n_columns: int, delimiter: str, quoted: bool
    ) -> int:
        def rows() -> Iterator[tuple[Any, ...]]:
            with path.open(encoding="utf-8", errors="replace", newline="") as stream:
                if quoted:
                    records: Iterator[list[str]] = csv.reader(stream, delimiter=delimiter,
                                                              quotechar='"', doublequote=True,
                                                              strict=False)
                else:
                    records = (line.rstrip("\r\n").split(delimiter) for line in stream)
                pos = 0
                for number, record in enumerate(records, start=1):
                    if number == 1 or record in ([], [""]):
                        continue  # the header; blank lines are skipped, as Spark's reader does
                    if len(record) != n_columns:
                        raise ragged_row_error(path, number, n_columns, str(len(record)))
                    pos += 1
                    yield (pos, *(value if value != "" else None for value in record))

        return self._upload(path, target, [f"c{i}" for i in range(1, n_columns + 1)], rows())

    def _upload(self, path: Path, target: exp.Table, columns: Sequence[str],
                rows: Iterator[tuple[Any, ...]]) -> int:
        """Create ``target(pos BIGINT, columns... STRING)`` and send ``rows`` in Arrow batches."""
        import pyarrow as pa  # type: ignore[import-untyped]

        name = target.sql(dialect=DIALECT)
        shape = ", ".join(["pos BIGINT", *(f"{identifier(c).sql(dialect=DIALECT)} STRING"
                                           for c in columns)])
        schema = pa.schema([("pos", pa.int64()), *((c, pa.string()) for c in columns)])
        self.execute(f"CREATE TABLE {name} ({shape}) USING parquet")
        count = 0
        try:
            batch: list[tuple[Any, ...]] = []
            size = 0
            for row in rows:
                batch.append(row)
                size += sum(len(v) for v in row[1:] if v is not None)
                if len(batch) >= _BATCH_ROWS or size >= _BATCH_BYTES:
                    count += self._send(batch, schema, name)
                    batch, size = [], 0
            if batch:
                count += self._send(batch, schema, name)
        except (InputError, OSError, UnicodeError):
            raise
        except Exception as error:
            raise self._database_error(error, f"uploading {path}") from None
        return count

    def _send(self, batch: list[tuple[Any, ...]], schema: Any, name: str) -> int:
        import pyarrow as pa

        columns = list(zip(*batch, strict=True))
        table = pa.Table.from_arrays([pa.array(values, type=field.type)
                                      for values, field in zip(columns, schema, strict=True)],
                                     schema=schema)
        self._spark.createDataFrame(table).write.insertInto(name)
        return len(batch)

    def _copy_out(
        self, body: str, path: Path, delimiter: str, header: bool, quoted: bool, params: Params
    ) -> None:
        """Each row is made one line in the cluster, then streamed here and written."""
        values = dict(params or {})
        values.update({"setanon_sep": delimiter, "setanon_quote": '"',
                       "setanon_quote2": '""'})
        try:
            columns = self._spark.sql(body, args=values or None).columns
            fields = []
            for column in columns:
                text = f"CAST(q.{identifier(column).sql(dialect=DIALECT)} AS STRING)"
                if not quoted:
                    fields.append(f"coalesce({text}, '')")
                    continue
                # As DuckDB writes CSV: quoted when it holds the delimiter, a quote or a line
                # end (quotes doubled); an empty string as "", NULL as an empty field.
                fields.append(
                    f"CASE WHEN {text} IS NULL THEN '' WHEN {text} = '' THEN :setanon_quote2 "
                    f"WHEN instr({text}, :setanon_sep) > 0 OR instr({text}, :setanon_quote) > 0"
                    f" OR instr({text}, '\\n') > 0 OR instr({text}, '\\r') > 0 THEN "
                    f"concat(:setanon_quote, replace({text}, :setanon_quote, :setanon_quote2),"
                    f" :setanon_quote) ELSE {text} END")
            lines = self._spark.sql(
                f"SELECT concat_ws(:setanon_sep, {', '.join(fields)}) AS line FROM ({body}) q",
                args=values)
            with path.open("w", encoding="utf-8", newline="") as out:
                if header:
                    out.write(delimiter.join(columns) + "\n")
                buffer = io.StringIO()
                for row in lines.toLocalIterator():
                    buffer.write(row[0])
                    buffer.write("\n")
                    if buffer.tell() > 1 << 20:
                        out.write(buffer.getvalue())
                        buffer = io.StringIO()
                out.write(buffer.getvalue())
        except KeyboardInterrupt:
            raise
        except OSError:
            raise
        except Exception as error:
            raise self._database_error(error, f"exporting to {path}") from None

    def exclusive(self) -> bool:
        return False  # other clients of the cluster may hold runs open


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
