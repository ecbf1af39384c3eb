"""Bad input to ``--model prho`` gets a one-line error before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.cli import main
from setanon_sql.models import require_model
from tests.conftest import DbUrl, write

PRHO = require_model("prho")
GEN = {"setting": "fixed", "sensitive_fraction": 0.5}


@pytest.fixture
def baskets(db: Backend, tmp_path: Path) -> api.Dataset:
    return api.load_transactions(db, write(tmp_path / "b.dat", "1 2\n1 2\n1 3\n2 3\n"), "b")


@pytest.mark.parametrize(("params", "message"), [
    ({"rho": 1.0, **GEN}, r"--rho 1.0 must be a number in \(0, 1\)"),
    ({"rho": 0, **GEN}, r"--rho 0 must be a number in \(0, 1\)"),
    ({"rho": 0.5, **GEN, "m": 0}, "--m 0: give the largest number of items"),
    ({"rho": 0.5, **GEN, "m": "x"}, "--m 'x': give the largest number"),
    ({"rho": 0.5, **GEN, "m": 2, "epsilon": 1.5, "delta": 0.1},
     r"--epsilon 1.5 must be a number in \(0, 1\)"),
    ({"rho": 0.5, **GEN, "m": 2, "epsilon": 0.1, "delta": 0},
     r"--delta 0 must be a number in \(0, 1\)"),
    ({"rho": 0.5, **GEN, "m": 2, "epsilon": 0.1}, "give both --epsilon and --delta"),
    ({"rho": 0.5, **GEN, "epsilon": 0.1, "delta": 0.1}, "give --m N"),
    ({"rho": 0.5}, "give the sensitive constraint with --constraint FILE"),
    ({"rho": 0.5, "setting": "some"}, "--setting 'some' is not one of"),
    ({"rho": 0.5, "setting": "fixed"}, r"--sensitive-fraction None must be in \(0, 1\]"),
    ({"rho": 0.5, **GEN, "noise": 0.7}, r"--noise 0.7 must be in \[0, 0.5\)"),
    ({"rho": 0.5, "constraint": "/nonexistent/e.dat"}, "no such file"),
    ({"rho": 0.5, **GEN, "choice": "best"}, "--choice 'best' is not one of paper, fewest"),
    ({"rho": 0.5, **GEN, "m": 2, "epsilon": 0.1, "delta": 0.1, "repair_pool": 0},
     "--repair-pool 0 must be a whole number >= 1"),
    ({"rho": 0.5, **GEN, "repair_pool": 4}, "--repair-pool applies to SAMPLESUPPRESSOR"),
    ({"rho": 0.5, **GEN, "m": 2, "epsilon": 0.1, "delta": 0.1, "stop_rule": "soon"},
     "--stop-rule 'soon' is not one of paper, bound"),
    ({"rho": 0.5, **GEN, "stop_rule": "bound"}, "--stop-rule applies to SAMPLESUPPRESSOR"),
    ({"rho": 0.5, **GEN, "m": 2, "exact_upto": 1}, "--exact-upto applies to SAMPLESUPPRESSOR"),
    ({"rho": 0.5, **GEN, "m": 2, "epsilon": 0.1, "delta": 0.1, "exact_upto": 3},
     "--exact-upto 3 is above --m 2"),
    ({"rho": 0.5, **GEN, "m": 2, "epsilon": 0.1, "delta": 0.1, "exact_upto": -1},
     "--exact-upto -1 must be a whole number >= 0"),
    ({"rho": 0.5, **GEN, "m": 2, "epsilon": 0.1, "delta": 0.1, "exact_upto": 1,
      "choice": "fewest"}, "--exact-upto runs SUPPRESSOR with eq. 8's choice"),
])
def test_bad_parameters(db: Backend, baskets: api.Dataset, params: dict, message: str) -> None:
    error = api.InputError if "no such" in message else api.UsageError
    with pytest.raises(error, match=message):
        api.anonymize(db, baskets, PRHO, params, seed=1)
    assert db.table_names("r1_") == [] and api.list_runs(db) == []


def test_constraint_line_count_must_match(db: Backend, baskets: api.Dataset,
                                          tmp_path: Path) -> None:
    constraint = write(tmp_path / "e.dat", "2\n2\n\n")
    with pytest.raises(api.InputError, match=r"e.dat: 3 lines, but dataset 'b' has 4 records"):
        api.anonymize(db, baskets, PRHO, {"rho": 0.5, "constraint": str(constraint)}, seed=1)
    assert api.list_runs(db) == []


def test_unknown_labels_are_ignored_and_counted(db: Backend, baskets: api.Dataset,
                                                tmp_path: Path) -> None:
    constraint = write(tmp_path / "e.dat", "2 milk\n\n\n77")
    api.anonymize(db, baskets, PRHO, {"rho": 0.5, "constraint": str(constraint)}, seed=1)
    run = api.get_run(db, baskets, "latest")
    assert run.figures["unknown_constraint_labels"] == {"count": 2, "first": ["77", "milk"]}
    assert run.figures["constraint_pairs"] == 1
    assert api.verify(db, baskets, run).ok


def test_cli_anonymize_and_verify(db_url: DbUrl, tmp_path: Path) -> None:
    runner = CliRunner()
    data = write(tmp_path / "b.dat", "1 2\n1 2\n1 3\n2 3\n")
    assert runner.invoke(main, ["load", "transactions", str(data), "--name", "b", *db_url.args]
                         ).exit_code == 0
    result = runner.invoke(main, ["anonymize", "b", "--model", "prho", "--rho", "0.5",
                                  "--setting", "personalized", "--sensitive-fraction", "0.5",
                                  "--m", "2", "--seed", "3", *db_url.args])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["verify", "b", "--run", "latest", *db_url.args])
    assert result.exit_code == 0 and "guarantee met" in result.output, result.output
    bad = runner.invoke(main, ["anonymize", "b", "--model", "prho", "--rho", "2", "--setting",
                               "fixed", "--sensitive-fraction", "0.5", *db_url.args])
    assert bad.exit_code == 2 and "--rho 2.0 must be a number in (0, 1)" in bad.output
