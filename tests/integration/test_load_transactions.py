"""Loading transaction files: exact line alignment, formats, and bad input on every backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.errors import InputError, UsageError
from tests.conftest import write


def schema_state(db: Backend) -> tuple[list[str], list[str]]:
    """Tables of setanon's schema and dataset names: must not change when a load fails."""
    names = [row[1] for row in db.query("dataset_list", tables=db.catalog_tables("datasets"))]
    return db.table_names(""), names


def roundtrip(db: Backend, tmp_path: Path, text: str, fmt: str = "auto") -> str:
    source = write(tmp_path / "in.dat", text)
    dataset = api.load_transactions(db, source, "t", fmt)
    out = api.export_dataset(db, dataset, tmp_path / "out.dat")
    return out.read_text(encoding="utf-8")


def test_fimi_lines_align_with_input(db: Backend, tmp_path: Path) -> None:
    text = "1 2 3\n\n4  5\r\n6\t7\n\n10 2\n"
    # Blanks are normalized, items sorted by value, empty lines kept; the final newline does
    # not add a record.
    assert roundtrip(db, tmp_path, text) == "1 2 3\n\n4 5\n6 7\n\n2 10\n"
    dataset = api.get_dataset(db, "t")
    assert dataset.n_records == 6
    assert dataset.set_attributes[0].n_distinct == 8


def test_file_without_final_newline_and_duplicate_items(db: Backend, tmp_path: Path) -> None:
    assert roundtrip(db, tmp_path, "3 3 1\n2") == "1 3\n2\n"


def test_trailing_empty_lines_are_records(db: Backend, tmp_path: Path) -> None:
    assert roundtrip(db, tmp_path, "1\n\n\n") == "1\n\n\n"
    assert api.get_dataset(db, "t").n_records == 3


def test_spmf_separators_are_not_items(db: Backend, tmp_path: Path) -> None:
    text = "1 -1 2 3 -1 -2\n4 -1 -2\n"
    assert roundtrip(db, tmp_path, text) == "1 2 3\n4\n"
    assert api.get_dataset(db, "t").options["format"] == "spmf"


def test_spmf_line_without_end_marker_names_the_line(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "bad.txt", "1 -1 -2\n2 -1\n")
    before = schema_state(db)
    with pytest.raises(InputError, match=r"bad.txt line 2: an SPMF line must end with -2"):
        api.load_transactions(db, source, "t", "spmf")
    assert schema_state(db) == before


def test_text_labels_keep_their_bytes(db: Backend, tmp_path: Path) -> None:
    text = "milk brot\nÄpfel o'neil \"q\" a;b\n\nback\\slash\n"
    out = roundtrip(db, tmp_path, text, "labels")
    # Text dictionaries are ordered byte-wise, the same on every backend.
    assert out == "brot milk\n\"q\" a;b o'neil Äpfel\n\nback\\slash\n"


def test_non_integer_fimi_item_names_line_and_item(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "x.dat", "1 2\n3 abc\n")
    before = schema_state(db)
    with pytest.raises(InputError, match=r"x.dat line 2: item 'abc' is not an integer"):
        api.load_transactions(db, source, "t", "fimi")
    assert schema_state(db) == before


def test_auto_format_picks_labels_for_text(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "x.dat", "bread milk\n")
    assert api.load_transactions(db, source, "t").options["format"] == "labels"


@pytest.mark.parametrize("text", ["", "\n\n"])
def test_empty_file_is_refused(db: Backend, tmp_path: Path, text: str) -> None:
    source = write(tmp_path / "empty.dat", text)
    before = schema_state(db)
    with pytest.raises(InputError, match=r"empty\.dat"):
        api.load_transactions(db, source, "t")
    assert schema_state(db) == before


def test_missing_file_is_refused(db: Backend, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope.dat does not exist"):
        api.load_transactions(db, tmp_path / "nope.dat", "t")


def test_existing_name_needs_replace(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "a.dat", "1 2\n")
    api.load_transactions(db, source, "t")
    with pytest.raises(UsageError, match="already exists"):
        api.load_transactions(db, source, "t")
    write(tmp_path / "a.dat", "5\n6\n7\n")
    assert api.load_transactions(db, source, "t", replace=True).n_records == 3
    assert len([n for n in db.table_names("d") if n.endswith("_records")]) == 1


@pytest.mark.parametrize("name", ["", "a b", "x;drop table y", "-lead", "é"])
def test_bad_dataset_names_are_refused(db: Backend, tmp_path: Path, name: str) -> None:
    source = write(tmp_path / "a.dat", "1\n")
    with pytest.raises(UsageError, match="not a valid dataset name"):
        api.load_transactions(db, source, name)


def test_unknown_dataset_lists_known_ones(db: Backend, tmp_path: Path) -> None:
    api.load_transactions(db, write(tmp_path / "a.dat", "1\n"), "known")
    with pytest.raises(api.NotFoundError, match=r"no dataset named 'other'.*datasets: known"):
        api.get_dataset(db, "other")
