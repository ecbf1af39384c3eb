"""How setanon's own connection is set up for speed, without reconfiguring anyone else's.

PostgreSQL: work_mem, jit and synchronous_commit come from the URL (``?work_mem=64MB&jit=on``)
or a default applied only where nobody configured them, always for setanon's session alone;
setanon's explicit transactions commit durably where its default made commits asynchronous.
Working tables (a run's own, never published) are UNLOGGED and skip autovacuum on PostgreSQL;
on every backend they hold what their query gives.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url
from sqlglot import exp

from setanon_sql import sqlrender
from setanon_sql.api import open_database
from setanon_sql.backends import connect
from setanon_sql.backends.base import Backend
from setanon_sql.backends.postgres import SESSION_SETTINGS
from setanon_sql.errors import DatabaseError, UsageError
from tests.conftest import _require_pg


def _with_query(url: str, **query: str) -> str:
    return make_url(url).update_query_dict(query).render_as_string(hide_password=False)


def _setting(backend: Backend, name: str) -> str:
    return str(backend.execute("SELECT current_setting(%(name)s)", {"name": name},
                               fetch=True)[0][0])


@pytest.mark.postgres
@pytest.mark.parametrize(("name", "chosen"), [("work_mem", "64MB"), ("jit", "on"),
                                             ("synchronous_commit", "on")])
def test_a_setting_from_the_url_or_setanons_default_for_this_session_only(
        pg_server_url: str | None, name: str, chosen: str) -> None:
    url = _require_pg(pg_server_url)
    with psycopg.connect(url, autocommit=True) as other:
        before = other.execute("SELECT current_setting(%s)", (name,)).fetchone()
        with connect(url, "s") as backend:
            assert _setting(backend, name) == SESSION_SETTINGS[name].default
        with connect(_with_query(url, **{name: chosen}), "s") as backend:
            assert _setting(backend, name) == chosen
        # Another session, and the server's configuration, are untouched.
        assert other.execute("SELECT current_setting(%s)", (name,)).fetchone() == before


@pytest.mark.postgres
@pytest.mark.parametrize(("name", "configured"), [("work_mem", "2MB"), ("jit", "on"),
                                                  ("synchronous_commit", "local")])
def test_a_setting_someone_configured_is_kept(pg_server_url: str | None, name: str,
                                              configured: str) -> None:
    # Set through libpq's options, as a role's or the server's setting would be: not 'default'.
    url = _with_query(_require_pg(pg_server_url), options=f"-c {name}={configured}")
    with connect(url, "s") as backend:
        assert _setting(backend, name) == configured
        for unset, setting in SESSION_SETTINGS.items():
            if unset != name:  # the others still take setanon's default
                assert _setting(backend, unset) == setting.default


@pytest.mark.postgres
@pytest.mark.parametrize(("name", "bad", "hint"), [
    ("work_mem", "lots", "write a size such as work_mem=256MB"),
    ("jit", "sometimes", "write jit=off or jit=on"),
    ("synchronous_commit", "later", "write synchronous_commit=off or synchronous_commit=on")])
def test_a_bad_setting_is_named(pg_server_url: str | None, name: str, bad: str,
                                hint: str) -> None:
    url = _with_query(_require_pg(pg_server_url), **{name: bad})
    with pytest.raises(UsageError, match=rf"database URL setting {name}='{bad}' is not valid "
                                         rf"for PostgreSQL \(.*\); {hint}"):
        connect(url, "s")


@pytest.mark.postgres
@pytest.mark.parametrize(("query", "outside", "inside"), [
    ({}, "off", "on"),  # setanon's default: asynchronous work, durable transactions
    ({"synchronous_commit": "off"}, "off", "off"),  # the URL's choice holds everywhere
    ({"synchronous_commit": "on"}, "on", "on"),
    ({"options": "-c synchronous_commit=local"}, "local", "local")])  # configured: kept
def test_transactions_commit_durably_where_setanons_default_made_commits_asynchronous(
        pg_server_url: str | None, query: dict[str, str], outside: str, inside: str) -> None:
    """A run's statements commit without waiting for the log's flush, but what setanon
    writes in a transaction (a load, a published table, a change in place) is durable when
    the commit returns; nested blocks and the statements after keep the session's value."""
    url = _with_query(_require_pg(pg_server_url), **query)
    with connect(url, "s") as backend:
        assert _setting(backend, "synchronous_commit") == outside
        with backend.transaction():
            assert _setting(backend, "synchronous_commit") == inside
            with backend.transaction():
                assert _setting(backend, "synchronous_commit") == inside
        assert _setting(backend, "synchronous_commit") == outside
        with pytest.raises(ZeroDivisionError), backend.transaction():
            raise ZeroDivisionError
        assert _setting(backend, "synchronous_commit") == outside


