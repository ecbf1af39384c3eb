"""Bad input loses nothing silently (issue 21 item 9), on both backends: a row with a field
missing in the middle or one field too many is refused with its line number and nothing is
loaded; duplicate items within a record are counted and reported, not dropped without a word."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.cli import main
from tests.conftest import DbUrl, write

HEADER = "id\tsex\trace\tzip\tcodes\n"
GOOD = "1\tF\tw\t123\ta b\n"


@pytest.mark.parametrize(("bad", "found"), [
    ("2\tM\t456\tc d\n", "4|fewer"),  # race missing in the middle: zip would hold the codes
    ("2\tM\tb\t456\tc d\tEXTRA\n", "6|more than that"),  # one field too many
])
def test_ragged_rows_are_refused_with_their_line(db: Backend, tmp_path: Path, bad: str,
                                                 found: str) -> None:
    source = write(tmp_path / "t.tsv", HEADER + GOOD + GOOD.replace("1", "3", 1) + bad + GOOD)
    with pytest.raises(api.InputError, match=rf"line 4: expected 5 fields \(as in the header\), "
                                             rf"found ({found})"):
        api.load_table(db, source, "t", "id", ["codes"])
    assert api.find_dataset(db, "t") is None and db.table_names("tmp_") == []


def test_a_clean_file_loads_and_duplicates_are_counted(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "t.tsv", HEADER + "1\tF\tw\t123\ta b a\n2\tM\tb\t456\tc\n")
    dataset = api.load_table(db, source, "t", "id", ["codes"])
    assert dataset.n_records == 2
    assert dataset.options["duplicate_items"] == {"codes": 1}
    baskets = api.load_transactions(db, write(tmp_path / "b.dat", "1 2 2 3\n4 4 4\n\n5\n"), "b")
    assert baskets.options["duplicate_items"] == {"items": 3}
    exported = api.export_dataset(db, baskets, tmp_path / "o.dat")
    assert exported.read_text() == "1 2 3\n4\n\n5\n"  # each record a set, empty line kept


def test_cli_says_what_the_loader_changed(db_url: DbUrl, tmp_path: Path) -> None:
    runner = CliRunner()
    data = write(tmp_path / "b.dat", "1 2 2\n3\n")
    done = runner.invoke(main, ["load", "transactions", str(data), "--name", "b", *db_url.args])
    assert done.exit_code == 0
    assert "1 duplicate item(s) within a record in column 'items' counted once" in done.output
    ragged = write(tmp_path / "r.tsv", HEADER + "2\tM\t456\tc d\n")
    refused = runner.invoke(main, ["load", "table", str(ragged), "--name", "r", "--id", "id",
                                   "--set-column", "codes", *db_url.args])
    assert refused.exit_code == 2 and f"table file {ragged} line 2" in refused.output
