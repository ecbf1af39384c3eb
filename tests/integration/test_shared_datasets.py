"""The public benchmark files load and export back line for line on every backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from setanon_sql import api
from setanon_sql.backends.base import Backend

FILES = [
    ("bms-webview-1/BMS1.dat", 59_602, 497),
    ("bms-webview-2/BMS2.dat", 77_512, 3_340),
    ("retail/retail.dat", 88_162, 16_470),
]


def normalized_lines(path: Path) -> list[str]:
    return [" ".join(line.split()) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(("relative", "records", "items"), FILES, ids=[f[0] for f in FILES])
def test_export_reproduces_input(db: Backend, tmp_path: Path, shared_data: Path, relative: str,
                                 records: int, items: int) -> None:
    source = shared_data / relative
    dataset = api.load_transactions(db, source, "d")
    assert dataset.n_records == records
    assert dataset.set_attributes[0].n_distinct == items
    out = api.export_dataset(db, dataset, tmp_path / "out.dat")
    assert normalized_lines(out) == normalized_lines(source)
