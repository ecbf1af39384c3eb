"""DuckDB backend: an embedded file (or ``:memory:``), the default engine."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
from sqlglot import exp

from setanon_sql.backends.base import Backend, Params, Rows, hex_prefix, ragged_row_error
from setanon_sql.errors import (
    ConnectionFailedError,
    DatabaseError,
    DatabaseLockedError,
    InputError,
    NotFoundError,
    PermissionDeniedError,
    UsageError,
    one_line,
)
from setanon_sql.sqlrender import identifier, qualified_table

# DuckDB raises no SQLSTATE; its error classes map onto the standard classes, so a script sees
# the same kind of code from both backends.
_SQLSTATES: tuple[tuple[type[duckdb.Error], str], ...] = (
    (duckdb.ConstraintException, "23000"),
    (duckdb.PermissionException, "42501"),
    (duckdb.CatalogException, "42P01"),
    (duckdb.ParserException, "42601"),
    (duckdb.BinderException, "42703"),
    (duckdb.ConversionException, "22000"),
    (duckdb.OutOfRangeException, "22003"),
    (duckdb.OutOfMemoryException, "53200"),
    (duckdb.IOException, "58030"),
    (duckdb.TransactionException, "25000"),
)
_HOLDER_PID = re.compile(r"\(PID (\d+)\)")
# Open connections, so that a signal (seen by a watcher thread while the main thread waits in
# DuckDB's C++ code, where Python runs no signal handler) can interrupt their statements.
_OPEN: weakref.WeakSet[DuckDBBackend] = weakref.WeakSet()


# DuckDB's own default memory_limit is 80% of the machine's memory; setanon leaves more room for
# the rest of the machine (and its own process) and lets DuckDB spill beyond it.
MEMORY_SHARE = 0.5


# kanon on 100M claims: `rank`'s GROUP BY (cls, item_id) over 1.04e9 record-item rows failed
# inside a 12 GB memory_limit on a single 2.0 GiB allocation, while the same statement over
# 1.04e8 rows (10M claims) passed under 1.2 GB, and `picks` grouped 1e8 rows under 12 GB. So one
# grouping reads at most a tenth of the memory limit's bytes in rows, and never more than 2^27.
GROUPING_ROWS_PER_BYTE = 0.1
GROUPING_ROWS_CAP = 1 << 27
# The rho suppressor's short-lived tables are kept in memory while the largest of a stage take at
# most this share of memory_limit (the supports and rules beside them take as much again or
# more): 1.4 GB levels at a 10 GB limit gained 15%, 7.1 GB nothing, 12.7 GB lost 37%
# (DuckDBBackend.short_lived_storage).
SHORT_LIVED_IN_MEMORY_SHARE = 0.25
_SIZE = re.compile(r"([0-9.]+)\s*([KMGTP]i)?B(?:ytes)?", re.IGNORECASE)
_POWERS = {None: 0, "ki": 1, "mi": 2, "gi": 3, "ti": 4, "pi": 5}


def setting_bytes(text: str) -> int:
    """Bytes of a size as DuckDB prints a setting ('11.1 GiB', '488.2 KiB', '0 bytes')."""
    found = _SIZE.fullmatch(text.strip())
    if found is None:
        raise ValueError(f"not a DuckDB size: {text!r}")
    unit = found.group(2).lower() if found.group(2) else None
    return int(float(found.group(1)) * 1024 ** _POWERS[unit])


def physical_memory() -> int | None:
    """Bytes of physical memory (POSIX sysconf), or None where the platform does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def default_settings(path: str) -> dict[str, str]:
    """memory_limit from the machine (MEMORY_SHARE of it) and a temp_directory setanon knows:
    ``<file>.tmp`` beside a database file (what cleanup removes after a killed run), a fresh
    private directory for ``:memory:`` (removed on close). A URL's own settings win."""
    settings: dict[str, str] = {}
    memory = physical_memory()
    if memory:
        settings["memory_limit"] = f"{int(memory * MEMORY_SHARE) // (1 << 20)}MB"
    if path == ":memory:":
        settings["temp_directory"] = tempfile.mkdtemp(prefix="setanon-duckdb-spill-")
    else:
        settings["temp_directory"] = f"{path}.tmp"
    return settings