def test_working_tables_hold_their_query_and_skip_wal_and_autovacuum_on_postgres(
        db: Backend, backend_name: str) -> None:
    target = db.table(f"w_{uuid.uuid4().hex[:8]}")
    query = exp.select(exp.alias_(exp.column("n"), "x")).from_(
        exp.values([(1,), (2,), (3,)], alias="v", columns=["n"]))
    db.materialize(target, query, working=True)
    assert sorted(db.query(exp.select("x").from_(target))) == [(1,), (2,), (3,)]
    if backend_name == "postgres":
        persistence, options = db.execute(
            "SELECT relpersistence, reloptions FROM pg_class WHERE oid = %(t)s::regclass",
            {"t": target.sql(dialect="postgres")}, fetch=True)[0]
        assert persistence == "u"
        assert options == ["autovacuum_enabled=false"]  # analyzed by materialize instead
    db.drop_table(target)


def test_the_statement_log_times_what_a_step_runs_on_the_engine(
        db: Backend, backend_name: str) -> None:
    """bench/ profiles sum ``statement_log``: the table a step builds, and on PostgreSQL the
    ANALYZE after it and an access index, are each one timed entry (they were left out)."""
    target = db.table(f"w_{uuid.uuid4().hex[:8]}")
    query = exp.select(exp.alias_(exp.column("n"), "x")).from_(
        exp.values([(1,), (2,)], alias="v", columns=["n"]))
    db.statement_log = []
    try:
        db.materialize(target, query, working=True)
        db.create_access_index(target, ["x"])
        logged = [" ".join(sql.split()[:2]).upper() for sql, _ in db.statement_log]
        assert all(seconds >= 0 for _, seconds in db.statement_log)
    finally:
        db.statement_log = None
        db.drop_table(target)
    assert logged[0] in ("CREATE TABLE", "CREATE UNLOGGED")
    if backend_name == "postgres":
        assert [entry.split()[0] for entry in logged] == ["CREATE", "ANALYZE", "CREATE"]
        assert logged[2] == "CREATE INDEX"


def test_tables_made_inside_working_tables_are_working_tables_and_only_those(
        db: Backend, backend_name: str) -> None:
    """km's search and verify run inside ``working_tables()``: every table they build is a
    working table; the block ends even when it raises, and tables made after it are not."""
    query = exp.select(exp.alias_(exp.column("n"), "x")).from_(
        exp.values([(1,), (2,)], alias="v", columns=["n"]))
    inside, after = (db.table(f"w_{uuid.uuid4().hex[:8]}") for _ in range(2))
    with pytest.raises(RuntimeError), db.working_tables():
        db.materialize(inside, query)
        raise RuntimeError("the block ends here")
    db.materialize(after, query)
    assert sorted(db.query(exp.select("x").from_(inside))) == [(1,), (2,)]
    if backend_name == "postgres":
        persistence = {
            name: db.execute("SELECT relpersistence FROM pg_class WHERE oid = %(t)s::regclass",
                             {"t": table.sql(dialect="postgres")}, fetch=True)[0][0]
            for name, table in (("inside", inside), ("after", after))}
        assert persistence == {"inside": "u", "after": "p"}
    db.drop_table(inside)
    db.drop_table(after)


def test_a_replaced_table_takes_the_new_rows_and_the_work_name_is_gone(
        db: Backend, backend_name: str) -> None:
    """km swaps a rebuilt working table in by renaming it (``replace_table``): the old rows
    go, the new ones stay under the old name, the work name is free, and on PostgreSQL the
    table is still a working table."""
    def values(*rows: int) -> exp.Select:
        return exp.select(exp.alias_(exp.column("n"), "x")).from_(
            exp.values([(r,) for r in rows], alias="v", columns=["n"]))

    tag = uuid.uuid4().hex[:8]
    target, source = db.table(f"w_{tag}_old"), db.table(f"w_{tag}_new")
    db.materialize(target, values(1, 2), working=True)
    db.materialize(source, values(3, 4, 5), working=True)
    db.replace_table(target, source)
    assert sorted(db.query(exp.select("x").from_(target))) == [(3,), (4,), (5,)]
    assert db.table_names(f"w_{tag}") == [f"w_{tag}_old"]
    if backend_name == "postgres":
        persistence = db.execute(
            "SELECT relpersistence FROM pg_class WHERE oid = %(t)s::regclass",
            {"t": target.sql(dialect="postgres")}, fetch=True)[0][0]
        assert persistence == "u"
    # the work name can be built again, and a missing target is no error
    db.materialize(source, values(6), working=True)
    db.drop_table(target)
    db.replace_table(target, source)
    assert db.query(exp.select("x").from_(target)) == [(6,)]
    db.drop_table(target)


