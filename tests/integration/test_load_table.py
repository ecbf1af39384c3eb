"""Loading CSV/TSV complex data: round trip, typing, and bad input on every backend."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.errors import InputError, UsageError
from setanon_sql.models import require_model
from tests.conftest import write
from tests.integration.test_load_transactions import schema_state

TSV = (
    "id\tbirth\tsex\tzip\tcodes\tdrugs\n"
    "a1\t1970\tF\t021\t250 401\tasp\n"
    "a2\t1982\tM\t100\t\t\n"
    "a3\t1970\tF\t021\tV58 250\tasp ins\n"
)


def test_tsv_round_trip_and_types(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "adm.tsv", TSV)
    dataset = api.load_table(db, source, "adm", "id", ["codes", "drugs"])
    roles = {a.name: (a.role, a.value_type, a.n_distinct) for a in dataset.attributes}
    assert roles == {
        "id": ("id", "text", 3), "birth": ("qi", "integer", 2), "sex": ("qi", "text", 2),
        "zip": ("qi", "text", 2),  # leading zero: stays text
        "codes": ("set", "items", 3), "drugs": ("set", "items", 2),
    }
    out = api.export_dataset(db, dataset, tmp_path / "out.tsv", fmt="tsv")
    expected = TSV.replace("V58 250", "250 V58")  # items in byte order within a cell
    assert out.read_text() == expected


def test_csv_with_quotes_and_custom_separator(db: Backend, tmp_path: Path) -> None:
    text = 'pid,city,items\n1,"Kyoto, JP",a;b\n2,"say ""hi""",c\n'
    source = write(tmp_path / "x.csv", text)
    dataset = api.load_table(db, source, "x", "pid", ["items"], item_separator=";")
    out = api.export_dataset(db, dataset, tmp_path / "out.csv", fmt="csv")
    assert out.read_text() == text


@pytest.mark.on_spark(connect=True)
def test_csv_export_keeps_leading_and_trailing_spaces(db: Backend, tmp_path: Path) -> None:
    # Spark's CSV writer trims both ends of every value unless told not to.
    source = write(tmp_path / "s.csv", 'pid,city,items\n1," Kyoto ",a\n2,"Oslo  ",b\n')
    dataset = api.load_table(db, source, "s", "pid", ["items"])
    out = api.export_dataset(db, dataset, tmp_path / "out.csv", fmt="csv")
    rows = list(csv.reader(out.read_text().splitlines()))
    assert [row[1] for row in rows[1:]] == [" Kyoto ", "Oslo  "]


def test_qi_and_ignore_choose_roles(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "adm.tsv", TSV)
    dataset = api.load_table(db, source, "adm", "id", ["codes"], qi=["birth"], ignore=["drugs"])
    roles = {a.name: a.role for a in dataset.attributes}
    assert roles == {"id": "id", "birth": "qi", "sex": "other", "zip": "other",
                     "codes": "set", "drugs": "other"}


def test_duplicate_ids_are_refused_with_lines(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "d.tsv", "id\tcodes\nx\t1\ny\t2\nx\t3\n")
    before = schema_state(db)
    with pytest.raises(InputError, match=r"d\.tsv line 2: id 'x' .* appears 2 times .*line 4"):
        api.load_table(db, source, "d", "id", ["codes"])
    assert schema_state(db) == before


def test_empty_id_is_refused(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "d.tsv", "id\tcodes\nx\t1\n\t2\n")
    with pytest.raises(InputError, match=r"d\.tsv line 3: the id column 'id' is empty"):
        api.load_table(db, source, "d", "id", ["codes"])


def test_unknown_column_lists_columns(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "d.tsv", "id\tcodes\nx\t1\n")
    with pytest.raises(InputError, match=r"no column 'dx' .*--set-column.*: id, codes"):
        api.load_table(db, source, "d", "id", ["dx"])
    with pytest.raises(UsageError, match="at least one set-valued column"):
        api.load_table(db, source, "d", "id", [])


def test_header_only_file_is_refused(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "d.tsv", "id\tcodes\n")
    before = schema_state(db)
    with pytest.raises(InputError, match="has a header but no records"):
        api.load_table(db, source, "d", "id", ["codes"])
    assert schema_state(db) == before


def test_duplicate_header_is_refused(db: Backend, tmp_path: Path) -> None:
    source = write(tmp_path / "d.tsv", "id\tid\tcodes\n")
    with pytest.raises(InputError, match="column 'id' appears twice"):
        api.load_table(db, source, "d", "id", ["codes"])


def test_mimic_demo_round_trips(db: Backend, tmp_path: Path, shared_data: Path) -> None:
    source = shared_data / "mimic3-demo" / "admissions_dx.tsv"
    dataset = api.load_table(db, source, "mimic", "hadm_id", ["icd9_codes"])
    assert dataset.n_records == 129
    assert dataset.attribute("icd9_codes").n_distinct == 581
    out = api.export_dataset(db, dataset, tmp_path / "mimic.tsv", fmt="tsv")
    assert out.read_bytes() == source.read_bytes()


@pytest.mark.parametrize(("use", "needs_one"), [
    ("export", "a FIMI export (unlike --format tsv)"), ("km", "--model km"), ("rho", "--model rho"),
    ("prho", "--model prho"),
])
def test_a_set_valued_column_must_be_named_when_there_are_several(
        db: Backend, tmp_path: Path, use: str, needs_one: str) -> None:
    dataset = api.load_table(db, write(tmp_path / "adm.tsv", TSV), "adm", "id",
                             ["codes", "drugs"])

    def run(column: str | None) -> None:
        if use == "export":
            api.export_dataset(db, dataset, tmp_path / "out.dat", fmt="fimi", column=column)
        else:
            params = {"km": {"k": "2", "m": 1},
                      "rho": {"rho": 0.5, "m": 1, "sensitive_fraction": 0.4},
                      "prho": {"rho": 0.5, "m": 1, "setting": "fixed",
                               "sensitive_fraction": 0.4}}[use]
            api.anonymize(db, dataset, require_model(use), {**params, "column": column}, seed=1)

    with pytest.raises(UsageError, match=f"2 set-valued columns \\(codes, drugs\\); "
                                         f"{re.escape(needs_one)} works on exactly one: "
                                         "name it with --column"):
        run(None)
    with pytest.raises(UsageError, match="--column 'birth' of dataset 'adm' is not set-valued"):
        run("birth")
    assert not (tmp_path / "out.dat").exists()
    assert db.table_names("r1_") == []
