"""SIGKILL a `setanon anonymize --in-place` at random moments: the user's table is always either
untouched or fully anonymized (checked by checksums), and killed runs are cleaned up.

The number of kills per backend is ``$SETANON_CRASH_KILLS`` (default 3, to keep the suite fast;
the soak in BENCHMARKS.md, the in-place part, ran 50 per backend). Half the kills land anywhere
in the run, half in its last third, where the apply transaction runs.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from tests.conftest import DbUrl, write
from tests.oracle import inplace_oracle as oracle

KILLS = int(os.environ.get("SETANON_CRASH_KILLS", "3"))
PRODUCTS = [f"p{i}" for i in range(1, 25)]
CLI = [sys.executable, "-c", "from setanon_sql.cli import main; main()"]


def checksum(db: Backend, schema: str) -> tuple[str, list[tuple]]:
    rows = db.execute(f'SELECT * FROM "{schema}".purchases', fetch=True)
    return hashlib.sha256(repr(sorted(rows)).encode()).hexdigest(), rows


def make_table(db: Backend, schema: str, n_customers: int) -> None:
    rng = random.Random(7)
    db.execute(f'CREATE SCHEMA "{schema}"')
    db.execute(f'CREATE TABLE "{schema}".purchases (id INTEGER PRIMARY KEY, customer INTEGER, '
               "product TEXT, qty INTEGER)")
    values = []
    for c in range(1, n_customers + 1):
        for product in rng.sample(PRODUCTS, rng.randint(1, 5)):
            values.append(f"({len(values) + 1}, {c}, '{product}', {rng.randint(1, 9)})")
    db.execute(f'INSERT INTO "{schema}".purchases VALUES {", ".join(values)}')


def in_place_command(db_url: DbUrl, hierarchy: Path) -> list[str]:
    return [*CLI, "anonymize", "shop", "--model", "km", "--k", "60", "--m", "2",
            "--hierarchy", str(hierarchy), "--seed", "1", "--in-place", *db_url.args]


def run_states(db: Backend) -> list[tuple[int, str]]:
    return [(int(r), str(s)) for r, s in db.query(
        exp.select("run_id", "status").from_(db.table("runs")).order_by("run_id"))]


def applied_run(db: Backend) -> int | None:
    return db.scalar(exp.select("run_id").from_(db.table("inplace_applies"))
                     .where(exp.column("state").eq(exp.Literal.string("applied"))))


@pytest.fixture
def crash_db(db_url: DbUrl, user_schema: str, tmp_path: Path) -> tuple[DbUrl, Path]:
    with api.open_database(db_url.url, db_url.schema) as db:
        make_table(db, user_schema, 800)
        api.attach(db, "shop", f"{user_schema}.purchases", "customer", "product")
    lines = [f"{p};g{i // 3};h{i // 6};*" for i, p in enumerate(PRODUCTS)]
    hierarchy = write(tmp_path / "h.txt", "\n".join(lines) + "\n")
    yield db_url, hierarchy
    with api.open_database(db_url.url, db_url.schema) as db:
        db.execute(f'DROP SCHEMA IF EXISTS "{user_schema}" CASCADE')


def test_sigkill_leaves_table_untouched_or_fully_anonymized(
        crash_db: tuple[DbUrl, Path], user_schema: str) -> None:
    db_url, hierarchy = crash_db
    command = in_place_command(db_url, hierarchy)
    with api.open_database(db_url.url, db_url.schema) as db:
        original, original_rows = checksum(db, user_schema)
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    duration = time.perf_counter() - started
    with api.open_database(db_url.url, db_url.schema) as db:
        anonymized, _ = checksum(db, user_schema)
        assert anonymized != original
        api.undo_in_place(db, applied_run(db))
        assert checksum(db, user_schema)[0] == original
    rng = random.Random(11)
    outcomes = {"untouched": 0, "anonymized": 0}
    for kill in range(KILLS):
        low = 0.0 if kill % 2 == 0 else duration * 0.66
        delay = rng.uniform(low, duration)
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        with api.open_database(db_url.url, db_url.schema) as db:
            now, rows = checksum(db, user_schema)
            assert now in (original, anonymized), f"half-applied table after kill {kill}"
            if now == anonymized:
                outcomes["anonymized"] += 1
                api.undo_in_place(db, applied_run(db), wait_seconds=30)
            else:
                outcomes["untouched"] += 1
                assert oracle.same_rows(original_rows, rows) == []
                assert applied_run(db) is None
    with api.open_database(db_url.url, db_url.schema) as db:
        api.cleanup_runs(db)
        states = run_states(db)
        # A killed run is abandoned (seen dead, tables dropped), never left 'running'.
        assert all(status in ("done", "failed", "abandoned") for _, status in states)
        for run_id, status in states:
            if status != "done":
                assert db.table_names(f"r{run_id}_") == []
        assert checksum(db, user_schema)[0] == original
    print(f"kills: {KILLS}, outcomes: {outcomes}, run seconds: {duration:.2f}")


@pytest.mark.postgres
def test_killed_client_statement_is_cancelled_by_the_server(
        pg_server_url: str | None) -> None:
    """A SIGKILLed setanon process must not leave its statement running (nor its locks held)."""
    if pg_server_url is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but no PostgreSQL server could be found or started")
        pytest.skip("no PostgreSQL available")
    marker = f"setanon-kill-{random.randrange(10**9)}"
    code = ("from setanon_sql.backends import connect\n"
            f"b = connect({pg_server_url!r})\n"
            f"b.execute(\"SELECT pg_sleep(120), '{marker}'\")\n")
    child = subprocess.Popen([sys.executable, "-c", code])
    watcher = api.open_database(pg_server_url, "setanon")
    query = (f"SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%{marker}%' "
             "AND pid <> pg_backend_pid()")
    try:
        deadline = time.monotonic() + 30
        while int(watcher.execute(query, fetch=True)[0][0]) == 0:
            assert time.monotonic() < deadline, "the child's statement never started"
            time.sleep(0.2)
        child.send_signal(signal.SIGKILL)
        child.wait()
        deadline = time.monotonic() + 15
        while int(watcher.execute(query, fetch=True)[0][0]) > 0:
            assert time.monotonic() < deadline, "the statement outlived its client by 15 s"
            time.sleep(0.5)
    finally:
        child.kill()
        watcher.close()
