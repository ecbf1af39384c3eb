"""What the Spark backend emulates: transactions by compensation, UPDATE/DELETE by rewriting,
the refusal of in-place work, and separate processes sharing one warehouse; each on the embedded
session and over Spark Connect (a server per test session)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.cli import main
from setanon_sql.errors import InputError, UnsupportedOperationError
from setanon_sql.models import require_model
from setanon_sql.sqlrender import with_alias
from tests.conftest import SPARK, SPARK_CONNECT, DbUrl, write
from tests.oracle import km_oracle

spark_only = pytest.mark.parametrize("backend_name", [SPARK, SPARK_CONNECT], indirect=True)
connect_only = pytest.mark.parametrize("backend_name", [SPARK_CONNECT], indirect=True)


def _rows(db: Backend, table: exp.Table) -> list[tuple]:
    return sorted(db.execute(f"SELECT * FROM {db.render(table)}", fetch=True))


@spark_only
def test_a_failed_transaction_leaves_nothing_behind(db: Backend) -> None:
    schema_version = db.table("schema_version")
    before = _rows(db, schema_version)
    tables = db.table_names("")
    scratch = db.table("scratch")
    with pytest.raises(RuntimeError, match="boom"), db.transaction():
        db.materialize(scratch, exp.select(exp.Literal.number(1).as_("x")))
        db.run("schema_version_insert", {"version": 99, "name": "x"},
               tables=db.catalog_tables("schema_version"))
        db.run(exp.update(schema_version, {"name": exp.Literal.string("changed")}))
        raise RuntimeError("boom")
    assert db.table_names("") == tables
    assert _rows(db, schema_version) == before


@spark_only
def test_update_and_delete_rewrite_only_the_rows_they_match(db: Backend) -> None:
    table = db.table("t")
    db.materialize(table, exp.union(
        *(exp.select(exp.Literal.number(i).as_("a"), exp.Literal.string(f"v{i}").as_("b"))
          for i in range(1, 5)), distinct=False))
    db.run(exp.update(table, {"b": exp.Literal.string("new")}, where="a >= 3"))
    db.run(exp.delete(table, where="a = 1 OR b IS NULL"))
    assert _rows(db, table) == [(2, "v2"), (3, "new"), (4, "new")]
    delta = db.table("delta")
    db.materialize(delta, exp.select(exp.Literal.number(4).as_("a"),
                                     exp.Literal.string("!").as_("suffix")))
    db.run(exp.Update(this=with_alias(table, "s"), expressions=[
        exp.EQ(this=exp.column("b"), expression=exp.func(
            "concat", exp.column("b", "s"), exp.column("suffix", "d")))],
        from_=exp.From(this=with_alias(delta, "d")),
        where=exp.Where(this=exp.column("a", "s").eq(exp.column("a", "d")))))
    assert _rows(db, table) == [(2, "v2"), (3, "new"), (4, "new!")]
    assert db.table_names("t") == ["t"]


@spark_only
def test_failed_load_is_rolled_back(db: Backend, tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.dat", "1 2 3\n4 x 5\n")
    tables = db.table_names("")
    with pytest.raises(InputError, match="x"):
        api.load_transactions(db, bad, "bad", fmt="fimi")
    assert db.table_names("") == tables
    assert db.query("dataset_list", tables=db.catalog_tables("datasets")) == []


@spark_only
def test_in_place_is_refused_before_anything_is_written(db: Backend, tmp_path: Path) -> None:
    dataset = api.load_transactions(db, write(tmp_path / "d.dat", "1 2\n2 3\n1 3\n"), "d")
    with pytest.raises(UnsupportedOperationError,
                       match="--in-place is not available on the spark backend: its tables "
                             "have no transactions"):
        api.anonymize(db, dataset, require_model("km"), {"k": "2", "m": 1}, seed=1,
                      in_place=True)
    assert _rows(db, db.table("runs")) == []


@pytest.mark.spark
def test_separate_processes_share_the_warehouse(spark_warehouse: Path, tmp_path: Path) -> None:
    # Its own warehouse: this test session's Spark holds the shared one's metastore (the
    # fixture only checks that Java and PySpark are there).
    env = {**os.environ, "SETANON_DB": f"spark://local[1]?warehouse={tmp_path / 'wh'}"}
    data = write(tmp_path / "d.dat", "1 2\n2 3\n1 3\n")

    def setanon(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "setanon_sql", *args], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        # Spark's start-up notices and PySpark's warning about pandas 3 stay off the user's
        # terminal (the JVM's own line about incubator modules cannot be turned off).
        noise = [line for line in done.stderr.splitlines()
                 if any(word in line for word in (" WARN ", "log4j", "log level", "Warning"))]
        assert noise == []
        return done.stdout

    setanon("load", "transactions", str(data), "--name", "d")
    assert "d" in setanon("datasets")


@spark_only
def test_every_command_of_a_km_run_works_on_spark(db_url: DbUrl, tmp_path: Path) -> None:
    """The README's Spark section: load -> risk -> anonymize -> verify -> export -> report ->
    runs -> drop, each its own command, with the published output checked by the oracle."""
    rng = random.Random(7)
    lines = [" ".join(sorted({str(rng.randint(1, 8)) for _ in range(rng.randint(1, 4))},
                             key=int)) for _ in range(40)]
    data = write(tmp_path / "b.dat", "\n".join(lines) + "\n")
    runner = CliRunner()

    def setanon(*args: str) -> str:
        result = runner.invoke(main, [*args, *db_url.args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    assert "loaded b: 40 records" in setanon("load", "transactions", str(data), "--name", "b")
    hierarchy = write(tmp_path / "h.txt", "".join(f"{i};g{(i - 1) // 4};*\n" for i in range(1, 9)))
    setanon("load", "hierarchy", str(hierarchy), "--name", "b")
    assert "unicity" in setanon("risk", "b", "--m", "2", "--epsilon", "0.2", "--delta", "0.2")
    setanon("anonymize", "b", "--model", "km", "--k", "3", "--m", "2", "--seed", "1")
    assert "guarantee met" in setanon("verify", "b", "--run", "latest")
    out = tmp_path / "o.dat"
    setanon("export", "b", "--run", "latest", "-o", str(out), "--mapping",
            str(tmp_path / "map.txt"))
    published = km_oracle.read_fimi(out)
    assert len(published) == 40
    assert km_oracle.km_violations(published, [3, 3], 2) == []
    setanon("report", "b", "--run", "latest", "-o", str(tmp_path / "r.html"))
    assert (tmp_path / "r.html").read_text(encoding="utf-8").lstrip().lower().startswith(
        "<!doctype html")
    assert "km" in setanon("runs", "b")
    setanon("drop", "b")
    assert "b" not in setanon("datasets")


@connect_only
def test_a_killed_clients_transaction_is_undone_by_the_next_writer_not_a_reader(
        db: Backend) -> None:
    """Over Connect, several clients may read: only a writer repairs what a dead one left."""
    from setanon_sql.backends import connect

    tables = db.table_names("")
    scratch = db.table("scratch")
    abandoned = db.transaction()
    abandoned.__enter__()  # a client killed inside a transaction: its journal stays
    db.materialize(scratch, exp.select(exp.Literal.number(1).as_("x")))
    reader = connect(db.url, db.schema)
    assert reader.table_names("scratch") == ["scratch"]  # reading repairs nothing
    writer = connect(db.url, db.schema)
    writer.materialize(writer.table("other"), exp.select(exp.Literal.number(2).as_("y")))
    assert writer.table_names("") == sorted([*tables, "other"])


@connect_only
def test_a_live_writer_is_not_undone_and_a_killed_one_is(db: Backend) -> None:
    """A writer that still runs keeps its transaction (a second writer is refused, naming it);
    once it is killed, the next writer rolls its transaction back."""
    from setanon_sql.backends import connect
    from setanon_sql.errors import DatabaseLockedError

    db.materialize(db.table("kept"), exp.select(exp.Literal.number(1).as_("x")))
    script = (
        "import sys, time\n"
        "from sqlglot import exp\n"
        "from setanon_sql.backends import connect\n"
        "b = connect(sys.argv[1], sys.argv[2])\n"
        "t = b.transaction(); t.__enter__()\n"
        "b.materialize(b.table('scratch'), exp.select(exp.Literal.number(1).as_('x')))\n"
        "b.drop_table(b.table('kept'))\n"
        "print('ready', flush=True); time.sleep(600)\n")
    writer = subprocess.Popen([sys.executable, "-c", script, db.url, db.schema],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        second = connect(db.url, db.schema)
        with pytest.raises(DatabaseLockedError,
                           match=f"is being written by process {writer.pid} on this host"):
            second.materialize(second.table("other"), exp.select(exp.Literal.number(2)))
    finally:
        writer.kill()
        writer.wait()
    third = connect(db.url, db.schema)
    third.materialize(third.table("other"), exp.select(exp.Literal.number(2).as_("y")))
    names = third.table_names("")
    assert "scratch" not in names and "kept" in names and "other" in names


@connect_only
def test_separate_client_processes_share_the_clusters_catalog(db_url: DbUrl,
                                                             tmp_path: Path) -> None:
    env = {**os.environ, "SETANON_DB": db_url.url}
    data = write(tmp_path / "d.dat", "1 2\n2 3\n1 3\n")

    def setanon(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "setanon_sql", *args, "--schema",
                               db_url.schema], env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
        return done.stdout

    setanon("load", "transactions", str(data), "--name", "d")
    assert " d " in setanon("datasets")
