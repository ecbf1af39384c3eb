"""Attaching tables that live in the user's database, without copying data out of it.

The user's tables are made with canonical (PostgreSQL) SQL rendered for each backend, so the same
tests run on Spark too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.errors import InputError, UsageError

pytestmark = pytest.mark.on_spark


def sql(db: Backend, text: str) -> list[tuple[object, ...]]:
    """Run canonical SQL on any backend: parsed as PostgreSQL, rendered in the backend's dialect."""
    tree = sqlglot.parse_one(text, read="postgres")
    if isinstance(tree, sqlglot.exp.Query):
        return db.query(tree)
    db.run(tree)
    return []


@pytest.fixture
def shop(db: Backend, user_schema: str) -> str:
    """A user schema with purchases(customer, product) and customers(customer, birth, sex)."""
    s = f'"{user_schema}"'
    sql(db, f"CREATE SCHEMA {s}")
    sql(db, f"CREATE TABLE {s}.purchases (customer INTEGER, product TEXT, qty INTEGER)")
    sql(db, f"INSERT INTO {s}.purchases VALUES (10, 'milk', 1), (10, 'bread', 2), "
            "(2, 'milk', 1), (2, 'milk', 3), (7, 'o''neil; drop', 1)")
    sql(db, f"CREATE TABLE {s}.customers (customer INTEGER, birth INTEGER, sex TEXT)")
    sql(db, f"INSERT INTO {s}.customers VALUES (10, 1970, 'F'), (2, 1980, 'M'), "
            "(7, 1990, 'F'), (99, 1950, 'M')")
    return user_schema


@pytest.mark.on_spark(connect=True)
def test_attach_item_table(db: Backend, shop: str, tmp_path: Path) -> None:
    before = sql(db, f'SELECT count(*) FROM "{shop}".purchases')
    dataset = api.attach(db, "shop", f"{shop}.purchases", "customer", "product")
    assert dataset.kind == "attached"
    assert dataset.n_records == 3  # records numbered in id order: 2, 7, 10
    out = api.export_dataset(db, dataset, tmp_path / "shop.dat")
    assert out.read_text() == "milk\no'neil; drop\nbread milk\n"
    assert sql(db, f'SELECT count(*) FROM "{shop}".purchases') == before


def test_attach_with_records_table(db: Backend, shop: str, tmp_path: Path) -> None:
    dataset = api.attach(db, "shop", f"{shop}.purchases", "customer", "product",
                         records_table=f"{shop}.customers")
    assert [(a.name, a.role) for a in dataset.attributes] == [
        ("customer", "id"), ("birth", "qi"), ("sex", "qi"), ("product", "set")]
    out = api.export_dataset(db, dataset, tmp_path / "shop.tsv", fmt="tsv")
    assert out.read_text() == ("customer\tbirth\tsex\tproduct\n2\t1980\tM\tmilk\n"
                               "7\t1990\tF\to'neil; drop\n10\t1970\tF\tbread milk\n99\t1950\tM\t\n")


def test_missing_table_and_column_are_named(db: Backend, shop: str) -> None:
    with pytest.raises(InputError, match=r"table .*\.nope does not exist"):
        api.attach(db, "x", f"{shop}.nope", "customer", "product")
    with pytest.raises(InputError, match=r"has no column 'sku'; its columns are: customer, "
                                         r"product, qty"):
        api.attach(db, "x", f"{shop}.purchases", "customer", "sku")
    with pytest.raises(UsageError, match=r"must be SCHEMA\.TABLE"):
        api.attach(db, "x", "a.b.c", "customer", "product")


def test_null_items_are_refused(db: Backend, shop: str) -> None:
    sql(db, f'INSERT INTO "{shop}".purchases VALUES (3, NULL, 1)')
    with pytest.raises(InputError, match=r"1 rows with NULL in column 'customer' or 'product'"):
        api.attach(db, "x", f"{shop}.purchases", "customer", "product")
    assert api.find_dataset(db, "x") is None


def test_items_of_unknown_records_are_refused(db: Backend, shop: str) -> None:
    sql(db, f'INSERT INTO "{shop}".purchases VALUES (55, \'tea\', 1)')
    with pytest.raises(InputError, match=r"1 item rows whose 'customer' is not in"):
        api.attach(db, "x", f"{shop}.purchases", "customer", "product",
                   records_table=f"{shop}.customers")


@pytest.mark.on_spark(connect=True)
def test_injection_attempt_in_table_name_is_only_a_name(db: Backend, shop: str) -> None:
    with pytest.raises(InputError, match="does not exist"):
        api.attach(db, "x", f'{shop}.purchases"; DROP TABLE customers; --', "customer",
                   "product")
    assert sql(db, f'SELECT count(*) FROM "{shop}".customers') == [(4,)]
