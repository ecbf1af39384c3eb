"""Bounded work on a record of 100,000 items: `setanon risk` refuses at once, naming the record
and the option that bounds it; with the cap it finishes, and its estimate agrees with a
brute-force count on the capped data (the cap's choice of items rebuilt here with hashlib)."""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from itertools import combinations
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.cli import main
from setanon_sql.errors import WorkTooLargeError
from tests.conftest import DbUrl, write

HUGE = 100_000


def big_file(path: Path, ordinary: int = 300) -> Path:
    rng = random.Random(4)
    lines = [" ".join(str(i) for i in range(1, HUGE + 1))]
    for _ in range(ordinary):
        lines.append(" ".join(str(x) for x in sorted(set(
            rng.randint(1, 400) for _ in range(rng.randint(1, 8))))))
    return write(path, "\n".join(lines) + "\n")


def capped_records(db: Backend, dataset: api.Dataset, cap: int, seed: int) -> list[set[int]]:
    """The records as the cap leaves them: each long record keeps its ``cap`` items of smallest
    md5('cap|seed|record|item') (hex order), ties by item id."""
    items = db.table(dataset.items_table(dataset.set_attributes[0]))
    records: dict[int, list[int]] = {}
    for record, item in db.query(exp.select("record_id", "item_id").from_(items)):
        records.setdefault(int(record), []).append(int(item))

    def key(record: int, item: int) -> tuple[str, int]:
        return hashlib.md5(f"cap|{seed}|{record}|{item}".encode()).hexdigest(), item

    return [set(sorted(v, key=lambda i, r=r: key(r, i))[:cap]) for r, v in records.items()]


def unicity(records: list[set[int]], ell: int) -> float:
    """Share of the distinct ell-itemsets held by one record only (brute force)."""
    support = Counter(c for r in records for c in combinations(sorted(r), ell))
    return sum(1 for n in support.values() if n == 1) / len(support)


def test_risk_refuses_then_the_cap_bounds_it(db: Backend, tmp_path: Path) -> None:
    dataset = api.load_transactions(db, big_file(tmp_path / "big.dat"), "big")
    with pytest.raises(WorkTooLargeError, match=r"record 1 \(data row 1 of the loaded data\) "
                       r"holds 100,000 items.*--max-items-per-record N \(N = [0-9,]+ fits"):
        api.estimate_unicity(db, dataset, 3)
    assert db.table_names("tmp_") == []  # refused before any work: nothing left behind
    cap, epsilon = 40, 0.05
    found = api.estimate_unicity(db, dataset, 2, seed=5, epsilon=epsilon,
                                 max_items_per_record=cap)
    records = capped_records(db, dataset, cap, 5)
    assert [r["records_cut"] for r in found] == [1, 1]
    for row in found:  # within +- epsilon with confidence 0.99 (fixed seed: deterministic)
        assert abs(row["unique_share"] - unicity(records, row["size"])) <= epsilon


def test_cli_names_the_option(db_url: DbUrl, tmp_path: Path) -> None:
    runner = CliRunner()
    data = big_file(tmp_path / "big.dat", ordinary=50)
    assert runner.invoke(main, ["load", "transactions", str(data), "--name", "big",
                                *db_url.args]).exit_code == 0
    refused = runner.invoke(main, ["risk", "big", "--m", "3", *db_url.args])
    assert refused.exit_code == 2 and "--max-items-per-record" in refused.output
    assert "Traceback" not in refused.output
    done = runner.invoke(main, ["risk", "big", "--m", "2", "--epsilon", "0.1",
                                "--max-items-per-record", "30", *db_url.args])
    assert done.exit_code == 0, done.output
    assert "1 record(s) longer than 30 items were cut to 30 items" in done.output
