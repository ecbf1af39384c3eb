"""Swap model: categories from a hierarchy level, bad input, verify catching tampering, CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlglot import exp

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.cli import main
from setanon_sql.models.swap import MODEL
from tests.conftest import DbUrl, write
from tests.oracle import swap_oracle as oracle

DATA = "1 2 3 5\n4 6 8\n1 3 7\n2 4 6 8\n5 7\n1 2\n3 4 6\n"


@pytest.fixture
def small(db: Backend, tmp_path: Path) -> api.Dataset:
    return api.load_transactions(db, write(tmp_path / "s.dat", DATA), "s")


def anonymize(db: Backend, dataset: api.Dataset, **params) -> api.Run:
    api.anonymize(db, dataset, MODEL, {"metrics": False, **params}, seed=1)
    return api.get_run(db, dataset, "latest")


def test_hierarchy_level_gives_the_categories(db: Backend, small: api.Dataset,
                                              tmp_path: Path) -> None:
    # Odd items under 'odd', even ones under 'even'; level 1 is that split.
    lines = "".join(f"{i};{'odd' if i % 2 else 'even'};*\n" for i in range(1, 9))
    api.load_hierarchy(db, write(tmp_path / "h.txt", lines), small)
    run = anonymize(db, small, category_level=1)
    assert run.figures["categories"] == 2
    cats = {str(i): "odd" if i % 2 else "even" for i in range(1, 9)}
    published = oracle.read_fimi(api.export_dataset(db, small, tmp_path / "o.dat", run=run))
    pairs = [(int(a), int(b)) for a, b in db.query(
        exp.select("record_id", "partner_id").from_(db.table(f"r{run.run_id}_pairs")))]
    original = oracle.read_fimi(tmp_path / "s.dat")
    assert oracle.check_similarity_swap(original, published, cats, pairs, run.figures) == []
    with pytest.raises(api.UsageError, match="deeper than the hierarchy"):
        anonymize(db, small, category_level=5)
    before = set(db.table_names(""))
    with pytest.raises(api.InputError, match="fall into 1 category; swapping needs at least"):
        anonymize(db, small, category_level=0)
    assert [r["run_id"] for r in api.list_runs(db, "s")] == [run.run_id]
    assert set(db.table_names("")) == before


@pytest.mark.parametrize(("text", "message"), [
    ("1\tA\n2\n", r"line 2: expected 'item<TAB>category'"),
    ("1\tA\n1\tB\n", r"1 item\(s\) have two categories"),
    ("1\tA\n2\tB\n", r"misses 6 item\(s\) of the data, first: '3', '4'"),
    ("".join(f"{i}\tA\n" for i in range(1, 9)), "fall into 1 category"),
])
def test_bad_category_files_stop_the_run(db: Backend, small: api.Dataset, tmp_path: Path,
                                         text: str, message: str) -> None:
    path = write(tmp_path / "c.tsv", text)
    before = set(db.table_names(""))
    with pytest.raises(api.InputError, match=message):
        anonymize(db, small, categories=str(path))
    # Refused before the run is recorded: no run, and not one table more than before.
    assert api.list_runs(db, "s") == []
    assert set(db.table_names("")) == before


def test_uncategorized_items_may_share_a_category(db: Backend, small: api.Dataset,
                                                  tmp_path: Path) -> None:
    path = write(tmp_path / "c.tsv", "item\tcategory\n1\tA\n2\tB\n")
    run = anonymize(db, small, categories=str(path), uncategorized="own")
    assert (run.figures["categories"], run.figures["uncategorized_items"]) == (3, 6)
    # One category in the file plus the uncategorized items still make two.
    one = write(tmp_path / "one.tsv", "1\tA\n2\tA\n")
    run = anonymize(db, small, categories=str(one), uncategorized="own")
    assert (run.figures["categories"], run.figures["uncategorized_items"]) == (2, 6)
    assert api.verify(db, small, run).ok


@pytest.mark.parametrize(("params", "message"), [
    ({}, "give exactly one of --categories"),
    ({"random_categories": 2, "category_level": 1}, "give exactly one of"),
    ({"random_categories": 1}, "at least 2"),
    ({"random_categories": 9}, "exceeds the 8 distinct items"),
    ({"categories": "/nonexistent/c.tsv"}, "does not exist"),
    ({"random_categories": 2, "fi_supports": "0.1,x"}, "must be numbers"),
])
def test_bad_parameters(db: Backend, small: api.Dataset, params: dict, message: str) -> None:
    with pytest.raises(api.UsageError if "exist" not in message else api.InputError,
                       match=message):
        anonymize(db, small, **params)


def test_empty_dataset_is_refused(db: Backend, tmp_path: Path) -> None:
    # The transaction loader refuses a file without items; a table's set column may be empty.
    source = write(tmp_path / "e.tsv", "id\tsex\tcodes\nx\tF\t\ny\tM\t\n")
    dataset = api.load_table(db, source, "e", "id", ["codes"])
    before = set(db.table_names(""))
    with pytest.raises(api.InputError, match="holds no items"):
        anonymize(db, dataset, random_categories=2)
    assert api.list_runs(db, "e") == [] and set(db.table_names("")) == before


def test_verify_catches_a_lost_item(db: Backend, small: api.Dataset) -> None:
    run = anonymize(db, small, random_categories=2)
    assert api.verify(db, small, run).ok
    published = db.table(f"r{run.run_id}_items_1")
    db.run(exp.delete(published).where("record_id = 1 AND item_id = "
                                       "(SELECT min(item_id) FROM "
                                       f"{db.render(published)} WHERE record_id = 1)"))
    result = api.verify(db, small, run)
    assert not result.ok
    assert "no item lost (similarity swapping never collides)" in result.details["failed_checks"]


def test_verify_catches_a_record_moved_to_a_new_id(db: Backend, small: api.Dataset) -> None:
    # Record and item counts stay as they were, yet one record is emptied and one appears.
    run = anonymize(db, small, random_categories=2)
    assert api.verify(db, small, run).ok
    published = db.table(f"r{run.run_id}_items_1")
    db.run(exp.update(published, {"record_id": exp.Literal.number(1000)},
                      where="record_id = 1"))
    result = api.verify(db, small, run)
    assert not result.ok
    assert (result.details["records_emptied"], result.details["records_appeared"]) == (1, 1)
    assert "records with items kept" in result.details["failed_checks"]


def test_cli_anonymize_and_verify(db_url: DbUrl, tmp_path: Path) -> None:
    runner = CliRunner()
    data = write(tmp_path / "s.dat", DATA)
    assert runner.invoke(main, ["load", "transactions", str(data), "--name", "s",
                                *db_url.args]).exit_code == 0
    done = runner.invoke(main, ["anonymize", "s", "--model", "swap", "--random-categories", "3",
                                "--method", "random", "--seed", "2", *db_url.args])
    assert done.exit_code == 0, done.output
    checked = runner.invoke(main, ["verify", "s", *db_url.args])
    assert checked.exit_code == 0 and "guarantee met" in checked.output
    bad = runner.invoke(main, ["anonymize", "s", "--model", "swap", "--method", "best",
                               *db_url.args])
    assert bad.exit_code == 2 and "--method" in bad.output