# DuckDB's CSV error for a row of another width: "CSV Error on Line: 3 ... Expected Number of
# Columns: 4 Found: 3" (one_line keeps both parts).
_RAGGED = re.compile(r"CSV Error on Line: (\d+).*?Expected Number of Columns: (\d+) Found: (\d+)",
                     re.DOTALL)


def _literal(value: str) -> str:
    return exp.Literal.string(value).sql(dialect="duckdb")


def interrupt_all() -> None:
    """Interrupt the running statement of every open DuckDB connection (thread-safe)."""
    for backend in list(_OPEN):
        backend.interrupt()


def _interrupted(error: BaseException) -> bool:
    """DuckDB reports Ctrl-C as InterruptException, or as RuntimeError('Query interrupted')."""
    return isinstance(error, duckdb.InterruptException) or (
        type(error) is RuntimeError and "interrupted" in str(error).lower())


def database_error(error: duckdb.Error, doing: str) -> DatabaseError:
    """A DuckDB error as one line with the SQLSTATE class it corresponds to."""
    sqlstate = next((state for kind, state in _SQLSTATES if isinstance(error, kind)), None)
    return DatabaseError(f"DuckDB failed on {doing}: {one_line(error)}", sqlstate)


def _run_note(path: str) -> Path:
    return Path(f"{path}.setanon-run")


def _holder(path: str, message: str) -> tuple[int | None, str]:
    """The PID DuckDB names as holding the file's lock, and what that process is (if we see it):
    its setanon run (from the note :meth:`DuckDBBackend.announce_run` left) or command line."""
    found = _HOLDER_PID.search(message)
    if found is None:
        return None, "another process"
    pid = int(found.group(1))
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace")
    except OSError:
        raw = ""
    command = " ".join(raw.replace("\0", " ").split())  # one line, whatever the arguments hold
    if len(command) > 120:
        command = command[:117] + "..."
    try:
        run_id, note_pid = _run_note(path).read_text().split()
    except (OSError, ValueError):
        run_id, note_pid = "", ""
    if note_pid == str(pid):
        kind = f"setanon run {run_id}: process"
    else:
        # The program or module it runs is setanon's (not merely a path that contains the word,
        # such as a virtualenv named setanon-...).
        words = raw.split("\0")
        runs_setanon = any(Path(w).name == "setanon" or w.startswith("setanon_sql")
                           or "from setanon_sql" in w for w in words[:3])
        kind = "setanon process" if runs_setanon else "process"
    return pid, f"another process: {kind} {pid}" + (f" ({command})" if command else "")


