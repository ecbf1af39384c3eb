"""A run's process as other processes see it, and errors as the user sees them (issue 21, items
2, 5 and 8): a live run is never taken for dead, a driver error is one line with exit code 3,
a locked database is waited for with --wait and its holder is named."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.errors import InterruptedRunError
from setanon_sql.models.kanon.generate import generate_claims
from setanon_sql.runs import cleanup_runs, last_progress, list_runs, recorded_run
from tests.conftest import DbUrl, write
from tests.integration.test_crash import CLI
from tests.integration.test_kill import (
    TIMEOUT,
    anonymize_command,
    claims,
    listed_status,
    start_searching,
)

__all__ = ["claims"]  # the fixture, imported for pytest


def test_a_live_run_is_not_taken_for_dead(db: Backend, tmp_path: Path,
                                          pg_server_url: str | None) -> None:
    dataset = api.load_transactions(db, write(tmp_path / "b.dat", "1 2\n2\n"), "b")
    other = (api.open_database(pg_server_url, db.schema)
             if db.name == "postgres" and pg_server_url else None)
    try:
        with recorded_run(db, dataset, "drop", {}, 1) as context:
            db.run("run_set_phase", {"run_id": context.run_id, "phase": "search"},
                   db.catalog_tables("runs"))
            assert [r["status"] for r in list_runs(db)] == ["running"]  # its own process
            assert cleanup_runs(db) == [] and [r["status"] for r in list_runs(db)] == ["running"]
            if other is not None:  # another process: the run's lock is held
                assert cleanup_runs(other) == []
                assert [r["status"] for r in list_runs(other)] == ["running"]
        assert [r["status"] for r in list_runs(db)] == ["done"]
        if other is not None:  # the run ended: its lock is free, and it is not 'running'
            assert [r["status"] for r in list_runs(other)] == ["done"]
    finally:
        if other is not None:
            other.close()


def _with_query(db_url: DbUrl, **query: str) -> str:
    return make_url(db_url.url).update_query_dict(query).render_as_string(hide_password=False)


def test_database_error_is_one_line_with_exit_code_3(db_url: DbUrl, backend_name: str) -> None:
    # Real refusals by the engine: DuckDB out of memory, PostgreSQL's statement timeout.
    if backend_name == "duckdb":
        url, sqlstate = _with_query(db_url, memory_limit="2MB"), "53200"
    else:
        url, sqlstate = _with_query(db_url, options="-c statement_timeout=20"), "57014"
    done = subprocess.run([*CLI, "generate", "claims", "--records", "200000", "--db", url,
                           "--schema", db_url.schema], capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("setanon: error: ") and line.endswith(f"(SQLSTATE {sqlstate})")


@pytest.mark.duckdb
def test_wait_waits_for_the_duckdb_file_and_the_refusal_names_its_holder(
        tmp_path: Path) -> None:
    file = tmp_path / "w.duckdb"
    url = f"duckdb:///{file}"
    with api.open_database(url, "setanon") as db:
        generate_claims(db, "claims", 500, seed=1)
    command = [*CLI, "anonymize", "claims", "--model", "kanon", "--k", "5", "--seed", "1",
               "--db", url]
    holder = subprocess.Popen([sys.executable, "-c", (
        f"import duckdb, time; c = duckdb.connect({str(file)!r}); print('held', flush=True); "
        "time.sleep(4); c.close(); time.sleep(60)")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        refused = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
        assert refused.returncode == 2
        [line] = refused.stderr.splitlines()
        assert f"in use by another process: process {holder.pid} (" in line
        assert "--wait" in line
        started = time.monotonic()
        waited = subprocess.run([*command, "--wait", "60"], capture_output=True, text=True,
                                timeout=TIMEOUT)
        assert waited.returncode == 0, waited.stderr
        assert time.monotonic() - started > 1.0  # it did wait for the holder to let go
        short = subprocess.Popen([sys.executable, "-c", (
            f"import duckdb, time; c = duckdb.connect({str(file)!r}); print('held', flush=True);"
            " time.sleep(60)")], stdout=subprocess.PIPE, text=True)
        try:
            assert short.stdout is not None and short.stdout.readline() == "held\n"
            started = time.monotonic()
            timed_out = subprocess.run([*command, "--wait", "1.5"], capture_output=True,
                                       text=True, timeout=TIMEOUT)
            assert timed_out.returncode == 2 and "(waited 1.5 s)" in timed_out.stderr
            assert time.monotonic() - started >= 1.5
        finally:
            short.kill()
            short.wait()
    finally:
        holder.kill()
        holder.wait()


def test_a_second_run_is_refused_naming_the_first(claims: DbUrl, backend_name: str) -> None:
    first = start_searching(claims)
    try:
        second = subprocess.run(anonymize_command(claims), capture_output=True, text=True,
                                timeout=TIMEOUT)
        assert second.returncode == 2 and "Traceback" not in second.stderr
        [line] = second.stderr.splitlines()
        if backend_name == "duckdb":  # the file's lock: DuckDB names the process
            assert f"setanon run 1: process {first.pid} (" in line
            assert "anonymize claims" in line
        else:  # the dataset's lock: the catalog names the run
            assert f"in use by setanon run 1 (process {first.pid} on " in line
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert listed_status(claims, 1)[0] == "abandoned"
    with api.open_database(claims.url, claims.schema) as db:  # the refused one made no run
        assert [(r["run_id"], r["status"]) for r in list_runs(db)] == [(1, "abandoned")]


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, InterruptedRunError])
def test_an_interrupted_run_is_marked_interrupted_not_failed(
        db: Backend, tmp_path: Path, interrupt: type[BaseException]) -> None:
    dataset = api.load_transactions(db, write(tmp_path / "b.dat", "1 2\n2\n"), "b")
    with pytest.raises(interrupt), recorded_run(db, dataset, "drop", {}, 1) as context:
        db.materialize(context.table("work"), exp.select(exp.Literal.number(1).as_("x")))
        raise interrupt()
    [run] = list_runs(db)
    assert run["status"] == "interrupted" and db.table_names(f"r{run['run_id']}_") == []
    progress = last_progress()
    assert progress is not None and (progress.run_id, progress.interrupted) == (run["run_id"], True)
