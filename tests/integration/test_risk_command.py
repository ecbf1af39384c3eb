"""`setanon risk`: sampled unicity of ℓ-itemsets against the exact share enumerated in Python."""

from __future__ import annotations

import random
import re
from collections import Counter
from itertools import combinations
from pathlib import Path

import pytest
from click.testing import CliRunner

from setanon_sql.cli import main
from tests.conftest import DbUrl, write


def exact_unicity(records: list[set[int]], ell: int) -> float:
    """Share of the distinct ℓ-itemsets of the data that occur in exactly one record."""
    support = Counter(c for r in records for c in combinations(sorted(r), ell))
    return sum(1 for n in support.values() if n == 1) / len(support)


@pytest.mark.parametrize("seed", [1, 2])
def test_risk_estimates_unicity_within_its_bound(db_url: DbUrl, tmp_path: Path,
                                                 seed: int) -> None:
    rng = random.Random(seed)
    records = [set(rng.sample(range(1, 25), rng.randint(1, 5))) for _ in range(120)]
    data = write(tmp_path / "d.dat", "".join(" ".join(map(str, sorted(r))) + "\n"
                                             for r in records))
    runner = CliRunner()
    loaded = runner.invoke(main, ["load", "transactions", str(data), "--name", "d",
                                  *db_url.args])
    assert loaded.exit_code == 0, loaded.output
    epsilon = 0.05
    out = runner.invoke(main, ["risk", "d", "--m", "3", "--epsilon", str(epsilon),
                               "--delta", "0.001", "--seed", str(seed), *db_url.args])
    assert out.exit_code == 0, out.output
    found = {int(ell): float(share)
             for ell, share in re.findall(r"l = (\d): ([0-9.]+)", out.output)}
    assert sorted(found) == [1, 2, 3]
    for ell, share in found.items():
        assert abs(share - exact_unicity(records, ell)) <= epsilon, (ell, share, out.output)


def test_risk_bad_parameters_name_the_option(db_url: DbUrl, tmp_path: Path) -> None:
    data = write(tmp_path / "d.dat", "1 2\n2 3\n")
    runner = CliRunner()
    assert runner.invoke(main, ["load", "transactions", str(data), "--name", "d",
                                *db_url.args]).exit_code == 0
    for bad, named in (["--m", "0"], "--m"), (["--epsilon", "1.5"], "--epsilon"):
        out = runner.invoke(main, ["risk", "d", *bad, *db_url.args])
        assert out.exit_code == 2 and named in out.output, out.output
