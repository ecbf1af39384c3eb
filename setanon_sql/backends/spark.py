"""Apache Spark backend: an embedded local session whose tables persist in a warehouse directory.

``spark://local[N]?warehouse=DIR`` starts (once per process) a local Spark session with Hive
support whose metastore (embedded Derby) and table files (parquet) live under ``DIR``, so
``load``, ``anonymize`` and ``export`` can be separate processes, as on DuckDB. Derby admits one
process at a time, like DuckDB's file lock.

What Spark lacks is provided here, never in model code:

- No UPDATE/DELETE on plain (parquet) tables: an ``UPDATE t SET ... WHERE c`` becomes
  ``t__next = SELECT CASE WHEN c THEN new ELSE old END ... FROM t``, then t is dropped and
  ``t__next`` renamed to t; a DELETE keeps the rows where the condition is not true. A process
  killed between the drop and the rename leaves ``t__next``, which the next connect renames.
- No transactions: a transaction is emulated by compensation. At BEGIN the backend notes which
  tables exist (in a journal file under the warehouse); before the first write to a table that
  existed, it copies it to ``t__txn``. ROLLBACK drops the tables created since BEGIN and puts the
  copies back; COMMIT drops the copies. A process killed inside a transaction leaves the
  journal, and the next connect rolls the transaction back. Other sessions can see a
  transaction's tables before it commits (Derby admits one process, so locally there are none).
- No information_schema: the catalog questions setanon asks of it are answered from Spark's
  catalog through temporary views of the same shape.
- No physical row ids or row locks: in-place application is refused (``supports_in_place``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from sqlglot import exp

from setanon_sql import sqlrender
from setanon_sql.backends.base import (
    Backend,
    Params,
    Rows,
    Statement,
    hex_prefix,
    ragged_row_error,
)
from setanon_sql.backends.spark_dialect import DIALECT
from setanon_sql.errors import (
    ConnectionFailedError,
    DatabaseError,
    DatabaseLockedError,
    InputError,
    NotFoundError,
    UnsupportedOperationError,
    UsageError,
    one_line,
)
from setanon_sql.sqlrender import TableBinding, identifier

_MASTER = re.compile(r"^local(\[(\d+|\*)\])?$")
_NEXT = "__next"
_BACKUP = "__txn"
# Where a Spark Connect session keeps its transaction journal (spark_connect.py): a table of
# setanon's schema that no listing shows.
JOURNAL_TABLE = "setanon_transaction__journal"
_INFO_VIEWS = {"tables": "setanon_information_schema_tables",
               "columns": "setanon_information_schema_columns"}
_CONSTRAINTS = (exp.PrimaryKeyColumnConstraint, exp.UniqueColumnConstraint,
                exp.NotNullColumnConstraint)
# Spark's type names as information_schema.columns.data_type would give them in PostgreSQL.
_TYPE_NAMES = {"string": "text", "int": "integer", "bigint": "bigint", "double": "double precision",
               "boolean": "boolean", "timestamp": "timestamp without time zone",
               "smallint": "smallint", "float": "real", "date": "date"}

# Spark's logging while the session starts: errors only (then off, see _start_session).
_LOG_CONFIG = Path(__file__).with_name("spark_log4j2.properties").as_uri()
_session: Any = None
_session_key: tuple[str, str] | None = None


def _drop_tree(table: exp.Table) -> exp.Drop:
    return exp.Drop(tables=[table.copy()], kind="TABLE", exists=True)


def parse_spark_url(url: str) -> tuple[str, Path]:
    """``spark://local[N]?warehouse=DIR`` -> (master, warehouse directory)."""
    rest = url.split("://", 1)[1]
    master, _, query = rest.partition("?")
    if not _MASTER.match(master):
        raise UsageError(
            f"Spark URL {url!r}: the master must be local, local[N] or local[*] "
            "(spark://local[2]?warehouse=DIR); a cluster is reached through Spark Connect: "
            "sc://HOST:PORT")
    settings: dict[str, str] = {}
    for part in filter(None, query.split("&")):
        key, _, value = part.partition("=")
        settings[key] = value
    unknown = sorted(set(settings) - {"warehouse"})
    if unknown:
        raise UsageError(f"Spark URL {url!r}: setting {unknown[0]!r} is not known: use "
                         "warehouse=DIR")
    if not settings.get("warehouse"):
        raise UsageError(f"Spark URL {url!r} names no warehouse directory: add ?warehouse=DIR "
                         "(the tables and the metastore are kept there between commands)")
    return master, Path(settings["warehouse"]).expanduser().resolve()