@pytest.mark.parametrize("already", ["", "filter_pushdown"])
def test_left_deep_joins_turn_duckdbs_join_order_off_in_the_block_only(already: str) -> None:
    """Inside ``left_deep_joins`` DuckDB's join-order optimizer is off, with whatever was off
    before still off; after the block (also one left by an error) the setting is as it was."""
    backend = connect("duckdb:///:memory:")

    def disabled() -> str:
        return str(backend.execute("SELECT current_setting('disabled_optimizers')",
                                   fetch=True)[0][0])

    backend.execute("SET disabled_optimizers = " + exp.Literal.string(already).sql("duckdb"))
    with backend.left_deep_joins():
        assert set(disabled().split(",")) == {"join_order", *filter(None, [already])}
    assert disabled() == already
    with pytest.raises(ZeroDivisionError), backend.left_deep_joins():
        raise ZeroDivisionError
    assert disabled() == already
    backend.close()


def test_short_lived_working_tables_hold_their_query_and_stay_working_tables(
        db: Backend, backend_name: str) -> None:
    """The rho suppressor builds its rounds' tables inside ``short_lived_tables``: on every
    backend, small or big, they hold what their query gives under the name they were given,
    also after the block ends (nested or left by an error); on PostgreSQL they are still
    UNLOGGED; a dropped one is gone; DuckDB's settings are as before."""
    query = exp.select(exp.alias_(exp.column("n"), "x")).from_(
        exp.values([(1,), (2,), (3,)], alias="v", columns=["n"]))
    inner, outer = (db.table(f"w_{uuid.uuid4().hex[:8]}") for _ in range(2))
    with pytest.raises(RuntimeError), db.short_lived_tables(largest_bytes=1000):
        with db.short_lived_tables(largest_bytes=10**15):
            db.materialize(inner, query, working=True)
        db.materialize(outer, query, working=True)
        raise RuntimeError("the block ends here")
    if backend_name == "duckdb":  # the big block's in the file, the small one's in memory
        assert [db.execute("SELECT temporary FROM duckdb_tables() WHERE table_name = $n",
                           {"n": table.name}, fetch=True) for table in (inner, outer)
                ] == [[(False,)], [(True,)]]
        assert db.execute("SELECT current_setting('force_compression')",
                          fetch=True) == [("auto",)]
    for table in (inner, outer):
        assert sorted(db.query(exp.select("x").from_(table))) == [(1,), (2,), (3,)]
        if backend_name == "postgres":
            assert db.execute("SELECT relpersistence FROM pg_class WHERE oid = %(t)s::regclass",
                              {"t": table.sql(dialect="postgres")}, fetch=True)[0][0] == "u"
        db.drop_table(table)
        assert db.table_names(table.name) == []


