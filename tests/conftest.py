"""Fixtures shared by every test: one suite, run against every backend.

``db`` is an open backend with a fresh setanon schema (DuckDB in memory, or a fresh schema in a
PostgreSQL server); ``db_url`` is a URL plus schema for tests that go through the CLI. PostgreSQL
comes from ``$SETANON_TEST_PG_URL``, a testcontainers container, or the local server binaries
(see tests/support/pg_server.py). Without one, postgres tests skip, except under CI=true, where
they fail; so do the tests that read ../shared/data when it is missing.
"""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from setanon_sql.api import open_database
from setanon_sql.backends.base import Backend
from tests.support.pg_server import postgres_url

SHARED_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"

BACKENDS = [
    pytest.param("duckdb", marks=pytest.mark.duckdb),
    pytest.param("postgres", marks=pytest.mark.postgres),
]
# Spark runs each statement in ~0.1-1 s, so the suite runs a test on Spark only when the test
# (or its module) opts in with @pytest.mark.on_spark: the CI budget stays bounded.
SPARK = pytest.param("spark", marks=pytest.mark.spark)
# Over Spark Connect (sc://, one server per test session) the same SQL reaches the same engine
# through a gRPC client: only the transport differs. So Connect runs a smoke set: the tests that
# opt in with @pytest.mark.on_spark(connect=True) (one oracle test per model, the CLI chain, the
# loaders and generators) and test_spark.py's own, which exercise the transport (separate client
# processes, a killed client's transaction). Running every Spark test twice took a quarter of
# CI's 90 minutes (stop 66: 1,728 tests in 4,695.6 s, the 40 slowest all on Spark).
SPARK_CONNECT = pytest.param("spark_connect", marks=[pytest.mark.spark,
                                                     pytest.mark.spark_connect])
SPARK_NAMES = ("spark", "spark_connect")


def runs_spark(nodeid: str) -> bool:
    """Whether the test ``nodeid`` starts Spark: a spark or spark_connect parameter, or
    test_spark.py's (its subprocess test has none)."""
    path, _, name = nodeid.partition("::")
    if path.endswith("test_spark.py"):
        return True
    params = name[name.find("[") + 1:-1] if name.endswith("]") else ""
    return any(part in SPARK_NAMES for part in params.split("-"))


if importlib.util.find_spec("xdist") is not None:
    def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
        """pytest-xdist's workers (``-n 2`` in pyproject.toml): one runs every Spark test, in
        one Spark session and one Connect server, while the other runs the DuckDB and
        PostgreSQL tests. Spark's JVM keeps about one core busy, so the two overlap. (xdist's
        own ``--dist loadgroup`` does not group under pytest 9.2, whose items no longer keep
        the node id where xdist appends the group's name, pytest-xdist issue #1386; node ids
        are grouped here instead.)"""
        from xdist.scheduler import LoadScopeScheduling

        class SparkOnOneWorker(LoadScopeScheduling):
            def _split_scope(self, nodeid: str) -> str:
                return "spark" if runs_spark(nodeid) else nodeid

        return SparkOnOneWorker(config, log)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``backend_name`` over DuckDB and PostgreSQL, and Spark (and Spark Connect)
    where opted in."""
    explicit = any("backend_name" in str(mark.args[0])
                   for mark in metafunc.definition.iter_markers("parametrize"))
    if "backend_name" in metafunc.fixturenames and not explicit:
        mark = metafunc.definition.get_closest_marker("on_spark")
        backends = list(BACKENDS)
        if mark is not None:
            backends.append(SPARK)
            if mark.kwargs.get("connect", False):
                backends.append(SPARK_CONNECT)
        metafunc.parametrize("backend_name", backends, indirect=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``@pytest.mark.on_spark(seeds=[1])``: of a seed-parametrized test, Spark runs only those;
    ``connect=[1]`` narrows Spark Connect further (``connect=True``: the same seeds)."""
    kept, dropped = [], []
    for item in items:
        mark = item.get_closest_marker("on_spark")
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("backend_name") if callspec is not None else None
        if mark is None or callspec is None or backend not in SPARK_NAMES:
            kept.append(item)
            continue
        seeds = mark.kwargs.get("seeds")
        connect = mark.kwargs.get("connect")
        if backend == "spark_connect" and isinstance(connect, list):
            seeds = connect
        if seeds is not None and callspec.params.get("seed") not in seeds:
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(scope="session")
def spark_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One Spark session per test session (Spark allows one per process): its warehouse.

    Without Java or PySpark the spark tests skip, except under CI=true, where they fail.
    """
    import shutil

    missing = None
    try:
        import pyspark  # noqa: F401
    except ImportError:
        missing = "PySpark is not installed (pip install -e '.[spark]')"
    if missing is None and shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        missing = "no Java runtime (apt-get install openjdk-17-jre-headless)"
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {missing}")
        pytest.skip(missing)
    # Small data: one shuffle partition and no adaptive re-planning (measured: a quarter less
    # time per statement on tiny tables), no whole-stage code generation (stop 87: five
    # Spark tests took 249 s without it, 264-297 s with it, run alone).
    os.environ.setdefault("SETANON_SPARK_PARTITIONS", "1")
    os.environ.setdefault("SETANON_SPARK_ADAPTIVE", "false")
    os.environ.setdefault("SETANON_SPARK_WHOLESTAGE", "false")
    return tmp_path_factory.mktemp("spark-warehouse")


@pytest.fixture(scope="session")
def spark_connect_url(spark_warehouse: Path,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One Spark Connect server per test session (tests/support/spark_connect_server.py)."""
    from setanon_sql.backends.spark_connect import stop_sessions
    from tests.support.spark_connect_server import spark_connect_server

    with spark_connect_server(tmp_path_factory.mktemp("spark-connect")) as url:
        yield url
        stop_sessions()


