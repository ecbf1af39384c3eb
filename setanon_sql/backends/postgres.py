"""PostgreSQL backend through psycopg 3; bulk paths are COPY FROM/TO STDIN/STDOUT."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, NamedTuple

from sqlalchemy.engine import URL
from sqlglot import exp

from setanon_sql.backends.base import Backend, Params, Rows, hex_prefix, ragged_row_error
from setanon_sql.errors import (
    ConnectionFailedError,
    DatabaseError,
    InputError,
    PermissionDeniedError,
    SetanonError,
    UsageError,
    one_line,
)

_COPY_CHUNK = 1 << 20
# COPY's refusals of a row of another width, and where its CONTEXT names the line.
_RAGGED = ("missing data for column", "extra data after last expected column")
_COPY_LINE = re.compile(r"\bline (\d+)")
# COPY's csv options need one-byte characters; these control bytes stand in for "no quoting".
_NO_QUOTE = "\x01"
_NO_DELIMITER = "\x02"
# Session settings a PostgreSQL URL may carry (``postgresql://.../db?work_mem=256MB``), set for
# setanon's own connection only (SET), never for the server or other sessions; each with the
# value setanon's session takes where nobody configured it (pg_settings.source is 'default': not
# the server's file, ALTER ROLE or DATABASE, nor the URL's options), and how to write one.
# work_mem: the memory one sort or hash of a statement may use before it spills to disk.
# PostgreSQL's built-in 4MB made the kanon steps' joins and groupings over a million records
# write and reread temporary files (BENCHMARKS.md, kanon).
# jit: compiling a statement's expressions to machine code. setanon's statements are one-off
# analytic queries over fresh tables, so the compile is paid on every statement and rarely won
# back: rho on 25k BMS-WebView-2 records at --m 3 took 353 s with JIT, 320 s without; kanon on
# 200k claims 62.3 / 55.0 s with, 53.4 / 54.7 s without (BENCHMARKS.md, rho on PostgreSQL).
# synchronous_commit: whether a COMMIT waits for its write-ahead log to reach the disk. A run
# commits each of its statements on its own (thousands: every working table's CREATE, ANALYZE
# and DROP), and on a server that syncs its log (PostgreSQL's defaults) each waited for a flush
# (3.4 ms a fdatasync on this project's benchmark machine). Off, a server crash can lose
# the last fraction of a second of commits, never a part of one, and the database stays
# consistent: what is lost is a run's working tables or bookkeeping, as a kill a moment
# earlier would have lost them. setanon's explicit transactions (loads, the tables a run
# publishes, a change in place and its undo, migrations) commit durably all the same
# (``SET LOCAL synchronous_commit = on``, :meth:`PostgresBackend._begin`).
class SessionSetting(NamedTuple):
    """setanon's value for a session setting nobody configured, and how to write one."""

    default: str
    how_to_write: str


SESSION_SETTINGS = {"work_mem": SessionSetting("256MB", "a size such as work_mem=256MB"),
                    "jit": SessionSetting("off", "jit=off or jit=on"),
                    "synchronous_commit": SessionSetting(
                        "off", "synchronous_commit=off or synchronous_commit=on")}
POSTGRES_SETTINGS = tuple(SESSION_SETTINGS)


def _literal(value: str) -> str:
    return exp.Literal.string(value).sql(dialect="postgres")


def connect_args(url: URL) -> dict[str, Any]:
    """psycopg's keyword arguments for a parsed URL: the password passes as it is decoded.

    Never a conninfo string built by hand: a password holding '@', ':' or '/' (percent-encoded
    in the URL) arrives intact. Query parameters (sslmode=..., host=/socket/dir) pass through.
    """
    args: dict[str, Any] = {key: value[-1] if isinstance(value, tuple) else value
                            for key, value in url.query.items()
                            if key not in POSTGRES_SETTINGS}
    for key, value in (("host", url.host), ("port", url.port), ("user", url.username),
                       ("password", url.password), ("dbname", url.database)):
        if value not in (None, ""):
            args[key] = value
    return args


