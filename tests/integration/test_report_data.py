"""The report's aggregates, checked against a brute-force oracle on small random data.

The run is a test double that suppresses, generalizes, adds and deletes (every kind of change a
model makes) and publishes classes; the oracle (tests/oracle/report_oracle.py) reads the
exported TSV files as plain Python sets and recomputes every figure.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import sqlglot

from setanon_sql import api
from setanon_sql.backends.base import Backend
from setanon_sql.errors import GuaranteeNotMetError, NotPublishableError, UsageError
from setanon_sql.models.base import Model, Verification
from setanon_sql.report.build import build_report
from setanon_sql.report.data import report_data
from setanon_sql.runs import RunContext
from tests.conftest import write
from tests.oracle.report_oracle import (
    oracle_changes,
    oracle_record_classes,
    oracle_version,
    read_rows,
    read_tsv,
)

LABELS = ["a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "z<1>", "z&2", "z3"]

# The double, as canonical SQL over logical tables: labels starting with 'z' become 'Z*'
# (generalization), a hash of (record, item, salt) drops some occurrences (suppression), 'a1' is
# put into every 4th record (addition), every 6th record is deleted (its items stay in the
# items table, which the report must ignore), every 5th has its QI 'sex' replaced by '*'.
_DICT = """SELECT item_id, label FROM dict WHERE substr(label, 1, 1) <> 'z'
UNION ALL SELECT (SELECT max(item_id) FROM dict) + 1 AS item_id, 'Z*' AS label"""
_ITEMS = """WITH src AS (
    SELECT i.record_id, CASE WHEN substr(d.label, 1, 1) = 'z'
                        THEN (SELECT max(item_id) FROM dict) + 1 ELSE i.item_id END AS item_id
    FROM items AS i JOIN dict AS d ON d.item_id = i.item_id
    WHERE mod(i.record_id * 7 + i.item_id * 13 + :salt, 5) <> 0)
SELECT record_id, item_id FROM src
UNION
SELECT record_id, (SELECT min(item_id) FROM dict WHERE label = 'a1') AS item_id
FROM records WHERE mod(record_id, 4) = 1"""
_RECORDS = """SELECT record_id, position, c1,
       CASE WHEN mod(record_id, 5) = 0 THEN '*' ELSE c2 END AS c2