def _drop_connect_schema(url: str, *schemas: str) -> None:
    from setanon_sql.backends import connect

    backend = connect(url, schemas[0])
    for schema in schemas:
        backend.execute(f"DROP DATABASE IF EXISTS `{schema}` CASCADE")
    backend.close()


def _spark_url(warehouse: Path) -> str:
    return f"spark://local[2]?warehouse={warehouse}"


def _drop_spark_schema(warehouse: Path, *schemas: str) -> None:
    from setanon_sql.backends import connect

    backend = connect(_spark_url(warehouse), schemas[0])
    for schema in schemas:
        backend.execute(f"DROP DATABASE IF EXISTS `{schema}` CASCADE")
    backend.close()


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str | None]:
    with postgres_url() as url:
        yield url


@dataclass(frozen=True)
class DbUrl:
    """Where a CLI test's database is: pass ``args`` to every setanon command."""

    url: str
    schema: str

    @property
    def args(self) -> list[str]:
        return ["--db", self.url, "--schema", self.schema]


def _require_pg(url: str | None) -> str:
    if url is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but no PostgreSQL server could be found or started")
        pytest.skip("no PostgreSQL available (set SETANON_TEST_PG_URL or install postgresql)")
    return url


def _drop_schemas(url: str, schemas: list[str]) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        for schema in schemas:
            con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def backend_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def user_schema() -> str:
    """A fresh name for a schema of 'user' tables (attach, in-place tests)."""
    return f"u_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def db(backend_name: str, request: pytest.FixtureRequest, user_schema: str) -> Iterator[Backend]:
    schema = f"t_{uuid.uuid4().hex[:10]}"
    if backend_name == "duckdb":
        backend = open_database("duckdb:///:memory:", schema)
        yield backend
        backend.close()
        return
    if backend_name == "spark":
        warehouse = request.getfixturevalue("spark_warehouse")
        backend = open_database(_spark_url(warehouse), schema)
        try:
            yield backend
        finally:
            backend.close()
            _drop_spark_schema(warehouse, schema, user_schema)
        return
    if backend_name == "spark_connect":
        url = request.getfixturevalue("spark_connect_url")
        backend = open_database(url, schema)
        try:
            yield backend
        finally:
            backend.close()
            _drop_connect_schema(url, schema, user_schema)
        return
    url = _require_pg(request.getfixturevalue("pg_server_url"))
    backend = open_database(url, schema)
    try:
        yield backend
    finally:
        backend.close()
        _drop_schemas(url, [schema, user_schema])


@pytest.fixture
def db_url(backend_name: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DbUrl]:
    schema = f"t_{uuid.uuid4().hex[:10]}"
    if backend_name == "duckdb":
        yield DbUrl(f"duckdb:///{tmp_path / 'cli.duckdb'}", schema)
        return
    if backend_name == "spark":
        warehouse = request.getfixturevalue("spark_warehouse")
        yield DbUrl(_spark_url(warehouse), schema)
        _drop_spark_schema(warehouse, schema)
        return
    if backend_name == "spark_connect":
        url = request.getfixturevalue("spark_connect_url")
        yield DbUrl(url, schema)
        _drop_connect_schema(url, schema)
        return
    url = _require_pg(request.getfixturevalue("pg_server_url"))
    yield DbUrl(url, schema)
    _drop_schemas(url, [schema])


@pytest.fixture
def shared_data() -> Path:
    """The public datasets beside the repository (../shared/data).

    CI clones the repository with ``shared/`` beside it, so under CI=true a missing folder is a
    broken set-up, not a reason to skip: the tests that read the real files fail instead.
    """
    if not SHARED_DATA.is_dir():
        message = f"shared datasets not found at {SHARED_DATA}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {message}: CI must clone with shared/ beside the repository")
        pytest.skip(message)
    return SHARED_DATA


def write(path: Path, text: str) -> Path:
    """Write ``text`` exactly (no newline translation) and return the path."""
    path.write_bytes(text.encode("utf-8"))
    return path
