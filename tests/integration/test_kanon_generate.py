"""Synthetic claims generated in the DBMS: shape, reproducibility across backends, and a kanon
run on them checked by the oracle."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.models.kanon import MODEL
from setanon_sql.models.kanon.generate import generate_claims
from setanon_sql.synth import store
from setanon_sql.synth.shape import shape
from tests.oracle import kanon_oracle

COLUMNS = ["claim_id", "birth_year", "sex", "month", "beds", "claim_type", "start_day",
           "diagnoses", "drugs"]


@pytest.mark.on_spark(connect=True)
def test_claims_shape_and_same_data_on_every_backend(db: Backend, tmp_path: Path) -> None:
    dataset = generate_claims(db, "claims", 300, seed=3)
    out = api.export_dataset(db, dataset, tmp_path / "c.tsv", fmt="tsv")
    header, rows = kanon_oracle.read_table(out)
    assert header == COLUMNS and len(rows) == 300
    for row in rows:
        assert 1920 <= int(row[1]) <= 2015 and row[2] in ("F", "M")
        assert 201301 <= int(row[3]) <= 201312 and 0 <= int(row[4]) < 1000
        assert row[5] in ("inpatient", "outpatient", "dental", "pharmacy")
        assert 1 <= int(row[6]) <= 365
        assert 1 <= len(row[7].split()) <= 37 and len(row[8].split()) <= 10
    with api.open_database("duckdb:///:memory:") as other:
        again = api.export_dataset(other, generate_claims(other, "claims", 300, seed=3),
                                   tmp_path / "d.tsv", fmt="tsv")
        assert again.read_text() == out.read_text()
        changed = api.export_dataset(other, generate_claims(other, "c4", 300, seed=4),
                                     tmp_path / "e.tsv", fmt="tsv")
        assert changed.read_text() != out.read_text()


@pytest.mark.on_spark
def test_claims_drawn_in_slices_are_the_same_data(db: Backend, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Large datasets are drawn in record slices (store.CHUNK_RECORDS) so the engine never
    de-duplicates and sorts all draws at once: slices of 64 records give the same rows."""
    whole = api.export_dataset(db, generate_claims(db, "claims", 300, seed=3),
                               tmp_path / "a.tsv", fmt="tsv")
    monkeypatch.setattr(store, "CHUNK_RECORDS", 64)
    sliced = api.export_dataset(db, generate_claims(db, "sliced", 300, seed=3),
                                tmp_path / "b.tsv", fmt="tsv")
    assert sliced.read_text() == whole.read_text()


def test_claims_columns_are_independent_and_items_skewed(db: Backend, tmp_path: Path) -> None:
    """At 20,000 claims: almost every row distinct; the distinct (birth_year, sex, month)
    combinations as many as independent columns with these marginals would give (the affine
    generator this replaces gave 110 of 2,304); item frequencies skewed; diagnoses co-occur
    with the drugs of their profile more than by chance."""
    n = 20_000
    dataset = generate_claims(db, "claims", n, seed=5)
    found = shape(db, dataset, ["birth_year", "sex", "month"])
    assert found["distinct_rows"] >= 0.99 * n
    _, rows = kanon_oracle.read_table(api.export_dataset(db, dataset, tmp_path / "c.tsv",
                                                         fmt="tsv"))
    marginals = [Counter(row[c] for row in rows) for c in (1, 2, 3)]
    expected = sum(1 - (1 - a * b * c / n**3) ** n for a in marginals[0].values()
                   for b in marginals[1].values() for c in marginals[2].values())
    assert abs(found["distinct_qi_combinations"] - expected) <= 0.03 * expected
    diagnoses = found["sets"]["diagnoses"]
    assert diagnoses["max_over_median_frequency"] > 5 and diagnoses["mean_set_size"] > 8
    # Co-occurrence: the most frequent (diagnosis, drug) pair is far above independence.
    dx = Counter(i for row in rows for i in row[7].split())
    rx = Counter(i for row in rows for i in row[8].split())
    pairs = Counter((d, r) for row in rows for d in set(row[7].split())
                    for r in set(row[8].split()))
    (d, r), together = pairs.most_common(1)[0]
    assert together > 3 * dx[d] * rx[r] / n


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