def embedded_tuning() -> dict[str, str]:
    """The embedded session's tunable settings: each from its environment variable, else
    setanon's default (8 shuffle partitions suit ``local[2]``; adaptive execution; a 4 GB
    driver; whole-stage code generation, which pays on large tables and costs a compile per
    statement on tiny ones, so the test suite turns it off). A benchmark starts a Spark
    Connect server with the same values."""
    return {
        "spark.sql.shuffle.partitions": os.environ.get("SETANON_SPARK_PARTITIONS", "8"),
        "spark.sql.adaptive.enabled": os.environ.get("SETANON_SPARK_ADAPTIVE", "true"),
        "spark.sql.codegen.wholeStage": os.environ.get("SETANON_SPARK_WHOLESTAGE", "true"),
        "spark.driver.memory": os.environ.get("SETANON_SPARK_DRIVER_MEMORY", "4g"),
    }


def _start_session(master: str, warehouse: Path) -> Any:
    """The process's one Spark session (Spark allows one per JVM), started on first use."""
    global _session, _session_key
    key = (master, str(warehouse))
    if _session is not None:
        if _session_key != key:
            raise UsageError(
                f"this process already runs a Spark session on {_session_key[1]} "  # type: ignore[index]
                f"({_session_key[0]}); one process uses one Spark warehouse: open "  # type: ignore[index]
                f"{warehouse} from another process")
        return _session
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ConnectionFailedError(
            "the Spark backend needs PySpark: pip install 'setanon_sql[spark]' (and a Java 17 "
            "runtime, e.g. apt-get install openjdk-17-jre-headless)") from None
    warehouse.mkdir(parents=True, exist_ok=True)
    metastore = warehouse / "metastore_db"
    builder = (
        SparkSession.builder.master(master).appName("setanon")
        .config("spark.sql.warehouse.dir", str(warehouse / "tables"))
        .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                f"jdbc:derby:;databaseName={metastore};create=true")
        .config("spark.driver.extraJavaOptions",
                f"-Dderby.system.home={warehouse} -Dlog4j2.configurationFile={_LOG_CONFIG}")
        .config("spark.sql.legacy.createHiveTableByDefault", "false")
        .config("spark.sql.sources.default", "parquet")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.ansi.enabled", "false")
        .enableHiveSupport()
    )
    for name, value in embedded_tuning().items():
        builder = builder.config(name, value)
    try:
        # PySpark imports its testing helpers as the session starts, which warn about pandas
        # 3; setanon does not use pandas through PySpark: not a message for its users.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            session = builder.getOrCreate()
    except Exception as error:  # PySparkRuntimeError: no Java, or the JVM did not start
        raise ConnectionFailedError(
            f"cannot start Spark ({master}): {one_line(error)}; Spark needs a Java 17 runtime "
            "(apt-get install openjdk-17-jre-headless, or set JAVA_HOME)") from None
    session.sparkContext.setLogLevel("OFF")  # errors reach the user as SetanonErrors
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True
    _session, _session_key = session, key
    return session


