"""The setanon command end to end: the tour of the README, exit codes and help texts."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from setanon_sql.cli import main
from tests.conftest import DbUrl, write

COMMANDS = [["init"], ["load", "transactions"], ["load", "table"], ["load", "hierarchy"],
            ["attach"], ["anonymize"], ["verify"], ["report"], ["export"], ["runs"], ["undo"],
            ["demo"], ["datasets"], ["drop"]]


def setanon(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_with_example(command: list[str]) -> None:
    code, out = setanon(*command, "--help")
    assert code == 0
    assert "Example:" in out


@pytest.mark.on_spark(connect=True)
def test_tour(db_url: DbUrl, tmp_path: Path) -> None:
    data = write(tmp_path / "b.dat", "1 2 3\n\n2 3\n4\n")
    code, out = setanon("load", "transactions", str(data), "--name", "b", *db_url.args)
    assert (code, out.strip()) == (0, "loaded b: 4 records, 4 distinct items")
    code, out = setanon("report", "b", *db_url.args)
    assert code == 0 and "record length avg 1.50 max 3" in out
    code, out = setanon("export", "b", "-o", str(tmp_path / "o.dat"), *db_url.args)
    assert code == 0 and (tmp_path / "o.dat").read_text() == "1 2 3\n\n2 3\n4\n"
    code, out = setanon("runs", *db_url.args)
    assert (code, out.strip()) == (0, "no runs yet")
    code, out = setanon("datasets", *db_url.args)
    assert code == 0 and " b " in out
    code, out = setanon("drop", "b", *db_url.args)
    assert code == 0


def test_demo(db_url: DbUrl, tmp_path: Path) -> None:
    code, out = setanon("demo", "--workdir", str(tmp_path / "demo"), *db_url.args)
    assert code == 0, out
    assert out.count("identical to the shipped input") == 2
    for model in ("kanon", "km", "rho"):
        assert f"--model {model}" in out
    assert out.count("verified:") == 3
    page = tmp_path / "demo" / "admissions_k5.html"
    assert page.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")


@pytest.mark.parametrize(("args", "message"), [
    (["report", "nope"], "no dataset named 'nope'"),
    (["export", "nope", "-o", "x.dat"], "no dataset named 'nope'"),
    (["undo", "3"], "there is no run 3"),
])
def test_errors_are_one_line_with_exit_code_2(db_url: DbUrl, args: list[str],
                                              message: str) -> None:
    assert setanon("init", *db_url.args)[0] == 0
    code, out = setanon(*args, *db_url.args)
    assert code == 2
    assert message in out
    assert "Traceback" not in out


def test_anonymize_says_which_models_exist(db_url: DbUrl, tmp_path: Path) -> None:
    setanon("load", "transactions", str(write(tmp_path / "b.dat", "1\n")), "--name", "b",
            *db_url.args)
    code, out = setanon("anonymize", "b", "--model", "nope", *db_url.args)
    assert code == 2 and "--model 'nope' is unknown" in out and "kanon" in out


def test_unreachable_database_is_a_clear_error() -> None:
    code, out = setanon("datasets", "--db", "postgresql://nobody@127.0.0.1:1/none")
    assert code == 2
    assert "cannot connect to postgresql://nobody@127.0.0.1:1/none" in out


def test_bad_url_scheme() -> None:
    code, out = setanon("datasets", "--db", "mysql://x/y")
    assert code == 2 and "scheme 'mysql' is not supported" in out


@pytest.mark.parametrize("command", [["datasets"], ["runs"], ["report", "b"], ["verify", "b"],
                                     ["export", "b", "-o", "x.dat"], ["drop", "b"]], ids=" ".join)
def test_a_command_that_reads_refuses_a_missing_duckdb_file(tmp_path: Path,
                                                            command: list[str]) -> None:
    database = tmp_path / "typo.duckdb"
    code, out = setanon(*command, "--db", f"duckdb:///{database}")
    assert code == 2
    assert f"the DuckDB file {database} does not exist: load a dataset first" in out
    assert list(tmp_path.iterdir()) == []


def test_a_failed_first_load_leaves_no_duckdb_file(tmp_path: Path) -> None:
    database = tmp_path / "new.duckdb"
    bad = write(tmp_path / "bad.dat", "1 2\nx\n")
    code, out = setanon("load", "transactions", str(bad), "--name", "b", "--format", "fimi",
                        "--db", f"duckdb:///{database}")
    assert code == 2 and "line 2: item 'x' is not an integer" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.dat"]
    code, out = setanon("load", "transactions", str(write(tmp_path / "ok.dat", "1 2\n")),
                        "--name", "b", "--db", f"duckdb:///{database}")
    assert code == 0 and database.is_file()


def test_a_failed_load_keeps_an_existing_duckdb_file(tmp_path: Path) -> None:
    database = f"duckdb:///{tmp_path / 'kept.duckdb'}"
    assert setanon("load", "transactions", str(write(tmp_path / "a.dat", "1\n")), "--name", "a",
                   "--db", database)[0] == 0
    code, _ = setanon("load", "transactions", str(write(tmp_path / "e.dat", "")), "--name", "e",
                      "--db", database)
    assert code == 2
    code, out = setanon("datasets", "--db", database)
    assert code == 0 and " a " in out


def test_empty_inputs_say_what_is_wrong(db_url: DbUrl, tmp_path: Path) -> None:
    empty = write(tmp_path / "empty.dat", "")
    code, out = setanon("load", "transactions", str(empty), "--name", "e", *db_url.args)
    assert code == 2
    assert f"transaction file {empty} is empty (0 bytes): there is nothing to read" in out
    blank = write(tmp_path / "blank.dat", "\n")
    code, out = setanon("load", "transactions", str(blank), "--name", "e", *db_url.args)
    assert code == 2
    assert f"transaction file {blank} has only blank lines (1)" in out
    code, out = setanon("load", "table", str(write(tmp_path / "e.csv", "")), "--name", "t",
                        "--id", "id", "--set-column", "items", *db_url.args)
    assert code == 2 and "is empty (0 bytes)" in out


def test_bad_schema_name(tmp_path: Path) -> None:
    code, out = setanon("datasets", "--db", f"duckdb:///{tmp_path}/x.duckdb", "--schema", "a;b")
    assert code == 2 and "--schema 'a;b' is not a plain schema name" in out


def test_generate_claims_and_bad_parameters_leave_no_run(db_url: DbUrl) -> None:
    code, out = setanon("generate", "claims", "--records", "500", "--name", "c", "--seed", "3",
                        *db_url.args)
    assert code == 0 and out.startswith("generated c: 500 claims\nshape: 500 records, ")
    assert "distinct combinations of birth_year, sex, month" in out
    code, out = setanon("anonymize", "c", "--model", "kanon", "--k", "1", *db_url.args)
    assert code == 2 and "--k" in out
    code, out = setanon("runs", *db_url.args)
    assert out.strip() == "no runs yet"


def test_quiet_before_or_after_the_command(db_url: DbUrl, tmp_path: Path) -> None:
    data = str(write(tmp_path / "b.dat", "1 2\n1 2\n2 3\n1 3\n"))
    code, out = setanon("--quiet", "load", "transactions", data, "--name", "b", *db_url.args)
    assert (code, out.strip()) == (0, "loaded b: 4 records, 3 distinct items")
    code, out = setanon("anonymize", "b", "--model", "swap", "--random-categories", "2",
                        "--no-metrics", "--seed", "1", "-q", *db_url.args)
    assert code == 0 and out.splitlines()[0] == "1"
    hierarchy = str(write(tmp_path / "h.txt", "1;a;*\n2;a;*\n3;b;*\n"))
    code, out = setanon("load", "hierarchy", hierarchy, "--name", "b", "-q", *db_url.args)
    assert (code, out.strip()) == (0, "loaded hierarchy b:items: 3 leaves, height 2")
