"""The generators' hash: the same numbers in SQL on every backend as in Python, and columns
drawn with different salts behave as independent (the affine hash it replaces made every
column a function of one number)."""

from __future__ import annotations

from sqlglot import exp

from setanon_sql.backends.base import Backend
from setanon_sql.synth.mixing import below_int, mix, mix_int


def test_sql_and_python_agree(db: Backend) -> None:
    keys = [0, 1, 2, 3, 1000, 123_456_789, 2**31 - 1, 2**36 - 1]
    query = exp.select(*(mix(exp.Literal.number(k), 7, salt).as_(f"h{i}_{salt}")
                         for i, k in enumerate(keys) for salt in (1, 2)))
    got = [int(v) for v in db.query(query)[0]]
    assert got == [mix_int(k, 7, salt) for k in keys for salt in (1, 2)]


def test_columns_with_different_salts_are_independent() -> None:
    n, buckets = 20_000, 12
    pairs = {(below_int(k, 3, 1, buckets), below_int(k, 3, 2, buckets)) for k in range(n)}
    assert len(pairs) == buckets * buckets  # every combination occurs, as for independence
    counts = [0] * buckets
    for k in range(n):
        counts[below_int(k, 3, 1, buckets)] += 1
    chi2 = sum((c - n / buckets) ** 2 / (n / buckets) for c in counts)
    assert chi2 < 31.3  # 11 degrees of freedom, p = 0.001: uniform