def test_duckdb_keeps_small_short_lived_working_tables_out_of_the_file_and_only_those(
        tmp_path: Path) -> None:
    """A working table built inside ``short_lived_tables`` (the rho suppressor's rounds) whose
    block's largest tables fit a quarter of memory_limit is a temporary table of the
    connection, never written to the database file; a working table
    outside the block and a table built without ``working`` inside it (such as a published
    one) are the file's. Under its own name it is read, listed, renamed and dropped (also by
    a run's cleanup, by prefix), inside a transaction that writes to the file too."""
    backend = open_database(f"duckdb:///{tmp_path / 'w.duckdb'}", "s")
    rows = exp.select(exp.alias_(exp.column("range") % 1000, "x")).from_(
        exp.func("range", exp.Literal.number(3000)))
    tables = {name: backend.table(f"w_{name}") for name in ("short", "kept", "working")}
    with backend.short_lived_tables(largest_bytes=1 << 20):
        backend.materialize(tables["short"], rows, working=True)
        backend.materialize(tables["kept"], rows)
        with pytest.raises(DatabaseError):
            backend.materialize(backend.table("w_failed"), exp.select(
                exp.cast(exp.Literal.string("not a number"), "INTEGER").as_("x")), working=True)
    backend.materialize(tables["working"], rows, working=True)

    def where(name: str) -> list[tuple[str, bool]]:
        return backend.execute(
            "SELECT database_name, temporary FROM duckdb_tables() WHERE table_name = $n",
            {"n": name}, fetch=True)

    assert where("w_short") == [("temp", True)]
    assert where("w_kept") == where("w_working") == [(backend.catalog, False)]
    assert where("w_failed") == []
    assert backend.table_names("w_") == ["w_kept", "w_short", "w_working"]
    sums = {backend.query(exp.select(exp.func("sum", exp.column("x"))).from_(
        sqlrender.with_alias(table, "t")))[0] for table in tables.values()}
    assert len(sums) == 1
    # renamed where it is; built again and dropped inside a transaction that writes the file
    backend.replace_table(backend.table("w_renamed"), tables["short"])
    assert where("w_short") == [] and where("w_renamed") == [("temp", True)]
    with backend.transaction(), backend.short_lived_tables(largest_bytes=1 << 20):
        backend.materialize(backend.table("w_again"), exp.select("*").from_(
            backend.table("w_renamed")), working=True)
        backend.drop_table(tables["kept"])
    assert where("w_again") == [("temp", True)]
    for name in backend.table_names("w_"):  # as a failed run's cleanup drops its tables
        backend.drop_table(backend.table(name))
    assert backend.table_names("w_") == []
    assert backend.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary",
                           fetch=True) == [(0,)]
    backend.close()


def test_duckdb_stores_big_short_lived_working_tables_uncompressed_and_only_those(
        tmp_path: Path) -> None:
    """Where the block's largest tables would take more than a quarter of memory_limit, a
    short-lived working table is the file's, stored uncompressed (DuckDB's compression is
    work lost on a table read within a round or two); a working table outside the block, a
    table built without ``working`` inside it, and every statement after keep DuckDB's own
    choice, also after a short-lived table's statement fails."""
    backend = open_database(f"duckdb:///{tmp_path / 'w.duckdb'}?memory_limit=64MB", "s")
    # Enough rows of small integers for whole row groups, which DuckDB would bitpack.
    rows = exp.select(exp.alias_(exp.column("range") % 1000, "x")).from_(
        exp.func("range", exp.Literal.number(300_000)))
    tables = {name: backend.table(f"w_{name}") for name in ("short", "kept", "working")}
    with backend.short_lived_tables(largest_bytes=17 << 20):  # a quarter of 64MB is 16MB
        backend.materialize(tables["short"], rows, working=True)
        backend.materialize(tables["kept"], rows)
        with pytest.raises(DatabaseError):
            backend.materialize(backend.table("w_failed"), exp.select(
                exp.cast(exp.Literal.string("not a number"), "INTEGER").as_("x")), working=True)
        assert backend.execute("SELECT current_setting('force_compression')",
                               fetch=True) == [("auto",)]
    backend.materialize(tables["working"], rows, working=True)
    backend.execute("CHECKPOINT")

    def methods(table: exp.Table) -> set[str]:
        return {str(method) for (method,) in backend.execute(
            "SELECT DISTINCT compression FROM pragma_storage_info($t) "
            "WHERE segment_type <> 'VALIDITY'", {"t": table.sql(dialect="duckdb")},
            fetch=True)}

    assert methods(tables["short"]) == {"Uncompressed"}
    assert "Uncompressed" not in methods(tables["kept"]) | methods(tables["working"])
    assert backend.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary",
                           fetch=True) == [(0,)]
    sums = {backend.query(exp.select(exp.func("sum", exp.column("x"))).from_(table))[0]
            for table in tables.values()}
    assert len(sums) == 1
    backend.close()


@pytest.mark.postgres
def test_left_deep_joins_keep_postgres_joins_as_written_in_the_block_only(
        pg_server_url: str | None) -> None:
    """Inside ``left_deep_joins`` PostgreSQL's join_collapse_limit is 1 (the written chain);
    after the block, also one left by an error, it is what it was."""
    with connect(_require_pg(pg_server_url), "s") as backend:
        before = _setting(backend, "join_collapse_limit")
        assert before != "1"
        with backend.left_deep_joins():
            assert _setting(backend, "join_collapse_limit") == "1"
        assert _setting(backend, "join_collapse_limit") == before
        with pytest.raises(ZeroDivisionError), backend.left_deep_joins():
            raise ZeroDivisionError
        assert _setting(backend, "join_collapse_limit") == before
