"""Every way --in-place and undo can be refused: a clear message, and nothing written."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.errors import ConnectionFailedError, InputError, PermissionDeniedError
from setanon_sql.models import require_model
from setanon_sql.runs import _lock_key
from tests.conftest import DbUrl, _require_pg, write
from tests.integration.test_inplace import make_shop, rows

RHO = require_model("rho")


def rho_params(tmp_path: Path) -> dict:
    return {"rho": 0.2, "sensitive": str(write(tmp_path / "s.txt", "p1\np2\np3\n"))}


def attach_shop(db: Backend, schema: str, **kwargs) -> api.Dataset:
    return api.attach(db, "shop", f"{schema}.purchases", "customer", "product", **kwargs)


def test_loaded_dataset_cannot_be_changed_in_place(db: Backend, tmp_path: Path) -> None:
    dataset = api.load_transactions(db, write(tmp_path / "d.dat", "1 2\n2 3\n"), "d")
    with pytest.raises(api.UsageError, match=r"was loaded from a file .* no table to change"):
        api.anonymize(db, dataset, RHO, rho_params(tmp_path), seed=1, in_place=True)
    assert api.list_runs(db) == []


def test_table_changed_since_attach_is_refused(db: Backend, user_schema: str,
                                               tmp_path: Path) -> None:
    make_shop(db, user_schema, 1)
    dataset = attach_shop(db, user_schema)
    db.execute(f'INSERT INTO "{user_schema}".purchases VALUES (9999, 1, \'new\', 1, NULL)')
    with pytest.raises(InputError, match=r"changed since it was attached as 'shop' \(1 "):
        api.anonymize(db, dataset, RHO, rho_params(tmp_path), seed=1, in_place=True)
    assert api.list_runs(db) == []


def test_integer_column_cannot_hold_generalized_values(db: Backend, user_schema: str) -> None:
    s = f'"{user_schema}"'
    db.execute(f"CREATE SCHEMA {s}")
    db.execute(f"CREATE TABLE {s}.people (pid INTEGER, birth INTEGER)")
    db.execute(f"CREATE TABLE {s}.dx (pid INTEGER, code TEXT)")
    db.execute(f"INSERT INTO {s}.people VALUES " + ", ".join(
        f"({i}, {1950 + 7 * i})" for i in range(1, 9)))
    db.execute(f"INSERT INTO {s}.dx VALUES " + ", ".join(f"({i}, 'a')" for i in range(1, 9)))
    before = rows(db, user_schema, "people")
    dataset = api.attach(db, "p", f"{user_schema}.dx", "pid", "code",
                         records_table=f"{user_schema}.people")
    with pytest.raises(InputError, match=r"column 'birth' of .*people has type (INTEGER|"
                                         r"integer), which cannot hold \d+ values"):
        api.anonymize(db, dataset, require_model("kanon"), {"k": 4}, seed=1, in_place=True)
    assert rows(db, user_schema, "people") == before
    assert [r["status"] for r in api.list_runs(db)] == ["done"]  # computed, not applied


def test_foreign_key_to_a_deleted_row_rolls_back(db: Backend, user_schema: str,
                                                tmp_path: Path) -> None:
    make_shop(db, user_schema, 1)
    s = f'"{user_schema}"'
    db.execute(f"CREATE TABLE {s}.reviews (purchase INTEGER REFERENCES {s}.purchases (id))")
    db.execute(f"INSERT INTO {s}.reviews SELECT id FROM {s}.purchases")
    before = rows(db, user_schema, "purchases")
    dataset = attach_shop(db, user_schema)
    with pytest.raises(InputError, match=r"refused by the database and rolled back \(the tables "
                                         r"are unchanged\)"):
        api.anonymize(db, dataset, RHO, rho_params(tmp_path), seed=1, in_place=True)
    assert rows(db, user_schema, "purchases") == before


def test_undo_refuses_when_the_table_changed_after_the_run(db: Backend, user_schema: str,
                                                          tmp_path: Path) -> None:
    make_shop(db, user_schema, 2)
    lines = [f"p{i};g{i // 2};*" for i in range(1, 9)]
    dataset = attach_shop(db, user_schema)
    api.load_hierarchy(db, write(tmp_path / "h.txt", "\n".join(lines) + "\n"), dataset)
    run_id = api.anonymize(db, dataset, require_model("km"), {"k": "6", "m": 2}, seed=1,
                           in_place=True)
    db.execute(f'UPDATE "{user_schema}".purchases SET qty = qty + 100')
    after = rows(db, user_schema, "purchases")
    with pytest.raises(InputError, match=r"rows run \d+ updated in .* are no longer as the run "
                                         r"left them"):
        api.undo_in_place(db, run_id)
    assert rows(db, user_schema, "purchases") == after


@pytest.fixture
def readonly_role(db: Backend, pg_server_url: str | None, user_schema: str) -> Iterator[str]:
    """A role that may read the shop tables and use setanon's schema, but not UPDATE them."""
    url = _require_pg(pg_server_url)
    role = f"ro_{uuid.uuid4().hex[:8]}"
    make_shop(db, user_schema, 3)
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
        con.execute(f'GRANT USAGE ON SCHEMA "{user_schema}" TO {role}')
        con.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{user_schema}" TO {role}')
        con.execute(f'GRANT ALL ON SCHEMA "{db.schema}" TO {role}')
        con.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA "{db.schema}" TO {role}')
    yield make_url(url).set(username=role, password="pw").render_as_string(hide_password=False)
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"DROP OWNED BY {role}")
        con.execute(f"DROP ROLE {role}")


# PostgreSQL only: DuckDB has no roles (its file permissions are checked when it is opened).
@pytest.mark.parametrize("backend_name", ["postgres"], indirect=True)
def test_role_without_update_is_refused_before_the_run(db: Backend, readonly_role: str,
                                                       user_schema: str, tmp_path: Path) -> None:
    with api.open_database(readonly_role, db.schema) as limited:
        dataset = attach_shop(limited, user_schema)
        with pytest.raises(PermissionDeniedError, match=r"lacks INSERT, UPDATE, DELETE on .*"
                                                        r"purchases; in-place runs and their "
                                                        r"undo need"):
            api.anonymize(limited, dataset, RHO, rho_params(tmp_path), seed=1, in_place=True)
        assert api.list_runs(limited) == []


def test_second_process_on_the_dataset_is_refused(db_url: DbUrl, tmp_path: Path,
                                                  backend_name: str) -> None:
    with api.open_database(db_url.url, db_url.schema) as db:
        dataset = api.load_transactions(db, write(tmp_path / "d.dat", "1 2\n2 3\n"), "d")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom setanon_sql import api\n"
         "from setanon_sql.runs import dataset_lock\n"
         "db = api.open_database(sys.argv[1], sys.argv[2])\n"
         "with dataset_lock(db, api.get_dataset(db, 'd')):\n"
         "    print('locked', flush=True); time.sleep(60)\n", db_url.url, db_url.schema],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        expected = (r"dataset 'd' is in use by another setanon process" if
                    backend_name == "postgres" else r"is in use by another process")
        started = time.perf_counter()
        with (pytest.raises(ConnectionFailedError, match=expected),
              api.open_database(db_url.url, db_url.schema) as db):
            api.anonymize(db, dataset, RHO, {"rho": 0.5, "sensitive_fraction": 0.5},
                          seed=1, wait_seconds=0.5)
        assert time.perf_counter() - started < 10
    finally:
        holder.kill()
        holder.wait()
    with api.open_database(db_url.url, db_url.schema) as db:
        assert db.try_advisory_lock(_lock_key(db, dataset.dataset_id))
