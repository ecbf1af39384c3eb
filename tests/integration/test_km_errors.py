"""--model km: every mistake a user can make gets a clear error and publishes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.cli import main
from setanon_sql.models import require_model
from tests.conftest import DbUrl, write

DATA = "1 2\n1 2\n3\n3 1\n2 3\n"
HIERARCHY = "1;a;*\n2;a;*\n3;*\n"


@pytest.fixture
def baskets(db: Backend, tmp_path: Path) -> api.Dataset:
    return api.load_transactions(db, write(tmp_path / "b.dat", DATA), "b")


@pytest.mark.parametrize(("params", "message"), [
    ({"k": "1", "m": 2}, "every k must be >= 2"),
    ({"k": "5,x", "m": 2}, "give one number or a comma-separated list"),
    ({"k": "5,4,3", "m": 2}, "lists 3 values but --m is 2"),
    ({"k": "5", "m": 0}, "must be >= 1"),
    ({"k": "5", "m": 2, "sigma": "0.4"}, r"must be in \(0.5, 1\]"),
    ({"k": "5", "m": 2, "sigma": "1.5"}, r"must be in \(0.5, 1\]"),
    ({"k": "5", "m": 2, "error": "euclid"}, "--error 'euclid' is not one of"),
    ({"k": "5", "m": 2, "batch": 0}, "--batch 0"),
    ({"k": "5", "m": 2, "column": "nope"}, "has no column 'nope'"),
    ({"k": "5", "m": 2, "sampler": "gibbs"}, "--sampler 'gibbs' is not one of exact, mcmc"),
    ({"k": "5", "m": 2, "sigma": "0.9", "certify": "never"},
     "--certify 'never' is not one of auto, samples"),
    ({"k": "5", "m": 2, "mcmc_min_steps": 0}, "--mcmc-min-steps 0"),
    ({"k": "5", "m": 2, "coordinates": "c.txt"}, "--coordinates is used with --graph"),
    ({"k": "5", "m": 2, "graph": "/nonexistent/g.txt"}, "--graph file"),
])
def test_bad_parameters(db: Backend, baskets: api.Dataset, params: dict, message: str) -> None:
    with pytest.raises(api.SetanonError, match=message):
        api.anonymize(db, baskets, require_model("km"), params, seed=1)
    assert db.table_names("r1_") == []


def test_no_hierarchy(db: Backend, baskets: api.Dataset) -> None:
    with pytest.raises(api.NotFoundError, match="no hierarchy for column"):
        api.anonymize(db, baskets, require_model("km"), {"k": "2", "m": 1}, seed=1)


def test_hierarchy_file_missing_an_item(db: Backend, baskets: api.Dataset,
                                        tmp_path: Path) -> None:
    partial = write(tmp_path / "h.txt", "1;a;*\n2;a;*\n")
    with pytest.raises(api.InputError, match="misses 1 value"):
        api.anonymize(db, baskets, require_model("km"),
                      {"k": "2", "m": 1, "hierarchy": str(partial)}, seed=1)
    assert db.table_names("r1_") == []


def test_another_hierarchy_is_not_replaced(db: Backend, baskets: api.Dataset,
                                           tmp_path: Path) -> None:
    api.load_hierarchy(db, write(tmp_path / "h.txt", HIERARCHY), baskets)
    other = write(tmp_path / "other.txt", "1;*\n2;*\n3;*\n")
    with pytest.raises(api.InputError, match="--replace"):
        api.anonymize(db, baskets, require_model("km"),
                      {"k": "2", "m": 1, "hierarchy": str(other)}, seed=1)


def test_k_above_the_number_of_records(db: Backend, baskets: api.Dataset,
                                       tmp_path: Path) -> None:
    api.load_hierarchy(db, write(tmp_path / "h.txt", HIERARCHY), baskets)
    with pytest.raises(api.UsageError, match="fewer than 6 records"):
        api.anonymize(db, baskets, require_model("km"), {"k": "6", "m": 1}, seed=1)
    assert db.table_names("r1_") == []


def test_cli_anonymize_verify_export(db_url: DbUrl, tmp_path: Path) -> None:
    runner = CliRunner()
    data, hierarchy = write(tmp_path / "b.dat", DATA), write(tmp_path / "h.txt", HIERARCHY)
    assert runner.invoke(main, ["load", "transactions", str(data), "--name", "b",
                                *db_url.args]).exit_code == 0
    result = runner.invoke(main, ["anonymize", "b", "--model", "km", "--k", "0", "--m", "2",
                                  *db_url.args])
    assert result.exit_code == 2 and "give k >= 2" in result.output
    result = runner.invoke(main, ["anonymize", "b", "--model", "km", "--k", "2", "--m", "2",
                                  "--hierarchy", str(hierarchy), "--seed", "3", *db_url.args])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["verify", "b", *db_url.args])
    assert result.exit_code == 0 and "guarantee met" in result.output
    out, mapping = tmp_path / "o.dat", tmp_path / "m.txt"
    result = runner.invoke(main, ["export", "b", "--run", "latest", "-o", str(out),
                                  "--mapping", str(mapping), *db_url.args])
    assert result.exit_code == 0, result.output
    assert out.read_text() == "a\na\n3\na 3\na 3\n"  # ids follow the first item covered
    assert mapping.read_text() == "1\ta\n2\ta\n3\t3\n"
