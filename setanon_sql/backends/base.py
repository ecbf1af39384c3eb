"""The backend contract: what algorithm code may ask of a database.

Algorithm code builds canonical statements or sqlglot expressions and hands them to a backend; it
never branches on the dialect. Everything that differs between engines (how a file is bulk-loaded,
how a result streams to a file, how text sorts byte-wise, which indexes pay off) is a hook here,
implemented once per engine.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

from sqlglot import exp

from setanon_sql import sqlrender
from setanon_sql.errors import InputError
from setanon_sql.sqlrender import TableBinding, identifier, qualified_table

Params = Mapping[str, Any] | None
Rows = list[tuple[Any, ...]]
Statement = str | exp.Expr
Tree = TypeVar("Tree", bound=exp.Expr)
_HEX_DIGITS = "0123456789abcdef"


class Backend(ABC):
    """One open connection to one database, with setanon's schema ``schema``."""

    name: ClassVar[str]
    dialect: ClassVar[str]
    # Whether runs may be written into the user's own tables (needs transactions, row ids and
    # row locks); an engine without them refuses --in-place up front.
    supports_in_place: ClassVar[bool] = True
    # Models this engine cannot run yet: refused before a run is recorded, naming the backend.
    models_not_yet: ClassVar[frozenset[str]] = frozenset()
    # Commands this engine cannot run yet ('attach', 'generate claims'): refused up front.
    commands_not_yet: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, url: str, schema: str) -> None:
        self.url = url
        self.schema = schema
        self._transaction_depth = 0
        self.catalog: str | None = None  # set where schema names may clash with catalog names
        # (SQL, seconds) of each statement of the steps while it is a list (bench/ profiles).
        self.statement_log: list[tuple[str, float]] | None = None
        self._all_working = False  # inside working_tables()
        # inside short_lived_tables(): about how many bytes the block's largest tables hold
        self._short_lived_bytes: int | None = None
        # Short-lived working tables the engine stores outside setanon's schema, by name: the
        # table where each one's rows are (:meth:`short_lived_storage`, :meth:`render`).
        self._stored_elsewhere: dict[str, exp.Table] = {}

    # ---- rendering and execution -------------------------------------------------------------
    def render(self, statement: Statement, tables: TableBinding | None = None) -> str:
        """The one render function: canonical statement or expression -> this dialect's text.

        A table of setanon's schema that the engine stores elsewhere (a short-lived working
        table, :meth:`short_lived_storage`) is read, dropped and renamed where it is: algorithm
        code names every table in setanon's schema."""
        if self._stored_elsewhere:
            if not isinstance(statement, str):
                statement = self._where_stored(statement)
            if tables:
                tables = {key: self._where_stored(table) for key, table in tables.items()}
        return sqlrender.render(statement, self.dialect, tables)

    def _stored_at(self, node: exp.Expr) -> exp.Table | None:
        """Where ``node``, a table of setanon's schema stored elsewhere, is; else None."""
        if not isinstance(node, exp.Table) or node.name not in self._stored_elsewhere:
            return None
        ours = node.db == self.schema and node.catalog in ("", self.catalog or "")
        return self._stored_elsewhere[node.name] if ours else None

    def _where_stored(self, tree: Tree) -> Tree:
        """``tree`` with each table stored elsewhere replaced by where it is (alias kept);
        ``tree`` itself when it names none."""
        if not any(self._stored_at(node) for node in tree.find_all(exp.Table)):
            return tree

        def place(node: exp.Expr) -> exp.Expr:
            where = self._stored_at(node)
            if where is None:
                return node
            placed = where.copy()
            if alias := node.args.get("alias"):
                placed.set("alias", alias.copy())
            return placed

        return cast(Tree, tree.transform(place))

    def table(self, name: str, alias: str | None = None) -> exp.Table:
        """A table of setanon's schema, quoted and qualified."""
        table = qualified_table(self.schema, name, alias)
        if self.catalog:
            table.set("catalog", identifier(self.catalog))
        return table

    def catalog_tables(self, *names: str) -> dict[str, exp.Table]:
        """Bind the logical names ``names`` to the same-named tables of setanon's schema."""
        return {name: self.table(name) for name in names}

    def run(
        self, statement: Statement, params: Params = None, tables: TableBinding | None = None
    ) -> None:
        """Render and execute a statement that returns no rows."""
        self._timed(self.render(statement, tables), params, fetch=False)

    def query(
        self, statement: Statement, params: Params = None, tables: TableBinding | None = None
    ) -> list[tuple[Any, ...]]:
        """Render and execute a query; returns all rows (use for small aggregates only)."""
        return self._timed(self.render(statement, tables), params, fetch=True)

    def scalar(
        self, statement: Statement, params: Params = None, tables: TableBinding | None = None
    ) -> Any:
        """The first column of the first row, or None."""
        rows = self.query(statement, params, tables)
        return rows[0][0] if rows else None

    def materialize(
        self,
        target: exp.Table,
        query: Statement,
        params: Params = None,
        tables: TableBinding | None = None,
        working: bool = False,
    ) -> None:
        """``CREATE TABLE target AS query`` and refresh the planner's statistics.

        The step every algorithm is made of: a new table from old ones. ``query`` is a named
        SELECT statement or a sqlglot expression. ``working``: a table the run drops itself
        and never publishes, which the engine may build without crash safety
        (:meth:`working_table_properties`).
        """
        tree = sqlrender.parsed(query) if isinstance(query, str) else query
        if tables:
            tree = sqlrender.bind_tables(tree, tables)
        working = working or self._all_working
        if working and self._short_lived_bytes is not None:
            with self.short_lived_storage(target, self._short_lived_bytes) as (stored,
                                                                              properties):
                self._create(stored, tree, properties, params)
            if stored != target:
                self._stored_elsewhere[target.name] = stored
        else:
            self._create(target, tree, self.working_table_properties() if working else [],
                         params)
        self.analyze(target)

    def _create(self, target: exp.Table, query: exp.Expr, properties: list[exp.Expr],
                params: Params) -> None:
        create = exp.Create(this=target.copy(), kind="TABLE", expression=query)
        if properties:
            create.set("properties", exp.Properties(expressions=properties))
        self.run(create, params)

    def drop_table(self, table: exp.Table) -> None:
        """Drop ``table`` if it exists."""
        self.run(exp.Drop(tables=[table.copy()], kind="TABLE", exists=True))
        if self._stored_at(table) is not None:
            del self._stored_elsewhere[table.name]

    def replace_table(self, target: exp.Table, source: exp.Table) -> None:
        """``target`` := ``source`` by renaming (``source`` is gone after): a table built as
        "new = query(old)" under a work name takes the old one's name without copying its
        rows. Both in setanon's schema; ``target`` is dropped first if it exists."""
        self.drop_table(target)
        self.run(exp.Alter(this=source.copy(), kind="TABLE", actions=[
            exp.AlterRename(this=exp.Table(this=identifier(target.name)))]))
        if (moved := self._stored_at(source)) is not None:
            del self._stored_elsewhere[source.name]
            moved.set("this", identifier(target.name))
            self._stored_elsewhere[target.name] = moved

    def table_names(self, prefix: str) -> list[str]:
        """Names of the tables in setanon's schema that start with ``prefix``."""
        rows = self.query("tables_with_prefix", {"schema_name": self.schema})
        names = {name for (name,) in rows} | set(self._stored_elsewhere)
        return sorted(name for name in names if name.startswith(prefix))

    def _timed(self, sql: str, params: Params, fetch: bool) -> list[tuple[Any, ...]]:
        started = time.perf_counter()
        rows = self.execute(sql, params, fetch=fetch)
        if self.statement_log is not None:
            self.statement_log.append((sql, time.perf_counter() - started))
        return rows

    @abstractmethod
    def execute(self, sql: str, params: Params = None, fetch: bool = False) -> Rows:
        """Execute dialect text with bound parameters; driver errors become SetanonError."""

    # ---- transactions ------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All-or-nothing block; nested blocks join the outermost one. Durable once it
        returns, also where the session commits its other statements asynchronously
        (PostgreSQL's ``synchronous_commit``)."""
        if self._transaction_depth:
            self._transaction_depth += 1
            try:
                yield
            finally:
                self._transaction_depth -= 1
            return
        self._begin()
        self._transaction_depth = 1
        try:
            yield
        except BaseException:
            self._transaction_depth = 0
            self._rollback()
            raise
        self._transaction_depth = 0
        self._commit()

    @abstractmethod
    def _begin(self) -> None: ...

    @abstractmethod
    def _commit(self) -> None: ...

    @abstractmethod
    def _rollback(self) -> None: ...

    # ---- engine hooks ------------------------------------------------------------------------
    @abstractmethod
    def load_lines(self, path: Path, target: exp.Table) -> int:
        """Create ``target(pos BIGINT, line TEXT)`` holding line ``pos`` (1-based) of ``path``.

        Line ends are ``\\n`` or ``\\r\\n``; an empty line gives an empty (or NULL) ``line``. Uses
        the engine's bulk path. Returns the number of lines.
        """

    @abstractmethod
    def load_delimited(
        self, path: Path, target: exp.Table, n_columns: int, delimiter: str, quoted: bool
    ) -> int:
        """Create ``target(pos BIGINT, c1 TEXT, ..., cN TEXT)`` from a delimited file.

        The file's first line is a header and is skipped; ``pos`` is the 1-based data row number.
        ``quoted`` turns on CSV double-quote handling (off for TSV, where quotes are data).
        Empty fields become NULL. Returns the number of data rows.
        """

    def copy_to_file(
        self,
        query: exp.Select,
        path: Path,
        delimiter: str,
        header: Sequence[str] | None,
        quoted: bool,
        params: Params = None,
    ) -> None:
        """Stream a query's rows to ``path`` with the engine's bulk path (no row loop in Python).

        ``header`` names the columns of the header line (none without it). NULL is written as an
        empty field; with ``quoted`` off, values are written verbatim.
        """
        if header:
            query = exp.select(
                *(exp.alias_(exp.column(column.alias_or_name), name, quoted=True)
                  for column, name in zip(query.selects, header, strict=True))
            ).from_(query.subquery("q"))
        self._copy_out(self.render(query), path, delimiter, bool(header), quoted, params)

    @abstractmethod
    def _copy_out(
        self, body: str, path: Path, delimiter: str, header: bool, quoted: bool, params: Params
    ) -> None: ...

    def binary_sort_key(self, value: exp.Expr) -> exp.Expr:
        """``value`` ordered byte-wise, independent of the database's locale."""
        return value

    def hex_prefix_value(self, digest: exp.Expr) -> exp.Expr:
        """The first 8 hex digits of an md5 ``digest`` as a BIGINT in [0, 2^32).

        Every backend must give the same number (the samplers' draws are the same everywhere).
        Portable default: each digit's position in '0123456789abcdef', weighted by 16^(7-i).
        """
        value: exp.Expr | None = None
        for i in range(8):
            digit = exp.Sub(this=exp.StrPosition(
                this=exp.Literal.string(_HEX_DIGITS),
                substr=exp.Substring(this=digest.copy(), start=exp.Literal.number(i + 1),
                                     length=exp.Literal.number(1))),
                expression=exp.Literal.number(1))
            term = exp.Mul(this=exp.cast(digit, "BIGINT"),
                           expression=exp.Literal.number(16 ** (7 - i)))
            value = term if value is None else exp.Add(this=value, expression=term)
        assert value is not None
        return exp.paren(value)

    def create_access_index(self, table: exp.Table, columns: Sequence[str]) -> None:  # noqa: B027
        """Index ``table`` on ``columns`` where the engine profits from it (a no-op by default)."""

    def working_table_properties(self) -> list[exp.Expr]:
        """Properties of a working table (``materialize(..., working=True)``); none by default.

        A working table lives for one run and is rebuilt, not recovered, after a crash, so an
        engine may skip what makes a table durable (PostgreSQL: UNLOGGED, no write-ahead log).
        """
        return []

    @contextmanager
    def short_lived_tables(self, largest_bytes: int) -> Iterator[None]:
        """The working tables built in the block are each read within a round or two and
        dropped (the rho suppressor's rounds), so an engine may store them for speed rather
        than durability or size (:meth:`short_lived_storage`). ``largest_bytes``: about how
        many bytes the block's largest tables hold. Not for kanon's or km's steps: their
        tables are bigger and live longer (kanon's 27 GB at 100M claims); km's enumeration
        levels are the exception, each read twice and dropped, and bounded in rows
        (:mod:`setanon_sql.models.km.levels`), and so are the prefix plan's levels, each read
        once by the next (:func:`setanon_sql.models.km.groupsupport.prefix_support`)."""
        with self._attribute_set("_short_lived_bytes", largest_bytes):
            yield

    @contextmanager
    def short_lived_storage(self, target: exp.Table, largest_bytes: int
                            ) -> Iterator[tuple[exp.Table, list[exp.Expr]]]:
        """Where a working table built inside :meth:`short_lived_tables` is stored and the
        properties it is created with, for the statement that builds it in the block: by
        default at ``target``, as any working table.

        An engine may store it elsewhere (DuckDB: see :class:`DuckDBBackend`); every
        statement keeps naming ``target``, and :meth:`render` points it at the table's place
        until the table is dropped.
        """
        yield target, self.working_table_properties()

    @contextmanager
    def working_tables(self) -> Iterator[None]:
        """Every table materialized in the block is a working table (``working=True``).

        For a phase whose tables the run drops itself, all but none published: km's search and
        its verification build hundreds of scratch tables from a hundred call sites. On
        PostgreSQL their write-ahead log of millions of rows a level made checkpoints follow
        each other seconds apart (the prefix plan's levels at 100,000 CDR-like users).
        """
        with self._attribute_set("_all_working", True):
            yield

    @contextmanager
    def _attribute_set(self, name: str, value: object) -> Iterator[None]:
        """The attribute ``name`` is ``value`` in the block, and as it was after it (also
        after an error): the blocks nest."""
        before = getattr(self, name)
        setattr(self, name, value)
        try:
            yield
        finally:
            setattr(self, name, before)

    @contextmanager
    def whole_table_joins(self) -> Iterator[None]:
        """Planner settings for statements that join whole working tables on keys the engine
        cannot estimate well (kanon's steps, rho's rounds); none by default.

        PostgreSQL overrides it: see :class:`PostgresBackend`.
        """
        yield

    @contextmanager
    def joins_as_written(self) -> Iterator[None]:
        """Join the tables of the block's statements in the order the statement names them:
        for statements whose author knows the selective join (prho's records holding Q join
        Q's rarest item first) where the engine has no statistics to find it. None by default.

        PostgreSQL overrides it: see :class:`PostgresBackend`.
        """
        yield

    def fenced(self, query: exp.Select) -> exp.Select:
        """``query``, to be read as a subquery whose columns the engine computes once: for a
        chain of subqueries where each step's column is tested against the earlier steps'
        (Floyd's positions, :mod:`.models.km.positions`), or a value a join tests several
        times (the sampler's draws). DuckDB and Spark compute each projection once;
        PostgreSQL overrides it. The rows are the same either way."""
        return query

    #: Whether a count of the unsafe rules joins X with q in two parts per position of e, by
    #: how many records hold X (:func:`.models.rho.qids.unnumbered_rules_query`: the same
    #: rules). Measured per engine: DuckDB gains, PostgreSQL loses (see its class).
    split_rules_by_holders: bool = True

    #: The fewest nodes from which a full enumeration of the records' itemsets joins left-deep
    #: (:func:`.models.km.itemsets.enumeration_joins`); None: never. Measured per engine.
    left_deep_from: int | None = None

    @contextmanager
    def left_deep_joins(self) -> Iterator[None]:
        """Join the tables of the block's statements one at a time, in the order written (a
        left-deep chain): for the ℓ-way self-joins that enumerate the itemsets of records
        (:func:`.models.km.itemsets.enumeration_joins`), where each join keeps only the
        itemsets that grow in node order. None by default.

        DuckDB and PostgreSQL override it: see :class:`DuckDBBackend`, :class:`PostgresBackend`.
        """
        yield

    @contextmanager
    def hash_joins_only(self) -> Iterator[None]:
        """No nested-loop joins for the statements of the block: for joins of tables without
        an index, where a nested loop means a scan of the inner table per outer row, and an
        engine that underestimates the outer side may still choose one. None by default.

        PostgreSQL overrides it: see :class:`PostgresBackend`.
        """
        yield

    def rows_per_grouping(self) -> int | None:
        """At most how many rows one GROUP BY over a working table should read, or None where
        the engine's aggregates spill at any size (the default: PostgreSQL, Spark).

        A step whose input is larger runs in slices of its classes (kanon's
        ``set_recoding.rank_and_pick``).
        DuckDB overrides it: see :class:`DuckDBBackend`.
        """
        return None

    def analyze(self, table: exp.Table) -> None:  # noqa: B027
        """Refresh the planner's statistics of a table just built (a no-op where automatic).

        PostgreSQL plans joins over a table created by CREATE TABLE AS without statistics
        badly (nested loops over millions of rows) until it is analyzed.
        """

    # ---- capabilities ------------------------------------------------------------------------
    def require_model(self, model: str) -> None:
        """Refuse, before anything is written, a model this engine cannot run yet."""
        if model in self.models_not_yet:
            from setanon_sql.errors import UnsupportedOperationError

            raise UnsupportedOperationError(
                f"--model {model} is not yet available on the {self.name} backend; run it on "
                "DuckDB or PostgreSQL (see the README's backend section)")

    def require_command(self, command: str) -> None:
        """Refuse, before anything is written, a command this engine cannot run yet."""
        if command in self.commands_not_yet:
            from setanon_sql.errors import UnsupportedOperationError

            raise UnsupportedOperationError(
                f"'setanon {command}' is not yet available on the {self.name} backend; use "
                "DuckDB or PostgreSQL for it (see the README's backend section)")

    def require_in_place(self, command: str) -> None:
        """Refuse in-place work where the engine cannot make it all-or-nothing."""
        if not self.supports_in_place:
            from setanon_sql.errors import UnsupportedOperationError

            raise UnsupportedOperationError(
                f"{command} is not available on the {self.name} backend: its tables have no "
                "transactions, row ids or row locks, so the user's tables could be left "
                "half-changed; export the verified run instead ('setanon export NAME --run "
                "RUN -o FILE') and replace the table from it")

    # ---- in-place work on the user's tables -------------------------------------------------
    def row_locator(self) -> exp.Expr:
        """The engine's physical row id, stable inside one transaction.

        Undo uses it to pick exactly one of several identical rows; it is never stored across
        transactions (an UPDATE or VACUUM may move a row).
        """
        from setanon_sql.errors import UnsupportedOperationError

        raise UnsupportedOperationError(f"the {self.name} backend has no physical row id")

    def try_advisory_lock(self, key: tuple[int, int]) -> bool:
        """Take the session-level lock ``key`` without waiting; False when another holds it.

        The default suits engines whose file lock already admits one writing process.
        """
        return True

    def advisory_unlock(self, key: tuple[int, int]) -> None:  # noqa: B027
        """Release a lock taken by :meth:`try_advisory_lock` (a no-op by default)."""

    def exclusive(self) -> bool:
        """True when this connection's process is the only one that can use the database.

        DuckDB's file lock admits one process: a run another process left 'running' there is
        dead for certain. A server (PostgreSQL) answers False and is asked through its locks.
        """
        return False

    def announce_run(self, run_id: int) -> None:  # noqa: B027
        """Say outside the database that this process runs ``run_id`` (a no-op by default).

        Where the database's lock keeps others from reading the catalog (DuckDB), a refused
        process can still name the run that holds it.
        """

    def remove_spill(self) -> list[Path]:
        """Remove spill files a dead process of this database left on disk; what was removed."""
        return []

    def lock_for_write(self, table: exp.Table) -> None:  # noqa: B027
        """Inside a transaction: keep other sessions from writing ``table`` until it ends.

        A no-op where one process holds the whole database (DuckDB's file lock).
        """

    def missing_privileges(self, table: exp.Table, privileges: Sequence[str]) -> list[str]:
        """Which of ``privileges`` (SELECT, INSERT, UPDATE, DELETE) this role lacks on a table.

        None by default: engines without roles grant everything the file permissions allow.
        """
        return []

    @abstractmethod
    def close(self) -> None:
        """Close the connection."""

    def discard_created(self) -> None:
        """Remove a database that opening this connection created (after :meth:`close`, when the
        command that opened it failed). Nothing by default: only an embedded engine creates
        its database on connect."""
        return None

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> str:
        """The URL with any password hidden, for messages."""
        return self.url


def hex_prefix(digest: exp.Expr) -> exp.Expr:
    """The first 8 hex digits of an md5 ``digest`` (text): what :meth:`Backend.hex_prefix_value`
    reads as a number, each engine with its own cast."""
    return exp.Substring(this=digest.copy(), start=exp.Literal.number(1),
                         length=exp.Literal.number(8))


def ragged_row_error(path: Path, line: int, expected: int, found: str) -> InputError:
    """The refusal of a row with another number of fields than the header (both backends).

    Loading such a row would shift its values into the wrong columns (a missing field in the
    middle) or lose one (a field too many), so it is never loaded.
    """
    return InputError(
        f"table file {path} line {line}: expected {expected} fields (as in the header), found "
        f"{found}; a field is missing or one too many: check the delimiters of that line (and "
        "quote values that contain the delimiter), then load again")

