"""The pick key in SQL gives Python's numbers on every backend (so DuckDB, PostgreSQL and
Spark suppress the same records), ids past 2^31 included."""

from __future__ import annotations

import pytest
from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.models.rho.pickkey import pick_key, pick_key_int, pick_salt


@pytest.mark.on_spark
def test_sql_and_python_agree(db: Backend) -> None:
    pairs = [(0, 0), (1, 1), (1, 2), (2, 1), (86_100_000, 999_999), (2**31 - 2, 150_000_000),
             (2**31 + 5, 2**31 - 1), (7, 2**40)]
    query = exp.select(*(pick_key(exp.Literal.number(rule), exp.Literal.number(record))
                         .as_(f"k{i}") for i, (rule, record) in enumerate(pairs)))
    for seed, round_no in ((0, 1), (12345, 62)):
        salt = pick_salt(seed, round_no)
        got = [int(v) for v in db.query(query, {"salt": salt})[0]]
        assert got == [pick_key_int(rule, record, salt) for rule, record in pairs]
