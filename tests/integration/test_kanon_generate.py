"""Synthetic claims generated in the DBMS: shape, reproducibility across backends, and a kanon
run on them checked by the oracle."""

from __future__ import annotations

from pathlib import Path

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models.kanon import MODEL
from setanon_sql.models.kanon.generate import generate_claims
from tests.oracle import kanon_oracle

COLUMNS = ["claim_id", "birth_year", "sex", "month", "beds", "claim_type", "start_day",
           "diagnoses", "drugs"]


def test_claims_shape_and_same_data_on_every_backend(db: Backend, tmp_path: Path) -> None:
    dataset = generate_claims(db, "claims", 300, seed=3)
    out = api.export_dataset(db, dataset, tmp_path / "c.tsv", fmt="tsv")
    header, rows = kanon_oracle.read_table(out)
    assert header == COLUMNS and len(rows) == 300
    for row in rows:
        assert 1920 <= int(row[1]) < 2016 and row[2] in ("F", "M")
        assert 201301 <= int(row[3]) <= 201312 and 0 <= int(row[4]) < 1000
        assert row[5] in ("inpatient", "outpatient", "dental", "pharmacy")
        assert 1 <= int(row[6]) <= 365
        assert 1 <= len(row[7].split()) <= 8 and len(row[8].split()) <= 10
    counts: dict[str, int] = {}
    for row in rows:
        for item in row[7].split():
            counts[item] = counts.get(item, 0) + 1
    assert max(counts.values()) > 10 * sorted(counts.values())[len(counts) // 2]  # skewed
    with api.open_database("duckdb:///:memory:") as other:
        again = api.export_dataset(other, generate_claims(other, "claims", 300, seed=3),
                                   tmp_path / "d.tsv", fmt="tsv")
        assert again.read_text() == out.read_text()
        changed = api.export_dataset(other, generate_claims(other, "c4", 300, seed=4),
                                     tmp_path / "e.tsv", fmt="tsv")
        assert changed.read_text() != out.read_text()


def test_kanon_on_claims_passes_the_oracle(db: Backend, tmp_path: Path) -> None:
    dataset = generate_claims(db, "claims", 400, seed=1)
    source = api.export_dataset(db, dataset, tmp_path / "in.tsv", fmt="tsv")
    qis = {"birth_year": "numeric", "sex": "category", "month": "numeric",
           "diagnoses": "set", "drugs": "set"}
    params = {"k": 4, "beta": 0.05, "suppress_budget": 0.02, "qi": list(qis)}
    run = api.get_run(db, dataset, api.anonymize(db, dataset, MODEL, params, seed=1))
    out = api.export_dataset(db, dataset, tmp_path / "out.tsv", fmt="tsv", run=run)
    assert kanon_oracle.check(source, out, "claim_id", qis, 4, 0.02) == []
    assert api.verify(db, dataset, run).ok
