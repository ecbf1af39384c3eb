"""Bad input to ``--heuristic tdcontrol`` is refused with a message naming the option."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.cli import main
from setanon_sql.models import require_model
from tests.conftest import DbUrl, write

RHO = require_model("rho")


@pytest.fixture
def baskets(db: Backend, tmp_path: Path) -> api.Dataset:
    return api.load_transactions(db, write(tmp_path / "b.dat", "1 2\n1 2\n1 3\n2 3\n"), "b")


def test_no_hierarchy(db: Backend, baskets: api.Dataset) -> None:
    with pytest.raises(api.UsageError, match=r"--heuristic tdcontrol generalizes the "
                       r"non-sensitive items along an item hierarchy, and column .* has none: "
                       r"give --hierarchy FILE"):
        api.anonymize(db, baskets, RHO, {"rho": 0.5, "sensitive_fraction": 0.4,
                                         "heuristic": "tdcontrol"}, seed=1)
    assert db.table_names("r1_") == []


@pytest.mark.parametrize(("params", "message"), [
    ({"heuristic": "tdcontrol", "t_max": 5.0}, "--heuristic tdcontrol does not partition"),
    ({"heuristic": "mine", "hierarchy": "h.txt"}, "only --heuristic tdcontrol generalizes"),
])
def test_options_that_do_not_combine(db: Backend, baskets: api.Dataset, params: dict,
                                     message: str) -> None:
    with pytest.raises(api.UsageError, match=message):
        api.anonymize(db, baskets, RHO, {"rho": 0.5, "sensitive_fraction": 0.4, **params},
                      seed=1)
    assert db.table_names("r1_") == []


def test_hierarchy_missing_an_item(db: Backend, baskets: api.Dataset, tmp_path: Path) -> None:
    hierarchy = write(tmp_path / "h.txt", "1;a;*\n2;a;*\n")
    with pytest.raises(api.InputError, match=r"misses 1 value\(s\) of column .*first: '3'"):
        api.anonymize(db, baskets, RHO, {"rho": 0.5, "sensitive_fraction": 0.4,
                                         "heuristic": "tdcontrol",
                                         "hierarchy": str(hierarchy)}, seed=1)


def test_cli_tdcontrol_needs_and_takes_a_hierarchy(db_url: DbUrl, tmp_path: Path) -> None:
    source = write(tmp_path / "b.dat", "1 2\n1 2\n1 3\n2 3\n1 2 3\n2 4\n")
    hierarchy = write(tmp_path / "h.txt", "1;a;*\n2;a;*\n3;b;*\n4;b;*\n")
    runner = CliRunner()
    assert runner.invoke(main, ["load", "transactions", str(source), "--name", "b",
                                *db_url.args]).exit_code == 0
    args = ["anonymize", "b", "--model", "rho", "--rho", "0.5", "--sensitive-fraction", "0.5",
            "--heuristic", "tdcontrol", "--seed", "2", *db_url.args]
    result = runner.invoke(main, args)
    assert result.exit_code != 0 and "give --hierarchy FILE" in result.output
    result = runner.invoke(main, [*args, "--hierarchy", str(hierarchy)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["verify", "b", *db_url.args])
    assert result.exit_code == 0 and "guarantee met" in result.output, result.output
    assert "labels_not_an_ancestor_in_the_hierarchy: 0" in result.output