class DuckDBBackend(Backend):
    """DuckDB through its Python API; parameters bound as ``$name``."""

    name = "duckdb"
    dialect = "duckdb"
    # Own plan against left-deep (bench/bench_km_join_order.py) at 5 / 6 / 7 nodes: Retail's
    # published cut (88,162 records, 25 nodes) 1.27 / 2.47, 7.24 / 5.70, 14.60 / 11.52 s; 100,000
    # CDR-like users (15 nodes) 0.18 / 0.23, 0.39 / 0.44, 0.60 / 0.55 s (11: 19.0 / 0.8 s);
    # BMS-WebView-2 (28 nodes) 0.10 / 0.12, 0.22 / 0.23 s.
    left_deep_from = 6

    def __init__(self, path: str, schema: str, settings: dict[str, str] | None = None,
                 create: bool = True) -> None:
        super().__init__(f"duckdb:///{path}", schema)
        self.path = path
        # DuckDB creates a missing file on connect; only the commands that make data may, and a
        # file they made is removed again if they fail (see discard_created).
        self.created = path != ":memory:" and not Path(path).exists()
        if self.created and not create:
            raise NotFoundError(
                f"the DuckDB file {path} does not exist: load a dataset first ('setanon load "
                "transactions FILE --name NAME'), or point --db or $SETANON_DB at an existing "
                "database")
        defaults = default_settings(path)
        self._own_spill = defaults["temp_directory"] if path == ":memory:" else None
        self.settings = {**defaults, **(settings or {})}
        try:
            self._con = self._connect()
        except BaseException:
            # the private spill directory of a :memory: database that never opened
            if self._own_spill is not None:
                shutil.rmtree(self._own_spill, ignore_errors=True)
            raise
        # DuckDB draws a progress bar on stdout for long statements (a session setting, not
        # one of connect's): setanon prints its own output.
        self._con.execute("SET enable_progress_bar = false")
        # A file named setanon.duckdb is a catalog named 'setanon': qualify fully to stay clear.
        (self.catalog,) = self._con.execute("SELECT current_database()").fetchone() or ("",)
        # True while a statement runs in DuckDB: only then may a signal interrupt it (an
        # interrupt meant for a statement that just ended must not hit the next one, e.g. the
        # run's own 'interrupted' bookkeeping).
        self._busy = False
        self._noted = False
        _OPEN.add(self)
        if self._own_spill is not None:
            # A backend opened through the API and never closed: its private spill directory
            # goes when the object does, or at the latest when the interpreter exits.
            weakref.finalize(self, shutil.rmtree, self._own_spill, ignore_errors=True)

    @contextmanager
    def left_deep_joins(self) -> Iterator[None]:
        """DuckDB's join-order optimizer off in the block. On a deep enumeration it pairs
        partial chains (a bushy plan) and probes every pair of them per record before the
        node order filters them: the 11-itemsets of 100,000 CDR-like users (122,551 of them)
        took 19.0 s that way and 0.8 s in the written order, the 9-itemsets 1.9 s against
        0.9 s. (Below ``left_deep_from`` nodes its own order is as fast or faster.)"""
        previous = self.execute("SELECT current_setting('disabled_optimizers')",
                                fetch=True)[0][0]
        disabled = [name for name in str(previous or "").split(",") if name.strip()]
        self.execute("SET disabled_optimizers = " + _literal(
            ",".join([*disabled, "join_order"])))
        try:
            yield
        finally:
            self.execute("SET disabled_optimizers = " + _literal(",".join(disabled)))

    @contextmanager
    def short_lived_storage(self, target: exp.Table, largest_bytes: int
                            ) -> Iterator[tuple[exp.Table, list[exp.Expr]]]:
        """A short-lived working table (:meth:`.Backend.short_lived_tables`) is never
        compressed: the rho suppressor's tables are read within a round or two and dropped,
        so compressing them is work lost. Where the block's largest tables take at most
        SHORT_LIVED_IN_MEMORY_SHARE of memory_limit, it is a temporary table of this
        connection under ``target``'s name, kept in memory and never written to the file;
        above that, it is the file's, stored uncompressed (``force_compression``, reset after
        the statement, also when it fails).

        Measured (BENCHMARKS.md, prho and rho): as temporary tables, 200k Quest records,
        personalized prho ``--m 3`` at ``memory_limit=10GB`` (levels of 1.4 GB), 142.8 ->
        121.7 s with 19 GB -> 1 GB written to disk; whole BMS-WebView-1 and Retail, rho Mine
        ``--m 3``, 60.3 -> 52.1 s and 68.1 -> 64.5 s. But at 1M records (levels of 7.1 and
        12.7 GB) every table in memory spilled up to 42 GB and stage 3 took 642.8 s against
        470-494 s in the file. In the file, uncompressed against DuckDB's compression: 1M
        records 996.4 -> 911-944 s; copying 20M rows of 14 integer columns took 3.6 s
        compressed, 2.1 s uncompressed. The price is disk: the 1M run's file peaked at 39.6 GB.

        The temporary tables' names are the run's (unique in setanon's schema), so the one
        ``temp`` schema holds them all; they go with the connection at the latest.
        """
        if largest_bytes <= self._memory_limit() * SHORT_LIVED_IN_MEMORY_SHARE:
            temporary = qualified_table("main", target.name)
            temporary.set("catalog", identifier("temp"))
            yield temporary, [exp.TemporaryProperty()]
            return
        self.execute("SET force_compression = " + _literal("uncompressed"))
        try:
            yield target, []
        finally:
            self.execute("RESET force_compression")

    @contextmanager
    def _statement(self) -> Iterator[None]:
        self._busy = True
        try:
            yield
        finally:
            self._busy = False

    def execute(self, sql: str, params: Params = None, fetch: bool = False) -> Rows:
        try:
            with self._statement():
                cursor = self._con.execute(sql, dict(params) if params else None)
                return cursor.fetchall() if fetch else []
        except duckdb.PermissionException as error:
            raise PermissionDeniedError(f"DuckDB refused: {one_line(error)}") from None
        except (duckdb.Error, RuntimeError) as error:
            raise self._wrapped(error, "a setanon statement") from None

    def _wrapped(self, error: BaseException, doing: str) -> BaseException:
        """What a driver error becomes: KeyboardInterrupt for Ctrl-C, else a DatabaseError."""
        if _interrupted(error):
            return KeyboardInterrupt()
        if isinstance(error, duckdb.Error):
            return database_error(error, doing)
        return error

    def _call(self, doing: str, statement: str) -> None:
        try:
            with self._statement():
                self._con.execute(statement)
        except (duckdb.Error, RuntimeError) as error:
            raise self._wrapped(error, doing) from None

    def _begin(self) -> None:
        self._call("starting a transaction", "BEGIN TRANSACTION")

    def _commit(self) -> None:
        self._call("committing", "COMMIT")

    def _rollback(self) -> None:
        self._call("rolling back", "ROLLBACK")

    def interrupt(self) -> None:
        """Stop the statement running on this connection, if one runs (from a watcher thread)."""
        if self._busy:
            self._con.interrupt()

    def exclusive(self) -> bool:
        return True

    def announce_run(self, run_id: int) -> None:
        if self.path == ":memory:":
            return
        try:
            _run_note(self.path).write_text(f"{run_id} {os.getpid()}\n")
            self._noted = True
        except OSError:
            pass  # only a message depends on it

    def remove_spill(self) -> list[Path]:
        """Remove what a dead process left in this file's spill directory ``<file>.tmp``.

        Only the per-file default directory: a temp_directory the user shares between files
        may hold another live process's files. Files this connection uses are kept.
        """
        if self.path == ":memory:":
            return []
        removed = self._remove_stale_run_note()
        directory = Path(f"{self.path}.tmp")
        if not directory.is_dir():
            return removed
        in_use = {Path(p).name for (p, _size) in self.execute(
            "SELECT path, size FROM duckdb_temporary_files()", fetch=True)}
        for entry in directory.iterdir():
            if entry.name in in_use or entry.name.startswith(f"duckdb_temp_{os.getpid()}_"):
                continue
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed.append(entry)
        if not any(directory.iterdir()):
            directory.rmdir()
        return removed

    def _remove_stale_run_note(self) -> list[Path]:
        """Remove the run note a dead process left: this connection holds the file's lock, so a
        note naming another process speaks of one that no longer has the file open."""
        note = _run_note(self.path)
        try:
            noted_pid = note.read_text().split()[1]
        except (OSError, IndexError):
            return []
        if noted_pid == str(os.getpid()):
            return []
        note.unlink(missing_ok=True)
        return [note]

    def _read_file(self, path: Path, n_columns: int | None, sql: str,
                   params: dict[str, Any]) -> None:
        """Run a statement that reads ``path``; a read error names the file (and, for a table
        of ``n_columns`` columns, the line of a row of another width)."""
        try:
            with self._statement():
                self._con.execute(sql, params)
        except (duckdb.Error, RuntimeError) as error:
            if _interrupted(error) or not isinstance(error, duckdb.Error):
                raise self._wrapped(error, f"reading {path}") from None
            ragged = _RAGGED.search(str(error))
            if n_columns is not None and ragged is not None:
                raise ragged_row_error(path, int(ragged.group(1)), n_columns,
                                       ragged.group(3)) from None
            raise InputError(f"{path}: DuckDB could not read it: {one_line(error)}") from None

    def load_lines(self, path: Path, target: exp.Table) -> int:
        # read_text + string_split keeps exact line numbers (the CSV reader would count a stray
        # '\r' as a line break). A final newline does not start another record.
        self._read_file(
            path, None,
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
        # strict_mode and no null_padding: a row with a field missing or one too many is an
        # error naming its line (padding would shift its values into the wrong columns).
        self._read_file(
            path, n_columns,
            f"CREATE TABLE {target.sql(dialect='duckdb')} AS "
            "SELECT CAST(row_number() OVER () AS BIGINT) AS pos, * FROM read_csv($path, "
            f"columns={{{names}}}, header=true, auto_detect=false, delim=$delim, "
            "quote=$quote, escape=$quote, strict_mode=true, null_padding=false, "
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

    def rows_per_grouping(self) -> int:
        """DuckDB spills a large GROUP BY, but not every allocation of one (GROUPING_ROWS_*)."""
        return max(1, min(int(self._memory_limit() * GROUPING_ROWS_PER_BYTE),
                          GROUPING_ROWS_CAP))

    def _memory_limit(self) -> int:
        """This connection's memory_limit in bytes."""
        return setting_bytes(self.execute("SELECT current_setting('memory_limit')",
                                          fetch=True)[0][0])

    def row_locator(self) -> exp.Expr:
        return exp.column("rowid")

    def hex_prefix_value(self, digest: exp.Expr) -> exp.Expr:
        # CAST('0x' || 8 hex digits AS BIGINT): DuckDB reads a 0x string as hexadecimal. One
        # cast instead of the portable 16 text functions a row: 280 against 510 ns a number
        # (2 M md5s, one thread, md5 itself 230 ns), in every draw of the samplers.
        return exp.cast(exp.DPipe(this=exp.Literal.string("0x"), expression=hex_prefix(digest)),
                        "BIGINT")

    def discard_created(self) -> None:
        """Remove the file (and its write-ahead log and spill directory) that opening this
        connection created, after the command that needed it failed: a failed first ``load``
        leaves no empty database behind. Call after :meth:`close`."""
        if not self.created:
            return
        for leftover in (Path(self.path), Path(f"{self.path}.wal")):
            leftover.unlink(missing_ok=True)
        shutil.rmtree(f"{self.path}.tmp", ignore_errors=True)

    def _connect(self) -> duckdb.DuckDBPyConnection:
        """duckdb.connect with this backend's settings; its errors as setanon's, naming the file."""
        path = self.path
        try:
            return duckdb.connect(path, config=dict(self.settings))
        except duckdb.IOException as error:
            if "lock" in str(error).lower():
                pid, holder = _holder(path, str(error))
                raise DatabaseLockedError(
                    f"the DuckDB file {path} is in use by {holder}; DuckDB allows one writer: "
                    "wait for it to finish (--wait SECONDS waits for it) or close the other "
                    "program", pid) from None
            raise ConnectionFailedError(
                f"cannot open the DuckDB file {path}: {one_line(error)}") from None
        except (duckdb.ParserException, duckdb.InvalidInputException) as error:
            raise UsageError(f"a setting of the DuckDB URL is not valid: {error}") from None
        except duckdb.Error as error:
            raise ConnectionFailedError(f"cannot open the DuckDB file {path}: {error}") from None

    def close(self) -> None:
        _OPEN.discard(self)
        self._con.close()
        if self._own_spill is not None:
            shutil.rmtree(self._own_spill, ignore_errors=True)
        if self._noted:
            _run_note(self.path).unlink(missing_ok=True)