class PostgresBackend(Backend):
    """PostgreSQL; parameters bound by psycopg as ``%(name)s``."""

    name = "postgres"
    dialect = "postgres"
    # Default join_collapse_limit against 1 (bench/bench_km_join_order.py) at 4 / 5 / 6 / 7
    # nodes: Retail's published cut 2.84 / 2.86, 9.12 / 5.45, 17.90 / 11.40, 54.62 / 22.26 s;
    # 100,000 CDR-like users 0.58 / 0.56, 1.19 / 0.94, 2.30 / 1.54, 5.04 / 2.12 s (11: 10.57 /
    # 3.47 s); BMS-WebView-2 0.35 / 0.33, 0.75 / 0.59, 1.51 / 0.99 s.
    left_deep_from = 5
    # Split (True) against one join per position (False), Retail, Mine, --trim-above 4, the
    # tests' local server, auto_explain on, 3 December 2026: the run 266.2 / 201.9 s, its count
    # from scratch 47.3 / 27.2 s, its own check's count 39.3 / 21.7 s, the same output. Split,
    # PostgreSQL hashed the 10.2M itemsets held by one record and left the sensitive-item
    # filter until after the join (4.1M rows down to 265); in one join it filtered X by the
    # sensitive items first (11.1M rows down to 10,081) and probed q's hash with them.
    split_rules_by_holders = False
    # Whether BEGIN makes its transaction's commit synchronous again (_apply_settings).
    _durable_transactions = False

    def __init__(self, url: URL, schema: str) -> None:
        self._url = url.set(drivername="postgresql")
        super().__init__(self._url.render_as_string(hide_password=True), schema)
        import psycopg

        self._psycopg = psycopg
        self._connect()

    def _connect(self) -> None:
        """Open the session: autocommit, setanon's settings and the URL's."""
        psycopg = self._psycopg
        try:
            con = psycopg.connect(**{"connect_timeout": 10, **connect_args(self._url),
                                     "autocommit": True})
        except psycopg.Error as error:
            raise ConnectionFailedError(
                f"cannot connect to {self.describe()}: {self._scrubbed(one_line(error))}; check "
                "the URL (--db or SETANON_DB) and that the server is running"
            ) from None
        self._con = con
        if con.info.server_version >= 140000:
            # A killed setanon process must not leave its statement running for minutes (and
            # its dataset lock held): the server polls the socket and cancels once we are gone.
            con.execute("SET client_connection_check_interval = '2s'")
        self._apply_settings({key: value[-1] if isinstance(value, tuple) else value
                              for key, value in self._url.query.items()
                              if key in POSTGRES_SETTINGS})

    @contextmanager
    def _idle_after_interrupt(self) -> Iterator[None]:
        """Leave the session able to take the next statement when Ctrl-C or SIGTERM ends one.

        psycopg cancels a statement interrupted while it waits on the server, but not one
        interrupted inside its own send or fetch code: the exception then ends psycopg's
        generator with the results unread, and the run's own bookkeeping after the interrupt
        (mark the run interrupted, drop its tables) failed with "another command is already in
        progress" (CI, stop 45; reproduced by firing SIGINT at random moments). So: cancel,
        drain what the server still sends, and if the session cannot be brought back to idle
        within seconds, close it and open a new one (the dataset's advisory lock goes with the
        old session; the run is ending and drops only its own tables).
        """
        try:
            yield
        except (KeyboardInterrupt, SystemExit):
            self._settle()
            raise

    def _settle(self) -> None:
        """Bring the session back to idle after an interrupt (see _idle_after_interrupt);
        never raises: the interrupt is what the caller must see."""
        from psycopg import generators, pq

        con = self._con
        pgconn = con.pgconn
        active = pq.TransactionStatus.ACTIVE
        if pgconn.status == pq.ConnStatus.OK and pgconn.transaction_status != active:
            return
        with suppress(Exception):
            if pgconn.status == pq.ConnStatus.OK:
                con.cancel_safe(timeout=5.0)
                con.wait(generators.send(pgconn), timeout=5.0)
                for _ in range(8):  # the statement's results and the cancel's error, then none
                    if not con.wait(generators.fetch_many(pgconn), timeout=5.0):
                        break
        if pgconn.status == pq.ConnStatus.OK and pgconn.transaction_status != active:
            return
        with suppress(Exception):
            con.close()
        with suppress(SetanonError):  # no server to reopen on: the next statement will say so
            self._connect()

    def _apply_settings(self, settings: dict[str, str]) -> None:
        """SET the URL's session settings, and the defaults of those nobody configured."""
        unset = [name for name in SESSION_SETTINGS if name not in settings]
        if unset:
            rows = self.execute("SELECT name FROM pg_settings WHERE name = ANY(%(names)s) "
                                "AND source = 'default'", {"names": unset}, fetch=True)
            settings = {**{name: SESSION_SETTINGS[name].default for (name,) in rows},
                        **settings}
        # Where setanon's default made commits asynchronous (nobody set it, and now it is
        # among the settings), its explicit transactions still commit durably (_begin); a
        # URL's choice holds for every commit.
        self._durable_transactions = ("synchronous_commit" in unset
                                      and "synchronous_commit" in settings)
        for key, value in settings.items():
            try:
                self._con.execute("SELECT set_config(%s, %s, false)", (key, value))
            except self._psycopg.Error as error:
                self.close()
                raise UsageError(
                    f"database URL setting {key}={value!r} is not valid for PostgreSQL "
                    f"({self._scrubbed(one_line(error))}); "
                    f"write {SESSION_SETTINGS[key].how_to_write}"
                ) from None

    def describe(self) -> str:
        return self._url.render_as_string(hide_password=True)

    def _scrubbed(self, message: str) -> str:
        """``message`` without the password, should a driver ever echo it."""
        password = self._url.password
        return message.replace(str(password), "***") if password else message

    def _database_error(self, error: Exception, doing: str) -> DatabaseError:
        # Ctrl-C needs nothing here: psycopg cancels the statement and re-raises the
        # KeyboardInterrupt itself.
        sqlstate = getattr(error, "sqlstate", None)
        if sqlstate is None and isinstance(error, self._psycopg.OperationalError):
            sqlstate = "08006"  # the connection broke: no server answered with a state
        return DatabaseError(f"PostgreSQL failed on {doing}: {self._scrubbed(one_line(error))}",
                             sqlstate)

    def _call(self, doing: str, statement: str) -> None:
        try:
            with self._idle_after_interrupt():
                self._con.execute(statement)
        except self._psycopg.Error as error:
            raise self._database_error(error, doing) from None

    def execute(self, sql: str, params: Params = None, fetch: bool = False) -> Rows:
        if params:
            # psycopg reads '%' as the start of a placeholder once parameters are passed.
            sql = sql.replace("%", "%%")
            for key in params:
                sql = sql.replace(f"%%({key})s", f"%({key})s")
        try:
            with self._idle_after_interrupt(), self._con.cursor() as cursor:
                cursor.execute(sql, dict(params) if params else None)
                return cursor.fetchall() if fetch else []
        except self._psycopg.errors.InsufficientPrivilege as error:
            raise PermissionDeniedError(
                f"PostgreSQL refused ({error.diag.message_primary}); grant the role the "
                "privilege or choose another schema with --schema"
            ) from None
        except self._psycopg.Error as error:
            raise self._database_error(error, "a setanon statement") from None

    def _begin(self) -> None:
        """BEGIN; where setanon made the session's commits asynchronous (SESSION_SETTINGS),
        this transaction's commit waits for its log to reach the disk: what a transaction
        writes (a load, a published table, a change in place) is durable once it returns."""
        self._call("starting a transaction", "BEGIN")
        if self._durable_transactions:
            self._call("starting a transaction", "SET LOCAL synchronous_commit = on")

    def _commit(self) -> None:
        self._call("committing", "COMMIT")

    def _rollback(self) -> None:
        self._call("rolling back", "ROLLBACK")

    def _copy_in(self, copy_sql: str, path: Path, text_format: bool = False,
                 n_columns: int | None = None) -> None:
        """Stream ``path`` into COPY FROM STDIN in 1 MiB chunks.

        For the text format, backslashes are escaped and CR LF line ends become LF, so every
        line arrives verbatim whatever bytes it holds.
        """
        pending = b""
        try:
            with (self._idle_after_interrupt(), self._con.cursor() as cursor,
                  cursor.copy(copy_sql) as copy, path.open("rb") as f):
                while chunk := f.read(_COPY_CHUNK):
                    if text_format:
                        chunk = pending + chunk
                        pending = b"\r" if chunk.endswith(b"\r") else b""
                        chunk = chunk[: len(chunk) - len(pending)]
                        chunk = (chunk.replace(b"\\", b"\\\\").replace(b"\r\n", b"\n")
                                 .replace(b"\r", b"\\r"))
                    copy.write(chunk)
        except self._psycopg.Error as error:
            diag = error.diag
            line = _COPY_LINE.search(diag.context or "")
            message = diag.message_primary or ""
            if n_columns is not None and line is not None and message.startswith(_RAGGED):
                found = "fewer" if message.startswith(_RAGGED[0]) else "more than that"
                raise ragged_row_error(path, int(line.group(1)), n_columns, found) from None
            where = f" ({diag.context.strip()})" if diag.context else ""
            raise InputError(f"{path}: PostgreSQL could not read it: "
                             f"{diag.message_primary or error}{where}") from None

    def load_lines(self, path: Path, target: exp.Table) -> int:
        name = target.sql(dialect="postgres")
        self.execute(
            f"CREATE TABLE {name} (pos BIGINT GENERATED ALWAYS AS IDENTITY, line TEXT)"
        )
        # Text format with a delimiter byte that cannot occur: one line, one value.
        self._copy_in(
            f"COPY {name} (line) FROM STDIN WITH (FORMAT text, "
            f"DELIMITER {_literal(_NO_DELIMITER)})",
            path, text_format=True,
        )
        return int(self.execute(f"SELECT count(*) FROM {name}", fetch=True)[0][0])

    def load_delimited(
        self, path: Path, target: exp.Table, n_columns: int, delimiter: str, quoted: bool
    ) -> int:
        name = target.sql(dialect="postgres")
        columns = ", ".join(f"c{i} TEXT" for i in range(1, n_columns + 1))
        self.execute(f"CREATE TABLE {name} (pos BIGINT GENERATED ALWAYS AS IDENTITY, {columns})")
        quote = '"' if quoted else _NO_QUOTE
        self._copy_in(
            f"COPY {name} ({', '.join(f'c{i}' for i in range(1, n_columns + 1))}) FROM STDIN "
            f"WITH (FORMAT csv, HEADER true, DELIMITER {_literal(delimiter)}, "
            f"QUOTE {_literal(quote)})",
            path, n_columns=n_columns,
        )
        return int(self.execute(f"SELECT count(*) FROM {name}", fetch=True)[0][0])

    def _copy_out(
        self, body: str, path: Path, delimiter: str, header: bool, quoted: bool, params: Params
    ) -> None:
        quote = '"' if quoted else _NO_QUOTE
        copy_sql = (
            f"COPY ({body}) TO STDOUT WITH (FORMAT csv, DELIMITER {_literal(delimiter)}, "
            f"QUOTE {_literal(quote)}, HEADER {'true' if header else 'false'})"
        )
        with (path.open("wb") as out, self._idle_after_interrupt(),
              self._con.cursor() as cursor):
            try:
                with cursor.copy(copy_sql, dict(params) if params else None) as copy:
                    for chunk in copy:
                        out.write(chunk)
            except self._psycopg.Error as error:
                raise self._database_error(error, f"exporting to {path}") from None

    def binary_sort_key(self, value: exp.Expr) -> exp.Expr:
        return exp.Collate(this=value, expression=exp.Identifier(this="C", quoted=True))

    def hex_prefix_value(self, digest: exp.Expr) -> exp.Expr:
        # ('x' || 8 hex digits)::bit(32)::bigint: one cast instead of 16 text functions per row
        # (57 s against 8 s for the md5s themselves on 5M rows, measured).
        bits = exp.cast(exp.DPipe(this=exp.Literal.string("x"), expression=hex_prefix(digest)),
                        exp.DataType.build("BIT(32)", dialect="postgres"))
        return exp.cast(bits, "BIGINT")

    def create_access_index(self, table: exp.Table, columns: Sequence[str]) -> None:
        index_name = f"{table.name}_{'_'.join(columns)}_idx"[:63]
        cols = ", ".join(exp.to_identifier(c, quoted=True).sql("postgres") for c in columns)
        # Timed like every statement of a step (Backend.statement_log): profiles must show it.
        self._timed(
            f"CREATE INDEX {exp.to_identifier(index_name, quoted=True).sql('postgres')} "
            f"ON {table.sql(dialect='postgres')} ({cols})", None, fetch=False
        )

    def working_table_properties(self) -> list[exp.Expr]:
        # No write-ahead log for a table the run drops itself: building the kanon steps' tables
        # (10M rows each at 1M records) wrote every row twice, to the table and to the WAL.
        # No autovacuum either: materialize analyzes each table as soon as it is built, and
        # autovacuum's own pass over a table of millions of fresh rows took a core beside the
        # run (rho's rounds on whole BMS-WebView-2: one VACUUM after every table it builds).
        no_autovacuum = exp.Property(this=exp.var("autovacuum_enabled"),
                                     value=exp.Boolean(this=False))
        return [exp.UnloggedProperty(), no_autovacuum]

    @contextmanager
    def whole_table_joins(self) -> Iterator[None]:
        """No merge joins while a kanon or rho run plans its steps; the setting before is
        restored.

        EXPLAIN ANALYZE (kanon QI6, 200k claims): PostgreSQL estimated the join of the
        record-item rows with the class rankings on (cls, item_id) 15-40x too low (it multiplies
        the selectivities of the two keys, while a class's ranking holds the very items its
        records share; extended statistics do not reach join estimates), so it chose a merge
        join that sorted all record-item rows in every parallel worker. The working tables have
        no index a merge join could walk, and with work_mem 256MB the rankings' hash fits.
        """
        with self._planner_setting("enable_mergejoin", "off"):
            yield

    @contextmanager
    def hash_joins_only(self) -> Iterator[None]:
        """No nested loops (``enable_nestloop`` off) in the block; the setting before is
        restored.

        rho's rule upkeep after a large delta (no index on the supports or the delta): for
        NOT EXISTS of a rule's qid in a 348k-row delta PostgreSQL estimated that 1 of 82k rules
        was left (most were), and joined the delta to that "one" rule by a nested loop with a
        scan of the delta per rule: a statement that hashes in well under a second ran for over
        5 minutes (round 20 of whole BMS-WebView-1 at ``--m 3``).
        """
        with self._planner_setting("enable_nestloop", "off"):
            yield

    @contextmanager
    def joins_as_written(self) -> Iterator[None]:
        """``join_collapse_limit`` = 1 in the block (EXISTS becomes a semi-join in its place).

        prho's records holding Q (grocery-sized file, ℓ = 5): without statistics for the
        pivoted items of Q, PostgreSQL joined Q's second item with all of its records before the
        rarest one, 1.6M rows and 0.66 s per statement; in the written order 0.42 s.
        """
        with self._planner_setting("join_collapse_limit", "1"):
            yield

    def fenced(self, query: exp.Select) -> exp.Select:
        """``OFFSET 0``: PostgreSQL pulls a plain subquery up into the query above and puts
        its expressions wherever their columns are used, so in a chain where step k tests
        steps 1..k-1, step 1 is computed about 2^k times. Floyd's positions of 7 items, 942,448
        proposals of 100,000 CDR-like users: 10.0 s for one statement, its md5s dominating.
        OFFSET keeps the subquery a node of its own (the PostgreSQL documentation's
        optimization fence); zero rows skipped changes no row."""
        return query.offset(0, copy=False)

    @contextmanager
    def left_deep_joins(self) -> Iterator[None]:
        """``join_collapse_limit`` = 1 in the block: the planner keeps the written chain of
        the enumeration's self-joins. Left to itself it reorders them into a plan that pairs
        partial chains, whose rows the node order filters only afterwards (figures at
        ``left_deep_from``)."""
        with self._planner_setting("join_collapse_limit", "1"):
            yield

    @contextmanager
    def _planner_setting(self, name: str, value: str) -> Iterator[None]:
        """``name`` = ``value`` for this session in the block, then the value before."""
        previous = self.execute("SELECT current_setting(%(name)s)", {"name": name},
                                fetch=True)[0][0]
        self.execute("SELECT set_config(%(name)s, %(value)s, false)",
                     {"name": name, "value": value}, fetch=True)
        try:
            yield
        finally:
            # Never hide the error that ended the block behind one from a broken connection.
            with suppress(SetanonError):
                self.execute("SELECT set_config(%(name)s, %(value)s, false)",
                              {"name": name, "value": previous}, fetch=True)

    def analyze(self, table: exp.Table) -> None:
        # Timed (Backend.statement_log): on whole BMS-WebView-1 at --m 3 the run's 950 ANALYZEs
        # took 20.3 s of 379.4, which profiles left out (BENCHMARKS.md, rho).
        self._timed(f"ANALYZE {table.sql(dialect='postgres')}", None, fetch=False)

    def row_locator(self) -> exp.Expr:
        return exp.column("ctid")

    def try_advisory_lock(self, key: tuple[int, int]) -> bool:
        rows = self.execute("SELECT pg_try_advisory_lock(%(a)s, %(b)s)",
                            {"a": key[0], "b": key[1]}, fetch=True)
        return bool(rows[0][0])

    def advisory_unlock(self, key: tuple[int, int]) -> None:
        self.execute("SELECT pg_advisory_unlock(%(a)s, %(b)s)", {"a": key[0], "b": key[1]},
                     fetch=True)

    def lock_for_write(self, table: exp.Table) -> None:
        self.execute(f"LOCK TABLE {table.sql(dialect='postgres')} IN SHARE ROW EXCLUSIVE MODE")

    def missing_privileges(self, table: exp.Table, privileges: Sequence[str]) -> list[str]:
        name = table.sql(dialect="postgres")
        return [p for p in privileges if not self.execute(
            "SELECT has_table_privilege(%(t)s, %(p)s)", {"t": name, "p": p}, fetch=True)[0][0]]

    def close(self) -> None:
        self._con.close()
