"""`setanon apply` (a finished run into the attached tables), `drop` of an applied dataset, --wait.

Applying a run after the fact must give the same rows as `anonymize --in-place`; dropping a
dataset whose run is applied would throw away the undo backup, so it is refused unless forced.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from setanon_sql import api
from setanon_sql.cli import main
from tests.conftest import DbUrl, write
from tests.integration.test_inplace import cli_shop, rows
from tests.oracle import inplace_oracle as oracle

__all__ = ["cli_shop"]  # the fixture, imported for pytest


def test_apply_later_equals_in_place_and_drop_is_guarded(cli_shop: DbUrl, user_schema: str,
                                                         tmp_path: Path) -> None:
    sens = write(tmp_path / "s.txt", "p1\np2\n")
    runner = CliRunner()
    run_args = ["anonymize", "shop", "--model", "rho", "--rho", "0.3", "--sensitive", str(sens),
                "--seed", "3", *cli_shop.args]
    with api.open_database(cli_shop.url, cli_shop.schema) as db:
        before = rows(db, user_schema, "purchases")

    made = runner.invoke(main, run_args)
    assert made.exit_code == 0, made.output
    dry = runner.invoke(main, ["apply", "shop", "--run", "1", "--dry-run", *cli_shop.args])
    assert dry.exit_code == 0 and "dry run: run 1 would change" in dry.output, dry.output
    with api.open_database(cli_shop.url, cli_shop.schema) as db:
        assert rows(db, user_schema, "purchases") == before

    applied = runner.invoke(main, ["apply", "shop", "--run", "1", "--wait", "2", *cli_shop.args])
    assert applied.exit_code == 0 and "applied run 1 in place:" in applied.output, applied.output
    with api.open_database(cli_shop.url, cli_shop.schema) as db:
        later = rows(db, user_schema, "purchases")
    assert oracle.same_rows(before, later) != []

    refused = runner.invoke(main, ["drop", "shop", *cli_shop.args])
    assert refused.exit_code == 2, refused.output
    assert "setanon undo 1" in refused.output and "--force" in refused.output
    undone = runner.invoke(main, ["undo", "1", "--wait", "1", *cli_shop.args])
    assert undone.exit_code == 0, undone.output

    # the same run made with --in-place changes the table the same way
    direct = runner.invoke(main, [*run_args, "--in-place"])
    assert direct.exit_code == 0, direct.output
    with api.open_database(cli_shop.url, cli_shop.schema) as db:
        assert oracle.same_rows(later, rows(db, user_schema, "purchases")) == []

    forced = runner.invoke(main, ["drop", "shop", "--force", *cli_shop.args])
    assert forced.exit_code == 0, forced.output
    with api.open_database(cli_shop.url, cli_shop.schema) as db:
        assert db.scalar("inplace_count", None,
                         {"t": db.table("inplace_applies")}) == 0


def test_apply_refuses_unfinished_or_unknown_runs(cli_shop: DbUrl) -> None:
    runner = CliRunner()
    missing = runner.invoke(main, ["apply", "shop", "--run", "9", *cli_shop.args])
    assert missing.exit_code != 0 and "9" in missing.output
    assert "Traceback" not in missing.output
    negative = runner.invoke(main, ["undo", "1", "--wait", "-1", *cli_shop.args])
    assert negative.exit_code == 2 and "--wait" in negative.output