class SparkBackend(Backend):
    """Spark SQL through PySpark; parameters bound as named markers ``:name``."""

    name = "spark"
    dialect = DIALECT
    supports_in_place: ClassVar[bool] = False

    def __init__(self, url: str, schema: str, create: bool = True) -> None:
        super().__init__(url, schema)
        self._txn: dict[str, Any] | None = None
        self._spark = self._open(create)
        self._recover()

    def _open(self, create: bool) -> Any:
        """The Spark session this backend talks to, checked to answer (a hook: Connect differs)."""
        self.master, self.warehouse = parse_spark_url(self.url)
        if not create and not (self.warehouse / "metastore_db").is_dir():
            raise NotFoundError(
                f"the Spark warehouse {self.warehouse} does not exist: load a dataset first "
                "('setanon load transactions FILE --name NAME'), or point --db or $SETANON_DB "
                "at an existing warehouse")
        session = _start_session(self.master, self.warehouse)
        try:
            session.sql("SHOW DATABASES").collect()
        except Exception as error:
            if "Another instance of Derby" in str(error) or "XSDB6" in str(error):
                raise DatabaseLockedError(
                    f"the Spark warehouse {self.warehouse} is in use by another process (its "
                    "Derby metastore admits one): wait for it to finish or close the other "
                    "program", None) from None
            raise ConnectionFailedError(
                f"cannot open the Spark warehouse {self.warehouse}: {one_line(error)}") from None
        return session

    # ---- execution ---------------------------------------------------------------------------
    def execute(self, sql: str, params: Params = None, fetch: bool = False) -> Rows:
        try:
            frame = self._spark.sql(sql, args=dict(params) if params else None)
            return [tuple(row) for row in frame.collect()] if fetch else []
        except KeyboardInterrupt:
            raise
        except Exception as error:
            raise self._database_error(error, "a setanon statement") from None

    def _database_error(self, error: Exception, doing: str) -> DatabaseError:
        state = getattr(error, "getSqlState", None)
        sqlstate = state() if callable(state) else None
        message = one_line(error).split("JVM stacktrace")[0].strip()
        java = getattr(error, "java_exception", None)  # a Java error Spark did not classify
        if java is not None and not callable(state):
            detail = next((line for line in str(java.toString()).splitlines() if line.strip()),
                          "")
            message = f"{message} {detail.strip()}"
        return DatabaseError(f"Spark failed on {doing}: {message}", sqlstate)

    def run(
        self, statement: Statement, params: Params = None, tables: TableBinding | None = None
    ) -> None:
        tree = self._special(statement, tables)
        if tree is None:
            super().run(statement, params, tables)
        elif isinstance(tree, exp.Update):
            self._update(tree, params)
        elif isinstance(tree, exp.Delete):
            self._delete(tree, params)
        else:
            self._write(tree, params)

    def query(
        self, statement: Statement, params: Params = None, tables: TableBinding | None = None
    ) -> list[tuple[Any, ...]]:
        tree = self._special(statement, tables)
        if tree is None:
            return super().query(statement, params, tables)
        return self._timed(self.render(self._information_schema(tree, params)), params,
                           fetch=True)

    def _special(self, statement: Statement, tables: TableBinding | None) -> exp.Expr | None:
        """The bound tree of a statement this backend must rewrite, else None.

        Writes (CREATE, INSERT, UPDATE, DELETE, DROP, ALTER) are seen so that a transaction can
        protect what they touch; information_schema reads are answered from Spark's catalog.
        """
        tree = sqlrender.parsed(statement) if isinstance(statement, str) else statement
        writes = (exp.Update, exp.Delete, exp.Insert, exp.Drop, exp.Alter, exp.Create)
        if not isinstance(tree, writes) and not any(
                table.db.lower() == "information_schema" for table in tree.find_all(exp.Table)):
            return None
        return sqlrender.bind_tables(tree, tables) if tables else tree.copy()

    # ---- writes: constraints, transactions, UPDATE/DELETE --------------------------------------
    def _write(self, tree: exp.Expr, params: Params) -> None:
        if isinstance(tree, exp.Create) and isinstance(tree.this, exp.Schema):
            for constraint in list(tree.find_all(exp.ColumnConstraint)):
                if isinstance(constraint.args.get("kind"), _CONSTRAINTS):
                    constraint.pop()
            for key in list(tree.find_all(exp.PrimaryKey)):
                key.pop()
        target = self._target(tree)
        if isinstance(tree, exp.Drop) and target is not None:
            self._drop_or_keep(target)
            return
        if isinstance(tree, exp.Insert) and target is not None:
            self._protect_insert(target)
        if isinstance(tree, exp.Alter) and target is not None:
            self._protect_copy(target)
        self._timed(self.render(tree), params, fetch=False)

    def _target(self, tree: exp.Expr) -> exp.Table | None:
        if isinstance(tree, exp.Drop):
            if str(tree.args.get("kind", "")).upper() != "TABLE":
                return None
            found = tree.args.get("tables") or [tree.this]
            table = found[0] if found else None
        else:
            table = tree.this
        if isinstance(table, exp.Schema):
            table = table.this
        return table if isinstance(table, exp.Table) else None

    def _update(self, tree: exp.Update, params: Params) -> None:
        """``UPDATE t SET c = v WHERE w`` as ``SELECT CASE WHEN w THEN v ELSE c END ...``.

        ``UPDATE t AS s SET ... FROM src AS d WHERE w`` joins ``src`` on ``w`` (LEFT JOIN, so
        unmatched rows pass unchanged); as in PostgreSQL, a row of t must match at most one
        row of ``src`` (otherwise the join would repeat it: setanon's deltas are grouped).
        """
        if tree.args.get("joins"):
            raise UnsupportedOperationError(
                "UPDATE ... JOIN is not yet supported on the spark backend")
        target = tree.this
        source = tree.args.get("from_") or tree.args.get("from")
        sets = {eq.this.name: eq.expression for eq in tree.expressions}
        where = tree.args.get("where")
        condition = where.this if where is not None else exp.true()
        alias = target.alias_or_name
        query = exp.select().from_(target.copy())
        if source is not None:
            joined = source.this
            matched = exp.column("setanon_matched", table=joined.alias_or_name)
            rows = exp.select("*", exp.true().as_("setanon_matched")).from_(
                self._plain(joined) if isinstance(joined, exp.Table) else joined.copy())
            query = query.join(rows.subquery(joined.alias_or_name), on=condition.copy(),
                               join_type="left")
            condition = exp.func("coalesce", matched, exp.false())
        columns = []
        for name, spark_type in self._column_types(target):
            value: exp.Expr = exp.column(name, table=alias, quoted=True)
            if name in sets:
                value = exp.cast(
                    exp.If(this=condition.copy(), true=sets[name].copy(), false=value),
                    exp.DataType.build(spark_type, dialect="spark"))
            columns.append(exp.alias_(value, name, quoted=True))
        self._replace(target, query.select(*columns), params)

    def _delete(self, tree: exp.Delete, params: Params) -> None:
        if tree.args.get("using"):
            raise UnsupportedOperationError(
                "DELETE ... USING is not yet supported on the spark backend")
        target = tree.this
        where = tree.args.get("where")
        keep = exp.false() if where is None else exp.not_(
            exp.func("coalesce", where.this.copy(), exp.false()))
        self._replace(target, exp.select("*").from_(self._plain(target)).where(keep), params)

    def _replace(self, target: exp.Table, query: exp.Select, params: Params) -> None:
        """``target := query(target)``: build ``target__next``, drop target, rename."""
        plain = self._plain(target)
        following = self._sibling(plain, _NEXT)
        self._call(_drop_tree(following))
        self._timed(self.render(exp.Create(this=following.copy(), kind="TABLE",
                                           expression=query)), params, fetch=False)
        self._drop_or_keep(plain)
        self._rename(following, plain)

    def _plain(self, table: exp.Table) -> exp.Table:
        plain = table.copy()
        plain.set("alias", None)
        return plain

    def _sibling(self, table: exp.Table, suffix: str) -> exp.Table:
        sibling = self._plain(table)
        sibling.set("this", identifier(table.name + suffix))
        return sibling

    def _call(self, tree: exp.Expr) -> None:
        self._timed(self.render(tree), None, fetch=False)

    def replace_table(self, target: exp.Table, source: exp.Table) -> None:
        """As the base, with the target named in full (the form the other renames here use)."""
        self.drop_table(target)
        self._rename(self._plain(source), self._plain(target))

    def _rename(self, source: exp.Table, target: exp.Table) -> None:
        self._timed(f"ALTER TABLE {source.sql(dialect=DIALECT)} RENAME TO "
                    f"{target.sql(dialect=DIALECT)}", None, fetch=False)

    def _column_types(self, table: exp.Table) -> list[tuple[str, str]]:
        rows = self.execute(f"DESCRIBE TABLE {self._plain(table).sql(dialect=DIALECT)}",
                            fetch=True)
        columns = []
        for name, spark_type, _comment in rows:
            if not name or name.startswith("#"):
                break  # partition information follows the columns
            columns.append((name, spark_type))
        return columns

    # ---- transactions by compensation -----------------------------------------------------
    def _journal(self) -> Path:
        return self.warehouse / f"setanon-transaction-{self.schema}.json"

    def _begin(self) -> None:
        self._txn = {"before": self._list_tables(self.schema), "moved": [], "copied": [],
                     "files": {}}
        self._save_journal()

    def _save_journal(self) -> None:
        """Write the open transaction's journal where a later process finds it (a hook)."""
        self._journal().write_text(json.dumps(self._txn))

    def _load_journal(self) -> dict[str, Any] | None:
        """The journal a killed process left, if any (a hook)."""
        journal = self._journal()
        return json.loads(journal.read_text()) if journal.exists() else None

    def _clear_journal(self) -> None:
        """Remove the journal: the transaction is over (a hook)."""
        self._journal().unlink(missing_ok=True)

    def _protect_insert(self, table: exp.Table) -> None:
        """Before an INSERT into a table that existed at BEGIN: keep what undoes it (a hook)."""
        self._protect_files(table)

    def _kept(self, table: exp.Table) -> bool:
        """In a transaction, ``table`` existed at BEGIN and its BEGIN state is not yet kept."""
        return (self._txn is not None and table.db == self.schema
                and table.name in self._txn["before"]
                and table.name not in self._txn["moved"] + self._txn["copied"])

    def _protect_files(self, table: exp.Table) -> None:
        """Before an INSERT (which only adds files): note the table's data files."""
        if self._kept(table) and table.name not in self._txn["files"]:  # type: ignore[index]
            assert self._txn is not None
            self._txn["files"][table.name] = sorted(
                entry.name for entry in self._location(table).iterdir())
            self._save_journal()

    def _protect_copy(self, table: exp.Table) -> None:
        """Before an ALTER: copy the table (rare: migrations)."""
        if self._kept(table) and table.name not in self._txn["files"]:  # type: ignore[index]
            assert self._txn is not None
            backup = self._sibling(table, _BACKUP)
            self._call(_drop_tree(backup))
            self._call(exp.Create(this=backup, kind="TABLE",
                                  expression=exp.select("*").from_(self._plain(table))))
            self._txn["copied"].append(table.name)
            self._save_journal()

    def _drop_or_keep(self, table: exp.Table) -> None:
        """Drop ``table``; in a transaction, a table that existed at BEGIN is renamed aside."""
        if not self._kept(table):
            self._call(_drop_tree(self._plain(table)))
            return
        assert self._txn is not None
        backup = self._sibling(table, _BACKUP)
        self._call(_drop_tree(backup))
        self._rename(self._plain(table), backup)
        self._txn["moved"].append(table.name)
        self._save_journal()

    def _location(self, table: exp.Table) -> Path:
        rows = self.execute(f"DESCRIBE TABLE EXTENDED {self._plain(table).sql(dialect=DIALECT)}",
                            fetch=True)
        location = next(str(value) for name, value, _c in rows if name == "Location")
        return Path(location.removeprefix("file:"))

    def _commit(self) -> None:
        assert self._txn is not None
        for name in self._txn["moved"] + self._txn["copied"]:
            self._drop(name + _BACKUP)
        self._txn = None
        self._clear_journal()

    def _rollback(self) -> None:
        if self._txn is None:
            return
        self._undo(self._txn)
        self._txn = None
        self._clear_journal()

    def _undo(self, txn: dict[str, Any]) -> None:
        """Back to BEGIN: drop new tables, put kept ones back, remove files INSERTs added."""
        before = set(txn["before"])
        kept = set(txn["moved"]) | set(txn["copied"])
        for name in self._list_tables(self.schema):
            if name not in before and not (name.endswith(_BACKUP)
                                           and name[: -len(_BACKUP)] in kept):
                self._drop(name)
        existing = set(self._list_tables(self.schema))
        for name in kept:
            if name + _BACKUP in existing:
                self._drop(name)
                self._rename(self.table(name + _BACKUP), self.table(name))
        for name, files in txn["files"].items():
            if name in txn["copied"]:
                continue
            directory = self._location(self.table(name))
            for entry in directory.iterdir():
                if entry.name not in files:
                    shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
            self._call(exp.Refresh(this=self.table(name), kind="TABLE"))

    def _drop(self, name: str) -> None:
        self._call(_drop_tree(self.table(name)))

    def _recover(self) -> None:
        """Finish what a killed process left: a pending ``t__next`` swap, an open transaction."""
        if self.schema not in self._list_databases():
            return
        names = set(self._list_tables(self.schema))
        for name in sorted(names):
            if name.endswith(_NEXT):
                original = name[: -len(_NEXT)]
                if original in names:
                    self._drop(name)
                else:
                    self._rename(self.table(name), self.table(original))
        journal = self._load_journal()
        if journal is not None:
            self._undo(journal)
            self._clear_journal()

    def _list_databases(self) -> set[str]:
        return {row[0] for row in self.execute("SHOW DATABASES", fetch=True)}

    def _list_tables(self, schema: str) -> list[str]:
        if schema not in self._list_databases():
            return []
        rows = self.execute(f"SHOW TABLES IN {identifier(schema).sql(dialect=DIALECT)}",
                            fetch=True)
        return sorted(name for _db, name, temporary in rows
                      if not temporary and name != JOURNAL_TABLE)

    def table_names(self, prefix: str) -> list[str]:
        return [name for name in self._list_tables(self.schema)
                if name.startswith(prefix) and not name.endswith((_NEXT, _BACKUP))]

    # ---- information_schema ------------------------------------------------------------------
    def _information_schema(self, tree: exp.Expr, params: Params) -> exp.Expr:
        """Point ``information_schema.tables/columns`` at temporary views of Spark's catalog.

        Only the schema (and table) the statement asks about are listed: their names come from
        the parameters ``schema_name`` and ``table_name`` every such statement binds.
        """
        values = dict(params or {})
        schema = str(values.get("schema_name", self.schema))
        wanted = values.get("table_name")
        names = [name for name in self._list_tables(schema)
                 if not name.endswith((_NEXT, _BACKUP)) and wanted in (None, name)]

        def replace(node: exp.Expr) -> exp.Expr:
            if not isinstance(node, exp.Table) or node.db.lower() != "information_schema":
                return node
            kind = node.name.lower()
            if kind not in _INFO_VIEWS:
                raise UnsupportedOperationError(
                    f"information_schema.{kind} is not available on the spark backend")
            self._catalog_view(kind, schema, names)
            view = exp.Table(this=identifier(_INFO_VIEWS[kind]))
            if node.args.get("alias") is not None:
                view.set("alias", node.args["alias"].copy())
            return view

        return tree.transform(replace, copy=False)

    def _catalog_view(self, kind: str, schema: str, names: Sequence[str]) -> None:
        if kind == "tables":
            rows: list[tuple[Any, ...]] = [(schema, name) for name in names]
            shape = "table_schema STRING, table_name STRING"
        else:
            rows = []
            for name in names:
                for position, (column, spark_type) in enumerate(
                        self._column_types(exp.Table(this=identifier(name),
                                                     db=identifier(schema))), start=1):
                    rows.append((schema, name, column, position,
                                 _TYPE_NAMES.get(spark_type, spark_type)))
            shape = ("table_schema STRING, table_name STRING, column_name STRING, "
                     "ordinal_position INT, data_type STRING")
        self._spark.createDataFrame(rows, shape).createOrReplaceTempView(_INFO_VIEWS[kind])

    # ---- bulk paths --------------------------------------------------------------------------
    def _numbered(self, frame: Any, target: exp.Table, columns: Sequence[str]) -> int:
        """Save ``frame`` as ``target(pos, columns...)``, pos = 1-based order in the file."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        order = Window.orderBy(F.monotonically_increasing_id())
        numbered = frame.select(F.row_number().over(order).cast("bigint").alias("pos"),
                                *columns)
        name = target.sql(dialect=DIALECT)
        numbered.write.format("parquet").saveAsTable(name)
        return int(self.execute(f"SELECT count(*) FROM {name}", fetch=True)[0][0])

    def load_lines(self, path: Path, target: exp.Table) -> int:
        # The text source splits at \n or \r\n and keeps the files' order: monotonically
        # increasing ids follow the file, so row_number() over them is the line number.
        try:
            frame = self._spark.read.option("wholetext", "false").text(str(path))
            return self._numbered(frame.withColumnRenamed("value", "line"), target, ["line"])
        except UnsupportedOperationError:
            raise
        except Exception as error:
            raise InputError(f"{path}: Spark could not read it: {one_line(error)}") from None

    def load_delimited(
        self, path: Path, target: exp.Table, n_columns: int, delimiter: str, quoted: bool
    ) -> int:
        from pyspark.sql import functions as F

        names = [f"c{i}" for i in range(1, n_columns + 1)]
        shape = ", ".join(f"{name} STRING" for name in names) + ", _corrupt STRING"
        reader = (self._spark.read.schema(shape).option("header", "true")
                  .option("sep", delimiter).option("mode", "PERMISSIVE")
                  .option("columnNameOfCorruptRecord", "_corrupt")
                  .option("quote", '"' if quoted else "\u0000")
                  .option("escape", '"' if quoted else "\u0000")
                  .option("multiLine", "true" if quoted else "false")
                  .option("ignoreLeadingWhiteSpace", "false")
                  .option("ignoreTrailingWhiteSpace", "false"))
        try:
            frame = reader.csv(str(path)).cache()
            ragged = (frame.select(F.monotonically_increasing_id().alias("id"), "_corrupt")
                      .where(F.col("_corrupt").isNotNull()).orderBy("id").limit(1).collect())
            if ragged:
                self._ragged(path, frame, str(ragged[0][1]), delimiter, n_columns)
            count = self._numbered(frame.drop("_corrupt"), target, names)
            frame.unpersist()
            return count
        except (InputError, UnsupportedOperationError):
            raise
        except Exception as error:
            raise InputError(f"{path}: Spark could not read it: {one_line(error)}") from None

    def _ragged(self, path: Path, frame: Any, record: str, delimiter: str,
                n_columns: int) -> None:
        """Refuse the first row of another width, naming its line (header = line 1)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        order = Window.orderBy(F.monotonically_increasing_id())
        line = (frame.select(F.row_number().over(order).alias("pos"), "_corrupt")
                .where(F.col("_corrupt").isNotNull()).orderBy("pos").limit(1).collect())
        found = len(record.split(delimiter))
        raise ragged_row_error(path, int(line[0][0]) + 1 if line else 0, n_columns,
                               str(found))

    def _copy_out(
        self, body: str, path: Path, delimiter: str, header: bool, quoted: bool, params: Params
    ) -> None:
        from pyspark.sql import functions as F

        try:
            frame = self._spark.sql(body, args=dict(params) if params else None)
            columns = frame.columns
            scratch = Path(tempfile.mkdtemp(prefix="setanon-spark-export-"))
            try:
                if quoted:
                    (frame.write.mode("overwrite").option("sep", delimiter)
                     .option("quote", '"').option("escape", '"').option("header", "false")
                     .option("nullValue", "").option("emptyValue", '""')
                     # the CSV writer trims both ends of every value by default
                     .option("ignoreLeadingWhiteSpace", "false")
                     .option("ignoreTrailingWhiteSpace", "false")
                     .csv(str(scratch / "out")))
                else:
                    line = F.concat_ws(delimiter, *(F.coalesce(F.col(f"`{c}`").cast("string"),
                                                                F.lit("")) for c in columns))
                    frame.select(line.alias("line")).write.mode("overwrite").text(
                        str(scratch / "out"))
                with path.open("wb") as out:
                    if header:
                        out.write((delimiter.join(columns) + "\n").encode("utf-8"))
                    for part in sorted((scratch / "out").glob("part-*")):
                        with part.open("rb") as chunk:
                            shutil.copyfileobj(chunk, out)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        except KeyboardInterrupt:
            raise
        except OSError:
            raise
        except Exception as error:
            raise self._database_error(error, f"exporting to {path}") from None

    def exclusive(self) -> bool:
        return True  # the embedded Derby metastore admits one process

    def hex_prefix_value(self, digest: exp.Expr) -> exp.Expr:
        # CAST(conv(8 hex digits, 16, 10) AS BIGINT): Spark's base conversion, one function
        # instead of the portable 16 text functions a row (as DuckDB's and PostgreSQL's casts).
        return exp.cast(exp.func("conv", hex_prefix(digest), exp.Literal.number(16),
                                 exp.Literal.number(10)), "BIGINT")

    def close(self) -> None:
        """Nothing to close: the process's Spark session is shared and ends with the process."""
        self._spark.catalog.clearCache()
