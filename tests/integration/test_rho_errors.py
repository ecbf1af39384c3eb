"""Bad input to ``--model rho`` gets a one-line error before anything is published."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.cli import main
from setanon_sql.models import require_model
from setanon_sql.runs import list_runs
from tests.conftest import DbUrl, write

RHO = require_model("rho")


@pytest.fixture
def baskets(db: Backend, tmp_path: Path) -> api.Dataset:
    return api.load_transactions(db, write(tmp_path / "b.dat", "1 2\n1 2\n1 3\n2 3\n"), "b")


@pytest.mark.parametrize(("params", "message"), [
    ({"rho": 1.0, "sensitive_fraction": 0.4}, r"--rho 1.0 must be a number in \(0, 1\)"),
    ({"rho": 0.0, "sensitive_fraction": 0.4}, r"--rho 0.0 must be a number in \(0, 1\)"),
    ({"rho": 0.5}, "give the sensitive items with --sensitive FILE"),
    ({"rho": 0.5, "sensitive_fraction": 1.5}, r"--sensitive-fraction 1.5 must be in \(0, 1\]"),
    ({"rho": 0.5, "sensitive_fraction": 0.1}, "is no item at all: nothing to protect"),
    ({"rho": 0.5, "sensitive": "/nonexistent/s.txt"}, "no such file"),
    ({"rho": 0.5, "sensitive_fraction": 0.4, "m": 0}, "--m 0: give the largest number"),
    ({"rho": 0.5, "sensitive_fraction": 0.4, "heuristic": "best"}, "--heuristic 'best'"),
])
def test_bad_parameters(db: Backend, baskets: api.Dataset, params: dict, message: str) -> None:
    with pytest.raises(api.UsageError if "no such" not in message else api.InputError,
                       match=message):
        api.anonymize(db, baskets, RHO, params, seed=1)
    assert db.table_names("r1_") == []


def test_no_sensitive_item_in_the_data(db: Backend, baskets: api.Dataset,
                                       tmp_path: Path) -> None:
    sens = write(tmp_path / "s.txt", "99\n\n")
    with pytest.raises(api.UsageError, match="no sensitive item that occurs in the data: every "
                                             "rule is safe and there is nothing to do"):
        api.anonymize(db, baskets, RHO, {"rho": 0.5, "sensitive": str(sens)}, seed=1)


def test_unknown_sensitive_labels_are_warned_and_listed(
        db: Backend, baskets: api.Dataset, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    sens = write(tmp_path / "s.txt", "3\nmilk\n77\n")
    with caplog.at_level(logging.WARNING):
        api.anonymize(db, baskets, RHO, {"rho": 0.5, "sensitive": str(sens)}, seed=1)
    assert "2 label(s) are not items of the data and are ignored: 77, milk" in caplog.text
    run = api.get_run(db, baskets, "latest")
    assert run.figures["unknown_sensitive"] == {"count": 2, "first": ["77", "milk"]}
    assert api.verify(db, baskets, run).ok


def test_unbounded_check_out_of_reach_suggests_m(db: Backend, tmp_path: Path) -> None:
    long_record = " ".join(str(i) for i in range(1, 31))
    dataset = api.load_transactions(db, write(tmp_path / "l.dat", f"{long_record}\n1 2\n"), "l")
    with pytest.raises(api.UsageError, match=r"records have up to 30 items.*--m 2"):
        api.anonymize(db, dataset, RHO, {"rho": 0.5, "sensitive_fraction": 0.5}, seed=1)
    assert [r["status"] for r in list_runs(db, "l")] == ["failed"]


def test_cli_anonymize_and_verify(db_url: DbUrl, tmp_path: Path) -> None:
    source = write(tmp_path / "b.dat", "1 2\n1 2\n1 3\n2 3\n1 2 3\n")
    runner = CliRunner()
    assert runner.invoke(main, ["load", "transactions", str(source), "--name", "b",
                                *db_url.args]).exit_code == 0
    result = runner.invoke(main, ["anonymize", "b", "--model", "rho", "--rho", "0.5",
                                  "--sensitive-fraction", "0.4", "--heuristic", "dist",
                                  "--seed", "2", *db_url.args])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["verify", "b", *db_url.args])
    assert result.exit_code == 0 and "guarantee met" in result.output
    assert "unsafe_rules: 0" in result.output


@pytest.mark.parametrize(("model", "params"), [
    ("rho", {"rho": 0.5, "sensitive_fraction": 0.4}),
    ("prho", {"rho": 0.5, "setting": "fixed", "sensitive_fraction": 0.4}),
])
def test_item_ids_below_one_are_refused(db: Backend, baskets: api.Dataset, model: str,
                                        params: dict) -> None:
    """Item id 0 is the qid enumeration's padding: a table numbered from 0 is refused."""
    items = db.table(baskets.items_table(baskets.set_attributes[0]))
    db.run(exp.update(items, {"item_id": exp.column("item_id") - 1}))
    with pytest.raises(api.InputError, match="item ids must be >= 1 \\(found 0\\)"):
        api.anonymize(db, baskets, require_model(model), params, seed=1)
    assert db.table_names("r1_") == []
