"""The printed shape counts what it says: distinct rows (item sets compared by fixed-width
hashes) and set sizes, against a count in Python on random files with repeated baskets."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.synth.shape import shape


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_distinct_rows_and_set_sizes(db: Backend, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    # Few items and short baskets, so the same set recurs in other orders.
    baskets = [rng.sample(range(1, 9), rng.randint(1, 4)) for _ in range(300)]
    path = tmp_path / "b.dat"
    path.write_text("".join(" ".join(map(str, b)) + "\n" for b in baskets))
    found = shape(db, api.load_transactions(db, path, "b"))
    assert found["distinct_rows"] == len({frozenset(b) for b in baskets})
    sizes = found["sets"]["items"]
    assert sizes["occurrences"] == sum(len(b) for b in baskets)
    assert sizes["max_set_size"] == max(len(b) for b in baskets)
    assert sizes["mean_set_size"] == pytest.approx(sum(map(len, baskets)) / len(baskets))