FROM records WHERE mod(record_id, 6) <> 0"""
_CLASSES = "SELECT record_id AS class_id, 2 + mod(record_id, 3) AS size FROM records"


def _sql(text: str) -> sqlglot.exp.Expression:
    return sqlglot.parse_one(text, read="postgres")


def mixed_changes(backend: Backend, dataset: api.Dataset, params: dict[str, Any],
                  context: RunContext) -> None:
    attribute = dataset.set_attributes[0]
    tables = {"items": backend.table(dataset.items_table(attribute)),
              "dict": backend.table(dataset.dict_table(attribute)),
              "records": backend.table(dataset.records_table)}
    no = attribute.attr_no
    backend.materialize(context.table(f"dict_{no}"), _sql(_DICT), None, tables)
    backend.materialize(context.table(f"items_{no}"), _sql(_ITEMS), {"salt": params["salt"]},
                        tables)
    backend.materialize(context.table("records"), _sql(_RECORDS), None, tables)
    backend.materialize(context.table("classes"), _sql(_CLASSES), None, tables)
    context.figures.update({"ncp": 1 / (1 + params.get("k", 3)), "suppressed_share": 0.2})


MIXED = Model("mixed", "suppress, generalize, add, delete (test double)", (), mixed_changes,
              lambda backend, dataset, run: Verification(True, "nothing (test double)"))


def random_table(path: Path, seed: int, n_records: int = 40) -> Path:
    """A TSV of complex data: id, a QI, and a set-valued column of random labels."""
    rng = random.Random(seed)
    lines = ["id\tsex\tcodes"]
    for record in range(1, n_records + 1):
        codes = rng.sample(LABELS, rng.choice([0, 1, 2, 2, 3, 3, 4, 6]))
        if record == 1:
            codes = sorted({*codes, "a1"})
        lines.append(f"r{record}\t{rng.choice('FM')}\t{' '.join(codes)}")
    return write(path, "\n".join(lines) + "\n")


# ---- the checks -----------------------------------------------------------------------------

def check_version(got: dict[str, Any], want: dict[str, Any]) -> None:
    for key in ("records", "item_occurrences", "distinct_items"):
        assert got[key] == want[key], key
    assert [tuple(p) for p in got["lengths"]] == want["lengths"]
    ranks = [p[0] for p in got["curve"]]
    assert ranks == sorted(set(ranks)) and ranks[:1] == [1] and ranks[-1] == len(want["curve"])
    assert all(support == want["curve"][rank - 1] for rank, support in got["curve"])
    assert [{k: row[k] for k in ("ell", "itemsets", "unique_itemsets", "records_at_risk")}
            for row in got["unicity"]] == want["unicity"]


def check_changes(got: dict[str, Any], want: dict[str, Counter]) -> None:
    totals = got["totals"]
    for key in ("before", "kept", "removed", "added"):
        assert totals[key] == sum(c[key] for c in want.values()), key
    assert totals["labels_removed"] == sum(1 for c in want.values() if c["removed"])
    score = {label: c["removed"] + c["added"] for label, c in want.items()}
    changed = sorted(s for s in score.values() if s)
    assert len(got["top"]) == min(15, len(changed))
    for row in got["top"]:
        assert {k: row[k] for k in ("before", "kept", "removed", "added")} == {
            k: want[row["label"]][k] for k in ("before", "kept", "removed", "added")}
    shown = {row["label"] for row in got["top"]}
    if shown:
        assert min(score[s] for s in shown) >= max((v for k, v in score.items()
                                                    if k not in shown), default=0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_report_figures_match_the_oracle(db: Backend, tmp_path: Path, seed: int) -> None:
    dataset = api.load_table(db, random_table(tmp_path / "in.tsv", seed), "t", "id", ["codes"])
    run = api.get_run(db, dataset, api.anonymize(db, dataset, MIXED, {"salt": seed}, seed=seed))
    before = read_tsv(api.export_dataset(db, dataset, tmp_path / "b.tsv", fmt="tsv"))
    after = read_tsv(api.export_dataset(db, dataset, tmp_path / "a.tsv", fmt="tsv", run=run))
    assert len(after) < len(before)  # the double deleted records: the check covers deletion

    data = report_data(db, dataset, run)
    attribute = data["attributes"][0]
    check_version(attribute["before"], oracle_version(before))
    check_version(attribute["after"], oracle_version(after))
    check_changes(attribute["changes"], oracle_changes(before, after))
    rows_before = read_rows(tmp_path / "b.tsv")
    rows_after = read_rows(tmp_path / "a.tsv")
    assert [tuple(c) for c in data["record_classes"]["before"]] == oracle_record_classes(
        rows_before)
    assert [tuple(c) for c in data["record_classes"]["after"]] == oracle_record_classes(rows_after)
    changed = sum(rows_after[r][0] != rows_before[r][0] for r in rows_after)
    assert data["columns"] == [{
        "name": "sex", "published_records": len(rows_after), "changed": changed,
        "changed_share": changed / len(rows_after),
        "distinct_before": len({sex for sex, _ in rows_before.values()}),
        "distinct_after": len({sex for sex, _ in rows_after.values()})}]
    classes = Counter(size for (size,) in db.query(
        sqlglot.exp.select("size").from_(db.table(f"r{run.run_id}_classes"))))
    assert [tuple(c) for c in data["classes"]] == sorted(classes.items())


def test_dataset_report_has_no_published_side(db: Backend, tmp_path: Path) -> None:
    dataset = api.load_table(db, random_table(tmp_path / "in.tsv", 9), "t", "id", ["codes"])
    report = build_report(db, dataset, None)
    before = read_tsv(api.export_dataset(db, dataset, tmp_path / "b.tsv", fmt="tsv"))
    attribute = report["attributes"][0]
    check_version(attribute["before"], oracle_version(before))
    assert (attribute["after"], attribute["changes"], report["classes"],
            report["verification"]) == (None, None, None, None)


def test_verification_outcomes_are_reported(db: Backend, tmp_path: Path) -> None:
    dataset = api.load_table(db, random_table(tmp_path / "in.tsv", 4), "t", "id", ["codes"])
    run = api.get_run(db, dataset, api.anonymize(db, dataset, MIXED, {"salt": 1}, seed=1))

    def fails(backend: Backend, ds: api.Dataset, r: api.Run) -> Verification:
        return Verification(False, "every 1-itemset, exactly", {"violations": 3})

    recorded = build_report(db, dataset, run, None)["verification"]
    assert (recorded["status"], recorded["covered"]) == ("met", "nothing (test double)")
    with pytest.raises(GuaranteeNotMetError, match=f"run {run.run_id} of 't' .* failed"):
        build_report(db, dataset, run, fails)  # a fresh check that fails refuses the report
    with pytest.raises(UsageError, match="'mixed' is unknown"):
        build_report(db, dataset, run)  # the registered verifier of an unregistered model


def test_report_refuses_a_run_that_failed_verification(db: Backend, tmp_path: Path) -> None:
    dataset = api.load_table(db, random_table(tmp_path / "in.tsv", 4), "t", "id", ["codes"])
    failing = Model("mixed", MIXED.title, (), mixed_changes,
                    lambda backend, ds, r: Verification(False, "every 1-itemset", {"bad": 1}))
    with pytest.raises(GuaranteeNotMetError, match="failed verification; nothing is published"):
        api.anonymize(db, dataset, failing, {"salt": 1}, seed=1)
    run = api.get_run(db, dataset, "latest")
    assert (run.status, run.verification) == ("done", "failed")
    with pytest.raises(NotPublishableError, match=f"run {run.run_id} of 't' failed verif"):
        build_report(db, dataset, run, None)
    with pytest.raises(NotPublishableError):
        api.export_dataset(db, dataset, tmp_path / "out.tsv", "tsv", run)
    assert not (tmp_path / "out.tsv").exists()


def test_pairs_are_skipped_above_the_limit(db: Backend, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from setanon_sql.report import data

    monkeypatch.setattr(data, "PAIR_LIMIT", 0)
    dataset = api.load_table(db, random_table(tmp_path / "in.tsv", 5), "t", "id", ["codes"])
    got = report_data(db, dataset, None)["attributes"][0]["before"]["unicity"]
    before = read_tsv(api.export_dataset(db, dataset, tmp_path / "b.tsv", fmt="tsv"))
    assert [{k: row[k] for k in ("ell", "itemsets", "unique_itemsets", "records_at_risk")}
            for row in got] == oracle_version(before)["unicity"][:1]
