"""Property: any set-valued dataset survives load and export unchanged, on every backend."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from setanon_sql import api
from setanon_sql.backends.base import Backend

integer_records = st.lists(st.sets(st.integers(min_value=-5, max_value=10**12), max_size=6),
                           min_size=1, max_size=25)
label = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")),
                min_size=1, max_size=8)
label_records = st.lists(st.sets(label, max_size=5), min_size=1, max_size=20)
FIXTURE_OK = settings(max_examples=15, deadline=None,
                      suppress_health_check=[HealthCheck.function_scoped_fixture])


def expected_lines(records: list[set], key) -> list[str]:
    return [" ".join(str(x) for x in sorted(r, key=key)) for r in records]


def load_and_export(db: Backend, lines: list[str], fmt: str) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "in.dat"
        source.write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
        dataset = api.load_transactions(db, source, "p", fmt, replace=True)
        out = api.export_dataset(db, dataset, Path(tmp) / "out.dat")
        return out.read_bytes().decode("utf-8").split("\n")[:-1]


@FIXTURE_OK
@given(records=integer_records)
def test_integer_items_round_trip(db: Backend, records: list[set[int]]) -> None:
    assume(any(records))  # a file without any item is refused (tested elsewhere)
    lines = [" ".join(map(str, r)) for r in records]
    assert load_and_export(db, lines, "fimi") == expected_lines(records, key=int)



@FIXTURE_OK
@given(records=label_records)
def test_text_labels_round_trip_in_byte_order(db: Backend, records: list[set[str]]) -> None:
    assume(any(records))
    lines = [" ".join(r) for r in records]
    got = load_and_export(db, lines, "labels")
    assert got == expected_lines(records, key=lambda s: s.encode("utf-8"))
